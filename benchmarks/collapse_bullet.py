"""A robot on a fully managed plane in PyBullet (``manage=[plane]``: every pair of the plane
with the robot's links, hull corners included), native and ours, as the probe of issue 18: the
robot of ``tests/robot_rig.py`` stands 300 steps under its PD targets, then the targets are cut
to 20 % so that it collapses onto its body; 1200 steps at 1/240 s, Hunt-Crossley cr = 0.3,
k = 2e6 N/m^1.5 (ours). Per robot and run: the contacts in a step (native:
``getContactPoints``; ours: the managed contacts integrated), largest and mean over steps
300-1200, the thread CPU per host step over the collapse (steps 300-1200) and at rest (steps
1000-1200), and ours' Σ normal force / weight at the last step. A run longer than ``--limit``
s of thread CPU is cut and marked. Compare two trees in one session (PYTHONPATH per tree)
and state the load (``uptime``).

    python benchmarks/collapse_bullet.py [--robots a1,laikago,aliengo,mini_cheetah]
        [--limit 300] [--native]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np
import pybullet as p
import robot_rig as rr

STEPS, CUT = 1200, 300
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": 2e6}


def run(spec: rr.Spec, ours: bool, limit: float) -> dict[str, float]:
    """One run of ``spec``'s collapse (module docstring); the figures of the steps done."""
    with rr.ground_world(rr.G, 1 / 240) as (cid, plane), \
            tempfile.TemporaryDirectory() as tmp:
        h = rr.load(cid, spec, Path(tmp))
        c = None
        if ours:
            from mbplugin.bullet import BulletContacts

            c = BulletContacts(cid, manage=[plane], law=LAW)
        n, cpu = np.zeros(STEPS, dtype=int), np.zeros(STEPS)
        ratio = float("nan")
        done = STEPS
        for i in range(STEPS):
            rr.collapse_torques(cid, spec, h, i, CUT)
            t0 = time.thread_time()
            if c is not None:
                info = c.step()
                n[i] = info.contacts
            else:
                p.stepSimulation(physicsClientId=cid)
            cpu[i] = time.thread_time() - t0
            if c is None:
                n[i] = len(p.getContactPoints(physicsClientId=cid))
            elif i == STEPS - 1:
                ratio = float(np.sum(info.normal_force)) / h.weight
            if cpu.sum() > limit:
                done = i + 1
                break
        col, rest = cpu[CUT:done], cpu[1000:done]
        return {"done": done, "most": int(n[:done].max()),
                "mean": float(n[CUT:done].mean()) if done > CUT else float("nan"),
                "collapse_us": 1e6 * float(col.mean()) if len(col) else float("nan"),
                "rest_us": 1e6 * float(rest.mean()) if len(rest) else float("nan"),
                "total_s": float(cpu[CUT:done].sum()), "ratio": ratio}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", default="a1,laikago,aliengo,mini_cheetah")
    ap.add_argument("--limit", type=float, default=300.0,
                    help="thread CPU (s) after which a run is cut (default 300)")
    ap.add_argument("--native", action="store_true", help="also run native PyBullet")
    a = ap.parse_args()
    print(f"# tree {os.environ.get('PYTHONPATH', '(installed)')}; load {os.getloadavg()}")
    for name in a.robots.split(","):
        if name not in rr.ROBOTS:
            print(f"error: --robots: {name!r} is not one of {sorted(rr.ROBOTS)}")
            sys.exit(2)
    for name in a.robots.split(","):
        for ours in ((False, True) if a.native else (True,)):
            r = run(rr.ROBOTS[name], ours, a.limit)
            cut = "" if r["done"] == STEPS else f" CUT at step {r['done']}"
            print(f"{name:12s} {'ours' if ours else 'native':6s} contacts most {r['most']:4d} "
                  f"mean {r['mean']:6.1f} | us/step collapse {r['collapse_us']:8.0f} "
                  f"rest {r['rest_us']:6.0f} | collapse total {r['total_s']:6.2f} s | "
                  f"ΣFn/W {r['ratio']:.4f}{cut}", flush=True)


if __name__ == "__main__":
    main()
