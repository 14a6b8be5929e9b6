"""Legged robots standing, dropping and trotting in PyBullet, with the backend's feet or native
contact: the rig of tests/test_bullet_robots.py and benchmarks/bench_bullet_robots.py.

A robot (:data:`ROBOTS`) is a URDF of ``pybullet_data`` (the A1, Laikago, Aliengo and Mini
Cheetah) or one written by :mod:`robot_urdf` (a light quadruped with turned link frames and
offset inertial frames, a heavy one whose feet are spheres of the calf links, a hexapod whose
fixed foot links PyBullet merges into the calves, a biped on heel-and-toe feet: two contacts on
one link). A joint PD controller under torque control holds the standing pose (the way
``examples/quadruped_foot_ground.py`` drives the A1) or plays an open-loop gait (diagonal
pairs; a hexapod's tripods; a biped's alternating steps).

:func:`run` records per host step what the user can see in PyBullet: the host's overlap of
every foot contact (``getClosestPoints``), the foot's slip (the host's link velocity at the
contact point), the feet's and the base's positions, and with the backend what it reports
(``contacts.last``: overlap, slip, normal force). Nothing of mbplugin computes an expected
value here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pybullet as p
from bullet_world import ground_world
from robot_urdf import legged_urdf

G = 9.81
#: rubber-like ground and hard toes (examples/quadruped_foot_ground.py), and steel on steel
RUBBER = ({"E": 1e7, "nu": 0.45}, {"E": 1e9, "nu": 0.4})
STEEL = ({"E": 2e11, "nu": 0.3}, {"E": 2e11, "nu": 0.3})
FRICTION = {"mu": 0.8, "v_eps": 1e-2}
STICK = {"k_t": 5e4, "mu": 0.8, "c_t": 100.0}
#: the acceptance tolerances (issue 18): summed foot force / weight, host vs backend overlap,
#: host vs static Hertz overlap (relative), the slip's floor (m/s, beyond 2 % of the host's),
#: creep over native (m)
SUM_F, OVERLAP, HERTZ, SLIP, CREEP = 0.01, 0.02, 0.05, 1e-5, 5e-4
#: fallen: the base below this fraction of its standing height, or roll / pitch beyond 0.8 rad
FALL_HEIGHT, FALL_TILT = 0.5, 0.8


@dataclass
class Spec:
    """A robot of the matrix: ``urdf`` (a ``pybullet_data`` path) or ``make`` (a function
    writing one into a directory, returning (path, targets, height)); the standing joint
    targets per leg (pybullet_data robots: abduction, hip, knee), the base's standing height
    (m), the PD gains per kg of robot and the torque limit (N m)."""

    name: str
    urdf: str | None = None
    make: Callable[[Path], Any] | None = None
    pose: tuple[float, ...] = ()
    height: float = 0.3
    kp: float = 6.4  # N m / rad per kg (the A1's 80 for its 12.5 kg)
    kd: float = 0.12  # N m s / rad per kg (the A1's 1.5)
    torque: float = 2.7  # N m per kg (the A1's 33.5)
    flags: int = 0
    gait: str = "trot"
    legs: int = 4
    gait_scale: float = 1.0  # the gait's amplitudes over the A1's (0.2 rad hip, 0.4 rad knee)
    gait_hz: float = 2.5


def _gen(name: str, **kw: Any) -> Callable[[Path], Any]:
    def make(directory: Path) -> Any:
        return legged_urdf(directory, name, **kw)
    return make


ROBOTS: dict[str, Spec] = {
    "a1": Spec("a1", urdf="a1/a1.urdf", pose=(0.0, 0.8, -1.6), height=0.32),
    "laikago": Spec("laikago", urdf="laikago/laikago_toes_zup.urdf", pose=(0.0, 0.67, -1.25),
                    height=0.37),
    "aliengo": Spec("aliengo", urdf="aliengo/aliengo.urdf", pose=(0.0, 0.8, -1.6), height=0.39),
    "mini_cheetah": Spec("mini_cheetah", urdf="mini_cheetah/mini_cheetah.urdf",
                         pose=(0.0, -0.8, 1.6), height=0.30),
    # light, every leg frame turned, centres of mass off the link axes, principal axes turned
    "quad_turned": Spec("quad_turned", make=_gen(
        "quad_turned", legs=4, body=(0.4, 0.22, 0.08), body_mass=5.0, thigh=0.16,
        leg_masses=(0.5, 0.15), foot="fixed", frame_rpy=(0.4, -0.3, 0.7),
        com_offset=(0.3, 0.01), inertia_rpy=(0.2, 0.5, -0.3), body_com=(0.02, -0.01, 0.005),
        theta=0.6)),
    # heavy, no abduction, the feet the calves' own spheres
    "quad_heavy": Spec("quad_heavy", make=_gen(
        "quad_heavy", legs=4, body=(0.7, 0.4, 0.15), body_mass=40.0, thigh=0.3,
        leg_masses=(3.0, 1.0), foot_radius=0.03, foot="calf", abduction=False,
        com_offset=(0.4, 0.0), theta=0.5, calf_box=False), kp=4.0, kd=0.1, gait_scale=0.3),
    # six legs, fixed foot links merged into the calves by PyBullet (URDF_MERGE_FIXED_LINKS)
    "hexapod": Spec("hexapod", make=_gen(
        "hexapod", legs=6, body=(0.6, 0.25, 0.08), body_mass=6.0, thigh=0.14,
        leg_masses=(0.6, 0.3), foot_radius=0.015, foot="fixed", abduction=False,
        frame_rpy=(0.0, 0.0, 0.5), theta=0.7, calf_box=False), flags=p.URDF_MERGE_FIXED_LINKS,
        gait="tripod", legs=6, kp=2.5, kd=0.025),
    # two legs on heel-and-toe feet (two contacts per foot link)
    "biped": Spec("biped", make=_gen(
        "biped", legs=2, body=(0.16, 0.3, 0.12), body_mass=6.0, thigh=0.22,
        leg_masses=(0.8, 0.3), foot_radius=0.02, foot="heel_toe", abduction=False,
        frame_rpy=(0.0, 0.3, 0.0), theta=0.3, spread=0.8), gait="march", legs=2),
}


@dataclass
class Handle:
    """A robot loaded into a client: body id, moving joints, their standing targets, the
    links holding a foot sphere, the foot spheres' radii per link, the mass (kg) and
    weight (N), the indices of each leg's hip and knee among the moving joints; ``toes``
    per foot link its spheres' centres (n, 3) in the link's inertial frame (PyBullet's
    collision frames are given in it; a foot link's centre of mass may sit far from its toe:
    the heavy quadruped's calf, a hexapod's calf with its foot link merged in)."""

    body: int
    joints: list[int]
    targets: np.ndarray
    feet: list[int]
    radius: dict[int, float]
    mass: float
    hips: list[int] = field(default_factory=list)
    knees: list[int] = field(default_factory=list)
    height: float = 0.3
    toes: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def weight(self) -> float:
        return self.mass * G


def load(cid: int, spec: Spec, directory: Path, lift: float = 0.0) -> Handle:
    """Load ``spec``'s robot standing ``lift`` (m) above its standing height, joints at their
    targets, the default joint motors off (torque control)."""
    if spec.urdf is not None:
        path, height = spec.urdf, spec.height
        body = p.loadURDF(path, [0, 0, height + lift], flags=spec.flags, physicsClientId=cid)
    else:
        made = spec.make(directory)
        path, height = str(made.path), made.height + 0.002
        body = p.loadURDF(path, [0, 0, height + lift], flags=spec.flags, physicsClientId=cid)
    nj = p.getNumJoints(body, physicsClientId=cid)
    info = [p.getJointInfo(body, j, physicsClientId=cid) for j in range(nj)]
    joints = [j for j in range(nj) if info[j][2] == p.JOINT_REVOLUTE]
    if spec.urdf is not None:
        per = 3
        targets = np.array(list(spec.pose) * (len(joints) // per))
    else:
        per = made.joints_per_leg
        targets = np.array(made.targets)
    hips = list(range(per - 2, len(joints), per))
    knees = list(range(per - 1, len(joints), per))
    radius: dict[int, float] = {}
    toes: dict[int, list[Any]] = {}
    for j in range(-1, nj):
        for s in p.getCollisionShapeData(body, j, physicsClientId=cid):
            if s[2] == p.GEOM_SPHERE and j != -1:
                radius[j] = float(s[3][0])
                toes.setdefault(j, []).append(s[5])
    for j, q in zip(joints, targets, strict=True):
        p.resetJointState(body, j, float(q), physicsClientId=cid)
    p.setJointMotorControlArray(body, joints, p.VELOCITY_CONTROL, forces=[0.0] * len(joints),
                                physicsClientId=cid)
    mass = sum(p.getDynamicsInfo(body, j, physicsClientId=cid)[0] for j in range(-1, nj))
    return Handle(body, joints, targets, sorted(radius), radius, mass, hips, knees, height,
                  {j: np.array(v, dtype=float) for j, v in toes.items()})


def collapse_torques(cid: int, spec: Spec, h: Handle, i: int, cut: int = 300) -> None:
    """Set step ``i``'s joint torques of the collapse probe (issue 18): the PD controller on
    the standing targets until step ``cut``, then on 20 % of them, so that the robot folds
    and falls onto its body (``TORQUE_CONTROL``, torques clipped to the spec's limits)."""
    tgt = h.targets * (1.0 if i < cut else 0.2)
    st = p.getJointStates(h.body, h.joints, physicsClientId=cid)
    q = np.array([s[0] for s in st])
    v = np.array([s[1] for s in st])
    kp, kd, lim = spec.kp * h.mass, spec.kd * h.mass, spec.torque * h.mass
    tau = np.clip(kp * (tgt - q) - kd * v, -lim, lim)
    p.setJointMotorControlArray(h.body, h.joints, p.TORQUE_CONTROL, forces=tau.tolist(),
                                physicsClientId=cid)


def toe_positions(cid: int, h: Handle) -> np.ndarray:
    """The world positions (T, 3) of every foot sphere's centre (the feet's links in order,
    each link's spheres in order): the link's centre-of-mass pose (``getLinkState``) applied
    to the sphere's centre in the inertial frame (:attr:`Handle.toes`)."""
    out = []
    for f in h.feet:
        st = p.getLinkState(h.body, f, computeForwardKinematics=1, physicsClientId=cid)
        rot = np.array(p.getMatrixFromQuaternion(st[1])).reshape(3, 3)
        out.append(np.asarray(st[0]) + h.toes[f] @ rot.T)
    return np.concatenate(out)


def gait_targets(spec: Spec, h: Handle, t: float, t_gait: float | None) -> np.ndarray:
    """The joint targets at time t: the standing pose, and from ``t_gait`` on an open-loop
    gait at ``spec.gait_hz`` (the example's, 2.5 Hz: hip -/+ 0.2 sin, knee -0.4 max(0, cos),
    in the sense of the standing pose's hip angle, times ``spec.gait_scale``; diagonal pairs,
    tripods, or alternating legs)."""
    tgt = h.targets.copy()
    if t_gait is None or t < t_gait:
        return tgt
    legs = len(h.hips)
    if spec.gait == "tripod":
        phase = np.array([0.0, np.pi, np.pi, 0.0, 0.0, np.pi])[:legs]
    elif spec.gait == "march":
        phase = np.array([0.0, np.pi])
    else:
        phase = np.array([0.0, np.pi, np.pi, 0.0])
    ph = 2 * np.pi * spec.gait_hz * (t - t_gait) + phase
    s = float(np.sign(h.targets[h.hips[0]]) or 1.0) * spec.gait_scale
    tgt[h.hips] -= s * 0.2 * np.sin(ph)
    tgt[h.knees] -= s * 0.4 * np.maximum(0.0, np.cos(ph))
    return tgt


def run(spec: Spec, directory: Path, dt: float, seconds: float, *, ours: bool = True,
        materials: tuple[dict[str, float], dict[str, float]] = RUBBER,
        tangential: dict[str, Any] | None = None, t_gait: float | None = None,
        lift: float = 0.0, backend: dict[str, Any] | None = None,
        record_from: float = 0.0, record: bool = True,
        creep_from: float | None = None, motors: float | None = None) -> dict[str, Any]:
    """Run ``spec``'s robot for ``seconds`` at host step ``dt``; records from ``record_from``
    (s) on. ``ours``: the feet's pairs with the ground managed by the backend (Hunt-Crossley
    cr = 0.3, Hertz's k from ``materials`` (ground, robot), ``tangential`` its friction or
    ``{"stick": ...}``); else native contact. Returns per step (K contacts, F feet): the
    keys of the backend's contacts, its overlaps, slips and normal forces, the host's overlap
    per foot link (a list of its contact points' overlaps), the host's slip per foot link,
    the feet's and the base's positions, the base's roll and pitch; the robot's weight (N),
    the standing height, the wall time of the loop (s) and its thread CPU time (``cpu``, s: the
    host steps alone, no set-up), the host steps. ``record`` False:
    only the base's pose at the end (the loop's wall time is then the controller's and the
    stepping's alone: benchmarks). ``creep_from`` (s): the toes' positions then
    (:func:`toe_positions`) are kept as ``toes0``, those of the last step as ``toes``
    (:func:`creep`). ``motors`` (N m): PyBullet's POSITION_CONTROL motors with this
    force limit hold the targets instead of the PD under torque control."""
    with ground_world(G, dt) as (cid, plane):
        h = load(cid, spec, directory, lift)
        contacts = None
        if ours:
            from mbplugin.bullet import BulletContacts

            ground, foot = materials
            tang = {"friction": FRICTION} if tangential is None else tangential
            contacts = BulletContacts(cid, manage=[(plane, (h.body, f)) for f in h.feet],
                                      law={"name": "hunt_crossley", "cr": 0.3},
                                      materials={plane: ground, h.body: foot}, rtol=1e-8,
                                      **tang, **(backend or {}))
        kp, kd = spec.kp * h.mass, spec.kd * h.mass
        limit = spec.torque * h.mass
        n = round(seconds / dt)
        n0 = round(record_from / dt)
        nc = -1 if creep_from is None else round(creep_from / dt)
        toes0 = None
        rec: dict[str, list[Any]] = {k: [] for k in (
            "keys", "links", "delta", "slip", "force", "host_d", "host_slip", "feet", "base",
            "tilt")}
        wall, cpu = time.perf_counter(), time.thread_time()
        for i in range(n):
            js = p.getJointStates(h.body, h.joints, physicsClientId=cid)
            q = np.array([x[0] for x in js])
            qd = np.array([x[1] for x in js])
            tgt = gait_targets(spec, h, i * dt, t_gait)
            tau = np.clip(kp * (tgt - q) - kd * qd, -limit, limit).tolist()

            def control(tau: list[float] = tau, tgt: np.ndarray = tgt) -> None:
                if motors is None:
                    p.setJointMotorControlArray(h.body, h.joints, p.TORQUE_CONTROL, forces=tau,
                                                physicsClientId=cid)
                else:
                    p.setJointMotorControlArray(h.body, h.joints, p.POSITION_CONTROL,
                                                targetPositions=tgt.tolist(),
                                                forces=[motors] * len(h.joints),
                                                physicsClientId=cid)

            if contacts is not None:
                st = contacts.step(control=control)
            else:
                control()
                p.stepSimulation(physicsClientId=cid)
            if i == nc:
                toes0 = toe_positions(cid, h)
            if i < n0 or (not record and i < n - 1):
                continue
            if contacts is not None:
                rec["keys"].append(st.keys.copy())
                rec["links"].append(st.links[:, 1, 1].copy())
                rec["delta"].append(st.delta.copy())
                rec["slip"].append(st.slip.copy())
                rec["force"].append(st.normal_force.copy())
            host_d, host_s, feet = {}, {}, []
            for f in h.feet:
                cps = p.getClosestPoints(h.body, plane, 0.005, f, -1, physicsClientId=cid)
                host_d[f] = sorted(-c[8] for c in cps)
                st_f = p.getLinkState(h.body, f, computeLinkVelocity=1,
                                      computeForwardKinematics=1, physicsClientId=cid)
                feet.append(st_f[0])
                if cps:
                    # the host's velocity of the foot's material point at its contact point
                    # (midway between the two surfaces, as the contact layer's point)
                    mid = 0.5 * (np.asarray(cps[0][5]) + np.asarray(cps[0][6]))
                    r = mid - np.asarray(st_f[0])
                    v = np.asarray(st_f[6]) + np.cross(st_f[7], r)
                    host_s[f] = float(math.hypot(v[0], v[1]))
            rec["host_d"].append(host_d)
            rec["host_slip"].append(host_s)
            rec["feet"].append(feet)
            pos, orn = p.getBasePositionAndOrientation(h.body, physicsClientId=cid)
            rec["base"].append(pos)
            rec["tilt"].append(p.getEulerFromQuaternion(orn)[:2])
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        out: dict[str, Any] = dict(rec)
        out["feet"] = np.array(rec["feet"])
        out["base"] = np.array(rec["base"])
        out["tilt"] = np.array(rec["tilt"])
        out.update(weight=h.weight, height=h.height, wall=wall, cpu=cpu, steps=n,
                   feet_links=tuple(h.feet),
                   radius=h.radius, toes0=toes0,
                   toes=None if toes0 is None else toe_positions(cid, h))
        return out


def fell(rec: dict[str, Any]) -> bool:
    """Whether the base went below FALL_HEIGHT of its standing height or tilted beyond
    FALL_TILT (rad) in roll or pitch at any recorded step."""
    return bool(np.any(rec["base"][:, 2] < FALL_HEIGHT * rec["height"])
                or np.any(np.abs(rec["tilt"]) > FALL_TILT))


def upright(rec: dict[str, Any]) -> int:
    """The number of recorded steps before the robot first counts as fallen (:func:`fell`)."""
    down = ((rec["base"][:, 2] < FALL_HEIGHT * rec["height"])
            | np.any(np.abs(rec["tilt"]) > FALL_TILT, axis=1))
    return int(np.argmax(down)) if down.any() else len(down)


def hertz_k(materials: tuple[dict[str, float], dict[str, float]], radius: float) -> float:
    """Hertz's sphere-on-half-space stiffness k = 4/3 E* sqrt(R) (N/m^1.5), E* from both
    materials (Johnson, *Contact Mechanics*, 1985, Eq. 4.22-4.23), written out here: the
    tests' expected overlaps do not come from mbplugin."""
    (a, b) = materials
    e_star = 1.0 / ((1 - a["nu"] ** 2) / a["E"] + (1 - b["nu"] ** 2) / b["E"])
    return 4.0 / 3.0 * e_star * math.sqrt(radius)


def _per_link(rec: dict[str, Any], i: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Step i's loaded contacts per foot link: (link, the backend's contact indices sorted by
    overlap, the host's overlaps sorted), the backend's and the host's matched in order (fewer
    host points than loaded contacts: a mismatch, see :func:`stance_figures`)."""
    out = []
    links, force, delta = rec["links"][i], rec["force"][i], rec["delta"][i]
    for f in rec["feet_links"]:
        # loaded: a normal force above rounding (a contact apart at the step's end carries
        # none; friction's rounding can leave ~1e-29 N along the normal) at a positive overlap
        idx = np.flatnonzero((links == f) & (force > 1e-9 * rec["weight"]) & (delta > 0))
        if len(idx):
            # the host's points of the link within 5 mm, the deepest as many as are loaded
            # (a point the host sees just apart or touching is no loaded contact)
            host = np.array(rec["host_d"][i][f])[-len(idx):]
            out.append((f, idx[np.argsort(delta[idx])], host))
    return out


def stance_figures(rec: dict[str, Any],
                   materials: tuple[dict[str, float], dict[str, float]]) -> dict[str, float]:
    """Figures of a recorded (quiet) stance against what the host shows and the closed form:
    ``sum_f`` the mean over the steps of the summed normal force over the weight; ``overlap``
    the largest |host - backend| / backend overlap of a loaded contact at any step (a count
    mismatch of a link's contacts: inf); ``hertz`` the largest |host - static Hertz| / static
    Hertz over the contacts, the host's mean overlap of each against (F / k)^(2/3) of its mean
    force; ``slip`` the largest |backend - host| slip of a loaded foot less 2 % of the host's
    (m/s; <= 1e-5 passes); ``loaded`` the loaded contacts seen."""
    worst_d, worst_s, loaded = 0.0, -np.inf, 0
    host_of: dict[int, list[float]] = {}
    force_of: dict[int, list[float]] = {}
    link_of: dict[int, int] = {}
    sums = []
    for i in range(len(rec["force"])):
        sums.append(float(np.sum(rec["force"][i])) / rec["weight"])
        for f, idx, host in _per_link(rec, i):
            if len(host) != len(idx):
                worst_d = np.inf
                continue
            ours = rec["delta"][i][idx]
            loaded += len(idx)
            worst_d = max(worst_d, float(np.max(np.abs(host - ours) / ours)))
            for key, h, fn in zip(rec["keys"][i][idx], host, rec["force"][i][idx],
                                  strict=True):
                host_of.setdefault(int(key), []).append(float(h))
                force_of.setdefault(int(key), []).append(float(fn))
                link_of[int(key)] = f
            hs = rec["host_slip"][i].get(f)
            if hs is not None and len(idx) == 1:
                worst_s = max(worst_s, abs(float(rec["slip"][i][idx[0]]) - hs) - 0.02 * hs)
    worst_h = 0.0
    for key, hosts in host_of.items():
        k = hertz_k(materials, rec["radius"][link_of[key]])
        static = (np.mean(force_of[key]) / k) ** (2.0 / 3.0)
        worst_h = max(worst_h, abs(float(np.mean(hosts)) / static - 1.0))
    return {"sum_f": float(np.mean(sums)) if sums else float("nan"), "overlap": worst_d,
            "hertz": worst_h, "slip": float(worst_s), "loaded": loaded}


def creep(rec: dict[str, Any]) -> float:
    """The largest horizontal displacement (m) of a toe (a foot sphere's centre,
    :func:`toe_positions`) from ``creep_from`` (:func:`run`) to the last step. The toe, not
    the foot link's centre of mass: on a robot whose foot is its calf's own sphere the calf's
    centre of mass sits ~0.2 m above the toe and swings with the body's slow sway under the
    joint PD (the heavy quadruped: 0.7 Hz, still ~1 mm at 10 s), which is no creep."""
    return float(np.max(np.hypot(*(rec["toes"] - rec["toes0"])[:, :2].T)))


def stance_failures(fig: dict[str, float]) -> list[str]:
    """The acceptance tolerances :func:`stance_figures` misses (empty: all met)."""
    out = []
    if fig["loaded"] <= 0:
        out.append("no loaded contact")
    if not abs(fig["sum_f"] - 1.0) <= SUM_F:
        out.append(f"sum F / W = {fig['sum_f']:.4f}")
    if not fig["overlap"] <= OVERLAP:
        out.append(f"host vs backend overlap {fig['overlap']:.3g}")
    if not fig["hertz"] <= HERTZ:
        out.append(f"host vs static Hertz {fig['hertz']:.3g}")
    if not fig["slip"] <= SLIP:
        out.append(f"slip off by {fig['slip']:.3g} m/s beyond 2 %")
    return out


def implicit_root(store: Any, batch: Any, W: np.ndarray, friction: Any, stick: Any,
                  compiled: bool, dt: float, d0: np.ndarray, d_lin: np.ndarray,
                  u0: np.ndarray, u_lin: np.ndarray) -> tuple[np.ndarray, float]:
    """The implicit step's impulse (K, 3) N s from the state (``d0`` (K,) m, ``u0`` (K, 3) m/s;
    linear prediction ``d_lin``, ``u_lin``), checked to be a root of R(P) = P - dt F(P) within
    1e-8 of its largest entry (an independent evaluation of the end force), and that scale."""
    from mbplugin.pipeline.implicit import ImplicitStep

    k = len(d0)
    step = ImplicitStep(store, batch, W, friction, 1e-10, stick, None, compiled=compiled)
    step.begin(0.0, d0, u0)
    res = step.solve(dt, d_lin, u_lin, np.zeros((k, 3)))
    F, _ = step._end_force(res.delta, res.u, dt)
    scale = float(np.max(np.abs(res.impulse))) + 1e-12
    assert np.max(np.abs(res.impulse - dt * F)) <= 1e-8 * scale
    return res.impulse, scale
