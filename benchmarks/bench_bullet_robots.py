"""Benchmark: legged robots on managed ground, the backend's cost per host step against native.

Per robot of the matrix of ``tests/robot_rig.py`` (the A1, Laikago, Aliengo and Mini Cheetah of
``pybullet_data`` and four robots written by ``tests/robot_urdf.py``), per host step 1/240 s
and 1/1000 s: the robot stands under its joint PD controller (torque control) for ``--stance``
seconds, then trots open loop for ``--trot`` seconds, with PyBullet's native contact and with
the backend managing every foot-ground pair (Hunt-Crossley, Hertz's k from rubber-like ground
and hard toes, regularised friction; the implicit step, the default for links of articulated
bodies). The runs are interleaved in one process, ``--repeat`` times each, and the fastest wall
time of each is kept (the machine is shared: the fastest run is the one least disturbed).
Printed per robot and host step: the wall time per host step of each (the controller's Python
and the stepping, no recording), their ratio (backend / native), the real-time factors
(simulated / wall time), and the ratio of the process's CPU time per step (the fastest run
each; on a loaded machine the wall clock also holds the time the process waited; it holds
each run's set-up too: the world, the URDF's load, the backend's build) and of the loop's
thread CPU time per host step (``loop CPU``: the host steps alone, the issue's cost per host
step). A warm-up run first compiles the kernels.

    python benchmarks/bench_bullet_robots.py [--robots a1,laikago,...] [--hz 240,1000]
        [--stance 1] [--trot 1] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import robot_rig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default=",".join(robot_rig.ROBOTS), help="comma-separated")
    ap.add_argument("--hz", default="240,1000", help="host steps per second, comma-separated")
    ap.add_argument("--stance", type=float, default=1.0, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=1.0, help="gait time (s) after the stance")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, the fastest kept")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    names = args.robots.split(",")
    unknown = [n for n in names if n not in robot_rig.ROBOTS]
    if unknown:
        print(f"error: --robots: unknown {unknown[0]!r} (known: "
              f"{', '.join(robot_rig.ROBOTS)})", file=sys.stderr)
        return 2
    rates = [float(h) for h in args.hz.split(",")]
    sim = args.stance + args.trot
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        robot_rig.run(robot_rig.ROBOTS["a1"], d, 1 / 240, 0.2, record=False)  # compile
        if not args.json:
            print(f"{args.stance:g} s stance + {args.trot:g} s gait per run, fastest of "
                  f"{args.repeat}; load average {os.getloadavg()[0]:.2f}", flush=True)
            print(f"{'robot':14s} {'host step':>9s} {'native ms':>10s} {'backend ms':>11s} "
                  f"{'ratio':>6s} {'RTF native':>11s} {'RTF backend':>12s} {'CPU ratio':>9s} "
                  f"{'loop CPU':>8s}  "
                  "fell (native, backend)")
        for name in names:
            spec = robot_rig.ROBOTS[name]
            for hz in rates:
                dt = 1.0 / hz
                best = {True: float("inf"), False: float("inf")}
                cpu = {True: float("inf"), False: float("inf")}
                loop = {True: float("inf"), False: float("inf")}
                fell = {}
                for _ in range(args.repeat):
                    for ours in (False, True):
                        c0 = time.process_time()
                        rec = robot_rig.run(spec, d, dt, sim, ours=ours, t_gait=args.stance,
                                            record=False)
                        cpu[ours] = min(cpu[ours], (time.process_time() - c0) / rec["steps"])
                        best[ours] = min(best[ours], rec["wall"] / rec["steps"])
                        loop[ours] = min(loop[ours], rec["cpu"] / rec["steps"])
                        fell[ours] = robot_rig.fell(rec)
                row = {"robot": name, "hz": hz, "native_ms": best[False] * 1e3,
                       "backend_ms": best[True] * 1e3, "ratio": best[True] / best[False],
                       "rtf_native": dt / best[False], "rtf_backend": dt / best[True],
                       "cpu_ratio": cpu[True] / cpu[False],
                       "loop_cpu_ratio": loop[True] / loop[False],
                       "fell_native": fell[False], "fell_backend": fell[True],
                       "load": os.getloadavg()[0]}
                out.append(row)
                if not args.json:
                    print(f"{name:14s} {'1/' + format(hz, 'g'):>9s} {row['native_ms']:10.3f} "
                          f"{row['backend_ms']:11.3f} {row['ratio']:6.2f} "
                          f"{row['rtf_native']:11.1f} {row['rtf_backend']:12.2f} "
                          f"{row['cpu_ratio']:9.2f} {row['loop_cpu_ratio']:8.2f}  "
                          f"({fell[False]}, {fell[True]})", flush=True)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
