"""Broad phase: candidate pairs of bounded shapes from their bounding spheres.

:func:`sphere_pairs` returns every pair (i, j), i < j, whose bounding spheres overlap (within a
margin). It builds a k-d tree on the centres (``scipy.spatial.cKDTree``) and asks for all pairs
closer than twice the largest *typical* radius; the few shapes much larger than the rest (more
than ``big_factor`` times the median radius) are queried separately, so one large shape does not
turn the search radius of every small one into its own. The cost is O(N log N) for building the
tree and O(N) for the queries at fixed density (measured in ``benchmarks/bench_broadphase.py``).

:func:`brute_force_pairs` is the O(N^2) reference used by the tests and the benchmark.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from mbplugin._jit import njit

#: Up to this many shapes every pair is tested directly (cheaper than building a tree).
SMALL_N = 32


def _filter(
    i: np.ndarray, j: np.ndarray, centers: np.ndarray, radii: np.ndarray, margin: float
) -> tuple[np.ndarray, np.ndarray]:
    d2 = np.einsum("ij,ij->i", centers[i] - centers[j], centers[i] - centers[j])
    reach = radii[i] + radii[j] + margin
    keep = d2 < reach * reach
    return i[keep], j[keep]


def sphere_pairs(
    centers: np.ndarray, radii: np.ndarray, margin: float = 0.0, big_factor: float = 4.0
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (i < j) with |c_i - c_j| < r_i + r_j + margin, as two int64 arrays.

    ``centers`` (N, 3) m, ``radii`` (N,) m (bounding-sphere radii), ``margin`` (m) >= 0.
    The pairs are sorted by (i, j).
    """
    c = np.ascontiguousarray(centers, dtype=float)
    r = np.asarray(radii, dtype=float)
    n = len(r)
    if n < 2:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy()
    if n <= SMALL_N:  # a few shapes: every pair, no tree
        i, j = np.triu_indices(n, 1)
        i, j = _filter(i.astype(np.int64), j.astype(np.int64), c, r, margin)
        return i, j
    med = float(np.median(r))
    big = r > big_factor * med
    if big.sum() > max(8, n // 100):  # not a few outliers: one uniform search
        big[:] = False
    small = np.flatnonzero(~big)
    chunks_i: list[np.ndarray] = []
    chunks_j: list[np.ndarray] = []
    if len(small) > 1:
        rmax = float(r[small].max())
        tree = cKDTree(c[small])
        pairs = tree.query_pairs(2.0 * rmax + margin, output_type="ndarray")
        if len(pairs):
            i, j = _filter(small[pairs[:, 0]], small[pairs[:, 1]], c, r, margin)
            chunks_i.append(i)
            chunks_j.append(j)
    big_idx = np.flatnonzero(big)
    if len(big_idx):
        tree_all = cKDTree(c)
        rmax_all = float(r.max())
        hits = tree_all.query_ball_point(c[big_idx], r[big_idx] + rmax_all + margin)
        lengths = np.array([len(h) for h in hits], dtype=np.int64)
        if lengths.sum():
            other = np.concatenate([np.asarray(h, dtype=np.int64) for h in hits])
            me = np.repeat(big_idx, lengths)
            keep = other != me
            me, other = me[keep], other[keep]
            # pairs of two big shapes are found twice: keep (min, max) once
            lo, hi = np.minimum(me, other), np.maximum(me, other)
            both_big = big[lo] & big[hi]
            code = lo * n + hi
            _, first = np.unique(code, return_index=True)
            mask = np.zeros(len(code), dtype=bool)
            mask[first] = True
            mask |= ~both_big
            # a small shape hit by a big one must not also come from the small search: it
            # cannot, since the small search only pairs small shapes
            i, j = _filter(lo[mask], hi[mask], c, r, margin)
            chunks_i.append(i)
            chunks_j.append(j)
    if not chunks_i:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy()
    i = np.concatenate(chunks_i).astype(np.int64)
    j = np.concatenate(chunks_j).astype(np.int64)
    order = np.lexsort((j, i))
    i, j = i[order], j[order]
    if len(i) > 1:
        dup = (i[1:] == i[:-1]) & (j[1:] == j[:-1])
        keep = np.concatenate([[True], ~dup])
        i, j = i[keep], j[keep]
    return i, j


@njit
def _touch(c, r, margin, i, j):
    """Whether the bounding spheres of i and j come within ``margin`` of each other."""
    dx = c[i, 0] - c[j, 0]
    dy = c[i, 1] - c[j, 1]
    dz = c[i, 2] - c[j, 2]
    reach = r[i] + r[j] + margin
    return dx * dx + dy * dy + dz * dz < reach * reach


@njit
def _brute(c, r, margin):
    n = c.shape[0]
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if _touch(c, r, margin, i, j):
                count += 1
    out_i = np.empty(count, dtype=np.int64)
    out_j = np.empty(count, dtype=np.int64)
    k = 0
    for i in range(n):
        for j in range(i + 1, n):
            if _touch(c, r, margin, i, j):
                out_i[k] = i
                out_j[k] = j
                k += 1
    return out_i, out_j


def brute_force_pairs(
    centers: np.ndarray, radii: np.ndarray, margin: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Reference O(N^2) search: the same pairs as :func:`sphere_pairs`, sorted by (i, j)."""
    return _brute(
        np.ascontiguousarray(centers, dtype=float), np.ascontiguousarray(radii, dtype=float),
        float(margin),
    )
