"""The lean path of one kinematic tree (``mbplugin/mujoco/lean_tree.py``) on the A1 quadruped
of ``examples/mujoco_quadruped.py``: W's block and the implicit step's rounds in compiled
code through MuJoCo's C API give the general path's stance forces, and the stance is at the
static Hertz overlap.

Over a stance and a trot (feet landing and lifting) most host steps are one compiled call
after ``mj_step1`` (``mbplugin/mujoco/tree_step.py``), the rare ones keep the lean tree
path's Python, and every step's info, the store's events and the warm start are the general
path's (to roundoff).

A Menagerie-style A1 (joint damping, friction loss, armature, position actuators, implicitfast,
knees on their limits) takes the lean path too, bitwise the general path's.

Outside-world values: the robot's weight W (its subtree mass times g, from MuJoCo's model)
carried by the four toes, and the static Hertz overlap (W / (4 k))^(2/3) with
k = 4/3 E* sqrt(R), 1/E* = (1 - nu1^2)/E1 + (1 - nu2^2)/E2 (Johnson 1985, Contact Mechanics,
eq. 4.22-4.23), written out here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from mbplugin.mujoco.lean_tree import LeanTree

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mujoco_quadruped.py"
T_STAND = 0.8  # s: the drop onto the toes has settled by the last 0.2 s


@contextlib.contextmanager
def _counted_outcomes() -> Iterator[list[int]]:
    """Inside the block, every ``tree_step.tree_fused`` call's outcome code, in order."""
    from mbplugin.mujoco import tree_step

    outcomes: list[int] = []
    fused = tree_step.tree_fused

    def counted(*args):
        out = fused(*args)
        outcomes.append(int(out[0]))
        return out

    tree_step.tree_fused = counted
    try:
        yield outcomes
    finally:
        tree_step.tree_fused = fused

def _example():
    spec = importlib.util.spec_from_file_location("mujoco_quadruped", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _stance(q, lean: bool) -> tuple[np.ndarray, np.ndarray, float, LeanTree | None]:
    """Per step: the toes' normal forces (n, 4) N and overlaps (n, 4) m; the weight (N); the
    lean path (None: the general path, its hooks answering 'not here')."""
    m, d, contacts = q.setup(True)
    host = contacts.host
    tree = getattr(host.verify_rounds, "__self__", None)
    if not lean:
        contacts._tree = None
        host.articulated_delassus = lambda *a: None
        host.verify_rounds = lambda *a, **k: None
    hq = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    dt = m.opt.timestep
    n = round(T_STAND / dt)
    force, depth = np.zeros((n, 4)), np.zeros((n, 4))
    for i in range(n):
        tau = q.KP * (q.targets(i * dt, T_STAND) - d.qpos[hq]) - q.KD * d.qvel[hv]
        d.ctrl[:] = np.clip(tau, -q.MAX_TORQUE, q.MAX_TORQUE)
        info = contacts.step()
        if info.contacts == 4:
            force[i], depth[i] = info.normal_force, info.delta
    trunk = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "trunk")
    weight = float(m.body_subtreemass[trunk] * -m.opt.gravity[2])
    return force, depth, weight, tree if lean else None


def test_a1_lean_tree_stance_equals_the_general_path_and_static_hertz() -> None:
    q = _example()
    f_lean, d_lean, w, tree = _stance(q, True)
    f_gen, d_gen, _, _ = _stance(q, False)
    assert isinstance(tree, LeanTree)
    n = len(f_lean)
    # the lean path took (almost) every step: W's block and the implicit step's rounds
    assert tree.blocks > 0.95 * n and tree.steps > 0.95 * n
    # the landing's onset: solved in the compiled call (implicit_kernel.onset_solve), none
    # handed to the general path
    assert tree.landed >= 1 and tree.first_handed == 0
    # the same stance forces as the general path (to 1e-10 of the weight; bitwise in practice)
    assert np.max(np.abs(f_lean - f_gen)) <= 1e-10 * w
    assert np.max(np.abs(d_lean - d_gen)) <= 1e-10 * np.max(np.abs(d_gen))
    # the settled stance: the toes carry the weight and sink to the static Hertz overlap
    quiet = slice(round(0.75 * n), n)
    assert np.all(np.abs(f_lean[quiet].sum(axis=1) / w - 1.0) < 0.02)
    e_star = 1.0 / ((1 - q.NU_GROUND**2) / q.E_GROUND + (1 - q.NU_TOE**2) / q.E_TOE)
    k = 4.0 / 3.0 * e_star * math.sqrt(q.TOE_R)
    hertz = (w / 4 / k) ** (2 / 3)
    assert abs(float(d_lean[quiet].mean()) / hertz - 1.0) < 0.05


def _setup(q, lean: bool):
    """The example's ``setup(True)`` and its lean path; with ``lean`` False the lean path off
    (its hooks answering 'not here': every step on the general path)."""
    m, d, contacts = q.setup(True)
    tree = contacts._tree
    if not lean:
        contacts._tree = None
        contacts.host.articulated_delassus = lambda *a: None
        contacts.host.verify_rounds = lambda *a, **k: None
    return m, d, contacts, tree


def _menagerie(q, m: mujoco.MjModel) -> mujoco.MjModel:
    """``m`` (the example's A1) as MuJoCo Menagerie's quadrupeds are modelled: every hinge's
    joint damping 0.5 N m s/rad, friction loss 0.2 N m and armature 0.01 kg m^2, position
    actuators (the example's PD gains: ``ctrl`` the joint target, |tau| <= MAX_TORQUE), the
    implicitfast integrator, and each knee's joint limit 0.02 rad short of its standing bend
    (the actuator presses the knees on their limits: a limit row in every step)."""
    hinge = np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    dofs = m.jnt_dofadr[hinge]
    m.dof_damping[dofs], m.dof_frictionloss[dofs], m.dof_armature[dofs] = 0.5, 0.2, 0.01
    mujoco.mj_setConst(m, mujoco.MjData(m))  # what the armature changes
    m.actuator_gainprm[:, 0] = q.KP
    m.actuator_biastype[:] = mujoco.mjtBias.mjBIAS_AFFINE
    m.actuator_biasprm[:, 1], m.actuator_biasprm[:, 2] = -q.KP, -q.KD
    m.actuator_forcelimited[:] = 1
    m.actuator_forcerange[:] = (-q.MAX_TORQUE, q.MAX_TORQUE)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    knees = hinge[2::3]
    m.jnt_limited[knees] = 1
    m.jnt_range[knees] = (q.STAND[2] + 0.02, 3.0)
    return m


def test_menagerie_style_a1_stays_lean_equals_the_general_path_at_static_hertz() -> None:
    """Joint damping, friction loss, armature, position actuators with the implicitfast
    integrator and knees on their limits: MuJoCo's velocity update is then not M alone
    ((M + dt D - dt D_act + J_c^T D_c J_c), trees.py's ``update_matrix``); the lean path takes
    it (W's block from that matrix) and gives the general path's stance to the last bit, also
    after the user changes the damping between steps; the stance carries the weight, each toe
    at the static Hertz overlap of its own force (Johnson 1985, eq. 4.22-4.23)."""
    q = _example()
    a1 = q.a1_model
    q.a1_model = lambda: _menagerie(q, a1())
    limit = int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT)

    def run(lean: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, LeanTree]:
        m, d, contacts, tree = _setup(q, lean)
        hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
        n = round(T_STAND / m.opt.timestep)
        force, depth, pos = np.zeros((n, 4)), np.zeros((n, 4)), np.zeros((n, m.nq))
        for i in range(n):
            if i == n // 2:
                m.dof_damping[hv] = 1.0  # N m s/rad: seen from the next step on
            d.ctrl[:] = q.targets(i * m.opt.timestep, T_STAND)
            info = contacts.step()
            assert limit in d.efc_type[:d.nefc]  # a knee on its limit
            if info.contacts == 4:
                force[i], depth[i] = info.normal_force, info.delta
            pos[i] = d.qpos
        trunk = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "trunk")
        return force, depth, pos, float(m.body_subtreemass[trunk] * -m.opt.gravity[2]), tree

    try:
        f_lean, d_lean, q_lean, w, tree = run(True)
        f_gen, d_gen, q_gen, _, _ = run(False)
    finally:
        q.a1_model = a1
    n = len(f_lean)
    assert isinstance(tree, LeanTree)
    assert tree.blocks > 0.95 * n and tree.steps > 0.95 * n
    assert np.array_equal(q_lean, q_gen) and np.array_equal(f_lean, f_gen)
    assert np.array_equal(d_lean, d_gen)
    quiet = slice(round(0.75 * n), n)
    assert np.all(np.abs(f_lean[quiet].sum(axis=1) / w - 1.0) < 0.02)
    e_star = 1.0 / ((1 - q.NU_GROUND**2) / q.E_GROUND + (1 - q.NU_TOE**2) / q.E_TOE)
    k = 4.0 / 3.0 * e_star * math.sqrt(q.TOE_R)
    hertz = (f_lean[quiet] / k) ** (2 / 3)  # each toe's static overlap under its force
    assert np.all(f_lean[quiet] > 0.1 * w / 4)
    assert np.max(np.abs(d_lean[quiet] / hertz - 1.0)) < 0.05


def test_lean_tree_takes_joint_damping_set_between_steps() -> None:
    """Joint damping set between steps enters MuJoCo's implicit velocity update (M + dt D,
    the Euler integrator): the lean path takes it from then on (W's block from that matrix)
    and both runs stay the same to roundoff (the plain steps' M^-1 J^T is MuJoCo's own
    factor qLD on the lean path, a dense solve of M on the general one: 1e-15 m apart)."""
    q = _example()

    def run(lean: bool) -> tuple[np.ndarray, LeanTree | None]:
        m, d, contacts, tree = _setup(q, lean)
        hq = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
        hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
        out = []
        for i in range(120):
            if i == 60:
                m.dof_damping[hv] = 0.5  # N m s/rad
                tree_blocks = tree.blocks
            tau = q.KP * (q.STAND - d.qpos[hq]) - q.KD * d.qvel[hv]
            d.ctrl[:] = np.clip(tau, -q.MAX_TORQUE, q.MAX_TORQUE)
            contacts.step()
            out.append(d.qpos.copy())
        if lean:
            assert tree_blocks > 30 and tree.blocks > tree_blocks + 50  # lean after the change
        return np.array(out), tree

    q_lean, _ = run(True)
    q_gen, _ = run(False)
    assert np.max(np.abs(q_lean - q_gen)) <= 1e-12


def test_a1_trot_common_step_in_one_call_equals_the_general_path() -> None:
    """0.8 s stance then 0.4 s trot (feet lifting and landing: onsets, ends, swing feet
    within the margin): most host steps are one compiled call after ``mj_step1``
    (:func:`mbplugin.mujoco.tree_step.tree_fused`, outcome DONE), the rare outcomes (a
    landing solved in the call, a row that ends: END) are met, and every step's info, the
    store's events and bounces and the integrator's warm start are the general path's (keys
    and ids equal, values to roundoff), and no step writes into an earlier step's info; the
    stance carries the robot's weight (its subtree mass times g)."""
    from mbplugin.mujoco import tree_step

    q = _example()
    t_trot = 0.4

    def run(lean: bool) -> tuple[list[tuple[np.ndarray, ...]], Any, float]:
        m, d, contacts, _ = _setup(q, lean)
        hq = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
        hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
        dt = m.opt.timestep
        rec, held = [], []
        for i in range(round((T_STAND + t_trot) / dt)):
            tau = q.KP * (q.targets(i * dt, T_STAND) - d.qpos[hq]) - q.KD * d.qvel[hv]
            d.ctrl[:] = np.clip(tau, -q.MAX_TORQUE, q.MAX_TORQUE)
            info = contacts.step()
            rec.append((info.normal_force.copy(), info.delta.copy(), info.slip.copy(),
                        info.keys.copy(), info.sides.copy(), info.bodies.copy(),
                        info.geoms.copy(), d.qpos.copy(), d.qvel.copy()))
            held.append((info.normal_force, info.delta, info.slip, info.keys, info.sides,
                         info.bodies, info.geoms))
        # an info's arrays are the user's: no later step writes into them (the fused step's
        # work arrays are a kept scratch; what it hands out is fresh)
        for kept, copied in zip(held, rec, strict=True):
            for x, y in zip(kept, copied, strict=False):
                assert np.array_equal(x, y)
        trunk = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "trunk")
        return rec, contacts, float(m.body_subtreemass[trunk] * -m.opt.gravity[2])

    with _counted_outcomes() as outcomes:
        lean, c_lean, weight = run(True)
    general, c_gen, _ = run(False)
    n = len(lean)
    assert outcomes.count(tree_step.DONE) > 0.9 * n
    # the landings (onsets at the first solve) booked by the END outcome, none handed back
    assert tree_step.END in outcomes and tree_step.FIRST not in outcomes
    assert c_lean._tree.landed >= 1
    def same(x: np.ndarray, y: np.ndarray) -> bool:
        """Integers equal; floats to 1e-9 of their scale (the lean tree path's sums differ
        from the general path's at roundoff: the host pins compare it bitwise)."""
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind != "f":
            return bool(np.array_equal(x, y))
        return bool(np.all(np.abs(x - y) <= 1e-9 * max(1.0, float(np.max(np.abs(y),
                                                                           initial=0.0)))))

    for a, b in zip(lean, general, strict=True):
        for x, y in zip(a, b, strict=True):
            assert same(x, y)
    s_lean, s_gen = c_lean.store, c_gen.store
    assert np.array_equal(s_lean.keys, s_gen.keys)
    assert s_lean._seq == s_gen._seq
    b_lean, b_gen = c_lean.bounces(), c_gen.bounces()
    assert len(b_lean) == len(b_gen)
    for name in b_gen.dtype.names:
        assert same(b_lean[name], b_gen[name])
    for name in ("last_onsets", "last_separations"):
        assert len(getattr(s_lean, name)) == len(getattr(s_gen, name))
    for name in ("_delta_last", "_ddelta_last"):
        assert same(getattr(s_lean, name), getattr(s_gen, name))
    w_lean, w_gen = c_lean.loop.integrator._warm, c_gen.loop.integrator._warm
    assert np.array_equal(w_lean[0], w_gen[0]) and same(w_lean[1], w_gen[1])
    # the settled stance (before the trot) carries the weight
    stance = [r[0].sum() for r in lean[round(0.75 * T_STAND / 0.002):round(T_STAND / 0.002)]]
    assert abs(float(np.mean(stance)) / weight - 1.0) < 0.02


def test_a1_landings_solved_in_the_compiled_call_book_hunt_crossley_onsets() -> None:
    """A toe's landing (its onset at the first solve of the step) stays in the compiled call
    (:func:`mbplugin.pipeline.implicit_kernel.onset_solve`; ``LeanTree.landed``), none is
    handed to the general path, and the store books each onset as Hunt and Crossley's law
    has it: the Hertz stiffness k = 4/3 E* sqrt(R) (Johnson 1985, eqs. 4.22-4.23), the
    damping lam = k chi / max(v_in, v_min) with chi = 3 (1 - c_r) / 2 (Hunt & Crossley 1975;
    Corral et al. 2021, Eqs. 5.9-5.12) at the latched impact speed v_in > 0 (the onset
    event's approach speed), and the contact time scale (m / (k v^(n-1)))^(1/(n+1)) at
    v = max(v_in, 1e-3) m/s (Hunt & Crossley's time unit), written out here."""
    from mbplugin.laws.power import C_K, C_LAM, C_N

    q = _example()
    m, d, contacts, tree = _setup(q, True)
    assert isinstance(tree, LeanTree)
    store = contacts.loop.store
    hq = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    dt = m.opt.timestep
    e_star = 1.0 / ((1 - q.NU_GROUND**2) / q.E_GROUND + (1 - q.NU_TOE**2) / q.E_TOE)
    k = 4.0 / 3.0 * e_star * math.sqrt(q.TOE_R)
    law = store.laws[0]
    chi = 1.5 * (1.0 - 0.3)  # the example's c_r = 0.3
    booked = 0
    for i in range(round((T_STAND + 0.4) / dt)):
        tau = q.KP * (q.targets(i * dt, T_STAND) - d.qpos[hq]) - q.KD * d.qvel[hv]
        d.ctrl[:] = np.clip(tau, -q.MAX_TORQUE, q.MAX_TORQUE)
        n_on = len(store.onsets)
        contacts.step()
        for ev in store.onsets[n_on:]:  # (this step's onsets; its end commit follows them)
            r = int(np.flatnonzero(store.keys == ev["key"])[0])
            v_in = float(store.v_in[r])
            assert v_in == float(ev["v"]) and v_in > 0.0
            row = store.coef[r]
            assert abs(row[C_K] / k - 1.0) < 1e-12
            assert row[C_N] == 1.5
            assert abs(row[C_LAM] / (k * chi / max(v_in, float(law.v_min))) - 1.0) < 1e-12
            t_c = (store.m_eff[r] / (k * max(v_in, 1e-3) ** 0.5)) ** (1.0 / 2.5)
            assert abs(store.t_c[r] / t_c - 1.0) < 1e-12
            booked += 1
    assert tree.landed >= 4 and tree.first_handed == 0
    assert booked >= tree.landed


def test_a1_landing_without_compiled_onset_hands_the_first_solve_back_same_steps() -> None:
    """A pair without a compiled onset (the pairs' onset rows withheld: ``tree_step``'s
    ``onset_templates`` giving none) hands a landing's first solve back to the general path
    (FIRST) and the stance is the same, step for step, as with the landings in the call (the
    same arithmetic: every toe force and overlap bitwise); the settled stance carries the
    robot's weight (its subtree mass times g)."""
    from mbplugin.mujoco import tree_step

    q = _example()
    f_in, d_in, w, tree_in = _stance(q, True)
    made = tree_step.onset_templates

    def none(*args):
        tpl, tsk, rule = made(*args)
        tsk[:] = np.nan  # (no pair with a compiled onset)
        return tpl, tsk, rule

    tree_step.onset_templates = none
    try:
        f_back, d_back, _, tree_back = _stance(q, True)
    finally:
        tree_step.onset_templates = made
    assert tree_in.landed >= 1 and tree_in.first_handed == 0
    assert tree_back.landed == 0 and tree_back.first_handed >= 1
    assert np.array_equal(f_in, f_back) and np.array_equal(d_in, d_back)
    quiet = slice(round(0.75 * len(f_in)), len(f_in))
    assert np.all(np.abs(f_in[quiet].sum(axis=1) / w - 1.0) < 0.02)


def test_a1_flight_steps_are_mujocos_own_step_with_an_empty_info() -> None:
    """The A1's initial fall (toes 5 mm above the floor, no pair within the step's margin):
    each step is the fused call's EMPTY outcome (:func:`mbplugin.mujoco.tree_step._empty`:
    no detection, W or solve in Python), its state bitwise MuJoCo's own ``mj_step`` of the
    same model and data (the managed pairs are off in MuJoCo: free flight, no force of
    ours), the info empty and the store without rows (outside-world reference: MuJoCo's
    own step)."""
    from mbplugin.mujoco import tree_step

    q = _example()
    m, d, contacts, _ = _setup(q, True)
    ref = mujoco.MjData(m)
    mujoco.mj_copyData(ref, m, d)  # (the model as the backend left it: the pairs off)
    hq = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    dt = m.opt.timestep

    with _counted_outcomes() as outcomes:
        flights = 0
        for i in range(40):
            for x in (d, ref):
                tau = q.KP * (q.targets(i * dt, 1.0) - x.qpos[hq]) - q.KD * x.qvel[hv]
                x.ctrl[:] = np.clip(tau, -q.MAX_TORQUE, q.MAX_TORQUE)
            n_before = len(outcomes)
            info = contacts.step()
            if info.contacts:
                break
            mujoco.mj_step(m, ref)
            assert len(outcomes) == n_before + 1
            assert outcomes[-1] == tree_step.EMPTY
            assert np.array_equal(d.qpos, ref.qpos) and np.array_equal(d.qvel, ref.qvel)
            assert d.time == ref.time
            assert info.normal_force.shape == (0,) and info.bodies.shape == (0, 2)
            assert len(contacts.store.keys) == 0
            flights += 1
    assert flights >= 5  # (the fall of 5 mm at 2 ms steps: ~14 steps before the margin)
    assert info.contacts > 0  # (then the toes within the margin: the fused step's own)
