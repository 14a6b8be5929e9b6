"""The standalone engine from Python: a scene written as a dict, a calibrated law, the results.

A 50 g steel ball (R = 1 cm) falls 5 cm onto a rigid floor. Its contact law is Hunt–Crossley
calibrated with the exact impact analyser to c_r = 0.7 (``calibrate`` returns a Calibration; a
scene takes it as the law directly). A Hunt–Crossley-family law's c_r does not depend on the
impact speed (its damping scales with the spring; Corral et al. 2021, Eq. 5.23), so every
bounce must come out at 0.7, the successive bounce heights must fall by c_r^2, and the energy
balance (kinetic + potential + stored + dissipated) must close.

    python examples/standalone_scene.py [--short] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import sys

import mbplugin
from mbplugin.impact import calibrate
from mbplugin.laws import make_law
from mbplugin.scene import build_scene

M, R, H, G, TARGET = 0.05, 0.01, 0.05, 9.81, 0.7


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI): two bounces")
    ap.add_argument("--out", default="out/standalone_scene", help="where the records go")
    args = ap.parse_args(argv)

    v_impact = math.sqrt(2 * G * H)
    law = make_law("hunt_crossley", k=1e9, n=1.5, cr=TARGET)
    cal = calibrate(law, target_cr=TARGET, v0=v_impact, mass=M)
    # flight times: 2 v/g per bounce, shrinking by c_r each time
    t_fall = v_impact / G
    n_bounces = 2 if args.short else 5
    duration = t_fall + sum(2 * v_impact * TARGET**i / G for i in range(1, n_bounces)) + 0.5 * (
        2 * v_impact * TARGET**n_bounces / G)
    doc = {
        "scene": {"name": "standalone", "duration": duration},
        "world": {"gravity": [0.0, 0.0, -G]},
        "integrator": {"method": "adaptive", "solver": "DOP853", "rtol": 1e-10},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": R, "mass": M,
             "position": [0.0, 0.0, R + H]},
        ],
        "contact": {"law": cal},  # a Calibration (or a Law) in place of a name
    }
    scene = build_scene(doc)
    scene.simulation.preflight()  # initial overlaps, work and memory: errors before running
    result = scene.run()
    files = result.write(args.out, "csv")

    ok = True
    print(f"calibrated {cal.param} = {cal.value:.6g} for c_r = {TARGET} at {v_impact:.4f} m/s")
    for i, b in enumerate(result.bounces):
        good = abs(b["cr"] - TARGET) < 2e-3
        ok &= good
        print(f"bounce {i + 1}: v_in = {b['v_in']:.5f} m/s, c_r = {b['cr']:.5f} "
              f"{'ok' if good else 'WRONG'}")
    if len(result.bounces) < n_bounces:
        print(f"expected {n_bounces} bounces, got {len(result.bounces)}")
        ok = False
    e = result.energy
    print(f"energy: initial {e['total'][0]:.6e} J, dissipated {e['dissipated'][-1]:.6e} J, "
          f"balance drift {result.energy_drift:.2e}")
    ok &= result.energy_drift < 1e-6
    print(f"records written: {', '.join(p.name for p in files)} in {args.out}")
    print("check passed" if ok else "check FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    with mbplugin.compile_notice(45):  # a first run compiles (~45 s on 2 cores)
        sys.exit(main())
