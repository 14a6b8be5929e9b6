"""Compiled Newton solve of the implicit contact step (:mod:`mbplugin.pipeline.implicit`).

The host step's impulse P (K, 3) solves R(P) = P - dt F(state(P)) = 0 with

    u1 = ue + W P,     delta1 = d0 - dt n . u1 + ed,
    F  = F_N(delta1, -n . u1) n + F_t(v_t1, (F_N0 + F_N1) / 2)

(the module docstring of :mod:`mbplugin.pipeline.implicit`; ``ue`` = u0 + a_free dt plus the
host's velocity defect, ``ed`` its overlap defect). :func:`newton` is the compiled
counterpart of the NumPy reference (:meth:`ImplicitStep._solve
<mbplugin.pipeline.implicit.ImplicitStep>`): the same iteration from the same start and the
same line search, but with the force's derivatives evaluated with the force
(:func:`step_slopes`: the law's and the friction's own, :func:`mbplugin.laws.kernels.slopes`,
:func:`mbplugin.pipeline.friction.friction_slopes`) where the reference takes forward
differences (4 more evaluations per iteration), so both reach the same root to the
tolerance (tests/test_bullet_implicit.py: the A1's normal forces within 1e-9 of its weight).

What a solve costs (``benchmarks/bench_newton.py``, the A1's recorded solves replayed, thread
CPU time; BENCHMARKS.md): on PyBullet at 1/240 s (3.25 contacts per solve, ~1.7 solves per host
step with the verification rounds) 4.97 iterations per solve, the converged test included (a
quiet stance step starts ~20% off in the residual: the friction's regularised slope mu F_N /
v_eps makes the tangential velocity swing by about its own size for a 0.4% change of the
impulse, three Newton steps; starts 10% or more off, half the solves, take 5.7-8.7
iterations with line searches), 9.2 force evaluations per solve (26.8 with finite differences)
and 0.63-0.69 of the time of finite differences and LAPACK's solve (7.5-10.7 against
10.8-17.0 us per solve, load 7-13); on MuJoCo at 2 ms 3.59 iterations, 4.9 evaluations (16.1),
0.67-0.70 of the time (4.7-4.8 against 6.8-7.2 us). Per iteration: one evaluation with its
derivatives (~0.45 us for 4 contacts), the Newton matrix, its LU (:func:`lu_solve`, ~0.6 us
for 12 x 12 against ~1.8 us for ``np.linalg.solve``) and, where the full step overshoots, the
line search.

Every force is evaluated by the compiled machinery of the sub-stepper, with its data layout:
the contacts are one group of :mod:`.substep_compiled` (their records ``gc`` of
:data:`mbplugin.pipeline.layout.CONTACT`: normal, the store's coefficient row and memory,
kernel id, contact mode, active flag, friction and stick parameters; the float array ``gf``:
W, then the force buffers), the
law's normal force by kernel id (:func:`mbplugin.laws.kernels.force`) through the rules'
clipping (:func:`mbplugin.pipeline.rules.applied`), the engine's regularised Coulomb friction
(:func:`mbplugin.pipeline.friction.friction_scalar`) or the tangential spring
(:func:`mbplugin.pipeline.stick.stick_force_scalar`, its displacement stepped by backward Euler,
:func:`mbplugin.pipeline.stick.stick_step_scalar`), each with the trapezoidal Coulomb limit as
its normal-force argument. No formula is written here.
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import borrowed, keep_alive, njit, njit_inline
from mbplugin.laws.base import Law, power_timescale
from mbplugin.laws.kernels import force, onset_coefficients, slopes
from mbplugin.pipeline.batch import ContactBatch
from mbplugin.pipeline.friction import Friction, friction_scalar, friction_slopes
from mbplugin.pipeline.layout import (
    CONTACT,
    coef_tuple,
    group_float_len,
    head,
    put_head,
    put_law_row,
    state_tuple,
)
from mbplugin.pipeline.lowrank import (
    lowrank_cap,
    lowrank_direction,
    lowrank_end_state,
    lowrank_times,
    psd_factor,
)
from mbplugin.pipeline.radau import _lu_factor, _lu_solve
from mbplugin.pipeline.rules import applied, onset_speed
from mbplugin.pipeline.stick import Stick, stick_force_scalar, stick_step_scalar
from mbplugin.pipeline.store import ContactStore
from mbplugin.pipeline.substep import _law_tables

#: Newton iterations of one solve (with the trapezoidal Coulomb limit, then per round of the
#: frozen-limit fallback, see :func:`solve`)
MAX_NEWTON = 60
#: rounds of the frozen-limit fallback of :func:`solve`
FALLBACK_ROUNDS = 30
#: finite-difference steps of the force derivatives: overlap (m), velocity (m/s)
EPS_D, EPS_U = 1e-9, 1e-7



#: the last tuple of laws :func:`compiled_laws` answered for, and its answer
_COMPILED_LAWS: list[tuple[object, bool]] = []


def compiled_laws(store: ContactStore) -> bool:
    """Whether every law of ``store`` evaluates through a compiled kernel without ODE states (a
    third-party law that overrides ``force_raw`` has none, and the backend refuses laws with
    ODE states on this path: the NumPy reference takes such steps); kept for the last tuple
    of laws."""
    laws = store.laws
    if _COMPILED_LAWS and _COMPILED_LAWS[0][0] is laws:
        return _COMPILED_LAWS[0][1]
    ok = all(law.kernel is not None and type(law).force_raw is Law.force_raw
             and law.n_state == 0 for law in laws)
    _COMPILED_LAWS[:] = [(laws, ok)]
    return ok


def group_arrays(batch: ContactBatch, W: np.ndarray, friction: Friction | None,
                 stick: Stick | None, mu: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The float array ``gf`` and the contact records ``gc`` of the K contacts of ``batch`` as
    one group of :mod:`.substep_compiled` (:mod:`mbplugin.pipeline.layout`), with the friction
    model and stick spring, normals, the friction coefficients (``mu`` (K, 2): each contact's
    mu, mu_s; None: the Friction's) and W (3K, 3K) filled in; the store's rows follow with
    :func:`refresh_rows`."""
    k = len(batch)
    c = np.ascontiguousarray
    return _fill_group(head(friction, stick), k, c(batch.normal, dtype=float),
                       c(W, dtype=float).reshape(-1),
                       _NO_MU if mu is None else c(mu, dtype=float).reshape(k, 2),
                       friction is not None, 0.0 if friction is None else float(friction.mu),
                       0.0 if friction is None else float(friction.static))


_NO_MU = np.zeros((0, 2))


@njit
def _fill_group(hd, k, normal, w, mu, has_fr, fr_mu, fr_static):
    """:func:`group_arrays`' arrays: the records ``gc``, per contact the header ``hd`` (one
    record), its normal and friction coefficients (``mu`` (K, 2) rows, or with none given and
    ``has_fr`` the Friction's); ``gf`` with W (``w``, 9 K^2, row-major) at its start."""
    gf = np.zeros(group_float_len(k))
    gc = np.zeros(k, dtype=CONTACT)
    _fill_group_into(hd, k, normal, w, mu, has_fr, fr_mu, fr_static, gf, gc)
    return gf, gc


@njit
def _fill_group_into(hd, k, normal, w, mu, has_fr, fr_mu, fr_static, gf, gc):
    """:func:`_fill_group` into the scratch ``gf`` (:func:`group_float_len` (K) floats) and
    ``gc`` (K records), both zeroed first."""
    gf[:] = 0.0
    gc.view(np.uint8)[:] = 0
    for i in range(k):
        c = gc[i]
        put_head(c, hd[0])
        for a in range(3):
            c.normal[a] = normal[i, a]
        if mu.shape[0] > 0:
            c.mu, c.mu_s = mu[i, 0], mu[i, 1]
        elif has_fr:
            c.mu, c.mu_s = fr_mu, fr_static
    for j in range(9 * k * k):
        gf[j] = w[j]


def refresh_rows(gc: np.ndarray, store: ContactStore,
                 batch: ContactBatch) -> bool:
    """Write the store's rows for ``batch`` (coefficients, memory, kernel id, contact mode,
    active flag) into the records ``gc`` (after every change of the store's rows); returns whether
    every contact is active (a row of the store)."""
    # (the store's rows as :meth:`ContactStore.aligned` gives them, copied in one call; no
    # ODE states (refused on this path), no events: the other slots stay 0)
    return bool(_fill_rows(gc, *_rows_args(store, batch)))


def _rows_args(store: ContactStore, batch: ContactBatch) -> tuple:
    """:func:`_fill_rows`' arguments after ``gc``."""
    k = len(batch)
    kid, mode = _law_tables(store.laws)[:2]
    same = store.keys.shape[0] == k and bool((store.keys == batch.key).all())
    rows = np.zeros(0, dtype=np.int64) if same else store.rows(batch)
    return (k, same, rows, store.coef, store.mem, store.law,
            np.asarray(batch.law, dtype=np.int64), kid, mode)


def begin_rows(gc: np.ndarray, store: ContactStore, batch: ContactBatch,
               d0: np.ndarray, u0: np.ndarray, s0: np.ndarray) -> tuple[bool, np.ndarray]:
    """:func:`refresh_rows` and the normal force (K,) N at the step's start (overlaps ``d0``
    (K,) m, velocities ``u0`` (K, 3) m/s, springs ``s0`` (K, 3) m; :func:`step_forces` at
    dt = 0, no start force) in one compiled call: (every contact active, the normal
    forces)."""
    k = len(batch)
    fn0 = np.empty(k)
    c = np.ascontiguousarray
    every = _begin_rows(gc, *_rows_args(store, batch), c(d0, dtype=float),
                        c(u0, dtype=float), c(s0, dtype=float), fn0)
    return bool(every), fn0


@njit
def _begin_rows(gc, k, same, rows, coef, mem, law, blaw, kid, mode, d0, u0, s0, fn0):
    """:func:`begin_rows` into ``gc`` and ``fn0``."""
    return _begin_rows_into(gc, k, same, rows, coef, mem, law, blaw, kid, mode, d0, u0, s0,
                            fn0, np.empty(7 * k))


@njit
def _begin_rows_into(gc, k, same, rows, coef, mem, law, blaw, kid, mode, d0, u0, s0, fn0, wf):
    """:func:`_begin_rows` with its work arrays views of ``wf`` (7 K floats or more)."""
    every = _fill_rows(gc, k, same, rows, coef, mem, law, blaw, kid, mode)
    F, S1 = wf[:3 * k].reshape(k, 3), wf[3 * k:6 * k].reshape(k, 3)
    z = wf[6 * k:7 * k]
    z[:] = 0.0
    step_forces(d0, u0, 0.0, k, gc, z, s0, z, False, F, S1, fn0)
    return every


@njit
def _fill_rows(gc, k, same, rows, coef, mem, law, blaw, kid, mode):
    """:func:`refresh_rows`' copy: contact i takes the store's row ``rows[i]`` (``same``: row
    i; -1: not active, zero coefficients and memory, the batch's law ``blaw[i]``)."""
    every = True
    for i in range(k):
        r = i if same else rows[i]
        c = gc[i]
        put_law_row(c, coef, mem, r)
        if r >= 0:
            li = law[r]
        else:
            li = blaw[i]
            every = False
        c.kid = kid[li]
        c.mode = mode[li]
        c.active = r >= 0
    return every


@njit_inline
def end_force(d, i, u0, u1, u2, dt, gc, fn0, a, b, c, lim):
    """Force on body b (f0, f1, f2), the spring's end displacement (a, b, c) and the normal
    force of contact i at the step's end: overlap ``d[i]`` (m), velocity (u0, u1, u2) (m/s);
    ``fn0`` (N) its normal force at the step's start, (a, b, c) (m) the spring's displacement
    there, ``dt`` (s) the step (the contact's record ``gc[i]``: :mod:`mbplugin.pipeline.layout`).
    The Coulomb limit of friction and spring is the trapezoidal mean (F_N0 + F_N1) / 2, or
    ``lim`` (N) where ``lim`` >= 0 (the frozen limit of :func:`solve`'s fallback)."""
    r = gc[i]
    nv = r.normal
    n0, n1, n2 = nv[0], nv[1], nv[2]
    un = u0 * n0 + u1 * n1 + u2 * n2
    fn = 0.0
    if r.active and d[i] > 0.0:  # apart at the step's end: no force
        fn = applied(r.mode, force(r.kid, d[i], -un, coef_tuple(r), state_tuple(d, r)))
    v0, v1, v2 = u0 - un * n0, u1 - un * n1, u2 - un * n2
    limit = lim if lim >= 0.0 else 0.5 * (fn + fn0)
    f0, f1, f2 = fn * n0, fn * n1, fn * n2
    if r.st_on:
        a, b, c = stick_step_scalar(a, b, c, v0, v1, v2, limit, r.st_k_t, r.st_mu, dt)
        sn = a * n0 + b * n1 + c * n2
        a, b, c = a - sn * n0, b - sn * n1, c - sn * n2
        t0, t1, t2 = stick_force_scalar(a, b, c, v0, v1, v2, limit, r.st_k_t, r.st_mu,
                                        r.st_c_t)
        f0 += t0
        f1 += t1
        f2 += t2
    elif r.fr_on:
        t0, t1, t2 = friction_scalar(v0, v1, v2, limit, r.mu, r.mu_s, r.fr_v_s, r.fr_v_eps,
                                     r.fr_viscous, r.fr_linear)
        f0 += t0
        f1 += t1
        f2 += t2
    return f0, f1, f2, a, b, c, fn


@njit
def step_forces(d, u, dt, k, gc, fn0, s0, lim, frozen, F, S1, FN):
    """Force on body b (K, 3) into ``F``, the spring's end displacement (K, 3) into ``S1`` and
    the normal force (K,) into ``FN`` at the step's end state: overlaps ``d`` (K,), velocities
    ``u`` (K, 3); ``fn0`` (K,) the normal force at the step's start, ``s0`` (K, 3) the spring's
    displacement there, ``dt`` (s) the step (per contact :func:`end_force`). The Coulomb limit
    of friction and spring is the trapezoidal mean (F_N0 + F_N1) / 2, or with ``frozen`` the
    given ``lim`` (K,) (N)."""
    for i in range(k):
        f0, f1, f2, a, b, c, fn = end_force(d, i, u[i, 0], u[i, 1], u[i, 2], dt, gc,
                                            fn0[i], s0[i, 0], s0[i, 1], s0[i, 2],
                                            lim[i] if frozen else -1.0)
        FN[i] = fn
        F[i, 0], F[i, 1], F[i, 2] = f0, f1, f2
        S1[i, 0], S1[i, 1], S1[i, 2] = a, b, c


@njit_inline
def end_slopes(d, i, u0, u1, u2, gc, fn0, lim, dFd, dFu):
    """:func:`end_force` of contact i without a tangential spring (force on body b (f0, f1, f2),
    normal force) and its derivatives into ``dFd[i]`` (3,) = dF/ddelta (N/m) and ``dFu[i]``
    (3, 3) = dF/du (N s/m) by the chain rule: the law's slopes
    (:func:`mbplugin.laws.kernels.slopes`; zero where the rules clip the force or the contact
    is apart) along F_N n, the friction's (:func:`mbplugin.pipeline.friction.friction_slopes`)
    on v_t = (I - n n^T) u and, with the trapezoidal limit, on (F_N0 + F_N1) / 2. The force
    is :func:`end_force`'s to the bit."""
    r = gc[i]
    nv = r.normal
    n0, n1, n2 = nv[0], nv[1], nv[2]
    un = u0 * n0 + u1 * n1 + u2 * n2
    fn = 0.0
    sd = 0.0
    sv = 0.0  # dF_N/ddelta, dF_N/dv with v = -n . u
    if r.active and d[i] > 0.0:  # apart at the step's end: no force
        raw, sd, sv = slopes(r.kid, d[i], -un, coef_tuple(r), state_tuple(d, r), EPS_D, EPS_U)
        fn = applied(r.mode, raw)
        if fn != raw:  # clipped
            sd = 0.0
            sv = 0.0
    v0, v1, v2 = u0 - un * n0, u1 - un * n1, u2 - un * n2
    limit = lim if lim >= 0.0 else 0.5 * (fn + fn0)
    half = 0.0 if lim >= 0.0 else 0.5  # dlimit/dF_N
    f0, f1, f2 = fn * n0, fn * n1, fn * n2
    g = 0.0
    h = 0.0
    e0, e1, e2 = 0.0, 0.0, 0.0
    if r.fr_on:
        t0, t1, t2, g, h, e0, e1, e2 = friction_slopes(v0, v1, v2, limit, r.mu, r.mu_s,
                                                        r.fr_v_s, r.fr_v_eps, r.fr_viscous,
                                                        r.fr_linear)
        f0 += t0
        f1 += t1
        f2 += t2
    # dF/dF_N = n + dlimit/dF_N dF_t/dlimit; dF_N/du = -sv n^T; dF_t/du = -g (I - n n^T)
    # - h v v^T (v . n = 0)
    c0, c1, c2 = n0 + half * e0, n1 + half * e1, n2 + half * e2
    dFd[i, 0], dFd[i, 1], dFd[i, 2] = sd * c0, sd * c1, sd * c2
    vt = (v0, v1, v2)
    nn = (n0, n1, n2)
    cc = (c0, c1, c2)
    for a in range(3):
        for b in range(3):
            dFu[i, a, b] = (-sv * cc[a] * nn[b] - g * ((1.0 if a == b else 0.0) - nn[a] * nn[b])
                            - h * vt[a] * vt[b])
    return f0, f1, f2, fn


@njit_inline
def contact_slopes(d, i, u0, u1, u2, dt, gc, fn0, a0, a1, a2, lim, dFd, dFu):
    """Contact i's end-of-step force on body b (f0, f1, f2), spring end displacement
    (a, b, c) and normal force (:func:`end_force`'s, to the bit) at overlap ``d[i]`` (m) and
    velocity (u0, u1, u2) (m/s), with the force's derivatives in that state into ``dFd[i]``
    (3,) = dF/ddelta (N/m) and ``dFu[i]`` (3, 3) = dF/du (N s/m): :func:`end_slopes` (the
    law's and the friction's analytic slopes), or for a contact with the tangential spring
    forward differences of :func:`end_force` (EPS_D, EPS_U; ``d[i]`` is perturbed and
    restored). ``fn0`` (N), (a0, a1, a2) (m): the normal force and spring displacement at the
    step's start; ``lim`` as :func:`end_force`'s. The one place of these derivatives: the
    implicit step's Newton method (:func:`step_slopes`) and the large groups' Gauss-Seidel
    and Newton fallbacks (:mod:`mbplugin.pipeline.large_groups`) call it."""
    if not gc[i].st_on:
        f0, f1, f2, fn = end_slopes(d, i, u0, u1, u2, gc, fn0, lim, dFd, dFu)
        return f0, f1, f2, a0, a1, a2, fn
    f0, f1, f2, a, b, c, fn = end_force(d, i, u0, u1, u2, dt, gc, fn0, a0, a1, a2, lim)
    di = d[i]
    d[i] = di + EPS_D
    g0, g1, g2, _, _, _, _ = end_force(d, i, u0, u1, u2, dt, gc, fn0, a0, a1, a2, lim)
    d[i] = di
    dFd[i, 0], dFd[i, 1], dFd[i, 2] = (g0 - f0) / EPS_D, (g1 - f1) / EPS_D, (g2 - f2) / EPS_D
    for j in range(3):
        y0 = u0 + EPS_U if j == 0 else u0
        y1 = u1 + EPS_U if j == 1 else u1
        y2 = u2 + EPS_U if j == 2 else u2
        g0, g1, g2, _, _, _, _ = end_force(d, i, y0, y1, y2, dt, gc, fn0, a0, a1, a2, lim)
        dFu[i, 0, j] = (g0 - f0) / EPS_U
        dFu[i, 1, j] = (g1 - f1) / EPS_U
        dFu[i, 2, j] = (g2 - f2) / EPS_U
    return f0, f1, f2, a, b, c, fn


@njit
def step_slopes(d, u, dt, k, gc, fn0, s0, lim, frozen, F, S1, FN, dFd, dFu):
    """:func:`step_forces` (the same bits) and the derivatives of each contact's force in its
    own end state: ``dFd`` (K, 3) = dF_i/ddelta_i (N/m), ``dFu`` (K, 3, 3) = dF_i/du_i
    (N s/m), per contact :func:`contact_slopes`."""
    for i in range(k):
        f0, f1, f2, a, b, c, fn = contact_slopes(d, i, u[i, 0], u[i, 1], u[i, 2], dt, gc,
                                                 fn0[i], s0[i, 0], s0[i, 1], s0[i, 2],
                                                 lim[i] if frozen else -1.0, dFd, dFu)
        FN[i] = fn
        F[i, 0], F[i, 1], F[i, 2] = f0, f1, f2
        S1[i, 0], S1[i, 1], S1[i, 2] = a, b, c


@njit
def lu_solve(A, b, m):
    """Solve A x = b in place (A (m, m) overwritten by its LU factors, ``b`` (m,) by x) by the
    package's one in-place LU with partial pivoting (:func:`mbplugin.pipeline.radau._lu_factor`
    and ``_lu_solve``, Radau's; Golub & Van Loan, *Matrix Computations*, 4th ed. 2013,
    Alg. 3.4.1): ``np.linalg.solve`` copies A and b for LAPACK (1.8 us against 0.6 us for
    m = 12). False where a pivot is zero or x is not finite."""
    return lu_solve_into(A, b, m, np.empty(m, np.int64))


@njit
def lu_solve_into(A, b, m, piv):
    """:func:`lu_solve` with the pivots in ``piv`` (m,) int64 scratch (no allocation)."""
    _lu_factor(A, piv)
    for c in range(m):
        if not abs(A[c, c]) > 0.0:
            return False
    _lu_solve(A, piv, b)
    for r in range(m):
        if not np.isfinite(b[r]):
            return False
    return True


@njit
def end_state(P, ue, d0, ed, dt, k, gf, gc, d1, u1):
    """The step's end state for impulse P (K, 3): u1 = ue + W P, d1 = d0 - dt n . u1 + ed."""
    m = 3 * k
    w0 = 0
    for row in range(m):
        acc = 0.0
        base = w0 + row * m
        for j in range(m):
            acc += gf[base + j] * P[j // 3, j % 3]
        u1[row // 3, row % 3] = ue[row // 3, row % 3] + acc
    for i in range(k):
        nv = gc[i].normal
        un = u1[i, 0] * nv[0] + u1[i, 1] * nv[1] + u1[i, 2] * nv[2]
        d1[i] = d0[i] - dt * un + ed[i]


@njit
def _w_times(gf, w0, m, x, out):
    """out (m,) = W x for W (m, m) stored row-major in ``gf`` from ``w0``."""
    for row in range(m):
        acc = 0.0
        for j in range(m):
            acc += gf[w0 + row * m + j] * x[j]
        out[row] = acc


@njit
def _slope(P, F, dt, k, wstep):
    """phi'(alpha) = R . (W dP) with R = P - dt F (see :func:`newton`)."""
    acc = 0.0
    for i in range(k):
        for a in range(3):
            acc += (P[i, a] - dt * F[i, a]) * wstep[3 * i + a]
    return acc


@njit
def direction(P, F, dFu, dFd, dt, k, gf, w0, gc, A, step, ct, rank):
    """:func:`direction_into` with its pivots on new scratch."""
    return direction_into(P, F, dFu, dFd, dt, k, gf, w0, gc, A, step, ct, rank,
                          np.empty(3 * k, np.int64))


@njit
def direction_into(P, F, dFu, dFd, dt, k, gf, w0, gc, A, step, ct, rank, piv):
    """:func:`newton`'s direction (``piv`` (3K,) int64 scratch for the LU's pivots): the
    solve of A dP = -R, R = P - dt F (K, 3), A = I - dt D W with D block-diagonal,
    D_i = dF_i/du_i - dt dF_i/ddelta_i n_i^T (``dFu`` (K, 3, 3), ``dFd`` (K, 3); W (3K, 3K)
    row-major in ``gf`` from ``w0``); with W's low-rank factor
    (``rank`` >= 0, ``ct``: :func:`mbplugin.pipeline.lowrank.psd_factor`) by the Woodbury
    identity (:func:`~mbplugin.pipeline.lowrank.lowrank_direction`), else dense into ``A``
    (3K, 3K) by :func:`lu_solve`. dP goes into ``step`` (3K,). Returns whether it is finite."""
    m = 3 * k
    if rank >= 0:
        rhs = np.empty(m)
        for i in range(k):
            for a in range(3):
                rhs[3 * i + a] = -(P[i, a] - dt * F[i, a])
        ok = lowrank_direction(ct, rank, dFu, dFd, gc, dt, k, rhs, step)
        for j in range(m):
            if not np.isfinite(step[j]):
                ok = False
        return ok
    for i in range(k):
        nv = gc[i].normal
        for a in range(3):
            row = 3 * i + a
            for col in range(m):
                acc = 0.0
                for b in range(3):
                    dab = dFu[i, a, b] - dt * (dFd[i, a] * nv[b])
                    acc += dab * gf[w0 + (3 * i + b) * m + col]
                A[row, col] = (1.0 if row == col else 0.0) - dt * acc
            step[row] = -(P[i, a] - dt * F[i, a])
    return lu_solve_into(A, step, m, piv)


@njit
def _state(P, ue, d0, ed, dt, k, gf, gc, d1, u1, ct, rank, lw):
    """:func:`newton`'s end state for impulse P: :func:`end_state` with W, or with W's
    low-rank factor where one was found (``rank`` >= 0: W = C C^T, C = ``ct[:rank].T``,
    :func:`mbplugin.pipeline.lowrank.lowrank_end_state`; ``lw`` (3K,) scratch)."""
    if rank >= 0:
        lowrank_end_state(P, ue, d0, ed, dt, k, ct, rank, gc, d1, u1, lw)
    else:
        end_state(P, ue, d0, ed, dt, k, gf, gc, d1, u1)


@njit
def _times(gf, w0, m, x, out, ct, rank):
    """:func:`newton`'s ``out`` = W ``x``: dense, or C (C^T x) with W's low-rank factor
    (``rank`` >= 0, as :func:`_state`)."""
    if rank >= 0:
        lowrank_times(ct, rank, m, x, out)
    else:
        _w_times(gf, w0, m, x, out)


@njit
def newton_size(k):
    """The float64 scratch length of :func:`newton_into` for ``k`` contacts (its work
    arrays, W's low-rank factor, the LU's pivots as an int64 view)."""
    m = 3 * k
    return 3 * k + 16 * m + m * m + lowrank_cap(k) * m + m + m


@njit
def newton(P, ue, d0, ed, dt, k, gf, gc, fn0, s0, lim, frozen, rtol, counters):
    """:func:`newton_into` on new scratch."""
    return newton_into(P, ue, d0, ed, dt, k, gf, gc, fn0, s0, lim, frozen, rtol, counters,
                       np.empty(newton_size(k)))


@njit
def newton_into(P, ue, d0, ed, dt, k, gf, gc, fn0, s0, lim, frozen, rtol, counters, work):
    """Newton's method on R(P) = P - dt F(state(P)) from ``P`` (K, 3; updated in place), as
    :meth:`mbplugin.pipeline.implicit.ImplicitStep._solve` (the NumPy reference, the same
    iteration; the derivatives here analytic): each contact's force depends on its own
    (delta, u), its derivatives come with each evaluation (:func:`step_slopes`: analytic, by
    forward differences (EPS_D, EPS_U) for a tangential spring or a law without its own), the
    Newton matrix I - dt (dF/du - dt dF/ddelta n^T) W is solved by :func:`lu_solve`, and a
    line search that cannot stall for a monotone law (below) follows; an evaluation the line
    search accepts (the full step, or its Wolfe point) gives the next iteration its force and
    derivatives. Converged when
    max |R| <= rtol (max |P| + 1e-12), or, with ``frozen`` limits, when a step no longer
    changes P (by 4 ulp of its largest entry: the root to rounding). Returns False after
    MAX_NEWTON iterations or such a stall with the trapezoidal limits; counters +=
    (iterations, force evaluations).

    The line search. With the end velocity u = ue + W P, R is the gradient (in the metric of W:
    d Phi / dP = W R) of Phi(u) = (u - ue)^T W^+ (u - ue) / 2 + dt sum psi(u) whenever the
    contact force is the negative gradient of a convex potential psi of u: a normal force
    non-decreasing in the overlap and in its rate (delta and its rate are affine in n . u) and
    friction with a fixed Coulomb limit (regularised Coulomb without a Stribeck drop, viscous
    terms). Along a step dP, phi'(alpha) = R(P + alpha dP) . (W dP) is then non-decreasing in
    alpha; dP is a descent direction when phi'(0) < 0 (Newton's, or else dP = -R, for which
    phi'(0) = -R^T W R <= 0). The full step is taken when phi'(1) <= 0; otherwise the root of
    phi' in (0, 1) is bracketed and narrowed by the Illinois method to a point with
    phi' <= 0 and |phi'| <= |phi'(0)| / 4 (a Wolfe point: Nocedal & Wright, *Numerical
    Optimization*, 2nd ed. 2006, Sect. 3.1 and Thm. 3.2, Zoutendijk's theorem), so Phi
    decreases at every iteration and the iteration converges to the unique root for a strictly
    monotone law. With the trapezoidal Coulomb limit (F_N0 + F_N1) / 2, friction depends on
    the end normal force and R is not a gradient; the line search is the same, and
    :func:`solve` falls back to frozen limits where it does not converge.

    ``work``: float64 scratch of :func:`newton_size` or more (every work array a view of it:
    no allocation of its own)."""
    m = 3 * k
    w0 = 0
    # the compiled calls below get borrowed views (mbplugin._jit.borrowed: no reference-count
    # updates per call); owners: the arguments and ``work``, kept alive to every return
    P, ue, d0, ed, gf, gc, fn0, s0, lim = borrowed((P, ue, d0, ed, gf, gc, fn0, s0, lim))
    # the scratch: 3 K + 16 (3K) + (3K)^2 doubles, W's factor, lw, the pivots
    d1, dp, FN = work[:k], work[k:2 * k], work[2 * k:3 * k]
    o = 3 * k
    u1, up, F, Fp = (work[o:o + m].reshape((k, 3)), work[o + m:o + 2 * m].reshape((k, 3)),
                     work[o + 2 * m:o + 3 * m].reshape((k, 3)),
                     work[o + 3 * m:o + 4 * m].reshape((k, 3)))
    S1, dFd, trial, dFdp = (work[o + 4 * m:o + 5 * m].reshape((k, 3)),
                            work[o + 5 * m:o + 6 * m].reshape((k, 3)),
                            work[o + 6 * m:o + 7 * m].reshape((k, 3)),
                            work[o + 7 * m:o + 8 * m].reshape((k, 3)))
    step, wstep = work[o + 8 * m:o + 9 * m], work[o + 9 * m:o + 10 * m]
    dFu = work[o + 10 * m:o + 13 * m].reshape((k, 3, 3))
    dFup = work[o + 13 * m:o + 16 * m].reshape((k, 3, 3))
    A = work[o + 16 * m:o + 16 * m + m * m].reshape((m, m))
    d1, dp, FN, u1, up, F, Fp, S1, dFd, trial, dFdp, step, wstep, dFu, dFup, A = borrowed(
        (d1, dp, FN, u1, up, F, Fp, S1, dFd, trial, dFdp, step, wstep, dFu, dFup, A))
    # a large group: W's low-rank factor for the direction (pipeline/lowrank.py), found at
    # the first iteration that needs one (rank -2: not yet tried; -1: W not of low rank)
    # (once per solve; with it every W product of the evaluations below is C (C^T x), O(K r))
    o = 3 * k + 16 * m + m * m
    cap = lowrank_cap(k)
    ct = work[o:o + cap * m].reshape((cap, m))
    o += cap * m
    lw = work[o:o + m]
    piv = work[o + m:o + 2 * m].view(np.int64)
    rank = psd_factor(gf, w0, m, ct) if ct.shape[0] > 0 else -1
    _state(P, ue, d0, ed, dt, k, gf, gc, d1, u1, ct, rank, lw)
    step_slopes(d1, u1, dt, k, gc, fn0, s0, lim, frozen, F, S1, FN, dFd, dFu)
    counters[1] += 1
    for _ in range(MAX_NEWTON):
        counters[0] += 1
        rmax = 0.0
        pmax = 0.0
        for i in range(k):
            for a in range(3):
                rmax = max(rmax, abs(P[i, a] - dt * F[i, a]))
                pmax = max(pmax, abs(P[i, a]))
        if rmax <= rtol * (pmax + 1e-12):
            keep_alive(work)
            return True
        # the direction from the derivatives of the last evaluation (step_slopes)
        ok = direction_into(P, F, dFu, dFd, dt, k, gf, w0, gc, A, step, ct, rank, piv)
        # W dP and phi'(0); not a descent direction: dP = -R
        g0 = 1.0
        if ok:
            _times(gf, w0, m, step, wstep, ct, rank)
            g0 = _slope(P, F, dt, k, wstep)
        if not g0 < 0.0:
            for i in range(k):
                for a in range(3):
                    step[3 * i + a] = -(P[i, a] - dt * F[i, a])
            _times(gf, w0, m, step, wstep, ct, rank)
            g0 = _slope(P, F, dt, k, wstep)
            if not g0 < 0.0:
                # W R = 0: the forces do not depend on P along R; P = dt F is the root
                for i in range(k):
                    for a in range(3):
                        P[i, a] = dt * F[i, a]
                _state(P, ue, d0, ed, dt, k, gf, gc, d1, u1, ct, rank, lw)
                step_slopes(d1, u1, dt, k, gc, fn0, s0, lim, frozen, F, S1, FN, dFd, dFu)
                counters[1] += 1
                continue
        # phi'(1) (with the derivatives there: the next iteration's when the full step is
        # taken, as every evaluation of the line search's); the full step when phi' has not
        # turned positive
        lo, hi, glo, ghi = 0.0, 1.0, g0, 0.0
        alpha = 1.0
        for i in range(k):
            for a in range(3):
                trial[i, a] = P[i, a] + step[3 * i + a]
        _state(trial, ue, d0, ed, dt, k, gf, gc, dp, up, ct, rank, lw)
        step_slopes(dp, up, dt, k, gc, fn0, s0, lim, frozen, Fp, S1, FN, dFdp, dFup)
        counters[1] += 1
        ghi = _slope(trial, Fp, dt, k, wstep)
        full = not ghi > 0.0
        if not full:
            # bracketed: Illinois to a point with phi' <= 0 and |phi'| <= |phi'(0)| / 4
            side = 0
            found = False
            for _ls in range(40):
                c = hi - ghi * (hi - lo) / (ghi - glo) if ghi != glo else 0.5 * (lo + hi)
                if not (lo < c < hi):
                    c = 0.5 * (lo + hi)
                for i in range(k):
                    for a in range(3):
                        trial[i, a] = P[i, a] + c * step[3 * i + a]
                _state(trial, ue, d0, ed, dt, k, gf, gc, dp, up, ct, rank, lw)
                step_slopes(dp, up, dt, k, gc, fn0, s0, lim, frozen, Fp, S1, FN, dFdp, dFup)
                counters[1] += 1
                gm = _slope(trial, Fp, dt, k, wstep)
                if gm <= 0.0:
                    lo, glo = c, gm
                    if -gm <= 0.25 * -g0:
                        found = True
                        break
                    if side == -1:
                        ghi *= 0.5
                    side = -1
                else:
                    hi, ghi = c, gm
                    if side == 1:
                        glo *= 0.5
                    side = 1
                if hi - lo <= 1e-12 * hi:
                    break
            alpha = lo
            if not found and alpha == 0.0:
                alpha = hi  # no point with phi' <= 0 resolved: the smallest bracket end
            # found: the last evaluation was at alpha (the same trial point, bit for bit)
            full = found
            for i in range(k):
                for a in range(3):
                    trial[i, a] = P[i, a] + alpha * step[3 * i + a]
        moved = 0.0
        for i in range(k):
            for a in range(3):
                moved = max(moved, abs(trial[i, a] - P[i, a]))
                P[i, a] = trial[i, a]
        if moved <= 4e-16 * (pmax + 1e-300):
            # no change of P is resolvable any more: with frozen limits (a gradient system,
            # every step a descent) the root to rounding; with the trapezoidal ones a stall
            # (the caller's fallback freezes them)
            keep_alive(work)
            return frozen
        _state(P, ue, d0, ed, dt, k, gf, gc, d1, u1, ct, rank, lw)
        if full:
            for i in range(k):
                for a in range(3):
                    F[i, a] = Fp[i, a]
                    dFd[i, a] = dFdp[i, a]
                    for b in range(3):
                        dFu[i, a, b] = dFup[i, a, b]
        else:
            step_slopes(d1, u1, dt, k, gc, fn0, s0, lim, frozen, F, S1, FN, dFd, dFu)
            counters[1] += 1
    keep_alive(work)
    return False


def forces(d: np.ndarray, u: np.ndarray, dt: float, gc: np.ndarray,
           fn0: np.ndarray, s0: np.ndarray,
           lim: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`step_forces` with new output arrays: (force (K, 3), spring displacement (K, 3),
    normal force (K,)); ``lim`` the frozen Coulomb limits (None: the trapezoidal ones)."""
    k = len(d)
    F, S1, FN = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    c = np.ascontiguousarray
    step_forces(c(d, dtype=float), c(u, dtype=float), float(dt), k, gc, c(fn0, dtype=float),
                c(s0, dtype=float), np.zeros(k) if lim is None else c(lim, dtype=float),
                lim is not None, F, S1, FN)
    return F, S1, FN


def solve(P: np.ndarray, ue: np.ndarray, d0: np.ndarray, ed: np.ndarray, dt: float,
          gf: np.ndarray, gc: np.ndarray, fn0: np.ndarray, s0: np.ndarray, rtol: float,
          counters: np.ndarray) -> tuple[np.ndarray, bool]:
    """:func:`newton` from ``P`` on a copy: (the impulse (K, 3), True).

    Where Newton's method does not converge with the trapezoidal Coulomb limit (the residual
    is then not a gradient, see :func:`newton`), the limit is frozen: each round solves the
    step with the limits ``lim`` fixed (a gradient system: the line search guarantees
    convergence for a monotone law), then sets ``lim`` = (F_N0 + F_N1) / 2 from that solution,
    until the limits agree to ``rtol`` (a fixed point; the friction's dependence on its limit
    is a contraction for mu W_nt / W_nn < 2). After FALLBACK_ROUNDS rounds the last frozen
    solution is returned (an implicit step whose Coulomb limit lags one round behind); False
    only if a frozen solve itself failed (a law that is not monotone)."""
    c = np.ascontiguousarray
    ue, d0, ed = c(ue, dtype=float), c(d0, dtype=float), c(ed, dtype=float)
    fn0, s0 = c(fn0, dtype=float), c(s0, dtype=float)
    k = len(P)
    start = np.array(P, dtype=float, order="C")
    P = start.copy()
    if newton(P, ue, d0, ed, float(dt), k, gf, gc, fn0, s0, np.zeros(k), False, float(rtol),
              counters):
        return P, True
    # the fallback: frozen Coulomb limits, from the start's normal forces
    counters[2] += 1
    P = start.copy()
    lim = np.maximum(fn0, 0.0)
    ok = False
    for _ in range(FALLBACK_ROUNDS):
        ok = newton(P, ue, d0, ed, float(dt), k, gf, gc, fn0, s0, lim, True, float(rtol),
                    counters)
        if not ok:
            return P, False
        d1, u1 = np.empty(k), np.empty((k, 3))
        end_state(P, ue, d0, ed, float(dt), k, gf, gc, d1, u1)
        fn1 = forces(d1, u1, dt, gc, fn0, s0, lim)[2]
        new = 0.5 * (fn0 + fn1)
        done = np.max(np.abs(new - lim), initial=0.0) <= rtol * (np.max(np.abs(new),
                                                                         initial=0.0) + 1e-12)
        lim = new
        if done:
            break
    return P, ok


@njit
def _host_start(u_lin, wp, d_lin, dt, k, gc, ue, ed, d_on):
    for i in range(k):
        nv = gc[i].normal
        n0, n1, n2 = nv[0], nv[1], nv[2]
        for a in range(3):
            ue[i, a] = u_lin[i, a] - wp[i, a]
        ed[i] = dt * (u_lin[i, 0] * n0 + u_lin[i, 1] * n1 + u_lin[i, 2] * n2)
        d_on[i] = d_lin[i] + dt * (wp[i, 0] * n0 + wp[i, 1] * n1 + wp[i, 2] * n2)


def host_start(u_lin: np.ndarray, wp: np.ndarray, d_lin: np.ndarray, dt: float,
               gc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A solve's start from the host's end state with the impulse P_lin (one compiled call,
    the arithmetic of :meth:`ImplicitStep.solve <mbplugin.pipeline.implicit.ImplicitStep>`):
    ``ue`` (K, 3) = ``u_lin`` - ``wp`` (m/s; ``wp`` = W P_lin), the overlap defect ``ed`` (K,)
    = dt n . u_lin (m) and the end overlap without impulse ``d_on`` (K,) = ``d_lin`` + dt n .
    wp (m; the onsets' test), the normals those of the records ``gc`` (:func:`group_arrays`)."""
    k = len(d_lin)
    ue, ed, d_on = np.empty((k, 3)), np.empty(k), np.empty(k)
    c = np.ascontiguousarray
    _host_start(c(u_lin, dtype=float), c(wp, dtype=float), c(d_lin, dtype=float), float(dt), k,
                gc, ue, ed, d_on)
    return ue, ed, d_on


@njit
def _host_end(u1, d_lin, ed, dt, k, gf, gc, fn0, s0, d1, F, S1, FN, loaded):
    _host_end_into(u1, d_lin, ed, dt, k, gf, gc, fn0, s0, d1, F, S1, FN, loaded, np.zeros(k))


@njit
def _host_end_into(u1, d_lin, ed, dt, k, gf, gc, fn0, s0, d1, F, S1, FN, loaded, z):
    """:func:`_host_end` with ``z`` (K,) zeros (its trapezoidal limits' unused argument)."""
    for i in range(k):
        nv = gc[i].normal
        d1[i] = d_lin[i] + ed[i] - dt * (u1[i, 0] * nv[0] + u1[i, 1] * nv[1]
                                         + u1[i, 2] * nv[2])
    step_forces(d1, u1, dt, k, gc, fn0, s0, z, False, F, S1, FN)
    for i in range(k):
        loaded[i] = F[i, 0] != 0.0 or F[i, 1] != 0.0 or F[i, 2] != 0.0


def host_end(u1: np.ndarray, d_lin: np.ndarray, ed: np.ndarray, dt: float, gf: np.ndarray,
             gc: np.ndarray, fn0: np.ndarray,
             s0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A solve's end state in one compiled call (the arithmetic of :meth:`ImplicitStep.solve
    <mbplugin.pipeline.implicit.ImplicitStep>`): the end overlap d1 (K,) = ``d_lin`` + ``ed``
    - dt n . ``u1`` (m), the force on body b (K, 3) there (:func:`step_forces`, trapezoidal
    Coulomb limits), the spring's end displacement (K, 3) and which contacts carry a force
    (K,)."""
    k = len(d_lin)
    d1, F, S1, FN = np.empty(k), np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    loaded = np.empty(k, dtype=np.bool_)
    c = np.ascontiguousarray
    _host_end(c(u1, dtype=float), c(d_lin, dtype=float), c(ed, dtype=float), float(dt), k, gf,
              gc, c(fn0, dtype=float), c(s0, dtype=float), d1, F, S1, FN, loaded)
    return d1, F, S1, loaded


@njit
def _fast_start(P_lin, u_lin, d_lin, dt, k, gf, gc, P, ue, ed):
    """:func:`host_start` with W P_lin by loops over ``gf``'s W (not BLAS: equal to the last
    bits, not bitwise) into ``ue``, ``ed``, and ``P`` = ``P_lin``; False where a contact not
    active overlaps at the end without impulse (an onset to book: the general path)."""
    return _fast_start_into(P_lin, u_lin, d_lin, dt, k, gf, gc, P, ue, ed, np.empty(3))


@njit
def _fast_start_into(P_lin, u_lin, d_lin, dt, k, gf, gc, P, ue, ed, w):
    """:func:`_fast_start` with ``w`` (3,) its scratch."""
    m = 3 * k
    w0 = 0
    for i in range(k):
        nv = gc[i].normal
        n0, n1, n2 = nv[0], nv[1], nv[2]
        for a in range(3):
            base = w0 + (3 * i + a) * m
            acc = 0.0
            for j in range(m):
                acc += gf[base + j] * P_lin[j // 3, j % 3]
            w[a] = acc
            ue[i, a] = u_lin[i, a] - acc
        ed[i] = dt * (u_lin[i, 0] * n0 + u_lin[i, 1] * n1 + u_lin[i, 2] * n2)
        if not gc[i].active and d_lin[i] + dt * (w[0] * n0 + w[1] * n1 + w[2] * n2) > 0.0:
            return False  # an onset (host_start's d_on > 0): the general path books it
        for a in range(3):
            P[i, a] = P_lin[i, a]
    return True


@njit
def _take_round(Pn, un, S1, cnt, k, P, dP, u1, s1, counters):
    """A round's Newton result taken (round_solve_into's and onset_solve's): the counters
    ``cnt`` (3,) added to ``counters``, the impulse change dP = Pn - P (N s), then P, the end
    velocities u1 (m/s) and the spring state s1 from Pn, un and S1 (each (k, 3)). Returns 1
    if any impulse changed, else 0."""
    for a in range(3):
        counters[a] += cnt[a]
    any_dp = 0
    for i in range(k):
        for a in range(3):
            dP[i, a] = Pn[i, a] - P[i, a]
            if dP[i, a] != 0.0:
                any_dp = 1
            P[i, a] = Pn[i, a]
            u1[i, a] = un[i, a]
            s1[i, a] = S1[i, a]
    return any_dp


@njit
def round_solve_size(k):
    """The float64 scratch length of :func:`round_solve_into` for ``k`` contacts."""
    return 19 * k + 6 + newton_size(k)


@njit
def round_solve(P, u_h, d_h, dt, gf, gc, fn0, s0, rtol, counters, d1, u1, loaded, s1, dP):
    """:func:`round_solve_into` on new scratch."""
    return round_solve_into(P, u_h, d_h, dt, gf, gc, fn0, s0, rtol, counters, d1, u1, loaded,
                            s1, dP, np.empty(round_solve_size(d_h.shape[0])))


@njit
def round_solve_into(P, u_h, d_h, dt, gf, gc, fn0, s0, rtol, counters, d1, u1, loaded, s1, dP,
                     wf):
    """One solve of a host's lean implicit step (a first solve or a verification round, as
    :func:`solve_step` solves: :func:`_fast_start`, :func:`newton`, :func:`end_state`,
    :func:`_host_end`) from the host's end state ``u_h`` (K, 3) m/s, ``d_h`` (K,) m and the
    impulse ``P`` (K, 3) N s it holds: ``P`` becomes the solved impulse, ``dP`` its change,
    ``d1``, ``u1``, ``loaded``, ``s1`` the end state (all updated in place; ``counters`` +=
    iterations, force evaluations). Returns -1 where the solve needs the general path (an
    onset to book, Newton's fallback; nothing but scratch changed), else 1 where ``dP`` has
    a non-zero entry and 0 where not. ``wf``: float64 scratch of :func:`round_solve_size`
    or more (the work arrays its views: no allocation)."""
    k = d_h.shape[0]
    Pn, ue = wf[:3 * k].reshape(k, 3), wf[3 * k:6 * k].reshape(k, 3)
    un, F, S1 = (wf[6 * k:9 * k].reshape(k, 3), wf[9 * k:12 * k].reshape(k, 3),
                 wf[12 * k:15 * k].reshape(k, 3))
    ed, dn, FN, z = wf[15 * k:16 * k], wf[16 * k:17 * k], wf[17 * k:18 * k], wf[18 * k:19 * k]
    w = wf[19 * k:19 * k + 3]
    cnt = wf[19 * k + 3:19 * k + 6].view(np.int64)
    cnt[:] = 0
    z[:] = 0.0
    if not (_fast_start_into(P, u_h, d_h, dt, k, gf, gc, Pn, ue, ed, w)
            and newton_into(Pn, ue, d_h, ed, dt, k, gf, gc, fn0, s0, z, False, rtol, cnt,
                            wf[19 * k + 6:])):
        return -1
    end_state(Pn, ue, d_h, ed, dt, k, gf, gc, dn, un)
    _host_end_into(un, d_h, ed, dt, k, gf, gc, fn0, s0, dn, F, S1, FN, loaded, z)
    for i in range(k):
        d1[i] = dn[i]
    return _take_round(Pn, un, S1, cnt, k, P, dP, u1, s1, counters)


@njit
def onset_solve(P, u_h, d_h, dt, W, gf, gc, fn0, s0, rtol, counters, d1, u1, loaded, s1, dP,
                m_eff, pair, tpl, tsk, rule, new, d_on, dd_on, coef_on, t_c):
    """A first solve with onsets (:meth:`ImplicitStep.solve
    <mbplugin.pipeline.implicit.ImplicitStep.solve>` from P_lin where :func:`round_solve`
    meets an onset) in one call, its arithmetic in its order: W P_lin (``np.dot``: BLAS,
    as ``w_times``), :func:`_host_start`; each contact not active whose end overlap without
    impulse ``d_on`` is positive starts (the store's onset, :meth:`ContactStore.start
    <mbplugin.pipeline.store.ContactStore.start>`, for a law with a compiled onset: its
    row ``tpl[pair[i]]`` (NC_MAX,) with the impact-speed columns rewritten by the rule
    ``rule`` = (id, p0, p1) of :func:`mbplugin.laws.kernels.onset_coefficients` at v_in =
    max(ddelta, 0), ddelta = -n . ue), its record in ``gc`` made active with that row
    (:func:`refresh_rows`' copy); :func:`newton` from P_lin, u1 = ue + W P (``np.dot``),
    :func:`_host_end`. ``P`` (K, 3) N s: P_lin in, the solved impulse out; ``dP`` its
    change; ``d1``, ``u1``, ``loaded``, ``s1`` the end state (as :func:`round_solve`).
    For the store's booking: ``new`` (K,) the contacts started, their overlap ``d_on`` (m),
    rate ``dd_on`` (m/s), coefficient row ``coef_on`` (K, NC_MAX) and contact time scale
    ``t_c`` (s: :func:`mbplugin.laws.base.power_timescale` of the effective mass
    ``m_eff`` (K,) kg with the pair's (k, n) ``tsk`` (P, 2) at max(|ddelta|, 1e-3), inf
    where not finite and positive: the store's ``_time_scale``). Returns -1 where the solve
    needs the general path (a new contact whose pair has no compiled onset (``tsk`` NaN) or
    that does not approach (ddelta <= 0: the store's end test), no onset at all, or Newton's
    fallback: ``gc`` restored, nothing else but scratch changed), else 1 where ``dP`` has
    a non-zero entry and 0 where not."""
    k = d_h.shape[0]
    m = 3 * k
    x = np.empty(m)
    for i in range(k):
        for a in range(3):
            x[3 * i + a] = P[i, a]
    wp = np.dot(W, x).reshape(k, 3)
    ue, ed = np.empty((k, 3)), np.empty(k)
    _host_start(u_h, wp, d_h, dt, k, gc, ue, ed, d_on)
    got = False
    ok = True
    for i in range(k):
        c = gc[i]
        new[i] = False
        if c.active or not d_on[i] > 0.0:
            continue
        nv = c.normal
        dd = -(ue[i, 0] * nv[0] + ue[i, 1] * nv[1] + ue[i, 2] * nv[2])
        p = pair[i]
        if not (dd > 0.0 and np.isfinite(tsk[p, 0])):
            ok = False
            break
        for j in range(coef_on.shape[1]):
            coef_on[i, j] = tpl[p, j]
        if not onset_coefficients(int(rule[0]), rule[1], rule[2], onset_speed(dd), coef_on[i]):
            ok = False
            break
        new[i] = True
        got = True
        dd_on[i] = dd
        for j in range(coef_on.shape[1]):
            c.coef[j] = coef_on[i, j]
        c.active = True
        tc = power_timescale(m_eff[i], tsk[p, 0], tsk[p, 1], max(abs(dd), 1e-3))
        t_c[i] = tc if np.isfinite(tc) and tc > 0.0 else np.inf
    Pn = np.empty((k, 3))
    cnt = np.zeros(3, dtype=np.int64)
    if ok and got:
        Pn[:] = P
        ok = newton(Pn, ue, d_h, ed, dt, k, gf, gc, fn0, s0, np.zeros(k), False, rtol, cnt)
    if not (ok and got):
        for i in range(k):
            if new[i]:
                for j in range(coef_on.shape[1]):
                    gc[i].coef[j] = 0.0
                gc[i].active = False
                new[i] = False
        return -1
    for i in range(k):
        for a in range(3):
            x[3 * i + a] = Pn[i, a]
    wP = np.dot(W, x).reshape(k, 3)
    un = np.empty((k, 3))
    for i in range(k):
        for a in range(3):
            un[i, a] = ue[i, a] + wP[i, a]
    F, S1, FN = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    _host_end(un, d_h, ed, dt, k, gf, gc, fn0, s0, d1, F, S1, FN, loaded)
    return _take_round(Pn, un, S1, cnt, k, P, dP, u1, s1, counters)


@njit
def side_impulses(dP, cont, sgn, f):
    """The impulses (3E,) ``f`` of an articulated body's contact sides (contact ``cont`` (E,),
    sign ``sgn`` (E,): +1 side b, -1 side a) from the contacts' impulses ``dP`` (K, 3), as
    the general response takes them (``(sign * dP[contact]).ravel()``); whether one is
    non-zero."""
    any_f = False
    for e in range(cont.shape[0]):
        for a in range(3):
            f[3 * e + a] = sgn[e] * dP[cont[e], a]
            any_f = any_f or f[3 * e + a] != 0.0
    return any_f


def solve_step(P_lin: np.ndarray, u_lin: np.ndarray, d_lin: np.ndarray, dt: float,
               gf: np.ndarray, gc: np.ndarray, fn0: np.ndarray, s0: np.ndarray, rtol: float,
               counters: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """One solve of the implicit step without an onset to book, in four compiled calls (three
    of them the entries :func:`solve` and :func:`host_end` use: :func:`newton`,
    :func:`end_state`, :func:`_host_end`): from
    the host's end state ``u_lin`` (K, 3) m/s, ``d_lin`` (K,) m with the impulse ``P_lin``
    (K, 3) N s, the arithmetic of :func:`host_start`, :func:`newton` and :func:`host_end`
    (:meth:`ImplicitStep.solve <mbplugin.pipeline.implicit.ImplicitStep>`).
    Returns (P, ue, ed, d1, u1, F, S1, loaded), or None where a contact not active overlaps
    at the end without impulse (an onset) or Newton's method with the trapezoidal limit did
    not converge (the general path then books the onset or takes the fallback)."""
    k = len(d_lin)
    c = np.ascontiguousarray
    u_lin, d_lin = c(u_lin, dtype=float), c(d_lin, dtype=float)
    fn0, s0 = c(fn0, dtype=float), c(s0, dtype=float)
    P, ue, ed = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    if not _fast_start(c(P_lin, dtype=float), u_lin, d_lin, float(dt), k, gf, gc, P, ue, ed):
        return None
    # the compiled entries of :func:`solve` and :func:`host_end` (no further compile)
    if not newton(P, ue, d_lin, ed, float(dt), k, gf, gc, fn0, s0, np.zeros(k), False,
                  float(rtol), counters):
        return None
    d1, u1 = np.empty(k), np.empty((k, 3))
    end_state(P, ue, d_lin, ed, float(dt), k, gf, gc, d1, u1)  # u1 = ue + W P (d1: below)
    F, S1, FN = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    loaded = np.empty(k, dtype=np.bool_)
    _host_end(u1, d_lin, ed, float(dt), k, gf, gc, fn0, s0, d1, F, S1, FN, loaded)
    return P, ue, ed, d1, u1, F, S1, loaded


@njit
def overlap_rates(u, n, out):
    """Each contact's overlap rate -n . u (K,) m/s from its velocity ``u`` (K, 3) m/s and unit
    normal ``n`` (K, 3) into ``out``, with the bits of NumPy's ``-np.einsum("ij,ij->i", u, n)``
    (the rate :meth:`ImplicitStep.finish <mbplugin.pipeline.implicit.ImplicitStep.finish>`
    books): its sum of a row of three, ((x0 + x2) + x1) added to a zero (NumPy 2.4's order on
    x86-64; a -0.0 sum gives +0.0, negated -0.0). The one copy of this rule: the compiled
    host steps (:mod:`mbplugin.bullet.lean`, :mod:`mbplugin.mujoco.lean_tree`,
    :mod:`mbplugin.mujoco.tree_step`) call it, so that their booked rates are the general
    path's to the bit (another order would move the store's rates at roundoff)."""
    for i in range(u.shape[0]):
        x0, x1, x2 = u[i, 0] * n[i, 0], u[i, 1] * n[i, 1], u[i, 2] * n[i, 2]
        out[i] = -(((x0 + x2) + x1) + 0.0)
