"""The engine's compiled evaluation of known pairs agrees with the contact layer's detection."""

from __future__ import annotations

import numpy as np

from mbplugin.contact import Box, ContactModel, Plane, Sphere
from mbplugin.contact import pairs as _pairs
from mbplugin.dynamics.bodies import make_bodies
from mbplugin.dynamics.contacts import EngineContacts
from mbplugin.dynamics.rotation import quat_from_rotvec


def test_compiled_pairs_match_detect() -> None:
    """Sphere-sphere, plane-sphere and plane-box corners, moving and rotating, with overlaps
    and gaps: delta, ddelta, normal, slip and lever arms equal ContactModel.detect's to
    round-off (one formula, two code paths)."""
    rng = np.random.default_rng(7)
    n = 6
    model = ContactModel()
    model.add_shape(Plane(normal=(0.1, -0.2, 1.0)), body=0)  # a tilted fixed floor
    for i in range(1, n - 1):
        model.add_shape(Sphere(0.05 + 0.01 * i), body=i, pos=(0.01, 0.0, -0.02))
    model.add_shape(Box((0.05, 0.04, 0.03)), body=n - 1)
    model.set_default_law({"name": "hertz", "k": 1e8})
    fixed = [True] + [False] * (n - 1)
    pos0 = rng.uniform(-0.08, 0.08, (n, 3)) + np.array([0.0, 0.0, 0.05])
    bodies = make_bodies([f"b{i}" for i in range(n)], [1.0] * n, [np.eye(3) * 1e-3] * n,
                         fixed=fixed, pos=pos0,
                         quat=quat_from_rotvec(rng.normal(size=(n, 3))),
                         vel=rng.normal(size=(n, 3)), omega=rng.normal(size=(n, 3)) * 5)
    ec = EngineContacts(model, bodies, margin=1.0)
    y = bodies.state_vector()
    batch = model.detect(ec.state_from_y(y), margin=1.0)
    sa, sb, feat = _pairs.decode_keys(batch.key, model.n_shapes)
    ptype = _pairs.pair_types(ec._kind, sa, sb)
    keep = ptype >= 0  # box-sphere pairs go through detect only
    assert set(ptype[keep]) == {_pairs.PAIR_SS, _pairs.PAIR_PS, _pairs.PAIR_PB}
    batch = batch.take(keep)
    sa, sb, feat, ptype = sa[keep], sb[keep], feat[keep], ptype[keep]
    assert len(batch) >= 10
    pos, R, vel, omega_w = ec._kin_from_y(y)
    a, b, d, v, nrm, vt, ra, rb = ec._geometry(ptype, sa, sb, feat, pos, R, vel, omega_w)
    np.testing.assert_array_equal(a, batch.a)
    np.testing.assert_array_equal(b, batch.b)
    np.testing.assert_allclose(d, batch.delta, rtol=0, atol=1e-14)
    np.testing.assert_allclose(v, batch.ddelta, rtol=0, atol=1e-12)
    np.testing.assert_allclose(nrm, batch.normal, rtol=0, atol=1e-14)
    np.testing.assert_allclose(vt, batch.vt, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rb, batch.rb, rtol=0, atol=1e-14)
    np.testing.assert_allclose(ra, batch.ra, rtol=0, atol=1e-14)


def test_detect_pairs_equals_detect() -> None:
    """The known-pair detection (no broad phase) reports the same contacts with the same
    fields as the full detection, for sphere-sphere, plane-sphere and plane-box pairs."""
    rng = np.random.default_rng(11)
    n = 5
    model = ContactModel()
    model.add_shape(Plane(normal=(0.0, 0.1, 1.0)), body=0)
    for i in range(1, n - 1):
        model.add_shape(Sphere(0.04 + 0.01 * i), body=i)
    model.add_shape(Box((0.05, 0.04, 0.03)), body=n - 1)
    model.set_default_law({"name": "hertz", "k": 1e8})
    bodies = make_bodies([f"b{i}" for i in range(n)], [1.0] * n, [np.eye(3) * 1e-3] * n,
                         fixed=[True] + [False] * (n - 1),
                         pos=rng.uniform(-0.05, 0.05, (n, 3)) + np.array([0.0, 0.0, 0.03]),
                         quat=quat_from_rotvec(rng.normal(size=(n, 3))),
                         vel=rng.normal(size=(n, 3)), omega=rng.normal(size=(n, 3)))
    ec = EngineContacts(model, bodies)
    state = ec.state_from_y(bodies.state_vector())
    every = model.detect(state, margin=1e6).key  # every pair of the model (box-sphere too)
    sa, sb, _ = _pairs.decode_keys(every, model.n_shapes)
    every = every[_pairs.pair_types(ec._kind, sa, sb) >= 0]
    full = model.detect(state, margin=0.01)
    full = full.take(np.isin(full.key, every))
    known = model.detect_pairs(state, every, margin=0.01)
    assert len(full) >= 4
    o1, o2 = np.argsort(full.key), np.argsort(known.key)
    np.testing.assert_array_equal(full.key[o1], known.key[o2])
    for f in ("delta", "ddelta", "m_eff", "r_eff", "k_hertz"):
        np.testing.assert_array_equal(getattr(full, f)[o1], getattr(known, f)[o2])
    for f in ("point", "normal", "vt", "ra", "rb"):
        np.testing.assert_array_equal(getattr(full, f)[o1], getattr(known, f)[o2])



def _one_pair_batches_match(model: ContactModel, bodies, rng) -> int:
    """Compare ``_pair_batch`` with ``detect_pairs`` for every touching watched pair at three
    velocity states; returns the number of pairs compared per state."""
    ec = EngineContacts(model, bodies)
    y0 = bodies.state_vector()
    ec.watch(0.0, y0)
    assert ec._w_geo is not None  # every pair has a compiled path
    n = len(bodies)
    count = 0
    for _ in range(3):
        y = y0.copy()
        y[7 * n : 13 * n] += rng.normal(size=6 * n)  # other velocities, the same poses
        state = ec.state_from_y(y)
        count = 0
        for j in range(len(ec._wkeys)):
            ref = model.detect_pairs(state, ec._wkeys[j : j + 1], ec.margin)
            if len(ref) != 1 or not ref.delta[0] > 0:
                continue
            count += 1
            got = ec._pair_batch(y, j)
            for f in ("key", "a", "b", "law", "r_eff", "k_hertz"):
                np.testing.assert_array_equal(getattr(got, f), getattr(ref, f))
            for f, tol in (("delta", 1e-15), ("ddelta", 1e-12), ("normal", 1e-15),
                           ("vt", 1e-12), ("ra", 1e-15), ("rb", 1e-15), ("point", 1e-15)):
                np.testing.assert_allclose(getattr(got, f), getattr(ref, f), rtol=0, atol=tol)
            np.testing.assert_allclose(got.m_eff, ref.m_eff, rtol=1e-13)
    return count


def test_onset_batch_of_one_pair_equals_detect_pairs() -> None:
    """The one-pair batch an engine books a lone onset with (``EngineContacts._pair_batch``:
    the pair's constants from its first detection, then the compiled geometry and effective
    mass) equals ``detect_pairs``' batch at other states: the corners of a tilted box with
    unequal principal inertias on a plane (m_eff depends on the orientation), a sphere on a
    plane, two spheres."""
    rng = np.random.default_rng(5)
    box = ContactModel()
    box.add_shape(Plane(normal=(0.0, 0.2, 1.0)), body=0)
    box.add_shape(Box((0.05, 0.03, 0.02)), body=1)
    box.set_default_law({"name": "hertz", "k": 1e8})
    bodies = make_bodies(["floor", "box"], [1.0, 2.0], [np.eye(3), np.diag([1e-3, 4e-3, 9e-3])],
                         fixed=[True, False], pos=np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.015]]),
                         quat=quat_from_rotvec(np.array([[0.0] * 3, [0.5, -0.4, 0.3]])))
    assert _one_pair_batches_match(box, bodies, rng) >= 2  # corners below the plane
    balls = ContactModel()
    balls.add_shape(Plane(normal=(0.0, 0.2, 1.0)), body=0)
    balls.add_shape(Sphere(0.05), body=1, pos=(0.0, 0.01, 0.0))  # off the centre of mass
    balls.add_shape(Sphere(0.04), body=2)
    balls.set_default_law({"name": "hertz", "k": 1e8})
    bodies = make_bodies(["floor", "b1", "b2"], [1.0, 0.7, 1.3],
                         [np.eye(3), np.diag([1e-3, 2e-3, 3e-3]), np.eye(3) * 2e-3],
                         fixed=[True, False, False],
                         pos=np.array([[0.0, 0.0, 0.0], [0.0, -0.01, 0.048], [0.0, 0.0, 0.135]]),
                         quat=quat_from_rotvec(np.array([[0.0] * 3, [0.3, 0.1, 0.0],
                                                         [0.0, 0.2, 0.5]])))
    assert _one_pair_batches_match(balls, bodies, rng) == 2  # b1 on the floor, b1 on b2


def test_begin_after_pack_with_active_contacts_keeps_the_state_layout() -> None:
    """``EngineContacts.begin`` on a state packed while contacts with ODE states are active
    (``World.pack`` after a run) replaces their ODE states: the state keeps the layout
    bodies (13 n) + ODE states of the rows now registered + work integrals, and the bodies'
    part is unchanged (a ball pressed into the floor, Bouc-Wen-Hunt-Crossley: one state)."""
    from mbplugin.dynamics.integrators import N_WORK
    from mbplugin.scene import build_scene

    r = 0.01
    doc = {
        "scene": {"duration": 1e-4},
        "world": {"gravity": [0.0, 0.0, -9.81]},
        "materials": {"steel": {"E": 210e9, "nu": 0.3, "density": 7800.0}},
        "integrator": {"method": "adaptive", "rtol": 1e-6},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True, "material": "steel"},
            {"name": "ball", "shape": "sphere", "radius": r, "material": "steel",
             "position": [0.0, 0.0, r - 1e-7]},
        ],
        "contact": {"law": "bouc_wen_hunt_crossley", "params": {"k": 1e10}},
    }
    scene = build_scene(doc)
    scene.run()
    world, contacts = scene.world, scene.world.contacts
    assert contacts.n_active == 1 and contacts.ns == 1
    y = world.pack()
    n13 = 13 * world.n
    assert len(y) == n13 + 1 + N_WORK
    y1 = contacts.begin(0.0, y)
    assert contacts.n_active == 1
    assert len(y1) == n13 + contacts.n_ode + N_WORK
    np.testing.assert_array_equal(y1[:n13], y[:n13])
    assert y1[n13] == 0.0  # a new contact starts clean (zeta = 0)
