"""Spring-dashpot laws with a damping ratio: Anagnostopoulos, Goyal, Jankowski, and Choi et al.

All evaluate through the power kernel (:func:`mbplugin.laws.power.power_force`):

* ``anagnostopoulos`` and ``goyal`` are the linear spring-dashpot F = k delta + c ddelta with
  c = 2 xi sqrt(k m_eff); they differ in how the damping ratio xi follows from c_r, i.e. in
  *when the contact ends*. Anagnostopoulos (1988) keeps the impact element active while the
  bodies overlap (the force may pull), which makes the rebound the half period of a damped
  oscillator. Goyal et al. (1994) end the contact when the force vanishes.
* ``jankowski`` damps only during compression (power-kernel mode 1) with the exponent 1/4 that
  makes c_r independent of the impact speed.
* ``choi`` is the general power law with a floor R_c k delta^ms on the force (the ``rc`` slot of
  the power kernel), which prevents pulling during restitution.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq

from mbplugin.errors import ParameterError
from mbplugin.laws.base import MODE_CLIP, MODE_TENSION, Option, Param
from mbplugin.laws.power import PowerLaw, anagnostopoulos_xi, power_coefficients

_K_LINEAR = Param("k", "linear contact stiffness", "N/m", lo=0.0, lo_open=True)
_K_HERTZ = Param("k", "Hertz contact stiffness", "N/m^1.5", lo=0.0, lo_open=True)
_CR = Param("cr", "target coefficient of restitution (Newton)", "-", lo=0.0, hi=1.0, lo_open=True)


class Anagnostopoulos(PowerLaw):
    """Anagnostopoulos (1988): F = k delta + 2 xi sqrt(k m_eff) ddelta (review Eqs. 5.39-5.40).

    xi = -ln c_r / sqrt(pi^2 + ln^2 c_r) is the damping ratio of a linear oscillator whose
    velocity after half a damped period is c_r times the initial one. That holds when the impact
    element stays active until the overlap returns to 0, pulling the bodies at the end
    (``allow_tension='yes'``, the default and the source's model): then c_r is reproduced exactly
    for every c_r in (0, 1]. With ``allow_tension='no'`` the force is clipped at 0 and the contact
    ends when it vanishes, which returns a higher c_r (see ``goyal`` for the ratio that fits that
    rule). The force jumps to c v_in at first contact.
    """

    name = "anagnostopoulos"
    title = "Anagnostopoulos (linear, pounding)"
    source = (
        "Anagnostopoulos, Earthq. Eng. Struct. Dyn. 16 (1988); Corral et al. (2021) Eqs. 5.39-5.40"
    )
    equation = "F = k delta + 2 xi sqrt(k m_eff) ddelta,  xi = -ln cr / sqrt(pi^2 + ln^2 cr)"
    params = (
        _K_LINEAR,
        _CR,
        Option(
            "allow_tension", "keep the element active (pulling) until delta = 0", ("yes", "no"),
            "yes",
        ),
    )
    needs = ("m_eff",)
    cr_range = "whole range (0, 1], exact with allow_tension='yes'; restricted per the review"
    tension = "pulls at the end of restitution (allow_tension='yes', default); 'no' clips at 0"
    calibration_params = ("cr",)
    calibration_invariant = ("allow_tension",)  # c_r depends on xi(cr) and the contact rule

    @property
    def contact_mode(self) -> int:
        return MODE_TENSION if self.allow_tension == "yes" else MODE_CLIP

    def coefficients(self, v_in, m_eff, r_eff):
        c = 2.0 * anagnostopoulos_xi(self.cr) * np.sqrt(self.k * np.asarray(m_eff, dtype=float))
        return power_coefficients(np.size(v_in), self.k, 1.0, c, 0.0, 1.0)

    def timescale(self, m_eff, v0):
        return np.sqrt(np.asarray(m_eff, dtype=float) / self.k)


def goyal_cr(zeta: float, factor: float = 2.0) -> float:
    """c_r of a clipped linear oscillator with damping ratio ``zeta`` in [0, 1] (Goyal Eq. 5.22).

    c_r = exp(-(factor zeta / sqrt(1 - zeta^2)) atan(sqrt(1 - zeta^2) / zeta)); factor 2 is the
    exact rebound of a spring-dashpot whose contact ends when its force vanishes, factor 4 the
    review's printed form (the square of it: an energy ratio).
    """
    s = math.sqrt(max(1.0 - zeta * zeta, 0.0))
    ratio = 1.0 if s < 1e-12 else zeta * math.atan2(s, zeta) / s
    return math.exp(-factor * ratio)


@lru_cache(maxsize=4096)
def goyal_zeta(cr: float, factor: float = 2.0) -> float:
    """Damping ratio zeta in [0, 1] with :func:`goyal_cr` (zeta, factor) = cr (cached)."""
    if cr >= 1.0:
        return 0.0
    floor = math.exp(-factor)
    if cr < floor:
        raise ParameterError(f"cr = {cr:g} is below exp(-{factor:g}) = {floor:.6g}")
    if cr == floor:
        return 1.0
    lc = math.log(cr)
    return brentq(lambda z: math.log(goyal_cr(z, factor)) - lc, 0.0, 1.0, xtol=1e-15,
                  rtol=4.0 * np.finfo(float).eps)


class Goyal(PowerLaw):
    """Goyal, Pinson & Sinden (1994): F = k delta + 2 zeta sqrt(k m_eff) ddelta, zeta from c_r.

    Review Eqs. 5.8 and 5.20-5.22. The damping is D = 2 zeta m_eff omega_n with
    omega_n = sqrt(k/m_eff) (the review's layout reads zeta/(2 m_eff omega_n), which is
    dimensionally impossible; spec Sect. 6 item 1). zeta solves

        c_r = exp(-(2 zeta / sqrt(1 - zeta^2)) atan(sqrt(1 - zeta^2) / zeta)),

    the exact rebound of a linear spring-dashpot whose force is clipped at 0 with the contact
    ending when the force vanishes (this law's contact rule), so the input c_r is reproduced
    exactly. The review prints a factor 4 instead of 2: that expression is the square of the
    above (a kinetic-energy ratio); ``factor='4'`` reproduces the printed form, with which the
    output c_r is the square root of the input. Since the source restricts zeta to (0, 1)
    (underdamped), reachable c_r are [exp(-2), 1] = [0.1353, 1] (factor 2) or [exp(-4), 1]
    (factor 4). The force jumps to D v_in at first contact.
    """

    name = "goyal"
    title = "Goyal et al. (linear, exact clipped c_r)"
    source = (
        "Goyal, Pinson & Sinden, Eng. Comput. 10 (1994); Corral et al. (2021) Eqs. 5.20-5.22 "
        "(factor 2, see docs/laws_notes.md)"
    )
    equation = (
        "F = k delta + 2 zeta sqrt(k m_eff) ddelta, "
        "cr = exp(-(2 zeta/sqrt(1-zeta^2)) atan(sqrt(1-zeta^2)/zeta))"
    )
    params = (
        _K_LINEAR,
        Param(
            "cr", "target coefficient of restitution, >= exp(-2) (factor 2) or exp(-4) (factor 4)",
            "-", lo=math.exp(-4.0), hi=1.0,
        ),
        Option("factor", "2 (exact for this contact rule) or 4 (as printed)", ("2", "4"), "2"),
    )
    needs = ("m_eff",)
    cr_range = "[exp(-2), 1] = [0.1353, 1], exact (underdamped zeta <= 1)"
    calibration_params = ("cr",)
    calibration_invariant = ("factor",)

    def _check(self) -> None:
        floor = math.exp(-float(self.factor))
        if np.any(np.asarray(self.cr) < floor):
            raise ParameterError(
                f"{self.name}: parameter 'cr' = {float(np.min(self.cr)):g} is outside its allowed "
                f"range [{floor:.6g}, 1] for factor {self.factor} (zeta <= 1)"
            )

    def zeta(self) -> np.ndarray | float:
        """The damping ratio(s) for this law's c_r."""
        f = float(self.factor)
        cr = np.asarray(self.cr, dtype=float)
        if cr.ndim == 0:
            return goyal_zeta(float(cr), f)
        uniq, inv = np.unique(cr, return_inverse=True)  # one root per distinct c_r, at onset
        return np.array([goyal_zeta(float(c), f) for c in uniq])[inv].reshape(cr.shape)

    def coefficients(self, v_in, m_eff, r_eff):
        c = 2.0 * self.zeta() * np.sqrt(self.k * np.asarray(m_eff, dtype=float))
        return power_coefficients(np.size(v_in), self.k, 1.0, c, 0.0, 1.0)

    def timescale(self, m_eff, v0):
        return np.sqrt(np.asarray(m_eff, dtype=float) / self.k)


def jankowski_xi(cr: np.ndarray | float, formula: str = "eq5_55") -> np.ndarray | float:
    """Jankowski's damping ratio xi_bar(c_r) (review Eq. 5.54 or the more precise Eq. 5.55)."""
    c = np.asarray(cr, dtype=float)
    if formula == "eq5_54":
        return np.sqrt(5.0) * (1.0 - c**2) / (2.0 * np.pi * c)
    return 4.5 * np.sqrt(5.0) * (1.0 - c**2) / (c * (c * (9.0 * np.pi - 16.0) + 16.0))


class Jankowski(PowerLaw):
    """Jankowski (2005, 2006): damping only while the bodies approach (review Eqs. 5.52-5.55).

        F = k delta^(3/2) + chi delta^(1/4) ddelta   (ddelta > 0),
        F = k delta^(3/2)                              (ddelta <= 0),
        chi = 2 xi sqrt(k m_eff),

    with xi from c_r by Eq. 5.55 (default; Jankowski's second, more precise expression) or
    Eq. 5.54 (``xi_formula='eq5_54'``); both agree as c_r -> 1. The damping exponent 1/4 with the
    factor sqrt(k m_eff) makes c_r independent of impact speed, mass and stiffness. Restitution
    is purely elastic, so the contact ends at delta = 0; the force never pulls.
    """

    name = "jankowski"
    title = "Jankowski (compression-only damping, pounding)"
    source = (
        "Jankowski, Earthq. Eng. Struct. Dyn. 34 (2005) and 35 (2006); Corral et al. (2021) "
        "Eqs. 5.52-5.55"
    )
    equation = "F = k delta^1.5 + 2 xi sqrt(k m_eff) delta^0.25 ddelta (ddelta > 0 only)"
    params = (
        _K_HERTZ,
        _CR,
        Option("xi_formula", "xi(c_r) by review Eq. 5.55 or Eq. 5.54", ("eq5_55", "eq5_54"),
               "eq5_55"),
    )
    needs = ("m_eff",)
    cr_range = "whole range (0, 1] (approximate xi(c_r)); independent of impact speed"
    calibration_params = ("cr",)
    calibration_invariant = ("xi_formula",)

    def coefficients(self, v_in, m_eff, r_eff):
        xi = jankowski_xi(self.cr, self.xi_formula)
        lam = 2.0 * xi * np.sqrt(self.k * np.asarray(m_eff, dtype=float))
        return power_coefficients(np.size(v_in), self.k, 1.5, lam, 0.25, 1.0, 1.0)


class Choi(PowerLaw):
    """Choi et al. (2010): F = max(k delta^ms + D delta^mi sign(ddelta)|ddelta|^md, F_min).

    Review Eqs. 5.72-5.74, with chi = D |ddelta|^md / |ddelta|, so the damping term is
    D delta^mi |ddelta|^md sign(ddelta); F_min = R_c k delta^ms with the rebound normal-force
    coefficient R_c in [0, 1] keeps the force from pulling in restitution. With ``rc`` > 0 the
    force stays >= R_c k delta^ms > 0 while the bodies overlap, so the contact ends at delta = 0;
    with ``rc`` = 0 it is clipped at 0 and ends when it vanishes. Written for triangulated
    complex geometry (multiple contact regions); the force law itself is the above.
    """

    name = "choi"
    title = "Choi et al. (rebound force floor)"
    source = "Choi, Ryu, Kim & Choi, Multibody Syst. Dyn. 23 (2010); Corral et al. Eqs. 5.72-5.74"
    equation = "F = max(k delta^ms + D delta^mi sign(ddelta)|ddelta|^md, rc k delta^ms)"
    params = (
        Param("k", "contact stiffness", "N/m^ms", lo=0.0, lo_open=True),
        Param("D", "damping coefficient", "N s^md/m^(mi+md)", lo=0.0),
        Param("ms", "spring exponent", "-", default=1.5, lo=0.0, lo_open=True),
        Param("mi", "indentation exponent of the damper", "-", default=1.5, lo=0.0),
        Param("md", "velocity exponent of the damper", "-", default=1.0, lo=0.0, lo_open=True),
        Param("rc", "rebound normal-force coefficient R_c", "-", default=0.0, lo=0.0, hi=1.0),
    )
    cr_range = "depends on D and the impact speed (no c_r input)"
    tension = "never pulls: floored at rc k delta^ms >= 0"
    calibration_params = ("D",)

    def coefficients(self, v_in, m_eff, r_eff):
        return power_coefficients(
            np.size(v_in), self.k, self.ms, self.D, self.mi, self.md, 0.0, self.rc
        )

    def timescale(self, m_eff, v0):
        m = np.asarray(m_eff, dtype=float)
        v = np.asarray(v0, dtype=float)
        n = np.asarray(self.ms, dtype=float)
        return (m / (self.k * v ** (n - 1.0))) ** (1.0 / (n + 1.0))
