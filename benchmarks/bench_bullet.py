"""Benchmark: the PyBullet backend's cost per host step, and the steel drop's c_r error.

1. N spheres (R = 1 cm, 50 g, soft Hunt-Crossley k = 1e5, cr = 0.5) on ``plane.urdf`` in a
   square grid, released 2 mm above the plane (they land, bounce and settle): the mean wall
   time of a host step (1/240 s) with every sphere-plane pair managed (the compiled path, and
   the SciPy reference path for N <= --scipy-max; with --radau also the compiled path with Radau
   for every group, the default before the explicit solver), against ``stepSimulation`` on the
   same scene with PyBullet's native contact, in the same process; over all steps and over the
   last third (resting). The managed pairs are frictionless (``--friction none``, the scene as
   benchmarked before the backend took PyBullet's lateral friction by default; ``--friction
   pybullet``: that default, mu = 0.5 x 1 here).
2. A steel ball (R = 1 cm, 32.7 g) dropped from 10 cm at 1/240 s. Native PyBullet:
   ``restitution`` = 0.3 / 0.5 / 0.8 / 0.95 on both bodies; the first bounce's measured c_r
   (upward / downward speed around the impact) against the one asked. mbplugin: Hunt-Crossley,
   exact-COR (Khatiwada) with Hertz k of steel, each bounce's c_r against the exact impact
   analyser at the same impact speed. Cost of the 1 s run, both ways.

    python benchmarks/bench_bullet.py            # N = 10, 100, 1000; 240 steps (1 s)
    python benchmarks/bench_bullet.py --quick    # N = 10, 100
    python benchmarks/bench_bullet.py --no-drop --radau --repeat 3   # + Radau-only, 3 runs
    python benchmarks/bench_bullet.py --no-drop --sizes 1000 --cpu   # CPU time (shared machine)
"""

from __future__ import annotations

import argparse
import math
import time
from itertools import chain, repeat

import numpy as np
import pybullet as p
import pybullet_data

from mbplugin.bullet import BulletContacts
from mbplugin.contact import effective_modulus
from mbplugin.impact import impact
from mbplugin.laws import make_law

G, R = 9.81, 0.01
#: the clock of the cost table and the floor: wall time, or with --cpu the process's CPU time
#: (robust to the time slices other jobs take on a shared machine; PyBullet's DIRECT step runs
#: in-process)
CLOCK = {"clock": time.perf_counter}
#: the backend's friction (``--friction``): "none", the scene as benchmarked before the default
#: friction from PyBullet's lateral_friction existed, or "pybullet" (the default since)
FRICTION = {"friction": "none"}


def world(n: int, z: float = R + 0.002, mass: float = 0.05) -> tuple[int, int, list[int]]:
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    s = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    side = math.ceil(math.sqrt(n))
    balls = []
    for i in range(n):
        b = p.createMultiBody(mass, s, basePosition=[3 * R * (i % side), 3 * R * (i // side), z],
                              physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        balls.append(b)
    return cid, plane, balls


def step_times(n: int, steps: int, solver: str | None, rtol: float = 1e-8) -> np.ndarray:
    """Wall time (s) of each host step: native ``stepSimulation`` (``solver`` None) or the
    backend's ``step()`` with every sphere-plane pair managed and the given solver."""
    cid, plane, _ = world(n)
    bk = (BulletContacts(cid, manage=[plane], solver=solver, rtol=rtol,
                         law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5}, **FRICTION)
          if solver else None)
    out = np.empty(steps)
    clock = CLOCK["clock"]
    for i in range(steps):
        t0 = clock()
        if bk is None:
            p.stepSimulation(physicsClientId=cid)
        else:
            bk.step()
        out[i] = clock() - t0
    p.disconnect(physicsClientId=cid)
    return out


def cost_per_step(n: int, steps: int, solver: str = "compiled") -> tuple[float, float]:
    """Mean wall time (s) of a host step, native and backend, over ``steps`` steps."""
    return float(step_times(n, steps, None).mean()), float(step_times(n, steps, solver).mean())


def _ratios(name: str, ours: np.ndarray, native: np.ndarray, rest: slice) -> str:
    return (f"{name} all {ours.mean() * 1e3:8.3f} ms (median {np.median(ours) * 1e3:.3f}), "
            f"rest {ours[rest].mean() * 1e3:8.3f} ms (median {np.median(ours[rest]) * 1e3:.3f})"
            f" | ratio all {ours.mean() / native.mean():5.2f} (median "
            f"{np.median(ours) / np.median(native):.2f}), rest "
            f"{ours[rest].mean() / native[rest].mean():5.2f} (median "
            f"{np.median(ours[rest]) / np.median(native[rest]):.2f})")


def cost_table(sizes: tuple[int, ...], steps: int, scipy_max: int, rtol: float = 1e-8,
               radau: bool = False, repeat: int = 1) -> None:
    """Per N: native (run before and after the backend, to see the machine's load drift) vs
    compiled (and the SciPy path for N <= ``scipy_max``), over the whole run (landing, bounces,
    settling) and over its last third (resting)."""
    print(f"managed spheres landing on plane.urdf: wall time per host step (1/240 s), "
          f"{steps} steps, rtol {rtol:g}; 'all' = every step, 'rest' = the last third")
    rest = slice(2 * steps // 3, None)
    t0 = time.perf_counter()
    step_times(2, 12, "compiled")  # numba: load the cached kernels (or compile them once)
    print(f"  (warm-up: compiled kernels loaded in {time.perf_counter() - t0:.1f} s)")
    for n in [n for n in sizes for _ in range(repeat)]:
        before = step_times(n, steps, None)
        ours = step_times(n, steps, "compiled", rtol)
        old = step_times(n, steps, "radau", rtol) if radau else None
        after = step_times(n, steps, None)
        native = 0.5 * (before + after)
        line = (f"  N = {n:5d}: native all {native.mean() * 1e3:7.3f} ms (before/after "
                f"{before.mean() * 1e3:.3f}/{after.mean() * 1e3:.3f}), rest "
                f"{native[rest].mean() * 1e3:7.3f} ms | compiled all {ours.mean() * 1e3:8.3f} "
                f"ms, rest {ours[rest].mean() * 1e3:8.3f} ms | ratio all "
                f"{ours.mean() / native.mean():6.1f}, rest "
                f"{ours[rest].mean() / native[rest].mean():6.1f}")
        if n <= scipy_max:
            ref = step_times(n, steps, "scipy", rtol)
            line += (f" | scipy all {ref.mean() * 1e3:8.1f} ms, rest "
                     f"{ref[rest].mean() * 1e3:8.1f} ms")
        print(line, flush=True)
        # medians: robust to the time slices a loaded machine takes from the process
        print(f"           medians: native all {np.median(native) * 1e3:7.3f} ms, rest "
              f"{np.median(native[rest]) * 1e3:7.3f} ms | compiled all "
              f"{np.median(ours) * 1e3:8.3f} ms, rest {np.median(ours[rest]) * 1e3:8.3f} ms | "
              f"ratio all {np.median(ours) / np.median(native):6.1f}, rest "
              f"{np.median(ours[rest]) / np.median(native[rest]):6.1f}", flush=True)
        if old is not None:
            print("           " + _ratios("radau   ", old, native, rest), flush=True)
            print("           " + _ratios("compiled", ours, native, rest), flush=True)


# -- the floor: PyBullet's API along the backend's own trajectory, no computation ---------------
#: PyBullet calls that change the host (replayed by the floor); every other call is a query
HOST_CALLS = frozenset({
    "applyExternalForce", "applyExternalTorque", "resetBasePositionAndOrientation",
    "resetBaseVelocity", "resetJointState", "resetJointStatesMultiDof", "stepSimulation",
    "setCollisionFilterPair", "changeDynamics", "setJointMotorControl2",
    "setJointMotorControlArray", "saveState", "restoreState", "removeState"})
#: calls the replay can reproduce (the others would make it a different trajectory)
REPLAYABLE = frozenset({"applyExternalForce", "applyExternalTorque",
                        "resetBasePositionAndOrientation", "resetBaseVelocity",
                        "stepSimulation", "setCollisionFilterPair"})
#: the state read (replayed as one read of every body per step, as ``body_state`` does it)
READS = frozenset({"getBasePositionAndOrientation", "getBaseVelocity"})

Call = tuple[str, tuple, dict, bool]  # name, positional arguments, keywords, is a query


class _Recorder:
    """Stands in for the ``pybullet`` module inside the backend's ``Client``: every function
    the backend calls (through ``Client.__call__`` or mapped directly) is passed on to PyBullet
    and logged with its arguments (the client id removed), except the state reads, which are
    counted. ``log[0]`` holds the calls before the first step, ``log[i]`` those of step i."""

    def __init__(self, pb: object) -> None:
        self._pb = pb
        self.log: list[list[Call]] = [[]]
        self.reads: dict[str, int] = {}

    def __getattr__(self, name: str) -> object:
        fn = getattr(self._pb, name)
        if not callable(fn):
            return fn
        if name in READS:
            def read(*args: object, **kwargs: object) -> object:
                self.reads[name] = self.reads.get(name, 0) + 1
                return fn(*args, **kwargs)
            return read
        query = name not in HOST_CALLS
        if not query and name not in REPLAYABLE:
            raise RuntimeError(f"the floor replay cannot reproduce {name}")

        def call(*args: object, **kwargs: object) -> object:
            kw = dict(kwargs)
            if kw.pop("physicsClientId", None) is None:
                args = args[:-1]  # mapped calls pass the client id last, positionally
            self.log[-1].append((name, args, kw, query))
            out = fn(*args, **kwargs)
            if name == "stepSimulation":
                self.log.append([])
            return out
        return call


def record(n: int, steps: int) -> tuple[list[list[Call]], dict[str, int], np.ndarray]:
    """The backend's PyBullet calls per step on ``world(n)`` (``log[0]``: the set-up's pair
    filters, ``log[i]``: step i's calls, its ``stepSimulation`` among them), its state-read
    counts and the final positions."""
    cid, plane, balls = world(n)
    bk = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5},
                        **FRICTION)
    rec = _Recorder(p)
    # the set-up's filter calls happened before the recorder: replay them from the backend
    rec.log = [[("setCollisionFilterPair", (x[0], y[0], x[1], y[1], 0), {}, False)
                for x, y in bk._pairs], []]
    bk.client.p = rec
    for _ in range(steps):
        bk.step()
    end = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0] for b in balls])
    p.disconnect(physicsClientId=cid)
    return rec.log[:-1], rec.reads, end


def _plan(calls: list[Call], queries: bool) -> list[tuple[object, list, dict, bool]]:
    """Consecutive calls of one function with positional arguments only grouped: (function,
    argument columns, {}, is a query), replayed with ``map`` (no Python frame per call, as the
    backend does); any other call alone: (function, arguments, keywords, is a query)."""
    out: list[tuple[object, list, dict, bool]] = []
    last = None
    for name, args, kw, query in calls:
        if query and not queries:
            continue
        fn = getattr(p, name)
        if kw or not args or name == "stepSimulation":
            out.append((fn, list(args), kw, query))
            last = None
            continue
        if name != last:
            out.append((fn, [[] for _ in args], {}, query))
            last = name
        for col, a in zip(out[-1][1], args, strict=True):
            col.append(a)
    return out


def replay(n: int, log: list[list[Call]], queries: bool = False) -> tuple[np.ndarray, ...]:
    """The floor: a fresh ``world(n)``, the set-up's filter calls, then per step one state read
    of every body (the backend's ``body_state``: two calls per body, gathered into arrays) and
    the recorded host-changing calls in their order (with ``queries`` also the backend's other
    queries: contact points, constraints, engine parameters). Returns the time (s, ``CLOCK``)
    of each step, of its ``stepSimulation`` alone, of its queries alone, and the final
    positions."""
    cid, _, balls = world(n)
    for fn, cols, _, _ in _plan(log[0], False):
        for _ in map(fn, *cols, repeat(cid)):
            pass
    ids = list(balls)
    plan = [_plan(calls, queries) for calls in log[1:]]
    out, step, asked = np.empty(len(plan)), np.empty(len(plan)), np.zeros(len(plan))
    stepper = p.stepSimulation
    clock = CLOCK["clock"]
    for i, calls in enumerate(plan):
        t0 = clock()
        ps = np.fromiter(chain.from_iterable(chain.from_iterable(
            map(p.getBasePositionAndOrientation, ids, repeat(cid)))), dtype=float,
            count=7 * len(ids))
        vs = np.fromiter(chain.from_iterable(chain.from_iterable(
            map(p.getBaseVelocity, ids, repeat(cid)))), dtype=float, count=6 * len(ids))
        del ps, vs
        for fn, cols, kw, query in calls:
            t1 = clock()
            if fn is stepper or kw or not cols or not isinstance(cols[0], list):
                fn(*cols, physicsClientId=cid, **kw)
            else:
                for _ in map(fn, *cols, repeat(cid)):
                    pass
            if fn is stepper:
                step[i] = clock() - t1
            elif query:
                asked[i] += clock() - t1
        out[i] = clock() - t0
    end = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0] for b in balls])
    p.disconnect(physicsClientId=cid)
    return out, step, asked, end


def floor_table(n: int, steps: int, repeat_: int = 1, block: int = 20) -> None:
    """Native vs the floor (the backend's own PyBullet calls replayed with one state read per
    step, no computation; and with the backend's other queries too) vs the backend, per
    ``block`` steps and overall, in one process."""
    step_times(2, 12, "compiled")  # numba: load the cached kernels
    log, reads, end = record(n, steps)
    counts: dict[str, int] = {}
    for calls in log[1:]:
        for name, _, _, _ in calls:
            counts[name] = counts.get(name, 0) + 1
    print(f"\nfloor at N = {n}, {steps} steps: the backend's PyBullet calls per step: "
          + ", ".join(f"{k} {v / steps:.2f}" for k, v in sorted(reads.items()))
          + ", " + ", ".join(f"{k} {v / steps:.2f}" for k, v in sorted(counts.items())))
    print("  floor = one state read + the backend's host-changing calls (forces, resets, the "
          "step), replayed; (step) its stepSimulation alone; +q = the floor with the backend's "
          "other queries replayed too")
    rest = slice(2 * steps // 3, None)
    series: list[tuple[np.ndarray, ...]] = []
    for r in range(repeat_):
        before = step_times(n, steps, None)
        ours = step_times(n, steps, "compiled")
        fl, fl_step, _, fl_end = replay(n, log)
        fq, _, _, fq_end = replay(n, log, queries=True)
        after = step_times(n, steps, None)
        native = 0.5 * (before + after)
        same = max(float(np.max(np.abs(fl_end - end))), float(np.max(np.abs(fq_end - end))))
        series.append((native, fl, fl_step, fq, ours))
        print(f"  run {r + 1}: replayed trajectories vs the backend's: max |dx| = {same:.1e} m "
              f"(0: the same host steps); " + _floor_summary(series[-1], rest), flush=True)
    if repeat_ > 1:  # per step, the fastest of the runs: the machine's load filtered out
        best = tuple(np.min(np.stack(x), axis=0) for x in zip(*series, strict=True))
        print(f"  per step the minimum over the {repeat_} runs: " + _floor_summary(best, rest))
    else:
        best = series[0]
    native, fl, fl_step, fq, ours = best
    print(f"  {'steps':>9s} | {'native':>7s} {'floor':>7s} {'(step)':>7s} {'+q':>7s} "
          f"{'ours':>7s} {'ours-floor':>10s} | floor/native +q/native ours/native  "
          "(ms per step, mean)")
    rows = [(f"{a}-{min(a + block, steps) - 1}", slice(a, a + block))
            for a in range(0, steps, block)]
    rows += [("all", slice(None)), ("rest", rest)]
    for name, s in rows:
        nv, f, fs, q, o = (native[s].mean(), fl[s].mean(), fl_step[s].mean(), fq[s].mean(),
                           ours[s].mean())
        print(f"  {name:>9s} | {nv * 1e3:7.2f} {f * 1e3:7.2f} {fs * 1e3:7.2f} {q * 1e3:7.2f} "
              f"{o * 1e3:7.2f} {(o - f) * 1e3:10.2f} | {f / nv:12.2f} {q / nv:9.2f} "
              f"{o / nv:11.2f}")
    md = [float(np.median(x)) for x in (native, fl, fl_step, fq, ours)]
    print(f"  {'median':>9s} | {md[0] * 1e3:7.2f} {md[1] * 1e3:7.2f} {md[2] * 1e3:7.2f} "
          f"{md[3] * 1e3:7.2f} {md[4] * 1e3:7.2f} {(md[4] - md[1]) * 1e3:10.2f} | "
          f"{md[1] / md[0]:12.2f} {md[3] / md[0]:9.2f} {md[4] / md[0]:11.2f}", flush=True)


def _floor_summary(x: tuple[np.ndarray, ...], rest: slice) -> str:
    native, fl, _, fq, ours = x
    return (f"native {native.mean() * 1e3:.2f} ms, floor/native all {fl.mean() / native.mean():.2f}"
            f" rest {fl[rest].mean() / native[rest].mean():.2f} (+q all "
            f"{fq.mean() / native.mean():.2f}), ours/native all "
            f"{ours.mean() / native.mean():.2f} rest "
            f"{ours[rest].mean() / native[rest].mean():.2f} median "
            f"{np.median(ours) / np.median(native):.2f}")


def steel_drop(solvers: tuple[str, ...] = ("compiled",)) -> None:
    m = 7800 * 4 / 3 * math.pi * R**3
    dt = 1 / 240
    print("\nsteel drop, 10 cm, 1/240 s: first-bounce c_r")
    for e in (0.3, 0.5, 0.8, 0.95):
        cid, plane, (b,) = world(1, z=0.1 + R, mass=m)
        p.changeDynamics(b, -1, restitution=e, physicsClientId=cid)
        p.changeDynamics(plane, -1, restitution=e, physicsClientId=cid)
        vz = []
        t0 = time.perf_counter()
        for _ in range(240):
            p.stepSimulation(physicsClientId=cid)
            vz.append(p.getBaseVelocity(b, physicsClientId=cid)[0][2])
        wall = time.perf_counter() - t0
        vz = np.array(vz)
        i = int(np.argmax(vz > 0))  # first step moving up
        cr = vz[i] / -vz[i - 1]
        print(f"  native restitution {e:4.2f}: c_r = {cr:.3f} (error {cr - e:+.3f}); "
              f"{wall * 1e3:.1f} ms for 1 s")
        p.disconnect(physicsClientId=cid)
    k = 4 / 3 * float(effective_modulus(2e11, 0.3)) * math.sqrt(R)
    for name, cr, solver in [(n, c, s) for n in ("hunt_crossley", "khatiwada")
                             for c in (0.3, 0.5, 0.8, 0.95) for s in solvers]:
        cid, plane, (b,) = world(1, z=0.1 + R, mass=m)
        bk = BulletContacts(cid, manage=[plane], law={"name": name, "cr": cr},
                            material={"E": 2e11, "nu": 0.3}, solver=solver, **FRICTION)
        t0 = time.perf_counter()
        for _ in range(round(1.0 / dt)):
            bk.step()
        wall = time.perf_counter() - t0
        law = make_law(name, k=k, cr=cr)
        rows = bk.bounces()
        rows = rows[rows["v_in"] > 0.15]
        err = max(abs(float(r["cr"]) - impact(law, m, float(r["v_in"]), press=m * G).cr_out)
                  for r in rows)
        print(f"  mbplugin {name:13s} cr {cr:4.2f} ({solver}): first c_r = "
              f"{rows[0]['cr']:.4f}, "
              f"{len(rows)} bounces, max |c_r - analyser| = {err:.1e}; {wall:.2f} s for 1 s")
        p.disconnect(physicsClientId=cid)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 10, 100 only")
    ap.add_argument("--steps", type=int, default=240, help="host steps per run (default 240)")
    ap.add_argument("--scipy-max", type=int, default=100,
                    help="also time the SciPy reference path up to this N (default 100)")
    ap.add_argument("--rtol", type=float, default=1e-8,
                    help="the backend's relative tolerance (default 1e-8, BulletContacts')")
    ap.add_argument("--no-drop", action="store_true", help="skip the steel drop")
    ap.add_argument("--radau", action="store_true",
                    help="also time the compiled path with Radau for every group (solver radau)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per N (default 1)")
    ap.add_argument("--sizes", type=int, nargs="+", help="N values (default 10 100 1000)")
    ap.add_argument("--friction", choices=("none", "pybullet"), default="none",
                    help="the managed pairs' friction: none (default; the scene benchmarked "
                         "before the default friction) or pybullet (PyBullet's lateral "
                         "friction of each pair, the backend's default: 0.5 x 1 here)")
    ap.add_argument("--cpu", action="store_true",
                    help="time the cost table (and the floor) in CPU time of the process "
                         "instead of wall time")
    ap.add_argument("--floor", action="store_true",
                    help="the floor decomposition at the largest N instead of the cost table: "
                         "native vs the backend's own PyBullet calls replayed (one state read "
                         "per step, no computation) vs the backend, per 20-step block")
    args = ap.parse_args()
    if args.steps < 3:
        ap.error(f"--steps {args.steps}: give at least 3")
    if args.repeat < 1:
        ap.error(f"--repeat {args.repeat}: give at least 1")
    FRICTION["friction"] = args.friction
    if args.cpu:
        CLOCK["clock"] = time.process_time
        print("(times below: CPU time of the process, time.process_time)")
    sizes = tuple(args.sizes) if args.sizes else ((10, 100) if args.quick else (10, 100, 1000))
    if args.floor:
        floor_table(max(sizes), args.steps, args.repeat)
        return
    cost_table(sizes, args.steps, args.scipy_max, args.rtol, args.radau, args.repeat)
    if not args.no_drop:
        steel_drop(("compiled", "radau") if args.radau else ("compiled",))


if __name__ == "__main__":
    main()
