"""Benchmark: managed free bodies that PyBullet's own contacts also touch (issue 18, the
mixed scene), cost and rest state.

The pile of ``bench_bullet_pile.py`` (N spheres, R = 1 cm, 50 g, columns of 4 on a grid of
pitch 2R, Hunt-Crossley k = 1e5, cr = 0.5, 1/240 s) with only the sphere-ground pairs managed
(``manage=[plane]``): every sphere-sphere contact is PyBullet's own, so every bottom sphere is
a managed free body carrying three native spheres. Printed per N, in one process:

* CPU per host step (``time.process_time``) of native ``stepSimulation`` and of the backend,
  their ratio, and the part of the backend's step spent in
  :meth:`~mbplugin.bullet.host.BulletHost.native_acceleration` (the ``getContactPoints`` call and
  the wrench), if the tree has it;
* at the end, every ground contact's overlap against the static Hertz overlap
  (4 m g / k)^(2/3) of the column it carries (median and largest relative error) and the
  spheres' largest speed.

    python benchmarks/bench_bullet_mixed.py [--sizes 100 1000] [--steps 480]

``--box``: instead, the heavy box column of tests/test_bullet_mixed.py (a 1 kg box,
0.2 x 0.2 x 0.1 m, under a native 20 kg box, only its ground pair managed, Hunt-Crossley
k = 1e8, 1/240 s): CPU per host step of native PyBullet (every pair native) and of the backend
over ``--steps`` steps from contact, its four corners' overlap against the static Hertz overlap
((21 kg) g / (4 k))^(2/3) and both boxes' largest linear and angular speed at the end.

    python benchmarks/bench_bullet_mixed.py --box [--steps 480]

For a before/after comparison run it with ``PYTHONPATH`` set to each tree in turn.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import time
from functools import partial
from pathlib import Path

import numpy as np
import pybullet as p

from mbplugin.bullet import BulletContacts
from mbplugin.bullet import host as bullet_host

HERE = Path(__file__).resolve().parent


def _pile_module():
    spec = importlib.util.spec_from_file_location("bench_bullet_pile",
                                                  HERE / "bench_bullet_pile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(n: int, steps: int) -> dict[str, float]:
    """Native and backend runs of the N pile; CPU seconds per step and the rest state."""
    bp = _pile_module()
    cid, _, _ = bp.world(n)
    t = time.process_time()
    for _ in range(steps):
        p.stepSimulation(physicsClientId=cid)
    native = (time.process_time() - t) / steps
    p.disconnect(physicsClientId=cid)
    cid, plane, balls = bp.world(n)
    spent = [0.0]
    orig = getattr(bullet_host.BulletHost, "native_acceleration", None)
    if orig is not None:
        def timed(self, *a, **k):  # type: ignore[no-untyped-def]
            t0 = time.process_time()
            try:
                return orig(self, *a, **k)
            finally:
                spent[0] += time.process_time() - t0
        bullet_host.BulletHost.native_acceleration = timed
    try:
        bk = BulletContacts(cid, manage=[plane], law=bp.LAW)
        t = time.process_time()
        for _ in range(steps):
            info = bk.step()
        ours = (time.process_time() - t) / steps
        bk.sync()
        ds = (bp.LAYERS * bp.M * bp.G / bp.K) ** (2 / 3)
        err = np.abs(np.asarray(info.delta) / ds - 1.0)
        speed = max(float(np.max(np.abs(p.getBaseVelocity(b, physicsClientId=cid)[0])))
                    for b in balls)
    finally:
        if orig is not None:
            bullet_host.BulletHost.native_acceleration = orig
        p.disconnect(physicsClientId=cid)
    return {"native": native, "ours": ours, "part": spent[0] / steps,
            "median": float(np.median(err)), "max": float(np.max(err)), "speed": speed,
            "contacts": float(info.contacts)}


def run_box(steps: int) -> dict[str, float]:
    """Native and backend runs of the 1 kg box under a native 20 kg box (module docstring)."""
    import pybullet_data

    masses, k, g = [1.0, 20.0], 1e8, 9.81
    out: dict[str, float] = {}
    for managed in (False, True):
        cid = p.connect(p.DIRECT)
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, -g, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.05],
                                     physicsClientId=cid)
        bs = [p.createMultiBody(m, col, basePosition=[0, 0, 0.05 + 0.1 * i],
                                physicsClientId=cid) for i, m in enumerate(masses)]
        step = partial(p.stepSimulation, physicsClientId=cid)
        if managed:
            bk = BulletContacts(cid, manage=[(plane, bs[0])],
                                law={"name": "hunt_crossley", "cr": 0.5, "k": k})
            step = bk.step
        t = time.process_time()
        for _ in range(steps):
            info = step()
        out["ours" if managed else "native"] = (time.process_time() - t) / steps
        if managed:
            ds = (sum(masses) * g / 4 / k) ** (2 / 3)
            out["max"] = float(np.max(np.abs(np.asarray(info.delta) / ds - 1.0)))
            vel = [np.array(p.getBaseVelocity(b, physicsClientId=cid)) for b in bs]
            out["v"] = max(float(np.max(np.abs(v[0]))) for v in vel)
            out["w"] = max(float(np.max(np.abs(v[1]))) for v in vel)
        p.disconnect(physicsClientId=cid)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--steps", type=int, default=480)
    ap.add_argument("--box", action="store_true",
                    help="the 1 kg box under a native 20 kg box instead of the piles")
    args = ap.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}")
    if args.box:
        run_box(20)  # warm-up
        r = run_box(args.steps)
        print(f"box 1 + 20 kg: native {1e3 * r['native']:.3f} ms, backend {1e3 * r['ours']:.3f} "
              f"ms ({r['ours'] / r['native']:.1f}x); corners off static Hertz max "
              f"{r['max']:.1e}; largest speed {r['v']:.1e} m/s, {r['w']:.1e} rad/s")
        print(f"load {os.getloadavg()[0]:.2f}")
        return
    run(100, 60)  # warm-up (compiled kernels loaded or compiled)
    for n in args.sizes:
        r = run(n, args.steps)
        print(f"N={n}: native {1e3 * r['native']:.2f} ms, backend {1e3 * r['ours']:.2f} ms "
              f"({r['ours'] / r['native']:.1f}x), native_acceleration "
              f"{1e3 * r['part']:.3f} ms ({100 * r['part'] / r['ours']:.1f} % of the step); "
              f"{r['contacts']:.0f} ground contacts: overlap off static Hertz median "
              f"{r['median']:.1e}, max {r['max']:.1e}; largest speed {r['speed']:.1e} m/s")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
