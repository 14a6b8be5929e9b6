"""The robot's implicit step begun in one compiled call and solved after the host step without
the general closures (mbplugin.bullet.fused): the same run, to the bit, as the general path
they replace, and taken at the steps they are for."""

from __future__ import annotations

import numpy as np
import pytest
import robot_rig as rr

from mbplugin.bullet import backend


def test_fused_begin_gives_the_general_run_to_the_bit(tmp_path, monkeypatch) -> None:
    """The A1 standing then trotting (0.25 s each) at 1/240 s: per step the contacts' keys,
    forces, overlaps and slips, the base's pose and the feet are bitwise those of the run in
    which every step begins on the general path (HostStep.step) and is solved by
    BulletHost.solve; the fused begin and after_lean took every step with a contact but the
    first (the contacts carried the robot: the run's mean sum of F_N within 5 % of its weight,
    by momentum balance)."""
    spec = rr.ROBOTS["a1"]
    taken, after = [], []
    fused, fused_after = backend.begin_lean, backend.after_lean

    def counted(*a: object) -> object:
        out = fused(*a)
        taken.append(out is not None)
        return out

    def counted_after(*a: object) -> bool:
        out = fused_after(*a)
        after.append(out)
        return out

    def run() -> dict:
        return rr.run(spec, tmp_path, 1 / 240, 0.5, t_gait=0.25)

    monkeypatch.setattr(backend, "begin_lean", counted)
    monkeypatch.setattr(backend, "after_lean", counted_after)
    fast = run()
    with monkeypatch.context() as m:
        m.setattr(backend, "begin_lean", lambda *a: None)
        m.setattr(backend, "after_lean", lambda *a: False)
        ref = run()
    with_contacts = sum(len(k) > 0 for k in fast["keys"])
    # (the first step with a contact reads the joint tree on the general path)
    assert sum(taken) >= with_contacts - 1 > 0.8 * fast["steps"]
    assert sum(after) >= with_contacts - 1
    # momentum balance: the mean normal force over the run carries the weight
    mean = np.mean([f.sum() for f in fast["force"]]) / fast["weight"]
    assert abs(mean - 1.0) < 0.05
    for name in ("keys", "force", "delta", "slip"):
        for a, b in zip(fast[name], ref[name], strict=True):
            assert np.array_equal(a, b), name
    for name in ("base", "feet", "tilt"):
        assert np.array_equal(fast[name], ref[name]), name


@pytest.mark.parametrize("robot", ["a1", "biped"])
def test_quiet_commits_book_the_store_as_the_general_commit(robot, tmp_path,
                                                            monkeypatch) -> None:
    """The A1 standing then trotting (0.25 s each) at 1/240 s, and the biped on its
    heel-and-toe feet (onsets booked inside the lean rounds): the store's commits tested
    inside the fused calls (begin_body, rounds_end) and booked quietly (rows_booked; with a
    swing foot within the margin, apart_booked) leave the store's events (onsets,
    separations), its bounces and each step's contacts, forces, overlaps and slips bitwise
    those of the run in which every commit goes through ContactStore.commit_rows; the quiet
    bookings took most commits, the swing-foot case among them."""
    from mbplugin.pipeline.store import ContactStore

    spec = rr.ROBOTS[robot]
    booked: dict[str, int] = {"rows": 0, "apart": 0}
    stores: list[ContactStore] = []
    rows_booked, apart_booked = ContactStore.rows_booked, ContactStore.apart_booked
    test_args = ContactStore.rows_test_args

    def counted(name: str, f: object) -> object:
        def wrapped(self: ContactStore, *a: object) -> None:
            booked[name] += 1
            f(self, *a)  # type: ignore[operator]
        return wrapped

    def kept(general: bool) -> object:
        def wrapped(self: ContactStore, batch: object) -> object:
            if not stores or stores[-1] is not self:
                stores.append(self)
            return None if general else test_args(self, batch)
        return wrapped

    def run() -> tuple[dict, ContactStore]:
        stores.clear()
        rec = rr.run(spec, tmp_path, 1 / 240, 0.5, t_gait=0.25)
        return rec, stores[-1]

    monkeypatch.setattr(ContactStore, "rows_booked", counted("rows", rows_booked))
    monkeypatch.setattr(ContactStore, "apart_booked", counted("apart", apart_booked))
    monkeypatch.setattr(ContactStore, "rows_test_args", kept(False))
    fast, store_fast = run()
    quiet = dict(booked)
    with monkeypatch.context() as m:
        m.setattr(ContactStore, "rows_test_args", kept(True))
        ref, store_ref = run()
    assert quiet["rows"] + quiet["apart"] > 1.6 * fast["steps"]  # two commits per step
    assert quiet["apart"] > 0
    assert len(store_fast.onsets) > 0  # the feet touched down (the events are not empty)
    for a, b in ((store_fast.onsets, store_ref.onsets),
                 (store_fast.separations, store_ref.separations),
                 (store_fast.bounces(), store_ref.bounces())):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    for name in ("keys", "force", "delta", "slip"):
        for a, b in zip(fast[name], ref[name], strict=True):
            assert np.array_equal(a, b), name


def test_lean_detection_refuses_a_non_finite_state(tmp_path) -> None:
    """The lean detection's one compiled call (fast_step.valid_plane_sphere_contacts: the
    state's fast accept and the contacts) hands a non-finite state to the contact layer's
    checks: the A1 standing, then its base velocity set to NaN in PyBullet; the next host step
    raises the contact layer's ParameterError naming the non-finite value, before any force
    is applied (PyBullet's state is left as the user set it)."""
    import pybullet as p
    from bullet_world import ground_world

    from mbplugin.bullet import BulletContacts
    from mbplugin.bullet.fast_step import valid_plane_sphere_contacts
    from mbplugin.errors import ParameterError

    spec = rr.ROBOTS["a1"]
    with ground_world(rr.G, 1 / 240) as (cid, plane):
        h = rr.load(cid, spec, tmp_path)
        ground, foot = rr.RUBBER
        contacts = BulletContacts(cid, manage=[(plane, (h.body, f)) for f in h.feet],
                                  law={"name": "hunt_crossley", "cr": 0.3},
                                  materials={plane: ground, h.body: foot}, rtol=1e-8,
                                  friction=rr.FRICTION)
        for _ in range(5):
            contacts.step()
        assert contacts._detection._lean is not None  # (the lean detection's case)
        assert valid_plane_sphere_contacts.signatures  # (taken: compiled for this run)
        p.resetBaseVelocity(h.body, [float("nan"), 0.0, 0.0], [0.0, 0.0, 0.0],
                            physicsClientId=cid)
        with pytest.raises(ParameterError, match="not finite"):
            contacts.step()
        v, _ = p.getBaseVelocity(h.body, physicsClientId=cid)
        assert np.isnan(v[0])


def test_fused_base_rotation_is_pybullets_matrix(tmp_path, monkeypatch) -> None:
    """The base's rotation the fused begin computes inside its compiled call (begin_body,
    for W's Jacobians and the lean rounds' response) is PyBullet's own
    ``getMatrixFromQuaternion`` of the base orientation PyBullet holds at that step, to the
    bit: the A1 standing then trotting (0.25 s each) at 1/240 s, every step the fused begin
    took (most of them)."""
    import pybullet as p

    spec = rr.ROBOTS["a1"]
    fused = backend.begin_lean
    seen: list[tuple[np.ndarray, np.ndarray]] = []

    def checked(core: object, host: object, *a: object) -> object:
        out = fused(core, host, *a)
        if out is not None:
            body, r_base, _ = core._art[0].tag  # type: ignore[attr-defined]
            cid = host.art.client.id  # type: ignore[attr-defined]
            orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)[1]
            ref = np.array(p.getMatrixFromQuaternion(orn, physicsClientId=cid)).reshape(3, 3)
            seen.append((r_base.copy(), ref))
        return out

    monkeypatch.setattr(backend, "begin_lean", checked)
    rec = rr.run(spec, tmp_path, 1 / 240, 0.5, t_gait=0.25)
    assert len(seen) > 0.8 * rec["steps"]
    for ours, ref in seen:
        assert np.array_equal(ours, ref)
    # the base turned over the run (not one orientation checked again and again)
    assert max(np.abs(o - seen[0][0]).max() for o, _ in seen) > 1e-6


#: the user's call between two host steps -> joint reads the next begin makes (the kept joint
#: state yields to every reset: 1; a velocity-only reset leaves the positions it keeps: 0;
#: a base teleport is read again once too: begin_body's link check reports the kept state
#: stale after ``resetBasePositionAndOrientation`` (measured on the A1), the safe side;
#: ``refresh()`` after ``changeDynamics`` builds a new articulated model with no kept state,
#: and its first step takes the general path, which reads the joints itself: 0 here)
_RESETS = {"joint": 1, "base": 1, "both": 1, "velocity": 0, "multidof": 1, "dynamics": 0}


@pytest.mark.parametrize("change", list(_RESETS))
def test_kept_joint_state_yields_to_the_users_reset(change, tmp_path, monkeypatch) -> None:
    """The fused begin takes the joint positions the last host step's lean end left in
    PyBullet instead of reading them (fused._KNOWN, checked against the state read's links in
    begin_body): the A1 standing on PyBullet's position motors; every step's W is built on
    PyBullet's own mass matrix
    (``calculateMassMatrix`` at the joint positions PyBullet holds, each entry within 1e-9 of
    sqrt(M_ii M_jj)), on steps where no joint was read and on the step after the user, between
    two steps, reset a knee by 0.1 rad (``resetJointState``; ``resetJointStatesMultiDof``),
    teleported and turned the base (``resetBasePositionAndOrientation``), both, set a knee's
    velocity alone (``resetJointState`` at its position) or made a calf 30 % heavier
    (``changeDynamics``, then ``refresh()``; the reads only): there the joints are read again
    (_RESETS)."""
    import pybullet as p
    from bullet_world import ground_world

    from mbplugin.bullet import BulletContacts, fused

    reads = []
    joint_read = fused._joint_read

    def counted(*a: object) -> object:
        reads.append(1)
        return joint_read(*a)

    monkeypatch.setattr(fused, "_joint_read", counted)
    spec = rr.ROBOTS["a1"]
    with ground_world(rr.G, 1 / 240) as (cid, plane):
        h = rr.load(cid, spec, tmp_path)
        ground, foot = rr.RUBBER
        contacts = BulletContacts(cid, manage=[(plane, (h.body, f)) for f in h.feet],
                                  law={"name": "hunt_crossley", "cr": 0.3},
                                  materials={plane: ground, h.body: foot}, rtol=1e-8,
                                  friction=rr.FRICTION)
        joints = contacts._host.art.moving_joints(h.body)
        # PyBullet's motors hold the standing pose (their torques: the held joints of W)
        p.setJointMotorControlArray(h.body, h.joints, p.POSITION_CONTROL,
                                    targetPositions=h.targets.tolist(),
                                    forces=[40.0] * len(h.joints), physicsClientId=cid)
        checked, kept = 0, 0
        knee = joints[2]
        for i in range(80):
            if i == 60:
                q0 = p.getJointState(h.body, knee, physicsClientId=cid)[0]
                if change in ("joint", "both"):
                    p.resetJointState(h.body, knee, q0 + 0.1, physicsClientId=cid)
                if change == "multidof":
                    p.resetJointStatesMultiDof(h.body, [knee], [[q0 + 0.1]],
                                               physicsClientId=cid)
                if change == "velocity":
                    p.resetJointState(h.body, knee, q0, 1.0, physicsClientId=cid)
                    assert p.getJointState(h.body, knee, physicsClientId=cid)[1] == 1.0
                if change == "dynamics":
                    m0 = p.getDynamicsInfo(h.body, knee, physicsClientId=cid)[0]
                    p.changeDynamics(h.body, knee, mass=1.3 * m0, physicsClientId=cid)
                    contacts.refresh()
                    assert contacts._host.art not in fused._KNOWN  # (nothing kept)
                if change in ("base", "both"):
                    pos, orn = p.getBasePositionAndOrientation(h.body, physicsClientId=cid)
                    turn = p.getQuaternionFromEuler([0.0, 0.0, 0.3])
                    _, orn2 = p.multiplyTransforms([0, 0, 0], turn, [0, 0, 0], orn)
                    p.resetBasePositionAndOrientation(h.body, [pos[0] + 0.2, pos[1], pos[2]],
                                                      orn2, physicsClientId=cid)
            n_reads = len(reads)
            info = contacts.before_step()
            q = [s[0] for s in p.getJointStates(h.body, joints, physicsClientId=cid)]
            # (after changeDynamics, PyBullet's calculateMassMatrix keeps the old masses: its
            # inverse-dynamics tree is cached; W follows the new ones, as stepSimulation does:
            # tests/test_bullet_mass_change.py. The reads are checked here)
            if change == "dynamics" and i >= 60:
                if i == 60:
                    assert len(reads) == n_reads + _RESETS[change], change
            elif info.contacts and contacts.core._one_body:
                theirs = np.array(p.calculateMassMatrix(h.body, q, physicsClientId=cid))
                ours = contacts.core._art[0].mass_matrix
                scale = np.sqrt(np.outer(np.diag(theirs), np.diag(theirs)))
                assert (np.abs(ours - theirs) / scale).max() < 1e-9, i
                checked += 1
                kept += len(reads) == n_reads
                if i == 60:
                    assert len(reads) == n_reads + _RESETS[change], change
            p.stepSimulation(physicsClientId=cid)
            contacts.after_step()
        assert checked > (40 if change == "dynamics" else 60) and kept > 40
