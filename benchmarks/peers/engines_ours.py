"""mbplugin's own rows: the standalone engine (scene files), mbplugin on PyBullet and on MuJoCo
(when the backends are in this build) and the hand-written SciPy baseline.

Each ``run_*`` takes a :class:`~common.SceneSpec` and returns a :class:`~common.Trajectory`.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
from common import G, SceneSpec, Trajectory
from scipy.integrate import solve_ivp

from mbplugin.laws import make_law
from mbplugin.scene import load_scene

ROOT = Path(__file__).resolve().parents[2]
SCENE_FILE = {"drop": "drop_ball.toml", "tennis": "stacked_balls.toml", "stack": "stack_n.toml"}
#: rebound speed below which the SciPy baseline declares the ball at rest (m/s)
V_REST = 1e-3
BULLET_SCENE_FILE = {"drop": "bullet_drop_ball.toml", "tennis": "bullet_stacked_balls.toml"}
MUJOCO_SCENE_FILE = {"drop": "mujoco_drop_ball.toml", "tennis": "mujoco_stacked_balls.toml"}


def _from_result(result: object, wall: float) -> Trajectory:
    """Standalone/backend result -> Trajectory (bodies after the floor, in scene order)."""
    names = list(result.body_names)
    idx = [i for i, nm in enumerate(names) if nm != "floor"]
    t = np.asarray(result.t)
    z = np.asarray(result.pos)[:, idx, 2]
    v = np.asarray(result.vel)[:, idx, 2]
    force = None
    c = getattr(result, "contacts", None) or {}
    if len(c.get("t", ())) and len(idx) == 1:
        force = (np.asarray(c["t"]), np.asarray(c["force"]))
    stats = getattr(result, "stats", None)  # the PyBullet backend's result counts host steps
    steps = int(getattr(stats, "steps", 0) if stats is not None else getattr(result, "steps", 0))
    return Trajectory(t, z, v, wall, steps, force)


def run_standalone(spec: SceneSpec, setting: dict) -> Trajectory:
    """The scene file of ``spec.kind`` with the spec's overrides (plus ``setting['set']``)."""
    overrides = list(spec.overrides) + list(setting.get("set", ()))
    scene = load_scene(ROOT / "scenes" / SCENE_FILE[spec.kind], overrides)
    t0 = time.perf_counter()
    result = scene.run()
    return _from_result(result, time.perf_counter() - t0)


def bullet_available() -> str:
    """'' when mbplugin's PyBullet backend can run the peers scenes, else the reason."""
    if importlib.util.find_spec("mbplugin.bullet") is None:
        return "not available in this build (no mbplugin.bullet)"
    if not (ROOT / "scenes" / BULLET_SCENE_FILE["drop"]).exists():
        return "not available in this build (no scenes/bullet_drop_ball.toml)"
    return ""


def run_bullet(spec: SceneSpec, setting: dict) -> Trajectory:
    """mbplugin's laws inside PyBullet: the backend's scene file with the same overrides plus the
    host step (``dt``), run through the same ``load_scene`` API as the standalone engine."""
    return _run_host(spec, setting, BULLET_SCENE_FILE, "PyBullet")


def mujoco_available() -> str:
    """'' when mbplugin's MuJoCo backend can run the peers scenes, else the reason."""
    if importlib.util.find_spec("mbplugin.mujoco") is None:
        return "not available in this build (no mbplugin.mujoco)"
    if importlib.util.find_spec("mujoco") is None:
        return "not installed (mujoco; pip install '.[mujoco]')"
    return ""


def run_mujoco(spec: SceneSpec, setting: dict) -> Trajectory:
    """mbplugin's laws inside MuJoCo (``world.backend = "mujoco"``): as :func:`run_bullet`."""
    return _run_host(spec, setting, MUJOCO_SCENE_FILE, "MuJoCo")


def _run_host(spec: SceneSpec, setting: dict, files: dict[str, str], host: str) -> Trajectory:
    fname = files.get(spec.kind)
    if fname is None or not (ROOT / "scenes" / fname).exists():
        raise RuntimeError(f"no scene file for {spec.kind} on {host}")
    overrides = list(spec.overrides) + list(setting.get("set", ()))
    scene = load_scene(ROOT / "scenes" / fname, overrides)
    t0 = time.perf_counter()
    result = scene.run()
    return _from_result(result, time.perf_counter() - t0)


def run_scipy(spec: SceneSpec, setting: dict) -> Trajectory:
    """SciPy ``solve_ivp`` DOP853 with a Python right-hand side: the drop ball as a researcher
    would write it by hand -- phase by phase, terminal events at touch and at separation, the
    law's coefficients latched at each onset. The force itself comes from the same law object
    (``zhang_sharf``, exact c_r) through its public ``coefficients``/``force`` calls."""
    if spec.kind != "drop":
        raise NotImplementedError("the hand-written baseline is the one-ball drop")
    rtol = float(setting.get("rtol", 1e-10))
    ball = spec.balls[0]
    pair = spec.pairs[0]
    R, m = ball.radius, ball.mass
    law = make_law("zhang_sharf", k=pair.k_hertz, n=1.5, cr=spec.law_cr)
    ts, zs, vs = [np.array([0.0])], [np.array([ball.z0])], [np.array([0.0])]
    tf_all, f_all = [], []

    def flight(t: float, y: np.ndarray) -> np.ndarray:
        return np.array([y[1], -G])

    def touch(t: float, y: np.ndarray) -> float:
        return y[0] - R

    touch.terminal, touch.direction = True, -1

    t, y = 0.0, np.array([ball.z0, 0.0])
    cap = float(setting.get("wall_cap", float("inf")))
    note = ""
    t0 = time.perf_counter()
    steps = 0
    while t < spec.duration:
        if time.perf_counter() - t0 > cap:
            note = f"stopped at t = {t:.3g} s (wall-time cap {cap:.0f} s)"
            break
        sol = solve_ivp(flight, (t, spec.duration), y, method="DOP853", rtol=rtol, atol=1e-12,
                        events=touch)
        steps += len(sol.t) - 1
        ts.append(sol.t[1:])
        zs.append(sol.y[0, 1:])
        vs.append(sol.y[1, 1:])
        t, y = float(sol.t[-1]), sol.y[:, -1].copy()
        if sol.status != 1:
            break
        v_in = max(-y[1], 1e-12)
        coef = law.coefficients(np.array([v_in]), np.array([m]), np.array([R]))
        state = law.initial_state(coef)

        def contact(t: float, yy: np.ndarray, coef: np.ndarray = coef,
                    state: np.ndarray = state) -> np.ndarray:
            d = R - yy[0]
            f = law.force(np.array([d]), np.array([-yy[1]]), coef, state)[0] if d > 0 else 0.0
            return np.array([yy[1], f / m - G])

        def leave(t: float, yy: np.ndarray) -> float:
            return yy[0] - R

        leave.terminal, leave.direction = True, 1
        y[0] = R - 1e-15  # just inside, so the leave event cannot fire at the start
        sol = solve_ivp(contact, (t, spec.duration), y, method="DOP853", rtol=rtol,
                        atol=1e-14, events=leave)
        steps += len(sol.t) - 1
        ts.append(sol.t[1:])
        zs.append(sol.y[0, 1:])
        vs.append(sol.y[1, 1:])
        d = R - sol.y[0]
        tf_all.append(sol.t)
        f_all.append(law.force(np.maximum(d, 0.0), -sol.y[1], np.repeat(coef, len(d), axis=0),
                               np.repeat(state, len(d), axis=0)))
        t, y = float(sol.t[-1]), sol.y[:, -1].copy()
        if sol.status != 1:
            break
        y[0] = R + 1e-15  # just outside (see above)
        if y[1] < V_REST:  # the hand-written script stops here: the ball is at rest
            note = f"stopped at t = {t:.3g} s: rebound < {V_REST * 1e3:g} mm/s, taken as rest"
            break
    wall = time.perf_counter() - t0
    tt = np.concatenate(ts)
    force = (np.concatenate(tf_all), np.concatenate(f_all)) if tf_all else None
    return Trajectory(tt, np.concatenate(zs)[:, None], np.concatenate(vs)[:, None], wall, steps,
                      force, note)
