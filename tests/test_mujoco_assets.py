"""What MuJoCo users bring, on managed ground: a few representative assets of
benchmarks/assets_sweep_mujoco.py (the sweep itself stays out of the suite).

Expected values are closed forms (the static load m g shared by the feet, Hertz's static
overlap (F / k)^(2/3) of each contact, a geometric resting height) and native MuJoCo's own
outcome in the same test.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pybullet_data
import pytest
from mujoco_world import world

from mbplugin.errors import ParameterError
from mbplugin.mujoco import MujocoContacts, geom

G, K = 9.81, 1e7
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": K}
MATERIAL = {"E": 1e8, "nu": 0.4}


def _mjcf(body: str, extra: str = "") -> str:
    return ('<mujoco><option timestep="0.002"/><worldbody>'
            '<geom name="floor" type="plane" size="5 5 .1"/>'
            f"{body}</worldbody>{extra}</mujoco>")


def test_law_without_k_on_a_flat_contact_is_refused_at_construction() -> None:
    """A box on the floor has no Hertz radius (corners on a plane): a law without k is refused
    when the backend is made, naming the geoms, with the model untouched (it used to fail at
    the first contact, mid-run)."""
    m, d = world(_mjcf('<body name="b" pos="0 0 .2"><freejoint/>'
                       '<geom name="brick" type="box" size=".1 .07 .05" mass="1"/></body>'))
    before = (m.geom_contype.copy(), m.geom_conaffinity.copy())
    with pytest.raises(ParameterError, match=r"no 'k'.*'floor'.*'brick'"):
        MujocoContacts(m, d, manage=["floor"], law={"name": "hunt_crossley", "cr": 0.5},
                       material=MATERIAL)
    assert np.array_equal(m.geom_contype, before[0])
    assert np.array_equal(m.geom_conaffinity, before[1])
    # a smooth shape on the same floor is fine without k
    m2, d2 = world(_mjcf('<body name="b" pos="0 0 .2"><freejoint/>'
                         '<geom type="sphere" size=".1" mass="1"/></body>'))
    MujocoContacts(m2, d2, manage=["floor"], law={"name": "hunt_crossley", "cr": 0.5},
                   material=MATERIAL)


def _hexapod() -> str:
    """A box torso on six two-link capsule legs (hinges held by position servos), sphere
    feet: the sweep's ``gen/hexapod``."""
    legs, acts = [], []
    for i in range(6):
        ang = 2 * np.pi * (i + 0.5) / 6
        x, y = 0.15 * np.cos(ang), 0.1 * np.sin(ang)
        legs.append(
            f'<body pos="{x:.4f} {y:.4f} 0"><joint name="hip{i}" axis="0 1 0" '
            'armature=".01" damping=".5"/><geom type="capsule" size=".015" '
            'fromto="0 0 0 0 0 -.12" mass=".2"/><body pos="0 0 -.12"><joint name="knee'
            f'{i}" axis="0 1 0" armature=".01" damping=".5"/><geom type="capsule" '
            f'size=".012" fromto="0 0 0 0 0 -.12" mass=".1"/><geom name="foot{i}" '
            'type="sphere" size=".02" pos="0 0 -.12" mass=".05"/></body></body>')
        acts.append(f'<position joint="hip{i}" kp="60"/><position joint="knee{i}" kp="60"/>')
    return _mjcf('<body name="torso" pos="0 0 .3"><freejoint/><geom type="box" '
                 'size=".18 .12 .04" mass="4"/>' + "".join(legs) + "</body>",
                 "<actuator>" + "".join(acts) + "</actuator>")


def test_hinge_legged_robot_stands_on_its_feet_at_hertz_overlaps() -> None:
    """Dropped 2 cm onto managed ground, the hexapod comes to rest on its six feet: the feet
    carry its weight (sum of normal forces = m g), each at Hertz's static overlap for its own
    force, and the torso's height is the legs' length less that overlap."""
    m, d = world(_hexapod())
    c = MujocoContacts(m, d, manage=["floor"], law=LAW, material=MATERIAL)
    for _ in range(300):
        info = c.step()
    weight = float(m.body_mass.sum()) * G
    feet = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"foot{i}") for i in range(6)}
    assert info.contacts == 6
    assert set(info.geoms[:, 1].tolist()) == feet
    fn = np.asarray(info.normal_force)
    assert float(fn.sum()) == pytest.approx(weight, rel=1e-3)
    assert np.asarray(info.delta) == pytest.approx((fn / K) ** (2 / 3), rel=1e-3)
    assert np.max(np.abs(d.qvel)) < 1e-4
    # legs straight (0.24 m to the feet's centres), feet of radius 0.02, sunk by the overlap
    assert float(d.qpos[2]) == pytest.approx(0.26 - float(np.mean(info.delta)), abs=2e-5)


def test_filters_exclude_and_visual_geoms_as_native_mujoco() -> None:
    """contype/conaffinity, <exclude> and a visual geom decide what is managed as they decide
    what MuJoCo collides: a sphere in another collision class falls through the floor bit for
    bit as natively (nothing of it is managed), a box excluded from the box below falls through
    it onto the floor, and the visual sphere around the lower box is never touched."""
    xml = _mjcf(
        '<body name="low" pos="0 0 .06"><freejoint/><geom name="lowbox" type="box" '
        'size=".1 .1 .05" mass="1"/><geom type="sphere" size=".3" contype="0" '
        'conaffinity="0" mass="0"/></body>'
        '<body name="high" pos="0 0 .17"><freejoint/><geom name="highbox" type="box" '
        'size=".1 .1 .05" mass="1"/></body>'
        '<body name="ghost" pos=".5 0 .3"><freejoint/><geom type="sphere" size=".05" '
        'mass="1" contype="2" conaffinity="2"/></body>',
        '<contact><exclude body1="low" body2="high"/></contact>')
    mn, dn = world(xml)
    m, d = world(xml)
    c = MujocoContacts(m, d, manage=["floor"], law=LAW, material=MATERIAL)
    ids = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, n)
           for n in ("floor", "lowbox", "highbox")}
    assert sorted(map(tuple, c.pairs.tolist())) == sorted(
        [(ids["floor"], ids["lowbox"]), (ids["floor"], ids["highbox"])])
    for _ in range(400):
        mujoco.mj_step(mn, dn)
        info = c.step()
    ghost = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "ghost")
    qa = int(m.jnt_qposadr[m.body_jntadr[ghost]])
    assert np.array_equal(d.qpos[qa:qa + 7], dn.qpos[qa:qa + 7])
    assert float(d.qpos[qa + 2]) < -0.5  # through the floor
    # both boxes on the floor, four corners each at Hertz's overlap for m g / 4
    assert info.contacts == 8
    ds = (1.0 * G / 4 / K) ** (2 / 3)
    assert np.asarray(info.delta) == pytest.approx(ds, rel=1e-3)
    for name in ("low", "high"):
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        assert float(d.xpos[b, 2]) == pytest.approx(0.05 - ds, abs=1e-6)


def test_pybullet_data_urdf_through_mujocos_importer_rests_at_hertz_overlap() -> None:
    """pybullet_data's sphere2.urdf loaded by MuJoCo's URDF importer (its root link a free
    body), dropped on managed ground: it rests at its radius less Hertz's static overlap for
    m g, where native MuJoCo rests on its radius less its own soft penetration."""
    spec = mujoco.MjSpec.from_file(pybullet_data.getDataPath() + "/sphere2.urdf")
    spec.compiler.fusestatic = False
    root = spec.worldbody.bodies[0]
    root.add_freejoint()
    root.pos = [0, 0, 0.6]
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, .1])
    m = spec.compile()
    g = next(i for i in range(m.ngeom) if m.geom_type[i] == mujoco.mjtGeom.mjGEOM_SPHERE)
    r, mass = float(m.geom_size[g, 0]), float(m.body_mass.sum())
    d = mujoco.MjData(m)
    c = MujocoContacts(m, d, manage=[geom("floor")], law=LAW, material=MATERIAL)
    for _ in range(500):
        info = c.step()
    ds = (mass * G / K) ** (2 / 3)
    assert info.contacts == 1
    assert float(info.delta[0]) == pytest.approx(ds, rel=1e-3)
    assert float(d.geom_xpos[g, 2]) == pytest.approx(r - ds, abs=1e-3 * ds)


def _prism(sections: int, z: float, mu: float) -> str:
    """A free mesh prism (radius 5 cm, height 10 cm, 1 kg, ``sections`` sides) standing on
    its face ``z`` above the floor's plane (its centre of mass), friction ``mu``."""
    import trimesh

    tm = trimesh.creation.cylinder(radius=0.05, height=0.1, sections=sections)
    verts = " ".join(f"{x:.12f}" for x in tm.vertices.ravel())
    return ('<mujoco><option timestep="0.002"/><asset>'
            f'<mesh name="prism" vertex="{verts}"/></asset><worldbody>'
            f'<geom name="floor" type="plane" size="5 5 .1" friction="{mu}"/>'
            f'<body name="p" pos="0 0 {z}"><freejoint/><geom type="mesh" mesh="prism" '
            f'mass="1" friction="{mu}"/></body></worldbody></mujoco>')


SECTIONS, K_PRISM = 300, 1e6


def test_face_of_more_corners_than_the_dense_fallback_takes_rests_and_slides() -> None:
    """A 300-sided prism on its face: 300 coplanar corner contacts of one body, a stalled
    Gauss-Seidel group larger than the dense fallback's DENSE_MAX (main: IntegrationError
    after 20000 sweeps at the first step). At rest every corner carries m g / 300 at Hertz's
    overlap; pushed at 0.5 m/s with mu = 0.5 it stops after Coulomb's distance v0^2 / (2 mu g)
    less MuJoCo's semi-implicit Euler's v0 dt / 2."""
    from mbplugin.pipeline.large_groups import DENSE_MAX

    assert SECTIONS > DENSE_MAX
    law = {"name": "hunt_crossley", "cr": 0.3, "k": K_PRISM}
    ds = (G / SECTIONS / K_PRISM) ** (2 / 3)
    m, d = world(_prism(SECTIONS, 0.05 - ds, 0.5))
    c = MujocoContacts(m, d, manage=["floor"], law=law, material=MATERIAL)
    for _ in range(20):
        info = c.step()
    assert info.contacts == SECTIONS
    assert np.asarray(info.delta) == pytest.approx(ds, rel=1e-4)
    assert float(np.sum(info.normal_force)) == pytest.approx(G, rel=1e-6)
    mu, v0, dt = 0.5, 0.5, 0.002
    d.qvel[0] = v0
    for _ in range(60):  # Coulomb's stopping time v0 / (mu g) = 0.10 s: 51 steps
        c.step()
    assert abs(float(d.qvel[0])) < 1e-3
    assert float(d.qpos[0]) == pytest.approx(v0 ** 2 / (2 * mu * G) - v0 * dt / 2, rel=2e-3)


@pytest.mark.parametrize("condim", [1, 3])
def test_condim_one_is_frictionless_as_native_mujoco(condim: int) -> None:
    """A box pushed along the floor, MuJoCo's default friction 1: with ``condim="1"`` on the
    box and the floor (MuJoCo's frictionless contact; a pair's condim is the larger of its
    two geoms') it keeps
    its speed, natively and with the backend's default friction from MuJoCo's geoms (the
    backend used to apply mu = 1 regardless); with condim 3 it stops after Coulomb's distance
    v0^2 / (2 mu g) less the semi-implicit Euler's v0 dt / 2 (native MuJoCo stops too, 5.7 %
    further: its soft friction)."""
    v0, dt = 0.5, 0.002
    xml = _mjcf('<body name="b" pos="0 0 .05"><freejoint/><geom type="box" '
                f'size=".1 .1 .05" mass="1" condim="{condim}"/></body>').replace(
        'size="5 5 .1"/>', f'size="5 5 .1" condim="{condim}"/>')
    mn, dn = world(xml)
    m, d = world(xml)
    c = MujocoContacts(m, d, manage=["floor"], law=LAW, material=MATERIAL)
    dn.qvel[0] = d.qvel[0] = v0
    for _ in range(100):
        mujoco.mj_step(mn, dn)
        c.step()
    assert c.friction_mode == "mujoco"
    if condim == 1:
        assert float(dn.qvel[0]) == pytest.approx(v0, abs=1e-6)
        assert float(d.qvel[0]) == pytest.approx(v0, abs=1e-6)
    else:
        assert abs(float(d.qvel[0])) < 1e-3 and abs(float(dn.qvel[0])) < 1e-3
        coulomb = v0 ** 2 / (2 * G) - v0 * dt / 2
        assert float(d.qpos[0]) == pytest.approx(coulomb, rel=5e-3)


def test_mocap_body_is_refused_not_sunk_through() -> None:
    """A ball resting on a mocap plate that the user raises (mocap_pos): natively it rides up
    with the plate; the contact layer has no row moved by the user (no velocity, no mass: the
    ball sank through the plate), so managing a pair with a mocap body is an error at
    construction naming the geom, with the model untouched; the floor alone (MuJoCo does not
    collide a mocap body with the world) is managed as before."""
    xml = _mjcf('<body name="lift" mocap="true" pos="0 0 .2"><geom name="plate" type="box" '
                'size=".3 .3 .02"/></body><body name="ball" pos="0 0 .27"><freejoint/>'
                '<geom name="ballg" type="sphere" size=".05" mass="1"/></body>')
    mn, dn = world(xml)
    for i in range(300):
        dn.mocap_pos[0, 2] = 0.2 + 0.1 * i * 0.002
        mujoco.mj_step(mn, dn)
    assert float(dn.qpos[2]) > 0.25 + 0.1 * 0.5  # native: carried up ~6 cm
    m, d = world(xml)
    before = (m.geom_contype.copy(), m.geom_conaffinity.copy())
    with pytest.raises(ParameterError, match=r"'plate'.*mocap"):
        MujocoContacts(m, d, manage=["ball"], law=LAW, material=MATERIAL)
    assert np.array_equal(m.geom_contype, before[0])
    assert np.array_equal(m.geom_conaffinity, before[1])
    c = MujocoContacts(m, d, manage=["floor"], law=LAW, material=MATERIAL)
    assert len(c.pairs) == 1  # floor-ball


def test_box_on_a_box_floor_rests_on_four_corners() -> None:
    """Many MuJoCo models make the ground a box. A box resting on it touches it with a face:
    four corners, each at Hertz's overlap for m g / 4, and stays at rest (with fcl's single
    point per box pair it rocked and drifted, |qvel| ~ 0.5 rad/s after a second)."""
    ds = (G / 4 / K) ** (2 / 3)
    m, d = world('<mujoco><option timestep="0.002"/><worldbody>'
                 '<geom name="ground" type="box" size="2 2 .1" pos="0 0 -.1"/>'
                 f'<body name="b" pos="0 0 {0.05 - ds}"><freejoint/><geom type="box" '
                 'size=".1 .1 .05" mass="1"/></body></worldbody></mujoco>')
    c = MujocoContacts(m, d, manage=["ground"], law=LAW, material=MATERIAL)
    for _ in range(100):
        info = c.step()
    assert info.contacts == 4
    assert np.asarray(info.delta) == pytest.approx(ds, rel=1e-3)
    assert float(np.sum(info.normal_force)) == pytest.approx(G, rel=1e-6)
    assert np.max(np.abs(d.qvel)) < 1e-6
    assert float(d.qpos[2]) == pytest.approx(0.05 - ds, abs=1e-3 * ds)


@pytest.mark.parametrize("ground", ["box", "mesh"])
def test_capsule_lying_on_a_box_floor_rests_on_both_ends(ground: str) -> None:
    """A capsule lying on a box ground, or a mesh one (a convex slab), rests on both end caps
    as on a plane (two contacts of m g / 2 at Hertz's overlap, at rest); fcl's single point
    let it rock (|qvel| ~0.3 rad/s after 1.2 s)."""
    r = 0.03
    ds = (G / 2 / K) ** (2 / 3)
    slab = "-2 -2 -.2  2 -2 -.2  2 2 -.2  -2 2 -.2  -2 -2 0  2 -2 0  2 2 0  -2 2 0"
    floor = ('<geom name="ground" type="box" size="2 2 .1" pos="0 0 -.1"/>' if ground == "box"
             else '<geom name="ground" type="mesh" mesh="slab"/>')
    m, d = world('<mujoco><option timestep="0.002"/>'
                 f'<asset><mesh name="slab" vertex="{slab}"/></asset><worldbody>{floor}'
                 f'<body name="c" pos="0 0 {r - ds}"><freejoint/><geom type="capsule" '
                 f'size="{r}" fromto="-.1 0 0 .1 0 0" mass="1"/></body></worldbody></mujoco>')
    c = MujocoContacts(m, d, manage=["ground"], law=LAW, material=MATERIAL)
    for _ in range(100):
        info = c.step()
    assert info.contacts == 2
    assert np.asarray(info.delta) == pytest.approx(ds, rel=1e-3)
    assert np.max(np.abs(d.qvel)) < 1e-6
    assert float(d.qpos[2]) == pytest.approx(r - ds, abs=1e-3 * ds)


def test_box_dropped_on_a_box_floor_loses_energy_at_every_bounce() -> None:
    """A box dropped 5 cm flat onto a box ground, Hunt-Crossley cr = 0.5: every bounce (a run
    of steps with contacts) leaves it with less mechanical energy (MuJoCo's potential +
    kinetic) than it had before, and it comes to rest on four corners. The contact used to be
    found only once the boxes overlapped (no predictive margin for fcl's pairs): it started
    ~2 mm deep and a bounce gained 25 % energy."""
    m, d = world('<mujoco><option timestep="0.002"/>'
                 '<worldbody><geom name="ground" type="box" size="2 2 .1" pos="0 0 -.1"/>'
                 '<body name="b" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .05" '
                 'mass="1"/></body></worldbody></mujoco>')
    c = MujocoContacts(m, d, manage=["ground"], law=LAW, material=MATERIAL)

    def energy() -> float:  # m g z + kinetic (qpos, qvel current after a step)
        w = d.qvel[3:]
        return float(G * d.qpos[2] + 0.5 * d.qvel[:3] @ d.qvel[:3]
                     + 0.5 * w @ (m.body_inertia[1] * w))

    before, bounces, touching = energy(), 0, False
    for _ in range(300):
        info = c.step()
        if info.contacts and not touching:
            touching = True
        elif not info.contacts and touching:
            touching, bounces = False, bounces + 1
            after = energy()
            assert after < before
            before = after
        elif not info.contacts:
            before = energy()
    assert bounces >= 2
    assert info.contacts == 4 and np.max(np.abs(d.qvel)) < 1e-4


def test_box_dropped_on_a_large_box_ground_keeps_unique_contact_keys() -> None:
    """A box dropped onto a 10 m box ground (the sweep's gen/implicitfast, --ground box): the
    face contact's reference face is the ground's (of two parallel faces the larger), so the
    small face keeps its own four corners; with the small face as reference the ground's face
    was clipped into cut vertices of one tag ("duplicate contact key" at landing). It comes
    to rest on four corners at Hertz's overlap for m g / 4."""
    m, d = world('<mujoco><option timestep="0.002" integrator="implicitfast"/><worldbody>'
                 '<geom name="ground" type="box" size="5 5 .1" pos="0 0 -.1"/>'
                 '<body name="b" pos="0 0 .15"><freejoint/><geom type="box" '
                 'size=".1 .07 .05" mass="1"/></body></worldbody></mujoco>')
    c = MujocoContacts(m, d, manage=["ground"], law=LAW, material=MATERIAL)
    for _ in range(400):
        info = c.step()
    assert info.contacts == 4
    assert np.asarray(info.delta) == pytest.approx((G / 4 / K) ** (2 / 3), rel=1e-3)
    assert np.max(np.abs(d.qvel)) < 1e-4
