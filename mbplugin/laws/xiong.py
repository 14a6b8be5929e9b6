"""Xiong, Kikuuwe & Yamamoto (2014): nonlinear compliance with residual indentation.

Xiong et al. ask three things of a contact force: it is continuous, it has the shape of a Hertz
curve, and the indentation is non-zero when the force returns to zero. They obtain it from a
differential algebraic inclusion in an internal state ``a`` (review Eq. 5.81) that, with a
regularisation constant gamma > 0, becomes the ODE (review Eq. 5.82)::

    q     = sign(delta) |delta|^n                    (Xiong's p|p|^(k-1), n = their k >= 1)
    B     = beta1 + beta2 a
    a'    = max(-gamma a / (1 + gamma B),  gamma (q - a))
    F     = k max(0, q + gamma B (q - a))

The review prints F with an overall minus sign because Xiong's force acts against the
penetration p; in the project's convention (F > 0 repulsive) the sign is dropped. When the
bracket of F is positive, a' takes its second branch and F = k q + k B a' (the DAI's force);
exactly when it vanishes both branches of a' coincide (checked by the tests), so the force and
state are continuous. The unclipped bracket is the raw force: the contact ends when it
vanishes while the bodies recede, with delta > 0 left (the residual indentation, set mainly by
beta1). State ``a`` (units of delta^n) starts at 0. beta1, beta2 >= 0 lower c_r as they grow;
at fixed impact speed c_r falls with gamma until it becomes insensitive to it.

Coefficient row (``n_coef = 5``), slots named ``C_*``: ``C_K`` k (N/m^n), ``C_N`` n (-),
``C_BETA1`` beta1 (s), ``C_BETA2`` beta2 (s/m^n), ``C_GAMMA`` gamma (1/s). ODE state: ``S_A``,
a (m^n). No memory.
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit
from mbplugin.laws import _ids
from mbplugin.laws.base import Law, Param
from mbplugin.laws.power import power_energy, signed_pow

#: the coefficient slots and the ODE state slot (see the module docstring)
C_K, C_N, C_BETA1, C_BETA2, C_GAMMA = 0, 1, 2, 3, 4
S_A = 0


@njit
def xiong_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Raw force k (q + gamma B (q - a)) (N), before the max(0, .) of Eq. 5.82."""
    q = signed_pow(d, c[C_N])
    a = s[S_A]
    b = c[C_BETA1] + c[C_BETA2] * a
    return c[C_K] * (q + c[C_GAMMA] * b * (q - a))


@njit
def xiong_rate(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """a' = max(-gamma a/(1 + gamma B), gamma (q - a)) (Eq. 5.82)."""
    q = signed_pow(d, c[C_N])
    a = s[S_A]
    g = c[C_GAMMA]
    b = c[C_BETA1] + c[C_BETA2] * a
    relax = -g * a / (1.0 + g * b)
    follow = g * (q - a)
    return (max(relax, follow), 0.0, 0.0, 0.0)


class Xiong(Law):
    """Xiong, Kikuuwe & Yamamoto (2014): Hertz-shaped loop, residual indentation (Eqs. 5.81-5.82).

    See the module docstring for the equations. Parameters: ``k`` (N/m^n), ``n`` (Xiong's
    nonlinearity k >= 1; 1.5 gives a Hertz-like curve), ``beta1`` (s), ``beta2`` (s/m^n),
    ``gamma`` (1/s, regularisation). ``beta1 = beta2 = 0`` is the elastic power law k delta^n.
    """

    name = "xiong"
    title = "Xiong et al. (residual indentation)"
    source = (
        "Xiong, Kikuuwe & Yamamoto, J. Appl. Mech. 81 (2014) 021003; Corral et al. (2021) "
        "Eqs. 5.81-5.82"
    )
    equation = (
        "F = k max(0, q + gamma (beta1 + beta2 a)(q - a)), q = delta^n, "
        "a' = max(-gamma a/(1 + gamma (beta1 + beta2 a)), gamma (q - a))"
    )
    params = (
        Param("k", "stiffness", "N/m^n", lo=0.0, lo_open=True),
        Param("n", "nonlinearity exponent (Xiong's k)", "-", default=1.5, lo=1.0),
        Param("beta1", "damping parameter (residual indentation, initial slope)", "s", lo=0.0),
        Param("beta2", "damping parameter (roundness of the loop)", "s/m^n", default=0.0,
              lo=0.0),
        Param("gamma", "regularisation constant", "1/s", lo=0.0, lo_open=True),
    )
    state_names = ("a",)
    kernel = _ids.XIONG
    n_coef = 5
    cr_range = "set by beta1, beta2, gamma and the impact speed (no c_r input)"
    tension = "clipped at F >= 0 (never pulls); contact ends with a residual indentation"
    calibration_params = ("beta1",)

    def coefficients(self, v_in, m_eff, r_eff):
        nrows = np.size(v_in)
        out = np.empty((nrows, self.n_coef))
        for j, key in ((C_K, "k"), (C_N, "n"), (C_BETA1, "beta1"), (C_BETA2, "beta2"),
                       (C_GAMMA, "gamma")):
            out[:, j] = np.broadcast_to(np.asarray(self._values[key], dtype=float), (nrows,))
        return out

    def potential(self, delta, coef, state):
        """k delta^(n+1)/(n+1) (J): the energy of the force k q the law exerts when its state
        follows the indentation (a = q, the quasi-static limit, and the whole force when
        beta1 = beta2 = 0). The part k gamma B (q - a) comes from the lag of ``a`` behind q and
        is counted as dissipated, residual indentation included."""
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        c = np.atleast_2d(coef)
        return power_energy(c[:, C_K], c[:, C_N], np.maximum(d, 0.0))

    def state_scale(self, x_c: float, v_c: float, t_c: float) -> tuple[float, ...]:
        """``a`` has the units of delta^n."""
        return (x_c ** float(np.max(self.n)),)

