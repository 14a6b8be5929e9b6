"""Compiled contact-space integration of a host step, group by group (one call for all groups).

The contacts of a host step split into *groups* coupled through the Delassus operator W (the
connected components of its 3x3 block pattern: contacts that share a moving body directly or
through a chain). Blocks of W between groups are zero, so the groups' contact-space systems

    d delta_i/dt = -n_i . u_i,       du_i/dt = a_free_i + sum_j W_ij f_j,
    f_j = F_N(delta_j, ddelta_j, law state) n_j + F_t(v_t, F_N)

(:mod:`mbplugin.pipeline.substep`) are independent and each is integrated on its own, with its own
step size: a ball resting on the ground takes a few long implicit steps while another one lands.
A sphere on a static plane is a group of one contact (4 states); a stack or a robot's feet are
one group. The state of a group is [delta (k), u (k, 3), with the stick option the spring
displacements s (k, 3), the ODE states of its active laws].

:func:`integrate_groups` runs every pending group over the host step in one compiled call:

* the right-hand side calls the law kernels by kernel id (:mod:`mbplugin.laws.kernels`) with the
  contact store's coefficient rows and memory, the applied force through the rules' clipping
  (:func:`mbplugin.pipeline.rules.applied`) and the engine's regularised Coulomb friction
  (:func:`mbplugin.pipeline.friction.friction_scalar`) or, with the stick option, the tangential
  spring's force and rate (:func:`mbplugin.pipeline.stick.stick_force_scalar`,
  :func:`~mbplugin.pipeline.stick.stick_rate_scalar`: Dahl's model with a Coulomb cap);
* the solver is, per group, the engine's compiled DOP853 (:func:`mbplugin.pipeline.dop853.
  dop853_step`; explicit, order 8) while the group is not stiff at the host step, and its
  compiled Radau IIA of order 5 (:func:`mbplugin.pipeline.radau.radau_step`) once the
  explicit steps are stability-limited (:func:`integrate_groups`), both with the problem
  registered here, the relative tolerance and the absolute tolerances of the SciPy path
  (DOP853 at ``EXPLICIT_TOL`` times them, :mod:`mbplugin.pipeline.substep`);
* after every accepted step the event values of every contact are evaluated on the step's
  ends (:func:`mbplugin.pipeline.events.event_value`, by the contact's class: the onset of a
  contact the store does not know, the end of an active contact, the maximum compression of a
  law with memory, a latched pair's release, renewal and rebound apex); a crossing is located by
  Brent's method (:func:`mbplugin.pipeline.events.locate`) on the dense output, to the point
  just past it, and the group stops
  there (status ``EVENT``) for the driver to book it with ``ContactStore.commit`` (its onset,
  end, latch and memory rules) and resume;
* the impulse of each contact over the step is the three-point Gauss-Legendre quadrature of its
  force on the dense output of every accepted step (exact for Radau's degree-3 collocation
  polynomial composed with a smooth law up to the quadrature's degree 5; on explicit steps in
  sub-intervals of h x rate <= QUAD_HW), or, for an explicit step of a one-contact group with
  an invertible W, W^-1 (du - a_free h): the method's own quadrature of the force.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from mbplugin._jit import borrowed, keep_alive, njit, njit_inline
from mbplugin.laws.kernels import force, rate
from mbplugin.pipeline import dop853 as dop
from mbplugin.pipeline import events as _ev
from mbplugin.pipeline.dop853 import dense_at, dop853_dense, dop853_step
from mbplugin.pipeline.events import ULPS, locate, register_events, strict_side
from mbplugin.pipeline.friction import friction_scalar
from mbplugin.pipeline.ivp import STIFF_HW, STIFF_STEPS, initial_step, register_problem
from mbplugin.pipeline.layout import (
    CONTACT,
    RADAU_CONTROL,
    coef_tuple,
    forces_at,
    put_head,
    put_law_row,
    state_tuple,
)
from mbplugin.pipeline.radau import radau_start, radau_step, radau_workspace
from mbplugin.pipeline.rules import F_SCALE, V_SCALE, X_SCALE, applied
from mbplugin.pipeline.stick import stick_force_scalar, stick_rate_scalar
from mbplugin.pipeline.stiffness import law_slopes

PENDING = 0
DONE = 1
EVENT = 2
FAILED = 3

#: Gauss-Legendre nodes on [0, 1] and weights (3 points, exact to degree 5)
_GX = np.array([0.5 - math.sqrt(15.0) / 10.0, 0.5, 0.5 + math.sqrt(15.0) / 10.0])
_GW = np.array([5.0 / 18.0, 8.0 / 18.0, 5.0 / 18.0])

#: A group of k contacts is its records ``gc`` (k,) of :data:`mbplugin.pipeline.layout.CONTACT`
#: (normal, a_free, the store's coefficient row and memory, the pair's mu and mu_s, kernel id,
#: mode, flags, the place of its ODE states in the group's state, the host step's friction
#: model and stick spring) and its float array ``gf`` (W (3k, 3k) row-major, the force buffer
#: (3k) and the normal forces (k): :func:`mbplugin.pipeline.layout.group_float_size`). Two
#: arrays per group keep the calls of the hot loop cheap (numba counts references per array
#: argument).

#: ``candidate`` of a pair latched "separated" (1: an onset candidate, 0: neither); its watched
#: events are its release and renewal (:func:`mbplugin.pipeline.events.event_value`: the gap
#: opens, or it is pressed deeper than its separation overlap d_sep while approaching; an
#: inactive contact's coefficient slot 0 carries that d_sep) and the apex of its rebound
#: (ddelta turns positive),
#: which stops the group only where the gap is open there (the store's commit then releases
#: the latch): a gap that opens and closes again within one step is not missed, and a latched
#: pair that stays closed costs no stop
LATCHED = 2


@njit
def _forces(y, k, gf, gc):
    """Force on body b of every contact of the group at state ``y`` into the group's force
    buffer, and the normal forces after it (returns the buffer's offset in ``gf``)."""
    fb = forces_at(k)
    for i in range(k):
        c = gc[i]
        nv = c.normal
        d = y[i]
        u0, u1, u2 = y[k + 3 * i], y[k + 3 * i + 1], y[k + 3 * i + 2]
        n0, n1, n2 = nv[0], nv[1], nv[2]
        un = u0 * n0 + u1 * n1 + u2 * n2
        fn = 0.0
        if c.active:
            fn = applied(c.mode, force(c.kid, d, -un, coef_tuple(c), state_tuple(y, c)))
        f0, f1, f2 = fn * n0, fn * n1, fn * n2
        if c.st_on:
            s = 4 * k + 3 * i
            t0, t1, t2 = stick_force_scalar(y[s], y[s + 1], y[s + 2], u0 - un * n0,
                                            u1 - un * n1, u2 - un * n2, fn, c.st_k_t,
                                            c.st_mu, c.st_c_t)
            f0 += t0
            f1 += t1
            f2 += t2
        elif c.fr_on:
            t0, t1, t2 = friction_scalar(u0 - un * n0, u1 - un * n1, u2 - un * n2, fn,
                                         c.mu, c.mu_s, c.fr_v_s, c.fr_v_eps, c.fr_viscous,
                                         c.fr_linear)
            f0 += t0
            f1 += t1
            f2 += t2
        gf[fb + 3 * i] = f0
        gf[fb + 3 * i + 1] = f1
        gf[fb + 3 * i + 2] = f2
        gf[fb + 3 * k + i] = fn
    return fb


@njit_inline
def _rhs_one(y, out, gf, gc):
    """dy/dt of a group of one contact without stick spring or ODE states (a sphere on the
    ground): :func:`_group_rhs` written out for it, the same operations in the same order
    (2.5x faster than the loops over k, measured), the force left in the group's force buffer
    as :func:`_forces` leaves it (with the regularised friction where ``fr_on``)."""
    c = gc[0]
    nv = c.normal
    n0, n1, n2 = nv[0], nv[1], nv[2]
    u0, u1, u2 = y[1], y[2], y[3]
    un = u0 * n0 + u1 * n1 + u2 * n2
    fn = 0.0
    if c.active:
        fn = applied(c.mode, force(c.kid, y[0], -un, coef_tuple(c), state_tuple(y, c)))
    f0, f1, f2 = fn * n0, fn * n1, fn * n2
    if c.fr_on:
        t0, t1, t2 = friction_scalar(u0 - un * n0, u1 - un * n1, u2 - un * n2, fn, c.mu,
                                     c.mu_s, c.fr_v_s, c.fr_v_eps, c.fr_viscous, c.fr_linear)
        f0 += t0
        f1 += t1
        f2 += t2
    fb = forces_at(1)
    gf[fb], gf[fb + 1], gf[fb + 2], gf[fb + 3] = f0, f1, f2, fn
    af = c.a_free
    out[0] = -un
    out[1] = af[0] + gf[0] * f0 + gf[1] * f1 + gf[2] * f2
    out[2] = af[1] + gf[3] * f0 + gf[4] * f1 + gf[5] * f2
    out[3] = af[2] + gf[6] * f0 + gf[7] * f1 + gf[8] * f2


@njit
def _group_rhs(y, out, P):
    """dy/dt of one group: P = (k, gf, gc) (see the layout above). Leaves the forces at ``y``
    in the group's force buffer (:func:`_forces`)."""
    k, gf, gc = P
    c = gc[0]
    if k == 1 and not c.st_on and c.n_states == 0:
        _rhs_one(y, out, gf, gc)
        return
    fb = _forces(y, k, gf, gc)
    m = 3 * k
    for i in range(k):
        c = gc[i]
        nv = c.normal
        u0, u1, u2 = y[k + 3 * i], y[k + 3 * i + 1], y[k + 3 * i + 2]
        dd = -(u0 * nv[0] + u1 * nv[1] + u2 * nv[2])
        out[i] = dd
        if c.st_on:
            # the spring's rate (with the normal force _forces applied, from its buffer)
            s = 4 * k + 3 * i
            fn = gf[fb + m + i]
            out[s], out[s + 1], out[s + 2] = stick_rate_scalar(
                y[s], y[s + 1], y[s + 2], u0 + dd * nv[0], u1 + dd * nv[1],
                u2 + dd * nv[2], fn, c.st_k_t, c.st_mu)
        af = c.a_free
        for a in range(3):
            row = 3 * i + a
            acc = af[a]
            base = row * m
            for j in range(m):
                acc += gf[base + j] * gf[fb + j]
            out[k + row] = acc
        nst = c.n_states
        if c.active and nst > 0:
            rr = rate(c.kid, y[i], dd, coef_tuple(c), state_tuple(y, c))
            o = c.ode_off
            for q in range(nst):
                out[o + q] = rr[q]


def _is_group_problem(P) -> bool:
    return (isinstance(P, numba.types.BaseTuple) and len(P) == 3
            and isinstance(P[0], numba.types.Integer))


register_problem(_is_group_problem, _group_rhs)


@njit_inline
def _class(c):
    """The class of the contact record ``c`` in :func:`mbplugin.pipeline.events.event_value`
    (from its flags)."""
    if c.candidate == LATCHED:
        return _ev.LATCHED
    if c.active:
        return _ev.ACTIVE_MEMORY if c.has_memory else _ev.ACTIVE
    if c.candidate != 0:
        return _ev.FREE
    return _ev.NOT_WATCHED


@njit
def _watch_raw(y, k, gc, i, cls, slot):
    """Event value of contact i (of class ``cls``, :func:`_class`) in ``slot``
    (:func:`mbplugin.pipeline.events.event_value`; <= 0 once the event happened) and, for the
    end of an active contact, the law's raw force it was computed from (else NaN)."""
    c = gc[i]
    nv = c.normal
    d = y[i]
    dd = -(y[k + 3 * i] * nv[0] + y[k + 3 * i + 1] * nv[1] + y[k + 3 * i + 2] * nv[2])
    raw = np.nan
    if _ev.needs_force(cls, slot):
        raw = force(c.kid, d, dd, coef_tuple(c), state_tuple(y, c))
    # a latched pair's d_sep rides in its coefficient slot 0
    return _ev.event_value(cls, slot, d, dd, raw, c.mode, c.coef[0], X_SCALE, F_SCALE,
                          V_SCALE), raw


@njit_inline
def _watch(y, k, gc, i, slot):
    """Event value of contact i in ``slot`` (<= 0 once the event happened)."""
    return _watch_raw(y, k, gc, i, _class(gc[i]), slot)[0]


@njit
def _group_event_at(t, E):
    """Event value (``kind``: the slot of :func:`mbplugin.pipeline.events.event_value`) of
    contact i of a group at time ``t`` of the step's dense output: E = (t_old, h, y_old, Dq,
    ytmp, k, gc, i, kind)
    (:mod:`mbplugin.pipeline.events`)."""
    t_old, h, y_old, Dq, ytmp, k, gc, i, kind = E
    dense_at(t, t_old, h, y_old, Dq, ytmp)
    return _watch(ytmp, k, gc, i, kind)


def _is_group_events(E) -> bool:
    return (isinstance(E, numba.types.BaseTuple) and len(E) == 9
            and isinstance(E[8], numba.types.Integer))


register_events(_is_group_events, _group_event_at)


@njit
def _locate(a, b, ga, gb, t_old, h, y_old, Dq, ytmp, k, gc, i, kind):
    """The instant just past the crossing of contact i's event value (ga > 0 >= gb) on the
    dense output: :func:`mbplugin.pipeline.events.locate` to adjacent floats of t, then moved
    until the value is strictly negative (:func:`~mbplugin.pipeline.events.strict_side`, at
    most to the step's end)."""
    E = (t_old, h, y_old, Dq, ytmp, k, gc, i, kind)
    b = locate(a, b, ga, gb, 0.0, 0.0, ULPS, 200, E)
    return strict_side(b, t_old + h, E)


@njit
def _scan(ga, gb, y, k, gc, raw):
    """Event values of every contact at ``y`` into gb (3k: the slots of
    :func:`mbplugin.pipeline.events.event_value`); returns whether one of them crossed from ga
    (> 0) to <= 0 (an onset: delta from <= 0 to > 0, :func:`~mbplugin.pipeline.rules.starts`).
    The raw force of every active contact at ``y`` (its end event's input) goes into ``raw``
    (k)."""
    hit = False
    for i in range(k):
        cls = _class(gc[i])
        for slot in range(_ev.N_SLOTS):
            j = 3 * i + slot
            if not _ev.has_value(cls, slot):
                gb[j] = _ev.NO_EVENT
                continue
            gb[j], fr = _watch_raw(y, k, gc, i, cls, slot)
            if _ev.needs_force(cls, slot):
                raw[i] = fr
            if _ev.crossed(ga[j], gb[j], _ev.strict_rule(cls, slot)):
                hit = True
    return hit


@njit_inline
def _tangential_zero(x0, x1, x2, n0, n1, n2):
    """Whether the vector x has no part off the unit normal n: x - (x . n) n is exactly 0
    (in floating point, as the right-hand side computes the slip)."""
    xn = x0 * n0 + x1 * n1 + x2 * n2
    return x0 - xn * n0 == 0.0 and x1 - xn * n1 == 0.0 and x2 - xn * n2 == 0.0


@njit_inline
def _normal_only(y, gf, c):
    """Whether a one-contact group (state ``y``, W at gf[0:9], record ``c``) moves along its
    normal only: its slip at ``y``, the tangential part of its free acceleration and of W n
    all exactly 0. Then every stage of a step keeps the slip exactly 0 while the normal is
    axis-aligned (the friction force is exactly 0: it does no work and no explicit stage
    sees its regularisation's slope), the 1-DOF problem of a ball dropped straight onto a
    plane; a rounding-level slip brings the slope back into :func:`_group_rate` at the next
    step's test."""
    nv = c.normal
    n0, n1, n2 = nv[0], nv[1], nv[2]
    af = c.a_free
    return (_tangential_zero(y[1], y[2], y[3], n0, n1, n2)
            and _tangential_zero(af[0], af[1], af[2], n0, n1, n2)
            and _tangential_zero(gf[0] * n0 + gf[1] * n1 + gf[2] * n2,
                                 gf[3] * n0 + gf[4] * n1 + gf[5] * n2,
                                 gf[6] * n0 + gf[7] * n1 + gf[8] * n2, n0, n1, n2))


@njit
def _group_rate(y, k, gf, gc, normal_only):
    """Stiffness rate of a group (1/s): the largest over its active contacts of
    sqrt(k_n w) + c_n w, with the law's local stiffness k_n = dF/d delta and damping
    c_n = dF/d ddelta by central differences (:func:`mbplugin.pipeline.stiffness.law_slopes`)
    and w the normal diagonal n . W_ii n (1 / effective mass), plus, with friction, the slope of the
    regularised friction force, (max(mu, mu_s) F_N / v_eps + viscous), times W_ii's largest
    diagonal entry, or with the stick option the spring's sqrt(k_t w_t) + c_t w_t (w_t that
    entry). h x rate is the step's h omega of the explicit-method stability test.
    ``normal_only``: the friction's slope is left out for a one-contact group that moves along
    its normal only (:func:`_normal_only`: its tangential state stays exactly zero, so the
    regularisation's stiffness never acts on it)."""
    m = 3 * k
    best = 0.0
    for i in range(k):
        c = gc[i]
        if not c.active:
            continue
        nv = c.normal
        n0, n1, n2 = nv[0], nv[1], nv[2]
        wnn = 0.0
        wmax = 0.0
        for a in range(3):
            na = nv[a]
            for b in range(3):
                wab = gf[(3 * i + a) * m + 3 * i + b]
                wnn += na * wab * nv[b]
                if a == b and wab > wmax:
                    wmax = wab
        d = y[i]
        v = -(y[k + 3 * i] * n0 + y[k + 3 * i + 1] * n1 + y[k + 3 * i + 2] * n2)
        kid = c.kid
        cf = coef_tuple(c)
        st = state_tuple(y, c)
        kn, cn = law_slopes(kid, d, v, cf, st)
        rt = math.sqrt(max(kn, 0.0) * max(wnn, 0.0)) + max(cn, 0.0) * max(wnn, 0.0)
        if c.st_on:
            # the stick spring (k_t, c_t) on the tangential motion
            rt += math.sqrt(c.st_k_t * wmax) + c.st_c_t * wmax
        elif c.fr_on and not (normal_only and k == 1 and _normal_only(y, gf, c)):
            fn = max(force(kid, d, v, cf, st), 0.0)
            rt += (max(c.mu, c.mu_s) * fn / c.fr_v_eps + c.fr_viscous) * wmax
        if not math.isfinite(rt):
            return np.inf
        if rt > best:
            best = rt
    return best


#: a group is at rest when every state's rate over the host step, and every contact velocity,
#: is below this fraction of its absolute tolerance
REST_FRACTION = 1e-2


#: :func:`_at_rest`'s answers: moving, dy/dt not evaluated; moving, ``f`` = dy/dt at ``y``;
#: at rest
MOVING, MOVING_F, AT_REST = 0, 1, 2


@njit
def _at_rest(y, f, ytmp, ftmp, nn, k, atol, dt, P):
    """AT_REST when the group's state cannot move by more than REST_FRACTION of its absolute
    tolerances over the host step: the contact velocities |u| and |dy_i/dt| dt below
    REST_FRACTION atol_i, and the velocity-dependent part of the forces (damping, regularised
    friction: dy/dt at u = 0 against dy/dt) changes u by less than that over dt. For the
    (damped, stable) contact oscillator about equilibrium, the excursion from a rate residual r
    over dt is at most about r dt, and the velocity's at most |u| + r dt: the step is the
    constant state, the impulse force x dt (a contact at rest: Radau takes one step to the
    same state to rounding). The last test keeps the host's explicit use of that force stable:
    a stiff damping of a tiny velocity (c |u| dt / m above the tolerance) would overshoot in
    PyBullet's step. The velocities are tested first (no right-hand side: a moving group
    returns MOVING at once); else dy/dt at u = 0 and at ``y`` are evaluated, the latter last,
    into ``f`` (the group's force buffer then holds the forces at ``y``, :func:`_group_rhs`),
    and a moving group returns MOVING_F (``f`` is then the first explicit step's dy/dt).
    ``ytmp``, ``ftmp``: work arrays of length nn."""
    for i in range(k, 4 * k):
        if abs(y[i]) > REST_FRACTION * atol[i]:
            return MOVING
    for i in range(nn):
        ytmp[i] = 0.0 if k <= i < 4 * k else y[i]
    _group_rhs(ytmp, ftmp, P)
    _group_rhs(y, f, P)
    for i in range(nn):
        if abs(f[i]) * dt > REST_FRACTION * atol[i]:
            return MOVING_F
    for i in range(k, 4 * k):
        if abs(f[i] - ftmp[i]) * dt > REST_FRACTION * atol[i]:
            return MOVING_F
    return AT_REST


@njit
def _group_work(k, nn):
    """Work arrays of a group of ``k`` contacts and ``nn`` states: the Radau workspace,
    absolute tolerances, Jacobian scales, a right-hand side, two event-value buffers (3k), the
    state, DOP853's stages and dense-output coefficients, the explicit tolerances, and the raw
    forces of :func:`_scan` (k)."""
    return (radau_workspace(nn), np.empty(nn), np.full(nn, 1e-6), np.empty(nn),
            np.empty(3 * k), np.empty(3 * k), np.empty(nn), np.empty((dop.NS_EXT, nn)),
            np.empty((dop.NPOW, nn)), np.empty(nn), np.empty(k))


#: the largest |W|_F |W^-1|_F for the impulse from the velocity change (:func:`_inverse3`)
COND_MAX = 1e4


@njit
def _inverse3(gf, w0, Wi):
    """The inverse of a one-contact group's W (3 x 3, at gf[w0:w0 + 9], row-major) into ``Wi``;
    False when W is singular or ill-conditioned (then ``Wi`` is not to be used): W Wi must be
    the identity within 1e-10 and |W|_F |Wi|_F (>= W's condition number) at most COND_MAX, so
    that the rounding of du costs the impulse at most ~1e-12 relative (W of free bodies is
    symmetric positive definite, ~10 for a sphere; an articulated link's may be singular)."""
    a, b, c = gf[w0], gf[w0 + 1], gf[w0 + 2]
    d, e, f = gf[w0 + 3], gf[w0 + 4], gf[w0 + 5]
    g, h, i = gf[w0 + 6], gf[w0 + 7], gf[w0 + 8]
    c0, c1, c2 = e * i - f * h, f * g - d * i, d * h - e * g
    det = a * c0 + b * c1 + c * c2
    if not (det != 0.0 and math.isfinite(det)):
        return False
    Wi[0], Wi[1], Wi[2] = c0 / det, (c * h - b * i) / det, (b * f - c * e) / det
    Wi[3], Wi[4], Wi[5] = c1 / det, (a * i - c * g) / det, (c * d - a * f) / det
    Wi[6], Wi[7], Wi[8] = c2 / det, (b * g - a * h) / det, (a * e - b * d) / det
    nw = 0.0
    nwi = 0.0
    for r in range(3):
        for q in range(3):
            nw += gf[w0 + 3 * r + q] ** 2
            nwi += Wi[3 * r + q] ** 2
            acc = 0.0
            for j in range(3):
                acc += gf[w0 + 3 * r + j] * Wi[3 * j + q]
            if abs(acc - (1.0 if r == q else 0.0)) > 1e-10:
                return False
    return math.sqrt(nw * nwi) <= COND_MAX


#: explicit steps in one run of a group (one integrate call) after which Radau takes over for
#: as long as a contact of the group stays active (the engine's ``switch_steps`` rule, its
#: default; a bouncing soft sphere takes ~10 per host step, a steel impact up to ~160)
SWITCH_STEPS = 100

#: quadrature of the impulse on an explicit step: sub-intervals of h x rate <= QUAD_HW each
#: (the 3-point Gauss rule's relative error is ~5e-7 (h omega)^6 on an oscillating force)
QUAD_HW = 1.0


@njit
def group_work():
    """The work arrays of one :func:`integrate_groups` call before its first group (those of
    a one-contact group, :func:`_group_work`, Radau's controller, W^-1 and a velocity
    change): kept by a caller of :func:`integrate_groups_in` from call to call."""
    return (_group_work(1, 4), np.zeros(1, dtype=RADAU_CONTROL), np.empty(9), np.empty(3))


@njit
def integrate_groups(gptr, yptr, goff, GF, GC, Y, tg, status, hg, dt, rtol, imp, loaded,
                     counters, auto, mg, tol_e, normal_only):
    """:func:`integrate_groups_in` with work arrays of its own (:func:`group_work`)."""
    integrate_groups_in(gptr, yptr, goff, GF, GC, Y, tg, status, hg, dt, rtol, imp, loaded,
                        counters, auto, mg, tol_e, normal_only, group_work())


@njit
def integrate_groups_in(gptr, yptr, goff, GF, GC, Y, tg, status, hg, dt, rtol, imp, loaded,
                        counters, auto, mg, tol_e, normal_only, work):
    """Integrate every ``PENDING`` group over [tg[g], dt] (see the module docstring).

    Group g: contacts gptr[g]:gptr[g+1] (in group order), state Y[yptr[g]:yptr[g+1]] (updated
    in place), float array GF[goff[g]:goff[g+1]] and contact records GC[gptr[g]:gptr[g+1]]
    (the layout above), start time tg[g] (s from the host step's start; updated),
    first step hg[g] (s, <= 0: SciPy's initial step; updated to the next step). Adds each
    contact's impulse (N s) to ``imp`` and sets ``loaded`` where it carried force;
    counters += (steps, nfev, events, explicit steps). ``status[g]`` becomes DONE, EVENT
    (stopped just past an event at tg[g]) or FAILED.

    ``auto``: a group whose contacts are not stiff at the host step takes DOP853 steps
    (explicit, order 8; :func:`mbplugin.pipeline.dop853.dop853_step`) instead of Radau's. It
    changes to Radau within the host step when h x rate exceeds STIFF_HW for STIFF_STEPS
    consecutive explicit steps (the step is stability-limited: the engine's ``auto`` rule,
    :mod:`mbplugin.dynamics.integrators`; rate: :func:`_group_rate`), and a group that ended
    its last host step on Radau (``mg[g]`` 0; else 1, updated to the solver at the end) starts
    on Radau again while its carried step h gives h x rate > STIFF_HW (Radau's step outgrew
    the contact time scale: a resting, stiff contact). After SWITCH_STEPS explicit steps in one
    run the group goes to Radau and stays there (``mg[g]`` 2) until none of its contacts is
    active. The explicit steps are controlled at
    ``tol_e`` times the tolerances (``rtol``, the absolute ones; see
    :data:`mbplugin.pipeline.substep.EXPLICIT_TOL`). ``normal_only``: the stiffness rate of a
    one-contact group that moves along its normal only leaves friction's slope out
    (:func:`_group_rate`): a ball dropped straight onto a plane takes DOP853's few explicit
    steps instead of Radau's many (the host's choice; see
    :class:`~mbplugin.pipeline.substep.GroupedContactSpace`).

    ``work``: the work arrays (:func:`group_work`: a caller may keep them from call to call
    instead of ~35 allocations a call); their values at the call's start are those of new
    ones (Radau's first Z and controller zero, the Jacobian scales 1e-6)."""
    ng = gptr.shape[0] - 1
    # work arrays, reallocated only when the group size changes (groups of one size are many)
    # (the arrays passed to compiled calls in the group loop are borrowed views; their owners,
    # wk, ctl_o, wi_o, dv_o, stay referenced until the end)
    k_ws, nn_ws = 1, 4
    wk, ctl_o, wi_o, dv_o = work
    ws, atol, jscale, f, ga, gb, y, K, Fd, atol_e, raw = borrowed(wk)
    Dq, y_new, y_old, ytmp, kbuf, f_new = ws[6], ws[7], ws[8], ws[9], ws[11], ws[12]
    for i in range(3):
        for j in range(nn_ws):
            ws[1][i, j] = 0.0
    for j in range(nn_ws):
        jscale[j] = 1e-6
    z = np.zeros(1, dtype=RADAU_CONTROL)
    ctl_o[0] = z[0]
    ctl = borrowed(ctl_o)
    newton_tol = max(10.0 * 2.220446049250313e-16 / rtol, min(0.03, rtol ** 0.5))
    rtol_e = tol_e * rtol
    Wi = borrowed(wi_o)
    dv = borrowed(dv_o)
    for g in range(ng):
        if status[g] != PENDING:
            continue
        c0, c1 = gptr[g], gptr[g + 1]
        k = c1 - c0
        s0, s1 = yptr[g], yptr[g + 1]
        nn = s1 - s0
        if k != k_ws or nn != nn_ws:
            k_ws, nn_ws = k, nn
            wk = _group_work(k, nn)
            ws, atol, jscale, f, ga, gb, y, K, Fd, atol_e, raw = borrowed(wk)
            Dq, y_new, y_old, ytmp, kbuf, f_new = ws[6], ws[7], ws[8], ws[9], ws[11], ws[12]
        for i in range(nn):
            atol[i] = (1e-4 if i < k else (1e-2 if i < 4 * k else 1e-4)) * rtol
            atol_e[i] = tol_e * atol[i]
            y[i] = Y[s0 + i]
        gf = borrowed(GF[goff[g]:goff[g + 1]])
        gc = borrowed(GC[c0:c1])
        P = (k, gf, gc)
        fb = forces_at(k)
        t = tg[g]
        rest = MOVING
        if t == 0.0 and hg[g] > 0.0:
            rest = _at_rest(y, f, ytmp, f_new, nn, k, atol, dt, P)
        if rest == AT_REST:
            # quasi-static: the state does not move (see _at_rest), impulse = force x dt (the
            # forces at y: left in the force buffer by _at_rest's last right-hand side)
            for i in range(k):
                for a in range(3):
                    imp[c0 + i, a] += dt * gf[fb + 3 * i + a]
                    if gf[fb + 3 * i + a] != 0.0:
                        loaded[c0 + i] = True
            tg[g] = dt
            status[g] = DONE
            counters[1] += 2
            continue
        explicit = False
        have_dense = False
        # W^-1 of a one-contact group (:func:`_inverse3`): -1 not yet derived (at the first
        # explicit step of its active contact), else 0 / 1
        inv_ok = -1 if auto and k == 1 else 0
        sticky = mg[g] == 2
        if auto:
            if sticky:
                # handed to Radau by the step count: back to explicit steps once no contact of
                # the group is active (free flight; the rate does not see its stiffness)
                explicit = True
                for i in range(k):
                    if gc[i].active:
                        explicit = False
                sticky = not explicit
            else:
                explicit = (mg[g] != 0 or hg[g] <= 0.0
                            or hg[g] * _group_rate(y, k, gf, gc, normal_only) <= STIFF_HW)
        h_try = hg[g]
        if explicit:
            if rest != MOVING_F:  # else _at_rest left dy/dt at y in f
                _group_rhs(y, f, P)
            nfev = 1
            if h_try <= 0.0:
                h_try = initial_step(y, f, t, dt, dt, rtol_e, atol_e, ytmp, kbuf, dop.ORDER, P)
                nfev += 1
        else:
            nfev = radau_start(y, f, t, dt, hg[g], rtol, atol, dt, jscale, 0, ctl, ws, P)
        _scan(gb, ga, y, k, gc, raw)
        st = PENDING
        steps = 0
        n_explicit = 0
        stiff = 0
        rt = 0.0
        while st == PENDING:
            if explicit:
                ok, t_new, h, h_try, nf = dop853_step(y, f, t, dt, h_try, rtol_e, atol_e, dt, K,
                                                      ytmp, kbuf, y_new, P)
                nfev += nf
                if ok:
                    n_explicit += 1
                    have_dense = False
                y_start = y
                dense = Fd
                fn_new = K[dop.NS]
            else:
                ok, t_new, h, nf = radau_step(y, f, t, dt, rtol, atol, dt, newton_tol, jscale,
                                              0, ctl, ws, P)
                nfev += nf
                y_start = y_old
                dense = Dq
                fn_new = f_new
            if not ok:
                st = FAILED
                break
            steps += 1
            t_end = t_new
            ev = -1
            if _scan(ga, gb, y_new, k, gc, raw):
                if explicit and not have_dense:
                    nfev += dop853_dense(y, y_new, h, K, Fd, ytmp, kbuf, P)
                    have_dense = True
                for j in range(3 * k):
                    if _ev.crossed(ga[j], gb[j], _ev.strict_rule(_class(gc[j // 3]), j % 3)):
                        te = _locate(t, t_new, ga[j], gb[j], t, h, y_start, dense, ytmp, k,
                                     gc, j // 3, j % 3)
                        if (j % 3 == _ev.S_EXTREMUM
                                and gc[j // 3].candidate == LATCHED):
                            # a latched rebound's apex books nothing while the gap is closed
                            dense_at(te, t, h, y_start, dense, ytmp)
                            if not _ev.apex_books(ytmp[j // 3]):
                                continue
                        if te < t_end or ev < 0:
                            t_end = te
                            ev = j
            # the stiffness rate at y_new, derived when needed (the explicit quadrature's
            # sub-intervals, the stiffness test of a step that does not end the run)
            rt = -1.0
            if ev >= 0:
                dense_at(t_end, t, h, y_start, dense, ytmp)
            if explicit and inv_ok < 0 and gc[0].active:
                inv_ok = 1 if _inverse3(gf, 0, Wi) else 0
            if explicit and inv_ok == 1 and gc[0].active:
                # du/dt = a_free + W f: the impulse over [t, t_end] is W^-1 (du - a_free
                # (t_end - t)), the method's own quadrature of f (order 8, as u); not for an
                # inactive contact, whose force is exactly 0 (no rounding-level impulse: the
                # backend's free-flight bookkeeping tells free from pushed bodies by it)
                ye = ytmp if ev >= 0 else y_new
                for a in range(3):
                    dv[a] = ye[1 + a] - y[1 + a] - gc[0].a_free[a] * (t_end - t)
                for a in range(3):
                    imp[c0, a] += Wi[3 * a] * dv[0] + Wi[3 * a + 1] * dv[1] + Wi[3 * a + 2] * dv[2]
            else:
                # impulse over [t, t_end] by Gauss-Legendre on the dense output (an explicit
                # step in sub-intervals of h x rate <= QUAD_HW)
                nsub = 1
                if explicit:
                    rt = _group_rate(y_new, k, gf, gc, normal_only)
                    x = (t_end - t) * rt / QUAD_HW
                    nsub = max(1, math.ceil(x)) if x < 64.0 else 64
                if explicit and not have_dense:
                    nfev += dop853_dense(y, y_new, h, K, Fd, ytmp, kbuf, P)
                    have_dense = True
                span = (t_end - t) / nsub
                for sb in range(nsub):
                    ts = t + sb * span
                    for q in range(3):
                        dense_at(ts + _GX[q] * span, t, h, y_start, dense, kbuf)
                        _forces(kbuf, k, gf, gc)
                        for i in range(k):
                            for a in range(3):
                                imp[c0 + i, a] += _GW[q] * span * gf[fb + 3 * i + a]
            if ev >= 0:
                for i in range(nn):
                    y[i] = ytmp[i]
                t = t_end
                st = EVENT
                counters[2] += 1
            else:
                for i in range(nn):
                    y[i] = y_new[i]
                    f[i] = fn_new[i]
                t = t_new
                for j in range(3 * k):
                    ga[j] = gb[j]
                if t >= dt:
                    st = DONE
                elif explicit:
                    # stability-limited explicit steps: Radau takes over; also after
                    # SWITCH_STEPS explicit steps in one run of the group (a stiffness the
                    # rate does not see, e.g. a stick spring near its Coulomb cap: Radau
                    # until the group's contacts are all inactive)
                    if rt < 0.0:
                        rt = _group_rate(y_new, k, gf, gc, normal_only)
                    stiff = stiff + 1 if h * rt > STIFF_HW else 0
                    if n_explicit >= SWITCH_STEPS:
                        sticky = True
                    if stiff >= STIFF_STEPS or sticky:
                        explicit = False
                        nfev += radau_start(y, f, t, dt, h_try, rtol, atol, dt, jscale, 0,
                                            ctl, ws, P)
            # whether a contact carried force at the step's end (contacts not yet loaded in
            # this host step): without friction or stick spring at y_new, f = applied(raw) n
            # from the raw forces _scan evaluated there, else the forces at y
            unloaded = False
            for i in range(k):
                if not loaded[c0 + i]:
                    unloaded = True
            if unloaded and ev < 0 and not gc[0].fr_on and not gc[0].st_on:
                for i in range(k):
                    c = gc[i]
                    if c.active:
                        fn = applied(c.mode, raw[i])
                        nv = c.normal
                        if fn * nv[0] != 0.0 or fn * nv[1] != 0.0 or fn * nv[2] != 0.0:
                            loaded[c0 + i] = True
            elif unloaded:
                _forces(y, k, gf, gc)
                for i in range(k):
                    if (gf[fb + 3 * i] != 0.0 or gf[fb + 3 * i + 1] != 0.0
                            or gf[fb + 3 * i + 2] != 0.0):
                        loaded[c0 + i] = True
        for i in range(nn):
            Y[s0 + i] = y[i]
        tg[g] = t
        if explicit:
            # after an event the explicit method starts afresh (SciPy's initial step)
            hg[g] = -1.0 if st == EVENT else h_try
        else:
            hg[g] = ctl[0].h
        mg[g] = 2 if sticky else (1 if explicit else 0)
        status[g] = st
        counters[0] += steps
        counters[1] += nfev
        counters[3] += n_explicit
    keep_alive(wk, ctl_o, wi_o, dv_o)


@njit
def relative_at(u, n):
    """ddelta = -n . u (K,) and the slip u - (n . u) n (K, 3) of relative velocities ``u``
    (K, 3, m/s) at normals ``n`` (K, 3): :func:`mbplugin.pipeline.substep.batch_at`'s
    fields (n . u summed x, y, z in order, as ``einsum("ij,ij->i")``)."""
    k = u.shape[0]
    dd = np.empty(k)
    vt = np.empty((k, 3))
    for i in range(k):
        un = u[i, 0] * n[i, 0] + u[i, 1] * n[i, 1] + u[i, 2] * n[i, 2]
        dd[i] = -un
        for a in range(3):
            vt[i, a] = u[i, a] - un * n[i, a]
    return dd, vt


@njit
def group_start(k, ng, ident, order, gptr, h0, m0):
    """The per-group arrays a host step's :func:`integrate_groups` starts from, in one call
    (the host step's fixed cost: one compiled entry instead of a dozen NumPy calls): start
    times tg (ng,) zero; first steps hg (ng,): each group's shortest carried step of ``h0``
    (K,; empty: none carried) where positive (a NaN among them: none), else -1 (SciPy's
    initial step); solvers mg (ng,): 1 explicit, 0 where a contact's ``m0`` (K,; empty: none)
    is 0, 2 where one is 2; status (ng,) PENDING; impulses (K, 3) zero; loaded (K,) False;
    counters (4,) zero. ``ident``: group g is contact g (``order`` not read)."""
    tg = np.zeros(ng)
    hg = np.full(ng, -1.0)
    mg = np.ones(ng, dtype=np.int64)
    have_h, have_m = h0.shape[0] > 0, m0.shape[0] > 0
    for g in range(ng):
        c0, c1 = (g, g + 1) if ident else (gptr[g], gptr[g + 1])
        if have_h:
            hmin = np.inf
            nan = False
            for j in range(c0, c1):
                x = h0[j if ident else order[j]]
                if x != x:
                    nan = True
                elif x < hmin:
                    hmin = x
            if not nan and hmin > 0.0:
                hg[g] = hmin
        if have_m:
            any0 = any2 = False
            for j in range(c0, c1):
                x = m0[j if ident else order[j]]
                any0 |= x == 0
                any2 |= x == 2
            if any2:
                mg[g] = 2
            elif any0:
                mg[g] = 0
    return (tg, hg, mg, np.zeros(ng, dtype=np.int64), np.zeros((k, 3)),
            np.zeros(k, dtype=np.bool_), np.zeros(4, dtype=np.int64))


@njit
def pack(order, gptr, goff, widx, wdata, hd, nrm, af, coef, mem, muk, act, law, cand, kid_l,
         mode_l, nst_l, mem_l, d, u, s, ns, ode):
    """The groups' arrays of :func:`integrate_groups` from the contacts' arrays in the batch's
    order: ``order`` (K,) the batch index of each contact in group order, ``gptr`` / ``goff``
    the groups' contact and float-array offsets, W's entries ``wdata`` at ``widx`` in the float
    arrays, ``hd`` the host step's friction model and stick spring (one record of
    :data:`mbplugin.pipeline.layout.HEAD`), per contact the normal ``nrm``
    and free acceleration ``af`` (K, 3), coefficient row ``coef`` (K, NC_MAX), memory ``mem``
    (K, NMEM_MAX) and friction coefficients ``muk`` (K, 2: mu, mu_s), ``act`` active,
    ``law`` its law, ``cand`` an onset candidate (1), latched (:data:`LATCHED`, its d_sep in
    ``coef[:, 0]``) or neither (0), and per law its kernel id, contact mode,
    ODE state count and memory flag; the state from delta (K,), u (K, 3), the spring
    displacements s (K, 3) (``ns`` = 3: the stick option, 0: none) and the ODE states
    (K, NODE_MAX). Returns (yptr, Y, GF, GC): group g's state is
    Y[yptr[g]:yptr[g+1]] = [delta (k_g), u (3 k_g), springs (ns k_g), ODE states], its contact
    records GC[gptr[g]:gptr[g+1]] (:data:`mbplugin.pipeline.layout.CONTACT`, filled here by
    field name: the one place the store's arrays become records on this path)."""
    k = order.shape[0]
    ng = gptr.shape[0] - 1
    h = hd[0]
    yptr = np.empty(ng + 1, dtype=np.int64)
    GC = np.zeros(k, dtype=CONTACT)
    GF = np.zeros(goff[ng])
    acc = 0
    for g in range(ng):
        yptr[g] = acc
        c0, c1 = gptr[g], gptr[g + 1]
        o = (4 + ns) * (c1 - c0)
        for c in range(c0, c1):
            b = order[c]
            lw = law[b]
            nq = nst_l[lw] if act[b] else 0
            r = GC[c]
            r.kid = kid_l[lw]
            r.mode = mode_l[lw]
            r.active = act[b]
            r.ode_off = o
            r.n_states = nq
            r.candidate = cand[b]
            r.has_memory = act[b] and mem_l[lw]
            o += nq
        acc += o
    yptr[ng] = acc
    Y = np.empty(acc)
    for g in range(ng):
        c0, c1 = gptr[g], gptr[g + 1]
        kg = c1 - c0
        s0 = yptr[g]
        for i in range(kg):
            c = c0 + i
            b = order[c]
            r = GC[c]
            put_head(r, h)
            for a in range(3):
                r.normal[a] = nrm[b, a]
                r.a_free[a] = af[b, a]
            put_law_row(r, coef, mem, b)
            r.mu = muk[b, 0]
            r.mu_s = muk[b, 1]
            Y[s0 + i] = d[b]
            for a in range(3):
                Y[s0 + kg + 3 * i + a] = u[b, a]
            for a in range(ns):
                Y[s0 + 4 * kg + 3 * i + a] = s[b, a]
            o = s0 + r.ode_off
            for q in range(r.n_states):
                Y[o + q] = ode[b, q]
    for j in range(widx.shape[0]):
        GF[widx[j]] = wdata[j]
    return yptr, Y, GF, GC


@njit
def unpack(order, gptr, yptr, GC, Y, d, u, s, ns, ode):
    """Inverse of :func:`pack`'s state: delta, u, s and the ODE states back into the arrays in
    the batch's order; returns whether delta and u are all finite."""
    finite = True
    for g in range(gptr.shape[0] - 1):
        c0, c1 = gptr[g], gptr[g + 1]
        kg = c1 - c0
        s0 = yptr[g]
        for i in range(kg):
            c = c0 + i
            b = order[c]
            d[b] = Y[s0 + i]
            finite = finite and math.isfinite(d[b])
            for a in range(3):
                u[b, a] = Y[s0 + kg + 3 * i + a]
                finite = finite and math.isfinite(u[b, a])
            for a in range(ns):
                s[b, a] = Y[s0 + 4 * kg + 3 * i + a]
            o = s0 + GC[c].ode_off
            for q in range(GC[c].n_states):
                ode[b, q] = Y[o + q]
    return finite
