"""The impact analyser: one binary collinear impact, solved with exact location of its events.

This is the setting of the source papers. Two bodies of masses ``m1`` and ``m2`` (``m2`` may be
infinite: a fixed wall) meet with approach speed ``v0``; the contact law turns the indentation
``delta`` and its rate into a force, and the relative motion obeys

    m_eff * delta'' = press + force_ext(t) - F(delta, delta', state),   m_eff = m1 m2/(m1 + m2),

from delta = 0, delta' = v0 at t = 0. ``press`` (N) and ``force_ext(t)`` are the effective external
force pressing the bodies together (for a ball on the ground: its weight). The contact ends at the
first instant the force is <= 0 while the bodies recede (Milehins & Marghitu 2026, Eq. 17) -- not
when delta returns to 0, which would be wrong for hysteretic laws; laws that may pull end at
delta = 0 instead. No separation before the cut-off means the bodies were captured: c_r = 0.

Reported quantities (see :class:`ImpactResult`): Newton's, Poisson's and Stronge's coefficients
of restitution, the duration, the peak force and its time, the maximum and residual indentation,
the energy absorbed by the contact, and whether the bodies were captured.

>>> from mbplugin.laws import make_law
>>> from mbplugin.impact import impact
>>> r = impact(make_law("hunt_crossley", k=2.4144e10, n=1.5, cr=0.8892), mass=0.54, v0=0.15)
>>> round(r.cr_out, 4)
0.9002
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mbplugin.errors import IntegrationError, ParameterError, reraise_interrupt
from mbplugin.impact import _compiled as cc
from mbplugin.impact.calibration import Calibration, calibrate, clear_cache
from mbplugin.laws import kernels
from mbplugin.laws.base import Law
from mbplugin.pipeline.budget import StepBudget, first_budget
from mbplugin.pipeline.layout import IMPACT

_NO_CARRY = cc.NO_CARRY

#: The keys of :meth:`ImpactResult.to_dict` (and of ``mbplugin impact --json``).
RESULT_KEYS = (
    "cr_out",
    "cr_poisson",
    "cr_stronge",
    "duration",
    "f_max",
    "t_f_max",
    "delta_max",
    "delta_residual",
    "energy_dissipated",
    "captured",
)

DEFAULT_RTOL = 1e-10
DEFAULT_CUTOFF = 400.0  # cut-off time in units of the law's contact time scale
#: Accepted steps after which one impact is abandoned (an IntegrationError; a sweep row's
#: error): a contact whose stiffness outgrows its time scale (a huge ``press``) would otherwise
#: run for hours. An ordinary impact takes 20-2000 steps.
DEFAULT_MAX_STEPS = 10_000_000


@dataclass(frozen=True)
class ImpactSeries:
    """Time series of one impact sampled on the integrator's dense output.

    ``t`` (s), ``delta`` (m), ``ddelta`` (m/s), ``force`` (N, as applied to the bodies) and
    ``state`` (one column per law ODE state, named in ``state_names``).
    """

    t: np.ndarray
    delta: np.ndarray
    ddelta: np.ndarray
    force: np.ndarray
    state: np.ndarray
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class ImpactResult:
    """Outcome of one impact (SI units).

    ``cr_out``          Newton's coefficient: -ddelta(end)/v0 (0 when captured)
    ``cr_poisson``      restitution impulse / compression impulse of the contact force
    ``cr_stronge``      sqrt(work returned in restitution / work absorbed in compression)
    ``duration``        contact duration (s); ``inf`` when captured
    ``f_max``           peak contact force (N); ``t_f_max`` its time (s)
    ``delta_max``       maximum indentation (m); ``delta_residual`` indentation at separation (m)
    ``energy_dissipated`` net work absorbed by the contact, int F ddelta dt (J)
    ``captured``        True when the bodies did not separate before the cut-off

    Extra attributes (not in :meth:`to_dict`): ``duration_overlap`` is the time until the overlap
    delta returns to 0, continuing the force-free relative motion after separation (equal to
    ``duration`` unless the law separates with a residual overlap; the convention of Zhang et al.
    2022, Tables 1-2); ``t_max_compression`` the time of maximum compression; ``steps`` and
    ``nfev`` the integrator's accepted steps and right-hand-side evaluations; ``state_end`` the
    law's state at the end; ``series`` the recorded time series.
    """

    cr_out: float
    cr_poisson: float
    cr_stronge: float
    duration: float
    f_max: float
    t_f_max: float
    delta_max: float
    delta_residual: float
    energy_dissipated: float
    captured: bool
    law: str = ""
    duration_overlap: float = math.nan
    t_max_compression: float = math.nan
    steps: int = 0
    nfev: int = 0
    state_end: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    series: ImpactSeries | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Exactly the keys of :data:`RESULT_KEYS`; infinities become ``None`` (JSON null)."""
        out: dict[str, Any] = {}
        for key in RESULT_KEYS:
            val = getattr(self, key)
            if isinstance(val, (bool, np.bool_)):
                out[key] = bool(val)
            else:
                val = float(val)
                out[key] = val if math.isfinite(val) else None
        return out


# --------------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------------
def _positive(name: str, value: Any, allow_inf: bool = False) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    bad = np.isnan(arr) | (arr <= 0) | (~np.isfinite(arr) if not allow_inf else np.isnan(arr))
    if np.any(bad):
        shown = float(np.atleast_1d(arr)[np.atleast_1d(bad)][0])
        rng = "(0, inf]" if allow_inf else "(0, inf)"
        raise ParameterError(f"{name} = {shown:g} is outside its allowed range {rng}")
    return arr


def _finite(name: str, value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} must be finite, allowed range (-inf, inf)")
    return arr


def check_rtol(rtol: float) -> float:
    rtol = float(rtol)
    if not (1e-13 <= rtol <= 1e-3):
        raise ParameterError(f"rtol = {rtol:g} is outside its allowed range [1e-13, 1e-3]")
    return rtol


def _check_max_steps(max_steps: Any) -> int:
    if type(max_steps) is int and max_steps >= 1:  # the usual case, cheaply
        return max_steps
    if (isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Real)
            or not float(max_steps).is_integer() or max_steps < 1):
        raise ParameterError(f"max_steps = {max_steps!r} is outside its allowed range [1, inf) "
                             "(an integer)")
    return int(max_steps)


def _step_limit_text(what: str, limit: int, t: float, cutoff: float) -> str:
    return (f"{what}: the impact took more than max_steps = {limit} steps (t = {t:.4g} s of "
            f"the cut-off {cutoff:.4g} s): the contact is far stiffer than its time scale at "
            f"v0 suggests (a large press?); raise max_steps or lower t_max")


def effective_mass(mass: Any, mass2: Any = math.inf) -> np.ndarray:
    """m1 m2 / (m1 + m2), with m2 = inf giving m1 (kg)."""
    m1 = _positive("mass", mass)
    m2 = _positive("mass2", mass2, allow_inf=True)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(m2), m1, m1 * m2 / (m1 + m2))


def _scalar(name: str, value: Any, positive: bool, allow_inf: bool = False) -> float:
    """One number checked as :func:`_positive` / :func:`_finite` do, without NumPy for the
    common case of a Python float or int (a single impact's inputs)."""
    if type(value) is float or type(value) is int:
        x = float(value)
        if positive:
            if x > 0.0 and (allow_inf or x != math.inf):
                return x
        elif math.isfinite(x):
            return x
    arr = _positive(name, value, allow_inf) if positive else _finite(name, value)
    if arr.size != 1:
        raise ParameterError(f"{name} must be a single number for impact(); use ImpactBatch")
    return float(arr.reshape(-1)[0])


# --------------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------------
def _restitution(
    status: float, ts: float, vs: float, pc: float, pt: float, wc: float, wt: float, tm: float,
    v0: float,
) -> tuple[float, float, float, float, bool]:
    """(cr_out, cr_poisson, cr_stronge, duration, captured) of one impact from the
    integrator's raw outputs: end time ``ts``, separation speed ``vs`` (< 0), compression and
    total impulses ``pc``/``pt``, compression and total work ``wc``/``wt`` and the time of
    maximum compression ``tm`` (NaN if never reached)."""
    if status == 1:  # captured: no separation before the cut-off
        return 0.0, 0.0, 0.0, math.inf, True
    have_tm = math.isfinite(tm)
    poisson = (pt - pc) / pc if have_tm and pc > 0 else 0.0
    stronge = math.sqrt(max(wc - wt, 0.0) / wc) if have_tm and wc > 0 else 0.0
    return -vs / v0, poisson, stronge, ts, False


def _derive(
    status: np.ndarray,
    ts: np.ndarray,
    vs: np.ndarray,
    ds: np.ndarray,
    pc: np.ndarray,
    pt: np.ndarray,
    wc: np.ndarray,
    wt: np.ndarray,
    tm: np.ndarray,
    v0: np.ndarray,
) -> dict[str, np.ndarray]:
    """:func:`_restitution` of every impact of a batch, as arrays keyed like the results."""
    cols = (status, ts, vs, pc, pt, wc, wt, tm, v0)
    rows = [_restitution(*r) for r in zip(*(np.asarray(c, dtype=float).tolist() for c in cols),
                                          strict=True)]
    cr_out, poisson, stronge, duration, captured = (np.array(c) for c in zip(*rows, strict=True))
    return {
        "cr_out": cr_out.astype(float),
        "cr_poisson": poisson.astype(float),
        "cr_stronge": stronge.astype(float),
        "duration": duration.astype(float),
        "delta_residual": np.asarray(ds, dtype=float),
        "energy_dissipated": np.asarray(wt, dtype=float),
        "captured": captured.astype(bool),
    }


def _law_setup(
    law: Law, n: int, m: np.ndarray, v0: np.ndarray, radius: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Coefficients, initial state, time scale and state scales for n impacts of one law."""
    if law.size not in (1, n):
        raise ParameterError(
            f"{law.name}: array-valued parameters have length {law.size}, but the batch has {n}"
        )
    r = None if radius is None else _positive("radius", radius)
    v_in, m_eff, r_eff = law.latch_arrays(n, v_in=v0, m_eff=m, r_eff=r)
    coef = np.ascontiguousarray(law.coefficients(v_in, m_eff, r_eff), dtype=float)
    if coef.shape[0] != n:
        coef = np.ascontiguousarray(np.broadcast_to(coef, (n, coef.shape[1])))
    if not np.isfinite(coef).all():
        raise ParameterError(f"{law.name}: the parameters give non-finite force coefficients")
    s_init = np.ascontiguousarray(law.initial_state(coef), dtype=float)
    tc = np.empty(n)
    tc[:] = law.timescale(m_eff, v_in)
    if n and not (tc.min() > 0.0 and tc.max() < math.inf):  # False for NaN too
        raise ParameterError(f"{law.name}: could not estimate a contact time scale")
    scale = np.ones((n, kernels.NODE_MAX))
    for i in range(n) if law.n_state else ():
        sc = law.state_scale(float(v0[i] * tc[i]), float(v0[i]), float(tc[i]))
        scale[i, : len(sc)] = sc
    return coef, s_init, tc, scale


def _as_law(law: Any) -> Law:
    """``law`` itself, or the calibrated law of a :class:`~mbplugin.impact.Calibration`
    (so ``impact(calibrate(...), ...)`` works)."""
    if isinstance(law, Law):
        return law
    inner = getattr(law, "law", None)
    if isinstance(inner, Law):
        return inner
    raise ParameterError(f"law must be an mbplugin Law (or a Calibration), got "
                         f"{type(law).__name__}")


def _overlap_closing(ds: float, vs: float, press: float, m_eff: float) -> float:
    """The time (s) after separation until a residual overlap ``ds`` (m) closes in free
    flight at the separation speed ``vs`` (m/s, negative: opening) under the constant
    ``press`` (N) on ``m_eff`` (kg): the root of ds + vs tau + (press / m) tau^2 / 2 = 0
    (inf where it never closes)."""
    a = 0.5 * press / m_eff
    if a == 0.0:
        return ds / abs(vs) if vs < 0 else math.inf
    disc = vs * vs - 4.0 * a * ds
    return (-vs - math.sqrt(disc)) / (2.0 * a) if disc >= 0 else math.inf


def _compiled_impact(name: str, args: tuple, limit: int,
                     cutoff: float) -> tuple[np.ndarray, Any, np.ndarray]:
    """:func:`impact`'s compiled integration (``args``: :func:`cc.impact_core`'s leading
    arguments) in calls of a bounded number of steps, each going on from the last one's carry;
    returns (its result record array, the law state at the end, the records of all calls).
    More than ``limit`` accepted steps raise an :class:`IntegrationError` (``name``: the
    law's, ``cutoff`` the cut-off time (s), for its message)."""
    # calls of a bounded number of steps (Ctrl-C is seen between them), each going on
    # from the last one's carry: the same steps as one uninterrupted call (an ordinary
    # impact ends within the first call: no budget bookkeeping for it)
    budget: StepBudget | None = None
    n_steps = min(first_budget(), limit)
    carry = _NO_CARRY
    parts = []
    done = 0
    while True:
        wall = time.perf_counter()
        try:
            res_arr, s_end, rec, carry = cc.impact_core(*args, n_steps, carry)
        except SystemError as exc:  # a Ctrl-C seen inside the compiled call
            reraise_interrupt(exc)
            raise
        parts.append(rec)
        r = res_arr[0]
        if r["status"] != cc.PAUSED:
            break
        steps_now = int(r["steps"])
        if steps_now >= limit:
            raise IntegrationError(_step_limit_text(name, limit, float(r["t_s"]), cutoff))
        budget = budget or StepBudget()
        budget.update(steps_now - done, time.perf_counter() - wall)
        done = steps_now
        n_steps = budget.steps(limit - done)
    if len(parts) > 1:
        rec = np.concatenate(parts)
    return res_arr, s_end, rec


def impact(
    law: Law | Any,
    mass: float,
    v0: float,
    *,
    mass2: float = math.inf,
    press: float = 0.0,
    force_ext: Callable[[float], float] | None = None,
    radius: float | None = None,
    rtol: float = DEFAULT_RTOL,
    t_max: float | None = None,
    record: bool = False,
    method: str = "auto",
    max_steps: int = DEFAULT_MAX_STEPS,
) -> ImpactResult:
    """Simulate one binary collinear impact.

    Parameters
    ----------
    law:
        The contact law (a scalar-parameter :class:`~mbplugin.laws.Law`).
    mass, mass2:
        Masses of the two bodies (kg); ``mass2 = inf`` is a fixed wall.
    v0:
        Approach speed at first contact (m/s, > 0).
    press:
        Constant effective force pressing the bodies together (N); negative pulls them apart.
    force_ext:
        Optional time-dependent effective force (N) pressing the bodies together, a function of
        the time since first contact (s). Runs on the reference (SciPy) integrator.
    radius:
        Effective radius (m) for laws that need it (e.g. Azad-Featherstone with ``lam_star``).
    rtol:
        Relative tolerance of the adaptive integrator (default 1e-10, c_r error < 1e-8).
    t_max:
        Cut-off time (s) after which the bodies count as captured; default 400 contact time
        scales of the law.
    record:
        Keep the time series (:attr:`ImpactResult.series`) for plots.
    method:
        ``"auto"`` (compiled when possible), ``"compiled"`` or ``"reference"``.
    max_steps:
        Accepted steps after which the impact is abandoned with an
        :class:`~mbplugin.errors.IntegrationError` (compiled path; default
        ``DEFAULT_MAX_STEPS``).
    """
    law = _as_law(law)
    if law.size != 1:
        raise ParameterError(f"{law.name}: impact() needs scalar parameters; use impact_batch()")
    if method not in ("auto", "compiled", "reference"):
        raise ParameterError(f"method = {method!r} is not one of {{auto, compiled, reference}}")
    # scalars checked without NumPy: this wrapper costs less than the compiled integration
    m1 = _scalar("mass", mass, positive=True)
    m2 = _scalar("mass2", mass2, positive=True, allow_inf=True)
    m_eff = m1 if m2 == math.inf else m1 * m2 / (m1 + m2)
    v0f = _scalar("v0", v0, positive=True)
    p = _scalar("press", press, positive=False)
    rtol = check_rtol(rtol)
    limit = _check_max_steps(max_steps)
    if force_ext is not None and not callable(force_ext):
        raise ParameterError("force_ext must be a callable f(t) returning a force in N")
    coef, s_init, tc_arr, scale = _law_setup(law, 1, np.array([m_eff]), np.array([v0f]), radius)
    tc = float(tc_arr[0])
    cutoff = DEFAULT_CUTOFF * tc if t_max is None else _scalar("t_max", t_max, positive=True)
    use_ref = method == "reference" or force_ext is not None or law.kernel is None
    if method == "compiled" and use_ref:
        raise ParameterError(
            "method='compiled' cannot run a Python force_ext or a law without a compiled kernel"
        )
    if use_ref:
        from mbplugin.impact._reference import impact_reference

        raw, state_end, rec = impact_reference(
            law, coef[0], s_init[0], m_eff, v0f, p, force_ext, tc, cutoff, rtol, scale[0], record,
        )
        status, ts, vs, ds, pc, pt, wc, wt, tm = (
            float(raw[k]) for k in ("status", "ts", "vs", "ds", "pc", "pt", "wc", "wt", "tm"))
        fmax, tfmax, dmax = float(raw["fmax"]), float(raw["tfmax"]), float(raw["dmax"])
        steps, nfev = int(raw["steps"]), int(raw["nfev"])
    else:
        n_ode, n_mem = law.n_state, law.n_memory
        args = (law.kernel, law.contact_mode, kernels.ctuple(coef, 0),
                kernels.stuple_law(s_init, 0, n_ode, n_mem), n_ode, m_eff, v0f, p, tc, cutoff,
                rtol, scale[0], record)
        res_arr, s_end, rec = _compiled_impact(law.name, args, limit, cutoff)
        state_end = (kernels.unpack_state(np.array([s_end]), n_ode, n_mem)[0] if n_ode + n_mem
                     else np.zeros(0))
        res = dict(zip(res_arr.dtype.names, res_arr[0].item(), strict=True))  # Python scalars
        if res["status"] == 2:
            raise IntegrationError(f"{law.name}: the integrator's step size underflowed")
        status, ts, vs, ds, pc, pt, wc, wt, tm = (
            res["status"], res["t_s"], res["v_s"], res["delta_s"], res["p_c"], res["p_t"],
            res["w_c"], res["w_t"], res["t_m"])
        fmax, tfmax, dmax = res["f_max"], res["t_f_max"], res["delta_max"]
        steps, nfev = res["steps"], res["nfev"]
    cr_out, poisson, stronge, duration, captured = _restitution(
        status, ts, vs, pc, pt, wc, wt, tm, v0f)
    series = None
    overlap = duration
    if force_ext is None and not captured and ds > 0.0:
        overlap += _overlap_closing(ds, vs, p, m_eff)
    if record:
        series = ImpactSeries(
            t=rec[:, 0], delta=rec[:, 1], ddelta=rec[:, 2], force=rec[:, 3],
            state=rec[:, 4 : 4 + law.n_state], state_names=tuple(law.state_names),
        )
    return ImpactResult(
        cr_out=cr_out,
        cr_poisson=poisson,
        cr_stronge=stronge,
        duration=duration,
        f_max=fmax,
        t_f_max=tfmax,
        delta_max=dmax,
        delta_residual=ds,
        energy_dissipated=wt,
        captured=captured,
        law=law.name,
        duration_overlap=overlap,
        t_max_compression=tm,
        steps=steps,
        nfev=nfev,
        state_end=np.asarray(state_end, dtype=float),
        series=series,
    )


# --------------------------------------------------------------------------------------------------
# many impacts at once
# --------------------------------------------------------------------------------------------------
@dataclass
class _Group:
    law: Law
    m: np.ndarray
    v0: np.ndarray
    press: np.ndarray
    coef: np.ndarray
    s_init: np.ndarray
    tc: np.ndarray
    scale: np.ndarray
    cutoff: np.ndarray


class ImpactBatch:
    """Many independent impacts, possibly of different laws, integrated in one compiled loop.

    >>> batch = ImpactBatch()
    >>> batch.add(make_law("hunt_crossley", k=1e9, cr=cr_array), mass=1.0, v0=v_array)
    >>> batch.add(make_law("flores", k=1e9, cr=0.5), mass=1.0, v0=v_array)
    >>> result = batch.run()          # dict of arrays keyed like ImpactResult.to_dict()
    """

    def __init__(self, rtol: float = DEFAULT_RTOL, max_steps: int = DEFAULT_MAX_STEPS) -> None:
        self.rtol = check_rtol(rtol)
        self.max_steps = _check_max_steps(max_steps)
        self._groups: list[_Group] = []

    def add(
        self,
        law: Law | Any,
        mass: Any,
        v0: Any,
        *,
        mass2: Any = math.inf,
        press: Any = 0.0,
        radius: Any = None,
        t_max: Any = None,
    ) -> ImpactBatch:
        """Add impacts of one law; every argument broadcasts against the law's array parameters."""
        law = _as_law(law)
        if law.kernel is None:
            raise ParameterError(f"{law.name}: batches need a compiled law; use impact() instead")
        m = effective_mass(mass, mass2)
        v = _positive("v0", v0)
        p = _finite("press", press)
        try:
            shape = np.broadcast_shapes(
                np.shape(m), np.shape(v), np.shape(p), (law.size,) if law.size > 1 else ()
            )
        except ValueError:
            raise ParameterError(
                f"{law.name}: mass {np.shape(m)}, v0 {np.shape(v)}, press {np.shape(p)} and the "
                f"law's array parameters (length {law.size}) must have the same length"
            ) from None
        n = shape[0] if shape else 1
        m, v, p = (np.broadcast_to(a, (n,)).astype(float) for a in (m, v, p))
        coef, s_init, tc, scale = _law_setup(law, n, m, v, radius)
        cutoff = (DEFAULT_CUTOFF * tc if t_max is None
                  else np.broadcast_to(_positive("t_max", t_max), (n,)).astype(float))
        self._groups.append(_Group(law, m, v, p, coef, s_init, tc, scale, cutoff))
        return self

    def __len__(self) -> int:
        return sum(g.m.shape[0] for g in self._groups)

    def run(self, errors: str = "raise") -> dict[str, np.ndarray]:
        """Integrate every impact; returns arrays keyed like :data:`RESULT_KEYS`, plus ``law``.

        ``errors``: ``"raise"`` (an :class:`~mbplugin.errors.IntegrationError` when an impact
        fails: its step size underflowed, or it took more than ``max_steps``) or
        ``"report"`` (the failed impacts' results are NaN and the key ``error`` holds one
        message per impact, empty for the others)."""
        if errors not in ("raise", "report"):
            raise ParameterError(f"errors = {errors!r} is not one of {{raise, report}}")
        if not self._groups:
            raise ParameterError("ImpactBatch.run: the batch is empty (call add() first)")

        def cat(fn: Callable[[_Group], Any], dtype: Any = float) -> np.ndarray:
            return np.concatenate([np.broadcast_to(fn(g), g.m.shape) for g in self._groups]
                                  ).astype(dtype)

        coef = np.vstack([kernels.pad_coef(g.coef) for g in self._groups])
        s_init = np.vstack([kernels.pack_state(g.s_init, g.law.n_state, g.law.n_memory)
                            for g in self._groups])
        scale = np.ascontiguousarray(np.vstack([g.scale for g in self._groups]))
        kid = cat(lambda g: g.law.kernel, np.int64)
        mode = cat(lambda g: g.law.contact_mode, np.int64)
        n_ode = cat(lambda g: g.law.n_state, np.int64)
        m = cat(lambda g: g.m)
        v0 = cat(lambda g: g.v0)
        press = cat(lambda g: g.press)
        tc = cat(lambda g: g.tc)
        cutoff = cat(lambda g: g.cutoff)
        out = np.empty(m.shape[0], dtype=IMPACT)
        # calls of a bounded number of steps (Ctrl-C is seen between them), each going on
        # from where the last one stopped: the results of one uninterrupted loop
        budget = StepBudget()
        first, carry = 0, _NO_CARRY
        while first < m.shape[0]:
            wall = time.perf_counter()
            n_budget = budget.steps()
            try:
                first, carry, used = cc.impact_batch_core(
                    kid, mode, coef, s_init, n_ode, m, v0, press, tc, cutoff, self.rtol, scale,
                    self.max_steps, out, first, n_budget, carry)
            except SystemError as exc:  # a Ctrl-C seen inside the compiled call
                reraise_interrupt(exc)
                raise
            budget.update(int(used), time.perf_counter() - wall)
        status = out["status"]
        failed = (status == 2) | (status == cc.STEP_LIMIT)
        msg = np.full(m.shape[0], "", dtype=object)
        for bad in np.flatnonzero(failed):
            msg[bad] = ("IntegrationError: " if errors == "report" else "") + (
                f"impact {bad} of the batch: the step size underflowed" if status[bad] == 2
                else _step_limit_text(f"impact {bad} of the batch", self.max_steps,
                                      float(out["t_s"][bad]), float(cutoff[bad])))
            if errors == "raise":
                raise IntegrationError(msg[bad])
        d = _derive(
            out["status"], out["t_s"], out["v_s"], out["delta_s"], out["p_c"], out["p_t"],
            out["w_c"], out["w_t"], out["t_m"],
            v0,
        )
        d["f_max"] = out["f_max"]
        d["t_f_max"] = out["t_f_max"]
        d["delta_max"] = out["delta_max"]
        d["steps"] = out["steps"].astype(np.int64)
        d["law"] = np.concatenate([np.full(g.m.shape[0], g.law.name) for g in self._groups])
        if errors == "report":
            for k in (*RESULT_KEYS, "duration_overlap", "t_max_compression"):
                if k in d and d[k].dtype.kind == "f":
                    d[k][failed] = np.nan
            d["captured"][failed] = False
            d["error"] = msg
        return d


def impact_batch(
    laws: Law | Sequence[Law],
    mass: Any,
    v0: Any,
    **kwargs: Any,
) -> dict[str, np.ndarray]:
    """Run many impacts: one law (array parameters allowed) or a list of laws sharing inputs."""
    rtol = kwargs.pop("rtol", DEFAULT_RTOL)
    batch = ImpactBatch(rtol=rtol)
    for law in [laws] if isinstance(laws, Law) else list(laws):
        batch.add(law, mass, v0, **kwargs)
    return batch.run()


__all__ = [
    "RESULT_KEYS",
    "Calibration",
    "ImpactBatch",
    "ImpactResult",
    "ImpactSeries",
    "calibrate",
    "clear_cache",
    "effective_mass",
    "impact",
    "impact_batch",
]
