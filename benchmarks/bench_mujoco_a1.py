"""Benchmark: the MuJoCo backend's cost per host step on the A1 quadruped against native
MuJoCo, same process (the A1 case of ``benchmarks/bench_mujoco.py`` alone, repeated).

The A1 of ``examples/mujoco_quadruped.py`` (its URDF as MuJoCo loads it, 2 ms Euler step):
1 s of stance and 1 s of trot under the example's PD controller, the controller code timed
with each step; native MuJoCo contacts (``mj_step``) vs the backend's implicit step on the
four toes (``contacts.step()``), after one untimed run of ours (the compile and numba's cache
loads of every path). Runs alternate native / ours ``--repeat`` times; the cost is
the process's CPU time per step (``bench_mujoco.timed``), the ratio ours / native of the
means over all runs, and the median of the per-step wall-clock ratios; each step's fastest
wall time over the runs, summed, and its ratio (robust to the other processes of a shared
machine: a step preempted in one run counts by its best run). Also printed: the share of
host steps that took the lean tree path (``mbplugin.mujoco.lean_tree``; absent on
trees without it) and the load average before and after.

To compare two trees interleaved, run this file with each tree's ``PYTHONPATH`` in turn:

    PYTHONPATH=/path/to/other python benchmarks/bench_mujoco_a1.py --repeat 3
    PYTHONPATH=$PWD python benchmarks/bench_mujoco_a1.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_mujoco as bm

import mbplugin


def lean_share(q) -> str:
    """The share of the A1's host steps (1 s stance + 1 s trot) the lean tree path took."""
    try:
        from mbplugin.mujoco import lean_tree
    except ImportError:
        return "no lean tree path in this tree"
    counts = {"lean": 0, "all": 0}
    step = lean_tree.LeanTree.step

    def counted(self, c):
        out = step(self, c)
        counts["all"] += 1
        counts["lean"] += out[0] is not None
        return out

    lean_tree.LeanTree.step = counted
    try:
        bm.a1_steps(q, True)
    finally:
        lean_tree.LeanTree.step = step
    return f"lean tree path: {counts['lean']} of {counts['all']} host steps"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per side, alternating")
    args = ap.parse_args()
    print(f"mbplugin from {Path(mbplugin.__file__).parent}")
    print(f"load average {os.getloadavg()[0]:.2f} (before)")
    q = bm._example()
    # compile / warm outside the timing: a whole run, so that the landings' and lift-offs'
    # paths (loaded from numba's cache at their first call, ~10 ms) are warm too
    bm.a1_steps(q, True)
    nat, our = [], []
    for _ in range(args.repeat):
        nat.append(bm.a1_steps(q, False))
        our.append(bm.a1_steps(q, True))
    o = np.array([t.mean for t in our])
    n = np.array([t.mean for t in nat])
    med = (np.median(np.concatenate([t.wall for t in our]))
           / np.median(np.concatenate([t.wall for t in nat])))
    print(f"A1 stance 1 s + trot 1 s: native {1e6 * n.mean():.1f} us, ours {1e6 * o.mean():.1f}"
          f" us per host step (CPU); ratio {o.mean() / n.mean():.2f}x (runs: "
          f"{', '.join(f'{x:.2f}' for x in o / n)}), median step {med:.2f}x")
    # each step's fastest wall time over the runs (the same step of the same trajectory:
    # a step that another process preempted in one run counts by its best run), summed
    lo_o = np.min([t.wall for t in our], axis=0).sum() / len(our[0].wall)
    lo_n = np.min([t.wall for t in nat], axis=0).sum() / len(nat[0].wall)
    print(f"fastest of {args.repeat} runs per step: native {1e6 * lo_n:.1f} us, ours "
          f"{1e6 * lo_o:.1f} us per host step (wall); ratio {lo_o / lo_n:.2f}x")
    print(lean_share(q))
    print(f"load average {os.getloadavg()[0]:.2f} (after)")


if __name__ == "__main__":
    main()
