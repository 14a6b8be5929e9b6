"""The PyBullet facts the backend's fewer calls per host step rest on, checked against PyBullet
itself (mbplugin.bullet.articulated, rows, host).

A verification round of the implicit step puts the robot onto its corrected state with
PyBullet's resets and reads it again. Instead of asking PyBullet for what it has just set, it
keeps the joint positions and velocities and the base velocities it passed to the resets, and
reads the links of the bodies it reset without ``computeForwardKinematics``. That is the same
only if (a) ``resetJointStatesMultiDof`` then ``getJointStates`` returns exactly the floats
given, (b) ``resetBaseVelocity`` then ``getBaseVelocity`` too, and (c) a reset leaves the link
poses and velocities at PyBullet's forward kinematics of the new joints (PyBullet's
``CMD_INIT_POSE`` runs ``btMultiBody::forwardKinematics``). The base orientation is not
round-trip exact (PyBullet stores it as a matrix): it is read again, and (d) checks that
this is needed. Last, a backend run with the held values equals one that reads everything
from PyBullet at every round, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pytest
import robot_rig as rr
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.bullet.articulated import BulletArticulated


def _links(cid: int, body: int, links: list[int], fk: int) -> list[tuple[float, ...]]:
    return [s[0] + s[1] + s[4] + s[6] + s[7] for s in p.getLinkStates(
        body, links, computeLinkVelocity=1, computeForwardKinematics=fk, physicsClientId=cid)]


@pytest.mark.parametrize("robot", ["a1", "laikago"])
def test_pybullet_resets_round_trip_exactly(robot: str, tmp_path) -> None:
    rng = np.random.default_rng(3)
    with ground_world(rr.G, 1 / 240) as (cid, _plane):
        h = rr.load(cid, rr.ROBOTS[robot], tmp_path)
        links = list(range(p.getNumJoints(h.body, physicsClientId=cid)))
        orn_exact = 0
        for _ in range(40):
            p.stepSimulation(physicsClientId=cid)
            st = p.getJointStates(h.body, h.joints, physicsClientId=cid)
            q = [s[0] + d for s, d in zip(st, rng.uniform(-1e-3, 1e-3, len(st)), strict=True)]
            v = [s[1] + d for s, d in zip(st, rng.uniform(-1e-2, 1e-2, len(st)), strict=True)]
            pos, orn = p.getBasePositionAndOrientation(h.body, physicsClientId=cid)
            vel, om = p.getBaseVelocity(h.body, physicsClientId=cid)
            turn = rng.uniform(-1e-3, 1e-3, 3)
            o = [orn[0] + turn[0], orn[1] + turn[1], orn[2] + turn[2], orn[3]]
            o = [x / math.sqrt(sum(y * y for y in o)) for x in o]
            vel1 = [x + d for x, d in zip(vel, rng.uniform(-1e-2, 1e-2, 3), strict=True)]
            om1 = [x + d for x, d in zip(om, rng.uniform(-1e-2, 1e-2, 3), strict=True)]
            # the respond's order: joints, base pose, base velocity
            p.resetJointStatesMultiDof(h.body, h.joints, [[x] for x in q], [[x] for x in v],
                                       physicsClientId=cid)
            p.resetBasePositionAndOrientation(h.body, [x + 1e-4 for x in pos], o,
                                              physicsClientId=cid)
            p.resetBaseVelocity(h.body, vel1, om1, physicsClientId=cid)
            st = p.getJointStates(h.body, h.joints, physicsClientId=cid)
            assert [s[0] for s in st] == q  # (a)
            assert [s[1] for s in st] == v
            vel2, om2 = p.getBaseVelocity(h.body, physicsClientId=cid)
            assert list(vel2) == vel1 and list(om2) == om1  # (b)
            # (c) the reset's forward kinematics: the same floats as the read that computes it
            assert _links(cid, h.body, links, 0) == _links(cid, h.body, links, 1)
            orn_exact += list(p.getBasePositionAndOrientation(h.body, physicsClientId=cid)[1]) == o
        # (d) the orientation is not returned as given (so the backend reads it again)
        assert orn_exact < 40


def test_held_states_give_the_run_of_fresh_reads(tmp_path, monkeypatch) -> None:
    """The A1 standing then trotting (0.25 s each) at 1/240 s: per step forces, overlaps and
    the base pose bit for bit those of a run in which every verification round reads the
    joints, base velocities and link kinematics from PyBullet (forget before each respond)."""
    spec = rr.ROBOTS["a1"]

    def run() -> tuple[np.ndarray, ...]:
        rec = rr.run(spec, tmp_path, 1 / 240, 0.5, t_gait=0.25)
        return (np.concatenate(rec["force"]), np.concatenate(rec["delta"]), rec["base"],
                rec["feet"])

    monkeypatch.setattr(BulletArticulated, "defer_resets", False)  # reset in every round
    held = run()
    respond = BulletArticulated.respond

    def fresh(self: BulletArticulated, *args: object, **kwargs: object) -> float:
        self.forget()
        return respond(self, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(BulletArticulated, "respond", fresh)
        rounds = []
        after = BulletContacts.after_step

        def count(self: BulletContacts, *a: object, **k: object) -> None:
            out = after(self, *a, **k)
            rounds.append(self._host.reads)
            return out

        m.setattr(BulletContacts, "after_step", count)
        ref = run()
    assert sum(r > 1 for r in rounds) > 10  # verification rounds happened
    for a, b in zip(held, ref, strict=True):
        assert np.array_equal(a, b)


def test_deferred_resets_give_the_run_of_immediate_ones(tmp_path, monkeypatch) -> None:
    """The A1 standing then trotting (0.25 s each) at 1/240 s with the resets of the
    verification rounds deferred to one per host step (their reads from the joint tree's
    forward kinematics, mbplugin.bullet.kinematics): per step forces, overlaps, the base
    pose and the feet within 1e-10 (relative to each record's largest) of a run that resets
    PyBullet and reads it in every round, with at most one reset of the joints per host
    step (the immediate run: more)."""
    spec = rr.ROBOTS["a1"]
    resets = []
    reset = p.resetJointStatesMultiDof

    def counted(*a: object, **k: object) -> object:
        resets[-1] += 1
        return reset(*a, **k)

    monkeypatch.setattr(p, "resetJointStatesMultiDof", counted)

    def run() -> tuple[np.ndarray, ...]:
        resets.append(0)
        rec = rr.run(spec, tmp_path, 1 / 240, 0.5, t_gait=0.25)
        return (np.concatenate(rec["force"]), np.concatenate(rec["delta"]), rec["base"],
                rec["feet"], rec["steps"])

    deferred = run()
    with monkeypatch.context() as m:
        m.setattr(BulletArticulated, "defer_resets", False)
        ref = run()
    steps = ref[-1]
    assert resets[0] <= steps < resets[1]
    for a, b in zip(deferred[:-1], ref[:-1], strict=True):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        assert np.abs(a - b).max() <= 1e-10 * np.abs(b).max()


def test_lean_rounds_give_the_run_of_the_general_ones(tmp_path, monkeypatch) -> None:
    """The A1 standing then trotting (0.25 s each) at 1/240 s with the implicit step's
    verification rounds in one compiled call (mbplugin.bullet.lean, taken at most steps):
    per step forces, overlaps, the base pose and the feet within 1e-10 (relative to each
    record's largest) of the run whose rounds all take the general path."""
    from mbplugin.bullet import host as bullet_host

    spec = rr.ROBOTS["a1"]
    taken = []
    lean = bullet_host.lean_rounds

    def counted(*a: object, **k: object) -> object:
        out = lean(*a, **k)
        taken.append(out is not None)
        return out

    def run() -> tuple[np.ndarray, ...]:
        rec = rr.run(spec, tmp_path, 1 / 240, 0.5, t_gait=0.25)
        return (np.concatenate(rec["force"]), np.concatenate(rec["delta"]), rec["base"],
                rec["feet"], rec["steps"])

    monkeypatch.setattr(bullet_host, "lean_rounds", counted)
    fast = run()
    with monkeypatch.context() as m:
        m.setattr(bullet_host.BulletHost, "verify_rounds", lambda self, *a: None)
        ref = run()
    assert sum(taken) > 0.8 * ref[-1]  # the lean rounds were taken at most steps
    for a, b in zip(fast[:-1], ref[:-1], strict=True):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        assert np.abs(a - b).max() <= 1e-10 * np.abs(b).max()


@pytest.mark.parametrize("robot", ["a1", "biped"])
def test_lean_detection_gives_the_contact_layers_contacts(robot, tmp_path) -> None:
    """A robot on managed ground (the A1; the biped's heel-and-toe feet: two spheres per
    link), stepped into stance: the managed plane-sphere contacts found in one compiled call
    (mbplugin.bullet.detection, Detection.lean) are the contact layer's detection of the same
    state with the managed pairs kept: the same keys, sides and laws, every field within
    1e-12 of its scale, at a wide and a narrow margin."""
    from mbplugin.hosts.model import keep_managed

    with ground_world(rr.G, 1 / 240) as (cid, plane):
        h = rr.load(cid, rr.ROBOTS[robot], tmp_path)
        contacts = BulletContacts(cid, manage=[(plane, (h.body, f)) for f in h.feet],
                                  law={"name": "hunt_crossley", "cr": 0.3},
                                  materials={plane: rr.RUBBER[0], h.body: rr.RUBBER[1]},
                                  friction={"mu": 0.8, "v_eps": 1e-3})
        for _ in range(60):
            contacts.step()
        det = contacts._detection
        bodies = contacts.body_state()
        pairs = det._lean
        assert pairs is not None  # the lean detection ran
        for margin in (1.0, 1e-4):
            ours = det.lean(bodies, margin, pairs)
            ref = keep_managed(contacts.model.detect(bodies, margin=margin), det.managed)
            assert len(ref) >= 2 and np.array_equal(ours.key, ref.key)
            for f in ("a", "b", "law"):
                assert np.array_equal(getattr(ours, f), getattr(ref, f))
            for f in ("point", "normal", "delta", "ddelta", "vt", "m_eff", "r_eff", "ra", "rb",
                      "k_hertz"):
                x, y = np.asarray(getattr(ours, f)), np.asarray(getattr(ref, f))
                assert np.abs(x - y).max() <= 1e-12 * max(np.abs(y).max(), 1e-3), f


@pytest.mark.parametrize("shape", ["box", "hull"])
def test_lean_detection_of_a_resting_box_and_hull(shape: str) -> None:
    """A free 1 kg box (or a cube given as a convex mesh hull) at rest on a managed plane
    (Hunt-Crossley k = 1e7, 1/240 s) takes the compiled lean detection (its 8 corners or its
    hull's plane features, with PyBullet's 1 mm collision margin as the model's skin): its
    4 lower corners each at the static Hertz overlap (m g / (4 k))^(2/3) (the closed form)
    to 1e-5 after 1 s, and its contacts those of the contact model's own detection at a wide
    and a narrow margin, every field to the bit (NaN radii of sharp corners alike)."""
    import trimesh

    from mbplugin.hosts.model import keep_managed

    k, m, g = 1e7, 1.0, 9.81
    with ground_world(g, 1 / 240) as (cid, plane):
        if shape == "box":
            col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.05],
                                         physicsClientId=cid)
        else:
            v = trimesh.creation.box(extents=[0.1, 0.1, 0.1]).vertices
            col = p.createCollisionShape(p.GEOM_MESH, vertices=v.tolist(), physicsClientId=cid)
        p.createMultiBody(m, col, basePosition=[0, 0, 0.05], physicsClientId=cid)
        contacts = BulletContacts(cid, manage=[plane],
                                  law={"name": "hunt_crossley", "cr": 0.5, "k": k})
        for _ in range(240):
            info = contacts.step()
        det = contacts._detection
        assert det._lean is not None  # the lean detection ran
        ds = (m * g / 4 / k) ** (2 / 3)
        assert info.contacts == 4
        assert np.allclose(np.asarray(info.delta), ds, rtol=1e-5, atol=0)
        bodies = contacts.body_state()
        for margin in (1.0, 1e-4):
            ours = det.lean(bodies, margin, det._lean)
            ref = keep_managed(contacts.model.detect(bodies, margin=margin), det.managed)
            assert len(ours) == len(ref) >= 4
            for f in ("a", "b", "key", "law", "point", "normal", "delta", "ddelta", "vt",
                      "m_eff", "r_eff", "ra", "rb", "k_hertz"):
                x, y = np.asarray(getattr(ours, f)), np.asarray(getattr(ref, f))
                assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f
