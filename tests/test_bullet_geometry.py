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
