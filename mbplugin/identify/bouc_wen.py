"""Bouc-Wen base-parameter identification (Milehins & Marghitu 2026, Sect. 7.1, Eqs. 58-64).

The paper identifies its collision models not in dimensional parameters but in the
velocity-independent *base parameters* P* = (B_b, Gamma_b, kappa, sigma_b, n, p, U_b, T_b): at
each measured approach speed v0 they map to the nondimensional model (B, Gamma ~
v0^(2n/(p+1)); sigma ~ v0 for the Hunt-Crossley variant, v0^((p-1)/(p+1)) for the Maxwell
variant; the map itself lives in :class:`mbplugin.validation.bouc_wen.BaseParams`), which is
simulated with m = k = v0 = 1. The measured aggregates are Theta_1 = c_r (Eq. 61) and Theta_2 =
the dimensional duration T_s T_b v0^(-(p-1)/(p+1)) (Eq. 62); the cost is their mean squared
error (Eq. 58), here combined with weights.

Constraints (Eq. 60, 63, 64):

* B_b >= 0 and |Gamma_b| <= B_b (with both free, fitted as g = Gamma_b / B_b in [-1, 1]);
* kappa in (0, 1); sigma_b >= 0 (> 0 for the Maxwell variant); n, p >= 1; T_b > 0;
* with the mass m known, U_b = T_b / m (Eq. 63) -- U_b is never free;
* with the spring stiffness k known, alpha = (m/k) kappa / T_b^(p+1) <= 1 (Eq. 64, nonlinear).

With m and k known the fitted base parameters convert back to dimensional ones (spec 2.7).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import optimize

from mbplugin.errors import IntegrationError, ParameterError
from mbplugin.identify.data import ImpactData
from mbplugin.identify.fit import (
    METHODS,
    FitResult,
    _heavy,
    _impact_residual,
    _optimise,
    _parse_weights,
    _per_target,
    _Problem,
    _stderr,
    check_bound_names,
    estimate_text,
    free_names,
)
from mbplugin.impact import DEFAULT_RTOL, ImpactBatch
from mbplugin.laws import make_law
from mbplugin.validation.bouc_wen import LAW, BaseParams, dimensional_from_base

#: Base parameters that may be fitted, with the paper's admissible ranges (Eq. 60).
BASE_NAMES = ("Bb", "Gb", "kappa", "sigma_b", "n", "p", "Tb")
_RANGES = {
    "Bb": (0.0, math.inf),
    "Gb": (-math.inf, math.inf),
    "kappa": (1e-9, 1.0 - 1e-9),
    "sigma_b": (0.0, math.inf),
    "n": (1.0, math.inf),
    "p": (1.0, math.inf),
    "Tb": (1e-300, math.inf),
}
#: ND cut-off time (T = 400 contact time scales; spec section 8: T_s is 3-6).
T_MAX_ND = 400.0


def _model_key(model: str) -> str:
    keys = {"shccm": "shccm", "bouc_wen_hunt_crossley": "shccm", "mcm": "mcm",
            "bouc_wen_maxwell": "mcm"}
    if model not in keys:
        raise ParameterError(f"model = {model!r} is not one of {{bouc_wen_hunt_crossley, "
                             "bouc_wen_maxwell}} (or shccm, mcm)")
    return keys[model]


def base_predict(base: BaseParams, data: ImpactData, rtol: float = DEFAULT_RTOL
                 ) -> dict[str, np.ndarray]:
    """c_r and (with T_b) the dimensional duration of every data row under ``base``."""
    use = ("cr", "duration", "f_max", "delta_max") if math.isfinite(base.Tb) else ("cr",)
    return _predict_many([base], data, use, rtol)[0] or {}


def _predict_many(bases: list[BaseParams | None], data: ImpactData, use: Sequence[str],
                  rtol: float) -> list[dict[str, np.ndarray] | None]:
    batch = ImpactBatch(rtol=rtol)
    ok: list[int] = []
    for i, base in enumerate(bases):
        if base is None:
            continue
        try:
            law = make_law(LAW[base.model], **base.nd_law_params(data.v0))
            press = (base.pressing(-data.press, data.v0) if np.any(data.press != 0)
                     else 0.0)
            batch.add(law, mass=1.0, v0=1.0, press=press, t_max=T_MAX_ND)
        except ParameterError:
            continue
        ok.append(i)
    out: list[dict[str, np.ndarray] | None] = [None] * len(bases)
    if not ok:
        return out
    try:
        res = batch.run()
    except (ParameterError, IntegrationError):
        if len(ok) == 1:
            return out
        for i in ok:
            out[i] = _predict_many([bases[i]], data, use, rtol)[0]
        return out
    m = len(data)
    for j, i in enumerate(ok):
        base = bases[i]
        assert base is not None
        sl = slice(j * m, (j + 1) * m)
        pred = {"cr": res["cr_out"][sl]}
        tc = base.time_scale(data.v0) if math.isfinite(base.Tb) else math.nan
        if "duration" in use:
            pred["duration"] = res["duration"][sl] * tc
        if "delta_max" in use:  # X_max X_c, X_c = v0 T_c
            pred["delta_max"] = res["delta_max"][sl] * data.v0 * tc
        if "f_max" in use:  # F_P m v0 / T_c
            pred["f_max"] = res["f_max"][sl] * data.mass * data.v0 / tc
        out[i] = pred
    return out


def _box_bounds(free: Sequence[str], inner: Sequence[str], vals: dict[str, float],
                bounds: Mapping[str, Sequence[float]] | None, mk: str,
                use_g: bool) -> tuple[list[float], list[float]]:
    """The box (lo, hi) of the fitted parameters ``inner`` (the ``free`` base parameters, Gb
    as g = Gb / Bb in [-1, 1] where ``use_g``): the paper's ranges (Eq. 60; sigma_b > 0 for
    the Maxwell model), |Gb| <= Bb, narrowed by the user's ``bounds``; each must hold its start
    value in ``vals``."""
    lo: list[float] = []
    hi: list[float] = []
    for name, key in zip(free, inner, strict=True):
        a, b = (-1.0, 1.0) if key == "g" else _RANGES[name]
        if name == "sigma_b" and mk == "mcm":
            a = 1e-300
        if name == "Bb" and not use_g:
            a = max(a, abs(vals["Gb"]))
        if name == "Gb" and not use_g:
            a, b = -vals["Bb"], vals["Bb"]
        if bounds and name in bounds:
            ub = [float(v) for v in bounds[name]]
            if len(ub) != 2 or not ub[0] < ub[1]:
                raise ParameterError(f"bounds of {name!r}: expected LO < HI, got {bounds[name]}")
            if key == "g":
                raise ParameterError("bounds of 'Gb': with Bb free too, Gb is bounded by "
                                     "|Gb| <= Bb (Eq. 60); bound Bb instead")
            a, b = max(a, ub[0]), min(b, ub[1])
        if not a <= vals[key] <= b:
            raise ParameterError(f"bounds of {name!r} = [{a:g}, {b:g}] exclude its start value "
                                 f"{vals[name]:g} (paper's range Eq. 60)")
        lo.append(a)
        hi.append(b)
    return lo, hi


def fit_bouc_wen_base(
    model: str,
    data: ImpactData,
    free: Sequence[str],
    *,
    start: Mapping[str, float],
    bounds: Mapping[str, Sequence[float]] | None = None,
    weights: Mapping[str, float] | None = None,
    k: float | None = None,
    method: str = "cobyqa",
    n_starts: int = 1,
    seed: int = 0,
    rtol: float = DEFAULT_RTOL,
    max_nfev: int | None = None,
    notice: Callable[[str], None] | None = None,
) -> FitResult:
    """Fit Bouc-Wen base parameters to measured c_r and durations vs approach speed.

    Parameters
    ----------
    model:
        ``bouc_wen_hunt_crossley`` / ``shccm`` or ``bouc_wen_maxwell`` / ``mcm``.
    data:
        Impact table with ``v0`` and ``cr`` and/or ``duration``; ``press`` (N, > 0 pressing
        the bodies together, i.e. -u of the paper) may be a column or metadata.
    free:
        Subset of :data:`BASE_NAMES`; the others are fixed at ``start``.
    start:
        Values of every base parameter the model needs (``Bb, Gb, kappa, sigma_b, n, p``; ``Tb``
        for durations or a pressing force). ``Ub`` follows from Eq. 63 as ``Tb / mass``.
    k:
        The spring stiffness when known (N/m^p): adds constraint (64), alpha <= 1, and the
        dimensional parameters to the result.
    method:
        ``cobyqa`` (default, the paper's optimiser, constraints exact) or ``least_squares``
        (constraint violations are penalised).
    notice:
        As for :func:`~mbplugin.identify.fit.fit_law`: one line before a heavy fit.
    """
    mk = _model_key(model)
    if method not in METHODS:
        raise ParameterError(f"method = {method!r} is not one of {{{', '.join(METHODS)}}}")
    free = free_names(free)
    check_bound_names(bounds, free)
    for name in (*free, *start):
        if name not in (*BASE_NAMES, "Ub"):
            raise ParameterError(f"unknown base parameter {name!r}; allowed: "
                                 f"{', '.join(BASE_NAMES)} (Ub follows from Tb / mass, Eq. 63)")
    if "Ub" in free:
        raise ParameterError("Ub is not free: it follows from constraint (63), Ub = Tb / mass")
    use = list(data.targets)
    for key in use:
        if key not in ("cr", "duration", "f_max", "delta_max"):
            raise ParameterError(f"{data.name}: column {key!r} cannot be fitted")
    needs_tb = any(k in use for k in ("duration", "f_max", "delta_max")) or bool(
        np.any(data.press != 0))
    need = ["Bb", "Gb", "kappa", "sigma_b", "n", "p"] + (["Tb"] if needs_tb else [])
    missing = [n for n in need if n not in start]
    if missing:
        raise ParameterError(f"start: missing base parameter(s) {', '.join(missing)}"
                             + (" (Tb is needed for dimensional quantities or a pressing force)"
                                if "Tb" in missing else ""))
    if data.params:
        raise ParameterError(f"{data.name}: p_NAME columns are not used by a base-parameter fit")
    masses = np.unique(data.mass)
    mass = float(masses[0]) if masses.size == 1 else None
    if needs_tb and mass is None:
        raise ParameterError(f"{data.name}: a base-parameter fit with durations or a pressing "
                             "force needs one mass for all rows (Eq. 63: Ub = Tb / mass)")
    vals = {n: float(start[n]) for n in need}
    # |Gamma_b| <= B_b as a box: with both free, fit g = Gamma_b / B_b in [-1, 1]
    use_g = "Bb" in free and "Gb" in free
    inner = tuple("g" if (n == "Gb" and use_g) else n for n in free)
    if use_g:
        if abs(vals["Gb"]) > vals["Bb"]:
            raise ParameterError(f"start: |Gb| = {abs(vals['Gb']):g} exceeds Bb = "
                                 f"{vals['Bb']:g} (Eq. 60: |Gamma_b| <= B_b)")
        vals["g"] = vals["Gb"] / vals["Bb"] if vals["Bb"] > 0 else 0.0
    lo, hi = _box_bounds(free, inner, vals, bounds, mk, use_g)
    w = _parse_weights(weights, use)
    residual, n_res = _impact_residual(data, use, w)
    if n_res < len(free):
        raise ParameterError(f"too few points: {n_res} measured values for {len(free)} free "
                             f"parameters ({', '.join(free)}); need at least {len(free)}")

    def physical(p: np.ndarray) -> dict[str, float]:
        v = {**vals, **dict(zip(inner, map(float, p), strict=True))}
        if use_g:
            v["Gb"] = v["g"] * v["Bb"]
        v.pop("g", None)
        return v

    def base_of(p: np.ndarray) -> BaseParams | None:
        v = physical(p)
        if abs(v["Gb"]) > v["Bb"] * (1 + 1e-12) or v["Bb"] < 0:
            return None
        tb = v.get("Tb", math.nan)
        ub = tb / mass if mass is not None and math.isfinite(tb) else math.nan
        return BaseParams(mk, v["Bb"], max(min(v["Gb"], v["Bb"]), -v["Bb"]), v["kappa"],
                          v["sigma_b"], v["n"], v["p"], ub, tb)

    def predict(ps: list[np.ndarray]) -> list[dict[str, np.ndarray] | None]:
        return _predict_many([base_of(p) for p in ps], data, use, rtol)

    nonlinear = []
    if k is not None and mass is not None and needs_tb:
        kk = float(k)
        if not (math.isfinite(kk) and kk > 0):
            raise ParameterError(f"k = {k} is outside its allowed range (0, inf)")

        def _alpha(sc: np.ndarray) -> Any:
            def fun(x: np.ndarray) -> float:
                v = physical(x * sc)
                return mass / kk * v["kappa"] / v["Tb"] ** (v["p"] + 1.0)

            return optimize.NonlinearConstraint(fun, -np.inf, 1.0)

        nonlinear.append(_alpha)
    x0 = np.array([vals[n] for n in inner])
    # the model must be computable at the start (errors at the door), and a heavy fit says so
    wall = time.perf_counter()
    if predict([x0])[0] is None:
        at = ", ".join(f"{n} = {vals[n]:g}" for n in need)
        raise ParameterError(f"{LAW[mk]} base parameters at the start values ({at}): the model "
                             "cannot be evaluated on the data; check the data and start values")
    seconds = time.perf_counter() - wall
    if notice is not None and _heavy(seconds, len(free), n_starts, method):
        notice(estimate_text(len(data), seconds, len(free), int(n_starts), method))
    prob = _Problem(inner, x0, np.array(lo), np.array(hi), predict, residual, n_res,
                    [], nonlinear)
    x, r, ok, msg = _optimise(prob, method, n_starts, seed, max_nfev)
    p = x * prob.scale
    se_inner = dict(zip(inner, map(float, _stderr(prob, x, r)), strict=True))
    fitted = physical(p)
    values = {n: float(fitted[n]) for n in free}
    se = {n: se_inner.get(n, math.nan) for n in free}
    if use_g:  # delta method, covariance of (g, Bb) neglected
        g = fitted["Gb"] / fitted["Bb"] if fitted["Bb"] > 0 else 0.0
        se["Gb"] = math.hypot(fitted["Bb"] * se_inner["g"], g * se_inner["Bb"])
    base = base_of(p)
    pred = predict([p])[0] or {}
    params: dict[str, Any] = {k: v for k, v in fitted.items()}
    warnings: list[str] = []
    if base is not None and mass is not None and math.isfinite(base.Tb):
        params["Ub"] = base.Ub
        if k is not None:
            dim = dimensional_from_base(base, mass, float(k))
            params.update({key: float(v) for key, v in dim.items()})
            params["k"] = float(k)
            params["m"] = mass
    res, rms = _per_target(data, use, pred, r)
    # the paper's J_j (Eq. 58): mean squared error per aggregate, units of Theta^2
    for key in use:
        d = data.targets[key]
        mdl = pred.get(key)
        if mdl is not None:
            ok_ = np.isfinite(d) & np.isfinite(mdl)
            params[f"J_{key}"] = float(np.mean((mdl[ok_] - d[ok_]) ** 2)) if ok_.any() else math.nan
    return FitResult(
        law=LAW[mk], names=free, values=values, stderr=se,
        start={n: float(start[n]) for n in free}, params=params,
        cost=0.5 * float(np.sum(r**2)), rms=rms, residuals=res, predictions=pred,
        method=method, n_points=int(r.size), n_starts=int(n_starts), nfev=prob.nfev,
        success=ok, message=msg, base_model=mk, warnings=warnings, data=data, model=base,
    )
