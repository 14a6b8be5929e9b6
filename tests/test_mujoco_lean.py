"""The MuJoCo backend's lean path (:mod:`mbplugin.mujoco.lean`: the common step of free
spheres on a plane in compiled code) against outside references.

* Balls of masses (N - i) m resting on the floor, placed at their static Hertz overlaps
  (F = k d^1.5, d = ((N - i) m g / k)^(2/3)): the lean path takes the steps and every step's
  contact forces are the weights (N - i) m g within 1 %, the overlaps Hertz's within 1 %, the
  balls stay put (< 1 um over 0.5 s).
* A ball dropped onto the floor bounces the same on the lean path as on the general path (the
  lean path off): every bounce's times, speeds and c_r, and every step's qpos, within 1e-12.
* A ball dropped straight onto the floor: MuJoCo's friction does no work (the slip stays
  exactly 0), so it bounces as the frictionless ball does, every step's qpos and qvel within
  1e-12, on the sub-stepper's explicit steps (``normal_only``: the friction regularisation's
  stiffness, which never acts, no longer sends the contact to Radau).
* Three balls dropped side by side (Zhang & Sharf's law, c_r 0.8): the steps in which every
  pair is within the detection margin but apart (candidates, no onset within the step) are
  the lean path's, as are those with an onset or an end of contact (the sub-stepper's own
  integration and bookings of the lean step's contacts); lean and general paths give every
  step's qpos, qvel, forces and overlaps to the bit, and every bounce with v_in > 0.15 m/s
  the c_r of the exact impact analyser (``impact(..., press=m g)``) within 1e-3.
* Without MuJoCo's C library (the loader finds none, or one of another version), or with a
  Python callback installed in MuJoCo, the lean path makes MuJoCo's calls through the
  bindings, with the same result.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco_world import balls_xml, body_z, world

from mbplugin.impact.bounces import cr_errors
from mbplugin.laws import make_law
from mbplugin.mujoco import MujocoContacts, capi
from mbplugin.mujoco.lean import LeanSpheres

G = 9.81


def _lean_steps(contacts: MujocoContacts) -> int:
    lean = contacts._lean
    return lean.steps if isinstance(lean, LeanSpheres) else 0


def test_lean_balls_rest_at_the_static_hertz_overlaps() -> None:
    N, R, M, K = 5, 0.01, 0.05, 1e5
    d_static = [((N - i) * M * G / K) ** (2 / 3) for i in range(N)]  # Hertz: F = k d^1.5
    balls = [(f"b{i}", R, (N - i) * M, (0.05 * i, 0.0, R - d_static[i])) for i in range(N)]
    m, d = world(balls_xml(balls))
    contacts = MujocoContacts(m, d, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.3, "k": K})
    z0 = np.array([body_z(m, d, f"b{i}") for i in range(N)])
    steps = 250  # 0.5 s
    for _ in range(steps):
        info = contacts.step()
        assert info.contacts == N
        order = np.argsort(info.bodies[:, 1])  # ball b{i} is body i + 1
        assert info.normal_force[order] == pytest.approx([(N - i) * M * G for i in range(N)],
                                                         rel=0.01)
        assert info.delta[order] == pytest.approx(d_static, rel=0.01)
    assert _lean_steps(contacts) >= steps - 2  # the first step books the onsets
    z1 = np.array([body_z(m, d, f"b{i}") for i in range(N)])
    assert np.max(np.abs(z1 - z0)) < 1e-6


def _drop(lean: bool) -> tuple[MujocoContacts, np.ndarray]:
    R, M, h = 0.01, 0.05, 0.05
    m, d = world(balls_xml([("ball", R, M, (0.0, 0.0, R + h))]))
    contacts = MujocoContacts(m, d, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.6, "k": 1e5})
    if not lean:
        contacts._lean = False  # the general path for every step
    qpos = []
    for _ in range(300):  # 0.6 s: four bounces, then rest
        contacts.step()
        qpos.append(d.qpos.copy())
    return contacts, np.array(qpos)


def test_on_a_slope_the_lean_and_general_paths_give_the_same_roll() -> None:
    # a plane tilted by 0.3 rad: the ball bounces, slides and rolls (turning, so the lean
    # step's position correction goes to the general code); every step's qpos the same
    xml = balls_xml([("ball", 0.01, 0.05, (0.0, 0.0, 0.02))]).replace(
        '<geom name="floor" type="plane"', '<geom name="floor" type="plane" euler="0 0.3 0"')
    runs = []
    for lean in (True, False):
        m, d = world(xml)
        contacts = MujocoContacts(m, d, manage=["floor"],
                                  law={"name": "hunt_crossley", "cr": 0.6, "k": 1e5})
        if not lean:
            contacts._lean = False
        q = []
        for _ in range(150):
            contacts.step()
            q.append(d.qpos.copy())
        runs.append((contacts, np.array(q)))
    (lean, q_lean), (_, q_general) = runs
    assert _lean_steps(lean) > 100
    assert np.ptp(q_general[:, 0]) > 1e-3  # it moved down the slope
    assert np.max(np.abs(q_lean - q_general)) <= 1e-12 * np.max(np.abs(q_general))


def test_lean_and_general_paths_give_the_same_bounces() -> None:
    lean, q_lean = _drop(True)
    general, q_general = _drop(False)
    assert _lean_steps(lean) > 250 and _lean_steps(general) == 0
    a, b = lean.bounces(), general.bounces()
    assert len(a) == len(b) >= 3
    for f in ("t_in", "v_in", "t_out", "v_out", "cr"):
        assert np.asarray(a[f]) == pytest.approx(np.asarray(b[f]), rel=1e-12, abs=0.0)
    assert np.max(np.abs(q_lean - q_general)) <= 1e-12 * np.max(np.abs(q_general))


def test_a_straight_drop_bounces_with_friction_as_without_it() -> None:
    runs = []
    for friction in (None, "none"):  # MuJoCo's (mu = 1 here), frictionless
        m, d = world(balls_xml([("ball", 0.01, 0.05, (0.0, 0.0, 0.012))]))  # 2 mm up
        contacts = MujocoContacts(m, d, manage=["floor"], friction=friction,
                                  law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5})
        q, v, explicit, steps = [], [], 0, 0
        for _ in range(150):  # 0.3 s: two bounces, then the ringing contact
            info = contacts.step()
            explicit += info.stats.explicit
            steps += info.stats.steps
            q.append(d.qpos.copy())
            v.append(d.qvel.copy())
        runs.append((contacts, np.array(q), np.array(v), explicit, steps))
    (fric, q_f, v_f, ex_f, st_f), (free, q_0, v_0, _, _) = runs
    assert fric.friction_mode == "mujoco" and fric.friction is not None
    assert np.all(v_f[:, :2] == 0.0) and np.all(v_f[:, 3:] == 0.0)  # no slip, no spin
    assert np.max(np.abs(q_f - q_0)) <= 1e-12 * np.max(np.abs(q_0))
    assert np.max(np.abs(v_f - v_0)) <= 1e-12 * np.max(np.abs(v_0))
    a, b = fric.bounces(), free.bounces()
    assert len(a) == len(b) >= 1
    assert np.asarray(a["cr"]) == pytest.approx(np.asarray(b["cr"]), rel=1e-12, abs=0.0)
    assert ex_f == st_f > 0  # every sub-step explicit (DOP853), none Radau's


def test_steps_of_candidates_only_are_lean_and_bitwise_the_general_paths() -> None:
    R, M, h, K = 0.01, 0.05, 0.03, 1e5
    law = {"name": "zhang_sharf", "cr": 0.8, "k": K}
    balls = [(f"b{i}", R, M, (0.03 * i, 0.0, R + h)) for i in range(3)]
    runs = []
    for lean in (True, False):
        m, d = world(balls_xml(balls))
        contacts = MujocoContacts(m, d, manage=["floor"], law=law)
        if not lean:
            contacts._lean = False  # the general path for every step
        out, candidate_steps = [], 0
        for _ in range(200):  # 0.4 s: five bounces
            before = _lean_steps(contacts)
            info = contacts.step()
            if (_lean_steps(contacts) > before and info.contacts
                    and not len(contacts.loop.store)):
                candidate_steps += 1  # every pair within the margin, none touching
            out.append((d.qpos.copy(), d.qvel.copy(), info.normal_force.copy(),
                        info.delta.copy()))
        runs.append((contacts, out, candidate_steps))
    (lean, a, cand), (general, b, _) = runs
    assert cand >= 8  # before and after the landings (on land before mjland2: none)
    assert _lean_steps(lean) == len(a)  # the onsets and separations too (their events booked)
    assert _lean_steps(general) == 0
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            assert np.array_equal(u, v)
    rows = lean.bounces()
    assert np.array_equal(rows, general.bounces())
    errors = cr_errors(rows, make_law("zhang_sharf", k=K, cr=0.8), M, G)
    assert len(errors) >= 9  # three balls, three bounces each with v_in > 0.15 m/s
    assert np.all(errors < 1e-3)


def test_without_the_c_library_the_lean_path_calls_the_bindings(monkeypatch) -> None:
    with_c, q_c = _drop(True)
    assert with_c._lean.fns is not None  # the package's C library, its version the bindings'
    monkeypatch.setattr(capi, "_LOADED", {})
    monkeypatch.setattr(capi, "library_paths", lambda mj: [])  # no library file found
    without, q_b = _drop(True)
    assert without._lean.fns is None and _lean_steps(without) > 250
    assert np.array_equal(q_b, q_c)


def test_with_a_python_callback_the_lean_path_calls_the_bindings() -> None:
    with_c, q_c = _drop(True)
    assert with_c._lean.c_steps == _lean_steps(with_c) > 250
    calls = []
    m, d = world(balls_xml([("ball", 0.01, 0.05, (0.0, 0.0, 0.01 + 0.05))]))  # _drop's
    contacts = MujocoContacts(m, d, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.6, "k": 1e5})
    q_b = []
    mujoco.set_mjcb_control(lambda m, d: calls.append(1))  # (sets nothing)
    try:
        for _ in range(300):
            contacts.step()
            q_b.append(d.qpos.copy())
    finally:
        mujoco.set_mjcb_control(None)
    assert calls and _lean_steps(contacts) > 250 and contacts._lean.c_steps == 0
    assert np.array_equal(np.array(q_b), q_c)


class _OtherVersion:
    """The ``mujoco`` package as the loader sees it, but bindings of another version."""

    __file__ = mujoco.__file__

    @staticmethod
    def mj_version() -> int:
        return mujoco.mj_version() + 1


def test_the_loader_refuses_a_library_of_another_version() -> None:
    assert capi.library_paths(mujoco)
    assert capi._open(mujoco) is not None
    assert capi._open(_OtherVersion) is None
