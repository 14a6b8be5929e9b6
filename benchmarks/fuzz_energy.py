"""Energy balance, step by step, of a generated robot (``tests/urdf_gen.py``) dropped on managed
ground in MuJoCo, as ``tests/urdf_fuzz_rig.py`` drops it (2 cm, joints held by 8 Hz servos,
Hunt-Crossley cr = 0.3 with the rig's k, friction mu = 0.8, every ground pair managed, 2 ms,
``implicitfast``): where the energy of a robot that still moves goes, and whether the managed
contacts put any in.

Per host step from (q0, v0) to (q1, v1), every term from MuJoCo's own quantities (nothing from
mbplugin's solve):

- ``total``: the change of kinetic + gravitational energy (``mj_energyPos/Vel``) + the held
  joints' servo springs kp q^2 / 2 + the managed contacts' elastic energy K delta^2.5 / 2.5 at
  the overlaps MuJoCo finds for those pairs (a copy of the model as loaded);
- ``contacts``: the managed contacts' net work, i.e. the work of their generalised impulse
  g = A (v1 - v0) - dt (qfrc_smooth(q0, v0) + qfrc_constraint) on the step's mean velocity
  (A = M(q0) + dt Kv: ``implicitfast`` takes the servos' damping at v1) plus the change of
  their elastic energy: positive means the contact layer put energy in;
- ``native``: the work of MuJoCo's own constraint forces (joint limits), dt qfrc_constraint . v;
- ``damping``: the servos' damping, -dt kv v1 . v;
- ``rest``: what is left (MuJoCo's semi-implicit Euler on gravity, Coriolis forces and the
  servo springs).

Prints, over the whole run and over the rig's rest window (the last 0.25 s), the sums in units
of M g h (h = 2 cm), the number of steps with MuJoCo constraints, and the sum and largest of
the steps where the contacts' net work is positive. No timing.

    PYTHONPATH=$PWD python benchmarks/fuzz_energy.py --seeds 9,10,13,16
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import urdf_fuzz_rig as fr
from fuzz_urdf import _seeds


def balance(seed: int, manage: str = "pairs", seconds: float = fr.SECONDS) -> dict[str, np.ndarray]:
    """Seed ``seed``'s robot on MuJoCo: per step (rows) the terms of the module docstring in J
    (columns total, contacts, native, damping, rest) and whether a MuJoCo constraint acted;
    ``scale`` M g h (J)."""
    import mujoco

    from mbplugin.mujoco import MujocoContacts, geom

    with tempfile.TemporaryDirectory() as tmp:
        made = fr.generate(Path(tmp), seed)
        m = fr.mujoco_model(made)
    d = mujoco.MjData(m)
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    robot = [g for g in range(m.ngeom) if m.geom_bodyid[g] != 0]
    d.qpos[2] = 1.0
    mujoco.mj_forward(m, d)
    low = min(float(mujoco.mj_geomDistance(m, d, floor, g, 10.0, None)) for g in robot)
    d.qpos[2] += fr.DROP - low
    mujoco.mj_forward(m, d)
    scale = float(m.body_subtreemass[1]) * fr.G * fr.DROP
    collide = copy.deepcopy(m)  # the managed pairs collide here
    pairs = [("floor", geom(g)) for g in robot] if manage == "pairs" else ["floor"]
    contacts = MujocoContacts(m, d, manage=pairs, law=fr.LAW, friction=fr.FRICTION, rtol=1e-6)
    dt = float(m.opt.timestep)
    kp = np.asarray(m.actuator_gainprm[:, 0], dtype=float)
    kv = -np.asarray(m.actuator_biasprm[:, 2], dtype=float)
    dofs = np.asarray(m.jnt_dofadr[m.actuator_trnid[:, 0]], dtype=np.int64)
    probe = mujoco.MjData(collide)

    def at(q: np.ndarray, v: np.ndarray) -> tuple[float, float, float, np.ndarray, np.ndarray]:
        """(mechanical energy, servo springs, contacts' elastic energy (J), M (kg, kg m^2),
        qfrc_smooth (N, N m)) at (q, v)."""
        probe.qpos[:], probe.qvel[:] = q, v
        mujoco.mj_forward(collide, probe)
        dist = np.array([probe.contact[j].dist for j in range(probe.ncon)
                         if floor in probe.contact[j].geom])
        elastic = float(np.sum(fr.K * np.clip(-dist, 0.0, None) ** 2.5) / 2.5)
        servo = 0.5 * float(np.sum(kp * np.asarray(probe.actuator_length) ** 2))
        mass = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(collide, probe, mass)
        smooth = (probe.qfrc_passive - probe.qfrc_bias + probe.qfrc_applied
                  + probe.qfrc_actuator)
        return float(probe.energy.sum()), servo, elastic, mass, smooth.copy()

    rows = []
    try:
        for _ in range(round(seconds / dt)):
            d.ctrl[:] = 0.0
            v0 = d.qvel.copy()
            e0, s0, el0, mass, smooth = at(d.qpos, v0)
            contacts.step()
            v1 = d.qvel.copy()
            native = d.qfrc_constraint.copy()
            e1, s1, el1, _, _ = at(d.qpos, v1)
            a = mass
            a[dofs, dofs] += dt * kv
            g = a @ (v1 - v0) - dt * (smooth + native)  # the managed contacts' impulse
            vm = 0.5 * (v0 + v1)
            rows.append((e1 + s1 + el1 - e0 - s0 - el0, float(g @ vm) + el1 - el0,
                         dt * float(native @ vm), -dt * float(np.sum(kv * v1[dofs] * vm[dofs])),
                         float(d.nefc > 0)))
    finally:
        contacts.release()
    r = np.array(rows)
    out = np.empty((len(r), 6))
    out[:, :4] = r[:, :4]
    out[:, 4] = r[:, 0] - r[:, 1] - r[:, 2] - r[:, 3]
    out[:, 5] = r[:, 4]
    return {"terms": out, "scale": np.array(scale), "dt": np.array(dt)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="9,10,13,16", help="e.g. 9,10,13,16 or 0-29")
    ap.add_argument("--manage", default="pairs", choices=("pairs", "whole"))
    ap.add_argument("--seconds", type=float, default=fr.SECONDS, help="simulated time (s)")
    args = ap.parse_args(argv)
    for s in _seeds(args.seeds):
        b = balance(s, args.manage, args.seconds)
        t, sc = b["terms"], float(b["scale"])
        nw = round(fr.WINDOW / float(b["dt"]))
        for name, part in (("run", t), ("window", t[-nw:])):
            x = part[:, :5].sum(axis=0) / sc
            print(f"seed {s:3d} {name:6s} total {x[0]:+.4f} contacts {x[1]:+.4f} native "
                  f"{x[2]:+.4f} damping {x[3]:+.4f} rest {x[4]:+.4f} (M g h); MuJoCo "
                  f"constraints in {int(part[:, 5].sum())} of {len(part)} steps")
        c = t[:, 1] / sc
        pos = c[c > 0]
        print(f"seed {s:3d} contacts' net work > 0 in {len(pos)} of {len(c)} steps: sum "
              f"{pos.sum():+.4f}, largest {c.max():+.5f} M g h", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
