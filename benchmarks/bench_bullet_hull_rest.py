"""Benchmark: boxes and a convex hull at rest on a managed plane in PyBullet (issue 18, the
resting box's cost).

Three scenes at 1/240 s, g = 9.81, every pair with the plane managed (``manage=[plane]``),
Hunt-Crossley k = 1e7 N/m^1.5, cr = 0.5, friction 0.5 (PyBullet's lateral_friction, the
default): ``box1`` one 1 kg box 0.2 x 0.2 x 0.1 m; ``box10`` ten such boxes 0.5 m apart;
``hull1`` one 1 kg cube of side 0.1 m
given as a trimesh convex mesh (``GEOM_MESH`` vertices: PyBullet's convex hull). Each scene
settles ``--settle`` steps, then the CPU per host step (``time.process_time``) over ``--steps``
steps is measured for native ``stepSimulation`` and for the backend in the same process, with
the rounds interleaved (native, ours, native, ours, ...); printed: the best round of each and
their ratio, the managed contacts at the last step and their largest overlap against the
static Hertz overlap (m g / (n k))^(2/3) of the n corners carrying the body.

    python benchmarks/bench_bullet_hull_rest.py [--steps 240] [--rounds 3]
        [--scenes box1,box10,hull1] [--calls]

``--calls``: also the Python-level calls per host step of the backend at rest (a profile
hook, ``sys.setprofile``, counting ``call`` events over ``--steps`` steps after settling;
compiled dispatchers and NumPy's C functions are not Python calls), which does not depend on
the machine's load.

For a before/after comparison run it with ``PYTHONPATH`` set to each tree in turn and state
the load (printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
import pybullet as p

K, CR, MU, G, DT = 1e7, 0.5, 0.5, 9.81, 1 / 240
LAW = {"name": "hunt_crossley", "cr": CR, "k": K}


def world(scene: str) -> tuple[int, int, list[int], int]:
    """A PyBullet world of ``scene`` (module docstring): client, plane, bodies, corners each."""
    import pybullet_data
    import trimesh

    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    p.setTimeStep(DT, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    if scene == "hull1":
        v = trimesh.creation.box(extents=[0.1, 0.1, 0.1]).vertices
        col = p.createCollisionShape(p.GEOM_MESH, vertices=v.tolist(), physicsClientId=cid)
        half, n = 0.05, 1
    else:
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.05],
                                     physicsClientId=cid)
        half, n = 0.05, (10 if scene == "box10" else 1)
    bodies = [p.createMultiBody(1.0, col, basePosition=[0.5 * i, 0, half],
                                physicsClientId=cid) for i in range(n)]
    for b in [plane, *bodies]:
        p.changeDynamics(b, -1, lateralFriction=MU, physicsClientId=cid)
    return cid, plane, bodies, 4


def run(scene: str, managed: bool, settle: int, steps: int) -> dict[str, float]:
    """CPU per host step of one run of ``scene`` after ``settle`` steps (module docstring)."""
    cid, plane, _, corners = world(scene)
    step = lambda: p.stepSimulation(physicsClientId=cid)  # noqa: E731
    if managed:
        from mbplugin.bullet import BulletContacts

        bk = BulletContacts(cid, manage=[plane], law=LAW)
        step = bk.step
    try:
        for _ in range(settle):
            info = step()
        t = time.process_time()
        for _ in range(steps):
            info = step()
        out = {"cpu": (time.process_time() - t) / steps}
        if managed:
            ds = (1.0 * G / corners / K) ** (2 / 3)
            d = np.asarray(info.delta)
            out["contacts"] = float(info.contacts)
            out["err"] = float(np.max(np.abs(d[d > 0] / ds - 1.0))) if np.any(d > 0) else 1.0
    finally:
        p.disconnect(physicsClientId=cid)
    return out


def python_calls(scene: str, settle: int, steps: int) -> float:
    """Python-level calls per host step of the backend on ``scene`` at rest (``--calls``)."""
    from mbplugin.bullet import BulletContacts

    cid, plane, _, _ = world(scene)
    try:
        bk = BulletContacts(cid, manage=[plane], law=LAW)
        for _ in range(settle):
            bk.step()
        count = [0]

        def hook(frame: object, event: str, arg: object) -> None:
            if event == "call":
                count[0] += 1

        sys.setprofile(hook)
        try:
            for _ in range(steps):
                bk.step()
        finally:
            sys.setprofile(None)
        return count[0] / steps
    finally:
        p.disconnect(physicsClientId=cid)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--settle", type=int, default=240)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scenes", default="box1,box10,hull1")
    ap.add_argument("--calls", action="store_true", help="Python calls per host step")
    a = ap.parse_args()
    scenes = a.scenes.split(",")
    for s in scenes:
        if s not in ("box1", "box10", "hull1"):
            print(f"error: --scenes: {s!r} is not one of box1, box10, hull1")
            sys.exit(2)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, tree "
          f"{os.environ.get('PYTHONPATH', '(installed)')}, load {os.getloadavg()}")
    run("box1", True, 5, 5)  # warm-up (compiled kernels loaded or compiled)
    for s in scenes:
        nat, ours = [], []
        for _ in range(a.rounds):
            nat.append(run(s, False, a.settle, a.steps)["cpu"])
            r = run(s, True, a.settle, a.steps)
            ours.append(r["cpu"])
        print(f"{s:6s} native {1e6 * min(nat):7.1f} us  ours {1e6 * min(ours):7.1f} us  "
              f"({min(ours) / min(nat):5.1f}x)  contacts {r['contacts']:.0f}, overlap off "
              f"static Hertz max {r['err']:.1e}", flush=True)
        if a.calls:
            print(f"{s:6s} Python calls per host step {python_calls(s, a.settle, a.steps):.0f}",
                  flush=True)
    print(f"# load {os.getloadavg()}")


if __name__ == "__main__":
    main()
