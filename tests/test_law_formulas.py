"""Each law's force against its printed formula, transcribed literally in this file.

The hysteresis factors f(c_r) = chi v_in / k of the Hunt-Crossley family differ only by their
printed expression (Corral et al. 2021, Eq. 5.18 with the factor of each law; spec
``review-corral2021.md`` sections 3.1-3.5). A behavioural test (output c_r within a threshold)
cannot tell two neighbouring factors apart, so here every law's force at a few (delta, ddelta)
points and several c_r is compared with

    F = k delta^n (1 + f(c_r) ddelta / v_in)

where f is typed in from the review, not taken from the code. Swapping one law's factor for
another's fails this file.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.laws import make_law

K, N = 3.7e9, 1.5
V_IN = 0.83  # m/s, above every law's speed floor v_min
M_EFF = 0.41  # kg
CRS = (0.1, 0.3, 0.5, 0.7, 0.9, 0.99)
#: (delta, ddelta) points: approaching and receding
POINTS = ((2e-5, 0.6), (7e-6, -0.4), (3e-5, 0.05))

#: f(c) = chi v_in / k as printed by the review (equation numbers of Corral et al. 2021).
PRINTED_F = {
    "hunt_crossley": lambda c: 3 * (1 - c) / 2,  # Eqs. 5.9-5.12
    "lee_wang": lambda c: 3 * (1 - c) / 4,  # Eq. 5.35
    "herbert_mcwhannell": lambda c: 6 * (1 - c) / ((2 * c - 1) ** 2 + 3),  # Eq. 5.19
    "lankarani_nikravesh": lambda c: 3 * (1 - c**2) / 4,  # Eq. 5.43
    "gonthier": lambda c: (1 - c**2) / c,  # Eq. 5.26
    "zhiying_qishao": lambda c: 3 * (1 - c**2) * math.exp(2 * (1 - c)) / 4,  # Eq. 5.56
    "gharib_hurmuzlu": lambda c: 1 / c,  # Eq. 5.57
    "flores": lambda c: 8 * (1 - c) / (5 * c),  # Eq. 5.61
    "hu_guo": lambda c: 3 * (1 - c) / (2 * c),  # Eq. 5.63
    "zhang2020": lambda c: 249 * (1 - c) / (6 + 160 * c),  # Eq. 5.64
    "safaeifar_farshidianfar": lambda c: 5 * (1 - c) / (4 * c),  # Eq. 5.66
}


def _yu_d(c: float) -> float:
    """Yu et al.'s d(c_r), review Eq. 5.34, the printed piecewise cubics."""
    if c <= 0.25:
        return 1.0
    if c <= 0.4:
        return 2.1663 * c**3 - 3.7216 * c**2 + 0.8724 * c + 0.9409
    if c <= 0.6:
        return 1.1664 * c**3 - 2.4893 * c**2 + 0.3625 * c + 1.0117
    if c <= 0.8:
        return 0.5048 * c**3 - 1.3255 * c**2 - 0.3236 * c + 1.1472
    return 0.2256 * c**3 - 0.6663 * c**2 - 0.8437 * c + 1.2844


PRINTED_F["yu"] = lambda c: _yu_d(c) / c  # chi = (d/c_r) K / v_in (Eqs. 5.32-5.34)


def _raw_force(law, delta: float, ddelta: float) -> float:
    coef = law.coefficients(np.array([V_IN]), np.array([M_EFF]), np.array([0.01]))
    state = law.initial_state(coef)
    return float(law.force_raw(np.array([delta]), np.array([ddelta]), coef, state)[0])


@pytest.mark.parametrize("name", sorted(PRINTED_F))
def test_hunt_crossley_family_factor_is_the_printed_one(name):
    """F = k delta^n (1 + f(c_r) ddelta/v_in) with the review's f, at six c_r (rel 1e-12)."""
    f = PRINTED_F[name]
    for cr in CRS:
        law = make_law(name, k=K, n=N, cr=cr)
        for d, v in POINTS:
            expected = K * d**N * (1.0 + f(cr) * v / V_IN)
            assert _raw_force(law, d, v) == pytest.approx(expected, rel=1e-12, abs=0.0), cr


def test_the_printed_factors_are_distinguishable():
    """The check above can fail: any two laws' printed factors differ by more than 1e-3
    (relative) at one of the c_r used (else a swap would pass unnoticed)."""
    names = sorted(PRINTED_F)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            gap = max(abs(PRINTED_F[a](c) - PRINTED_F[b](c)) / abs(PRINTED_F[b](c)) for c in CRS)
            assert gap > 1e-3, (a, b)


def test_wang_factor_is_zhiying_qishao_at_the_printed_cr_star():
    """Wang et al. (Eqs. 5.58, 5.60): f = 3(1 - c*^2) e^(2(1 - c*))/4, c* = 1 - 0.26 K* v^(1/3)."""
    for kstar in (0.2, 0.6):
        law = make_law("wang", k=K, n=N, kstar=kstar)
        c = 1 - 0.26 * kstar * V_IN ** (1 / 3)
        f = 3 * (1 - c**2) * math.exp(2 * (1 - c)) / 4
        for d, v in POINTS:
            assert _raw_force(law, d, v) == pytest.approx(K * d**N * (1 + f * v / V_IN),
                                                          rel=1e-12)


@pytest.mark.parametrize("formula", ["eq5_54", "eq5_55"])
def test_jankowski_printed_damping(formula):
    """Jankowski (Eqs. 5.52-5.55): F = k d^1.5 + 2 xi sqrt(k m) d^(1/4) dd while approaching,
    k d^1.5 while receding; xi = sqrt5 (1 - c^2)/(2 pi c) (5.54) or
    (9 sqrt5/2)(1 - c^2)/(c (c (9 pi - 16) + 16)) (5.55)."""
    for cr in CRS:
        if formula == "eq5_54":
            xi = math.sqrt(5) * (1 - cr**2) / (2 * math.pi * cr)
        else:
            xi = 9 * math.sqrt(5) / 2 * (1 - cr**2) / (cr * (cr * (9 * math.pi - 16) + 16))
        law = make_law("jankowski", k=K, cr=cr, xi_formula=formula)
        for d, v in POINTS:
            damping = 2 * xi * math.sqrt(K * M_EFF) * d**0.25 * v if v > 0 else 0.0
            assert _raw_force(law, d, v) == pytest.approx(K * d**1.5 + damping, rel=1e-12)


def test_anagnostopoulos_printed_damping():
    """Anagnostopoulos (Eqs. 5.39-5.40): F = k d + 2 xi sqrt(k m) dd,
    xi = -ln c / sqrt(pi^2 + ln^2 c)."""
    k = 2.5e6
    for cr in CRS:
        xi = -math.log(cr) / math.sqrt(math.pi**2 + math.log(cr) ** 2)
        law = make_law("anagnostopoulos", k=k, cr=cr)
        for d, v in POINTS:
            expected = k * d + 2 * xi * math.sqrt(k * M_EFF) * v
            assert _raw_force(law, d, v) == pytest.approx(expected, rel=1e-12)
