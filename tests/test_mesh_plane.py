"""Triangle meshes on a plane in the standalone engine: the same physics as the primitives, rest
overlaps from the law's closed form.

Outside facts used: a body at rest carries its weight, m g, on its contacts; by symmetry a flat
face of N corners carries m g / N on each; the static overlap of a law F = k delta^n is
(F / k)^(1/n) (Hertz: k = (4/3) E* sqrt(R), E* = 1 / ((1 - nu1^2)/E1 + (1 - nu2^2)/E2); Johnson,
*Contact Mechanics* 1985, Eq. 4.22). A polyhedron inscribed in a smooth surface deviates from it
by at most its chordal error: for a sphere of radius R, R minus the smallest distance from the
centre to a face plane; for a prism inscribed in a cylinder of radius R with N sides,
R (1 - cos(pi / N)) (computed here from the geometry, not from the code under test). The
primitive box's own outcome is measured in the same test.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh
from scipy.integrate import trapezoid

from mbplugin.scene import build_scene

G = 9.81
E, NU, RHO = 2e9, 0.3, 1200.0
E_STAR = E / (2 * (1 - NU**2))  # two equal materials
H = 0.05  # cube edge (m)


def drop(body: dict, duration: float, law: dict, base: Path, height: float = 0.01,
         record: bool = False) -> tuple:
    """Drop ``body`` (its lowest point ``height`` above the floor); (result, mass, final z).
    ``record``: a record at every accepted step."""
    b = {"name": "b", "material": "m", **body}
    b.setdefault("position", [0.0, 0.0, height])
    scene = build_scene({
        "scene": {"name": "t", "duration": duration},
        "integrator": {"method": "adaptive", "rtol": 1e-9, "max_step": 0.01},
        "materials": {"m": {"E": E, "nu": NU, "density": RHO}},
        "bodies": [{"name": "floor", "shape": "plane", "fixed": True, "material": "m"}, b],
        "contact": law,
        **({"output": {"record_every": 1}} if record else {}),
    }, base_dir=base)
    result = scene.run()
    mass = float(scene.world.bodies.mass[1])
    z = float(result.final_state[5])  # body 1's z
    return result, mass, z


def at_rest(result, mass: float) -> None:
    """Still, and the contacts carry the weight (relative 1e-6)."""
    y = result.final_state
    assert np.abs(y[7 * 2 : 10 * 2]).max() < 1e-6  # m/s
    total = sum(c["force"] for c in result.final_contacts)
    assert total == pytest.approx(mass * G, rel=1e-6)


HC = {"law": "hunt_crossley", "params": {"k": 1e7, "cr": 0.3}}


@pytest.mark.parametrize("rpy", [[0.0, 0.0, 0.0], [30.0, 0.0, 0.0]], ids=["flat", "edge"])
def test_cube_mesh_is_the_primitive_box(tmp_path: Path, rpy: list[float]) -> None:
    """A cube mesh (12 triangles, OBJ) and the primitive box, dropped flat or landing on an
    edge and tipping onto a face: the same bounces and rest height; the rest overlap is the
    law's for a quarter of the weight on each bottom corner."""
    trimesh.creation.box(extents=(H, H, H)).export(tmp_path / "cube.obj")
    c = math.cos(math.radians(30.0)) * H / 2 + math.sin(math.radians(30.0)) * H / 2
    z0 = (c if rpy[0] else H / 2) + 0.02
    out = {}
    for shape in ({"shape": "mesh", "file": "cube.obj"},
                  {"shape": "box", "half_extents": [H / 2] * 3}):
        out[shape["shape"]] = drop({**shape, "rpy_deg": rpy, "position": [0.0, 0.0, z0]},
                                   1.2, HC, tmp_path)
    (rm, mass, zm), (rb, _, zb) = out["mesh"], out["box"]
    bm, bb = rm.bounces, rb.bounces
    assert len(bm) == len(bb) > 2
    assert bm[0]["cr"] == pytest.approx(bb[0]["cr"], abs=1e-3)
    assert zm == pytest.approx(zb, abs=1e-6)
    at_rest(rm, mass)
    delta = (mass * G / 4 / 1e7) ** (2 / 3)  # Hunt-Crossley: n = 1.5
    assert zm == pytest.approx(H / 2 - delta, abs=1e-9)
    assert len(rm.final_contacts) == 4


def sphere_chord(tm: trimesh.Trimesh, r: float) -> float:
    v = tm.vertices[tm.faces]
    n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    n /= np.linalg.norm(n, axis=1)[:, None]
    return r - float(np.min(np.abs(np.einsum("ij,ij->i", n, v[:, 0]))))


def test_mesh_sphere_rests_at_the_hertz_overlap(tmp_path: Path) -> None:
    """An icosphere dropped off-centre (Hunt-Crossley without k: Hertz k from the materials and
    the mesh's curvature) comes to rest at R - delta_Hertz(m g) within its chordal error."""
    r = 0.02
    tm = trimesh.creation.icosphere(3, radius=r)
    tm.export(tmp_path / "ball.obj")
    result, mass, z = drop({"shape": "mesh", "file": "ball.obj", "rpy_deg": [10, 20, 30],
                            "position": [0.0, 0.0, r + 0.01]}, 0.6,
                           {"law": "hunt_crossley", "params": {"cr": 0.3}}, tmp_path)
    at_rest(result, mass)
    delta = (mass * G / (4 / 3 * E_STAR * math.sqrt(r))) ** (2 / 3)
    chord = sphere_chord(tm, r)
    assert abs(z - (r - delta)) <= chord
    # the vertices' fitted spheres take the chordal error out: the mesh sits where the sphere
    # does, to the accuracy of its curvature estimate (delta ~ R^(-1/3))
    assert z == pytest.approx(r - delta, abs=0.01 * delta)
    assert len(result.final_contacts) == 1


@pytest.mark.parametrize("law", ["linear", "hertz"])
@pytest.mark.parametrize("side", [False, True], ids=["face", "side"])
def test_mesh_cylinder_rests_at_the_law_overlap(tmp_path: Path, side: bool, law: str) -> None:
    """A 32-sided cylinder mesh on its end face (32 rim corners) or on its side (a face of the
    prism down: 4 corners), with a linear law (F = k delta) or Hertz (k from the materials and
    the corners' radius): the rest height is the closed form for its corners' share of the
    weight, within the chordal error of the prism against the cylinder."""
    r, h, n = 0.02, 0.06, 32
    trimesh.creation.cylinder(radius=r, height=h, sections=n).export(tmp_path / "cyl.obj")
    rho_c = 0.002  # corner radius for Hertz k (m)
    if law == "linear":
        spec = {"law": "hunt_crossley", "params": {"k": 1e6, "n": 1.0, "cr": 0.3}}
        k, p = 1e6, 1.0
    else:
        spec = {"law": "hunt_crossley", "params": {"cr": 0.3}}
        k, p = 4 / 3 * E_STAR * math.sqrt(rho_c), 1.5
    # on the side: the axis along y (x by 90 deg), turned about it (world y) by half a sector
    # so that a face of the prism, not an edge, is down (trimesh puts a vertex at angle 0)
    rpy = [90.0, 180.0 / n, 0.0] if side else [0.0, 0.0, 0.0]
    top = r * math.cos(math.pi / n) if side else h / 2
    result, mass, z = drop({"shape": "mesh", "file": "cyl.obj", "radius": rho_c,
                            "rpy_deg": rpy, "position": [0.0, 0.0, top + 0.005]}, 0.8, spec,
                           tmp_path)
    at_rest(result, mass)
    corners = 4 if side else n
    delta = (mass * G / corners / k) ** (1 / p)
    assert len(result.final_contacts) == corners
    # the prism's own geometry (the OBJ file holds the vertices to 8 decimals: 5e-9 m)
    assert z == pytest.approx(top - delta, abs=1e-8)
    chord = r * (1 - math.cos(math.pi / n))  # prism vs cylinder
    assert abs(z - ((r if side else h / 2) - delta)) <= chord + 1e-12


def test_mesh_box_rests_at_the_linear_overlap(tmp_path: Path) -> None:
    """A 12-triangle brick on a face with a linear law: 4 corners, delta = m g / (4 k)."""
    trimesh.creation.box(extents=(0.08, 0.04, 0.02)).export(tmp_path / "brick.stl")
    spec = {"law": "hunt_crossley", "params": {"k": 1e6, "n": 1.0, "cr": 0.3}}
    result, mass, z = drop({"shape": "mesh", "file": "brick.stl",
                            "position": [0.0, 0.0, 0.015]}, 0.6, spec, tmp_path)
    at_rest(result, mass)
    assert z == pytest.approx(0.01 - mass * G / 4 / 1e6, abs=1e-9)


def test_climb_finds_the_deepest_member_of_a_spherical_region(monkeypatch) -> None:
    """The climb over a large spherical region (a 2562-vertex icosphere, a 64 x 64 UV sphere,
    the caps of a capsule) reports the overlap a scan of every member gives, and never less
    than the lowest vertex (the fitted spheres only add the chordal correction), at 100 random
    orientations."""
    from mbplugin.contact import BodyState, ContactModel, Plane, axis_angle_quat
    from mbplugin.contact import mesh as meshmod

    default = meshmod.CLIMB_MIN
    rng = np.random.default_rng(7)
    quats = [axis_angle_quat(rng.normal(size=3), rng.uniform(0.0, math.pi)) for _ in range(100)]
    for tm in (trimesh.creation.icosphere(4, radius=0.02),
               trimesh.creation.uv_sphere(0.02, count=[64, 64]),
               trimesh.creation.capsule(height=0.05, radius=0.01, count=[48, 48])):
        got = {}
        for climb_min in (default, 10**9):
            monkeypatch.setattr(meshmod, "CLIMB_MIN", climb_min)
            mesh = meshmod.Mesh(tm)
            assert (mesh.climb[0] >= 0).any() == (climb_min == default)  # the default climbs
            model = ContactModel()
            model.add_shape(Plane(), -1)
            model.add_shape(mesh, 0)
            model.set_default_law({"name": "hooke", "k": 1.0})
            got[climb_min] = np.array([model.detect(
                BodyState.create([[0.0, 0.0, 0.0]], quat=[q], mass=1.0, inertia=[1.0] * 3),
                margin=1.0).delta.max() for q in quats])
        np.testing.assert_allclose(got[default], got[10**9], rtol=0, atol=1e-15)
        lowest = np.array([-(tm.vertices @ quat_rows(q).T)[:, 2].min() for q in quats])
        assert (got[10**9] >= lowest - 1e-15).all()


def quat_rows(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of [w, x, y, z] (trimesh's own conversion)."""
    return trimesh.transformations.quaternion_matrix(q)[:3, :3]


ELL = np.array([0.03, 0.02, 0.014])  # semi-axes of the ellipsoid (m)


def ellipsoid_mesh(level: int, seed: int = 3) -> trimesh.Trimesh:
    """An icosphere turned at random (no vertex at the tips) and scaled to the ellipsoid
    ``ELL``: its vertices lie on the ellipsoid."""
    s = trimesh.creation.icosphere(level)
    rng = np.random.default_rng(seed)
    s.apply_transform(trimesh.transformations.random_rotation_matrix(rng.random(3)))
    s.apply_scale(ELL)
    return s


def ellipsoid_support(u: np.ndarray) -> np.ndarray:
    """max x.u over the ellipsoid x^T diag(ELL)^-2 x = 1: |diag(ELL) u| (rows of u)."""
    return np.linalg.norm(np.atleast_2d(u) * ELL, axis=1)


def chordal_error(tm: trimesh.Trimesh, dirs: np.ndarray) -> float:
    """The largest gap, over the directions ``dirs``, between the ellipsoid's support and the
    faceted mesh's (its vertices')."""
    return float(np.max(ellipsoid_support(dirs) - np.max(dirs @ tm.vertices.T, axis=1)))


def turned_on_plane(mesh, quats: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(delta, point) of the deepest contact of ``mesh`` (body at the origin) on the plane
    z = 0 at each orientation."""
    from mbplugin.contact import BodyState, ContactModel, Plane

    model = ContactModel()
    model.add_shape(Plane(), -1)
    model.add_shape(mesh, 0)
    model.set_default_law({"name": "hooke", "k": 1.0})
    delta, point = [], []
    for q in quats:
        b = model.detect(BodyState.create([[0.0, 0.0, 0.0]], quat=[q], mass=1.0,
                                          inertia=[1.0] * 3), margin=1.0)
        j = int(np.argmax(b.delta))
        delta.append(b.delta[j])
        point.append(b.point[j])
    return np.array(delta), np.array(point)


def test_mesh_ellipsoid_overlap_is_the_ellipsoid_within_the_chordal_error() -> None:
    """An ellipsoid mesh (5120 triangles, smooth and convex: one plane feature) at 200 random
    orientations 0 below the plane z = 0: its overlap is the ellipsoid's support along -z
    within the mesh's chordal error (the gap between the ellipsoid's support and the faceted
    mesh's, over 2000 directions), and closer on average than the faceted mesh's own."""
    from mbplugin.contact import Mesh, axis_angle_quat

    tm = ellipsoid_mesh(4)
    mesh = Mesh(tm)
    assert len(mesh.feature_kind) == 1 and mesh.feature_kind[0] == 1
    rng = np.random.default_rng(11)
    quats = [axis_angle_quat(rng.normal(size=3), rng.uniform(0.0, math.pi)) for _ in range(200)]
    delta, _ = turned_on_plane(mesh, quats)
    # -z in the body frame: R^T (0, 0, -1)
    u = np.array([-quat_rows(q)[2] for q in quats])
    exact = ellipsoid_support(u)
    dirs = rng.normal(size=(2000, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    chord = chordal_error(tm, dirs)
    assert np.abs(delta - exact).max() <= chord
    faceted = np.max(u @ tm.vertices.T, axis=1)
    assert np.abs(delta - exact).mean() < 0.6 * np.abs(faceted - exact).mean()


def test_mesh_ellipsoid_contact_moves_continuously() -> None:
    """The ellipsoid mesh turned by 90 degrees about a generic axis in 3000 steps (0.03 deg):
    its one contact's point and overlap move by at most what the smooth ellipsoid's do per
    step (the point by its largest radius of curvature times the angle, a^2 / c = 64 mm x
    5.2e-4 rad = 34 um; allowed: 100 um), never by a jump between vertices (an edge is
    ~2 mm)."""
    from mbplugin.contact import Mesh, axis_angle_quat

    mesh = Mesh(ellipsoid_mesh(4))
    axis = np.array([0.3, 1.0, 0.2])
    steps = np.linspace(0.0, math.pi / 2, 3001)
    delta, point = turned_on_plane(mesh, [axis_angle_quat(axis, a) for a in steps])
    dtheta = steps[1] - steps[0]
    r_max = ELL[0] ** 2 / ELL[2]
    assert np.linalg.norm(np.diff(point, axis=0), axis=1).max() < 3 * r_max * dtheta
    # delta changes at most by the support's slope (|x| <= a) times the angle
    assert np.abs(np.diff(delta)).max() < 1.5 * ELL[0] * dtheta


def test_mesh_ellipsoid_settles_on_its_tip_at_the_hertz_overlap(tmp_path: Path) -> None:
    """The ellipsoid mesh dropped 5 mm with its short axis vertical (Hunt-Crossley without k:
    Hertz k from the materials and the mesh's curvature) settles on its tip with one contact,
    its height c - delta_Hertz(m g), delta from the tip's equivalent radius sqrt(R' R'') =
    a b / c (Johnson 1985, Sect. 4.2), within the mesh's chordal error. (It keeps rocking
    slightly about the tip: the faceted model's lowest point is tens of micrometres off the
    axis, the bounces set it rocking, and nothing damps a rocking ellipsoid on a frictionless
    plane; the height is averaged over the last 0.5 s.)"""
    tm = ellipsoid_mesh(4)
    tm.export(tmp_path / "ell.obj")
    c = ELL[2]
    result, mass, _ = drop({"shape": "mesh", "file": "ell.obj", "rpy_deg": [0, 0, 30],
                            "position": [0.0, 0.0, c + 0.005]}, 1.0,
                           {"law": "hunt_crossley", "params": {"cr": 0.3}}, tmp_path,
                           record=True)
    assert len(result.final_contacts) == 1
    assert len(result.bounces) < 10  # the bounces died out
    t, z = result.t, result.pos[:, 1, 2]
    last = t >= 0.5
    z_mean = trapezoid(z[last], t[last]) / (t[-1] - t[last][0])
    r_tip = ELL[0] * ELL[1] / c
    delta = (mass * G / (4 / 3 * E_STAR * math.sqrt(r_tip))) ** (2 / 3)
    assert abs(z_mean - (c - delta)) <= chordal_error(tm, np.array([[0.0, 0.0, -1.0]]))
    assert np.abs(result.omega[last, 1]).max() < 0.5  # rad/s: rocking, not tumbling
