"""W of a host step: the Delassus operator W = J M^-1 J^T of the managed contacts (3K, 3K),
built once for every host (``BulletContacts``, :class:`~mbplugin.hosts.loop.ContactLoop`) from
the formulas of :mod:`mbplugin.pipeline.delassus`: the free rows' part I/m - [r]x I_w^-1 [r]x
(block diagonal when no row is a side of two contacts, sparse otherwise), the articulated
bodies' J M^-1 J^T added in by the host backend (dense), each contact's normal-normal entry
n.W n = 1 / m_eff, and a cache that keeps W while its inputs are bitwise the same (rows at
rest)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin._jit import njit, readonly_view, writable
from mbplugin.contact import ContactBatch
from mbplugin.hosts.arrays import diagonal_blocks
from mbplugin.hosts.protocol import ARTICULATED, FREE, STATIC
from mbplugin.pipeline.delassus import (
    _csr_normal_diagonal,
    _free_body_csr,
    block_diagonal_w,
    block_normal_diagonal,
    free_body_blocks,
    free_body_delassus,
    normal_diagonal,
    side_blocks,
)


def contact_sides(batch: ContactBatch) -> tuple[np.ndarray, ...]:
    """The 2K sides of the batch's contacts: (contact index, row, sign (-1 side a, +1 side
    b), lever arm r (2K, 3) m), sides a first."""
    k = len(batch)
    contact = np.concatenate([np.arange(k), np.arange(k)])
    side = np.concatenate([batch.a, batch.b])
    sign = np.concatenate([-np.ones(k), np.ones(k)])
    r = np.concatenate([batch.ra, batch.rb])
    return contact, side, sign, r


def free_rows_delassus(kind: np.ndarray, batch: ContactBatch, inv_m: np.ndarray,
                       inv_i_w: np.ndarray) -> tuple[Any, Any, np.ndarray]:
    """The free rows' part of W (``kind`` (N,) FREE / STATIC / ARTICULATED per row, ``inv_m``
    (N,) 1/kg, ``inv_i_w`` (N, 3, 3) world-frame inverse inertia): (W, blocks, art) with
    ``art`` (2K,) the sides (:func:`contact_sides` order) on articulated rows. Without such a
    side W is block diagonal (``blocks`` (K, 3, 3), no row a side of two contacts) or sparse
    (CSR; ``blocks`` None); with one it is dense (3K, 3K), for the articulated bodies' parts
    to be added in."""
    k = len(batch)
    one = _one_free_side(kind, batch.a, batch.b) if k else 0
    if one:  # every contact one free side, all on side b (1) or a (2), no row twice
        obj, r = (batch.b, batch.rb) if one == 1 else (batch.a, batch.ra)
        blocks = side_blocks(obj, r, inv_m, inv_i_w)
        return block_diagonal_w(k, blocks), blocks, np.zeros(2 * k, dtype=bool)
    if k:  # free and static sides only, no free row alone on its contacts: one compiled call
        csr = _free_static_csr(kind, batch, inv_m, inv_i_w)
        if csr is not None:
            return csr, None, np.zeros(2 * k, dtype=bool)
    contact, side, sign, r = contact_sides(batch)
    free = kind[side] == FREE
    art = kind[side] == ARTICULATED
    if not art.any():
        fast = free_body_blocks(k, contact[free], side[free], r[free], inv_m, inv_i_w)
        if fast is not None:
            return fast[0], fast[1], art
        return sp.csr_matrix(free_body_delassus(k, contact[free], sign[free], side[free],
                                                r[free], inv_m, inv_i_w)), None, art
    # with an articulated side: W dense (3K, 3K; K is a robot's contacts), the free rows'
    # part and each articulated body's J M^-1 J^T added in
    W = (free_body_delassus(k, contact[free], sign[free], side[free], r[free], inv_m,
                            inv_i_w).toarray() if free.any() else np.zeros((3 * k, 3 * k)))
    return W, None, art


def _free_static_csr(kind: np.ndarray, batch: ContactBatch, inv_m: np.ndarray,
                     inv_i_w: np.ndarray) -> sp.csr_matrix | None:
    """W of :func:`free_rows_delassus` as :func:`free_body_delassus` builds it in its general
    case (the same entries in the same order into the same compiled assembly,
    :func:`_free_body_csr`: the same bits), taken when every side is a FREE or STATIC row, no
    free side is the ground (-1) and W is not block diagonal (a row a side of two contacts:
    a box or a hull on its corners); else None (the general path). One compiled call
    (:func:`_free_static_kernel`); the CSR matrix is a shallow copy of the last one built on
    the same pattern (:func:`csr_on_pattern`), without SciPy's constructor and its format
    checks (~40 us at 12 x 12)."""
    a, b = batch.a, batch.b
    if a.dtype != np.int64 or b.dtype != np.int64:
        return None
    indptr, indices, data = _free_static_kernel(
        kind, a, b, np.ascontiguousarray(batch.ra, dtype=float),
        np.ascontiguousarray(batch.rb, dtype=float), np.ascontiguousarray(inv_m, dtype=float),
        writable(np.ascontiguousarray(inv_i_w, dtype=float)))
    if not len(indptr):
        return None
    return csr_on_pattern(data, indices, indptr, 3 * len(batch))


@njit
def _free_static_kernel(kind, a, b, ra, rb, inv_m, inv_i):
    """(indptr, indices, data) of :func:`_free_static_csr`'s W: the free sides of the
    contacts (a, b) in :func:`contact_sides`' order (sides a, then sides b) as
    :func:`free_body_delassus`' entries (contact, sign, row, lever arm) into
    :func:`_free_body_csr` (32-bit indices; its first ``max row + 1`` rows' masses and
    inertias); empty arrays when a side is neither FREE nor STATIC, a free side is the ground
    (-1), no row is a side of two contacts (:func:`free_body_blocks`' case: block diagonal),
    or the indices would need 64 bits."""
    k = a.shape[0]
    n = kind.shape[0]
    none = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    count = np.zeros(n, dtype=np.int64)
    ne = 0
    for s in range(2):
        side = a if s == 0 else b
        for i in range(k):
            row = side[i]
            kd = kind[row if row >= 0 else n + row]
            if kd == FREE:
                if row < 0:
                    return none
                count[row] += 1
                ne += 1
            elif kd != STATIC:
                return none
    twice = False
    deg2 = 0.0
    nb = 0
    for row in range(n):
        if count[row] > 1:
            twice = True
        if count[row] > 0:
            nb = row + 1
        deg2 += float(count[row]) * float(count[row])
    if not twice or 9.0 * deg2 >= 2.0**31:
        return none
    contact = np.empty(ne, dtype=np.int64)
    sign = np.empty(ne)
    obj = np.empty(ne, dtype=np.int64)
    r = np.empty((ne, 3))
    e = 0
    for s in range(2):
        side = a if s == 0 else b
        rs = ra if s == 0 else rb
        for i in range(k):
            row = side[i]
            if kind[row if row >= 0 else n + row] == FREE:
                contact[e] = i
                sign[e] = -1.0 if s == 0 else 1.0
                obj[e] = row
                r[e, 0], r[e, 1], r[e, 2] = rs[i, 0], rs[i, 1], rs[i, 2]
                e += 1
    return _free_body_csr(k, contact, sign, obj, r, inv_m[:nb], inv_i[:nb], nb,
                          np.zeros(0, dtype=np.int32))


_SHELL = object.__new__

#: the last CSR W built by :func:`csr_on_pattern` per size 3K, its index arrays read-only
_ON_PATTERN: dict[int, sp.csr_matrix] = {}


def csr_on_pattern(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                   n: int) -> sp.csr_matrix:
    """The canonical CSR matrix (n, n) of (``data``, ``indices``, ``indptr``) (as
    :func:`_free_body_csr` returns them: sorted, no duplicates): a shallow copy of the last
    one of this size when its pattern is bitwise the same (a body at rest: every step),
    ``data`` its own; else SciPy's constructor, kept as that size's template."""
    tpl = _ON_PATTERN.get(n)
    if (tpl is not None and tpl.indices.dtype == indices.dtype
            and tpl.indptr.tobytes() == indptr.tobytes()
            and tpl.indices.tobytes() == indices.tobytes()):
        W = _SHELL(sp.csr_matrix)  # a shallow copy (the pattern's arrays shared, read-only;
        W.__dict__.update(tpl.__dict__)  # its shape and format flags)
        W.data = data
        return W
    W = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    if W.indices.dtype == indices.dtype:
        tpl = _SHELL(sp.csr_matrix)
        tpl.__dict__.update(W.__dict__)
        tpl.indices, tpl.indptr = W.indices.copy(), W.indptr.copy()
        tpl.indices.flags.writeable = tpl.indptr.flags.writeable = False
        _ = tpl.has_canonical_format  # (SciPy's check once, its flag kept by the copies)
        if len(_ON_PATTERN) > 64:
            _ON_PATTERN.clear()
        _ON_PATTERN[n] = tpl
    return W


@njit
def _one_free_side(kind, a, b):
    """1 when side b of every contact is a FREE row and side a a STATIC one, 2 for the
    reverse, and no free row is a side of two contacts (W block diagonal, its blocks the free
    sides' in the contacts' order: what :func:`free_body_blocks` builds then); else 0.
    (Rows are indexed as NumPy's ``kind[side]``: -1 the last.)"""
    n = kind.shape[0]
    seen = np.zeros(n, dtype=np.bool_)
    out = 0
    for i in range(a.shape[0]):
        ka, kb = kind[a[i]], kind[b[i]]
        if kb == FREE and ka == STATIC:
            side, this = b[i], 1
        elif ka == FREE and kb == STATIC:
            side, this = a[i], 2
        else:
            return 0
        if side < 0 or (out != 0 and this != out) or seen[side]:
            return 0
        out = this
        seen[side] = True
    return out


def normal_entries(W: Any, blocks: np.ndarray | None, normal: np.ndarray) -> np.ndarray:
    """n.W n (K,) of each contact (1 / its effective mass, 1/kg), from the diagonal blocks
    when W is block diagonal."""
    if blocks is not None:
        return block_normal_diagonal(blocks, normal)
    if type(W) is sp.csr_matrix and W.__dict__.get("_has_canonical_format"):
        # (a canonical CSR W, e.g. csr_on_pattern's: normal_diagonal's compiled sum directly)
        return _csr_normal_diagonal(readonly_view(W.indptr), readonly_view(W.indices), W.data,
                                    np.ascontiguousarray(normal, dtype=float), len(normal))
    if sp.issparse(W):
        return normal_diagonal(W, normal)
    # (the sum einsum("ki,kij,kj->k", n, B, n) takes: row-major from 0, the same bits)
    return block_normal_diagonal(diagonal_blocks(W), normal)


class DelassusCache:
    """W, its normal entries and whether it is block diagonal, kept while every input array
    of ``key`` is bitwise the same as when it was built (rows at rest: the same sides, lever
    arms, normals and orientations give the same W). The inputs are kept and compared as
    their bytes (shape, dtype and ``tobytes``: ~0.15 us an array of 10 contacts against
    ~1.1 us for ``(x == y).all()``, which allocates; bitwise, so a -0.0 where 0.0 was is a
    miss and W is rebuilt from the new inputs)."""

    def __init__(self) -> None:
        self._hit: tuple[Any, ...] | None = None

    def get(self, key: tuple[np.ndarray, ...]) -> tuple[Any, np.ndarray, bool] | None:
        """(W, n.W n, block diagonal) built from inputs equal to ``key``, or None."""
        hit = self._hit
        if hit is None:
            return None
        for (shape, dtype, raw), y in zip(hit[0], key, strict=True):
            if y.shape != shape or y.dtype != dtype or y.tobytes() != raw:
                return None
        return hit[1], hit[2], hit[3]

    def put(self, key: tuple[np.ndarray, ...] | None, W: Any, wnn: np.ndarray,
            diag: bool) -> None:
        """Keep W for inputs ``key`` (copied); None forgets (a W with an articulated part
        depends on the joints too)."""
        self._hit = (None if key is None
                     else (tuple((x.shape, x.dtype, x.tobytes()) for x in key), W, wnn, diag))
