"""Benchmark: the exact ellipsoid (:mod:`mbplugin.contact.ellipsoid`) against the icosphere mesh
that stood in for MuJoCo's ellipsoid geoms before (``Mesh`` of a 4-subdivision icosphere scaled
to the semi-axes, radius = the smallest semi-axis), same process, alternating rounds.

1. ``detect``: ``ContactModel.detect`` of one ellipsoid (semi-axes 3, 2, 1.3 cm) 0.1 mm into a
   plane and into the top face of a box, at 200 random orientations (CPU time per call).
2. ``mujoco``: MuJoCo's ellipsoid geom (free body, default 2 ms Euler step) dropped 2 mm onto a
   plane and onto a box, every pair managed (Hunt-Crossley, Hertz k from E = 2 GPa, nu = 0.3),
   tilted (20, 10 deg: it lands on its side and rocks on the frictionless floor), 600 host
   steps (1.2 s); CPU time per ``contacts.step()``. The old representation is put in by
   patching :func:`mbplugin.mujoco.geometry.Ellipsoid` with a factory of the icosphere mesh.

3. ``pairs``: ``ContactModel.detect`` of the ellipsoid (turned) against a sphere (r 1.5 cm), the
   side of a capsule (r 1 cm, half length 20 cm) and a second such ellipsoid, each about 0.1 mm
   deep (CPU time per call, 200 calls).

Accuracy is not measured here (tests/test_ellipsoid.py: the overlap against the closed form and
``mj_geomDistance``).

    PYTHONPATH=$PWD python benchmarks/bench_ellipsoid.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

AXES = (0.03, 0.02, 0.013)


def old_shape(axes: Any, subdivisions: int = 4) -> Any:
    """The icosphere mesh main used for an ellipsoid geom (mujoco/geometry.py before)."""
    import trimesh

    from mbplugin.contact import Mesh

    tm = trimesh.creation.icosphere(subdivisions=subdivisions, radius=1.0)
    tm.apply_scale(np.asarray(axes, dtype=float))
    return Mesh(tm, radius=float(min(axes)))


def new_shape(axes: Any, subdivisions: int = 4) -> Any:
    from mbplugin.contact import Ellipsoid

    return Ellipsoid(axes, subdivisions=subdivisions)


def bench_detect(make: Callable[..., Any], ground: str, n: int = 200) -> float:
    """CPU seconds per ``detect`` call (module docstring, 1.)."""
    from scipy.spatial.transform import Rotation

    from mbplugin.contact import BodyState, Box, ContactModel, Plane

    m = ContactModel()
    if ground == "plane":
        m.add_shape(Plane(), -1)
    else:
        m.add_shape(Box((0.5, 0.4, 0.1)), -1, pos=(0.0, 0.0, -0.1))
    m.add_shape(make(AXES), 0)
    m.set_default_law({"name": "hooke", "k": 1.0})
    states = []
    for i in range(n):
        rot = Rotation.random(random_state=i)
        nb = rot.as_matrix().T @ np.array([0.0, 0.0, 1.0])
        z = math.sqrt(float(nb @ (np.array(AXES) ** 2 * nb))) - 1e-4
        states.append(BodyState.create([[0.0, 0.0, z]], quat=[rot.as_quat()[[3, 0, 1, 2]]],
                                       mass=1.0, inertia=[1.0] * 3))
    m.detect(states[0])  # warm
    t0 = time.process_time()
    for st in states:
        m.detect(st)
    return (time.process_time() - t0) / n


def bench_pair(make: Callable[..., Any], other: str, n: int = 200) -> float:
    """CPU seconds per ``detect`` call of the ellipsoid against ``other`` (module docstring,
    3.)."""
    from mbplugin.contact import BodyState, Capsule, ContactModel, Sphere

    m = ContactModel()
    m.add_shape(make(AXES), 0)
    if other == "sphere":
        m.add_shape(Sphere(0.015), -1, pos=(0.0, 0.0, 0.0129 + 0.015))
    elif other == "capsule":
        m.add_shape(Capsule(0.01, 0.2), -1, pos=(0.0, 0.0, 0.0129 + 0.01),
                    quat=(math.sqrt(0.5), 0.0, math.sqrt(0.5), 0.0))
    else:
        m.add_shape(make(AXES), -1, pos=(0.0, 0.0, 0.0129 + 0.0129))
    m.set_default_law({"name": "hooke", "k": 1.0})
    st = BodyState.create([[0.0, 0.0, 0.0]], quat=[[0.96, 0.2, 0.1, 0.05]], mass=1.0,
                          inertia=[1.0] * 3)
    if len(m.detect(st)) != 1:
        raise RuntimeError(f"pairs: the {other} pair is not one contact")
    t0 = time.process_time()
    for _ in range(n):
        m.detect(st)
    return (time.process_time() - t0) / n


def bench_mujoco(make: Callable[..., Any], ground: str, steps: int = 600) -> float:
    """CPU seconds per host step (module docstring, 2.)."""
    import mujoco

    import mbplugin.mujoco.geometry as geo
    from mbplugin.mujoco import MujocoContacts

    floor = ('<geom name="floor" type="plane" size="5 5 .1"/>' if ground == "plane" else
             '<geom name="floor" type="box" size="0.5 0.4 0.1" pos="0 0 -0.1"/>')
    xml = ('<mujoco><worldbody>'
           f'{floor}<body name="e" pos="0 0 {AXES[2] + 0.002}" euler="20 10 0"><freejoint/>'
           f'<geom name="e" type="ellipsoid" size="{AXES[0]} {AXES[1]} {AXES[2]}"/></body>'
           '</worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    saved = geo.Ellipsoid
    geo.Ellipsoid = make  # type: ignore[assignment]
    try:
        c = MujocoContacts(m, d, manage=["floor"], law={"name": "hunt_crossley", "cr": 0.5},
                           material={"E": 2e9, "nu": 0.3})
    finally:
        geo.Ellipsoid = saved  # type: ignore[assignment]
    try:
        c.step()  # warm
        t0 = time.process_time()
        for _ in range(steps):
            c.step()
        return (time.process_time() - t0) / steps
    finally:
        c.release()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    for ground in ("plane", "box"):
        rows: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            for name, make in (("old", old_shape), ("new", new_shape)):
                rows[name].append(bench_detect(make, ground))
        o, n = min(rows["old"]), min(rows["new"])
        print(f"detect on a {ground:5s}: icosphere {o * 1e6:8.1f} us  exact {n * 1e6:8.1f} us  "
              f"ratio exact/icosphere {n / o:.2f} (best of {args.rounds})")
    for ground in ("plane", "box"):
        res: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            for name, make in (("old", old_shape), ("new", new_shape)):
                res[name].append(bench_mujoco(make, ground))
        o, n = min(res["old"]), min(res["new"])
        print(f"mujoco step, {ground:5s}: icosphere {o * 1e6:8.1f} us  exact {n * 1e6:8.1f} us  "
              f"ratio exact/icosphere {n / o:.2f} (best of {args.rounds})")
    for other in ("sphere", "capsule", "ellipsoid"):
        rows = {"old": [], "new": []}
        for _ in range(args.rounds):
            for name, make in (("old", old_shape), ("new", new_shape)):
                rows[name].append(bench_pair(make, other))
        o, n = min(rows["old"]), min(rows["new"])
        print(f"detect vs a {other:9s}: icosphere {o * 1e6:8.1f} us  exact {n * 1e6:8.1f} us  "
              f"ratio exact/icosphere {n / o:.2f} (best of {args.rounds})")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
