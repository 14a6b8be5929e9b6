"""Pins: properties that bugs planted in a copy of the code once passed the suite with.

* fit row weights: a row of weight w fits exactly as that row repeated w times (least squares:
  the cost is sum w_i r_i^2), on inconsistent data (no parameter fits every row);
* energy with friction: a sliding ball's energy balance closes and its dissipated energy never
  decreases; it ends at the closed form m v0^2 / 7 (rolling at 5/7 v0);
* the compiled DOP853 takes SciPy's DOP853 steps (Hairer, Norsett & Wanner, Sect. II.10 and
  SciPy's step control), not only steps of the same accuracy;
* the Bouc-Wen laws are odd: zeta'(-z, -u) = -zeta'(z, u) (Milehins & Marghitu 2026, Eqs. 38,
  46-47: the paper's x = -delta convention is the project's through that symmetry);
* the general Delassus assembly against Newton-Euler by hand for one body shared by two
  contacts.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbplugin.identify import fit_law, impact_data
from mbplugin.impact import _compiled as cc
from mbplugin.impact import impact
from mbplugin.laws import bouc_wen as bw
from mbplugin.laws import make_law
from mbplugin.pipeline.delassus import free_body_delassus
from mbplugin.scene import build_scene


# --------------------------------------------------------------------------------------------------
# fit: row weights
# --------------------------------------------------------------------------------------------------
def test_a_row_of_weight_w_fits_as_the_row_repeated_w_times() -> None:
    # c_r measured at three speeds, inconsistent with any single Flores c_r (its c_r out does
    # not depend on speed): the fit is a weighted mean, moved by the weights
    v = np.array([0.5, 1.0, 2.0])
    cr = np.array([0.55, 0.70, 0.62])
    w = np.array([3.0, 1.0, 2.0])
    weighted = impact_data({"v0": v, "cr": cr, "weight": w}, meta={"mass": "1.0"})
    rep = np.repeat(np.arange(3), w.astype(int))
    repeated = impact_data({"v0": v[rep], "cr": cr[rep]}, meta={"mass": "1.0"})
    start = {"k": 1e9, "cr": 0.6}
    a = fit_law("flores", weighted, ["cr"], start=start)
    b = fit_law("flores", repeated, ["cr"], start=start)
    assert a.values["cr"] == pytest.approx(b.values["cr"], rel=1e-9)
    assert a.cost == pytest.approx(b.cost, rel=1e-9)
    # and not the unweighted fit: the weights matter on these data
    c = fit_law("flores", impact_data({"v0": v, "cr": cr}, meta={"mass": "1.0"}), ["cr"],
                start=start)
    assert abs(c.values["cr"] - a.values["cr"]) > 1e-3


# --------------------------------------------------------------------------------------------------
# energy with friction
# --------------------------------------------------------------------------------------------------
def test_sliding_ball_energy_balance_closes_and_dissipation_only_grows() -> None:
    """A sphere launched sliding without spin: friction dissipates until it rolls at 5/7 v0,
    so (kinetic energy 1/2 m v^2 (1 + 2/5) at v = 5/7 v0) it loses m v0^2 / 7."""
    v0, mu, r, m, g = 1.0, 0.3, 0.02, 0.1, 9.81
    t_slide = 2.0 * v0 / (7.0 * mu * g)
    doc = {
        "scene": {"duration": t_slide + 0.05},
        "integrator": {"method": "adaptive", "rtol": 1e-9},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": r, "mass": m,
             "position": [0.0, 0.0, r], "velocity": [v0, 0.0, 0.0]},
        ],
        "contact": {"law": "hunt_crossley", "params": {"k": 1e9, "cr": 0.3},
                    "friction": {"mu": mu, "v_eps": 1e-4}},
    }
    res = build_scene(doc).run()
    e = res.energy
    assert res.energy_drift <= 1e-6
    diss = e["dissipated"]
    scale = res.energy_scale
    # never decreases, to the accuracy the balance closes to (the integration's rounding)
    assert np.all(np.diff(diss) >= -1e-6 * scale), float(np.min(np.diff(diss)))
    assert diss[-1] == pytest.approx(m * v0**2 / 7.0, rel=2e-3)


# --------------------------------------------------------------------------------------------------
# the compiled DOP853 steps as SciPy's does
# --------------------------------------------------------------------------------------------------
def test_compiled_dop853_takes_scipys_steps() -> None:
    """The impact analyser's compiled loop against ``solve_ivp(method="DOP853")`` on the same
    problem (a Hunt-Crossley impact, m delta'' = -F(delta, delta'), with the impulse and work
    integrals), the same tolerances, first step and step limit: the same accepted steps up to
    the first event (maximum compression, where the compiled loop restarts)."""
    law = make_law("hunt_crossley", k=1e9, n=1.5, cr=0.5)
    m, v0, rtol = 1.0, 1.0, 1e-8
    tc = float(law.timescale(np.array([m]), np.array([v0]))[0])
    r = impact(law, m, v0, rtol=rtol, record=True)
    t_rec = r.series.t
    # samples: t = 0, then N_SAMPLES_RECORD per accepted step (the last at the step's end),
    # up to the event sample; the compiled steps' ends before the event:
    k = cc.N_SAMPLES_RECORD
    t_m = r.t_max_compression
    ends = t_rec[k::k]
    ends = ends[ends < t_m]
    assert len(ends) >= 10
    coef = law.coefficients(np.array([v0]), np.array([m]), np.array([np.inf]))
    state = np.zeros((1, 0))

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        f = float(law.force_raw(np.array([y[0]]), np.array([y[1]]), coef, state)[0])
        f = max(f, 0.0)
        return np.array([y[1], -f / m, f, f * y[1]])

    atol = 1e-2 * rtol * np.array([v0 * tc, v0, m * v0, m * v0 * v0])
    sol = solve_ivp(rhs, (0.0, 2 * t_m), np.array([0.0, v0, 0.0, 0.0]), method="DOP853",
                    rtol=rtol, atol=atol, first_step=1e-4 * tc, max_step=0.25 * tc)
    scipy_ends = sol.t[1 : len(ends) + 1]
    assert len(scipy_ends) == len(ends)
    # the same steps: the right-hand sides agree to rounding, not to the bit, and the error
    # estimate (a difference of two solutions) amplifies that to ~2e-9 of the step; another
    # step control (safety factor, exponent, error norm) moves the steps by percents
    assert np.allclose(ends, scipy_ends, rtol=1e-7, atol=0.0)
    # ... and SciPy's next step also lies beyond the event, as the compiled step did
    assert sol.t[len(ends) + 1] > t_m


# --------------------------------------------------------------------------------------------------
# Bouc-Wen: odd in (delta, state, rate)
# --------------------------------------------------------------------------------------------------
def _bw_coef(k: float = 2e5, p: float = 1.5, alpha: float = 0.4, c: float = 30.0,
             a: float = 1.3, beta: float = 2e3, gamma: float = -7e2, n: float = 1.7) -> tuple:
    """A coefficient row [k, p, alpha, c, A, beta, gamma, n] (the module's layout)."""
    return (k, p, alpha, c, a, beta, gamma, n)


def test_bouc_wen_rates_are_odd() -> None:
    rng = np.random.default_rng(11)
    c = _bw_coef()
    for _ in range(200):
        d, v, z, rho = rng.normal(scale=1e-3), rng.normal(), rng.normal(scale=1e-3), \
            rng.normal(scale=1e-4)
        s = (z, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ms = (-z, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        # Hunt-Crossley variant: zeta'(-z, -u) = -zeta'(z, u), and the force is odd
        assert bw.hc_rate(-d, -v, c, ms)[0] == -bw.hc_rate(d, v, c, s)[0]
        assert bw.hc_force(-d, -v, c, ms) == -bw.hc_force(d, v, c, s)
        # Maxwell variant: (rho', zeta') odd in (delta, rho, zeta, ddelta)
        s2 = (rho, z, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ms2 = (-rho, -z, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        a, b = bw.maxwell_rate(d, v, c, s2), bw.maxwell_rate(-d, -v, c, ms2)
        assert b[0] == -a[0] and b[1] == -a[1]
    # the vectorised law API agrees (the same kernels)
    law = make_law("bouc_wen_hunt_crossley", k=2e5, alpha=0.4, c=30.0, A=1.3, beta=2e3,
                   gamma=-7e2, n=1.7)
    d = rng.normal(scale=1e-3, size=50)
    v = rng.normal(size=50)
    z = rng.normal(scale=1e-3, size=(50, 1))
    coef = law.coefficients(np.ones(50), np.ones(50), np.full(50, np.inf))
    r1 = law.state_rate(d, v, coef, np.ascontiguousarray(z))
    r2 = law.state_rate(-d, -v, coef, np.ascontiguousarray(-z))
    assert np.array_equal(r2, -r1)
    # and the rate is not trivially odd: beta and gamma act (|zeta|^n terms)
    lin = 1.3 * v
    assert np.max(np.abs(r1[:, 0] - lin)) > 1e-6 * np.max(np.abs(lin))


# --------------------------------------------------------------------------------------------------
# Delassus: one body shared by two contacts
# --------------------------------------------------------------------------------------------------
def _point_acceleration(inv_m: float, inv_i: np.ndarray, r_at: np.ndarray, r_f: np.ndarray,
                        f: np.ndarray) -> np.ndarray:
    """Newton-Euler: acceleration of the point at r_at (from the centre of mass) of a free
    body at rest under a force f at r_f: f/m + (I^-1 (r_f x f)) x r_at."""
    return inv_m * f + np.cross(inv_i @ np.cross(r_f, f), r_at)


def test_general_delassus_with_a_shared_body_is_newton_euler() -> None:
    """Contact 0: body 0 (side b) on the static world; contact 1: body 1 (side b) on body 0
    (side a). W_ij e_k is the relative acceleration at contact i (b minus a) under a unit
    force e_k of contact j (on its b side, minus it on its a side)."""
    rng = np.random.default_rng(5)
    inv_m = np.array([1 / 0.7, 1 / 0.3])
    a = rng.normal(size=(2, 3, 3))
    inv_i = a @ a.transpose(0, 2, 1) + 0.1 * np.eye(3)
    r0 = np.array([0.01, -0.02, -0.03])          # contact 0 on body 0
    r1a = np.array([0.02, 0.01, 0.03])           # contact 1 on body 0
    r1b = np.array([-0.01, 0.0, -0.02])          # contact 1 on body 1
    W = free_body_delassus(
        2, contact=np.array([0, 1, 1]), sign=np.array([1.0, -1.0, 1.0]),
        obj=np.array([0, 0, 1]), r=np.array([r0, r1a, r1b]), inv_mass=inv_m,
        inv_inertia_world=inv_i).toarray()
    expected = np.zeros((6, 6))
    for k in range(3):
        e = np.eye(3)[k]
        # force of contact 0: +e on body 0 at r0
        expected[0:3, k] = _point_acceleration(inv_m[0], inv_i[0], r0, r0, e)
        expected[3:6, k] = -_point_acceleration(inv_m[0], inv_i[0], r1a, r0, e)
        # force of contact 1: +e on body 1 at r1b, -e on body 0 at r1a
        expected[0:3, 3 + k] = _point_acceleration(inv_m[0], inv_i[0], r0, r1a, -e)
        expected[3:6, 3 + k] = (_point_acceleration(inv_m[1], inv_i[1], r1b, r1b, e)
                                - _point_acceleration(inv_m[0], inv_i[0], r1a, r1a, -e))
    assert np.allclose(W, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    # the coupling is there (not a block-diagonal W) and W is symmetric (reciprocity)
    assert np.abs(W[0:3, 3:6]).max() > 0.1 * np.abs(W).max()
    assert np.allclose(W, W.T, rtol=0, atol=1e-12 * np.abs(W).max())
    # positive semi-definite: f^T W f is twice the kinetic energy rate the forces give
    assert np.linalg.eigvalsh(W).min() >= -1e-12 * np.abs(W).max()
