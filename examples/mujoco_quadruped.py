"""The A1 quadruped of ``pybullet_data`` in MuJoCo, its toes on compliant ground.

MuJoCo loads the A1's URDF directly (its importer drops the visual meshes and fuses each toe
into its calf body); two edits make it a walking robot: a floating base (a ``floating`` joint
from a ``world`` link to the trunk, which MuJoCo's URDF importer turns into a free joint) and,
through ``MjSpec``, a floor plane and one torque motor per joint (|tau| <= 33.5 N m). MuJoCo
steps at its default 2 ms.

The four toe spheres (R = 2 cm) touch a rubber-like ground (E = 10 MPa, nu = 0.45; toes
E = 1 GPa, nu = 0.4) through a Hunt-Crossley law with Hertz's stiffness and regularised
Coulomb friction (mu = 0.8, v_eps = 1 cm/s); every other pair (a knee, the trunk) keeps
MuJoCo's contact. The toes are links of an articulated body, so each host step's contact
impulse is solved implicitly against MuJoCo's own update (``articulated="implicit"``). The
robot stands under a joint PD controller, then trots open loop (diagonal pairs, 2.5 Hz). The
same script runs with MuJoCo's native contact. Printed: summed foot normal force over the
weight in quiet stance, sinkage vs the static Hertz estimate (W / (4 k))^(2/3), falls, the
distance trotted, the real-time factor.

    python examples/mujoco_quadruped.py [--short] [--out DIR]

Checks (exit 1 if one fails): in quiet stance the summed foot force equals the weight within
1 % at every step of the stance's last 0.5 s and the sinkage is within 5 % of the static Hertz
estimate; no fall; the trot (full mode: 2 s stance and 3 s trot; short mode: 1.5 s and 0.5 s)
moves the robot forward.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import mujoco
import numpy as np
import pybullet_data

import mbplugin
from mbplugin.mujoco import MujocoContacts, geom

# the PyBullet example's robot set-up: materials, toe radius, stance, gait, PD gains, the fall
# test (examples/quadruped_foot_ground.py), so both hosts run the same robot and controller
sys.path.insert(0, str(Path(__file__).resolve().parent))
from quadruped_foot_ground import (
    E_GROUND,
    E_TOE,
    KD,
    KP,
    MAX_TORQUE,
    NU_GROUND,
    NU_TOE,
    STAND,
    TOE_R,
    falls,
    targets,
    toe_stiffness,
)

FRICTION = {"mu": 0.8, "v_eps": 1e-2}


def a1_model() -> mujoco.MjModel:
    """The A1 of ``pybullet_data`` as MuJoCo loads its URDF, with a floating base, a floor
    plane named ``floor`` and twelve torque motors; timestep 2 ms (MuJoCo's default)."""
    path = Path(pybullet_data.getDataPath()) / "a1" / "a1.urdf"
    urdf = path.read_text()
    base = ('<link name="world"/><joint name="floating_base" type="floating">'
            '<parent link="world"/><child link="trunk"/></joint>')
    urdf = urdf.replace('<link name="trunk">', base + '<link name="trunk">', 1)
    spec = mujoco.MjSpec.from_string(urdf)
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1])
    for j in spec.joints:
        if j.type == mujoco.mjtJoint.mjJNT_HINGE:
            spec.add_actuator(name=j.name, target=j.name,
                              trntype=mujoco.mjtTrn.mjTRN_JOINT, ctrllimited=True,
                              ctrlrange=[-MAX_TORQUE, MAX_TORQUE])
    m = spec.compile()
    m.opt.timestep = 0.002
    return m


def toes(m: mujoco.MjModel) -> list[int]:
    """The four toe spheres' geom ids (FR, FL, RR, RL)."""
    return [g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE]


def setup(ours: bool, **backend: object) -> tuple[mujoco.MjModel, mujoco.MjData,
                                                   MujocoContacts | None]:
    """The robot in its stance pose, toes 5 mm above the floor, and (``ours``) the backend
    managing the four toe-floor pairs."""
    m = a1_model()
    d = mujoco.MjData(m)
    hinge = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    d.qpos[hinge] = STAND
    mujoco.mj_forward(m, d)
    low = min(d.geom_xpos[g][2] - TOE_R for g in toes(m))
    d.qpos[2] += 0.005 - low
    mujoco.mj_forward(m, d)
    contacts = None
    if ours:
        ground = {"E": E_GROUND, "nu": NU_GROUND}
        toe = {"E": E_TOE, "nu": NU_TOE}
        contacts = MujocoContacts(
            m, d, manage=[("floor", geom(g)) for g in toes(m)],
            law={"name": "hunt_crossley", "cr": 0.3},
            materials={"floor": ground, **{geom(g): toe for g in toes(m)}},
            **{"friction": FRICTION, "rtol": 1e-6, **backend})
    return m, d, contacts


def run(ours: bool, t_stand: float, t_trot: float, **backend: object) -> dict[str, np.ndarray]:
    """Stand ``t_stand`` s then trot ``t_trot`` s; per-step records (foot forces, depths,
    base position and roll/pitch/yaw, wall time)."""
    m, d, contacts = setup(ours, **backend)
    dt = m.opt.timestep
    hinge_q = m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    hinge_v = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    feet = toes(m)
    n = round((t_stand + t_trot) / dt)
    rec = {k: np.zeros((n, 4)) for k in ("force", "depth")}
    rec["base"] = np.zeros((n, 3))
    rec["rpy"] = np.zeros((n, 3))
    force = np.zeros(6)
    wall = time.perf_counter()
    for i in range(n):
        tau = KP * (targets(i * dt, t_stand) - d.qpos[hinge_q]) - KD * d.qvel[hinge_v]
        d.ctrl[:] = np.clip(tau, -MAX_TORQUE, MAX_TORQUE)
        if contacts is not None:
            st = contacts.step()
            for (_, g), f, dl in zip(st.geoms, st.normal_force, st.delta, strict=True):
                k = feet.index(int(g))
                rec["force"][i, k], rec["depth"][i, k] = f, max(dl, 0.0)
        else:
            mujoco.mj_step(m, d)
            for c in range(d.ncon):
                con = d.contact[c]
                for k, g in enumerate(feet):
                    if g in (con.geom1, con.geom2):
                        mujoco.mj_contactForce(m, d, c, force)
                        rec["force"][i, k] += force[0]
                        rec["depth"][i, k] = max(rec["depth"][i, k], -con.dist)
        rec["base"][i] = d.qpos[0:3]
        w, x, y, z = d.qpos[3:7]
        rec["rpy"][i] = (np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)),
                         np.arcsin(np.clip(2 * (w * y - z * x), -1, 1)),
                         np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))
    rec["wall"] = np.array(time.perf_counter() - wall)
    rec["weight"] = np.array(float(m.body_subtreemass[1]) * 9.81)
    rec["dt"] = np.array(dt)
    return rec


def stance(rec: dict[str, np.ndarray], t_stand: float) -> tuple[np.ndarray, float]:
    """Summed foot force over the weight per step, and the mean sinkage (m), over the last
    0.5 s of the stance (quiet: the drop onto the toes has settled)."""
    dt = float(rec["dt"])
    quiet = slice(round((t_stand - 0.5) / dt), round(t_stand / dt))
    return rec["force"][quiet].sum(axis=1) / float(rec["weight"]), \
        float(rec["depth"][quiet].mean())


def fallen(rec: dict[str, np.ndarray]) -> bool:
    """True if the base went below 0.15 m or tilted beyond 0.8 rad (roll or pitch) at any
    step (the PyBullet example's ``falls``)."""
    return falls(rec["base"], rec["rpy"])[0] > 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/mujoco_quadruped", help="records go here")
    args = ap.parse_args(argv)
    t_stand, t_trot = (1.5, 0.5) if args.short else (2.0, 3.0)
    hertz = None
    ok = True
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, ours in (("native", False), ("mbplugin", True)):
        rec = run(ours, t_stand, t_trot)
        fsum, sink = stance(rec, t_stand)
        w = float(rec["weight"])
        hertz = (w / 4 / toe_stiffness()) ** (2 / 3)
        sim = t_stand + t_trot
        fwd = float(rec["base"][-1, 0] - rec["base"][int(t_stand / float(rec["dt"])), 0])
        print(f"{name:8s}: stance sum(F)/W = {fsum.mean():.4f} (min {fsum.min():.4f}, max "
              f"{fsum.max():.4f}); sinkage {sink * 1e3:.3f} mm (static Hertz "
              f"{hertz * 1e3:.3f} mm); trot {t_trot:g} s: forward {fwd:+.3f} m, "
              f"fallen {fallen(rec)}; real-time factor {sim / float(rec['wall']):.2f}")
        np.savez(out / f"{name}.npz", **rec)
        if ours:
            checks = {"sum(F)/W within 1 %": bool(np.all(np.abs(fsum - 1) < 0.01)),
                      "sinkage within 5 % of static Hertz": abs(sink / hertz - 1) < 0.05,
                      "no fall": not fallen(rec), "moves forward": fwd > 0.05}
            for what, passed in checks.items():
                if not passed:
                    print(f"FAILED: {what}", file=sys.stderr)
                    ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    with mbplugin.compile_notice(60):  # a first run compiles (~60 s on 2 cores)
        sys.exit(main())
