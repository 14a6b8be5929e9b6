"""Shared set-up of the MuJoCo tests: MJCF worlds of balls on a floor."""

from __future__ import annotations

from collections.abc import Sequence

import mujoco


def balls_xml(balls: Sequence[tuple[str, float, float, Sequence[float]]], dt: float = 0.002,
              g: float = 9.81, extra: str = "") -> str:
    """An MJCF world: a floor plane named ``floor`` and free spheres (name, radius m, mass kg,
    position m), MuJoCo's default options otherwise (Euler, ``timestep`` ``dt``)."""
    bodies = "\n".join(
        f'<body name="{n}" pos="{p[0]} {p[1]} {p[2]}"><freejoint/>'
        f'<geom name="{n}" type="sphere" size="{r}" mass="{m}"/></body>'
        for n, r, m, p in balls)
    return (f'<mujoco><option timestep="{dt}" gravity="0 0 {-g}"/><worldbody>'
            f'<geom name="floor" type="plane" size="5 5 .1"/>{bodies}{extra}'
            "</worldbody></mujoco>")


def world(xml: str) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """The compiled model and a fresh data of ``xml``."""
    m = mujoco.MjModel.from_xml_string(xml)
    return m, mujoco.MjData(m)


def body_z(m: mujoco.MjModel, d: mujoco.MjData, name: str) -> float:
    """The height (m) of a free body's frame origin, read from ``qpos`` (current after a
    step, unlike ``xpos``)."""
    b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
    return float(d.qpos[m.jnt_qposadr[m.body_jntadr[b]] + 2])



def hertz_column(n: int, r: float, mass: float, k: float, g: float = 9.81
                 ) -> tuple[list[tuple[str, float, float, tuple[float, float, float]]],
                            list[float]]:
    """A column of ``n`` balls b0..b{n-1} (radius ``r`` m, ``mass`` kg) placed at the static
    Hertz overlaps (F = k d^1.5: contact i carries the weight of the n - i balls above it,
    d_i = ((n - i) m g / k)^(2/3)), b0 on the floor: (balls for :func:`balls_xml`, d_i)."""
    d_static = [((n - i) * mass * g / k) ** (2 / 3) for i in range(n)]
    z, balls = r - d_static[0], []
    for i in range(n):
        balls.append((f"b{i}", r, mass, (0.0, 0.0, z)))
        if i + 1 < n:
            z += 2 * r - d_static[i + 1]
    return balls, d_static


def prism_asset(name: str, r: float, half: float, sections: int) -> str:
    """An MJCF ``<asset>`` with a mesh ``name``: a right prism of ``sections`` sides inscribed in
    the cylinder of radius ``r`` and half length ``half`` about z (its rim vertices only, the
    first at angle 0), which MuJoCo collides as its convex hull: a polyhedral cylinder, unlike
    MuJoCo's exact ``cylinder`` geom."""
    import math

    pts = [(r * math.cos(2 * math.pi * i / sections), r * math.sin(2 * math.pi * i / sections), z)
           for i in range(sections) for z in (-half, half)]
    vert = " ".join(f"{x:.17g} {y:.17g} {z:.17g}" for x, y, z in pts)
    return f'<asset><mesh name="{name}" vertex="{vert}"/></asset>'

