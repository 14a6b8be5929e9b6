"""Benchmark: time per step of a pile of N spheres in a box, mbplugin engine vs PyBullet.

Both engines get the same spheres (radius 5 mm, rubber, 0.58 g) in the same positions: a
square-base column in a box (floor + 4 walls), each sphere overlapping its lattice neighbours by
0.1 % of the radius so that every sphere starts with up to six contacts (about 3 N contacts), and
gravity. We time ``--steps`` steps after ``--warmup`` steps:

* mbplugin: fixed-step semi-implicit Euler (``mbplugin.dynamics``), Hunt & Crossley's general
  law with Hertz stiffness from the materials, regularised Coulomb friction; every step runs the
  broad phase (k-d tree), the narrow phase, the contact store (matching, onsets, separations)
  and the compiled force loop;
* PyBullet: ``stepSimulation`` (impulse-based sequential solver, default 50 iterations) with
  its default time step 1/240 s, the same spheres as rigid bodies and the same friction.

The steps are not equivalent: a compliant Hertz contact needs a time step near its contact period
(here ~1e-4 s), an impulse solver does not. Both figures are reported, per step and per simulated
second. Run::

    python benchmarks/bench_pile.py            # N = 1e3, 1e4, 1e5
    python benchmarks/bench_pile.py --quick    # N = 1e3 only, few steps
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time

import numpy as np

RADIUS = 0.005
DENSITY = 1100.0
MU = 0.4
DT_OURS = 5e-5
DT_BULLET = 1.0 / 240.0


def lattice(n: int) -> tuple[np.ndarray, float]:
    """Centres of n spheres on a cubic lattice with 0.1 % radius overlap, and the box half width."""
    side = max(1, round(math.sqrt(n / 4.0)))
    layers = math.ceil(n / (side * side))
    pitch = 2.0 * RADIUS * (1.0 - 5e-4)
    idx = np.indices((side, side, layers)).reshape(3, -1).T[:n]
    pos = np.empty((n, 3))
    pos[:, :2] = (idx[:, :2] - (side - 1) / 2.0) * pitch
    pos[:, 2] = RADIUS * (1.0 - 1e-3) + idx[:, 2] * pitch
    half = (side - 1) / 2.0 * pitch + RADIUS * (1.0 - 1e-3)
    return pos, half


def build_ours(n: int) -> object:
    from mbplugin.scene import build_scene

    pos, half = lattice(n)
    walls = [
        {"name": "floor", "shape": "plane", "normal": [0, 0, 1], "fixed": True,
         "material": "wood"},
        {"name": "xm", "shape": "plane", "normal": [1, 0, 0], "position": [-half, 0, 0],
         "fixed": True, "material": "wood"},
        {"name": "xp", "shape": "plane", "normal": [-1, 0, 0], "position": [half, 0, 0],
         "fixed": True, "material": "wood"},
        {"name": "ym", "shape": "plane", "normal": [0, 1, 0], "position": [0, -half, 0],
         "fixed": True, "material": "wood"},
        {"name": "yp", "shape": "plane", "normal": [0, -1, 0], "position": [0, half, 0],
         "fixed": True, "material": "wood"},
    ]
    balls = [{"name": f"b{i}", "shape": "sphere", "radius": RADIUS, "material": "rubber",
              "position": pos[i].tolist()} for i in range(n)]
    doc = {
        "scene": {"name": f"pile{n}", "duration": 1.0},
        "integrator": {"method": "symplectic_euler", "dt": DT_OURS},
        "output": {"contacts": False, "bodies": False, "record_every": 10**9},
        "materials": {"rubber": {"E": 5e6, "nu": 0.45, "density": DENSITY},
                      "wood": {"E": 1e10, "nu": 0.3}},
        "bodies": walls + balls,
        "contact": {"law": "hunt_crossley_general", "params": {"lam": 1.5e5},
                    "friction": {"mu": MU, "v_eps": 5e-3}},
    }
    return build_scene(doc, f"pile{n}")


def time_ours(n: int, warmup: int, steps: int) -> dict:
    from mbplugin.dynamics.integrators import IntegratorSettings, integrate

    t0 = time.perf_counter()
    scene = build_ours(n)
    world = scene.world
    build = time.perf_counter() - t0
    settings = IntegratorSettings("symplectic_euler", dt=DT_OURS)
    y = world.pack()
    y, _ = integrate(world, y, 0.0, warmup * DT_OURS, settings)
    t1 = time.perf_counter()
    y, st = integrate(world, y, warmup * DT_OURS, (warmup + steps) * DT_OURS, settings)
    wall = time.perf_counter() - t1
    return {"build_s": build, "step_ms": 1e3 * wall / st.steps, "steps": st.steps,
            "contacts": int(world.contacts.n_active),
            "sim_second_s": wall / st.steps / DT_OURS}


def time_bullet(n: int, warmup: int, steps: int) -> dict:
    import pybullet as p

    pos, half = lattice(n)
    cid = p.connect(p.DIRECT)
    try:
        t0 = time.perf_counter()
        p.setGravity(0, 0, -9.81, physicsClientId=cid)
        p.setTimeStep(DT_BULLET, physicsClientId=cid)
        plane = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid)
        p.createMultiBody(0, plane, physicsClientId=cid)
        height = 2 * pos[:, 2].max() + 4 * RADIUS
        wall = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.01, half + 0.02, height],
                                      physicsClientId=cid)
        wall_y = p.createCollisionShape(p.GEOM_BOX, halfExtents=[half + 0.02, 0.01, height],
                                        physicsClientId=cid)
        for sx in (-1, 1):
            p.createMultiBody(0, wall, basePosition=[sx * (half + 0.01), 0, height],
                              physicsClientId=cid)
            p.createMultiBody(0, wall_y, basePosition=[0, sx * (half + 0.01), height],
                              physicsClientId=cid)
        sphere = p.createCollisionShape(p.GEOM_SPHERE, radius=RADIUS, physicsClientId=cid)
        mass = DENSITY * 4.0 / 3.0 * math.pi * RADIUS**3
        for i in range(n):
            b = p.createMultiBody(mass, sphere, basePosition=pos[i].tolist(),
                                  physicsClientId=cid)
            p.changeDynamics(b, -1, lateralFriction=MU, physicsClientId=cid)
        build = time.perf_counter() - t0
        for _ in range(warmup):
            p.stepSimulation(physicsClientId=cid)
        t1 = time.perf_counter()
        for _ in range(steps):
            p.stepSimulation(physicsClientId=cid)
        wall_t = time.perf_counter() - t1
        contacts = len(p.getContactPoints(physicsClientId=cid))
    finally:
        p.disconnect(cid)
    return {"build_s": build, "step_ms": 1e3 * wall_t / steps, "steps": steps,
            "contacts": contacts, "sim_second_s": wall_t / steps / DT_BULLET}


def time_bullet_isolated(n: int, warmup: int, steps: int, mem_gb: float) -> dict:
    """:func:`time_bullet` in a child process limited to ``mem_gb`` GiB of address space, so that
    a PyBullet run that exhausts memory is reported instead of killing the benchmark."""
    cmd = [sys.executable, __file__, "--bullet-only", str(n), str(warmup), str(steps),
           "--mem-gb", str(mem_gb)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode == 0 and lines:
        return json.loads(lines[-1])
    if "MemoryError" in res.stderr or "bad_alloc" in res.stderr or res.returncode in (-9, 137):
        reason = "out of memory"
    elif res.returncode == -11:
        reason = "segmentation fault (failed allocation at the memory limit)"
    else:
        reason = f"exit {res.returncode}"
    return {"error": f"{reason} (limit {mem_gb:g} GiB)", "step_ms": math.nan,
            "sim_second_s": math.nan, "contacts": -1}


def machine() -> dict:
    info: dict = {"python": sys.version.split()[0], "platform": platform.platform()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        info["lscpu"] = "\n".join(out.splitlines()[:10])
    except OSError:
        info["lscpu"] = "n/a"
    import numba
    import pybullet
    import scipy

    info["versions"] = {"numpy": np.__version__, "scipy": scipy.__version__,
                        "numba": numba.__version__,
                        "pybullet": getattr(pybullet, "__version__", "3.x")}
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1000 only, few steps")
    ap.add_argument("--sizes", type=int, nargs="*", help="numbers of spheres")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per size")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--mem-gb", type=float, default=12.0,
                    help="address-space limit of the PyBullet child process (GiB)")
    ap.add_argument("--bullet-only", type=int, nargs=3, metavar=("N", "WARMUP", "STEPS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.bullet_only:
        import resource

        lim = int(args.mem_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        print(json.dumps(time_bullet(*args.bullet_only)))
        return 0
    sizes = args.sizes or ([1000] if args.quick else [1000, 10000, 100000])
    rows = []
    if not args.json:
        print(f"{'N':>7} {'contacts ours':>13} {'ours ms/step':>12} {'pybullet ms/step':>16} "
              f"{'ratio':>6} {'ours s/sim-s':>12} {'pybullet s/sim-s':>16}", flush=True)
    for n in sizes:
        steps = args.steps or (10 if args.quick else max(5, int(200_000 / n)))
        warm = 3 if args.quick else max(3, steps // 4)
        ours = time_ours(n, warm, steps)
        bullet = time_bullet_isolated(n, warm, steps, args.mem_gb)
        r = {"n": n, "ours": ours, "pybullet": bullet,
             "ratio_step": ours["step_ms"] / bullet["step_ms"]}
        rows.append(r)
        if not args.json:  # one row as soon as it is measured
            o, b = r["ours"], r["pybullet"]
            print(f"{n:>7} {o['contacts']:>13} {o['step_ms']:>12.3f} {b['step_ms']:>16.3f} "
                  f"{r['ratio_step']:>6.2f} {o['sim_second_s']:>12.1f} "
                  f"{b['sim_second_s']:>16.2f}  {b.get('error', '')}", flush=True)
    if args.json:
        print(json.dumps({"machine": machine(), "rows": rows}, indent=2))
        return 0
    print(f"(ours: dt = {DT_OURS:g} s semi-implicit Euler; pybullet: dt = 1/240 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
