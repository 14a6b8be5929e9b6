"""KNOWN FAILURE, left out of the suite on purpose (the file name does not match test_*.py;
run it with ``python -m pytest tests/bullet_mixed_known_failure.py``): the PyBullet backend
has the mixed-contact problem that tests/test_mujoco_mixed.py checks for MuJoCo.

A free body in a managed contact is predicted with gravity alone
(``bullet/host.py``, ``BulletHost.free_acceleration``): PyBullet's own contacts acting on it
(here the unmanaged spheres resting on it) are left out of the contact-space prediction, and
the position correction takes the difference back every step. Measured on a three-sphere
stack with only the floor-lowest pair managed (1 + 3 + 3 kg, Hunt-Crossley k = 1e7, 1/240 s):
the lowest sphere rests 0.66 % short of the static overlap ((sum m) g / k)^(2/3) and reports
a vertical velocity of -0.244 m/s although it does not move.
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts

G, K = 9.81, 1e7


def test_managed_sphere_under_a_native_stack_rests_at_the_static_overlap() -> None:
    """Expected: the law's static overlap for every weight the lowest sphere carries, within
    1e-3, and the sphere at rest (|v| < 1e-4 m/s)."""
    masses = [1.0, 3.0, 3.0]
    with ground_world(G) as (cid, plane):
        col = p.createCollisionShape(p.GEOM_SPHERE, radius=0.05, physicsClientId=cid)
        bs = [p.createMultiBody(m, col, basePosition=[0, 0, 0.05 + 0.1 * i],
                                physicsClientId=cid) for i, m in enumerate(masses)]
        bk = BulletContacts(cid, manage=[(plane, bs[0])],
                            law={"name": "hunt_crossley", "cr": 0.5, "k": K})
        for _ in range(480):
            info = bk.step()
        ds = (sum(masses) * G / K) ** (2 / 3)
        assert float(info.delta[0]) == pytest.approx(ds, rel=1e-3)
        v = p.getBaseVelocity(bs[0], physicsClientId=cid)[0]
        assert np.max(np.abs(v)) < 1e-4
