"""Profile: where the MuJoCo A1's host step goes (issue 21), by the outcome of
:func:`mbplugin.mujoco.tree_step.tree_fused` and inside it.

The A1 of ``examples/mujoco_quadruped.py`` (1 s stance + 1 s trot, 2 ms Euler step, the
example's PD controller), ``contacts.step()`` timed per host step with the thread's CPU time
(``time.thread_time``: the other engineers' jobs on a shared machine do not count, their
cache pressure does). Printed:

* the outcomes of ``tree_fused`` (DONE split by one or two Newton solves, FIRST, END,
  NOT_OK, EMPTY: no pair within the margin; ``none``: no fused call), with the median and
  mean CPU per step and their share of the run's CPU; the Newton iterations and force
  evaluations per step;
* a replay of one recorded trot step (``--step``, default 700): MuJoCo's data restored
  (``mj_copyData``) and ``mj_step1`` run before each call, ``tree_fused`` alone and
  ``contacts.step()`` whole (the 10th percentile and median of ``--calls`` calls, wall
  clock), and numba's allocations per ``tree_fused`` call where the process runs with
  ``NUMBA_NRT_STATS=1`` (each allocation with its release costs ~70 ns).

    NUMBA_NRT_STATS=1 PYTHONPATH=$PWD python benchmarks/profile_mujoco_a1.py

Run two trees alternately (``PYTHONPATH``) to compare them; report ``uptime`` with it.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_mujoco as bm

from mbplugin.mujoco import tree_step

NAMES = {tree_step.DONE: "DONE", tree_step.FIRST: "FIRST", tree_step.END: "END",
         tree_step.HANDOVER: "HANDOVER", tree_step.START: "START",
         tree_step.NOT_OK: "NOT_OK", tree_step.EMPTY: "EMPTY"}


def _controller(q, m, d):
    """The example's PD controller as ``bench_mujoco.a1_steps`` runs it: ``ctrl(i)``."""
    hq = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    dt = m.opt.timestep

    def ctrl(i: int) -> None:
        tau = q.KP * (q.targets(i * dt, 1.0) - d.qpos[hq]) - q.KD * d.qvel[hv]
        d.ctrl[:] = np.clip(tau, -q.MAX_TORQUE, q.MAX_TORQUE)

    return ctrl


def outcomes(q, last: list) -> None:
    """The run's CPU per host step by ``tree_fused``'s outcome (module docstring)."""
    m, d, contacts = q.setup(True)
    ctrl = _controller(q, m, d)
    cpu: dict[str, list[float]] = collections.defaultdict(list)
    iters = []
    for i in range(1000):
        ctrl(i)
        last[0] = None
        c0 = time.thread_time()
        contacts.step()
        c1 = time.thread_time()
        out = last[0]
        if out is None:
            key = "none"
        else:
            key = NAMES.get(int(out[0]), str(out[0]))
            if key == "DONE":
                key = "DONE, two solves" if out[8] >= 6 else "DONE, one solve"
            iters.append((int(out[8]), int(out[9])))
        cpu[key].append(c1 - c0)
    total = sum(sum(v) for v in cpu.values())
    print(f"CPU per host step {1e6 * total / 1000:.1f} us (thread time)")
    for key, v in sorted(cpu.items()):
        x = np.array(v)
        print(f"  {key:18s} {len(x):4d} steps: median {1e6 * np.median(x):7.1f} us, mean "
              f"{1e6 * x.mean():7.1f} us, {100 * x.sum() / total:5.1f} % of the CPU")
    it = np.array(iters)
    print(f"Newton iterations per fused call: mean {it[:, 0].mean():.2f}, force evaluations "
          f"{it[:, 1].mean():.2f}")


def replay(q, fused, step: int, calls: int) -> None:
    """One recorded step's ``tree_fused`` and ``contacts.step()`` replayed (module
    docstring)."""
    m, d, contacts = q.setup(True)
    ctrl = _controller(q, m, d)
    saved = mujoco.MjData(m)
    got: dict[str, object] = {}

    def record(*args):
        if got.get("want"):
            got["want"] = False
            got["args"] = tuple(x.copy() if isinstance(x, np.ndarray) else x for x in args)
            out = fused(*args)
            got["out"] = out
            return out
        return fused(*args)

    tree_step.tree_fused = record
    try:
        for i in range(step + 1):
            ctrl(i)
            if i == step:
                got["want"] = True
                mujoco.mj_copyData(saved, m, d)
            contacts.step()
    finally:
        tree_step.tree_fused = fused
    args, out = got["args"], got["out"]
    print(f"replay of step {step}: outcome {NAMES.get(int(out[0]))}, K = {len(out[3])}, "
          f"{out[8]} Newton iterations")

    def timed(fn, before) -> tuple[float, float]:
        t = np.empty(calls)
        for j in range(calls):
            before()
            t0 = time.perf_counter()
            fn()
            t[j] = time.perf_counter() - t0
        return 1e6 * np.percentile(t, 10), 1e6 * np.median(t)

    def after_step1() -> None:
        mujoco.mj_copyData(d, m, saved)
        mujoco.mj_step1(m, d)

    after_step1()
    again = fused(*args)
    print(f"  replayed: outcome {NAMES.get(int(again[0]))}, {again[8]} Newton iterations")
    lo, med = timed(lambda: fused(*args), after_step1)
    print(f"  tree_fused: p10 {lo:.1f} us, median {med:.1f} us")
    lo, med = timed(contacts.step, lambda: mujoco.mj_copyData(d, m, saved))
    print(f"  contacts.step(): p10 {lo:.1f} us, median {med:.1f} us")
    if os.environ.get("NUMBA_NRT_STATS") == "1":
        from numba.core.runtime import rtsys

        after_step1()
        s0 = rtsys.get_allocation_stats()
        fused(*args)
        s1 = rtsys.get_allocation_stats()
        print(f"  numba allocations per tree_fused call: {s1.alloc - s0.alloc}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=700, help="the host step replayed")
    ap.add_argument("--calls", type=int, default=300, help="replayed calls")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (before)")
    q = bm._example()
    bm.a1_steps(q, True)  # compile / warm outside the timing (every path: a whole run)
    fused = tree_step.tree_fused
    last: list = [None]

    def kept(*a):
        out = fused(*a)
        last[0] = out
        return out

    tree_step.tree_fused = kept
    try:
        outcomes(q, last)
    finally:
        tree_step.tree_fused = fused
    replay(q, fused, args.step, args.calls)
    print(f"load average {os.getloadavg()[0]:.2f} (after)")


if __name__ == "__main__":
    main()
