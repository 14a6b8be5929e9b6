"""Event values and their location on a step's dense output, written once for every driver.

The values: :func:`event_value` gives every event value of a watched pair from the contact
store's classification of the pair (free, active, active with a memory law, latched) and its
delta, ddelta (and raw force, latch overlap): the engine, the hosts' sub-stepper and the impact
analyser all call it (:func:`event_values` is its array form for the NumPy paths); their sets
differ only by which classes occur. :func:`crossed` is the one crossing test.

The crossing convention: an event function g of time is > 0 before its event and <= 0 at and
after it (onset, end of contact, latch release or renewal, the peak of a memory law: the values
of :mod:`mbplugin.pipeline.rules`). A step whose end value (or one of its samples) went from
g(a) > 0 to g(b) <= 0 holds the event in (a, b]; :func:`locate` narrows that bracket and returns
its end where g <= 0, and :func:`strict_side` moves that point a few ulps forward until g < 0
strictly (an event value of exactly 0 at the booked state would leave the next event function
at 0, and a short flight could then go unnoticed).

The one root finder is Brent's method (Brent 1973, Algorithms for Minimization without
Derivatives, Ch. 4, procedure *zero*: inverse quadratic interpolation and secant steps, kept
inside the bracket, with bisection whenever they do not halve it; after Dekker 1969): one
iteration, :func:`brent_step`, and two loops over it: :func:`locate` (compiled; g through
:func:`event_at`) and :func:`locate_py` (g a Python callable). Why this method:

* The located instant does not depend on the method where the bracket is closed to adjacent
  floats: it is then the first float where g <= 0 (for g monotone at the ulp level). Measured:
  Brent's method and Illinois' regula falsi (Dowell & Jarratt 1971, BIT 11, 168-174; this
  module's method before) closed to one ulp give bit for bit the same 5 s steel drop of the
  engine and the same 92 result vectors of ``benchmarks/analyser_pins.py``.
* So the method is chosen by its cost, evaluations of g per located event (strict side
  included): the engine's 5 s steel drop 20.5 against Illinois' 52.2 (at its old bracket of 4
  ulps); the sub-stepper's PyBullet and MuJoCo steel drops (``benchmarks/host_pins.py``) 27.8
  against Illinois' 42.8 (at its old 1e-13 s); the analyser's pins 29.6 against Illinois' 66 at
  one ulp (26.3 for its old Brent loop, which stopped at any exact zero). Where g is not smooth
  at its root (a Hertz force vanishing as delta^1.5, the kink of
  :func:`rules.end_value`'s max) Illinois' secant points only creep (every fourth a bisection),
  while Brent's method bisects as soon as a step fails to halve the bracket (at most N^2
  evaluations for N bisections, Brent 1973, Ch. 4).
* It closes a bracket to what the driver asks: the width |cc - b| <= 2 (``rtol`` |b| + ``atol``)
  + ``ulps`` spacing (adjacent floats with ``ulps`` = 1), a step never below one ulp of b. An
  exact zero of g does not stop it: one minimal step back closes the bracket unless g is 0 there
  too (a flat zero, e.g. a force that stays exactly 0: bisected to its first float, not
  wherever an iterate landed).

The drivers: the standalone engine (compiled, :mod:`mbplugin.dynamics.compiled`, and its SciPy
path, :mod:`mbplugin.dynamics.integrators`) and the hosts' sub-stepper (compiled,
:mod:`mbplugin.pipeline.substep_compiled`, and its NumPy reference, :mod:`mbplugin.pipeline.
substep`) close to adjacent floats of t; the impact analyser (:mod:`mbplugin.impact._compiled`,
on the step fraction in [0, 1]) to its own 4e-16 |x| + 1e-16 (its results stay those of its
Brent loop before: 87 of its 92 pinned vectors bit for bit, four within 2 ulps, and one moved
where that loop had stopped at an exact zero past the end of contact: Alizadeh's law at press m
g, whose force turns negative before delta = 0; tests/test_root_finder.py). The implicit step's
line search (:mod:`mbplugin.pipeline.implicit`) is not a root finder of this kind: it stops at
the first point whose slope has fallen to a quarter (a curvature condition), not at a root.

Compiled drivers register their event function: :func:`locate` and :func:`strict_side` evaluate
g through :func:`event_at`, which numba resolves at compile time to the event function the
driver registered for its tuple type (:func:`register_events`; the same mechanism as
:func:`mbplugin.pipeline.ivp.problem_rhs`): the standalone engine's watched pairs, the hosts'
contact groups and the impact analyser's approach speed and separation function.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba.extending import overload

from mbplugin._jit import CALLEE_JIT_OPTIONS, njit, njit_inline
from mbplugin.pipeline import rules

#: the bracket of the engine and the sub-stepper: adjacent floats of t (the first float where
#: g <= 0; see the module's docstring)
ULPS = 1.0
ENGINE_MAX_ITER = 300


# ---- the event values of a watched pair, written once -----------------------------------------
#: The classes of a watched pair (the contact store's classification; the engine's watch
#: kinds): not watched, free (an onset candidate), active, latched "separated", active with a
#: law that has memory.
NOT_WATCHED, FREE, ACTIVE, LATCHED, ACTIVE_MEMORY = -1, 0, 1, 2, 3
#: The event-value slots of a pair: the contact rule (onset of a free pair, end of an active
#: contact, release of a latched pair), the latch's renewal, the extremum of delta (the maximum
#: compression of an active memory law: :func:`rules.peak_value`; the apex of a latched pair's
#: rebound: :func:`rules.apex_value`).
S_RULE, S_RENEW, S_EXTREMUM = 0, 1, 2
N_SLOTS = 3
#: The value of a slot a class does not have (> 0: never crosses)
NO_EVENT = 1.0


@njit_inline
def has_value(cls, slot):
    """Whether a pair of class ``cls`` has an event value in ``slot`` (see :func:`event_value`)."""
    if slot == S_RULE:
        return cls >= FREE
    if slot == S_RENEW:
        return cls == LATCHED
    return cls == LATCHED or cls == ACTIVE_MEMORY


@njit_inline
def needs_force(cls, slot):
    """Whether :func:`event_value` of (``cls``, ``slot``) reads the law's raw force: the end of
    an active contact."""
    return slot == S_RULE and (cls == ACTIVE or cls == ACTIVE_MEMORY)


@njit_inline
def event_value(cls, slot, d, v, f_raw, mode, d_sep, xs, fs, vs):
    """The event value in ``slot`` of a watched pair of class ``cls`` (every driver's, in
    the one crossing convention: > 0 before the event, <= 0 at and after it), from its overlap
    ``d`` (m), approach speed ``v`` (m/s), the law's raw force ``f_raw`` (N; read only for the
    end of contact, :func:`needs_force`), contact ``mode``, the separation overlap ``d_sep`` of
    a latched pair (m) and the scales ``xs`` (m), ``fs`` (N), ``vs`` (m/s); :data:`NO_EVENT`
    for a slot the class does not have. The formulas are :mod:`mbplugin.pipeline.rules`':

    ==============  ==========================  =====================  =========================
    class           S_RULE                      S_RENEW                S_EXTREMUM
    ==============  ==========================  =====================  =========================
    FREE            onset_value (d >= 0)        -                      -
    ACTIVE          end_value (Eq. 17)          -                      -
    ACTIVE_MEMORY   end_value                   -                      peak_value (max. compr.)
    LATCHED         latch_release_value (d<=0)  latch_renew_value      apex_value (rebound apex)
    ==============  ==========================  =====================  =========================

    Why this one definition:

    * onset: the one crossing convention holds for it too: -d / xs goes from > 0 (apart) to
      <= 0 (touching, d >= 0), and the driver books the onset at the strict side (d > 0,
      :func:`strict_side`), where the store's :func:`rules.starts` agrees. The sub-stepper's
      old test d0 <= 0 < d1 (a pair exactly touching at a step's start counted as apart)
      differed only at d = 0 exactly; the engine's convention is kept because there d = 0
      exactly is frequent: near a slow onset the root finder resolves delta to ulps of the
      position, and treating d = 0 as apart moved a 5 s steel drop's 36th bounce by 3e-12
      (v_in) and 3.5e-10 (c_r).
    * latch: release and renewal are two values (the engine's), not their minimum (the
      sub-stepper's old ``latch_value``): near either crossing the other value is far from 0,
      so the located instants are the same, and two values say which way out was taken. The
      apex of the rebound (delta's minimum) is a value of its own: a gap that opened and closed
      between two evaluations of the release value is open there; a driver books it only where
      the gap is open at the located apex (:func:`apex_books`).
    * the impact analyser's single contact is ACTIVE_MEMORY (it watches the maximum compression
      of every law: its peak overlap; the memory update there is a no-op for a law without);
      no onset, no latch.
    """
    if slot == S_RULE:
        if cls == FREE:
            return rules.onset_value(d, xs)
        if cls == ACTIVE or cls == ACTIVE_MEMORY:
            return rules.end_value(mode, d, v, f_raw, xs, fs, vs)
        if cls == LATCHED:
            return rules.latch_release_value(d, xs)
    elif slot == S_RENEW:
        if cls == LATCHED:
            return rules.latch_renew_value(d, v, d_sep, xs, vs)
    elif cls == ACTIVE_MEMORY:
        return rules.peak_value(v, vs)
    elif cls == LATCHED:
        return rules.apex_value(v, vs)
    return NO_EVENT


@njit_inline
def apex_books(d):
    """Whether the located apex of a latched pair's rebound books an event: only where the gap
    is open there (``d`` <= 0, m; the commit then releases the latch)."""
    return d <= 0.0


@njit_inline
def strict_rule(cls, slot):
    """Whether the store's rule behind (``cls``, ``slot``) is strict, so that an event value
    exactly 0 has not fired it: the onset (d > 0, :func:`rules.starts`) and the latch's renewal
    (d > d_sep while approaching, :func:`rules.renews`)."""
    return (cls == FREE and slot == S_RULE) or (cls == LATCHED and slot == S_RENEW)


@njit_inline
def crossed(ga, gb, strict):
    """The one crossing test: an event value went across its event between two instants, from
    ``ga`` to ``gb``: from > 0 to <= 0 or, for a strict rule (``strict``:
    :func:`strict_rule`), also from exactly 0 to < 0 (a pair exactly touching, a pair latched at
    d = d_sep: their rules have not fired at 0). Scalars, or arrays of the same shape."""
    return ((ga > 0.0) & (gb <= 0.0)) | (strict & (ga == 0.0) & (gb < 0.0))


@njit
def event_values(cls, d, v, f_raw, mode, d_sep, xs, fs, vs, g):
    """:func:`event_value` of every pair and slot into ``g`` (n, :data:`N_SLOTS`): per pair its
    class ``cls``, ``d`` (m), ``v`` (m/s), raw force ``f_raw`` (N, NaN where not needed),
    ``mode`` and ``d_sep`` (m) (arrays of length n; the NumPy paths of the engine and the
    sub-stepper)."""
    for i in range(cls.shape[0]):
        for s in range(N_SLOTS):
            g[i, s] = event_value(cls[i], s, d[i], v[i], f_raw[i], mode[i], d_sep[i], xs, fs, vs)
    return g


# ---- compiled: event functions registered per driver ---------------------------------------
#: (predicate on the numba type of an event tuple, compiled g(t, E))
_EVENTS: list = []


def register_events(accepts, value) -> None:
    """Make :func:`locate` and :func:`strict_side` evaluate the event function of the tuples
    ``E`` whose numba type ``accepts(type)`` says yes to with the compiled ``value(t, E)`` (the
    event value at time t, usually from the step's dense output). Register at import of the
    driver's module; the predicates must not overlap, and ``value``'s arguments are named
    (t, E) as :func:`event_at`'s (numba's overload requires it)."""
    _EVENTS.append((accepts, value))


def event_at(t, E):
    """The event value of ``E`` at time ``t`` (see :func:`register_events`); compiled code
    only."""
    raise NotImplementedError("event_at is dispatched in compiled code only")


@overload(event_at, jit_options=CALLEE_JIT_OPTIONS)
def _event_at_impl(t, E):
    for accepts, value in _EVENTS:
        if accepts(E):
            return value.py_func  # compiled as the implementation itself: no extra call level
    return None


@njit
def strict_side(t, t_max, E):
    """``t`` moved forward by 1, 2, 4, ... ulps (at most to ``t_max``) until g < 0 strictly."""
    d = np.spacing(max(abs(t), 1e-300))
    tt = t
    for _ in range(64):
        if event_at(tt, E) < 0.0 or tt >= t_max:
            return tt
        tt = min(t + d, t_max)
        d *= 2.0
    return tt


@njit_inline
def brent_step(a, fa, b, fb, cc, fc, d, e, rtol, atol, ulps):
    """One iteration of Brent's method (Brent 1973, Algorithms for Minimization without
    Derivatives, Ch. 4, procedure zero: inverse quadratic interpolation, secant, bisection):
    from the last iterate ``b`` (value ``fb``), the previous one ``a`` and the contrapoint ``cc``
    (a value of the other sign: > 0 against <= 0, the crossing convention), the last two steps
    ``d``, ``e``, the next trial point. The bracket is closed when its width |cc - b| <=
    2 (``rtol`` |b| + ``atol``) + ``ulps`` spacing(min(|b|, |cc|)) (s, or the driver's unit of
    t); a step is at least ``rtol`` |b| + ``atol`` and at least one ulp of b. Returns
    (a, fa, b, fb, cc, fc, d, e, closed): when closed, b and fb the last iterate and its value
    (b and cc possibly swapped); else b the trial point to evaluate (fb then stale)."""
    if (fb > 0.0) == (fc > 0.0):
        cc = a
        fc = fa
        d = b - a
        e = d
    fresh = True  # b is the point evaluated last
    if abs(fc) < abs(fb):
        a = b
        b = cc
        cc = a
        fa = fb
        fb = fc
        fc = fa
        fresh = False
    tol = rtol * abs(b) + atol
    xm = 0.5 * (cc - b)
    if abs(xm) <= tol + 0.5 * ulps * np.spacing(min(abs(b), abs(cc))):
        return a, fa, b, fb, cc, fc, d, e, True
    step = max(tol, np.spacing(abs(b)))
    if fb == 0.0 and fa != 0.0 and fresh:
        # an exact zero just found (interpolation would step 0 and bisect on): one minimal step
        # towards the other end, which closes the bracket unless g is 0 there too (a flat zero:
        # then no more such steps, the bracket is bisected to the zero's first float)
        d = step if xm > 0 else -step
        e = d
    elif abs(e) >= tol and abs(fa) > abs(fb):
        s = fb / fa
        if a == cc:
            p = 2.0 * xm * s
            q = 1.0 - s
        else:
            q = fa / fc
            r = fb / fc
            p = s * (2.0 * xm * q * (q - r) - (b - a) * (r - 1.0))
            q = (q - 1.0) * (r - 1.0) * (s - 1.0)
        if p > 0.0:
            q = -q
        else:
            p = -p
        if 2.0 * p < min(3.0 * xm * q - abs(tol * q), abs(e * q)):
            e = d
            d = p / q
        else:
            d = xm
            e = d
    else:
        d = xm
        e = d
    a = b
    fa = fb
    if abs(d) > step:
        t = b + d
    else:
        t = b + step if xm > 0 else b - step
    if not (min(b, cc) < t < max(b, cc)):
        t = 0.5 * (b + cc)  # a floor step of one ulp across a binade's edge: the float between
    return a, fa, t, fb, cc, fc, d, e, False


@njit
def locate(a, b, ga, gb, rtol, atol, ulps, max_iter, E):
    """The event in (a, b] (g(a) = ``ga`` > 0 >= g(b) = ``gb``) by Brent's method
    (:func:`brent_step`) to a closed bracket (at most ``max_iter`` evaluations of g, through
    :func:`event_at`): its end where g <= 0. See the module's docstring."""
    fb = gb
    cc = a
    fc = ga
    d = b - a
    e = d
    fa = ga
    for _ in range(max_iter):
        a, fa, b, fb, cc, fc, d, e, closed = brent_step(a, fa, b, fb, cc, fc, d, e, rtol, atol,
                                                         ulps)
        if closed:
            break
        fb = event_at(b, E)
    return b if fb <= 0.0 else cc


# ---- Python: g a callable (the NumPy paths) -----------------------------------------------
def locate_py(g: Callable[[float], float], a: float, b: float, ga: float, gb: float,
              rtol: float = 0.0, atol: float = 0.0, ulps: float = ULPS,
              max_iter: int = ENGINE_MAX_ITER) -> float:
    """:func:`locate` with a Python event function ``g(t)`` (the same compiled
    :func:`brent_step`); by default the engine's bracket (adjacent floats)."""
    fb = gb
    cc, fc, d, e, fa = a, ga, b - a, b - a, ga
    for _ in range(max_iter):
        a, fa, b, fb, cc, fc, d, e, closed = brent_step(a, fa, b, fb, cc, fc, d, e, rtol, atol,
                                                         ulps)
        if closed:
            break
        fb = g(b)
    return float(b if fb <= 0.0 else cc)


def strict_side_py(g: Callable[[float], float], t: float, t_max: float) -> float:
    """:func:`strict_side` with a Python event function ``g(t)``."""
    d = float(np.spacing(max(abs(t), 1e-300)))
    tt = t
    for _ in range(64):
        if g(tt) < 0.0 or tt >= t_max:
            return tt
        tt = min(t + d, t_max)
        d *= 2.0
    return tt
