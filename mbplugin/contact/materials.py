"""Materials and Hertz stiffness.

Hertz (1881) for two elastic spheres (review Corral et al. 2021, Eqs. 5.3-5.5):

    k = (4/3) E* sqrt(R),   1/E* = (1 - nu1^2)/E1 + (1 - nu2^2)/E2,   1/R = 1/R1 + 1/R2

A plane is a sphere of infinite radius (R = R1); a concave surface (a sphere inside a spherical
hole) has a negative radius, which gives the larger effective radius of internal contact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.laws.power import hertz_k


def _check(name: str, value: Any, lo: float, hi: float, lo_open: bool, hi_open: bool) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    ok = np.isfinite(arr) | (np.isinf(arr) & (hi == math.inf) & (arr > 0))
    ok &= (arr > lo) if lo_open else (arr >= lo)
    ok &= (arr < hi) if hi_open else (arr <= hi)
    if not np.all(ok):
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        bad = float(np.atleast_1d(arr)[~np.atleast_1d(ok)][0])
        raise ParameterError(
            f"{name} = {bad:g} is outside its allowed range {left}{lo:g}, {hi:g}{right}"
        )
    return arr


def effective_modulus(E1: Any, nu1: Any, E2: Any = math.inf, nu2: Any = 0.0) -> np.ndarray:
    """Effective Young's modulus E* (Pa); E2 = inf is a rigid counterpart."""
    E1 = _check("E1", E1, 0.0, math.inf, True, False)
    E2 = _check("E2", E2, 0.0, math.inf, True, False)
    nu1 = _check("nu1", nu1, -1.0, 0.5, True, False)
    nu2 = _check("nu2", nu2, -1.0, 0.5, True, False)
    return 1.0 / ((1.0 - nu1**2) / E1 + (1.0 - nu2**2) / E2)


def effective_radius(R1: Any, R2: Any = math.inf) -> np.ndarray:
    """Effective radius R1 R2/(R1 + R2) (m); R2 = inf is a plane, R2 < 0 a concave surface."""
    R1 = np.asarray(R1, dtype=float)
    R2 = np.asarray(R2, dtype=float)
    if not np.all(np.isfinite(R1) & (R1 > 0)):
        raise ParameterError("R1 must be finite and > 0, allowed range (0, inf)")
    if np.any(np.isnan(R2) | (R2 == 0)):
        raise ParameterError("R2 must be non-zero (inf for a plane, < 0 for a concave surface)")
    inv = 1.0 / R1 + np.where(np.isinf(R2), 0.0, 1.0 / np.where(np.isinf(R2), 1.0, R2))
    if np.any(inv <= 0):
        raise ParameterError(
            "internal contact needs the hole larger than the sphere: |R2| > R1 for R2 < 0"
        )
    return 1.0 / inv


def hertz_stiffness(
    E1: Any, nu1: Any, E2: Any = math.inf, nu2: Any = 0.0, R1: Any = 1.0, R2: Any = math.inf
) -> np.ndarray:
    """Hertz contact stiffness k = (4/3) E* sqrt(R) (N/m^1.5) for sphere-sphere or sphere-plane.

    ``R2 = inf`` (default) is a sphere on a plane; ``E2 = inf`` a rigid counterpart.
    """
    return np.asarray(hertz_k(effective_modulus(E1, nu1, E2, nu2), effective_radius(R1, R2)))
