"""Grounds and bodies as PyBullet users build them (issue 18): a plane URDF moved and tilted, a
large and a small static box, a static mesh, a heightfield, the ground as a link of a
fixed-base URDF; compound links, collision frames offset and turned from the inertial frame,
a scaled mesh, a centre of mass outside the shape.

Checked against the outside world: sum F = m g at rest (m g cos theta on a slope), the
rolling ball's a = 5/7 g sin theta, Hertz's static overlap (m g / k)^(2/3), PyBullet's own
``getClosestPoints`` overlap, the torque balance of a body at rest (its contact under its
centre of mass); or one clear error naming what to do.
"""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.errors import ParameterError

G, DT, K, R, M = 9.81, 1 / 240, 1e5, 0.02, 0.1
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": K}


def _ball(cid: int, pos: list[float], m: float = M) -> int:
    s = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    b = p.createMultiBody(m, s, basePosition=pos, physicsClientId=cid)
    p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
    return b


def _settle(bk: BulletContacts, n: int = 480) -> float:
    for _ in range(n):
        info = bk.step()
    bk.sync()
    return float(info.normal_force.sum()) if info.contacts else 0.0


def _host_overlap(cid: int, a: int, b: int, link_b: int = -1) -> float:
    pts = p.getClosestPoints(a, b, 0.01, -1, link_b, physicsClientId=cid)
    assert pts, "the body is not on the ground"
    return -min(q[8] for q in pts)


def _static(w: float) -> float:
    return (w / K) ** (2 / 3)


def test_plane_urdf_moved_and_tilted() -> None:
    """plane.urdf at z = 0.3 turned 0.2 rad about x: a ball rolls down it at 5/7 g sin theta
    (rolling without slip, mu = 0.5 > 2/7 tan theta), pressed by m g cos theta at the static
    overlap PyBullet's getClosestPoints measures. A stiff contact (k = 1e8: delta = 5 um), as
    the backend applies the force midway through the overlap, a lever arm R - delta / 2
    (k = 1e5: 0.66 % slower, as 1 + 2/5 (R / (R - delta / 2))^2 says)."""
    th, k = 0.2, 1e8
    with ground_world(G, DT) as (cid, _plane):
        q = p.getQuaternionFromEuler([th, 0, 0])
        tilted = p.loadURDF("plane.urdf", [0, 0, 0.3], q, physicsClientId=cid)
        b = _ball(cid, [0, 0, 0.3 + R / math.cos(th)])
        bk = BulletContacts(cid, manage=[tilted], law={**LAW, "k": k})
        _settle(bk, 120)
        v0 = np.linalg.norm(p.getBaseVelocity(b, physicsClientId=cid)[0])
        f = _settle(bk, 120)
        v1 = np.linalg.norm(p.getBaseVelocity(b, physicsClientId=cid)[0])
        assert (v1 - v0) / (120 * DT) == pytest.approx(5 / 7 * G * math.sin(th), rel=2e-3)
        w = M * G * math.cos(th)
        assert f == pytest.approx(w, rel=1e-3)
        assert _host_overlap(cid, b, tilted) == pytest.approx((w / k) ** (2 / 3), rel=1e-3)


@pytest.mark.parametrize("half", [[30.0, 30.0, 0.5], [1.0, 0.8, 0.1]])
def test_static_box_ground(half: list[float]) -> None:
    """A large static box (a half-space: both sides >= flat_box) and a small one (a Box) as
    the ground: the ball rests with sum F = m g at the static overlap, PyBullet's own."""
    with ground_world(G, DT) as (cid, plane):
        p.removeBody(plane, physicsClientId=cid)
        s = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=cid)
        ground = p.createMultiBody(0, s, basePosition=[0, 0, -half[2]], physicsClientId=cid)
        b = _ball(cid, [0.1, 0.05, R + 0.01])
        bk = BulletContacts(cid, manage=[ground], law=LAW)
        assert _settle(bk) == pytest.approx(M * G, rel=1e-6)
        assert _host_overlap(cid, b, ground) == pytest.approx(_static(M * G), rel=1e-6)


def test_static_mesh_file_ground() -> None:
    """A static GEOM_MESH from a file (cube.obj scaled to a 4 x 4 x 0.2 m slab): its
    triangles, as PyBullet uses them; a box rests on it with sum F = m g, its deepest overlap
    PyBullet's own."""
    with ground_world(G, DT) as (cid, plane):
        p.removeBody(plane, physicsClientId=cid)
        s = p.createCollisionShape(p.GEOM_MESH, fileName="cube.obj", meshScale=[4, 4, 0.2],
                                   physicsClientId=cid)
        ground = p.createMultiBody(0, s, basePosition=[0, 0, -0.1], physicsClientId=cid)
        bs = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.03, 0.02, 0.01],
                                    physicsClientId=cid)
        b = p.createMultiBody(M, bs, basePosition=[0.2, 0.1, 0.012], physicsClientId=cid)
        bk = BulletContacts(cid, manage=[ground], law=LAW)
        assert _settle(bk) == pytest.approx(M * G, rel=1e-6)
        assert _host_overlap(cid, b, ground) == pytest.approx(float(bk.last.delta.max()),
                                                               rel=0.02)


def _heightfield(cid: int) -> int:
    rows = cols = 16
    s = p.createCollisionShape(p.GEOM_HEIGHTFIELD, meshScale=[0.2, 0.2, 1],
                               heightfieldData=[0.0] * (rows * cols),
                               numHeightfieldRows=rows, numHeightfieldColumns=cols,
                               physicsClientId=cid)
    return p.createMultiBody(0, s, physicsClientId=cid)


def _vertex_mesh(cid: int) -> int:
    v = [[-2, -2, 0], [2, -2, 0], [2, 2, 0], [-2, 2, 0],
         [-2, -2, -0.2], [2, -2, -0.2], [2, 2, -0.2], [-2, 2, -0.2]]
    idx = [0, 1, 2, 0, 2, 3, 4, 6, 5, 4, 7, 6, 0, 4, 5, 0, 5, 1, 1, 5, 6, 1, 6, 2,
           2, 6, 7, 2, 7, 3, 3, 7, 4, 3, 4, 0]
    s = p.createCollisionShape(p.GEOM_MESH, vertices=v, indices=idx, physicsClientId=cid)
    return p.createMultiBody(0, s, physicsClientId=cid)


@pytest.mark.parametrize("kind,words", [
    ("heightfield", ("GEOM_HEIGHTFIELD", "fallback='closest_points'")),
    ("vertex_mesh", ("getMeshData gives 0 vertices", "fallback='closest_points'")),
])
@pytest.mark.parametrize("xy", [(0.0, 0.0), (0.1, 0.1), (0.05, 0.02)])
def test_ground_the_contact_layer_cannot_read(kind: str, words: tuple[str, ...],
                                              xy: tuple[float, float]) -> None:
    """A heightfield (PyBullet reports no shape for it: before, a managed one lost its native
    contact and the ball fell through it) and a static triangle mesh made from vertices
    (getMeshData gives none): refused, naming the remedies; with fallback='closest_points'
    the ball rests on one contact at the static overlap with sum F = m g, also over a grid
    vertex (0.1, 0.1: six triangles report the same point) and edge (0, 0: two)."""
    with ground_world(G, DT) as (cid, plane):
        p.removeBody(plane, physicsClientId=cid)
        ground = _heightfield(cid) if kind == "heightfield" else _vertex_mesh(cid)
        b = _ball(cid, [xy[0], xy[1], R + 0.005])
        with pytest.raises(ParameterError) as err:
            BulletContacts(cid, manage=[ground], law=LAW)
        for w in words:
            assert w in str(err.value)
        bk = BulletContacts(cid, manage=[ground], law=LAW, fallback="closest_points")
        assert _settle(bk) == pytest.approx(M * G, rel=1e-6)
        assert bk.last.contacts == 1
        assert _host_overlap(cid, b, ground) == pytest.approx(_static(M * G), rel=1e-6)


def test_ground_as_a_link_of_a_fixed_base_urdf(tmp_path) -> None:
    """The floor is a box link fixed to a fixed-base URDF's base (a static row): a ball rests
    on it with sum F = m g at the static overlap PyBullet measures."""
    urdf = tmp_path / "floor.urdf"
    inertia = '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
    urdf.write_text(
        f'<robot name="floor"><link name="base"><inertial><mass value="0"/>{inertia}'
        '</inertial></link><link name="floor"><inertial><mass value="1"/>'
        f'{inertia}</inertial><collision><origin xyz="0 0 -0.05"/><geometry>'
        '<box size="2 2 0.1"/></geometry></collision></link><joint name="j" type="fixed">'
        '<parent link="base"/><child link="floor"/><origin xyz="0.1 0 0"/></joint></robot>')
    with ground_world(G, DT) as (cid, plane):
        p.removeBody(plane, physicsClientId=cid)
        ground = p.loadURDF(str(urdf), useFixedBase=True, physicsClientId=cid)
        b = _ball(cid, [0.2, 0, R + 0.01])
        bk = BulletContacts(cid, manage=[ground], law=LAW)
        assert _settle(bk) == pytest.approx(M * G, rel=1e-6)
        assert _host_overlap(cid, b, ground, 0) == pytest.approx(_static(M * G), rel=1e-6)


def _rests_as_pybullet_measures(cid: int, b: int, plane: int, m: float,
                                n: int = 720) -> BulletContacts:
    bk = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.3,
                                                  "k": 1e6})
    assert _settle(bk, n) == pytest.approx(m * G, rel=1e-4)
    assert _host_overlap(cid, b, plane) == pytest.approx(float(bk.last.delta.max()), rel=0.02)
    return bk


def test_compound_link() -> None:
    """One link of three shapes (a box, a sphere and a capsule at offsets, turned): dropped
    tilted, it rests with sum F = m g, its deepest overlap PyBullet's own."""
    with ground_world(G, DT) as (cid, plane):
        s = p.createCollisionShapeArray(
            [p.GEOM_BOX, p.GEOM_SPHERE, p.GEOM_CAPSULE],
            halfExtents=[[0.04, 0.02, 0.01], [0, 0, 0], [0, 0, 0]],
            radii=[0, 0.015, 0.01], lengths=[0, 0, 0.05],
            collisionFramePositions=[[0, 0, 0], [0.05, 0, 0], [-0.04, 0.02, 0]],
            collisionFrameOrientations=[[0, 0, 0, 1], [0, 0, 0, 1],
                                        p.getQuaternionFromEuler([math.pi / 2, 0, 0.3])],
            physicsClientId=cid)
        m = 0.3
        b = p.createMultiBody(m, s, basePosition=[0, 0, 0.05],
                              baseOrientation=p.getQuaternionFromEuler([0.1, 0.05, 0]),
                              physicsClientId=cid)
        _rests_as_pybullet_measures(cid, b, plane, m)


def test_collision_frame_offset_and_turned_from_the_inertial_frame() -> None:
    """A box whose collision frame is 3 cm off and turned 0.4 rad from a link frame whose
    inertial frame is itself offset and turned: rests with sum F = m g at the overlap
    PyBullet measures."""
    with ground_world(G, DT) as (cid, plane):
        s = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 0.03, 0.02],
                                   collisionFramePosition=[0.03, -0.01, 0.0],
                                   collisionFrameOrientation=p.getQuaternionFromEuler(
                                       [0, 0, 0.4]), physicsClientId=cid)
        m = 0.4
        b = p.createMultiBody(m, s, basePosition=[0, 0, 0.03],
                              baseInertialFramePosition=[0.01, 0.005, 0.002],
                              baseInertialFrameOrientation=p.getQuaternionFromEuler(
                                  [0.0, 0.0, 0.7]), physicsClientId=cid)
        _rests_as_pybullet_measures(cid, b, plane, m)


def test_scaled_mesh() -> None:
    """cube.obj with meshScale (0.06, 0.04, 0.02), a hull PyBullet grows by its 1 mm margin:
    rests with sum F = m g at the overlap PyBullet measures."""
    with ground_world(G, DT) as (cid, plane):
        s = p.createCollisionShape(p.GEOM_MESH, fileName="cube.obj",
                                   meshScale=[0.06, 0.04, 0.02], physicsClientId=cid)
        m = 0.2
        b = p.createMultiBody(m, s, basePosition=[0, 0, 0.03],
                              baseOrientation=p.getQuaternionFromEuler([0.05, 0, 0]),
                              physicsClientId=cid)
        _rests_as_pybullet_measures(cid, b, plane, m)


def test_centre_of_mass_outside_the_shape() -> None:
    """A box whose centre of mass lies 3 cm above its top face (outside it) and 2 cm, 1 cm
    off its axis: it rests on its face with sum F = m g at the overlap PyBullet measures, its
    deepest corner the one nearest the centre of mass (the torque balance about it). (A
    centre of mass below the bottom face hangs from an edge like a pendulum: it rocks on.)"""
    with ground_world(G, DT) as (cid, plane):
        s = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 0.04, 0.02],
                                   physicsClientId=cid)
        m, off = 0.3, np.array([0.02, 0.01, 0.05])
        b = p.createMultiBody(m, s, basePosition=[0, 0, 0.021 + off[2]],
                              baseInertialFramePosition=off.tolist(), physicsClientId=cid)
        _rests_as_pybullet_measures(cid, b, plane, m)
        com = np.array(p.getBasePositionAndOrientation(b, physicsClientId=cid)[0])
        centre = com - off  # the box turns by less than 1e-3 rad at rest
        pts = p.getClosestPoints(b, plane, 0.01, physicsClientId=cid)
        deepest = np.array(min(pts, key=lambda q: q[8])[5])
        assert np.all(np.sign((deepest - centre)[:2]) == np.sign(off[:2]))
        assert np.linalg.norm(p.getBaseVelocity(b, physicsClientId=cid)[1]) < 1e-6


def test_a_maximal_coordinates_body_is_refused_with_what_to_do() -> None:
    """PyBullet's ``getCollisionShapeData`` cannot read a body made with
    ``useMaximalCoordinates=True`` (it raised a bare ``pybullet.error``): managing it is one
    clear ParameterError naming the option, raised before anything is changed, so PyBullet's
    own contact still holds the ball on the plane (it rests within 1 mm of z = r)."""
    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -9.81, physicsClientId=cid)
        plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid),
                                  physicsClientId=cid)
        r = 0.05
        ball = p.createMultiBody(1.0, p.createCollisionShape(p.GEOM_SPHERE, radius=r,
                                                             physicsClientId=cid),
                                 basePosition=[0, 0, r + 0.01], useMaximalCoordinates=True,
                                 physicsClientId=cid)
        with pytest.raises(ParameterError, match="useMaximalCoordinates=False"):
            BulletContacts(cid, manage=[plane, ball], law={"name": "hunt_crossley", "cr": 0.5,
                                                           "k": 1e6})
        for _ in range(240):
            p.stepSimulation(physicsClientId=cid)
        z = p.getBasePositionAndOrientation(ball, physicsClientId=cid)[0][2]
        assert abs(z - r) < 1e-3
    finally:
        p.disconnect(cid)
