"""Viscoelastic spheres: Kuwabara-Kono, Brilliantov 1996, Zheng, Brilliantov 2015.

All four laws are F = k delta^(3/2) + chi delta^(1/2) ddelta (review Eq. 5.36) with chi from the
materials' viscosities and elastic constants, and evaluate through the power kernel. They
differ only in chi. Because the damping exponent is 1/2, the output c_r depends on the impact
speed: to first order in the damping, 1 - c_r grows as v0^(1/5), so c_r falls with impact speed
and tends to 1 as v0 -> 0 (the result these papers were written to explain).

Viscosities follow the review's glyph map: ``eta`` is the shear viscosity and ``zeta`` the bulk
viscosity (Pa s). The force is clipped at 0; the contact ends when it vanishes, which for these
laws happens before delta returns to 0 (the damping pulls at the end of an unclipped impact).
"""

from __future__ import annotations

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.laws.base import Option, Param
from mbplugin.laws.power import PowerLaw, power_coefficients

_K_HERTZ = Param("k", "Hertz contact stiffness", "N/m^1.5", lo=0.0, lo_open=True)
_E = Param("E", "Young's modulus", "Pa", lo=0.0, lo_open=True)
_ETA = Param("eta", "shear viscosity", "Pa s", lo=0.0)
_ZETA = Param("zeta", "bulk viscosity", "Pa s", lo=0.0)


def _viscous_compliance(eta, zeta, form):
    """One body's term of Kuwabara-Kono's D0 (review Eq. 5.38), 1/(Pa s)."""
    if form == "printed":
        return (4.0 * (3.0 * zeta + eta) ** 2 - 9.0 * (zeta - eta) ** 2) / (
            36.0 * (3.0 * zeta + eta) * zeta * eta
        )
    # [4(3 zeta + eta)^2 - (3 zeta - 2 eta)^2] / [36 zeta eta (3 zeta + eta)], simplified
    return (3.0 * zeta + 4.0 * eta) / (4.0 * eta * (3.0 * zeta + eta))


class KuwabaraKono(PowerLaw):
    """Kuwabara & Kono (1987): chi = 2 sqrt(R_eff) / D0 (review Eqs. 5.36-5.38).

    D0 sums one term per body built from its shear (``eta``) and bulk (``zeta``) viscosities.
    The review prints the term as [4(3 zeta + eta)^2 - 9(zeta - eta)^2]/[36 (3 zeta + eta) zeta
    eta]. That expression is negative for zeta < eta/9 (a damper that feeds energy in), and the
    structure of chi = 2 sqrt(R)/D0 = (4/3) sqrt(R)/D0 * 3/2 says D0 is the viscous counterpart of
    the elastic compliance (1 - nu^2)/E, which in shear and bulk moduli (G, K) is exactly
    [4(3K + G)^2 - (3K - 2G)^2]/[36 K G (3K + G)] = (3K + 4G)/(4G(3K + G)). The default
    ``d0_form='consistent'`` uses that form with (K, G) -> (zeta, eta) (spec Sect. 3.4, note on
    Eq. 5.38); ``d0_form='printed'`` uses the review's expression and rejects viscosities that
    make it non-positive. Body 2's viscosities default to body 1's (same material). The fraction
    2 sqrt(R)/D0 follows the dimensions (spec Sect. 6 item 2). No plasticity.
    """

    name = "kuwabara_kono"
    title = "Kuwabara-Kono (viscoelastic spheres)"
    source = "Kuwabara & Kono, Jpn. J. Appl. Phys. 26 (1987); Corral et al. (2021) Eqs. 5.36-5.38"
    equation = "F = k delta^1.5 + (2 sqrt(R_eff)/D0) delta^0.5 ddelta,  D0 = sum of viscous terms"
    params = (
        _K_HERTZ,
        Param("eta1", "shear viscosity of body 1", "Pa s", lo=0.0, lo_open=True),
        Param("zeta1", "bulk viscosity of body 1", "Pa s", lo=0.0),
        Param("eta2", "shear viscosity of body 2 (default: eta1)", "Pa s", lo=0.0, lo_open=True,
              required=False),
        Param("zeta2", "bulk viscosity of body 2 (default: zeta1)", "Pa s", lo=0.0,
              required=False),
        Option("d0_form", "D0 term: consistent (3 zeta - 2 eta)^2 or the printed 9(zeta - eta)^2",
               ("consistent", "printed"), "consistent"),
    )
    needs = ("r_eff",)
    cr_range = "velocity dependent: c_r falls with impact speed, -> 1 as v -> 0"
    calibration_params = ("eta1",)

    def _bodies(self):
        eta2 = self.eta1 if self.eta2 is None else self.eta2
        zeta2 = self.zeta1 if self.zeta2 is None else self.zeta2
        return ((self.eta1, self.zeta1, "1"), (eta2, zeta2, "2"))

    def _check(self) -> None:
        if self.d0_form != "printed":
            return
        for eta, zeta, body in self._bodies():
            eta = np.asarray(eta, dtype=float)
            zeta = np.asarray(zeta, dtype=float)
            if np.any(9.0 * zeta <= eta):
                raise ParameterError(
                    f"{self.name}: parameter 'zeta{body}' must exceed eta{body}/9 with "
                    f"d0_form='printed' (else the printed D0 term is <= 0); allowed range "
                    f"(eta{body}/9, inf)"
                )

    def d0(self) -> np.ndarray | float:
        """Kuwabara-Kono's D0 (1/(Pa s))."""
        return sum(_viscous_compliance(np.asarray(e, dtype=float), np.asarray(z, dtype=float),
                                       self.d0_form) for e, z, _ in self._bodies())

    def coefficients(self, v_in, m_eff, r_eff):
        chi = 2.0 * np.sqrt(np.asarray(r_eff, dtype=float)) / self.d0()
        return power_coefficients(np.size(v_in), self.k, 1.5, chi, 0.5, 1.0)


def _nu_param(lo: float) -> Param:
    return Param("nu", "Poisson's ratio", "-", lo=lo, hi=0.5, lo_open=True, hi_open=lo == 0.0)


class Brilliantov1996(PowerLaw):
    """Brilliantov, Spahn, Hertzsch & Poschel (1996): chi = (3/2) k A (review Eqs. 5.47-5.48).

        A = (1/3) (3 zeta - eta)^2 / (3 zeta + 2 eta) * (1 - nu^2)(1 - 2 nu) / (E nu^2)

    with ``eta`` the shear and ``zeta`` the bulk viscosity, E and nu the elastic constants. A (s)
    is a material time; it vanishes at 3 zeta = eta, one of the inconsistencies the authors
    corrected in 2015 (``brilliantov2015``). Implemented as printed; nu in (0, 0.5).
    """

    name = "brilliantov1996"
    title = "Brilliantov et al. 1996 (viscoelastic granular)"
    source = (
        "Brilliantov, Spahn, Hertzsch & Poschel, Phys. Rev. E 53 (1996); Corral et al. (2021) "
        "Eqs. 5.47-5.48"
    )
    equation = "F = k delta^1.5 + (3/2) k A delta^0.5 ddelta,  A from Eq. 5.48"
    params = (_K_HERTZ, _E, _nu_param(0.0), _ETA, _ZETA)
    cr_range = "velocity dependent: c_r falls with impact speed, -> 1 as v -> 0"
    calibration_params = ("zeta",)

    def _check(self) -> None:
        if np.any(3.0 * np.asarray(self.zeta) + 2.0 * np.asarray(self.eta) <= 0.0):
            raise ParameterError(
                f"{self.name}: parameters 'eta' and 'zeta' cannot both be 0 "
                "(3 zeta + 2 eta must be > 0)"
            )

    def material_time(self):
        """A of Eq. 5.48 (s)."""
        eta = np.asarray(self.eta, dtype=float)
        zeta = np.asarray(self.zeta, dtype=float)
        nu = np.asarray(self.nu, dtype=float)
        return ((3.0 * zeta - eta) ** 2 / (3.0 * (3.0 * zeta + 2.0 * eta))
                * (1.0 - nu**2) * (1.0 - 2.0 * nu) / (self.E * nu**2))

    def coefficients(self, v_in, m_eff, r_eff):
        chi = 1.5 * self.k * self.material_time()
        return power_coefficients(np.size(v_in), self.k, 1.5, chi, 0.5, 1.0)


class Zheng(PowerLaw):
    """Zheng, Zhu & Yu (2012): chi = 2 A E sqrt(R_eff)/(1 - nu^2) (review Eqs. 5.49-5.50).

        A = [(1 - 2 nu)(1 + nu)/E] (2 zeta + eta/3)

    Zheng et al. re-derived Brilliantov's A for a viscoelastic sphere on a rigid plane. The
    flattened review text can also be read as (2 zeta + eta)/3 (spec Sect. 6 item 3); the default
    ``a_form='eta_over_3'`` is the spec's primary reading, ``'sum_over_3'`` the alternative.
    For a sphere on a rigid plane chi equals (3/2) k A with k the Hertz stiffness.
    """

    name = "zheng"
    title = "Zheng et al. (viscoelastic sphere)"
    source = "Zheng, Zhu & Yu, Powder Technol. 226 (2012); Corral et al. (2021) Eqs. 5.49-5.50"
    equation = "F = k delta^1.5 + 2 A E sqrt(R_eff)/(1 - nu^2) delta^0.5 ddelta, A from Eq. 5.49"
    params = (
        _K_HERTZ, _E, _nu_param(-1.0), _ETA, _ZETA,
        Option("a_form", "reading of Eq. 5.49: (2 zeta + eta/3) or (2 zeta + eta)/3",
               ("eta_over_3", "sum_over_3"), "eta_over_3"),
    )
    needs = ("r_eff",)
    cr_range = "velocity dependent: c_r falls with impact speed, -> 1 as v -> 0"
    calibration_params = ("eta",)

    def material_time(self):
        """A of Eq. 5.49 (s)."""
        eta = np.asarray(self.eta, dtype=float)
        zeta = np.asarray(self.zeta, dtype=float)
        nu = np.asarray(self.nu, dtype=float)
        visc = 2.0 * zeta + eta / 3.0 if self.a_form == "eta_over_3" else (2.0 * zeta + eta) / 3.0
        return (1.0 - 2.0 * nu) * (1.0 + nu) / self.E * visc

    def coefficients(self, v_in, m_eff, r_eff):
        nu = np.asarray(self.nu, dtype=float)
        chi = (2.0 * self.material_time() * self.E * np.sqrt(np.asarray(r_eff, dtype=float))
               / (1.0 - nu**2))
        return power_coefficients(np.size(v_in), self.k, 1.5, chi, 0.5, 1.0)


class Brilliantov2015(PowerLaw):
    """Brilliantov, Pimenova & Goldobin (2015): chi = (3/2) k A (review Eq. 5.51).

        A = (1/E) (1 + nu)/(1 - nu) [(4/3) eta (1 - nu + nu^2) + zeta (1 - 2 nu)^2]

    The rigorous, corrected version of the 1996 constant for a wide range of materials. A is the
    rate of change of ln(E/(1 - nu^2)) when the shear and bulk moduli are replaced by the
    viscosities (the viscous counterpart of the Hertz modulus), which the tests check.
    """

    name = "brilliantov2015"
    title = "Brilliantov et al. 2015 (rigorous viscoelastic)"
    source = "Brilliantov, Pimenova & Goldobin, EPL 109 (2015); Corral et al. (2021) Eq. 5.51"
    equation = "F = k delta^1.5 + (3/2) k A delta^0.5 ddelta,  A from Eq. 5.51"
    params = (_K_HERTZ, _E, _nu_param(-1.0), _ETA, _ZETA)
    cr_range = "velocity dependent: c_r falls with impact speed, -> 1 as v -> 0"
    calibration_params = ("eta",)

    def material_time(self):
        """A of Eq. 5.51 (s)."""
        eta = np.asarray(self.eta, dtype=float)
        zeta = np.asarray(self.zeta, dtype=float)
        nu = np.asarray(self.nu, dtype=float)
        return ((1.0 + nu) / ((1.0 - nu) * self.E)
                * (4.0 / 3.0 * eta * (1.0 - nu + nu**2) + zeta * (1.0 - 2.0 * nu) ** 2))

    def coefficients(self, v_in, m_eff, r_eff):
        chi = 1.5 * self.k * self.material_time()
        return power_coefficients(np.size(v_in), self.k, 1.5, chi, 0.5, 1.0)
