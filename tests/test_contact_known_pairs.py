"""Known-pair detection (no broad phase) against the full detection, for every pair type.

:meth:`ContactModel.detect_pairs` runs the narrow phase on the shape pairs named by contact keys;
:meth:`ContactModel.detect` runs the broad phase first. On the same pairs both must give the
same contacts with the same fields (one narrow phase, two entry points): integer fields exactly,
floating ones to a few ulps (NumPy's vectorised kernels may round the last bit differently for
batches of other lengths; any formula difference would show at 1e-3 or more).
"""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from mbplugin.contact import (
    Box,
    Capsule,
    ContactModel,
    CylindricalHole,
    Plane,
    Sphere,
    SphericalHole,
)
from mbplugin.contact.kernels import decode_keys
from mbplugin.contact.mesh import Mesh
from mbplugin.contact.model import BOX, CAPSULE, CYLINDER_HOLE, MESH, PLANE, SPHERE, SPHERE_HOLE
from mbplugin.dynamics.bodies import make_bodies
from mbplugin.dynamics.contacts import EngineContacts
from mbplugin.dynamics.rotation import quat_from_rotvec

EXACT = ("a", "b", "key", "law")
FIELDS = ("point", "normal", "delta", "ddelta", "vt", "m_eff", "r_eff", "ra", "rb", "k_hertz")


def _model() -> ContactModel:
    model = ContactModel()
    model.add_material("steel", E=210e9, nu=0.3, rho=7800)
    model.add_shape(Plane(normal=(0.05, -0.1, 1.0)), body=0, material="steel")
    ball = trimesh.creation.icosphere(subdivisions=2, radius=0.03)
    model.add_shape(Mesh(ball, radius=0.03), body=1, material="steel")
    model.add_shape(Sphere(0.025), body=2, material="steel")
    model.add_shape(Capsule(0.015, 0.03), body=3, material="steel")
    model.add_shape(Box((0.03, 0.02, 0.015)), body=4, material="steel", pos=(0.0, 0.01, 0.0))
    model.add_shape(Sphere(0.02), body=5, material="steel")
    model.add_shape(Mesh(trimesh.creation.box((0.04, 0.03, 0.03))), body=6, material="steel")
    model.add_shape(SphericalHole(0.06), body=7, material="steel")
    model.add_shape(CylindricalHole(0.05), body=8, material="steel")
    model.set_default_law({"name": "hunt_crossley", "cr": 0.8})
    return model


def _state(ec: EngineContacts, n: int, rng: np.random.Generator):
    pos = rng.uniform(-0.035, 0.035, (n, 3)) + np.array([0.0, 0.0, 0.025])
    pos[0] = 0.0
    b = make_bodies([f"b{i}" for i in range(n)], [0.1] * n, [np.eye(3) * 1e-5] * n,
                    fixed=[True] + [False] * (n - 1), pos=pos,
                    quat=quat_from_rotvec(rng.normal(size=(n, 3))),
                    vel=rng.normal(size=(n, 3)), omega=rng.normal(size=(n, 3)) * 5)
    return ec.state_from_y(b.state_vector())


def test_detect_pairs_equals_detect_for_every_pair_type() -> None:
    """At random poses of a plane, a mesh ball, spheres, a capsule, a box, a box mesh and two
    holes, the known-pair detection of the keys the full detection found reports the same
    contacts, field by field, for margins 0 and 5 mm; with ``all_features`` from one key per
    shape pair it still finds every feature (capsule ends, box corners), and from the broad
    phase's candidate keys alone every contact."""
    model = _model()
    n = 9
    bodies0 = make_bodies([f"b{i}" for i in range(n)], [0.1] * n, [np.eye(3) * 1e-5] * n,
                          fixed=[True] + [False] * (n - 1))
    ec = EngineContacts(model, bodies0)
    rng = np.random.default_rng(3)
    seen: set[tuple[int, int]] = set()
    for _ in range(12):
        state = _state(ec, n, rng)
        for margin in (0.0, 0.005):
            full = model.detect(state, margin)
            if not len(full):
                continue
            known = model.detect_pairs(state, full.key, margin)
            o1, o2 = np.argsort(full.key), np.argsort(known.key)
            for f in EXACT:
                np.testing.assert_array_equal(getattr(full, f)[o1], getattr(known, f)[o2],
                                              err_msg=f)
            for f in FIELDS:
                np.testing.assert_allclose(getattr(known, f)[o2], getattr(full, f)[o1],
                                           rtol=1e-14, atol=1e-17, err_msg=f)
            sa, sb, _ = decode_keys(full.key, model.n_shapes)
            kind = model.arrays.kind
            seen |= set(zip(kind[sa].tolist(), kind[sb].tolist(), strict=True))
            # one key per shape pair: all_features recovers the other features
            pair = sa * model.n_shapes + sb
            _, first = np.unique(pair, return_index=True)
            every = model.detect_pairs(state, full.key[first], margin, all_features=True)
            np.testing.assert_array_equal(np.sort(every.key), np.sort(full.key))
            # the broad phase alone, then the narrow phase: detect in two steps
            two = model.detect_pairs(state, model.candidate_keys(state, margin), margin,
                                     all_features=True)
            np.testing.assert_array_equal(np.sort(two.key), np.sort(full.key))
    for pair in ((PLANE, MESH), (MESH, SPHERE), (PLANE, CAPSULE), (CAPSULE, SPHERE),
                 (PLANE, BOX), (BOX, SPHERE), (SPHERE, SPHERE), (PLANE, SPHERE),
                 (SPHERE_HOLE, SPHERE), (CYLINDER_HOLE, SPHERE)):
        assert pair in seen, pair
    # python-fcl pairs (mesh-mesh, mesh-box, capsule-box, capsule-mesh) took part too
    assert seen & {(CAPSULE, BOX), (BOX, MESH), (CAPSULE, MESH), (MESH, MESH)}


def test_detect_pairs_only_reports_the_given_keys() -> None:
    """Without ``all_features`` only the named keys come back (one capsule end, one box corner);
    a key naming a shape the model does not have, or a pair in an order the detection never
    reports, is an error."""
    model = _model()
    n = 9
    bodies0 = make_bodies([f"b{i}" for i in range(n)], [0.1] * n, [np.eye(3) * 1e-5] * n,
                          fixed=[True] + [False] * (n - 1))
    ec = EngineContacts(model, bodies0)
    state = _state(ec, n, np.random.default_rng(5))
    full = model.detect(state, 1.0)
    some = full.key[::3]
    got = model.detect_pairs(state, some, 1.0)
    np.testing.assert_array_equal(np.sort(got.key), np.sort(some))
    with pytest.raises(ValueError, match="shape"):
        model.detect_pairs(state, np.array([(10**6) << 20]), 0.0)
    # (sphere 2, plane 0): the plane is always shape a of its pairs
    with pytest.raises(ValueError, match="not a pair detect reports"):
        model.detect_pairs(state, np.array([(2 * model.n_shapes + 0) << 20]), 0.0)
