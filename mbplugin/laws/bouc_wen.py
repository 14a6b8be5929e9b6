"""The Bouc-Wen incremental collision laws of Milehins & Marghitu (2026).

Source: Milehins & Marghitu, "Incremental Collision Laws Based on the Bouc-Wen Model: Improved
Collision Models and Further Results" (2026, arXiv:2507.07953), with the equation corrections
listed in ``spec/bouc-wen-collision-laws.md`` section 0 (Eq. 46 first term uses alpha, Eq. 50 uses
the rate of Y, ...).

The paper writes the laws with the relative displacement x = -delta (negative in compression) and
its rate v = -ddelta. Both laws are odd in (x, z, v), so with zeta = -z, rho = -r and
psi = delta - rho they keep their form in the project's sign convention:

Bouc-Wen-Simon-Hunt-Crossley (Eqs. 38-39), state ``zeta``::

    F     = alpha k |delta|^(p-1) delta + (1-alpha) k |zeta|^(p-1) zeta + c |delta|^p ddelta
    zeta' = A ddelta - beta |zeta|^(n-1) zeta |ddelta| - gamma |zeta|^n ddelta

Bouc-Wen-Maxwell (Eqs. 46-47), a dashpot c in series with the Bouc-Wen element, states
``rho`` (dashpot displacement) and ``zeta``::

    psi   = delta - rho
    F     = alpha k |psi|^(p-1) psi + (1-alpha) k |zeta|^(p-1) zeta
    rho'  = F / c,    psi' = ddelta - rho'
    zeta' = A psi' - beta |zeta|^(n-1) zeta |psi'| - gamma |zeta|^n psi'

Both start from zero state at contact onset and the contact ends at the first instant the force
is <= 0 while the bodies recede (Eq. 17), which leaves a residual indentation. The force is not
clipped before that instant (the paper's model). The Maxwell law creeps without bound under a
sustained compressive load (spec section 3.8): use the Hunt-Crossley variant for resting contact.

Coefficient row (both laws, ``n_coef = 8``), slots named ``C_*``::

    C_K      k      stiffness coefficient, N/m^p
    C_P      p      force exponent, -
    C_ALPHA  alpha  share of the purely elastic spring, -
    C_C      c      damping: N s/m^(p+1) (Hunt-Crossley variant), N s/m (Maxwell's dashpot)
    C_A      A      Bouc-Wen gain, -
    C_BETA   beta   Bouc-Wen shape parameter, m^-n
    C_GAMMA  gamma  Bouc-Wen shape parameter, m^-n
    C_N      n      Bouc-Wen sharpness exponent, -

ODE states: Hunt-Crossley variant ``S_HC_ZETA`` (zeta, m); Maxwell variant ``S_MX_RHO`` (rho, m)
and ``S_MX_ZETA`` (zeta, m). No memory.
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin._jit import njit
from mbplugin.errors import ParameterError
from mbplugin.laws import _ids
from mbplugin.laws.base import MODE_RAW, Law, Param, broadcast_param
from mbplugin.laws.power import _abs_pow, power_energy, signed_pow

N_COEF = 8
#: the coefficient slots of both kernels (see the module docstring)
C_K, C_P, C_ALPHA, C_C, C_A, C_BETA, C_GAMMA, C_N = 0, 1, 2, 3, 4, 5, 6, 7
#: the ODE state slots: Bouc-Wen-Simon-Hunt-Crossley's zeta; Bouc-Wen-Maxwell's rho and zeta
S_HC_ZETA = 0
S_MX_RHO, S_MX_ZETA = 0, 1


@njit
def _zeta_rate(zeta: float, rate: float, A: float, beta: float, gamma: float, n: float) -> float:
    """Bouc-Wen evolution zeta' = A u - beta |zeta|^(n-1) zeta |u| - gamma |zeta|^n u."""
    zn = _abs_pow(abs(zeta), n)
    return A * rate - beta * math.copysign(zn, zeta) * abs(rate) - gamma * zn * rate


@njit
def hc_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Bouc-Wen-Simon-Hunt-Crossley force (N), Eq. 39 in the delta convention."""
    k = c[C_K]
    p = c[C_P]
    alpha = c[C_ALPHA]
    return (
        alpha * k * signed_pow(d, p) + (1.0 - alpha) * k * signed_pow(s[S_HC_ZETA], p)
        + c[C_C] * _abs_pow(abs(d), p) * v
    )


@njit
def hc_rate(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """zeta' of the Bouc-Wen-Simon-Hunt-Crossley law (Eq. 38)."""
    return (_zeta_rate(s[S_HC_ZETA], v, c[C_A], c[C_BETA], c[C_GAMMA], c[C_N]), 0.0, 0.0, 0.0)


@njit
def maxwell_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Bouc-Wen-Maxwell force (N), Eq. 47 in the delta convention (independent of ddelta)."""
    k = c[C_K]
    p = c[C_P]
    alpha = c[C_ALPHA]
    return (alpha * k * signed_pow(d - s[S_MX_RHO], p)
            + (1.0 - alpha) * k * signed_pow(s[S_MX_ZETA], p))


@njit
def maxwell_rate(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """(rho', zeta') of the Bouc-Wen-Maxwell law (Eq. 46, corrected)."""
    f = maxwell_force(d, v, c, s)
    rho_dot = f / c[C_C]
    psi_dot = v - rho_dot
    return (rho_dot, _zeta_rate(s[S_MX_ZETA], psi_dot, c[C_A], c[C_BETA], c[C_GAMMA], c[C_N]),
            0.0, 0.0)


_COMMON = (
    Param("k", "stiffness coefficient", "N/m^p", lo=0.0, lo_open=True),
    Param("p", "force exponent (1.5 = Hertz)", "-", default=1.5, lo=1.0),
    Param(
        "alpha", "share of the purely elastic spring", "-",
        default=0.5, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
    ),
)
_BOUC_WEN = (
    Param("A", "Bouc-Wen gain (initial slope of zeta vs delta)", "-", default=1.0, lo=0.0,
          lo_open=True),
    Param("beta", "Bouc-Wen shape parameter", "m^-n", default=0.0, lo=0.0),
    Param("gamma", "Bouc-Wen shape parameter, |gamma| <= beta", "m^-n", default=0.0),
    Param("n", "Bouc-Wen sharpness exponent", "-", default=1.0, lo=1.0),
)


class _BoucWenBase(Law):
    n_coef = N_COEF
    cr_range = "velocity dependent (identified from data through base parameters)"
    tension = "not clipped: the contact ends when F <= 0 while the bodies recede (Eq. 17)"

    @property
    def contact_mode(self) -> int:
        return MODE_RAW

    def _check(self) -> None:
        if np.any(np.abs(np.asarray(self.gamma)) > np.asarray(self.beta)):
            raise ParameterError(
                f"{self.name}: parameter 'gamma' = {self.gamma} must satisfy |gamma| <= beta "
                f"(beta = {self.beta}); allowed range [-beta, beta]"
            )

    def coefficients(self, v_in, m_eff, r_eff):
        nrows = np.size(v_in)
        out = np.empty((nrows, N_COEF))
        for j, key in ((C_K, "k"), (C_P, "p"), (C_ALPHA, "alpha"), (C_C, "c"), (C_A, "A"),
                       (C_BETA, "beta"), (C_GAMMA, "gamma"), (C_N, "n")):
            out[:, j] = broadcast_param(self._values[key], nrows)
        return out

    def _spring_and_zeta(self, delta, state):
        """(psi, zeta): the elastic spring's stretch and the hysteretic variable (m)."""
        raise NotImplementedError

    def potential(self, delta, coef, state):
        """alpha k |psi|^(p+1)/(p+1) + (1 - alpha) k |zeta|^(p+1)/(A (p+1)) (J).

        The energy balance of the paper (Milehins & Marghitu 2026, App. B for the
        Hunt-Crossley variant, App. C for the Maxwell variant; spec ``bouc-wen-collision-laws.md``
        Sect. 2.8): the elastic spring holds its Hertz-type energy at the stretch psi
        (psi = delta, or delta - rho behind the Maxwell dashpot) and the hysteretic element
        the energy of a spring (1 - alpha) k |zeta|^p seen through the gain A (zeta' = A psi'
        without hysteresis).
        """
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        c = np.atleast_2d(coef)
        st = np.atleast_2d(state)
        k, p, alpha, a_gain = c[:, C_K], c[:, C_P], c[:, C_ALPHA], c[:, C_A]
        psi, zeta = self._spring_and_zeta(d, st)
        return (power_energy(alpha * k, p, np.abs(psi))
                + power_energy((1.0 - alpha) * k / a_gain, p, np.abs(zeta)))

    def scale_S(self):  # noqa: N802
        """S = alpha + (1 - alpha) A^p, the stiffness share seen at first loading."""
        return self.alpha + (1.0 - self.alpha) * np.asarray(self.A) ** self.p

    def timescale(self, m_eff, v0):
        """T_c = (m/(k S))^(1/(p+1)) v0^(-(p-1)/(p+1)) (Table 1 of the paper)."""
        p = np.asarray(self.p)
        m = np.asarray(m_eff, dtype=float)
        return (m / (self.k * self.scale_S())) ** (1.0 / (p + 1.0)) * np.asarray(v0) ** (
            -(p - 1.0) / (p + 1.0)
        )


class BoucWenHuntCrossley(_BoucWenBase):
    """Bouc-Wen-Simon-Hunt-Crossley collision law (Milehins & Marghitu 2026, Eqs. 38-39).

    A Hertz-type spring (share ``alpha``), a Bouc-Wen hysteretic element (share 1 - alpha) and a
    Hunt-Crossley dashpot ``c |delta|^p ddelta`` in parallel. State: ``zeta``.
    """

    name = "bouc_wen_hunt_crossley"
    title = "Bouc-Wen-Simon-Hunt-Crossley"
    source = "Milehins & Marghitu (2026), arXiv:2507.07953, Eqs. 38-39 (BWSHCCM)"
    equation = (
        "F = alpha k delta^p + (1-alpha) k zeta^p + c delta^p ddelta; "
        "zeta' = A ddelta - beta |zeta|^(n-1) zeta |ddelta| - gamma |zeta|^n ddelta"
    )
    params = (
        *_COMMON,
        Param("c", "nonlinear damping coefficient", "N s/m^(p+1)", default=0.0, lo=0.0),
        *_BOUC_WEN,
    )
    state_names = ("zeta",)
    kernel = _ids.BOUC_WEN_HC

    def _spring_and_zeta(self, delta, state):
        return delta, state[:, S_HC_ZETA]


class BoucWenMaxwell(_BoucWenBase):
    """Bouc-Wen-Maxwell collision law (Milehins & Marghitu 2026, Eqs. 46-47, corrected).

    A linear dashpot ``c`` in series with a Bouc-Wen element. States: ``rho`` (dashpot
    displacement) and ``zeta``. Invariant: m ddelta + c rho = m v_in + integral of the pressing
    force, which the tests check.
    """

    name = "bouc_wen_maxwell"
    title = "Bouc-Wen-Maxwell"
    source = "Milehins & Marghitu (2026), arXiv:2507.07953, Eqs. 46-47 (BWMCM)"
    equation = (
        "F = alpha k psi^p + (1-alpha) k zeta^p, psi = delta - rho, rho' = F/c, "
        "zeta' = A psi' - beta |zeta|^(n-1) zeta |psi'| - gamma |zeta|^n psi'"
    )
    params = (
        *_COMMON,
        Param("c", "linear dashpot coefficient in series", "N s/m", lo=0.0, lo_open=True),
        *_BOUC_WEN,
    )
    state_names = ("rho", "zeta")
    kernel = _ids.BOUC_WEN_MAXWELL

    def _spring_and_zeta(self, delta, state):
        return delta - state[:, S_MX_RHO], state[:, S_MX_ZETA]
