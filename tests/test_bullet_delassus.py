"""The free-body Delassus operator against its closed form.

For a free rigid body of mass m and isotropic inertia i, a point at lever arm r moves under a
force f at that point with dv/dt = (I/m + (|r|^2 I - r r^T) / i) f (Newton-Euler: the
translation f/m plus the rotation's (I^-1 (r x f)) x r), so the effective mass along a normal n
is 1 / (1/m + |r x n|^2 / i) (e.g. Featherstone, *Rigid Body Dynamics Algorithms*, 2008,
Sect. 11.2). A contact between two free bodies adds both sides' blocks.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbplugin.pipeline import delassus
from mbplugin.pipeline.delassus import (
    block_normal_diagonal,
    free_body_blocks,
    free_body_delassus,
    normal_diagonal,
)


def _closed_form(m: float, i: float, r: np.ndarray) -> np.ndarray:
    return np.eye(3) / m + (r @ r * np.eye(3) - np.outer(r, r)) / i


def test_block_diagonal_w_is_the_newton_euler_closed_form() -> None:
    rng = np.random.default_rng(3)
    k = 5
    m = rng.uniform(0.1, 2.0, k)
    i = rng.uniform(1e-4, 1e-2, k)
    r = rng.normal(scale=0.05, size=(k, 3))
    inv_i = np.array([np.eye(3) / x for x in i])
    # contact c on body c (side b), the other side static
    W, blocks = free_body_blocks(k, np.arange(k), np.arange(k), r, 1 / m, inv_i)
    dense = W.toarray()
    for c in range(k):
        expected = _closed_form(m[c], i[c], r[c])
        assert np.allclose(blocks[c], expected, rtol=1e-13, atol=0)
        assert np.allclose(dense[3 * c:3 * c + 3, 3 * c:3 * c + 3], expected, rtol=1e-13, atol=0)
    off = dense.copy()
    for c in range(k):
        off[3 * c:3 * c + 3, 3 * c:3 * c + 3] = 0
    assert not off.any()
    n = rng.normal(size=(k, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    inv_m_eff = 1 / m + np.linalg.norm(np.cross(r, n), axis=1) ** 2 / i
    assert np.allclose(block_normal_diagonal(blocks, n), inv_m_eff, rtol=1e-13, atol=0)
    assert np.array_equal(block_normal_diagonal(blocks, n), normal_diagonal(W, n))


def test_a_contact_between_two_free_bodies_adds_both_sides() -> None:
    m, i = np.array([0.3, 0.7]), np.array([2e-3, 5e-3])
    r = np.array([[0.01, 0.0, -0.02], [0.0, 0.03, 0.01]])
    inv_i = np.array([np.eye(3) / x for x in i])
    W, _ = free_body_blocks(1, np.array([0, 0]), np.array([0, 1]), r, 1 / m, inv_i)
    expected = _closed_form(m[0], i[0], r[0]) + _closed_form(m[1], i[1], r[1])
    assert np.allclose(W.toarray(), expected, rtol=1e-13, atol=0)


@pytest.mark.parametrize("shared", [False, True])
def test_the_direct_build_is_the_general_assembly(shared: bool) -> None:
    """The block-diagonal build stores the same matrix (pattern and bits) as the general
    assembly; a body shared by two contacts couples them and is left to the general one."""
    rng = np.random.default_rng(7)
    k, nb = 30, 80
    contact = np.concatenate([np.arange(k), np.arange(10)])
    sign = np.concatenate([np.ones(k), -np.ones(10)])
    obj = rng.permutation(nb)[:len(contact)]
    if shared:
        obj[-1] = obj[0]
    r = rng.normal(scale=0.05, size=(len(contact), 3))
    a = rng.normal(size=(nb, 3, 3))
    inv_i = a @ a.transpose(0, 2, 1)
    inv_m = rng.uniform(1, 10, nb)
    fast = free_body_blocks(k, contact, obj, r, inv_m, inv_i)
    if shared:
        assert fast is None
        return
    general = free_body_delassus(k, contact, sign, obj, r, inv_m, inv_i)  # uses the fast path
    e1, e2 = delassus.group_pairs(obj)
    b = obj[e1]
    blocks = np.einsum("n,ij->nij", inv_m[b], np.eye(3))
    blocks -= delassus.skew(r[e1]) @ inv_i[b] @ delassus.skew(r[e2])
    blocks *= (sign[e1] * sign[e2])[:, None, None]
    ref = delassus._assemble(k, contact[e1], contact[e2], blocks)
    for W in (fast[0], general):
        assert W.has_canonical_format
        assert np.array_equal(W.indptr, ref.indptr)
        assert np.array_equal(W.indices, ref.indices)
        assert np.array_equal(W.data, ref.data)


def test_coupled_w_is_the_dense_j_minv_jt() -> None:
    """Contacts sharing bodies (a pile: 60 contacts on 25 bodies, some sides static): the
    compiled sparse assembly equals W = J M^-1 J^T built densely from its definition, J_e =
    s_e [I, -[r_e]x] on the twist (v, omega) of the side's body and M^-1 = diag(I/m, I_w^-1)
    (Newton-Euler), within 1e-12 of its largest entry; its CSR is canonical."""
    rng = np.random.default_rng(11)
    k, nb = 60, 25
    a = rng.integers(-1, nb, k)  # -1: a static side (no entry)
    b = rng.integers(0, nb, k)
    contact = np.concatenate([np.arange(k), np.arange(k)])
    sign = np.concatenate([-np.ones(k), np.ones(k)])
    obj = np.concatenate([a, b])
    keep = obj >= 0
    contact, sign, obj = contact[keep], sign[keep], obj[keep]
    r = rng.normal(scale=0.05, size=(len(obj), 3))
    g = rng.normal(size=(nb, 3, 3))
    inv_i = g @ g.transpose(0, 2, 1) + np.eye(3)
    inv_m = rng.uniform(1, 10, nb)
    W = free_body_delassus(k, contact, sign, obj, r, inv_m, inv_i)
    J = np.zeros((3 * k, 6 * nb))
    for e in range(len(obj)):
        c, o = contact[e], obj[e]
        rx = np.array([[0, -r[e, 2], r[e, 1]], [r[e, 2], 0, -r[e, 0]], [-r[e, 1], r[e, 0], 0]])
        J[3 * c:3 * c + 3, 6 * o:6 * o + 3] += sign[e] * np.eye(3)
        J[3 * c:3 * c + 3, 6 * o + 3:6 * o + 6] += -sign[e] * rx
    minv = np.zeros((6 * nb, 6 * nb))
    for o in range(nb):
        minv[6 * o:6 * o + 3, 6 * o:6 * o + 3] = inv_m[o] * np.eye(3)
        minv[6 * o + 3:6 * o + 6, 6 * o + 3:6 * o + 6] = inv_i[o]
    dense = J @ minv @ J.T
    assert W.has_canonical_format
    assert np.max(np.abs(W.toarray() - dense)) <= 1e-12 * np.max(np.abs(dense))
    n = rng.normal(size=(k, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    expected = np.einsum("ki,kij,kj->k", n, dense.reshape(k, 3, k, 3)[np.arange(k), :,
                                                                      np.arange(k), :], n)
    assert np.allclose(normal_diagonal(W, n), expected, rtol=1e-12, atol=0)
