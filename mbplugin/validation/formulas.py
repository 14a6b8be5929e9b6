"""Closed forms and small numerical helpers used as the expected values of the checks.

Everything here is written independently of :mod:`mbplugin.laws` (a check must not compare a
law with the same code that defines it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import beta as beta_fn

# --------------------------------------------------------------------------------------------------
# elastic power-law impact (Hertz for n = 3/2)
# --------------------------------------------------------------------------------------------------


def power_elastic_delta_max(m: Any, k: Any, v0: Any, n: float = 1.5) -> Any:
    """Peak indentation (m) of m x'' = -k x^n from x' = v0: ((n+1) m v0^2 / (2k))^(1/(n+1)).

    For n = 3/2 this is Hertz's (5 m v0^2 / (4k))^(2/5).
    """
    return ((n + 1.0) * np.asarray(m) * np.asarray(v0) ** 2 / (2.0 * np.asarray(k))) ** (
        1.0 / (n + 1.0)
    )


def power_elastic_duration_factor(n: float = 1.5) -> float:
    """Duration / (delta_max / v0) of the elastic power-law impact: 2 B(1/(n+1), 1/2) / (n+1).

    Equals 2.94328... for n = 3/2 (Hertz) and pi for n = 1.
    """
    return 2.0 * float(beta_fn(1.0 / (n + 1.0), 0.5)) / (n + 1.0)


# --------------------------------------------------------------------------------------------------
# linear oscillator (Kelvin-Voigt)
# --------------------------------------------------------------------------------------------------


def linear_cr_tension(zeta: Any) -> Any:
    """c_r of a linear spring-dashpot kept in contact until x returns to 0 (may pull):
    exp(-zeta pi / sqrt(1 - zeta^2)) for damping ratio zeta < 1."""
    z = np.asarray(zeta, dtype=float)
    return np.exp(-z * np.pi / np.sqrt(1.0 - z * z))


def linear_duration_tension(zeta: Any, omega_n: Any) -> Any:
    """Half a damped period pi / (omega_n sqrt(1 - zeta^2)) (s)."""
    z = np.asarray(zeta, dtype=float)
    return np.pi / (np.asarray(omega_n) * np.sqrt(1.0 - z * z))


def goyal_cr(zeta: Any, factor: float = 2.0) -> Any:
    """Goyal et al. (1994) c_r of the clipped linear spring-dashpot, with the review's factor.

    exp(-(factor zeta / sqrt(1 - zeta^2)) atan(sqrt(1 - zeta^2) / zeta)). ``factor = 2`` is the
    exact result for a force clipped at zero (contact ends when k x + c x' = 0); the review
    (Eq. 5.22) prints 4, which gives the square of it.
    """
    z = np.asarray(zeta, dtype=float)
    s = np.sqrt(1.0 - z * z)
    return np.exp(-(factor * z / s) * np.arctan(s / z))


def goyal_duration(zeta: Any, omega_n: Any) -> Any:
    """Duration (s) of the clipped linear impact: 2 atan(sqrt(1 - zeta^2)/zeta) / omega_d.

    (The force k x + c x' vanishes at omega_d t = pi - 2 asin(zeta).)
    """
    z = np.asarray(zeta, dtype=float)
    s = np.sqrt(1.0 - z * z)
    return 2.0 * np.arctan(s / z) / (np.asarray(omega_n) * s)


# --------------------------------------------------------------------------------------------------
# Hunt-Crossley family: the exact relation
# --------------------------------------------------------------------------------------------------


def hc_exact_cr(chi: float) -> float:
    """Output c_r of k x^n (1 + chi x'/v0): the root c of chi - ln(1+chi) = -chi c - ln(1 - chi c).

    (Gonthier et al. 2004; Zhang & Sharf 2004; review Eq. 5.23.) Solved for s = -ln(1 - chi c),
    i.e. s - (1 - e^-s) = L with L = chi - ln(1 + chi), by Newton's method, which stays accurate
    for any chi >= 0 (c -> 1/chi for large chi, c -> 1 - 2 chi/3 for small chi).
    """
    chi = float(chi)
    if chi < 0.0 or not math.isfinite(chi):
        raise ValueError(f"chi must be finite and >= 0, got {chi}")
    if chi == 0.0:
        return 1.0
    if chi < 1e-3:  # series of chi - ln(1 + chi), free of cancellation
        L = sum((-1.0) ** j * chi**j / j for j in range(2, 12))
    else:
        L = chi - math.log1p(chi)
    # start: small L -> s ~ sqrt(2L); large L -> s ~ L + 1
    s = math.sqrt(2.0 * L) if L < 1.0 else L + 1.0

    def h(s: float) -> float:  # s - (1 - e^-s), by its series where the difference cancels
        if s < 0.1:
            return sum((-1.0) ** j * s**j / math.factorial(j) for j in range(2, 14))
        return s + math.expm1(-s)

    for _ in range(100):
        g = h(s) - L
        dg = -math.expm1(-s)
        step = g / dg
        s_new = s - step
        if s_new <= 0.0:
            s_new = 0.5 * s
        if abs(s_new - s) <= 1e-15 * s:
            s = s_new
            break
        s = s_new
    return -math.expm1(-s) / chi


def hc_chi_for_cr(cr: float) -> float:
    """Inverse of :func:`hc_exact_cr`: the chi whose output c_r is ``cr`` (0 < cr <= 1)."""
    from scipy.optimize import brentq

    cr = float(cr)
    if not 0.0 < cr <= 1.0:
        raise ValueError(f"cr must be in (0, 1], got {cr}")
    if cr == 1.0:
        return 0.0
    hi = 1.0
    while hc_exact_cr(hi) > cr:
        hi *= 2.0
    return brentq(lambda x: hc_exact_cr(x) - cr, 0.0, hi, xtol=1e-15, rtol=1e-14)


# --------------------------------------------------------------------------------------------------
# Thornton (1997)
# --------------------------------------------------------------------------------------------------


def thornton_cr(v0: Any, v_yield: float) -> Any:
    """Thornton's closed-form c_r of elastic-perfectly plastic spheres (1 for v0 <= V_y).

    With r = V_y / v0: e = sqrt(6 sqrt(3)/5) sqrt(1 - r^2/6) (r / (r + 2 sqrt(6/5 - r^2/5)))^(1/4).
    """
    v = np.asarray(v0, dtype=float)
    r = np.minimum(v_yield / v, 1.0)
    e = (
        math.sqrt(6.0 * math.sqrt(3.0) / 5.0)
        * np.sqrt(1.0 - r * r / 6.0)
        * (r / (r + 2.0 * np.sqrt(1.2 - r * r / 5.0))) ** 0.25
    )
    return np.where(v <= v_yield, 1.0, e)


# --------------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------------


def linear_fit_r2(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares line y = a x + b; returns (R^2, a, b)."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    A = np.vstack([xa, np.ones_like(xa)]).T
    (a, b), *_ = np.linalg.lstsq(A, ya, rcond=None)
    resid = ya - (a * xa + b)
    ss_tot = float(np.sum((ya - ya.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    return r2, float(a), float(b)


def spread(values: Sequence[float]) -> float:
    """(max - min) / mean of positive values."""
    v = np.asarray(values, dtype=float)
    return float((v.max() - v.min()) / v.mean())
