"""PyBullet's velocity clamp on managed free bodies (issue 21, part 4).

PyBullet clamps every coordinate velocity of a multibody, its base's six included, to
``maxJointVelocity`` (100 by default) in each step: a free ball at 150 m/s or spinning at
150 rad/s comes out of its first ``stepSimulation`` at 100, with nothing acting on it (measured
natively, ``createMultiBody`` without links and a one-link URDF alike). A managed free body
flew so too (its exact flight then wrong). Now the backend lifts the clamp on the free bodies
it manages at their first step: with nothing acting (zero gravity, no damping, the managed
plane far away) momentum and angular momentum are conserved and the ball is where uniform
motion puts it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pybullet as p
import pybullet_data
import pytest

from mbplugin.bullet import BulletContacts

V, W = 150.0, 150.0  # m/s along z, rad/s about y


def _ball(cid: int, how: str, tmp: Path) -> int:
    if how == "multibody":
        col = p.createCollisionShape(p.GEOM_SPHERE, radius=0.05, physicsClientId=cid)
        return p.createMultiBody(1.0, col, basePosition=[0, 0, 1.0], physicsClientId=cid)
    urdf = tmp / "ball.urdf"
    urdf.write_text(
        '<robot name="ball"><link name="ball"><inertial><mass value="1"/><inertia ixx="0.001" '
        'iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry>'
        '<sphere radius="0.05"/></geometry></collision></link></robot>')
    return p.loadURDF(str(urdf), basePosition=[0, 0, 1.0], physicsClientId=cid)


@pytest.mark.parametrize("how", ["multibody", "urdf"])
def test_a_fast_managed_free_body_keeps_its_momentum(how, tmp_path):
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, 0, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        ball = _ball(cid, how, tmp_path)
        p.changeDynamics(ball, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=cid)
        p.resetBaseVelocity(ball, [0, 0, V], [0, W, 0], physicsClientId=cid)
        contacts = BulletContacts(cid, manage=[plane], law="hertz",
                                  material={"E": 2e11, "nu": 0.3})
        steps = 10
        for _ in range(steps):
            contacts.step()
        contacts.sync()
        v, w = p.getBaseVelocity(ball, physicsClientId=cid)
        z = p.getBasePositionAndOrientation(ball, physicsClientId=cid)[0][2]
        assert np.allclose(v, [0, 0, V], rtol=0, atol=1e-9)  # 100 on main: clamped
        assert np.allclose(w, [0, W, 0], rtol=0, atol=1e-9)
        assert z == pytest.approx(1.0 + V * steps / 240.0, abs=1e-9)
    finally:
        p.disconnect(physicsClientId=cid)
