"""The mass matrix our Bullet backend builds (:class:`~mbplugin.bullet.kinematics.LinkTree`)
after ``changeDynamics`` of a link's mass / local inertia, against PyBullet's own
``calculateMassMatrix`` of a twin body loaded fresh with the same change made BEFORE its
first ``calculateMassMatrix``: PyBullet caches an inverse-dynamics tree per body at the first
``calculateMassMatrix`` / ``calculateInverseDynamics`` call and ``changeDynamics`` does not
rebuild it (measured: on the A1, a calf made 30 % heavier leaves calculateMassMatrix
bitwise unchanged, total mass 12.458 kg instead of 12.508 kg), so the changed body's own
calculateMassMatrix is stale and cannot be the reference."""

from __future__ import annotations

import numpy as np
import pytest

p = pytest.importorskip("pybullet")
pybullet_data = pytest.importorskip("pybullet_data")

from mbplugin.bullet.client import Client  # noqa: E402
from mbplugin.bullet.kinematics import LinkTree  # noqa: E402


def _change(body: int, link: int, what: str, cid: int) -> None:
    m0 = p.getDynamicsInfo(body, link, physicsClientId=cid)[0]
    if what in ("mass", "both"):
        p.changeDynamics(body, link, mass=1.3 * m0, physicsClientId=cid)
    if what in ("inertia", "both"):
        p.changeDynamics(body, link, localInertiaDiagonal=[0.002, 0.003, 0.0015],
                         physicsClientId=cid)


@pytest.mark.parametrize("what", ["mass", "inertia", "both"])
def test_a1_mass_matrix_after_change_dynamics(what: str) -> None:
    """A1: our mass matrix after the change equals the fresh twin's calculateMassMatrix
    (each entry within 1e-9 of sqrt(M_ii M_jj)); the stale one differs (the cache shown)."""
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        a = p.loadURDF("a1/a1.urdf", [0, 0, 0.4], physicsClientId=cid)
        nj = p.getNumJoints(a, physicsClientId=cid)
        mv = [j for j in range(nj)
              if p.getJointInfo(a, j, physicsClientId=cid)[2] != p.JOINT_FIXED]
        q = np.random.default_rng(1).uniform(-1.0, 1.0, len(mv)).tolist()
        for j, x in zip(mv, q, strict=True):
            p.resetJointState(a, j, x, physicsClientId=cid)
        stale = np.array(p.calculateMassMatrix(a, q, physicsClientId=cid))  # caches its tree
        for lk in (mv[2], -1):
            _change(a, lk, what, cid)
        twin = p.loadURDF("a1/a1.urdf", [0, 0, 0.4], physicsClientId=cid)
        for lk in (mv[2], -1):
            _change(twin, lk, what, cid)
        theirs = np.array(p.calculateMassMatrix(twin, q, physicsClientId=cid))
        assert np.abs(theirs - stale).max() > 1e-4  # PyBullet's cache: the change unseen
        tree = LinkTree(Client(cid), a, mv, True)
        bp, bo = p.getBasePositionAndOrientation(a, physicsClientId=cid)
        r = np.array(p.getMatrixFromQuaternion(bo)).reshape(3, 3)
        ours = tree.mass_matrix(q, bp, bo, r)
        scale = np.sqrt(np.outer(np.diag(theirs), np.diag(theirs)))
        assert (np.abs(ours - theirs) / scale).max() < 1e-9
    finally:
        p.disconnect(cid)
