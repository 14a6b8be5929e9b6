"""Zhang et al. (2022): F = k delta^n + lam delta^m ddelta^q with arbitrary n, m, q.

The damping factor follows from an energy-equivalence argument (Zhang, Liang, Zhang, Feng,
Zhao, Zhao, He, Mech. Syst. Signal Process. 168 (2022) 108739, Eq. 35):

    lam = m0 (2+q)(1-c_r^2)(m+1) v0^(2-q) / (4 (1+c_r^q)) * D^(-(m+1)/(n+1)),
    D   = delta_max^(n+1) = m0 (n+1) v0^2 / (2k) * (c_r^2 + c_r^q)/(1 + c_r^q)      (Eq. 31)

with m0 the effective mass and v0 the impact speed, both latched at contact onset. For m = n and
q = 1 it reduces exactly to the Hu-Guo factor 3k(1-c_r)/(2 c_r v0).

The paper does not say how ddelta^q is evaluated once ddelta < 0. The default
``power='signed'`` uses sign(ddelta)|ddelta|^q, so the damping always opposes the motion.
``power='complex'`` reproduces the paper's printed output c_r for q != 1: the authors evidently
integrated in complex arithmetic (as MATLAB does for a negative base), where
ddelta^q = |ddelta|^q e^{i pi q} on the real axis. The real part |ddelta|^q cos(pi q) weakens the
restitution damping by |cos(pi q)|; the imaginary part feeds an imaginary component of the state:

* for q > 1 it pushes the velocity off the negative real axis into the upper half plane, where
  it grows smoothly (about 5% of the exit speed at c_r = 0.76), and the printed c_r is |ddelta|
  at the end of contact, imaginary part included;
* for q < 1 it pushes the velocity back onto the branch cut from both sides, so the imaginary
  part stays at round-off level: the motion slides along the cut with the real-part force.

This mode carries Im(delta) and Im(ddelta) as two ODE states of the contact (kernel
``POWER_COMPLEX``: slots ``S_IM_D``, m, and ``S_IM_V``, m/s; its coefficient row is the power
kernel's, ``C_K`` .. ``C_Q``, with 1/m_eff in slot ``C_INV_M``, 1/kg); :func:`complex_exit_cr`
gives the paper's |ddelta|/v0. For q = 1 both
conventions are identical. Evidence and numbers are in docs/validation.
"""

from __future__ import annotations

import cmath
import math
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.laws import _ids
from mbplugin.laws.base import Option, Param
from mbplugin.laws.hunt_crossley import CR_PARAM, V_MIN_PARAM
from mbplugin.laws.power import (
    C_K,
    C_LAM,
    C_M,
    C_MODE,
    C_N,
    C_Q,
    K_PARAM,
    N_PARAM,
    PowerLaw,
    power_coefficients,
    power_force,
    power_row,
)

#: ``power='complex'`` (kernel ``POWER_COMPLEX``): the power kernel's coefficient row (slots
#: ``C_K`` .. ``C_Q`` of :mod:`mbplugin.laws.power`) with 1/m_eff (1/kg) in its mode slot
C_INV_M = C_MODE
#: its ODE states: Im delta (m), Im ddelta (m/s)
S_IM_D, S_IM_V = 0, 1


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


@njit
def _cpow(z: complex, p: float) -> complex:
    """Principal power z^p (0 at z = 0)."""
    if z == 0:
        return 0j
    return cmath.exp(p * cmath.log(z))


@njit
def _complex_force(d: float, v: float, c: tuple, s: tuple) -> complex:
    k = c[C_K]
    n = c[C_N]
    lam = c[C_LAM]
    m = c[C_M]
    q = c[C_Q]
    if q <= 1.0:
        # sliding on the branch cut: the real-part force with a real state, i.e. the power
        # kernel in its mode 2 (|ddelta|^q cos(pi q) for ddelta < 0)
        t = power_row(k, n, lam, m, q, 2.0, 0.0)
        return complex(power_force(d, v, t, s), 0.0)
    dz = complex(d, s[S_IM_D])
    vz = complex(v, s[S_IM_V])
    if v < 0.0 and s[S_IM_V] == 0.0:
        vz = complex(v, 0.0)  # exactly on the axis: principal value, arg = +pi
    return k * _cpow(dz, n) + lam * _cpow(dz, m) * _cpow(vz, q)


@njit
def complex_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Real part of k delta^n + lam delta^m ddelta^q in complex arithmetic (N)."""
    return _complex_force(d, v, c, s).real


@njit
def complex_rate(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """(Im delta)' = Im ddelta, (Im ddelta)' = -Im F / m_eff (c[C_INV_M] = 1/m_eff)."""
    f = _complex_force(d, v, c, s)
    return (s[S_IM_V], -f.imag * c[C_INV_M], 0.0, 0.0)


def complex_exit_cr(result: object, v0: float) -> float:
    """|ddelta| at the end of contact over v0, imaginary part included (the paper's c_r)."""
    v_re = -float(result.cr_out) * v0  # type: ignore[attr-defined]
    v_im = float(result.state_end[S_IM_V])  # type: ignore[attr-defined]
    return math.hypot(v_re, v_im) / v0


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

    @property
    def kernel(self) -> int:  # type: ignore[override]
        return _ids.POWER_COMPLEX if self.power == "complex" else _ids.POWER

    @property
    def state_names(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("im_delta", "im_ddelta") if self.power == "complex" else ()

    def state_scale(self, x_c: float, v_c: float, t_c: float) -> tuple[float, ...]:
        return (x_c, v_c) if self.power == "complex" else ()

    def coefficients(self, v_in, m_eff, r_eff):
        v = np.maximum(np.asarray(v_in, dtype=float), self.v_min)
        m_eff = np.asarray(m_eff, dtype=float)
        lam = zhang2022_lambda(m_eff, self.k, self.n, self.m, self.q, self.cr, v)
        coef = power_coefficients(np.size(v_in), self.k, self.n, lam, self.m, self.q)
        if self.power == "complex":
            coef[:, C_INV_M] = 1.0 / m_eff
        return coef
