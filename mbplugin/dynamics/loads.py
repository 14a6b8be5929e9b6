"""External loads: constant or time-dependent forces and torques on bodies.

A load acts on one body with a force through its centre of mass and/or a torque, both in the
world frame (N, N m). Its time dependence is a :class:`TimeFunction` profile multiplying a
constant vector, a table interpolated linearly, or any Python callable ``f(t) -> (3,)``.

Profiles (``t`` in s)::

    constant            1
    step    t0          0 before t0, 1 after
    ramp    t0, t1      0 before t0, linear to 1 at t1, then 1
    sine    freq, phase sin(2 pi freq t + phase)
    arctan  rate, t0    (2/pi) arctan(rate (t - t0))    (Milehins & Marghitu 2026, Eq. 57)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mbplugin.errors import ParameterError

PROFILES = ("constant", "step", "ramp", "sine", "arctan")


@dataclass(frozen=True)
class TimeFunction:
    """A scalar profile s(t) (see the module docstring)."""

    kind: str = "constant"
    t0: float = 0.0
    t1: float = 1.0
    freq: float = 0.0
    phase: float = 0.0
    rate: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in PROFILES:
            raise ParameterError(f"profile {self.kind!r} is not one of {{{', '.join(PROFILES)}}}")
        for name in ("t0", "t1", "freq", "phase", "rate"):
            if not math.isfinite(getattr(self, name)):
                raise ParameterError(f"profile {self.kind}: {name} must be finite")
        if self.kind == "ramp" and not self.t1 > self.t0:
            raise ParameterError(f"profile ramp: t1 = {self.t1:g} must be > t0 = {self.t0:g}")

    def __call__(self, t: float) -> float:
        k = self.kind
        if k == "constant":
            return 1.0
        if k == "step":
            return 1.0 if t >= self.t0 else 0.0
        if k == "ramp":
            return min(1.0, max(0.0, (t - self.t0) / (self.t1 - self.t0)))
        if k == "sine":
            return math.sin(2.0 * math.pi * self.freq * t + self.phase)
        return 2.0 / math.pi * math.atan(self.rate * (t - self.t0))


@dataclass
class Load:
    """One load on body ``body`` (index): ``force``/``torque`` (3,) times ``profile``, or a table
    (``table_t`` (K,), ``table_force``/``table_torque`` (K, 3)), or a callable ``func(t)``
    returning (force (3,), torque (3,))."""

    body: int
    force: np.ndarray | None = None
    torque: np.ndarray | None = None
    profile: TimeFunction | None = None
    table_t: np.ndarray | None = None
    table_force: np.ndarray | None = None
    table_torque: np.ndarray | None = None
    func: Callable[[float], tuple[np.ndarray, np.ndarray]] | None = None

    @property
    def constant(self) -> bool:
        return self.func is None and self.table_t is None and (
            self.profile is None or self.profile.kind == "constant"
        )

    def evaluate(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(force, torque) at time ``t``, world frame."""
        if self.func is not None:
            f, tq = self.func(t)
            return np.asarray(f, dtype=float).reshape(3), np.asarray(tq, dtype=float).reshape(3)
        if self.table_t is not None:
            f = np.zeros(3)
            tq = np.zeros(3)
            if self.table_force is not None:
                f = np.array([np.interp(t, self.table_t, self.table_force[:, j]) for j in range(3)])
            if self.table_torque is not None:
                tq = np.array(
                    [np.interp(t, self.table_t, self.table_torque[:, j]) for j in range(3)]
                )
            return f, tq
        s = 1.0 if self.profile is None else self.profile(t)
        f = np.zeros(3) if self.force is None else s * self.force
        tq = np.zeros(3) if self.torque is None else s * self.torque
        return f, tq


class Loads:
    """All loads of a world; constant loads are summed once into per-body arrays."""

    def __init__(self, n_bodies: int, loads: Sequence[Load] = ()) -> None:
        self.n = n_bodies
        self.const_force = np.zeros((n_bodies, 3))
        self.const_torque = np.zeros((n_bodies, 3))
        self.varying: list[Load] = []
        self.empty = True  #: no load at all (kept up to date by :meth:`add`)
        for ld in loads:
            self.add(ld)

    def add(self, load: Load) -> None:
        if not (0 <= load.body < self.n):
            raise ParameterError(f"load body index {load.body} is outside [0, {self.n - 1}]")
        if load.table_t is not None:
            tt = np.asarray(load.table_t, dtype=float)
            if tt.ndim != 1 or tt.size < 2 or np.any(np.diff(tt) <= 0) or not np.all(
                np.isfinite(tt)
            ):
                raise ParameterError("load table: t must be at least 2 increasing finite times")
            for arr, what in ((load.table_force, "force"), (load.table_torque, "torque")):
                if arr is not None and (np.shape(arr) != (tt.size, 3) or not np.all(
                        np.isfinite(arr))):
                    raise ParameterError(
                        f"load table: {what} must be {tt.size} finite rows of 3 values"
                    )
        if load.constant:
            f, tq = load.evaluate(0.0)
            self.const_force[load.body] += f
            self.const_torque[load.body] += tq
        else:
            self.varying.append(load)
        self.empty = not self.varying and not self.const_force.any() and not (
            self.const_torque.any())

    def evaluate(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Per-body (force, torque) arrays (N, 3) at time ``t``."""
        if not self.varying:
            return self.const_force, self.const_torque
        f = self.const_force.copy()
        tq = self.const_torque.copy()
        for ld in self.varying:
            fi, ti = ld.evaluate(t)
            f[ld.body] += fi
            tq[ld.body] += ti
        return f, tq
