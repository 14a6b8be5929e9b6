"""The compiled contact-space path (groups of contacts coupled through W; DOP853 while a group is
not stiff at the host step, compiled Radau otherwise) against the SciPy reference path, the
statics of a stack and the exact impact analyser.

A 3-ball stack dropped from 0.1 mm above its static configuration, next to a lone ball: two
groups (the stack's three contacts are coupled through the balls, the lone ball's contact is on
its own). Both solvers must give the same trajectory (they integrate the same equations to the
same tolerance) and, once settled, the static contact forces (N - i) m g of the stack and m g
under the lone ball. Also: a law with memory (Goldsmith's, which restores its cr) and one with
ODE states (Xiong's), and a tumbling box with friction (four corner contacts coupled through its
rotation) that comes to rest on four corners, each at Hertz's overlap under m g / 4.
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pybullet_data
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.contact import effective_modulus
from mbplugin.errors import ParameterError
from mbplugin.impact import impact
from mbplugin.laws import make_law

G = 9.81
R = 0.01
M = 0.05
K = 1e5
N = 3


def _run(solver: str) -> tuple[np.ndarray, dict[int, float], list[int], int, np.ndarray]:
    with ground_world(G, 1 / 240) as (cid, plane):
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)

        def ball(x: float, z: float) -> int:
            b = p.createMultiBody(M, shape, basePosition=[x, 0, z], physicsClientId=cid)
            p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
            return b

        # static overlaps of Hertz's law under (N - i) m g, then 0.1 mm of free fall
        d = [((N - i) * M * G / K) ** (2 / 3) for i in range(N)]
        z, balls = R - d[0] + 1e-4, []
        for i in range(N):
            balls.append(ball(0.0, z))
            if i + 1 < N:
                z += 2 * R - d[i + 1]
        lone = ball(0.1, R + 1e-4)
        pairs = [(balls[i], balls[i + 1]) for i in range(N - 1)]
        bk = BulletContacts(cid, manage=[plane, *pairs], solver=solver,
                            law={"name": "hunt_crossley", "cr": 0.3, "k": K})
        zs = []
        for _ in range(96):  # 0.4 s
            info = bk.step()
            zs.append([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2]
                       for b in [*balls, lone]])
        upper = {int(links[1][0]): f for links, f in zip(info.links, info.normal_force,
                                                          strict=True)}
        return np.array(zs), upper, balls, lone, bk.bounces()


def test_compiled_groups_match_scipy_and_the_statics() -> None:
    zc, fc, balls_c, lone_c, bc = _run("compiled")
    zs, fs, _, _, bs = _run("scipy")
    # the same trajectories (both integrate to rtol 1e-8; overlaps are ~0.3 mm)
    assert np.ptp(zc[:, 0]) > 5e-5  # the stack did fall and compress (not a static check)
    assert np.max(np.abs(zc - zs)) < 1e-9
    assert len(bc) == len(bs)
    # settled: contact i of the stack carries the weight of the N - i balls above it
    for f in (fc, fs):
        for i, b in enumerate(balls_c):
            assert f[b] == pytest.approx((N - i) * M * G, rel=0.01)
        assert f[lone_c] == pytest.approx(M * G, rel=0.01)


def test_unknown_solver_is_refused() -> None:
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        with pytest.raises(ParameterError, match="solver"):
            BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5,
                                                     "k": K}, solver="euler")
    finally:
        p.disconnect(physicsClientId=cid)


def _drop(law: dict, solver: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ball's height per host step, its bounces and the events located per host step."""
    with ground_world(G) as (cid, plane):
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        b = p.createMultiBody(M, shape, basePosition=[0, 0, R + 0.02], physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], law=law, solver=solver)
        zs, events = [], []
        for _ in range(120):  # 0.5 s
            events.append(bk.step().stats.events)
            zs.append(p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2])
        return np.array(zs), bk.bounces(), np.array(events)


@pytest.mark.parametrize("law", [
    # memory (maximum compression located as an event): Goldsmith's law restores its cr exactly
    {"name": "goldsmith", "k": K, "cr": 0.6},
    # ODE states in the group's state vector (Xiong's hysteresis variable)
    {"name": "xiong", "k": K, "n": 1.5, "beta1": 0.5, "beta2": 0.3, "gamma": 1.0},
])
def test_compiled_matches_scipy_with_memory_and_ode_states(law: dict) -> None:
    zc, bc, ec = _drop(law, "compiled")
    zs, bs, es = _drop(law, "scipy")
    assert len(bc) == len(bs) >= 2
    # the same events in the same host steps: each located event has fired its rule at the
    # point just past it (the reference used to stop on a latch renewal's value of exactly 0
    # at d = d_sep, unfired, and cross it again every few ulps: 89 609 events in a host step)
    assert ec.sum() >= 10
    assert np.array_equal(ec, es)
    assert np.max(np.abs(zc - zs)) < 1e-9
    assert np.allclose(bc["cr"], bs["cr"], atol=1e-7)
    if law["name"] == "goldsmith":  # impacts fast enough for gravity not to matter
        fast = bc["v_in"] > 0.15
        assert fast.sum() >= 2
        assert np.allclose(bc["cr"][fast], law["cr"], atol=1e-4)


def _box(solver: str) -> tuple[np.ndarray, np.ndarray]:
    with ground_world(G) as (cid, plane):
        s = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 0.03, 0.02],
                                   physicsClientId=cid)
        b = p.createMultiBody(0.5, s, basePosition=[0, 0, 0.05], physicsClientId=cid,
                              baseOrientation=p.getQuaternionFromEuler([0.1, 0.05, 0.3]))
        p.resetBaseVelocity(b, [0.3, 0.1, 0], [0, 0, 1.0], physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], solver=solver,
                            law={"name": "hunt_crossley", "cr": 0.5, "k": 1e6},
                            friction={"mu": 0.5, "v_eps": 1e-3})
        poses = []
        for _ in range(96):  # 0.4 s
            info = bk.step()
            pos, quat = p.getBasePositionAndOrientation(b, physicsClientId=cid)
            poses.append([*pos, *quat])
        return np.array(poses), np.asarray(info.normal_force)


def test_tumbling_box_group_with_friction_matches_scipy_and_rests_on_four_corners() -> None:
    # a box landing on an edge, spinning and sliding: its corner contacts are one group coupled
    # through the box's rotation (off-diagonal blocks of W), with regularised friction
    pc, fc = _box("compiled")
    ps, _ = _box("scipy")
    assert np.max(np.abs(pc - ps)) < 1e-8
    # at rest, flat: four corners share the weight, each at Hertz's overlap (m g / 4 k)^(2/3)
    assert len(fc) == 4
    assert np.allclose(fc, 0.5 * G / 4, rtol=0.01)
    overlap = (0.5 * G / 4 / 1e6) ** (2 / 3)
    assert pc[-1, 2] == pytest.approx(0.02 - overlap, abs=0.01 * overlap)


def test_rest_shortcuts_keep_the_statics() -> None:
    """A ball placed at rest on a managed plane: the post-step state read is skipped (the
    host's step is predictable), the compiled path takes no Radau step in at least a third of
    the host steps (the quasi-static shortcut; a contact born at rest has a stiff Hunt-Crossley
    damping, and the rounding noise it amplifies in the host's explicit step brings a Radau
    step back every other step or so), and the contact still carries m g (Newton's statics)
    at Hertz's overlap (m g / k)^(2/3) without drifting."""
    with ground_world(G, 1 / 240) as (cid, plane):
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        d_static = (M * G / K) ** (2 / 3)
        b = p.createMultiBody(M, shape, basePosition=[0, 0, R - d_static],
                              physicsClientId=cid)  # placed at the static overlap
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.3,
                                                       "k": K})
        for _ in range(24):  # the contact's first steps (Radau: no step size carried yet)
            bk.step()
        reads = 0
        state = bk._read.state  # the rows' state read (body_state's, before_step's)

        def counted(*args: object, **kwargs: object) -> object:
            nonlocal reads
            reads += 1
            return state(*args, **kwargs)

        bk._read.state = counted  # type: ignore[method-assign]
        z0 = p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2]
        shortcut = 0
        for _ in range(240):
            info = bk.step()
            shortcut += info.stats.steps == 0
            assert info.normal_force[0] == pytest.approx(M * G, rel=1e-9)
            assert info.delta[0] == pytest.approx(d_static, rel=1e-6)
        z1 = p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2]
        assert reads == 240  # one state read per host step (before it), none after
        assert shortcut >= 80
        assert abs(z1 - z0) < 1e-9


def _touching(solver: str) -> tuple[np.ndarray, float]:
    """A ball placed exactly touching the plane (delta = 0 at the first step's start): its
    heights over 0.1 s and the first host step's mean normal force."""
    with ground_world(G, 1 / 240) as (cid, plane):
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        b = p.createMultiBody(M, shape, basePosition=[0, 0, R], physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], solver=solver,
                            law={"name": "hunt_crossley", "cr": 0.3, "k": K})
        zs, f0 = [], 0.0
        for i in range(24):
            info = bk.step()
            if i == 0:
                f0 = float(info.normal_force[0])
            zs.append(p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2])
        return np.array(zs), f0


def test_contact_touching_at_the_step_start_begins_at_once() -> None:
    """A pair exactly touching at a host step's start (delta = 0) starts its contact as soon
    as it overlaps (the rules' onset: delta > 0), inside that step: the plane pushes from the
    first step on (no host step of free fall), on both paths alike."""
    zc, fc = _touching("compiled")
    zs, fs = _touching("scipy")
    assert fc > 0.0 and fs > 0.0
    assert np.max(np.abs(zc - zs)) < 1e-9


def _bounce(solver: str, law: dict, m: float, steps: int, material: dict | None = None,
            resting: bool = False) -> tuple[np.ndarray, int, int]:
    """A ball dropped from 5 cm at 1/240 s (and, ``resting``, another one released touching the
    plane): the bounces, solver steps and explicit steps."""
    with ground_world(G) as (cid, plane):
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        b = p.createMultiBody(m, shape, basePosition=[0, 0, R + 0.05], physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        if resting:
            r = p.createMultiBody(m, shape, basePosition=[0.1, 0, R], physicsClientId=cid)
            p.changeDynamics(r, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], law=law, solver=solver, friction="none",
                            **({"material": material} if material else {}))
        n_steps = n_explicit = 0
        for _ in range(steps):
            info = bk.step()
            n_steps += info.stats.steps
            n_explicit += info.stats.explicit
        return bk.bounces(), n_steps, n_explicit


def _assert_analysers_cr(rows: np.ndarray, law, m: float, tol: float) -> None:
    """At least 3 bounces with v_in > 0.15 m/s, each with the exact impact analyser's c_r at its
    impact speed (the ball's weight pressing) within ``tol``."""
    fast = rows[rows["v_in"] > 0.15]
    assert len(fast) >= 3
    for row in fast:
        exact = impact(law, m, float(row["v_in"]), press=m * G).cr_out
        assert abs(row["cr"] - exact) < tol, (row, exact)


@pytest.mark.parametrize("solver", ["compiled", "radau"])
def test_explicit_and_radau_solvers_give_the_analysers_cr(solver: str) -> None:
    """The default solver takes DOP853 steps on a soft contact (not stiff at the host step:
    omega dt ~ 1) and Radau on none; "radau" takes Radau steps only. Both give every bounce's
    c_r of the exact impact analyser (an independent integrator) within 1e-6 (observed: 3e-10
    explicit, 2e-8 Radau)."""
    law = {"name": "hunt_crossley", "cr": 0.7, "k": K}
    rows, n_steps, n_explicit = _bounce(solver, law, M, 120)
    _assert_analysers_cr(rows, make_law("hunt_crossley", k=K, cr=0.7), M, 1e-6)
    assert n_steps > 0
    assert n_explicit == (n_steps if solver == "compiled" else 0)


def test_explicit_solver_hands_a_stiff_contact_to_radau() -> None:
    """Steel balls (Hertz k of steel): the dropped one's impacts are resolved by DOP853 steps
    (accuracy-limited, h omega < 1), the one released touching the plane (omega dt ~ 60 at its
    static overlap) makes the explicit steps stability-limited and Radau takes over (both kinds
    of steps are taken); every bounce's c_r is the analyser's within 1e-3 (as the backend's
    drop tests)."""
    m = 7800 * 4 / 3 * np.pi * R**3
    k = 4 / 3 * float(effective_modulus(2e11, 0.3)) * np.sqrt(R)
    rows, n_steps, n_explicit = _bounce("compiled", {"name": "hunt_crossley", "cr": 0.7}, m, 120,
                                        {"E": 2e11, "nu": 0.3}, resting=True)
    _assert_analysers_cr(rows, make_law("hunt_crossley", k=k, cr=0.7), m, 1e-3)
    assert 0 < n_explicit < n_steps


def _sliding_bounce(solver: str) -> tuple[np.ndarray, int]:
    """A ball with the stick spring thrown at 0.5 m/s along a plane from 1 cm up: it bounces
    and slides (at each lift-off the spring near its Coulomb cap mu F_N -> 0 is stiff, which
    the stiffness rate does not see). Its positions over 0.5 s and the most explicit steps
    of one host step."""
    with ground_world(G) as (cid, plane):
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        b = p.createMultiBody(M, shape, basePosition=[0, 0, R + 0.01], physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        p.resetBaseVelocity(b, [0.5, 0, 0], [0, 0, 0], physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], solver=solver,
                            stick={"k_t": 1e4, "mu": 0.6, "c_t": 20.0},
                            law={"name": "hunt_crossley", "cr": 0.5, "k": K})
        xs, most = [], 0
        for _ in range(120):
            info = bk.step()
            most = max(most, info.stats.explicit)
            xs.append(p.getBasePositionAndOrientation(b, physicsClientId=cid)[0])
        return np.array(xs), most


def test_explicit_step_count_hands_a_stiff_spring_to_radau() -> None:
    """The stiffness the rate misses is caught by the step count: no host step takes more than
    SWITCH_STEPS explicit steps (Radau takes over), and the trajectory is the SciPy reference
    path's within 1e-9 m (observed: 6e-13 m against the compiled Radau)."""
    from mbplugin.pipeline.substep_compiled import SWITCH_STEPS

    xc, most = _sliding_bounce("compiled")
    xs, _ = _sliding_bounce("scipy")
    assert xc[-1, 0] > 0.1  # it did slide
    assert 0 < most <= SWITCH_STEPS
    assert np.max(np.abs(xc - xs)) < 1e-9
