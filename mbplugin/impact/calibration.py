"""Coefficient-of-restitution calibration for any law.

Most laws' c_r-based damping formulas are approximations: Hunt-Crossley or Lankarani-Nikravesh
return the prescribed c_r only near 1, and laws with empirical damping (Tsuji, Falcon, Xiong,
...) have no c_r input at all. :func:`calibrate` finds the value of one parameter that makes
the impact analyser (:func:`mbplugin.impact.impact`) return a target c_r exactly at a given
impact speed and mass, by a one-dimensional root find (Brent's method on a bracket found by
expanding from the law's current value).

Where the output c_r depends only on the calibrated parameter, the root is cached:

* the Hunt-Crossley family (F = k delta^n (1 + chi(c_r) ddelta/v_in)): c_r depends on chi only
  (not on mass, speed, k or n), so the input c_r that gives a target is found once per (law
  class, target) from the exact relation (review Eq. 5.23) -- no simulation in the root find;
* laws that declare ``calibration_invariant`` (a tuple of the other parameters the output c_r
  depends on, e.g. Tsuji, Jankowski, Goldsmith, Goyal): cached by (class, parameter, target,
  those values).

The achieved c_r is always measured by one final impact simulation.

It lives beside the analyser it drives (``mbplugin.laws`` is the bottom layer and imports
nothing of the analyser); import it as ``from mbplugin.impact import calibrate`` or
``from mbplugin import calibrate``.

>>> from mbplugin import calibrate
>>> from mbplugin.laws import make_law
>>> cal = calibrate(make_law("hunt_crossley", k=1e9, cr=0.5), 0.5, v0=1.0, mass=1.0)
>>> round(cal.cr, 8), cal.param
(0.5, 'cr')
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

from mbplugin.errors import IntegrationError, ParameterError
from mbplugin.laws.base import Law, Param
from mbplugin.laws.hunt_crossley import HuntCrossleyFamily

#: Parameters tried, in order, when neither the caller nor the law names one.
DEFAULT_CANDIDATES = ("cr", "lam", "c", "chi", "D", "lam_star", "alpha", "beta1", "eta")

#: Largest number of impact simulations spent on finding a bracket.
MAX_BRACKET_EVALS = 160

_HC_CACHE: dict[tuple[type, float], float] = {}
_INVARIANT_CACHE: dict[tuple[Any, ...], float] = {}


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    ``law``         the calibrated law (a new object; the input law is unchanged)
    ``cr``          the c_r the impact analyser returns for it (Newton's)
    ``target``      the requested c_r
    ``param``       the calibrated parameter and ``value`` its value
    ``cached``      True when the value came from the cache
    ``evaluations`` impact simulations spent (0 root-find simulations for a cache hit or the
                    Hunt-Crossley family, plus the final check)
    """

    law: Law
    cr: float
    target: float
    param: str
    value: float
    cached: bool
    evaluations: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary, with the calibrated law's parameters."""
        params = {}
        for key, val in self.law.values().items():
            if val is None:
                continue
            params[key] = float(val) if isinstance(val, (int, float, np.floating)) else val
        return {
            "law": self.law.name,
            "param": self.param,
            "value": float(self.value),
            "target": float(self.target),
            "cr": float(self.cr),
            "error": float(self.cr - self.target),
            "cached": bool(self.cached),
            "evaluations": int(self.evaluations),
            "params": params,
        }


def clear_cache() -> None:
    """Forget every cached calibration."""
    _HC_CACHE.clear()
    _INVARIANT_CACHE.clear()


def calibrate(
    law: Law,
    target_cr: float,
    v0: float,
    mass: float,
    *,
    param: str | None = None,
    mass2: float = math.inf,
    press: float = 0.0,
    radius: float | None = None,
    rtol: float = 1e-10,
) -> Calibration:
    """The law with ``param`` set so that an impact at ``v0`` (m/s) of ``mass`` (kg) returns
    ``target_cr``.

    Parameters
    ----------
    law:
        A law with scalar parameters; its current value of ``param`` starts the bracket search.
    target_cr:
        Newton's coefficient of restitution to reproduce, in (0, 1].
    v0, mass, mass2, press, radius, rtol:
        The impact, as for :func:`mbplugin.impact.impact` (``mass2 = inf`` is a wall).
    param:
        The parameter to vary. Default: the law's ``calibration_params`` (the first one that is
        set), else the first set parameter among :data:`DEFAULT_CANDIDATES` (``cr``, ``lam``,
        ``c``, ...).

    Raises
    ------
    ParameterError
        For bad inputs, a law without a parameter to vary, or a target that no value of the
        parameter in its allowed range reaches (the message gives the c_r range reached).
    """
    from mbplugin.impact import effective_mass, impact

    if not isinstance(law, Law):
        raise ParameterError(f"law must be an mbplugin Law, got {type(law).__name__}")
    if law.size != 1:
        raise ParameterError(f"{law.name}: calibrate() needs scalar parameters")
    target = _check_target(target_cr)
    v0 = _check_positive("v0", v0, "m/s")
    m_eff = float(effective_mass(mass, mass2))
    name, spec = _choose_param(law, param)

    def run(trial: Law) -> float:
        return impact(trial, m_eff, v0, press=press, radius=radius, rtol=rtol).cr_out

    # ---- Hunt-Crossley family: the root depends on (class, target) only ----------------------
    if (isinstance(law, HuntCrossleyFamily) and name == "cr" and press == 0.0
            and v0 >= float(law.v_min)):
        key = (type(law), target)
        cached = key in _HC_CACHE
        if not cached:
            _HC_CACHE[key] = _hc_family_root(type(law), target)
        value = _HC_CACHE[key]
        new = law.replace(cr=value)
        return Calibration(new, run(new), target, name, value, cached, 1)

    # ---- laws whose c_r depends on the parameter (and declared others) only ------------------
    inv = getattr(type(law), "calibration_invariant", None)
    inv_key = None
    if inv is not None and press == 0.0:
        inv_key = (type(law), name, target, *(law.values().get(p) for p in inv))
        if inv_key in _INVARIANT_CACHE:
            value = _INVARIANT_CACHE[inv_key]
            new = law.replace(**{name: value})
            return Calibration(new, run(new), target, name, value, True, 1)

    # ---- general path: bracket by expansion, then Brent -----------------------------------
    evals = 0

    def f(p: float) -> float | None:
        nonlocal evals
        try:
            trial = law.replace(**{name: p})
        except ParameterError:
            return None
        evals += 1
        try:
            return run(trial) - target
        except (ParameterError, IntegrationError):
            return None

    a, b, fa, fb, seen = _bracket(f, float(law.values()[name]), spec)
    if a is None:
        reached = [v + target for v in seen.values()]
        span = (f"[{min(reached):.6g}, {max(reached):.6g}]" if reached
                else "(no valid value)")
        raise ParameterError(
            f"calibrate: target_cr = {target:g} is unreachable for {law.name} by varying "
            f"'{name}' over the values the law accepts (declared range {spec.range_text()}) at "
            f"v0 = {v0:g} m/s, m_eff = {m_eff:g} kg: the c_r reached spans {span}"
        )
    if fa == 0.0:
        value = a
    elif fb == 0.0:
        value = b
    else:
        scale = max(abs(a), abs(b))
        value = brentq(lambda p: _finite_or_raise(f(p), name, p), a, b,
                       xtol=1e-15 * scale + 1e-300, rtol=4.0 * np.finfo(float).eps,
                       maxiter=200)
    new = law.replace(**{name: value})
    achieved = run(new)
    evals += 1
    if abs(achieved - target) > 1e-6:
        raise ParameterError(
            f"calibrate: target_cr = {target:g} is unreachable for {law.name}: c_r jumps across "
            f"it at '{name}' = {value:.12g} (reached {achieved:.8g})"
        )
    if inv_key is not None:
        _INVARIANT_CACHE[inv_key] = value
    return Calibration(new, achieved, target, name, float(value), False, evals)


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def _check_target(target: Any) -> float:
    try:
        t = float(target)
    except (TypeError, ValueError):
        raise ParameterError(f"target_cr must be a number, got {target!r}") from None
    if not (math.isfinite(t) and 0.0 < t <= 1.0):
        raise ParameterError(f"target_cr = {t:g} is outside its allowed range (0, 1]")
    return t


def _check_positive(name: str, value: Any, unit: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(x) and x > 0.0):
        raise ParameterError(f"{name} = {x:g} {unit} is outside its allowed range (0, inf)")
    return x


def _choose_param(law: Law, param: str | None) -> tuple[str, Param]:
    numeric = {p.name: p for p in law.params if isinstance(p, Param)}
    values = law.values()
    if param is not None:
        if param not in numeric:
            raise ParameterError(
                f"calibrate: {law.name} has no numeric parameter '{param}'; allowed: "
                f"{', '.join(numeric) or '(none)'}"
            )
        if values.get(param) is None:
            raise ParameterError(
                f"calibrate: parameter '{param}' of {law.name} is not set; give it a starting "
                "value (it is exclusive with another parameter)"
            )
        return param, numeric[param]
    candidates = (*getattr(type(law), "calibration_params", ()), *DEFAULT_CANDIDATES)
    for name in candidates:
        if name in numeric and values.get(name) is not None:
            return name, numeric[name]
    raise ParameterError(
        f"calibrate: {law.name} has no damping parameter to calibrate; name one with "
        f"param=... (numeric parameters: {', '.join(numeric) or '(none)'})"
    )


def _finite_or_raise(val: float | None, name: str, p: float) -> float:
    if val is None:
        raise ParameterError(f"calibrate: the impact failed at '{name}' = {p:.12g}")
    return val


def _hc_family_root(cls: type[HuntCrossleyFamily], target: float) -> float:
    """Input c_r of an HC-family law whose output is ``target``: chi(c_in) = chi_exact(target)."""
    from mbplugin.laws.exact import exact_chi_scalar

    want = exact_chi_scalar(target)

    def g(c: float) -> float:
        return float(cls.chi(c)) - want

    # scan from c = 1 downwards for the first sign change (chi may be non-monotone)
    grid = np.unique(np.concatenate([np.linspace(1.0, 0.01, 100), np.geomspace(0.01, 1e-9, 36)]))
    grid = grid[::-1]
    prev_c, prev_g = grid[0], g(grid[0])
    if prev_g == 0.0:
        return float(prev_c)
    for c in grid[1:]:
        gc = g(c)
        if gc == 0.0:
            return float(c)
        if (gc > 0.0) != (prev_g > 0.0):
            return float(brentq(g, c, prev_c, xtol=1e-16, rtol=4.0 * np.finfo(float).eps))
        prev_c, prev_g = c, gc
    chis = np.array([float(cls.chi(c)) for c in grid])
    raise ParameterError(
        f"calibrate: target_cr = {target:g} is unreachable for {cls.name} by varying 'cr' in "
        f"(0, 1]: it needs the factor chi = {want:.6g}, and chi(cr) spans "
        f"[{chis.min():.6g}, {chis.max():.6g}] (output c_r from {_hc_cr_text(chis.max())} "
        f"to {_hc_cr_text(chis.min())}); zhang_sharf reproduces every c_r in (0, 1] with "
        "this force, and hunt_crossley_general can be calibrated on 'lam'"
    )


def _hc_cr_text(chi: float) -> str:
    """Output c_r of an HC-family law with factor chi, as text (c_r < 1/chi when chi is huge)."""
    from mbplugin.laws.hunt_crossley import exact_cr

    try:
        return f"{exact_cr(chi):.6g}"
    except ValueError:
        return f"< {1.0 / chi:.3g}"


def _trial_points(p0: float, spec: Param) -> tuple[list[float], list[float]]:
    """Points above and below p0 inside the parameter's range, expanding geometrically."""
    lo, hi = spec.lo, spec.hi
    up: list[float] = []
    down: list[float] = []
    for j in range(1, 41):
        f = 4.0**j
        if math.isinf(hi):
            up.append(p0 * f if p0 > 0 else (p0 / f if p0 < 0 else f * 1e-12))
        else:
            up.append(hi - (hi - p0) / f)
        if math.isinf(lo):
            down.append(p0 / f if p0 > 0 else (p0 * f if p0 < 0 else -f * 1e-12))
        else:
            down.append(lo + (p0 - lo) / f)
    if not math.isinf(hi) and not spec.hi_open:
        up.append(hi)
    if not math.isinf(lo) and not spec.lo_open:
        down.append(lo)
    return up, down


def _bracket(
    f: Any, p0: float, spec: Param
) -> tuple[Any, Any, Any, Any, dict[float, float]]:
    """Expand from p0 until f changes sign between neighbouring evaluated points.

    Returns (a, b, f(a), f(b), evaluated points); a is None when no sign change was found.
    Points where the law or the impact is invalid end the expansion in that direction after
    bisecting towards the boundary of validity.
    """
    seen: dict[float, float] = {}

    def add(p: float) -> float | None:
        val = f(p)
        if val is not None and math.isfinite(val):
            seen[p] = val
            return val
        return None

    def sign_change() -> tuple[Any, Any, Any, Any] | None:
        pts = sorted(seen)
        for p in pts:
            if seen[p] == 0.0:
                return p, p, 0.0, 0.0
        for x, y in itertools.pairwise(pts):
            if (seen[x] > 0.0) != (seen[y] > 0.0):
                return x, y, seen[x], seen[y]
        return None

    if add(p0) is None:
        # start from a valid point: the middle or a unit value inside the range
        lo = spec.lo if math.isfinite(spec.lo) else -1.0
        hi = spec.hi if math.isfinite(spec.hi) else max(lo, 0.0) + 1.0
        p0 = 0.5 * (lo + hi)
        if add(p0) is None:
            return None, None, None, None, seen
    up, down = _trial_points(p0, spec)
    last = {"up": p0, "down": p0}
    alive = {"up": True, "down": True}
    for j in range(max(len(up), len(down))):
        for direction, seq in (("up", up), ("down", down)):
            if not alive[direction] or j >= len(seq) or len(seen) >= MAX_BRACKET_EVALS:
                continue
            p = seq[j]
            if p == last[direction]:
                continue
            if add(p) is None:
                alive[direction] = False
                good, bad = last[direction], p
                for _ in range(40):  # approach the edge of validity
                    mid = 0.5 * (good + bad)
                    if mid in (good, bad):
                        break
                    if add(mid) is None:
                        bad = mid
                    else:
                        good = mid
                        found = sign_change()
                        if found:
                            return (*found, seen)
            else:
                last[direction] = p
            found = sign_change()
            if found:
                return (*found, seen)
    return None, None, None, None, seen
