"""The implicit host step of large groups of coupled contacts (piles), by nonlinear Gauss-Seidel.

The exact sub-stepper (:mod:`.substep_compiled`) integrates each group of contacts
coupled through the Delassus operator W (the connected components of its 3x3 block pattern)
with DOP853 / Radau steps, its Newton matrices dense, and stops a group at every onset, end
and peak to book it in the contact store. That is exact and cheap for the groups it was built
for (a ball on the ground: one contact; a stack, a robot's feet: a few), but not for a pile:
1000 spheres side by side and in columns make one group of ~3000 contacts (dense matrices of
(12000)^2 values, a Python round trip per event of any of its contacts). Measured before this
module: 200 spheres in two layers took 0.2-35 s per host step once they touched (the SciPy
path, which took every group above 32 contacts), against 1-4 ms for PyBullet's own step.

A group with more states than the compiled path takes (:data:`mbplugin.pipeline.substep.
COMPILED_MAX_STATES`) is solved here instead, implicitly over the host step, as the contacts on
articulated links are (:mod:`mbplugin.pipeline.implicit`; Castro, Qu, Kuppuswamy, Alspach &
Sherman, IEEE RA-L 5 (2020) 1859-1866, "TAMSI"):

    u1 = u0 + a_free dt + W P,     delta1 = delta0 - dt n . u1,
    P  = dt [ F_N(delta1, -n . u1) n + F_t(v_t1, (F_N0 + F_N1) / 2) ]

(backward Euler on the normal force: stable for any contact stiffness, the static equilibrium
exact; the force of each contact from :func:`mbplugin.pipeline.implicit_kernel.end_force`, the
implicit step's one evaluation: the law by kernel id, the rules' clipping, regularised friction
or the tangential spring with the trapezoidal Coulomb limit). The impulses are found by
nonlinear block Gauss-Seidel over the contacts (the sequential-impulse idea of the host's own
solver, Catto 2005, with each contact's compliant 3-D problem solved by Newton's method instead
of a projection): W is kept sparse (CSC, its column of contact i is the velocity change of
every contact for a unit impulse at i), a sweep visits every contact once, solves its own
P_i with the others fixed and adds W_(:, i) dP_i to the velocities: O(nnz(W)) per sweep.
Sweeps alternate forward and backward and start from the last host step's impulses (by contact
key); they stop when no impulse changed by more than rtol x (max |P| + 1e-12). For a monotone
law (force non-decreasing in the overlap and its rate) without friction the step's problem is
the minimisation of a strictly convex function of the impulses, and Gauss-Seidel converges to
its unique root from any start.

Converging is not converging fast: Gauss-Seidel's rate is 1 - O(1 / condition number), and one
body with many coplanar contacts (a cylinder's flat face, a 64-sided prism: 64 corner contacts,
W (192, 192) of rank 6) with regularised friction (slope dt mu F_N / v_eps ~ 13 kg per corner
at v_eps = 1e-4 m/s, against W's eigenvalues up to 213 kg^-1) makes it creep: the sweeps'
largest change fell monotonically from 2e-2 to 2e-6 N s in 3000 sweeps (no cycle), 1e4 times
the tolerance; the sweeps needed scale with mu / v_eps (mu 0.01: 858, 0.1: 14770; v_eps 1e-2:
1080, 1e-3: 18919; frictionless: 175). Freezing the trapezoidal Coulomb limit would not help
(the slope is the same); Newton's method on the coupled problem converges in 6 iterations
(~2 ms). So a solve that has not converged after STALL_SWEEPS sweeps, or whose rate over the
last ten sweeps says it will not, goes to :func:`_dense`: each connected group of at most
DENSE_MAX contacts solved by the implicit step's dense Newton method with its line search and
frozen-limit fallback (:func:`mbplugin.pipeline.implicit_kernel.solve`); larger groups sweep
on to MAX_SWEEPS, resumed where they stopped (bit for bit the uninterrupted sweeps). The
stall is the group's (its conditioning), so the next solve of the same contacts (by key, in
the same store) goes to the fallback at once (REMEMBER_STALLS: the sliding cylinder's step
7.8 -> 2.4 ms, benchmarks/bench_large_groups_flat.py); a solve without a stalled predecessor
sweeps as before. A solve
that converges within the budget, and every solve of a group too large for the fallback, is
unchanged bit for bit (the piles of benchmarks/host_pins.py: <= 66 sweeps).

What it gives up: the impacts inside a large group are not located (a contact starts at the
step where its end overlap is positive, its impact speed the approach speed there) and
backward Euler damps them, so the law's c_r holds only for the groups the exact sub-stepper
takes (a lone impact is one contact: always exact); the static loads and overlaps, the Coulomb
limit and the host's semi-implicit kinematics are exact. Laws with ODE states are not
integrated here (such a step goes to the SciPy path).
"""

from __future__ import annotations

import math
import time
import weakref
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from mbplugin._jit import borrowed, keep_alive, njit, njit_inline
from mbplugin.errors import IntegrationError
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.batch import ContactBatch
from mbplugin.pipeline.implicit_kernel import contact_slopes, end_force
from mbplugin.pipeline.layout import CONTACT, group_float_size, put_head
from mbplugin.pipeline.store import ContactStore
from mbplugin.pipeline.substep import batch_at

#: Gauss-Seidel sweeps of one solve before the step is reported as failed
MAX_SWEEPS = 20_000
#: Gauss-Seidel sweeps after which a solve that has not converged is taken as stalled and its
#: groups of at most DENSE_MAX contacts go to the dense Newton fallback (:func:`_dense`); the
#: piles of benchmarks/host_pins.py converge in <= 66 sweeps
STALL_SWEEPS = 300
#: the largest group (contacts) of the dense Newton fallback (its Newton matrix (3m)^2)
DENSE_MAX = 256
#: Newton iterations of one contact's local problem per visit
LOCAL_MAX = 30
#: solves per host step: contacts that the solved step closes start and the step is solved again
MAX_ROUNDS = 20

#: whether a solve of the contacts of a solve that stalled goes to the dense fallback at once
#: (benchmarks/bench_large_groups_flat.py measures it on and off)
REMEMBER_STALLS = True
#: per contact store, the keys (bytes) of the last solve that stalled and went to the dense
#: fallback: the next solve of the same contacts goes to it at once (:func:`solve`)
_STALLED: weakref.WeakKeyDictionary[ContactStore, bytes] = weakref.WeakKeyDictionary()


@njit
def _end(d, i, u0, u1, u2, dt, gc, fn0, a, b, c):
    """:func:`mbplugin.pipeline.implicit_kernel.end_force` compiled once for this module (not
    inlined at each of its five uses: their compilation took ~18 s on a loaded machine, the
    large-group kernels now ~6 s)."""
    return end_force(d, i, u0, u1, u2, dt, gc, fn0, a, b, c, -1.0)


@njit
def _force_at(d, i, dv, u0, u1, u2, dt, gc, fn0, s0):
    """The end-of-step force (f0, f1, f2) of contact i at overlap ``dv`` and velocity u."""
    d[i] = dv
    f0, f1, f2, _, _, _, _ = _end(d, i, u0, u1, u2, dt, gc, fn0[i], s0[i, 0], s0[i, 1],
                                  s0[i, 2])
    return f0, f1, f2


@njit
def _slopes_at(d, i, dv, u0, u1, u2, dt, gc, fn0, s0, dFd, dFu, D):
    """Contact i's force derivative D = dF/du - dt dF/ddelta n^T (3, 3) (N s/m) at overlap
    ``dv`` (m) and velocity u (m/s) into ``D``: the derivatives of
    :func:`mbplugin.pipeline.implicit_kernel.contact_slopes` (the law's and the friction's
    analytic slopes, as the implicit step's Newton method takes them; ``dFd`` (m, 3), ``dFu``
    (m, 3, 3) its scratch rows), the overlap's dependence on u (d = d0 - dt n . u) by the
    chain rule. Compiled once for this module, as :func:`_end`."""
    d[i] = dv
    contact_slopes(d, i, u0, u1, u2, dt, gc, fn0[i], s0[i, 0], s0[i, 1], s0[i, 2], -1.0, dFd,
                   dFu)
    nv = gc[i].normal
    for a in range(3):
        for j in range(3):
            D[a, j] = dFu[i, a, j] - dt * dFd[i, a] * nv[j]


@njit_inline
def _solve3(a, r0, r1, r2):
    """x with A x = r for the 3x3 row-major ``a`` (Cramer's rule); ok False when singular."""
    c00 = a[4] * a[8] - a[5] * a[7]
    c01 = a[5] * a[6] - a[3] * a[8]
    c02 = a[3] * a[7] - a[4] * a[6]
    det = a[0] * c00 + a[1] * c01 + a[2] * c02
    if not (det != 0.0 and math.isfinite(det)):
        return 0.0, 0.0, 0.0, False
    x0 = (r0 * c00 + r1 * (a[2] * a[7] - a[1] * a[8]) + r2 * (a[1] * a[5] - a[2] * a[4])) / det
    x1 = (r0 * c01 + r1 * (a[0] * a[8] - a[2] * a[6]) + r2 * (a[2] * a[3] - a[0] * a[5])) / det
    x2 = (r0 * c02 + r1 * (a[1] * a[6] - a[0] * a[7]) + r2 * (a[0] * a[4] - a[1] * a[3])) / det
    return x0, x1, x2, True


@njit
def _local(i, P, U, d0, dt, gc, fn0, s0, wd, d, A, D, dFd, dFu, tol, counters):
    """Contact i's impulse with the others fixed: Newton's method on
    R(p) = p - dt F(d0_i - dt n . u(p), u(p)), u(p) = b + W_ii p (b: its velocity without its
    own impulse), with the implicit step's force derivatives (:func:`_slopes_at`; ``D``
    (3, 3), ``dFd``, ``dFu`` scratch), the Newton matrix I - dt (dF/du - dt dF/ddelta n^T)
    W_ii and backtracking on |R|. Returns the new impulse (three floats)."""
    nv = gc[i].normal
    n0, n1, n2 = nv[0], nv[1], nv[2]
    w = 9 * i
    p0, p1, p2 = P[i, 0], P[i, 1], P[i, 2]
    b0 = U[3 * i] - (wd[w] * p0 + wd[w + 1] * p1 + wd[w + 2] * p2)
    b1 = U[3 * i + 1] - (wd[w + 3] * p0 + wd[w + 4] * p1 + wd[w + 5] * p2)
    b2 = U[3 * i + 2] - (wd[w + 6] * p0 + wd[w + 7] * p1 + wd[w + 8] * p2)
    u0 = U[3 * i]
    u1 = U[3 * i + 1]
    u2 = U[3 * i + 2]
    dv = d0[i] - dt * (u0 * n0 + u1 * n1 + u2 * n2)
    f0, f1, f2 = _force_at(d, i, dv, u0, u1, u2, dt, gc, fn0, s0)
    counters[2] += 1
    r0, r1, r2 = p0 - dt * f0, p1 - dt * f1, p2 - dt * f2
    for _ in range(LOCAL_MAX):
        if max(abs(r0), abs(r1), abs(r2)) <= tol:
            break
        counters[1] += 1
        # D = dF/du - dt dF/ddelta n^T
        _slopes_at(d, i, dv, u0, u1, u2, dt, gc, fn0, s0, dFd, dFu, D)
        counters[2] += 1
        # Newton matrix M = I - dt D W_ii (into A[9:18])
        for a in range(3):
            for j in range(3):
                acc = 0.0
                for q in range(3):
                    acc += D[a, q] * wd[w + 3 * q + j]
                A[9 + 3 * a + j] = (1.0 if a == j else 0.0) - dt * acc
        x0, x1, x2, ok = _solve3(A[9:18], -r0, -r1, -r2)
        if not ok:
            x0, x1, x2 = -r0, -r1, -r2
        rn = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
        lam = 1.0
        while True:
            t0, t1, t2 = p0 + lam * x0, p1 + lam * x1, p2 + lam * x2
            v0 = b0 + wd[w] * t0 + wd[w + 1] * t1 + wd[w + 2] * t2
            v1 = b1 + wd[w + 3] * t0 + wd[w + 4] * t1 + wd[w + 5] * t2
            v2 = b2 + wd[w + 6] * t0 + wd[w + 7] * t1 + wd[w + 8] * t2
            dt1 = d0[i] - dt * (v0 * n0 + v1 * n1 + v2 * n2)
            k0, k1, k2 = _force_at(d, i, dt1, v0, v1, v2, dt, gc, fn0, s0)
            counters[2] += 1
            s0_, s1_, s2_ = t0 - dt * k0, t1 - dt * k1, t2 - dt * k2
            rt = math.sqrt(s0_ * s0_ + s1_ * s1_ + s2_ * s2_)
            if rt < (1.0 - 1e-4 * lam) * rn or lam < 1e-6:
                break
            lam *= 0.5
        p0, p1, p2 = t0, t1, t2
        u0, u1, u2, dv = v0, v1, v2, dt1
        f0, f1, f2 = k0, k1, k2
        r0, r1, r2 = s0_, s1_, s2_
    return p0, p1, p2


@njit
def _matvec(P, ustar, wptr, widx, wval, U):
    """U = ustar + W P (W in CSC: column c's rows ``widx[wptr[c]:wptr[c + 1]]``)."""
    for j in range(U.shape[0]):
        U[j] = ustar[j]
    for c in range(wptr.shape[0] - 1):
        x = P[c // 3, c % 3]
        if x != 0.0:
            for e in range(wptr[c], wptr[c + 1]):
                U[widx[e]] += wval[e] * x


@njit
def gauss_seidel(P, U, ustar, d0, dt, gc, fn0, s0, wptr, widx, wval, wd, rtol,
                 skip_free, counters, max_sweeps, predict, resume):
    """Nonlinear block Gauss-Seidel on the step's impulses ``P`` (m, 3; updated in place) from
    their current values; ``U`` (3m) receives u1 = ustar + W P. ``skip_free``: a contact that
    is not active and carries no impulse has no force (no viscous friction) and is not visited.
    Returns True when a sweep changed no impulse by more than rtol (max |P| + 1e-12), False
    after ``max_sweeps``, or with ``predict`` as soon as the rate of the last ten sweeps
    (the largest change, every tenth sweep from the 20th) says the tolerance would not be
    reached in the remaining sweeps; counters += (sweeps, Newton iterations, force
    evaluations). ``resume`` (2,): in, the first sweep's index (0: a new solve) and, resuming,
    the largest impulse so far; out, the next sweep's index and that largest impulse. After
    False, ``U`` is the sweeps' own (not recomputed), so that a solve resumed to a larger
    ``max_sweeps`` is the uninterrupted one bit for bit."""
    m = P.shape[0]
    work = (np.empty(m), np.empty(18), np.empty((3, 3)), np.empty((m, 3)), np.empty((m, 3, 3)))
    d, A, D, dFd, dFu = borrowed(work)
    P, U, ustar, d0, gc, fn0, s0, wptr, widx, wval, wd = borrowed(
        (P, U, ustar, d0, gc, fn0, s0, wptr, widx, wval, wd))
    for i in range(m):
        d[i] = d0[i]
    first = int(resume[0])
    pmax = resume[1]
    if first == 0:
        _matvec(P, ustar, wptr, widx, wval, U)
        pmax = 0.0
        for i in range(m):
            for a in range(3):
                pmax = max(pmax, abs(P[i, a]))
    prev = 0.0
    for sweep in range(first, max_sweeps):
        counters[0] += 1
        resume[0] = sweep + 1
        dmax = 0.0
        tol = rtol * (pmax + 1e-12)
        for q in range(m):
            i = q if sweep % 2 == 0 else m - 1 - q
            if (skip_free and not gc[i].active and P[i, 0] == 0.0 and P[i, 1] == 0.0
                    and P[i, 2] == 0.0):
                continue
            n0, n1, n2 = _local(i, P, U, d0, dt, gc, fn0, s0, wd, d, A, D, dFd, dFu,
                                0.1 * tol, counters)
            x0, x1, x2 = n0 - P[i, 0], n1 - P[i, 1], n2 - P[i, 2]
            if x0 == 0.0 and x1 == 0.0 and x2 == 0.0:
                continue
            P[i, 0], P[i, 1], P[i, 2] = n0, n1, n2
            for a in range(3):
                x = x0 if a == 0 else (x1 if a == 1 else x2)
                if x != 0.0:
                    c = 3 * i + a
                    for e in range(wptr[c], wptr[c + 1]):
                        U[widx[e]] += wval[e] * x
            dmax = max(dmax, abs(x0), abs(x1), abs(x2))
            pmax = max(pmax, abs(n0), abs(n1), abs(n2))
        resume[1] = pmax
        if dmax <= rtol * (pmax + 1e-12):
            _matvec(P, ustar, wptr, widx, wval, U)
            keep_alive(work)
            return True
        if predict and sweep % 10 == 9:
            if sweep >= 19 and (dmax >= prev or 10.0 * math.log(rtol * (pmax + 1e-12) / dmax)
                                / math.log(dmax / prev) > max_sweeps - 1 - sweep):
                break
            prev = dmax
    keep_alive(work)
    return False


@njit
def end_of_step(U, d0, dt, gc, fn0, s0, d1, F, S1, FN):
    """The end state of the solved step: overlaps d1 = d0 - dt n . u1 (m), forces F (m, 3)
    (N, on body b), the springs' displacements S1 (m, 3) and the normal forces FN (m)."""
    m = d0.shape[0]
    for i in range(m):
        nv = gc[i].normal
        d1[i] = d0[i] - dt * (U[3 * i] * nv[0] + U[3 * i + 1] * nv[1]
                              + U[3 * i + 2] * nv[2])
    for i in range(m):
        f0, f1, f2, a, b, c, fn = _end(d1, i, U[3 * i], U[3 * i + 1], U[3 * i + 2], dt, gc,
                                       fn0[i], s0[i, 0], s0[i, 1], s0[i, 2])
        F[i, 0], F[i, 1], F[i, 2] = f0, f1, f2
        S1[i, 0], S1[i, 1], S1[i, 2] = a, b, c
        FN[i] = fn


@njit
def _start_normal(d0, u0, gc, s0, fn0):
    """The normal force (m) at the step's start (overlaps ``d0``, velocities ``u0`` (m, 3))."""
    for i in range(d0.shape[0]):
        fn0[i] = _end(d0, i, u0[i, 0], u0[i, 1], u0[i, 2], 0.0, gc, 0.0, s0[i, 0],
                      s0[i, 1], s0[i, 2])[6]


@njit
def _put_heads(gc, hd):
    """The header ``hd`` (one record of :data:`mbplugin.pipeline.layout.HEAD`) into every
    contact record of ``gc``."""
    for i in range(gc.shape[0]):
        put_head(gc[i], hd[0])


@njit
def _diag_blocks(m, wptr, widx, wval, wd):
    """W's 3x3 diagonal blocks (m, 9; row-major) from its CSC arrays."""
    for k in range(9 * m):
        wd[k] = 0.0
    for c in range(3 * m):
        i = c // 3
        for e in range(wptr[c], wptr[c + 1]):
            row = widx[e]
            if row // 3 == i:
                wd[9 * i + 3 * (row % 3) + c % 3] = wval[e]


@njit
def _residual(P, U, d0, n, dt, gc, fn0, s0, d, R, D, jac, counters):
    """R = P - dt F(d0 - dt n . u, u) of every contact at u = ``U`` (3m; ustar + W P) into
    ``R`` (3m); with ``jac`` also each contact's D = dF/du - dt dF/ddelta n^T (m, 3, 3) by
    :func:`_slopes_at` (as :func:`_local`). Returns max |R|."""
    m = P.shape[0]
    rmax = 0.0
    mj = m if jac else 0
    dFd, dFu = np.empty((mj, 3)), np.empty((mj, 3, 3))
    for i in range(m):
        u0, u1, u2 = U[3 * i], U[3 * i + 1], U[3 * i + 2]
        n0, n1, n2 = n[i, 0], n[i, 1], n[i, 2]
        dv = d0[i] - dt * (u0 * n0 + u1 * n1 + u2 * n2)
        f0, f1, f2 = _force_at(d, i, dv, u0, u1, u2, dt, gc, fn0, s0)
        counters[2] += 1
        R[3 * i] = P[i, 0] - dt * f0
        R[3 * i + 1] = P[i, 1] - dt * f1
        R[3 * i + 2] = P[i, 2] - dt * f2
        rmax = max(rmax, abs(R[3 * i]), abs(R[3 * i + 1]), abs(R[3 * i + 2]))
        if not jac:
            continue
        _slopes_at(d, i, dv, u0, u1, u2, dt, gc, fn0, s0, dFd, dFu, D[i])
        counters[2] += 1
        d[i] = dv
    return rmax


#: Newton iterations of the matrix-free fallback (:func:`_matrix_free`)
FREE_NEWTON_MAX = 50


def _matrix_free(P: np.ndarray, U: np.ndarray, ustar: np.ndarray, d0: np.ndarray,
                 n: np.ndarray, dt: float, gc: np.ndarray, fn0: np.ndarray,
                 s0: np.ndarray, W: sp.spmatrix, rtol: float, counters: np.ndarray) -> bool:
    """The fallback of a stalled solve with a group too large for the dense one: Newton's
    method on the same residual R(P) = P - dt F(d0 - dt n . u, u), u = ustar + W P, its
    linear systems (I - dt D W) dP = -R solved without forming the matrix, by GMRES (Saad &
    Schultz, SIAM J. Sci. Stat. Comput. 7 (1986) 856-869; SciPy's ``gmres``) with the
    products W x (sparse) and D y (3x3 blocks), and the backtracking line search on |R| of
    :func:`_local`. Why GMRES converges where Gauss-Seidel crept: the stall's groups are few
    rigid bodies with many contacts, W = J M^-1 J^T of rank 6 per body, so I - dt D W is the
    identity plus a matrix of rank 6 b and GMRES ends in at most 6 b + 1 iterations whatever
    the conditioning (Saad, Iterative Methods for Sparse Linear Systems, 2003, Prop. 6.2 on
    the Krylov space's dimension). Converged: max |R| <= rtol (max |P| + 1e-12). ``P``, ``U``
    updated in place only when it converges (True); else they are left as they were."""
    from scipy.sparse.linalg import LinearOperator, gmres

    m = P.shape[0]
    Wr = W.tocsr()
    n = np.ascontiguousarray(n, dtype=float)
    d = np.array(d0, dtype=float)
    R, D = np.empty(3 * m), np.empty((m, 3, 3))
    Pn, Un = P.copy(), U.copy()
    rmax = _residual(Pn, Un, d0, n, dt, gc, fn0, s0, d, R, D, True, counters)

    def apply(x: np.ndarray) -> np.ndarray:
        y = Wr @ x
        return x - dt * np.einsum("kij,kj->ki", D, y.reshape(m, 3)).ravel()

    A = LinearOperator((3 * m, 3 * m), matvec=apply, dtype=float)
    Rt = np.empty(3 * m)
    for _ in range(FREE_NEWTON_MAX):
        if rmax <= rtol * (np.abs(Pn).max(initial=0.0) + 1e-12):
            P[:], U[:] = Pn, Un
            return True
        counters[1] += 1
        step, info = gmres(A, -R, rtol=1e-12, atol=0.0, restart=min(3 * m, 100),
                           maxiter=20)
        if info < 0 or not np.all(np.isfinite(step)):
            return False
        rn = float(np.linalg.norm(R))
        lam = 1.0
        while True:
            Pt = Pn + lam * step.reshape(m, 3)
            Ut = ustar + Wr @ Pt.ravel()
            _residual(Pt, Ut, d0, n, dt, gc, fn0, s0, d, Rt, D, False, counters)
            if float(np.linalg.norm(Rt)) < (1.0 - 1e-4 * lam) * rn or lam < 1e-6:
                break
            lam *= 0.5
        Pn, Un = Pt, Ut
        rmax = _residual(Pn, Un, d0, n, dt, gc, fn0, s0, d, R, D, True, counters)
    return False


def _dense(P: np.ndarray, U: np.ndarray, ustar: np.ndarray, d0: np.ndarray, dt: float,
           gc: np.ndarray, fn0: np.ndarray, s0: np.ndarray, W: sp.spmatrix,
           rtol: float, counters: np.ndarray) -> bool | None:
    """The fallback of a stalled Gauss-Seidel solve: each group (connected component of W's
    pattern) of at most DENSE_MAX contacts solved by the implicit step's dense Newton method
    (:func:`mbplugin.pipeline.implicit_kernel.solve`: the same residual R(P) = P - dt F, a line
    search on the merit function that cannot stall for a monotone law, and the frozen-Coulomb-
    limit fallback) from the impulses ``P`` (m, 3; updated in place, ``U`` = ustar + W P with
    them). None (nothing changed) when a group is larger; else whether every group converged.

    Why Gauss-Seidel stalls there: the m contacts of one rigid body on a plane (a cylinder's 64
    rim corners) make W (3m, 3m) of rank 6, and each contact's regularised friction has the
    slope dt mu F_N / v_eps in its own velocity (~13 kg for the cylinder's 1.3 N per corner,
    v_eps = 1e-4 m/s, dt = 2 ms) against W's eigenvalues up to 213 kg^-1: the coupling
    through W (~13 x 213 ~ 3e3) dwarfs each contact's own term (the identity of
    R = P - dt F), Gauss-Seidel's rate is 1 - O(1 / 3e3) or worse, and the sweeps creep (the
    largest change still ~2e-6 N s per sweep after 3000 sweeps, 1e4 times the tolerance,
    decreasing monotonically: no cycle). Newton's method solves the coupled problem at once
    (6 iterations, ~2 ms for the 64 contacts)."""
    m = P.shape[0]
    coo = W.tocoo()
    blocks = sp.coo_matrix((np.ones(coo.nnz), (coo.row // 3, coo.col // 3)), shape=(m, m))
    ncomp, labels = csgraph.connected_components(blocks, directed=False)
    sizes = np.bincount(labels, minlength=ncomp)
    if sizes.max() > DENSE_MAX:
        return None
    counters[3] += 1
    Wd = W.tocsr()
    ue = ustar.reshape(m, 3)
    sub = np.zeros(3, dtype=np.int64)
    ok = True
    for c in range(ncomp):
        idx = np.flatnonzero(labels == c)
        k = len(idx)
        cols = (3 * idx[:, None] + np.arange(3)).ravel()
        g = np.zeros(int(group_float_size(k)))
        g[:9 * k * k] = Wd[cols][:, cols].toarray().ravel()  # W leads gf
        gk = gc[idx]
        Pk, okk = ik.solve(P[idx], ue[idx], d0[idx], np.zeros(k), dt, g, gk, fn0[idx],
                           s0[idx], rtol, sub)
        P[idx] = Pk
        ok = ok and okk
    counters[1] += sub[0]
    counters[2] += sub[1]
    _matvec(P, ustar, W.indptr, W.indices, np.ascontiguousarray(W.data, dtype=float), U)
    return ok


def solve(store: ContactStore, batch: ContactBatch, W: sp.spmatrix, a_free: np.ndarray,
          d0: np.ndarray, u0: np.ndarray, fr: np.ndarray, mu: np.ndarray,
          s0: np.ndarray | None, t0: float,
          dt: float, rtol: float, p0: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """The implicit step of the m contacts of ``batch`` (one or more large groups; ``W``
    (3m, 3m) their Delassus operator, ``a_free`` (m, 3), ``d0`` (m,), ``u0`` (m, 3) their free
    acceleration, overlap and velocity at the step's start, ``fr`` the friction and spring
    parameters (one record of :data:`mbplugin.pipeline.layout.HEAD`), ``mu``
    (m, 2) each contact's friction coefficients (mu, mu_s), ``s0``
    (m, 3) the springs' displacements or None, ``p0`` (m, 3) a first guess of the impulses or
    None). Contacts the step closes start in the store (its rules, at ``t0``); the store's
    other bookings are the caller's (one commit of the whole batch at the step's end).

    Returns (impulse P (m, 3) on body b (N s), overlap d1 (m,), velocity u1 (m, 3), carried
    force (m,) bool, the springs' end displacements (m, 3), counters)."""
    wall = time.perf_counter()
    m = len(batch)
    gc = np.zeros(m, dtype=CONTACT)
    _put_heads(gc, fr)
    gc["normal"] = batch.normal
    gc["mu"], gc["mu_s"] = mu[:, 0], mu[:, 1]
    ik.refresh_rows(gc, store, batch)
    # W's columns: a canonical CSR W's rows, W being symmetric (J M^-1 J^T; its two
    # triangles assembled separately agree to rounding), else its CSC
    Wc = W if (sp.issparse(W) and W.format == "csr" and W.has_canonical_format) else (
        sp.csc_matrix(W))
    Wc.sum_duplicates()
    wptr, widx = Wc.indptr, Wc.indices
    wval = np.ascontiguousarray(Wc.data, dtype=float)
    wd = np.zeros(9 * m)
    _diag_blocks(m, wptr, widx, wval, wd)
    d0 = np.ascontiguousarray(d0, dtype=float)
    u0 = np.ascontiguousarray(u0, dtype=float).reshape(m, 3)
    s0 = np.zeros((m, 3)) if s0 is None else np.ascontiguousarray(s0, dtype=float)
    ustar = np.ascontiguousarray((u0 + a_free * dt).ravel())
    # the normal force at the step's start (the trapezoidal Coulomb limit's first term)
    fn0 = np.empty(m)
    _start_normal(d0, u0, gc, s0, fn0)
    P = np.zeros((m, 3)) if p0 is None else np.array(p0, dtype=float, order="C")
    P[~gc["active"]] = 0.0  # a contact no longer active carries no impulse yet
    U = np.empty(3 * m)
    counters = np.zeros(4, dtype=np.int64)
    h = fr[0]
    skip_free = bool(h["st_on"] or not h["fr_on"] or h["fr_viscous"] == 0.0)
    n = batch.normal
    keys = np.ascontiguousarray(batch.key).tobytes()
    _matvec(P, ustar, wptr, widx, wval, U)
    rounds = 0
    for rounds in range(1, MAX_ROUNDS + 1):
        # contacts the step closes (end overlap > 0 with the velocity the solve gives them,
        # their own impulse 0): their onset in the store (its rules: coefficient rows, the
        # impact speed -n . u latched), then the step is solved again
        u_now = U.reshape(m, 3)
        d_end = d0 - dt * np.einsum("ij,ij->i", u_now, n)
        new = ~gc["active"] & (d_end > 0)
        if len(store.latched_keys) and new.any():
            new &= ~store.latched(batch)
        if rounds > 1 and not new.any():
            break
        if new.any():
            idx = np.flatnonzero(new)
            store.start(batch_at(batch.take(idx), d_end[idx], u_now[idx]), t0)
            ik.refresh_rows(gc, store, batch)
        resume = np.zeros(2)
        # the same contacts as a solve that stalled: its dense fallback at once (the stall
        # is the group's conditioning, not the step's: the sliding cylinder's 64 corners
        # stalled at every step, ~30 sweeps before the fallback, ~60 % of the step's cost)
        again = REMEMBER_STALLS and _STALLED.get(store) == keys
        ok = False if again else gauss_seidel(
            P, U, ustar, d0, float(dt), gc, fn0, s0, wptr, widx, wval, wd, float(rtol),
            skip_free, counters, STALL_SWEEPS, True, resume)
        if not ok:
            # stalled: groups of few bodies and many contacts (a flat face's corners) by
            # dense Newton, else Gauss-Seidel on (resumed: as if never interrupted)
            ok = _dense(P, U, ustar, d0, float(dt), gc, fn0, s0, Wc, float(rtol), counters)
            if ok is None and _matrix_free(P, U, ustar, d0, n, float(dt), gc, fn0, s0, Wc,
                                           float(rtol), counters):
                ok = True
                counters[3] += 1
            swept = ok is None
            if swept:
                ok = gauss_seidel(P, U, ustar, d0, float(dt), gc, fn0, s0, wptr, widx,
                                  wval, wd, float(rtol), skip_free, counters, MAX_SWEEPS,
                                  False, resume)
            if not ok:
                raise IntegrationError(
                    f"implicit step of a large contact group: Gauss-Seidel did not converge "
                    f"in {MAX_SWEEPS} sweeps ({m} contacts)" if swept else
                    f"implicit step of a large contact group: Newton's method did not converge "
                    f"({m} contacts; a contact law whose force decreases with the overlap or "
                    f"its rate?)")
    if counters[3]:
        _STALLED[store] = keys
    else:
        _STALLED.pop(store, None)
    d1 = np.empty(m)
    F = np.empty((m, 3))
    S1 = np.empty((m, 3))
    FN = np.empty(m)
    end_of_step(U, d0, float(dt), gc, fn0, s0, d1, F, S1, FN)
    loaded = (F[:, 0] != 0) | (F[:, 1] != 0) | (F[:, 2] != 0)
    info = {"sweeps": int(counters[0]), "newton": int(counters[1]), "nfev": int(counters[2]),
            "dense": int(counters[3]), "rounds": rounds, "wall": time.perf_counter() - wall}
    return P, d1, U.reshape(m, 3).copy(), loaded, S1, info

