"""Benchmark: the shipped pile at N = 1e3 balls, run at the step advisor's recommendation.

``scenes/pile.toml`` with 10 x 10 x 10 rubber balls poured into a box (semi-implicit Euler, Hunt &
Crossley's general law with Hertz stiffness from the materials, regularised Coulomb friction).
The acceptance of issue 10: at the advisor's step the mechanical energy (kinetic + potential +
stored elastic) never rises (beyond semi-implicit Euler's O(dt) oscillation inside a contact,
1e-3 of the run's energy); at twice the step (the scene's old dt = 2e-5 s) the advisor warns.
Reports the advice, the wall time, the energy figures. Run::

    python benchmarks/bench_pile_energy.py                   # N = 1e3, 0.3 s
    python benchmarks/bench_pile_energy.py --duration 0.1    # shorter
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np


def run(dt: float | None, duration: float, n: int) -> dict:
    from mbplugin.dynamics.simulation import SimulationWarning
    from mbplugin.scene import load_scene

    sets = [f"nx={n}", f"ny={n}", f"nz={n}", f"duration={duration}"]
    if dt is not None:
        sets.append(f"dt={dt}")
    scene = load_scene("scenes/pile.toml", sets)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimulationWarning)
        res = scene.run()
    wall = time.perf_counter() - t0
    e = res.energy
    mech = e["kinetic"] + e["potential"] + e["stored"]
    scale = res.energy_scale
    return {
        "balls": n**3, "dt": res.advice.get("dt"), "steps": res.stats.steps,
        "recommended_dt": res.advice.get("recommended_dt"),
        "limited_by": res.advice.get("limited_by"), "wall_s": wall,
        "ms_per_step": 1e3 * wall / max(res.stats.steps, 1),
        "energy_scale_J": scale,
        "largest_rise_between_records": float(np.max(np.diff(mech)) / scale),
        "energy_rise": res.energy_rise, "energy_drift": res.energy_drift,
        "mech_final_over_initial": float((mech[-1] - np.min(e["potential"]))
                                         / (mech[0] - np.min(e["potential"]))),
        "warnings": res.warnings,
    }


def overhead(n: int, steps: int = 200) -> dict:
    """ms/step on bench_pile.py's packed lattice (about 3 contacts per ball from the first
    step): the bare integrator, Simulation.run without the step advisor (energy records,
    trapezoidal contact work) and with it; same process, each after a warm-up run."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_pile import DT_OURS, build_ours

    from mbplugin.dynamics.integrators import IntegratorSettings, integrate
    from mbplugin.dynamics.simulation import SimulationWarning

    out: dict[str, float] = {}
    for key in ("bare", "no_advisor", "advisor", "bare", "no_advisor", "advisor"):
        scene = build_ours(n)
        sim = scene.simulation
        sim.duration = steps * DT_OURS
        sim.integrator = IntegratorSettings("symplectic_euler", dt=DT_OURS)
        sim.advise = key == "advisor"
        t0 = time.perf_counter()
        if key == "bare":
            integrate(scene.world, scene.world.pack(), 0.0, sim.duration, sim.integrator)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SimulationWarning)
                sim.run()
        out[key] = 1e3 * (time.perf_counter() - t0) / steps  # the second run of each counts
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=0.3)
    ap.add_argument("--n", type=int, default=10, help="balls per side (N = n^3)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--with-old-step", action="store_true",
                    help="also run at the scene's former dt = 2e-5 s")
    ap.add_argument("--overhead", action="store_true",
                    help="only the advisor's cost: ms/step with and without it")
    args = ap.parse_args()
    if args.overhead:
        o = overhead(args.n**3)
        print(f"N = {args.n**3} (packed lattice): bare integrator {o['bare']:.2f} ms/step, "
              f"Simulation.run without the advisor {o['no_advisor']:.2f} "
              f"(x{o['no_advisor'] / o['bare']:.2f}), with it {o['advisor']:.2f} "
              f"(x{o['advisor'] / o['bare']:.2f})")
        return
    rows = [run(None, args.duration, args.n)]
    if args.with_old_step:
        rows.append(run(2e-5, args.duration, args.n))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        ok = r["largest_rise_between_records"] <= 1e-3 and r["energy_rise"] <= 1e-3
        print(f"N = {r['balls']}, dt = {r['dt']:.3g} s (advisor: <= {r['recommended_dt']:.3g} s, "
              f"{r['limited_by']}), {r['steps']} steps in {r['wall_s']:.1f} s "
              f"({r['ms_per_step']:.2f} ms/step)")
        print(f"  largest rise of kinetic+potential+stored between records: "
              f"{r['largest_rise_between_records']:.2e} of {r['energy_scale_J']:.4g} J; "
              f"energy_rise {r['energy_rise']:.2e}; drift {r['energy_drift']:.3g} -> "
              f"{'non-increasing' if ok else 'RISES'}")
        for w in r["warnings"]:
            print(f"  warning: {w}")


if __name__ == "__main__":
    main()
