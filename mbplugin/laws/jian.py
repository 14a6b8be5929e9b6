"""Jian et al.: viscoelastic spheres of one material with a relaxing dissipative term.

Review Eqs. 5.83-5.88. With G(t) = G_e + G0 exp(-t/T) the shear relaxation modulus (G_e the
equilibrium part), T = eta/G0 the relaxation time, nu Poisson's ratio and R the effective
radius, the force is::

    F_el  = 4 G_e sqrt(R) / (3 (1 - nu)) delta^(3/2)
    F_dis = 2 eta / (1 - nu) (1 - exp(-t/T)) sqrt(R delta) ddelta

where t is the time since contact onset. The time is an ODE state of the contact (``t``, rate
1, starting at 0), so the law needs no clock from its caller and works unchanged in every
integrator. The elastic term is Hertz's for two equal spheres (E* = G/(1 - nu)).

Jian et al. also give closed forms for a sinusoidal indentation history
delta = delta_m sin(pi t/(2 t_m)) (Eqs. 5.89-5.91); the tests check the law against them.

Coefficient row (``n_coef = 3``), slots named ``C_*``: ``C_K_EL`` 4 G_e sqrt(R)/(3 (1 - nu))
(N/m^1.5), ``C_C_DIS`` 2 eta sqrt(R)/(1 - nu) (N s/m^1.5), ``C_INV_T`` 1/T = G0/eta (1/s). ODE
state: ``S_T``, the time since onset t (s). No memory.
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin._jit import njit
from mbplugin.laws import _ids
from mbplugin.laws.base import Law, Param
from mbplugin.laws.power import power_energy, signed_pow

#: the coefficient slots and the ODE state slot (see the module docstring)
C_K_EL, C_C_DIS, C_INV_T = 0, 1, 2
S_T = 0


@njit
def jian_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """F_el + F_dis (N); coefficients k_el, c_dis, 1/T, state t."""
    return (c[C_K_EL] * signed_pow(d, 1.5)
            + c[C_C_DIS] * (-math.expm1(-s[S_T] * c[C_INV_T])) * math.sqrt(abs(d)) * v)


@njit
def jian_rate(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """The time since onset advances at rate 1."""
    return (1.0, 0.0, 0.0, 0.0)


class Jian(Law):
    """Jian et al.: viscoelastic spheres of one material, relaxing damping (review Eqs. 5.83-5.88).

    F = 4 G_e sqrt(R)/(3(1 - nu)) delta^(3/2) + 2 eta/(1 - nu) (1 - exp(-t G0/eta)) sqrt(R delta)
    ddelta, with t the time since contact onset (ODE state ``t``). Right after onset the damping
    is small; after a few relaxation times T = eta/G0 (Jian's "rubbery region") it is the
    Kuwabara-Kono-type term 2 eta sqrt(R delta) ddelta/(1 - nu). The effective radius is a law
    parameter (``radius``) because the elastic stiffness depends on it. Clipped at F >= 0; the
    contact ends when the force vanishes while the bodies recede.
    """

    name = "jian"
    title = "Jian et al. (relaxing viscoelastic spheres)"
    source = "Jian et al.; Corral et al. (2021) Eqs. 5.83-5.91"
    equation = (
        "F = 4 G_e sqrt(R)/(3(1-nu)) delta^1.5 + 2 eta/(1-nu) (1 - exp(-t/T)) sqrt(R delta) ddelta,"
        " T = eta/G0"
    )
    params = (
        Param("G_e", "equilibrium shear modulus", "Pa", lo=0.0, lo_open=True),
        Param("G0", "relaxing part of the shear modulus, G(t) = G_e + G0 exp(-t/T)", "Pa",
              lo=0.0, lo_open=True),
        Param("eta", "viscosity of the contact damper", "Pa s", lo=0.0, lo_open=True),
        Param("nu", "Poisson's ratio", "-", lo=-1.0, hi=0.5, lo_open=True, hi_open=True),
        Param("radius", "effective radius R_eff of the two spheres", "m", lo=0.0, lo_open=True),
    )
    state_names = ("t",)
    kernel = _ids.JIAN
    n_coef = 3
    cr_range = "velocity and relaxation-time dependent (no c_r input)"
    calibration_params = ("eta",)

    def k_el(self):
        """Elastic stiffness 4 G_e sqrt(R)/(3(1 - nu)) (N/m^1.5)."""
        return 4.0 * self.G_e * np.sqrt(self.radius) / (3.0 * (1.0 - np.asarray(self.nu)))

    def coefficients(self, v_in, m_eff, r_eff):
        nrows = np.size(v_in)
        nu = np.asarray(self.nu, dtype=float)
        cols = ((C_K_EL, self.k_el()),
                (C_C_DIS, 2.0 * self.eta * np.sqrt(self.radius) / (1.0 - nu)),
                (C_INV_T, np.asarray(self.G0, dtype=float) / self.eta))
        out = np.empty((nrows, self.n_coef))
        for j, col in cols:
            out[:, j] = np.broadcast_to(np.asarray(col, dtype=float), (nrows,))
        return out

    def potential(self, delta, coef, state):
        """Energy (J) of the elastic term F_el = k_el delta^(3/2): k_el delta^(5/2)/(5/2)."""
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        return power_energy(np.atleast_2d(coef)[:, C_K_EL], 1.5, np.maximum(d, 0.0))

    def timescale(self, m_eff, v0):
        m = np.asarray(m_eff, dtype=float)
        return (m / (self.k_el() * np.sqrt(np.asarray(v0, dtype=float)))) ** 0.4

    def state_scale(self, x_c: float, v_c: float, t_c: float) -> tuple[float, ...]:
        """The state is a time."""
        return (t_c,)
