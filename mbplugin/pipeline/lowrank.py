"""The Newton direction of a large implicit step through W's low rank (compiled).

The implicit step of articulated contacts (:mod:`mbplugin.pipeline.implicit`,
:func:`mbplugin.pipeline.implicit_kernel.newton`) solves, per Newton iteration, the 3K x 3K
system

    A dP = -R,     A = I - dt D W,     D = blockdiag(dF_i/du_i - dt dF_i/ddelta_i n_i^T),

with W = J M^-1 J^T the Delassus operator of the step's start. A robot lying on its body
touches the floor with every hull corner near it (the Mini Cheetah on its back: 160-250
contacts, 3K up to ~750): a dense LU of A costs (3K)^3 / 3 flops, ~0.1 Gflop per iteration.
But W has the rank of the bodies' motion, at most the sum of their degrees of freedom (18 for
a quadruped's floating base and twelve joints; with locked joints fewer): contacts on one link
share that link's six-dof motion. With W = C C^T (C: 3K x r, r <= n_dof) the
Sherman-Morrison-Woodbury identity (Golub & Van Loan, *Matrix Computations*, 4th ed. 2013,
Sect. 2.1.4) gives A's solve exactly from an r x r one,

    (I - U C^T)^-1 = I + U (I_r - C^T U)^-1 C^T,     U = dt D C,

(I_r - C^T U is invertible exactly when A is: det(I - U C^T) = det(I_r - C^T U)), in
O(K r^2) instead of O(K^3). C is W's pivoted Cholesky factor (W is symmetric positive
semidefinite: J M^-1 J^T, or with locked coordinates the constrained response, Featherstone
2008, Sect. 8.1), taken until the largest remaining diagonal entry is below RANK_TOL times
W's largest (then every remaining entry is: |W_ij| <= sqrt(W_ii W_jj) for a semidefinite
matrix), found in O(K r^2) from W as the step stores it (no change to who builds W).

Newton's direction and, within :func:`~mbplugin.pipeline.implicit_kernel.newton`, every
product with W (the end state u = ue + W P of each evaluation of the residual and the line
search, W dP for the slope) use C: C (C^T x) in O(K r) rather than W x in O(K^2), ~40x fewer
flops for 240 contacts on 18 coordinates (branch mcprune). The root is then that of C C^T,
which differs from W by at most RANK_TOL times W's largest diagonal entry per entry: the
impulse moves by that relative order (~1e-12), far below the solve's tolerance. The factor is
found once per solve, from LOWRANK_MIN contacts (smaller groups, a robot's feet, keep the dense
solve and their bits) and where its rank stays within :func:`lowrank_cap`; the solve's
end state outside Newton (the host's read, the verification rounds) keeps W.

Units: W in s/kg (m/s per N s), dt in s.
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit

#: contacts from which :func:`mbplugin.pipeline.implicit_kernel.newton` tries W's low rank
LOWRANK_MIN = 16
#: the pivoted Cholesky factor's stop: the remaining diagonal of W below this times its
#: largest diagonal entry (rounding of J M^-1 J^T leaves ~1e-15 of it)
RANK_TOL = 1e-12


@njit
def lowrank_cap(k):
    """The largest rank (int) for which a group of ``k`` contacts takes the low-rank
    direction: 0 below LOWRANK_MIN contacts, else a third of 3K (K)."""
    return 0 if k < LOWRANK_MIN else k


@njit
def psd_factor(gf, w0, m, ct):
    """W's pivoted Cholesky factor: W (m, m), symmetric positive semidefinite, row-major in
    ``gf`` from ``w0``, as C C^T with C = ``ct[:r].T`` (``ct`` (cap, m), rows written).
    Returns r (0: W = 0), or -1 where more than ``cap`` pivots are needed (W not of low
    rank: the caller's dense solve). Row p of W is its column p (symmetry)."""
    cap = ct.shape[0]
    d = np.empty(m)
    dmax = 0.0
    for i in range(m):
        d[i] = gf[w0 + i * m + i]
        if d[i] > dmax:
            dmax = d[i]
    if not dmax > 0.0:
        return 0 if dmax == 0.0 else -1
    tol = RANK_TOL * dmax
    for r in range(cap + 1):
        p = 0
        best = d[0]
        for i in range(1, m):
            if d[i] > best:
                best, p = d[i], i
        if best <= tol:
            return r
        if r == cap:
            return -1
        piv = np.sqrt(best)
        base = w0 + p * m
        for i in range(m):
            acc = gf[base + i]
            for q in range(r):
                acc -= ct[q, i] * ct[q, p]
            ct[r, i] = acc / piv
        for i in range(m):
            d[i] -= ct[r, i] * ct[r, i]
        d[p] = 0.0
    return -1


@njit
def lowrank_direction(ct, r, dFu, dFd, gc, dt, k, rhs, step):
    """The solve of (I - dt D C C^T) ``step`` = ``rhs`` (m,) by the Woodbury identity (module
    docstring): C = ``ct[:r].T``, D_i = ``dFu[i]`` - dt ``dFd[i]`` n_i^T (``dFu`` (K, 3, 3)
    N s/m the force's derivatives in velocity, ``dFd`` (K, 3) N/m in overlap, n_i the
    records' ``gc`` normals); ``step`` (m,) written. Returns False where the r x r system is
    singular (then A is: the caller's fallback direction)."""
    m = 3 * k
    u = np.empty((r, m))  # U^T: column l of U = dt D C[:, l]
    for i in range(k):
        nv = gc[i].normal
        for a in range(3):
            d0 = dFu[i, a, 0] - dt * (dFd[i, a] * nv[0])
            d1 = dFu[i, a, 1] - dt * (dFd[i, a] * nv[1])
            d2 = dFu[i, a, 2] - dt * (dFd[i, a] * nv[2])
            for q in range(r):
                u[q, 3 * i + a] = dt * (d0 * ct[q, 3 * i] + d1 * ct[q, 3 * i + 1]
                                        + d2 * ct[q, 3 * i + 2])
    s = np.empty((r, r))
    y = np.empty(r)
    for a in range(r):
        acc = 0.0
        for j in range(m):
            acc += ct[a, j] * rhs[j]
        y[a] = acc
        for b in range(r):
            acc = 0.0
            for j in range(m):
                acc += ct[a, j] * u[b, j]
            s[a, b] = (1.0 if a == b else 0.0) - acc
    z = np.linalg.solve(s, y) if r > 0 else y
    for j in range(r):
        if not np.isfinite(z[j]):
            return False
    for j in range(m):
        acc = rhs[j]
        for q in range(r):
            acc += u[q, j] * z[q]
        step[j] = acc
    return True


@njit
def lowrank_times(ct, r, m, x, out):
    """``out`` (m,) = C C^T ``x`` (m,) for C = ``ct[:r].T`` (:func:`psd_factor`): W x to the
    factor's tolerance in O(m r) rather than O(m^2) (units of W times those of x)."""
    y = np.zeros(r)
    for q in range(r):
        acc = 0.0
        row = ct[q]
        for j in range(m):
            acc += row[j] * x[j]
        y[q] = acc
    for j in range(m):
        out[j] = 0.0
    for q in range(r):
        yq = y[q]
        row = ct[q]
        for j in range(m):
            out[j] += row[j] * yq


@njit
def lowrank_end_state(P, ue, d0, ed, dt, k, ct, r, gc, d1, u1, work):
    """:func:`mbplugin.pipeline.implicit_kernel.end_state` with W = C C^T
    (:func:`psd_factor`): u1 = ue + C C^T P (K, 3) m/s, d1 = d0 - dt n . u1 + ed (K,) m, for
    impulses ``P`` (K, 3) N s; ``work`` (3K,) scratch."""
    m = 3 * k
    y = np.zeros(r)
    for q in range(r):
        acc = 0.0
        for i in range(k):
            for a in range(3):
                acc += ct[q, 3 * i + a] * P[i, a]
        y[q] = acc
    for j in range(m):
        work[j] = 0.0
    for q in range(r):
        yq = y[q]
        for j in range(m):
            work[j] += ct[q, j] * yq
    for i in range(k):
        for a in range(3):
            u1[i, a] = ue[i, a] + work[3 * i + a]
        nv = gc[i].normal
        un = u1[i, 0] * nv[0] + u1[i, 1] * nv[1] + u1[i, 2] * nv[2]
        d1[i] = d0[i] - dt * un + ed[i]
