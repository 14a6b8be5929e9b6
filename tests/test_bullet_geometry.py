"""PyBullet collision shapes read into the contact layer, checked against PyBullet itself."""

from __future__ import annotations

import numpy as np
import pybullet as p
import pybullet_data
import pytest

from mbplugin.bullet import BulletContacts

G = 9.81


@pytest.fixture
def client():
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    yield cid
    p.disconnect(physicsClientId=cid)


def test_capsule_lying_on_plane_urdf(client) -> None:
    """A capsule lying along x on plane.urdf rests on its two cap ends: the contact points sit
    at the ends of its segment (PyBullet's own AABB minus the radius) and each carries half the
    weight; the ground (a 200 m box) is read as a half-space."""
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    r, h, m, k = 0.02, 0.2, 0.5, 1e6
    shape = p.createCollisionShape(p.GEOM_CAPSULE, radius=r, height=h, physicsClientId=client)
    q = p.getQuaternionFromEuler([0, np.pi / 2, 0])  # axis along x
    d = (m * G / 2 / k) ** (2 / 3)
    cap = p.createMultiBody(m, shape, basePosition=[0, 0, r - d], baseOrientation=q,
                            physicsClientId=client)
    lo, hi = p.getAABB(cap, physicsClientId=client)
    half_segment = (hi[0] - lo[0]) / 2 - r
    bk = BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5, "k": k})
    for _ in range(24):
        info = bk.step()
    batch = bk.model.detect(bk.body_state())
    assert len(batch) == 2
    assert np.sort(batch.point[:, 0]) == pytest.approx([-half_segment, half_segment], abs=1e-4)
    assert info.normal_force == pytest.approx([m * G / 2] * 2, rel=0.01)


def test_cylinder_through_the_closest_points_fallback(client) -> None:
    """A cylinder standing on its flat face: without a fallback it is a 64-sided prism whose
    64 rim corners each carry m g / 64 (linear law: overlap m g / (64 k)); with
    ``fallback="closest_points"`` PyBullet's getClosestPoints supplies the contact and the
    cylinder rests at the static overlap of a linear law, m g / k (rotation held by a large
    inertia: PyBullet reports one closest point, not necessarily under the centre of mass)."""
    from mbplugin.errors import ParameterError

    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    m, k, h, r = 1.0, 1e5, 0.1, 0.03
    shape = p.createCollisionShape(p.GEOM_CYLINDER, radius=r, height=h, physicsClientId=client)
    cyl = p.createMultiBody(m, shape, basePosition=[0, 0, h / 2 + 1e-3], physicsClientId=client)
    p.changeDynamics(cyl, -1, linearDamping=0, angularDamping=0,
                     localInertiaDiagonal=[1e6] * 3, physicsClientId=client)
    law = {"name": "hunt_crossley", "n": 1.0, "cr": 0.3, "k": k}  # F = k delta at rest
    bk = BulletContacts(client, manage=[plane], law=law)
    for _ in range(180):
        info = bk.step()
    overlap = h / 2 - p.getBasePositionAndOrientation(cyl, physicsClientId=client)[0][2]
    assert len(info.normal_force) == 64
    assert overlap == pytest.approx(m * G / 64 / k, rel=0.01)
    assert info.normal_force.sum() == pytest.approx(m * G, rel=0.01)
    bk.release()
    p.resetBasePositionAndOrientation(cyl, [0, 0, h / 2 + 1e-3], [0, 0, 0, 1],
                                      physicsClientId=client)
    p.resetBaseVelocity(cyl, [0, 0, 0], [0, 0, 0], physicsClientId=client)
    with pytest.raises(ParameterError, match="fallback"):
        BulletContacts(client, manage=[plane], law=law, fallback="gjk")
    bk = BulletContacts(client, manage=[plane], law=law, fallback="closest_points")
    for _ in range(180):  # 0.75 s: drop of 1 mm, a few bounces, rest
        info = bk.step()
    overlap = h / 2 - p.getBasePositionAndOrientation(cyl, physicsClientId=client)[0][2]
    assert overlap == pytest.approx(m * G / k, rel=0.01)
    assert info.normal_force.sum() == pytest.approx(m * G, rel=0.01)
    assert len(bk.bounces()) >= 1  # it did land through the fallback contact
