"""Dormand-Prince 8(5,3) tables, step-size control, dense output and the compiled step for any
problem of :mod:`mbplugin.pipeline.ivp` (:func:`dop853_step`, :func:`dop853_dense`), shared by
the compiled drivers (the impact analyser, the engine's segments, the hosts' sub-stepper).

Coefficients are SciPy's, read from the public ``scipy.integrate.DOP853`` class (Hairer, Norsett
& Wanner, Solving ODEs I, Sect. II.10) and the step-size control follows ``scipy.integrate.DOP853``
so that a compiled driver steps as SciPy would.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import DOP853 as _DOP853

from mbplugin._jit import njit, njit_inline
from mbplugin.pipeline.ivp import problem_rhs

NS = _DOP853.n_stages  # 12
A = np.ascontiguousarray(_DOP853.A)
B = np.ascontiguousarray(_DOP853.B)
C = np.ascontiguousarray(_DOP853.C)
E3 = np.ascontiguousarray(_DOP853.E3)
E5 = np.ascontiguousarray(_DOP853.E5)
D = np.ascontiguousarray(_DOP853.D)
A_EXTRA = np.ascontiguousarray(_DOP853.A_EXTRA)
C_EXTRA = np.ascontiguousarray(_DOP853.C_EXTRA)
NS_EXT = NS + 1 + len(A_EXTRA)  # 16: the stages, the step's end, the dense output's extras
NPOW = 3 + len(D)  # 7: the dense output's polynomial degree
ORDER = _DOP853.error_estimator_order  # 7

SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
ERR_EXP = -1.0 / (ORDER + 1)


@njit_inline
def interp(y_old, Fd, x, out):
    """Dense output at fraction x in [0, 1] of the step (SciPy's evaluation order)."""
    n = y_old.shape[0]
    for i in range(n):
        acc = 0.0
        for p in range(NPOW - 1, -1, -1):
            acc += Fd[p, i]
            if (NPOW - 1 - p) % 2 == 0:
                acc *= x
            else:
                acc *= 1.0 - x
        out[i] = acc + y_old[i]


@njit_inline
def stage_input(K, st, y, h, out):
    """State at which stage ``st`` (1 <= st < NS) is evaluated: y + h sum_j A[st, j] K[j]."""
    n = y.shape[0]
    for i in range(n):
        acc = 0.0
        for j in range(st):
            acc += A[st, j] * K[j, i]
        out[i] = y[i] + h * acc


@njit_inline
def extra_stage_input(K, st, y, h, out):
    """State at which the dense output's extra stage ``st`` (NS < st < NS_EXT) is evaluated."""
    n = y.shape[0]
    for i in range(n):
        acc = 0.0
        for j in range(st):
            acc += A_EXTRA[st - NS - 1, j] * K[j, i]
        out[i] = y[i] + h * acc


@njit_inline
def solution(K, y, h, out):
    """The step's new state y + h sum_j B[j] K[j] (order 8)."""
    n = y.shape[0]
    for i in range(n):
        acc = 0.0
        for j in range(NS):
            acc += B[j] * K[j, i]
        out[i] = y[i] + h * acc


@njit_inline
def accepted_factor(err, rejected):
    """Next step over this one after an accepted step of error ``err`` < 1 (SciPy's control:
    no growth right after a rejection)."""
    if err == 0.0:
        factor = MAX_FACTOR
    else:
        factor = min(MAX_FACTOR, SAFETY * err**ERR_EXP)
    if rejected:
        factor = min(1.0, factor)
    return factor


@njit_inline
def rejected_factor(err):
    """Retry step over the rejected one (error ``err`` >= 1)."""
    return max(MIN_FACTOR, SAFETY * err**ERR_EXP)


@njit
def error_norm(K, h, y, y_new, rtol, atol):
    """SciPy's DOP853 error norm of a step (K: the stages, K[NS] = f(y_new)); NaN if the new
    state is not finite."""
    n = y.shape[0]
    e5 = 0.0
    e3 = 0.0
    for i in range(n):
        if not math.isfinite(y_new[i]):
            return np.nan
        sc = atol[i] + max(abs(y[i]), abs(y_new[i])) * rtol
        a5 = 0.0
        a3 = 0.0
        for j in range(NS + 1):
            a5 += E5[j] * K[j, i]
            a3 += E3[j] * K[j, i]
        a5 /= sc
        a3 /= sc
        e5 += a5 * a5
        e3 += a3 * a3
    if e5 == 0.0 and e3 == 0.0:
        return 0.0
    return abs(h) * e5 / math.sqrt((e5 + 0.01 * e3) * n)


@njit
def dense_coefficients(K, h, y, y_new, Fd):
    """The interpolation coefficients ``Fd`` (NPOW, n) of a step from its extended stages K."""
    n = y.shape[0]
    for i in range(n):
        dy = y_new[i] - y[i]
        Fd[0, i] = dy
        Fd[1, i] = h * K[0, i] - dy
        Fd[2, i] = 2.0 * dy - h * (K[NS, i] + K[0, i])
        for p in range(NPOW - 3):
            acc = 0.0
            for j in range(NS_EXT):
                acc += D[p, j] * K[j, i]
            Fd[3 + p, i] = h * acc


@njit
def dense_at(tt, t_old, h, y_old, Fd, out):
    """Dense output at time ``tt`` of the step (t_old, t_old + h): DOP853's (``Fd`` has NPOW
    rows) or Radau's collocation polynomial y_old + sum_k Fd[k] x^(k+1) (3 rows)."""
    x = (tt - t_old) / h
    if Fd.shape[0] == NPOW:
        interp(y_old, Fd, x, out)
        return
    for i in range(y_old.shape[0]):
        out[i] = y_old[i] + x * (Fd[0, i] + x * (Fd[1, i] + x * Fd[2, i]))


@njit_inline
def step_loop(y, f, t, t_end, h, rtol, atol, max_step, K, ytmp, kbuf, y_new, P, h_as_is):
    """The DOP853 step loop: tries steps from (t, y) until one is accepted; arguments and
    returns of :func:`dop853_step`, which is this with ``h_as_is`` False (SciPy's convention).

    ``h_as_is`` True is the impact analyser's convention (:func:`mbplugin.impact._compiled.
    impact_core`, which inlines this loop): the step taken is ``h`` itself (``h`` first clipped
    to ``t_end - t``; t_new = t + h, which may differ from ``t_end`` by rounding) and the
    minimum step is 10 |t| eps (a smaller ``h`` fails, it is not raised to it). SciPy's
    convention would move the analyser's results by up to ~1e-7 relative (contact durations,
    ``benchmarks/analyser_pins.py``) where issue 21 pins them to 1e-12.

    Inlined into the caller (numba IR): the analyser's right-hand side is cheap and its call
    boundary costs it a few per cent."""
    nn = y.shape[0]
    nfev = 0
    if h_as_is:
        min_step = 10.0 * max(abs(t) * 2.220446049250313e-16, 5e-324)
        if h > max_step:
            h = max_step
        if t + h > t_end:
            h = t_end - t
    else:
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h > max_step:
            h = max_step
        elif h < min_step:
            h = min_step
    rejected = False
    h_next = h
    t_new = t
    while True:
        if h < min_step:
            return False, t, h, h_next, nfev
        t_new = t + h
        if h_as_is:
            hh = h
        else:
            if t_new > t_end:
                t_new = t_end
            hh = t_new - t
        for i in range(nn):
            K[0, i] = f[i]
        for st in range(1, NS):
            stage_input(K, st, y, hh, ytmp)
            problem_rhs(ytmp, K[st], P)
        solution(K, y, hh, y_new)
        problem_rhs(y_new, K[NS], P)
        nfev += NS
        err = error_norm(K, hh, y, y_new, rtol, atol)
        if not math.isfinite(err):
            h = 0.25 * hh
            rejected = True
            continue
        if err < 1.0:
            h_next = hh * accepted_factor(err, rejected)
            return True, t_new, hh, h_next, nfev
        h = hh * rejected_factor(err)
        rejected = True


@njit
def dop853_step(y, f, t, t_end, h, rtol, atol, max_step, K, ytmp, kbuf, y_new, P):
    """One accepted step of Dormand-Prince 8(5,3) from (t, y) with ``f`` = dy/dt there and the
    step ``h`` to try, for the problem ``P`` (:func:`mbplugin.pipeline.ivp.register_problem`):
    SciPy's ``DOP853`` step-size control (Hairer, Norsett & Wanner, Sect. II.10). The one
    DOP853 step loop (:func:`step_loop`) of the engine's segments
    (:func:`mbplugin.dynamics.compiled.segment`), the hosts' sub-stepper
    (:mod:`mbplugin.pipeline.substep_compiled`) and the impact analyser
    (:func:`mbplugin.impact._compiled.impact_core`, which inlines :func:`step_loop` with its
    own step convention). (In session 4 the engine
    kept its own loop around its right-hand side because this dispatch ran its steel drop
    11-15 % slower; with the callee/entry dispatcher of :mod:`mbplugin._dispatcher` the engine
    through this function is as fast as its own loop was, ``benchmarks/bench_dropball.py``.)

    As SciPy: the step taken is (t + h) - t (the new time clipped to ``t_end``) and the minimum
    step 10 ulp(t) (a smaller ``h`` is raised to it).

    Returns (ok, t_new, h, h_next, nfev): ``ok`` False when the step fell below the minimum
    step; else the new state in ``y_new``, the stages in ``K`` (NS_EXT, nn) with K[NS] =
    f(y_new), ``h`` the step taken and ``h_next`` the next one to try. ``ytmp``: a work
    array (nn,); ``kbuf`` (nn,) is not used (the stages are evaluated into K's rows; kept for
    the callers). The caller moves (t, y, f) on (:func:`dop853_dense` for the dense
    output)."""
    return step_loop(y, f, t, t_end, h, rtol, atol, max_step, K, ytmp, kbuf, y_new, P, False)


@njit_inline
def dense_stages(y, y_new, h, K, Fd, ytmp, kbuf, P):
    """The body of :func:`dop853_dense` (inlined into the caller: the analyser uses it so)."""
    for st in range(NS + 1, NS_EXT):
        extra_stage_input(K, st, y, h, ytmp)
        problem_rhs(ytmp, K[st], P)
    dense_coefficients(K, h, y, y_new, Fd)
    return NS_EXT - NS - 1


@njit
def dop853_dense(y, y_new, h, K, Fd, ytmp, kbuf, P):
    """The dense output ``Fd`` (NPOW, nn) of an accepted :func:`dop853_step` of length ``h``
    from ``y`` to ``y_new`` (its extra stages into ``K``); evaluate it with :func:`dense_at`.
    Returns the number of right-hand side evaluations."""
    return dense_stages(y, y_new, h, K, Fd, ytmp, kbuf, P)
