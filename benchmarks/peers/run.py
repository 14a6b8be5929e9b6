"""mbplugin side by side with MuJoCo, Drake and PyBullet: one command, every number.

    pip install ".[peers]" && python benchmarks/peers/run.py          # ~9 min on 2 cores
    python benchmarks/peers/run.py --quick                            # one c_r, small budgets
    python benchmarks/peers/run.py --splice mujoco    # only these engines' rows, into RESULTS.md

Writes ``benchmarks/peers/RESULTS.md`` (the tables, engine versions, machine),
``benchmarks/peers/results.json`` and the plots ``benchmarks/peers/*.png`` (``--out DIR`` to
write elsewhere). Engines that are not installed are reported as such, not skipped silently.

For every engine and scene: the engine's default step (or tolerance), then the step refined by
4x (tolerance by 100x) until the first-bounce c_r moves by less than 1e-3 -- the "converged"
setting -- within a time budget per engine; the full 5-s run at both. The refinement is done at
c_r = 0.8 and its step used for the other requested c_r. Wall times are for the whole run,
state recorded at every step (the Python loop of PyBullet's stepping API included), and are
given as a ratio to mbplugin's standalone engine on the same scene, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import common as cm  # noqa: E402
import engines_ours as ours  # noqa: E402
import engines_peers as peers  # noqa: E402
import report  # noqa: E402


@dataclass
class Engine:
    key: str
    label: str
    run: Callable[[cm.SceneSpec, dict], cm.Trajectory]
    default: dict
    refine: Callable[[dict], dict] | None  # one refinement step of the setting
    scenes: tuple[str, ...] = ("drop", "tennis", "stack")
    requires: str = ""
    note: str = ""
    available: str = ""  # '' or why not
    extra: dict[str, Any] = field(default_factory=dict)


def _h4(s: dict) -> dict:
    return {**s, "h": s["h"] / 4}


def _acc(s: dict) -> dict:
    return {**s, "accuracy": s.get("accuracy", 1e-4) / 100}


def _rtol(s: dict) -> dict:
    return {**s, "rtol": s.get("rtol", 1e-3) / 1000}


def engines() -> list[Engine]:
    out = [
        Engine("ours", "mbplugin standalone (zhang_sharf, adaptive + events)", ours.run_standalone,
               {"set": ["integrator.contact_samples=0"]}, None),
        Engine("bullet", "mbplugin on PyBullet (zhang_sharf)", ours.run_bullet,
               {"set": ["world.host_dt=0.004166666666666667"]}, None, ("drop", "tennis")),
        Engine("scipy", "SciPy DOP853, Python RHS (zhang_sharf)", ours.run_scipy, {"rtol": 1e-3},
               _rtol, ("drop",)),
        Engine("mujoco", "mbplugin on MuJoCo (zhang_sharf)", ours.run_mujoco,
               {"set": ["world.host_dt=0.002"]}, None, ("drop", "tennis")),
        Engine("mj_docs", "MuJoCo, direct solref, zeta from the oscillator formula",
               peers.run_mujoco, {"h": 0.002, "variant": "docs"}, _h4, requires="mujoco"),
        Engine("mj_cal", "MuJoCo, direct solref, zeta calibrated by mbplugin", peers.run_mujoco,
               {"h": 0.002, "variant": "cal"}, _h4, requires="mujoco"),
        Engine("mj_default", "MuJoCo, default contact (solref 0.02 1; no c_r asked)",
               peers.run_mujoco, {"h": 0.002, "variant": "default"}, None, ("drop",),
               requires="mujoco"),
        Engine("drake_cont", "Drake continuous, point contact (Hunt-Crossley), RK3",
               peers.run_drake, {"h": 0.0, "accuracy": 1e-4}, _acc, requires="pydrake"),
    ]
    for approx in ("tamsi", "lagged", "similar", "sap"):
        lab = ("Drake discrete, SAP (linear Kelvin-Voigt)" if approx == "sap"
               else f"Drake discrete, {approx} (Hunt-Crossley)")
        out.append(Engine(f"drake_{approx}", lab, peers.run_drake, {"h": 1e-3, "approx": approx},
                          _h4, requires="pydrake"))
    out += [
        Engine("pb_rest", "PyBullet native, restitution", peers.run_pybullet,
               {"h": 1 / 240, "variant": "restitution"}, _h4, requires="pybullet"),
        Engine("pb_kd", "PyBullet native, contactStiffness/contactDamping", peers.run_pybullet,
               {"h": 1 / 240, "variant": "stiffness"}, _h4, requires="pybullet"),
    ]
    import importlib.util

    for e in out:
        if e.requires and importlib.util.find_spec(e.requires) is None:
            e.available = f"not installed ({e.requires}; pip install '.[peers]')"
    for e in out:
        if e.key == "bullet":
            e.available = ours.bullet_available()
        if e.key == "mujoco":
            e.available = ours.mujoco_available()
    return out


def setting_label(s: dict) -> str:
    if s.get("h"):
        return f"h = {s['h']:.3g} s"
    if "accuracy" in s:
        return f"accuracy {s['accuracy']:.0e}"
    if "rtol" in s:
        return f"rtol {s['rtol']:.0e}"
    if any(x.startswith("world.host_dt=") for x in s.get("set", ())):
        dt = next(float(x.partition("=")[2]) for x in s["set"] if x.startswith("world.host_dt="))
        return f"host step {dt:.3g} s"
    return "scene file's adaptive integrator"


def safe_run(eng: Engine, spec: cm.SceneSpec, setting: dict,
             metric: Callable[[cm.SceneSpec, cm.Trajectory], dict]) -> dict:
    try:
        tr = eng.run(spec, setting)
        m = metric(spec, tr)
    except Exception as exc:  # the table says what failed
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if os.environ.get("PEERS_DEBUG"):
            traceback.print_exc()
        return {"error": msg[:160], "setting": setting_label(setting)}
    m["setting"] = setting_label(setting)
    return m


KEY = {"drop": "cr1", "tennis": "ratio"}


def sweep(eng: Engine, spec: cm.SceneSpec, t_probe: float, cap: Callable[[], float],
          log: Callable[[str], None]) -> tuple[dict, list[dict]]:
    """Refine the step from the default until the scene's key figure moves by < 1e-3.
    Returns (converged setting, probes)."""
    metric = cm.drop_metrics if spec.kind == "drop" else cm.tennis_metrics
    key = KEY[spec.kind]
    s = dict(eng.default)
    probes = []
    prev = None
    last_ok: dict | None = None
    wall = 0.0
    for _ in range(12):
        m = safe_run(eng, spec, {**s, "t_end": t_probe, "wall_cap": cap()}, metric)
        m["h"] = s.get("h") or s.get("accuracy") or s.get("rtol")
        probes.append(m)
        log(f"    {eng.key:12s} {setting_label(s):22s} {key}={m.get(key, m.get('error'))}")
        val = m.get(key)
        if val is not None and prev is not None and abs(val - prev[1]) < 1e-3:
            return prev[0], probes
        if val is not None:
            last_ok = s
        if val is not None:
            prev = (s, val)
        wall = m.get("wall", wall)
        nxt = eng.refine(s) if eng.refine else None
        if nxt is None or (wall or 0.0) * 4.5 > cap() or nxt.get("h", 1.0) < 2e-8:
            break
        s = nxt
    # not converged within the budget: the finest step that still gave the figure
    return {**(last_ok if last_ok is not None else s), "unconverged": True}, probes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small time budgets (a smoke run)")
    ap.add_argument("--out", default=str(HERE), help="where RESULTS.md, json and plots go")
    ap.add_argument("--engines", default="", help="comma-separated engine keys (default all)")
    ap.add_argument("--splice", default="",
                    help="comma-separated engine keys: run them (and mbplugin standalone, the "
                         "ratios' reference) and put their rows into the existing RESULTS.md "
                         "of --out, every other row left as generated")
    args = ap.parse_args(argv)
    if args.splice:
        args.engines = args.splice
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cap_probe = 2.0 if args.quick else 6.0    # largest wall time of one refinement probe (s)
    cap_full = 2.0 if args.quick else 6.0     # wall-time cap of one 5-s run (s)
    crs = (0.8,) if args.quick else cm.CR_REQUESTS
    budget = 120.0 if args.quick else 720.0   # whole comparison (s); runs get capped to fit
    t_start = time.perf_counter()

    def cap_now() -> float:
        """Wall-time cap of one full run: cap_full, less when the total budget runs short."""
        left = budget - (time.perf_counter() - t_start)
        return max(min(cap_full, left / 30), 0.5)

    def cap_sweep() -> float:
        left = budget - (time.perf_counter() - t_start)
        return max(min(cap_probe, left / 30), 0.5)

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f} s] {msg}", flush=True)

    engs = engines()
    if args.engines:
        keep = set(args.engines.split(","))
        engs = [e for e in engs if e.key in keep or e.key == "ours"]
    results: dict[str, Any] = {"engines": {}, "drop": {}, "tennis": {}, "stack": {},
                               "meta": report.machine_info()}
    for e in engs:
        results["engines"][e.key] = {"label": e.label, "available": e.available}

    # warm-up: load the compiled kernels once, so no timed run pays for it
    warm = next(e for e in engs if e.key == "ours")
    for spec in (cm.drop_scene("steel", 0.8, 0.2), cm.tennis_scene(), cm.stack_scene(0.2)):
        safe_run(warm, spec, warm.default, lambda s, tr: {})
    log("warm-up done")
    conv_all: dict[str, dict[str, dict]] = {}
    # ---- drop ball ------------------------------------------------------------------------------
    for material in ("steel", "soft"):
        ref = cm.drop_scene(material, 0.8)
        results["drop"][material] = {
            "hertz_duration": ref.hertz_duration(), "hertz_peak": ref.hertz_peak_force(),
            "hertz_rest": -(ref.balls[0].mass * cm.G / ref.pairs[0].k_hertz) ** (2 / 3),
            "k": ref.pairs[0].k_hertz, "rows": {}}
        log(f"drop {material}: refining steps at c_r = 0.8")
        conv: dict[str, dict] = {}
        conv_all[material] = conv
        for e in engs:
            if e.available or "drop" not in e.scenes:
                continue
            if e.refine is None:
                conv[e.key] = dict(e.default)
                continue
            c, probes = sweep(e, ref, 0.2, cap_sweep, log)
            conv[e.key] = c
            results["drop"][material].setdefault("probes", {})[e.key] = probes
        for cr in crs:
            spec = cm.drop_scene(material, cr)
            log(f"drop {material} c_r = {cr}")
            rows = results["drop"][material]["rows"].setdefault(str(cr), {})
            ours_wall = None
            for e in engs:
                if e.available or "drop" not in e.scenes:
                    continue
                settings = [("default", dict(e.default))]
                if e.refine is not None:
                    settings.append(("converged", conv[e.key]))
                for tag, s in settings:
                    s = dict(s)
                    unconv = s.pop("unconverged", False)
                    m = safe_run(e, spec, {**s, "wall_cap": cap_now()}, cm.drop_metrics)
                    m["unconverged"] = unconv
                    if e.key == "ours":
                        ours_wall = m.get("wall")
                    if ours_wall and "wall" in m:
                        if m.get("complete"):
                            m["ratio"] = m["wall"] / ours_wall
                        elif m.get("t_end", 0) > 0.1:  # capped run: per simulated second
                            m["wall_est"] = m["wall"] * spec.duration / m["t_end"]
                            m["ratio_est"] = m["wall_est"] / ours_wall
                    rows.setdefault(e.key, {})[tag] = m
                    log(f"    {e.key:12s} {tag:9s} {m.get('setting', ''):22s} "
                        f"cr1={m.get('cr1', m.get('error'))} wall={m.get('wall')}")

    # ---- tennis ball on basketball -------------------------------------------------------------
    spec = cm.tennis_scene()
    log("tennis ball on basketball")
    results["tennis"] = {"ideal": cm.tennis_ideal(spec), "rows": {}}
    ours_wall = None
    for e in engs:
        if e.available or "tennis" not in e.scenes:
            continue
        settings = [("default", dict(e.default))]
        if e.refine is not None:
            c, _ = sweep(e, spec, spec.duration, cap_sweep, log)
            settings.append(("converged", c))
        for tag, s in settings:
            s = dict(s)
            unconv = s.pop("unconverged", False)
            m = safe_run(e, spec, {**s, "wall_cap": cap_now()}, cm.tennis_metrics)
            m["unconverged"] = unconv
            if e.key == "ours":
                ours_wall = m.get("wall")
            if ours_wall and "wall" in m:
                m["ratio_wall"] = m["wall"] / ours_wall
            results["tennis"]["rows"].setdefault(e.key, {})[tag] = m

    # ---- 5-ball stack --------------------------------------------------------------------------
    spec = cm.stack_scene()
    log("5-ball stack")
    results["stack"] = {"hertz_top": cm.stack_hertz_top(spec), "rows": {}}
    ours_wall = None
    for e in engs:
        if e.available or "stack" not in e.scenes:
            continue
        settings = [("default", dict(e.default))]
        c = dict(conv_all.get("steel", {}).get(e.key, e.default))
        unconv = c.pop("unconverged", False)
        if setting_label(c) != setting_label(e.default):
            settings.append(("converged", c))
        for tag, s in settings:
            m = safe_run(e, spec, {**s, "wall_cap": cap_now()}, cm.stack_metrics)
            m["unconverged"] = unconv and tag == "converged"
            if e.key == "ours":
                ours_wall = m.get("wall")
            if ours_wall and "wall" in m:
                if m.get("complete"):
                    m["ratio_wall"] = m["wall"] / ours_wall
                elif m.get("t_end", 0) > 0.01:
                    m["wall_est"] = m["wall"] * spec.duration / m["t_end"]
                    m["ratio_est"] = m["wall_est"] / ours_wall
            results["stack"]["rows"].setdefault(e.key, {})[tag] = m
            log(f"    {e.key:12s} {tag:9s} {m.get('setting', '')} "
                f"{m.get('top_err', m.get('error'))}")

    results["meta"]["total_wall"] = time.perf_counter() - t_start
    results["meta"]["quick"] = args.quick
    if args.splice:
        report.splice(results, engs, set(args.splice.split(",")), out / "RESULTS.md")
        log(f"rows {args.splice} spliced into {out / 'RESULTS.md'}")
        return 0
    report.write(results, engs, out)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(_slim(results), indent=1, default=_json))
    tmp.replace(out / "results.json")
    log(f"wrote {out / 'RESULTS.md'}")
    return 0


def _slim(x: Any) -> Any:
    """The results without the per-bounce lists (they only feed the plots)."""
    if isinstance(x, dict):
        return {k: _slim(v) for k, v in x.items()
                if k not in ("energies", "v_in_all", "cr_all")}
    if isinstance(x, list):
        return [_slim(v) for v in x]
    return x


def _json(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


if __name__ == "__main__":
    sys.exit(main())
