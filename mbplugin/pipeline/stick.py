"""A tangential spring for contacts that must stick (robot feet): Dahl's friction model.

Regularised Coulomb friction (``mbplugin.dynamics.friction``) cannot hold a tangential load at
zero slip: it creeps at v_eps * atanh(F_t / (mu F_N)). A tangential spring of stiffness ``k_t``
with a displacement ``s`` (a "bristle") holds any load below the Coulomb limit without creep and
slides at the limit:

    F_t = -(k_t s + c_t v_t)                    (force on body b, tangential)
    ds/dt = v_t - |v_t| k_t s / (mu F_N)        (Dahl 1968/1976, the alpha = 1 form)

At rest (v_t = 0) the spring holds (ds/dt = 0); in steady sliding k_t |s| -> mu F_N. ``c_t`` is a
small viscous term on the slip velocity (the sigma_1 term of the LuGre model, Canudas de Wit,
Olsson, Astrom & Lischinsky, IEEE TAC 40 (1995), Eq. 2). The total tangential force is capped
at the Coulomb limit mu F_N (continuous; zero where F_N = 0), and the rate is continuous across
F_N = 0 (see :func:`stick_rate`); the backend resets the displacement when the contact ends.

Reference: P. R. Dahl, "Solid friction damping of mechanical vibrations", AIAA J. 14 (1976)
1675-1682.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mbplugin._jit import njit
from mbplugin.errors import ParameterError

#: Floor of the Coulomb limit mu F_N in the spring's rate (N)
FC_FLOOR = 1e-3


@dataclass(frozen=True)
class Stick:
    """Tangential spring parameters: ``k_t`` (N/m, > 0), ``c_t`` (N s/m, >= 0), ``mu`` (> 0)."""

    k_t: float
    mu: float
    c_t: float = 0.0

    def __post_init__(self) -> None:
        for name, lo, strict in (("k_t", 0.0, True), ("mu", 0.0, True), ("c_t", 0.0, False)):
            v = float(getattr(self, name))
            if not np.isfinite(v) or v < lo or (strict and v == lo):
                raise ParameterError(f"stick: {name} = {v:g} is outside its allowed range "
                                     f"{'(' if strict else '['}{lo:g}, inf)")


@njit
def stick_force_scalar(s0, s1, s2, v0, v1, v2, fn, k_t, mu, c_t):
    """Tangential force (f0, f1, f2) on body b (N) of one contact: spring displacement
    (s0, s1, s2) (m), slip (v0, v1, v2) (m/s), normal force ``fn`` (N) (see :func:`stick_force`)."""
    f0 = -(k_t * s0 + c_t * v0)
    f1 = -(k_t * s1 + c_t * v1)
    f2 = -(k_t * s2 + c_t * v2)
    mag = math.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
    lim = mu * max(fn, 0.0)
    if mag > lim:
        scale = lim / mag
        return f0 * scale, f1 * scale, f2 * scale
    return f0, f1, f2


@njit
def stick_rate_scalar(s0, s1, s2, v0, v1, v2, fn, k_t, mu):
    """ds/dt (m/s) of one contact's spring (see :func:`stick_rate`)."""
    speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    decay = speed * k_t / max(mu * max(fn, 0.0), FC_FLOOR)
    return v0 - decay * s0, v1 - decay * s1, v2 - decay * s2


@njit
def stick_step_scalar(s0, s1, s2, v0, v1, v2, fn, k_t, mu, dt):
    """The displacement (a, b, c) (m) of one contact's spring after a backward-Euler step of
    length ``dt`` (s) from (s0, s1, s2) with the slip (v0, v1, v2) (m/s) and normal force ``fn``
    (N) of the step's end (see :func:`stick_step`). The rate is affine in s, v_t - decay s;
    its decay is read from :func:`stick_rate_scalar` (the formula's one place)."""
    decay = v0 - stick_rate_scalar(1.0, 0.0, 0.0, v0, v1, v2, fn, k_t, mu)[0]
    den = 1.0 + dt * decay
    return (s0 + dt * v0) / den, (s1 + dt * v1) / den, (s2 + dt * v2) / den


@njit
def _stick_step_batch(s, vt, fn, k_t, mu, dt, out):
    for i in range(s.shape[0]):
        a, b, c = stick_step_scalar(s[i, 0], s[i, 1], s[i, 2], vt[i, 0], vt[i, 1], vt[i, 2],
                                    fn[i], k_t, mu, dt)
        out[i, 0] = a
        out[i, 1] = b
        out[i, 2] = c


@njit
def _stick_batch(s, vt, fn, k_t, mu, c_t, rate, out):
    for i in range(s.shape[0]):
        if rate:
            a, b, c = stick_rate_scalar(s[i, 0], s[i, 1], s[i, 2], vt[i, 0], vt[i, 1], vt[i, 2],
                                        fn[i], k_t, mu)
        else:
            a, b, c = stick_force_scalar(s[i, 0], s[i, 1], s[i, 2], vt[i, 0], vt[i, 1],
                                         vt[i, 2], fn[i], k_t, mu, c_t)
        out[i, 0] = a
        out[i, 1] = b
        out[i, 2] = c


def _batch(s: np.ndarray, vt: np.ndarray, fn: np.ndarray, p: Stick, rate: bool) -> np.ndarray:
    s = np.ascontiguousarray(s, dtype=float).reshape(-1, 3)
    out = np.empty_like(s)
    _stick_batch(s, np.ascontiguousarray(vt, dtype=float).reshape(-1, 3),
                 np.ascontiguousarray(np.broadcast_to(np.asarray(fn, dtype=float), (len(s),))),
                 float(p.k_t), float(p.mu), float(p.c_t), rate, out)
    return out


def stick_force(s: np.ndarray, vt: np.ndarray, fn: np.ndarray, p: Stick) -> np.ndarray:
    """Tangential force (K, 3) on body b from the spring displacement ``s`` (K, 3), slip ``vt``
    (K, 3) and normal force ``fn`` (K,).

    -(k_t s + c_t v_t), scaled down where its magnitude exceeds the Coulomb limit mu max(fn, 0)
    (a radial projection: continuous in every argument, zero at fn <= 0). Dahl's rate keeps
    k_t |s| below the limit while F_N is steady, but a foot being unloaded at lift-off drops
    F_N faster than the slip can relax the spring; without the cap the force would exceed
    mu F_N and jump to zero at F_N = 0 (a discontinuity the implicit sub-stepper cannot step
    over: Radau's step size underflowed there). The per-contact formula is
    :func:`stick_force_scalar` (the compiled sub-stepper calls it too)."""
    return _batch(s, vt, fn, p, False)


def stick_step(s0: np.ndarray, vt: np.ndarray, fn: np.ndarray, p: Stick,
               dt: float) -> np.ndarray:
    """The displacement (K, 3) after a backward-Euler step of length ``dt`` (s) of
    :func:`stick_rate` from ``s0``, with the slip ``vt`` and normal force ``fn`` of the step's
    end: s1 = s0 + dt (vt - |vt| k_t s1 / fc) is linear in s1, so
    s1 = (s0 + dt vt) / (1 + dt |vt| k_t / fc) (no iteration; |s1| stays below
    max(|s0|, fc / k_t) for any dt, as in steady sliding). The per-contact formula is
    :func:`stick_step_scalar` (the compiled implicit step calls it too)."""
    vt = np.ascontiguousarray(vt, dtype=float).reshape(-1, 3)
    s0 = np.ascontiguousarray(np.broadcast_to(np.asarray(s0, dtype=float), vt.shape))
    out = np.empty_like(vt)
    _stick_step_batch(s0, vt,
                      np.ascontiguousarray(np.broadcast_to(np.asarray(fn, dtype=float),
                                                           (len(vt),))),
                      float(p.k_t), float(p.mu), float(dt), out)
    return out


def stick_rate(s: np.ndarray, vt: np.ndarray, fn: np.ndarray, p: Stick) -> np.ndarray:
    """ds/dt (K, 3) of Dahl's model.

    The Coulomb limit in the rate is floored at ``FC_FLOOR``: the rate is finite as F_N -> 0
    and continuous across F_N = 0 (where the spring carries no force, it relaxes with the slip
    towards |s| = FC_FLOOR / k_t instead of being frozen: a frozen rate would jump there).
    The per-contact formula is :func:`stick_rate_scalar`."""
    return _batch(s, vt, fn, p, True)
