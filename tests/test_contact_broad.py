"""Broad phase: the same pairs and contacts as an O(N^2) search; scaling of the work."""

from __future__ import annotations

import numpy as np
import pytest

from mbplugin.contact import BodyState, ContactModel, Plane, Sphere
from mbplugin.contact.broad import brute_force_pairs, sphere_pairs


def packed(n, radius, fraction, seed):
    rng = np.random.default_rng(seed)
    side = (n * 4 / 3 * np.pi * np.mean(radius**3) / fraction) ** (1 / 3)
    return rng.uniform(0, side, (n, 3)), side


def brute_reference(c, r, margin=0.0):
    """Independent reference: all pairs by a dense distance matrix (chunked NumPy)."""
    out = []
    sq = np.einsum("ij,ij->i", c, c)
    for s in range(0, len(c), 1000):
        # |ci - cj|^2 = |ci|^2 + |cj|^2 - 2 ci.cj (no pair here is within 1e-12 of touching)
        d2 = sq[s:s + 1000, None] + sq[None, :] - 2.0 * (c[s:s + 1000] @ c.T)
        reach = r[s:s + 1000, None] + r[None, :] + margin
        i, j = np.nonzero(d2 < reach * reach)
        i = i + s
        keep = i < j
        out.append(np.stack([i[keep], j[keep]], axis=1))
    pairs = np.concatenate(out)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


@pytest.fixture(scope="module")
def bed():
    """10,000 spheres of radius 5 mm at volume fraction 0.3, and their brute-force pairs."""
    n = 10000
    r = np.full(n, 0.005)
    c, _ = packed(n, r, 0.3, seed=1)
    return c, r, brute_reference(c, r)


def test_ten_thousand_spheres_same_pairs_as_brute_force(bed):
    c, r, ref = bed
    i, j = sphere_pairs(c, r)
    assert len(ref) > 5000  # a dense bed: the comparison is not vacuous
    assert np.array_equal(np.stack([i, j], axis=1), ref)
    bi, bj = brute_force_pairs(c, r)
    assert np.array_equal(np.stack([bi, bj], axis=1), ref)


def test_polydisperse_with_a_few_giants_and_margin():
    rng = np.random.default_rng(2)
    n = 3000
    r = rng.uniform(0.002, 0.006, n)
    r[:5] = [0.2, 0.15, 0.1, 0.3, 0.05]  # a few much larger shapes (separate query path)
    c, _ = packed(n, np.full(n, 0.004), 0.2, seed=3)
    for margin in (0.0, 0.002):
        i, j = sphere_pairs(c, r, margin=margin)
        ref = brute_reference(c, r, margin)
        assert np.array_equal(np.stack([i, j], axis=1), ref)


def test_model_contact_set_matches_brute_force_on_ten_thousand_spheres(bed):
    c0, r, ref = bed
    n, rad = len(r), float(r[0])
    c = c0 + np.array([0.0, 0.0, 0.9 * rad])  # rigid shift: same pairs, some touch z = 0
    model = ContactModel()
    model.add_shape(Plane(), -1)
    for k in range(n):
        model.add_shape(Sphere(rad), k)
    model.set_default_law({"name": "hooke", "k": 1.0})
    batch = model.detect(BodyState.create(c, mass=1.0, inertia=[1.0] * 3))
    pairs = batch.a >= 0
    got = np.stack([batch.a[pairs], batch.b[pairs]], axis=1)
    got = got[np.lexsort((got[:, 1], got[:, 0]))]
    assert np.array_equal(got, ref)
    ground = np.sort(batch.b[~pairs])
    assert np.array_equal(ground, np.flatnonzero(c[:, 2] < rad))
    assert np.all(batch.delta > 0)
    assert len(set(batch.key)) == len(batch)


def test_empty_and_tiny_inputs():
    i, j = sphere_pairs(np.zeros((1, 3)), np.ones(1))
    assert len(i) == 0 and len(j) == 0
    i, j = sphere_pairs(np.array([[0, 0, 0], [1.5, 0, 0]]), np.array([1.0, 1.0]))
    assert list(zip(i, j, strict=True)) == [(0, 1)]
    i, j = sphere_pairs(np.array([[0, 0, 0], [2.0, 0, 0]]), np.array([1.0, 1.0]))
    assert len(i) == 0  # touching exactly is not overlapping (strict inequality)


@pytest.mark.parametrize("n", [2000, 16000])
def test_candidate_work_is_linear_in_n(n):
    # At fixed density the number of pairs per sphere is a constant: the output (and the work
    # of the k-d tree queries) is O(N). Expected pairs per sphere for a Poisson bed of volume
    # fraction phi with radius r: (1/2) * phi/(4/3 pi r^3) * 4/3 pi (2r)^3 = 4 phi.
    rad = 0.005
    c, _ = packed(n, np.full(n, rad), 0.1, seed=5)
    i, _ = sphere_pairs(c, np.full(n, rad))
    per = len(i) / n
    assert per == pytest.approx(4 * 0.1, rel=0.15)  # boundary losses shrink with n
