"""Least-squares identification of a law's free parameters from measured impacts or loops.

Two optimisers from SciPy: ``least_squares`` (trust-region reflective, box bounds; the default)
and ``minimize(method="COBYQA")`` (derivative-free, with the linear and nonlinear constraints of
the Bouc-Wen base-parameter problem, as Milehins & Marghitu 2026, Sect. 7.1, used it). Both
start from the given values and, with ``n_starts > 1``, from further points drawn around them
inside the bounds (multi-start); the best cost wins.

Residuals (``docs/identification.md``):

* ``cr``: model minus data (absolute);
* ``duration``, ``f_max``, ``delta_max``: model / data - 1 (relative);
* loops: (F_model - F_data) / max |F_data| of the run, per sample;

each times sqrt(row weight) and the quantity's weight. The cost is half their sum of squares.
Every impact of a residual evaluation -- and the n + 1 of a finite-difference Jacobian -- runs
in one :class:`~mbplugin.impact.ImpactBatch` (one compiled loop). Standard errors come from the
Jacobian at the optimum, s^2 (J^T J)^-1 with s^2 = sum r^2 / (N - n); they are ``nan`` when
J^T J is singular or N <= n.
"""

from __future__ import annotations

import copy
import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize

from mbplugin.errors import IntegrationError, ParameterError
from mbplugin.formatting import human_duration
from mbplugin.identify.data import TARGETS, ImpactData, LoopData
from mbplugin.impact import DEFAULT_RTOL, ImpactBatch, impact
from mbplugin.laws import get_law_class, make_law
from mbplugin.laws.base import Param

METHODS = ("least_squares", "cobyqa")
#: Residual given to an impact the model could not produce (captured, failed, non-finite).
BAD_RESIDUAL = 10.0
FD_STEP = 1e-6
#: Rows of an impact table on which the cost of one model evaluation is measured before a fit.
ESTIMATE_ROWS = 256
#: A fit whose estimated wall time exceeds this (s) says so before it starts (``notice``).
HEAVY_SECONDS = 10.0
#: Model evaluations per iteration and iterations of a typical fit, for the estimate.
TYPICAL_ITERATIONS = (5, 50)


@dataclass
class FitResult:
    """Outcome of :func:`fit_law` / :func:`fit_bouc_wen_base`.

    ``values``/``stderr`` the free parameters and their standard errors (same units),
    ``params`` every parameter of the fitted model, ``cost`` half the sum of squared residuals,
    ``rms`` the RMS residual per quantity, ``residuals``/``predictions`` per quantity (arrays
    aligned with the data rows), ``warnings`` notes on the data and the fit.
    """

    law: str
    names: tuple[str, ...]
    values: dict[str, float]
    stderr: dict[str, float]
    start: dict[str, float]
    params: dict[str, Any]
    cost: float
    rms: dict[str, float]
    residuals: dict[str, np.ndarray]
    predictions: dict[str, np.ndarray]
    method: str
    n_points: int
    n_starts: int
    nfev: int
    success: bool
    message: str
    base_model: str | None = None
    warnings: list[str] = field(default_factory=list)
    data: Any = field(default=None, repr=False)
    model: Any = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``mbplugin fit --json``)."""
        return {
            "law": self.law,
            "base_model": self.base_model,
            "method": self.method,
            "free": list(self.names),
            "values": {k: float(v) for k, v in self.values.items()},
            "stderr": {k: float(v) for k, v in self.stderr.items()},
            "start": {k: float(v) for k, v in self.start.items()},
            "params": {k: (float(v) if isinstance(v, (int, float, np.floating)) else v)
                       for k, v in self.params.items() if v is not None
                       and not isinstance(v, np.ndarray)},
            "cost": float(self.cost),
            "rms": {k: float(v) for k, v in self.rms.items()},
            "residuals": {k: v.tolist() for k, v in self.residuals.items()},
            "predictions": {k: v.tolist() for k, v in self.predictions.items()},
            "n_points": self.n_points,
            "n_starts": self.n_starts,
            "nfev": self.nfev,
            "success": self.success,
            "message": self.message,
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------------------------------
# the optimisation problem: free parameters scaled by their start values
# --------------------------------------------------------------------------------------------------
@dataclass
class _Problem:
    names: tuple[str, ...]
    start: np.ndarray  # physical units
    lo: np.ndarray
    hi: np.ndarray
    #: physical parameter vectors -> one prediction dict per vector (None: invalid parameters)
    predict: Callable[[list[np.ndarray]], list[dict[str, np.ndarray] | None]]
    #: prediction dict -> residual vector
    residual: Callable[[dict[str, np.ndarray]], np.ndarray]
    n_res: int
    linear: list[Any] = field(default_factory=list)  # COBYQA constraints on physical params
    nonlinear: list[Any] = field(default_factory=list)
    nfev: int = 0

    @property
    def scale(self) -> np.ndarray:
        return np.where(self.start != 0.0, np.abs(self.start), 1.0)

    def res_many(self, xs: list[np.ndarray]) -> list[np.ndarray]:
        ps = [x * self.scale for x in xs]
        self.nfev += len(ps)
        with np.errstate(all="ignore"):
            preds = self.predict(ps)
        return [np.full(self.n_res, BAD_RESIDUAL) if pr is None else self.residual(pr)
                for pr in preds]

    def jac(self, x: np.ndarray, r0: np.ndarray | None = None) -> np.ndarray:
        lo, hi = self.lo / self.scale, self.hi / self.scale
        steps = []
        trials = []
        for i in range(x.size):
            h = FD_STEP * max(1.0, abs(x[i]))
            if x[i] + h > hi[i]:
                h = -h
            xt = x.copy()
            xt[i] += h
            if xt[i] < lo[i]:
                xt[i] = x[i]
                h = 0.0
            steps.append(h)
            trials.append(xt)
        res = self.res_many(([x] if r0 is None else []) + trials)
        base = res.pop(0) if r0 is None else r0
        J = np.empty((base.size, x.size))
        for i, (h, r) in enumerate(zip(steps, res, strict=True)):
            J[:, i] = 0.0 if h == 0.0 else (r - base) / h
        return J


def _heavy(seconds: float, n_free: int, n_starts: int, method: str) -> bool:
    per_iter = n_free + 1 if method == "least_squares" else 1
    return seconds * per_iter * TYPICAL_ITERATIONS[0] * int(n_starts) > HEAVY_SECONDS


def _optimise(prob: _Problem, method: str, n_starts: int, seed: int, max_nfev: int | None
              ) -> tuple[np.ndarray, np.ndarray, bool, str]:
    """Best scaled solution over the starts: (x, residual, success, message)."""
    sc = prob.scale
    lo, hi = prob.lo / sc, prob.hi / sc
    x0 = prob.start / sc
    rng = np.random.default_rng(seed)
    starts = [x0]
    for _ in range(max(0, n_starts - 1)):
        x = x0 * rng.uniform(0.5, 1.5, x0.size) + (x0 == 0) * rng.uniform(-1, 1, x0.size)
        starts.append(np.clip(x, np.where(np.isfinite(lo), lo, -np.inf),
                              np.where(np.isfinite(hi), hi, np.inf)))
    best: tuple[float, np.ndarray, bool, str] | None = None
    for xs in starts:
        xs = np.clip(xs, lo, hi)
        if method == "least_squares":
            sol = optimize.least_squares(
                lambda x: prob.res_many([x])[0], xs,
                jac=lambda x: prob.jac(x), bounds=(lo, hi), method="trf",
                x_scale=1.0, xtol=1e-12, ftol=1e-12, gtol=1e-12,
                max_nfev=max_nfev or 200 * (x0.size + 1),
            )
            x, ok, msg = sol.x, bool(sol.success), str(sol.message)
        else:
            cons = [c(sc) for c in prob.linear + prob.nonlinear]
            bounds = optimize.Bounds(lo, hi)
            sol = optimize.minimize(
                lambda x: 0.5 * float(np.sum(prob.res_many([x])[0] ** 2)), xs,
                method="COBYQA", bounds=bounds, constraints=cons,
                options={"maxfev": max_nfev or 1000 * x0.size, "final_tr_radius": 1e-10,
                         "initial_tr_radius": 0.1},
            )
            x, ok, msg = sol.x, bool(sol.success), str(sol.message)
        r = prob.res_many([x])[0]
        cost = 0.5 * float(np.sum(r**2))
        if best is None or cost < best[0]:
            best = (cost, x, ok, msg)
    assert best is not None
    x = best[1]
    return x, prob.res_many([x])[0], best[2], best[3]


def _stderr(prob: _Problem, x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Standard errors in physical units from the Jacobian (nan where undetermined)."""
    n = x.size
    dof = r.size - n
    if dof <= 0:
        return np.full(n, math.nan)
    J = prob.jac(x, r)  # d r / d x (scaled parameters)
    jtj = J.T @ J
    try:
        if not np.all(np.isfinite(jtj)) or np.linalg.cond(jtj) > 1e14:
            raise np.linalg.LinAlgError
        cov = np.linalg.inv(jtj) * float(np.sum(r**2)) / dof
    except np.linalg.LinAlgError:
        return np.full(n, math.nan)
    return np.sqrt(np.maximum(np.diag(cov), 0.0)) * prob.scale


# --------------------------------------------------------------------------------------------------
# residuals of impact tables and loops
# --------------------------------------------------------------------------------------------------
def _parse_weights(weights: Mapping[str, float] | None, allowed: Sequence[str]) -> dict[str, float]:
    out = {k: 1.0 for k in allowed}
    for k, v in (weights or {}).items():
        if k not in allowed:
            raise ParameterError(f"weights: unknown quantity {k!r}; the data hold "
                                 f"{', '.join(allowed)}")
        if not (math.isfinite(float(v)) and float(v) >= 0):
            raise ParameterError(f"weights[{k!r}] = {v} is outside its allowed range [0, inf)")
        out[k] = float(v)
    return out


def _impact_residual(data: ImpactData, use: Sequence[str], weights: dict[str, float]
                     ) -> tuple[Callable[[dict[str, np.ndarray]], np.ndarray], int]:
    masks = {k: np.isfinite(data.targets[k]) & (data.weight > 0) for k in use}
    sw = np.sqrt(data.weight)

    def residual(pred: dict[str, np.ndarray]) -> np.ndarray:
        parts = []
        for k in use:
            d = data.targets[k][masks[k]]
            mdl = np.asarray(pred[k], dtype=float)[masks[k]]
            r = mdl - d if k == "cr" else mdl / d - 1.0
            r = np.where(np.isfinite(r), r, BAD_RESIDUAL) * sw[masks[k]] * weights[k]
            parts.append(r)
        return np.concatenate(parts)

    return residual, int(sum(int(m.sum()) for m in masks.values()))


def _split(out: dict[str, np.ndarray], sizes: list[int]) -> list[dict[str, np.ndarray]]:
    res = []
    i = 0
    for n in sizes:
        res.append({k: v[i:i + n] for k, v in out.items() if k != "law"})
        i += n
    return res


def _run_batch(laws: list[Any], inputs: list[dict[str, Any]], rtol: float
               ) -> list[dict[str, np.ndarray] | None]:
    """One ImpactBatch for every law (``None`` entries skipped); failed batches retried alone."""
    batch = ImpactBatch(rtol=rtol)
    sizes, idx = [], []
    out: list[dict[str, np.ndarray] | None] = [None] * len(laws)
    for i, (law, kw) in enumerate(zip(laws, inputs, strict=True)):
        if law is None:
            continue
        if law.kernel is None:  # a third-party NumPy law: impact by impact (reference path)
            out[i] = _run_scalar(law, kw, rtol)
            continue
        try:
            batch.add(law, **kw)
        except (ParameterError, IntegrationError):
            continue
        sizes.append(len(batch) - sum(sizes))
        idx.append(i)
    if not idx:
        return out
    try:
        parts = _split(batch.run(), sizes)
    except (ParameterError, IntegrationError):
        if len(idx) == 1:
            return out
        for i in idx:
            out[i] = _run_batch([laws[i]], [inputs[i]], rtol)[0]
        return out
    for i, part in zip(idx, parts, strict=True):
        out[i] = part
    return out


def _run_scalar(law: Any, kw: dict[str, Any], rtol: float) -> dict[str, np.ndarray] | None:
    """The impacts of a law without a compiled kernel, one :func:`impact` call each."""
    n = int(np.size(kw["v0"]))
    cols = {k: np.broadcast_to(np.asarray(v, dtype=float), (n,)) for k, v in kw.items()}
    rows = []
    try:
        for j in range(n):
            r = impact(law, float(cols["mass"][j]), float(cols["v0"][j]),
                       mass2=float(cols["mass2"][j]), press=float(cols["press"][j]), rtol=rtol)
            rows.append(r.to_dict())
    except (ParameterError, IntegrationError):
        return None
    return {k: np.array([np.nan if r[k] is None else float(r[k]) for r in rows])
            for k in rows[0]}


# --------------------------------------------------------------------------------------------------
# checks at the door and the estimate, shared by the fits
# --------------------------------------------------------------------------------------------------
def free_names(free: Sequence[str]) -> tuple[str, ...]:
    """The free parameter names, stripped; an empty list or a name given twice is an error."""
    names = [s.strip() for s in free if s.strip()]
    if not names:
        raise ParameterError("free: name at least one parameter to fit (e.g. --free k,cr)")
    for name in names:
        if names.count(name) > 1:
            raise ParameterError(f"free: {name!r} is named twice ({', '.join(names)}); name "
                                 "each parameter to fit once")
    return tuple(names)


def check_bound_names(bounds: Mapping[str, Any] | None, free: Sequence[str]) -> None:
    """Bounds apply to free parameters only: any other name is an error naming it."""
    for name in bounds or {}:
        if name not in free:
            raise ParameterError(f"bounds: {name!r} is not a free parameter (free: "
                                 f"{', '.join(free)}); bound only parameters named in free")


def estimate_text(rows: int, seconds: float, n_free: int, n_starts: int, method: str) -> str:
    """One line: the cost of one model evaluation and of a typical fit (s)."""
    per_iter = n_free + 1 if method == "least_squares" else 1
    lo, hi = (seconds * per_iter * it * n_starts for it in TYPICAL_ITERATIONS)
    starts = f" per start ({n_starts} starts)" if n_starts > 1 else ""
    hd = human_duration
    return (f"{rows} measured rows: one model evaluation takes about {hd(seconds)}; a fit "
            f"takes {per_iter} per iteration, typically {TYPICAL_ITERATIONS[0]}-"
            f"{TYPICAL_ITERATIONS[1]} iterations{starts}: about {hd(lo)} to {hd(hi)}")


def _sample_rows(n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, ESTIMATE_ROWS)).round().astype(np.int64))


def _start_impacts(law_name: str, fixed: dict[str, Any], free: tuple[str, ...], x0: np.ndarray,
                   data: ImpactData, rtol: float) -> float:
    """Evaluate the model at the start values on a sample of the rows: raise (one line) when
    it cannot be evaluated there (no law, or every impact fails); returns the estimated wall
    time (s) of one evaluation of every row."""
    at = ", ".join(f"{k} = {v:g}" for k, v in zip(free, x0, strict=True))
    idx = _sample_rows(len(data))
    try:
        law = make_law(law_name, **fixed, **{k: v[idx] for k, v in data.params.items()},
                       **dict(zip(free, x0, strict=True)))
    except ParameterError as exc:
        raise ParameterError(f"{law_name} at the start values ({at}): {exc}") from None
    kw = {"mass": data.mass[idx], "v0": data.v0[idx], "mass2": data.mass2[idx],
          "press": data.press[idx]}
    if law.kernel is not None:
        # load (or compile) the compiled loop first: the sample times the impacts, not that
        warm = ImpactBatch(rtol=rtol)
        warm.add(make_law(law_name, **fixed, **{k: v[idx[:1]] for k, v in data.params.items()},
                          **dict(zip(free, x0, strict=True))),
                 **{k: v[:1] for k, v in kw.items()})
        warm.run(errors="report")
    t0 = time.perf_counter()
    if law.kernel is None:
        ok = _run_scalar(law, kw, rtol) is not None
        why = "the impacts fail"
    else:
        try:
            batch = ImpactBatch(rtol=rtol)
            batch.add(law, **kw)
            errs = batch.run(errors="report")["error"]
        except ParameterError as exc:
            raise ParameterError(f"{law_name} at the start values ({at}): {exc}") from None
        ok = not all(errs)
        why = str(errs[0]) if len(errs) else ""
    if not ok:
        raise ParameterError(f"{law_name} at the start values ({at}): the model cannot be "
                             f"evaluated on the data ({why}); check the data and start values")
    return (time.perf_counter() - t0) * len(data) / idx.size


# --------------------------------------------------------------------------------------------------
# dimensional fits of any law
# --------------------------------------------------------------------------------------------------
def _free_bounds(law_name: str, free: Sequence[str], bounds: Mapping[str, Sequence[float]],
                 start: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cls = get_law_class(law_name)
    decl = {p.name: p for p in cls.params if isinstance(p, Param)}
    lo, hi, x0 = [], [], []
    for name in free:
        if name not in decl:
            raise ParameterError(f"--free {name}: {law_name} has no numeric parameter {name!r}; "
                                 f"allowed: {', '.join(decl)}")
        p = decl[name]
        if name not in start:
            if p.default is None:
                raise ParameterError(f"free parameter {name!r} of {law_name} needs a starting "
                                     f"value (-p {name}=...; allowed range {p.range_text()})")
        s = float(start.get(name, p.default))  # type: ignore[arg-type]
        a, b = p.lo, p.hi
        if p.lo_open:
            a = a + 1e-9 * max(abs(a), abs(s), 1e-300) if a != -math.inf else a
        if p.hi_open:
            b = b - 1e-9 * max(abs(b), abs(s), 1e-300) if b != math.inf else b
        if name in bounds:
            ub = [float(v) for v in bounds[name]]
            if len(ub) != 2 or not ub[0] < ub[1]:
                raise ParameterError(f"bounds of {name!r}: expected LO < HI, got {bounds[name]}")
            a, b = max(a, ub[0]), min(b, ub[1])
            if a >= b:
                raise ParameterError(f"bounds of {name!r} = {ub} lie outside its allowed range "
                                     f"{p.range_text()}")
        if not a <= s <= b:
            raise ParameterError(f"bounds of {name!r} = [{a:g}, {b:g}] exclude its start value "
                                 f"{s:g}")
        lo.append(a)
        hi.append(b)
        x0.append(s)
    return np.array(lo), np.array(hi), np.array(x0)


def _check_reach(law_name: str, fixed: dict[str, Any], names: tuple[str, ...], lo: np.ndarray,
                 hi: np.ndarray, x0: np.ndarray, data: ImpactData, rtol: float) -> list[str]:
    """Raise when the data's median c_r lies outside what the law reaches over the bounds."""
    cr = data.targets["cr"][np.isfinite(data.targets["cr"])]
    if cr.size == 0:
        return []
    cand = []
    for a, s, b in zip(lo, x0, hi, strict=True):
        a2 = a if math.isfinite(a) else (s / 100 if s > 0 else s - 100 * max(abs(s), 1))
        b2 = b if math.isfinite(b) else (s * 100 if s > 0 else s + 100 * max(abs(s), 1))
        cand.append(sorted({a2, s, b2, 0.5 * (a2 + s), 0.5 * (s + b2)}))
    combos = list(itertools.islice(itertools.product(*cand), 3000))
    i = int(np.argsort(data.v0)[data.v0.size // 2])
    row = {k: float(v[i]) for k, v in data.params.items()}
    laws, kws = [], []
    for c in combos:
        try:
            laws.append(make_law(law_name, **{**fixed, **row, **dict(zip(names, c, strict=True))}))
        except ParameterError:
            laws.append(None)
        kws.append({"mass": data.mass[i], "v0": data.v0[i], "mass2": data.mass2[i],
                    "press": data.press[i]})
    if laws and all(law is not None and law.kernel is not None for law in laws[:1]):
        outs = _run_batch(laws, kws, rtol)
        reached = np.array([float(o["cr_out"][0]) for o in outs if o is not None])
    else:
        return []
    if reached.size == 0:
        return []
    a, b = float(reached.min()), float(reached.max())
    med = float(np.median(cr))
    span = f"[{cr.min():.4g}, {cr.max():.4g}]"
    where = (f"at v0 = {data.v0[i]:g} m/s, mass = {data.mass[i]:g} kg, with "
             f"{', '.join(names)} within their bounds")
    if not (a - 0.01 <= med <= b + 0.01):
        raise ParameterError(
            f"{law_name} cannot reach the data's c_r range {span}: it reaches c_r in "
            f"[{a:.4g}, {b:.4g}] {where}; free another parameter or choose another law"
        )
    if cr.min() < a - 0.01 or cr.max() > b + 0.01:
        return [f"part of the data's c_r range {span} lies outside what {law_name} reaches "
                f"([{a:.4g}, {b:.4g}] {where})"]
    return []


def fit_law(
    law: str,
    data: ImpactData | LoopData,
    free: Sequence[str],
    *,
    start: Mapping[str, Any] | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
    weights: Mapping[str, float] | None = None,
    targets: Sequence[str] | None = None,
    method: str = "least_squares",
    n_starts: int = 1,
    seed: int = 0,
    rtol: float = DEFAULT_RTOL,
    max_nfev: int | None = None,
    notice: Callable[[str], None] | None = None,
) -> FitResult:
    """Fit the ``free`` parameters of law ``law`` to measured impacts or loops.

    Parameters
    ----------
    law:
        Registry name (``mbplugin laws``).
    data:
        :class:`ImpactData` or :class:`LoopData` (see :func:`mbplugin.identify.load_data`).
    free:
        Names of the parameters to fit; every other parameter keeps its value in ``start`` or
        its default (per-row ``p_NAME`` data columns override both).
    start:
        Starting values of the free parameters and values of the fixed ones (SI units).
    bounds:
        ``{name: (lo, hi)}`` for free parameters, intersected with the law's allowed range.
    weights:
        Weight per measured quantity (``cr``, ``duration``, ``f_max``, ``delta_max``; loops:
        ``loop``); default 1 each.
    targets:
        Which measured columns to fit (default: all the data hold).
    method:
        ``least_squares`` (default) or ``cobyqa``.
    n_starts, seed:
        Multi-start: further starts drawn uniformly within +-50 % of the start (clipped to the
        bounds) with this seed.
    notice:
        Called with one line before a heavy fit starts (estimated above ``HEAVY_SECONDS``):
        the measured cost of one model evaluation and of a typical fit.

    Raises
    ------
    ParameterError
        Unknown parameters or quantities, a free parameter named twice, bounds of a parameter
        that is not free or that exclude the start, too few points, a model that cannot be
        evaluated at the start values, or a law that cannot reach the data's c_r range (the
        message gives the range it reaches).
    """
    if method not in METHODS:
        raise ParameterError(f"method = {method!r} is not one of {{{', '.join(METHODS)}}}")
    free = free_names(free)
    check_bound_names(bounds, free)
    if int(n_starts) < 1:
        raise ParameterError(f"n_starts = {n_starts} is outside its allowed range [1, inf)")
    start = dict(start or {})
    cls = get_law_class(law)
    known = {p.name for p in cls.params}
    for k in start:
        if k not in known:
            raise ParameterError(f"{cls.name}: unknown parameter {k!r}; allowed: "
                                 f"{', '.join(known)}")
    lo, hi, x0 = _free_bounds(cls.name, free, bounds or {}, start)
    fixed = {k: v for k, v in start.items() if k not in free}
    warnings: list[str] = []
    if isinstance(data, LoopData):
        prob, use = _loop_problem(cls.name, data, free, fixed, lo, hi, x0, weights, rtol)
    else:
        use = list(targets) if targets else list(data.targets)
        for k in use:
            if k not in data.targets:
                raise ParameterError(f"targets: {k!r} is not in the data (it holds "
                                     f"{', '.join(data.targets)})")
        unused = [k for k in data.params if k not in known]
        if unused:
            warnings.append(f"{data.name}: columns {', '.join('p_' + k for k in unused)} "
                            f"ignored ({cls.name} has no such parameter)")
            data = copy.copy(data)
            data.params = {k: v for k, v in data.params.items() if k in known}
        for k in data.params:
            if k in free:
                raise ParameterError(f"{data.name}: column 'p_{k}' fixes {k!r} per row; it "
                                     "cannot also be free")
        w = _parse_weights(weights, use)
        residual, n_res = _impact_residual(data, use, w)
        if n_res < len(free):
            raise ParameterError(f"too few points: {n_res} measured values for {len(free)} free "
                                 f"parameters ({', '.join(free)}); need at least {len(free)}")
        seconds = _start_impacts(cls.name, fixed, free, x0, data, rtol)
        if notice is not None and _heavy(seconds, len(free), n_starts, method):
            notice(estimate_text(len(data), seconds, len(free), int(n_starts), method))
        if "cr" in use:
            with np.errstate(all="ignore"):
                warnings += _check_reach(cls.name, fixed, free, lo, hi, x0, data, rtol)
        kw = {"mass": data.mass, "v0": data.v0, "mass2": data.mass2, "press": data.press}

        def predict(ps: list[np.ndarray]) -> list[dict[str, np.ndarray] | None]:
            laws = []
            for p in ps:
                try:
                    laws.append(make_law(cls.name, **fixed, **data.params,
                                         **dict(zip(free, p, strict=True))))
                except ParameterError:
                    laws.append(None)
            outs = _run_batch(laws, [kw] * len(laws), rtol)
            return [None if o is None else {k: o[TARGETS[k]] for k in use} for o in outs]

        prob = _Problem(free, x0, lo, hi, predict, residual, n_res)
    x, r, ok, msg = _optimise(prob, method, n_starts, seed, max_nfev)
    p = x * prob.scale
    se = _stderr(prob, x, r)
    values = dict(zip(free, map(float, p), strict=True))
    with np.errstate(all="ignore"):
        pred = prob.predict([p])[0] or {}
    per_row = data.params if isinstance(data, ImpactData) else {}
    model = make_law(cls.name, **fixed, **per_row, **values)
    res, rms = _per_target(data, use, pred, r)
    return FitResult(
        law=cls.name, names=free, values=values, stderr=dict(zip(free, map(float, se),
                                                                 strict=True)),
        start=dict(zip(free, map(float, x0), strict=True)), params=model.values(),
        cost=0.5 * float(np.sum(r**2)), rms=rms, residuals=res, predictions=pred,
        method=method, n_points=int(r.size), n_starts=int(n_starts), nfev=prob.nfev,
        success=ok, message=msg, warnings=warnings, data=data, model=model,
    )


def _per_target(data: Any, use: Sequence[str], pred: dict[str, np.ndarray], r: np.ndarray
                ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    res: dict[str, np.ndarray] = {}
    rms: dict[str, float] = {}
    if isinstance(data, LoopData):
        rms["loop"] = float(np.sqrt(np.mean(r**2))) if r.size else math.nan
        res["loop"] = r
        return res, rms
    for k in use:
        mdl = np.asarray(pred.get(k, np.full(len(data), np.nan)), dtype=float)
        d = data.targets[k]
        rr = mdl - d if k == "cr" else mdl / d - 1.0
        res[k] = rr
        ok = np.isfinite(rr)
        rms[k] = float(np.sqrt(np.mean(rr[ok] ** 2))) if ok.any() else math.nan
    return res, rms


# --------------------------------------------------------------------------------------------------
# loops / time series
# --------------------------------------------------------------------------------------------------
def _loop_model(law: Any, run: Any, rtol: float) -> np.ndarray:
    """Model force at the run's samples (N)."""
    res = impact(law, run.mass, run.v0, mass2=run.mass2, press=run.press, rtol=max(rtol, 1e-9),
                 record=True)
    s = res.series
    if run.t is not None:
        return np.interp(run.t, s.t, s.force, right=0.0)
    # no time: compare on the loading and unloading branches at the measured indentations
    im = int(np.argmax(s.delta))
    jd = int(np.argmax(run.delta))
    out = np.empty(run.delta.size)
    out[: jd + 1] = np.interp(run.delta[: jd + 1], s.delta[: im + 1], s.force[: im + 1])
    d_un = s.delta[im:][::-1]
    f_un = s.force[im:][::-1]
    order = np.argsort(d_un, kind="stable")
    out[jd + 1:] = np.interp(run.delta[jd + 1:], d_un[order], f_un[order], left=0.0)
    return out


def _loop_problem(law_name: str, data: LoopData, free: tuple[str, ...], fixed: dict[str, Any],
                  lo: np.ndarray, hi: np.ndarray, x0: np.ndarray,
                  weights: Mapping[str, float] | None, rtol: float) -> tuple[_Problem, list[str]]:
    w = _parse_weights(weights, ["loop"])["loop"]
    n_res = len(data)
    if n_res < len(free):
        raise ParameterError(f"too few points: {n_res} samples for {len(free)} free parameters")
    at = ", ".join(f"{k} = {v:g}" for k, v in zip(free, x0, strict=True))
    try:
        law0 = make_law(law_name, **fixed, **dict(zip(free, x0, strict=True)))
        _loop_model(law0, data.runs[0], rtol)
    except (ParameterError, IntegrationError) as exc:
        raise ParameterError(f"{law_name} at the start values ({at}): the model cannot be "
                             f"evaluated on the data ({str(exc).splitlines()[0]})") from None
    scales = [max(float(np.max(np.abs(r.force))), 1e-300) for r in data.runs]

    def predict(ps: list[np.ndarray]) -> list[dict[str, np.ndarray] | None]:
        out: list[dict[str, np.ndarray] | None] = []
        for p in ps:
            try:
                law = make_law(law_name, **fixed, **dict(zip(free, p, strict=True)))
                out.append({"loop": np.concatenate([_loop_model(law, r, rtol)
                                                     for r in data.runs])})
            except (ParameterError, IntegrationError):
                out.append(None)
        return out

    def residual(pred: dict[str, np.ndarray]) -> np.ndarray:
        f = np.concatenate([r.force / s for r, s in zip(data.runs, scales, strict=True)])
        sc = np.concatenate([np.full(r.force.size, s) for r, s in zip(data.runs, scales,
                                                                      strict=True)])
        r = pred["loop"] / sc - f
        return np.where(np.isfinite(r), r, BAD_RESIDUAL) * w

    return _Problem(free, x0, lo, hi, predict, residual, n_res), ["loop"]
