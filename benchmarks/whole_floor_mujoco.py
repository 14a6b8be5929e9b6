"""The whole-floor collapse of ``robots_matrix_mujoco.py --whole-floor`` alone, step by step:
every floor pair of the robot managed (``manage=["floor"]``, Hunt-Crossley cr = 0.3,
k = 2e6 N/m^1.5), 0.6 s of stance, then the legs collapsed (targets x 0.2) so that the body
lands, 2.4 s in all at MuJoCo's 2 ms. Per robot: the managed contacts in a step (mean and
largest, per phase) and the thread CPU per host step, and over the whole collapse (steps
300-1200) the mean contacts and the total thread CPU (s). No native run: compare two trees
(PYTHONPATH per tree) in one session and state the load.

    python benchmarks/whole_floor_mujoco.py [--robots a1,laikago]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import mujoco_robot_rig as mr
import numpy as np
import robot_rig as rr

PHASES = ((300, 400), (400, 600), (600, 1000), (1000, 1200))


def collapse(spec: rr.Spec, r: mr.Robot) -> tuple[np.ndarray, np.ndarray]:
    """Managed contacts (1200,) and thread CPU (1200,) s of each host step of the collapse."""
    from mbplugin.mujoco import MujocoContacts

    mass = r.weight / rr.G
    d, _, _ = mr.setup(r, False)
    c = MujocoContacts(r.m, d, manage=["floor"],
                       law={"name": "hunt_crossley", "cr": 0.3, "k": 2e6}, friction=mr.FRICTION)
    n, cpu = np.zeros(1200, dtype=int), np.zeros(1200)
    try:
        for i in range(1200):
            tgt = r.targets * (1.0 if i < 300 else 0.2)
            tau = spec.kp * mass * (tgt - d.qpos[r.qadr]) - spec.kd * mass * d.qvel[r.vadr]
            d.ctrl[:] = np.clip(tau, -spec.torque * mass, spec.torque * mass)
            t0 = time.thread_time()
            n[i] = c.step().contacts
            cpu[i] = time.thread_time() - t0
    finally:
        c.release()
    return n, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default="a1,laikago", help="comma-separated")
    args = ap.parse_args(argv)
    names = [s for s in args.robots.split(",") if s]
    unknown = [s for s in names if s not in mr.ROBOTS]
    if unknown:
        print(f"error: --robots: unknown {unknown[0]!r} (known: {', '.join(mr.ROBOTS)})",
              file=sys.stderr)
        return 2
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            spec = mr.ROBOTS[name]
            n, cpu = collapse(spec, mr.model(spec, Path(tmp)))
            for a, b in PHASES:
                print(f"{name:10s} steps {a}-{b}: contacts mean {n[a:b].mean():.1f} largest "
                      f"{n[a:b].max()}, {cpu[a:b].mean() * 1e6:.0f} us per host step")
            print(f"{name:10s} steps 300-1200: contacts mean {n[300:].mean():.1f}, "
                  f"thread CPU {cpu[300:].sum():.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
