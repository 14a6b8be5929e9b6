"""Bodies started into or through a thin part, MuJoCo (issues 18 and 21).

MujocoContacts had no initial-overlap check: a ball or a box placed 60 % of the way through a
thin part (box plates of 2 mm, 1 cm and 3 cm in three orientations, a thin mesh plate, a thin
cylinder disc, a thin wall geom of a hinged body) was managed, and the law pushed it out of the
far side. Now refused at construction, naming the geoms, the overlap (MuJoCo's own
``mj_geomDistance``) and the allowed width, the model's contype/conaffinity left as they were.
A ball at its static Hertz overlap on the same parts is accepted and its first step's force is
Hertz's k delta^1.5 (k = 4/3 E* sqrt(R), delta from ``mj_geomDistance``) within 1 %; thick
parts keep accepting the same overlaps."""

from __future__ import annotations

import re

import mujoco
import numpy as np
import pytest
from thin_ball import DELTA_STATIC, SOFT, G, K, M, R

from mbplugin.errors import ParameterError
from mbplugin.mujoco import MujocoContacts

#: plate orientations (MJCF euler, degrees, xyz): flat, tilted 30 deg about x, a vertical wall
TILTS = {"flat": (0.0, 0.0, 0.0), "tilted": (30.0, 0.0, 0.0), "wall": (0.0, 90.0, 0.0)}


def _normal(tilt: str) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_euler2Quat(q, np.radians(TILTS[tilt]), "xyz")
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, q)
    return mat.reshape(3, 3)[:, 2]


def _plate(kind: str, t: float, tilt: str) -> tuple[str, str]:
    """(asset, geom) MJCF of a static part 1 m across and ``t`` thick along its local z."""
    e = " ".join(f"{a:g}" for a in TILTS[tilt])
    if kind == "box":
        return "", f'<geom name="plate" type="box" size="0.5 0.5 {t / 2}" euler="{e}"/>'
    if kind == "cylinder":
        return "", f'<geom name="plate" type="cylinder" size="0.5 {t / 2}" euler="{e}"/>'
    if kind == "mesh":
        v = [(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-t / 2, t / 2)]
        vert = " ".join(f"{c:g}" for xyz in v for c in xyz)
        return (f'<asset><mesh name="plate" vertex="{vert}"/></asset>',
                f'<geom name="plate" type="mesh" mesh="plate" euler="{e}"/>')
    raise ValueError(kind)


def _model(asset: str, geom: str, mover: str, pos: np.ndarray, normal: np.ndarray
           ) -> tuple[mujoco.MjModel, mujoco.MjData]:
    g = " ".join(f"{c:.17g}" for c in -G * normal)
    p = " ".join(f"{c:.17g}" for c in pos)
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><option gravity="{g}"/>{asset}<worldbody>{geom}'
        f'<body name="mover" pos="{p}"><freejoint/>{mover}</body></worldbody></mujoco>')
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    return m, d


BALL = f'<geom name="ball" type="sphere" size="{R}" mass="{M}"/>'


def _gid(m: mujoco.MjModel, name: str) -> int:
    return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)


def _host_overlap(m: mujoco.MjModel, d: mujoco.MjData, a: str, b: str) -> float:
    """MuJoCo's own overlap of geoms a and b (-mj_geomDistance)."""
    return -mujoco.mj_geomDistance(m, d, _gid(m, a), _gid(m, b), 0.1, None)


def _refused(m: mujoco.MjModel, d: mujoco.MjData, mover: str, law: object,
             part: str = "plate") -> str:
    """The construction's error; the model's collision bits are left as they were."""
    host = _host_overlap(m, d, mover, part)
    bits = (m.geom_contype.copy(), m.geom_conaffinity.copy())
    with pytest.raises(ParameterError) as err:
        MujocoContacts(m, d, manage=[part], law=law, material=SOFT)
    msg = str(err.value)
    said = float(re.search(r"overlap by ([0-9.e+-]+) m", msg).group(1))
    assert said == pytest.approx(host, rel=2e-3)  # the overlap MuJoCo measures
    assert f"'{part}'" in msg and f"'{mover}'" in msg and "width" in msg
    assert np.array_equal(m.geom_contype, bits[0])
    assert np.array_equal(m.geom_conaffinity, bits[1])
    return msg


@pytest.mark.parametrize("tilt", sorted(TILTS))
@pytest.mark.parametrize("t", [0.002, 0.01, 0.03])
@pytest.mark.parametrize("kind", ["box", "mesh", "cylinder"])
def test_ball_started_60_percent_through_a_thin_part_is_refused(kind, t, tilt):
    """Managed without a word on main; refused now, the allowed overlap t / 2 named."""
    n = _normal(tilt)
    asset, geom = _plate(kind, t, tilt)
    m, d = _model(asset, geom, BALL, n * (t / 2 + R - 0.6 * t), n)
    msg = _refused(m, d, "ball", "hertz")
    allowed = float(re.search(r"at most ([0-9.e+-]+) m", msg).group(1))
    assert allowed == pytest.approx(t / 2, rel=2e-3)
    assert "width of geom 'plate'" in msg


@pytest.mark.parametrize("kind", ["box", "mesh", "cylinder"])
def test_cube_started_60_percent_through_a_thin_part_is_refused(kind):
    n, t, h = _normal("tilted"), 0.01, 0.02
    asset, geom = _plate(kind, t, "tilted")
    cube = f'<geom name="cube" type="box" size="{h} {h} {h}" mass="{M}" euler="30 0 0"/>'
    m, d = _model(asset, geom, cube, n * (t / 2 + h - 0.6 * t), n)
    _refused(m, d, "cube", {"name": "hertz", "k": 1e8})


@pytest.mark.parametrize("tilt", sorted(TILTS))
@pytest.mark.parametrize("kind", ["box", "mesh", "cylinder"])
def test_ball_at_its_static_overlap_on_a_thin_part_gets_hertz_force(kind, tilt):
    """The static Hertz overlap (0.33 mm) on a 2 mm part is valid: accepted, and the first
    step's normal force is Hertz's k delta^1.5 at MuJoCo's own overlap, within 1 %."""
    n, t = _normal(tilt), 0.002
    asset, geom = _plate(kind, t, tilt)
    m, d = _model(asset, geom, BALL, n * (t / 2 + R - DELTA_STATIC), n)
    delta = _host_overlap(m, d, "ball", "plate")
    assert delta == pytest.approx(DELTA_STATIC, rel=1e-2)
    contacts = MujocoContacts(m, d, manage=["plate"], law="hertz", material=SOFT)
    contacts.step()
    force = float(np.sum(contacts.last.normal_force))
    assert force == pytest.approx(K * delta**1.5, rel=1e-2)


def test_thick_parts_and_a_disc_side_accept_the_same_overlap():
    """6 mm (0.6 of 1 cm) into a 20 cm thick box, and into the side of a 1 cm disc (its width
    along the radial normal is 1 m): accepted."""
    up = _normal("flat")
    m, d = _model("", '<geom name="plate" type="box" size="0.5 0.5 0.1"/>', BALL,
                  up * (0.1 + R - 0.006), up)
    assert _host_overlap(m, d, "ball", "plate") == pytest.approx(0.006, rel=1e-6)
    MujocoContacts(m, d, manage=["plate"], law="hertz", material=SOFT).release()
    side = np.array([1.0, 0.0, 0.0])
    asset, geom = _plate("cylinder", 0.01, "flat")
    m, d = _model(asset, geom, BALL, side * (0.5 + R - 0.006), side)
    assert _host_overlap(m, d, "ball", "plate") == pytest.approx(0.006, rel=1e-6)
    MujocoContacts(m, d, manage=["plate"], law="hertz", material=SOFT).release()


def test_ball_started_through_a_thin_wall_of_a_hinged_body_is_refused():
    """A 5 mm wall geom of a body on a hinge: a ball 60 % through it is refused, naming the
    wall geom and its body."""
    t = 0.005
    wall = (f'<body name="door" pos="0 0 0.5"><joint name="hinge" type="hinge" axis="0 0 1"/>'
            f'<geom name="wall" type="box" size="0.25 {t / 2} 0.25" mass="1"/></body>')
    m, d = _model("", wall, BALL, np.array([0.0, t / 2 + R - 0.6 * t, 0.5]),
                  np.array([0.0, 0.0, 1.0]))
    assert _host_overlap(m, d, "ball", "wall") == pytest.approx(0.6 * t, rel=1e-6)
    msg = _refused(m, d, "ball", "hertz", part="wall")
    assert "'door'" in msg


@pytest.mark.parametrize(("material", "through"), [(SOFT, True), ({"E": 2e11, "nu": 0.3}, False)])
def test_a_fast_ball_through_a_thin_slab_mid_run_is_said_once(material, through):
    """A ball at 50 m/s onto a 1 cm plate at MuJoCo's 2 ms step: a soft contact (E = 1e7 Pa)
    lets it through (MuJoCo's qpos ends below the plate) and the run says so once
    (PassThroughWarning); steel bounces it back, without a word."""
    import warnings

    from mbplugin.contact.sizes import PassThroughWarning

    up = np.array([0.0, 0.0, 1.0])
    asset, geom = _plate("box", 0.01, "flat")
    m, d = _model(asset, geom, BALL, up * (0.005 + R + 0.3), np.zeros(3))
    d.qvel[2] = -50.0
    contacts = MujocoContacts(m, d, manage=["plate"], law="hertz", material=material)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(60):
            contacts.step()
    said = [w for w in caught if issubclass(w.category, PassThroughWarning)]
    z = float(d.qpos[2])
    assert (z < -0.005 - R) == through and (z > 0.005 + R) == (not through)
    assert len(said) == (1 if through else 0)
    if through:
        assert "geom 'plate'" in str(said[0].message) and "0.005 m" in str(said[0].message)
        assert said[0].filename == __file__


def _arm_run(torque: float) -> tuple[list, float, object]:
    """A hinged arm (fixed base, hinge about y; a 0.5 m rod ending in the soft test ball)
    resting under gravity on a ground plane (100 steps: the tree path's common step), then
    driven into it by a hinge torque ``torque`` N m for 20 steps. Returns
    (PassThroughWarnings, the ball's final height (m), the contacts)."""
    import warnings

    from mbplugin.contact.sizes import PassThroughWarning

    xml = (f'<mujoco><worldbody>'
           f'<geom name="plate" type="plane" size="1 1 0.1"/>'
           f'<body name="arm" pos="0 0 {R}"><joint name="hinge" type="hinge" '
           f'axis="0 -1 0"/><geom name="rod" type="capsule" fromto="0 0 0 0.45 0 0" size="0.01" '
           f'mass="0.1" contype="0" conaffinity="0"/>'
           f'<geom name="ball" type="sphere" size="{R}" pos="0.5 0 0" mass="{M}"/></body>'
           f'</worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[0] = 0.002  # the ball 1 mm above the plate
    mujoco.mj_forward(m, d)
    contacts = MujocoContacts(m, d, manage=["plate"], law="hertz", material=SOFT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(100):
            contacts.step()
        d.qfrc_applied[0] = -torque
        for _ in range(20):
            contacts.step()
    said = [w for w in caught if issubclass(w.category, PassThroughWarning)]
    return said, float(d.geom_xpos[_gid(m, "ball")][2]), contacts


@pytest.mark.parametrize(("torque", "through"), [(20000.0, True), (2.0, False)])
def test_a_hinged_arm_through_a_thin_plate_on_the_tree_path_is_said_once(torque, through):
    """The robot (one-tree) path's common step (the fused tree step: a plane-sphere pair) runs
    the same pass-through watch: a soft ball (the thin part: its width 2R) on a hinged arm
    resting on the ground plane, then driven by a hinge torque of 20000 N m (40 kN at the
    ball), sinks past its own centre (MuJoCo's end state: the centre below the plane) and the
    run says so once; a torque of 2 N m presses it a little deeper, without a word."""
    said, z, contacts = _arm_run(torque)
    tree = contacts._tree
    assert tree is not None and tree.steps > 50  # the fused tree step ran
    assert (z < 0.0) == through and (z > 0.5 * R) == (not through)
    assert len(said) == (1 if through else 0)
    if through:
        assert "'plate'" in str(said[0].message)
