"""Regularised Coulomb friction with an optional Stribeck curve and viscous term.

For a contact with normal force ``F_N >= 0`` (from the normal law) and tangential slip velocity
``v_t`` (of body b relative to body a at the contact point), the friction force on body b is

    F_t = -( mu(s) F_N r(s) + c_v s ) v_t / s,          s = |v_t|,

with the Stribeck curve (Armstrong-Helouvry, Dupont & Canudas de Wit 1994, Eq. 4; the Gaussian
form of Andersson, Soderberg & Bjorklund 2007, Eq. 4)

    mu(s) = mu_c + (mu_s - mu_c) exp(-(s / v_s)^2)

and a regularisation ``r`` of the sign function (Andersson et al. 2007, Sect. 3.1):

    r(s) = tanh(s / v_eps)                  ("tanh", smooth, the default)
    r(s) = min(s / v_eps, 1)                ("linear", Karnopp-like viscous band)

Regularisation creep (documented behaviour): a regularised law cannot hold a body exactly at
rest under a tangential load. A block of any mass on a slope of angle theta with
mu_s > tan(theta) slides steadily at

    v_creep = v_eps * atanh(tan(theta) / mu_s)              (tanh regularisation)
    v_creep = v_eps * tan(theta) / mu_s                     (linear regularisation)

(neglecting the Stribeck drop, valid while v_creep << v_s). Choose ``v_eps`` so that this creep is
acceptable over the simulated time; the smaller ``v_eps``, the stiffer the equations
(dF_t/dv_t = mu_s F_N / v_eps at s = 0, see :func:`friction_stiffness`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mbplugin._jit import njit
from mbplugin.errors import ParameterError

REGULARISATIONS = ("tanh", "linear")


@dataclass(frozen=True)
class Friction:
    """Friction parameters of one contact pair rule.

    ``mu``      kinetic (Coulomb) coefficient mu_c (-), >= 0
    ``mu_s``    static coefficient (-), >= mu; default ``mu`` (no Stribeck effect)
    ``v_s``     Stribeck velocity (m/s), > 0
    ``v_eps``   regularisation velocity (m/s), > 0
    ``viscous`` viscous coefficient c_v (N s/m), >= 0
    ``regularisation``  "tanh" or "linear"
    """

    mu: float = 0.0
    mu_s: float | None = None
    v_s: float = 0.01
    v_eps: float = 1e-4
    viscous: float = 0.0
    regularisation: str = "tanh"

    def __post_init__(self) -> None:
        _check("mu", self.mu, 0.0, math.inf, False)
        if self.mu_s is not None:
            _check("mu_s", self.mu_s, 0.0, math.inf, False)
            if self.mu_s < self.mu:
                raise ParameterError(
                    f"friction: mu_s = {self.mu_s:g} must be >= mu = {self.mu:g}; allowed range "
                    "[mu, inf)"
                )
        _check("v_s", self.v_s, 0.0, math.inf, True)
        _check("v_eps", self.v_eps, 0.0, math.inf, True)
        _check("viscous", self.viscous, 0.0, math.inf, False)
        if self.regularisation not in REGULARISATIONS:
            raise ParameterError(
                f"friction: regularisation = {self.regularisation!r} is not one of "
                f"{{{', '.join(REGULARISATIONS)}}}"
            )

    @property
    def static(self) -> float:
        return self.mu if self.mu_s is None else self.mu_s

    @property
    def active(self) -> bool:
        return self.mu > 0.0 or self.static > 0.0 or self.viscous > 0.0

    def creep_speed(self, slope_rad: float) -> float:
        """Steady sliding speed (m/s) of a block on a slope under this regularisation."""
        ratio = math.tan(slope_rad) / self.static if self.static > 0 else math.inf
        if ratio >= 1.0:
            return math.inf
        if self.regularisation == "tanh":
            return self.v_eps * math.atanh(ratio)
        return self.v_eps * ratio


def _check(name: str, value: float, lo: float, hi: float, lo_open: bool) -> None:
    ok = math.isfinite(value) and (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        left = "(" if lo_open else "["
        raise ParameterError(f"friction: {name} = {value:g} is outside its allowed range "
                             f"{left}{lo:g}, inf)")


@njit
def _curve(s, mu, mu_s, v_s, v_eps, linear):
    """The pieces of the law at slip speed ``s`` (m/s) (see module doc): (x = s / v_eps,
    r(x) / x, tanh x (tanh regularisation, x >= 1e-6; else 0), mu(s), exp(-(s / v_s)^2) (0
    without a Stribeck drop, mu_s = mu))."""
    x = s / v_eps
    t = 0.0
    if linear:
        r_over_x = 1.0 if x < 1.0 else 1.0 / x
    elif x < 1e-6:
        r_over_x = 1.0 - x * x / 3.0
    else:
        t = math.tanh(x)
        r_over_x = t / x
    ex = math.exp(-((s / v_s) ** 2)) if mu_s != mu else 0.0
    return x, r_over_x, t, mu + (mu_s - mu) * ex, ex


@njit
def friction_scalar(v0, v1, v2, fn, mu, mu_s, v_s, v_eps, viscous, linear):
    """Friction force (f0, f1, f2) on body b for the slip velocity (v0, v1, v2) (see module doc)."""
    s = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    _, r_over_x, _, mu_eff, _ = _curve(s, mu, mu_s, v_s, v_eps, linear)
    g = mu_eff * max(fn, 0.0) * r_over_x / v_eps + viscous
    return -g * v0, -g * v1, -g * v2


@njit
def friction_slopes(v0, v1, v2, fn, mu, mu_s, v_s, v_eps, viscous, linear):
    """:func:`friction_scalar`'s force (f0, f1, f2) (N, the same bits) and its derivatives:
    (f0, f1, f2, g, h, e0, e1, e2) with dF_t/dv_t = -g I - h v_t v_t^T (g N s/m, h N s^3/m^3)
    and dF_t/dF_N = (e0, e1, e2) (-, zero where F_N <= 0). From F_t = -g(s) v_t,
    g = mu(s) F_N rho(x) / v_eps + c_v, x = s / v_eps, rho = r(x) / x:
    h = g'(s) / s = F_N / v_eps (mu'(s) / s rho + mu(s) rho'(x) / x / v_eps^2), finite at
    s = 0 (mu'(s) / s = -2 (mu_s - mu) exp(-(s / v_s)^2) / v_s^2; tanh: rho'(x) / x =
    (x (1 - tanh^2 x) - tanh x) / x^3, its series -2/3 + 8 x^2 / 15 - 34 x^4 / 105 below
    x = 0.01; linear: 0 inside the band, -1 / x^3 outside)."""
    s = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    x, r_over_x, t, mu_eff, ex = _curve(s, mu, mu_s, v_s, v_eps, linear)
    g = mu_eff * max(fn, 0.0) * r_over_x / v_eps + viscous
    h = 0.0
    e = 0.0
    if fn > 0.0:
        rho = r_over_x
        if linear:
            drho_x = 0.0 if x < 1.0 else -1.0 / (x * x * x)
        elif x < 1e-2:
            x2 = x * x
            rho = 1.0 - x2 / 3.0 + 2.0 * x2 * x2 / 15.0
            drho_x = -2.0 / 3.0 + 8.0 * x2 / 15.0 - 34.0 * x2 * x2 / 105.0
        else:
            drho_x = (x * (1.0 - t * t) - t) / (x * x * x)
        dmu_s = -2.0 * (mu_s - mu) * ex / (v_s * v_s)
        h = fn / v_eps * (dmu_s * rho + mu_eff * drho_x / (v_eps * v_eps))
        e = -mu_eff * rho / v_eps
    return -g * v0, -g * v1, -g * v2, g, h, e * v0, e * v1, e * v2


@njit
def _friction_batch(vt, fn, mu, mu_s, v_s, v_eps, viscous, linear, out):
    for k in range(vt.shape[0]):
        f0, f1, f2 = friction_scalar(vt[k, 0], vt[k, 1], vt[k, 2], fn[k], mu[k], mu_s[k], v_s[k],
                                     v_eps[k], viscous[k], linear[k])
        out[k, 0] = f0
        out[k, 1] = f1
        out[k, 2] = f2


def _per_contact(x: object, n: int, dtype: type = float) -> np.ndarray:
    """``x`` (a scalar or an (n,) array) as the contiguous (n,) array the kernel takes: a
    read-only view of a contiguous (n,) array of the dtype (as NumPy's broadcast gives), a
    contiguous copy otherwise (the same values, the same array types to the compiled kernel)."""
    if (type(x) is np.ndarray and x.dtype == dtype and x.shape == (n,)
            and x.flags.c_contiguous):
        v = x.view()
        v.flags.writeable = False
        return v
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=dtype), (n,)))


def friction_params(n: int, mu: np.ndarray, mu_s: np.ndarray, v_s: np.ndarray,
                    v_eps: np.ndarray, viscous: np.ndarray, linear: np.ndarray
                    ) -> tuple[np.ndarray, ...]:
    """The parameters of :func:`friction_force` for ``n`` contacts as per-contact arrays
    (mu, mu_s (-), v_s, v_eps (m/s), viscous (N s/m), linear (bool)), for a caller that
    evaluates the same contacts' friction many times (:func:`friction_force_with`)."""
    return (_per_contact(mu, n), _per_contact(mu_s, n), _per_contact(v_s, n),
            _per_contact(v_eps, n), _per_contact(viscous, n), _per_contact(linear, n, bool))


def friction_force_with(vt: np.ndarray, fn: np.ndarray,
                        params: tuple[np.ndarray, ...]) -> np.ndarray:
    """:func:`friction_force` (N) with the parameters prepared by :func:`friction_params`."""
    vt = np.ascontiguousarray(vt, dtype=float).reshape(-1, 3)
    out = np.empty((vt.shape[0], 3))
    _friction_batch(vt, _per_contact(fn, vt.shape[0]), *params, out)
    return out


def friction_force(
    vt: np.ndarray,
    fn: np.ndarray,
    mu: np.ndarray,
    mu_s: np.ndarray,
    v_s: np.ndarray,
    v_eps: np.ndarray,
    viscous: np.ndarray,
    linear: np.ndarray,
) -> np.ndarray:
    """Friction force (N) on body b for slip velocities ``vt`` (N, 3), normal forces ``fn`` (N,).

    Parameter arrays are per contact (N,) (scalars broadcast); ``linear`` (bool) selects the
    linear regularisation. Only the viscous part remains where ``fn <= 0``.
    """
    vt = np.ascontiguousarray(vt, dtype=float).reshape(-1, 3)
    return friction_force_with(vt, fn, friction_params(vt.shape[0], mu, mu_s, v_s, v_eps,
                                                       viscous, linear))


def friction_stiffness(fn: np.ndarray, mu_s: np.ndarray, v_eps: np.ndarray,
                       viscous: np.ndarray) -> np.ndarray:
    """dF_t/dv_t at zero slip (N s/m): mu_s F_N / v_eps + c_v (the stiffest point)."""
    return mu_s * np.maximum(fn, 0.0) / v_eps + viscous
