"""Python-level calls per host step of a robot of ``tests/robot_rig.py`` inside
``BulletContacts.step`` (the controller's own calls left out).

A profile hook (``sys.setprofile``) counts, while ``BulletContacts.step`` runs, the Python
functions entered (``call`` events: Python frames, compiled numba dispatchers' wrappers are C)
and the C functions called from Python (``c_call``: NumPy, PyBullet, builtins, numba
dispatchers). The robot stands ``--stance`` s then trots ``--trot`` s at ``--dt``; printed per
robot: both counts per host step and with ``--by-name`` the ``--top`` functions by calls per
step. Each robot's run is made once unprofiled first (numba's loading of compiled signatures
met first in the run would count otherwise).

    python benchmarks/count_python_calls.py [--robots a1,aliengo] [--dt 0.0041667]
        [--stance 1] [--trot 1] [--by-name] [--top 40]

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

import robot_rig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default="a1,aliengo")
    ap.add_argument("--dt", type=float, default=1 / 240, help="host step (s)")
    ap.add_argument("--stance", type=float, default=1.0, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=1.0, help="gait time (s)")
    ap.add_argument("--by-name", action="store_true", help="the calls by function")
    ap.add_argument("--top", type=int, default=40, help="functions listed with --by-name")
    args = ap.parse_args(argv)
    from mbplugin.bullet import BulletContacts

    d = Path(tempfile.mkdtemp())
    counts: collections.Counter = collections.Counter()
    names: collections.Counter = collections.Counter()
    inside = [0]

    def hook(frame: Any, event: str, arg: Any) -> None:
        if not inside[0]:
            return
        if event == "call":
            counts["py"] += 1
            if args.by_name:
                co = frame.f_code
                names[f"{Path(co.co_filename).name}:{co.co_name}"] += 1
        elif event == "c_call":
            counts["c"] += 1
            if args.by_name:
                name = getattr(arg, "__qualname__", None) or getattr(arg, "__name__", arg)
                names[f"C {name}"] += 1

    step = BulletContacts.step

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        inside[0] += 1
        try:
            return step(self, *a, **k)
        finally:
            inside[0] -= 1

    for name in args.robots.split(","):
        spec = robot_rig.ROBOTS[name]
        # the same run once unprofiled: every compiled signature it meets is loaded first
        robot_rig.run(spec, d, args.dt, args.stance + args.trot, record=False,
                      t_gait=args.stance)
        counts.clear()
        names.clear()
        BulletContacts.step = counted  # type: ignore[method-assign]
        sys.setprofile(hook)
        try:
            rec = robot_rig.run(spec, d, args.dt, args.stance + args.trot, record=False,
                                t_gait=args.stance)
        finally:
            sys.setprofile(None)
            BulletContacts.step = step  # type: ignore[method-assign]
        n = rec["steps"]
        print(f"{name}: {n} host steps, per step: Python calls {counts['py'] / n:.1f}, "
              f"C calls {counts['c'] / n:.1f}")
        if args.by_name:
            for fn, c in names.most_common(args.top):
                print(f"  {c / n:8.2f}  {fn}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
