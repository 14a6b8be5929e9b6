"""Benchmark: the steel drop ball through the standalone engine, against SciPy DOP853.

A steel ball (R = 1 cm, rho = 7800 kg/m^3, m = 32.7 g; E = 210 GPa, nu = 0.3) dropped from
10 cm (lowest point) onto a fixed steel plane, g = 9.81 m/s^2, 5 s simulated, the exact-c_r law
of Zhang & Sharf (2004) (review Corral et al. 2021, Eq. 5.23) with Hertz's stiffness from the
materials, c_r = 0.3, 0.5, 0.8, 0.95. The engine runs the scene as a scene file would
(``build_scene(doc).run()``, adaptive integrator, rtol 1e-8, recording off except events).

Baseline in the same process: SciPy ``solve_ivp`` DOP853 (rtol 1e-8, atol 1e-11) on the ball's
vertical motion with a plain-Python right-hand side (the same law through ``law.force``), one
``solve_ivp`` call per flight or contact phase with terminal events at onset and at the end of
contact (Eq. 17) - the way one would write it by hand.

``--engine-path DIR`` runs the engine part in a child process with ``PYTHONPATH=DIR`` (e.g. a
``git worktree`` of an older commit) and reports its times beside ours. Run::

    python benchmarks/bench_dropball.py [--repeat 5] [--engine-path /tmp/base] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

CRS = (0.3, 0.5, 0.8, 0.95)
R, RHO, E, NU, H, G, T_END = 0.01, 7800.0, 210e9, 0.3, 0.1, 9.81, 5.0
RTOL = 1e-8


def scene_doc(cr: float) -> dict:
    """The scene as a dict (the scene-file format)."""
    return {
        "scene": {"name": "steel_drop_ball", "duration": T_END},
        "world": {"gravity": [0.0, 0.0, -G]},
        "materials": {"steel": {"E": E, "nu": NU, "density": RHO}},
        "integrator": {"method": "adaptive", "rtol": RTOL},
        "output": {"contacts": False, "record_every": 1000000},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True, "material": "steel"},
            {"name": "ball", "shape": "sphere", "radius": R, "material": "steel",
             "position": [0.0, 0.0, R + H]},
        ],
        "contact": {"law": "zhang_sharf", "params": {"cr": cr}},
    }


def run_engine(cr: float) -> dict:
    from mbplugin.scene import build_scene

    scene = build_scene(scene_doc(cr))
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = scene.run()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return {"wall": wall, "cpu": cpu, "steps": int(res.stats.steps), "bounces": len(res.bounces),
            "cr_first": float(res.bounces[0]["cr"]) if res.bounces else math.nan}


def engine_times(repeat: int) -> dict:
    out = {}
    run_engine(0.5)  # compile / warm caches
    for cr in CRS:
        runs = [run_engine(cr) for _ in range(repeat)]
        best = min(runs, key=lambda r: r["wall"])
        best["cpu"] = min(r["cpu"] for r in runs)
        out[str(cr)] = best
    return out


def run_scipy(cr: float) -> dict:
    """Hand-written DOP853 event loop: flight / contact phases, Python right-hand side."""
    import numpy as np
    from scipy.integrate import solve_ivp

    from mbplugin.laws import make_law

    m = RHO * 4.0 / 3.0 * math.pi * R**3
    e_star = E / (2.0 * (1.0 - NU**2))  # steel on steel: 1/E* = 2 (1 - nu^2) / E
    k = 4.0 / 3.0 * e_star * math.sqrt(R)
    law = make_law("zhang_sharf", k=k, n=1.5, cr=cr)
    t0 = time.perf_counter()
    c0 = time.process_time()
    t, z, vz = 0.0, H, 0.0
    steps = 0
    bounces = 0
    cr_first = math.nan
    while t < T_END:
        # flight until the ball touches (z = 0 going down)
        def touch(_t, y):
            return y[0]
        touch.terminal, touch.direction = True, -1
        sol = solve_ivp(lambda _t, y: [y[1], -G], (t, T_END), [z, vz], method="DOP853",
                        rtol=RTOL, atol=1e-11, events=touch)
        steps += len(sol.t) - 1
        t, z, vz = sol.t[-1], sol.y[0, -1], sol.y[1, -1]
        if sol.status != 1 or t >= T_END:
            break
        v_in = -vz
        if v_in < 1e-9:
            break
        coef = law.coefficients(np.array([v_in]), np.array([m]), np.array([R]))
        state = np.zeros((1, 0))

        def rhs(_t, y, coef=coef, state=state):
            f = law.force(np.array([-y[0]]), np.array([-y[1]]), coef, state)[0]
            return [y[1], -G + f / m]

        def end(_t, y, coef=coef, state=state):
            fr = law.force_raw(np.array([-y[0]]), np.array([-y[1]]), coef, state)[0]
            return max(fr / (m * G), -y[1])  # > 0 until the raw force is <= 0 while receding
        end.terminal, end.direction = True, -1
        sol = solve_ivp(rhs, (t, T_END), [0.0, vz], method="DOP853", rtol=RTOL, atol=1e-11,
                        events=end)
        steps += len(sol.t) - 1
        t, z, vz = sol.t[-1], sol.y[0, -1], sol.y[1, -1]
        if sol.status == 1:
            bounces += 1
            if bounces == 1:
                cr_first = vz / v_in
            z = max(z, 0.0)
    return {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "steps": steps,
            "bounces": bounces, "cr_first": cr_first}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--engine-path", default=None,
                    help="also time the engine of the code tree at this path (child process)")
    ap.add_argument("--engine-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.engine_only:
        print(json.dumps(engine_times(args.repeat)))
        return 0
    ours = engine_times(args.repeat)
    scipy = {}
    for cr in CRS:
        runs = [run_scipy(cr) for _ in range(max(1, args.repeat // 2))]
        scipy[str(cr)] = min(runs, key=lambda r: r["wall"])
        scipy[str(cr)]["cpu"] = min(r["cpu"] for r in runs)
    other = None
    if args.engine_path:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(args.engine_path))
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--engine-only",
                              "--repeat", str(args.repeat)], env=env, cwd=args.engine_path,
                             capture_output=True, text=True, check=True)
        other = json.loads(out.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps({"ours": ours, "scipy": scipy, "other": other}, indent=2))
        return 0
    print("steel drop ball, R = 1 cm, 32.7 g, 10 cm, 5 s, zhang_sharf (exact c_r), rtol 1e-8")
    print("times in ms, best of --repeat: wall (CPU); ratios of wall times")
    head = f"{'c_r':>5} {'ours':>15} {'steps':>6} {'bounces':>8} {'SciPy DOP853':>15} {'x':>6}"
    if other:
        head += f" {'other':>17} {'steps':>6} {'x':>6}"
    print(head)

    def ms(r: dict) -> str:
        return f"{1e3 * r['wall']:.1f} ({1e3 * r['cpu']:.1f})"

    for cr in CRS:
        o, s = ours[str(cr)], scipy[str(cr)]
        line = (f"{cr:5.2f} {ms(o):>15} {o['steps']:6d} {o['bounces']:8d} {ms(s):>15}"
                f" {s['wall'] / o['wall']:6.1f}")
        if other:
            b = other[str(cr)]
            line += f" {ms(b):>17} {b['steps']:6d} {b['wall'] / o['wall']:6.1f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
