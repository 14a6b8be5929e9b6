"""Profile: where a robot's host step goes with the backend (per-function CPU time per step).

One robot of ``tests/robot_rig.py`` (default the A1) stands ``--stance`` s then trots ``--trot``
s at host step ``--dt``: first native PyBullet and the backend without wrappers (the process's
CPU time per host step of each and their ratio), then the backend again with thread-CPU timers
around the backend's, the implicit step's, the store's, the contact model's and PyBullet's
functions (inclusive times, per host step, and calls per host step).

    python benchmarks/profile_bullet_robot.py [--robot a1] [--dt 0.0041667] [--stance 2]
        [--trot 2] [--no-timers]

For a before/after comparison run it with ``PYTHONPATH`` set to each tree in turn.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import robot_rig


def _wrap(owner: Any, name: str, label: str, acc: dict[str, float],
          cnt: collections.Counter) -> None:
    f = getattr(owner, name, None)
    if f is None:  # (a name the code no longer has)
        return

    def timed(*a: Any, **k: Any) -> Any:
        t = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            acc[label] += time.thread_time() - t
            cnt[label] += 1

    setattr(owner, name, timed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="a1", choices=sorted(robot_rig.ROBOTS))
    ap.add_argument("--dt", type=float, default=1 / 240, help="host step (s)")
    ap.add_argument("--stance", type=float, default=2.0, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=2.0, help="gait time (s)")
    ap.add_argument("--no-timers", action="store_true", help="only the CPU time ratio")
    args = ap.parse_args(argv)
    spec = robot_rig.ROBOTS[args.robot]
    sim = args.stance + args.trot
    d = Path(tempfile.mkdtemp())
    robot_rig.run(robot_rig.ROBOTS["a1"], d, 1 / 240, 0.2, record=False)  # compile
    cpu = {}
    for ours in (False, True):
        c0 = time.process_time()
        rec = robot_rig.run(spec, d, args.dt, sim, ours=ours, t_gait=args.stance, record=False)
        cpu[ours] = (time.process_time() - c0) / rec["steps"]
    print(f"{args.robot} at {args.dt:g} s: native {cpu[False] * 1e6:.1f} us/step, backend "
          f"{cpu[True] * 1e6:.1f} us/step, ratio {cpu[True] / cpu[False]:.2f} (CPU); load "
          f"average {os.getloadavg()[0]:.2f}")
    if args.no_timers:
        return 0
    import pybullet as pb

    from mbplugin.bullet import articulated, backend, kinematics, rows
    from mbplugin.contact import model
    from mbplugin.hosts import detection, integrator, step
    from mbplugin.pipeline import implicit, store

    acc: dict[str, float] = collections.defaultdict(float)
    cnt: collections.Counter = collections.Counter()
    bc = backend.BulletContacts
    for n in ("before_step", "after_step", "body_state"):
        _wrap(bc, n, f"BulletContacts.{n}", acc, cnt)
    for n in ("step", "_delassus", "_implicit_before", "after", "_respond"):
        _wrap(step.HostStep, n, f"HostStep.{n}", acc, cnt)
    for n in ("begin", "after"):
        _wrap(integrator.ContactIntegrator, n, f"ContactIntegrator.{n}", acc, cnt)
    for n in ("blocks", "respond"):
        _wrap(articulated.BulletArticulated, n, f"BulletArticulated.{n}", acc, cnt)
    _wrap(detection.HostContacts, "read", "HostContacts.read", acc, cnt)
    _wrap(kinematics.LinkTree, "jacobians", "LinkTree.jacobians", acc, cnt)
    _wrap(rows.BulletRows, "state", "BulletRows.state", acc, cnt)
    _wrap(step, "articulated_w", "articulated_w", acc, cnt)
    for n in ("solve", "finish", "begin", "__init__", "_onsets"):
        _wrap(implicit.ImplicitStep, n, f"ImplicitStep.{n}", acc, cnt)
    _wrap(store.ContactStore, "commit", "ContactStore.commit", acc, cnt)
    _wrap(model.ContactModel, "detect", "ContactModel.detect", acc, cnt)
    for n in ("stepSimulation", "calculateJacobian", "calculateMassMatrix", "getLinkStates",
              "getJointStates", "resetJointStatesMultiDof", "applyExternalForce",
              "resetBaseVelocity", "resetBasePositionAndOrientation",
              "getBasePositionAndOrientation", "getBaseVelocity"):
        _wrap(pb, n, f"pybullet.{n}", acc, cnt)
    t0 = time.thread_time()
    rec = robot_rig.run(spec, d, args.dt, sim, ours=True, t_gait=args.stance, record=False)
    steps = rec["steps"]
    print(f"with timers: {(time.thread_time() - t0) / steps * 1e6:.0f} us/step")
    for k, v in sorted(acc.items(), key=lambda x: -x[1]):
        print(f"{k:40s} {v / steps * 1e6:8.1f} us/step {cnt[k] / steps:6.2f} calls/step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
