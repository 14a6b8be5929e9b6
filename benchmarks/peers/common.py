"""Scenes, closed forms and the engine-independent measurements of the peers comparison.

Every engine hands back a :class:`Trajectory` (time, height and vertical velocity of each ball,
optionally the contact force it reports); everything measured on it is measured here, the same
way for every engine:

* **bounces** from free flight. A record-to-record segment is free flight when its mean
  acceleration is -g (to 1e-6 g); a bounce is what lies between two flights. The impact and
  rebound speeds are the speeds at the touching height z = R, continued ballistically from the
  last state of the flight before and the first state of the flight after
  (v_touch = sqrt(v^2 + 2 g (z - R))), so a fixed-step engine is not charged for where its step
  grid happens to fall. c_r = v_out / v_in (Newton's).
* **contact duration**: from the end of one flight to the start of the next (a fixed-step engine
  resolves it to about one step).
* **peak force**: the force the engine reports where it reports one, else the step-averaged
  force m (dv/dt + g) over the records inside the contact.
* **resting height**: z - R at the end (negative: the ball sits in the floor).

SI units; z up; gravity 9.81 m/s^2.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mbplugin.contact.materials import hertz_stiffness
from mbplugin.validation.formulas import power_elastic_delta_max, power_elastic_duration_factor

G = 9.81
STEEL = {"E": 2.0e11, "nu": 0.3, "rho": 7800.0}
#: requested coefficients of restitution of the drop-ball scenes
CR_REQUESTS = (0.3, 0.5, 0.8, 0.95)
#: bounces slower than this are left out of the "worst c_r" figure (the brief's threshold)
V_WORST = 0.15


@dataclass(frozen=True)
class Ball:
    name: str
    radius: float
    mass: float
    z0: float  # centre height at release (m)


@dataclass(frozen=True)
class Pair:
    """One contact pair: ``b`` = -1 is the floor."""

    a: int
    b: int
    k_hertz: float  # N/m^1.5
    m_eff: float
    r_eff: float
    v_impact: float  # the impact speed the pair is tuned for (m/s)


@dataclass(frozen=True)
class SceneSpec:
    """A scene every engine builds in its own way. ``cr`` is the requested c_r (1 = elastic)."""

    kind: str  # "drop" | "tennis" | "stack"
    label: str
    balls: tuple[Ball, ...]
    pairs: tuple[Pair, ...]
    cr: float
    duration: float
    material: str = "steel"
    overrides: tuple[str, ...] = ()  # for mbplugin's scene file
    law_cr: float = 1.0  # the cr parameter of mbplugin's law (calibrated for gravity)

    def hertz_duration(self, pair: int = 0) -> float:
        """Elastic Hertz contact duration of a pair at its impact speed (s)."""
        p = self.pairs[pair]
        dmax = power_elastic_delta_max(p.m_eff, p.k_hertz, p.v_impact, 1.5)
        return float(power_elastic_duration_factor(1.5) * dmax / p.v_impact)

    def hertz_peak_force(self, pair: int = 0) -> float:
        """Elastic Hertz peak force k delta_max^1.5 of a pair at its impact speed (N)."""
        p = self.pairs[pair]
        return float(p.k_hertz * power_elastic_delta_max(p.m_eff, p.k_hertz, p.v_impact, 1.5)
                     ** 1.5)

    def omega(self, pair: int = 0) -> float:
        """Angular frequency of the linear spring with the Hertz contact duration: pi / t_H."""
        return math.pi / self.hertz_duration(pair)


def sphere_mass(radius: float, rho: float = STEEL["rho"]) -> float:
    return 4.0 / 3.0 * math.pi * radius**3 * rho


# --------------------------------------------------------------------------------------------------
# the scenes
# --------------------------------------------------------------------------------------------------
DROP_R = 0.01
DROP_H = 0.10
DROP_T = 5.0
K_STEEL = float(hertz_stiffness(STEEL["E"], STEEL["nu"], STEEL["E"], STEEL["nu"], DROP_R))
#: rubber-like ball on a rigid floor: k = 1e5 N/m^1.5 (E* ~ 0.75 MPa for R = 1 cm)
K_SOFT = 1.0e5


def calibrated_cr(k: float, m: float, v0: float, cr: float) -> float:
    """The ``cr`` parameter of ``zhang_sharf`` that gives ``cr`` at the first bounce with gravity
    pressing during the contact (``mbplugin.impact.calibrate``; without gravity it is ``cr``)."""
    from mbplugin.impact import calibrate
    from mbplugin.laws import make_law

    if cr >= 1.0:
        return 1.0
    return float(calibrate(make_law("zhang_sharf", k=k, n=1.5, cr=cr), cr, v0=v0, mass=m,
                           press=m * G).value)


def drop_scene(material: str, cr: float, duration: float = DROP_T) -> SceneSpec:
    """Ball R = 1 cm, rho = 7800, released with its lowest point 10 cm above a fixed plane."""
    m = sphere_mass(DROP_R)
    k = K_STEEL if material == "steel" else K_SOFT
    v0 = math.sqrt(2 * G * DROP_H)
    ball = Ball("ball", DROP_R, m, DROP_R + DROP_H)
    law_cr = calibrated_cr(k, m, v0, cr)
    ov = ("law=zhang_sharf", f"cr={law_cr!r}", f"k={k!r}", f"radius={DROP_R!r}", f"mass={m!r}",
          f"height={DROP_H!r}", f"duration={duration!r}")
    return SceneSpec("drop", f"drop {material} c_r={cr:g}", (ball,),
                     (Pair(0, -1, k, m, DROP_R, v0),), cr, duration, material, ov, law_cr)


def tennis_scene() -> SceneSpec:
    """scenes/stacked_balls.toml as it ships: basketball (0.6 kg, R 12 cm) with a tennis ball
    (57 g, R 3.3 cm) 5 cm above it, dropped from 1 m; elastic Hertz contacts, k = 1e9."""
    mb, rb, mt, rt, gap, h = 0.6, 0.12, 0.057, 0.033, 0.05, 1.0
    v0 = math.sqrt(2 * G * h)
    balls = (Ball("basketball", rb, mb, h + rb), Ball("tennis", rt, mt, h + 2 * rb + gap + rt))
    pairs = (Pair(0, -1, 1e9, mb, rb, v0),
             Pair(1, 0, 1e9, mb * mt / (mb + mt), rb * rt / (rb + rt), 2 * v0))
    return SceneSpec("tennis", "tennis ball on basketball", balls, pairs, 1.0, 0.5, "hertz", ())


def tennis_ideal(spec: SceneSpec) -> float:
    """Launch speed of the top ball for instantaneous elastic contacts in sequence, with the
    ballistic flight while the gap closes: the bottom ball rebounds at v0 = sqrt(2 g h); the gap
    s closes at relative speed 2 v0 in t = s / (2 v0); then the 1-D elastic collision."""
    bot, top = spec.balls
    h = bot.z0 - bot.radius
    v0 = math.sqrt(2 * G * h)
    gap = top.z0 - top.radius - (bot.z0 + bot.radius)
    t = gap / (2 * v0)
    vb, vt = v0 - G * t, -(v0 + G * t)
    M, m = bot.mass, top.mass
    return ((m - M) * vt + 2 * M * vb) / (M + m)


STACK_N = 5


def stack_scene(duration: float = DROP_T) -> SceneSpec:
    """scenes/stack_n.toml with n = 5: steel balls R = 1 cm released touching on a steel floor,
    Hertz stiffness from E = 200 GPa, nu = 0.3, damping for c_r = 0.5."""
    m = sphere_mass(DROP_R)
    balls = tuple(Ball(f"ball{i}", DROP_R, m, DROP_R * (1 + 2 * i)) for i in range(STACK_N))
    k_bb = float(hertz_stiffness(STEEL["E"], STEEL["nu"], STEEL["E"], STEEL["nu"], DROP_R, DROP_R))
    v = math.sqrt(2 * G * DROP_H)  # tuning speed of the rate-dependent laws (as the drop ball)
    pairs = (Pair(0, -1, K_STEEL, m, DROP_R, v),
             *(Pair(i, i - 1, k_bb, m / 2, DROP_R / 2, v) for i in range(1, STACK_N)))
    ov = ("n=5", f"duration={duration!r}", "law=zhang_sharf", "cr=0.5")
    return SceneSpec("stack", "5-ball stack at rest", balls, pairs, 0.5, duration, "steel", ov)


def stack_hertz_top(spec: SceneSpec) -> float:
    """Centre height of the top ball under Hertz's static compressions (F/k)^(2/3), contact i
    carrying the weight of the balls above it."""
    n = len(spec.balls)
    m = spec.balls[0].mass
    z = 0.0
    for i, p in enumerate(spec.pairs):
        load = (n - i) * m * G
        z += (2 * DROP_R if i else DROP_R) - (load / p.k_hertz) ** (2.0 / 3.0)
    return z


# --------------------------------------------------------------------------------------------------
# trajectories and measurements
# --------------------------------------------------------------------------------------------------
@dataclass
class Trajectory:
    """What an engine run gives back. ``z``/``v`` are (records, balls); ``force`` optional
    (t, F) of the ball-floor contact force the engine reports."""

    t: np.ndarray
    z: np.ndarray
    v: np.ndarray
    wall: float
    steps: int = 0
    force: tuple[np.ndarray, np.ndarray] | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _touch_speed(z: float, v: float, R: float) -> float:
    return math.sqrt(max(v * v + 2 * G * max(z - R, 0.0), 0.0))


def flights(t: np.ndarray, z: np.ndarray, v: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges [i0, i1] of free flight (every segment inside has acceleration -g)."""
    dt = np.diff(t)
    dv = np.diff(v)
    ok = dt > 0
    acc = np.where(ok, dv / np.where(ok, dt, 1.0), 0.0)
    free = ok & (np.abs(acc + G) <= 1e-6 * G + 1e-12 / np.where(ok, dt, 1.0))
    out = []
    i = 0
    n = len(free)
    while i < n:
        if free[i]:
            j = i
            while j + 1 < n and free[j + 1]:
                j += 1
            out.append((i, j + 1))
            i = j + 1
        else:
            i += 1
    return out


@dataclass
class BounceStats:
    cr: list[float]
    v_in: list[float]
    duration: list[float]
    peak_force: list[float]
    energies: list[float]  # flight energies per unit mass, relative to the touching height


def bounces(tr: Trajectory, R: float, mass: float, ball: int = 0,
            force_from_engine: bool = True) -> BounceStats:
    t, z, v = tr.t, tr.z[:, ball], tr.v[:, ball]
    fl = flights(t, z, v)
    cr, vin, dur, fpk, en = [], [], [], [], []
    for (_a0, a1), (b0, _b1) in itertools.pairwise(fl):
        vi = _touch_speed(z[a1], v[a1], R)
        vo = _touch_speed(z[b0], v[b0], R)
        en.append(0.5 * vi * vi)
        if vi <= 0:
            break
        cr.append(vo / vi)
        vin.append(vi)
        dur.append(float(t[b0] - t[a1]))
        if force_from_engine and tr.force is not None:
            tf, F = tr.force
            sel = (tf >= t[a1]) & (tf <= t[b0])
            fpk.append(float(np.max(F[sel])) if np.any(sel) else math.nan)
        else:
            seg = slice(a1, b0 + 1)
            dts = np.diff(t[seg])
            dvs = np.diff(v[seg])
            good = dts > 0
            fpk.append(float(np.max(mass * (dvs[good] / dts[good] + G))) if np.any(good)
                       else math.nan)
    if fl:
        a1 = fl[-1][1]
        en.append(0.5 * _touch_speed(z[a1], v[a1], R) ** 2)
    return BounceStats(cr, vin, dur, fpk, en)


def drop_metrics(spec: SceneSpec, tr: Trajectory) -> dict[str, Any]:
    """Everything the drop-ball table shows, from one trajectory."""
    ball = spec.balls[0]
    b = bounces(tr, ball.radius, ball.mass)
    out: dict[str, Any] = {"bounces": len(b.cr), "wall": tr.wall, "steps": tr.steps,
                           "t_end": float(tr.t[-1]) if len(tr.t) else 0.0}
    out["cr_all"] = b.cr
    out["v_in_all"] = b.v_in
    out["energies"] = b.energies
    if not b.cr and len(flights(tr.t, tr.z[:, 0], tr.v[:, 0])) == 1 and out_rest(tr):
        out["cr1"] = 0.0  # fell, stayed: no rebound at all
        out["worst_dev"] = spec.cr
    if b.cr:
        out["cr1"] = b.cr[0]
        out["duration1"] = b.duration[0]
        out["peak1"] = b.peak_force[0]
        fast = [c for c, w in zip(b.cr, b.v_in, strict=True) if w > V_WORST]
        out["worst_dev"] = max((abs(c - spec.cr) for c in fast), default=math.nan)
        out["n_fast"] = len(fast)
        # energy after the bounces faster than V_WORST, against the requested c_r^(2N)
        n = len(fast)
        if n and len(b.energies) > n:
            out["energy_ratio"] = (b.energies[n] / b.energies[0]) / spec.cr ** (2 * n)
    if tr.note:
        out["note"] = tr.note
    out["complete"] = (len(tr.t) > 0 and tr.t[-1] >= spec.duration * 0.999) or (
        "taken as rest" in tr.note)
    z_end = float(tr.z[-1, 0]) if len(tr.t) else math.nan
    v_end = float(tr.v[-1, 0]) if len(tr.t) else math.nan
    out["rest_height"] = z_end - ball.radius
    out["at_rest"] = abs(v_end) < 1e-3 and out["complete"]
    return out


def out_rest(tr: Trajectory) -> bool:
    return len(tr.t) > 0 and abs(float(tr.v[-1, 0])) < 1e-3


def tennis_metrics(spec: SceneSpec, tr: Trajectory) -> dict[str, Any]:
    ideal = tennis_ideal(spec)
    vt = float(np.max(tr.v[:, 1])) if len(tr.t) else math.nan
    return {"v_top": vt, "v_ideal": ideal, "ratio": vt / ideal, "wall": tr.wall,
            "steps": tr.steps, "t_end": float(tr.t[-1]) if len(tr.t) else 0.0,
            "note": tr.note}


def stack_metrics(spec: SceneSpec, tr: Trajectory) -> dict[str, Any]:
    z_top = float(tr.z[-1, -1])
    last = tr.t >= tr.t[-1] - 1.0
    drift = float(np.max(np.ptp(tr.z[last], axis=0))) if np.any(last) else math.nan
    return {"top_err": z_top - stack_hertz_top(spec), "rigid_err": z_top - spec.balls[-1].z0,
            "drift": drift, "wall": tr.wall, "steps": tr.steps,
            "t_end": float(tr.t[-1]), "note": tr.note,
            "complete": bool(tr.t[-1] >= spec.duration * 0.999)}
