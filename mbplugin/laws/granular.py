"""Group 1 of the review and Tsuji et al.: Hertz springs with empirical dashpots from DEM.

Every law here has the form F = k delta^(3/2) + lam delta^m ddelta^q with lam fixed by the user
(fitted to experiments by the original authors) and evaluates through the power kernel
(:func:`mbplugin.laws.power.power_force`); only :meth:`coefficients` differs. None of them has a
c_r input. By dimensional analysis the output c_r of an isolated impact depends only on

    Pi = lam v0^q X^(m - 3/2) / k,    X = (m_eff v0^2 / k)^(2/5)   (the Hertz length),

so c_r varies with the impact speed as Pi ~ v0^(q + 4(m - 3/2)/5): a damping exponent m = 1/4
with q = 1 makes c_r independent of the impact speed (Falcon et al. 1998's gamma = 1/4, Tsuji et
al. 1992), m = 1/2 gives the viscoelastic v0^(1/5) law, m = 0 a c_r rising with speed. The
exponent of the spring is fixed at the printed 3/2 (the scaling statements above rely on it).

All laws clip the force at F >= 0 and end the contact when the force vanishes while the bodies
recede. Laws whose dashpot does not vanish at delta = 0 (m = 0: Ristow, Schafer) jump to
lam v_in at first contact, like Kelvin-Voigt.
"""

from __future__ import annotations

import numpy as np

from mbplugin.laws.base import Param
from mbplugin.laws.power import PowerLaw, power_coefficients

_K_HERTZ = Param("k", "Hertz contact stiffness", "N/m^1.5", lo=0.0, lo_open=True)


class Ristow(PowerLaw):
    """Ristow (1992), also Lee & Herrmann (1993): F = k delta^(3/2) + chi m_eff ddelta.

    Review Eq. 5.13 (Group 1, granular flow between two chambers). ``chi`` (1/s) was fitted to
    experiments; the damping is proportional to the effective mass latched at contact onset.
    """

    name = "ristow"
    aliases = ("lee_herrmann",)
    title = "Ristow / Lee-Herrmann"
    source = "Ristow, J. Phys. I France 2 (1992); Corral et al. (2021) Eq. 5.13"
    equation = "F = k delta^(3/2) + chi m_eff ddelta"
    params = (_K_HERTZ, Param("chi", "damping rate (empirical)", "1/s", lo=0.0))
    needs = ("m_eff",)
    cr_range = "empirical chi; c_r rises with impact speed (no c_r input)"
    tension = "clipped at F >= 0 (never pulls); force jumps to chi m_eff v_in at first contact"
    calibration_params = ("chi",)

    def coefficients(self, v_in, m_eff, r_eff):
        lam = self.chi * np.asarray(m_eff, dtype=float)
        return power_coefficients(np.size(v_in), self.k, 1.5, lam, 0.0, 1.0)


class Schafer(PowerLaw):
    """Schafer, Dippel & Wolf (1996): F = k delta^(3/2) + chi ddelta (review Sect. 5.1, Table 1).

    A constant linear dashpot on a Hertz spring (granular spheres); ``chi`` is empirical.
    """

    name = "schafer"
    title = "Schafer et al."
    source = "Schafer, Dippel & Wolf, J. Phys. I France 6 (1996); Corral et al. (2021) Table 1"
    equation = "F = k delta^(3/2) + chi ddelta"
    params = (_K_HERTZ, Param("chi", "linear damping coefficient (empirical)", "N s/m", lo=0.0))
    cr_range = "empirical chi; c_r rises with impact speed (no c_r input)"
    tension = "clipped at F >= 0 (never pulls); force jumps to chi v_in at first contact"
    calibration_params = ("chi",)

    def coefficients(self, v_in, m_eff, r_eff):
        return power_coefficients(np.size(v_in), self.k, 1.5, self.chi, 0.0, 1.0)


class Falcon(PowerLaw):
    """Falcon, Laroche, Fauve & Coste (1998): F = k delta^(3/2) + chi |delta|^gamma ddelta.

    Review Eq. 5.15. ``gamma`` = 0 is a linear dashpot; Falcon et al. found that
    gamma = 1/4 (the default) makes c_r independent of the impact speed when gravity is
    negligible, otherwise gamma is fitted. ``chi`` is fitted for each gamma. The review's
    printed |delta|^gamma is read as the indentation to the power gamma (spec Sect. 6 item 7).
    """

    name = "falcon"
    title = "Falcon et al."
    source = "Falcon, Laroche, Fauve, Coste, Eur. Phys. J. B 3 (1998); Corral et al. Eq. 5.15"
    equation = "F = k delta^(3/2) + chi |delta|^gamma ddelta"
    params = (
        _K_HERTZ,
        Param("chi", "damping factor (empirical)", "N s/m^(1+gamma)", lo=0.0),
        Param("gamma", "indentation exponent of the damping", "-", default=0.25, lo=0.0),
    )
    cr_range = "empirical chi; speed independent for gamma = 1/4 (no c_r input)"
    calibration_params = ("chi",)

    def coefficients(self, v_in, m_eff, r_eff):
        return power_coefficients(np.size(v_in), self.k, 1.5, self.chi, self.gamma, 1.0)


class BordbarHyppanen(PowerLaw):
    """Bordbar & Hyppanen (2007): F = k delta^(3/2) + chi delta^0.65 ddelta (review Eq. 5.16).

    The exponent 0.65 comes from impact data of ice particles (Saturn's rings); ``chi`` is
    empirical. c_r falls slowly with impact speed (as v0^0.32 in the damping group).
    """

    name = "bordbar_hyppanen"
    title = "Bordbar-Hyppanen"
    source = "Bordbar & Hyppanen, J. Numer. Anal. Ind. Appl. Math. 2 (2007); Corral et al. Eq. 5.16"
    equation = "F = k delta^(3/2) + chi delta^0.65 ddelta"
    params = (_K_HERTZ, Param("chi", "damping factor (empirical)", "N s/m^1.65", lo=0.0))
    cr_range = "empirical chi; c_r falls with impact speed (no c_r input)"
    calibration_params = ("chi",)

    def coefficients(self, v_in, m_eff, r_eff):
        return power_coefficients(np.size(v_in), self.k, 1.5, self.chi, 0.65, 1.0)


class Alizadeh(PowerLaw):
    """Alizadeh, Bertrand & Chaouki (2013): F = k delta^(3/2) + 4 pi lam delta ddelta^nl.

    Review Eq. 5.17: a Hertz spring and a dashpot filled with a non-Newtonian fluid of
    consistency ``lam`` (printed as a glyph that may be lambda or mu, spec Sect. 6 item 7) and
    flow index ``nl``; both are experimental. The exponent sits on the rate, not on the
    indentation; ddelta^nl is evaluated as sign(ddelta)|ddelta|^nl so the dashpot always resists.
    """

    name = "alizadeh"
    title = "Alizadeh et al. (non-Newtonian dashpot)"
    source = "Alizadeh, Bertrand & Chaouki, Powder Technol. 237 (2013); Corral et al. Eq. 5.17"
    equation = "F = k delta^(3/2) + 4 pi lam delta sign(ddelta)|ddelta|^nl"
    params = (
        _K_HERTZ,
        Param("lam", "dashpot fluid consistency (empirical)", "N s^nl/m^(1+nl)", lo=0.0),
        Param("nl", "flow index, exponent of ddelta", "-", default=1.0, lo=0.0, lo_open=True),
    )
    cr_range = "empirical lam, nl (no c_r input)"
    calibration_params = ("lam",)

    def coefficients(self, v_in, m_eff, r_eff):
        lam = 4.0 * np.pi * np.asarray(self.lam, dtype=float)
        return power_coefficients(np.size(v_in), self.k, 1.5, lam, 1.0, self.nl)


class Tsuji(PowerLaw):
    """Tsuji, Tanaka & Ishida (1992): F = k delta^(3/2) + alpha sqrt(m_eff k) delta^(1/4) ddelta.

    Review Eqs. 5.45-5.46 (granular plug flow). With the damping exponent 1/4 and the factor
    sqrt(m_eff k), c_r depends on ``alpha`` alone: not on mass, stiffness or impact speed.
    Tsuji et al. related alpha to c_r through an empirical curve the review does not give; use
    :func:`mbplugin.impact.calibrate` to get alpha for a target c_r.
    """

    name = "tsuji"
    title = "Tsuji et al."
    source = "Tsuji, Tanaka & Ishida, Powder Technol. 71 (1992); Corral et al. Eqs. 5.45-5.46"
    equation = "F = k delta^(3/2) + alpha sqrt(m_eff k) delta^(1/4) ddelta"
    params = (_K_HERTZ, Param("alpha", "damping constant (empirical, c_r curve)", "-", lo=0.0))
    needs = ("m_eff",)
    cr_range = "any c_r via alpha; independent of impact speed and mass"
    calibration_params = ("alpha",)
    calibration_invariant = ()  # c_r depends on alpha only

    def coefficients(self, v_in, m_eff, r_eff):
        lam = self.alpha * np.sqrt(np.asarray(m_eff, dtype=float) * self.k)
        return power_coefficients(np.size(v_in), self.k, 1.5, lam, 0.25, 1.0)
