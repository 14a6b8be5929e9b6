"""Radau IIA of order 5, compiled: SciPy's ``scipy.integrate.Radau`` step (simplified Newton
on the collocation system with the real/complex split of the Butcher matrix's inverse, step-size
and Jacobian-reuse control; Hairer & Wanner 1996, Sect. IV.8), for any problem of
:mod:`mbplugin.pipeline.ivp`. The tables are :mod:`mbplugin.pipeline.radau_tables`.

Used by the standalone engine's stiff segments (:func:`mbplugin.dynamics.compiled.radau_segment`)
and the hosts' contact-space sub-stepper (:mod:`mbplugin.pipeline.substep_compiled`).
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin._jit import njit
from mbplugin.pipeline import radau_tables as _radau
from mbplugin.pipeline.dop853 import dense_at
from mbplugin.pipeline.ivp import initial_step, problem_rhs

# ---- Radau IIA (order 5): steps as SciPy's ``scipy.integrate.Radau``, compiled ----------------
_RC = _radau.C
_RE = _radau.E
_RT = np.ascontiguousarray(_radau.T)
_RTI = np.ascontiguousarray(_radau.TI)
_RP = np.ascontiguousarray(_radau.P)
_MU_REAL = float(_radau.MU_REAL)
_MU_COMPLEX = complex(_radau.MU_COMPLEX)
_NEWTON_MAXITER = int(_radau.NEWTON_MAXITER)
_RMIN = float(_radau.MIN_FACTOR)
_RMAX = float(_radau.MAX_FACTOR)
_EPS = float(np.finfo(float).eps)


@njit
def _rms(x, scale):
    """RMS of x / scale over all entries (SciPy's ``norm``); x is (k, n), scale (n,)."""
    acc = 0.0
    for r in range(x.shape[0]):
        for i in range(x.shape[1]):
            v = x[r, i] / scale[i]
            acc += v * v
    return math.sqrt(acc / (x.shape[0] * x.shape[1]))


@njit
def _lu_factor(A, piv):
    """In-place LU factorisation with partial pivoting of the square matrix A (real or complex;
    LAPACK's getrf without blocking): no allocation, for the small systems of Radau's Newton
    iteration."""
    n = A.shape[0]
    for c in range(n):
        p = c
        best = abs(A[c, c])
        for r in range(c + 1, n):
            v = abs(A[r, c])
            if v > best:
                best = v
                p = r
        piv[c] = p
        if p != c:
            for j in range(n):
                tmp = A[c, j]
                A[c, j] = A[p, j]
                A[p, j] = tmp
        d = A[c, c]
        if d == 0.0:
            continue
        for r in range(c + 1, n):
            m = A[r, c] / d
            A[r, c] = m
            if m != 0.0:
                for j in range(c + 1, n):
                    A[r, j] -= m * A[c, j]


@njit
def _lu_solve(LU, piv, b):
    """Solve LU x = b in place (``b`` becomes x) with the factors of :func:`_lu_factor`."""
    n = LU.shape[0]
    for c in range(n):
        p = piv[c]
        if p != c:
            tmp = b[c]
            b[c] = b[p]
            b[p] = tmp
    for r in range(n):
        acc = b[r]
        for j in range(r):
            acc -= LU[r, j] * b[j]
        b[r] = acc
    for r in range(n - 1, -1, -1):
        acc = b[r]
        for j in range(r + 1, n):
            acc -= LU[r, j] * b[j]
        b[r] = acc / LU[r, r]


@njit
def _jacobian(y, f0, J, jscale, n_work, ytmp, f1, P):
    """Forward-difference Jacobian with the engine's steps h_j = sqrt(eps) max(|y_j|, s_j)
    (:meth:`mbplugin.dynamics.world.World.jacobian_function`); the last ``n_work`` rows (the
    engine's work integrals) are left at 0 as there (nothing depends on them)."""
    nn = y.shape[0]
    sq = math.sqrt(_EPS)
    for i in range(nn):
        ytmp[i] = y[i]
    for j in range(nn):
        hj = sq * max(abs(y[j]), jscale[j])
        hj = (y[j] + hj) - y[j]
        ytmp[j] = y[j] + hj
        problem_rhs(ytmp, f1, P)
        ytmp[j] = y[j]
        for i in range(nn):
            J[i, j] = (f1[i] - f0[i]) / hj
    for i in range(nn - n_work, nn):
        for j in range(nn):
            J[i, j] = 0.0


@njit
def _collocation(y, h, Z0, scale, tol, LUr, LUc, piv_r, piv_c, Z, F, Wm, dW, ytmp, kbuf,
                f_real, f_cplx, P):
    """Newton's iteration on the collocation system (SciPy's ``solve_collocation_system``)
    with the LU factors of :func:`_lu_factor`. Returns (converged, iterations, rate or -1, nfev);
    the solution is written into Z."""
    nn = y.shape[0]
    m_real = _MU_REAL / h
    m_complex = _MU_COMPLEX / h
    for r in range(3):
        for i in range(nn):
            acc = 0.0
            for q in range(3):
                acc += _RTI[r, q] * Z0[q, i]
            Wm[r, i] = acc
            Z[r, i] = Z0[r, i]
    dw_old = -1.0
    rate = -1.0
    converged = False
    nfev = 0
    k = 0
    for k in range(_NEWTON_MAXITER):
        finite = True
        for r in range(3):
            for i in range(nn):
                ytmp[i] = y[i] + Z[r, i]
            problem_rhs(ytmp, kbuf, P)
            nfev += 1
            for i in range(nn):
                F[r, i] = kbuf[i]
                if not math.isfinite(kbuf[i]):
                    finite = False
        if not finite:
            break
        for i in range(nn):
            f_real[i] = (F[0, i] * _RTI[0, 0] + F[1, i] * _RTI[0, 1] + F[2, i] * _RTI[0, 2]
                         - m_real * Wm[0, i])
            fc = (F[0, i] * (_RTI[1, 0] + 1j * _RTI[2, 0])
                  + F[1, i] * (_RTI[1, 1] + 1j * _RTI[2, 1])
                  + F[2, i] * (_RTI[1, 2] + 1j * _RTI[2, 2]))
            f_cplx[i] = fc - m_complex * (Wm[1, i] + 1j * Wm[2, i])
        _lu_solve(LUr, piv_r, f_real)
        _lu_solve(LUc, piv_c, f_cplx)
        for i in range(nn):
            dW[0, i] = f_real[i]
            dW[1, i] = f_cplx[i].real
            dW[2, i] = f_cplx[i].imag
        dw = _rms(dW, scale)
        if dw_old >= 0.0:
            rate = dw / dw_old
        if rate >= 0.0 and (rate >= 1.0
                            or rate ** (_NEWTON_MAXITER - k) / (1.0 - rate) * dw > tol):
            break
        for r in range(3):
            for i in range(nn):
                Wm[r, i] += dW[r, i]
        for r in range(3):
            for i in range(nn):
                Z[r, i] = _RT[r, 0] * Wm[0, i] + _RT[r, 1] * Wm[1, i] + _RT[r, 2] * Wm[2, i]
        if dw == 0.0 or (rate >= 0.0 and rate / (1.0 - rate) * dw < tol):
            converged = True
            break
        dw_old = dw
    return converged, k + 1, rate, nfev


@njit
def _predict_factor(h_abs, h_abs_old, err, err_old):
    if err_old < 0.0 or h_abs_old < 0.0 or err == 0.0:
        multiplier = 1.0
    else:
        multiplier = h_abs / h_abs_old * (err_old / err) ** 0.25
    if err == 0.0:
        return np.inf
    return min(1.0, multiplier) * err ** -0.25


# the controller state ``ctl`` of radau_start and radau_step: an array of one record of
# mbplugin.pipeline.layout.RADAU_CONTROL (np.zeros(1, dtype=RADAU_CONTROL)), read by field


@njit
def radau_workspace(nn):
    """Work arrays of :func:`radau_step` for ``nn`` state values: (J, Z0, Z, F, Wm, dW, Dq,
    y_new, y_old, ytmp, ysamp, kbuf, f_new, scale, err_v, LUr, LUc, piv_r, piv_c, f_real,
    f_cplx, ev)."""
    return (np.empty((nn, nn)), np.zeros((3, nn)), np.empty((3, nn)), np.empty((3, nn)),
            np.empty((3, nn)), np.empty((3, nn)), np.empty((3, nn)), np.empty(nn),
            np.empty(nn), np.empty(nn), np.empty(nn), np.empty(nn), np.empty(nn),
            np.empty(nn), np.empty((1, nn)), np.empty((nn, nn)),
            np.empty((nn, nn), dtype=np.complex128), np.empty(nn, dtype=np.int64),
            np.empty(nn, dtype=np.int64), np.empty(nn), np.empty(nn, dtype=np.complex128),
            np.empty(nn))


@njit
def radau_start(y, f, t, t_end, h_in, rtol, atol, max_step, jscale, n_work, ctl, ws, P):
    """Start :func:`radau_step` at (t, y): ``f`` <- dy/dt, the first step (``h_in`` > 0, or
    SciPy's initial step), the Jacobian, the controller state ``ctl``. Returns the number of
    right-hand side evaluations."""
    J, ytmp, kbuf = ws[0], ws[9], ws[11]
    c = ctl[0]
    nn = y.shape[0]
    problem_rhs(y, f, P)
    nfev = 1
    if h_in > 0.0:
        c.h = h_in
    else:
        c.h = initial_step(y, f, t, t_end, max_step, rtol, atol, ytmp, kbuf, 3, P)
        nfev += 1
    c.h_old = -1.0
    c.err_old = -1.0
    _jacobian(y, f, J, jscale, n_work, ytmp, kbuf, P)
    nfev += nn
    c.cur_jac = True
    c.have_lu = False
    c.have_sol = False
    c.t_sol = 0.0
    c.h_sol = 1.0
    return nfev


@njit
def radau_step(y, f, t, t_end, rtol, atol, max_step, newton_tol, jscale, n_work, ctl, ws, P):
    """One accepted step of Radau IIA of order 5 from (t, y) with ``f`` = dy/dt there (SciPy's
    ``Radau._step_impl``: Newton, step-size and Jacobian-reuse control; Hairer & Wanner 1996,
    Sect. IV.8), state kept in ``ctl`` and the work arrays ``ws`` (:func:`radau_workspace`).

    Returns (ok, t_new, h, nfev). On success the new state is in ``ws[7]`` (y_new) and its
    derivative in ``ws[12]`` (f_new); ``ws[8]`` (y_old) holds ``y`` and ``ws[6]`` (Dq) the
    dense output on the step: y(t + x h) = y_old + sum_k Dq[k] x^(k+1) (:func:`dense_at`). The
    caller moves (t, y, f) to the new values (or elsewhere on the dense output)."""
    (J, Z0, Z, F, Wm, dW, Dq, y_new, y_old, ytmp, ysamp, kbuf, f_new, scale, err_v, LUr, LUc,
     piv_r, piv_c, f_real, f_cplx, ev) = ws
    c = ctl[0]
    nn = y.shape[0]
    nfev = 0
    h_self = c.h
    min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
    if h_self > max_step:
        h_abs = max_step
        h_abs_old = -1.0
        err_old = -1.0
    elif h_self < min_step:
        h_abs = min_step
        h_abs_old = -1.0
        err_old = -1.0
    else:
        h_abs = h_self
        h_abs_old = c.h_old
        err_old = c.err_old
    rejected = False
    accepted = False
    n_iter = 0
    rate = -1.0
    err = 0.0
    safety = 0.9
    t_new = t
    h = h_abs
    while not accepted:
        if h_abs < min_step:
            return False, t, h, nfev
        t_new = t + h_abs
        if t_new > t_end:
            t_new = t_end
        h = t_new - t
        h_abs = abs(h)
        if c.have_sol:
            for r in range(3):
                dense_at(t + h * _RC[r], c.t_sol, c.h_sol, y_old, Dq, ytmp)
                for i in range(nn):
                    Z0[r, i] = ytmp[i] - y[i]
        else:
            Z0[:, :] = 0.0
        for i in range(nn):
            scale[i] = atol[i] + abs(y[i]) * rtol
        converged = False
        while not converged:
            if not c.have_lu:
                mr = _MU_REAL / h
                mc = _MU_COMPLEX / h
                for i in range(nn):
                    for j in range(nn):
                        LUr[i, j] = -J[i, j]
                        LUc[i, j] = -J[i, j]
                    LUr[i, i] += mr
                    LUc[i, i] += mc
                _lu_factor(LUr, piv_r)
                _lu_factor(LUc, piv_c)
                c.have_lu = True
            converged, n_iter, rate, nf = _collocation(y, h, Z0, scale, newton_tol, LUr,
                                                       LUc, piv_r, piv_c, Z, F, Wm, dW, ytmp,
                                                       kbuf, f_real, f_cplx, P)
            nfev += nf
            if not converged:
                if c.cur_jac:
                    break
                _jacobian(y, f, J, jscale, n_work, ytmp, kbuf, P)
                nfev += nn
                c.cur_jac = True
                c.have_lu = False
        if not converged:
            h_abs *= 0.5
            c.have_lu = False
            continue
        for i in range(nn):
            y_new[i] = y[i] + Z[2, i]
        for i in range(nn):
            ev[i] = f[i] + (Z[0, i] * _RE[0] + Z[1, i] * _RE[1] + Z[2, i] * _RE[2]) / h
        _lu_solve(LUr, piv_r, ev)
        for i in range(nn):
            scale[i] = atol[i] + max(abs(y[i]), abs(y_new[i])) * rtol
            err_v[0, i] = ev[i]
        err = _rms(err_v, scale)
        safety = 0.9 * (2 * _NEWTON_MAXITER + 1) / (2 * _NEWTON_MAXITER + n_iter)
        if rejected and err > 1.0:
            for i in range(nn):
                ysamp[i] = y[i] + ev[i]
            problem_rhs(ysamp, kbuf, P)
            nfev += 1
            for i in range(nn):
                ev[i] = kbuf[i] + (Z[0, i] * _RE[0] + Z[1, i] * _RE[1] + Z[2, i] * _RE[2]) / h
            _lu_solve(LUr, piv_r, ev)
            for i in range(nn):
                err_v[0, i] = ev[i]
            err = _rms(err_v, scale)
        if not (err <= 1.0):
            factor = _predict_factor(h_abs, h_abs_old, err, err_old)
            h_abs *= max(_RMIN, safety * factor)
            c.have_lu = False
            rejected = True
        else:
            accepted = True
    recompute_jac = n_iter > 2 and rate > 1e-3
    factor = _predict_factor(h_abs, h_abs_old, err, err_old)
    factor = min(_RMAX, safety * factor)
    if not recompute_jac and factor < 1.2:
        factor = 1.0
    else:
        c.have_lu = False
    problem_rhs(y_new, f_new, P)
    nfev += 1
    if recompute_jac:
        _jacobian(y_new, f_new, J, jscale, n_work, ytmp, kbuf, P)
        nfev += nn
        c.cur_jac = True
    else:
        c.cur_jac = False
    c.h_old = h_self
    c.err_old = err
    c.h = h_abs * factor
    # dense output: y_old + sum_k (Z^T P)[:, k] x^(k+1)
    for k in range(3):
        for i in range(nn):
            Dq[k, i] = Z[0, i] * _RP[0, k] + Z[1, i] * _RP[1, k] + Z[2, i] * _RP[2, k]
    for i in range(nn):
        y_old[i] = y[i]
    c.t_sol = t
    c.h_sol = h
    c.have_sol = True
    return True, t_new, h, nfev
