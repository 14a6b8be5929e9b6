"""Benchmark: the quadruped's tangential springs (``stick``) on the compiled and the SciPy path.

Runs ``run(True, stance, trot, 1/hz, STICK, articulated="substep")`` of
``examples/quadruped_foot_ground.py`` (the A1 on compliant ground, Dahl's spring at the four
toes, the sub-steppers rather than the example's default implicit step) once per contact-space
solver
(``BulletContacts(solver=...)``, chosen by a wrapper; everything else is the example's) and
prints for each: wall time, the quiet-stance summed foot force over the weight, the sinkage
against the static Hertz estimate, and with a trot the distance trotted and the largest
backward toe slide in one stance (the example's own measures).

    python benchmarks/bench_bullet_stick.py [--stance 0.75] [--trot 0] [--hz 240]
        [--solvers compiled,scipy]
"""

from __future__ import annotations

import argparse
import functools

import quadruped_example

import mbplugin.bullet


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stance", type=float, default=0.75, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=0.0, help="trot time (s)")
    ap.add_argument("--hz", type=float, default=240.0, help="host steps per second")
    ap.add_argument("--solvers", default="compiled,scipy", help="comma-separated")
    args = ap.parse_args(argv)
    ex = quadruped_example.load()
    dt = 1.0 / args.hz
    k = ex.toe_stiffness()
    original = mbplugin.bullet.BulletContacts
    try:
        for solver in args.solvers.split(","):
            mbplugin.bullet.BulletContacts = functools.partial(original, solver=solver)
            # the sub-steppers (the example's default for the toes is the implicit step)
            rec = ex.run(True, args.stance, args.trot, dt, ex.STICK, articulated="substep")
            w = float(rec["weight"])
            quiet = slice(int(0.5 * args.stance / dt), int(args.stance / dt))
            fsum = rec["force"][quiet].sum(axis=1) / w
            sink = rec["depth"][quiet].mean()
            line = (f"{solver:8s}: wall {float(rec['wall']):7.1f} s; stance sum(F)/W = "
                    f"{fsum.mean():.4f}; sinkage {sink * 1e3:.3f} mm (static Hertz "
                    f"{(w / 4 / k) ** (2 / 3) * 1e3:.3f} mm)")
            if args.trot:
                i0 = int(args.stance / dt)
                trot = slice(i0, None)
                slide = ex.backward_slide(rec["force"][trot], rec["toe_x"][trot])
                line += (f"; trot {rec['base'][-1][0] - rec['base'][i0 - 1][0]:+.3f} m forward, "
                         f"largest backward toe slide {slide * 1e3:.1f} mm")
            print(line, flush=True)
    finally:
        mbplugin.bullet.BulletContacts = original
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
