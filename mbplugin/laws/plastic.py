"""Plastic laws with memory: Goldsmith, Thornton, Yigit et al.; and Wang et al. (c_r* from yield).

The first three load along one curve and unload along another that starts at the maximum
indentation delta_max and leaves a permanent indentation delta_p > 0. They keep per-contact
*memory* (``memory_names``), updated by :func:`update` after every accepted step and exactly at
maximum compression. Because the memory only changes at step ends, the force must be continuous
when it does: each kernel uses the loading branch with the current delta whenever
delta >= stored delta_max (still loading), and the unloading branch from the stored values
otherwise; the unloading branch passes through (delta_max, F(delta_max)) by construction.
All three clip the force at 0 and end the contact when it vanishes while the bodies recede,
i.e. at delta = delta_p (the residual indentation). Below delta_p the raw force is continued as
an odd power so that the end-of-contact event sees a clean sign change.

Kernel coefficient rows and memory, slots named ``C_<law>_*`` (coefficients) and ``M_<law>_*``
(memory columns; in the kernels' state tuple at ``S_<law>_*`` = ``MEM0`` + the column)::

    goldsmith  C_GS_K k (N/m^n), C_GS_N n (-), C_GS_LOSS 1 - c_r^2 (-)
               memory M_GS_DMAX delta_max (m), M_GS_FMAX F_max (N), M_GS_DP delta_p (m)
    thornton   C_TH_K k_L (N/m^1.5), C_TH_DY delta_y (m), C_TH_PY P_y (N), C_TH_E E* (Pa),
               C_TH_SY sigma_y (Pa)
               memory M_TH_DMAX delta_max (m), M_TH_PSTAR P* (N), M_TH_KH k_H (N/m^1.5),
               M_TH_DP delta_p (m)
    yigit      C_YG_K k (N/m^1.5), C_YG_DY delta_y (m), C_YG_KY k_y (N/m), C_YG_LINEAR 1 for the
               linearised variant else 0, C_YG_SLOPE the power of gamma in the unloading slope
               memory M_YG_DMAX delta_max (m), M_YG_DF delta_f (m), M_YG_KU k_unload (N/m)

``wang`` is the Zhiying-Qishao Hunt-Crossley-family damping evaluated at a c_r* that falls with
impact speed according to the yield strengths; it has no memory and uses the power kernel.
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin._jit import njit
from mbplugin.errors import ParameterError
from mbplugin.laws import _ids
from mbplugin.laws._ids import MEM0, MEM1, MEM2, MEM3
from mbplugin.laws.base import Law, Option, Param
from mbplugin.laws.hunt_crossley import CR_PARAM, V_MIN_PARAM, ZhiyingQishao
from mbplugin.laws.power import (
    K_PARAM,
    N_PARAM,
    PowerLaw,
    hertz_k,
    one_of_error,
    power_coefficients,
    power_energy,
    signed_pow,
)

# the kernels' slots (see the module docstring): coefficients, memory columns, state slots
C_GS_K, C_GS_N, C_GS_LOSS = 0, 1, 2
M_GS_DMAX, M_GS_FMAX, M_GS_DP = 0, 1, 2
S_GS_DMAX, S_GS_FMAX, S_GS_DP = MEM0 + M_GS_DMAX, MEM0 + M_GS_FMAX, MEM0 + M_GS_DP
C_TH_K, C_TH_DY, C_TH_PY, C_TH_E, C_TH_SY = 0, 1, 2, 3, 4
M_TH_DMAX, M_TH_PSTAR, M_TH_KH, M_TH_DP = 0, 1, 2, 3
S_TH_DMAX, S_TH_PSTAR, S_TH_KH, S_TH_DP = MEM0, MEM1, MEM2, MEM3
C_YG_K, C_YG_DY, C_YG_KY, C_YG_LINEAR, C_YG_SLOPE = 0, 1, 2, 3, 4
M_YG_DMAX, M_YG_DF, M_YG_KU = 0, 1, 2
S_YG_DMAX, S_YG_DF, S_YG_KU = MEM0 + M_YG_DMAX, MEM0 + M_YG_DF, MEM0 + M_YG_KU


@njit
def kept(s: tuple) -> tuple:
    """The memory of the state tuple ``s`` unchanged (its ``NMEM_MAX`` slots from ``MEM0``)."""
    return (s[MEM0], s[MEM1], s[MEM2], s[MEM3])


def _memory_if_unloaded_now(law: Law, delta: np.ndarray, coef: np.ndarray,
                            state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(delta, memory) with the memory updated as if maximum compression were at ``delta``.

    The elastic energy of a plastic law is what its unloading branch returns. While the contact
    is still loading (delta above the stored delta_max) that branch is the one the memory
    update would latch now; below it the stored branch applies unchanged.
    """
    d = np.ascontiguousarray(np.atleast_1d(delta), dtype=float)
    st = np.array(np.atleast_2d(state), dtype=float, order="C")
    law.update_memory(d, np.zeros_like(d), coef, st)
    return d, st[:, law.n_state:]


# --------------------------------------------------------------------------------------------------
# Goldsmith: Hertz loading, modified-Hertz unloading
# --------------------------------------------------------------------------------------------------
@njit
def goldsmith_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Goldsmith's law (N): k d^n while loading, F_max ((d - d_p)/(d_max - d_p))^n unloading."""
    dmax = s[S_GS_DMAX]
    if d >= dmax or dmax <= 0.0:
        return c[C_GS_K] * signed_pow(d, c[C_GS_N])
    dp = s[S_GS_DP]
    return s[S_GS_FMAX] * signed_pow((d - dp) / (dmax - dp), c[C_GS_N])


@njit
def goldsmith_update(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """Latch delta_max, F_max = k delta_max^n and delta_p = (1 - c_r^2) delta_max."""
    if d > s[S_GS_DMAX]:
        return (d, c[C_GS_K] * d ** c[C_GS_N], c[C_GS_LOSS] * d, 0.0)
    return kept(s)


class Goldsmith(Law):
    """Goldsmith's modified Hertz law with permanent indentation (review Eq. 5.7).

    Loading is Hertzian, F = k delta^n; restitution follows
    F = F_max ((delta - delta_p)/(delta_max - delta_p))^n from the latched maximum (F_max and
    delta_max occur together). The review leaves delta_p to its reference [128] (Lankarani &
    Nikravesh 1994), where the energy balance of this pair of curves fixes it from c_r:
    the work returned is F_max (delta_max - delta_p)/(n + 1) against k delta_max^(n+1)/(n + 1)
    absorbed, so delta_p = (1 - c_r^2) delta_max and the output c_r equals the input exactly
    (for any n, mass and impact speed). The contact ends at delta = delta_p; never pulls.
    """

    name = "goldsmith"
    title = "Goldsmith (modified Hertz, permanent indentation)"
    source = (
        "Goldsmith, Impact (1960); Lankarani & Nikravesh, Nonlinear Dyn. 5 (1994); "
        "Corral et al. (2021) Eq. 5.7"
    )
    equation = (
        "F = k delta^n (loading); F = F_max ((delta - delta_p)/(delta_max - delta_p))^n "
        "(unloading), delta_p = (1 - cr^2) delta_max"
    )
    params = (K_PARAM, N_PARAM, CR_PARAM)
    memory_names = ("delta_max", "f_max", "delta_p")
    kernel = _ids.GOLDSMITH
    n_coef = 3
    cr_range = "whole range (0, 1], exact (plastic energy loss)"
    tension = "clipped at F >= 0 (never pulls); contact ends at delta = delta_p > 0"
    calibration_params = ("cr",)
    calibration_invariant = ()  # output c_r = cr exactly

    def coefficients(self, v_in, m_eff, r_eff):
        nrows = np.size(v_in)
        out = np.empty((nrows, self.n_coef))
        out[:, C_GS_K] = self.k
        out[:, C_GS_N] = self.n
        out[:, C_GS_LOSS] = 1.0 - np.asarray(self.cr, dtype=float) ** 2
        return out

    def potential(self, delta, coef, state):
        """Energy (J) the unloading branch returns from delta down to delta_p:
        F_max (delta_max - delta_p)/(n + 1) ((delta - delta_p)/(delta_max - delta_p))^(n+1),
        i.e. a spring k_u (delta - delta_p)^n with k_u = F_max/(delta_max - delta_p)^n."""
        d, mem = _memory_if_unloaded_now(self, delta, coef, state)
        n = np.atleast_2d(coef)[:, C_GS_N]
        dmax, fmax, dp = mem[:, M_GS_DMAX], mem[:, M_GS_FMAX], mem[:, M_GS_DP]
        span = dmax - dp
        safe = np.where(span > 0.0, span, 1.0)
        x = np.clip(d - dp, 0.0, None)
        return np.where(span > 0.0, power_energy(fmax / safe**n, n, x), 0.0)


# --------------------------------------------------------------------------------------------------
# Thornton: elastic-perfectly plastic spheres
# --------------------------------------------------------------------------------------------------
@njit
def _thornton_loading(d: float, c: tuple) -> float:
    """Hertz up to yield, then P_y + pi sigma_y R (d - d_y) (N)."""
    if d <= c[C_TH_DY]:
        return c[C_TH_K] * signed_pow(d, 1.5)
    r = (0.75 * c[C_TH_K] / c[C_TH_E]) ** 2
    return c[C_TH_PY] + math.pi * c[C_TH_SY] * r * (d - c[C_TH_DY])


@njit
def thornton_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Thornton's law (N): loading curve while d >= delta_max, else elastic recovery."""
    dmax = s[S_TH_DMAX]
    if d >= dmax or dmax <= c[C_TH_DY]:
        return _thornton_loading(d, c)
    return s[S_TH_KH] * signed_pow(d - s[S_TH_DP], 1.5)


@njit
def thornton_update(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """Latch delta_max and P*; derive the recovery stiffness k_H and delta_p (force continuity)."""
    if d <= s[S_TH_DMAX]:
        return kept(s)
    p_star = _thornton_loading(d, c)
    if d <= c[C_TH_DY]:
        return (d, p_star, c[C_TH_K], 0.0)
    e_star = c[C_TH_E]
    py = c[C_TH_PY]
    r_p = (4.0 * e_star / (3.0 * p_star)
           * ((2.0 * p_star + py) / (2.0 * math.pi * c[C_TH_SY])) ** 1.5)
    k_h = hertz_k(e_star, r_p)
    return (d, p_star, k_h, d - (p_star / k_h) ** (2.0 / 3.0))


class Thornton(Law):
    """Thornton (1997): elastic-perfectly plastic spheres (review Eqs. 5.67-5.71).

    Loading: F = k_L delta^(3/2) up to the yield indentation delta_y, then
    F = P_y + pi sigma_y R (delta - delta_y) up to delta_max (the slope continues Hertz's,
    pi sigma_y R = (3/2) k_L sqrt(delta_y)). Unloading: F = k_H (delta - delta_p)^(3/2) with
    k_H = (4/3) E* sqrt(R_p), R_p = (4 E*/(3 P*)) ((2 P* + P_y)/(2 pi sigma_y))^(3/2), P* the
    force at delta_max, and delta_p from continuity at delta_max. sigma_y = 3 P_y/(2 pi R delta_y)
    is the limiting contact pressure (Eq. 5.70), P_y = k_L delta_y^(3/2) (Eq. 5.71).

    Parameters: ``k`` = k_L = (4/3) E* sqrt(R), ``E`` = E* (so R = (3 k/(4 E*))^2), and either
    ``sigma_y`` or ``delta_y``. Memory: delta_max, P*, k_H, delta_p. c_r is 1 below the yield
    speed V_y = sqrt(4 k_L delta_y^(5/2)/(5 m_eff)) and falls above it as Thornton's closed form.
    """

    name = "thornton"
    title = "Thornton (elastic-perfectly plastic)"
    source = "Thornton, J. Appl. Mech. 64 (1997); Corral et al. (2021) Eqs. 5.67-5.71"
    equation = (
        "F = k_L delta^1.5 (delta <= delta_y); P_y + pi sigma_y R (delta - delta_y) (loading); "
        "k_H (delta - delta_p)^1.5 (recovery)"
    )
    params = (
        Param("k", "elastic stiffness k_L = (4/3) E* sqrt(R_eff)", "N/m^1.5", lo=0.0,
              lo_open=True),
        Param("E", "effective Young's modulus E*", "Pa", lo=0.0, lo_open=True),
        Param("sigma_y", "limiting contact pressure at yield (give sigma_y or delta_y)", "Pa",
              lo=0.0, lo_open=True, required=False),
        Param("delta_y", "indentation at yield (give sigma_y or delta_y)", "m", lo=0.0,
              lo_open=True, required=False),
    )
    memory_names = ("delta_max", "p_star", "k_h", "delta_p")
    kernel = _ids.THORNTON
    n_coef = 5
    cr_range = "velocity dependent: 1 below the yield speed, falling above it"
    tension = "clipped at F >= 0 (never pulls); contact ends at delta = delta_p > 0"
    calibration_params = ("sigma_y", "delta_y")

    def _check(self) -> None:
        if (self.sigma_y is None) == (self.delta_y is None):
            raise one_of_error(self.name, "sigma_y", "delta_y")

    def radius(self):
        """The effective radius R = (3 k_L/(4 E*))^2 (m) implied by k and E."""
        return (0.75 * np.asarray(self.k, dtype=float) / self.E) ** 2

    def yield_values(self):
        """(delta_y (m), sigma_y (Pa), P_y (N))."""
        r = self.radius()
        if self.delta_y is not None:
            dy = np.asarray(self.delta_y, dtype=float)
            sy = 2.0 * self.E * np.sqrt(dy / r) / np.pi
        else:
            sy = np.asarray(self.sigma_y, dtype=float)
            dy = r * (np.pi * sy / (2.0 * self.E)) ** 2
        return dy, sy, self.k * dy**1.5

    def yield_speed(self, m_eff):
        """V_y = sqrt(4 k_L delta_y^(5/2)/(5 m_eff)) (m/s): the highest elastic impact speed."""
        dy, _, _ = self.yield_values()
        return np.sqrt(4.0 * self.k * dy**2.5 / (5.0 * np.asarray(m_eff, dtype=float)))

    def coefficients(self, v_in, m_eff, r_eff):
        nrows = np.size(v_in)
        dy, sy, py = self.yield_values()
        out = np.empty((nrows, self.n_coef))
        for j, col in ((C_TH_K, self.k), (C_TH_DY, dy), (C_TH_PY, py), (C_TH_E, self.E),
                       (C_TH_SY, sy)):
            out[:, j] = np.broadcast_to(np.asarray(col, dtype=float), (nrows,))
        return out

    def potential(self, delta, coef, state):
        """Energy (J) of the elastic recovery k_H (delta - delta_p)^(3/2) from delta down to
        delta_p: k_H (delta - delta_p)^(5/2)/(5/2) (k_H = k_L, delta_p = 0 below yield)."""
        d, mem = _memory_if_unloaded_now(self, delta, coef, state)
        return power_energy(mem[:, M_TH_KH], 1.5, np.clip(d - mem[:, M_TH_DP], 0.0, None))


# --------------------------------------------------------------------------------------------------
# Yigit et al.: three-phase elastoplastic law and its linearised form
# --------------------------------------------------------------------------------------------------
@njit
def yigit_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Yigit et al.'s law (N), three-phase (c[C_YG_LINEAR] = 0) or linearised (= 1)."""
    k = c[C_YG_K]
    dy = c[C_YG_DY]
    ky = c[C_YG_KY]
    dmax = s[S_YG_DMAX]
    loading = d >= dmax or dmax <= 0.0
    if c[C_YG_LINEAR] == 1.0:
        if loading:
            return ky * d
        return s[S_YG_KU] * (d - s[S_YG_DF])
    if loading:
        if d <= dy:
            return k * signed_pow(d, 1.5)
        return k * dy**1.5 + ky * (d - dy)
    if dmax <= dy:
        return k * signed_pow(d, 1.5)
    return k * (signed_pow(d, 1.5) - dmax**1.5 + dy**1.5) + ky * (dmax - dy)


@njit
def yigit_update(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """Latch delta_max; the linearised form also latches delta_f and its unloading slope."""
    if d <= s[S_YG_DMAX]:
        return kept(s)
    if c[C_YG_LINEAR] != 1.0:
        return (d, 0.0, 0.0, 0.0)
    base = 1.0 - c[C_YG_KY] / (c[C_YG_K] * math.sqrt(d))
    if base <= 0.0:
        # below 2.25 delta_y: no permanent set, elastic unloading
        return (d, 0.0, c[C_YG_KY], 0.0)
    df = d * base ** (2.0 / 3.0)
    g = 1.0 - df / d
    return (d, df, c[C_YG_KY] / g ** c[C_YG_SLOPE], 0.0)


class Yigit(Law):
    """Yigit, Christoforou & Majeed (2011): three-phase elastoplastic law (Eqs. 5.75-5.79).

    ``variant='three_phase'`` (default, Eq. 5.75): F = k delta^(3/2) up to the yield
    indentation delta_y, then k delta_y^(3/2) + k_y (delta - delta_y) up to delta_max, and on
    unloading F = k (delta^(3/2) - delta_max^(3/2) + delta_y^(3/2)) + k_y (delta_max - delta_y),
    with k_y = 1.5 k sqrt(delta_y) (slope continuity, Eq. 5.76). The force vanishes at the
    permanent set delta_f^(3/2) = delta_max^(3/2) - delta_y^(3/2) - (k_y/k)(delta_max - delta_y).

    ``variant='linearised'`` (Eqs. 5.77-5.79): F = k_y delta loading and
    F = (k_y/gamma) (delta - delta_f) unloading, with delta_f = delta_max (1 -
    k_y/(k sqrt(delta_max)))^(2/3) and the plastic-loss factor gamma = 1 - delta_f/delta_max
    (delta_f = 0 below delta_max = 2.25 delta_y where the bracket turns negative). The review
    prints the unloading slope as k_y/gamma^2; that makes the force jump up by 1/gamma at
    delta_max and return all the absorbed energy (c_r = 1), whereas k_y/gamma is continuous
    and gives c_r = sqrt(gamma) (spec Sect. 6 item 5). ``unloading_slope='printed'`` selects
    the printed slope. The viscous part of Yigit's model is not in the review's equations and is
    not included. Memory: delta_max (and delta_f, unloading slope for the linearised form).
    """

    name = "yigit"
    title = "Yigit et al. (three-phase elastoplastic)"
    source = (
        "Yigit, Christoforou & Majeed, Nonlinear Dyn. 66 (2011); Corral et al. (2021) "
        "Eqs. 5.75-5.79"
    )
    equation = (
        "F = k delta^1.5 | k delta_y^1.5 + k_y (delta - delta_y) | "
        "k (delta^1.5 - delta_max^1.5 + delta_y^1.5) + k_y (delta_max - delta_y), "
        "k_y = 1.5 k sqrt(delta_y)"
    )
    params = (
        Param("k", "Hertz contact stiffness", "N/m^1.5", lo=0.0, lo_open=True),
        Param("delta_y", "indentation at yield", "m", lo=0.0, lo_open=True),
        Option("variant", "three-phase law (Eq. 5.75) or its linearisation (Eq. 5.77)",
               ("three_phase", "linearised"), "three_phase"),
        Option("unloading_slope", "linearised unloading slope: continuous k_y/gamma or the "
               "printed k_y/gamma^2", ("continuous", "printed"), "continuous"),
    )
    memory_names = ("delta_max", "delta_f", "k_unload")
    kernel = _ids.YIGIT
    n_coef = 5
    cr_range = "velocity dependent (plastic); low and medium impact speeds"
    tension = "clipped at F >= 0 (never pulls); contact ends at the permanent set delta_f > 0"
    calibration_params = ("delta_y",)

    def k_y(self):
        """The elastoplastic stiffness k_y = 1.5 k sqrt(delta_y) (N/m), Eq. 5.76."""
        return 1.5 * np.asarray(self.k, dtype=float) * np.sqrt(self.delta_y)

    def coefficients(self, v_in, m_eff, r_eff):
        nrows = np.size(v_in)
        out = np.empty((nrows, self.n_coef))
        out[:, C_YG_K] = self.k
        out[:, C_YG_DY] = self.delta_y
        out[:, C_YG_KY] = self.k_y()
        out[:, C_YG_LINEAR] = 1.0 if self.variant == "linearised" else 0.0
        out[:, C_YG_SLOPE] = 2.0 if self.unloading_slope == "printed" else 1.0
        return out

    def potential(self, delta, coef, state):
        """Energy (J) the unloading branch returns from delta down to where it reaches F = 0.

        Three-phase: F_u = k (s^(3/2) - delta_max^(3/2) + delta_y^(3/2)) + k_y (delta_max -
        delta_y) integrates to k (delta^(5/2) - delta_f^(5/2))/(5/2) + C (delta - delta_f),
        C = k_y (delta_max - delta_y) - k (delta_max^(3/2) - delta_y^(3/2)), delta_f the
        permanent set (F_u = 0); Hertz k delta^(5/2)/(5/2) if delta_max <= delta_y.
        Linearised: k_u (delta - delta_f)^2/2 with the latched slope k_u.
        """
        d, mem = _memory_if_unloaded_now(self, delta, coef, state)
        c = np.atleast_2d(coef)
        k, dy, ky, linear = c[:, C_YG_K], c[:, C_YG_DY], c[:, C_YG_KY], c[:, C_YG_LINEAR]
        dmax = mem[:, M_YG_DMAX]
        lin = power_energy(mem[:, M_YG_KU], 1.0, np.clip(d - mem[:, M_YG_DF], 0.0, None))
        plastic = dmax > dy
        const = ky * (dmax - dy) - k * (dmax**1.5 - dy**1.5)
        df = np.where(plastic, np.clip(-const / np.where(plastic, k, 1.0), 0.0, None), 0.0)
        df = df ** (2.0 / 3.0)
        x = np.maximum(d, df)
        three = power_energy(k, 1.5, x) - power_energy(k, 1.5, df) + np.where(
            plastic, const, 0.0) * (x - df)
        return np.where(linear == 1.0, lin, three)

    def timescale(self, m_eff, v0):
        m = np.asarray(m_eff, dtype=float)
        if self.variant == "linearised":
            return np.sqrt(m / self.k_y())
        return (m / (self.k * np.sqrt(np.asarray(v0, dtype=float)))) ** 0.4


# --------------------------------------------------------------------------------------------------
# Wang et al.: Zhiying-Qishao damping at a speed-dependent c_r*
# --------------------------------------------------------------------------------------------------
def wang_kstar(sigma1, sigma2, rtol):
    """K* of Wang et al. (review Eq. 5.59) from the yield strengths (one reading of the glyphs).

    sigma1/(sigma1 - sigma2) if sigma1 >= 2 sigma2; sigma1/sigma2 if |sigma1 - sigma2| <= rtol
    max(sigma1, sigma2) (the printed "approximately equal"); sigma1/(sigma1 + sigma2) otherwise.
    """
    s1 = np.asarray(sigma1, dtype=float)
    s2 = np.asarray(sigma2, dtype=float)
    close = np.abs(s1 - s2) <= rtol * np.maximum(s1, s2)
    return np.where(s1 >= 2.0 * s2, s1 / np.where(s1 > s2, s1 - s2, 1.0),
                    np.where(close, s1 / s2, s1 / (s1 + s2)))


class Wang(PowerLaw):
    """Wang et al.: Zhiying-Qishao damping at c_r* = 1 - 0.26 K* v_in^(1/3) (Eqs. 5.58-5.60).

    F = k delta^n (1 + chi(c_r*) ddelta / v_in), chi = 3(1 - c*^2) exp(2(1 - c*))/4 (the
    Zhiying-Qishao factor, Eq. 5.60, with the body's c*^2 rather than Table 1's c*^3), where the
    c_r* falls with the impact speed through K*, a ratio of the yield strengths of the two bodies
    (Eq. 5.59). The review's operator glyphs are unreadable; following the spec (Sect. 6 item 4)
    they are read as K* = sigma1/(sigma1 - sigma2) if sigma1 >= 2 sigma2, sigma1/sigma2 if the
    strengths are approximately equal (within ``approx_rtol``), sigma1/(sigma1 + sigma2)
    otherwise. Give ``kstar`` directly or ``sigma1`` and ``sigma2``. The 0.26 v^(1/3) term is
    dimensional as printed: v_in in m/s. c_r* is clamped to [0, 1] (chi stays finite at 0).

    Not a member of the c_r-only Hunt-Crossley family: its damping depends on v_in.
    """

    name = "wang"
    title = "Wang et al. (c_r* from yield strengths)"
    source = "Wang et al. (Chinese-language paper); Corral et al. (2021) Eqs. 5.58-5.60"
    equation = (
        "F = k delta^n (1 + chi(cr*) ddelta/v_in), chi = 3(1 - cr*^2) exp(2(1 - cr*))/4, "
        "cr* = 1 - 0.26 K* v_in^(1/3)"
    )
    params = (
        K_PARAM,
        N_PARAM,
        Param("kstar", "yield-strength ratio K* (give kstar or sigma1, sigma2)", "-", lo=0.0,
              required=False),
        Param("sigma1", "yield strength of body 1", "Pa", lo=0.0, lo_open=True, required=False),
        Param("sigma2", "yield strength of body 2", "Pa", lo=0.0, lo_open=True, required=False),
        Param("approx_rtol", "relative tolerance of 'sigma2 ~ sigma1'", "-", default=0.05,
              lo=0.0, hi=1.0),
        V_MIN_PARAM,
    )
    needs = ("v_in",)
    cr_range = "c_r* = 1 - 0.26 K* v_in^(1/3) falls with impact speed"
    calibration_params = ("kstar", "sigma1")

    def _check(self) -> None:
        given = (self.sigma1 is not None, self.sigma2 is not None)
        if self.kstar is None and not all(given):
            raise ParameterError(
                f"{self.name}: give 'kstar' or both 'sigma1' and 'sigma2' (yield strengths, Pa)"
            )
        if self.kstar is not None and any(given):
            raise one_of_error(self.name, "kstar", "sigma1/sigma2")

    def k_star(self):
        """K* (dimensionless)."""
        if self.kstar is not None:
            return np.asarray(self.kstar, dtype=float)
        return wang_kstar(self.sigma1, self.sigma2, self.approx_rtol)

    def cr_star(self, v_in):
        """c_r* = 1 - 0.26 K* v_in^(1/3), clamped to [0, 1] (Eq. 5.58)."""
        v = np.maximum(np.asarray(v_in, dtype=float), self.v_min)
        return np.clip(1.0 - 0.26 * self.k_star() * np.cbrt(v), 0.0, 1.0)

    def coefficients(self, v_in, m_eff, r_eff):
        v = np.maximum(np.asarray(v_in, dtype=float), self.v_min)
        lam = self.k * ZhiyingQishao.chi(self.cr_star(v)) / v
        return power_coefficients(np.size(v_in), self.k, self.n, lam, self.n, 1.0)

