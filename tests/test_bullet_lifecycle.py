"""A PyBullet user's script between two ``contacts.step()`` calls (issue 18): time step,
gravity, masses and friction changed mid-run, bodies loaded after construction, a stray
``stepSimulation``, resets mid-contact and mid-flight, sub-steps, two clients.

Each case is checked against the outside world: the exact parabola of free flight, the
static Hertz overlap (m g / k)^(2/3) and sum F = m g at rest, the Coulomb deceleration mu g,
the exact impact analyser's c_r, or PyBullet's own ``getClosestPoints``; or it raises one
clear error naming what to do.
"""

from __future__ import annotations

import warnings

import numpy as np
import pybullet as p
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.errors import ParameterError
from mbplugin.impact import impact
from mbplugin.laws import make_law

G, DT, K = 9.81, 1 / 240, 1e5
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": K}


def _body(cid: int, z: float, m: float, shape: str = "sphere", x: float = 0.0) -> int:
    if shape == "sphere":
        s = p.createCollisionShape(p.GEOM_SPHERE, radius=0.02, physicsClientId=cid)
    elif shape == "box":
        s = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.04, 0.03, 0.02],
                                   physicsClientId=cid)
    else:
        s = p.createCollisionShape(p.GEOM_CAPSULE, radius=0.015, height=0.06,
                                   physicsClientId=cid)
    b = p.createMultiBody(m, s, basePosition=[x, 0, z], physicsClientId=cid)
    p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
    return b


def _z(cid: int, b: int) -> float:
    return p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2]


def _static(m: float, g: float = G) -> float:
    """Hertz's static overlap (m) of a weight m g on one contact of stiffness K."""
    return (m * g / K) ** (2 / 3)


def _rest(bk: BulletContacts, n: int) -> float:
    """Step n times; the last step's summed normal force (N)."""
    for _ in range(n):
        info = bk.step()
    return float(info.normal_force.sum()) if info.contacts else 0.0


@pytest.mark.parametrize("how", ["setTimeStep", "fixedTimeStep"])
def test_time_step_changed_mid_flight_and_at_rest(how: str) -> None:
    """A ball falling from 1 m: 10 host steps at 1/240 s, then 40 at 1/500 s; after sync it
    sits on z0 - g t^2 / 2 (t the sum of the steps; main lost the 10 steps' lag, 0.85 mm,
    when the step just taken was booked with the new dt). Then it rests at the static overlap
    with sum F = m g at the new step."""
    with ground_world(G, DT) as (cid, plane):
        m, r = 0.1, 0.02
        b = _body(cid, 1.0, m)
        bk = BulletContacts(cid, manage=[plane], law=LAW, friction="none")
        for _ in range(10):
            bk.step()
        if how == "setTimeStep":
            p.setTimeStep(1 / 500, physicsClientId=cid)
        else:
            p.setPhysicsEngineParameter(fixedTimeStep=1 / 500, physicsClientId=cid)
        for _ in range(40):
            bk.step()
        bk.sync()
        t = 10 * DT + 40 / 500
        assert abs(_z(cid, b) - (1.0 - G * t * t / 2)) < 1e-12
        f = _rest(bk, 1500)
        bk.sync()
        assert f == pytest.approx(m * G, rel=1e-6)
        assert _z(cid, b) == pytest.approx(r - _static(m), abs=1e-3 * _static(m))


def test_gravity_changed_mid_flight_and_at_rest() -> None:
    """setGravity(-5) after 10 host steps of flight: the exact piecewise parabola after sync
    (main: 0.85 mm below it), then sum F = m g' and the static overlap of m g' at rest."""
    with ground_world(G, DT) as (cid, plane):
        m, r = 0.1, 0.02
        b = _body(cid, 1.0, m)
        bk = BulletContacts(cid, manage=[plane], law=LAW, friction="none")
        for _ in range(10):
            bk.step()
        p.setGravity(0, 0, -5.0, physicsClientId=cid)
        for _ in range(40):
            bk.step()
        bk.sync()
        t1, t2 = 10 * DT, 40 * DT
        exact = 1.0 - G * t1 * t1 / 2 - G * t1 * t2 - 5.0 * t2 * t2 / 2
        assert abs(_z(cid, b) - exact) < 1e-12
        f = _rest(bk, 900)
        bk.sync()
        assert f == pytest.approx(m * 5.0, rel=1e-6)
        assert _z(cid, b) == pytest.approx(r - _static(m, 5.0), abs=1e-3 * _static(m, 5.0))


@pytest.mark.parametrize("refresh", [True, False])
def test_mass_changed_at_rest(refresh: bool) -> None:
    """changeDynamics(mass=3 m) of a resting ball: sum F = 3 m g and its host overlap the
    static one of 3 m g (main, which kept the old mass in W and the correction: 0.33 mm
    deeper). Without refresh() the backend's watch finds it and says to call refresh()."""
    with ground_world(G, DT) as (cid, plane):
        m, r = 0.1, 0.02
        b = _body(cid, r, m)
        bk = BulletContacts(cid, manage=[plane], law=LAW, friction="none")
        _rest(bk, 240)
        p.changeDynamics(b, -1, mass=3 * m, physicsClientId=cid)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if refresh:
                bk.refresh()
            f = _rest(bk, 960)
        said = [str(w.message) for w in seen if "refresh()" in str(w.message)]
        assert bool(said) is not refresh
        bk.sync()
        assert f == pytest.approx(3 * m * G, rel=1e-6)
        assert _z(cid, b) == pytest.approx(r - _static(3 * m), abs=1e-3 * _static(3 * m))


def test_mass_changed_mid_flight_bounces_with_the_new_mass() -> None:
    """A ball whose mass is tripled (refresh()) mid-flight bounces with the exact analyser's
    c_r of the new mass under its weight (main: c_r 0.11 for 0.65, the old mass in W)."""
    with ground_world(G, DT) as (cid, plane):
        m = 0.05
        b = _body(cid, 0.3, m)
        bk = BulletContacts(cid, manage=[plane], law=LAW, friction="none")
        for _ in range(10):
            bk.step()
        p.changeDynamics(b, -1, mass=3 * m, physicsClientId=cid)
        bk.refresh()
        while not len(bk.bounces()):
            bk.step()
        row = bk.bounces()[0]
        ref = impact(make_law("hunt_crossley", k=K, cr=0.5), 3 * m, float(row["v_in"]),
                     press=3 * m * G)
        assert abs(float(row["cr"]) - ref.cr_out) < 1e-3


def test_lateral_friction_changed_mid_slide() -> None:
    """A box sliding on plane.urdf (lateral friction 1.0) slows at mu g; after
    changeDynamics(lateralFriction=0.2) (mu = 0.2, was 0.5) and refresh() at mu' g."""
    with ground_world(G, DT) as (cid, plane):
        b = _body(cid, 0.02, 0.3, "box")
        p.resetBaseVelocity(b, [3.0, 0, 0], [0, 0, 0], physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.3,
                                                      "k": 1e6})
        _rest(bk, 30)

        def decel(n: int) -> float:
            v0 = p.getBaseVelocity(b, physicsClientId=cid)[0][0]
            _rest(bk, n)
            return (v0 - p.getBaseVelocity(b, physicsClientId=cid)[0][0]) / (n * DT)

        assert decel(30) == pytest.approx(0.5 * G, rel=1e-3)
        p.changeDynamics(b, -1, lateralFriction=0.2, physicsClientId=cid)
        bk.refresh()
        assert decel(60) == pytest.approx(0.2 * G, rel=1e-3)


@pytest.mark.parametrize("shape", ["sphere", "box", "capsule"])
def test_body_loaded_after_construction_is_managed(shape: str) -> None:
    """manage=[plane] (the plane's collision group and mask 0): a body loaded afterwards, with
    no add_body(), rests on the managed plane with sum F = m g at the host overlap
    (getClosestPoints) the contacts integrate (main: it fell through the plane)."""
    with ground_world(G, DT) as (cid, plane):
        first = _body(cid, 0.02, 0.1)
        bk = BulletContacts(cid, manage=[plane], law=LAW)
        _rest(bk, 5)
        m = 0.2
        b = _body(cid, 0.06, m, shape, x=0.3)
        f = _rest(bk, 480)
        assert f == pytest.approx((0.1 + m) * G, rel=1e-6)
        bk.sync()
        pts = p.getClosestPoints(b, plane, 0.01, physicsClientId=cid)
        assert pts and _z(cid, b) > 0
        deepest = -min(q[8] for q in pts)
        delta = bk.last.delta[(np.asarray(bk.last.links)[:, :, 0] == b).any(axis=1)].max()
        assert deepest == pytest.approx(delta, rel=0.02)
        assert _z(cid, first) == pytest.approx(0.02 - _static(0.1), abs=1e-3 * _static(0.1))


def test_stray_step_simulation_recovers() -> None:
    """The user calls p.stepSimulation() once instead of contacts.step() (the managed pairs
    have no native response: the ball sinks one step's fall): the backend takes it up and the
    ball rests again at the static overlap with sum F = m g."""
    with ground_world(G, DT) as (cid, plane):
        m, r = 0.1, 0.02
        b = _body(cid, r, m)
        bk = BulletContacts(cid, manage=[plane], law=LAW, friction="none")
        _rest(bk, 240)
        p.stepSimulation(physicsClientId=cid)
        f = _rest(bk, 960)
        bk.sync()
        assert f == pytest.approx(m * G, rel=1e-6)
        assert _z(cid, b) == pytest.approx(r - _static(m), abs=1e-3 * _static(m))


def test_reset_velocity_mid_contact_flies_on_the_parabola() -> None:
    """A resting ball given 1 m/s upwards (resetBaseVelocity): the contact ends in the next
    host step, the ball flies on z1 + v t - g t^2 / 2 from that step's end (after sync), and
    lands with v_in = sqrt(v^2 + 2 g (z1 - z_touch)) within the host step's kick."""
    with ground_world(G, DT) as (cid, plane):
        m, r = 0.1, 0.02
        b = _body(cid, r, m)
        bk = BulletContacts(cid, manage=[plane], law=LAW, friction="none")
        _rest(bk, 240)
        p.resetBaseVelocity(b, [0, 0, 1.0], [0, 0, 0], physicsClientId=cid)
        bk.step()
        bk.sync()
        z1 = _z(cid, b)
        v1 = p.getBaseVelocity(b, physicsClientId=cid)[0][2]
        n0 = len(bk.bounces())
        for _ in range(20):
            bk.step()
        bk.sync()
        t = 20 * DT
        assert abs(_z(cid, b) - (z1 + v1 * t - G * t * t / 2)) < 1e-12
        while len(bk.bounces()) <= n0 + 0:
            bk.step()
        row = bk.bounces()[-1]
        v_in = np.sqrt(v1 * v1 + 2 * G * (z1 - r))
        assert float(row["v_in"]) == pytest.approx(v_in, rel=1e-6)


def test_num_sub_steps_refused_with_what_to_do() -> None:
    """numSubSteps = 4 makes stepSimulation take 4 semi-implicit steps the backend does not see
    (measured before: the bounce's c_r 0.40 for 0.66, the free flight 1.6 mm off): refused at
    construction and at the next step, naming the parameter and the remedy. numSubSteps = 1 is
    PyBullet's plain step (bitwise: PyBullet's own trajectories compared)."""
    with ground_world(G, DT) as (cid, plane):
        _body(cid, 0.5, 0.1)
        p.setPhysicsEngineParameter(numSubSteps=4, physicsClientId=cid)
        with pytest.raises(ParameterError, match=r"numSubSteps = 4.*setTimeStep"):
            BulletContacts(cid, manage=[plane], law=LAW)
        p.setPhysicsEngineParameter(numSubSteps=0, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], law=LAW)
        bk.step()
        p.setPhysicsEngineParameter(numSubSteps=4, physicsClientId=cid)
        with pytest.raises(ParameterError, match=r"numSubSteps = 4.*contacts.step\(\) 4 times"):
            bk.step()

    def native(n_sub: int) -> tuple:
        with ground_world(G, DT) as (cid, _plane):
            b = _body(cid, 0.5, 0.1, "box")
            p.resetBaseVelocity(b, [0.3, 0, 1], [1, 2, 3], physicsClientId=cid)
            p.setPhysicsEngineParameter(numSubSteps=n_sub, physicsClientId=cid)
            for _ in range(30):
                p.applyExternalForce(b, -1, [0, 0, 0.5], [0, 0.01, 0.5], p.WORLD_FRAME,
                                     physicsClientId=cid)
                p.stepSimulation(physicsClientId=cid)
            return (p.getBasePositionAndOrientation(b, physicsClientId=cid),
                    p.getBaseVelocity(b, physicsClientId=cid))

    assert native(1) == native(0)


def test_two_clients_with_their_own_gravity_and_step() -> None:
    """Two DIRECT clients (int ids) stepped in turn, 1/240 s and g = 9.81 against 1/400 s and
    g = 4: each ball rests with sum F = its m g and its static overlap."""
    worlds = []
    try:
        for g, dt, m in ((G, DT, 0.1), (4.0, 1 / 400, 0.3)):
            w = ground_world(g, dt)
            cid, plane = w.__enter__()
            worlds.append(w)
            b = _body(cid, 0.05, m)
            worlds[-1].case = (cid, b, g, m, BulletContacts(cid, manage=[plane], law=LAW,
                                                            friction="none"))
        force = [0.0, 0.0]
        for _ in range(960):
            for i, w in enumerate(worlds):
                info = w.case[4].step()
                force[i] = float(info.normal_force.sum())
        for i, w in enumerate(worlds):
            cid, b, g, m, bk = w.case
            bk.sync()
            assert force[i] == pytest.approx(m * g, rel=1e-6)
            assert _z(cid, b) == pytest.approx(0.02 - _static(m, g), abs=1e-3 * _static(m, g))
    finally:
        for w in worlds:
            w.__exit__(None, None, None)


def test_reset_joint_state_mid_contact(tmp_path) -> None:
    """A fixed-base arm (a revolute hinge at the tip sphere's height, its mass at the tip)
    resting its tip on the ground carries m g there (torque balance about the hinge); the user
    lifts it mid-contact with resetJointState (0.4 rad up, at rest): it falls back, lands and
    rests again with the tip's force m g at the static overlap PyBullet measures."""
    inertia = '<inertia ixx="1e-5" iyy="1e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/>'
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(
        f'<robot name="arm"><link name="base"><inertial><mass value="0"/>{inertia}</inertial>'
        '</link><link name="arm"><inertial><origin xyz="0.1 0 0"/><mass value="0.2"/>'
        f'{inertia}</inertial><collision><origin xyz="0.1 0 0"/><geometry><sphere '
        'radius="0.02"/></geometry></collision></link><joint name="hinge" type="revolute">'
        '<parent link="base"/><child link="arm"/><origin xyz="0 0 0.02"/><axis xyz="0 1 0"/>'
        '<limit lower="-3" upper="3" effort="0" velocity="100"/></joint></robot>')
    with ground_world(G, DT) as (cid, plane):
        arm = p.loadURDF(str(urdf), useFixedBase=True, physicsClientId=cid)
        p.setJointMotorControl2(arm, 0, p.VELOCITY_CONTROL, force=0, physicsClientId=cid)
        p.changeDynamics(arm, 0, linearDamping=0, angularDamping=0, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], law=LAW, friction="none")
        m = 0.2
        assert _rest(bk, 480) == pytest.approx(m * G, rel=1e-6)
        p.resetJointState(arm, 0, -0.4, 0.0, physicsClientId=cid)  # tip up (about +y)
        bk.step()
        tip = p.getLinkState(arm, 0, physicsClientId=cid)[0]
        assert tip[2] > 0.05  # it was lifted: no contact holds it
        assert _rest(bk, 1440) == pytest.approx(m * G, rel=1e-6)
        pts = p.getClosestPoints(arm, plane, 0.01, 0, -1, physicsClientId=cid)
        assert -min(q[8] for q in pts) == pytest.approx(_static(m), rel=1e-3)


def test_removing_bodies() -> None:
    """removeBody of a body outside the managed pairs changes nothing (the ball rests with
    sum F = m g at its static overlap); of a managed one, and resetSimulation, a clear error
    at the next step saying what to do."""
    with ground_world(G, DT) as (cid, plane):
        m, r = 0.1, 0.02
        b = _body(cid, r, m)
        other = _body(cid, 0.3, 0.2, "box", x=0.5)
        bk = BulletContacts(cid, manage=[(plane, b)], law=LAW, friction="none")
        _rest(bk, 60)
        p.removeBody(other, physicsClientId=cid)
        f = _rest(bk, 420)
        bk.sync()
        assert f == pytest.approx(m * G, rel=1e-6)
        assert _z(cid, b) == pytest.approx(r - _static(m), abs=1e-3 * _static(m))
        p.resetSimulation(physicsClientId=cid)
        assert p.getNumBodies(physicsClientId=cid) == 0  # (PyBullet's: the world cleared)
        with pytest.raises(ParameterError) as err:
            bk.step()
        # what happened and what to do; not removeBody, which the user did not call
        msg = str(err.value)
        assert "p.resetSimulation" in msg and "create a new BulletContacts" in msg
        assert "p.removeBody)" not in msg
