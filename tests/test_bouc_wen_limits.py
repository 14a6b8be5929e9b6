"""Bouc-Wen collision laws (Milehins & Marghitu 2026) against their closed-form limits.

With m = k = v0 = 1 and A = 1 the dimensional and nondimensional parameters coincide
(spec/bouc-wen-collision-laws.md, section 9): beta = B, gamma = Gamma, alpha = kappa, and
c = sigma for the Hunt-Crossley variant, c = 1/sigma for the Maxwell variant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import beta as beta_fn

from mbplugin.impact import impact
from mbplugin.laws import make_law


def _elastic_ts(p: float) -> float:
    return 2.0 * ((p + 1) / 2) ** (1 / (p + 1)) * beta_fn(1 / (p + 1), 0.5) / (p + 1)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.5])
@pytest.mark.parametrize("alpha", [0.2, 0.7])
def test_elastic_limit_hunt_crossley_variant(p, alpha):
    """B = Gamma = 0, sigma = 0: e = 1, T_s from the Beta function, X_max = ((p+1)/2)^(1/(p+1))."""
    r = impact(make_law("bouc_wen_hunt_crossley", k=1.0, p=p, alpha=alpha, c=0.0), 1.0, 1.0)
    assert abs(r.cr_out - 1.0) < 1e-6
    assert r.duration == pytest.approx(_elastic_ts(p), rel=1e-6)
    assert r.delta_max == pytest.approx(((p + 1) / 2) ** (1 / (p + 1)), rel=1e-8)
    if p == 1.0:
        assert r.duration == pytest.approx(math.pi, rel=1e-6)


@pytest.mark.parametrize("p", [1.0, 1.5])
def test_elastic_limit_maxwell_variant(p):
    """sigma -> 0+ (a rigid dashpot, c -> inf): the Maxwell variant becomes elastic."""
    r = impact(make_law("bouc_wen_maxwell", k=1.0, p=p, alpha=0.4, c=1e9), 1.0, 1.0)
    assert abs(r.cr_out - 1.0) < 1e-6
    assert r.duration == pytest.approx(_elastic_ts(p), rel=1e-6)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.0])
@pytest.mark.parametrize("p", [1.0, 1.5, 2.0])
def test_hunt_crossley_limit(sigma, p):
    """B = Gamma = 0, sigma > 0: e solves sigma - ln(1+sigma) = -e sigma - ln(1 - e sigma),
    whatever p and kappa."""
    lhs = sigma - math.log1p(sigma)
    e_exact = brentq(lambda e: -e * sigma - math.log1p(-e * sigma) - lhs, 0.0,
                     min(1.0, (1 - 1e-15) / sigma), xtol=1e-15)
    r = impact(make_law("bouc_wen_hunt_crossley", k=1.0, p=p, alpha=0.6, c=sigma), 1.0, 1.0)
    assert r.cr_out == pytest.approx(e_exact, abs=1e-6)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.9])
def test_linear_maxwell_limit(sigma):
    """p = 1, B = Gamma = 0: Y'' + sigma Y' + Y = 0, e = exp(-sigma pi/(2 w_d)), T_s = pi/w_d."""
    r = impact(make_law("bouc_wen_maxwell", k=1.0, p=1.0, alpha=0.3, c=1.0 / sigma), 1.0, 1.0)
    wd = math.sqrt(1.0 - sigma**2 / 4.0)
    assert r.cr_out == pytest.approx(math.exp(-sigma * math.pi / (2 * wd)), abs=1e-6)
    assert r.duration == pytest.approx(math.pi / wd, rel=1e-6)


@pytest.mark.parametrize("sigma", [2.0, 3.0])
def test_linear_maxwell_no_rebound_when_overdamped(sigma):
    """sigma >= 2: the bodies never separate with a positive speed (e = 0)."""
    r = impact(make_law("bouc_wen_maxwell", k=1.0, p=1.0, alpha=0.3, c=1.0 / sigma), 1.0, 1.0,
               t_max=400.0)
    assert r.cr_out < 1e-9


TABLE2 = {"k": 1e6, "p": 1.5, "alpha": 0.5, "beta": 1e4, "gamma": -5e3, "A": 1.0, "n": 1.5}


@pytest.mark.parametrize("press", [0.0, 3.85, 40.0])
def test_maxwell_invariant(press):
    """m ddelta + c rho = m v0 + int press dt (dimensional form of d(R + sigma V)/dT = sigma U),
    with the Sect. 6 parameters (Table 2) and a constant pressing force."""
    m, v0, c = 0.392699, 2.0, 1e3
    r = impact(make_law("bouc_wen_maxwell", c=c, **TABLE2), m, v0, press=press)
    ddelta_end = -r.cr_out * v0
    rho_end = r.state_end[0]
    assert m * ddelta_end + c * rho_end == pytest.approx(m * v0 + press * r.duration, rel=1e-6)


def test_hunt_crossley_variant_energy_never_increases():
    """Without external force the Lyapunov energy
    W = m v^2/2 + alpha k |delta|^(p+1)/(p+1) + (1-alpha) k |zeta|^(p+1)/(A (p+1))
    never increases (Table 4 baseball parameters, |gamma| <= beta)."""
    par = {"k": 117080063.0, "c": 5854003.0, "n": 1.1, "p": 1.7, "alpha": 0.1, "beta": 981.05,
           "gamma": -961.4, "A": 0.925}
    m = 0.145
    r = impact(make_law("bouc_wen_hunt_crossley", **par), m, 3.0, record=True)
    s = r.series
    p, a, A, k = par["p"], par["alpha"], par["A"], par["k"]
    w = (0.5 * m * s.ddelta**2 + a * k * np.abs(s.delta) ** (p + 1) / (p + 1)
         + (1 - a) * k * np.abs(s.state[:, 0]) ** (p + 1) / (A * (p + 1)))
    assert np.all(np.diff(w) <= 1e-9 * w[0])
    assert w[-1] < w[0]
    assert r.delta_residual > 0.0  # a hysteretic law separates with a residual overlap


def test_bouc_wen_first_loading_closed_form():
    """n = 1, B + Gamma > 0: on first loading zeta = (1 - exp(-(beta+gamma) A delta))/(beta+gamma)
    for A = 1 (the classical Bouc-Wen solution), bounded by 1/(beta + gamma)."""
    b, g = 3.0, 1.0
    law = make_law("bouc_wen_hunt_crossley", k=1.0, p=1.5, alpha=0.5, c=0.0, beta=b, gamma=g)
    r = impact(law, 1.0, 1.0, record=True)
    s = r.series
    load = (s.ddelta > 0) & (s.t < r.t_max_compression)
    zeta = s.state[load, 0]
    expected = (1.0 - np.exp(-(b + g) * s.delta[load])) / (b + g)
    assert np.max(np.abs(zeta - expected)) < 1e-9
    assert np.all(s.state[:, 0] < 1.0 / (b + g))
