"""Reference impact integrator: SciPy ``solve_ivp`` (DOP853) with a Python right-hand side.

Used where the compiled path cannot go: a time-dependent external force given as a Python
callable, and third-party laws without a compiled kernel; also a cross-check of the compiled
path in the tests. It follows the same event rules as :mod:`mbplugin.impact._compiled` (restart
at maximum compression with a memory update; contact end by Eq. 17 of Milehins & Marghitu 2026).
One difference: SciPy gives no hook after each accepted step, so a law's memory is updated only
at maximum compression here (the compiled path also updates it after every step); the two agree
for laws whose memory changes only while loading, such as a plastic law's maximum indentation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import minimize_scalar

from mbplugin.errors import IntegrationError
from mbplugin.laws.base import MODE_TENSION, Law
from mbplugin.pipeline import events, rules

N_SAMPLES = 8


def impact_reference(
    law: Law,
    coef: np.ndarray,
    s_init: np.ndarray,
    m: float,
    v0: float,
    press: float,
    force_ext: Callable[[float], float] | None,
    tc: float,
    t_max: float,
    rtol: float,
    state_scale: np.ndarray,
    record: bool,
) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Integrate one impact with SciPy; returns (raw results, final state, samples)."""
    n_ode = law.n_state
    n_mem = law.n_memory
    mode = law.contact_mode
    state = np.array(s_init, dtype=float).reshape(1, -1).copy()
    c1 = np.atleast_2d(coef)
    xscale = v0 * tc
    fscale = m * v0 / tc

    def raw_force(y: np.ndarray) -> float:
        if n_ode:
            state[0, :n_ode] = y[2 : 2 + n_ode]
        f = law.force_raw(np.array([y[0]]), np.array([y[1]]), c1, state)[0]
        return f

    def applied(y: np.ndarray) -> float:
        return float(rules.applied(mode, raw_force(y)))

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        f = applied(y)
        dy = np.empty_like(y)
        dy[0] = y[1]
        ext = press + (force_ext(t) if force_ext is not None else 0.0)
        dy[1] = (ext - f) / m
        if n_ode:
            state[0, :n_ode] = y[2 : 2 + n_ode]
            dy[2 : 2 + n_ode] = law.state_rate(
                np.array([y[0]]), np.array([y[1]]), c1, state
            )[0]
        dy[2 + n_ode] = f
        dy[3 + n_ode] = f * y[1]
        return dy

    # the single contact's event values: class ACTIVE_MEMORY of events.event_value
    def ev_compression(t: float, y: np.ndarray) -> float:
        return float(events.event_value(events.ACTIVE_MEMORY, events.S_EXTREMUM, float(y[0]),
                                        float(y[1]), np.nan, mode, 0.0, 1.0, 1.0, 1.0))

    ev_compression.terminal = True  # type: ignore[attr-defined]
    ev_compression.direction = -1  # type: ignore[attr-defined]

    def ev_separation(t: float, y: np.ndarray) -> float:
        f = 0.0 if mode == MODE_TENSION else float(raw_force(y))
        return float(events.event_value(events.ACTIVE_MEMORY, events.S_RULE, float(y[0]),
                                        float(y[1]), f, mode, 0.0, xscale, fscale, v0))

    ev_separation.terminal = True  # type: ignore[attr-defined]
    ev_separation.direction = -1  # type: ignore[attr-defined]

    y = np.zeros(4 + n_ode)
    y[1] = v0
    y[2 : 2 + n_ode] = s_init[:n_ode]
    t = 0.0
    out = {"status": 1.0, "tm": np.nan, "pc": 0.0, "wc": 0.0, "steps": 0.0, "nfev": 0.0}
    fmax, tfmax, dmax = 0.0, 0.0, 0.0
    samples: list[np.ndarray] = []
    atol = 1e-2 * rtol * np.concatenate(
        ([xscale, v0], state_scale[:n_ode], [m * v0, m * v0 * v0])
    )
    first = True
    while True:
        sol = solve_ivp(
            rhs, (t, t_max), y, method="DOP853", rtol=rtol, atol=atol,
            events=[ev_compression, ev_separation], dense_output=True,
            first_step=1e-4 * tc if first else None, max_step=0.25 * tc,
        )
        first = False
        out["steps"] += len(sol.t) - 1
        out["nfev"] += sol.nfev
        if sol.status == -1:
            raise IntegrationError(f"reference integrator failed: {sol.message}")
        ts = sol.t
        # dense samples for the peak force and the recorded series
        if len(ts) > 1:
            frac = np.arange(N_SAMPLES) / N_SAMPLES
            grid = (ts[:-1, None] + np.diff(ts)[:, None] * frac).ravel()
            grid = np.append(grid, ts[-1])
        else:
            grid = ts.copy()
        ys = sol.sol(grid)
        fs = np.array([applied(ys[:, j]) for j in range(ys.shape[1])])
        j = int(np.argmax(fs))
        if fs[j] > fmax:
            lo = grid[max(j - 1, 0)]
            hi = grid[min(j + 1, len(grid) - 1)]
            if hi > lo:
                dense = sol.sol
                r = minimize_scalar(
                    lambda tt, dense=dense: -applied(dense(tt)), bounds=(lo, hi),
                    method="bounded", options={"xatol": 1e-13 * max(hi, tc)},
                )
                if -r.fun > fs[j]:
                    fmax, tfmax = float(-r.fun), float(r.x)
                else:
                    fmax, tfmax = float(fs[j]), float(grid[j])
            else:
                fmax, tfmax = float(fs[j]), float(grid[j])
        dmax = max(dmax, float(np.max(ys[0])))
        if record:
            samples.append(np.column_stack([grid, ys[0], ys[1], fs,
                                            ys[2 : 2 + n_ode].T]))
        y = sol.y[:, -1].copy()
        t = float(sol.t[-1])
        if sol.status == 1 and len(sol.t_events[1]):
            out["status"] = 0.0
            break
        if sol.status == 1 and len(sol.t_events[0]):
            if np.isnan(out["tm"]):
                out["tm"] = t
                out["pc"] = float(y[2 + n_ode])
                out["wc"] = float(y[3 + n_ode])
            if n_mem:
                state[0, :n_ode] = y[2 : 2 + n_ode]
                law.update_memory(np.array([y[0]]), np.array([y[1]]), c1,
                                  state)
            # restart just past the event: ddelta strictly negative so that SciPy does not take
            # the restart point for another downward crossing of ddelta = 0
            y[1] = min(y[1], -1e-14 * v0)
            continue
        out["status"] = 1.0  # reached the cut-off
        break
    out.update(
        ts=t, vs=y[1], ds=float(y[0]), fmax=fmax, tfmax=tfmax, dmax=dmax,
        pt=float(y[2 + n_ode]), wt=float(y[3 + n_ode]),
    )
    state[0, :n_ode] = y[2 : 2 + n_ode]
    rec = np.vstack(samples) if samples else np.empty((0, 4 + n_ode))
    return out, state[0].copy(), rec
