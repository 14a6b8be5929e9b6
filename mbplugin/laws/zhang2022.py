"""Zhang et al. (2022): F = k delta^n + lam delta^m ddelta^q with arbitrary n, m, q.

The damping factor follows from an energy-equivalence argument (Zhang, Liang, Zhang, Feng,
Zhao, Zhao, He, Mech. Syst. Signal Process. 168 (2022) 108739, Eq. 35):

    lam = m0 (2+q)(1-c_r^2)(m+1) v0^(2-q) / (4 (1+c_r^q)) * D^(-(m+1)/(n+1)),
    D   = delta_max^(n+1) = m0 (n+1) v0^2 / (2k) * (c_r^2 + c_r^q)/(1 + c_r^q)      (Eq. 31)

with m0 the effective mass and v0 the impact speed, both latched at contact onset. For m = n and
q = 1 it reduces exactly to the Hu-Guo factor 3k(1-c_r)/(2 c_r v0).

The paper does not say how ddelta^q is evaluated once ddelta < 0. The default
``power='signed'`` uses sign(ddelta)|ddelta|^q, so the damping always opposes the motion.
``power='complex'`` reproduces the paper's printed output c_r for q != 1: evaluated in complex
arithmetic (as MATLAB does for a negative base), ddelta^q = |ddelta|^q e^{i pi q}; its real part
|ddelta|^q cos(pi q) drives the real motion, while the imaginary part only feeds an imaginary
component of the state some 1e-8 of the real one, which keeps jumping across the branch cut and
has no effect on the real trajectory. This mode therefore uses the real part directly (kernel
mode 2): the restitution damping is weakened by the factor |cos(pi q)| (0.951 for q = 0.9 or 1.1),
which raises c_r by 0.003-0.006 against the signed convention (evidence in docs/validation).
For q = 1 both conventions are identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.laws.base import Option, Param
from mbplugin.laws.hunt_crossley import CR_PARAM, V_MIN_PARAM
from mbplugin.laws.power import K_PARAM, N_PARAM, PowerLaw, power_coefficients


def zhang2022_lambda(m0: Any, k: Any, n: Any, m: Any, q: Any, cr: Any, v0: Any) -> Any:
    """Hysteresis damping factor lam of Zhang et al. (2022), Eq. 35 (units N s^q / m^(m+q))."""
    cr_q = np.power(cr, q)
    dmax_pow = m0 * (n + 1.0) * v0**2 / (2.0 * k) * (cr**2 + cr_q) / (1.0 + cr_q)
    return (
        m0 * (2.0 + q) * (1.0 - cr**2) * (m + 1.0) * v0 ** (2.0 - q) / (4.0 * (1.0 + cr_q))
        * dmax_pow ** (-(m + 1.0) / (n + 1.0))
    )


def zhang2022_delta_max(m0: Any, k: Any, n: Any, q: Any, cr: Any, v0: Any) -> Any:
    """Maximum indentation (m) predicted by the energy balance of Zhang et al. (2022), Eq. 31."""
    cr_q = np.power(cr, q)
    return (m0 * (n + 1.0) * v0**2 / (2.0 * k) * (cr**2 + cr_q) / (1.0 + cr_q)) ** (1.0 / (n + 1.0))


class Zhang2022(PowerLaw):
    """Zhang et al. (2022), arbitrary exponents; lam from Eq. 35 (see the module docstring)."""

    name = "zhang2022"
    title = "Zhang et al. 2022 (arbitrary n, m, q)"
    source = "Zhang, Liang, Zhang, Feng, Zhao, Zhao, He, MSSP 168 (2022) 108739, Eqs. 1, 31, 35"
    equation = (
        "F = k delta^n + lam delta^m sign(ddelta)|ddelta|^q,  lam from Eq. 35 (m_eff, v_in, cr)"
    )
    params = (
        K_PARAM,
        N_PARAM,
        Param("m", "indentation exponent of the damping term", "-", default=1.5, lo=0.0),
        Param("q", "velocity exponent of the damping term", "-", default=1.0, lo=0.0, lo_open=True),
        CR_PARAM,
        V_MIN_PARAM,
        Option(
            "power",
            "ddelta^q in restitution: signed, or complex = Re of the principal power (the paper's)",
            ("signed", "complex"),
            "signed",
        ),
    )
    needs = ("v_in", "m_eff")
    cr_range = "whole range (0, 1]; tested by the authors for c_r 0.53-0.89"

    def coefficients(self, v_in, m_eff, r_eff):
        v = np.maximum(np.asarray(v_in, dtype=float), self.v_min)
        lam = zhang2022_lambda(np.asarray(m_eff), self.k, self.n, self.m, self.q, self.cr, v)
        mode = 2.0 if self.power == "complex" else 0.0
        return power_coefficients(np.size(v_in), self.k, self.n, lam, self.m, self.q, mode)

