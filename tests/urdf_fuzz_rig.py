"""Generated URDF robots (:mod:`urdf_gen`) dropped on managed ground in PyBullet and in MuJoCo,
and checked against what the host shows and closed forms: the rig of tests/test_urdf_fuzz.py
and benchmarks/fuzz_urdf.py.

A robot is loaded as generated (PyBullet's ``loadURDF``, default flags: fixed links kept as
links, no self-collision; MuJoCo's URDF importer behind a ``floating`` joint, links on fixed
joints fused into their parents, no self-collision, the implicitfast integrator), its lowest
point ``DROP`` above the ground (the host's own distance query), every moving joint held at 0
(PyBullet: its POSITION_CONTROL motors; MuJoCo: position actuators of ~8 Hz on each dof's own
inertia, ``dof_M0``). The ground's pairs with every link / geom are managed (``manage="pairs"``)
or the ground whole (``manage="whole"``): Hunt-Crossley cr = 0.3, Hertz's k from rubber-like
ground and hard bodies (steel on steel for :func:`urdf_gen.random_robot`'s ``steel`` feet),
regularised friction mu = 0.8; each host at its usual step (PyBullet 1/240 s, MuJoCo 2 ms) or
``dt``. A fixed base (:func:`urdf_gen.random_robot`'s arms, PyBullet only) is loaded fixed and
its free joints (:attr:`urdf_gen.Made.free`) left without a motor. :func:`run` returns the
figures below, each against the outside world:

- ``exception``: the run raised (its type and message);
- ``nan``: a NaN in the host's state;
- ``energy``: the mechanical energy (kinetic + gravity's potential, from the host's link states
  and masses / ``mj_energyPos/Vel``) rose above its start by more than 1 % of the drop's m g h,
  or over the rest window. On MuJoCo it counts what the robot stores and what MuJoCo's own
  constraints do, a robot still rocking trades energy with them: the managed contacts' elastic
  energy K delta^2.5 / 2.5 (the law's F = K delta^1.5) at the overlaps MuJoCo finds for the
  managed pairs (``mj_forward`` on a copy of the model as loaded, the pairs colliding there),
  the held joints' servo springs kp q^2 / 2 (``mj_energyPos`` leaves actuators out), minus the
  work of MuJoCo's constraint forces (soft joint limits: ``qfrc_constraint`` times the step's
  mean velocity times dt). On PyBullet likewise: the managed contacts' elastic energy
  K delta^2.5 / 2.5 at their integrated overlaps (PyBullet's ``getClosestPoints`` gives one
  point per shape pair, not a box's four corners; ``overlap`` below holds those overlaps to the
  host's), minus the work of the joint motors (``getJointStates``' applied motor torque or
  force times the step's mean joint speed times dt; a POSITION_CONTROL motor is a velocity
  constraint, not a spring: its work is what it puts in). Joint limits are not counted: the
  held joints stay far from them (``limit``: the largest joint excursion as a fraction of its
  limit, <= 0.01 for :func:`urdf_gen.random_urdf`'s robots, up to 0.16 for the arms' free
  shoulders). ``energy_mech`` is the kinetic + gravitational energy's figure alone (the
  check before issue 18's accounting); on PyBullet ``series`` holds per step the kinetic +
  gravitational energy, the contacts' elastic energy and the motors' work (J);
- ``rest``: the bodies' rms speed sqrt(2 KE / M) over the last ``WINDOW`` s (m/s); the checks
  below need rest (< ``REST``): a body still moving there fails ``rest`` if it comes to rest
  natively (the host's own contact, ``native_rest``), else it rolls as natively and the checks
  below do not apply (:func:`verdict`; the sweep counts it as ``ROLL``);
- ``sum_f``: mean over the window of the summed normal force / weight, within 1 % (not on a
  fixed base, which carries part of the weight);
- ``overlap``: per link (PyBullet) or geom (MuJoCo) with loaded contacts at the last step, the
  host's deepest overlap (PyBullet ``getClosestPoints``, MuJoCo ``mj_geomDistance``) against
  the backend's deepest integrated overlap there, within 2 % (PyBullet's boxes and hulls with
  its 1 mm collision margin, as the host collides them: :mod:`mbplugin.bullet.geometry`; MuJoCo's
  cylinder geoms exact, as MuJoCo collides them: :mod:`mbplugin.contact.cylinder`);
- ``hertz``: each sphere-plane contact (PyBullet: a link whose only shape is a sphere; MuJoCo:
  a sphere geom, or a capsule geom with one loaded contact: its cap) whose host overlap averaged
  over the window equals (F / k)^(2/3) of its mean force within 5 % (Hertz's static overlap of a
  force law F = k delta^1.5; every pair's k is that of a 2 cm sphere, k = 4/3 E* sqrt(R):
  :func:`robot_rig.hertz_k`, written out there, since a box's, cylinder's or mesh's corner has no
  radius to take Hertz's k from materials).

Nothing of mbplugin computes an expected value here.
"""

from __future__ import annotations

import copy
import math
import re
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import robot_rig as rr
from urdf_gen import Made, random_urdf

G = rr.G
RUBBER = rr.RUBBER
FRICTION = rr.FRICTION
#: Hertz's k (N/m^1.5) of a 2 cm sphere on the rubber-like ground, given for every pair: a box's,
#: cylinder's or mesh's corner has no radius for Hertz's k from materials (the backend refuses
#: such a pair without 'k', naming it)
K = rr.hertz_k(RUBBER, 0.02)
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": K}
#: the same for steel feet on steel (:attr:`urdf_gen.Made.material` ``"steel"``): ~1000x stiffer
K_STEEL = rr.hertz_k(rr.STEEL, 0.02)


def stiffness(made: Made) -> float:
    """Hertz's k (N/m^1.5) given for every pair of ``made``'s robot: :data:`K` or, for steel
    feet, :data:`K_STEEL`."""
    return K_STEEL if made.material == "steel" else K


def law(made: Made) -> dict[str, Any]:
    """The contact law of ``made``'s pairs: :data:`LAW` with :func:`stiffness`'s k."""
    return {**LAW, "k": stiffness(made)}
DROP = 0.02  # m: the lowest point above the ground at the start
SECONDS = 1.5  # s of simulation
WINDOW = 0.25  # s: the rest window at the end
REST = 5e-3  # m/s: rms speed at rest
#: tolerances (issue 18's): summed force / weight, host vs integrated overlap, Hertz
SUM_F, OVERLAP, HERTZ = 0.01, 0.02, 0.05
#: energy growth allowed, as a fraction of M g DROP
ENERGY = 0.01


def _loaded(force: np.ndarray, delta: np.ndarray, weight: float) -> np.ndarray:
    """Contacts carrying load: a normal force above rounding at a positive overlap."""
    return (force > 1e-9 * weight) & (delta > 0)


def _hertz(fig: dict[str, Any], contacts: dict[int, tuple[list[float], list[float], str]],
           weight: float, k: float = K) -> None:
    """Into ``fig``: ``hertz`` the largest |host overlap / (F / K)^(2/3) - 1| over the sphere-plane
    ``contacts`` (per key: the window's normal forces (N), host overlaps (m) and a name), each
    averaged over the window, of those carrying more than 1e-3 of the weight; ``hertz_at`` the
    worst one's name, ``hertz_n`` how many were checked."""
    worst, at, n = 0.0, "", 0
    for force, host, name in contacts.values():
        f = float(np.mean(force))
        if f <= 1e-3 * weight:
            continue
        err = abs(float(np.mean(host)) / (f / k) ** (2.0 / 3.0) - 1.0)
        n += 1
        if err > worst:
            worst, at = err, name
    fig["hertz"], fig["hertz_at"], fig["hertz_n"] = worst, at, n


def verdict(fig: dict[str, Any]) -> list[str]:
    """The checks ``fig`` (:func:`run`'s figures) misses (empty: passes)."""
    if fig.get("exception"):
        return [f"exception {fig['exception']}"]
    out = []
    if fig["nan"]:
        out.append("nan")
    if fig["energy"] > ENERGY:
        out.append(f"energy grew {fig['energy']:.3g} M g h")
    if not fig["rest"] < REST:
        if fig["native_rest"] < REST:
            out.append(f"not at rest ({fig['rest']:.3g} m/s; native {fig['native_rest']:.3g})")
        return out  # rolling, as natively: the rest checks do not apply
    if not abs(fig["sum_f"] - 1.0) <= SUM_F and not fig.get("fixed_base"):
        out.append(f"sum F / W = {fig['sum_f']:.4f}")
    if not fig["overlap"] <= OVERLAP:
        out.append(f"host vs integrated overlap {fig['overlap']:.3g} ({fig['overlap_at']})")
    if not fig["hertz"] <= HERTZ:
        out.append(f"host vs static Hertz {fig['hertz']:.3g} ({fig['hertz_at']})")
    return out


def _finish(fig: dict[str, Any], energy: list[float], ke: list[float], mass: float,
            n_window: int) -> dict[str, Any]:
    e = np.asarray(energy)
    scale = mass * G * DROP
    grow = max(float(np.max(e) - e[0]), float(np.max(e[-n_window:]) - e[-n_window]))
    fig["energy"] = grow / scale
    fig["rest"] = float(math.sqrt(2.0 * max(ke[-n_window:]) / mass))
    return fig


def run(host: str, made: Made, manage: str, seconds: float = SECONDS,
        dt: float | None = None) -> dict[str, Any]:
    """Drop ``made``'s robot on ``host`` (``"bullet"`` or ``"mujoco"``) with ``manage``
    (``"pairs"`` or ``"whole"``) for ``seconds`` (s) at the host step ``dt`` (s; None: the
    host's usual one, PyBullet 1/240 s, MuJoCo 2 ms); the figures of the module docstring. An
    exception is caught and returned as ``exception``."""
    if dt is not None and not 0.0 < dt <= 0.01:
        raise ValueError(f"dt must be in (0, 0.01] s, got {dt}")
    try:
        run_host = _bullet if host == "bullet" else _mujoco
        fig = run_host(made, manage, seconds, dt=dt)
        if not fig["rest"] < REST:
            # still moving: at rest natively (PyBullet's or MuJoCo's own contact)?
            fig["native_rest"] = run_host(made, manage, seconds, ours=False, dt=dt)["rest"]
        return fig
    except Exception as exc:  # the sweep reports it
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return {"exception": f"{type(exc).__name__}: {exc} "
                             f"[{Path(tb.filename).name}:{tb.lineno}]"}


def _bullet(made: Made, manage: str, seconds: float, ours: bool = True,
            dt: float | None = None) -> dict[str, Any]:
    import pybullet as p
    from bullet_world import ground_world

    from mbplugin.bullet import BulletContacts

    dt = 1.0 / 240.0 if dt is None else float(dt)
    with ground_world(G, dt) as (cid, plane):
        b = p.loadURDF(str(made.path), [0, 0, 1.0], useFixedBase=made.fixed_base,
                       physicsClientId=cid)
        nj = p.getNumJoints(b, physicsClientId=cid)
        links = list(range(-1, nj))
        low = min(c[8] for c in p.getClosestPoints(b, plane, 10.0, physicsClientId=cid))
        # the base's pose is its inertial frame's: keep its orientation
        pos, orn = p.getBasePositionAndOrientation(b, physicsClientId=cid)
        p.resetBasePositionAndOrientation(b, [pos[0], pos[1], pos[2] - low + DROP], orn,
                                          physicsClientId=cid)
        masses = np.array([p.getDynamicsInfo(b, j, physicsClientId=cid)[0] for j in links])
        inertia = np.array([p.getDynamicsInfo(b, j, physicsClientId=cid)[2] for j in links])
        mass = float(masses.sum())
        weight = mass * G
        moving = [j for j in range(nj) if p.getJointInfo(b, j, physicsClientId=cid)[2]
                  in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC)]
        names = [p.getJointInfo(b, j, physicsClientId=cid)[1].decode() for j in moving]
        held = [j for j, nm in zip(moving, names, strict=True) if nm not in made.free]
        free = [j for j in moving if j not in held]
        if held:
            p.setJointMotorControlArray(b, held, p.POSITION_CONTROL,
                                        targetPositions=[0.0] * len(held),
                                        forces=[20.0 * weight] * len(held),
                                        physicsClientId=cid)
        if free:  # PyBullet's default velocity motor off: the joint swings freely
            p.setJointMotorControlArray(b, free, p.VELOCITY_CONTROL, forces=[0.0] * len(free),
                                        physicsClientId=cid)
        k = stiffness(made)
        spheres = {}  # link -> radius: links whose only shape is a sphere
        for j in links:
            sd = p.getCollisionShapeData(b, j, physicsClientId=cid)
            if len(sd) == 1 and sd[0][2] == p.GEOM_SPHERE:
                spheres[j] = float(sd[0][3][0])
        pairs = [(plane, (b, j)) for j in links] if manage == "pairs" else [plane]
        contacts = (BulletContacts(cid, manage=pairs, law=law(made), friction=FRICTION,
                                   rtol=1e-8)
                    if ours else None)

        def state() -> tuple[float, float]:
            pos, vel, orn = [], [], []
            bp, bo = p.getBasePositionAndOrientation(b, physicsClientId=cid)
            bv, bw = p.getBaseVelocity(b, physicsClientId=cid)
            pos.append(bp), orn.append(bo), vel.append((bv, bw))
            for j in range(nj):
                s = p.getLinkState(b, j, computeLinkVelocity=1, computeForwardKinematics=1,
                                   physicsClientId=cid)
                pos.append(s[0]), orn.append(s[1]), vel.append((s[6], s[7]))
            ke = 0.0
            for k in range(nj + 1):
                rot = np.array(p.getMatrixFromQuaternion(orn[k])).reshape(3, 3)
                v, w = np.asarray(vel[k][0]), np.asarray(vel[k][1])
                wl = rot.T @ w
                ke += 0.5 * masses[k] * v @ v + 0.5 * float(wl @ (inertia[k] * wl))
            pe = float(G * masses @ np.array(pos)[:, 2])
            return ke, pe

        lower = np.array([p.getJointInfo(b, j, physicsClientId=cid)[8] for j in moving])
        upper = np.array([p.getJointInfo(b, j, physicsClientId=cid)[9] for j in moving])

        def joints() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            # (q, q-dot, the motor's generalised force of the last step: N m or N)
            js = p.getJointStates(b, moving, physicsClientId=cid) if moving else []
            return (np.array([x[0] for x in js]), np.array([x[1] for x in js]),
                    np.array([x[3] for x in js]))

        n, nw = round(seconds / dt), round(WINDOW / dt)
        energy, kes, sums, mech = [], [], [], []
        host_w: dict[int, list[float]] = {j: [] for j in spheres}
        force_w: dict[int, list[float]] = {j: [] for j in spheres}
        ke, pe = state()
        energy.append(ke + pe), kes.append(ke), mech.append(ke + pe)
        st = None
        motor_work = 0.0  # J: the work of PyBullet's joint motors
        stores, works = [0.0], [0.0]  # per step: the contacts' elastic energy, the motors' work
        limit = 0.0  # the joints' largest excursion towards a limit, as a fraction of it
        q, v, _ = joints()
        for i in range(n):
            if contacts is None:
                p.stepSimulation(physicsClientId=cid)
                ke, pe = state()
                energy.append(ke + pe), kes.append(ke)
                continue
            st = contacts.step()
            ke, pe = state()
            v0 = v
            q, v, tau = joints()
            # the motors' impulse dt tau on the step's mean joint speed: their work on KE
            motor_work += dt * float(np.dot(tau, 0.5 * (v0 + v)))
            if len(q):
                limit = max(limit, float(np.max(np.maximum(q / upper, q / lower))))
            # the contacts' elastic energy: the law's F = K delta^1.5 stores K delta^2.5 / 2.5
            stored = float(np.sum(k * np.clip(st.delta, 0.0, None) ** 2.5) / 2.5)
            mech.append(ke + pe), kes.append(ke), stores.append(stored), works.append(motor_work)
            energy.append(ke + pe + stored - motor_work)
            if i >= n - nw:
                sums.append(float(np.sum(st.normal_force)) / weight)
                lk = st.links[:, 1, 1] if len(st.normal_force) else np.zeros(0, int)
                for j in spheres:
                    cps = p.getClosestPoints(b, plane, 0.005, j, -1, physicsClientId=cid)
                    host_w[j].append(max([-c[8] for c in cps], default=-1.0))
                    force_w[j].append(float(np.sum(st.normal_force[lk == j])))
        if contacts is None:
            return _finish({}, energy, kes, mass, nw)
        fig: dict[str, Any] = {"exception": None}
        q = [p.getBasePositionAndOrientation(b, physicsClientId=cid)[0]]
        q += [p.getJointState(b, j, physicsClientId=cid)[0] for j in moving]
        fig["nan"] = bool(not np.all(np.isfinite(np.concatenate([np.ravel(x) for x in q])))
                          or not np.all(np.isfinite(energy)))
        # a fixed base carries part of the weight: the sum is checked on floating bases
        fig["sum_f"] = (float(np.mean(sums)) if sums and not made.fixed_base else float("nan"))
        worst, at = 0.0, ""
        loaded = _loaded(st.normal_force, st.delta, weight)
        lk = st.links[:, 1, 1] if len(st.normal_force) else np.zeros(0, int)
        for j in links:
            sel = loaded & (lk == j)
            if not sel.any():
                continue
            cps = p.getClosestPoints(b, plane, 0.005, j, -1, physicsClientId=cid)
            host = max([-c[8] for c in cps], default=-1.0)
            ours = float(np.max(st.delta[sel]))
            err = abs(host - ours) / ours
            if err > worst:
                worst, at = err, f"link {j} host {host:.4g} ours {ours:.4g}"
        fig["overlap"], fig["overlap_at"] = worst, at
        # the most loaded contacts on one link at the last step (a box foot flat: 4)
        ids, counts = np.unique(lk[loaded], return_counts=True)
        fig["per_link"] = int(np.max(counts, initial=0))
        fig["per_link_at"] = int(ids[np.argmax(counts)]) if len(ids) else None
        _hertz(fig, {j: (force_w[j], host_w[j], f"sphere link {j}") for j in spheres}, weight, k)
        fig["limit"], fig["fixed_base"] = limit, made.fixed_base
        # J per step from the start: KE + PE, the contacts' elastic energy, the motors' work
        fig["series"] = np.array([mech, stores, works])
        fig["energy_mech"] = _finish({}, mech, kes, mass, nw)["energy"]
        return _finish(fig, energy, kes, mass, nw)


def mujoco_model(made: Made) -> Any:
    """``made``'s robot as MuJoCo's URDF importer loads it (module docstring), a floor plane
    ``floor``, position actuators holding every hinge and slide at 0, energy computed."""
    import mujoco

    if made.fixed_base:
        raise ValueError(f"{made.path.name}: a fixed base (an arm) is PyBullet's only in this rig")
    urdf = made.path.read_text()
    root = made.links[0]
    base = ('<link name="world"/><joint name="floating_base" type="floating">'
            f'<parent link="world"/><child link="{root}"/></joint>')
    urdf = urdf.replace(f'<link name="{root}"', base + f'<link name="{root}"', 1)
    ext = (f'<mujoco><compiler meshdir="{made.path.parent}" discardvisual="true"/></mujoco>')
    urdf = re.sub(r"(<robot[^>]*>)", lambda x: x.group(1) + ext, urdf, count=1)
    spec = mujoco.MjSpec.from_string(urdf)
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1])
    held = [j for j in spec.joints if j.type in (mujoco.mjtJoint.mjJNT_HINGE,
                                                  mujoco.mjtJoint.mjJNT_SLIDE)
            and j.name not in made.free]
    for j in held:
        a = spec.add_actuator(name=j.name, target=j.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.set_to_position(kp=1.0, kv=1.0)
    m = spec.compile()
    m.opt.timestep = 0.002
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    for a in range(m.nu):
        dof = m.jnt_dofadr[m.actuator_trnid[a, 0]]
        inert = float(m.dof_M0[dof])
        kp = inert * (2 * math.pi * 8.0) ** 2
        m.actuator_gainprm[a, 0] = kp
        m.actuator_biasprm[a, 1:3] = (-kp, -2 * 0.7 * math.sqrt(kp * inert))
    robot = m.geom_bodyid != 0
    m.geom_contype[robot], m.geom_conaffinity[robot] = 1, 0
    return m


def _mujoco(made: Made, manage: str, seconds: float, ours: bool = True,
            dt: float | None = None) -> dict[str, Any]:
    import mujoco

    from mbplugin.mujoco import MujocoContacts, geom

    m = mujoco_model(made)
    if dt is not None:
        m.opt.timestep = float(dt)
    d = mujoco.MjData(m)
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    robot = [g for g in range(m.ngeom) if m.geom_bodyid[g] != 0]
    d.qpos[2] = 1.0
    mujoco.mj_forward(m, d)

    def dist(g: int, cap: float) -> float:
        return float(mujoco.mj_geomDistance(m, d, floor, g, cap, None))

    low = min(dist(g, 10.0) for g in robot)
    d.qpos[2] += DROP - low
    mujoco.mj_forward(m, d)
    mass = float(m.body_subtreemass[1])
    weight = mass * G
    pairs = [("floor", geom(g)) for g in robot] if manage == "pairs" else ["floor"]
    caps = {g: float(m.geom_size[g][0]) for g in robot
            if int(m.geom_type[g]) in (int(mujoco.mjtGeom.mjGEOM_SPHERE),
                                       int(mujoco.mjtGeom.mjGEOM_CAPSULE))}
    if not ours:
        energy, kes = [], []
        probe = mujoco.MjData(m)
        for _ in range(round(seconds / m.opt.timestep) + 1):
            probe.qpos[:], probe.qvel[:] = d.qpos, d.qvel
            mujoco.mj_forward(m, probe)
            energy.append(float(probe.energy.sum())), kes.append(float(probe.energy[1]))
            mujoco.mj_step(m, d)
        return _finish({}, energy, kes, mass, round(WINDOW / m.opt.timestep))
    # a copy of the model as loaded: MuJoCo collides the managed pairs there (their overlaps)
    collide = copy.deepcopy(m)
    k = stiffness(made)
    contacts = MujocoContacts(m, d, manage=pairs, law=law(made), friction=FRICTION, rtol=1e-6)
    dt = m.opt.timestep
    n, nw = round(seconds / dt), round(WINDOW / dt)
    energy, kes, sums, mech = [], [], [], []
    host_w: dict[int, list[float]] = {g: [] for g in caps}
    force_w: dict[int, list[float]] = {g: [] for g in caps}
    count_w: dict[int, list[int]] = {g: [] for g in caps}
    st = None
    probe = mujoco.MjData(collide)
    kp = np.asarray(m.actuator_gainprm[:, 0], dtype=float)
    native_work = 0.0  # J: the work of MuJoCo's own constraint forces (the joints' limits)

    def energies() -> None:
        # on a copy of the state: after mj_step, d's kinematics are the step start's
        probe.qpos[:], probe.qvel[:] = d.qpos, d.qvel
        mujoco.mj_forward(collide, probe)
        e = float(probe.energy.sum())
        mech.append(e), kes.append(float(probe.energy[1]))
        dist = np.array([probe.contact[j].dist for j in range(probe.ncon)
                         if floor in probe.contact[j].geom])
        stored = float(np.sum(k * np.clip(-dist, 0.0, None) ** 2.5) / 2.5)  # F = k delta^1.5
        stored += 0.5 * float(np.sum(kp * np.asarray(probe.actuator_length) ** 2))
        energy.append(e + stored - native_work)

    try:
        energies()
        for i in range(n):
            d.ctrl[:] = 0.0
            v0 = d.qvel.copy()
            st = contacts.step()
            # qfrc_constraint: MuJoCo's constraint force of the step's mj_step2 (N or N m)
            native_work += dt * float(np.dot(d.qfrc_constraint, 0.5 * (v0 + d.qvel)))
            energies()
            if i >= n - nw:
                sums.append(float(np.sum(st.normal_force)) / weight)
                gs = st.geoms[:, 1] if len(st.normal_force) else np.zeros(0, int)
                load = _loaded(st.normal_force, st.delta, weight) if len(gs) else gs > 0
                for g in caps:
                    host_w[g].append(-dist(g, 0.01))
                    force_w[g].append(float(np.sum(st.normal_force[gs == g])))
                    count_w[g].append(int(np.sum(load & (gs == g))))
        fig: dict[str, Any] = {"exception": None}
        fig["nan"] = bool(not np.all(np.isfinite(d.qpos)) or not np.all(np.isfinite(d.qvel)))
        fig["sum_f"] = float(np.mean(sums)) if sums else float("nan")
        worst, at = 0.0, ""
        if len(st.normal_force):
            loaded = _loaded(st.normal_force, st.delta, weight)
            gs = st.geoms[:, 1]
            for g in np.unique(gs[loaded]).tolist():
                sel = loaded & (gs == g)
                host = -dist(g, 0.01)
                ours = float(np.max(st.delta[sel]))
                err = abs(host - ours) / ours
                if err > worst:
                    worst, at = err, (f"geom {g} type {int(m.geom_type[g])} host {host:.4g} "
                                      f"ours {ours:.4g}")
        fig["overlap"], fig["overlap_at"] = worst, at
        # a capsule on its side (two contacts: a line) left out
        _hertz(fig, {g: (force_w[g], host_w[g], f"geom {g} type {int(m.geom_type[g])}")
                     for g in caps if max(count_w[g]) == 1}, weight, k)
    finally:
        contacts.release()
    fig["energy_mech"] = _finish({}, mech, kes, mass, nw)["energy"]
    return _finish(fig, energy, kes, mass, nw)


def generate(directory: Path, seed: int) -> Made:
    """The robot of ``seed`` (:func:`urdf_gen.random_urdf`)."""
    return random_urdf(directory, seed)
