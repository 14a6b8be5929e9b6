"""Benchmark: a 5-ball stack on the PyBullet backend held over a long window (default 10 s).

Five balls (R = 1 cm, 50 g) stacked on ``plane.urdf``, soft Hunt-Crossley (k = 1e5 N/m^1.5,
cr = 0.5), placed at the static Hertz overlaps ((N - i) m g / k)^(2/3) of the weight above each
contact. Printed: the largest displacement of any ball over the window (the issue's limit is
1 um), each contact's normal force against the weight above it, (N - i) m g (limit 1 %), and
the wall time (tests/test_bullet_backend.py checks the same over 10 s; ``--hz`` changes the
host step).

    python benchmarks/bench_bullet_stack.py [--duration 10] [--hz 240]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pybullet as p
import pybullet_data

from mbplugin.bullet import BulletContacts

G, R, M, K, N = 9.81, 0.01, 0.05, 1e5, 5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=10.0, help="simulated time (s)")
    ap.add_argument("--hz", type=float, default=240.0, help="host steps per second")
    args = ap.parse_args(argv)
    dt = 1.0 / args.hz
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    p.setTimeStep(dt, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    d = [((N - i) * M * G / K) ** (2 / 3) for i in range(N)]
    z, balls = R - d[0], []
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    for i in range(N):
        b = p.createMultiBody(M, shape, basePosition=[0, 0, z], physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        balls.append(b)
        if i + 1 < N:
            z += 2 * R - d[i + 1]
    bk = BulletContacts(cid, manage=[plane, *[(balls[i], balls[i + 1]) for i in range(N - 1)]],
                        law={"name": "hunt_crossley", "cr": 0.5, "k": K})

    def pos() -> np.ndarray:
        return np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0]
                         for b in balls])

    x0 = pos()
    worst, worst_force = 0.0, 0.0
    steps = round(args.duration / dt)
    t0 = time.perf_counter()
    for _ in range(steps):
        info = bk.step()
        worst = max(worst, float(np.max(np.abs(pos() - x0))))
        below = {int(a[1][0]): f for a, f in zip(info.links, info.normal_force, strict=True)}
        ratio = np.array([below[b] / ((N - i) * M * G) for i, b in enumerate(balls)])
        worst_force = max(worst_force, float(np.max(np.abs(ratio - 1))))
    wall = time.perf_counter() - t0
    print(f"5-ball stack, {args.duration:g} s at 1/{args.hz:g} s ({steps} host steps): largest "
          f"displacement {worst * 1e6:.3g} um (limit 1 um); largest contact-force error vs "
          f"(N - i) m g {worst_force * 100:.3g} % (limit 1 %); wall {wall:.0f} s")
    p.disconnect(physicsClientId=cid)
    return 0 if worst < 1e-6 and worst_force < 0.01 else 1


if __name__ == "__main__":
    raise SystemExit(main())
