"""The tangential spring (``stick``, Dahl's model) on the compiled contact-space path.

The compiled sub-stepper integrates the springs in its group problem (no SciPy fallback): it
must agree with the SciPy reference path on the same scenes to integration tolerance, and
reproduce the closed forms of a sphere on an incline (gravity tilted by theta, rotation locked
by a huge inertia, so the contact point moves with the centre):

* below the friction angle (tan theta < mu) the sphere is held, with no creep: the spring
  carries m g sin theta (Newton's statics; at rest the force is k_t s, so the spring's
  displacement is m g sin theta / k_t), and the slip on the way there follows Dahl's
  rate-independent loading curve ds/dx = 1 - k_t s / (mu F_N) (Dahl 1976), i.e. the sphere
  slid x = (mu F_N / k_t) ln(1 / (1 - m g sin theta / (mu F_N)));
* above it the sphere slides and the tangential force is Coulomb's mu F_N, F_N = m g cos theta.

The tangential force on the sphere is measured from the host's velocity change over a step
(the host applies the step's impulse as a constant force: m dv/dt = m g_t + F_t exactly).
"""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pybullet_data
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.pipeline import substep as sub

G = 9.81
M, R, K = 1.0, 0.02, 1e7  # sphere mass (kg), radius (m), Hertz stiffness (N/m^1.5)
STICK = {"k_t": 1e4, "mu": 0.6, "c_t": 200.0}


def _no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the compiled path's SciPy fallback fail the test."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the compiled path fell back to SciPy")

    monkeypatch.setattr(sub, "ContactSpace", refuse)


def _incline(solver: str, tan: float, hz: float, steps: int) -> dict[str, np.ndarray]:
    """A sphere placed at its static overlap on an incline of slope ``tan``; per host step: x
    (m, along the slope, downhill negative), velocity (m/s) and the contact's slip (m/s)."""
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        th = math.atan(tan)
        p.setGravity(-G * math.sin(th), 0, -G * math.cos(th), physicsClientId=cid)
        p.setTimeStep(1 / hz, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        d = (M * G * math.cos(th) / K) ** (2 / 3)
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        b = p.createMultiBody(M, shape, basePosition=[0, 0, R - d], physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0,
                         localInertiaDiagonal=[1e6] * 3, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], solver=solver, stick=STICK,
                            law={"name": "hunt_crossley", "cr": 0.3, "k": K})
        x, v, slip = [], [], []
        for _ in range(steps):
            info = bk.step()
            x.append(p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][0])
            v.append(p.getBaseVelocity(b, physicsClientId=cid)[0][0])
            slip.append(info.slip[0])
        return {"x": np.array(x), "v": np.array(v), "slip": np.array(slip)}
    finally:
        p.disconnect(physicsClientId=cid)


def _tangential_force(v: np.ndarray, hz: float, tan: float) -> np.ndarray:
    """Force of the ground on the sphere along x (N) in each host step after the first."""
    return M * np.diff(v) * hz + M * G * math.sin(math.atan(tan))


def test_held_below_the_friction_angle_without_creep(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_fallback(monkeypatch)
    tan, hz = 0.3, 240.0
    th = math.atan(tan)
    r = _incline("compiled", tan, hz, 240)  # 1 s (the slip decays with ~0.04 s)
    f_c = STICK["mu"] * M * G * math.cos(th)
    load = M * G * math.sin(th)
    # statics: the spring carries m g sin theta (its displacement m g sin theta / k_t)
    assert np.allclose(_tangential_force(r["v"], hz, tan)[-24:], load, rtol=1e-7)
    # no creep: the contact point does not slip over the last 0.1 s (regularised friction with
    # v_eps = 1 mm/s would creep at v_eps atanh(tan / mu) = 0.55 mm/s, 55 um in 0.1 s); the
    # centre moves < 1 nm (the locked rotation still rolls by ~0.1 nm)
    assert np.all(np.abs(r["slip"][-24:]) < 1e-12)
    assert abs(r["x"][-1] - r["x"][-25]) < 1e-9
    # the slip before it held: Dahl's loading curve (the host's explicit step: O(dt), ~1 %)
    x_dahl = f_c / STICK["k_t"] * math.log(1.0 / (1.0 - load / f_c))
    assert -r["x"][-1] == pytest.approx(x_dahl, rel=0.02)


def test_slides_above_the_friction_angle_at_coulombs_force(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _no_fallback(monkeypatch)
    tan, hz = 0.8, 60.0
    th = math.atan(tan)
    r = _incline("compiled", tan, hz, 30)  # 0.5 s
    f = _tangential_force(r["v"], hz, tan)
    assert np.allclose(f[-10:], STICK["mu"] * M * G * math.cos(th), rtol=1e-9)
    # Coulomb: accelerating down the slope at g (sin theta - mu cos theta)
    a = np.diff(r["v"])[-10:] * hz
    assert np.allclose(-a, G * (math.sin(th) - STICK["mu"] * math.cos(th)), rtol=1e-6)


@pytest.mark.parametrize("tan", [0.3, 0.8])
def test_incline_compiled_matches_scipy(tan: float) -> None:
    rs = _incline("scipy", tan, 60.0, 30)
    rc = _incline("compiled", tan, 60.0, 30)
    scale = max(1e-3, float(np.abs(rs["x"]).max()))
    assert np.max(np.abs(rc["x"] - rs["x"])) < 1e-7 * scale
    assert np.max(np.abs(rc["v"] - rs["v"])) < 1e-6 * max(1e-3, float(np.abs(rs["v"]).max()))


def _box(solver: str) -> np.ndarray:
    """A box landing on an edge, spinning and sliding, with springs at its corners (one group
    of contacts coupled through its rotation; onsets and ends inside host steps)."""
    with ground_world(G) as (cid, plane):
        s = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 0.03, 0.02],
                                   physicsClientId=cid)
        b = p.createMultiBody(0.5, s, basePosition=[0, 0, 0.05], physicsClientId=cid,
                              baseOrientation=p.getQuaternionFromEuler([0.1, 0.05, 0.3]))
        p.resetBaseVelocity(b, [0.3, 0.1, 0], [0, 0, 1.0], physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], solver=solver, stick=STICK,
                            law={"name": "hunt_crossley", "cr": 0.5, "k": 1e6})
        poses = []
        for _ in range(72):  # 0.3 s
            bk.step()
            pos, quat = p.getBasePositionAndOrientation(b, physicsClientId=cid)
            poses.append([*pos, *quat])
        return np.array(poses)


def test_tumbling_box_with_springs_compiled_matches_scipy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ps = _box("scipy")
    _no_fallback(monkeypatch)
    pc = _box("compiled")
    assert np.max(np.abs(pc - ps)) < 1e-7


def _stack_and_lone(solver: str) -> np.ndarray:
    """A lone sphere and a 2-sphere stack on the incline (rotation locked): the stack's two
    contacts are one group, the lone one another, and the batch lists the lone contact between
    the stack's (the groups reorder the contacts; the springs must come back in batch order)."""
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        th = math.atan(0.3)
        p.setGravity(-G * math.sin(th), 0, -G * math.cos(th), physicsClientId=cid)
        p.setTimeStep(1 / 60, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        bs = []
        for pos in ([0.2, 0, R], [0, 0, R], [0, 0, 3 * R]):  # lone, stack bottom, stack top
            b = p.createMultiBody(M, shape, basePosition=pos, physicsClientId=cid)
            p.changeDynamics(b, -1, linearDamping=0, angularDamping=0,
                             localInertiaDiagonal=[1e6] * 3, physicsClientId=cid)
            bs.append(b)
        bk = BulletContacts(cid, manage=[plane, (bs[1], bs[2])], solver=solver, stick=STICK,
                            law={"name": "hunt_crossley", "cr": 0.3, "k": K})
        xs = []
        for _ in range(30):  # 0.5 s
            bk.step()
            xs.append([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0] for b in bs])
        return np.array(xs)
    finally:
        p.disconnect(physicsClientId=cid)


def test_groups_return_the_springs_in_batch_order(monkeypatch: pytest.MonkeyPatch) -> None:
    xs = _stack_and_lone("scipy")
    _no_fallback(monkeypatch)
    xc = _stack_and_lone("compiled")
    assert np.max(np.abs(xc - xs)) < 1e-9
