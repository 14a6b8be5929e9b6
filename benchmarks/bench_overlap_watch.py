"""The per-step cost of the overlap watch (issue 21): both hosts' steps with and without it.

Every host step of ``BulletContacts`` and ``MujocoContacts`` compares its largest integrated
overlap with one bound (half the smallest width of any managed shape,
:class:`mbplugin.contact.sizes.OverlapWatch`); only a step above it computes widths along its
contacts' normals. This measures what that costs on the cheapest steps there are (balls resting
on a plane: the watch's share is largest where the step is shortest): per host and scene, runs
with the watch and with it replaced by a no-op alternate in one process (``--repeat`` rounds,
``--steps`` host steps each, CPU time of the process), and the median per-step time of each and
their ratio are printed, with the load. The watch changes no trajectory (host_pins bitwise).

    python benchmarks/bench_overlap_watch.py [--sizes 1,100] [--steps 400] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import mbplugin.bullet.checks as bchecks
import mbplugin.mujoco.backend as mback

R, M = 0.01, 0.05
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": 1e5}


def _bullet(n: int, steps: int) -> tuple[float, float]:
    import pybullet as p
    import pybullet_data

    from mbplugin.bullet import BulletContacts

    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, -9.81, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        side = math.ceil(math.sqrt(n))
        for i in range(n):
            p.createMultiBody(M, col, basePosition=[3 * R * (i % side), 3 * R * (i // side), R],
                              physicsClientId=cid)
        bc = BulletContacts(cid, manage=[plane], law=LAW)
        for _ in range(20):  # settled, compiled paths warm
            bc.step()
        t0 = time.process_time()
        for _ in range(steps):
            bc.step()
        per = (time.process_time() - t0) / steps
        return per, _own(lambda: bchecks.watch_overlaps(bc, bc.last, None, None))
    finally:
        p.disconnect(physicsClientId=cid)


def _mujoco(n: int, steps: int) -> tuple[float, float]:
    import mujoco

    from mbplugin.mujoco import MujocoContacts

    side = math.ceil(math.sqrt(n))
    bodies = "".join(
        f'<body pos="{3 * R * (i % side)} {3 * R * (i // side)} {R}"><freejoint/>'
        f'<geom type="sphere" size="{R}" mass="{M}"/></body>' for i in range(n))
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><option timestep="0.002"/><worldbody>'
        f'<geom name="floor" type="plane" size="5 5 0.1"/>{bodies}</worldbody></mujoco>')
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    mc = MujocoContacts(m, d, manage=["floor"], law=LAW)
    for _ in range(20):
        mc.step()
    t0 = time.process_time()
    for _ in range(steps):
        mc.step()
    per = (time.process_time() - t0) / steps
    return per, _own(lambda: mback.watch_overlaps(mc, mc.last))


def _own(call) -> float:
    """CPU time (s) of one call of the watch on a step's info (the best of 5 x 2000)."""
    best = math.inf
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(2000):
            call()
        best = min(best, (time.process_time() - t0) / 2000)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,100")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    real = (bchecks.watch_overlaps, mback.watch_overlaps)

    def off(c, info, *_):  # the no-op watch
        return info

    print(f"load: {os.getloadavg()}")
    for host, fn in (("pybullet", _bullet), ("mujoco", _mujoco)):
        for n in (int(x) for x in args.sizes.split(",")):
            t: dict[str, list[float]] = {"on": [], "off": []}
            own = math.inf
            for _ in range(args.repeat):
                for mode in ("on", "off"):
                    bchecks.watch_overlaps, mback.watch_overlaps = (
                        real if mode == "on" else (off, off))
                    per, call = fn(n, args.steps)
                    t[mode].append(per)
                    if mode == "on":
                        own = min(own, call)
            bchecks.watch_overlaps, mback.watch_overlaps = real
            on, of = float(np.median(t["on"])), float(np.median(t["off"]))
            print(f"{host:8s} N={n:4d}: with the watch {on * 1e6:8.1f} us/step, without "
                  f"{of * 1e6:8.1f} us/step, ratio {on / of:.4f}; the watch's own call "
                  f"{own * 1e6:.2f} us ({own / of:.2%} of the step) "
                  f"(rounds: {[round(x * 1e6, 1) for x in t['on']]} / "
                  f"{[round(x * 1e6, 1) for x in t['off']]})")
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
