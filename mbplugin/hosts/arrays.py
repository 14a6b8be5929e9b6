"""Row-wise array helpers of the host step (N, 3) arrays: the same values as NumPy's general
reductions and products, without their per-call overhead on a few rows or many short ones."""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin._jit import njit


def _float_rows(a: Any) -> bool:
    """Whether ``a`` is a float64 (N, 3) ndarray (the compiled loops' input)."""
    return (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim == 2
            and a.shape[1] == 3)


def norm_rows(a: np.ndarray) -> np.ndarray:
    """``np.linalg.norm(a, axis=1)`` of an (N, 3) array, column by column: sqrt((x^2 + y^2) +
    z^2), the order in which NumPy's reduction sums a row of three (the same bits; checked
    on NumPy 2.4), without the reduction's per-row overhead (float64 rows: one compiled
    loop, the same operations in the same order)."""
    if _float_rows(a):
        out = np.empty(a.shape[0])
        _norm_rows(a, out)
        return out
    x, y, z = a[:, 0], a[:, 1], a[:, 2]
    return np.sqrt(x * x + y * y + z * z)


@njit
def _norm_rows(a, out):
    """out[i] = sqrt((x^2 + y^2) + z^2) of each row (x, y, z) of ``a``."""
    for i in range(a.shape[0]):
        x, y, z = a[i, 0], a[i, 1], a[i, 2]
        out[i] = np.sqrt(x * x + y * y + z * z)


def max_norm_rows(a: np.ndarray) -> float:
    """``np.max(norm_rows(a), initial=0.0)`` of an (N, 3) array (the same value: the norms
    of :func:`norm_rows`, a maximum rounds nothing, NaN propagates; float64 rows: one compiled
    loop, no intermediate array)."""
    if _float_rows(a):
        return float(_max_norm_rows(a))
    return float(np.max(norm_rows(a), initial=0.0))


@njit
def _max_norm_rows(a):
    """The largest sqrt((x^2 + y^2) + z^2) of the rows of ``a`` (0 without rows; NaN if a
    norm is NaN)."""
    m = 0.0
    for i in range(a.shape[0]):
        x, y, z = a[i, 0], a[i, 1], a[i, 2]
        n = np.sqrt(x * x + y * y + z * z)
        if n != n:
            return n
        if n > m:
            m = n
    return m


def cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross(a, b)`` of two (N, 3) arrays: the same products and differences
    (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0) into a C-ordered (N, 3) array, without
    ``np.cross``'s broadcasting and axis handling (~10x faster for a few rows; float64 rows
    of equal length: one compiled loop, the same operations)."""
    out = np.empty((len(a), 3))
    if _float_rows(a) and _float_rows(b) and len(a) == len(b):
        _cross_rows(a, b, out)
        return out
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    np.subtract(a1 * b2, a2 * b1, out=out[:, 0])
    np.subtract(a2 * b0, a0 * b2, out=out[:, 1])
    np.subtract(a0 * b1, a1 * b0, out=out[:, 2])
    return out


@njit
def _cross_rows(a, b, out):
    """out[i] = a[i] x b[i]: (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)."""
    for i in range(a.shape[0]):
        out[i, 0] = a[i, 1] * b[i, 2] - a[i, 2] * b[i, 1]
        out[i, 1] = a[i, 2] * b[i, 0] - a[i, 0] * b[i, 2]
        out[i, 2] = a[i, 0] * b[i, 1] - a[i, 1] * b[i, 0]


def nonzero_rows(a: np.ndarray) -> np.ndarray:
    """``np.any(a != 0, axis=1)`` of an (N, 3) array, column by column (a reduction along
    rows of three costs several times three elementwise passes; float64 rows: one compiled
    loop, the same comparisons)."""
    if _float_rows(a):
        out = np.empty(a.shape[0], dtype=np.bool_)
        _nonzero_rows(a, out)
        return out
    return (a[:, 0] != 0) | (a[:, 1] != 0) | (a[:, 2] != 0)


@njit
def _nonzero_rows(a, out):
    """out[i] = a[i, 0] != 0 or a[i, 1] != 0 or a[i, 2] != 0 (NaN: True)."""
    for i in range(a.shape[0]):
        out[i] = a[i, 0] != 0.0 or a[i, 1] != 0.0 or a[i, 2] != 0.0


def absmax_rows(a: np.ndarray) -> np.ndarray:
    """``np.max(np.abs(a), axis=1, initial=0.0)`` of an (N, 3) array, column by column (the
    same values: a maximum rounds nothing; NaN propagates as in the reduction)."""
    return np.maximum(np.maximum(np.abs(a[:, 0]), np.abs(a[:, 1])), np.abs(a[:, 2]))


def diagonal_blocks(W: np.ndarray) -> np.ndarray:
    """The 3x3 diagonal blocks (K, 3, 3) of a dense W (3K, 3K)."""
    k = W.shape[0] // 3
    return W.reshape(k, 3, k, 3)[np.arange(k), :, np.arange(k), :]


def assign(out: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
    """``np.add.at(out, idx, values)`` into zeros for distinct ``idx``: a plain assignment."""
    out[idx] = values


def lookup(keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Index of each ``query`` key in ``keys`` (distinct contact keys), -1 where absent."""
    if keys.shape == query.shape and np.array_equal(keys, query):  # the same contacts, in order
        return np.arange(len(query))
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    if not len(sk):
        return np.full(len(query), -1)
    pos = np.minimum(np.searchsorted(sk, query), len(sk) - 1)
    return np.where(sk[pos] == query, order[pos], -1)
