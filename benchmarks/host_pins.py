"""Refactoring guard of the host backends: record reference runs, compare a later tree's.

Not a physics test (those are in tests/): a before/after pin of the PyBullet and MuJoCo
backends' outputs, so that a refactor of their code can show its results are bit for bit the
same (or how far off they are). Runs (each in a fresh client / model):

* ``steel``: a steel ball (R = 12.7 mm, 66 g, E = 200 GPa) dropped 0.1 m onto PyBullet's
  plane at 1/240 s, Hunt-Crossley c_r = 0.8 with Hertz's k, 1.5 s: per-step normal force,
  overlap, ball height and velocity as PyBullet has them (no sync); the bounces;
* ``pile``: the N = 1000 pile of ``bench_bullet_pile.py`` with the ground managed, 60 steps:
  per-step forces and overlaps (by key) and the final positions; ``pile_all``: N = 100 with
  every pair managed (one large group), 60 steps;
* ``a1``: the A1 of ``examples/quadruped_foot_ground.py``, 1 s stance + 1 s trot at 1/240 s:
  the example's records (toe forces, overlaps, slip, base pose);
* ``mujoco_drop``: the steel ball at MuJoCo's 2 ms step, 1 s: per-step forces, qpos, bounces;
  ``mujoco_a1``: ``examples/mujoco_quadruped.py``'s 1 s stance + 1 s trot records.

    python benchmarks/host_pins.py --record /tmp/pins_before.npz
    python benchmarks/host_pins.py --check /tmp/pins_before.npz      # after the change
    python benchmarks/host_pins.py --time 3 --cases steel pile a1 mujoco_drop   # CPU time

``--time N``: each case's CPU time (``time.process_time``), the minimum of N runs after one
warm-up run, for a before/after comparison of a refactor's cost (run the two trees
alternately, on the same machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STEEL = {"E": 2e11, "nu": 0.3}


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bounces(rows: np.ndarray) -> np.ndarray:
    return np.array([[r["t_in"], r["v_in"], r["t_out"], r["v_out"], r["cr"]] for r in rows])


def steel() -> dict[str, np.ndarray]:
    import pybullet as p
    import pybullet_data

    from mbplugin.bullet import BulletContacts

    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, -9.81, physicsClientId=cid)
        p.setTimeStep(1 / 240, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        r = 0.0127
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=cid)
        ball = p.createMultiBody(0.066, shape, basePosition=[0, 0, r + 0.1],
                                 physicsClientId=cid)
        p.changeDynamics(ball, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        contacts = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.8},
                                  material=STEEL)
        n = 360
        out = {k: np.zeros(n) for k in ("force", "delta", "z", "vz")}
        for i in range(n):
            info = contacts.step()
            out["force"][i] = info.normal_force.sum() if info.contacts else 0.0
            out["delta"][i] = info.delta.max() if info.contacts else np.nan
            out["z"][i] = p.getBasePositionAndOrientation(ball, physicsClientId=cid)[0][2]
            out["vz"][i] = p.getBaseVelocity(ball, physicsClientId=cid)[0][2]
        out["bounces"] = _bounces(contacts.bounces())
        return out
    finally:
        p.disconnect(physicsClientId=cid)


def pile(n: int, manage: str) -> dict[str, np.ndarray]:
    import pybullet as p

    from mbplugin.bullet import BulletContacts

    bp = _module(HERE / "bench_bullet_pile.py", "bench_bullet_pile")
    cid, plane, balls = bp.world(n)
    try:
        items = [plane] if manage == "ground" else [plane, *balls]
        contacts = BulletContacts(cid, manage=items, law=bp.LAW)
        keys, force, delta = [], [], []
        for _ in range(60):
            info = contacts.step()
            keys.append(info.keys.copy())
            force.append(info.normal_force.copy())
            delta.append(info.delta.copy())
        contacts.sync()
        pos = np.array([p.getBasePositionAndOrientation(b, physicsClientId=cid)[0]
                        for b in balls])
        vel = np.array([p.getBaseVelocity(b, physicsClientId=cid)[0] for b in balls])
        return {"keys": np.concatenate(keys), "force": np.concatenate(force),
                "delta": np.concatenate(delta), "count": np.array([len(k) for k in keys]),
                "pos": pos, "vel": vel}
    finally:
        p.disconnect(physicsClientId=cid)


def a1() -> dict[str, np.ndarray]:
    q = _module(HERE / "quadruped_example.py", "quadruped_example").load()
    rec = q.run(True, 1.0, 1.0, 1 / 240)
    rec.pop("wall")
    return rec


def mujoco_drop() -> dict[str, np.ndarray]:
    import mujoco

    from mbplugin.mujoco import MujocoContacts

    r = 0.0127
    xml = (f'<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1"/>'
           f'<body name="ball" pos="0 0 {r + 0.1}"><freejoint/>'
           f'<geom type="sphere" size="{r}" mass="0.066"/></body></worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    contacts = MujocoContacts(m, d, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.8}, material=STEEL)
    n = 500
    force, qpos = np.zeros(n), np.zeros((n, m.nq))
    for i in range(n):
        info = contacts.step()
        force[i] = info.normal_force.sum() if info.contacts else 0.0
        qpos[i] = d.qpos
    return {"force": force, "qpos": qpos, "bounces": _bounces(contacts.bounces())}


def mujoco_a1() -> dict[str, np.ndarray]:
    q = _module(HERE.parent / "examples" / "mujoco_quadruped.py", "mujoco_quadruped")
    rec = q.run(True, 1.0, 1.0)
    return {k: np.asarray(v) for k, v in rec.items() if k != "wall"}


CASES = {"steel": steel, "pile": lambda: pile(1000, "ground"),
         "pile_all": lambda: pile(100, "all"), "a1": a1, "mujoco_drop": mujoco_drop,
         "mujoco_a1": mujoco_a1}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", help="write the runs here (npz)")
    ap.add_argument("--check", help="compare with these recorded runs (npz)")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--time", type=int, default=0, metavar="N",
                    help="print each case's CPU time, the minimum of N runs (1-20)")
    args = ap.parse_args()
    if args.time:
        if not 1 <= args.time <= 20:
            ap.error(f"--time {args.time} is outside its allowed range 1..20")
        for name in args.cases:
            CASES[name]()  # warm-up (compiled kernels loaded, caches filled)
            runs = []
            for _ in range(args.time):
                t0 = time.process_time()
                CASES[name]()
                runs.append(time.process_time() - t0)
            print(f"{name}: CPU {min(runs):.3f} s (min of {args.time}; runs "
                  f"{', '.join(f'{x:.3f}' for x in runs)})", flush=True)
        return 0
    if not (args.record or args.check):
        ap.error("give --record FILE or --check FILE (or --time N)")
    flat: dict[str, np.ndarray] = {}
    for name in args.cases:
        for key, val in CASES[name]().items():
            flat[f"{name}.{key}"] = np.asarray(val)
        print(f"{name}: done", flush=True)
    if args.record:
        np.savez(args.record, **flat)
        print(f"recorded {len(flat)} arrays in {args.record}")
    if args.check:
        ref = np.load(args.check)
        worst = 0.0
        for key, val in flat.items():
            old = ref[key]
            if old.shape == val.shape and np.array_equal(old, val, equal_nan=True):
                print(f"{key}: bitwise identical")
                continue
            if old.shape != val.shape:
                print(f"{key}: shape {old.shape} -> {val.shape}")
                worst = np.inf
                continue
            diff = float(np.nanmax(np.abs(old - val)))
            scale = float(np.nanmax(np.abs(old))) or 1.0
            worst = max(worst, diff / scale)
            print(f"{key}: max |diff| {diff:.3g} (relative to its largest {diff / scale:.3g})")
        print(f"largest relative difference: {worst:.3g}")
        return 0 if worst <= 1e-12 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
