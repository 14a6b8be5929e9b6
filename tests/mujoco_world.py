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

