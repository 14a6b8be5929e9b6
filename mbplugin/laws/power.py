"""The power-law spring-damper kernel and the laws that are nothing more than it.

Hunt & Crossley (1975) wrote the general dissipative contact law

    F = k delta^n + lam delta^m ddelta^q

and most later laws are special cases that differ only in how ``lam`` is chosen. This module
holds that formula once (:func:`power_force`) together with the laws whose damping needs no
further theory: Hooke, Hertz, Kelvin-Voigt, the general Hunt-Crossley expression and
Azad-Featherstone. Laws whose ``lam`` comes from a target coefficient of restitution live in
:mod:`mbplugin.laws.hunt_crossley` and :mod:`mbplugin.laws.zhang2022` and reuse this kernel.

Coefficient row of the kernel (``n_coef = 7``), slots named ``C_*``::

    C_K     k      stiffness, N/m^n
    C_N     n      stiffness exponent, -
    C_LAM   lam    damping factor, N s^q/m^(m+q)
    C_M     m      indentation exponent of the damping term, -
    C_Q     q      velocity exponent of the damping term, -
    C_MODE  mode   damping option (0, 1 or 2, below)
    C_RC    rc     force floor as a fraction of the spring force, -

No state, no memory. ``mode`` 1 switches the damping off while the bodies recede
(compression-only damping, Jankowski 2005); ``mode`` 2 evaluates ddelta^q for ddelta < 0 as the
real part of the principal complex power, |ddelta|^q cos(pi q) (how Zhang et al. 2022 evaluated
it, see :mod:`mbplugin.laws.zhang2022`); ``rc`` > 0 floors the force at ``rc * k delta^n``
(Choi et al. 2010).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.errors import ParameterError
from mbplugin.laws import _ids
from mbplugin.laws.base import MODE_CLIP, MODE_TENSION, Law, Option, Param

N_COEF = 7
#: the kernel's coefficient slots (see the module docstring)
C_K, C_N, C_LAM, C_M, C_Q, C_MODE, C_RC = 0, 1, 2, 3, 4, 5, 6


@njit
def _abs_pow(a: float, p: float) -> float:
    """|a|^p for a >= 0 with fast paths for the common exponents."""
    if p == 1.5:
        return a * math.sqrt(a)
    if p == 1.0:
        return a
    if p == 0.5:
        return math.sqrt(a)
    if p == 0.0:
        return 1.0
    if p == 2.0:
        return a * a
    return a**p


@njit
def signed_pow(x: float, p: float) -> float:
    """sign(x)|x|^p = |x|^(p-1) x (0 at x = 0 for every p), with the fast paths of |x|^p.

    The odd continuation every law uses for a spring past delta = 0 (power, Bouc-Wen, plastic,
    Xiong, Jian kernels).
    """
    if x > 0.0:
        return _abs_pow(x, p)
    if x < 0.0:
        return -_abs_pow(-x, p)
    return 0.0


@njit
def hertz_k(e_star: float, r_eff: float) -> float:
    """Hertz stiffness k = (4/3) E* sqrt(R) (N/m^1.5) of a sphere-sphere or sphere-plane contact
    (Hertz 1881; Corral et al. 2021, Eqs. 5.3-5.5) from the effective modulus E* (Pa) and
    radius R (m); scalars or arrays."""
    return 4.0 / 3.0 * e_star * np.sqrt(r_eff)


@njit
def power_force(d: float, v: float, c: tuple, s: tuple) -> float:
    """Raw force (N) of k sign(d)|d|^n + lam |d|^m sign(v)|v|^q, with the mode/floor options.

    ``d`` is the indentation (m), ``v`` its rate (m/s, > 0 approaching). For d < 0 the spring term
    is continued as an odd function so that contact-end events see a clean sign change.
    """
    k = c[C_K]
    n = c[C_N]
    lam = c[C_LAM]
    ad = abs(d)
    dn = _abs_pow(ad, n)
    fel = k * dn if d >= 0.0 else -k * dn
    if lam == 0.0 or (c[C_MODE] == 1.0 and v <= 0.0):
        f = fel
    else:
        m = c[C_M]
        q = c[C_Q]
        dm = dn if m == n else _abs_pow(ad, m)
        if q == 1.0:
            vq = v
        elif v >= 0.0:
            vq = v**q
        elif c[C_MODE] == 2.0:
            # real part of the principal complex power |v|^q e^{i pi q} (Zhang et al. 2022)
            vq = abs(v) ** q * math.cos(math.pi * q)
        else:
            vq = -(abs(v) ** q)
        f = fel + lam * dm * vq
    rc = c[C_RC]
    if rc > 0.0:
        floor = rc * fel
        if f < floor:
            f = floor
    return f


@njit
def power_slopes(d: float, v: float, c: tuple, s: tuple) -> tuple:
    """:func:`power_force` (N, the same bits) and its partial derivatives: (f, df/dd (N/m),
    df/dv (N s/m)), one-sided at the branch points (d = 0, v = 0, the floor rc * fel)."""
    f = power_force(d, v, c, s)
    k = c[C_K]
    n = c[C_N]
    lam = c[C_LAM]
    ad = abs(d)
    dfel = k * n * _abs_pow(ad, n - 1.0) if n != 0.0 else 0.0
    rc = c[C_RC]
    if rc > 0.0:
        fel = k * _abs_pow(ad, n) if d >= 0.0 else -k * _abs_pow(ad, n)
        if f == rc * fel:  # on the floor
            return f, rc * dfel, 0.0
    if lam == 0.0 or (c[C_MODE] == 1.0 and v <= 0.0):
        return f, dfel, 0.0
    m = c[C_M]
    q = c[C_Q]
    dm = _abs_pow(ad, m)
    ddm = m * _abs_pow(ad, m - 1.0) if m != 0.0 else 0.0
    if d < 0.0:
        ddm = -ddm
    av = abs(v)
    if q == 1.0:
        vq, dvq = v, 1.0
    elif v >= 0.0:
        vq, dvq = v**q, q * av ** (q - 1.0)
    elif c[C_MODE] == 2.0:
        vq = av**q * math.cos(math.pi * q)
        dvq = -q * av ** (q - 1.0) * math.cos(math.pi * q)
    else:
        vq, dvq = -(av**q), q * av ** (q - 1.0)
    return f, dfel + lam * ddm * vq, lam * dm * dvq


@njit
def power_row(k: float, n: float, lam: float, m: float, q: float, mode: float,
              rc: float) -> tuple:
    """The kernel's coefficient tuple (``NC_MAX`` floats, zero padded) of one contact, each
    value in its ``C_*`` slot (units in the module docstring): the compiled callers that build
    a power row from scalars (``laws.kernels``' batch loops, Zhang et al.'s real-axis branch)
    do it here."""
    return (k, n, lam, m, q, mode, rc, 0.0, 0.0, 0.0, 0.0, 0.0)


def power_energy(k: Any, n: Any, x: Any) -> Any:
    """Energy (J) of the spring k x^n stretched to x >= 0: k x^(n+1)/(n+1) (vectorised)."""
    x = np.asarray(x, dtype=float)
    n = np.asarray(n, dtype=float)
    return np.asarray(k, dtype=float) * x ** (n + 1.0) / (n + 1.0)


def power_coefficients(
    n_rows: int,
    k: Any,
    n: Any,
    lam: Any = 0.0,
    m: Any = 0.0,
    q: Any = 1.0,
    mode: Any = 0.0,
    rc: Any = 0.0,
) -> np.ndarray:
    """Stack the kernel's coefficient rows (N, 7) from scalars or length-N arrays.

    Stored column by column (the rows are a transposed view of contiguous columns), so that a
    batch evaluation reads only the columns that vary per contact (k and lam; see
    ``laws.kernels.force_batch_uniform``)."""
    cols = np.empty((N_COEF, n_rows))  # filled by columns (contiguous), returned transposed
    for j, col in ((C_K, k), (C_N, n), (C_LAM, lam), (C_M, m), (C_Q, q), (C_MODE, mode),
                   (C_RC, rc)):
        cols[j] = col  # NumPy broadcasts a scalar or a length-N array (or raises)
    if all(np.ndim(x) == 0 for x in (n, m, q, mode, rc)):
        _UNIFORM[id(cols)] = cols
    return cols.T


#: Column blocks made by :func:`power_coefficients` with scalar exponents and options: in their
#: rows only k and lam vary (weak references, keyed by id).
_UNIFORM: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def uniform_rows(c: np.ndarray) -> bool:
    """True when ``c`` is (a row slice of) the coefficient rows :func:`power_coefficients`
    returned with scalar exponents and options: every row then has the exponents, mode and
    floor of the first, and a batch evaluation may read only the k and lam columns. Rows put
    together elsewhere (a store's rows, rows of several laws stacked) give False."""
    base = c.base
    return (base is not None and c.ndim == 2 and c.shape[1] == N_COEF
            and _UNIFORM.get(id(base)) is base)


class PowerLaw(Law):
    """Base class of the laws that evaluate through the power kernel."""

    kernel = _ids.POWER
    n_coef = N_COEF

    def potential(self, delta, coef, state):
        """k delta^(n+1)/(n+1) (J), the energy of the spring term k delta^n (the damping term
        does no recoverable work). A law that may pull stores k |delta|^(n+1)/(n+1) at
        delta < 0 too (the odd continuation of its spring); a clipped law stores nothing there.
        """
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        c = np.atleast_2d(coef)
        x = np.abs(d) if self.contact_mode == MODE_TENSION else np.maximum(d, 0.0)
        return power_energy(c[:, C_K], c[:, C_N], x)


K_PARAM = Param("k", "contact stiffness", "N/m^n", lo=0.0, lo_open=True)
N_PARAM = Param("n", "stiffness exponent", "-", default=1.5, lo=0.0, lo_open=True)


class Hooke(PowerLaw):
    """Linear spring F = k delta (Hooke 1678; review Corral et al. 2021, Eq. 5.1); no damping."""

    name = "hooke"
    title = "Hooke linear spring"
    source = "Hooke (1678); Corral et al., Nonlinear Dyn. 104 (2021), Eq. 5.1"
    equation = "F = k delta"
    params = (Param("k", "linear contact stiffness", "N/m", lo=0.0, lo_open=True),)
    cr_range = "elastic only (c_r = 1)"

    def coefficients(self, v_in, m_eff, r_eff):
        return power_coefficients(np.size(v_in), self.k, 1.0)

    def timescale(self, m_eff, v0):
        return np.sqrt(np.asarray(m_eff, dtype=float) / self.k)


class Hertz(PowerLaw):
    """Hertz's elastic contact F = k delta^n, n = 3/2 for spheres (Hertz 1881; review Eq. 5.2).

    ``k`` for spheres and sphere-plane follows from the materials, see
    :func:`mbplugin.contact.materials.hertz_stiffness`.
    """

    name = "hertz"
    title = "Hertz elastic contact"
    source = "Hertz, J. Reine Angew. Math. 92 (1881); Corral et al. (2021), Eqs. 5.2-5.5"
    equation = "F = k delta^n"
    params = (K_PARAM, N_PARAM)
    cr_range = "elastic only (c_r = 1)"

    def coefficients(self, v_in, m_eff, r_eff):
        return power_coefficients(np.size(v_in), self.k, self.n)


class KelvinVoigt(PowerLaw):
    """Linear spring-dashpot F = k delta + c ddelta (review Eq. 5.8).

    Give the damping ``c`` (N s/m) directly, or a target ``cr``: then
    c = 2 xi sqrt(k m_eff) with Anagnostopoulos' damping ratio
    xi = -ln(c_r) / sqrt(pi^2 + ln^2 c_r) (Anagnostopoulos 1988; review Eqs. 5.39-5.40).

    That ratio reproduces ``cr`` exactly only when the contact is kept until delta returns to 0
    and the force may pull (``allow_tension='yes'``). With the default ``allow_tension='no'`` the
    force is clipped at zero and the contact ends when the force vanishes, which gives a higher
    c_r.
    The force jumps to c*v_in at first contact (a known defect of the model).
    """

    name = "kelvin_voigt"
    title = "Kelvin-Voigt spring-dashpot"
    source = (
        "Kelvin-Voigt; Corral et al. (2021) Eq. 5.8; damping ratio from c_r: Anagnostopoulos, "
        "Earthq. Eng. Struct. Dyn. 16 (1988), review Eqs. 5.39-5.40"
    )
    equation = (
        "F = k delta + c ddelta,  c = 2 xi sqrt(k m_eff),  xi = -ln cr / sqrt(pi^2 + ln^2 cr)"
    )
    params = (
        Param("k", "linear contact stiffness", "N/m", lo=0.0, lo_open=True),
        Param("c", "damping coefficient (give c or cr)", "N s/m", lo=0.0, required=False),
        Param(
            "cr", "target coefficient of restitution (give c or cr)", "-",
            lo=0.0, hi=1.0, lo_open=True, required=False,
        ),
        Option(
            "allow_tension", "allow a pulling force and end contact at delta = 0", ("no", "yes"),
            "no",
        ),
    )
    cr_range = "any c_r with allow_tension='yes' (exact); c_r is overestimated when clipped"
    tension = "clipped at F >= 0 by default; option allow_tension='yes' lets it pull"

    needs_doc = "m_eff when cr is given"

    @property
    def needs(self):  # type: ignore[override]
        return ("m_eff",) if self.c is None else ()

    def _check(self) -> None:
        if (self.c is None) == (self.cr is None):
            raise one_of_error(self.name, "c", "cr")

    @property
    def contact_mode(self) -> int:
        return MODE_TENSION if self.allow_tension == "yes" else MODE_CLIP

    def coefficients(self, v_in, m_eff, r_eff):
        n = np.size(v_in)
        if self.c is not None:
            c = self.c
        else:
            c = 2.0 * anagnostopoulos_xi(self.cr) * np.sqrt(self.k * np.asarray(m_eff))
        return power_coefficients(n, self.k, 1.0, c, 0.0, 1.0)

    def timescale(self, m_eff, v0):
        return np.sqrt(np.asarray(m_eff, dtype=float) / self.k)


def anagnostopoulos_xi(cr: Any) -> Any:
    """Damping ratio of a linear oscillator that rebounds with ``cr`` (Anagnostopoulos 1988)."""
    lc = np.log(cr)
    return -lc / np.sqrt(np.pi**2 + lc**2)


class HuntCrossleyGeneral(PowerLaw):
    """Hunt & Crossley's general expression F = k delta^n + lam delta^m ddelta^q (1975).

    All exponents and ``lam`` are free (no c_r relation). ``ddelta^q`` is evaluated as
    sign(ddelta)|ddelta|^q so the damping always opposes the motion.
    """

    name = "hunt_crossley_general"
    title = "Hunt-Crossley general expression"
    source = "Hunt & Crossley, J. Appl. Mech. 42 (1975); Zhang et al., MSSP 168 (2022), Eq. 1"
    equation = "F = k delta^n + lam delta^m sign(ddelta)|ddelta|^q"
    params = (
        K_PARAM,
        N_PARAM,
        Param("lam", "damping factor", "N s^q/m^(m+q)", lo=0.0),
        Param("m", "indentation exponent of the damping term", "-", default=1.5, lo=0.0),
        Param("q", "velocity exponent of the damping term", "-", default=1.0, lo=0.0, lo_open=True),
    )
    cr_range = "depends on lam and the impact speed (no closed form)"

    def coefficients(self, v_in, m_eff, r_eff):
        return power_coefficients(np.size(v_in), self.k, self.n, self.lam, self.m, self.q)


class AzadFeatherstone(PowerLaw):
    """Azad & Featherstone (2014): F = max(0, sqrt(delta) (k delta + lam ddelta)) (Eqs. 8, 11).

    A linear spring-damper seen through a gearbox of ratio ~ sqrt(delta). Give ``lam`` directly,
    or ``lam_star`` with the effective radius: lam = lam_star sqrt(R) (Eq. 9). Stateless: the
    impact speed is not needed. c_r falls with impact speed, almost linearly in log(speed).
    """

    name = "azad_featherstone"
    title = "Azad-Featherstone nonlinear damping"
    source = "Azad & Featherstone, IEEE Trans. Robotics 30 (2014), Eqs. 8, 9, 11"
    equation = "F = max(0, k delta^(3/2) + lam delta^(1/2) ddelta),  lam = lam_star sqrt(R)"
    params = (
        Param("k", "Hertz stiffness (4/3) E* sqrt(R)", "N/m^1.5", lo=0.0, lo_open=True),
        Param("lam", "damping factor (give lam or lam_star)", "N s/m^1.5", lo=0.0, required=False),
        Param(
            "lam_star", "radius-free damping factor, lam = lam_star sqrt(R)", "N s/m^2",
            lo=0.0, required=False,
        ),
    )
    cr_range = "velocity dependent; fitted to measured c_r (no c_r input)"

    needs_doc = "r_eff when lam_star is given"

    @property
    def needs(self):  # type: ignore[override]
        return ("r_eff",) if self.lam is None else ()

    def _check(self) -> None:
        if (self.lam is None) == (self.lam_star is None):
            raise one_of_error(self.name, "lam", "lam_star")

    def coefficients(self, v_in, m_eff, r_eff):
        lam = self.lam if self.lam is not None else self.lam_star * np.sqrt(np.asarray(r_eff))
        return power_coefficients(np.size(v_in), self.k, 1.5, lam, 0.5, 1.0)


def one_of_error(law: str, a: str, b: str) -> ParameterError:
    """The error for two mutually exclusive parameters given both or neither."""
    return ParameterError(f"{law}: give exactly one of the parameters '{a}' or '{b}'")
