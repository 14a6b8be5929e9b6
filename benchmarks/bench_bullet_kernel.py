"""Benchmark: the compiled contact-space integration of a host step, replayed.

The scene of ``bench_bullet.py`` (N spheres, R = 1 cm, 50 g, soft Hunt-Crossley k = 1e5,
cr = 0.5, released 2 mm above ``plane.urdf``; host step 1/240 s) is run with the backend for
``--steps`` host steps. Along the way:

* every call of :func:`~mbplugin.pipeline.substep_compiled.integrate_groups` during the host
  steps given by ``--capture`` (default 5: landing, 60: ringing, 200: at rest) is captured
  (copies of its arguments before the call and of what it wrote after it);
* each host step's ``StepInfo.stats.wall`` (the whole contact-space integration: the Python
  side of :class:`mbplugin.pipeline.substep.GroupedContactSpace` and the kernel) and the time
  spent in the kernel itself are recorded, reported per 20-step phase.

Then each captured host step is replayed: its calls run again, in order, on fresh copies of
the captured arguments, ``--repeat`` times; the minimum wall time is reported (per host step
and per contact), and the replayed outputs are checked bitwise against the captured ones (the
kernel is deterministic). ``--save FILE`` stores the capture (npz); ``--load FILE`` replays a
stored capture instead of running the scene, so two versions of the kernel can be timed and
compared on the same inputs (``--load`` checks the outputs against the stored ones: bitwise,
or the largest relative difference is printed). ``--check FILE`` compares the arguments and
outputs of a new run's captured calls with a stored capture (same physics and packing: bitwise).

    python benchmarks/bench_bullet_kernel.py                        # N = 1000, capture + replay
    python benchmarks/bench_bullet_kernel.py --save /tmp/cap.npz    # keep the capture
    python benchmarks/bench_bullet_kernel.py --load /tmp/cap.npz    # replay it (another tree)
    python benchmarks/bench_bullet_kernel.py --check /tmp/cap.npz   # run, compare with it
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pybullet as p

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_bullet import world

from mbplugin.bullet import BulletContacts
from mbplugin.pipeline import substep_compiled as cm

#: integrate_groups' arguments, in order (the arrays it writes: OUT)
ARGS = ("gptr", "yptr", "goff", "GF", "GI", "Y", "tg", "status", "hg", "dt", "rtol", "imp",
        "loaded", "counters", "auto", "mg", "tol_e")
OUT = ("Y", "tg", "status", "hg", "imp", "loaded", "counters", "mg")


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x


def run_scene(n: int, steps: int, capture: set[int]) -> tuple[dict, np.ndarray, np.ndarray]:
    """Run the scene; returns {step: [(args, outputs), ...]}, the per-step ``stats.wall`` and
    the per-step time inside ``integrate_groups`` (s)."""
    kernel = cm.integrate_groups
    calls: dict[int, list] = {}
    state = {"step": -1, "kernel": 0.0}

    def wrapped(*args):
        a = dict(zip(ARGS, args, strict=True))
        before = {k: _copy(v) for k, v in a.items()} if state["step"] in capture else None
        t0 = time.perf_counter()
        out = kernel(*args)
        state["kernel"] += time.perf_counter() - t0
        if before is not None:
            calls.setdefault(state["step"], []).append(
                (before, {k: a[k].copy() for k in OUT}))
        return out

    cid, plane, _ = world(n)
    bk = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5})
    wall = np.zeros(steps)
    kern = np.zeros(steps)
    cm.integrate_groups = wrapped
    try:
        for i in range(steps):
            state["step"], state["kernel"] = i, 0.0
            info = bk.step()
            wall[i] = info.stats.wall
            kern[i] = state["kernel"]
    finally:
        cm.integrate_groups = kernel
        p.disconnect(physicsClientId=cid)
    return calls, wall, kern


def replay(calls: list, repeat: int) -> tuple[float, float]:
    """Min wall time (s) of the host step's calls on fresh copies, and the largest relative
    difference of the outputs from the captured ones (0: bitwise)."""
    best = np.inf
    diff = 0.0
    for _ in range(repeat):
        runs = [({k: _copy(v) for k, v in a.items()}, o) for a, o in calls]
        t0 = time.perf_counter()
        for a, _o in runs:
            cm.integrate_groups(*(a[k] for k in ARGS))
        best = min(best, time.perf_counter() - t0)
        for a, o in runs:
            for k in OUT:
                x, y = np.asarray(a[k], dtype=float), np.asarray(o[k], dtype=float)
                if not np.array_equal(x, y):
                    scale = max(float(np.max(np.abs(y), initial=0.0)), 1e-300)
                    diff = max(diff, float(np.max(np.abs(x - y))) / scale, 1e-300)
    return best, diff


def save(path: str, calls: dict) -> None:
    flat = {}
    for s, cs in calls.items():
        for j, (a, o) in enumerate(cs):
            for k, v in a.items():
                flat[f"{s}/{j}/in/{k}"] = np.asarray(v)
            for k, v in o.items():
                flat[f"{s}/{j}/out/{k}"] = v
    np.savez(path, **flat)


def load(path: str) -> dict:
    z = np.load(path)
    calls: dict[int, dict] = {}
    for key in z.files:
        s, j, kind, name = key.split("/")
        c = calls.setdefault(int(s), {}).setdefault(int(j), ({}, {}))
        v = z[key]
        if kind == "in" and v.ndim == 0:
            v = v.item()
        c[0 if kind == "in" else 1][name] = v
    return {s: [cs[j] for j in sorted(cs)] for s, cs in sorted(calls.items())}


def _rel_diff(x, y) -> float:
    """Largest difference of x from y relative to y's largest magnitude (0: bitwise)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape:
        return np.inf
    if np.array_equal(x, y, equal_nan=True):
        return 0.0
    scale = max(float(np.max(np.abs(y), initial=0.0)), 1e-300)
    return max(float(np.nanmax(np.abs(x - y))) / scale, 1e-300)


def check(calls: dict, ref: dict) -> None:
    """Print, per captured host step, the largest relative difference of every argument and
    output of its calls from the stored capture's."""
    for s, cs in calls.items():
        rs = ref.get(s)
        if rs is None or len(rs) != len(cs):
            print(f"  step {s:3d}: {len(cs)} call(s), stored {0 if rs is None else len(rs)}")
            continue
        worst, where = 0.0, ""
        for j, ((a, o), (ra, ro)) in enumerate(zip(cs, rs, strict=True)):
            for kind, x, y in (("in", a, ra), ("out", o, ro)):
                for name in x:
                    dv = _rel_diff(x[name], y[name])
                    if dv > worst:
                        worst, where = dv, f" ({kind} {name}, call {j})"
        print(f"  step {s:3d}: " + ("bitwise the same" if worst == 0.0
                                    else f"max rel. diff {worst:.1e}{where}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="spheres (default 1000)")
    ap.add_argument("--steps", type=int, default=240, help="host steps of the scene (default 240)")
    ap.add_argument("--capture", type=int, nargs="+", default=[5, 60, 200],
                    help="host steps to capture and replay (default 5 60 200)")
    ap.add_argument("--repeat", type=int, default=7, help="replays per host step (min taken)")
    ap.add_argument("--save", help="store the capture (npz)")
    ap.add_argument("--load", help="replay a stored capture instead of running the scene")
    ap.add_argument("--check", help="compare the run's capture with a stored one")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat {args.repeat}: give at least 1")
    if args.load:
        calls = load(args.load)
    else:
        if not 0 < args.steps:
            ap.error(f"--steps {args.steps}: give at least 1")
        run_scene(2, 12, set())  # numba: load the cached kernels (or compile them once)
        calls, wall, kern = run_scene(args.n, args.steps, set(args.capture))
        print(f"N = {args.n}, {args.steps} host steps of 1/240 s: ms per host step, "
              "integration (stats.wall) / of it in integrate_groups, mean; median")
        for a in range(0, args.steps, 20):
            sl = slice(a, min(a + 20, args.steps))
            print(f"  steps {a:3d}-{sl.stop - 1:3d}: {wall[sl].mean() * 1e3:6.2f} / "
                  f"{kern[sl].mean() * 1e3:6.2f}; {np.median(wall[sl]) * 1e3:6.2f} / "
                  f"{np.median(kern[sl]) * 1e3:6.2f}")
        print(f"  all            : {wall.mean() * 1e3:6.2f} / {kern.mean() * 1e3:6.2f}; "
              f"{np.median(wall) * 1e3:6.2f} / {np.median(kern) * 1e3:6.2f}")
        if args.save:
            save(args.save, calls)
        if args.check:
            print(f"captured calls against {args.check}:")
            check(calls, load(args.check))
    print(f"replayed integrate_groups (min of {args.repeat}):")
    for s, cs in calls.items():
        k = int(cs[0][0]["gptr"][-1])
        cnt = sum((o["counters"] - a["counters"] for a, o in cs), np.zeros(4, dtype=np.int64))
        best, diff = replay(cs, args.repeat)
        same = "bitwise" if diff == 0.0 else f"max rel. diff {diff:.1e}"
        print(f"  step {s:3d}: {len(cs)} call(s), {k} contacts, steps/nfev/events/explicit "
              f"{'/'.join(str(int(c)) for c in cnt)}: {best * 1e3:7.3f} ms, "
              f"{best / k * 1e6:6.3f} us per contact ({same})")


if __name__ == "__main__":
    main()
