"""Benchmark: the quadruped's real-time factor, implicit step compiled vs its NumPy reference.

Runs ``run(ours, stance, trot, 1/hz)`` of ``examples/quadruped_foot_ground.py`` (the A1 on
compliant ground, regularised friction or with ``--stick`` the tangential spring, the backend's
default implicit step for the toes) in one process for each path: ``native`` (PyBullet's own
contact), ``reference`` (``BulletContacts(solver="scipy")``: the implicit step's Newton solve
in NumPy) and ``compiled`` (the default: :mod:`mbplugin.pipeline.implicit_kernel`), the solver set
by a wrapper, everything else the example's. Prints per path the wall time of the example's
loop, the real-time factor, the cost per host step and the example's own figures (quiet-stance
summed foot force over the weight, sinkage against the static Hertz estimate, with a trot the
distance and the largest backward toe slide in one stance), then the largest difference of the
base trajectory between the two backend paths. A warm-up run (0.1 s) first compiles the kernels.
On a shared machine the wall time varies with the other jobs' load; the process's CPU time
over each run (set-up included) and the real-time factor from it are printed too.

    python benchmarks/bench_bullet_quadruped.py [--stance 1] [--trot 1] [--hz 240] [--stick]
        [--paths native,reference,compiled]
"""

from __future__ import annotations

import argparse
import functools
import os
import time

import numpy as np
import quadruped_example

import mbplugin.bullet

SOLVER = {"reference": "scipy", "compiled": "compiled"}



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stance", type=float, default=1.0, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=1.0, help="trot time (s)")
    ap.add_argument("--hz", type=float, default=240.0, help="host steps per second")
    ap.add_argument("--stick", action="store_true", help="the tangential spring at the toes")
    ap.add_argument("--paths", default="native,reference,compiled", help="comma-separated")
    args = ap.parse_args(argv)
    ex = quadruped_example.load()
    dt = 1.0 / args.hz
    stick = ex.STICK if args.stick else None
    k = ex.toe_stiffness()
    sim = args.stance + args.trot
    n = round(sim / dt)
    print(f"A1, {args.stance:g} s stance + {args.trot:g} s trot at 1/{args.hz:g} s "
          f"({'stick' if stick else 'regularised friction'}); load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    original = mbplugin.bullet.BulletContacts
    recs = {}
    try:
        ex.run(True, 0.1, 0.0, dt, stick)  # compile / warm up
        for path in args.paths.split(","):
            if path != "native":
                mbplugin.bullet.BulletContacts = functools.partial(original,
                                                                   solver=SOLVER[path])
            cpu = time.process_time()
            rec = recs[path] = ex.run(path != "native", args.stance, args.trot, dt, stick)
            cpu = time.process_time() - cpu
            mbplugin.bullet.BulletContacts = original
            wall = float(rec["wall"])
            w = float(rec["weight"])
            quiet = slice(int(0.5 * args.stance / dt), int(args.stance / dt))
            fsum = rec["force"][quiet].sum(axis=1) / w
            sink = rec["depth"][quiet].mean()
            line = (f"{path:9s}: wall {wall:7.2f} s, real-time factor {sim / wall:6.2f}, "
                    f"{wall / n * 1e3:6.2f} ms/step (CPU time of the run {cpu:7.2f} s: "
                    f"{sim / cpu:6.2f}); stance sum(F)/W = {fsum.mean():.4f}, "
                    f"sinkage {sink * 1e3:.3f} mm (static Hertz "
                    f"{(w / 4 / k) ** (2 / 3) * 1e3:.3f} mm)")
            if args.trot:
                i0 = int(args.stance / dt)
                slide = ex.backward_slide(rec["force"][i0:], rec["toe_x"][i0:])
                line += (f"; trot {rec['base'][-1][0] - rec['base'][i0 - 1][0]:+.3f} m, "
                         f"backward toe slide {slide * 1e3:.1f} mm")
            print(line, flush=True)
    finally:
        mbplugin.bullet.BulletContacts = original
    if "reference" in recs and "compiled" in recs:
        diff = np.abs(recs["reference"]["base"] - recs["compiled"]["base"]).max(axis=1)
        print(f"base trajectory, compiled vs reference: largest difference {diff.max():.2e} m "
              f"(at t = {int(np.argmax(diff)) * dt:.3f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
