"""``Law.potential``: the stored elastic energy of every law against the integral of its force.

For each law the elastic force is the law's own raw force with the rate set to zero and the
state held where the elastic part is a function of the indentation alone (Bouc-Wen without
hysteresis: zeta = A delta; Xiong: a = delta^n; plastic laws: on the unloading branch latched
at delta_max). The potential's closed form must equal the numerical quadrature of that force,
and an elastic Hertz impact must conserve kinetic + potential energy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from mbplugin.impact import impact
from mbplugin.laws import MODE_CLIP, Law, get_law_class, law_names, make_law

K = 2e9
#: Parameters that make every registered law constructible (k is the spring where there is one).
PARAMS = {
    "alizadeh": {"k": K, "lam": 1e3, "nl": 0.7},
    "anagnostopoulos": {"k": 1e7, "cr": 0.5},
    "azad_featherstone": {"k": K, "lam": 1e5},
    "bordbar_hyppanen": {"k": K, "chi": 1e5},
    "bouc_wen_hunt_crossley": {"k": K, "A": 1.7, "c": 1e5},
    "bouc_wen_maxwell": {"k": K, "c": 1e4, "A": 0.8},
    "brilliantov1996": {"k": K, "E": 1e9, "nu": 0.3, "eta": 1.0, "zeta": 2.0},
    "brilliantov2015": {"k": K, "E": 1e9, "nu": 0.3, "eta": 1.0, "zeta": 2.0},
    "choi": {"k": K, "D": 1e5, "rc": 0.1},
    "falcon": {"k": K, "chi": 1e5, "gamma": 0.25},
    "goldsmith": {"k": K, "cr": 0.6, "n": 1.4},
    "goyal": {"k": 1e7, "cr": 0.5},
    "hooke": {"k": 1e7},
    "hertz": {"k": K, "n": 1.4},
    "hunt_crossley_general": {"k": K, "lam": 1e6, "m": 1.2, "q": 0.8},
    "jankowski": {"k": K, "cr": 0.5},
    "jian": {"G_e": 1e8, "G0": 5e7, "eta": 10.0, "nu": 0.3, "radius": 0.01},
    "kelvin_voigt": {"k": 1e7, "c": 300.0},
    "kuwabara_kono": {"k": K, "eta1": 100.0, "zeta1": 50.0},
    "ristow": {"k": K, "chi": 1e3},
    "schafer": {"k": K, "chi": 1e3},
    "thornton": {"k": K, "E": 1e11, "delta_y": 2e-6},
    "tsuji": {"k": K, "alpha": 0.3},
    "wang": {"k": K, "kstar": 0.5},
    "xiong": {"k": K, "beta1": 1e-4, "beta2": 10.0, "gamma": 1e4},
    "yigit": {"k": K, "delta_y": 2e-6},
    "zhang2022": {"k": K, "cr": 0.7, "m": 1.2, "q": 1.1, "power": "complex"},
    "zheng": {"k": K, "E": 1e9, "nu": 0.3, "eta": 1.0, "zeta": 2.0},
}
PLASTIC = ("goldsmith", "thornton", "yigit")
#: The package's own laws (other tests register third-party ones in the shared registry).
BUILTIN = tuple(n for n in law_names() if get_law_class(n).__module__.startswith("mbplugin."))
V_IN, M_EFF = 0.9, 0.3
D_MAX = 2e-5  # m


def _law(name: str, **extra) -> Law:
    params = dict(PARAMS.get(name, {"k": K, "cr": 0.6}))
    params.update(extra)
    return make_law(name, **params)


def _onset(law: Law, n: int = 1):
    coef = law.coefficients(np.full(n, V_IN), np.full(n, M_EFF), np.full(n, 0.01))
    return coef, law.initial_state(coef)


def _elastic_state(name: str, law: Law, d: float, state: np.ndarray) -> np.ndarray:
    """The state at which the law's zero-rate force is its elastic force at indentation d."""
    s = state.copy()
    if name == "bouc_wen_hunt_crossley":
        s[:, 0] = law.A * d  # no hysteresis (beta = gamma = 0): zeta' = A delta'
    elif name == "bouc_wen_maxwell":
        s[:, 0], s[:, 1] = 0.0, law.A * d  # dashpot at rest, zeta = A psi
    elif name == "xiong":
        s[:, 0] = math.copysign(abs(d) ** law.n, d)  # a follows q = delta^n
    elif name == "jian":
        s[:, 0] = 3e-4  # any time since onset: the damping vanishes at zero rate
    return s


def _force(law: Law, d: float, coef: np.ndarray, state: np.ndarray) -> float:
    return float(law.force_raw(np.array([d]), np.zeros(1), coef, state)[0])


def test_every_law_has_its_own_potential():
    assert set(PARAMS) <= set(BUILTIN) and len(BUILTIN) >= 42
    for name in BUILTIN:
        assert type(_law(name)).potential is not Law.potential, name


@pytest.mark.parametrize("name", [n for n in BUILTIN if n not in PLASTIC])
def test_potential_is_the_integral_of_the_elastic_force(name):
    """U(delta) = int_0^delta F_el(s) ds at delta in (0, D_MAX] (and at delta < 0 for the laws
    whose force is not clipped; 0 there for the clipped ones), to 1e-9."""
    law = _law(name)
    coef, state0 = _onset(law)
    ds = [D_MAX * f for f in (0.05, 0.4, 1.0)]
    if law.contact_mode != MODE_CLIP:
        ds.append(-0.5 * D_MAX)
    for d in ds:
        u = float(law.potential(np.array([d]), coef, _elastic_state(name, law, d, state0))[0])
        ref = quad(lambda s: _force(law, s, coef, _elastic_state(name, law, s, state0)), 0.0, d,
                   epsabs=0.0, epsrel=1e-12, limit=200)[0]
        assert u == pytest.approx(ref, rel=1e-9), d
        assert u > 0.0
    if law.contact_mode == MODE_CLIP:
        d = -0.5 * D_MAX
        assert float(law.potential(np.array([d]), coef,
                                   _elastic_state(name, law, d, state0))[0]) == 0.0


@pytest.mark.parametrize(("name", "extra"), [
    ("goldsmith", {}),
    ("thornton", {}),
    ("yigit", {}),
    ("yigit", {"variant": "linearised"}),
])
def test_plastic_potential_is_what_unloading_returns(name, extra):
    """Loaded to D_MAX (memory latched), U(delta) = int_{delta_p}^{delta} F(s) ds along the
    unloading branch, 0 below the permanent indentation delta_p; while still loading, U is what
    the branch latched at the current delta would return."""
    law = _law(name, **extra)
    coef, fresh = _onset(law)
    loaded = np.array(fresh, order="C")
    law.update_memory(np.array([D_MAX]), np.zeros(1), coef, loaded)

    def f(s: float) -> float:
        return _force(law, s, coef, loaded)

    dp = 0.0 if f(1e-15 * D_MAX) >= 0 else brentq(f, 0.0, D_MAX, xtol=1e-18, rtol=1e-14)
    assert dp > 0.05 * D_MAX  # plastic: a permanent indentation remains
    for frac in (0.2, 0.6, 1.0):
        d = dp + frac * (D_MAX - dp)
        ref = quad(f, dp, d, epsabs=0.0, epsrel=1e-12, limit=200)[0]
        u = float(law.potential(np.array([d]), coef, loaded)[0])
        assert u == pytest.approx(ref, rel=1e-9)
    assert float(law.potential(np.array([0.5 * dp]), coef, loaded)[0]) == 0.0
    # still loading with a fresh memory: the same energy as the branch latched at D_MAX
    u_loading = float(law.potential(np.array([D_MAX]), coef, fresh)[0])
    assert u_loading == pytest.approx(float(law.potential(np.array([D_MAX]), coef, loaded)[0]),
                                      rel=1e-12)
    # less than the work done on the loading curve: the rest was dissipated
    work = quad(lambda s: _force(law, s, coef, fresh), 0.0, D_MAX, epsrel=1e-10)[0]
    assert u_loading < work


def test_hertz_impact_conserves_kinetic_plus_potential():
    """Elastic Hertz impact: m ddelta^2/2 + U(delta) = m v0^2/2 along the whole contact."""
    m, v0 = 0.0327, 0.8
    law = make_law("hertz", k=1.5e10)
    s = impact(law, m, v0, record=True).series
    coef, state = _onset(law, len(s.t))
    energy = 0.5 * m * s.ddelta**2 + law.potential(s.delta, coef, state)
    assert np.max(np.abs(energy / (0.5 * m * v0 * v0) - 1.0)) < 1e-8
    assert np.max(law.potential(s.delta, coef, state)) > 0.99 * 0.5 * m * v0 * v0


def test_damped_impact_energy_only_decreases():
    """Hunt-Crossley: kinetic + potential never grows and ends at m (c_r v0)^2/2."""
    m, v0 = 0.0327, 0.8
    law = make_law("hunt_crossley", k=1.5e10, cr=0.7)
    r = impact(law, m, v0, record=True)
    s = r.series
    coef = law.coefficients(np.full(len(s.t), v0), np.full(len(s.t), m), np.full(len(s.t), 0.01))
    energy = 0.5 * m * s.ddelta**2 + law.potential(s.delta, coef, law.initial_state(coef))
    e0 = 0.5 * m * v0 * v0
    assert np.all(np.diff(energy) <= 1e-9 * e0)
    assert energy[-1] == pytest.approx(0.5 * m * (r.cr_out * v0) ** 2, rel=1e-6)


@pytest.mark.parametrize("name", BUILTIN)
def test_compiled_onset_rule_gives_the_rows_of_coefficients(name: str) -> None:
    """A law's compiled onset (``Law.onset_rule``, used by the engine's compiled segments for
    later onsets of a pair) turns a row of the pair into the row ``coefficients()`` gives at
    another impact speed and effective mass (same effective radius: a constant of the pair)."""
    from mbplugin.laws import kernels

    law = _law(name)
    rule = law.onset_rule()
    if rule is None:
        return
    r = np.full(1, 0.01)
    first = law.coefficients(np.array([V_IN]), np.array([M_EFF]), r)[0]
    for v_in, m_eff in ((2.7, 0.05), (3e-4, 1.7)):
        row = np.zeros(kernels.NC_MAX)
        row[: len(first)] = first
        assert kernels.onset_coefficients(rule[0], rule[1], rule[2], v_in, row)
        want = law.coefficients(np.array([v_in]), np.array([m_eff]), r)[0]
        np.testing.assert_allclose(row[: len(want)], want, rtol=1e-15, atol=0)
