"""Benchmark: the PyBullet backend's cost per host step, and the steel drop's c_r error.

1. N spheres (R = 1 cm, 50 g, soft Hunt-Crossley k = 1e5, cr = 0.5) on ``plane.urdf`` in a
   square grid, released 2 mm above the plane (they land, bounce and settle): the mean wall
   time of a host step (1/240 s) with every sphere-plane pair managed (the compiled path, and
   the SciPy reference path for N <= --scipy-max; with --radau also the compiled path with Radau
   for every group, the default before the explicit solver), against ``stepSimulation`` on the
   same scene with PyBullet's native contact, in the same process; over all steps and over the
   last third (resting).
2. A steel ball (R = 1 cm, 32.7 g) dropped from 10 cm at 1/240 s. Native PyBullet:
   ``restitution`` = 0.3 / 0.5 / 0.8 / 0.95 on both bodies; the first bounce's measured c_r
   (upward / downward speed around the impact) against the one asked. mbplugin: Hunt-Crossley,
   exact-COR (Khatiwada) with Hertz k of steel, each bounce's c_r against the exact impact
   analyser at the same impact speed. Cost of the 1 s run, both ways.

    python benchmarks/bench_bullet.py            # N = 10, 100, 1000; 240 steps (1 s)
    python benchmarks/bench_bullet.py --quick    # N = 10, 100
    python benchmarks/bench_bullet.py --no-drop --radau --repeat 3   # + Radau-only, 3 runs
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
                         law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5})
          if solver else None)
    out = np.empty(steps)
    for i in range(steps):
        t0 = time.perf_counter()
        if bk is None:
            p.stepSimulation(physicsClientId=cid)
        else:
            bk.step()
        out[i] = time.perf_counter() - t0
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


class _Recorder:
    """Stands in for the ``pybullet`` module inside the backend's ``Client``: every function
    the backend calls (through ``Client.__call__`` or mapped directly) is passed on to PyBullet;
    the host-changing ones are logged with their arguments (the client id removed), the
    queries are counted. ``log[0]`` holds the calls before the first step."""

    def __init__(self, pb: object) -> None:
        self._pb = pb
        self.log: list[list[tuple[str, tuple, dict]]] = [[]]
        self.queries: dict[str, int] = {}

    def __getattr__(self, name: str) -> object:
        fn = getattr(self._pb, name)
        if not callable(fn):
            return fn
        if name not in HOST_CALLS:
            def query(*args: object, **kwargs: object) -> object:
                self.queries[name] = self.queries.get(name, 0) + 1
                return fn(*args, **kwargs)
            return query

        def host(*args: object, **kwargs: object) -> object:
            kw = dict(kwargs)
            if kw.pop("physicsClientId", None) is None:
                args = args[:-1]  # mapped calls pass the client id last, positionally
            if name not in REPLAYABLE:
                raise RuntimeError(f"the floor replay cannot reproduce {name}")
            self.log[-1].append((name, args, kw))
            if name == "stepSimulation":
                self.log.append([])
            return fn(*args, **kwargs)
        return host


def record(n: int, steps: int) -> tuple[list[list[tuple[str, tuple, dict]]], dict[str, int],
                                         np.ndarray]:
    """The backend's host-changing PyBullet calls per step (``log[0]``: set-up, ``log[i]``:
    those of step i, its ``stepSimulation`` last), its query counts and the final positions."""
    cid, plane, balls = world(n)
    bk = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5})
    rec = _Recorder(p)
    log0 = []
    # the set-up's filter calls happened before the recorder: replay them from the backend
    for x, y in bk._pairs:
        log0.append(("setCollisionFilterPair", (x[0], y[0], x[1], y[1], 0), {}))
    rec.log = [log0, []]
    bk.client.p = rec
    for _ in range(steps):
        bk.step()
    end = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0] for b in balls])
    p.disconnect(physicsClientId=cid)
    return rec.log[:-1], rec.queries, end


def _runs(calls: list[tuple[str, tuple, dict]]) -> list[tuple[object, list[list]]]:
    """Consecutive calls of one function with no keywords grouped: (function, argument columns),
    replayed with ``map`` (no Python frame per call, as the backend does)."""
    out: list[tuple[object, list[list]]] = []
    last = None
    for name, args, kw in calls:
        if kw:
            out.append((name, [list(args), kw]))
            last = None
            continue
        if name != last:
            out.append((getattr(p, name), [[] for _ in args]))
            last = name
        for col, a in zip(out[-1][1], args, strict=True):
            col.append(a)
    return out


def replay(n: int, log: list[list[tuple[str, tuple, dict]]]) -> tuple[np.ndarray, np.ndarray,
                                                                         np.ndarray]:
    """The floor: a fresh ``world(n)``, the set-up's filter calls, then per step one state read
    of every body (the backend's ``body_state``: two calls per body, gathered into arrays) and
    the recorded host-changing calls in their order. Returns the wall time (s) of each step,
    of its ``stepSimulation`` alone, and the final positions."""
    cid, _, balls = world(n)
    for fn, cols in _runs(log[0]):
        for _ in map(fn, *cols, repeat(cid)):
            pass
    ids = list(balls)
    plan = [_runs(calls) for calls in log[1:]]
    out, step = np.empty(len(plan)), np.empty(len(plan))
    stepper = p.stepSimulation
    for i, runs in enumerate(plan):
        t0 = time.perf_counter()
        ps = np.fromiter(chain.from_iterable(chain.from_iterable(
            map(p.getBasePositionAndOrientation, ids, repeat(cid)))), dtype=float,
            count=7 * len(ids))
        vs = np.fromiter(chain.from_iterable(chain.from_iterable(
            map(p.getBaseVelocity, ids, repeat(cid)))), dtype=float, count=6 * len(ids))
        del ps, vs
        for fn, cols in runs:
            if fn is stepper:
                t1 = time.perf_counter()
                stepper(physicsClientId=cid)
                step[i] = time.perf_counter() - t1
            elif isinstance(fn, str):
                getattr(p, fn)(*cols[0], physicsClientId=cid, **cols[1])
            else:
                for _ in map(fn, *cols, repeat(cid)):
                    pass
        out[i] = time.perf_counter() - t0
    end = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0] for b in balls])
    p.disconnect(physicsClientId=cid)
    return out, step, end


def floor_table(n: int, steps: int, repeat_: int = 1, block: int = 20) -> None:
    """Native vs the floor (the backend's own PyBullet calls replayed with one state read per
    step, no computation) vs the backend, per ``block`` steps and overall, in one process."""
    step_times(2, 12, "compiled")  # numba: load the cached kernels
    log, queries, end = record(n, steps)
    counts: dict[str, int] = {}
    for calls in log[1:]:
        for name, _, _ in calls:
            counts[name] = counts.get(name, 0) + 1
    print(f"\nfloor at N = {n}, {steps} steps: the backend's host-changing calls per step "
          + ", ".join(f"{k} {v / steps:.1f}" for k, v in sorted(counts.items()))
          + "; its queries per step "
          + ", ".join(f"{k} {v / steps:.2f}" for k, v in sorted(queries.items())))
    rest = slice(2 * steps // 3, None)
    for r in range(repeat_):
        before = step_times(n, steps, None)
        ours = step_times(n, steps, "compiled")
        fl, fl_step, fl_end = replay(n, log)
        after = step_times(n, steps, None)
        native = 0.5 * (before + after)
        same = float(np.max(np.abs(fl_end - end)))
        print(f"  run {r + 1}: replayed trajectory vs the backend's: max |dx| = {same:.1e} m "
              f"(0: the same host steps)")
        print(f"  {'steps':>9s} | {'native':>7s} {'floor':>7s} {'(step)':>7s} {'ours':>7s} "
              f"{'ours-floor':>10s} | floor/native ours/native  (ms per step, mean)")
        rows = [(f"{a}-{min(a + block, steps) - 1}", slice(a, a + block))
                for a in range(0, steps, block)]
        rows += [("all", slice(None)), ("rest", rest)]
        for name, s in rows:
            nv, f, fs, o = native[s].mean(), fl[s].mean(), fl_step[s].mean(), ours[s].mean()
            print(f"  {name:>9s} | {nv * 1e3:7.2f} {f * 1e3:7.2f} {fs * 1e3:7.2f} {o * 1e3:7.2f} "
                  f"{(o - f) * 1e3:10.2f} | {f / nv:11.2f} {o / nv:10.2f}")
        print(f"  {'median':>9s} | {np.median(native) * 1e3:7.2f} {np.median(fl) * 1e3:7.2f} "
              f"{np.median(fl_step) * 1e3:7.2f} {np.median(ours) * 1e3:7.2f} "
              f"{(np.median(ours) - np.median(fl)) * 1e3:10.2f} | "
              f"{np.median(fl) / np.median(native):11.2f} "
              f"{np.median(ours) / np.median(native):10.2f}", flush=True)


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
                            material={"E": 2e11, "nu": 0.3}, solver=solver)
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
    ap.add_argument("--floor", action="store_true",
                    help="the floor decomposition at the largest N instead of the cost table: "
                         "native vs the backend's own PyBullet calls replayed (one state read "
                         "per step, no computation) vs the backend, per 20-step block")
    args = ap.parse_args()
    if args.steps < 3:
        ap.error(f"--steps {args.steps}: give at least 3")
    if args.repeat < 1:
        ap.error(f"--repeat {args.repeat}: give at least 1")
    sizes = tuple(args.sizes) if args.sizes else ((10, 100) if args.quick else (10, 100, 1000))
    if args.floor:
        floor_table(max(sizes), args.steps, args.repeat)
        return
    cost_table(sizes, args.steps, args.scipy_max, args.rtol, args.radau, args.repeat)
    if not args.no_drop:
        steel_drop(("compiled", "radau") if args.radau else ("compiled",))


if __name__ == "__main__":
    main()
