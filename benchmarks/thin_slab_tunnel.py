"""A fast ball onto a thin slab at the hosts' own steps: does it pass through? (issue 21)

A 1 kg ball (r = 5 cm) starts 30 cm above a static 1 cm slab (1 m across) at ``--speeds`` m/s,
no gravity, no damping, Hertz's law with steel (E = 2e11 Pa) and a soft material (1e7 Pa), in
PyBullet at 1/240 s and MuJoCo at 2 ms, for 1 s. Printed per case: the largest end-of-step
overlap the backend reports (``contacts.last.delta``), the slab's allowed overlap (half its
width, 5 mm), the ball's final height and velocity from the host, whether it went through (its
final height below the slab) and how many PassThroughWarnings the run gave. No timing.

    python benchmarks/thin_slab_tunnel.py [--speeds 1,10,50,150]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

T, R = 0.01, 0.05
MATERIALS = {"steel": {"E": 2e11, "nu": 0.3}, "soft": {"E": 1e7, "nu": 0.3}}


def _bullet(v: float, mat: dict) -> tuple[float, float, float]:
    import pybullet as p

    from mbplugin.bullet import BulletContacts

    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, 0, physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.5, 0.5, T / 2],
                                     physicsClientId=cid)
        slab = p.createMultiBody(0, col, physicsClientId=cid)
        ball = p.createMultiBody(1.0, p.createCollisionShape(p.GEOM_SPHERE, radius=R,
                                                             physicsClientId=cid),
                                 basePosition=[0, 0, T / 2 + R + 0.3], physicsClientId=cid)
        p.changeDynamics(ball, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        p.resetBaseVelocity(ball, [0, 0, -v], physicsClientId=cid)
        bc = BulletContacts(cid, manage=[(ball, slab)], law="hertz", material=mat)
        dmax = 0.0
        for _ in range(240):
            bc.step()
            if bc.last.delta is not None and len(bc.last.delta):
                dmax = max(dmax, float(np.max(bc.last.delta)))
        bc.sync()
        z = p.getBasePositionAndOrientation(ball, physicsClientId=cid)[0][2]
        return dmax, z, p.getBaseVelocity(ball, physicsClientId=cid)[0][2]
    finally:
        p.disconnect(physicsClientId=cid)


def _mujoco(v: float, mat: dict) -> tuple[float, float, float]:
    import mujoco

    from mbplugin.mujoco import MujocoContacts

    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><option gravity="0 0 0"/><worldbody><geom name="slab" type="box" '
        f'size="0.5 0.5 {T / 2}"/><body name="ball" pos="0 0 {T / 2 + R + 0.3}"><freejoint/>'
        f'<geom type="sphere" size="{R}" mass="1"/></body></worldbody></mujoco>')
    d = mujoco.MjData(m)
    d.qvel[2] = -v
    mujoco.mj_forward(m, d)
    mc = MujocoContacts(m, d, manage=["slab"], law="hertz", material=mat)
    dmax = 0.0
    for _ in range(500):
        mc.step()
        if mc.last.delta is not None and len(mc.last.delta):
            dmax = max(dmax, float(np.max(mc.last.delta)))
    return dmax, float(d.qpos[2]), float(d.qvel[2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--speeds", default="1,10,50,150")
    args = ap.parse_args()
    from mbplugin.contact.sizes import PassThroughWarning

    for host, fn in (("pybullet", _bullet), ("mujoco", _mujoco)):
        for name, mat in MATERIALS.items():
            for v in (float(x) for x in args.speeds.split(",")):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    dmax, z, vz = fn(v, mat)
                n = sum(issubclass(w.category, PassThroughWarning) for w in caught)
                print(f"{host:8s} {name:5s} v = {v:5.0f} m/s: end overlap max {dmax * 1e3:7.2f} "
                      f"mm (allowed {T / 2 * 1e3:.0f} mm), final z {z:+8.3f} m, vz {vz:+7.2f} "
                      f"m/s, through: {z < -T / 2 - R}, warnings: {n}")


if __name__ == "__main__":
    main()
