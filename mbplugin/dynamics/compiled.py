"""The engine's compiled end-to-end path for small scenes: known pairs -> laws -> wrenches ->
DOP853 (or Radau) step -> event location, in one compiled loop.

The standalone engine's adaptive integrator (:mod:`mbplugin.dynamics.integrators`) hands a
*segment* to :func:`run_segment` when every watched pair is of a primitive type with a compiled
path (:mod:`mbplugin.contact.pairs`), every law has a compiled kernel, there are no external
loads and the solver is DOP853 or (for worlds of up to ``COMPILED_RADAU_MAX_STATES`` state
values) Radau. The segment integrates the whole flat state of the world (bodies, law ODE
states, work integrals; see :mod:`mbplugin.dynamics.world`) with Dormand-Prince 8(5,3) and
SciPy's step control (:mod:`mbplugin.pipeline.dop853`; :func:`segment`) or with Radau IIA of
order 5 and SciPy's Newton, step and Jacobian-reuse control (:func:`radau_segment`; Hairer &
Wanner 1996, Sect. IV.8), and stops at the first of:

* ``DONE``    the end time;
* ``EVENT``   an event function of a watched pair changed sign: the contact rules
  (:mod:`mbplugin.pipeline.rules`) are evaluated on the dense output after every accepted step
  (``n_samples`` samples), the crossing is located by Brent's method to adjacent floats of t
  (:func:`mbplugin.pipeline.events.locate`) and moved to where the value is strictly
  negative, exactly as the Python path does;
* ``SWITCH``  (``auto`` solver) the contact has become stiff: the step outgrew the contact time
  scale (h (sqrt(k/m) + c/m) > ``stiff_hw`` for ``stiff_steps`` steps) or ``switch_steps``
  steps passed in one contact phase; the implicit solver takes over;
* ``COMMIT``  an event value is <= 0 without a crossing: the driver books the state in full.

The laws' memory is updated at the maximum compression of each active contact whose law has
memory (watch kind ``W_ACTIVE_MEMORY``: the approach speed turning from > 0 to <= 0,
:func:`mbplugin.pipeline.rules.peak_value`, located on the dense output like the events above;
the segment goes on from there, ``PEAK``) and after every accepted step (the rule of the
contact store's commit), and the step continues with the new memory. The accepted states (and, with
``contact_samples``, extra dense-output samples inside contact steps) are returned for the
driver to record. The driver (the engine) owns the bookkeeping at events: detection and the
contact store's commit. :func:`segment_chain` continues past lone events (laws without ODE
states or memory): the end of the only active contact, and the onset of a free pair while no
contact is active when its law has a compiled onset (``Law.onset_rule``); it hands the events
it booked to the driver with the records.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from mbplugin._jit import borrowed, copy_rows, grow_rows, keep_alive, njit
from mbplugin.contact import kernels as ck
from mbplugin.contact import pairs as cpairs
from mbplugin.dynamics._kernels import dynamics as _dyn
from mbplugin.dynamics._kernels import kinematics as _kin
from mbplugin.errors import reraise_interrupt
from mbplugin.laws import kernels
from mbplugin.laws.base import power_timescale
from mbplugin.pipeline import dop853 as dop
from mbplugin.pipeline import events, pairs, rules
from mbplugin.pipeline.dop853 import dense_at, dop853_dense, dop853_step
from mbplugin.pipeline.events import register_events
from mbplugin.pipeline.ivp import initial_step, problem_rhs, register_problem  # noqa: F401
from mbplugin.pipeline.layout import (
    ONSET,
    RADAU_CONTROL,
    ContactRows,
    EngineEvent,
    EngineProblem,
    EngineWork,
)
from mbplugin.pipeline.radau import _EPS, radau_start, radau_step, radau_workspace
from mbplugin.pipeline.rules import F_SCALE, V_SCALE, X_SCALE
from mbplugin.pipeline.stiffness import law_slopes

DONE = 0
EVENT = 1
SWITCH = 2
COMMIT = 3
FAILED = 4
#: the call's step budget (``max_steps``) is spent: the driver resumes with the returned carry
PAUSED = 5
RUNNING = -1  #: internal: the step was accepted and the segment goes on
#: internal: the step was cut at the maximum compression of a memory law's contact, where the
#: memory was updated; the segment goes on from there (a fresh step for Radau)
PEAK = -2
#: Watch kinds (``WP.kind``): a free pair, an active contact, a latched pair, an active contact
#: whose law has memory (its maximum compression is watched too, :func:`rules.peak_value`)
#: (the classes of :func:`mbplugin.pipeline.events.event_value`)
W_FREE, W_ACTIVE, W_LATCHED, W_ACTIVE_MEMORY = (events.FREE, events.ACTIVE, events.LATCHED,
                                                events.ACTIVE_MEMORY)
#: A paused DOP853 segment's carry (:func:`segment`, :func:`segment_chain`): its ``kind``
#: (``_C_NONE`` a fresh start, ``_C_STEP`` paused mid-segment, ``_C_EVENT`` a chain paused at
#: an event it is about to book), the step to try ``h`` (s; after the event for ``_C_EVENT``),
#: the ``auto`` solver's stiffness counters ``in_contact`` and ``stiff`` (steps) and the event
#: values ``g`` at the pause. One numba type for every kind (one compiled specialisation).
SegmentCarry = namedtuple("SegmentCarry", ["kind", "h", "in_contact", "stiff", "g"])
_C_NONE, _C_STEP, _C_EVENT = 0, 1, 2
#: A paused Radau segment's carry (:func:`radau_segment`): the controller state ``ctl``
#: (:mod:`mbplugin.pipeline.radau`: one record of ``RADAU_CONTROL``), dy/dt ``f`` and the event
#: values ``g`` at the pause; empty arrays for a fresh start.
RadauCarry = namedtuple("RadauCarry", ["ctl", "f", "g"])
# (the compiled entries return a carry as a plain tuple and run_segment names it: boxing a
# named tuple calls its class's Python constructor, where a pending Ctrl-C raises, and numba's
# boxing does not check for that error: the process crashed, tests/test_long_runs.py)


@njit
def _plain(c):
    """A :data:`SegmentCarry` as a plain tuple (its fields in order), to return to Python."""
    return (c.kind, c.h, c.in_contact, c.stiff, c.g)


@njit
def _plain_radau(c):
    """A :data:`RadauCarry` as a plain tuple (its fields in order), to return to Python."""
    return (c.ctl, c.f, c.g)


@njit
def _poses(y, n, R, omega_w):
    """Positions and velocities (n, 3) of the flat state ``y`` (views); fills the rotation
    matrices ``R`` and world angular velocities ``omega_w`` (rad/s) of the n bodies."""
    _kin(y[3 * n : 7 * n].reshape((n, 4)), y[10 * n : 13 * n].reshape((n, 3)), R, omega_w)
    return y[0 : 3 * n].reshape((n, 3)), y[7 * n : 10 * n].reshape((n, 3))


@njit
def _contact_rhs(y, out, n, BD, G, CR, FR, W):
    """dy/dt of the flat state ``y`` into ``out`` (bodies, law ODE states, work integrals)."""
    inv_mass, inertia, inv_inertia, gacc, fixed = (BD.inv_mass, BD.inertia, BD.inv_inertia,
                                                   BD.gacc, BD.fixed)
    body, lpos, lrot, radius = G.body, G.lpos, G.lrot, G.radius
    plane_n, plane_p, half, mesh = G.plane_n, G.plane_p, G.half, G.mesh
    r_ptype, r_sa, r_sb, r_feat, r_law = CR.ptype, CR.sa, CR.sb, CR.feat, CR.law
    coef, mem, ns = CR.coef, CR.mem, CR.n_states
    law_kid, law_mode, law_ns = CR.law_kid, CR.law_mode, CR.law_ns
    mu, mu_s, v_s, v_eps = FR.mu, FR.mu_s, FR.v_s, FR.v_eps
    visc, lin, fric = FR.viscous, FR.linear, FR.on
    R, omega_w, force, torque = W.R, W.omega_w, W.force, W.torque
    a, b, d, v, nrm, vt, ra, rb = W.a, W.b, W.d, W.v, W.nrm, W.vt, W.ra, W.rb
    fn, rows, Ra, Rb = W.fn, W.rows, W.Ra, W.Rb
    m = r_sa.shape[0]
    pos = y[0 : 3 * n].reshape((n, 3))
    quat = y[3 * n : 7 * n].reshape((n, 4))
    vel = y[7 * n : 10 * n].reshape((n, 3))
    omega = y[10 * n : 13 * n].reshape((n, 3))
    _kin(quat, omega, R, omega_w)
    force[:] = 0.0
    torque[:] = 0.0
    n_ode = m * ns
    o = 13 * n
    for j in range(n_ode):
        out[o + j] = 0.0
    p_n = 0.0
    p_f = 0.0
    if m:
        cpairs.pair_geometry_into(r_ptype, r_sa, r_sb, r_feat, body, lpos, lrot, radius,
                                  plane_n, plane_p, half, mesh, pos, R, vel, omega_w, a, b, d, v,
                                  nrm, vt, ra, rb, Ra, Rb)
        p_n, p_f = pairs.contact_forces(rows, r_law, a, b, d, v, nrm, vt, ra, rb, coef,
                                        y[o : o + n_ode], ns, mem, law_kid, law_mode, law_ns,
                                        mu, mu_s, v_s, v_eps, visc, lin, fric, force, torque,
                                        out[o : o + n_ode], fn)
    _dyn(quat, vel, omega, R, force, torque, inv_mass, inertia, inv_inertia, gacc, fixed, out)
    out[o + n_ode] = p_n
    out[o + n_ode + 1] = p_f
    out[o + n_ode + 2] = 0.0



@njit
def _engine_rhs(y, out, P):
    """The engine's flat state as a problem (:data:`mbplugin.pipeline.layout.EngineProblem`)."""
    _contact_rhs(y, out, P.n, P.bodies, P.geometry, P.rows, P.friction, P.work)


def _is_engine_problem(P) -> bool:
    return isinstance(P, numba.types.NamedTuple) and P.instance_class is EngineProblem


register_problem(_is_engine_problem, _engine_rhs)


@njit
def _n_values(WP):
    """(number of event values of the contact rules, number of maximum-compression values):
    one value per watched pair, one per latched pair (renewal), then one per active contact of
    a law with memory (:func:`_event_values`)."""
    w_kind = WP.kind
    nw = w_kind.shape[0]
    nlat = 0
    npk = 0
    for j in range(nw):
        if w_kind[j] == W_LATCHED:
            nlat += 1
        elif w_kind[j] == W_ACTIVE_MEMORY:
            npk += 1
    return nw + nlat, npk


@njit
def _event_values(y, g, n, G, CR, WP, W):
    """Event values of the watched pairs at ``y`` into ``g``
    (:func:`mbplugin.pipeline.events.event_value` of each pair's class, its watch kind): its
    ``S_RULE`` value (onset, end, latch release), then the ``S_RENEW`` value of each latched
    pair, then (filled from the end backwards) the ``S_EXTREMUM`` value of each active contact
    of a law with memory (its maximum compression). A latched pair's ``S_EXTREMUM``, the apex
    of its rebound, is not watched here: the engine samples the release value at
    ``n_samples`` points of every step's dense output."""
    body, lpos, lrot, radius = G.body, G.lpos, G.lrot, G.radius
    plane_n, plane_p, half, mesh = G.plane_n, G.plane_p, G.half, G.mesh
    r_sa, r_law, coef, mem, ns = CR.sa, CR.law, CR.coef, CR.mem, CR.n_states
    law_kid, law_mode, law_ns = CR.law_kid, CR.law_mode, CR.law_ns
    w_ptype, w_sa, w_sb, w_feat = WP.ptype, WP.sa, WP.sb, WP.feat
    w_kind, w_row, w_dsep = WP.kind, WP.row, WP.d_sep
    R, omega_w, Ra, Rb = W.R, W.omega_w, W.Ra, W.Rb
    pos, vel = _poses(y, n, R, omega_w)
    o = 13 * n
    ode = y[o : o + r_sa.shape[0] * ns]
    nw = w_sa.shape[0]
    il = nw
    ip = g.shape[0] - 1
    for j in range(nw):
        gg = cpairs.pair_one(w_ptype[j], w_sa[j], w_sb[j], w_feat[j], body, lpos, lrot, radius,
                             plane_n, plane_p, half, mesh, pos, R, vel, omega_w, Ra, Rb)
        d = gg[0]
        v = gg[1]
        kind = w_kind[j]
        f = np.nan
        md = 0
        if events.needs_force(kind, events.S_RULE):
            r = w_row[j]
            li = r_law[r]
            f = kernels.force(law_kid[li], d, v, kernels.ctuple(coef, r),
                              pairs.state_tuple(r, ode, ns, law_ns[li], mem))
            md = law_mode[li]
        dsep = w_dsep[j]
        g[j] = events.event_value(kind, events.S_RULE, d, v, f, md, dsep, X_SCALE, F_SCALE,
                                  V_SCALE)
        if kind == W_LATCHED:
            g[il] = events.event_value(kind, events.S_RENEW, d, v, f, md, dsep, X_SCALE, F_SCALE,
                                       V_SCALE)
            il += 1
        elif kind == W_ACTIVE_MEMORY:
            g[ip] = events.event_value(kind, events.S_EXTREMUM, d, v, f, md, dsep, X_SCALE,
                                       F_SCALE, V_SCALE)
            ip -= 1


@njit
def _memory_update(y, n, G, CR, W):
    """The laws' memory of every active row after an accepted step; True if any changed."""
    body, lpos, lrot, radius = G.body, G.lpos, G.lrot, G.radius
    plane_n, plane_p, half, mesh = G.plane_n, G.plane_p, G.half, G.mesh
    r_ptype, r_sa, r_sb, r_feat, r_law = CR.ptype, CR.sa, CR.sb, CR.feat, CR.law
    coef, mem, ns, law_kid, law_ns = CR.coef, CR.mem, CR.n_states, CR.law_kid, CR.law_ns
    R, omega_w, Ra, Rb = W.R, W.omega_w, W.Ra, W.Rb
    pos, vel = _poses(y, n, R, omega_w)
    o = 13 * n
    ode = y[o : o + r_sa.shape[0] * ns]
    changed = False
    for r in range(r_sa.shape[0]):
        li = r_law[r]
        kid = law_kid[li]
        gg = cpairs.pair_one(r_ptype[r], r_sa[r], r_sb[r], r_feat[r], body, lpos, lrot, radius,
                             plane_n, plane_p, half, mesh, pos, R, vel, omega_w, Ra, Rb)
        m2 = kernels.update(kid, gg[0], gg[1], kernels.ctuple(coef, r),
                            pairs.state_tuple(r, ode, ns, law_ns[li], mem))
        for j in range(4):
            if m2[j] != mem[r, j]:
                mem[r, j] = m2[j]
                changed = True
    return changed


@njit
def _stiffness_rate(y, n, G, CR, W):
    """max over the active rows of sqrt(k/m_eff) + c/m_eff (1/s), with the local stiffness k and
    damping c of the law by central differences (:func:`mbplugin.pipeline.stiffness.law_slopes`,
    as the engine's ``stiffness_rate``)."""
    body, lpos, lrot, radius = G.body, G.lpos, G.lrot, G.radius
    plane_n, plane_p, half, mesh = G.plane_n, G.plane_p, G.half, G.mesh
    r_ptype, r_sa, r_sb, r_feat, r_law = CR.ptype, CR.sa, CR.sb, CR.feat, CR.law
    coef, mem, ns, law_kid, law_ns = CR.coef, CR.mem, CR.n_states, CR.law_kid, CR.law_ns
    m_eff = CR.m_eff
    R, omega_w, Ra, Rb = W.R, W.omega_w, W.Ra, W.Rb
    pos, vel = _poses(y, n, R, omega_w)
    o = 13 * n
    ode = y[o : o + r_sa.shape[0] * ns]
    best = 0.0
    for r in range(r_sa.shape[0]):
        li = r_law[r]
        kid = law_kid[li]
        gg = cpairs.pair_one(r_ptype[r], r_sa[r], r_sb[r], r_feat[r], body, lpos, lrot, radius,
                             plane_n, plane_p, half, mesh, pos, R, vel, omega_w, Ra, Rb)
        d = gg[0]
        v = gg[1]
        c = kernels.ctuple(coef, r)
        s = pairs.state_tuple(r, ode, ns, law_ns[li], mem)
        k, cd = law_slopes(kid, d, v, c, s)
        mm = m_eff[r]
        rate = math.sqrt(max(k, 0.0) / mm) + max(cd, 0.0) / mm
        if math.isfinite(rate) and rate > best:
            best = rate
    return best


@njit
def _engine_event_at(t, E):
    """Event value ``j`` of the engine's watched pairs at time ``t`` of a step's dense output:
    E (:data:`mbplugin.pipeline.layout.EngineEvent`; :mod:`mbplugin.pipeline.events`)."""
    dense_at(t, E.t_old, E.h, E.y_old, E.dense, E.ytmp)
    _event_values(E.ytmp, E.g, E.n, E.geometry, E.rows, E.watched, E.work)
    return E.g[E.j]


def _is_engine_events(E) -> bool:
    return isinstance(E, numba.types.NamedTuple) and E.instance_class is EngineEvent


register_events(_is_engine_events, _engine_event_at)


@njit
def _record(rec, nrec, t, kind, y, n):
    rec = grow_rows(rec, nrec, 1)
    rec[nrec, 0] = t
    rec[nrec, 1] = kind
    for i in range(y.shape[0]):
        rec[nrec, 2 + i] = y[i]
    _normalise(rec[nrec, 2:], n)
    return rec, nrec + 1


@njit
def _normalise(y, n):
    for i in range(n):
        o = 3 * n + 4 * i
        s = math.sqrt(y[o] ** 2 + y[o + 1] ** 2 + y[o + 2] ** 2 + y[o + 3] ** 2)
        for k in range(4):
            y[o + k] /= s



@njit
def _initial_step(y, f0, t, t_end, max_step, rtol, atol, ytmp, f1, order, n, BD, G, CR, FR, W):
    """:func:`initial_step` of the engine's flat state."""
    return initial_step(y, f0, t, t_end, max_step, rtol, atol, ytmp, f1, order,
                        EngineProblem(n, BD, G, CR, FR, W))


@njit
def _after_step(t_old, t_new, h, y, y_new, Fd, ga, gb, gtmp, ysamp, ytmp, n_samples,
                contact_samples, m_rows, rec, nrec, n, G, CR, WP, W):
    """Event scan of an accepted step on its dense output (the engine's rule: ``n_samples``
    samples, the earliest crossing located by :func:`events.locate` and moved to the strict side)
    and the extra samples inside contact steps. Returns (event time or -1, its event value's
    index, records, count); without an event ``ga`` holds the values at ``t_new``."""
    ng = ga.shape[0]
    w_kind = WP.kind
    nw = w_kind.shape[0]
    n_rule = _n_values(WP)[0]
    ta = t_old
    event_t = -1.0
    event_j = -1
    for ks in range(1, n_samples + 1):
        if ks < n_samples:
            tb = t_old + (t_new - t_old) * ks / n_samples
            dense_at(tb, t_old, h, y, Fd, ysamp)
            _event_values(ysamp, gb, n, G, CR, WP, W)
        else:
            tb = t_new
            _event_values(y_new, gb, n, G, CR, WP, W)
        best = tb
        best_j = -1
        for jj in range(ng):
            # the layout of _event_values: onsets (free pairs) and renewals are strict rules
            strict = (jj < nw and w_kind[jj] == W_FREE) or (nw <= jj < n_rule)
            if events.crossed(ga[jj], gb[jj], strict):
                tj = events.locate(ta, tb, ga[jj], gb[jj], 0.0, 0.0, events.ULPS,
                                   events.ENGINE_MAX_ITER,
                                   EngineEvent(t_old, h, y, Fd, ytmp, gtmp, jj, n, G, CR, WP,
                                               W))
                if best_j < 0 or tj < best:
                    best = tj
                    best_j = jj
        if best_j >= 0:
            event_t = events.strict_side(best, tb,
                                         EngineEvent(t_old, h, y, Fd, ytmp, gtmp, best_j, n, G,
                                                     CR, WP, W))
            event_j = best_j
            break
        for jj in range(ng):
            ga[jj] = gb[jj]
        ta = tb
    if contact_samples > 0 and m_rows > 0:
        t_stop = t_new if event_t < 0.0 else event_t
        for js in range(1, contact_samples + 1):
            ts = t_old + (t_stop - t_old) * js / (contact_samples + 1)
            dense_at(ts, t_old, h, y, Fd, ysamp)
            rec, nrec = _record(rec, nrec, ts, 1.0, ysamp, n)
    return event_t, event_j, rec, nrec


@njit
def _accept(t_old, t_new, h, y_dense, y, y_new, Fd, f, f_new, ga, gb, gtmp, ysamp, ytmp,
            n_samples, contact_samples, n_rule, rec, nrec, n, BD, G, CR, FR, WP, W):
    """What both solvers do after an accepted step (t_old, t_new) with the dense output
    (``y_dense``, ``Fd``; :func:`_interp_t`): the event scan (:func:`_after_step`); at the
    maximum compression of a memory law's contact (an event value of index >= ``n_rule``)
    ``y`` becomes the state there, the laws' memory is updated there, ``f`` and the event
    values are evaluated there and the step is recorded (``PEAK``: the segment goes on from
    there); at another event ``y`` becomes the state there (``EVENT``); else ``y`` = ``y_new``
    and ``f`` = ``f_new`` (the derivative there), the step is recorded, ``COMMIT`` when an
    event value of the contact rules is <= 0 without a crossing, and the laws' memory is
    updated (``f`` evaluated again when it changed).
    Returns (status, ``RUNNING`` to go on; t; records; count; right-hand sides spent)."""
    nn = y.shape[0]
    m_rows = CR.sa.shape[0]
    event_t, event_j, rec, nrec = _after_step(t_old, t_new, h, y_dense, y_new, Fd, ga, gb, gtmp,
                                              ysamp, ytmp, n_samples, contact_samples, m_rows,
                                              rec, nrec, n, G, CR, WP, W)
    if event_t >= 0.0:
        dense_at(event_t, t_old, h, y_dense, Fd, ytmp)
        for i in range(nn):
            y[i] = ytmp[i]
        if event_j >= n_rule:
            # the maximum compression: the memory there (the one policy of every driver)
            _memory_update(y, n, G, CR, W)
            _contact_rhs(y, f, n, BD, G, CR, FR, W)
            _event_values(y, ga, n, G, CR, WP, W)
            rec, nrec = _record(rec, nrec, event_t, 0.0, y, n)
            return PEAK, event_t, rec, nrec, 1
        _normalise(y, n)
        return EVENT, event_t, rec, nrec, 0
    for i in range(nn):
        y[i] = y_new[i]
        f[i] = f_new[i]
    rec, nrec = _record(rec, nrec, t_new, 0.0, y, n)
    for jj in range(n_rule):
        if ga[jj] <= 0.0:
            return COMMIT, t_new, rec, nrec, 0
    if m_rows and _memory_update(y, n, G, CR, W):
        _contact_rhs(y, f, n, BD, G, CR, FR, W)
        return RUNNING, t_new, rec, nrec, 1
    return RUNNING, t_new, rec, nrec, 0



@njit
def segment(y0, t0, t_end, h_in, rtol, atol_s, max_step, n_samples, contact_samples, auto,
            switch_steps, stiff_hw, stiff_steps, max_steps, carry, n, BD, G, CR, FR, WP, W):
    """Integrate from (t0, y0) until an event, a solver switch, ``t_end`` or ``max_steps``
    accepted steps (``PAUSED``; module docs).

    ``carry``: empty for a fresh start, else the carry of a ``PAUSED`` return (the step to
    try, the stiffness counters, the event values at ``t0``), with which the integration goes
    on exactly as if it had not stopped (same steps, same bits). Returns (status, t, y,
    h_next, steps, nfev, records (K, 2 + len(y)): t, kind (0 step, 1 sample), state, carry).
    """
    nn = y0.shape[0]
    m_rows = CR.sa.shape[0]
    # the arrays passed to compiled calls in the step loop are borrowed views (no reference
    # count updates per call, mbplugin._jit.borrowed: the problem tuples hold ~50 arrays); the
    # tuples' owners are the arguments, the work arrays' owners are kept alive to the end
    BD, G, CR, FR, WP, W = borrowed((BD, G, CR, FR, WP, W))
    n_rule, npk = _n_values(WP)
    ng = n_rule + npk
    y_o = y0.copy()
    work = (np.full(nn, atol_s), y_o, np.empty((dop.NS_EXT, nn)), np.empty((dop.NPOW, nn)),
            np.empty(nn), np.empty(nn), np.empty(nn), np.empty(nn), np.empty(nn), np.empty(ng),
            np.empty(ng), np.empty(ng))
    atol, y, K, Fd, F0, y_new, ytmp, ysamp, kbuf, ga, gb, gtmp = borrowed(work)
    P = EngineProblem(n, BD, G, CR, FR, W)
    t = t0
    resume = carry.kind == _C_STEP
    rec = np.empty((64, 2 + nn))
    nrec = 0
    # a resumed segment: dy/dt again at the same state (same bits, not counted again)
    _contact_rhs(y, F0, n, BD, G, CR, FR, W)
    nfev = 0 if resume else 1
    in_contact = 0
    stiff = 0
    if resume:
        h = carry.h
        in_contact = carry.in_contact
        stiff = carry.stiff
        cg = carry.g
        for j in range(ng):
            ga[j] = cg[j]
    else:
        _event_values(y0, ga, n, G, CR, WP, W)
        if h_in > 0.0:
            h = min(h_in, t_end - t, max_step)
        else:
            h = _initial_step(y, F0, t, t_end, max_step, rtol, atol, ytmp, kbuf, dop.ORDER, n,
                              BD, G, CR, FR, W)
            nfev += 1
    steps = 0
    status = DONE
    while True:
        # ---- one accepted step and its dense output (pipeline.dop853) ----------------------
        ok, t_new, h, h_next, nf = dop853_step(y, F0, t, t_end, h, rtol, atol, max_step, K, ytmp,
                                               kbuf, y_new, P)
        nfev += nf
        if not ok:
            status = FAILED
            break
        steps += 1
        nfev += dop853_dense(y, y_new, h, K, Fd, ytmp, kbuf, P)
        t_old = t
        status, t, rec, nrec, nf = _accept(t_old, t_new, h, y, y, y_new, Fd, F0, K[dop.NS], ga,
                                           gb, gtmp, ysamp, ytmp, n_samples, contact_samples,
                                           n_rule, rec, nrec, n, BD, G, CR, FR, WP, W)
        nfev += nf
        if status == PEAK:
            status = RUNNING  # F0 is dy/dt at the peak: the next step starts there
        if status != RUNNING:
            break
        h = h_next
        if auto and m_rows > 0:
            in_contact += 1
            hw = (t - t_old) * _stiffness_rate(y, n, G, CR, W)
            stiff = stiff + 1 if hw > stiff_hw else 0
            if stiff >= stiff_steps or in_contact >= switch_steps:
                status = SWITCH
                break
        if t >= t_end:
            status = DONE
            break
        if steps >= max_steps:
            status = PAUSED
            break
    if status == PAUSED:
        # the state mid-segment, not normalised (the loop does not normalise between steps)
        c_out = SegmentCarry(_C_STEP, h, in_contact, stiff, ga.copy())
    else:
        c_out = SegmentCarry(_C_NONE, 0.0, 0, 0, np.empty(0))
        _normalise(y, n)
    keep_alive(work)
    return status, t, y_o, h_next, steps, nfev, rec[:nrec].copy(), c_out


@njit
def _lone_event(y, n, G, CR, WP, W, kind):
    """Watch index of the only event value <= 0 at ``y`` when it belongs to a watched pair of
    ``kind`` and that pair is the only active one (``kind`` 1: a lone end of contact) or no
    pair is active (``kind`` 0: a lone onset); else -1. The values of latched pairs count as
    others."""
    w_kind = WP.kind
    nw = w_kind.shape[0]
    n_act = 0
    for j in range(nw):
        if w_kind[j] == W_ACTIVE or w_kind[j] == W_ACTIVE_MEMORY:
            n_act += 1
    if n_act != (1 if kind == 1 else 0):
        return -1
    n_rule, npk = _n_values(WP)
    g = np.empty(n_rule + npk)
    _event_values(y, g, n, G, CR, WP, W)
    j1 = -1
    for j in range(g.shape[0]):
        if not g[j] > 0.0:
            if j1 >= 0 or j >= nw or w_kind[j] != kind:
                return -1
            j1 = j
    return j1


# the onsets a chain booked (segment_chain): records of mbplugin.pipeline.layout.ONSET


@njit
def _rows(CR, m, pt, sa, sb, ft, li, m_eff):
    """Fresh data-row arrays (the CR :class:`~mbplugin.pipeline.layout.ContactRows`) for
    ``m`` (0 or 1) rows: the pair (``pt``, ``sa``, ``sb``, ``ft``), law ``li``, a zero
    coefficient row and memory, effective mass ``m_eff``."""
    i64 = np.int64
    r_pt = np.full(m, pt, dtype=i64)
    r_sa = np.full(m, sa, dtype=i64)
    r_sb = np.full(m, sb, dtype=i64)
    r_ft = np.full(m, ft, dtype=i64)
    r_law = np.full(m, li, dtype=i64)
    coef = np.zeros((m, CR.coef.shape[1]))
    mem = np.zeros((m, CR.mem.shape[1]))
    meff = np.full(m, m_eff)
    return ContactRows(r_pt, r_sa, r_sb, r_ft, r_law, coef, mem, CR.n_states, CR.law_kid,
                       CR.law_mode, CR.law_ns, meff)


@njit
def _work(W, m):
    """The work arrays (the W :class:`~mbplugin.pipeline.layout.EngineWork`) for ``m`` data
    rows (the bodies' arrays shared)."""
    i64 = np.int64
    return EngineWork(W.R, W.omega_w, W.force, W.torque, np.empty(m, dtype=i64),
                      np.empty(m, dtype=i64), np.empty(m), np.empty(m), np.empty((m, 3)),
                      np.empty((m, 3)), np.empty((m, 3)), np.empty((m, 3)), np.empty(m),
                      np.arange(m), W.Ra, W.Rb)


@njit
def _append(buf, nb, src):
    """Append the rows of ``src`` to the growing buffer ``buf`` holding ``nb`` rows."""
    k = src.shape[0]
    buf = grow_rows(buf, nb, k)
    copy_rows(buf[nb:], src, k)
    return buf, nb + k


@njit
def _append_onset(buf, nb, o):
    """Append the onset record ``o`` to the growing array ``buf`` of ``nb`` onsets."""
    if nb + 1 > buf.shape[0]:
        bigger = np.empty(2 * buf.shape[0] + 1, dtype=ONSET)
        for i in range(nb):
            bigger[i] = buf[i]
        buf = bigger
    buf[nb] = o
    return buf, nb + 1


@njit
def _event_record(t, kind, y):
    r = np.empty((1, 2 + y.shape[0]))
    r[0, 0] = t
    r[0, 1] = kind
    for i in range(y.shape[0]):
        r[0, 2 + i] = y[i]
    return r


@njit
def segment_chain(y0, t0, t_end, h_in, rtol, atol_s, max_step, max_step_free, n_samples,
                  contact_samples, auto, switch_steps, stiff_hw, stiff_steps, absorb_ends,
                  max_steps, carry, n, BD, G, CR, FR, WP, W, ON):
    """:func:`segment`, continued past the contact events it can book itself when the world's
    laws have no ODE states and no memory (``absorb_ends``; no state layout or memory changes
    at an event):

    * a lone end of contact (the only active contact ends, every other event value > 0): the
      pair becomes free, or latched with its residual overlap, as ``ContactStore.commit``
      books it; the next segment runs with no active contact (step limit ``max_step_free``);
    * a lone onset (no active contact, one free pair starts to overlap, every other event
      value > 0) of a pair whose onset can be computed here (``ON``, from
      ``EngineContacts.compiled_arrays``: the pair's law and its constants, a coefficient row
      of its law and the law's compiled onset rule, ``Law.onset_rule``, and time-scale
      parameters): the effective mass (:func:`mbplugin.contact.kernels.effective_mass`), the
      row for the latched impact speed (:func:`mbplugin.laws.kernels.onset_coefficients`)
      and the contact time scale (:func:`mbplugin.laws.base.power_timescale`) at the event,
      the end-of-contact rule checked at the onset; the next segment runs with that row,
      step limit min(``max_step_free``, time scale), first step at most a fifth of it, as the
      driver would start it.

    Returns :func:`segment`'s tuple with the records of every segment (each event as a record
    of kind 2, an end, or 3, an onset, between them), the ends applied (k, 3): t, delta,
    ddelta of the ended row; the onsets booked (k records of
    :data:`mbplugin.pipeline.layout.ONSET`); and, when the chain stopped
    at a lone onset it could not book, its watch index (else -1), for the driver to book in
    the contact store in record order.

    After ``max_steps`` accepted steps the chain stops with ``PAUSED`` and a carry (the last
    element of the tuple): mid-segment (:func:`segment`'s carry), or at an event it is about
    to book (a carry of kind ``_C_EVENT``); the driver books what the chain booked and calls
    it again with that carry and the arrays of the contact store as booked: the chain goes on
    exactly where it stopped. An inner segment always gets a budget of at least one step."""
    nn = y0.shape[0]
    if carry.kind == _C_EVENT:
        # resumed at an event the chain was about to book
        status = EVENT
        t = t0
        y = y0.copy()
        h_next = carry.h
        steps = 0
        nfev = 0
        rec = np.empty((0, 2 + nn))
        c_out = SegmentCarry(_C_NONE, 0.0, 0, 0, np.empty(0))
    else:
        out = segment(y0, t0, t_end, h_in, rtol, atol_s, max_step, n_samples, contact_samples,
                      auto, switch_steps, stiff_hw, stiff_steps, max_steps, carry, n, BD, G, CR,
                      FR, WP, W)
        status, t, y, h_next, steps, nfev, rec, c_out = out
    ends = np.empty((4, 3))
    n_ends = 0
    ons = np.empty(4, dtype=ONSET)
    n_ons = 0
    if not absorb_ends:
        return status, t, y, h_next, steps, nfev, rec, ends[:0], ons[:0], -1, _plain(c_out)
    body, lpos, lrot, radius = G.body, G.lpos, G.lrot, G.radius
    plane_n, plane_p, half, mesh = G.plane_n, G.plane_p, G.half, G.mesh
    w_ptype, w_sa, w_sb, w_feat = WP.ptype, WP.sa, WP.sb, WP.feat
    w_kind, w_row, w_dsep = WP.kind, WP.row, WP.d_sep
    on_ok, on_law, on_row, on_rule, on_p, on_ts = ON.ok, ON.law, ON.row, ON.rule, ON.p, ON.ts
    inv_m, fixed, iw = ON.inv_m, ON.fixed, ON.iw
    inv_ib = BD.inv_inertia
    R, omega_w, Ra, Rb = W.R, W.omega_w, W.Ra, W.Rb
    m = CR.sa.shape[0]
    crc = _rows(CR, 0, 0, 0, 0, 0, 0, 0.0)
    wc = _work(W, 0)
    first = True
    allrec = rec
    nrec = rec.shape[0]
    lone_onset = -1
    while status == EVENT and t < t_end and m <= 1:
        if steps >= max_steps:
            status = PAUSED
            c_out = SegmentCarry(_C_EVENT, h_next, 0, 0, np.empty(0))
            break
        if first:
            j = _lone_event(y, n, G, CR, WP, W, m)
        else:
            j = _lone_event(y, n, G, crc, WP, W, m)
        if j < 0:
            break
        pos, vel = _poses(y, n, R, omega_w)
        gg = cpairs.pair_one(w_ptype[j], w_sa[j], w_sb[j], w_feat[j], body, lpos, lrot, radius,
                             plane_n, plane_p, half, mesh, pos, R, vel, omega_w, Ra, Rb)
        d = gg[0]
        v = gg[1]
        h = max(h_next, 1e-15)
        if m == 1:
            # a lone end: free, or latched with the residual overlap (rules.latch_*)
            w_row[j] = -1
            if d > 0.0:
                w_kind[j] = 2
                w_dsep[j] = d
            else:
                w_kind[j] = 0
            e = np.empty((1, 3))
            e[0, 0] = t
            e[0, 1] = d
            e[0, 2] = v
            ends, n_ends = _append(ends, n_ends, e)
            crc = _rows(CR, 0, 0, 0, 0, 0, 0, 0.0)
            wc = _work(W, 0)
            m = 0
            ms = max_step_free
            kind = 2.0
        else:
            if not rules.starts(d):
                break  # touching exactly: the driver's commit books it (it nudges such pairs)
            if not on_ok[j]:
                lone_onset = j
                break
            a = body[w_sa[j]]
            b = body[w_sb[j]]
            ck.world_inverse_inertia_ext(R, inv_ib, fixed, iw)
            meff = ck.effective_mass(a, b, gg[5], gg[6], gg[7], gg[8], gg[9], gg[10], gg[2],
                                     gg[3], gg[4], inv_m, iw)
            li = on_law[j]
            nc = _rows(CR, 1, w_ptype[j], w_sa[j], w_sb[j], w_feat[j], li, meff)
            row = nc.coef[0]
            for c in range(row.shape[0]):
                row[c] = on_row[j, c]
            v_in = rules.onset_speed(v)
            if not kernels.onset_coefficients(on_rule[j], on_p[j, 0], on_p[j, 1], v_in, row):
                lone_onset = j
                break
            zs = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            f = kernels.force(CR.law_kid[li], d, v, kernels.ctuple(nc.coef, 0), zs)
            if rules.ended(CR.law_mode[li], d, v, f):
                lone_onset = j
                break
            tc = power_timescale(meff, on_ts[j, 0], on_ts[j, 1], max(abs(v), 1e-3))
            if not (math.isfinite(tc) and tc > 0.0):
                tc = np.inf
            oa = np.zeros(1, dtype=ONSET)
            o = oa[0]
            o.t = t
            o.watch = j
            o.delta = d
            o.ddelta = v
            o.m_eff = meff
            o.t_c = tc
            for c in range(3):
                o.normal[c] = gg[2 + c]
                o.ra[c] = gg[5 + c]
                o.rb[c] = gg[8 + c]
                o.vt[c] = gg[11 + c]
                o.point[c] = gg[5 + c] + (pos[a, c] if a >= 0 else 0.0)
            for c in range(row.shape[0]):
                o.coef[c] = row[c]
            ons, n_ons = _append_onset(ons, n_ons, o)
            w_kind[j] = 1
            w_row[j] = 0
            crc = nc
            wc = _work(W, 1)
            m = 1
            ms = min(max_step_free, tc)
            h = min(h, tc / 5.0)
            kind = 3.0
        if first:
            allrec = np.empty((max(64, 4 * nrec), 2 + nn))
            copy_rows(allrec, rec, nrec)
            first = False
        allrec, nrec = _append(allrec, nrec, _event_record(t, kind, y))
        out = segment(y, t, t_end, h, rtol, atol_s, ms, n_samples, contact_samples, auto,
                      switch_steps, stiff_hw, stiff_steps, max(max_steps - steps, 1),
                      SegmentCarry(_C_NONE, 0.0, 0, 0, np.empty(0)), n, BD, G, crc, FR, WP,
                      wc)
        status, t, y, h_next, s2, f2, rec2, c_out = out
        steps += s2
        nfev += f2
        allrec, nrec = _append(allrec, nrec, rec2)
    return (status, t, y, h_next, steps, nfev, allrec[:nrec].copy(), ends[:n_ends].copy(),
            ons[:n_ons].copy(), lone_onset, _plain(c_out))



@njit
def radau_segment(y0, t0, t_end, h_in, rtol, atol_s, max_step, n_samples, contact_samples,
                  jscale, n_work, max_steps, carry, ws_o, n, BD, G, CR, FR, WP, W):
    """As :func:`segment`, with Radau IIA of order 5 (:func:`radau_step`); for the stiff
    (resting) phases. Stops at ``DONE``, ``EVENT``, ``COMMIT`` or, after ``max_steps``
    accepted steps, ``PAUSED``. ``ws_o``: the work arrays (:func:`radau_workspace`), kept by
    the caller; ``carry``: empty for a fresh start, else the carry of a ``PAUSED`` return (the
    controller state, dy/dt and the event values; with the same ``ws_o`` the integration goes
    on exactly as if it had not stopped)."""
    nn = y0.shape[0]
    # borrowed views in the step loop, as in segment (owners: the arguments, work and ws_o)
    BD, G, CR, FR, WP, W, jscale = borrowed((BD, G, CR, FR, WP, W, jscale))
    P = EngineProblem(n, BD, G, CR, FR, W)
    t = t0
    n_rule, npk = _n_values(WP)
    ng = n_rule + npk
    y_o = y0.copy()
    work = (np.full(nn, atol_s), y_o, np.empty(nn), np.zeros(1, dtype=RADAU_CONTROL), np.empty(ng),
            np.empty(ng), np.empty(ng))
    atol, y, f, ctl, ga, gb, gtmp = borrowed(work)
    ws = borrowed(ws_o)
    Dq, y_new, y_old, ytmp, ysamp, f_new = ws[6], ws[7], ws[8], ws[9], ws[10], ws[12]
    rec = np.empty((64, 2 + nn))
    nrec = 0
    if carry.ctl.shape[0] > 0:
        ctl[0] = carry.ctl[0]
        f[:] = carry.f
        ga[:] = carry.g
        nfev = 0
    else:
        _event_values(y0, ga, n, G, CR, WP, W)
        nfev = radau_start(y, f, t, t_end, h_in, rtol, atol, max_step, jscale, n_work, ctl, ws,
                           P)
    newton_tol = max(10.0 * _EPS / rtol, min(0.03, rtol ** 0.5))
    steps = 0
    status = DONE
    while True:
        ok, t_new, h, nf = radau_step(y, f, t, t_end, rtol, atol, max_step, newton_tol, jscale,
                                      n_work, ctl, ws, P)
        nfev += nf
        if not ok:
            status = FAILED
            break
        steps += 1
        t_old = t
        status, t, rec, nrec, nf = _accept(t_old, t_new, h, y_old, y, y_new, Dq, f, f_new, ga,
                                           gb, gtmp, ysamp, ytmp, n_samples, contact_samples,
                                           n_rule, rec, nrec, n, BD, G, CR, FR, WP, W)
        nfev += nf
        if status == PEAK:
            # cut at the peak: a fresh Radau start there (step, Jacobian, controller)
            nfev += radau_start(y, f, t, t_end, ctl[0].h, rtol, atol, max_step, jscale,
                                n_work, ctl, ws, P)
            status = RUNNING
        if status != RUNNING:
            break
        if t >= t_end:
            status = DONE
            break
        if steps >= max_steps:
            status = PAUSED
            break
    h_next = ctl[0].h
    if status == PAUSED:
        c_out = RadauCarry(ctl.copy(), f.copy(), ga.copy())
    else:
        c_out = RadauCarry(np.zeros(0, dtype=RADAU_CONTROL), np.empty(0), np.empty(0))
        _normalise(y, n)
    keep_alive(work, ws_o)
    return status, t, y_o, h_next, steps, nfev, rec[:nrec].copy(), _plain_radau(c_out)



@dataclass
class SegmentResult:
    """What :func:`run_segment` returns to the driver (see :func:`segment`)."""

    status: int
    t: float
    y: np.ndarray
    h_next: float
    steps: int
    nfev: int
    records: np.ndarray
    #: ends of contact located and applied by the segment (:func:`segment_chain`), (k, 3):
    #: t, delta, ddelta of the store's row 0; the driver books them (``ContactStore.end``)
    ends: np.ndarray | None = None
    #: at an ``EVENT`` reached with no active contact: the watch index of the pair whose onset
    #: it is when every other event value is > 0 (a lone onset, booked by the driver without
    #: a detection: ``EngineContacts.onset``), else -1
    onset: int = -1
    #: onsets the segment booked itself (:func:`segment_chain`), (k,) records of
    #: :data:`mbplugin.pipeline.layout.ONSET`, in time order; the driver books them
    #: (``EngineContacts.onset_row``) before their records
    onsets: np.ndarray | None = None
    #: at ``PAUSED``: what the next :func:`run_segment` call needs (``carry=``) to go on
    #: exactly where this one stopped (None otherwise)
    carry: Any = None


def run_segment(arrays: tuple, y: np.ndarray, t: float, t_end: float, h: float | None,
                rtol: float, atol: float, max_step: float, n_samples: int,
                contact_samples: int, auto: bool, switch_steps: int, stiff_hw: float,
                stiff_steps: int, implicit: bool = False,
                jscale: np.ndarray | None = None, absorb_ends: bool = False,
                max_step_free: float | None = None, max_steps: int | None = None,
                carry: Any = None) -> SegmentResult:
    """Run one compiled segment on the arrays of ``EngineContacts.compiled_arrays()``:
    DOP853 (:func:`segment_chain`: with ``absorb_ends`` it continues past a lone end of
    contact with the step limit ``max_step_free``) or, with ``implicit=True``, Radau
    (:func:`radau_segment`, with the Jacobian's difference scales ``jscale``).

    ``max_steps`` bounds the accepted steps of this call (the segment then returns
    ``PAUSED``, so that the driver can report progress and Python can see a Ctrl-C); a
    ``PAUSED`` result's :attr:`SegmentResult.carry` passed back as ``carry`` (with the arrays
    of the contact store after booking the result's events, the same solver and tolerances)
    continues the integration bit for bit as if it had not paused."""
    n, BD, G, CR, FR, WP, W, ON = arrays
    budget = _UNBOUNDED if max_steps is None else max(int(max_steps), 1)
    y = np.ascontiguousarray(y, dtype=float)
    try:
        if implicit:
            if carry is None:
                c_in, ws = _NO_RADAU_CARRY, radau_workspace(y.shape[0])
            else:
                c_in, ws = carry
            out = radau_segment(
                y, float(t), float(t_end), -1.0 if h is None else float(h), float(rtol),
                float(atol), float(min(max_step, 1e300)), int(n_samples), int(contact_samples),
                jscale, 3, budget, c_in, ws, n, BD, G, CR, FR, WP, W)
        else:
            out = segment_chain(
                y, float(t), float(t_end), -1.0 if h is None else float(h), float(rtol),
                float(atol), float(min(max_step, 1e300)),
                float(min(max_step if max_step_free is None else max_step_free, 1e300)),
                int(n_samples), int(contact_samples), bool(auto), int(switch_steps),
                float(stiff_hw), int(stiff_steps), bool(absorb_ends), budget,
                _NO_CARRY if carry is None else carry, n, BD, G, CR, FR, WP, W, ON)
    except SystemError as exc:  # a Ctrl-C seen inside the compiled call
        reraise_interrupt(exc)
        raise
    if implicit:
        status, t1, y1, h_next, steps, nfev, rec, c_out = out
        onset = (_lone_event(y1, n, G, CR, WP, W, 0)
                 if status == EVENT and CR.sa.shape[0] == 0 else -1)
        return SegmentResult(int(status), float(t1), y1, float(h_next), int(steps), int(nfev),
                             rec, None, int(onset),
                             carry=(RadauCarry._make(c_out), ws) if status == PAUSED else None)
    status, t1, y1, h_next, steps, nfev, rec, ends, onsets, onset, c_out = out
    if not absorb_ends and status == EVENT and CR.sa.shape[0] == 0:
        onset = _lone_event(y1, n, G, CR, WP, W, 0)
    return SegmentResult(int(status), float(t1), y1, float(h_next), int(steps), int(nfev), rec,
                         ends, int(onset), onsets,
                         SegmentCarry._make(c_out) if status == PAUSED else None)


#: No budget: more steps than any run takes.
_UNBOUNDED = 2**62
_NO_CARRY = SegmentCarry(_C_NONE, 0.0, 0, 0, np.empty(0))
#: A fresh Radau start (:func:`radau_segment`)
_NO_RADAU_CARRY = RadauCarry(np.zeros(0, dtype=RADAU_CONTROL), np.empty(0), np.empty(0))
