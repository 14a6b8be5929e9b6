"""The impact analyser against closed-form results (Hertz, linear oscillator, HC family, Azad)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import beta

from mbplugin.impact import ImpactBatch, impact
from mbplugin.laws import HUNT_CROSSLEY_FAMILY, get_law_class, make_law


@pytest.mark.parametrize(("m", "k", "v0"), [(1.0, 1e9, 1.0), (0.066, 1e10, 4.47), (2.5, 3e6, 0.01)])
def test_hertz_elastic_impact(m, k, v0):
    """Hertz impact: delta_max = (5 m v0^2/(4k))^(2/5), duration = 2.94328 delta_max/v0, c_r = 1."""
    r = impact(make_law("hertz", k=k), m, v0)
    dmax = (5.0 * m * v0**2 / (4.0 * k)) ** 0.4
    # exact constant: 2 * (2/5) * B(2/5, 1/2) = 2.943279...
    const = 2.0 * 0.4 * beta(0.4, 0.5)
    assert const == pytest.approx(2.94328, abs=1e-5)
    assert r.delta_max == pytest.approx(dmax, rel=1e-8)
    assert r.duration == pytest.approx(const * dmax / v0, rel=1e-7)
    assert abs(r.cr_out - 1.0) < 1e-6
    assert abs(r.cr_poisson - 1.0) < 1e-6
    assert abs(r.cr_stronge - 1.0) < 1e-6
    # peak force at maximum compression, k delta_max^1.5, at half the duration
    assert r.f_max == pytest.approx(k * dmax**1.5, rel=1e-8)
    assert r.t_f_max == pytest.approx(0.5 * r.duration, rel=1e-6)


@pytest.mark.parametrize("cr", [0.2, 0.5, 0.9])
def test_linear_oscillator_with_tension(cr):
    """Kelvin-Voigt with Anagnostopoulos' ratio and tension: exact c_r, half damped period."""
    m, k = 2.0, 4e5
    law = make_law("kelvin_voigt", k=k, cr=cr, allow_tension="yes")
    r = impact(law, m, 0.7)
    xi = -math.log(cr) / math.sqrt(math.pi**2 + math.log(cr) ** 2)
    wd = math.sqrt(k / m) * math.sqrt(1.0 - xi**2)
    assert r.cr_out == pytest.approx(cr, abs=1e-8)
    assert r.duration == pytest.approx(math.pi / wd, rel=1e-8)


def test_kelvin_voigt_clipped_goyal_relation():
    """Clipped linear spring-dashpot (contact ends when F = 0): Goyal's relation with factor 2.

    c_r = exp(-(2 zeta / sqrt(1 - zeta^2)) atan(sqrt(1 - zeta^2)/zeta)) (review Sect. 5.2, with the
    physically consistent factor 2; spec review-corral2021.md Sect. 3.3).
    """
    m, k = 1.0, 1e6
    for zeta in (0.05, 0.3, 0.7):
        c = 2.0 * zeta * math.sqrt(k * m)
        r = impact(make_law("kelvin_voigt", k=k, c=c), m, 1.0)
        s = math.sqrt(1.0 - zeta**2)
        expected = math.exp(-(2.0 * zeta / s) * math.atan(s / zeta))
        assert r.cr_out == pytest.approx(expected, abs=1e-8)


def _hc_relation(chi: float) -> float:
    """Solve chi - ln(1+chi) = -chi c - ln(1 - chi c) for c (review Eq. 5.23 in chi = d/c_r)."""
    lhs = chi - math.log1p(chi)
    return brentq(lambda c: -chi * c - math.log1p(-chi * c) - lhs, 0.0,
                  min(1.0, (1 - 1e-15) / chi), xtol=1e-15)


@pytest.mark.parametrize("name", HUNT_CROSSLEY_FAMILY)
def test_hc_family_cr_invariance_and_exact_relation(name):
    """Output c_r of every HC-family law is independent of mass, stiffness, exponent and impact
    speed (within 1e-6) and equals the exact relation for its chi(c_r)."""
    cls = get_law_class(name)
    rng = np.random.default_rng(7)
    batch = ImpactBatch()
    crs = (0.2, 0.5, 0.8)
    n_each = 12
    for cr in crs:
        k = 10 ** rng.uniform(4, 11, n_each)
        n = rng.uniform(1.0, 2.5, n_each)
        mass = 10 ** rng.uniform(-2, 2, n_each)
        v0 = 10 ** rng.uniform(-1.5, 1.5, n_each)
        batch.add(cls(k=k, n=n, cr=cr), mass=mass, v0=v0)
    res = batch.run()
    out = res["cr_out"].reshape(len(crs), n_each)
    for i, cr in enumerate(crs):
        expected = _hc_relation(float(cls.chi(cr)))
        assert np.ptp(out[i]) < 1e-6
        assert np.max(np.abs(out[i] - expected)) < 1e-6


@pytest.mark.parametrize("name", HUNT_CROSSLEY_FAMILY)
def test_hc_family_never_tensile(name):
    """The raw force stays >= 0 through the contact and vanishes only as delta returns to 0."""
    law = make_law(name, k=1e8, cr=0.3)
    r = impact(law, 1.0, 1.0, record=True)
    s = r.series
    coef = law.coefficients(np.full(len(s.t), 1.0), np.ones(len(s.t)), np.full(len(s.t), np.nan))
    raw = law.force_raw(s.delta, s.ddelta, coef, np.zeros((len(s.t), 0)))
    assert raw.min() >= -1e-9 * r.f_max
    assert abs(r.delta_residual) < 1e-9 * r.delta_max


@pytest.mark.parametrize("alpha", [0.3, 2.0, 10.0])
def test_azad_featherstone_scaling(alpha):
    """Azad & Featherstone (2014): (alpha^-2.5 k, alpha^-1.5 lam) -> same c_r, alpha x duration."""
    base = impact(make_law("azad_featherstone", k=1e10, lam=1e5), 0.066, 4.47)
    scaled = impact(make_law("azad_featherstone", k=1e10 * alpha**-2.5, lam=1e5 * alpha**-1.5),
                    0.066, 4.47)
    assert scaled.cr_out == pytest.approx(base.cr_out, abs=1e-9)
    assert scaled.duration == pytest.approx(alpha * base.duration, rel=1e-8)


def test_azad_featherstone_cr_falls_with_speed_linear_model_constant():
    """Azad & Featherstone (2014): c_r decreases with impact speed; a linear spring-damper's
    c_r is independent of it."""
    speeds = np.geomspace(0.05, 5.0, 6)
    af = [impact(make_law("azad_featherstone", k=1e10, lam=1e5), 0.066, v).cr_out for v in speeds]
    assert np.all(np.diff(af) < 0)
    kv = [impact(make_law("kelvin_voigt", k=1e7, c=50.0), 0.066, v).cr_out for v in speeds]
    assert np.ptp(kv) < 1e-8


def test_poisson_stronge_newton_coincide_without_external_force():
    """For a frictionless central impact the three c_r definitions coincide (review Sect. 2)."""
    for name in ("hunt_crossley", "flores", "zhang2022"):
        r = impact(make_law(name, k=1e9, cr=0.4), 1.0, 1.0)
        assert r.cr_poisson == pytest.approx(r.cr_out, abs=1e-7)
        assert r.cr_stronge == pytest.approx(r.cr_out, abs=1e-7)


def test_energy_balance():
    """Energy absorbed by the contact = kinetic energy lost: m v0^2 (1 - c_r^2) / 2."""
    m, v0 = 1.3, 0.8
    for name in ("hunt_crossley", "lankarani_nikravesh", "gonthier"):
        r = impact(make_law(name, k=2e9, cr=0.6), m, v0)
        assert r.energy_dissipated == pytest.approx(0.5 * m * v0**2 * (1 - r.cr_out**2), rel=1e-8)


def test_two_free_bodies_use_effective_mass():
    """m1 m2/(m1 + m2): two free bodies behave like the effective mass on a wall."""
    law = make_law("hunt_crossley", k=1e9, cr=0.7)
    a = impact(law, 2.0, 1.0, mass2=2.0)
    b = impact(law, 1.0, 1.0)
    assert a.duration == pytest.approx(b.duration, rel=1e-10)
    assert a.f_max == pytest.approx(b.f_max, rel=1e-10)


def test_constant_press_capture_and_static_overlap():
    """A large pressing force keeps a Hunt-Crossley contact closed: captured, c_r = 0, and the
    indentation settles at the static value (press/k)^(1/n)."""
    k, press = 1e6, 50.0
    r = impact(make_law("hunt_crossley", k=k, cr=0.2), 1.0, 0.01, press=press, t_max=2.0)
    assert r.captured and r.cr_out == 0.0 and math.isinf(r.duration)
    assert r.delta_residual == pytest.approx((press / k) ** (1 / 1.5), rel=1e-4)


def test_reference_and_compiled_paths_agree():
    """The SciPy reference path (DOP853 with a Python right-hand side) and the compiled path
    solve the same equations: results agree to integration tolerance."""
    for name, params in (("hunt_crossley", {"k": 1e9, "cr": 0.5}),
                         ("bouc_wen_maxwell", {"k": 1e6, "c": 1e3, "beta": 1e4, "gamma": -5e3,
                                               "n": 1.5})):
        law = make_law(name, **params)
        a = impact(law, 0.4, 2.0, method="compiled")
        b = impact(law, 0.4, 2.0, method="reference")
        assert a.cr_out == pytest.approx(b.cr_out, abs=1e-7)
        assert a.duration == pytest.approx(b.duration, rel=1e-7)
        assert a.f_max == pytest.approx(b.f_max, rel=1e-7)
