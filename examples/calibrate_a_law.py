"""Calibrating a law, then using it in PyBullet: the asked c_r, exactly, at the host step.

A steel ball (R = 1 cm, 32.7 g) on a steel floor (Hertz k of E = 2e11 Pa, nu = 0.3), dropped from
10 cm, should rebound with c_r = 0.6. Hunt-Crossley's damping from its linearised relation
overshoots badly at that c_r; ``mbplugin.calibrate`` finds the law's ``cr`` input that makes the
exact impact analyser return 0.6 at the impact speed sqrt(2 g h) with the ball's weight pressing.
The calibrated law then runs in PyBullet at its default 1/240 s step through ``BulletContacts``.
Checks: the calibrated analyser c_r is 0.6 to 1e-6, and the first PyBullet bounce is 0.6 within
1e-3 (its impact speed differs from sqrt(2 g h) by PyBullet's own free flight).

    python examples/calibrate_a_law.py [--short] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import sys

import pybullet as p
import pybullet_data

import mbplugin
from mbplugin import calibrate
from mbplugin.bullet import BulletContacts
from mbplugin.contact import effective_modulus
from mbplugin.impact import impact
from mbplugin.laws import make_law

R, H, G, TARGET = 0.01, 0.1, 9.81, 0.6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/calibrate_a_law", help="output folder (unused)")
    ap.parse_args(argv)
    m = 7800 * 4 / 3 * math.pi * R**3
    k = 4 / 3 * float(effective_modulus(2e11, 0.3, 2e11, 0.3)) * math.sqrt(R)
    v0 = math.sqrt(2 * G * H)
    naive = make_law("hunt_crossley", k=k, cr=TARGET)
    got = impact(naive, m, v0, press=m * G).cr_out
    cal = calibrate(naive, target_cr=TARGET, v0=v0, mass=m, press=m * G)
    exact = impact(cal.law, m, v0, press=m * G).cr_out
    print(f"hunt_crossley cr = {TARGET}: analyser c_r = {got:.4f} at {v0:.3f} m/s")
    print(f"calibrated {cal.param} = {cal.value:.6f}: analyser c_r = {exact:.8f}")

    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    ball = p.createMultiBody(m, shape, basePosition=[0, 0, H + R], physicsClientId=cid)
    p.changeDynamics(ball, -1, linearDamping=0, physicsClientId=cid)
    contacts = BulletContacts(cid, manage=[plane], law=cal.law)
    while not len(contacts.bounces()) and contacts.t < 0.5:
        contacts.step()
    p.disconnect(physicsClientId=cid)
    first = contacts.bounces()[0]
    print(f"PyBullet (1/240 s): first bounce at {first['v_in']:.3f} m/s, c_r = "
          f"{first['cr']:.6f}")
    if abs(exact - TARGET) > 1e-6 or abs(first["cr"] - TARGET) > 1e-3:
        print("FAILED: calibrated c_r not reproduced", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    with mbplugin.compile_notice(60):  # a first run compiles (~60 s on 2 cores)
        sys.exit(main())
