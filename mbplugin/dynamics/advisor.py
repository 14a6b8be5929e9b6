"""Step-size advisor: the largest stable fixed step for the stiffest active contact.

Linearised about its current state, a contact is a damped oscillator
m x'' + c x' + k x = 0 with the effective mass ``m`` along the normal, the local stiffness
k = dF/d delta and the local damping c = dF/d ddelta of the law. With w = sqrt(k/m) and
zeta = c/(2 m w), an explicit fixed-step method is stable while h w stays inside its region:

* semi-implicit (symplectic) Euler: h w < 2 (sqrt(1 + zeta^2) - zeta), from the Jury conditions
  on its amplification matrix [[1 - h^2 w^2, h (1 - 2 zeta w h)], [-h w^2, 1 - 2 zeta w h]]
  (det = 1 - 2 zeta w h, trace = 2 - h^2 w^2 - 2 zeta w h); 2/w undamped
  (Hairer, Lubich & Wanner 2006, Sect. I.1);
* RK4: |1 + z + z^2/2 + z^3/6 + z^4/24| <= 1 for z = h lambda, lambda the oscillator's
  eigenvalues, solved numerically here (2 sqrt(2)/w undamped; Hairer & Wanner 1996, Sect. IV.2).

Regularised friction adds a first-order mode with rate c_t/m (c_t = mu F_N / v_eps): stable for
h c_t/m < 2 (Euler) or < 2.785 (RK4).

The advisor recommends the stable step divided by a safety factor of 2 (accuracy needs more:
about 20 steps per contact period 2 pi/w).
"""

from __future__ import annotations

import math

import numpy as np

RK4_REAL_LIMIT = 2.785293563405282  # |R(z)| = 1 on the negative real axis for classical RK4


def _rk4_amp(z: complex) -> float:
    return abs(1 + z + z * z / 2 + z**3 / 6 + z**4 / 24)


def _rk4_limit(zeta: float) -> float:
    """Largest h w with |R(h lambda)| <= 1 for the oscillator eigenvalues at damping ratio zeta."""
    if zeta < 1.0:
        lam = complex(-zeta, math.sqrt(1.0 - zeta * zeta))
        lams = [lam]
    else:
        s = math.sqrt(zeta * zeta - 1.0)
        lams = [complex(-zeta - s, 0.0), complex(-zeta + s, 0.0)]

    def stable(x: float) -> bool:
        return all(_rk4_amp(x * lm) <= 1.0 + 1e-12 for lm in lams)

    lo, hi = 0.0, 1.0
    while stable(hi) and hi < 1e6:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if stable(mid):
            lo = mid
        else:
            hi = mid
    return lo


_ZETA_GRID = np.concatenate([[0.0], np.logspace(-6, 4, 241)])
_RK4_TABLE: np.ndarray | None = None


def _rk4_table() -> np.ndarray:
    global _RK4_TABLE
    if _RK4_TABLE is None:
        _RK4_TABLE = np.array([_rk4_limit(float(z)) for z in _ZETA_GRID])
    return _RK4_TABLE


def stable_step(
    k: np.ndarray, c: np.ndarray, m: np.ndarray, method: str
) -> np.ndarray:
    """Largest stable step (s) per contact for stiffness ``k`` (N/m), damping ``c`` (N s/m) and
    effective mass ``m`` (kg); ``method`` is "symplectic_euler" or "rk4". inf where neither a
    restoring nor a damping mode exists (k <= 0 and c <= 0) or the mass is not finite."""
    k, c, m = np.broadcast_arrays(np.maximum(np.asarray(k, dtype=float), 0.0),
                                  np.maximum(np.asarray(c, dtype=float), 0.0),
                                  np.asarray(m, dtype=float))
    ok_m = np.isfinite(m) & (m > 0)
    ms = np.where(ok_m, m, 1.0)
    w = np.sqrt(k / ms)
    ws = np.where(w > 0, w, 1.0)
    zeta = c / (2.0 * ms * ws)
    if method == "symplectic_euler":
        osc = 2.0 * (np.sqrt(1.0 + zeta * zeta) - zeta) / ws
        damp = 2.0 * ms / np.where(c > 0, c, 1.0)
    else:
        osc = np.interp(zeta, _ZETA_GRID, _rk4_table()) / ws
        damp = RK4_REAL_LIMIT * ms / np.where(c > 0, c, 1.0)
    out = np.where(w > 0, osc, np.where(c > 0, damp, np.inf))
    return np.where(ok_m, out, np.inf)


def friction_step(c_t: np.ndarray, m: np.ndarray, method: str) -> np.ndarray:
    """Largest stable step (s) of the regularised-friction mode with rate c_t/m."""
    c_t = np.asarray(c_t, dtype=float)
    lim = 2.0 if method == "symplectic_euler" else RK4_REAL_LIMIT
    with np.errstate(divide="ignore"):
        return np.where(c_t > 0, lim * np.asarray(m, dtype=float) / np.where(c_t > 0, c_t, 1.0),
                        np.inf)
