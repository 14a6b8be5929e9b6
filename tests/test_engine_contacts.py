"""The engine's compiled evaluation of known pairs agrees with the contact layer's detection."""

from __future__ import annotations

import numpy as np

from mbplugin.contact import Box, ContactModel, Plane, Sphere
from mbplugin.dynamics.bodies import make_bodies
from mbplugin.dynamics.contacts import EngineContacts
from mbplugin.dynamics.rotation import quat_from_rotvec
from mbplugin.pipeline import pairs as _pairs


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
