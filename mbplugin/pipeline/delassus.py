"""The Delassus operator W = J M^-1 J^T of a set of contacts, per 3-D contact force.

For K contacts, ``u_i`` is the velocity of body b_i relative to body a_i at the contact point
(world frame) and ``f_j`` the force of contact j on its body b_j (and -f_j on a_j). Over a short
interval with the bodies' mass matrices and the contact geometry frozen,

    du/dt = a_free + W f,         W (3K, 3K),   W_ij = sum_c s_ic s_jc J_ic M_c^-1 J_jc^T

over the bodies c shared by contacts i and j (s = +1 for side b, -1 for side a; static bodies
contribute nothing). For a free rigid body J_ic = [I, -[r_ic]x] on the twist (v, omega) and
M^-1 = diag(I/m, I_w^-1), so the block is I/m - [r_i]x I_w^-1 [r_j]x (Featherstone, *Rigid Body
Dynamics Algorithms*, 2008, Sect. 11.2; Moreau's "Delassus operator"). For a link of an
articulated body the point Jacobians J (3 x n_dof) and the joint-space mass matrix M come from
PyBullet (``calculateJacobian`` / ``calculateMassMatrix``).

The normal-normal part ``n_i^T W_ii n_i`` is 1/m_eff of contact i, rotations included.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin._jit import njit, readonly_view, writable
from mbplugin.pipeline.lowrank import LOWRANK_MIN

_EYE = np.eye(3)
_EYE.flags.writeable = False


def skew(r: np.ndarray) -> np.ndarray:
    """[r]x (N, 3, 3) of vectors r (N, 3)."""
    out = np.zeros((r.shape[0], 3, 3))
    out[:, 0, 1], out[:, 0, 2] = -r[:, 2], r[:, 1]
    out[:, 1, 0], out[:, 1, 2] = r[:, 2], -r[:, 0]
    out[:, 2, 0], out[:, 2, 1] = -r[:, 1], r[:, 0]
    return out


def group_pairs(obj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All ordered pairs (e1, e2) of entries with the same ``obj`` value (including e1 == e2)."""
    order = np.argsort(obj, kind="stable")
    so = obj[order]
    if not len(so):
        z = np.zeros(0, dtype=np.int64)
        return z, z
    starts = np.flatnonzero(np.r_[True, so[1:] != so[:-1]])
    sizes = np.diff(np.r_[starts, len(so)])
    size_of = np.repeat(sizes, sizes)
    start_of = np.repeat(starts, sizes)
    e1 = np.repeat(np.arange(len(so)), size_of)
    # partner offsets 0..size-1 within the group
    off = np.arange(len(e1)) - np.repeat(np.cumsum(size_of) - size_of, size_of)
    e2 = np.repeat(start_of, size_of) + off
    return order[e1], order[e2]


def free_body_delassus(
    k: int,
    contact: np.ndarray,
    sign: np.ndarray,
    obj: np.ndarray,
    r: np.ndarray,
    inv_mass: np.ndarray,
    inv_inertia_world: np.ndarray,
) -> sp.csr_matrix:
    """W (3K, 3K) contributed by free rigid bodies.

    Entries e (one per contact side on a free body): ``contact`` (E,) contact index, ``sign``
    (E,) +1 for side b / -1 for side a, ``obj`` (E,) body index, ``r`` (E, 3) contact point
    minus the body's centre of mass (m), ``inv_mass`` (B,) 1/kg, ``inv_inertia_world``
    (B, 3, 3) world-frame inverse inertia.
    """
    fast = free_body_blocks(k, contact, obj, r, inv_mass, inv_inertia_world)
    if fast is not None:
        return fast[0]
    obj = np.asarray(obj, dtype=np.int64)
    if not len(obj):
        return sp.csr_matrix((3 * k, 3 * k))
    # the blocks summed per pair of contacts straight into canonical CSR (compiled: a pile's
    # W of ~3000 contacts in ~1 ms, where the COO assembly of every pair took ~25 ms)
    nb = int(obj.max()) + 1
    # 32-bit indices, SciPy's own below 2^31 entries (no conversion copy); the entries are at
    # most 9 per pair of sides on one body
    deg = np.bincount(obj, minlength=nb).astype(np.float64)
    wide = 9.0 * float(deg @ deg) >= 2**31
    indptr, indices, data = _free_body_csr(
        int(k), np.ascontiguousarray(contact, dtype=np.int64),
        np.ascontiguousarray(sign, dtype=float), obj, np.ascontiguousarray(r, dtype=float),
        np.ascontiguousarray(inv_mass[:nb], dtype=float),
        writable(np.ascontiguousarray(inv_inertia_world[:nb], dtype=float)), nb,
        np.zeros(0, dtype=np.int64 if wide else np.int32))
    return sp.csr_matrix((data, indices, indptr), shape=(3 * k, 3 * k))


@njit
def _free_body_csr(k, contact, sign, obj, r, inv_mass, inv_i, nb, proto):
    """(indptr, indices, data) of the canonical CSR W (3K, 3K) of :func:`free_body_delassus`
    (its general case): block (i, j) = sum over the bodies c shared by contacts i and j of
    s_ic s_jc (I/m_c - [r_ic]x I_c^-1 [r_jc]x), the neighbours j of each contact in increasing
    order, every 3x3 block stored; its index arrays of ``proto``'s integer type."""
    ne = contact.shape[0]
    # the entries of each body, and of each contact (CSR over bodies / contacts)
    bptr = np.zeros(nb + 1, dtype=np.int64)
    cptr = np.zeros(k + 1, dtype=np.int64)
    for e in range(ne):
        bptr[obj[e] + 1] += 1
        cptr[contact[e] + 1] += 1
    for b in range(nb):
        bptr[b + 1] += bptr[b]
    for i in range(k):
        cptr[i + 1] += cptr[i]
    bent = np.empty(ne, dtype=np.int64)
    cent = np.empty(ne, dtype=np.int64)
    bfill = bptr[:-1].copy()
    cfill = cptr[:-1].copy()
    for e in range(ne):
        bent[bfill[obj[e]]] = e
        bfill[obj[e]] += 1
        cent[cfill[contact[e]]] = e
        cfill[contact[e]] += 1
    # neighbours of each contact (contacts sharing one of its bodies), sorted: one pass into
    # the room of the upper bound (the entries of its bodies), then packed
    room = np.zeros(k + 1, dtype=np.int64)
    for i in range(k):
        room[i + 1] = room[i]
        for q in range(cptr[i], cptr[i + 1]):
            b = obj[cent[q]]
            room[i + 1] += bptr[b + 1] - bptr[b]
    tmp = np.empty(room[k], dtype=np.int64)
    mark = np.full(k, -1, dtype=np.int64)
    nptr = np.zeros(k + 1, dtype=np.int64)
    for i in range(k):
        o = room[i]
        for q in range(cptr[i], cptr[i + 1]):
            b = obj[cent[q]]
            for p in range(bptr[b], bptr[b + 1]):
                j = contact[bent[p]]
                if mark[j] != i:
                    mark[j] = i
                    tmp[o] = j
                    o += 1
        tmp[room[i]:o].sort()
        nptr[i + 1] = nptr[i] + o - room[i]
    nbr = np.empty(nptr[k], dtype=np.int64)
    for i in range(k):
        nbr[nptr[i]:nptr[i + 1]] = tmp[room[i]:room[i] + nptr[i + 1] - nptr[i]]
    indptr = np.zeros(3 * k + 1, dtype=proto.dtype)
    for i in range(k):
        w = 3 * (nptr[i + 1] - nptr[i])
        for a in range(3):
            indptr[3 * i + a + 1] = indptr[3 * i + a] + w
    nnz = indptr[3 * k]
    indices = np.empty(nnz, dtype=proto.dtype)
    data = np.zeros(nnz)
    slot = np.full(k, -1, dtype=np.int64)
    t = np.empty((3, 3))
    for i in range(k):
        for q in range(nptr[i], nptr[i + 1]):
            slot[nbr[q]] = q - nptr[i]
            for a in range(3):
                for c in range(3):
                    indices[indptr[3 * i + a] + 3 * (q - nptr[i]) + c] = 3 * nbr[q] + c
        for q in range(cptr[i], cptr[i + 1]):
            e1 = cent[q]
            b = obj[e1]
            x0, x1, x2 = r[e1, 0], r[e1, 1], r[e1, 2]
            # t = [r1]x I^-1 (rows of [r1]x: (0, -x2, x1), (x2, 0, -x0), (-x1, x0, 0))
            for c in range(3):
                t[0, c] = -x2 * inv_i[b, 1, c] + x1 * inv_i[b, 2, c]
                t[1, c] = x2 * inv_i[b, 0, c] - x0 * inv_i[b, 2, c]
                t[2, c] = -x1 * inv_i[b, 0, c] + x0 * inv_i[b, 1, c]
            for p in range(bptr[b], bptr[b + 1]):
                e2 = bent[p]
                j = contact[e2]
                s = sign[e1] * sign[e2]
                y0, y1, y2 = r[e2, 0], r[e2, 1], r[e2, 2]
                base = 3 * slot[j]
                for a in range(3):
                    # (t [r2]x)[a, :], columns of [r2]x: (0, y2, -y1), (-y2, 0, y0), (y1, -y0, 0)
                    m0 = t[a, 1] * y2 - t[a, 2] * y1
                    m1 = -t[a, 0] * y2 + t[a, 2] * y0
                    m2 = t[a, 0] * y1 - t[a, 1] * y0
                    row = indptr[3 * i + a] + base
                    data[row] += s * ((inv_mass[b] if a == 0 else 0.0) - m0)
                    data[row + 1] += s * ((inv_mass[b] if a == 1 else 0.0) - m1)
                    data[row + 2] += s * ((inv_mass[b] if a == 2 else 0.0) - m2)
        for q in range(nptr[i], nptr[i + 1]):
            slot[nbr[q]] = -1
    return indptr, indices, data


def free_body_blocks(
    k: int,
    contact: np.ndarray,
    obj: np.ndarray,
    r: np.ndarray,
    inv_mass: np.ndarray,
    inv_inertia_world: np.ndarray,
) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """:func:`free_body_delassus` when W is block diagonal (no free body is a side of two
    contacts, every contact has a free side: e.g. N spheres each on the ground), else None.

    Returns W (canonical CSR, every 3x3 diagonal block stored, as the general assembly stores
    it) and its diagonal blocks (K, 3, 3), built directly: no pair search, no COO sort. The
    blocks are the general path's, I/m - [r]x I_w^-1 [r]x per side (sign^2 = 1), the two sides
    of a contact between two free bodies summed (one addition: the same bits in either order).
    """
    obj = np.asarray(obj, dtype=np.int64)
    contact = np.asarray(contact, dtype=np.int64)
    if not k or not len(obj) or obj.min() < 0:
        return None
    if np.bincount(obj).max() > 1:
        return None
    count = np.bincount(contact, minlength=k)
    if count.min() < 1:
        return None
    blocks = side_blocks(obj, r, inv_mass, inv_inertia_world)
    if len(contact) == k and np.array_equal(contact, np.arange(k)):
        diag = blocks  # one free side per contact, in the contacts' order
    else:
        diag = np.empty((k, 3, 3))
        diag[contact] = blocks
        two = count[contact] == 2
        if two.any():
            sum2 = np.zeros((k, 3, 3))
            np.add.at(sum2, contact[two], blocks[two])
            both = count == 2
            diag[both] = sum2[both]
    return block_diagonal_w(k, diag), diag


def side_blocks(obj: np.ndarray, r: np.ndarray, inv_mass: np.ndarray,
                inv_inertia_world: np.ndarray) -> np.ndarray:
    """I/m - [r]x I_w^-1 [r]x (S, 3, 3) 1/kg of the free bodies ``obj`` (S,) int64 at lever
    arms ``r`` (S, 3) m (``inv_mass`` (N,) 1/kg, ``inv_inertia_world`` (N, 3, 3)): I/m and
    [r]x written in one compiled pass (the same values as ``inv_mass[obj][:, None, None] *
    I`` and :func:`skew`), the product by NumPy's stacked matmul as before (its bits)."""
    s = len(obj)
    blocks, sk = np.empty((s, 3, 3)), np.empty((s, 3, 3))
    _side_parts(np.asarray(obj, dtype=np.int64), np.ascontiguousarray(r, dtype=float),
                np.ascontiguousarray(inv_mass, dtype=float), blocks, sk)
    blocks -= sk @ inv_inertia_world[obj] @ sk
    return blocks


@njit
def _side_parts(obj, r, inv_mass, blocks, sk):
    """blocks[e] = inv_mass[obj[e]] * I (one product per entry) and sk[e] = [r_e]x."""
    for e in range(obj.shape[0]):
        im = inv_mass[obj[e]]
        for a in range(3):
            for c in range(3):
                blocks[e, a, c] = im * (1.0 if a == c else 0.0)
                sk[e, a, c] = 0.0
        sk[e, 0, 1], sk[e, 0, 2] = -r[e, 2], r[e, 1]
        sk[e, 1, 0], sk[e, 1, 2] = r[e, 2], -r[e, 0]
        sk[e, 2, 0], sk[e, 2, 1] = -r[e, 1], r[e, 0]


def block_diagonal_w(k: int, diag: np.ndarray) -> sp.csr_matrix:
    """W (3K, 3K) canonical CSR of the diagonal blocks ``diag`` (K, 3, 3) on the shared
    pattern (:func:`_block_pattern`; tagged for :func:`is_block_pattern`): a shallow copy of
    the pattern's matrix (built and checked by SciPy once per K) with ``diag`` as its data
    (~1.4 us a host step against ~8 us for SciPy's constructor and its format checks)."""
    tpl = _TEMPLATES.get(k)
    if tpl is None:
        cols, indptr = _block_pattern(k)
        tpl = sp.csr_matrix((np.zeros(9 * k), cols, indptr), shape=(3 * k, 3 * k))
        tpl._block_pattern_k = k  # (is_block_pattern)
        if len(_TEMPLATES) > 64:
            _TEMPLATES.clear()
        _TEMPLATES[k] = tpl
    W = copy.copy(tpl)  # (the pattern's arrays shared, read-only)
    W.data = np.ascontiguousarray(diag, dtype=float).ravel()
    return W


#: the block-diagonal W of each contact count K on its pattern (:func:`block_diagonal_w`),
#: zero data; copied, never changed
_TEMPLATES: dict[int, sp.csr_matrix] = {}


#: the CSR pattern (column indices, row pointers) of a block-diagonal W per contact count K,
#: built once per K (the same K recurs at every host step while the contacts persist); shared
#: read-only by the matrices built on it
_PATTERNS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _block_pattern(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices (9K,) and row pointers (3K + 1,) of every 3x3 diagonal block stored."""
    pat = _PATTERNS.get(k)
    if pat is None:
        cols = ((3 * np.arange(k, dtype=np.int32)[:, None, None]
                 + np.arange(3, dtype=np.int32)[None, None, :])
                + np.zeros((1, 3, 1), dtype=np.int32)).ravel()
        indptr = np.arange(0, 9 * k + 1, 3, dtype=np.int32)
        cols.flags.writeable = False
        indptr.flags.writeable = False
        if len(_PATTERNS) > 64:
            _PATTERNS.clear()
        pat = _PATTERNS[k] = (cols, indptr)
    return pat


def is_block_pattern(W: Any, k: int) -> bool:
    """True when ``W`` (3K, 3K) is a CSR matrix :func:`free_body_blocks` built on
    :func:`_block_pattern`'s shared arrays: block diagonal, every 3x3 diagonal block stored,
    rows and columns in canonical order (a tag and a flag: no scan)."""
    # (tagged by free_body_blocks; its index arrays are read-only views of the pattern's)
    return getattr(W, "_block_pattern_k", -1) == k and not W.indices.flags.writeable


def block_normal_diagonal(blocks: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """:func:`normal_diagonal` of a block-diagonal W from its blocks (K, 3, 3): n . B n summed
    in the same order (row-major over the block's entries, each term (n_a B_ab) n_b), so the
    same bits; one compiled loop (:func:`_block_normal_diagonal`)."""
    out = np.empty(len(blocks))
    _block_normal_diagonal(np.ascontiguousarray(blocks, dtype=float),
                           np.ascontiguousarray(normal, dtype=float), out)
    return out


@njit
def _block_normal_diagonal(blocks, normal, out):
    """out[k] = sum_ab (n_a B_ab) n_b of each block, terms added row-major from 0."""
    for k in range(blocks.shape[0]):
        s = 0.0
        for a in range(3):
            for b in range(3):
                s += normal[k, a] * blocks[k, a, b] * normal[k, b]
        out[k] = s


def _assemble(k: int, ci: np.ndarray, cj: np.ndarray, blocks: np.ndarray) -> sp.csr_matrix:
    rows = (3 * ci[:, None, None] + np.arange(3)[None, :, None]) * np.ones((1, 1, 3), dtype=int)
    cols = (3 * cj[:, None, None] + np.arange(3)[None, None, :]) * np.ones((1, 3, 1), dtype=int)
    return sp.csr_matrix((blocks.ravel(), (rows.ravel(), cols.ravel())), shape=(3 * k, 3 * k))


@njit
def articulated_w(jac, mm, locked, cont, sgn, W):
    """One articulated body's part of the Delassus operator, added into the dense ``W`` (3K,
    3K); returns its response M^-1 J^T (n_dof, 3E): the change of the generalised velocities
    per unit impulse at each point (column 3 e + i: along axis i at point e).

    ``jac`` (E, 3, n_dof) the contact sides' point Jacobians (world axes) in the coordinates of
    the mass matrix ``mm`` (n_dof, n_dof); ``locked`` (S,) int64 the coordinates whose velocity
    a constraint holds (a joint motor of PyBullet's ``POSITION_CONTROL`` /
    ``VELOCITY_CONTROL``, a hard velocity constraint while below its force limit): they do not
    respond and the others respond as the constrained system, (M^-1 - M^-1 S^T (S M^-1 S^T)^-1
    S M^-1) J^T with S the rows of the locked coordinates (Featherstone, *Rigid Body Dynamics
    Algorithms*, 2008, Sect. 8.1); ``cont`` (E,) each side's contact, ``sgn`` (E,) +1 for side
    b, -1 for side a: W_ij += s_i s_j J_i M^-1 J_j^T (a contact between two links of the body
    gets both its sides)."""
    ne, n = jac.shape[0], jac.shape[2]
    jrows = np.ascontiguousarray(jac.reshape(3 * ne, n))
    jt = np.ascontiguousarray(jrows.T)
    if locked.shape[0] == 0:
        minv_jt = np.ascontiguousarray(np.linalg.solve(mm, jt))
    else:
        minv = np.linalg.inv(mm)
        resp = minv @ jt
        ns = locked.shape[0]
        ss = np.empty((ns, ns))
        cs = np.empty((n, ns))
        rs = np.empty((ns, 3 * ne))
        for i in range(ns):
            for j in range(ns):
                ss[i, j] = minv[locked[i], locked[j]]
            for j in range(n):
                cs[j, i] = minv[j, locked[i]]
            for j in range(3 * ne):
                rs[i, j] = resp[locked[i], j]
        minv_jt = np.ascontiguousarray(resp - cs @ np.ascontiguousarray(np.linalg.solve(ss, rs)))
    articulated_add(jrows, minv_jt, cont, sgn, W)
    return minv_jt


@njit
def articulated_add(jrows, minv_jt, cont, sgn, W):
    """:func:`articulated_w`'s sum into ``W`` (3K, 3K) of the body's J M^-1 J^T from the
    point Jacobians' rows ``jrows`` (3E, n_dof) and the response ``minv_jt`` (n_dof, 3E) by
    whatever solve it was made (``cont``, ``sgn`` as there)."""
    ne = jrows.shape[0] // 3
    if ne >= LOWRANK_MIN:
        symmetric_add(jrows, minv_jt, cont, sgn, W)
        return
    full = jrows @ minv_jt
    for i in range(3 * ne):
        si = sgn[i // 3]
        ri = 3 * cont[i // 3] + i % 3
        for j in range(3 * ne):
            W[ri, 3 * cont[j // 3] + j % 3] += si * sgn[j // 3] * full[i, j]


@njit
def symmetric_product(jrows, minv_jt):
    """J (M^-1 J^T) (m, m) for the point Jacobians' rows ``jrows`` (m, n_dof) and the response
    ``minv_jt`` (n_dof, m) of a large group (:data:`~mbplugin.pipeline.lowrank.LOWRANK_MIN`
    sides and more), a symmetric matrix: its upper triangle in compiled loops (each entry the
    sum over the coordinates in order; a row's zero Jacobian entries, the coordinates of the
    other limbs, skipped) mirrored to the lower one. Not BLAS: a product of this shape is
    small work (~5 Mflop for 240 contacts on 18 coordinates) that a threaded BLAS spreads over
    busy cores (measured on a shared 2-core machine: 300 ms wall for 2 ms of work)."""
    m, n = jrows.shape
    full = np.zeros((m, m))
    for i in range(m):
        row = full[i]
        for c in range(n):
            a = jrows[i, c]
            if a == 0.0:
                continue
            src = minv_jt[c]
            for j in range(i, m):
                row[j] += a * src[j]
    for i in range(m):
        for j in range(i):
            full[i, j] = full[j, i]
    return full


@njit
def symmetric_add(jrows, minv_jt, cont, sgn, W):
    """:func:`articulated_add` of a large group without the intermediate (m, m) product: each
    entry of the upper triangle of J (M^-1 J^T) (:func:`symmetric_product`'s sum, the same
    terms in the same order: the same bits) added with its sides' signs into ``W`` at its
    contacts' rows and, off the diagonal, at the mirrored ones: one pass over W's entries
    instead of three (the product's zeroing, its fill and mirror, the scatter), and the
    response read row-wise (its transpose, (m, n_dof), contiguous)."""
    m, n = jrows.shape
    rt = np.ascontiguousarray(minv_jt.T)
    for i in range(m):
        ri = 3 * cont[i // 3] + i % 3
        si = sgn[i // 3]
        ji = jrows[i]
        for j in range(i, m):
            rj = rt[j]
            acc = 0.0
            for c in range(n):
                a = ji[c]
                if a == 0.0:
                    continue
                acc += a * rj[c]
            v = si * sgn[j // 3] * acc
            cj = 3 * cont[j // 3] + j % 3
            W[ri, cj] += v
            if j != i:
                W[cj, ri] += v


def normal_delassus(W: sp.spmatrix, normal: np.ndarray) -> sp.csr_matrix:
    """The normal-normal part N^T W N (K, K) of W (3K, 3K) for unit normals (K, 3): entry
    (i, j) = n_i . W_ij n_j, summed from W's stored entries."""
    k = normal.shape[0]
    w = sp.coo_matrix(W)
    ri, ci = w.row // 3, w.col // 3
    vals = normal[ri, w.row % 3] * w.data * normal[ci, w.col % 3]
    return sp.csr_matrix((vals, (ri, ci)), shape=(k, k))


def normal_diagonal(W: sp.spmatrix, normal: np.ndarray) -> np.ndarray:
    """The diagonal n_i . W_ii n_i (K,) of :func:`normal_delassus`: 1/m_eff of each contact."""
    k = normal.shape[0]
    if sp.issparse(W) and W.format == "csr" and W.has_canonical_format:
        # the same products, summed in the same (row-major) order, without the COO copy
        return _csr_normal_diagonal(readonly_view(W.indptr), readonly_view(W.indices), W.data,
                                    np.ascontiguousarray(normal, dtype=float), k)
    w = W.tocoo() if sp.issparse(W) else sp.coo_matrix(W)
    own = (w.row // 3) == (w.col // 3)
    r, c, v = w.row[own], w.col[own], w.data[own]
    ri = r // 3
    return np.bincount(ri, weights=normal[ri, r % 3] * v * normal[ri, c % 3], minlength=k)


#: components of :func:`solve_blocks` larger than this are solved by SciPy's sparse LSQR
#: instead of a dense ``lstsq`` (O(n^3): a pile's one component of 3000 contacts took ~0.1 s)
DENSE_MAX = 64


@njit
def _csr_normal_diagonal(indptr, indices, data, normal, k):
    """:func:`normal_diagonal` of a canonical CSR W (3K, 3K)."""
    out = np.zeros(k)
    for r in range(3 * k):
        ri = r // 3
        for e in range(indptr[r], indptr[r + 1]):
            c = indices[e]
            if c // 3 == ri:
                out[ri] += normal[ri, r % 3] * data[e] * normal[ri, c % 3]
    return out


def solve_blocks(A: sp.spmatrix, b: np.ndarray, rcond: float = 1e-10) -> np.ndarray:
    """Least-squares solution of A x = b (``numpy.linalg.lstsq`` with ``rcond``) for a sparse
    A that is block diagonal up to a permutation (contacts coupled through W): one dense
    solve per connected component of A's pattern, one vectorised division for the 1x1 ones.
    A component of more than DENSE_MAX unknowns is solved by LSQR (Paige & Saunders 1982,
    ``scipy.sparse.linalg.lsqr``, from x = 0: the minimum-norm least-squares solution, as
    ``lstsq``'s, to a relative residual of ``rcond``)."""
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import lsqr

    A = sp.csr_matrix(A)
    k = A.shape[0]
    x = np.zeros(k)
    if not k:
        return x
    diag = A.diagonal()
    coo = A.tocoo()
    if np.all((coo.row == coo.col) | (coo.data == 0)):  # diagonal: every block is 1x1
        ng, labels, sizes = k, np.arange(k), np.ones(k, dtype=np.int64)
    else:
        ng, labels = connected_components(A, directed=False)
        sizes = np.bincount(labels, minlength=ng)
    single = sizes[labels] == 1
    # lstsq of a 1x1 system: a singular value below rcond * itself never is; a zero one is cut
    ok = single & (diag != 0)
    x[ok] = b[ok] / diag[ok]
    multi = np.flatnonzero(sizes > 1)
    if not len(multi):
        return x
    order = np.argsort(labels, kind="stable")
    start = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    # a small A read densely once: each component's block by NumPy indexing (the same entries
    # as SciPy's sparse slicing, ~100 us a slice, then toarray)
    dense = A.toarray() if k <= DENSE_MAX else None
    for g in multi:
        idx = order[start[g]:start[g + 1]]
        if dense is not None:
            x[idx] = np.linalg.lstsq(dense[np.ix_(idx, idx)], b[idx], rcond=rcond)[0]
            continue
        sub = A[idx][:, idx]
        if len(idx) > DENSE_MAX:
            x[idx] = lsqr(sub, b[idx], atol=rcond, btol=rcond, iter_lim=20 * len(idx))[0]
        else:
            x[idx] = np.linalg.lstsq(sub.toarray(), b[idx], rcond=rcond)[0]
    return x


def w_times(W: Any, x: np.ndarray) -> np.ndarray:
    """W ``x`` (m,) for the step's W (m, m) in s/kg (``x`` in N s: velocities in m/s): a
    dense W of a large group (:data:`~mbplugin.pipeline.lowrank.LOWRANK_MIN` contacts and
    more) by one compiled loop over its rows, anything else by ``W @ x`` (the same bits as
    before). A threaded BLAS spreads a product of this size (~0.5 Mflop for 240 contacts)
    over busy cores and waits for them (measured on a shared 2-core machine: 9 ms wall for a
    0.16 ms product, branch mcprune)."""
    if (isinstance(W, np.ndarray) and W.ndim == 2 and W.shape[0] >= 3 * LOWRANK_MIN
            and W.dtype == np.float64 and W.flags.c_contiguous):
        return _dense_times(W, np.ascontiguousarray(x, dtype=float))
    return W @ x


@njit
def _dense_times(W, x):
    """W x (m,) for a C-contiguous W (m, m): each row's sum in order."""
    m = W.shape[0]
    out = np.empty(m)
    for i in range(m):
        acc = 0.0
        row = W[i]
        for j in range(m):
            acc += row[j] * x[j]
        out[i] = acc
    return out
