"""Compiled integrator of an isolated binary collinear impact (DOP853 with event location).

The method is Dormand & Prince's explicit Runge-Kutta 8(5,3) with its 7th-order dense output
(Hairer, Norsett & Wanner, Solving ODEs I, Sect. II.10); the coefficient tables are SciPy's
(from ``scipy.integrate.DOP853``, in :mod:`mbplugin.pipeline.dop853`) and the step-size
control follows ``scipy.integrate.DOP853`` so that both behave alike. What SciPy cannot do is
run the loop compiled, with the contact laws compiled alongside; that is all this module adds.

State vector ``y`` (slots named in :mod:`mbplugin.pipeline.layout`)::

    Y_DELTA    delta (m)
    Y_DDELTA   ddelta (m/s, > 0 approaching)
    Y_IMPULSE  impulse = int F dt (N s)
    Y_WORK     work = int F ddelta dt (J)
    Y_ODE ...  the law's ODE states

The law's coefficients and state cross into the kernels as tuples (see
:mod:`mbplugin.laws.kernels`), so the hot loop does no array reference counting.

Two events are located on the dense output after every accepted step:

* maximum compression (ddelta crosses zero downwards): the integration restarts there, the law's
  memory is updated (plastic laws latch delta_max) and the compression-phase impulse and work
  are recorded for the Poisson and Stronge coefficients;
* end of contact (terminal): the first instant the raw force is <= 0 while the bodies recede
  (Milehins & Marghitu 2026, Eq. 17), or for tension-capable laws delta <= 0 while receding.

The peak force is located by a golden-section search on the dense output.
"""

from __future__ import annotations

import numba
import numpy as np

from mbplugin._jit import grow_rows, njit, njit_inline
from mbplugin.laws import kernels
from mbplugin.laws.kernels import MEM0, MEM1, MEM2, MEM3
from mbplugin.pipeline import dop853 as dop
from mbplugin.pipeline import events, rules
from mbplugin.pipeline.events import locate, register_events
from mbplugin.pipeline.ivp import register_problem
from mbplugin.pipeline.layout import (
    IMPACT,
    IMPACT_CARRY,
    Y_DDELTA,
    Y_DELTA,
    Y_IMPULSE,
    Y_ODE,
    Y_WORK,
    ImpactEvent,
    ImpactProblem,
)

_NS = dop.NS
_NS_EXT = dop.NS_EXT
_NPOW = dop.NPOW

N_SAMPLES = 4  # dense-output samples per accepted step (events, peak force)
N_SAMPLES_RECORD = 16  # samples per step when the time series is recorded (smooth plots)

# an impact's result and a paused impact's state: the records IMPACT and IMPACT_CARRY of
# mbplugin.pipeline.layout (status values: 0 separated, 1 captured (cut-off reached),
# 2 integration failure, and the two below)
#: statuses of a call that stopped early: the step budget of the call is spent (resume from the
#: carry), or the impact took more steps than its limit (an error)
PAUSED = 3
STEP_LIMIT = 4

#: no carry: a fresh start (:func:`impact_core`)
NO_CARRY = np.empty(0, dtype=IMPACT_CARRY)


@njit_inline
def _stup(y, n_ode, mem):
    """State tuple for the kernels: ODE states from y[Y_ODE:], then the memory tuple."""
    # selections, not branches (no phi nodes: the right-hand side is inlined as an overload)
    last = y.shape[0] - 1
    s0 = (0.0, y[min(Y_ODE, last)])[int(n_ode > 0)]
    s1 = (0.0, y[min(Y_ODE + 1, last)])[int(n_ode > 1)]
    s2 = (0.0, y[min(Y_ODE + 2, last)])[int(n_ode > 2)]
    s3 = (0.0, y[min(Y_ODE + 3, last)])[int(n_ode > 3)]
    return (s0, s1, s2, s3, mem[0], mem[1], mem[2], mem[3])


@njit_inline
def _rhs(kid, mode, c, n_ode, mem, m, press, y, out):
    """Right-hand side dy/dt at state ``y``, written into ``out``."""
    d = y[Y_DELTA]
    v = y[Y_DDELTA]
    st = _stup(y, n_ode, mem)
    f = rules.applied(mode, kernels.force(kid, d, v, c, st))
    out[Y_DELTA] = v
    out[Y_DDELTA] = (press - f) / m
    out[Y_IMPULSE] = f
    out[Y_WORK] = f * v
    if n_ode > 0:
        r = kernels.rate(kid, d, v, c, st)
        for j in range(n_ode):
            out[Y_ODE + j] = r[j]


@njit
def _analyser_rhs(y, out, P):
    """The analyser's state as a problem of :mod:`mbplugin.pipeline.ivp`
    (:data:`mbplugin.pipeline.layout.ImpactProblem`)."""
    _rhs(P.kid, P.mode, P.coef, P.n_ode, P.mem, P.m_eff, P.press, y, out)


def _is_analyser_problem(P) -> bool:
    return isinstance(P, numba.types.NamedTuple) and P.instance_class is ImpactProblem


register_problem(_is_analyser_problem, _analyser_rhs, inline=True)


@njit_inline
def _force_at(kid, mode, c, n_ode, mem, y, clipped):
    f = kernels.force(kid, y[Y_DELTA], y[Y_DDELTA], c, _stup(y, n_ode, mem))
    if clipped:
        return rules.applied(mode, f)
    return f


@njit_inline
def _g_sep(kid, mode, c, n_ode, mem, y, fscale, xscale, v0):
    """Separation function: <= 0 exactly when the contact has ended (the end of contact of
    :func:`mbplugin.pipeline.events.event_value`)."""
    return events.event_value(events.ACTIVE_MEMORY, events.S_RULE, y[Y_DELTA], y[Y_DDELTA],
                              _force_at(kid, mode, c, n_ode, mem, y, False), mode, 0.0, xscale,
                              fscale, v0)


@njit_inline
def _g_peak(y):
    """The maximum compression's event value (of :func:`mbplugin.pipeline.events.event_value`,
    with the speed scale 1 m/s: the approach speed itself)."""
    return events.event_value(events.ACTIVE_MEMORY, events.S_EXTREMUM, y[Y_DELTA], y[Y_DDELTA],
                              np.nan, 0, 0.0, 1.0, 1.0, 1.0)


_interp = dop.interp


@njit_inline
def _event_value(which, kid, mode, c, n_ode, mem, y, fscale, xscale, v0):
    """The analyser's event values: its single contact is of class ``ACTIVE_MEMORY`` of
    :func:`mbplugin.pipeline.events.event_value` (``which`` 0: its maximum compression, 1: its
    end); no onset, no latch."""
    if which == 0:
        return _g_peak(y)
    return _g_sep(kid, mode, c, n_ode, mem, y, fscale, xscale, v0)


@njit
def _analyser_event_at(t, E):
    """Event value at the step fraction ``t`` of the dense output
    (:data:`mbplugin.pipeline.layout.ImpactEvent`); ``which`` 0: the approach speed (its
    zero is the peak overlap), 1: the separation function (:mod:`mbplugin.pipeline.events`)."""
    _interp(E.y_old, E.dense, t, E.tmp)
    return _event_value(E.which, E.kid, E.mode, E.coef, E.n_ode, E.mem, E.tmp, E.f_scale,
                        E.x_scale, E.v0)


def _is_analyser_events(E) -> bool:
    return isinstance(E, numba.types.NamedTuple) and E.instance_class is ImpactEvent


register_events(_is_analyser_events, _analyser_event_at)


@njit
def _locate(which, lo, hi, glo, ghi, y_old, Fd, tmp, kid, mode, c, n_ode, mem, fscale, xscale, v0):
    """The event root in (lo, hi] of the step fraction (glo > 0 >= ghi), where the value is
    <= 0: :func:`mbplugin.pipeline.events.locate` (Brent's method) to a bracket of
    2 (4e-16 |x| + 1e-16)."""
    return locate(lo, hi, glo, ghi, 4e-16, 1e-16, 0.0, 200,
                 ImpactEvent(which, y_old, Fd, tmp, kid, mode, c, n_ode, mem, fscale, xscale,
                             v0))


@njit
def _golden_max(lo, hi, y_old, Fd, tmp, kid, mode, c, n_ode, mem):
    """Maximum of the clipped force on [lo, hi] (step fractions) by golden-section search."""
    invphi = 0.6180339887498949
    a = lo
    b = hi
    x1 = b - invphi * (b - a)
    x2 = a + invphi * (b - a)
    _interp(y_old, Fd, x1, tmp)
    f1 = _force_at(kid, mode, c, n_ode, mem, tmp, True)
    _interp(y_old, Fd, x2, tmp)
    f2 = _force_at(kid, mode, c, n_ode, mem, tmp, True)
    for _ in range(60):
        if b - a < 1e-12:
            break
        if f1 < f2:
            a = x1
            x1 = x2
            f1 = f2
            x2 = a + invphi * (b - a)
            _interp(y_old, Fd, x2, tmp)
            f2 = _force_at(kid, mode, c, n_ode, mem, tmp, True)
        else:
            b = x2
            x2 = x1
            f2 = f1
            x1 = b - invphi * (b - a)
            _interp(y_old, Fd, x1, tmp)
            f1 = _force_at(kid, mode, c, n_ode, mem, tmp, True)
    if f1 > f2:
        return x1, f1
    return x2, f2


@njit
def _record(rec, nrec, t, y, f, n_ode):
    rec = grow_rows(rec, nrec, 1)
    rec[nrec, 0] = t
    rec[nrec, 1] = y[Y_DELTA]
    rec[nrec, 2] = y[Y_DDELTA]
    rec[nrec, 3] = f
    for j in range(n_ode):
        rec[nrec, 4 + j] = y[Y_ODE + j]
    return rec, nrec + 1


@njit
def impact_core(kid, mode, c, s_init, n_ode, m, v0, press, tc, t_max, rtol, state_scale, record,
                max_steps, carry):
    """Integrate one impact.

    ``c`` is the coefficient tuple, ``s_init`` the initial state tuple (NS_MAX floats: ODE
    states, then memory). Returns (result: an array of one :data:`~mbplugin.pipeline.layout.
    IMPACT` record, final state tuple, recorded samples, carry).

    ``max_steps`` bounds the accepted steps of this call: when it is spent the result's status
    is ``PAUSED`` and the carry (an array of one :data:`~mbplugin.pipeline.layout.IMPACT_CARRY`
    record) holds the whole integrator state; a call with that carry (and the same other
    arguments) goes on exactly where this one stopped (the same steps and bits; the samples
    recorded so far are in the earlier calls' returns). ``carry`` is empty (:data:`NO_CARRY`)
    for a fresh start.
    """
    n = Y_ODE + n_ode
    resume = carry.shape[0] > 0
    mem = (s_init[MEM0], s_init[MEM1], s_init[MEM2], s_init[MEM3])
    y = np.zeros(n)
    y[Y_DDELTA] = v0
    for j in range(n_ode):
        y[Y_ODE + j] = s_init[j]
    xscale = v0 * tc
    fscale = m * v0 / tc
    atol = np.empty(n)
    atol[Y_DELTA] = 1e-2 * rtol * xscale
    atol[Y_DDELTA] = 1e-2 * rtol * v0
    atol[Y_IMPULSE] = 1e-2 * rtol * m * v0
    atol[Y_WORK] = 1e-2 * rtol * m * v0 * v0
    for j in range(n_ode):
        atol[Y_ODE + j] = 1e-2 * rtol * state_scale[j]

    out = np.zeros(1, dtype=IMPACT)
    res = out[0]
    res.t_m = np.nan
    rec = np.empty((256 if record else 1, 4 + n_ode))
    nrec = 0

    K = np.empty((_NS_EXT, n))
    Fd = np.empty((_NPOW, n))
    F0 = np.empty(n)
    kbuf = np.empty(n)
    y_new = np.empty(n)
    ytmp = np.empty(n)
    ysamp = np.empty(n)
    _rhs(kid, mode, c, n_ode, mem, m, press, y, F0)
    nfev = 1
    steps = 0
    t = 0.0
    h = 1e-4 * tc
    h_next = h
    max_step = 0.25 * tc
    fmax = 0.0
    tfmax = 0.0
    dmax = 0.0
    have_tm = False
    status = 1
    # dense output of the step holding the best force sample (pk), of the step before it (pkp)
    # and after it (pkn), and of the last step (pv): the peak is refined once, at the end
    pk_y = np.zeros(n)
    pk_F = np.zeros((_NPOW, n))
    pk_t = -1.0
    pk_h = 0.0
    pk_x = 0.0
    pk_hi = 1.0
    pkp_y = np.zeros(n)
    pkp_F = np.zeros((_NPOW, n))
    pkp_t = -1.0
    pkp_h = 0.0
    pkp_hi = 1.0
    pkn_y = np.zeros(n)
    pkn_F = np.zeros((_NPOW, n))
    pkn_t = -1.0
    pkn_h = 0.0
    pkn_hi = 1.0
    pv_y = np.zeros(n)
    pv_F = np.zeros((_NPOW, n))
    pv_t = -1.0
    pv_h = 0.0
    pv_hi = 1.0
    need_next = False
    if resume:
        cy = carry[0]
        t = cy.t
        h = cy.h
        fmax = cy.f_max
        tfmax = cy.t_f_max
        dmax = cy.delta_max
        have_tm = cy.have_tm
        need_next = cy.need_next
        pk_t = cy.pk_t
        pk_h = cy.pk_h
        pk_x = cy.pk_x
        pk_hi = cy.pk_hi
        pkp_t = cy.pkp_t
        pkp_h = cy.pkp_h
        pkp_hi = cy.pkp_hi
        pkn_t = cy.pkn_t
        pkn_h = cy.pkn_h
        pkn_hi = cy.pkn_hi
        pv_t = cy.pv_t
        pv_h = cy.pv_h
        pv_hi = cy.pv_hi
        steps = cy.steps
        nfev = cy.nfev
        mem = (cy.mem[0], cy.mem[1], cy.mem[2], cy.mem[3])
        res.t_m = cy.t_m
        res.p_c = cy.p_c
        res.w_c = cy.w_c
        cyy = cy.y
        for i in range(n):
            y[i] = cyy[0, i]
            pk_y[i] = cyy[1, i]
            pkp_y[i] = cyy[2, i]
            pkn_y[i] = cyy[3, i]
            pv_y[i] = cyy[4, i]
        cyd = cy.dense
        for p in range(_NPOW):
            for i in range(n):
                pk_F[p, i] = cyd[0, p, i]
                pkp_F[p, i] = cyd[1, p, i]
                pkn_F[p, i] = cyd[2, p, i]
                pv_F[p, i] = cyd[3, p, i]
        # dy/dt at the state reached (the same bits as the value the paused call held; its
        # evaluation was counted then)
        _rhs(kid, mode, c, n_ode, mem, m, press, y, F0)
    elif record:
        rec, nrec = _record(rec, nrec, t, y, _force_at(kid, mode, c, n_ode, mem, y, True), n_ode)
    nsamp = N_SAMPLES_RECORD if record else N_SAMPLES
    step_limit = steps + max_steps

    while True:
        if t >= t_max:
            status = 1
            break
        if steps >= step_limit:
            status = PAUSED
            break
        # ---- one accepted step and its dense output (pipeline.dop853) ------------------------
        P = ImpactProblem(kid, mode, c, n_ode, mem, m, press)
        ok, t_new, h, h_next, nf = dop.step_loop(y, F0, t, t_max, h, rtol, atol, max_step, K,
                                                 ytmp, kbuf, y_new, P, True)
        nfev += nf
        if not ok:
            status = 2
            break
        steps += 1
        nfev += dop.dense_stages(y, y_new, h, K, Fd, ytmp, kbuf, P)
        # ---- samples: events and peak force ------------------------------------------------
        event = -1
        x_event = 1.0
        xprev = 0.0
        vprev = _g_peak(y)
        gprev = _g_sep(kid, mode, c, n_ode, mem, y, fscale, xscale, v0)
        best_x = -1.0
        best_f = fmax
        for js in range(1, nsamp + 1):
            x = js / nsamp
            if js == nsamp:
                for i in range(n):
                    ysamp[i] = y_new[i]
            else:
                _interp(y, Fd, x, ysamp)
            vs = _g_peak(ysamp)
            fr = _force_at(kid, mode, c, n_ode, mem, ysamp, False)
            gs = events.event_value(events.ACTIVE_MEMORY, events.S_RULE, ysamp[Y_DELTA],
                                    ysamp[Y_DDELTA], fr, mode, 0.0, xscale, fscale, v0)
            fs = rules.applied(mode, fr)
            if events.crossed(vprev, vs, False):
                x_event = _locate(0, xprev, x, vprev, vs, y, Fd, ytmp, kid, mode, c, n_ode, mem,
                                  fscale, xscale, v0)
                event = 0
            if events.crossed(gprev, gs, False):
                xs_ = _locate(1, xprev, x, gprev, gs, y, Fd, ytmp, kid, mode, c, n_ode, mem,
                              fscale, xscale, v0)
                if event < 0 or xs_ <= x_event:
                    event = 1
                    x_event = xs_
            if event >= 0:
                break
            if fs > best_f:
                best_f = fs
                best_x = x
            if ysamp[Y_DELTA] > dmax:
                dmax = ysamp[Y_DELTA]
            if record:
                rec, nrec = _record(rec, nrec, t + x * h, ysamp, fs, n_ode)
            xprev = x
            vprev = vs
            gprev = gs
        if need_next and best_x <= 0.0:
            # the step after the one whose last sample was the best: keep it for the refinement
            need_next = False
            pkn_t = t
            pkn_h = h
            pkn_hi = x_event
            for i in range(n):
                pkn_y[i] = y[i]
                for p in range(_NPOW):
                    pkn_F[p, i] = Fd[p, i]
        if best_x > 0.0:
            fmax = best_f
            tfmax = t + best_x * h
            pk_t = t
            pk_h = h
            pk_x = best_x
            pk_hi = x_event
            pkp_t = pv_t
            pkp_h = pv_h
            pkp_hi = pv_hi
            pkn_t = -1.0
            need_next = best_x >= 1.0 - 1e-12
            for i in range(n):
                pk_y[i] = y[i]
                pkp_y[i] = pv_y[i]
                for p in range(_NPOW):
                    pk_F[p, i] = Fd[p, i]
                    pkp_F[p, i] = pv_F[p, i]
        pv_t = t
        pv_h = h
        pv_hi = x_event
        for i in range(n):
            pv_y[i] = y[i]
            for p in range(_NPOW):
                pv_F[p, i] = Fd[p, i]
        if event < 0:
            t = t_new
            for i in range(n):
                y[i] = y_new[i]
                F0[i] = K[_NS, i]
            mem2 = kernels.update(kid, y[Y_DELTA], y[Y_DDELTA], c, _stup(y, n_ode, mem))
            if mem2 != mem:
                mem = mem2
                _rhs(kid, mode, c, n_ode, mem, m, press, y, F0)
                nfev += 1
            h = h_next
            continue
        # ---- an event inside the step: move to it ------------------------------------------------
        _interp(y, Fd, x_event, ytmp)
        t = t + x_event * h
        for i in range(n):
            y[i] = ytmp[i]
        fe = _force_at(kid, mode, c, n_ode, mem, y, True)
        if fe > fmax:
            fmax = fe
            tfmax = t
            pk_t = -1.0
        if y[Y_DELTA] > dmax:
            dmax = y[Y_DELTA]
        if record:
            rec, nrec = _record(rec, nrec, t, y, fe, n_ode)
        if event == 1:
            status = 0
            break
        # maximum compression: latch phase quantities, update memory, restart from here
        if not have_tm:
            have_tm = True
            res.t_m = t
            res.p_c = y[Y_IMPULSE]
            res.w_c = y[Y_WORK]
        mem = kernels.update(kid, y[Y_DELTA], y[Y_DDELTA], c, _stup(y, n_ode, mem))
        # keep the event's ddelta <= 0 so that it is not detected twice
        if y[Y_DDELTA] > 0.0:
            y[Y_DDELTA] = 0.0
        _rhs(kid, mode, c, n_ode, mem, m, press, y, F0)
        nfev += 1
        h = 0.5 * h_next

    if status == PAUSED:
        k = np.zeros(1, dtype=IMPACT_CARRY)
        kc = k[0]
        kc.t = t
        kc.h = h
        kc.f_max = fmax
        kc.t_f_max = tfmax
        kc.delta_max = dmax
        kc.have_tm = have_tm
        kc.need_next = need_next
        kc.pk_t = pk_t
        kc.pk_h = pk_h
        kc.pk_x = pk_x
        kc.pk_hi = pk_hi
        kc.pkp_t = pkp_t
        kc.pkp_h = pkp_h
        kc.pkp_hi = pkp_hi
        kc.pkn_t = pkn_t
        kc.pkn_h = pkn_h
        kc.pkn_hi = pkn_hi
        kc.pv_t = pv_t
        kc.pv_h = pv_h
        kc.pv_hi = pv_hi
        kc.steps = steps
        kc.nfev = nfev
        km = kc.mem  # (through a view: ``kc.mem[j] = mem[j]`` here left the carry's zeros)
        for j in range(4):
            km[j] = mem[j]
        kc.t_m = res.t_m
        kc.p_c = res.p_c
        kc.w_c = res.w_c
        ky = kc.y
        for i in range(n):
            ky[0, i] = y[i]
            ky[1, i] = pk_y[i]
            ky[2, i] = pkp_y[i]
            ky[3, i] = pkn_y[i]
            ky[4, i] = pv_y[i]
        kd = kc.dense
        for p in range(_NPOW):
            for i in range(n):
                kd[0, p, i] = pk_F[p, i]
                kd[1, p, i] = pkp_F[p, i]
                kd[2, p, i] = pkn_F[p, i]
                kd[3, p, i] = pv_F[p, i]
        res.status = status
        res.t_s = t
        res.steps = steps
        res.nfev = nfev
        return out, _stup(y, n_ode, mem), rec[:nrec].copy(), k
    if pk_t >= 0.0:
        w = 1.0 / nsamp
        xb, fb = _golden_max(max(0.0, pk_x - w), min(pk_hi, pk_x + w), pk_y, pk_F, ytmp, kid,
                             mode, c, n_ode, mem)
        if fb > fmax:
            fmax = fb
            tfmax = pk_t + xb * pk_h
        if pk_x <= w + 1e-12 and pkp_t >= 0.0:
            xb, fb = _golden_max(max(0.0, pkp_hi - w), pkp_hi, pkp_y, pkp_F, ytmp, kid, mode, c,
                                 n_ode, mem)
            if fb > fmax:
                fmax = fb
                tfmax = pkp_t + xb * pkp_h
        if pk_x >= 1.0 - 1e-12 and pkn_t >= 0.0:
            xb, fb = _golden_max(0.0, min(pkn_hi, w), pkn_y, pkn_F, ytmp, kid, mode, c, n_ode,
                                 mem)
            if fb > fmax:
                fmax = fb
                tfmax = pkn_t + xb * pkn_h
    res.status = status
    res.t_s = t
    res.v_s = y[Y_DDELTA]
    res.delta_s = y[Y_DELTA]
    res.f_max = fmax
    res.t_f_max = tfmax
    res.delta_max = dmax
    res.p_t = y[Y_IMPULSE]
    res.w_t = y[Y_WORK]
    res.steps = steps
    res.nfev = nfev
    s_end = _stup(y, n_ode, mem)
    return out, s_end, rec[:nrec].copy(), np.empty(0, dtype=IMPACT_CARRY)


@njit
def impact_batch_core(kid, mode, c, s_init, n_ode, m, v0, press, tc, t_max, rtol, state_scale,
                      max_steps, out, first, budget, carry):
    """Integrate independent impacts (mixed kernels allowed) into ``out`` (N records of
    :data:`~mbplugin.pipeline.layout.IMPACT`), from
    impact ``first`` on, for at most ``budget`` accepted steps in all; an impact that takes
    more than ``max_steps`` steps ends with status ``STEP_LIMIT``.

    ``c`` is (N, NC_MAX), ``s_init`` (N, NS_MAX), ``state_scale`` (N, NODE_MAX). Returns (the
    index of the first impact not finished, its carry, the steps taken): call again with those
    (``first``, ``carry``) until the index is N; the results are those of one uninterrupted
    loop.
    """
    nimp = kid.shape[0]
    i = first
    left = budget
    while i < nimp and left > 0:
        done = float(carry[0].steps) if carry.shape[0] > 0 else 0.0
        one, _, _, k = impact_core(
            kid[i], mode[i], kernels.ctuple(c, i), kernels.stuple(s_init, i), n_ode[i], m[i],
            v0[i], press[i], tc[i], t_max[i], rtol, state_scale[i], False,
            min(left, max(max_steps - int(done), 0)), carry,
        )
        res = one[0]
        left -= int(res.steps - done)
        carry = k
        if res.status == PAUSED:
            if res.steps < max_steps:
                break  # the call's budget is spent: go on from the carry next call
            res.status = STEP_LIMIT
            carry = np.empty(0, dtype=IMPACT_CARRY)
        out[i] = res
        i += 1
    return i, carry, budget - left
