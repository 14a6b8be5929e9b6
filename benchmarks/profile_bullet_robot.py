"""Profile: where a robot's host step goes with the backend (per-function CPU time per step).

One robot of ``tests/robot_rig.py`` (default the A1) stands ``--stance`` s then trots ``--trot``
s at host step ``--dt``: first native PyBullet and the backend without wrappers (the process's
CPU time per host step of each and their ratio), then the backend again with thread-CPU timers
around the backend's, the implicit step's, the store's, the contact model's and PyBullet's
functions (inclusive times, per host step, and calls per host step).

``--counts`` (no timers: the load does not matter): per robot (``--robots``) and phase (stance,
trot), per host step, which way the implicit step went: the contacts K and the steps whose
contact set changed (onsets, separations), the lean W (:func:`mbplugin.bullet.lean.lean_block`)
or the general one, the lean rounds (:func:`mbplugin.bullet.lean.lean_rounds`) taking the whole
step, handing over to the general rounds or not taken, the compiled rounds' outcomes, the
verification rounds begun, the general path's solves, responses and reads, and Newton's
iterations.

    python benchmarks/profile_bullet_robot.py [--robot a1] [--dt 0.0041667] [--stance 2]
        [--trot 2] [--no-timers] [--counts [--robots a1,laikago,aliengo,mini_cheetah]]
        [--split [--robots ...] [--repeat 2]]

``--split``: per robot and phase the thread CPU time per host step of the loop alone (no
world, URDF or backend set-up; the set-up adds ~24 us per step of a 4 s run to both sides on
the A1 and ~117 us on Laikago, whose convex-mesh legs PyBullet hulls at load): native (all,
its ``stepSimulation``, the rest: the controller) and with the backend (all, its
``stepSimulation``, the backend's own work: all - stepSimulation - native's rest). The first
line's "ratio" of the plain run is of the whole run's CPU (set-up included, as before); the
host steps alone are printed next to it.

For a before/after comparison run it with ``PYTHONPATH`` set to each tree in turn.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import robot_rig


def _wrap(owner: Any, name: str, label: str, acc: dict[str, float],
          cnt: collections.Counter) -> None:
    f = getattr(owner, name, None)
    if f is None:  # (a name the code no longer has)
        return

    def timed(*a: Any, **k: Any) -> Any:
        t = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            acc[label] += time.thread_time() - t
            cnt[label] += 1

    setattr(owner, name, timed)


def _counting(owner: Any, name: str, hook: Any) -> None:
    """Replace ``owner.name`` by a call that hands (args, kwargs, result) to ``hook``."""
    f = getattr(owner, name)

    def counted(*a: Any, **k: Any) -> Any:
        r = f(*a, **k)
        hook(a, k, r)
        return r

    setattr(owner, name, counted)


#: the counts' columns (per host step) and what they count
COUNTS = {
    "K": "managed contacts",
    "set_change": "contact set changed (an onset or a separation)",
    "lean_W": "W by lean_block",
    "general_W": "lean_block declined (general W)",
    "lean_all": "lean_rounds from the read took the step (rounds ended there)",
    "lean_handover": "lean_rounds from the read handed a round to the general loop",
    "lean_declined": "lean_rounds from the read declined (general first solve)",
    "lean_after": "lean_rounds after a general first solve taken",
    "vr_calls": "verify_rounds calls",
    "vr_first": "verify_rounds: FIRST (the first solve needs the general path)",
    "vr_handover": "verify_rounds: HANDOVER",
    "rounds": "verification rounds begun in verify_rounds",
    "newton": "Newton iterations (compiled rounds and general solves)",
    "onsets_booked": "ImplicitStep._onsets calls",
    "gen_solve": "ImplicitStep.solve (general path)",
    "gen_respond": "HostStep._respond (general path)",
    "gen_read": "HostContacts.read (general path)",
    "commit_general": "ContactStore.commit (commit_rows declined)",
    "pb_points": "PyBullet's own contact points after its step (getContactPoints)",
}
#: the same robot and phase with PyBullet's native contact: its contact points per host step
NATIVE = {"native_pts": "native run: PyBullet's contact points after its step"}


def _runs(robots: list[str], stance: float, trot: float) -> list[tuple[Any, ...]]:
    """The runs of ``--counts`` and ``--split``: per robot (name, spec, phase, gait start (s)
    or None, duration (s)): ``stance`` s of stance, then (``trot`` > 0) ``stance`` s of stance
    followed by ``trot`` s of the gait."""
    out = []
    for name in robots:
        spec = robot_rig.ROBOTS[name]
        out.append((name, spec, "stance", None, stance))
        if trot > 0:
            out.append((name, spec, "stance+trot", stance, stance + trot))
    return out


def counts(robots: list[str], dt: float, stance: float, trot: float) -> int:
    """The counts table (module docstring): per robot and phase, per host step."""
    from mbplugin.bullet import host as bhost
    from mbplugin.bullet import lean
    from mbplugin.hosts import detection, step
    from mbplugin.pipeline import implicit, store

    acc: dict[str, float] = collections.defaultdict(float)
    last: dict[str, Any] = {"keys": None}

    def on_step(a: Any, k: Any, r: Any) -> None:
        batch = a[2]
        acc["K"] += len(batch)
        keys = set(batch.key.tolist())
        if last["keys"] is not None and keys != last["keys"]:
            acc["set_change"] += 1
        last["keys"] = keys

    def on_block(a: Any, k: Any, r: Any) -> None:
        acc["lean_W" if r is not None else "general_W"] += 1

    def on_rounds(a: Any, k: Any, r: Any) -> None:
        start = k.get("start", a[13] if len(a) > 13 else None)
        if start is not None:
            acc["lean_declined" if r is None else
                "lean_all" if r[2] is None and r[1] == 0 else "lean_handover"] += 1
        elif r is not None:
            acc["lean_after"] += 1

    def on_vr(a: Any, k: Any, r: Any) -> None:
        acc["vr_calls"] += 1
        acc["vr_first"] += r == lean.FIRST
        acc["vr_handover"] += r == lean.HANDOVER
        acc["rounds"] += a[-1][0]

    def on_solve(a: Any, k: Any, r: Any) -> None:
        acc["gen_solve"] += 1
        acc["newton"] += r.stats.steps

    def bump(label: str) -> Any:
        return lambda a, k, r: acc.__setitem__(label, acc[label] + 1)

    vr = lean.verify_rounds

    def vr_newton(*a: Any) -> Any:
        c0 = int(a[-9][0])  # (counters)
        r = vr(*a)
        acc["newton"] += int(a[-9][0]) - c0
        return r

    lean.verify_rounds = vr_newton
    _counting(lean, "verify_rounds", on_vr)
    _counting(step.HostStep, "step", on_step)
    _counting(bhost, "lean_block", on_block)
    _counting(bhost, "lean_rounds", on_rounds)
    _counting(implicit.ImplicitStep, "solve", on_solve)
    _counting(implicit.ImplicitStep, "_onsets", bump("onsets_booked"))
    _counting(step.HostStep, "_respond", bump("gen_respond"))
    _counting(detection.HostContacts, "read", bump("gen_read"))
    _counting(store.ContactStore, "commit", bump("commit_general"))
    import pybullet as pb

    sim = pb.stepSimulation

    def stepped(*a: Any, **k: Any) -> Any:
        r = sim(*a, **k)
        acc["pb_points"] += len(pb.getContactPoints(physicsClientId=k.get("physicsClientId", 0)))
        return r

    pb.stepSimulation = stepped
    d = Path(tempfile.mkdtemp())
    rows = []
    for name, spec, phase, t_gait, secs in _runs(robots, stance, trot):
        a = {}
        for ours in (False, True):
            acc.clear()
            last["keys"] = None
            rec = robot_rig.run(spec, d, dt, secs, ours=ours, t_gait=t_gait, record=False)
            a.update(acc if ours else {"native_pts": acc["pb_points"]})
        rows.append((name, phase, rec["steps"], a))
    pb.stepSimulation = sim
    cols = list(COUNTS) + list(NATIVE)
    print(f"per host step at {dt:g} s (stance {stance:g} s; stance+trot: {stance:g} s stance "
          f"then {trot:g} s trot)")
    print(f"{'robot':13s} {'phase':11s} " + " ".join(f"{c[:9]:>9s}" for c in cols))
    for name, phase, n, a in rows:
        print(f"{name:13s} {phase:11s} " + " ".join(f"{a.get(c, 0) / n:9.3f}" for c in cols))
    for c, what in {**COUNTS, **NATIVE}.items():
        print(f"  {c}: {what}")
    return 0


def split(robots: list[str], dt: float, stance: float, trot: float, repeat: int) -> int:
    """Per robot and phase, the thread CPU time per host step of the run's loop (no set-up):
    native (all, its ``stepSimulation``, the rest: the controller) and with the backend (all,
    its ``stepSimulation``, the backend's own work = all - stepSimulation - native's rest);
    the fastest of ``repeat`` interleaved runs each."""
    import pybullet as pb

    sim = pb.stepSimulation
    acc = {"s": 0.0}

    def stepped(*a: Any, **k: Any) -> Any:
        t = time.thread_time()
        try:
            return sim(*a, **k)
        finally:
            acc["s"] += time.thread_time() - t

    pb.stepSimulation = stepped
    d = Path(tempfile.mkdtemp())
    robot_rig.run(robot_rig.ROBOTS["a1"], d, 1 / 240, 0.2, record=False)  # compile
    print(f"thread CPU us per host step at {dt:g} s, the loop alone (fastest of {repeat})")
    print(f"{'robot':13s} {'phase':12s} {'native':>7s} {'pb.step':>7s} {'rest':>6s} | "
          f"{'backend':>7s} {'pb.step':>7s} {'own':>6s} | ratio")
    for name, spec, phase, t_gait, secs in _runs(robots, stance, trot):
        best: dict[bool, tuple[float, float]] = {}
        for _ in range(repeat):
            for ours in (False, True):
                acc["s"] = 0.0
                rec = robot_rig.run(spec, d, dt, secs, ours=ours, t_gait=t_gait, record=False)
                got = (rec["cpu"] / rec["steps"] * 1e6, acc["s"] / rec["steps"] * 1e6)
                if ours not in best or got[0] < best[ours][0]:
                    best[ours] = got
        (nt, ns), (bt, bs) = best[False], best[True]
        print(f"{name:13s} {phase:12s} {nt:7.1f} {ns:7.1f} {nt - ns:6.1f} | {bt:7.1f} "
              f"{bs:7.1f} {bt - bs - (nt - ns):6.1f} | {bt / nt:5.2f}")
    pb.stepSimulation = sim
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="a1", choices=sorted(robot_rig.ROBOTS))
    ap.add_argument("--dt", type=float, default=1 / 240, help="host step (s)")
    ap.add_argument("--stance", type=float, default=2.0, help="stance time (s)")
    ap.add_argument("--trot", type=float, default=2.0, help="gait time (s)")
    ap.add_argument("--no-timers", action="store_true", help="only the CPU time ratio")
    ap.add_argument("--counts", action="store_true",
                    help="per host step counts of the paths taken (no timing)")
    ap.add_argument("--robots", default="a1,laikago,aliengo,mini_cheetah",
                    help="--counts: comma-separated robots")
    ap.add_argument("--split", action="store_true",
                    help="per robot: native and backend CPU per host step, PyBullet's step apart")
    ap.add_argument("--repeat", type=int, default=2, help="--split: runs of each, fastest kept")
    args = ap.parse_args(argv)
    if args.counts or args.split:
        names = args.robots.split(",")
        bad = [r for r in names if r not in robot_rig.ROBOTS]
        if bad:
            ap.error(f"--robots: unknown {bad}; allowed {sorted(robot_rig.ROBOTS)}")
        if args.split:
            return split(names, args.dt, args.stance, args.trot, args.repeat)
        return counts(names, args.dt, args.stance, args.trot)
    spec = robot_rig.ROBOTS[args.robot]
    sim = args.stance + args.trot
    d = Path(tempfile.mkdtemp())
    robot_rig.run(robot_rig.ROBOTS["a1"], d, 1 / 240, 0.2, record=False)  # compile
    cpu, loop = {}, {}
    for ours in (False, True):
        c0 = time.process_time()
        rec = robot_rig.run(spec, d, args.dt, sim, ours=ours, t_gait=args.stance, record=False)
        cpu[ours] = (time.process_time() - c0) / rec["steps"]
        loop[ours] = rec["cpu"] / rec["steps"]
    print(f"{args.robot} at {args.dt:g} s: native {cpu[False] * 1e6:.1f} us/step, backend "
          f"{cpu[True] * 1e6:.1f} us/step, ratio {cpu[True] / cpu[False]:.2f} (CPU of the "
          f"whole run, its set-up included); the host steps alone: native "
          f"{loop[False] * 1e6:.1f}, backend {loop[True] * 1e6:.1f} us/step, ratio "
          f"{loop[True] / loop[False]:.2f}; load average {os.getloadavg()[0]:.2f}")
    if args.no_timers:
        return 0
    import pybullet as pb

    from mbplugin.bullet import articulated, backend, kinematics, rows
    from mbplugin.contact import model
    from mbplugin.hosts import detection, integrator, step
    from mbplugin.pipeline import implicit, store

    acc: dict[str, float] = collections.defaultdict(float)
    cnt: collections.Counter = collections.Counter()
    bc = backend.BulletContacts
    for n in ("before_step", "after_step", "body_state"):
        _wrap(bc, n, f"BulletContacts.{n}", acc, cnt)
    _wrap(backend, "begin_lean", "fused.begin_lean", acc, cnt)  # (HostStep.step's lean case)
    for n in ("step", "_delassus", "_implicit_before", "after", "_respond"):
        _wrap(step.HostStep, n, f"HostStep.{n}", acc, cnt)
    for n in ("begin", "after"):
        _wrap(integrator.ContactIntegrator, n, f"ContactIntegrator.{n}", acc, cnt)
    for n in ("blocks", "respond"):
        _wrap(articulated.BulletArticulated, n, f"BulletArticulated.{n}", acc, cnt)
    _wrap(detection.HostContacts, "read", "HostContacts.read", acc, cnt)
    _wrap(kinematics.LinkTree, "jacobians", "LinkTree.jacobians", acc, cnt)
    _wrap(rows.BulletRows, "state", "BulletRows.state", acc, cnt)
    _wrap(step, "articulated_w", "articulated_w", acc, cnt)
    for n in ("solve", "finish", "begin", "__init__", "_onsets"):
        _wrap(implicit.ImplicitStep, n, f"ImplicitStep.{n}", acc, cnt)
    _wrap(store.ContactStore, "commit", "ContactStore.commit", acc, cnt)
    _wrap(model.ContactModel, "detect", "ContactModel.detect", acc, cnt)
    for n in ("stepSimulation", "calculateJacobian", "calculateMassMatrix", "getLinkStates",
              "getJointStates", "resetJointStatesMultiDof", "applyExternalForce",
              "resetBaseVelocity", "resetBasePositionAndOrientation",
              "getBasePositionAndOrientation", "getBaseVelocity"):
        _wrap(pb, n, f"pybullet.{n}", acc, cnt)
    t0 = time.thread_time()
    rec = robot_rig.run(spec, d, args.dt, sim, ours=True, t_gait=args.stance, record=False)
    steps = rec["steps"]
    print(f"with timers: {(time.thread_time() - t0) / steps * 1e6:.0f} us/step")
    for k, v in sorted(acc.items(), key=lambda x: -x[1]):
        print(f"{k:40s} {v / steps * 1e6:8.1f} us/step {cnt[k] / steps:6.2f} calls/step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
