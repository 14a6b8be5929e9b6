"""Benchmark: managed piles on the PyBullet backend, cost per host step against native PyBullet.

N spheres (R = 1 cm, 50 g) in columns of 4 on ``plane.urdf``, the columns on a square grid of
pitch 2R (touching side by side and one above the other: one connected pile), released 2 mm
above the ground: they land, ring and come to rest over ``--steps`` host steps of 1/240 s.
Soft Hunt-Crossley (k = 1e5 N/m^1.5, cr = 0.5) with the default friction (PyBullet's lateral
friction of each pair: 0.5 x 0.5 between spheres, 0.5 x 1 on the ground). Per N, in one
process and on the same scene:

* native: ``stepSimulation`` with PyBullet's own contacts (run before and after the backend
  and averaged, to see the machine's load drift);
* ``ground``: ``BulletContacts(manage=[plane])``: every sphere-ground pair managed, the
  sphere-sphere pairs native;
* ``all``: ``BulletContacts(manage=[plane, *spheres])``: every pair managed (one group of
  ~3 N contacts, the implicit step of large groups, :mod:`mbplugin.pipeline.large_groups`);
  at the end, every column contact's overlap against the static Hertz overlap
  (i m g / k)^(2/3) of the weight of the i spheres above it (issue 18's acceptance at N = 1000).

Printed: wall time (or, with ``--cpu``, the process's CPU time) per host step, mean and
median, over the landing (the first ``--landing`` steps), the whole run and the rest (the last
third), and the ratios to native; per 40-step block with ``--blocks``; the machine and its
load average.

    python benchmarks/bench_bullet_pile.py                    # N = 100, 1000; 360 steps
    python benchmarks/bench_bullet_pile.py --sizes 100 --steps 120
    python benchmarks/bench_bullet_pile.py --sizes 1000 --cpu --blocks
    python benchmarks/bench_bullet_pile.py --pour --sizes 300 --steps 720   # a poured pile
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import numpy as np
import pybullet as p
import pybullet_data

from mbplugin.bullet import BulletContacts

G, R, M, K, LAYERS = 9.81, 0.01, 0.05, 1e5, 4
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": K}
CLOCK = {"clock": time.perf_counter}


def world(n: int, drop: float = 0.002) -> tuple[int, int, list[int]]:
    """A DIRECT client with the pile of ``n`` spheres (columns of LAYERS) ``drop`` above the
    ground: (client id, plane id, sphere ids)."""
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    cols = math.ceil(n / LAYERS)
    side = math.ceil(math.sqrt(cols))
    balls = []
    for i in range(n):
        c, layer = i % cols, i // cols
        pos = [2 * R * (c % side), 2 * R * (c // side), R + drop + 2 * R * layer]
        b = p.createMultiBody(M, shape, basePosition=pos, physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        balls.append(b)
    return cid, plane, balls


def pour(n: int, seed: int = 0) -> tuple[int, int, list[int]]:
    """A DIRECT client with ``n`` spheres at random (seeded, not overlapping) in a 0.1 x 0.1 x
    0.4 m column above the ground (``--pour``: a pile being poured)."""
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    rng = np.random.default_rng(seed)
    pos: list[np.ndarray] = []
    while len(pos) < n:
        c = rng.uniform([-0.05, -0.05, R], [0.05, 0.05, R + 0.4])
        if all(np.linalg.norm(c - q) > 2.05 * R for q in pos):
            pos.append(c)
    balls = []
    for c in pos:
        b = p.createMultiBody(M, shape, basePosition=list(c), physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        balls.append(b)
    return cid, plane, balls


SCENE = {"world": world}


def step_times(n: int, steps: int, manage: str | None) -> tuple[np.ndarray, dict[str, float]]:
    """Time of each host step (``CLOCK``): native (``manage`` None) or the backend managing
    "ground" or "all" pairs; and facts of the run (build time, contacts, Gauss-Seidel sweeps,
    the spheres' largest height change over the last 40 steps)."""
    cid, plane, balls = SCENE["world"](n)
    bk = None
    t0 = time.perf_counter()
    if manage == "ground":
        bk = BulletContacts(cid, manage=[plane], law=LAW)
    elif manage == "all":
        bk = BulletContacts(cid, manage=[plane, *balls], law=LAW)
    facts: dict[str, float] = {"build": time.perf_counter() - t0, "contacts": 0, "sweeps": 0}
    out = np.empty(steps)
    clock = CLOCK["clock"]
    z_late = None
    for i in range(steps):
        if i == steps - 40:
            z_late = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2]
                               for b in balls])
        t = clock()
        if bk is None:
            p.stepSimulation(physicsClientId=cid)
        else:
            info = bk.step()
            facts["contacts"] = max(facts["contacts"], info.contacts)
            facts["sweeps"] += info.stats.sweeps
        out[i] = clock() - t
    if bk is not None:
        bk.sync()
    pos = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0] for b in balls])
    z = pos[:, 2]
    facts["settle"] = float(np.max(np.abs(z - z_late))) if z_late is not None else math.nan
    facts["hertz"] = (hertz_error(pos) if manage == "all" and SCENE["world"] is world
                      else math.nan)
    p.disconnect(physicsClientId=cid)
    return out, facts


def hertz_error(pos: np.ndarray) -> float:
    """The largest relative difference between a column contact's overlap at the end (from
    the spheres' positions ``pos`` (N, 3), in :func:`world`'s order) and the static Hertz
    overlap (i m g / K)^(2/3) of the weight of the i spheres above it (full columns)."""
    n = len(pos)
    cols = math.ceil(n / LAYERS)
    worst = 0.0
    for c in range(cols):
        idx = [c + layer * cols for layer in range(LAYERS) if c + layer * cols < n]
        for j, b in enumerate(idx):
            d = R - pos[b, 2] if j == 0 else 2 * R - float(np.linalg.norm(pos[b] - pos[idx[j - 1]]))
            static = ((len(idx) - j) * M * G / K) ** (2 / 3)
            worst = max(worst, abs(d / static - 1))
    return worst


def _part(x: np.ndarray, native: np.ndarray, s: slice) -> str:
    return (f"{x[s].mean() * 1e3:8.2f} ms ({x[s].mean() / native[s].mean():5.2f}x; median "
            f"{np.median(x[s]) / np.median(native[s]):5.2f}x)")


def table(sizes: tuple[int, ...], steps: int, landing: int, blocks: bool) -> None:
    scene = (f"columns of {LAYERS}, touching" if SCENE["world"] is world
             else "poured: at random in a 0.1 x 0.1 x 0.4 m column")
    print(f"managed piles ({scene}), {steps} host steps of 1/240 s; "
          f"landing = steps 0-{landing - 1}, rest = the last third")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    t0 = time.perf_counter()
    # numba: load the cached kernels (or compile them once): 36 spheres make a large group
    step_times(36, 4, "all")
    step_times(8, 4, "ground")
    print(f"  (warm-up: compiled kernels loaded in {time.perf_counter() - t0:.1f} s)")
    land, rest, whole = slice(0, landing), slice(2 * steps // 3, None), slice(None)
    for n in sizes:
        before, _ = step_times(n, steps, None)
        runs = {m: step_times(n, steps, m) for m in ("ground", "all")}
        after, _ = step_times(n, steps, None)
        native = 0.5 * (before + after)
        print(f"  N = {n}: native {native.mean() * 1e3:.2f} ms/step (before/after "
              f"{before.mean() * 1e3:.2f}/{after.mean() * 1e3:.2f}; landing "
              f"{native[land].mean() * 1e3:.2f}, rest {native[rest].mean() * 1e3:.2f})",
              flush=True)
        for m, (x, f) in runs.items():
            print(f"    {m:6s} landing {_part(x, native, land)} | all {_part(x, native, whole)}"
                  f" | rest {_part(x, native, rest)}", flush=True)
            print(f"           (built in {f['build']:.2f} s, up to {int(f['contacts'])} managed "
                  f"contacts, {int(f['sweeps'])} Gauss-Seidel sweeps in all; the spheres moved "
                  f"{f['settle'] * 1e6:.3g} um over the last 40 steps"
                  + (f"; every column contact's overlap within {f['hertz']:.2g} of static Hertz"
                     if np.isfinite(f["hertz"]) else "") + ")", flush=True)
            if blocks:
                print("           per 40 steps, ours/native: " + " ".join(
                    f"{x[a:a + 40].mean() / native[a:a + 40].mean():.2f}"
                    for a in range(0, steps, 40)), flush=True)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000],
                    help="numbers of spheres (default 100 1000)")
    ap.add_argument("--steps", type=int, default=360, help="host steps per run (default 360)")
    ap.add_argument("--landing", type=int, default=40,
                    help="the landing: the first this many steps (default 40)")
    ap.add_argument("--cpu", action="store_true",
                    help="time in CPU time of the process instead of wall time")
    ap.add_argument("--blocks", action="store_true", help="ratios per 40-step block")
    ap.add_argument("--pour", action="store_true",
                    help="the spheres at random in a 0.1 x 0.1 x 0.4 m column instead of the "
                         "columns of 4 (a pile being poured; e.g. --sizes 300 --steps 720)")
    args = ap.parse_args()
    if args.steps < 60:
        ap.error(f"--steps {args.steps}: give at least 60")
    if not 1 <= args.landing < args.steps:
        ap.error(f"--landing {args.landing}: give 1 .. --steps - 1")
    if any(n < LAYERS for n in args.sizes):
        ap.error(f"--sizes: every N must be at least {LAYERS}")
    if args.cpu:
        CLOCK["clock"] = time.process_time
        print("(times below: CPU time of the process, time.process_time)")
    if args.pour:
        SCENE["world"] = pour
    table(tuple(args.sizes), args.steps, args.landing, args.blocks)


if __name__ == "__main__":
    main()
