"""Time integrators: fixed-step (semi-implicit Euler, RK4) and adaptive with contact events.

Fixed step
    ``symplectic_euler``  semi-implicit Euler: velocities first, then positions with the new
                          velocities (Hairer, Lubich & Wanner, Geometric Numerical Integration,
                          2006, Sect. I.1.2); the orientation advances by the exact rotation of the
                          new body rate, q (x) exp(w h/2). First order, symplectic for conservative
                          forces: energy errors stay bounded instead of drifting.
    ``rk4``               the classical 4th-order Runge-Kutta method on the full state.

    The contact set is refreshed at the start of every step (onsets and separations take effect
    at step boundaries); the laws' ODE states advance with the bodies.

Adaptive (``adaptive``)
    Any SciPy ``OdeSolver`` (``Radau`` by default, ``DOP853``, ``RK45``, ``BDF``, ``LSODA``)
    stepped one accepted step at a time. After each step the contact event functions are sampled
    on the step's dense output; the first sign change is located with Brent's method to adjacent
    floats of time (:func:`mbplugin.pipeline.events.locate_py`), the step is cut there, the contact
    store books the event (onset with the exact impact speed, separation by Eq. 17 of Milehins &
    Marghitu 2026, the maximum compression of a contact whose law has memory, where the memory is
    updated) and the solver restarts. Between events the right-hand side is smooth, so the solver
    takes small steps only while a contact is stiff (Azad & Featherstone 2014, Sect. II-C).
    ``Radau`` (an implicit, L-stable Runge-Kutta method of order 5; Hairer & Wanner 1996, Sect.
    IV.8) is the default because a resting contact is a stiff, lightly damped oscillator that would
    hold an explicit method at its stability limit.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mbplugin.dynamics.compiled import COMMIT, EVENT, FAILED, PAUSED, SWITCH, run_segment
from mbplugin.dynamics.contacts import WATCH_ALL
from mbplugin.dynamics.rotation import quat_from_rotvec, quat_multiply
from mbplugin.dynamics.world import N_WORK, World
from mbplugin.errors import IntegrationError, ParameterError
from mbplugin.pipeline import events
from mbplugin.pipeline.budget import StepBudget
from mbplugin.pipeline.ivp import STIFF_HW, STIFF_STEPS
from mbplugin.pipeline.layout import ONSET

FIXED_METHODS = ("symplectic_euler", "rk4")
IMPLICIT = ("Radau", "BDF")
#: Default absolute tolerance floor of the implicit solvers (SI units of each state).
IMPLICIT_ATOL_FLOOR = 1e-8
METHODS = (*FIXED_METHODS, "adaptive")
#: The compiled Radau segments factor dense (n_y x n_y) Newton matrices: beyond this many state
#: values SciPy's Radau with the engine's sparse Jacobian is faster (a stack of ten balls, 146
#: values, ran 7x slower dense).
COMPILED_RADAU_MAX_STATES = 64
SOLVERS = ("auto", "Radau", "DOP853", "RK45", "RK23", "BDF")


@dataclass(frozen=True)
class IntegratorSettings:
    """How to integrate (all times in s).

    ``method``        "symplectic_euler", "rk4" or "adaptive"
    ``dt``            fixed step (required for the fixed-step methods)
    ``solver``        SciPy solver of the adaptive method
    ``rtol``, ``atol`` tolerances of the adaptive method (``atol`` default: 1e-3 rtol, at least
                      1e-8 for the implicit solvers)
    ``max_step``      largest adaptive step (default: unbounded)
    ``first_step``    first adaptive step (default: chosen by the solver)
    ``event_samples`` dense-output samples per step at which the event functions are checked
    ``contact_samples`` extra records per adaptive step while a contact is active, taken from
                      the dense output (for smooth force-indentation loops)
    ``switch_steps``  "auto" solver: explicit steps in one unbroken contact phase after which the
                      contact counts as resting (stiff) and the implicit solver takes over; it
                      also switches as soon as the step outgrows the contact time scale
                      (``STIFF_HW``)
    ``max_steps``     stop with an :class:`~mbplugin.errors.IntegrationError` after this many
                      accepted steps (default: no limit)
    """

    method: str = "adaptive"
    dt: float | None = None
    solver: str = "auto"
    rtol: float = 1e-8
    atol: float | None = None
    max_step: float = math.inf
    first_step: float | None = None
    event_samples: int = 4
    switch_steps: int = 100
    contact_samples: int = 0
    max_steps: int | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ParameterError(
                f"integrator.method = {self.method!r} is not one of {{{', '.join(METHODS)}}}"
            )
        if self.method in FIXED_METHODS:
            if self.dt is None:
                raise ParameterError(f"integrator.dt is required for method {self.method!r}")
            if not (math.isfinite(self.dt) and self.dt > 0):
                raise ParameterError(
                    f"integrator.dt = {self.dt:g} s is outside its allowed range (0, inf)"
                )
        if self.solver not in SOLVERS:
            raise ParameterError(
                f"integrator.solver = {self.solver!r} is not one of {{{', '.join(SOLVERS)}}}"
            )
        if not (1e-14 <= self.rtol <= 1e-2):
            raise ParameterError(
                f"integrator.rtol = {self.rtol:g} is outside its allowed range [1e-14, 1e-2]"
            )
        if self.atol is not None and not (math.isfinite(self.atol) and self.atol > 0):
            raise ParameterError(
                f"integrator.atol = {self.atol:g} is outside its allowed range (0, inf)"
            )
        if not self.max_step > 0:
            raise ParameterError(
                f"integrator.max_step = {self.max_step:g} s is outside its allowed range (0, inf]"
            )
        if self.first_step is not None and not (
            math.isfinite(self.first_step) and self.first_step > 0
        ):
            raise ParameterError(
                f"integrator.first_step = {self.first_step:g} s is outside its allowed range "
                "(0, inf)"
            )
        if not (0 <= int(self.contact_samples) <= 64):
            raise ParameterError(
                f"integrator.contact_samples = {self.contact_samples} is outside its allowed "
                "range [0, 64]"
            )
        if int(self.switch_steps) < 1:
            raise ParameterError(
                f"integrator.switch_steps = {self.switch_steps} is outside its allowed range "
                "[1, inf)"
            )
        if not (1 <= int(self.event_samples) <= 64):
            raise ParameterError(
                f"integrator.event_samples = {self.event_samples} is outside its allowed range "
                "[1, 64]"
            )
        if self.max_steps is not None and (
                isinstance(self.max_steps, bool) or not isinstance(self.max_steps, numbers.Real)
                or not float(self.max_steps).is_integer() or self.max_steps < 1):
            raise ParameterError(
                f"integrator.max_steps = {self.max_steps!r} is outside its allowed range "
                "[1, inf) (an integer)"
            )


def _check_steps(settings: IntegratorSettings, steps: int, t: float, t_end: float) -> None:
    """Raise when the run has used ``settings.max_steps`` before ``t_end``."""
    limit = settings.max_steps
    if limit is not None and steps >= limit and t < t_end:
        raise IntegrationError(
            f"integrator.max_steps = {int(limit)} reached at t = {t:.6g} s of {t_end:g} s: the "
            f"run needs more steps (raise integrator.max_steps, or check integrator.max_step "
            f"and the contacts' stiffness)"
        )


#: Called after every accepted step: (t, y, event) with event "" / "event" / "start", and with
#: "sample" for the extra records inside a contact step (``contact_samples``).
StepCallback = Callable[[float, np.ndarray, str], None]

#: Optional batch form of the callback for the records of a compiled segment: (t (K,), y (K,
#: len(y)), kind (K,): 0 a step, 1 a sample, 2 an event), called with the records between two
#: bookings of the contact store (the store is the same for all K), in time order.
RecordsCallback = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


@dataclass
class RunStats:
    """Counters of one integration run."""

    steps: int = 0
    rejected: int = 0
    events: int = 0
    nfev: int = 0
    wall_time: float = 0.0
    solver_steps: dict[str, int] = field(default_factory=dict)
    step_times: Any = None
    t_end: float = 0.0


# --------------------------------------------------------------------------------------------------
# fixed step
# --------------------------------------------------------------------------------------------------
def _symplectic_euler_step(world: World, t: float, y: np.ndarray, h: float) -> np.ndarray:
    n = world.n
    lay = world.bodies.layout
    dy = world.rhs(t, y)
    out = y + h * dy  # velocities, rates, law states and work: explicit Euler
    pos, quat, _, _ = lay.split(y)
    o_pos, o_quat, o_vel, o_omega = lay.split(out)
    # positions with the new velocities, orientation by the exact rotation of the new rate
    o_pos[:] = pos + h * o_vel
    o_pos[world.bodies.fixed] = pos[world.bodies.fixed]
    with np.errstate(all="ignore"):  # a blow-up is reported by the caller, not here
        q = quat_multiply(quat, quat_from_rotvec(o_omega * h))
        o_quat[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    del n
    return out


def _rk4_step(world: World, t: float, y: np.ndarray, h: float) -> np.ndarray:
    f = world.rhs
    k1 = f(t, y)
    k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
    k3 = f(t + 0.5 * h, y + 0.5 * h * k2)
    k4 = f(t + h, y + h * k3)
    out = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    n = world.n
    q = out[3 * n : 7 * n].reshape(n, 4)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return out


def run_fixed(
    world: World,
    y0: np.ndarray,
    t0: float,
    t_end: float,
    settings: IntegratorSettings,
    callback: StepCallback | None = None,
    progress: Callable[[float], None] | None = None,
) -> tuple[np.ndarray, RunStats]:
    """Integrate with a fixed step from ``t0`` to ``t_end``; returns (final state, stats)."""
    assert settings.dt is not None
    stepper = _symplectic_euler_step if settings.method == "symplectic_euler" else _rk4_step
    contacts = world.contacts
    stats = RunStats()
    wall0 = time.perf_counter()
    h = float(settings.dt)
    n_steps = max(1, math.ceil((t_end - t0) / h - 1e-9))
    y = np.asarray(y0, dtype=float).copy()
    t = t0
    quick = False
    if contacts is not None:
        y = contacts.begin(t, y)
        # small models: every pair is watched by the compiled path, and a step whose event
        # values all stay positive cannot have changed the contact set (no detection needed)
        quick = contacts.watch_margin >= WATCH_ALL
        if quick:
            contacts.watch(t, y)
            quick = contacts._w_geo is not None
    if callback is not None:
        callback(t, y, "start")
    nf = 4 if settings.method == "rk4" else 1
    for i in range(n_steps):
        hi = min(h, t_end - t) if i == n_steps - 1 else h
        y = stepper(world, t, y, hi)
        t = t0 + (i + 1) * h if i < n_steps - 1 else t_end
        stats.nfev += nf
        if not np.all(np.isfinite(y)):
            raise IntegrationError(
                f"the state became non-finite at t = {t:.6g} s (step {i + 1}); the step "
                f"dt = {h:g} s is probably above the stability limit (see the step advisor)"
            )
        if contacts is not None:
            if quick:
                changed, y = contacts.commit(t, y, quick=True,
                                             values=contacts.event_values(t, y))
                if changed:
                    contacts.watch(t, y)
            else:
                y = contacts.commit(t, y)[1]
        stats.steps += 1
        if callback is not None:
            callback(t, y, "")
        if progress is not None:
            progress(t)
        _check_steps(settings, stats.steps, t, t_end)
    stats.wall_time = time.perf_counter() - wall0
    stats.t_end = t
    return y, stats


# --------------------------------------------------------------------------------------------------
# adaptive with events
# --------------------------------------------------------------------------------------------------
def _solver_class(name: str) -> Any:
    from scipy import integrate

    return getattr(integrate, name)


def _first_event(
    contacts: Any,
    sol: Callable[[float], np.ndarray],
    y_end: np.ndarray,
    t_old: float,
    t_new: float,
    g_prev: np.ndarray,
    n_samples: int,
) -> tuple[float | None, np.ndarray | None]:
    """Earliest time in (t_old, t_new] where an event function crosses
    (:func:`mbplugin.pipeline.events.crossed`), and the event values at t_new (None when there
    was an event)."""
    ga = g_prev
    ta = t_old
    strict = contacts.event_strict()
    for k in range(1, n_samples + 1):
        tb = t_old + (t_new - t_old) * k / n_samples if k < n_samples else t_new
        gb = contacts.event_values(tb, y_end if k == n_samples else sol(tb))
        crossed = np.flatnonzero(events.crossed(ga, gb, strict))
        if crossed.size:
            best = tb
            best_j = int(crossed[0])
            for j in crossed:
                def gj(tt: float, j: int = int(j)) -> float:
                    return float(contacts.event_values(tt, sol(tt))[j])

                tj = events.locate_py(gj, ta, tb, float(ga[j]), float(gb[j]))
                if tj < best:
                    best, best_j = tj, int(j)
            def g_best(tt: float, j: int = best_j) -> float:
                return float(contacts.event_values(tt, sol(tt))[j])

            return events.strict_side_py(g_best, best, tb), None
        ga, ta = gb, tb
    return None, ga


def _book(contacts: Any, kind: float, ends: np.ndarray, onsets: np.ndarray,
          booked: list[int]) -> None:
    """Book in the contact store the next end (record kind 2) or onset (kind 3) that a
    compiled segment located and continued past; ``booked`` counts (ends, onsets) so far."""
    if kind == 2.0:
        e = ends[booked[0]]
        contacts.end_row(float(e[0]), float(e[1]), float(e[2]))
        booked[0] += 1
    else:
        contacts.onset_row(onsets[booked[1]])
        booked[1] += 1


def _step_limits(settings: IntegratorSettings, current: str,
                 contacts: Any) -> tuple[float, float]:
    """The absolute tolerance and the largest step (s) of the next steps of solver
    ``current``: ``settings.atol``, else 1e-3 rtol (with a floor for the implicit solvers);
    ``settings.max_step``, for an explicit solver with contacts active at most their time
    scale."""
    rtol = settings.rtol
    if settings.atol is not None:
        atol = settings.atol
    elif current in IMPLICIT:
        # Newton's iteration cannot resolve increments far below the finite-difference
        # Jacobian's noise: a floor on the absolute tolerance of the stiff (resting) phases
        atol = max(1e-3 * rtol, IMPLICIT_ATOL_FLOOR)
    else:
        atol = 1e-3 * rtol
    max_step = settings.max_step
    if contacts is not None and current not in IMPLICIT and contacts.n_active:
        # an explicit step never spans more than a contact time: a step that jumps over
        # the whole contact can pass the error test with every stage outside the overlap
        max_step = min(max_step, contacts.time_scale())
    return atol, max_step


def _deliver_records(seg: Any, contacts: Any, callback: StepCallback | None,
                     records: RecordsCallback | None, stats: RunStats) -> None:
    """A compiled segment's records (``seg.records``: t, kind, state) to the driver: each
    contact event the segment located and continued past booked (:func:`_book`, counted in
    ``stats``) before its own record; with ``records`` and ``callback`` in blocks between those
    events, else one ``callback`` call per record. A COMMIT segment's last record is the
    caller's (recorded after the commit)."""
    recs = seg.records
    if seg.status == COMMIT and len(recs):
        recs = recs[:-1]  # recorded below, after the commit
    ends = seg.ends if seg.ends is not None else np.zeros((0, 3))
    ons = seg.onsets if seg.onsets is not None else np.zeros(0, dtype=ONSET)
    booked = [0, 0]  # ends, onsets booked so far
    if records is not None and callback is not None:
        # blocks of records between the contact events the segment continued
        # past; each event is booked before its own record
        start = 0
        kinds = recs[:, 1]
        for j in np.flatnonzero(kinds >= 2.0) if len(recs) else ():
            if j > start:
                records(recs[start:j, 0], recs[start:j, 2:], kinds[start:j])
            _book(contacts, float(kinds[j]), ends, ons, booked)
            stats.events += 1
            kinds[j] = 2.0  # an event record
            start = j
        if start < len(recs):
            records(recs[start:, 0], recs[start:, 2:], kinds[start:])
        return
    for row in recs:
        if row[1] >= 2.0:
            # a contact event the segment located and continued past: booked now
            _book(contacts, float(row[1]), ends, ons, booked)
            stats.events += 1
            if callback is not None:
                callback(float(row[0]), row[2:].copy(), "event")
        elif callback is not None:
            callback(float(row[0]), row[2:].copy(), "sample" if row[1] else "")


def run_adaptive(
    world: World,
    y0: np.ndarray,
    t0: float,
    t_end: float,
    settings: IntegratorSettings,
    callback: StepCallback | None = None,
    progress: Callable[[float], None] | None = None,
    records: RecordsCallback | None = None,
) -> tuple[np.ndarray, RunStats]:
    """Integrate adaptively from ``t0`` to ``t_end`` with contact events; (final state, stats).
    With ``records`` (and ``callback``) the records of a compiled segment go to ``records`` in
    blocks instead of one ``callback`` call each."""
    contacts = world.contacts
    stats = RunStats()
    wall0 = time.perf_counter()
    rtol = settings.rtol
    y = np.asarray(y0, dtype=float).copy()
    t = t0
    if contacts is not None:
        y = contacts.begin(t, y)
    if callback is not None:
        callback(t, y, "start")
    h_next = settings.first_step
    n_samples = int(settings.event_samples)
    n = world.n
    auto = settings.solver == "auto"
    compiled_path = getattr(world, "compiled_path", True)
    current = "DOP853" if auto else settings.solver
    stats.solver_steps = {}
    # compiled segments return to Python after a step budget (progress, Ctrl-C, limits) and
    # go on from their carry: the same steps as one uninterrupted call
    budget = StepBudget()
    carry = None
    limit = settings.max_steps

    def normalise(v: np.ndarray) -> np.ndarray:
        q = v[3 * n : 7 * n].reshape(n, 4)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        return v

    while t < t_end:
        atol, max_step = _step_limits(settings, current, contacts)
        g_ready = None
        if (contacts is not None and compiled_path
                and (current == "DOP853"
                     or (current == "Radau" and len(y) <= COMPILED_RADAU_MAX_STATES))):
            g_ready = contacts.watch(t, y, values=False)
            arrays = contacts.compiled_arrays(world) if g_ready is None else None
            if arrays is not None:
                implicit = current == "Radau"
                jscale = None
                if implicit:
                    jscale = np.full(len(y), 1e-3)
                    jscale[13 * n : 13 * n + world.n_ode] = 1e-6
                    jscale[13 * n + world.n_ode :] = 1.0
                wall = time.perf_counter()
                seg = run_segment(
                    arrays, y, t, t_end, h_next, rtol, atol, max_step, n_samples,
                    int(settings.contact_samples) if callback is not None else 0, auto,
                    int(settings.switch_steps), STIFF_HW, STIFF_STEPS, implicit, jscale,
                    absorb_ends=contacts.ends_in_segment, max_step_free=settings.max_step,
                    max_steps=budget.steps(None if limit is None else limit - stats.steps),
                    carry=carry)
                budget.update(seg.steps, time.perf_counter() - wall)
                carry = seg.carry
                stats.steps += seg.steps
                stats.solver_steps[current] = stats.solver_steps.get(current, 0) + seg.steps
                stats.nfev += seg.nfev
                if seg.status == FAILED:
                    raise IntegrationError(
                        f"the {current} solver failed at t = {seg.t:.9g} s: step size too small")
                _deliver_records(seg, contacts, callback, records, stats)
                t, y = seg.t, seg.y
                if seg.status == PAUSED:
                    # the budget is spent: report, check the limits, go on from the carry
                    if progress is not None:
                        progress(t)
                    _check_steps(settings, stats.steps, t, t_end)
                    continue
                h_next = max(seg.h_next, 1e-15)
                if seg.status == EVENT:
                    stats.events += 1
                    if seg.onset >= 0:
                        # a lone onset: booked from the one pair, no detection of every pair
                        y = contacts.onset(t, y, seg.onset)
                    else:
                        y = contacts.commit(t, y)[1]
                    if callback is not None:
                        callback(t, y, "event")
                    h_next = min(h_next, contacts.first_step_hint())
                    if auto and contacts.n_active == 0:
                        current = "DOP853"
                elif seg.status == COMMIT:
                    y = contacts.commit(t, y)[1]
                    if callback is not None:
                        callback(t, y, "")
                elif seg.status == SWITCH:
                    current = "Radau"
                if progress is not None:
                    progress(t)
                _check_steps(settings, stats.steps, t, t_end)
                continue
        carry = None
        kw: dict[str, Any] = {"rtol": rtol, "atol": atol, "max_step": max_step}
        if h_next is not None:
            kw["first_step"] = min(h_next, t_end - t, max_step)
        if current in IMPLICIT:
            kw["jac"] = world.jacobian_function()
        solver = _solver_class(current)(world.rhs, t, y, t_end, **kw)
        if g_ready is not None:
            g_prev = g_ready  # the watch above found no compiled path; its values hold
        else:
            g_prev = contacts.watch(t, y) if contacts is not None else None
        in_contact_steps = 0
        stiff_steps = 0
        switch = False
        while True:
            msg = solver.step()
            if solver.status == "failed":
                raise IntegrationError(
                    f"the {current} solver failed at t = {solver.t:.9g} s: {msg}"
                )
            stats.steps += 1
            stats.solver_steps[current] = stats.solver_steps.get(current, 0) + 1
            t_old, t_new = solver.t_old, solver.t
            h_next = max(float(getattr(solver, "h_abs", 0.0) or (t_new - t_old)), 1e-15)
            if not np.all(np.isfinite(solver.y)):
                raise IntegrationError(f"the state became non-finite at t = {t_new:.9g} s")
            restart = False
            if contacts is None:
                t, y = t_new, solver.y.copy()
                if callback is not None:
                    callback(t, y, "")
            else:
                sol = solver.dense_output()
                # the step's end state as it will be committed: the event functions there and
                # the commit share one detection
                y_end = normalise(solver.y.copy())
                event_t, g_end = _first_event(contacts, sol, y_end, t_old, t_new, g_prev,
                                              n_samples)
                if callback is not None and settings.contact_samples and contacts.n_active:
                    # extra records inside a contact step, from the dense output (smooth
                    # force-indentation loops); the contact set is the step's
                    t_stop = t_new if event_t is None else event_t
                    k = int(settings.contact_samples)
                    for j in range(1, k + 1):
                        ts = t_old + (t_stop - t_old) * j / (k + 1)
                        callback(ts, normalise(np.array(sol(ts), dtype=float)), "sample")
                if event_t is not None:
                    t = event_t
                    y = normalise(np.array(sol(t), dtype=float))
                    stats.events += 1
                    y = contacts.commit(t, y)[1]
                    if callback is not None:
                        callback(t, y, "event")
                    restart = True
                    h_next = min(h_next, contacts.first_step_hint())
                    if auto and contacts.n_active == 0:
                        current = "DOP853"
                else:
                    t = t_new
                    changed, y = contacts.commit(t, y_end, quick=True, values=g_end)
                    if callback is not None:
                        callback(t, y, "")
                    restart = changed
                    if not changed:
                        g_prev = g_end
                    if auto and current != "Radau" and contacts.n_active > 0:
                        # stiffness detection: the explicit step has outgrown the contact's
                        # time scale, so stability rather than accuracy limits it
                        in_contact_steps += 1
                        hw = (t_new - t_old) * contacts.stiffness_rate(y)
                        stiff_steps = stiff_steps + 1 if hw > STIFF_HW else 0
                        if (stiff_steps >= STIFF_STEPS
                                or in_contact_steps >= settings.switch_steps):
                            current = "Radau"
                            switch = True
            if progress is not None:
                progress(t)
            _check_steps(settings, stats.steps, t, t_end)
            if restart or switch or solver.status == "finished":
                break
        stats.nfev += solver.nfev
    stats.wall_time = time.perf_counter() - wall0
    stats.t_end = t
    return y, stats


def integrate(
    world: World,
    y0: np.ndarray,
    t0: float,
    t_end: float,
    settings: IntegratorSettings,
    callback: StepCallback | None = None,
    progress: Callable[[float], None] | None = None,
    records: RecordsCallback | None = None,
) -> tuple[np.ndarray, RunStats]:
    """Integrate ``world`` from state ``y0`` (see :meth:`World.pack`) over [t0, t_end];
    ``records``: see :func:`run_adaptive`."""
    if not (math.isfinite(t_end) and t_end > t0):
        raise ParameterError(f"duration must be > 0 s, got t_end - t0 = {t_end - t0:g}")
    if settings.method in FIXED_METHODS:
        return run_fixed(world, y0, t0, t_end, settings, callback, progress)
    return run_adaptive(world, y0, t0, t_end, settings, callback, progress, records)


__all__ = [
    "FIXED_METHODS",
    "METHODS",
    "N_WORK",
    "SOLVERS",
    "IntegratorSettings",
    "RecordsCallback",
    "RunStats",
    "StepCallback",
    "integrate",
    "run_adaptive",
    "run_fixed",
]
