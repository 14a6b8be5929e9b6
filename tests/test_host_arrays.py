"""The host step's row helpers (mbplugin.hosts.arrays) give NumPy's own results bit for bit:
``np.linalg.norm(a, axis=1)``, ``np.cross(a, b)``, and n.W n of 3x3 blocks as
``np.einsum("ki,kij,kj->k", ...)`` sums it, over magnitudes from 1e-100 to 1e100."""

from __future__ import annotations

import numpy as np

from mbplugin.hosts.arrays import cross_rows, diagonal_blocks, norm_rows
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
