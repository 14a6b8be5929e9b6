"""Generated MJCF scenes, written as MuJoCo users write them (issue 21), and the rig that drops
them on managed ground.

:func:`random_mjcf` (seeded) writes a torso on a ``<freejoint/>`` (four legs) or on a vertical
``slide`` rail (one to four legs), each leg on a ``hinge``, ``slide`` or ``ball`` joint (hinges
and slides held at 0 by ``<position>`` actuators, balls by the joint's own ``stiffness`` and
``damping``), its foot a capsule, ellipsoid, cylinder, box or sphere next to a shin capsule that
``contype``/``conaffinity`` keep off the ground (several geoms per body); some feet with a
``margin`` and ``gap``; the ground a plane, a plane tilted by 3-10 degrees (free torsos
only) or a big box; a
free sphere on the ground whose pair is left to MuJoCo; ``<option timestep>`` 1-4 ms and the
integrator ``Euler``, ``implicitfast`` or ``RK4``.

:func:`run` manages the feet-ground pairs and checks (tolerances of
tests/urdf_fuzz_rig.py): no exception or NaN; at rest the summed normal force against m g
cos(tilt) within 1 %; each loaded foot's deepest overlap against MuJoCo's ``mj_geomDistance``
within 2 %; a sphere foot's static overlap against Hertz's (F / k)^(2/3) within 5 %; the
unmanaged sphere's trajectory bitwise that of the native run (MuJoCo stepping its own problem
without the managed pairs: with them in it, MuJoCo's solver rounds the sphere's rows
differently by ~1e-15 m, natively too); or a clear one-line
``ParameterError`` at construction (``refused``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

G = 9.81
#: Hertz's k (N/m^1.5) given for every pair (a 2 cm rubber sphere's: tests/urdf_fuzz_rig.py)
K = 4.0 / 3.0 * (1.0 / ((1 - 0.45**2) / 1e7 + (1 - 0.4**2) / 1e9)) * math.sqrt(0.02)
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": K}
FRICTION = {"mu": 0.8, "v_eps": 1e-2}
FEET = ("capsule", "ellipsoid", "cylinder", "box", "sphere")
GROUNDS = ("plane", "tilted", "box")
INTEGRATORS = ("Euler", "implicitfast", "RK4")
SECONDS, WINDOW = 1.2, 0.2  # s: simulated, and the rest window at its end
SUM_F, OVERLAP, HERTZ = 0.01, 0.02, 0.05


@dataclass
class Scene:
    """A generated MJCF scene: ``xml``, and what the checks need."""

    seed: int
    xml: str
    feet: list[str] = field(default_factory=list)  # foot geom names
    foot_kind: dict[str, str] = field(default_factory=dict)
    ground: str = "plane"
    tilt: float = 0.0  # rad
    root: str = "free"
    integrator: str = "implicitfast"
    timestep: float = 0.002
    joints: list[str] = field(default_factory=list)

    def label(self) -> str:
        kinds = sorted(set(self.foot_kind.values()))
        return (f"{self.root} {'/'.join(sorted(set(self.joints)))} feet {','.join(kinds)} "
                f"ground {self.ground} {self.integrator} dt {self.timestep * 1e3:.0f} ms")


def _foot(rng: np.random.Generator, name: str, kind: str, z: float) -> tuple[str, float]:
    """A foot geom of ``kind`` whose lowest point is ``z`` (m) below the leg's frame; returns
    (its MJCF, its mass in kg)."""
    r = float(rng.uniform(0.015, 0.03))
    extra = ""
    if rng.random() < 0.3:
        extra = ' margin="0.002" gap="0.001"'
    if kind == "sphere":
        return f'<geom name="{name}" type="sphere" size="{r}" pos="0 0 {-z + r}"{extra}/>', 0.05
    if kind == "capsule":  # lying along x
        h = float(rng.uniform(0.02, 0.05))
        return (f'<geom name="{name}" type="capsule" size="{r} {h}" pos="0 0 {-z + r}" '
                f'euler="0 90 0"{extra}/>', 0.05)
    if kind == "ellipsoid":
        a, b = r * float(rng.uniform(1.0, 1.8)), r * float(rng.uniform(0.8, 1.5))
        return (f'<geom name="{name}" type="ellipsoid" size="{a} {b} {r}" '
                f'pos="0 0 {-z + r}"{extra}/>', 0.05)
    if kind == "cylinder":  # upright: its flat face down
        h = float(rng.uniform(0.01, 0.02))
        return (f'<geom name="{name}" type="cylinder" size="{r} {h}" pos="0 0 {-z + h}"'
                f'{extra}/>', 0.05)
    h = float(rng.uniform(0.008, 0.015))
    return (f'<geom name="{name}" type="box" size="{r} {r * 0.8} {h}" pos="0 0 {-z + h}"'
            f'{extra}/>', 0.05)


def random_mjcf(seed: int) -> Scene:
    """The MJCF scene of ``seed`` (module docstring)."""
    rng = np.random.default_rng(seed)
    sc = Scene(seed=seed, xml="")
    sc.timestep = float(rng.choice([0.001, 0.002, 0.003, 0.004]))
    sc.integrator = str(rng.choice(INTEGRATORS))
    sc.ground = str(rng.choice(GROUNDS))
    sc.root = "free" if rng.random() < 0.6 else "slide"
    if sc.ground == "tilted":
        sc.tilt = math.radians(float(rng.uniform(3.0, 10.0)))
        if sc.root == "slide":
            # a rail on a slope takes horizontal load: the split of the support between the
            # normal forces and friction is then statically indeterminate (no m g cos(tilt))
            sc.ground, sc.tilt = "plane", 0.0
    if sc.ground == "box":
        ground = '<geom name="ground" type="box" size="2 2 0.1" pos="0 0 -0.1"/>'
    else:
        ground = (f'<geom name="ground" type="plane" size="5 5 0.1" '
                  f'euler="{math.degrees(sc.tilt)} 0 0"/>')
    mass = float(rng.uniform(2.0, 10.0))
    hx, hy, hz = 0.12, 0.08, 0.03
    n_legs = 4 if sc.root == "free" else int(rng.integers(1, 5))
    corners = [(hx, hy), (-hx, -hy), (hx, -hy), (-hx, hy)][:n_legs]
    if n_legs == 1:
        corners = [(0.0, 0.0)]
    legs, acts = [], []
    kind0 = str(rng.choice(FEET))
    euler = sc.integrator == "Euler"

    def damp(c: float) -> str:
        # Euler takes joint damping implicitly but an actuator's kv explicitly (unstable on
        # a 0.25 kg leg at 3-4 ms natively too): MuJoCo users put the damping on the joint
        return f' damping="{c}"' if euler else ""

    def kv(c: float) -> str:
        return "" if euler else f' kv="{c}"'

    for i, (x, y) in enumerate(corners):
        kind = kind0 if rng.random() < 0.5 else str(rng.choice(FEET))
        jt = str(rng.choice(["hinge", "slide", "ball"]))
        length = float(rng.uniform(0.06, 0.12))
        name = f"foot{i}"
        foot, _ = _foot(rng, name, kind, length)
        sc.feet.append(name)
        sc.foot_kind[name] = kind
        sc.joints.append(jt)
        if jt == "ball":
            joint = f'<joint name="j{i}" type="ball" stiffness="50" damping="2"/>'
        elif jt == "hinge":
            joint = (f'<joint name="j{i}" type="hinge" axis="0 1 0" range="-1 1"'
                     f'{damp(5)}/>')
            acts.append(f'<position joint="j{i}" kp="200"{kv(5)}/>')
        else:
            joint = (f'<joint name="j{i}" type="slide" axis="0 0 1" range="-0.03 0.03"'
                     f'{damp(100)}/>')
            acts.append(f'<position joint="j{i}" kp="5000"{kv(100)}/>')
        legs.append(
            f'<body name="leg{i}" pos="{x} {y} {-hz}">{joint}'
            f'<geom name="shin{i}" type="capsule" fromto="0 0 0 0 0 {-length * 0.6}" '
            f'size="0.01" mass="0.2" contype="2" conaffinity="2"/>'
            f'{foot}</body>')
    lift = 0.3
    rootj = ('<freejoint name="root"/>' if sc.root == "free"
             else '<joint name="root" type="slide" axis="0 0 1"/>')
    ball = ('<body name="ball" pos="0.6 0.6 0.3"><freejoint/>'
            '<geom name="ball" type="sphere" size="0.03" mass="0.2"/></body>')
    sc.xml = (
        f'<mujoco model="gen_mjcf_{seed}"><option timestep="{sc.timestep}" '
        f'integrator="{sc.integrator}"/>'
        '<default><geom friction="0.8 0.005 0.0001" density="1000"/></default>'
        f'<worldbody>{ground}'
        f'<body name="torso" pos="0 0 {lift}">{rootj}'
        f'<geom name="torso" type="box" size="{hx} {hy} {hz}" mass="{mass}" contype="2" '
        f'conaffinity="2"/>{"".join(legs)}</body>{ball}</worldbody>'
        f'<actuator>{"".join(acts)}</actuator></mujoco>')
    return sc


def _other(geoms: np.ndarray, ground: int) -> np.ndarray:
    """Per contact row of ``geoms`` (K, 2): the geom that is not ``ground``."""
    if not len(geoms):
        return np.zeros(0, dtype=np.int64)
    return np.where(geoms[:, 0] == ground, geoms[:, 1], geoms[:, 0])


def _loaded(force: np.ndarray, delta: np.ndarray, weight: float) -> np.ndarray:
    return (force > 1e-3 * weight) & (delta > 0)


def _drop(mj: Any, m: Any, d: Any, sc: Scene) -> None:
    """Place the torso so that its lowest foot is 5 mm above the ground (along z)."""
    ground = mj.mj_name2id(m, mj.mjtObj.mjOBJ_GEOM, "ground")
    mj.mj_forward(m, d)
    feet = [mj.mj_name2id(m, mj.mjtObj.mjOBJ_GEOM, f) for f in sc.feet]
    low = min(mj.mj_geomDistance(m, d, ground, g, 10.0, None) for g in feet)
    d.qpos[2 if sc.root == "free" else 0] -= low - 0.005
    mj.mj_forward(m, d)


def run(sc: Scene, seconds: float = SECONDS) -> dict[str, Any]:
    """Drop ``sc`` with its feet-ground pairs managed; the figures of the module docstring.
    ``refused``: the construction's ParameterError (one line), or None."""
    import mujoco as mj

    from mbplugin.errors import ParameterError
    from mbplugin.mujoco import MujocoContacts, geom

    m = mj.MjModel.from_xml_string(sc.xml)
    d = mj.MjData(m)
    _drop(mj, m, d, sc)
    # the native twin: MuJoCo's own problem without the managed pairs (its solver iterates its
    # constraints together, so the ball's rows round differently, by ~1e-15 m, when the feet's
    # contacts are in the same problem: measured natively, feet colliding or not)
    native_m = mj.MjModel.from_xml_string(sc.xml)
    for f in sc.feet:
        g = mj.mj_name2id(native_m, mj.mjtObj.mjOBJ_GEOM, f)
        native_m.geom_contype[g] = native_m.geom_conaffinity[g] = 0
    nd = mj.MjData(native_m)
    nd.qpos[:] = d.qpos
    mj.mj_forward(native_m, nd)
    ground = mj.mj_name2id(m, mj.mjtObj.mjOBJ_GEOM, "ground")
    feet = [mj.mj_name2id(m, mj.mjtObj.mjOBJ_GEOM, f) for f in sc.feet]
    ball = mj.mj_name2id(m, mj.mjtObj.mjOBJ_BODY, "ball")
    bq = slice(int(m.jnt_qposadr[m.body_jntadr[ball]]), int(m.jnt_qposadr[m.body_jntadr[ball]]) + 7)
    torso = mj.mj_name2id(m, mj.mjtObj.mjOBJ_BODY, "torso")
    weight = float(m.body_subtreemass[torso]) * G
    fig: dict[str, Any] = {"refused": None, "exception": None}
    try:
        c = MujocoContacts(m, d, manage=[("ground", geom(f)) for f in sc.feet], law=LAW,
                           friction=FRICTION, rtol=1e-6)
    except ParameterError as e:
        fig["refused"] = str(e).splitlines()[0]
        return fig
    n = round(seconds / m.opt.timestep)
    nw = round(WINDOW / m.opt.timestep)
    sums, speeds = [], []
    hz_f: dict[int, list[float]] = {g: [] for g in feet}
    hz_d: dict[int, list[float]] = {g: [] for g in feet}
    hz_n: dict[int, list[int]] = {g: [] for g in feet}
    ball_off = 0.0  # m: the unmanaged ball's largest distance from its native twin
    # MuJoCo's distances at the step's end state: after a step d's kinematics are its start's
    # (mj_step1's), the backend's overlaps (st.delta) its end's
    probe = mj.MjData(m)

    def gap(g: int) -> float:
        probe.qpos[:] = d.qpos
        mj.mj_kinematics(m, probe)
        return float(mj.mj_geomDistance(m, probe, ground, g, 0.01, None))

    try:
        for i in range(n):
            st = c.step()
            mj.mj_step(native_m, nd)
            ball_off = max(ball_off, float(np.max(np.abs(d.qpos[bq] - nd.qpos[bq]))))
            if i >= n - nw:
                gs = _other(st.geoms, ground)
                sums.append(float(np.sum(st.normal_force)))
                speeds.append(float(np.sqrt(np.mean(d.qvel[:6 if sc.root == "free" else 1] ** 2))))
                load = _loaded(st.normal_force, st.delta, weight)
                for g in feet:
                    hz_f[g].append(float(np.sum(st.normal_force[gs == g])))
                    hz_d[g].append(-gap(g))
                    hz_n[g].append(int(np.sum(load & (gs == g))))
    except Exception as e:  # the sweep reports it
        fig["exception"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        c.release()
        return fig
    fig["nan"] = bool(not np.all(np.isfinite(d.qpos)))
    fig["rest"] = float(np.mean(speeds))
    fig["sum_f"] = float(np.mean(sums)) / (weight * math.cos(sc.tilt))
    worst, at = 0.0, ""
    if len(st.normal_force):
        gs = _other(st.geoms, ground)
        load = _loaded(st.normal_force, st.delta, weight)
        for g in np.unique(gs[load]).tolist():
            host = -gap(g)
            ours = float(np.max(st.delta[load & (gs == g)]))
            err = abs(host - ours) / ours
            if err > worst:
                worst, at = err, f"{sc.foot_kind[mj.mj_id2name(m, mj.mjtObj.mjOBJ_GEOM, g)]}"
    fig["overlap"], fig["overlap_at"] = worst, at
    hz = [abs(float(np.mean(hz_d[g])) / (float(np.mean(hz_f[g])) / K) ** (2 / 3) - 1.0)
          for g in feet if sc.foot_kind[mj.mj_id2name(m, mj.mjtObj.mjOBJ_GEOM, g)] == "sphere"
          and min(hz_n[g]) == 1 and np.mean(hz_f[g]) > 1e-2 * weight]
    fig["hertz"], fig["hertz_n"] = (max(hz) if hz else 0.0), len(hz)
    fig["ball_off"] = ball_off
    c.release()
    return fig


def verdict(fig: dict[str, Any]) -> list[str]:
    """The failed checks of :func:`run`'s figures (empty: passed, or refused)."""
    if fig["refused"]:
        return []
    if fig["exception"]:
        return [f"exception {fig['exception']}"]
    out = []
    if fig["nan"]:
        out.append("NaN")
    if abs(fig["sum_f"] - 1.0) > SUM_F:
        out.append(f"sum F / (m g cos) {fig['sum_f']:.4f}")
    if fig["overlap"] > OVERLAP:
        out.append(f"overlap {fig['overlap']:.3g} ({fig['overlap_at']})")
    if fig["hertz"] > HERTZ:
        out.append(f"hertz {fig['hertz']:.3g}")
    if fig["ball_off"] != 0.0:
        out.append(f"unmanaged ball off native by {fig['ball_off']:.3g} m")
    return out
