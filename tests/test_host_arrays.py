"""The host step's row helpers (mbplugin.hosts.arrays) give NumPy's own results bit for bit:
``np.linalg.norm(a, axis=1)``, ``np.cross(a, b)``, and n.W n of 3x3 blocks as
``np.einsum("ki,kij,kj->k", ...)`` sums it, over magnitudes from 1e-100 to 1e100."""

from __future__ import annotations

import numpy as np

from mbplugin.hosts.arrays import cross_rows, diagonal_blocks, max_norm_rows, norm_rows
from mbplugin.hosts.wmatrix import normal_entries


def _rows(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal((n, 3)) * 10.0 ** rng.integers(-100, 100, (n, 3))


def test_norm_and_cross_rows_are_numpys() -> None:
    rng = np.random.default_rng(7)
    for n in (0, 1, 4, 37, 1000):
        a, b = _rows(rng, n), _rows(rng, n)
        assert np.array_equal(norm_rows(a), np.linalg.norm(a, axis=1))
        assert np.array_equal(cross_rows(a, b), np.cross(a, b))
        # strided views (a column slice of a wider array) and float32 (NumPy's own path)
        w = rng.standard_normal((n, 7))
        assert np.array_equal(norm_rows(w[:, 2:5]), np.linalg.norm(w[:, 2:5], axis=1))
        f = rng.standard_normal((n, 3)).astype(np.float32)
        assert norm_rows(f).dtype == np.float32


def test_normal_entries_of_dense_w_are_einsums() -> None:
    rng = np.random.default_rng(8)
    for k in (1, 2, 4, 12):
        for _ in range(200):
            W = rng.standard_normal((3 * k, 3 * k))
            n = rng.standard_normal((k, 3))
            ref = np.einsum("ki,kij,kj->k", n, diagonal_blocks(W), n)
            assert np.array_equal(normal_entries(W, None, n), ref)


def test_verify_off_is_the_elementwise_test() -> None:
    """The implicit step's verification test in one compiled loop says what the NumPy
    expression says (|d_h - d| > tol |d| + 1e-9 or |u_h - u| > tol |u| + du, found only),
    NaN included, near the thresholds."""
    from mbplugin.hosts.integrator import verify_off

    rng = np.random.default_rng(9)
    tol, du = 1e-3, 1e-5
    agree = {True: 0, False: 0}
    for _ in range(3000):
        k = int(rng.integers(1, 6))
        d = rng.standard_normal(k) * 1e-3
        u = rng.standard_normal((k, 3)) * 1e-2
        d_h = d * (1 + tol * rng.uniform(-1.5, 1.5, k))
        u_h = u + rng.standard_normal((k, 3)) * 1e-5
        if rng.random() < 0.1:
            d_h[0] = np.nan
        found = rng.random(k) < 0.8
        off = ((np.abs(d_h - d) > tol * np.abs(d) + 1e-9)
               | (np.linalg.norm(u_h - u, axis=1) > tol * np.linalg.norm(u, axis=1) + du))
        ref = bool(np.any(off & found))
        assert verify_off(d_h, d, u_h, u, found, tol, du) == ref
        agree[ref] += 1
    assert min(agree.values()) > 300  # both outcomes exercised


def test_max_norm_rows_is_numpys() -> None:
    """The largest row norm is NumPy's ``np.max(np.linalg.norm(a, axis=1), initial=0.0)``:
    equal to the bit, 0 without rows, NaN with a NaN row."""
    rng = np.random.default_rng(3)
    for n in (0, 1, 4, 37):
        a = rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-8, 8, size=(n, 1))
        assert max_norm_rows(a) == np.max(np.linalg.norm(a, axis=1), initial=0.0)
    a = rng.normal(size=(5, 3))
    a[2, 1] = np.nan
    assert np.isnan(max_norm_rows(a))
    assert max_norm_rows(np.zeros((3, 3))) == 0.0
