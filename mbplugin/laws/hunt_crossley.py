"""The Hunt-Crossley family: F = k delta^n (1 + chi(c_r) ddelta / v_in).

Every law here has the same force (Corral et al. 2021, Eq. 5.18, with the stiffness exponent
``n`` left free) and differs only in the dimensionless hysteresis factor
``chi(c_r) = lam * v_in / k``. The impact speed ``v_in`` is latched at contact onset; below
``v_min`` it is replaced by ``v_min`` so that a resting contact or a last, slow re-contact gets a
finite damping (the same regularisation Exudyn and Modia3D use). No division by zero can occur.

Because the damping term has the exponent of the spring, the output c_r of an isolated impact
depends on chi only: not on mass, stiffness, exponent or impact speed. It solves the exact
relation (Gonthier et al. 2004; Zhang & Sharf 2004; review Eq. 5.23, rewritten)

    chi - ln(1 + chi) = -chi c - ln(1 - chi c),

see :func:`exact_cr`. The laws below are explicit approximations of its inverse.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import brentq

from mbplugin._jit import njit
from mbplugin.laws import _ids
from mbplugin.laws.base import Param
from mbplugin.laws.power import K_PARAM, N_PARAM, PowerLaw, power_coefficients

CR_PARAM = Param(
    "cr", "target coefficient of restitution (Newton)", "-", lo=0.0, hi=1.0, lo_open=True
)
V_MIN_PARAM = Param(
    "v_min",
    "floor on the latched impact speed (resting contact / slow re-contact)",
    "m/s",
    default=1e-3,
    lo=0.0,
    lo_open=True,
)


@njit
def hc_damping(k, chi, v_in, v_min):
    """The family's damping coefficient lam = k chi / max(v_in, v_min) (review Eq. 5.18 with the
    latched impact speed floored at ``v_min``). Scalars in compiled code (the engine's compiled
    onset, :func:`mbplugin.laws.kernels.onset_coefficients`); ``hc_damping.py_func`` takes
    arrays (:meth:`HuntCrossleyFamily.coefficients`)."""
    return k * chi / np.maximum(v_in, v_min)


class HuntCrossleyFamily(PowerLaw):
    """Base class: F = k delta^n + (k chi(c_r) / max(v_in, v_min)) delta^n ddelta."""

    params = (K_PARAM, N_PARAM, CR_PARAM, V_MIN_PARAM)
    needs = ("v_in",)
    equation_chi: ClassVar[str] = ""

    @classmethod
    def chi(cls, cr: Any) -> Any:
        """Dimensionless hysteresis factor chi(c_r) = lam v_in / k (vectorised)."""
        raise NotImplementedError

    def coefficients(self, v_in, m_eff, r_eff):
        v = np.asarray(v_in, dtype=float)
        lam = hc_damping.py_func(self.k, self.chi(self.cr), v, self.v_min)
        return power_coefficients(np.size(v), self.k, self.n, lam, self.n, 1.0)

    def onset_rule(self) -> tuple[int, float, float] | None:
        """(ONSET_HC, chi(c_r), v_min): the power kernel's slot ``C_LAM`` by :func:`hc_damping`
        from its slot ``C_K`` (:mod:`mbplugin.laws.power`)."""
        if self.size != 1 or type(self).coefficients is not HuntCrossleyFamily.coefficients:
            return None
        return _ids.ONSET_HC, float(self.chi(self.cr)), float(self.v_min)

    @classmethod
    def _eq(cls) -> str:
        return f"F = k delta^n (1 + chi ddelta / v_in),  chi = {cls.equation_chi}"

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.equation_chi:
            cls.equation = cls._eq()


class HuntCrossley(HuntCrossleyFamily):
    """Hunt & Crossley (1975): chi = 3(1 - c_r)/2, the first c_r-based damping.

    Derived for c_r close to 1; it underestimates the dissipation at low c_r (review Sect. 5.3,
    Eqs. 5.9-5.12; Marhefka & Orin 1999 used it for robot contact).
    """

    name = "hunt_crossley"
    aliases = ("marhefka_orin",)
    title = "Hunt-Crossley"
    source = "Hunt & Crossley, J. Appl. Mech. 42 (1975); Corral et al. (2021) Eqs. 5.9-5.12"
    equation_chi = "3(1 - cr)/2"
    cr_range = "accurate only near c_r = 1"

    @classmethod
    def chi(cls, cr):
        return 1.5 * (1.0 - np.asarray(cr))


class LeeWang(HuntCrossleyFamily):
    """Lee & Wang (1983): chi = 3(1 - c_r)/4 (review Eq. 5.35); high c_r only."""

    name = "lee_wang"
    title = "Lee-Wang"
    source = "Lee & Wang, J. Mech. Transm. Autom. Des. 105 (1983); Corral et al. (2021) Eq. 5.35"
    equation_chi = "3(1 - cr)/4"
    cr_range = "accurate only near c_r = 1"

    @classmethod
    def chi(cls, cr):
        return 0.75 * (1.0 - np.asarray(cr))


class HerbertMcWhannell(HuntCrossleyFamily):
    """Herbert & McWhannell (1977): chi = 6(1 - c_r)/((2c_r - 1)^2 + 3) (review Eq. 5.19)."""

    name = "herbert_mcwhannell"
    title = "Herbert-McWhannell"
    source = "Herbert & McWhannell, J. Eng. Ind. 99 (1977); Corral et al. (2021) Eq. 5.19"
    equation_chi = "6(1 - cr)/((2 cr - 1)^2 + 3)"
    cr_range = "accurate only near c_r = 1"

    @classmethod
    def chi(cls, cr):
        cr = np.asarray(cr)
        return 6.0 * (1.0 - cr) / ((2.0 * cr - 1.0) ** 2 + 3.0)


class LankaraniNikravesh(HuntCrossleyFamily):
    """Lankarani & Nikravesh (1990): chi = 3(1 - c_r^2)/4 (review Eqs. 5.41-5.44).

    From an energy balance that assumes the dissipated energy is small against the elastic
    energy, so only for c_r near 1, and for impact speeds below 1e-5 sqrt(E/rho).
    """

    name = "lankarani_nikravesh"
    title = "Lankarani-Nikravesh"
    source = "Lankarani & Nikravesh, J. Mech. Des. 112 (1990); Corral et al. (2021) Eq. 5.43"
    equation_chi = "3(1 - cr^2)/4"
    cr_range = "accurate only near c_r = 1 (and v_in <= 1e-5 sqrt(E/rho))"

    @classmethod
    def chi(cls, cr):
        return 0.75 * (1.0 - np.asarray(cr) ** 2)


class Gonthier(HuntCrossleyFamily):
    """Gonthier et al. (2004): chi = (1 - c_r^2)/c_r, approximating the exact relation.

    Review Eqs. 5.23-5.26 (approximation d = 1 - c_r^2 of the exact relation).
    """

    name = "gonthier"
    title = "Gonthier et al."
    source = "Gonthier, McPhee, Lange, Piedboeuf, Multibody Syst. Dyn. 11 (2004); review Eq. 5.26"
    equation_chi = "(1 - cr^2)/cr"
    cr_range = "whole range (0, 1]"

    @classmethod
    def chi(cls, cr):
        cr = np.asarray(cr)
        return (1.0 - cr**2) / cr


class ZhiyingQishao(HuntCrossleyFamily):
    """Zhiying & Qishao (2006): chi = 3(1 - c_r^2) exp(2(1 - c_r))/4 (review Eq. 5.56)."""

    name = "zhiying_qishao"
    title = "Zhiying-Qishao"
    source = "Qin Zhiying & Lu Qishao, J. Dyn. Control 4 (2006); Corral et al. (2021) Eq. 5.56"
    equation_chi = "3(1 - cr^2) exp(2(1 - cr))/4"
    cr_range = "low and medium c_r"

    @classmethod
    def chi(cls, cr):
        cr = np.asarray(cr)
        return 0.75 * (1.0 - cr**2) * np.exp(2.0 * (1.0 - cr))


class GharibHurmuzlu(HuntCrossleyFamily):
    """Gharib & Hurmuzlu (2012): chi = 1/c_r as printed by the review (Eq. 5.57).

    The review's extraction of this formula is garbled; 1/c_r is its printed form. It does not
    vanish at c_r = 1, so the law dissipates even for a "perfectly elastic" input: it is meant
    for low c_r only.
    """

    name = "gharib_hurmuzlu"
    title = "Gharib-Hurmuzlu"
    source = "Gharib & Hurmuzlu, J. Appl. Mech. 79 (2012); Corral et al. (2021) Eq. 5.57"
    equation_chi = "1/cr"
    cr_range = "low c_r only"

    @classmethod
    def chi(cls, cr):
        return 1.0 / np.asarray(cr)


class Flores(HuntCrossleyFamily):
    """Flores et al. (2011), found independently by Ye et al. (2009): chi = 8(1 - c_r)/(5 c_r).

    Review Eqs. 5.61-5.62 (assumed kinematics with exponent b = 2).
    """

    name = "flores"
    aliases = ("ye",)
    title = "Flores et al. / Ye et al."
    source = (
        "Flores, Machado, Silva, Martins, Multibody Syst. Dyn. 25 (2011); Ye, Li, Zhu, "
        "Earthq. Eng. Struct. Dyn. 38 (2009); Corral et al. (2021) Eq. 5.61"
    )
    equation_chi = "8(1 - cr)/(5 cr)"
    cr_range = "whole range (0, 1]"

    @classmethod
    def chi(cls, cr):
        cr = np.asarray(cr)
        return 1.6 * (1.0 - cr) / cr


class HuGuo(HuntCrossleyFamily):
    """Hu & Guo (2015): chi = 3(1 - c_r)/(2 c_r) (review Eq. 5.63).

    Equal to Zhang et al. (2022) Eq. 35 with m = n, q = 1, whatever n and the mass are.
    """

    name = "hu_guo"
    title = "Hu-Guo"
    source = "Hu & Guo, Multibody Syst. Dyn. 35 (2015); Corral et al. (2021) Eq. 5.63"
    equation_chi = "3(1 - cr)/(2 cr)"
    cr_range = "whole range (0, 1]; designed for soft materials"

    @classmethod
    def chi(cls, cr):
        cr = np.asarray(cr)
        return 1.5 * (1.0 - cr) / cr


class Zhang2020(HuntCrossleyFamily):
    """Zhang et al. (2020) as printed by the review: chi = 249(1 - c_r)/(6 + 160 c_r) (Eq. 5.64).

    The review's extraction is garbled and the original (Mech. Mach. Theory 153, 103946) is not
    among our sources; Zhang et al. (2022) Tables 1-2 list values this printed form misses by
    ~3e-4 in c_r (see docs/validation). Implemented as printed.
    """

    name = "zhang2020"
    title = "Zhang et al. 2020 (review's printed form)"
    source = "Zhang, Li, Zhao, He, Mech. Mach. Theory 153 (2020); Corral et al. (2021) Eq. 5.64"
    equation_chi = "249(1 - cr)/(6 + 160 cr)"
    cr_range = "whole range (0, 1]; best at low c_r"

    @classmethod
    def chi(cls, cr):
        cr = np.asarray(cr)
        return 249.0 * (1.0 - cr) / (6.0 + 160.0 * cr)


class SafaeifarFarshidianfar(HuntCrossleyFamily):
    """Safaeifar & Farshidianfar (2020): chi = 5(1 - c_r)/(4 c_r) (review Eqs. 5.65-5.66)."""

    name = "safaeifar_farshidianfar"
    title = "Safaeifar-Farshidianfar"
    source = "Safaeifar & Farshidianfar, Multibody Syst. Dyn. 50 (2020); Corral et al. Eq. 5.66"
    equation_chi = "5(1 - cr)/(4 cr)"
    cr_range = "whole range (0, 1]"

    @classmethod
    def chi(cls, cr):
        cr = np.asarray(cr)
        return 1.25 * (1.0 - cr) / cr


def exact_cr(chi: float) -> float:
    """Output c_r of an isolated impact of any Hunt-Crossley-family law with factor ``chi``.

    Solves chi - ln(1 + chi) = -chi c - ln(1 - chi c) for c in (0, 1] (the exact relation of
    Gonthier et al. 2004 / Zhang & Sharf 2004, review Eq. 5.23 in the variable chi = d / c_r).
    """
    chi = float(chi)
    if chi < 0.0 or not math.isfinite(chi):
        raise ValueError(f"chi must be finite and >= 0, got {chi}")
    if chi == 0.0:
        return 1.0
    lhs = chi - math.log1p(chi)
    # In s = -ln(1 - chi c), so that c stays representable when chi c -> 1 (small c_r):
    # -chi c - ln(1 - chi c) = s - (1 - e^-s) = s + expm1(-s)
    s_root = brentq(lambda s: s + math.expm1(-s) - lhs, 0.0, lhs + 1.0, xtol=1e-300,
                    rtol=4 * np.finfo(float).eps)
    return -math.expm1(-s_root) / chi
