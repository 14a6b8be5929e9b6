"""PyBullet's three resets of an articulated body after a host step: which orders give the same
state, and what each costs (the backend's ``BulletArticulated.flush`` sets joints J, base pose
P, base velocity V in the order J-P-V).

The A1 of ``pybullet_data`` on a plane under random joint torques, ``--steps`` host steps at
PyBullet's default 1/240 s; after each ``stepSimulation`` its joint and base state is read,
perturbed and set back by ``resetJointStatesMultiDof`` (J), ``resetBasePositionAndOrientation``
(P) and ``resetBaseVelocity`` (V) in each order. Printed per order: the steps whose state
read afterwards (joints, base pose and velocity, link states, contact points) equals J-P-V's
to the bit, and the thread CPU time of each reset (us per call).

    python benchmarks/bullet_reset_order.py [--steps 400]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
import pybullet as p
import pybullet_data

ORDERS = ("JPV", "PJV", "VJP", "JVP", "VPJ")


def run(order: str, steps: int) -> tuple[list[Any], dict[str, float]]:
    """The A1 stepped ``steps`` times with the resets in ``order``: the state read after each
    step's resets, and each reset's mean thread CPU time (us)."""
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, -9.81, physicsClientId=cid)
        p.loadURDF("plane.urdf", physicsClientId=cid)
        b = p.loadURDF("a1/a1.urdf", [0, 0, 0.35], physicsClientId=cid)
        nj = p.getNumJoints(b, physicsClientId=cid)
        j = [i for i in range(nj) if p.getJointInfo(b, i, physicsClientId=cid)[2] != p.JOINT_FIXED]
        p.setJointMotorControlArray(b, j, p.VELOCITY_CONTROL, forces=[0.0] * len(j),
                                    physicsClientId=cid)
        rng = np.random.default_rng(0)
        out, cost = [], dict.fromkeys("JPV", 0.0)
        for _ in range(steps):
            p.setJointMotorControlArray(b, j, p.TORQUE_CONTROL,
                                        forces=list(rng.normal(0, 3, len(j))), physicsClientId=cid)
            p.stepSimulation(physicsClientId=cid)
            st = p.getJointStates(b, j, physicsClientId=cid)
            qs = [(s[0] + 1e-4 * rng.normal(),) for s in st]
            vs = [(s[1] + 1e-3 * rng.normal(),) for s in st]
            pos, orn = p.getBasePositionAndOrientation(b, physicsClientId=cid)
            v, w = p.getBaseVelocity(b, physicsClientId=cid)
            pos = [x + 1e-5 * rng.normal() for x in pos]
            v = [x + 1e-3 * rng.normal() for x in v]
            w = [x + 1e-3 * rng.normal() for x in w]
            o = np.array(orn) + 1e-5 * rng.normal(size=4)
            orn = list(o / np.linalg.norm(o))
            for c in order:
                t = time.thread_time()
                if c == "J":
                    p.resetJointStatesMultiDof(b, j, qs, vs, physicsClientId=cid)
                elif c == "P":
                    p.resetBasePositionAndOrientation(b, pos, orn, physicsClientId=cid)
                else:
                    p.resetBaseVelocity(b, v, w, physicsClientId=cid)
                cost[c] += time.thread_time() - t
            links = p.getLinkStates(b, list(range(nj)), computeLinkVelocity=1,
                                    physicsClientId=cid)
            out.append((tuple(s[:2] for s in p.getJointStates(b, j, physicsClientId=cid)),
                        p.getBasePositionAndOrientation(b, physicsClientId=cid),
                        p.getBaseVelocity(b, physicsClientId=cid), tuple(map(tuple, links)),
                        tuple(c[5:10] for c in p.getContactPoints(physicsClientId=cid))))
        return out, {k: v / steps * 1e6 for k, v in cost.items()}
    finally:
        p.disconnect(cid)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=400)
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps: a whole number >= 1")
    ref, _ = run("JPV", args.steps)
    for order in ORDERS:
        got, cost = run(order, args.steps)
        same = [a == b for a, b in zip(ref, got, strict=True)]
        first = same.index(False) if not all(same) else None
        print(f"{order}: {sum(same)} of {len(same)} steps bitwise J-P-V's (first apart: "
              f"{first}); us per call " + ", ".join(f"{k} {v:.2f}" for k, v in cost.items()))
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
