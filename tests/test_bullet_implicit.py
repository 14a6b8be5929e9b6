"""Contacts on links of articulated bodies against closed forms: a pressed and dragged toe.

The rig is a robot foot reduced to its mechanism: a multibody whose links are a horizontal
slider (dragged by a constant force F_t), a heavy vertical slider (the body, M) and a light toe
(m_t, a sphere) hung from the body by a spring-damper that the user's controller applies as
joint forces (``TORQUE_CONTROL``), the way a leg's PD controller presses a robot's toe. The toe
is light and pressed hard: its free acceleration is ~400 m/s^2 into the ground and its contact
oscillation's half period about one 1/240 s host step.

References from outside the backend: in steady drag the normal force is the weight carried,
(M + m_t) g, so the overlap is Hertz's static (F_N / k)^(2/3); regularised friction
mu F_N tanh(v / v_eps) holds F_t < mu F_N only by creeping at v_eps atanh(F_t / (mu F_N));
the tangential spring (Dahl) holds it without creep.

What it caught: the backend read link states without ``computeForwardKinematics``, which
PyBullet serves from before the last ``stepSimulation`` (positions one host step old,
velocities through the old kinematics); with the sub-stepper (``articulated="substep"``) this
rig then sat at a 21 mm mean overlap instead of 0.67 mm, with the normal force 0-79 N instead
of 40.2 N and 4x the creep. Both articulated modes are checked, the implicit step with its
compiled Newton solve and its NumPy reference (``solver="scipy"``); on the A1 quadruped of
``pybullet_data`` (four coupled feet) the two solves give the same impulses to rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pybullet_data
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.contact import effective_modulus
from mbplugin.errors import ParameterError
from mbplugin.pipeline import implicit as implicit_mod

G = 9.81
R = 0.02
GROUND, TOE = {"E": 1e7, "nu": 0.45}, {"E": 1e9, "nu": 0.4}
M, MT = 4.0, 0.1  # body and toe masses (kg)
KZ, CZ, CB = 2000.0, 20.0, 100.0  # toe spring (N/m), its damper and the body's (N s/m)
MU, V_EPS = 0.8, 1e-2
K_HERTZ = 4 / 3 * float(effective_modulus(GROUND["E"], GROUND["nu"], TOE["E"], TOE["nu"])) \
    * math.sqrt(R)


def drag(dt: float, seconds: float, ratio: float, **backend) -> dict[str, float]:
    """Drag the rig with F_t = ratio mu F_N for ``seconds``; the second half's mean overlap
    (host and solver), normal force range and horizontal speed."""
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, -G, physicsClientId=cid)
        p.setTimeStep(dt, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        toe = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        rig = p.createMultiBody(
            0, -1, -1, [0, 0, 0.3], linkMasses=[0.5, M, MT],
            linkCollisionShapeIndices=[-1, -1, toe], linkVisualShapeIndices=[-1] * 3,
            linkPositions=[[0, 0, 0]] * 3, linkOrientations=[[0, 0, 0, 1]] * 3,
            linkInertialFramePositions=[[0, 0, 0]] * 3,
            linkInertialFrameOrientations=[[0, 0, 0, 1]] * 3, linkParentIndices=[0, 1, 2],
            linkJointTypes=[p.JOINT_PRISMATIC] * 3,
            linkJointAxis=[[1, 0, 0], [0, 0, 1], [0, 0, 1]], physicsClientId=cid)
        for j in range(-1, 3):
            p.changeDynamics(rig, j, linearDamping=0, angularDamping=0, jointDamping=0,
                             physicsClientId=cid)
        fn = (M + MT) * G
        d_static = (fn / K_HERTZ) ** (2 / 3)
        pre = M * G / KZ  # the toe spring's static compression
        for j, q in enumerate([0.0, -(0.3 - R + d_static) + pre, -pre]):
            p.resetJointState(rig, j, q, physicsClientId=cid)
        p.setJointMotorControlArray(rig, [0, 1, 2], p.VELOCITY_CONTROL, forces=[0] * 3,
                                    physicsClientId=cid)
        ft = ratio * MU * fn
        contacts = BulletContacts(cid, manage=[(plane, (rig, 2))],
                                  law={"name": "hunt_crossley", "cr": 0.3},
                                  materials={plane: GROUND, rig: TOE}, rtol=1e-6, **backend)
        n = round(seconds / dt)
        x, host_d, solver_d, force = (np.zeros(n) for _ in range(4))
        for i in range(n):
            (_, vb, _, _), (qt, vt, _, _) = p.getJointStates(rig, [1, 2], physicsClientId=cid)

            f = [-ft, -CB * vb, -KZ * qt - CZ * vt]  # drag, body damper, toe spring

            def control(f: list[float] = f) -> None:
                p.setJointMotorControlArray(rig, [0, 1, 2], p.TORQUE_CONTROL, forces=f,
                                            physicsClientId=cid)

            st = contacts.step(control=control)
            x[i] = p.getJointState(rig, 0, physicsClientId=cid)[0]
            host_d[i] = R - p.getLinkState(rig, 2, physicsClientId=cid)[0][2]
            if st.contacts:
                solver_d[i], force[i] = st.delta[0], st.normal_force[0]
            else:
                solver_d[i] = np.nan
    finally:
        p.disconnect(physicsClientId=cid)
    h = n // 2
    return {"host_d": host_d[h:].mean(), "solver_d": solver_d[h:].mean(),
            "d_static": d_static, "fn": fn, "f_min": force[h:].min(), "f_max": force[h:].max(),
            "speed": (x[-1] - x[h]) / ((n - 1 - h) * dt)}


@pytest.mark.parametrize(("articulated", "solver"), [("implicit", "compiled"),
                                                     ("implicit", "scipy"),
                                                     ("substep", "compiled")])
def test_pressed_dragged_toe_regularised_friction_at_240_hz(articulated, solver) -> None:
    """Host step 1/240 s: the toe's overlap is the static Hertz overlap (host and solver alike)
    with the normal force the carried weight, and it creeps at the closed-form speed."""
    r = drag(1 / 240, 2.0, 0.5, friction={"mu": MU, "v_eps": V_EPS}, articulated=articulated,
             solver=solver)
    assert r["host_d"] == pytest.approx(r["d_static"], rel=0.01)
    assert abs(r["host_d"] - r["solver_d"]) < 1e-6  # no drift between host and contact
    assert r["f_min"] == pytest.approx(r["fn"], rel=0.01)
    assert r["f_max"] == pytest.approx(r["fn"], rel=0.01)
    assert r["speed"] == pytest.approx(-V_EPS * math.atanh(0.5), rel=0.02)


@pytest.mark.parametrize("solver", ["compiled", "scipy"])
def test_pressed_dragged_toe_holds_with_the_tangential_spring(solver) -> None:
    """The same rig with Dahl's spring: the load below mu F_N is held without creep."""
    r = drag(1 / 240, 2.0, 0.5, stick={"k_t": 5e4, "mu": MU, "c_t": 100.0}, solver=solver)
    assert r["host_d"] == pytest.approx(r["d_static"], rel=0.01)
    assert abs(r["speed"]) < 0.01 * V_EPS * math.atanh(0.5)


def test_articulated_mode_bad_input() -> None:
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        s = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        arm = p.createMultiBody(0, -1, -1, [0, 0, 0.5], linkMasses=[1.0],
                                linkCollisionShapeIndices=[s], linkVisualShapeIndices=[-1],
                                linkPositions=[[0, 0, 0]], linkOrientations=[[0, 0, 0, 1]],
                                linkInertialFramePositions=[[0, 0, 0]],
                                linkInertialFrameOrientations=[[0, 0, 0, 1]],
                                linkParentIndices=[0], linkJointTypes=[p.JOINT_PRISMATIC],
                                linkJointAxis=[[0, 0, 1]], physicsClientId=cid)
        law = {"name": "hunt_crossley", "cr": 0.5, "k": 1e5}
        with pytest.raises(ParameterError, match="articulated"):
            BulletContacts(cid, manage=[plane], law=law, articulated="exact")
        with pytest.raises(ParameterError, match="verify"):
            BulletContacts(cid, manage=[plane], law=law, verify=-1)
        stateful = {"name": "bouc_wen_maxwell", "k": 1e5, "c": 300.0, "alpha": 0.5,
                    "beta": 300.0, "gamma": 100.0}
        with pytest.raises(ParameterError, match="articulated='substep'"):
            BulletContacts(cid, manage=[(plane, arm)], law=stateful)
        BulletContacts(cid, manage=[(plane, arm)], law=stateful, articulated="substep")
    finally:
        p.disconnect(physicsClientId=cid)


STAND = [0.0, 0.8, -1.6] * 4  # the A1's standing joint angles (rad)


def a1_steps(solver: str, seconds: float, **backend) -> tuple[list, np.ndarray]:
    """The A1 of ``pybullet_data`` dropped onto its four toes under a joint PD controller
    (torque control) that starts a trot at 0.15 s; per host step (1/240 s) the keys and normal
    forces of the feet's contacts, and the base positions."""
    with ground_world(G, 1 / 240) as (cid, plane):
        robot = p.loadURDF("a1/a1.urdf", [0, 0, 0.32], physicsClientId=cid)
        nj = p.getNumJoints(robot, physicsClientId=cid)
        info = [p.getJointInfo(robot, j, physicsClientId=cid) for j in range(nj)]
        motors = [j for j in range(nj) if info[j][2] == p.JOINT_REVOLUTE]
        toes = [j for j in range(nj) if info[j][12].decode().endswith("toe")]
        for j, q0 in zip(motors, STAND, strict=True):
            p.resetJointState(robot, j, q0, physicsClientId=cid)
        p.setJointMotorControlArray(robot, motors, p.VELOCITY_CONTROL, forces=[0.0] * 12,
                                    physicsClientId=cid)
        contacts = BulletContacts(cid, manage=[(plane, (robot, t)) for t in toes],
                                  law={"name": "hunt_crossley", "cr": 0.3},
                                  materials={plane: GROUND, robot: TOE}, rtol=1e-8,
                                  solver=solver, **backend)
        steps, base = [], []
        for i in range(round(seconds * 240)):
            js = p.getJointStates(robot, motors, physicsClientId=cid)
            ph = max(i / 240 - 0.15, 0.0) * 2 * math.pi * 2.5 + np.array([0, 1, 1, 0]) * math.pi
            tgt = np.array(STAND)
            tgt[1::3] -= 0.2 * np.sin(ph) * (i / 240 > 0.15)
            tgt[2::3] -= 0.4 * np.maximum(0.0, np.cos(ph)) * (i / 240 > 0.15)
            tau = np.clip(80 * (tgt - [x[0] for x in js]) - 1.5 * np.array([x[1] for x in js]),
                          -33.5, 33.5).tolist()

            def control(tau: list[float] = tau) -> None:
                p.setJointMotorControlArray(robot, motors, p.TORQUE_CONTROL, forces=tau,
                                            physicsClientId=cid)

            st = contacts.step(control=control)
            steps.append((st.keys.copy(), st.normal_force.copy()))
            base.append(p.getBasePositionAndOrientation(robot, physicsClientId=cid)[0])
    return steps, np.array(base)


@pytest.mark.parametrize("tangential", [{"friction": {"mu": MU, "v_eps": V_EPS}},
                                        {"stick": {"k_t": 5e4, "mu": MU, "c_t": 100.0}}])
def test_compiled_and_reference_newton_agree_on_a_quadruped(tangential, monkeypatch) -> None:
    """The implicit step's compiled Newton solve and its NumPy reference give the A1's four
    coupled feet the same impulses, step by step through touchdowns, stance and trot (the same
    equations solved the same way: they differ by rounding, ~1e-12 of the weight)."""
    calls = []
    solve, solve_step = implicit_mod.ik.solve, implicit_mod.ik.solve_step

    def counted(*args, **kwargs):
        calls.append(1)
        return solve(*args, **kwargs)

    def counted_step(*args, **kwargs):
        calls.append(1)
        return solve_step(*args, **kwargs)

    from mbplugin.bullet import lean

    lean_step, lean_end = lean.verify_rounds, lean.rounds_end

    def counted_lean(*args, **kwargs):
        calls.append(1)
        return lean_step(*args, **kwargs)

    def counted_end(*args, **kwargs):
        calls.append(1)
        return lean_end(*args, **kwargs)

    monkeypatch.setattr(implicit_mod.ik, "solve", counted)
    monkeypatch.setattr(implicit_mod.ik, "solve_step", counted_step)
    monkeypatch.setattr(lean, "verify_rounds", counted_lean)
    monkeypatch.setattr(lean, "rounds_end", counted_end)
    ref, base_ref = a1_steps("scipy", 0.5, **tangential)
    assert not calls  # the reference ran in NumPy
    fast, base_fast = a1_steps("compiled", 0.5, **tangential)
    # and the compiled solve ran at every step with contacts (with its verification rounds
    # in one compiled call, mbplugin.bullet.lean, where that applies)
    assert len(calls) >= sum(len(k) > 0 for k, _ in fast)
    weight = 12.45 * G  # the A1's mass is ~12.5 kg: the scale of the forces
    loaded = 0
    for (k_r, f_r), (k_f, f_f) in zip(ref, fast, strict=True):
        assert np.array_equal(k_r, k_f)
        assert np.max(np.abs(f_r - f_f), initial=0.0) <= 1e-9 * weight
        loaded += int(np.sum(f_r > 0))
    assert loaded > 200  # the feet carried the robot (the comparison is not of zeros)
    assert np.max(np.abs(base_ref - base_fast)) < 1e-9
