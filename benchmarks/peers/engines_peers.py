"""The peer engines' rows: MuJoCo, Drake (continuous and discrete point contact), PyBullet.

How each engine is asked for a coefficient of restitution, and how it combines per-geometry
parameters (from its own documentation / source; see RESULTS.md):

* **MuJoCo** (soft constraints). ``solref`` in the direct format ``(-stiffness, -damping)``, which
  its modelling guide names as the way to control restitution (section "Restitution": damping 0
  gives an elastic bounce); with a constant impedance ``solimp = (0.99, 0.99, ...)`` the contact
  acceleration is -(stiffness r + damping r') up to 1 % of gravity, a linear spring-damper per
  unit mass. stiffness = omega^2 with omega = pi / t_Hertz (the same contact duration as Hertz),
  damping = 2 zeta omega with the oscillator's damping ratio for the requested c_r
  (zeta = -ln c_r / sqrt(pi^2 + ln^2 c_r), ``mbplugin.laws.power.anagnostopoulos_xi``) or,
  in the "calibrated" row, the zeta that ``mbplugin.impact.calibrate`` finds for the clipped
  linear law. Mixing: geoms of equal priority average solref/solimp weighted by ``solmix``,
  except that a direct-format solref on either geom takes the element-wise minimum; friction is
  the element-wise maximum. Both geoms get the same values here.
* **Drake** point contact: f = k x (1 + d x')+ with linear k (N/m) and Hunt-Crossley d (s/m);
  per-geometry k combine in series k1 k2 / (k1 + k2), d as (k2 d1 + k1 d2) / (k1 + k2); a rigid
  floor (k = 1e20 here) leaves the ball's values. k = m omega^2 (Hertz's duration), d = chi / v_in
  from the exact Hunt-Crossley relation (``mbplugin.laws.exact_chi``): exact for the first
  bounce with gravity pressing (``mbplugin.impact.calibrate(..., press=m g)`` on the same law),
  c_r then rises as v_in falls. SAP uses a linear Kelvin-Voigt dissipation
  (``relaxation_time`` tau, combined as tau1 + tau2) instead: tau = 2 zeta / omega.
* **PyBullet** native: ``restitution`` per body, combined as the product (floor 1, ball c_r);
  or ``contactStiffness`` / ``contactDamping`` (combined in series / as the sum; floor 1e30 and
  0), which Bullet turns into ERP/CFM. Linear damping of the bodies set to 0.
"""

from __future__ import annotations

import time

import numpy as np
from common import G, SceneSpec, Trajectory

from mbplugin.impact import calibrate
from mbplugin.laws import exact_chi, make_law
from mbplugin.laws.power import anagnostopoulos_xi

#: stiffness of the floor geometry in Drake (N/m); an infinite value gave NaN in the combination
RIGID = 1e20


def zeta_for(spec: SceneSpec, how: str) -> float:
    """Damping ratio of a linear spring-damper asked for ``spec.cr`` (pair 0)."""
    if spec.cr >= 1.0:
        return 0.0
    if how == "formula":
        return float(anagnostopoulos_xi(spec.cr))
    p = spec.pairs[0]
    k = p.m_eff * spec.omega() ** 2
    cal = calibrate(make_law("kelvin_voigt", k=k, cr=spec.cr), spec.cr, v0=p.v_impact,
                    mass=p.m_eff, press=p.m_eff * G)
    return float(anagnostopoulos_xi(cal.value))


def drake_dissipation(spec: SceneSpec) -> float:
    """Drake's Hunt-Crossley d (s/m) for ``spec.cr`` at the first impact: Drake's law is
    ``zhang_sharf`` with n = 1 and chi/v_in = d; mbplugin calibrates it with gravity pressing."""
    if spec.cr >= 1.0:
        return 0.0
    p = spec.pairs[0]
    k = p.m_eff * spec.omega() ** 2
    cal = calibrate(make_law("zhang_sharf", k=k, n=1.0, cr=spec.cr), spec.cr, v0=p.v_impact,
                    mass=p.m_eff, press=p.m_eff * G)
    return float(exact_chi(cal.value)) / p.v_impact


# --------------------------------------------------------------------------------------------------
# MuJoCo
# --------------------------------------------------------------------------------------------------
def mujoco_xml(spec: SceneSpec, h: float, variant: str) -> str:
    if variant == "default":
        sol = ""
    else:
        w = spec.omega()
        z = zeta_for(spec, "formula" if variant == "docs" else "calibrated")
        sol = f'solref="{-w * w!r} {-2 * z * w!r}" solimp="0.99 0.99 0.001 0.5 2"'
    bodies = "\n".join(
        f'<body name="{b.name}" pos="0 0 {b.z0!r}"><freejoint/>'
        f'<geom type="sphere" size="{b.radius!r}" mass="{b.mass!r}" condim="1" {sol}/></body>'
        for b in spec.balls)
    return (f'<mujoco><option timestep="{h!r}" gravity="0 0 {-G}"/><worldbody>'
            f'<geom type="plane" size="1 1 0.1" condim="1" {sol}/>{bodies}</worldbody></mujoco>')


def run_mujoco(spec: SceneSpec, setting: dict) -> Trajectory:
    import mujoco
    from mujoco import rollout

    h = float(setting["h"])
    t_end = float(setting.get("t_end", spec.duration))
    model = mujoco.MjModel.from_xml_string(mujoco_xml(spec, h, setting["variant"]))
    data = mujoco.MjData(model)
    sspec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    nstate = mujoco.mj_stateSize(model, sspec)
    state0 = np.empty(nstate)
    mujoco.mj_getState(model, data, state0, sspec)
    nb = len(spec.balls)
    iz = np.array([1 + 7 * i + 2 for i in range(nb)])
    iv = np.array([1 + model.nq + 6 * i + 2 for i in range(nb)])
    n_total = round(t_end / h)
    chunk = 50_000
    cap = float(setting.get("wall_cap", float("inf")))
    note = ""
    ts, zs, vs = [np.array([0.0])], [state0[iz][None]], [state0[iv][None]]
    t0 = time.perf_counter()
    done = 0
    while done < n_total:
        n = min(chunk, n_total - done)
        st, _ = rollout.rollout(model, data, state0[None, :], nstep=n)
        st = st[0]
        ts.append(st[:, 0])
        zs.append(st[:, iz])
        vs.append(st[:, iv])
        state0 = st[-1].copy()
        done += n
        if done < n_total and time.perf_counter() - t0 > cap:
            note = f"stopped at t = {done * h:.3g} s (wall-time cap {cap:.0f} s)"
            break
    wall = time.perf_counter() - t0
    t = np.concatenate(ts)
    if np.any(np.diff(t) < 0) or not np.all(np.isfinite(np.concatenate(zs))):
        note = "unstable: MuJoCo's divergence check reset the state during the run"
    return Trajectory(t, np.concatenate(zs), np.concatenate(vs), wall, done, note=note)


# --------------------------------------------------------------------------------------------------
# Drake
# --------------------------------------------------------------------------------------------------
def run_drake(spec: SceneSpec, setting: dict) -> Trajectory:
    from pydrake.geometry import AddContactMaterial, HalfSpace, ProximityProperties, Sphere
    from pydrake.math import RigidTransform
    from pydrake.multibody.plant import (
        AddMultibodyPlant,
        CoulombFriction,
        MultibodyPlantConfig,
    )
    from pydrake.multibody.tree import SpatialInertia
    from pydrake.systems.analysis import ApplySimulatorConfig, Simulator, SimulatorConfig
    from pydrake.systems.framework import DiagramBuilder, TriggerType
    from pydrake.systems.primitives import LogVectorOutput

    h = float(setting.get("h", 0.0))
    approx = setting.get("approx", "")
    t_end = float(setting.get("t_end", spec.duration))
    builder = DiagramBuilder()
    cfg = MultibodyPlantConfig(time_step=h, contact_model="point",
                               discrete_contact_approximation=approx or "lagged")
    plant, _sg = AddMultibodyPlant(cfg, builder)
    w = spec.omega()
    d = drake_dissipation(spec)
    tau = 2 * zeta_for(spec, "formula") / w
    friction = CoulombFriction(0.0, 0.0)

    def props(k: float, diss: float, relax: float) -> ProximityProperties:
        pp = ProximityProperties()
        AddContactMaterial(dissipation=diss, point_stiffness=k, friction=friction, properties=pp)
        pp.AddProperty("material", "relaxation_time", relax)
        return pp

    bodies = []
    for b in spec.balls:
        body = plant.AddRigidBody(b.name, SpatialInertia.SolidSphereWithMass(b.mass, b.radius))
        plant.RegisterCollisionGeometry(body, RigidTransform(), Sphere(b.radius), b.name,
                                        props(b.mass * w * w, d, tau))
        bodies.append(body)
    plant.RegisterCollisionGeometry(plant.world_body(), RigidTransform(), HalfSpace(), "floor",
                                    props(RIGID, 0.0, 0.0))
    plant.Finalize()
    logger = LogVectorOutput(plant.get_state_output_port(), builder,
                             publish_triggers={TriggerType.kPerStep})
    diagram = builder.Build()
    sim = Simulator(diagram)
    if h == 0.0:
        ApplySimulatorConfig(SimulatorConfig(accuracy=float(setting.get("accuracy", 1e-4))), sim)
    ctx = sim.get_mutable_context()
    pctx = plant.GetMyMutableContextFromRoot(ctx)
    for b, body in zip(spec.balls, bodies, strict=True):
        plant.SetFreeBodyPose(pctx, body, RigidTransform([0.0, 0.0, b.z0]))
    sim.Initialize()
    cap = float(setting.get("wall_cap", float("inf")))
    note = ""
    t0 = time.perf_counter()
    t_now = 0.0
    while t_now < t_end:
        t_now = min(t_now + (min(0.05, 2000 * h) if h else 0.05), t_end)
        sim.AdvanceTo(t_now)
        if t_now < t_end and time.perf_counter() - t0 > cap:
            note = f"stopped at t = {t_now:.3g} s (wall-time cap {cap:.0f} s)"
            break
    wall = time.perf_counter() - t0
    log = logger.FindLog(ctx)
    t = log.sample_times()
    x = log.data()
    nq = plant.num_positions()
    iz = [body.floating_positions_start() + 6 for body in bodies]
    iv = [nq + body.floating_velocities_start_in_v() + 5 for body in bodies]
    steps = round(t_now / h) if h else int(sim.get_num_steps_taken())
    return Trajectory(np.asarray(t), x[iz].T.copy(), x[iv].T.copy(), wall, steps, note=note)


# --------------------------------------------------------------------------------------------------
# PyBullet native
# --------------------------------------------------------------------------------------------------
def run_pybullet(spec: SceneSpec, setting: dict) -> Trajectory:
    import pybullet as p

    h = float(setting["h"])
    t_end = float(setting.get("t_end", spec.duration))
    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -G, physicsClientId=cid)
        p.setPhysicsEngineParameter(fixedTimeStep=h, physicsClientId=cid)
        floor = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid),
                                  physicsClientId=cid)
        ids = []
        w = spec.omega()
        z = zeta_for(spec, "formula")
        for b in spec.balls:
            shape = p.createCollisionShape(p.GEOM_SPHERE, radius=b.radius, physicsClientId=cid)
            bid = p.createMultiBody(b.mass, shape, basePosition=[0, 0, b.z0],
                                    physicsClientId=cid)
            kw = dict(linearDamping=0.0, angularDamping=0.0, lateralFriction=0.0)
            if setting["variant"] == "restitution":
                kw["restitution"] = spec.cr
            else:
                kw.update(restitution=0.0, contactStiffness=b.mass * w * w,
                          contactDamping=2 * z * b.mass * w)
            p.changeDynamics(bid, -1, physicsClientId=cid, **kw)
            ids.append(bid)
        if setting["variant"] == "restitution":
            p.changeDynamics(floor, -1, restitution=1.0, lateralFriction=0.0,
                             physicsClientId=cid)
        else:
            p.changeDynamics(floor, -1, restitution=0.0, contactStiffness=1e30,
                             contactDamping=0.0, lateralFriction=0.0, physicsClientId=cid)
        n = round(t_end / h)
        nb = len(ids)
        zs = np.empty((n + 1, nb))
        vs = np.empty((n + 1, nb))
        for j in range(nb):
            zs[0, j] = spec.balls[j].z0
            vs[0, j] = 0.0
        step = p.stepSimulation
        pos = p.getBasePositionAndOrientation
        vel = p.getBaseVelocity
        cap = float(setting.get("wall_cap", float("inf")))
        note = ""
        last = n
        t0 = time.perf_counter()
        for i in range(1, n + 1):
            step(physicsClientId=cid)
            for j, bid in enumerate(ids):
                zs[i, j] = pos(bid, physicsClientId=cid)[0][2]
                vs[i, j] = vel(bid, physicsClientId=cid)[0][2]
            if i % 2000 == 0 and i < n and time.perf_counter() - t0 > cap:
                last = i
                note = f"stopped at t = {i * h:.3g} s (wall-time cap {cap:.0f} s)"
                break
        wall = time.perf_counter() - t0
    finally:
        p.disconnect(physicsClientId=cid)
    return Trajectory(np.arange(last + 1) * h, zs[:last + 1], vs[:last + 1], wall, last,
                      note=note)
