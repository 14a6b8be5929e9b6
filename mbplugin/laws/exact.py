"""Group 2 of the review: Hunt-Crossley-family laws built on the exact c_r relation.

Integrating the equation of motion of F = k delta^n (1 + chi ddelta / v_in) over a whole impact
gives an implicit relation between the dimensionless factor chi and the output c_r (Gonthier et
al. 2004 and, independently, Zhang & Sharf 2004; Corral et al. 2021, Eq. 5.23)::

    (1 + d/c_r) / (1 - d) = exp(d (1 + 1/c_r)),     d = chi c_r.

The laws here take chi from that relation, either exactly (``zhang_sharf``, ``khatiwada``) or
through a fitted function (``yu``). All share the power kernel: only the onset coefficients
differ, and since chi depends on c_r only, each root is found once per c_r value and cached.

Luo & Nahon (review Eqs. 5.27-5.30) is *not* implemented. It multiplies the same damping
(chi' = chi/K from Eq. 5.23) with an elastic force gamma pi E* A0 delta_max / s'0max built from
the interference geometry of the two bodies: the area A0 of the interference polygon, a shape
coefficient s'0max "depending on the size and shape of the contact polygon" and a case
coefficient gamma. The review gives no formula for s'0max or gamma for any geometry, and A0 is
a property of the contact patch that a law evaluated from (delta, ddelta, m_eff, r_eff) cannot
see. Once the geometric stiffness is reduced to a power law k delta^n, Luo-Nahon *is*
``zhang_sharf`` with that k and n. See ``docs/laws_notes.md``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import brentq

from mbplugin.laws.hunt_crossley import HuntCrossleyFamily

#: Below this distance from c_r = 1 the root is taken from its series, chi = 1.5 e (1 + e),
#: e = 1 - c_r, whose relative error O(e^2) is smaller than the cancellation error of the root find.
_SERIES_EPS = 1e-5


@lru_cache(maxsize=4096)
def exact_chi_scalar(cr: float) -> float:
    """chi = d / c_r solving review Eq. 5.23 for one c_r in (0, 1] (cached).

    The root is found in s = -ln(1 - d), which keeps d = 1 - exp(-s) representable as d -> 1
    for small c_r (d is within 1e-40 of 1 already at c_r = 0.01):

        g(s) = ln(1 + d/c_r) + s - d (1 + 1/c_r) = 0,    g < 0 for small s, g -> +inf.
    """
    cr = float(cr)
    if not (0.0 < cr <= 1.0):
        raise ValueError(f"c_r must be in (0, 1], got {cr}")
    eps = 1.0 - cr
    if eps == 0.0:
        return 0.0
    if eps < _SERIES_EPS:
        return 1.5 * eps * (1.0 + eps)

    def g(s: float) -> float:
        d = -math.expm1(-s)
        return math.log1p(d / cr) + s - d * (1.0 + 1.0 / cr)

    # near c_r = 1 the root is d ~ 1.5 (1 - c_r); start well below it and expand upwards
    lo = 0.1 * eps
    while g(lo) >= 0.0:
        lo *= 0.1
    hi = 2.0 * lo
    while g(hi) < 0.0:
        hi *= 2.0
    s = brentq(g, lo, hi, xtol=1e-300, rtol=4.0 * np.finfo(float).eps, maxiter=500)
    return -math.expm1(-s) / cr


def exact_chi(cr: Any) -> Any:
    """:func:`exact_chi_scalar` over a scalar or an array of c_r (one root per distinct value)."""
    arr = np.asarray(cr, dtype=float)
    if arr.ndim == 0:
        return exact_chi_scalar(float(arr))
    uniq, inv = np.unique(arr, return_inverse=True)
    roots = np.array([exact_chi_scalar(float(c)) for c in uniq])
    return roots[inv].reshape(arr.shape)


class ZhangSharf(HuntCrossleyFamily):
    """Zhang & Sharf (2004): chi from the exact relation, review Eq. 5.23, solved numerically.

    Gonthier et al. approximated the root by d = 1 - c_r^2; Zhang & Sharf keep the exact root,
    so an isolated impact returns exactly the input c_r for every c_r in (0, 1], whatever the
    mass, stiffness, exponent n and impact speed (as long as v_in >= v_min). The root depends on
    c_r only and is cached. Clipped at F >= 0 like every HC-family law (the force of this form
    vanishes only at delta = 0, so clipping never acts before the end of contact).
    """

    name = "zhang_sharf"
    title = "Zhang-Sharf (exact c_r relation)"
    source = (
        "Zhang & Sharf, ASME IDETC 2004; Gonthier et al., Multibody Syst. Dyn. 11 (2004); "
        "Corral et al. (2021) Eq. 5.23"
    )
    equation_chi = "d/cr, (1 + d/cr)/(1 - d) = exp(d (1 + 1/cr)) solved for d"
    cr_range = "whole range (0, 1], exact"

    @classmethod
    def chi(cls, cr):
        return exact_chi(cr)


class Khatiwada(HuntCrossleyFamily):
    """Khatiwada, Chouw & Butterworth (2014): review Eq. 5.31, written for structural pounding.

    Khatiwada et al. state the relation as 1 + c_r = |u ln((u + 1)/(u - c_r))| with
    u = K/(chi_dim v_in) = 1/chi. For u > c_r (the only branch with a positive damping) the
    absolute value is inactive, and taking logarithms of Eq. 5.23 with d = chi c_r gives the same
    equation: ln((1 + chi)/(1 - chi c_r)) = chi (1 + c_r). The law therefore uses the exact root
    of :func:`exact_chi` and reproduces the input c_r exactly; the tests check the printed form
    of Eq. 5.31 at that root. No linear c_r-speed relation is assumed.
    """

    name = "khatiwada"
    title = "Khatiwada et al. (exact c_r, pounding)"
    source = (
        "Khatiwada, Chouw & Butterworth, Eng. Struct. 62-63 (2014); Corral et al. (2021) Eq. 5.31"
    )
    equation_chi = "1/u, 1 + cr = |u ln((u + 1)/(u - cr))| solved for u"
    cr_range = "whole range (0, 1], exact"

    @classmethod
    def chi(cls, cr):
        return exact_chi(cr)


#: Yu et al.'s piecewise cubic d(c_r) (review Eq. 5.34): (upper end of the piece, a3, a2, a1, a0).
YU_PIECES = (
    (0.4, 2.1663, -3.7216, 0.8724, 0.9409),
    (0.6, 1.1664, -2.4893, 0.3625, 1.0117),
    (0.8, 0.5048, -1.3255, -0.3236, 1.1472),
    (1.0, 0.2256, -0.6663, -0.8437, 1.2844),
)


def yu_d(cr: Any) -> Any:
    """Yu et al.'s d(c_r), review Eq. 5.34: 1 on (0, 0.25], cubic pieces above (vectorised)."""
    c = np.asarray(cr, dtype=float)
    flat = np.atleast_1d(c)
    out = np.ones_like(flat)
    lower = 0.25
    for upper, a3, a2, a1, a0 in YU_PIECES:
        sel = (flat > lower) & (flat <= upper)
        x = flat[sel]
        out[sel] = ((a3 * x + a2) * x + a1) * x + a0
        lower = upper
    # the last cubic gives d(1) = 0.0000 to its four printed decimals; keep d >= 0
    out = np.maximum(out, 0.0)
    return float(out[0]) if c.ndim == 0 else out.reshape(c.shape)


class Yu(HuntCrossleyFamily):
    """Yu et al. (2020): chi = d(c_r)/c_r with d a piecewise cubic fit (review Eqs. 5.32-5.34).

    Yu et al. fitted the root of the exact relation (Eq. 5.23) piecewise on (0.25, 1] and set
    d = 1 on (0, 0.25], where they argue that plastic deformation dominates and the exact relation
    has no solution with d < 1. As printed by the review the fit is slightly discontinuous at
    c_r = 0.25 (d = 1 below, 0.960 above) and gives d(1) = 0 to four decimals; it is implemented
    exactly as printed (negative round-off at c_r = 1 is floored at 0). Output c_r stays close to
    the input over the whole range.
    """

    name = "yu"
    title = "Yu et al. (piecewise d)"
    source = "Yu et al. (2020); Corral et al. (2021) Eqs. 5.32-5.34"
    equation_chi = "d(cr)/cr, d piecewise cubic (1 on (0, 0.25])"
    cr_range = "whole range (0, 1]"

    @classmethod
    def chi(cls, cr):
        return yu_d(cr) / np.asarray(cr, dtype=float)
