"""Legged robots standing, dropping and walking in MuJoCo, with the backend's feet or MuJoCo's
own contact: the rig of tests/test_mujoco_robots.py and benchmarks/robots_matrix_mujoco.py.

The robots are those of the PyBullet matrix (:data:`robot_rig.ROBOTS`): the A1, Laikago,
Aliengo and Mini Cheetah of ``pybullet_data`` and the robots :mod:`robot_urdf` writes, each
loaded by MuJoCo's own URDF importer (:func:`model`), as ``examples/mujoco_quadruped.py``
loads the A1: a ``floating`` joint from a ``world`` link to the root link (a free joint in
MuJoCo), a floor plane named ``floor`` and one torque motor per hinge; MuJoCo's default 2 ms
step. MuJoCo's importer fuses links on fixed joints into their parents (``fusestatic``: every
generated robot's foot link becomes a sphere of its calf, as PyBullet's
``URDF_MERGE_FIXED_LINKS`` does for the hexapod) and drops visual geoms. The robot's stance,
PD gains and gait are the PyBullet rig's (:func:`robot_rig.gait_targets`).

:func:`run` records per host step what the user sees in MuJoCo: every foot sphere's overlap
with the floor from its geom's position (``geom_xpos``: R - z, the floor at z = 0), the
backend's normal force per foot, the base's position and roll / pitch; and the lean tree
path's counters. Nothing of mbplugin computes an expected value here.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mujoco
import numpy as np
import pybullet_data
import robot_rig as rr

from mbplugin.mujoco import MujocoContacts, geom

#: the robots (the PyBullet matrix's), their ground and toes (rubber-like ground, hard toes)
ROBOTS = rr.ROBOTS
RUBBER = rr.RUBBER
FRICTION = rr.FRICTION
DT = 0.002  # MuJoCo's default step (s)
#: the toes start this far (m) above the floor in the standing pose
CLEARANCE = 0.005


@dataclass
class Robot:
    """A robot loaded into MuJoCo: the model, its hinges' qpos and dof addresses, their
    standing targets (MuJoCo's joint order), the hips' and knees' indices among them, the foot
    sphere geoms (a sphere geom of the robot: every robot's feet are its only spheres) and
    their radii (m), the weight (N: the root's subtree mass times g)."""

    m: Any
    qadr: np.ndarray
    vadr: np.ndarray
    targets: np.ndarray
    hips: list[int]
    knees: list[int]
    feet: list[int]
    radius: np.ndarray
    weight: float


def _urdf(spec: rr.Spec, directory: Path) -> tuple[Path, dict[str, float] | None, int]:
    """The URDF file of ``spec``, the standing targets by joint name (generated robots; None:
    ``spec.pose`` per leg) and the joints per leg."""
    if spec.urdf is not None:
        return Path(pybullet_data.getDataPath()) / spec.urdf, None, 3
    made = spec.make(directory)
    return made.path, dict(zip(made.names, made.targets, strict=True)), made.joints_per_leg


def model(spec: rr.Spec, directory: Path) -> Robot:
    """``spec``'s robot as MuJoCo's URDF importer loads it (module docstring); meshes from the
    URDF's folder; ``balanceinertia`` (the Mini Cheetah's thighs break the triangle inequality
    A + B >= C that MuJoCo's compiler checks; PyBullet loads them as they are)."""
    path, named, per = _urdf(spec, directory)
    urdf = path.read_text()
    links = re.findall(r'<link\s+name="([^"]+)"', urdf)
    children = set(re.findall(r'<child\s+link="([^"]+)"', urdf))
    root = next(x for x in links if x not in children)
    base = ('<link name="world"/><joint name="floating_base" type="floating">'
            f'<parent link="world"/><child link="{root}"/></joint>')
    urdf = urdf.replace(f'<link name="{root}"', base + f'<link name="{root}"', 1)
    ext = (f'<mujoco><compiler meshdir="{path.parent}" balanceinertia="true" '
           'discardvisual="true"/></mujoco>')
    urdf = re.sub(r"(<robot[^>]*>)", lambda x: x.group(1) + ext, urdf, count=1)
    mspec = mujoco.MjSpec.from_string(urdf)
    mspec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1])
    hinges = [j for j in mspec.joints if j.type == mujoco.mjtJoint.mjJNT_HINGE]
    for j in hinges:
        mspec.add_actuator(name=j.name, target=j.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    m = mspec.compile()
    m.opt.timestep = DT
    # no self-collision (PyBullet's loadURDF default, which the PyBullet rig keeps): the robot's
    # geoms collide with the floor only
    robot = m.geom_bodyid != 0
    m.geom_contype[robot], m.geom_conaffinity[robot] = 1, 0
    hinge = np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(j)) for j in hinge]
    if named is None:
        targets = np.array(list(spec.pose) * (len(hinge) // per))
    else:
        targets = np.array([named[n] for n in names])
    feet = [g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE]
    return Robot(m, m.jnt_qposadr[hinge], m.jnt_dofadr[hinge], targets,
                 list(range(per - 2, len(hinge), per)), list(range(per - 1, len(hinge), per)),
                 feet, np.array([m.geom_size[g][0] for g in feet]),
                 float(m.body_subtreemass[1]) * rr.G)


def setup(r: Robot, ours: bool, lift: float = 0.0,
          materials: tuple[dict[str, float], dict[str, float]] = RUBBER,
          **backend: Any) -> tuple[Any, MujocoContacts | None, float]:
    """A fresh ``MjData`` of ``r`` in its standing pose, the lowest toe ``CLEARANCE + lift``
    above the floor, and (``ours``) the backend managing every foot-floor pair (Hunt-Crossley
    cr = 0.3, Hertz's k from ``materials`` (ground, toes), regularised friction). Returns
    (data, contacts or None, the base's standing height: toes just on the floor, m)."""
    m = r.m
    d = mujoco.MjData(m)
    d.qpos[r.qadr] = r.targets
    mujoco.mj_forward(m, d)
    low = min(float(d.geom_xpos[g][2]) - float(m.geom_size[g][0]) for g in r.feet)
    height = float(d.qpos[2]) - low
    d.qpos[2] = height + CLEARANCE + lift
    mujoco.mj_forward(m, d)
    contacts = None
    if ours:
        ground, toe = materials
        contacts = MujocoContacts(
            m, d, manage=[("floor", geom(g)) for g in r.feet],
            law={"name": "hunt_crossley", "cr": 0.3},
            materials={"floor": ground, **{geom(g): toe for g in r.feet}},
            **{"friction": FRICTION, "rtol": 1e-6, **backend})
    return d, contacts, height


def run(spec: rr.Spec, r: Robot, seconds: float, *, ours: bool = True,
        t_gait: float | None = None, lift: float = 0.0, record_from: float = 0.0,
        materials: tuple[dict[str, float], dict[str, float]] = RUBBER, general: bool = False,
        **backend: Any) -> dict[str, Any]:
    """Run ``r`` (``spec``'s robot) ``seconds`` at MuJoCo's 2 ms under the rig's joint PD
    (torques set before each step from the step's start state, as the A1 example does; the
    open-loop gait from ``t_gait``); records from ``record_from`` (s) on: per foot the normal
    force (ours: the backend's; native: ``mj_contactForce``), the host's overlap (R - z of the
    sphere's centre), and the base's position and roll / pitch. Also the thread CPU time of the
    loop (s), the steps, the standing height and the lean tree path's counters (``lean``:
    steps, W blocks, first solves handed back; None without the path). ``general``: the lean
    tree path off (its hooks answering 'not here', as tests/test_mujoco_lean_tree.py turns it
    off): every step on the general path (:mod:`mbplugin.mujoco.trees`)."""
    m = r.m
    d, contacts, height = setup(r, ours, lift, materials, **backend)
    if contacts is not None and general:
        contacts._tree = None
        contacts.host.articulated_delassus = lambda *a: None
        contacts.host.verify_rounds = lambda *a, **k: None
    mass = r.weight / rr.G
    kp, kd, limit = spec.kp * mass, spec.kd * mass, spec.torque * mass
    h = SimpleNamespace(targets=r.targets, hips=r.hips, knees=r.knees)
    n, n0 = round(seconds / DT), round(record_from / DT)
    nf = len(r.feet)
    col = {g: k for k, g in enumerate(r.feet)}
    force, depth = np.zeros((n - n0, nf)), np.zeros((n - n0, nf))
    base, tilt = np.zeros((n - n0, 3)), np.zeros((n - n0, 2))
    buf = np.zeros(6)
    feet = np.array(r.feet)
    cpu = time.thread_time()
    try:
        for i in range(n):
            tgt = rr.gait_targets(spec, h, i * DT, t_gait)
            tau = kp * (tgt - d.qpos[r.qadr]) - kd * d.qvel[r.vadr]
            d.ctrl[:] = np.clip(tau, -limit, limit)
            if contacts is not None:
                st = contacts.step()
            else:
                mujoco.mj_step(m, d)
            if i < n0:
                continue
            j = i - n0
            if contacts is not None:
                for (_, g), f in zip(st.geoms, st.normal_force, strict=True):
                    force[j, col[int(g)]] += f
            else:
                for c in range(d.ncon):
                    con = d.contact[c]
                    g = con.geom2 if con.geom2 in col else con.geom1
                    if g in col:
                        mujoco.mj_contactForce(m, d, c, buf)
                        force[j, col[g]] += buf[0]
            depth[j] = r.radius - d.geom_xpos[feet, 2]
            base[j] = d.qpos[0:3]
            w, x, y, z = d.qpos[3:7]
            tilt[j] = (math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)),
                       math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x)))))
        cpu = time.thread_time() - cpu
    finally:
        if contacts is not None:
            contacts.release()  # the floor's pairs MuJoCo's again: the model is reused
    tree = None if contacts is None else contacts._tree
    lean = None if tree is None else (tree.steps, tree.blocks, tree.first_handed)
    return {"force": force, "depth": depth, "base": base, "tilt": tilt, "cpu": cpu,
            "steps": n, "height": height, "weight": r.weight, "lean": lean,
            "radius": r.radius}


def stance_figures(rec: dict[str, Any],
                   materials: tuple[dict[str, float], dict[str, float]] = RUBBER
                   ) -> dict[str, float]:
    """Figures of a recorded quiet stance: the summed normal force over the weight (mean, and
    the largest |sum F / W - 1| of a step), and the largest |host overlap / static Hertz - 1|
    over the loaded feet (mean host overlap against (F / k)^(2/3) of the mean force, k
    Hertz's of the two materials: :func:`robot_rig.hertz_k`, written out there); ``loaded``
    the number of feet carrying load."""
    sums = rec["force"].sum(axis=1) / rec["weight"]
    mean_f = rec["force"].mean(axis=0)
    loaded = np.flatnonzero(mean_f > 1e-3 * rec["weight"])
    worst = 0.0
    for k in loaded.tolist():
        static = (mean_f[k] / rr.hertz_k(materials, float(rec["radius"][k]))) ** (2.0 / 3.0)
        worst = max(worst, abs(float(rec["depth"][:, k].mean()) / static - 1.0))
    return {"sum_f": float(sums.mean()), "sum_f_worst": float(np.max(np.abs(sums - 1.0))),
            "hertz": worst, "loaded": len(loaded)}


def fell(rec: dict[str, Any]) -> bool:
    """The PyBullet rig's fall: the base below ``FALL_HEIGHT`` of its standing height or roll /
    pitch beyond ``FALL_TILT`` at any recorded step."""
    return bool(np.any(rec["base"][:, 2] < rr.FALL_HEIGHT * rec["height"])
                or np.any(np.abs(rec["tilt"]) > rr.FALL_TILT))
