"""The force-law interface: parameter declarations, the :class:`Law` base class.

A law is an immutable parameter object (as in MuJoCo's model/data split): it holds the numbers
the user chose and nothing that changes during a simulation. Everything that does change per
contact lives in arrays owned by whoever integrates the contacts (the impact analyser, the
contact store of an engine):

``coef``   (N, NC) float64
    Per-contact coefficients computed once at contact onset by :meth:`Law.coefficients` from the
    parameters and the values latched at onset (impact speed ``v_in``, effective mass ``m_eff``,
    effective radius ``r_eff``). Damping factors that depend on the impact speed are baked in
    here, so the force evaluation never divides by the impact speed.
``state``  (N, NS + NM) float64
    The law's per-contact state: first the ``NS`` ODE states named in :attr:`Law.state_names`
    (integrated by the caller with the rates from :meth:`Law.state_rate`), then the ``NM`` memory
    values named in :attr:`Law.memory_names` (updated in place by :meth:`Law.update_memory` after
    each accepted step and at maximum compression).

Sign conventions (project wide): ``delta >= 0`` is the penetration depth, ``ddelta > 0`` while the
bodies approach, a positive force is repulsive.

Built-in laws evaluate through compiled kernels (:mod:`mbplugin.laws.kernels`); a third-party law
sets ``kernel = None`` and overrides :meth:`Law.force_raw` (and, if it has state,
:meth:`Law.state_rate` / :meth:`Law.update_memory`) with NumPy code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mbplugin._jit import njit
from mbplugin.errors import ParameterError

#: Separation rule and force clipping of a law (see :attr:`Law.contact_mode`).
MODE_CLIP = 0  #: F = max(F_raw, 0); contact ends when F_raw <= 0 while the bodies recede.
MODE_TENSION = 1  #: F = F_raw (may pull); contact ends when delta <= 0 while the bodies recede.
MODE_RAW = 2  #: F = F_raw; contact ends when F_raw <= 0 while receding (Bouc-Wen Eq. 17).

#: Values a law may ask to have latched at contact onset.
LATCHABLE = ("v_in", "m_eff", "r_eff")


@dataclass(frozen=True)
class Param:
    """Declaration of one numeric law parameter.

    ``lo``/``hi`` bound the allowed range; ``lo_open``/``hi_open`` make the bound strict.
    ``default=None`` with ``required=True`` means the user must give it; ``required=False`` with
    ``default=None`` means optional (the law decides what its absence means).
    """

    name: str
    doc: str
    unit: str = "-"
    default: float | None = None
    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    required: bool = True

    def range_text(self) -> str:
        """The allowed range in interval notation, e.g. ``(0, 1]``."""
        left = "(" if self.lo_open or self.lo == -math.inf else "["
        right = ")" if self.hi_open or self.hi == math.inf else "]"
        return f"{left}{_fmt(self.lo)}, {_fmt(self.hi)}{right}"

    def check(self, law: str, value: Any) -> float | np.ndarray:
        """Validate ``value`` and return it as a float (or a read-only float array)."""
        if type(value) is float or type(value) is int:  # the common case, without NumPy
            x = float(value)
            if (math.isfinite(x) and (x > self.lo if self.lo_open else x >= self.lo)
                    and (x < self.hi if self.hi_open else x <= self.hi)):
                return x
        if isinstance(value, bool):
            value = float(value)
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError(
                f"{law}: parameter '{self.name}' must be a number, got {value!r}"
            ) from None
        if arr.ndim > 1:
            raise ParameterError(f"{law}: parameter '{self.name}' must be a scalar or a 1-D array")
        if arr.size == 0:
            raise ParameterError(f"{law}: parameter '{self.name}' is an empty array")
        bad = ~np.isfinite(arr)
        bad |= (arr <= self.lo) if self.lo_open else (arr < self.lo)
        bad |= (arr >= self.hi) if self.hi_open else (arr > self.hi)
        if bad.any():
            shown = arr[bad].flat[0]
            raise ParameterError(
                f"{law}: parameter '{self.name}' = {_fmt(float(shown))} is outside its allowed "
                f"range {self.range_text()} ({self.doc}, {self.unit})"
            )
        if arr.ndim == 0:
            return float(arr)
        arr = arr.copy()
        arr.setflags(write=False)
        return arr


@dataclass(frozen=True)
class Option:
    """Declaration of a non-numeric law option (a choice among strings)."""

    name: str
    doc: str
    choices: tuple[str, ...]
    default: str

    def range_text(self) -> str:
        return "{" + ", ".join(self.choices) + "}"

    def check(self, law: str, value: Any) -> str:
        if isinstance(value, bool):  # allow tension=True style flags on yes/no options
            value = "yes" if value else "no"
        value = str(value)
        if value not in self.choices:
            raise ParameterError(
                f"{law}: option '{self.name}' = {value!r} is not one of {self.range_text()}"
            )
        return value


def _fmt(x: float) -> str:
    if x == math.inf:
        return "inf"
    if x == -math.inf:
        return "-inf"
    return f"{x:g}"



@njit
def power_timescale(m, k, n, v):
    """Time scale (s) of a mass ``m`` (kg) meeting a spring k delta^n at speed ``v`` (m/s):
    (m / (k v^(n-1)))^(1/(n+1)), the unit of time that makes the impact equation
    m x'' = -k x^n free of parameters (Hunt & Crossley 1975; the contact lasts a few of them).
    Scalars in compiled code; ``power_timescale.py_func`` takes arrays."""
    return (m / (k * v ** (n - 1.0))) ** (1.0 / (n + 1.0))

class Law:
    """Base class of every contact force law (an immutable parameter object).

    Subclasses declare class attributes and implement :meth:`coefficients`:

    ``name``, ``aliases``
        Registry key (snake_case) and alternative keys.
    ``title``, ``source``, ``equation``
        Human-readable name, citation (authors, year, equation number) and the formula.
    ``params``
        Tuple of :class:`Param` / :class:`Option` declarations, in order.
    ``state_names``, ``memory_names``
        Per-contact ODE states and memory values (see the module docstring).
    ``needs``
        Which onset values :meth:`coefficients` uses (subset of ``v_in``, ``m_eff``, ``r_eff``).
    ``cr_range``
        The range of c_r where the source says the law is accurate, as text.
    ``tension``
        One sentence on whether the law can pull.
    ``kernel``
        Id of the compiled kernel, or ``None`` for a pure-NumPy (third-party) law.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    title: ClassVar[str] = ""
    source: ClassVar[str] = ""
    equation: ClassVar[str] = ""
    params: ClassVar[tuple[Param | Option, ...]] = ()
    state_names: ClassVar[tuple[str, ...]] = ()
    memory_names: ClassVar[tuple[str, ...]] = ()
    needs: ClassVar[tuple[str, ...]] = ()
    cr_range: ClassVar[str] = "elastic (c_r = 1)"
    tension: ClassVar[str] = "clipped at F >= 0 (never pulls)"
    kernel: ClassVar[int | None] = None
    #: Width of the coefficient rows produced by :meth:`coefficients`.
    n_coef: ClassVar[int] = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for p in cls.__dict__.get("params", ()):
            if hasattr(Law, p.name):
                raise TypeError(
                    f"{cls.__name__}: parameter name {p.name!r} shadows a Law attribute; rename it"
                )

    def __init__(self, **values: Any) -> None:
        known = {p.name: p for p in self.params}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ParameterError(
                f"{self.name}: unknown parameter '{unknown[0]}'; "
                f"allowed: {', '.join(known) or '(none)'}"
            )
        resolved: dict[str, Any] = {}
        for p in self.params:
            if p.name in values and values[p.name] is not None:
                resolved[p.name] = p.check(self.name, values[p.name])
            elif p.default is not None:
                resolved[p.name] = p.default
            elif isinstance(p, Param) and p.required:
                raise ParameterError(
                    f"{self.name}: missing required parameter '{p.name}' "
                    f"({p.doc}, {p.unit}, allowed range {p.range_text()})"
                )
            else:
                resolved[p.name] = None
        object.__setattr__(self, "_values", resolved)
        cls = type(self)
        for key, val in resolved.items():
            if not hasattr(cls, key):  # plain attribute reads (no __getattr__ round trip)
                self.__dict__[key] = val
        sizes = {np.size(v) for v in resolved.values() if isinstance(v, np.ndarray)}
        if len(sizes) > 1:
            raise ParameterError(
                f"{self.name}: array-valued parameters must all have the same length, "
                f"got lengths {sorted(sizes)}"
            )
        object.__setattr__(self, "size", sizes.pop() if sizes else 1)
        self._check()

    # -- immutability and introspection ------------------------------------------------------
    def __getattr__(self, item: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and item in values:
            return values[item]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {item!r}")

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{self.name}: laws are immutable; use .replace({key}=...)")

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={_short(v)}" for k, v in self._values.items() if v is not None)
        return f"{type(self).__name__}({inner})"

    def values(self) -> dict[str, Any]:
        """The resolved parameter values (defaults filled in) as a dict."""
        return dict(self._values)

    def replace(self, **changes: Any) -> Law:
        """A copy of this law with some parameters changed (validated again)."""
        merged = {k: v for k, v in self._values.items() if v is not None}
        merged.update(changes)
        return type(self)(**merged)

    def _check(self) -> None:
        """Cross-parameter validation hook (raise :class:`ParameterError`)."""

    # -- per-contact model ----------------------------------------------------------------------
    @property
    def contact_mode(self) -> int:
        """How the force is clipped and when a contact ends: MODE_CLIP, MODE_TENSION or MODE_RAW."""
        return MODE_CLIP

    @property
    def n_state(self) -> int:
        return len(self.state_names)

    @property
    def n_memory(self) -> int:
        return len(self.memory_names)

    def coefficients(
        self,
        v_in: np.ndarray,
        m_eff: np.ndarray,
        r_eff: np.ndarray,
    ) -> np.ndarray:
        """Per-contact coefficient rows, shape (N, n_coef), computed at contact onset.

        ``v_in`` (m/s, > 0) is the approach speed latched at onset, ``m_eff`` (kg) the effective
        mass, ``r_eff`` (m) the effective radius (NaN where unknown). Array-valued parameters are
        aligned with the contacts.
        """
        raise NotImplementedError

    def initial_state(self, coef: np.ndarray) -> np.ndarray:
        """State rows at contact onset, shape (N, NS + NM); zeros unless a law says otherwise."""
        return np.zeros((coef.shape[0], self.n_state + self.n_memory))

    def state_scale(self, x_c: float, v_c: float, t_c: float) -> tuple[float, ...]:
        """Magnitude scales of the ODE states for error control, from the contact's length
        ``x_c`` (m), speed ``v_c`` (m/s) and time ``t_c`` (s) scales; default ``x_c`` for each
        (states with units of length)."""
        return (x_c,) * self.n_state

    def timescale(self, m_eff: np.ndarray, v0: np.ndarray) -> np.ndarray:
        """An estimate (s) of the contact duration scale, used for step sizes and cut-offs.

        The default reads the parameters ``k`` and ``n`` (a Hertz-like spring k*delta^n) and
        returns (m / (k v0^(n-1)))^(1/(n+1)).
        """
        k, n = self._timescale_kn()
        return power_timescale.py_func(np.asarray(m_eff, dtype=float), k, n,
                                       np.asarray(v0, dtype=float))

    def _timescale_kn(self) -> tuple[Any, Any]:
        k = self._values["k"]  # a float or a read-only float array (checked by Param)
        n = self._values.get("n")
        return k, (1.5 if n is None else n)

    def timescale_rule(self) -> tuple[float, float] | None:
        """(k, n) of :func:`power_timescale` when :meth:`timescale` is the default one and the
        parameters are scalars (an engine evaluates it in compiled code), else None."""
        if type(self).timescale is not Law.timescale or self.size != 1 or "k" not in self._values:
            return None
        k, n = self._timescale_kn()
        return float(k), float(n)

    def onset_rule(self) -> tuple[int, float, float] | None:
        """The compiled form of :meth:`coefficients` for an engine that books onsets inside a
        compiled loop: (rule id of :func:`mbplugin.laws.kernels.onset_coefficients`, its two
        parameters); the row is then a row of :meth:`coefficients` with the columns that
        depend on the impact speed rewritten by the rule. None (the default): onsets go
        through :meth:`coefficients`, except for laws with scalar parameters whose rows need
        neither the impact speed nor the effective mass (``needs``): a row of a pair (whose
        effective radius is a constant of its shapes) serves every later onset of that pair
        unchanged (``ONSET_NONE``)."""
        needs = self.needs
        if self.size == 1 and "v_in" not in needs and "m_eff" not in needs:
            from mbplugin.laws import _ids

            return _ids.ONSET_NONE, 0.0, 0.0
        return None

    # -- evaluation (vectorised over contacts) ----------------------------------------------------
    def force_raw(
        self, delta: np.ndarray, ddelta: np.ndarray, coef: np.ndarray, state: np.ndarray
    ) -> np.ndarray:
        """The law's force before clipping (N), continued to delta < 0 for event location."""
        from mbplugin.laws import kernels

        d, v, c, s = self._batch(delta, ddelta, coef, state)
        return kernels.force_raw_batch(self._kid(), d, v, c, s, self.n_state, self.n_memory)

    def force(
        self, delta: np.ndarray, ddelta: np.ndarray, coef: np.ndarray, state: np.ndarray
    ) -> np.ndarray:
        """The contact force (N) applied to the bodies: clipped at 0 unless the law may pull."""
        if self.kernel is None or type(self).force_raw is not Law.force_raw:
            f = self.force_raw(delta, ddelta, coef, state)
            if self.contact_mode == MODE_CLIP:
                np.maximum(f, 0.0, out=f)
            return f
        from mbplugin.laws import kernels

        d, v, c, s = self._batch(delta, ddelta, coef, state)
        return kernels.force_batch_uniform(self._kid(), self.contact_mode, d, v, c, s,
                                           self.n_state, self.n_memory)

    def potential(self, delta: np.ndarray, coef: np.ndarray, state: np.ndarray) -> np.ndarray:
        """Elastic energy (J) each contact holds at indentation ``delta`` (m), shape (N,).

        The energy the law's elastic part would return if the contact were unloaded now: the
        integral of its elastic force from the unloaded configuration (delta = 0, or the
        residual indentation of a plastic law) to ``delta``, with the state ``state``
        (N, NS + NM). Damping and hysteresis are not in it. Every built-in law overrides this
        with the closed form in its own module; a third-party law that does not returns NaN
        (its whole contact work then counts as dissipated in energy bookkeeping).
        """
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        return np.full(d.shape, np.nan)

    def state_rate(
        self, delta: np.ndarray, ddelta: np.ndarray, coef: np.ndarray, state: np.ndarray
    ) -> np.ndarray:
        """Time derivatives of the ODE states, shape (N, NS)."""
        from mbplugin.laws import kernels

        d, v, c, s = self._batch(delta, ddelta, coef, state)
        if self.n_state == 0:
            return np.zeros((d.shape[0], 0))
        return kernels.rate_batch(self._kid(), d, v, c, s, self.n_state, self.n_memory)

    def update_memory(
        self, delta: np.ndarray, ddelta: np.ndarray, coef: np.ndarray, state: np.ndarray
    ) -> None:
        """Update the memory part of ``state`` (N, NS + NM) in place after an accepted step."""
        if self.n_memory == 0:
            return
        from mbplugin.laws import kernels

        d, v, c, s = self._batch(delta, ddelta, coef, state)
        if s is not state:
            raise ParameterError("update_memory: state must be a C-contiguous float64 array")
        kernels.update_batch(self._kid(), d, v, c, s, self.n_state, self.n_memory)

    def _batch(
        self, delta: Any, ddelta: Any, coef: Any, state: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        d, v, c, s = _as_batch(delta, ddelta, coef, state)
        if c.shape[1] < self.n_coef:
            raise ParameterError(
                f"{self.name}: coefficient rows have {c.shape[1]} values, the law's rows have "
                f"{self.n_coef} (as its coefficients() makes them)"
            )
        need = self.n_state + self.n_memory
        if s.shape[1] < need:
            raise ParameterError(
                f"{self.name}: state rows have {s.shape[1]} values, the law needs {need} "
                f"({', '.join((*self.state_names, *self.memory_names))})"
            )
        return d, v, c, s

    def evaluate(
        self,
        delta: Any,
        ddelta: Any,
        v_in: Any = None,
        m_eff: Any = None,
        r_eff: Any = None,
    ) -> np.ndarray:
        """Convenience: the force of a stateless contact at (delta, ddelta).

        Computes the onset coefficients from ``v_in``/``m_eff``/``r_eff`` and evaluates the clipped
        force with zero state. For plotting force-rate maps; simulations use the per-contact API.
        """
        d = np.atleast_1d(np.asarray(delta, dtype=float))
        v = np.broadcast_to(np.asarray(ddelta, dtype=float), d.shape).copy()
        n = d.shape[0]
        latch = self.latch_arrays(n, v_in=v_in, m_eff=m_eff, r_eff=r_eff)
        coef = self.coefficients(*latch)
        return self.force(d, v, coef, self.initial_state(coef))

    def latch_arrays(
        self, n: int, v_in: Any = None, m_eff: Any = None, r_eff: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Broadcast the onset values to length ``n``, checking the ones this law needs."""
        needs = self.needs
        out = []
        for key, val in zip(LATCHABLE, (v_in, m_eff, r_eff), strict=True):
            arr = np.empty(n)
            if val is None:
                if key in needs:
                    what = {
                        "v_in": "the impact speed v_in (m/s)",
                        "m_eff": "the effective mass m_eff (kg)",
                        "r_eff": "the effective radius r_eff (m): pass radius=...",
                    }[key]
                    raise ParameterError(f"{self.name}: this law needs {what}")
                arr.fill(np.nan)
            else:
                arr[:] = val
                # min > 0 is False for NaN; max < inf excludes inf
                if key in needs and n and not (arr.min() > 0.0 and arr.max() < math.inf):
                    raise ParameterError(
                        f"{self.name}: {key} must be finite and > 0, allowed range (0, inf)"
                    )
            out.append(arr)
        return out[0], out[1], out[2]

    def _kid(self) -> int:
        if self.kernel is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no compiled kernel: override force_raw()"
            )
        return self.kernel

    # -- documentation ----------------------------------------------------------------------------
    @classmethod
    def describe(cls) -> dict[str, Any]:
        """A JSON-ready description: name, parameters, ranges, c_r validity, tension, source."""
        params = []
        for p in cls.params:
            entry: dict[str, Any] = {"name": p.name, "doc": p.doc, "range": p.range_text()}
            if isinstance(p, Param):
                entry["unit"] = p.unit
                entry["default"] = p.default
                entry["required"] = p.required and p.default is None
            else:
                entry["choices"] = list(p.choices)
                entry["default"] = p.default
            params.append(entry)
        return {
            "name": cls.name,
            "aliases": list(cls.aliases),
            "title": cls.title,
            "equation": cls.equation,
            "params": params,
            "state": _class_tuple(cls, "state_names"),
            "memory": _class_tuple(cls, "memory_names"),
            "needs": getattr(cls, "needs_doc", None) or list(cls.needs),
            "cr_range": cls.cr_range,
            "tension": cls.tension,
            "source": cls.source,
            "compiled": _class_value(cls, "kernel") is not None,
        }


def _class_value(cls: type, name: str) -> Any:
    """A class attribute, or the value of a property on a default instance when it is one."""
    raw = getattr(cls, name)
    if not isinstance(raw, property):
        return raw
    try:
        inst = cls(**{p.name: 1.0 for p in cls.params
                      if isinstance(p, Param) and p.required and p.default is None})
        return getattr(inst, name)
    except Exception:
        return None


def _class_tuple(cls: type, name: str) -> list[str]:
    val = _class_value(cls, name)
    return list(val) if val else []


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array[{v.size}]"
    if isinstance(v, float):
        return f"{v:g}"
    return repr(v)


def _as_batch(
    delta: Any, ddelta: Any, coef: Any, state: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    d = np.ascontiguousarray(np.atleast_1d(delta), dtype=float)
    v = np.ascontiguousarray(np.atleast_1d(ddelta), dtype=float)
    c = np.atleast_2d(np.asarray(coef, dtype=float))  # any memory layout (rows or columns)
    n = d.shape[0]
    if c.shape[1] > 12:
        raise ParameterError(f"coefficient rows have {c.shape[1]} values; at most 12 allowed")
    if state is None:
        s = np.zeros((n, 0))
    else:
        s = np.asarray(state)
        if s.ndim == 1:
            s = s.reshape(n, -1)
        if not (s.dtype == np.float64 and s.flags.c_contiguous):
            s = np.ascontiguousarray(s, dtype=float)
    if v.shape != d.shape or c.shape[0] != n or s.shape[0] != n:
        raise ParameterError(
            f"batch shapes disagree: delta {d.shape}, ddelta {v.shape}, coef {c.shape}, "
            f"state {s.shape}"
        )
    return d, v, c, s


def broadcast_param(value: Any, n: int) -> np.ndarray:
    """A scalar or length-n parameter as a length-n float array."""
    return np.broadcast_to(np.asarray(value, dtype=float), (n,))


def as_mapping(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(values or {})
