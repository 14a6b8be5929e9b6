"""Exact cylinders against a plane (:mod:`mbplugin.contact.cylinder`), checked against the
hosts' own distance queries and static equilibrium.

Outside-world values: MuJoCo's ``mj_geomDistance`` between its ``cylinder`` geom and a plane,
PyBullet's ``getClosestPoints`` between its implicit ``GEOM_CYLINDER`` and a plane (an exact
cylinder with PyBullet's collision margin), at tilts from upright through lying on the side to
upside down and at random orientations (to 1e-9 m; the 64-sided prism that stood in for them
was off by up to r (1 - cos(pi / 64)) = 60 um on a 5 cm radius); and the static equilibrium of
a cylinder resting on its side (two contacts, the ends of its lowest generator) and on its end
face (three rim points): the summed normal force equals the weight (1 %) and the host's own
overlap (its distance query) is each contact's static overlap under the law, Hunt-Crossley at
rest F = k delta^1.5 (Hunt & Crossley 1975), delta = (F / k)^(2/3) (5 %).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pybullet as p
import pytest
from mujoco_world import world
from scipy.spatial.transform import Rotation

from mbplugin.bullet.client import Client
from mbplugin.bullet.geometry import link_shapes
from mbplugin.contact import BodyState, ContactModel, Plane
from mbplugin.mujoco import MujocoContacts
from mbplugin.mujoco.geometry import geom_pose, geom_shape

G, R, HALF, K = 9.81, 0.05, 0.1, 1e7
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": K}
#: tilts of the axis from the plane's normal (rad): upright, nearly upright, tilted, lying on
#: the side and nearly so, tilted the other way up, upside down
TILTS = (0.0, 1e-3, 0.3, 1.0, math.pi / 2 - 1e-3, math.pi / 2, 2.5, math.pi)


def _poses(n_random: int) -> list[tuple[np.ndarray, float]]:
    """Orientations [x, y, z, w] and heights of the centre (m): each tilt of :data:`TILTS`
    about a random horizontal axis with a random spin about the cylinder's own axis, then
    ``n_random`` random orientations; heights from touching deep (0) to 2 cm apart."""
    rng = np.random.default_rng(7)
    out = []
    for t in TILTS:
        az = rng.uniform(0.0, 2.0 * math.pi)
        turn = Rotation.from_rotvec(t * np.array([math.cos(az), math.sin(az), 0.0]))
        q = turn * Rotation.from_rotvec([0.0, 0.0, rng.uniform(0.0, 2.0 * math.pi)])
        out.append((q.as_quat(), rng.uniform(0.0, 0.13)))
    for i in range(n_random):
        out.append((Rotation.random(random_state=100 + i).as_quat(), rng.uniform(0.0, 0.13)))
    return out


def _deepest(shape, pos, quat, com, com_quat, skin: float = 0.0) -> float:
    """The deepest overlap (m) the contact model reports for ``shape`` at ``pos``/``quat``
    [w, x, y, z] about a body whose centre of mass is at ``com`` turned by ``com_quat``,
    against the plane z = 0."""
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(shape, 0, pos=pos, quat=quat, skin=skin)
    m.set_default_law({"name": "hooke", "k": 1.0})
    st = BodyState.create([com], quat=[com_quat], mass=1.0, inertia=[1.0] * 3)
    return float(np.max(m.detect(st, margin=1.0).delta))


def _mat_quat(mat: np.ndarray) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.asarray(mat, dtype=float).ravel())
    return q


def test_mujoco_cylinder_overlap_is_mj_geom_distance() -> None:
    xml = ('<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1"/>'
           f'<body name="c" pos="0 0 1"><freejoint/><geom name="c" type="cylinder" '
           f'size="{R} {HALF}"/></body></worldbody></mujoco>')
    m, d = world(xml)
    g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "c")
    shape = geom_shape(m, g, "c")
    pos, quat = geom_pose(m, g)
    for q, z in _poses(40):
        d.qpos[:3] = (0.3, -0.2, z)
        d.qpos[3:7] = q[[3, 0, 1, 2]]
        mujoco.mj_forward(m, d)
        host = -mujoco.mj_geomDistance(m, d, 0, g, 1.0, None)
        ours = _deepest(shape, pos, quat, d.xipos[1], _mat_quat(d.ximat[1]))
        assert ours == pytest.approx(host, rel=0, abs=1e-9), (q, z)


def test_pybullet_implicit_cylinder_overlap_is_get_closest_points() -> None:
    cid = p.connect(p.DIRECT)
    try:
        plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid),
                                  physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_CYLINDER, radius=R, height=2 * HALF,
                                     physicsClientId=cid)
        body = p.createMultiBody(1.0, col, basePosition=[0, 0, 1], physicsClientId=cid)
        (ls,) = link_shapes(Client(cid), body, -1, static=False)
        for q, z in _poses(40):
            p.resetBasePositionAndOrientation(body, [0.1, 0.2, z], q, physicsClientId=cid)
            host = -min(c[8] for c in p.getClosestPoints(body, plane, 1.0, physicsClientId=cid))
            ours = _deepest(ls.shape, ls.pos, ls.quat, (0.1, 0.2, z), q[[3, 0, 1, 2]],
                            skin=ls.skin)
            assert ours == pytest.approx(host, rel=0, abs=1e-9), (q, z)
    finally:
        p.disconnect(cid)


#: (name, euler of the geom about x (deg), contacts at rest, height of the centre over the
#: floor without overlap (m))
RESTS = [("side", 90.0, 2, R), ("face", 0.0, 3, HALF)]


@pytest.mark.parametrize(("name", "euler", "count", "height"), RESTS)
def test_mujoco_cylinder_rests_at_static_hertz(name: str, euler: float, count: int,
                                               height: float) -> None:
    xml = (f'<mujoco><option timestep="0.002" gravity="0 0 {-G}"/><worldbody>'
           '<geom name="floor" type="plane" size="5 5 .1"/>'
           f'<body name="c" pos="0 0 {height}"><freejoint/><geom name="c" type="cylinder" '
           f'size="{R} {HALF}" euler="{euler} 0 0"/></body></worldbody></mujoco>')
    m, d = world(xml)
    weight = float(m.body_mass[1]) * G
    contacts = MujocoContacts(m, d, manage=["floor"], law=LAW)
    try:
        for _ in range(150):  # 0.3 s: settled from touching
            info = contacts.step()
    finally:
        contacts.release()
    mujoco.mj_forward(m, d)
    host = -mujoco.mj_geomDistance(m, d, 0, 1, 1.0, None)
    fn = np.asarray(info.normal_force)
    assert len(fn) == count
    assert fn.sum() / weight == pytest.approx(1.0, abs=0.01)
    np.testing.assert_allclose(host, (fn / K) ** (2 / 3), rtol=0.05)
    assert np.max(np.abs(d.qvel)) < 1e-4  # at rest


@pytest.mark.parametrize(("name", "euler", "count", "height"), RESTS)
def test_pybullet_implicit_cylinder_rests_at_static_hertz(name: str, euler: float, count: int,
                                                          height: float) -> None:
    from mbplugin.bullet import BulletContacts

    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -G, physicsClientId=cid)
        plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid),
                                  physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_CYLINDER, radius=R, height=2 * HALF,
                                     physicsClientId=cid)
        quat = p.getQuaternionFromEuler([math.radians(euler), 0, 0])
        body = p.createMultiBody(1.0, col, basePosition=[0, 0, height], baseOrientation=quat,
                                 physicsClientId=cid)
        c = BulletContacts(cid, manage=[plane], law=LAW)
        for _ in range(120):  # 0.5 s
            info = c.step()
        c.sync()
        host = -min(pt[8] for pt in p.getClosestPoints(body, plane, 0.05, physicsClientId=cid))
        fn = np.asarray(info.normal_force)
        assert len(fn) == count
        assert fn.sum() / G == pytest.approx(1.0, abs=0.01)
        np.testing.assert_allclose(host, (fn / K) ** (2 / 3), rtol=0.05)
        v, w = p.getBaseVelocity(body, physicsClientId=cid)
        assert np.linalg.norm(v) + R * np.linalg.norm(w) < 1e-4  # at rest
    finally:
        p.disconnect(cid)


def test_cylinder_mass_properties_are_mujocos() -> None:
    """The exact cylinder's mass and inertia at MuJoCo's default density (1000 kg/m^3) are
    those MuJoCo computes for its cylinder geom (``body_mass``, ``body_inertia``)."""
    from mbplugin.contact import Cylinder

    m, _ = world('<mujoco><worldbody><body name="c"><freejoint/><geom type="cylinder" '
                 f'size="{R} {HALF}"/></body></worldbody></mujoco>')
    mass, com, inertia = Cylinder(R, HALF).mass_properties(1000.0)
    assert mass == pytest.approx(float(m.body_mass[1]), rel=1e-9)
    np.testing.assert_allclose(com, 0.0, atol=1e-15)
    np.testing.assert_allclose(np.diag(inertia), m.body_inertia[1], rtol=1e-9)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"radius": -0.1, "half_length": 0.1}, "'radius' = -0.1 m is outside its allowed range"),
    ({"radius": 0.1, "half_length": 0.0}, "'half_length' = 0 m is outside"),
    ({"radius": 0.1, "half_length": 0.1, "sections": 4}, "'sections' = 4 is outside"),
    ({"radius": 0.1, "half_length": 0.1, "edge_radius": -1.0}, "'edge_radius' = -1 m"),
])
def test_cylinder_rejects_bad_input(kwargs, match) -> None:
    from mbplugin.contact import Cylinder
    from mbplugin.errors import ParameterError

    with pytest.raises(ParameterError, match=match):
        Cylinder(**kwargs)
