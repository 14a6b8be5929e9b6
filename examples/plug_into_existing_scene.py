"""An ordinary PyBullet script switched to mbplugin's contact laws by three added lines.

Objects from ``pybullet_data`` (small spheres) are dropped on ``plane.urdf``, once with
PyBullet's native contact and once with the lines marked ``# mbplugin`` added: a Hunt-Crossley
law with Hertz's stiffness of steel manages every pair involving the ground. The script prints
the bounce heights of both runs and checks that, with the law, every bounce's coefficient of
restitution is the one the exact impact analyser gives for that law and impact speed (within
1e-3), independent of PyBullet's 1/240 s step.

    python examples/plug_into_existing_scene.py [--short] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pybullet as p
import pybullet_data

import mbplugin

LAW = {"name": "hunt_crossley", "cr": 0.8}
STEEL = {"E": 2e11, "nu": 0.3}


def simulate(use_mbplugin: bool, duration: float) -> tuple[list[np.ndarray], object]:
    """The user's script; ``use_mbplugin`` adds the three marked lines."""
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -9.81, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    balls = [p.loadURDF("sphere_small.urdf", [0.2 * i, 0, 0.1 + 0.05 * i], physicsClientId=cid)
             for i in range(3)]
    for b in balls:
        p.changeDynamics(b, -1, restitution=0.8, linearDamping=0, physicsClientId=cid)
    p.changeDynamics(plane, -1, restitution=0.8, physicsClientId=cid)
    contacts = None
    if use_mbplugin:
        from mbplugin.bullet import BulletContacts  # mbplugin (1)

        contacts = BulletContacts(cid, manage=[plane], law=LAW, material=STEEL)  # mbplugin (2)
    heights = [[] for _ in balls]
    for _ in range(int(duration * 240)):
        if contacts is not None:
            contacts.step()  # mbplugin (3): instead of p.stepSimulation()
        else:
            p.stepSimulation(physicsClientId=cid)
        for h, b in zip(heights, balls, strict=True):
            h.append(p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2])
    mass = p.getDynamicsInfo(balls[0], -1, physicsClientId=cid)[0]
    p.disconnect(physicsClientId=cid)
    return [np.array(h) for h in heights], (contacts, mass)


def apexes(z: np.ndarray) -> np.ndarray:
    """Heights (m) of the local maxima of a trajectory."""
    i = np.flatnonzero((z[1:-1] > z[:-2]) & (z[1:-1] >= z[2:])) + 1
    return z[i]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/plug_into_existing_scene", help="output folder")
    args = ap.parse_args(argv)
    duration = 0.8 if args.short else 3.0
    from mbplugin.contact import effective_modulus
    from mbplugin.laws import make_law

    native, _ = simulate(False, duration)
    ours, (contacts, mass) = simulate(True, duration)
    k = 4 / 3 * float(effective_modulus(STEEL["E"], STEEL["nu"])) * np.sqrt(0.03)
    law = make_law(LAW["name"], k=k, cr=LAW["cr"])
    return report(native[0], ours[0], contacts.bounces(), law, mass,
                  "native PyBullet (restitution 0.8)", Path(args.out))


def report(native: np.ndarray, ours: np.ndarray, rows: np.ndarray, law: object, mass: float,
           native_label: str, out: Path) -> int:
    """Print both runs' bounce apexes (m) and the law's largest |c_r - the exact impact
    analyser's| over the bounces, save the heights; 1 if that is above 1e-3 (or no bounce)."""
    from mbplugin.impact.bounces import cr_errors

    print("bounce apex heights of the first ball (m):")
    print(f"  {native_label + ':':36s}", np.round(apexes(native)[:5], 4))
    print(f"  {'mbplugin hunt_crossley cr = 0.8:':36s}", np.round(apexes(ours)[:5], 4))
    worst = float(cr_errors(rows, law, mass).max(initial=0.0))
    print(f"{len(rows)} bounces with the law; largest |c_r - impact analyser| = {worst:.2e}")
    out.mkdir(parents=True, exist_ok=True)
    np.savetxt(out / "heights.csv", np.column_stack([native, ours]), delimiter=",",
               header="native_z,mbplugin_z", comments="")
    if worst > 1e-3 or not len(rows):
        print("FAILED: c_r differs from the impact analyser", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    with mbplugin.compile_notice(65):  # a first run compiles (~65 s on 2 cores)
        sys.exit(main())
