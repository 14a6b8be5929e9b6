"""Cost of the constrained free acceleration (tests/test_mujoco_mixed.py's scenes): a managed
free body that MuJoCo also constrains gets MuJoCo's constraint acceleration from one
``mj_copyData`` and one ``mj_fwdConstraint`` on a scratch ``MjData`` per host step
(``MujocoHost._constrained_acceleration``).

CPU time per host step (``time.process_time``; the minimum of ``--repeat`` interleaved
rounds, each ``--steps`` steps after the stack has settled) of three runs in one process:
native MuJoCo (``mj_step``, every pair native), the backend with the floor pair managed (and
the part of its step spent in ``_constrained_acceleration``), and the same backend with the
constrained part switched off (``qacc_smooth`` alone, the behaviour
before: wrong numbers, timed only for the ratio). Printed last: the "fixed" run's CPU after
``mj_step2`` (what decides and applies the position correction), and the fraction of its
host steps that were position-corrected and whose end overlaps were read from MuJoCo's
end state (``ContactLoop.correction``, ``ContactLoop.end_overlaps``; where the step's
constraint acceleration is the predicted one, the end overlaps are predicted instead,
``mbplugin.mujoco.native.constraint_error``), and the rest state at the end of the "fixed"
run (the lower body's overlap against the static Hertz overlap of every weight it carries,
shared by a box face's four corners; the largest |qvel|).

    python benchmarks/bench_mujoco_mixed.py
    python benchmarks/bench_mujoco_mixed.py --scene sphere3 --steps 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import mujoco
import numpy as np

from mbplugin.mujoco import MujocoContacts

LAW = {"name": "hunt_crossley", "cr": 0.5, "k": 1e7}


def _xml(scene: str) -> str:
    shape, n = ("box", 2) if scene == "box2" else ("sphere", 3)
    size = ".1 .1 .05" if shape == "box" else ".05"
    bodies = "".join(
        f'<body name="b{i}" pos="0 0 {0.05 + 0.1 * i:.3f}"><freejoint/><geom name="g{i}" '
        f'type="{shape}" size="{size}" mass="{1.0 if i == 0 else 3.0}"/></body>'
        for i in range(n))
    return ('<mujoco><option timestep="0.002"/><worldbody>'
            f'<geom name="floor" type="plane" size="5 5 .1"/>{bodies}</worldbody></mujoco>')


def _counted(inner: Any, calls: dict[str, int], what: str) -> Any:
    """``inner`` counting its calls in ``calls[what]``."""
    def counted(*a: Any) -> Any:
        calls[what] += 1
        return inner(*a)
    return counted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", choices=["box2", "sphere3"], default="box2")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runs = {}
    spent = [0.0]  # CPU seconds in _constrained_acceleration (the "fixed" run)
    calls = {"correction": 0, "end_overlaps": 0}  # position corrections, end-state reads
    after = [0.0, 0.0]  # CPU seconds after mj_step2 (the "fixed" run), the mark
    for name in ("native", "fixed", "smooth only"):
        m = mujoco.MjModel.from_xml_string(_xml(args.scene))
        d = mujoco.MjData(m)
        if name == "native":
            runs[name] = (lambda m=m, d=d: mujoco.mj_step(m, d))
            continue
        c = MujocoContacts(m, d, manage=[("floor", "g0")], law=LAW)
        if name == "smooth only":
            c.host._constrained_acceleration = lambda d=d: d.qacc_smooth
        else:
            inner = c.host._constrained_acceleration

            def timed(inner=inner):
                t0 = time.process_time()
                out = inner()
                spent[0] += time.process_time() - t0
                return out

            c.host._constrained_acceleration = timed
            for what in ("correction", "end_overlaps"):  # counted (the "fixed" run)
                setattr(c.loop, what, _counted(getattr(c.loop, what), calls, what))
            host_step = c.host.step

            def marked(host_step=host_step):  # mj_step2 ends: the after-step part begins
                host_step()
                after[1] = time.process_time()

            c.host.step = marked
            fixed = (c, d, sum(1.0 if i == 0 else 3.0 for i in range(m.nbody - 1)))

            def whole(step=c.step):  # the part after mj_step2 summed into after[0]
                step()
                after[0] += time.process_time() - after[1]

            runs[name] = whole
            continue
        runs[name] = c.step
    for step in runs.values():  # settle
        for _ in range(500):
            step()
    best = {k: float("inf") for k in runs}
    for _ in range(args.repeat):
        for k, step in runs.items():
            spent[0] = after[0] = 0.0
            calls.update(correction=0, end_overlaps=0)
            t0 = time.process_time()
            for _ in range(args.steps):
                step()
            t = (time.process_time() - t0) / args.steps
            if k == "fixed" and t < best[k]:
                part = spent[0] / args.steps
                count = dict(calls)
                tail = after[0] / args.steps
            best[k] = min(best[k], t)
    for k, t in best.items():
        print(f"{args.scene} {k:12s} {t * 1e6:8.1f} us/step  {t / best['native']:6.2f}x native")
    print(f"of which the constrained acceleration (copy + constraint solve): {part * 1e6:.1f} "
          f"us/step")
    print(f"fixed / smooth only: {best['fixed'] / best['smooth only']:.3f}")
    print(f"the fixed run's part after mj_step2 (correction, flight, info): {tail * 1e6:.1f} "
          "us/step")
    c, d, mass = fixed  # the rest state at the end of the fixed run
    corners = 4 if args.scene == "box2" else 1
    ds = (mass * 9.81 / corners / LAW["k"]) ** (2 / 3)  # F = k delta^1.5 at rest
    print(f"fixed run at the end: lower overlap / static Hertz - 1 = "
          f"{np.max(np.abs(np.asarray(c.last.delta) / ds - 1.0)):.1e}, "
          f"max |qvel| {np.max(np.abs(d.qvel)):.1e}")
    print(f"host steps position-corrected: {count['correction'] / args.steps:.2f}, end overlaps "
          f"read (detected at MuJoCo's end state): {count['end_overlaps'] / args.steps:.2f}")


if __name__ == "__main__":
    main()
