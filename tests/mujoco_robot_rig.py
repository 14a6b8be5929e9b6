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

:func:`run` records per host step what the user sees in MuJoCo: every foot's overlap with
the floor from its geom's pose (:func:`overlaps`: R - z of a sphere's centre, the floor at z =
0), the
backend's normal force per foot, the base's position and roll / pitch; and the lean tree
path's counters. Nothing of mbplugin computes an expected value here.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
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


#: what MuJoCo models of robots often carry (MuJoCo Menagerie's quadrupeds: joint damping,
#: friction loss and armature, position actuators, the implicitfast integrator), with the knees
#: pressed on their joint limits (:func:`model`'s options)
MENAGERIE = {"joints": {"damping": 0.5, "frictionloss": 0.2, "armature": 0.01},
             "position": True, "integrator": "implicitfast", "knee_stop": 0.02}


@dataclass
class Robot:
    """A robot loaded into MuJoCo: the model, its hinges' qpos and dof addresses, their
    standing targets (MuJoCo's joint order), the hips' and knees' indices among them, the foot
    sphere geoms (a sphere geom of the robot: every robot's feet are its only spheres) and
    their radii (m), the weight (N: the root bodies' subtree masses times g), the qpos
    addresses of the free joints (one per copy; none with a fixed base)."""

    m: Any
    qadr: np.ndarray
    vadr: np.ndarray
    targets: np.ndarray
    hips: list[int]
    knees: list[int]
    feet: list[int]
    radius: np.ndarray
    weight: float
    position: bool = False  # position actuators: ctrl is the joint target
    capsule: float = 0.0  # the feet capsules of this half length (m), not spheres
    free: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # qpos adr


def _urdf(spec: rr.Spec, directory: Path) -> tuple[Path, dict[str, float] | None, int]:
    """The URDF file of ``spec``, the standing targets by joint name (generated robots; None:
    ``spec.pose`` per leg) and the joints per leg."""
    if spec.urdf is not None:
        return Path(pybullet_data.getDataPath()) / spec.urdf, None, 3
    made = spec.make(directory)
    return made.path, dict(zip(made.names, made.targets, strict=True)), made.joints_per_leg


def _targets(spec: rr.Spec, m: Any, named: dict[str, float] | None, per: int) -> np.ndarray:
    """The standing targets of model ``m``'s hinges in its order: ``spec.pose`` per leg, or by
    joint name (``named``; an attached copy's prefix ``r<i>_`` dropped)."""
    hinge = np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    if named is None:
        return np.array(list(spec.pose) * (len(hinge) // per))
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(j)) for j in hinge]
    return np.array([named[n] if n in named else named[n.split("_", 1)[1]] for n in names])


def model(spec: rr.Spec, directory: Path, *, joints: dict[str, float] | None = None,
          position: bool = False, integrator: str = "euler", capsule: float = 0.0,
          knee_stop: float = 0.0, copies: int = 1, fixed_press: float | None = None) -> Robot:
    """``spec``'s robot as MuJoCo's URDF importer loads it (module docstring); meshes from the
    URDF's folder; ``balanceinertia`` (the Mini Cheetah's thighs break the triangle inequality
    A + B >= C that MuJoCo's compiler checks; PyBullet loads them as they are).

    What MuJoCo models of robots often add (MuJoCo Menagerie's quadrupeds): ``joints`` every
    hinge's ``damping`` (N m s / rad), ``frictionloss`` (N m), ``armature`` (kg m^2);
    ``position`` position actuators (MuJoCo's own PD: ``ctrl`` the target, kp and kd the rig's
    gains, its force range the rig's torque limit) instead of torque motors; ``integrator``
    ``"euler"``, ``"implicit"`` or ``"implicitfast"``; ``capsule`` > 0: every foot sphere
    turned into a capsule of that half length (m) along its calf (from the body's origin, the
    knee, to the sphere), its lower cap's centre where the sphere's was (the same contact in
    the standing pose, but a shape whose orientation counts: the geom's frame against the
    body's inertial frame); ``knee_stop`` > 0: every knee's joint limit this far (rad) short
    of its standing target, so that the PD presses each knee on its limit in the stance (a
    MuJoCo limit constraint active in every step); ``copies`` > 1: that many of the robot side
    by side (1 m apart along y, attached to one model by ``MjSpec``: several kinematic trees;
    the mesh-free robots only); ``fixed_press`` (m): the base welded to the world (no free
    joint: a fixed-base tree) that far below its standing height, so that the PD presses the
    feet into the floor."""
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
    if copies > 1:
        one, mspec = mspec, mujoco.MjSpec()
        for i in range(copies):
            frame = mspec.worldbody.add_frame(pos=[0.0, float(i), 0.0])
            frame.attach_body((one if i == 0 else mujoco.MjSpec.from_string(urdf)).body(root),
                              f"r{i}_", "")
    if fixed_press is not None:
        m0 = mspec.compile()
        d0 = mujoco.MjData(m0)
        hinge0 = m0.jnt_type == mujoco.mjtJoint.mjJNT_HINGE
        d0.qpos[m0.jnt_qposadr[hinge0]] = _targets(spec, m0, named, per)
        mujoco.mj_forward(m0, d0)
        spheres = m0.geom_type == mujoco.mjtGeom.mjGEOM_SPHERE
        low = float(np.min(d0.geom_xpos[spheres, 2] - m0.geom_size[spheres, 0]))
        for j in list(mspec.joints):
            if j.type == mujoco.mjtJoint.mjJNT_FREE:
                mspec.delete(j)
        mspec.body(root).pos = [0.0, 0.0, float(d0.qpos[2]) - low - fixed_press]
    mspec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1])
    hinges = [j for j in mspec.joints if j.type == mujoco.mjtJoint.mjJNT_HINGE]
    for j in hinges:
        a = mspec.add_actuator(name=j.name, target=j.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        if position:
            a.set_to_position(kp=1.0, kv=1.0)  # the gains per kg of robot, scaled below
    m = mspec.compile()
    roots = np.flatnonzero((m.body_parentid == 0) & (np.arange(m.nbody) > 0))
    if position:
        mass = float(m.body_subtreemass[roots[0]])
        kp, kv = spec.kp * mass, spec.kd * mass
        m.actuator_gainprm[:, 0], m.actuator_biasprm[:, 1:3] = kp, (-kp, -kv)
        m.actuator_forcelimited[:] = 1
        m.actuator_forcerange[:] = (-spec.torque * mass, spec.torque * mass)
    m.opt.timestep = DT
    m.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    if joints:
        dofs = m.jnt_dofadr[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
        for k, v in joints.items():
            getattr(m, f"dof_{k}")[dofs] = v
        mujoco.mj_setConst(m, mujoco.MjData(m))  # what the armature changes
    # no self-collision (PyBullet's loadURDF default, which the PyBullet rig keeps): the robot's
    # geoms collide with the floor only
    robot = m.geom_bodyid != 0
    m.geom_contype[robot], m.geom_conaffinity[robot] = 1, 0
    hinge = np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    targets = _targets(spec, m, named, per)
    knees = list(range(per - 1, len(hinge), per))
    if knee_stop > 0.0:
        for k in knees:
            t, j = float(targets[k]), int(hinge[k])
            m.jnt_limited[j] = 1
            m.jnt_range[j] = (t + knee_stop, 3.0) if t < 0.0 else (-3.0, t - knee_stop)
    feet = [g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE]
    if capsule > 0.0:
        # in the compiled model (its foot links fused into the calves: a sphere's position is
        # then along its calf from the calf's origin, the knee)
        for g in feet:
            axis = np.array(m.geom_pos[g], dtype=float)
            axis /= np.linalg.norm(axis)
            quat = np.zeros(4)
            mujoco.mju_quatZ2Vec(quat, axis)  # the capsule's z along the calf
            r_foot = float(m.geom_size[g][0])
            m.geom_type[g] = mujoco.mjtGeom.mjGEOM_CAPSULE
            m.geom_size[g] = (r_foot, capsule, 0.0)
            m.geom_pos[g] -= capsule * axis
            m.geom_quat[g] = quat
            m.geom_rbound[g] = r_foot + capsule
            m.geom_aabb[g] = (0.0, 0.0, 0.0, r_foot, r_foot, r_foot + capsule)
            m.geom_sameframe[g] = 0  # its frame no longer the body's or inertial frame
    return Robot(m, m.jnt_qposadr[hinge], m.jnt_dofadr[hinge], targets,
                 list(range(per - 2, len(hinge), per)), knees, feet,
                 np.array([m.geom_size[g][0] for g in feet]),
                 float(np.sum(m.body_subtreemass[roots])) * rr.G, position, capsule,
                 m.jnt_qposadr[m.jnt_type == mujoco.mjtJoint.mjJNT_FREE])


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
    low = float(np.min(-overlaps(r, d)))
    height = float("nan")  # a fixed base: built in place
    if len(r.free):
        height = float(d.qpos[r.free[0] + 2]) - low
        d.qpos[r.free + 2] = height + CLEARANCE + lift
    else:
        # the legs bent 15 % beyond the stance (every robot's toes rise so, by 1-2 cm): the PD
        # then lowers them onto the floor (a contact that starts at rest already overlapped
        # has no impact velocity, which Hunt-Crossley's damping divides by)
        d.qpos[r.qadr] = 1.15 * r.targets
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


def overlaps(r: Robot, d: Any) -> np.ndarray:
    """Each foot's overlap with the floor (m, > 0 into it) in MuJoCo's state: R less the height
    of its sphere's centre, or of its capsule's lower end (the centre less the half length
    along the geom's z, ``geom_xmat``'s third column)."""
    feet = np.array(r.feet)
    z = d.geom_xpos[feet, 2] - r.capsule * np.abs(d.geom_xmat[feet, 8])
    return r.radius - z


def run(spec: rr.Spec, r: Robot, seconds: float, *, ours: bool = True,
        t_gait: float | None = None, lift: float = 0.0, record_from: float = 0.0,
        materials: tuple[dict[str, float], dict[str, float]] = RUBBER, general: bool = False,
        **backend: Any) -> dict[str, Any]:
    """Run ``r`` (``spec``'s robot) ``seconds`` at MuJoCo's 2 ms under the rig's joint PD
    (torques set before each step from the step's start state, as the A1 example does; the
    open-loop gait from ``t_gait``); records from ``record_from`` (s) on: per foot the normal
    force (ours: the backend's; native: ``mj_contactForce``), the host's overlap (R - z of the
    sphere's centre), and the base's position and roll / pitch. Also the thread CPU time of the
    loop (s), the steps, the standing height, the largest joint error at the end (rad:
    ``joint_error``) and the lean tree path's counters (``lean``:
    steps, W blocks, first solves handed back; None without the path). ``general``: the lean
    tree path off (its hooks answering 'not here', as tests/test_mujoco_lean_tree.py turns it
    off): every step on the general path (:mod:`mbplugin.mujoco.trees`)."""
    m = r.m
    copies = max(len(r.free), 1)
    mass = r.weight / rr.G / copies  # one robot's
    kp, kd, limit = spec.kp * mass, spec.kd * mass, spec.torque * mass
    d, contacts, height = setup(r, ours, lift, materials, **backend)
    if contacts is not None and general:
        contacts._tree = None
        contacts.host.articulated_delassus = lambda *a: None
        contacts.host.verify_rounds = lambda *a, **k: None
    one = len(r.targets) // copies  # one robot's hinges (the copies' in turn)
    h = SimpleNamespace(targets=r.targets[:one], hips=r.hips[:len(r.hips) // copies],
                        knees=r.knees[:len(r.knees) // copies])
    n, n0 = round(seconds / DT), round(record_from / DT)
    nf = len(r.feet)
    col = {g: k for k, g in enumerate(r.feet)}
    force, depth = np.zeros((n - n0, nf)), np.zeros((n - n0, nf))
    base, tilt = np.zeros((n - n0, 3)), np.zeros((n - n0, 2))
    buf = np.zeros(6)
    cpu = time.thread_time()
    try:
        for i in range(n):
            tgt = np.tile(rr.gait_targets(spec, h, i * DT, t_gait), copies)
            if r.position:
                d.ctrl[:] = tgt
            else:
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
            depth[j] = overlaps(r, d)
            if not len(r.free):
                continue
            base[j] = d.qpos[r.free[0]:r.free[0] + 3]  # the first robot's
            w, x, y, z = d.qpos[r.free[0] + 3:r.free[0] + 7]
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
            "radius": r.radius, "joint_error": float(np.max(np.abs(tgt - d.qpos[r.qadr])))}


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
