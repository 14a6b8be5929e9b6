"""The exact ellipsoid (:mod:`mbplugin.contact.ellipsoid`), checked against the outside world.

Outside-world values: the closed form of an ellipsoid's support against a half-space (the
deepest point -A^2 n / sqrt(n^T A^2 n), written out here); its Gaussian curvature from the
implicit-surface formula K = grad F^T adj(H) grad F / |grad F|^4 (Goldman, "Curvature formulas
for implicit curves and surfaces", CAGD 22, 2005, Eq. 4.1) and the textbook principal radii at
the tips (a^2 / c, b^2 / c); MuJoCo's ``mj_geomDistance`` between its ``ellipsoid`` geom and a
plane or a box at random tilts (the 4-subdivision icosphere that stood in for it was off by up
to 2.6 % of a Hertz-scale overlap, ``benchmarks/fuzz_mjcf.py`` seeds 32 and 44); MuJoCo's mass
and inertia of its ellipsoid geom; static equilibrium on a plane (the summed normal force is
the weight and the overlap is Hertz's delta = (m g / k)^(2/3), k = (4/3) E* sqrt(R_e),
R_e = sqrt(R1 R2) of the tip's principal radii: Johnson, *Contact Mechanics*, 1985, Sect. 4.2);
a sphere-shaped ellipsoid against the closed-form sphere (to 1e-12).
"""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
from mujoco_world import world
from scipy.spatial.transform import Rotation

from mbplugin.contact import BodyState, Box, Capsule, ContactModel, Plane, Sphere
from mbplugin.errors import ParameterError
from mbplugin.mujoco import MujocoContacts
from mbplugin.mujoco.geometry import geom_pose, geom_shape

G = 9.81
AXES = (0.03, 0.02, 0.013)  # semi-axes of the MuJoCo ellipsoid (m)
E, NU, RHO = 2e9, 0.3, 1000.0  # a stiff polymer (Pa, -, kg/m^3)


def _model(shape, ground=None, ground_pos=(0.0, 0.0, 0.0), pos=(0.0, 0.0, 0.0),
           quat=(1.0, 0.0, 0.0, 0.0)) -> ContactModel:
    """A contact model: ``ground`` (default the plane z = 0) in the world, ``shape`` on body 0
    at the local pose ``pos`` / ``quat`` [w, x, y, z]."""
    m = ContactModel()
    m.add_shape(Plane() if ground is None else ground, -1, pos=ground_pos)
    m.add_shape(shape, 0, pos=pos, quat=quat)
    m.set_default_law({"name": "hooke", "k": 1.0})
    return m


def _state(centre, quat_wxyz) -> BodyState:
    return BodyState.create([centre], quat=[quat_wxyz], mass=1.0, inertia=[1.0] * 3)


def _closed_form(axes: np.ndarray, R: np.ndarray, centre: np.ndarray) -> tuple[float, np.ndarray]:
    """The overlap with the plane z = 0 and the deepest point (world) of the ellipsoid of
    ``axes`` turned by ``R`` about ``centre``: n = R^T e_z, p = -A^2 n / sqrt(n^T A^2 n)."""
    n = R.T @ np.array([0.0, 0.0, 1.0])
    a2 = np.asarray(axes) ** 2
    p = -a2 * n / math.sqrt(float(n @ (a2 * n)))
    x = centre + R @ p
    return -float(x[2]), x


def _gaussian_radius(axes: np.ndarray, x: np.ndarray) -> float:
    """1 / sqrt(K) at the surface point x (shape frame) of F = sum x_i^2 / a_i^2 - 1, K by
    Goldman (2005): grad F^T adj(H) grad F / |grad F|^4."""
    a2 = np.asarray(axes) ** 2
    grad = 2.0 * x / a2
    h = 2.0 / a2
    adj = np.array([h[1] * h[2], h[0] * h[2], h[0] * h[1]])
    k = float(grad @ (adj * grad)) / float(grad @ grad) ** 2
    return 1.0 / math.sqrt(k)


def _random_cases(n: int, seed: int):
    rng = np.random.default_rng(seed)
    for i in range(n):
        axes = rng.uniform(0.005, 0.05, 3)
        rot = Rotation.random(random_state=seed * 1000 + i)
        yield axes, rot, rng.uniform(1e-5, 1e-3) * axes.max()


def test_plane_overlap_and_point_are_the_closed_form() -> None:
    """At 60 random orientations and semi-axes, the contact with a plane is the closed form:
    overlap and the point midway between the deepest point and the plane (1e-12 relative),
    one contact, the plane's normal."""
    from mbplugin.contact import Ellipsoid

    for axes, rot, depth in _random_cases(60, 1):
        R = rot.as_matrix()
        q = rot.as_quat()[[3, 0, 1, 2]]
        n = R.T @ np.array([0.0, 0.0, 1.0])
        z = math.sqrt(float(n @ (axes**2 * n))) - depth  # the centre's height for ``depth``
        centre = np.array([0.1, -0.2, z])
        delta, x = _closed_form(axes, R, centre)
        b = _model(Ellipsoid(axes)).detect(_state(centre, q), margin=0.0)
        assert len(b) == 1
        assert b.delta[0] == pytest.approx(delta, rel=1e-12)
        np.testing.assert_allclose(b.point[0], x + 0.5 * delta * np.array([0, 0, 1.0]),
                                   rtol=0, atol=1e-12 * axes.max())
        np.testing.assert_allclose(b.normal[0], [0.0, 0.0, 1.0], atol=0)


def test_plane_radius_is_sqrt_r1_r2_of_the_contact_point() -> None:
    """Hertz's effective radius of a plane contact is 1 / sqrt(K) at the deepest point (K
    Goldman's Gaussian curvature, 1e-12 relative) at random orientations, and a b / c, b c / a,
    a c / b with the c, a, b axis vertical (the tip's R1 = a^2 / c, R2 = b^2 / c; Johnson's
    sqrt(R1 R2))."""
    from mbplugin.contact import Ellipsoid

    for axes, rot, depth in _random_cases(30, 2):
        R = rot.as_matrix()
        n = R.T @ np.array([0.0, 0.0, 1.0])
        centre = np.array([0.0, 0.0, math.sqrt(float(n @ (axes**2 * n))) - depth])
        _, x = _closed_form(axes, R, centre)
        b = _model(Ellipsoid(axes)).detect(_state(centre, rot.as_quat()[[3, 0, 1, 2]]))
        assert b.r_eff[0] == pytest.approx(_gaussian_radius(axes, R.T @ (x - centre)), rel=1e-12)
    a, b_, c = AXES
    for turn, tip in (((1.0, 0.0, 0.0, 0.0), a * b_ / c),
                      (Rotation.from_euler("y", 90, degrees=True).as_quat()[[3, 0, 1, 2]],
                       b_ * c / a),
                      (Rotation.from_euler("x", 90, degrees=True).as_quat()[[3, 0, 1, 2]],
                       a * c / b_)):
        R = Rotation.from_quat(np.asarray(turn)[[1, 2, 3, 0]]).as_matrix()
        h = float(np.abs(R.T[:, 2]) @ np.array(AXES))
        batch = _model(Ellipsoid(AXES)).detect(_state([0.0, 0.0, h - 1e-5], turn))
        assert batch.r_eff[0] == pytest.approx(tip, rel=1e-12)


def test_sphere_shaped_ellipsoid_is_the_sphere() -> None:
    """An ellipsoid of semi-axes (r, r, r) on a plane is the sphere of radius r: overlap,
    point, normal and effective radius to 1e-12 at 40 random orientations and heights."""
    from mbplugin.contact import Ellipsoid

    r = 0.01
    rng = np.random.default_rng(5)
    for i in range(40):
        q = Rotation.random(random_state=500 + i).as_quat()[[3, 0, 1, 2]]
        st = _state([rng.uniform(-1, 1), rng.uniform(-1, 1), r - rng.uniform(1e-6, 1e-3)], q)
        be = _model(Ellipsoid((r, r, r))).detect(st)
        bs = _model(Sphere(r)).detect(st)
        assert be.delta[0] == pytest.approx(bs.delta[0], rel=1e-12)
        np.testing.assert_allclose(be.point, bs.point, rtol=0, atol=1e-12 * r)
        np.testing.assert_allclose(be.normal, bs.normal, rtol=0, atol=1e-15)
        assert be.r_eff[0] == pytest.approx(bs.r_eff[0], rel=1e-12)


def _mat_quat(mat: np.ndarray) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.asarray(mat, dtype=float).ravel())
    return q


#: MuJoCo grounds: a plane, a box (its top face at z = 0)
GROUNDS = {
    "plane": ('<geom name="floor" type="plane" size="5 5 .1"/>', None),
    "box": ('<geom name="floor" type="box" size="0.5 0.4 0.1" pos="0 0 -0.1"/>',
            (np.array([0.5, 0.4, 0.1]), (0.0, 0.0, -0.1))),
}


@pytest.mark.parametrize("ground", sorted(GROUNDS))
def test_mujoco_ellipsoid_overlap_is_mj_geom_distance(ground: str) -> None:
    """MuJoCo's ellipsoid geom at 40 random tilts, 0.01-1 % of its largest semi-axis into a
    plane or the top face of a box: the contact layer's deepest overlap is
    ``-mj_geomDistance`` within 1e-6 of the overlap (MuJoCo's convex collider run to a
    tolerance of 1e-12 m: at its default 1e-6 m it is itself off by up to 3 % of a 1e-5 m
    overlap; the icosphere that stood in for the ellipsoid was off by up to 108 % (plane) and
    93 % (box) of these overlaps)."""
    xml_ground, box = GROUNDS[ground]
    xml = ('<mujoco><option ccd_tolerance="1e-12" ccd_iterations="500"/>'
           f'<worldbody>{xml_ground}<body name="e" pos="0 0 1"><freejoint/>'
           f'<geom name="e" type="ellipsoid" size="{AXES[0]} {AXES[1]} {AXES[2]}"/></body>'
           '</worldbody></mujoco>')
    m, d = world(xml)
    g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "e")
    shape = geom_shape(m, g, "e")
    pos, quat = geom_pose(m, g)
    ground_shape = Plane() if box is None else Box(tuple(box[0]))
    cm = _model(shape, ground_shape, (0.0, 0.0, 0.0) if box is None else box[1], pos, quat)
    rng = np.random.default_rng(11)
    worst = 0.0
    for i in range(40):
        rot = Rotation.random(random_state=900 + i)
        n = rot.as_matrix().T @ np.array([0.0, 0.0, 1.0])
        depth = rng.uniform(1e-4, 1e-2) * max(AXES)
        d.qpos[:3] = (rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1),
                      math.sqrt(float(n @ (np.array(AXES) ** 2 * n))) - depth)
        d.qpos[3:7] = rot.as_quat()[[3, 0, 1, 2]]
        mujoco.mj_forward(m, d)
        host = -mujoco.mj_geomDistance(m, d, 0, g, 1.0, None)
        batch = cm.detect(_state(d.xipos[1], _mat_quat(d.ximat[1])), margin=0.0)
        ours = float(np.max(batch.delta))
        worst = max(worst, abs(ours - host) / host)
    assert worst < 1e-6


def _other_ellipsoid():
    from mbplugin.contact import Ellipsoid

    return Ellipsoid((0.04, 0.025, 0.015))


#: MuJoCo geoms against the ellipsoid: (geom, a factory of the contact layer's shape)
OTHERS = {
    "sphere": ('<geom name="o" type="sphere" size="0.015"/>', lambda: Sphere(0.015)),
    "capsule_side": ('<geom name="o" type="capsule" size="0.01 0.2" euler="0 90 0"/>',
                     lambda: Capsule(0.01, 0.2)),
    "ellipsoid": ('<geom name="o" type="ellipsoid" size="0.04 0.025 0.015" euler="10 20 30"/>',
                  _other_ellipsoid),
}


@pytest.mark.parametrize("other", sorted(OTHERS))
def test_mujoco_ellipsoid_pairs_overlap_is_mj_geom_distance(other: str) -> None:
    """MuJoCo's ellipsoid geom against a sphere geom (r = 1.5 cm) and another ellipsoid from
    40 random directions, and against the side of a horizontal capsule (r = 1 cm, half length
    20 cm) from above, at random orientations, 0.01-1 % of the largest semi-axis deep: the
    contact layer's overlap is ``-mj_geomDistance`` within 1e-6 of it (``ccd_tolerance``
    1e-12; the nearest point by Newton on Eberly's equation, along the capsule's axis by
    bisection, two ellipsoids' least directional overlap by descent; the icosphere was off by
    its chordal error: ~75 %, 47 % and 49 % of these overlaps at worst)."""
    xml_other, make = OTHERS[other]
    xml = ('<mujoco><option ccd_tolerance="1e-12" ccd_iterations="500"/><worldbody>'
           f'{xml_other}<body name="e" pos="0 0 1"><freejoint/>'
           f'<geom name="e" type="ellipsoid" size="{AXES[0]} {AXES[1]} {AXES[2]}"/></body>'
           '</worldbody></mujoco>')
    m, d = world(xml)
    cm = ContactModel()
    pos, q = geom_pose(m, 1)
    cm.add_shape(geom_shape(m, 1, "e"), 0, pos=pos, quat=q)
    cm.add_shape(make(), -1, quat=tuple(m.geom_quat[0]))
    cm.set_default_law({"name": "hooke", "k": 1.0})
    rng = np.random.default_rng(3)
    worst = 0.0
    for i in range(40):
        rot = Rotation.random(random_state=i)
        away = rng.normal(size=3)
        if other == "capsule_side":
            away[2] = abs(away[2]) + 1.0
        away /= np.linalg.norm(away)
        depth = rng.uniform(1e-4, 1e-2) * max(AXES)
        d.qpos[:3] = away * 0.1
        d.qpos[3:7] = rot.as_quat()[[3, 0, 1, 2]]
        for _ in range(50):  # along ``away`` to about ``depth``
            mujoco.mj_forward(m, d)
            host = -mujoco.mj_geomDistance(m, d, 0, 1, 1.0, None)
            if abs(host - depth) < 0.1 * depth:
                break
            d.qpos[:3] -= away * (depth - host)
        batch = cm.detect(_state(d.xipos[1], _mat_quat(d.ximat[1])), margin=0.0)
        assert abs(host - depth) < 0.1 * depth and len(batch) >= 1
        worst = max(worst, abs(float(np.max(batch.delta)) - host) / host)
    assert worst < 1e-6


@pytest.mark.parametrize(("axis", "euler"), [("c", "0 0 0"), ("a", "0 90 0")])
def test_mujoco_ellipsoid_rests_at_static_hertz(axis: str, euler: str) -> None:
    """The ellipsoid geom on a plane standing on the tip of its c (or a) axis, Hunt-Crossley
    with Hertz's k from the materials (both E = 2 GPa, nu = 0.3): one contact, its force the
    weight (1 %) and the host's own overlap (``mj_geomDistance``) Hertz's (m g / k)^(2/3) with
    k = (4/3) E* sqrt(R_e), R_e = a b / c (b c / a) (1 %)."""
    a, b, c = AXES
    height, r_e = (c, a * b / c) if axis == "c" else (a, b * c / a)
    xml = (f'<mujoco><option timestep="0.002" gravity="0 0 {-G}"/><worldbody>'
           '<geom name="floor" type="plane" size="5 5 .1"/>'
           f'<body name="e" pos="0 0 {height}"><freejoint/><geom name="e" type="ellipsoid" '
           f'size="{a} {b} {c}" euler="{euler}"/></body></worldbody></mujoco>')
    m, d = world(xml)
    weight = float(m.body_mass[1]) * G
    contacts = MujocoContacts(m, d, manage=["floor"], law={"name": "hunt_crossley", "cr": 0.3},
                              material={"E": E, "nu": NU})
    try:
        for _ in range(250):  # 0.5 s: settled from touching
            info = contacts.step()
    finally:
        contacts.release()
    mujoco.mj_forward(m, d)
    host = -mujoco.mj_geomDistance(m, d, 0, 1, 1.0, None)
    fn = np.asarray(info.normal_force)
    e_star = 1.0 / (2.0 * (1.0 - NU**2) / E)
    k = 4.0 / 3.0 * e_star * math.sqrt(r_e)
    assert len(fn) == 1
    assert fn.sum() / weight == pytest.approx(1.0, abs=0.01)
    assert host == pytest.approx((weight / k) ** (2 / 3), rel=0.01)
    assert np.max(np.abs(d.qvel)) < 1e-3  # at rest


@pytest.mark.parametrize("backend", ["standalone", "mujoco"])
def test_scene_ellipsoid_rests_at_static_hertz(tmp_path: Path, backend: str) -> None:
    """A scene file's ``shape = "ellipsoid"`` dropped 1 mm on its c tip (Hunt-Crossley with
    Hertz's k, the standalone engine or ``world.backend = "mujoco"``): at rest, the contact's
    overlap (the centre's height below c) Hertz's (m g / k)^(2/3) with R_e = a b / c and m the
    ellipsoid's rho (4/3) pi a b c (1e-5); in the engine one contact carrying the weight
    (1e-6)."""
    from mbplugin.scene import build_scene

    a, b, c = AXES
    scene = build_scene({
        "scene": {"name": "t", "duration": 0.5},
        **({"world": {"backend": backend}} if backend != "standalone" else {}),
        "materials": {"m": {"E": E, "nu": NU, "density": RHO}},
        "bodies": [{"name": "floor", "shape": "plane", "fixed": True, "material": "m"},
                   {"name": "e", "shape": "ellipsoid", "semi_axes": list(AXES),
                    "material": "m", "position": [0.0, 0.0, c + 0.001]}],
        "contact": {"law": "hunt_crossley", "params": {"cr": 0.3}},
    }, base_dir=tmp_path)
    result = scene.run()
    mass = RHO * 4.0 / 3.0 * math.pi * a * b * c
    e_star = 1.0 / (2.0 * (1.0 - NU**2) / E)
    k = 4.0 / 3.0 * e_star * math.sqrt(a * b / c)
    hertz = (mass * G / k) ** (2 / 3)
    if backend == "standalone":
        assert float(scene.world.bodies.mass[1]) == pytest.approx(mass, rel=1e-12)
        (contact,) = result.final_contacts
        assert contact["force"] == pytest.approx(mass * G, rel=1e-6)
        assert contact["delta"] == pytest.approx(hertz, rel=1e-5)
    else:
        assert c - float(result.pos[-1, 0, 2]) == pytest.approx(hertz, rel=1e-5)


def test_ellipsoid_mass_properties_are_mujocos() -> None:
    """The ellipsoid's mass and inertia at MuJoCo's default density (1000 kg/m^3) are those
    MuJoCo computes for its ellipsoid geom (``body_mass``, ``body_inertia``, 1e-9)."""
    from mbplugin.contact import Ellipsoid

    m, _ = world('<mujoco><worldbody><body name="e"><freejoint/><geom type="ellipsoid" '
                 f'size="{AXES[0]} {AXES[1]} {AXES[2]}"/></body></worldbody></mujoco>')
    mass, com, inertia = Ellipsoid(AXES).mass_properties(1000.0)
    assert mass == pytest.approx(float(m.body_mass[1]), rel=1e-9)
    np.testing.assert_allclose(com, 0.0, atol=1e-15)
    np.testing.assert_allclose(np.diag(inertia), m.body_inertia[1], rtol=1e-9)


@pytest.mark.parametrize(("args", "match"), [
    (((0.1, 0.2),), r"'semi_axes' = \(0.1, 0.2\) must be three semi-axes"),
    (((0.1, -0.2, 0.3),), r"'semi_axes\[1\]' = -0.2 m is outside its allowed range"),
    (((0.1, 0.2, math.nan),), r"'semi_axes\[2\]' = nan m is outside"),
    (("abc",), "must be three semi-axes"),
    (((0.1, 0.2, 0.3), 0), "'subdivisions' = 0 is outside its allowed range"),
    (((0.1, 0.2, 0.3), 7), "'subdivisions' = 7 is outside"),
])
def test_ellipsoid_rejects_bad_input(args, match) -> None:
    from mbplugin.contact import Ellipsoid

    with pytest.raises(ParameterError, match=match):
        Ellipsoid(*args)


@pytest.mark.parametrize(("fields", "match"), [
    ({"shape": "ellipsoid"}, "missing field 'semi_axes'"),
    ({"shape": "ellipsoid", "semi_axes": [0.03, 0.0, 0.01]}, r"'semi_axes\[1\]' = 0 m"),
    ({"shape": "ellipsoid", "semi_axes": [0.03, 0.02]}, "semi_axes: expected a vec3"),
    ({"shape": "sphere", "radius": 0.01, "semi_axes": [0.01] * 3}, "belongs to an ellipsoid, "
     "not a sphere"),
])
def test_scene_ellipsoid_rejects_bad_input(tmp_path: Path, fields: dict, match: str) -> None:
    from mbplugin.scene import SceneError, build_scene

    with pytest.raises(SceneError, match=match):
        build_scene({
            "scene": {"name": "t", "duration": 0.1},
            "materials": {"m": {"E": E, "nu": NU, "density": RHO}},
            "bodies": [{"name": "floor", "shape": "plane", "fixed": True, "material": "m"},
                       {"name": "e", "material": "m", "position": [0.0, 0.0, 0.1], **fields}],
            "contact": {"law": "hunt_crossley", "params": {"cr": 0.3}},
        }, base_dir=tmp_path)
