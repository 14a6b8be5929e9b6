"""Benchmark: the MuJoCo backend's cost per host step against native MuJoCo, same process.

1. N spheres (R = 1 cm, 50 g) in a square grid (spacing 3 cm) released 2 mm above a floor
   plane, MuJoCo's default 2 ms Euler step: they land, bounce and settle. Native: ``mj_step``
   with MuJoCo's own contacts (default solref/solimp, Newton solver). mbplugin: every
   sphere-floor pair managed (Hunt-Crossley k = 1e5, cr = 0.5; the compiled contact-space
   path), ``contacts.step()``. Runs alternate native / ours (``--repeat``); per-step times,
   reported as the mean over all steps, the median step, and the mean over the last third
   (resting).
2. The A1 quadruped of ``examples/mujoco_quadruped.py`` (its URDF as MuJoCo loads it): 1 s of
   stance and 1 s of trot under the example's PD controller, the same controller code timed
   with each step; native MuJoCo contacts vs the backend's implicit step on the four toes.

Costs are the process's CPU time by default (``time.process_time`` read at the start, at two
thirds and at the end of a run: both engines run in-process, and a shared machine's other jobs
do not inflate either); the median step is from per-step wall times; ``--wall`` for wall-clock
means. ``--profile``: where the backend's time goes (cProfile of one run, own time per function, and
the share of ``mj_step1`` / ``mj_step2`` in it).

    python benchmarks/bench_mujoco.py                      # N = 10, 100, 1000 and the A1
    python benchmarks/bench_mujoco.py --sizes 1000 --repeat 3 --profile
    python benchmarks/bench_mujoco.py --sizes 10 --steps 300 --no-a1 --split

``--split``: the sphere scenes' steps by path, the general path's (set-up, onsets,
separations, pairs inside the margin not yet touching) and the lean path's
(:mod:`mbplugin.mujoco.lean`), their count and CPU time (``process_time`` read around every
step: ~2 us a step more), against native MuJoCo's whole run.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import math
import os
import pstats
import time
from pathlib import Path

import mujoco
import numpy as np

from mbplugin.mujoco import MujocoContacts

R, M = 0.01, 0.05
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": 1e5}
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mujoco_quadruped.py"
#: the cost figures: CPU time (default) or the wall clock (see the module docstring)
CLOCK = {"wall": False}


def spheres(n: int) -> str:
    """MJCF of n free spheres in a grid, 2 mm above a floor plane."""
    side = math.ceil(math.sqrt(n))
    bodies = "".join(
        f'<body pos="{3 * R * (i % side)} {3 * R * (i // side)} {R + 0.002}"><freejoint/>'
        f'<geom type="sphere" size="{R}" mass="{M}"/></body>' for i in range(n))
    return ('<mujoco><option timestep="0.002"/><worldbody>'
            f'<geom name="floor" type="plane" size="50 50 .1"/>{bodies}</worldbody></mujoco>')


class Times:
    """Per-step wall times (s, ``perf_counter``: 0.2 us a call) and the CPU time (s,
    ``process_time``: 2 us a call, so read at three marks only) of the whole run and of its
    last third."""

    def __init__(self, wall: np.ndarray, cpu: float, cpu_rest: float) -> None:
        self.wall, self.cpu, self.cpu_rest = wall, cpu, cpu_rest

    @property
    def mean(self) -> float:
        """Mean cost of a step (s): CPU time, or the wall clock with ``--wall``."""
        return (self.wall.mean() if CLOCK["wall"] else self.cpu / len(self.wall))

    @property
    def rest(self) -> float:
        """Mean cost of a step of the last third (s), as :attr:`mean`."""
        n = len(self.wall) - 2 * len(self.wall) // 3
        return (self.wall[-n:].mean() if CLOCK["wall"] else self.cpu_rest / n)


def timed(n: int, step) -> Times:
    """``n`` calls ``step(i)``, timed (:class:`Times`)."""
    out = np.empty(n)
    clock = time.perf_counter
    third = 2 * n // 3
    c0 = time.process_time()
    c1 = c0
    for i in range(n):
        if i == third:
            c1 = time.process_time()
        t0 = clock()
        step(i)
        out[i] = clock() - t0
    c2 = time.process_time()
    return Times(out, c2 - c0, c2 - c1)


def sphere_steps(n: int, steps: int, ours: bool) -> np.ndarray:
    """Time (s) of each host step of the sphere scene."""
    m = mujoco.MjModel.from_xml_string(spheres(n))
    d = mujoco.MjData(m)
    if ours:
        contacts = MujocoContacts(m, d, manage=["floor"], law=LAW)
        return timed(steps, lambda i: contacts.step())
    return timed(steps, lambda i: mujoco.mj_step(m, d))


def split(n: int, steps: int) -> str:
    """The sphere scene's steps by path (``--split``; module docstring), one line."""
    m = mujoco.MjModel.from_xml_string(spheres(n))
    d = mujoco.MjData(m)
    contacts = MujocoContacts(m, d, manage=["floor"], law=LAW)
    cpu = {True: 0.0, False: 0.0}
    count = {True: 0, False: 0}
    for _ in range(steps):
        lean = contacts._lean
        before = lean.steps if hasattr(lean, "steps") else 0
        t0 = time.process_time()
        contacts.step()
        t = time.process_time() - t0
        lean = contacts._lean
        took = (lean.steps if hasattr(lean, "steps") else 0) > before
        cpu[took] += t
        count[took] += 1
    m = mujoco.MjModel.from_xml_string(spheres(n))
    d = mujoco.MjData(m)
    t0 = time.process_time()
    for _ in range(steps):
        mujoco.mj_step(m, d)
    native = time.process_time() - t0
    each = 1e6 * cpu[True] / max(count[True], 1)
    return (f"N = {n}: general path {count[False]} steps {1e3 * cpu[False]:.2f} ms, lean path "
            f"{count[True]} steps {1e3 * cpu[True]:.2f} ms ({each:.1f} us each); native "
            f"{1e3 * native:.2f} ms: {(cpu[True] + cpu[False]) / native:.2f}x, the lean steps "
            f"alone {cpu[True] / max(count[True], 1) * steps / native:.2f}x")


def _example():
    spec = importlib.util.spec_from_file_location("mujoco_quadruped", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def a1_steps(q, ours: bool, t_stand: float = 1.0, t_trot: float = 1.0) -> np.ndarray:
    """Time (s) of each host step of the A1 (controller and step)."""
    m, d, contacts = q.setup(ours)
    hq = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    hv = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    dt = m.opt.timestep

    def step(i: int) -> None:
        tau = q.KP * (q.targets(i * dt, t_stand) - d.qpos[hq]) - q.KD * d.qvel[hv]
        d.ctrl[:] = np.clip(tau, -q.MAX_TORQUE, q.MAX_TORQUE)
        if contacts is None:
            mujoco.mj_step(m, d)
        else:
            contacts.step()

    return timed(round((t_stand + t_trot) / dt), step)


def _row(name: str, ours: list[Times], native: list[Times]) -> str:
    o, n = np.mean([t.mean for t in ours]), np.mean([t.mean for t in native])
    med = (np.median(np.concatenate([t.wall for t in ours]))
           / np.median(np.concatenate([t.wall for t in native])))
    rest = np.mean([t.rest for t in ours]) / np.mean([t.rest for t in native])
    return (f"{name:26s} {1e3 * n:9.3f} {1e3 * o:9.3f} {o / n:7.1f}x {med:7.1f}x "
            f"{rest:7.1f}x")


def profile(fn, label: str, top: int = 14) -> None:
    """Own time per function of one call of ``fn`` (cProfile)."""
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s)
    total = st.total_tt
    rows = sorted(((k, v) for k, v in st.stats.items() if "time." not in k[2]
                   and "perf_counter" not in k[2]), key=lambda kv: -kv[1][2])[:top]
    print(f"\nwhere the time goes: {label} (cProfile, {total:.2f} s in all)")
    for (file, line, func), (_, _, tt, _ct, _) in rows:
        print(f"  {100 * tt / total:5.1f} %  {func:34s} {Path(file).name}:{line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--steps", type=int, default=500, help="host steps per run (default 500)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case, alternating")
    ap.add_argument("--no-a1", action="store_true", help="skip the quadruped")
    ap.add_argument("--profile", action="store_true", help="where the backend's time goes")
    ap.add_argument("--wall", action="store_true", help="wall clock instead of CPU time")
    ap.add_argument("--split", action="store_true",
                    help="the sphere scenes' steps by path (general / lean), CPU time")
    args = ap.parse_args()
    if args.wall:
        CLOCK["wall"] = True
    print(f"load average {os.getloadavg()[0]:.2f}, mujoco {mujoco.__version__}, "
          f"{'wall clock' if args.wall else 'CPU time'}")
    sphere_steps(2, 20, True)  # compile / warm the kernels outside the timing
    print(f"{'case':26s} {'native ms':>9s} {'ours ms':>9s} {'mean':>8s} {'median':>8s} "
          f"{'rest':>8s}")
    for n in args.sizes:
        nat, our = [], []
        for _ in range(args.repeat):
            nat.append(sphere_steps(n, args.steps, False))
            our.append(sphere_steps(n, args.steps, True))
        print(_row(f"N = {n} spheres", our, nat))
    if not args.no_a1:
        q = _example()
        a1_steps(q, True, 0.05, 0.0)
        nat, our = [], []
        for _ in range(args.repeat):
            nat.append(a1_steps(q, False))
            our.append(a1_steps(q, True))
        print(_row("A1 stance 1 s + trot 1 s", our, nat))
        print(f"  real-time factor: native {0.002 / np.mean([t.mean for t in nat]):.1f}, "
              f"ours {0.002 / np.mean([t.mean for t in our]):.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    if args.split:
        for n in args.sizes:
            print(split(n, args.steps))
    if args.profile:
        for n in args.sizes:
            profile(lambda n=n: sphere_steps(n, args.steps, True), f"N = {n} spheres")
        if not args.no_a1:
            profile(lambda: a1_steps(q, True), "A1")


if __name__ == "__main__":
    main()
