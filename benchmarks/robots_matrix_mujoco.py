"""The MuJoCo robot matrix: the robots of the PyBullet matrix (``tests/robot_rig.py``) loaded by
MuJoCo's URDF importer (``tests/mujoco_robot_rig.py``), MuJoCo's default 2 ms step, every
foot-floor pair managed (Hunt-Crossley cr = 0.3, Hertz's k), the rig's joint PD; what
``tests/test_mujoco_robots.py`` checks with shorter runs, here on every robot with the full
durations, plus the cost per host step against native MuJoCo.

Per robot:

* ``stance``: 5 s of stance on rubber-like ground (E = 10 MPa) with hard toes (1 GPa); over
  the last 0.5 s the summed foot force over the weight within 1 % at every step and every
  loaded foot's overlap in MuJoCo (R - z of its sphere) within 5 % of the static Hertz overlap
  of its force (F / k)^(2/3), k = 4/3 E* sqrt(R) (Johnson 1985, Eq. 4.22-4.23, written out in
  tests/robot_rig.py); the lean tree path's counters (lean steps / host steps, first solves
  handed to the general path);
* ``steel``: the same on steel feet and steel ground (E = 2e11), 3 s;
* ``general``: the rubber stance, 3 s, with the lean tree path off (mbplugin/mujoco/trees.py);
* ``gait``: dropped from 5 cm onto the feet, 1 s of stance, 5 s of the open-loop gait: no
  exception, not fallen where native MuJoCo (the same run with MuJoCo's contact) is not;
* ``menagerie``, ``capsule``, ``two``: the 3 s rubber stance of the robot as MuJoCo models
  often are (tests/mujoco_robot_rig.py: ``MENAGERIE``: joint damping, friction loss and
  armature, position actuators, implicitfast, knees pressed on their limits), on capsule
  feet, and two of it in one model;
* ``fixed``: the base welded to the world 3 mm below its standing height (each leg its own
  kinematic tree), the legs lowered onto the floor by the PD, 2 s: a foot per leg loaded at
  least (the biped's heel or toe: the PD's joint error tilts its feet), every loaded foot's
  overlap within 5 % of the static Hertz overlap of its force; where native MuJoCo's run of
  the same model does not hold the pose (the rig's PD gains, per kg of the whole robot, on a
  fixed base's light legs: joint error > 0.2 rad at the end) the check is reported, not
  counted;
* ``cost``: thread CPU time per host step of 1 s of stance and 2 s of gait with the backend
  (the lean path where it applies) over native MuJoCo's, the two alternated ``--repeat``
  times in this process (the least of each side); the general path's the same way; and for
  the ``menagerie`` and ``two`` models against native MuJoCo on the same model.

With ``--whole-floor`` (not a check: a cost figure): every floor pair of the robot managed
(``manage=["floor"]``, the natural first try; a law with ``k`` = 2e6 N/m^1.5, the boxes,
cylinders and meshes having no Hertz radius), the robot standing 0.6 s, then its legs
collapsed (targets x 0.2) so that its body lands on the floor: the largest number of managed
contacts in a step, and CPU per host step over the last 0.4 s of 2.4 s (at rest on the body)
with the backend and natively.

Prints one line per robot and check with the figures and PASS / FAIL, then the cost table;
exit 1 if a check fails.

    python benchmarks/robots_matrix_mujoco.py [--robots a1,...] [--repeat 2] [--whole-floor]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import mujoco_robot_rig as mr
import numpy as np
import robot_rig as rr


def _stance(spec: rr.Spec, r: mr.Robot, seconds: float, materials: tuple,
            general: bool = False) -> tuple[list[str], str]:
    rec = mr.run(spec, r, seconds, record_from=seconds - 0.5, materials=materials,
                 general=general)
    fig = mr.stance_figures(rec, materials)
    fails = []
    if fig["loaded"] != len(r.feet):
        fails.append(f"{fig['loaded']} of {len(r.feet)} feet loaded")
    if not fig["sum_f_worst"] <= rr.SUM_F:
        fails.append(f"sum F / W off by {fig['sum_f_worst']:.3g}")
    if not fig["hertz"] <= rr.HERTZ:
        fails.append(f"host vs static Hertz {fig['hertz']:.3g}")
    text = (f"sum F / W {fig['sum_f']:.5f} (worst step off {fig['sum_f_worst']:.2e}), host "
            f"overlap vs static Hertz worst {fig['hertz']:.2e}, {fig['loaded']} feet loaded")
    if rec["lean"] is not None:
        steps, _, handed = rec["lean"]
        text += f"; lean tree {steps}/{rec['steps']} steps, {handed} first solves handed"
    return fails, text


def _fixed(spec: rr.Spec, r: mr.Robot) -> tuple[list[str], str]:
    native = mr.run(spec, r, 2.0, ours=False, record_from=1.5)
    rec = mr.run(spec, r, 2.0, record_from=1.5)
    fig = mr.stance_figures(rec)
    held = native["joint_error"] <= 0.2
    fails = []
    if held and fig["loaded"] < spec.legs:  # a foot per leg (a biped's heel or toe: the PD's
        fails.append(f"{fig['loaded']} of {len(r.feet)} feet loaded")  # error tilts it)
    if held and not fig["hertz"] <= rr.HERTZ:
        fails.append(f"host vs static Hertz {fig['hertz']:.3g}")
    return fails, (f"host overlap vs static Hertz worst {fig['hertz']:.2e}, {fig['loaded']} "
                   f"feet loaded; joint error at the end {rec['joint_error']:.3f} rad (native "
                   f"{native['joint_error']:.3f}{'' if held else ': not held, not counted'})")


def _gait(spec: rr.Spec, r: mr.Robot) -> tuple[list[str], str]:
    kw = {"lift": 0.05, "t_gait": 1.0}
    native = mr.run(spec, r, 6.0, ours=False, **kw)
    ours = mr.run(spec, r, 6.0, **kw)
    fell, fell_native = mr.fell(ours), mr.fell(native)
    start = round(1.0 / mr.DT)
    fwd = ours["base"][-1, 0] - ours["base"][start, 0]
    fwd_n = native["base"][-1, 0] - native["base"][start, 0]
    steps, _, handed = ours["lean"] if ours["lean"] is not None else (0, 0, 0)
    fails = ["fell where native did not"] if fell and not fell_native else []
    return fails, (f"fallen {fell} (native {fell_native}), forward {fwd:+.3f} m (native "
                   f"{fwd_n:+.3f} m); lean tree {steps}/{ours['steps']} steps, {handed} "
                   "first solves handed")


#: the model variants of the matrix (:func:`mujoco_robot_rig.model`'s options)
VARIANTS = {"menagerie": mr.MENAGERIE, "capsule": {"capsule": 0.01}, "two": {"copies": 2},
            "fixed": {"fixed_press": 0.003}}


def _cost(spec: rr.Spec, models: list[mr.Robot], repeat: int) -> list[float]:
    """CPU per host step (s) of 1 s stance + 2 s gait: per model of ``models`` native and ours
    (the first model also on the general path); alternated ``repeat`` times, the least of
    each."""
    runs = [(r, kw) for r in models for kw in ({"ours": False}, {})]
    runs.insert(2, (models[0], {"general": True}))
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, (r, kw) in enumerate(runs):
            rec = mr.run(spec, r, 3.0, t_gait=1.0, **kw)
            best[i] = min(best[i], rec["cpu"] / rec["steps"])
    return best


def _whole_floor(spec: rr.Spec, r: mr.Robot) -> str:
    """The ``--whole-floor`` figures (module docstring) of one robot."""
    import time

    import mujoco

    from mbplugin.mujoco import MujocoContacts

    out = []
    mass = r.weight / rr.G
    for ours in (False, True):
        d, _, _ = mr.setup(r, False)
        c = MujocoContacts(r.m, d, manage=["floor"],
                           law={"name": "hunt_crossley", "cr": 0.3, "k": 2e6},
                           friction=mr.FRICTION) if ours else None
        most, cpu = 0, 0.0
        try:
            for i in range(1200):
                tgt = r.targets * (1.0 if i < 300 else 0.2)
                tau = spec.kp * mass * (tgt - d.qpos[r.qadr]) - spec.kd * mass * d.qvel[r.vadr]
                d.ctrl[:] = np.clip(tau, -spec.torque * mass, spec.torque * mass)
                if i == 1000:
                    cpu = time.thread_time()
                if c is not None:
                    most = max(most, c.step().contacts)
                else:
                    mujoco.mj_step(r.m, d)
                    most = max(most, d.ncon)
            cpu = (time.thread_time() - cpu) / 200
        finally:
            if c is not None:
                c.release()
        out.append((most, cpu))
    (n_nat, c_nat), (n_ours, c_ours) = out
    return (f"whole floor: at most {n_ours} managed contacts in a step (native {n_nat}); at "
            f"rest on the body {c_ours * 1e6:.0f} us per host step (native {c_nat * 1e6:.0f} "
            f"us, {c_ours / c_nat:.0f}x)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default=",".join(mr.ROBOTS), help="comma-separated")
    ap.add_argument("--repeat", type=int, default=2, help="cost rounds (1 .. 20)")
    ap.add_argument("--whole-floor", action="store_true",
                    help="also every floor pair managed: the body landing (figures only)")
    args = ap.parse_args(argv)
    names = args.robots.split(",")
    unknown = [n for n in names if n not in mr.ROBOTS]
    if unknown:
        print(f"error: --robots: unknown {unknown[0]!r} (known: {', '.join(mr.ROBOTS)})",
              file=sys.stderr)
        return 2
    if not 1 <= args.repeat <= 20:
        print(f"error: --repeat = {args.repeat}: allowed 1 .. 20", file=sys.stderr)
        return 2
    ok = True
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    costs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            spec = mr.ROBOTS[name]
            r = mr.model(spec, Path(tmp))
            checks = {"stance": (_stance, (5.0, mr.RUBBER)), "steel": (_stance, (3.0, rr.STEEL)),
                      "general": (_stance, (3.0, mr.RUBBER, True)), "gait": (_gait, ())}
            variants = {}
            for v, kw in VARIANTS.items():
                try:
                    variants[v] = mr.model(spec, Path(tmp), **kw)
                    checks[v] = (_fixed, ()) if v == "fixed" else (_stance, (3.0, mr.RUBBER))
                except Exception as exc:  # a model MuJoCo cannot build: said, not a failure
                    print(f"{name:13s} {v:8s} not built: {type(exc).__name__}: {exc}")
            for check, (fn, extra) in checks.items():
                try:
                    fails, text = fn(spec, variants.get(check, r), *extra)
                except Exception as exc:  # a robot's exception is a failed check, not a stop
                    fails, text = [f"{type(exc).__name__}: {exc}"], ""
                    traceback.print_exc()
                ok &= not fails
                verdict = "PASS" if not fails else "FAIL: " + "; ".join(fails)
                print(f"{name:13s} {check:8s} {text} -> {verdict}", flush=True)
            if args.whole_floor:
                print(f"{name:13s} {_whole_floor(spec, r)}", flush=True)
            models = [r] + [variants[v] for v in ("menagerie", "two") if v in variants]
            costs[name] = _cost(spec, models, args.repeat)
    print(f"\ncost per host step (CPU us, least of {args.repeat} alternated rounds of 1 s stance "
          f"+ 2 s gait; load average {os.getloadavg()[0]:.2f}); ratio to native on the same "
          "model")
    print(f"{'robot':13s} {'native':>7s} {'ours':>7s} {'ratio':>6s} {'general':>8s} {'ratio':>6s}"
          f" | {'menagerie: native':>17s} {'ours':>7s} {'ratio':>6s} | {'two: native':>11s} "
          f"{'ours':>7s} {'ratio':>6s}")
    for name, c in costs.items():
        us = [x * 1e6 for x in c]
        line = (f"{name:13s} {us[0]:7.1f} {us[1]:7.1f} {c[1] / c[0]:6.2f} {us[2]:8.1f} "
                f"{c[2] / c[0]:6.2f}")
        for k in range(3, len(c), 2):
            line += f" | {us[k]:17.1f} {us[k + 1]:7.1f} {c[k + 1] / c[k]:6.2f}"
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
