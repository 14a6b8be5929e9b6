"""A managed free body that PyBullet's own (unmanaged) contacts also touch: the free
acceleration of its managed contacts includes those native contact forces
(``bullet/host.py``, ``BulletHost.native_acceleration``). Before, it was gravity alone: a
1 kg sphere under two native 3 kg spheres, only its ground pair managed (Hunt-Crossley
k = 1e7, 1/240 s), rested 0.66 % short of the static overlap ((sum m) g / k)^(2/3) with a
phantom vertical velocity of -0.244 m/s.

Expected values from outside our code: Hertz's static overlap delta = (F / k)^(2/3) of the
Hunt-Crossley law (Hunt and Crossley 1975; F = k delta^(3/2) at rest) for every weight the body
carries, shared by its contacts (4 corners of a box face, 1 for a sphere); at rest, v = 0.
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts

G, K = 9.81, 1e7
M_LOW, M_HIGH = 1.0, 3.0  # kg
STEPS = 480  # host steps of 1/240 s to settle


def _settle(shape: str, masses: list[float],
            k: float = K) -> tuple[object, list[np.ndarray]]:
    """A stack of ``shape`` bodies (sphere R = 5 cm, box 0.2 x 0.2 x 0.1 m) of ``masses``
    (kg, lowest first) on the ground, only the lowest body's ground pair managed (Hunt-Crossley,
    ``k`` N/m^1.5), after STEPS host steps: (the last step's info, each body's (linear,
    angular) velocity stacked (2, 3))."""
    with ground_world(G) as (cid, plane):
        if shape == "box":
            col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.05],
                                         physicsClientId=cid)
        else:
            col = p.createCollisionShape(p.GEOM_SPHERE, radius=0.05, physicsClientId=cid)
        bs = [p.createMultiBody(m, col, basePosition=[0, 0, 0.05 + 0.1 * i],
                                physicsClientId=cid) for i, m in enumerate(masses)]
        bk = BulletContacts(cid, manage=[(plane, bs[0])],
                            law={"name": "hunt_crossley", "cr": 0.5, "k": k})
        for _ in range(STEPS):
            info = bk.step()
        return info, [np.array(p.getBaseVelocity(b, physicsClientId=cid)) for b in bs]


@pytest.mark.parametrize(("shape", "n", "corners"), [("sphere", 3, 1), ("box", 2, 4)])
def test_managed_ground_pair_under_a_native_stack_rests_at_the_static_overlap(
        shape: str, n: int, corners: int) -> None:
    """Only the floor-lowest-body pair managed, the pairs above native PyBullet's: the lowest
    body carries every weight, (sum m) g shared by its corners, at the law's static overlap
    ((sum m) g / (corners k))^(2/3) within 1e-3 (sphere) / 1e-2 (box), its summed normal
    force the weight within 1e-3, and every body at rest (|v| < 1e-4 m/s)."""
    masses = [M_LOW] + [M_HIGH] * (n - 1)
    info, vel = _settle(shape, masses)
    w = sum(masses) * G
    ds = (w / corners / K) ** (2 / 3)
    assert info.contacts == corners
    rel = 1e-3 if shape == "sphere" else 1e-2
    assert np.asarray(info.delta) == pytest.approx(ds, rel=rel)
    assert float(np.sum(info.normal_force)) == pytest.approx(w, rel=1e-3)
    for v in vel:
        assert np.max(np.abs(v[0])) < 1e-4
        assert np.max(np.abs(v[1])) < 1e-3


def test_light_managed_sphere_under_a_heavy_native_stack_rests_at_the_static_overlap() -> None:
    """A 1 kg sphere under two native 10 kg spheres (R = 5 cm), only its ground pair managed:
    PyBullet's own contacts hold the column together, so W of the managed contact carries the
    column's 21 kg (``NativeColumns.couple``; with its own 1 kg it rang 9.5 % off at 0.5 m/s).
    After 480 host steps: the overlap at ((sum m) g / k)^(2/3) within 1 %, the normal force the
    weight within 1e-3, every sphere at rest (|v| < 1e-3 m/s)."""
    masses = [1.0, 10.0, 10.0]
    info, vel = _settle("sphere", masses)
    w = sum(masses) * G
    assert info.contacts == 1
    assert float(info.delta[0]) == pytest.approx((w / K) ** (2 / 3), rel=1e-2)
    assert float(info.normal_force[0]) == pytest.approx(w, rel=1e-3)
    for v in vel:
        assert np.max(np.abs(v[0])) < 1e-3


def test_light_managed_box_under_a_heavy_native_box_rests_at_the_static_overlap() -> None:
    """A 1 kg box (0.2 x 0.2 x 0.1 m) under a native 20 kg box, only its ground pair managed
    (k = 1e8): W of its four corner contacts is that of the column as one rigid body (mass
    and inertia about the column's centre of mass, ``NativeColumns.rigid``; with neither the
    corners rested 8-10 % off at 1.9e-2 m/s, with the column's mass alone the upper box fell
    off). After 480 host steps: each corner at the static overlap of a quarter of the weight,
    ((sum m) g / (4 k))^(2/3), within 1 %, the summed normal force the weight within 1e-3, both
    boxes at rest (|v| < 1e-3 m/s, |omega| < 1e-3 rad/s; native PyBullet's own box-box contact
    creeps at ~1e-5 m/s)."""
    masses, k = [1.0, 20.0], 1e8
    info, vel = _settle("box", masses, k)
    w = sum(masses) * G
    assert info.contacts == 4
    assert np.asarray(info.delta) == pytest.approx(np.full(4, (w / 4 / k) ** (2 / 3)), rel=1e-2)
    assert float(np.sum(info.normal_force)) == pytest.approx(w, rel=1e-3)
    for v in vel:
        assert np.max(np.abs(v[0])) < 1e-3
        assert np.max(np.abs(v[1])) < 1e-3


def test_native_sphere_dropped_on_a_managed_sphere_settles_on_it() -> None:
    """A 3 kg sphere (R = 5 cm) dropped natively from 5 cm onto a 1 kg sphere resting on the
    managed ground: after the impact both come to rest (|v| < 1e-6 m/s), the ground overlap at
    the static value ((m1 + m2) g / k)^(2/3) within 1e-3 and the upper sphere's centre at
    3 R - delta_s within 1e-4 m (PyBullet's own contact between them closed, not 6 mm deep as
    with gravity alone in the free acceleration)."""
    r = 0.05
    with ground_world(G) as (cid, plane):
        col = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=cid)
        low = p.createMultiBody(M_LOW, col, basePosition=[0, 0, r], physicsClientId=cid)
        high = p.createMultiBody(M_HIGH, col, basePosition=[0, 0, 4 * r], physicsClientId=cid)
        bk = BulletContacts(cid, manage=[(plane, low)],
                            law={"name": "hunt_crossley", "cr": 0.5, "k": K})
        for _ in range(STEPS):
            info = bk.step()
        ds = ((M_LOW + M_HIGH) * G / K) ** (2 / 3)
        assert float(info.delta[0]) == pytest.approx(ds, rel=1e-3)
        z_high = p.getBasePositionAndOrientation(high, physicsClientId=cid)[0][2]
        assert z_high == pytest.approx(3 * r - ds, abs=1e-4)
        for b in (low, high):
            assert np.max(np.abs(p.getBaseVelocity(b, physicsClientId=cid)[0])) < 1e-6
