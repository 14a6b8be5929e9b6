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
def test_candidate_work_is_linear_in_n(n, monkeypatch):
    """The exact distance tests the broad phase performs (the candidates it hands to its
    overlap filter) stay a constant number per sphere as N grows at fixed density: an O(N^2)
    search would test N/2 pairs per sphere (1000 and 8000 here).

    Radii uniform in [r/2, r] at volume fraction phi: the tree is queried at the largest reach
    2r, so the candidates per sphere are (1/2) rho (4/3) pi (2r)^3 with the number density
    rho = phi / <(4/3) pi r_i^3>. Five shapes 8x larger are queried on their own: each adds
    about rho (4/3) pi (16r)^3 candidates (its radius plus the largest), not N.
    """
    from mbplugin.contact import broad

    rng = np.random.default_rng(5)
    rad = 0.005
    radii = rng.uniform(0.5 * rad, rad, n)
    radii[:5] = 8 * rad
    phi = 0.1
    c, side = packed(n, radii, phi, seed=5)
    tested = []
    real_filter = broad._filter

    def counting(i, j, *args):
        tested.append(len(i))
        return real_filter(i, j, *args)

    monkeypatch.setattr(broad, "_filter", counting)
    i, j = sphere_pairs(c, radii)
    rho = n / side**3
    per_sphere = 0.5 * rho * 4 / 3 * np.pi * (2 * rad) ** 3
    per_big = rho * 4 / 3 * np.pi * (16 * rad) ** 3
    expected = n * per_sphere + 5 * per_big
    # boundary losses (the bed is a cube of only 30-60 radii) lower the count below the bulk
    # estimate (to 0.63 of it at N = 2000, 0.87 at 16000); every pair found was tested
    assert len(i) <= sum(tested) < 1.1 * expected
    assert sum(tested) / n < 2.0  # vs N/2 = 1000 or 8000 for all pairs
    # the pairs found are the brute-force ones
    ref = brute_force_pairs(c, radii)
    assert np.array_equal(i, ref[0]) and np.array_equal(j, ref[1])


def test_exclude_among_drops_exactly_the_pairs_inside_the_group():
    """A chain of touching spheres on a plane: ``exclude_among`` removes every sphere-sphere
    pair inside the group (the same set as ``exclude`` of each pair), keeps the others."""
    rad = 0.01
    c = np.array([[0.0, 0.0, 0.9 * rad], [1.8 * rad, 0.0, 0.9 * rad],
                  [3.6 * rad, 0.0, 0.9 * rad], [5.4 * rad, 0.0, 0.9 * rad]])

    def pairs(group):
        model = ContactModel()
        model.add_shape(Plane(), -1)
        for k in range(len(c)):
            model.add_shape(Sphere(rad), k)
        model.set_default_law({"name": "hooke", "k": 1.0})
        if group is not None:
            model.exclude_among(group)
        batch = model.detect(BodyState.create(c, mass=1.0, inertia=[1.0] * 3))
        return {(int(a), int(b)) for a, b in zip(batch.a, batch.b, strict=True)}

    ground = {(-1, k) for k in range(4)}
    assert pairs(None) == ground | {(0, 1), (1, 2), (2, 3)}
    assert pairs([0, 1, 2]) == ground | {(2, 3)}
    assert pairs(range(4)) == ground  # every sphere in one group: no sphere-sphere search
    model = ContactModel()
    model.exclude_among([0, 1])
    with pytest.raises(ValueError, match="exclude_among"):
        model.exclude_among([1, 2])
