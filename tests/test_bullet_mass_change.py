"""A link's mass changed with ``changeDynamics``: the joint tree behind W (read from
``getDynamicsInfo`` when the backend is built or refreshed) is the one PyBullet steps with.

PyBullet's own ``calculateMassMatrix`` is not a reference here: it keeps the inverse-dynamics
tree it built at its first call for a body, so after ``changeDynamics`` it still answers with
the old masses while ``stepSimulation`` uses the new ones (PyBullet 3.2.x,
``PhysicsServerCommandProcessor``'s cached ``btInverseDynamics::MultiBodyTree``). The reference
is therefore the stepped dynamics itself: from rest with no gravity, one step under a known
joint torque tau gives qdd = M^-1 tau (PyBullet's semi-implicit Euler: qd_1 = dt qdd)."""

from __future__ import annotations

import numpy as np
import pybullet as pb
import pytest

from mbplugin.bullet.client import Client
from mbplugin.bullet.kinematics import LinkTree

DT = 1.0 / 240.0


def _arm(cid: int) -> int:
    """A two-link planar arm on a fixed base (revolute joints about z, gravity off), its links'
    centres of mass off the joint axes (0.3 m and 0.2 m)."""
    col = pb.createCollisionShape(pb.GEOM_SPHERE, radius=0.05, physicsClientId=cid)
    body = pb.createMultiBody(
        0.0, -1, -1, [0, 0, 1], linkMasses=[2.0, 1.0], linkCollisionShapeIndices=[col, col],
        linkVisualShapeIndices=[-1, -1], linkPositions=[[0, 0, 0], [0.4, 0, 0]],
        linkOrientations=[[0, 0, 0, 1]] * 2, linkInertialFramePositions=[[0.3, 0, 0], [0.2, 0, 0]],
        linkInertialFrameOrientations=[[0, 0, 0, 1]] * 2, linkParentIndices=[0, 1],
        linkJointTypes=[pb.JOINT_REVOLUTE] * 2, linkJointAxis=[[0, 0, 1]] * 2,
        physicsClientId=cid)
    for j in range(2):
        pb.setJointMotorControl2(body, j, pb.VELOCITY_CONTROL, force=0, physicsClientId=cid)
        pb.changeDynamics(body, j, linearDamping=0, angularDamping=0, jointDamping=0,
                          physicsClientId=cid)
    return body


def _stepped_mass_matrix(cid: int, body: int, q: list[float]) -> np.ndarray:
    """M from PyBullet's stepping: a unit torque on each joint in turn from rest at ``q``."""
    cols = []
    for j in range(2):
        for k in range(2):
            pb.resetJointState(body, k, q[k], 0.0, physicsClientId=cid)
        for k in range(2):
            pb.setJointMotorControl2(body, k, pb.TORQUE_CONTROL, force=float(k == j),
                                     physicsClientId=cid)
        pb.stepSimulation(physicsClientId=cid)
        cols.append([pb.getJointState(body, k, physicsClientId=cid)[1] / DT for k in range(2)])
    return np.linalg.inv(np.array(cols).T)  # the columns are M^-1 e_j


@pytest.mark.parametrize("change", ["mass", "inertia", "both"])
def test_tree_after_change_dynamics_is_what_pybullet_steps(change: str) -> None:
    cid = pb.connect(pb.DIRECT)
    try:
        pb.setGravity(0, 0, 0, physicsClientId=cid)
        pb.setTimeStep(DT, physicsClientId=cid)
        body = _arm(cid)
        q = [0.4, -0.9]
        c = Client(cid)
        before = LinkTree(c, body, [0, 1], False).mass_matrix(q, [0, 0, 1], [0, 0, 0, 1],
                                                             np.eye(3))
        np.testing.assert_allclose(before, _stepped_mass_matrix(cid, body, q), rtol=1e-9)
        kw: dict[str, object] = {}
        if change in ("mass", "both"):
            kw["mass"] = 2.6
        if change in ("inertia", "both"):
            kw["localInertiaDiagonal"] = [0.01, 0.02, 0.05]
        pb.changeDynamics(body, 0, physicsClientId=cid, **kw)
        after = LinkTree(c, body, [0, 1], False).mass_matrix(q, [0, 0, 1], [0, 0, 0, 1],
                                                            np.eye(3))
        stepped = _stepped_mass_matrix(cid, body, q)
        np.testing.assert_allclose(after, stepped, rtol=1e-9)
        assert abs(after[0, 0] - before[0, 0]) > 1e-3 * before[0, 0]  # the change shows
    finally:
        pb.disconnect(cid)
