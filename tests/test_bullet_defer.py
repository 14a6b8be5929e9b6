"""The deferred position correction of the PyBullet backend against closed-form trajectories.

Between two host steps a free body that just bounced may sit away from its exact position in
PyBullet (the correction is booked as an offset and applied later); ``sync()`` applies it. After
the contact has ended the exact trajectory is a parabola from the store's separation (t_out,
v_out, delta_out), and a body the user resets mid-bounce falls freely from where it was put:
both are closed forms, independent of the backend.
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pybullet_data
import pytest

from mbplugin.bullet import BulletContacts
from mbplugin.errors import ParameterError

G, R, M, DT = 9.81, 0.01, 0.05, 1 / 240
LAW = {"name": "hunt_crossley", "cr": 0.7, "k": 1e5}


@pytest.fixture
def cid():
    c = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=c)
    p.setGravity(0, 0, -G, physicsClientId=c)
    p.setTimeStep(DT, physicsClientId=c)
    yield c
    p.disconnect(physicsClientId=c)


def _drop(cid: int, defer_tol: float) -> tuple[int, BulletContacts]:
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    b = p.createMultiBody(M, shape, basePosition=[0, 0, 0.1 + R], physicsClientId=cid)
    p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
    return b, BulletContacts(cid, manage=[plane], law=LAW, defer_tol=defer_tol,
                             friction="none")


def _z(cid: int, b: int) -> float:
    return p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2]


@pytest.mark.parametrize("defer_tol", [0.0, 1e-4, 0.1])
@pytest.mark.parametrize("after", [0, 3])
def test_sync_puts_a_bounced_ball_on_its_exact_parabola(cid, defer_tol, after) -> None:
    """``after`` host steps after the first bounce ended: once synced, the host height equals
    R - delta_out + v_out t - g t^2 / 2 (t since the separation) to rounding."""
    b, bk = _drop(cid, defer_tol)
    while not len(bk.bounces()):
        bk.step()
    for _ in range(after):
        bk.step()
    before = _z(cid, b)
    bk.sync()
    row = bk.bounces()[0]
    t = bk.t - float(row["t_out"])
    exact = R - float(row["delta_out"]) + float(row["v_out"]) * t - G * t * t / 2
    assert abs(_z(cid, b) - exact) < 1e-12
    if defer_tol == 0.1:  # everything deferred: the host had not been corrected yet (mm)
        assert abs(before - exact) > 1e-4
    bk.sync()  # nothing pending: a second call changes nothing
    assert abs(_z(cid, b) - exact) < 1e-12


def test_user_reset_mid_bounce_is_respected(cid) -> None:
    """The user resets the ball mid-bounce (a correction pending): the backend drops it, and
    the ball falls freely from rest, z = z0 - g t^2 / 2 after sync (the pending millimetres
    would otherwise be added)."""
    b, bk = _drop(cid, 0.1)
    while True:
        info = bk.step()
        if info.contacts and float(info.normal_force.max()) > 0:
            break
    p.resetBasePositionAndOrientation(b, [0, 0, 0.2], [0, 0, 0, 1], physicsClientId=cid)
    p.resetBaseVelocity(b, [0, 0, 0], [0, 0, 0], physicsClientId=cid)
    n = 12
    for _ in range(n):
        bk.step()
    bk.sync()
    assert abs(_z(cid, b) - (0.2 - G * (n * DT) ** 2 / 2)) < 1e-12


def test_release_leaves_the_ball_on_its_exact_path(cid) -> None:
    b, bk = _drop(cid, 0.1)
    while not len(bk.bounces()):
        bk.step()
    bk.release()
    row = bk.bounces()[0]
    t = bk.t - float(row["t_out"])
    exact = R - float(row["delta_out"]) + float(row["v_out"]) * t - G * t * t / 2
    assert abs(_z(cid, b) - exact) < 1e-12


@pytest.mark.parametrize("bad", [-1e-3, 0.2, float("nan"), True, "1e-4"])
def test_bad_defer_tol_is_refused(cid, bad) -> None:
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    with pytest.raises(ParameterError, match="defer_tol"):
        BulletContacts(cid, manage=[plane], law=LAW, defer_tol=bad)


def test_ball_sliding_at_vertical_rest_shows_the_static_overlap(cid) -> None:
    """A ball dropped with a horizontal speed slides on (no friction) once its bounces have
    died out: without sync() its host height is R - (m g / k)^(2/3) (Hertz's static overlap),
    the deferred correction having been applied when its normal motion stopped."""
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    b = p.createMultiBody(M, shape, basePosition=[0, 0, R + 0.05], physicsClientId=cid)
    p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
    p.resetBaseVelocity(b, [0.3, 0, 0], [0, 0, 0], physicsClientId=cid)
    bk = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.3,
                                                  "k": LAW["k"]}, friction="none")
    for _ in range(360):  # 1.5 s
        bk.step()
    d_static = (M * G / LAW["k"]) ** (2 / 3)
    assert abs(_z(cid, b) - (R - d_static)) < 1e-3 * d_static
    vel = p.getBaseVelocity(b, physicsClientId=cid)[0]
    assert abs(vel[0] - 0.3) < 1e-9  # still sliding


@pytest.mark.parametrize("defer_tol", [1e-4, 0.1])
def test_user_rotation_mid_bounce_is_respected(cid, defer_tol) -> None:
    """A box lands flat; while its contacts carry force (a correction pending) the user tilts
    it by 0.1 rad about x, position and velocities kept. PyBullet's own orientation update over
    the next host step (semi-implicit, the exponential map of the end-of-step angular velocity,
    measured to 5e-16 rad on a free spinning box) must give the box's orientation after it: the
    backend does not add the pending correction's rotation, computed for the old pose, on top
    of the user's."""
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 0.03, 0.02],
                                   physicsClientId=cid)
    b = p.createMultiBody(0.2, shape, basePosition=[0, 0, 0.02 + 0.01], physicsClientId=cid)
    p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
    bk = BulletContacts(cid, manage=[plane], law=LAW, defer_tol=defer_tol)
    for _ in range(200):
        info = bk.step()
        if info.contacts and float(info.normal_force.max()) > 0:
            break
    assert info.contacts and float(info.normal_force.max()) > 0
    pos, q = p.getBasePositionAndOrientation(b, physicsClientId=cid)
    vel, om = p.getBaseVelocity(b, physicsClientId=cid)
    tilt = np.array([np.sin(0.05), 0.0, 0.0, np.cos(0.05)])  # xyzw, 0.1 rad about x
    q_user = _xyzw_mul(tilt, np.array(q))
    p.resetBasePositionAndOrientation(b, pos, q_user.tolist(), physicsClientId=cid)
    p.resetBaseVelocity(b, vel, om, physicsClientId=cid)
    bk.step()
    q_after = np.array(p.getBasePositionAndOrientation(b, physicsClientId=cid)[1])
    om_after = np.array(p.getBaseVelocity(b, physicsClientId=cid)[1])
    ang = float(np.linalg.norm(om_after)) * DT
    axis = om_after / max(float(np.linalg.norm(om_after)), 1e-300)
    turn = np.append(np.sin(ang / 2) * axis, np.cos(ang / 2))
    expected = _xyzw_mul(turn, q_user)
    err = 2 * float(np.linalg.norm(_xyzw_mul(q_after, expected * [-1, -1, -1, 1])[:3]))
    assert err < 1e-9


def _xyzw_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of quaternions given as (x, y, z, w)."""
    (x1, y1, z1, w1), (x2, y2, z2, w2) = a, b
    return np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                     w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])
