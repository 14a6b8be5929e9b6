"""PyBullet calls per host step of the robots of ``tests/robot_rig.py`` on managed ground.

Every function of the ``pybullet`` module is wrapped by a counter (calls mapped in C over
iterators included: they look the function up on the module), then each robot stands
``--stance`` s and trots ``--trot`` s at ``--dt``, with the backend and natively; printed per
robot: calls per host step of each and the backend's calls by name (the rig's controller's
own calls, joint states and motors, are in both).

    python benchmarks/count_bullet_calls.py [--robots a1,laikago,...] [--dt 0.0041667]
        [--stance 1] [--trot 1] [--by-name]

For a before/after comparison run it with ``PYTHONPATH`` set to each tree in turn.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pybullet as pb
import robot_rig


def _count(counter: collections.Counter) -> None:
    for name in dir(pb):
        f = getattr(pb, name)
        if name.startswith("_") or not callable(f) or isinstance(f, type):
            continue

        def counted(*a: Any, _f: Any = f, _n: str = name, **k: Any) -> Any:
            counter[_n] += 1
            return _f(*a, **k)

        setattr(pb, name, counted)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default=",".join(robot_rig.ROBOTS))
    ap.add_argument("--dt", type=float, default=1 / 240, help="host step (s)")
    ap.add_argument("--stance", type=float, default=1.0, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=1.0, help="gait time (s)")
    ap.add_argument("--by-name", action="store_true", help="the backend's calls by name")
    args = ap.parse_args(argv)
    d = Path(tempfile.mkdtemp())
    robot_rig.run(robot_rig.ROBOTS["a1"], d, args.dt, 0.05, record=False)  # compile
    counter: collections.Counter = collections.Counter()
    _count(counter)
    for name in args.robots.split(","):
        spec = robot_rig.ROBOTS[name]
        per = {}
        for ours in (False, True):
            counter.clear()
            rec = robot_rig.run(spec, d, args.dt, args.stance + args.trot, ours=ours,
                                t_gait=args.stance, record=False)
            steps = rec["steps"]
            # the set-up's calls (loading, the backend's build) are counted once per run: a
            # stepping loop's calls are those per step over the run's steps
            per[ours] = {k: v / steps for k, v in counter.items()}
        print(f"{name}: native {sum(per[False].values()):.2f}, backend "
              f"{sum(per[True].values()):.2f} PyBullet calls per host step (set-up included)")
        if args.by_name:
            for k, v in sorted(per[True].items(), key=lambda x: -x[1])[:16]:
                print(f"    {k:36s} {v:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
