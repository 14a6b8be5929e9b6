"""Benchmark: a robot's host step with the lean after-step path (``bullet/fused.py``
``after_lean``, ``step_margin``) on and off, in one process.

One robot of ``tests/robot_rig.py`` (default the A1 and the Aliengo) stands ``--stance`` s then
trots ``--trot`` s at 1/240 s with the backend, ``--repeat`` times with each setting,
alternated: "on" as the package runs; "off" with ``after_lean`` declining (the general
``BulletHost.solve`` -> ``HostStep.after`` path) and the margin by
``mbplugin.hosts.detection.margin_of``. Printed per robot: the loop's thread CPU time per host
step (min and median of the runs) of each and their ratio, with native PyBullet's in the same
process for the ratio to native. The results of the two settings are bitwise the same (the
host pins); only the Python around the compiled calls differs. The machine is shared: the
settings alternate run by run so that both see the same load.

``--toggle commits``: instead, "off" declines the store's commit tests inside the fused
compiled calls (``ContactStore.rows_test_args`` None: ``begin_lean`` then commits through
``ContactStore.commit_rows`` and calls ``body_delassus`` and ``lean_begin`` apart,
``after_lean`` ends the step through ``ContactIntegrator.after`` and ``step_info``: the path
before branch pba1's ``begin_body`` and ``rounds_end``).

    python benchmarks/bullet_lean_toggle.py [--robots a1,aliengo] [--stance 2] [--trot 2]
        [--repeat 5] [--toggle after|commits]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import robot_rig

#: the package's own ``ContactStore.rows_test_args`` (put back by the "commits" toggle's "on")
_ROWS_TEST: list[Any] = []


def _setting(on: bool, toggle: str = "after") -> None:
    """Switch the lean after-step path (``toggle`` "after") or the fused commit tests
    ("commits") on (the package's own functions) or off."""
    from mbplugin.bullet import backend, fused
    from mbplugin.hosts.detection import margin_of
    from mbplugin.pipeline.store import ContactStore

    if toggle == "commits":
        if not _ROWS_TEST:
            _ROWS_TEST.append(ContactStore.rows_test_args)
        ContactStore.rows_test_args = (  # type: ignore[method-assign]
            _ROWS_TEST[0] if on else (lambda self, batch: None))
        return
    backend.after_lean = fused.after_lean if on else (lambda *a: False)
    backend.step_margin = fused.step_margin if on else margin_of


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default="a1,aliengo", help="comma-separated")
    ap.add_argument("--stance", type=float, default=2.0, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=2.0, help="gait time (s)")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each setting (1-50)")
    ap.add_argument("--toggle", choices=("after", "commits"), default="after",
                    help="what is switched off (module docstring)")
    args = ap.parse_args(argv)
    names = args.robots.split(",")
    bad = [r for r in names if r not in robot_rig.ROBOTS]
    if bad:
        ap.error(f"--robots: unknown {bad}; allowed {sorted(robot_rig.ROBOTS)}")
    if not 1 <= args.repeat <= 50:
        ap.error(f"--repeat: {args.repeat} outside 1-50")
    d = Path(tempfile.mkdtemp())
    dt, secs = 1 / 240, args.stance + args.trot
    robot_rig.run(robot_rig.ROBOTS["a1"], d, dt, 0.5, t_gait=0.25, record=False)  # compile
    print(f"thread CPU us per host step at 1/240 s, {args.stance:g} s stance + {args.trot:g} s "
          f"trot, {args.repeat} runs each (min / median); load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'robot':13s} {'native':>13s} {'off':>13s} {'on':>13s} | on/off (min, median) | "
          "on/native")
    for name in names:
        spec = robot_rig.ROBOTS[name]
        got: dict[Any, list[float]] = {"native": [], False: [], True: []}
        for _ in range(args.repeat):
            for key in ("native", False, True):
                if key != "native":
                    _setting(key, args.toggle)
                rec = robot_rig.run(spec, d, dt, secs, ours=key != "native", t_gait=args.stance,
                                    record=False)
                got[key].append(rec["cpu"] / rec["steps"] * 1e6)
        _setting(True, args.toggle)
        mn = {k: min(v) for k, v in got.items()}
        md = {k: statistics.median(v) for k, v in got.items()}
        print(f"{name:13s} " + " ".join(f"{mn[k]:6.1f}/{md[k]:6.1f}" for k in ("native", False,
                                                                               True))
              + f" | {mn[True] / mn[False]:.3f}, {md[True] / md[False]:.3f}"
              + f" | {md[True] / md['native']:.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
