"""A flat face on a managed floor: many coplanar contacts of one body (a large group).

A 64-sided prism (a ``mesh`` geom of a cylinder's rim vertices in MuJoCo, a hull of them in
PyBullet; MuJoCo's ``cylinder`` geom and PyBullet's ``GEOM_CYLINDER`` are exact cylinders, which
rest on three rim points: :mod:`mbplugin.contact.cylinder`) standing on its face touches the
floor at its 64 rim corners, a group too large for the
compiled sub-stepper, solved by :mod:`mbplugin.pipeline.large_groups`. Its Gauss-Seidel sweeps
stall there (W of rank 6 for 192 unknowns, each corner's regularised friction stiff: the
module's :func:`~mbplugin.pipeline.large_groups._dense`); the step used to raise
``IntegrationError`` at touchdown. The expected values are closed forms (Hertz's static
overlap, Coulomb's stopping distance) and native MuJoCo's own outcome.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco_world import prism_asset, world

from mbplugin.mujoco import MujocoContacts

CYLINDER_SECTIONS = 64

G, MASS, R, H, K, DT = 9.81, 1.0, 0.05, 0.05, 1e6, 0.002
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": K}


def _cylinder(z: float, tilt_deg: float = 0.0, friction: float = 1.0,
              prism: bool = False) -> str:
    """A free cylinder (radius R, half-height H, MASS) above the floor at height ``z`` (m),
    its axis tilted ``tilt_deg`` about x: MuJoCo's exact ``cylinder`` geom, or with ``prism``
    a mesh geom of its 64-sided prism."""
    geom = ('type="mesh" mesh="prism"' if prism else f'type="cylinder" size="{R} {H}"')
    asset = prism_asset("prism", R, H, CYLINDER_SECTIONS) if prism else ""
    return (f'<mujoco><option timestep="{DT}" gravity="0 0 {-G}"/>{asset}<worldbody>'
            f'<geom name="floor" type="plane" size="5 5 .1" friction="{friction}"/>'
            f'<body name="cyl" pos="0 0 {z}" euler="{tilt_deg} 0 0"><freejoint/>'
            f'<geom {geom} mass="{MASS}" friction="{friction}"/>'
            "</body></worldbody></mujoco>")


def _static_overlap() -> float:
    """Each rim corner's static overlap: by symmetry it carries m g / 64, and Hunt-Crossley at
    rest is Hertz's F = k delta^(3/2)."""
    return (MASS * G / CYLINDER_SECTIONS / K) ** (2 / 3)


def test_prism_rests_on_its_face_at_the_static_overlap() -> None:
    m, d = world(_cylinder(H, prism=True))
    c = MujocoContacts(m, d, manage=["floor"], law=LAW, material={"E": 1e8, "nu": 0.4})
    for _ in range(150):
        c.step()
    last = c.last
    ds = _static_overlap()
    assert len(last.delta) == CYLINDER_SECTIONS
    assert np.max(np.abs(last.delta / ds - 1)) < 0.01
    assert float(np.sum(last.normal_force)) == pytest.approx(MASS * G, rel=1e-3)
    # the host's pose: the face's centre H below the centre of mass, sunk by the overlap
    assert float(d.qpos[2]) == pytest.approx(H - ds, abs=0.01 * ds)
    assert np.max(np.abs(d.qvel)) < 1e-6


def test_cylinder_sliding_on_its_face_stops_at_coulombs_distance() -> None:
    """Coulomb: v0^2 / (2 mu g); MuJoCo's semi-implicit Euler (x += dt v_(k+1)) stops
    v0 dt / 2 short of it (dt sum_(k=1..N) (v0 - k mu g dt), N = v0 / (mu g dt))."""
    mu, v0 = 0.5, 1.0
    m, d = world(_cylinder(H - _static_overlap(), friction=mu))
    c = MujocoContacts(m, d, manage=["floor"], law=LAW, material={"E": 1e8, "nu": 0.4})
    d.qvel[0] = v0
    for _ in range(110):  # Coulomb's stopping time v0 / (mu g) = 0.20 s: 102 steps
        c.step()
    assert c.friction_mode == "mujoco"
    assert abs(float(d.qvel[0])) < 1e-3
    coulomb = v0 ** 2 / (2 * mu * G)
    assert float(d.qpos[0]) == pytest.approx(coulomb, rel=0.02)
    assert float(d.qpos[0]) == pytest.approx(coulomb - v0 * DT / 2, rel=0.002)


def test_tipped_cylinder_drop_settles_as_native_mujoco() -> None:
    """Dropped tipped 80 degrees, native MuJoCo's cylinder falls onto its side (its axis
    horizontal); ours the same, without an error, and comes to rest."""
    xml = _cylinder(0.06, 80.0)
    mn, dn = world(xml)
    for _ in range(400):
        mujoco.mj_step(mn, dn)
    m, d = world(xml)
    c = MujocoContacts(m, d, manage=["floor"], law=LAW, material={"E": 1e8, "nu": 0.4})
    speed = []
    for i in range(400):
        c.step()
        if i >= 300:  # the fastest point of the body: |v| + R |omega| (m/s)
            speed.append(np.linalg.norm(d.qvel[:3]) + R * np.linalg.norm(d.qvel[3:]))
    axis_native, axis = dn.xmat[1].reshape(3, 3)[:, 2], d.xmat[1].reshape(3, 3)[:, 2]
    assert abs(axis_native[2]) < 1e-3  # native: on its side
    assert abs(axis[2]) < 1e-3
    # at rest over the last 100 steps: no point faster than a tenth of the regularised
    # friction's v_eps = 1e-4 m/s (its stick band)
    assert max(speed) < 1e-5


def test_pybullet_prism_rests_on_its_face_at_the_static_overlap() -> None:
    """The same class in PyBullet: a convex hull of the 64-sided prism's vertices
    (``GEOM_MESH`` from vertices), grown by PyBullet's 1 mm collision margin
    (:data:`mbplugin.bullet.geometry.MARGIN`); PyBullet's lateral friction (the default) on its
    face's 64 corners."""
    import math

    import pybullet as p

    from mbplugin.bullet import BulletContacts
    from mbplugin.bullet.geometry import MARGIN

    SECTIONS = CYLINDER_SECTIONS
    rim = [(R * math.cos(2 * math.pi * i / SECTIONS), R * math.sin(2 * math.pi * i / SECTIONS),
            z) for i in range(SECTIONS) for z in (-H, H)]

    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -G, physicsClientId=cid)
        plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid),
                                  physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_MESH, vertices=rim, physicsClientId=cid)
        body = p.createMultiBody(MASS, col, basePosition=[0, 0, H + MARGIN],
                                 physicsClientId=cid)
        c = BulletContacts(cid, manage=[plane], law=LAW, material={"E": 1e8, "nu": 0.4})
        for _ in range(120):
            c.step()
        ds = (MASS * G / SECTIONS / K) ** (2 / 3)
        assert c.friction_mode == "pybullet"
        assert len(c.last.delta) == SECTIONS
        assert np.max(np.abs(c.last.delta / ds - 1)) < 0.01
        z = p.getBasePositionAndOrientation(body, physicsClientId=cid)[0][2]
        assert z == pytest.approx(H + MARGIN - ds, abs=0.01 * ds)
    finally:
        p.disconnect(cid)
