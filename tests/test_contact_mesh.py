"""Mesh shapes: icosphere vs analytic sphere, mesh-resolution independence, fcl pairs, bad meshes.

Outside facts used: the chordal error of a polyhedron inscribed in a sphere of radius R is
R - (smallest distance from the centre to a face plane) (computed here from the faces with
NumPy, independently of the code under test); Hertz F = (4/3) E* sqrt(R) delta^1.5;
sphere-sphere and box closed forms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from mbplugin.contact import (
    BodyState,
    Box,
    Capsule,
    ContactModel,
    Mesh,
    Plane,
    Sphere,
    axis_angle_quat,
)
from mbplugin.errors import ParameterError

R = 0.05
E, NU = 1e8, 0.3
E_STAR = E / (2 * (1 - NU**2))  # two equal materials


def chordal_error(tm: trimesh.Trimesh) -> float:
    """R - min distance from the centre (origin) to the plane of any face."""
    v = tm.vertices[tm.faces]
    n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    n /= np.linalg.norm(n, axis=1)[:, None]
    return R - float(np.min(np.abs(np.einsum("ij,ij->i", n, v[:, 0]))))


def on_plane(shape, depth, quat):
    m = ContactModel()
    m.add_material("rubber", E=E, nu=NU, rho=1000.0)
    m.add_shape(Plane(), -1, "rubber")
    m.add_shape(shape, 0, "rubber")
    m.set_default_law({"name": "hertz"})
    st = BodyState.create([[0, 0, R - depth]], quat=[quat], mass=1.0, inertia=[1.0] * 3)
    b = m.detect(st)
    store = m.make_store()
    store.begin(b, 0.0)
    return b, store.forces(b)


def test_icosphere_on_plane_converges_to_the_sphere():
    depth = 1e-3
    q = axis_angle_quat([0.3, -1.0, 0.5], 0.9)  # a generic orientation: no vertex at the bottom
    _, f_exact = on_plane(Sphere(R), depth, q)
    assert f_exact[0] == pytest.approx(4 / 3 * E_STAR * math.sqrt(R) * depth**1.5)
    errs_d, errs_f, errs_r = [], [], []
    for level in (2, 3, 4, 5):
        tm = trimesh.creation.icosphere(level, radius=R)
        chord = chordal_error(tm)
        b, f = on_plane(Mesh(tm), depth, q)
        assert len(b) == 1  # one contact per penetrating region, whatever the resolution
        assert b.normal[0] == pytest.approx([0, 0, 1])
        # the contact is the osculating sphere of a vertex on the sphere (radius = the vertex's
        # curvature estimate): its overlap is the sphere's to well within the chordal error
        # (a vertex alone would be up to one chordal error short)
        assert abs(b.delta[0] - depth) <= 0.05 * chord
        rel_r = abs(b.r_eff[0] - R) / R
        # Hertz force with the mesh's delta and radius: bounded by the two errors
        bound = 1.5 * chord / depth + 0.5 * rel_r + 1e-9
        rel_f = abs(f[0] - f_exact[0]) / f_exact[0]
        assert rel_f <= 1.05 * bound
        errs_d.append(depth - b.delta[0])
        errs_f.append(rel_f)
        errs_r.append(rel_r)
    # refinement converges: the finest mesh is much closer than the coarsest
    assert errs_f[-1] < 0.25 * errs_f[0]
    assert errs_r == sorted(errs_r, reverse=True) and errs_r[-1] < 2e-3
    assert errs_f[-1] < 0.03


def test_force_does_not_scale_with_vertex_count():
    # A sphere pressed 2 mm: the number of vertices below the plane grows ~4x per level, the
    # reported contact count stays 1 and the force stays within a few percent.
    depth = 2e-3
    q = axis_angle_quat([1.0, 0.2, 0.0], 0.4)
    forces, below = [], []
    for level in (3, 4, 5):
        tm = trimesh.creation.icosphere(level, radius=R)
        b, f = on_plane(Mesh(tm), depth, q)
        assert len(b) == 1
        rot = trimesh.transformations.quaternion_matrix(q)[:3, :3]
        z = (tm.vertices @ rot.T)[:, 2] + R - depth
        below.append(int(np.sum(z < 0)))
        forces.append(f[0])
    assert below[2] > 10 * below[0]
    # a spring per vertex would multiply the force by below[2]/below[0]; one contact per region
    # only moves with the chordal error (largest at level 3), and levels 4-5 agree within 1 %
    assert forces[0] < forces[1] and forces[2] / forces[1] == pytest.approx(1.0, abs=0.01)
    _, f_exact = on_plane(Sphere(R), depth, q)
    assert forces[2] == pytest.approx(f_exact[0], rel=0.02)


def test_disjoint_parts_give_one_contact_each():
    # two spheres joined in one (non-convex, two-component) mesh, both touching the ground
    a = trimesh.creation.icosphere(3, radius=R)
    b = a.copy()
    b.apply_translation([0.2, 0, 0.0005])
    both = trimesh.util.concatenate([a, b])
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(Mesh(both, radius=R), 0)
    m.set_default_law({"name": "hooke", "k": 1.0})
    st = BodyState.create([[0, 0, R - 1e-3]], mass=1.0, inertia=[1.0] * 3)
    batch = m.detect(st)
    assert len(batch) == 2 and len(set(batch.key)) == 2
    assert sorted(batch.delta) == pytest.approx([5e-4, 1e-3], abs=2e-6)  # icosphere poles
    assert sorted(batch.point[:, 0]) == pytest.approx([0.0, 0.2], abs=1e-9)


def two_body(sa, sb, pos, quat=None):
    m = ContactModel()
    m.add_shape(sa, 0)
    m.add_shape(sb, 1)
    m.set_default_law({"name": "hooke", "k": 1.0})
    return m.detect(BodyState.create(pos, quat=quat, mass=1.0, inertia=[1.0] * 3))


@pytest.mark.parametrize(
    "centre, delta, normal",
    [
        ([0.2, 0.1, 0.38], 0.2 - 0.13, [0, 0, 1]),  # above the top face z = 0.25
        ([1.0 + 0.1 / math.sqrt(2), 0.0, 0.25 + 0.1 / math.sqrt(2)], 0.1,
         [1 / math.sqrt(2), 0, 1 / math.sqrt(2)]),  # over the edge x = 1, z = 0.25
        ([0.9, 0.1, 0.2], 0.25, [0, 0, 1]),  # centre inside, 0.05 under the top face
    ],
)
def test_sphere_against_box_mesh_equals_the_closed_form(centre, delta, normal):
    q = axis_angle_quat([0, 0, 1], 0.3)
    rot = trimesh.transformations.quaternion_matrix(q)[:3, :3]
    box = Mesh(trimesh.creation.box((2.0, 1.0, 0.5)))
    c = rot @ np.array(centre)
    b = two_body(box, Sphere(0.2), [[0, 0, 0], c], quat=[q, [1, 0, 0, 0]])
    assert len(b) == 1 and b.a[0] == 0 and b.b[0] == 1
    assert b.delta[0] == pytest.approx(delta)
    assert b.normal[0] == pytest.approx(rot @ np.array(normal), abs=1e-9)
    assert b.r_eff[0] == pytest.approx(0.2)  # flat face or sharp edge: the sphere's radius


def test_sphere_against_icosphere_mesh():
    tm = trimesh.creation.icosphere(5, radius=R)
    u = np.array([0.6, 0.0, 0.8])
    b = two_body(Mesh(tm), Sphere(0.03), [[0, 0, 0], 0.078 * u])
    chord = chordal_error(tm)
    assert 0.002 - chord <= b.delta[0] <= 0.002 + 1e-12
    assert np.degrees(np.arccos(min(1.0, b.normal[0] @ u))) < 1.0
    assert b.r_eff[0] == pytest.approx(R * 0.03 / (R + 0.03), rel=3e-3)


def test_convex_meshes_through_fcl_match_sphere_sphere():
    t1 = trimesh.creation.icosphere(4, radius=0.1)
    t2 = trimesh.creation.icosphere(4, radius=0.2)
    cb = np.array([0.2, 0.05, 0.0])
    b = two_body(Mesh(t1), Mesh(t2), [[0, 0, 0], cb])
    d = 0.3 - np.linalg.norm(cb)
    u = cb / np.linalg.norm(cb)
    chord = 0.1 * (1 - math.cos(math.atan(1 / 2) / 8)) * 4  # generous: a few facet sagittas
    assert len(b) == 1
    assert abs(b.delta[0] - d) < chord
    assert np.degrees(np.arccos(min(1.0, b.normal[0] @ u))) < 2.0
    assert b.point[0] == pytest.approx((0.1 - d / 2) * u, abs=2e-3)
    assert b.r_eff[0] == pytest.approx(0.1 * 0.2 / 0.3, rel=5e-3)


def test_capsule_capsule_and_box_box_through_fcl():
    # parallel vertical capsules r = 0.1: delta = 0.2 - distance between the axes
    b = two_body(Capsule(0.1, 0.3), Capsule(0.1, 0.3), [[0, 0, 0], [0.19, 0.05, 0.0]])
    assert b.delta[0] == pytest.approx(0.2 - math.hypot(0.19, 0.05), rel=1e-6)
    assert b.normal[0] == pytest.approx(np.array([0.19, 0.05, 0]) / math.hypot(0.19, 0.05))
    # two unit cubes overlapping 1 cm along x: delta = 0.01, n = +x, r_eff undefined (flat/flat)
    b = two_body(Box((0.1, 0.1, 0.1)), Box((0.1, 0.1, 0.1)), [[0, 0, 0], [0.19, 0.05, 0.0]])
    assert b.delta[0] == pytest.approx(0.01, rel=1e-6)
    assert b.normal[0] == pytest.approx([1, 0, 0])
    assert b.point[0][0] == pytest.approx(0.095)
    assert np.isnan(b.r_eff[0])


@pytest.mark.parametrize("ext", ["obj", "ply", "glb"])
def test_mesh_files_of_common_formats(tmp_path, ext):
    tm = trimesh.creation.icosphere(3, radius=R)
    path = tmp_path / f"ball.{ext}"
    tm.export(path)
    mesh = Mesh(path)
    assert len(mesh.faces) == len(tm.faces)
    assert mesh.trimesh.volume == pytest.approx(tm.volume, rel=1e-6)


def test_sphere_against_a_non_convex_mesh():
    # two disjoint icospheres (radius R at the origin and at x = 0.2) as one non-convex mesh:
    # a sphere of radius 0.02 whose centre is 0.06 from the second part's centre along +z
    # overlaps it by about 0.01; inside/outside comes from mesh.contains
    a = trimesh.creation.icosphere(5, radius=R)
    b = a.copy()
    b.apply_translation([0.2, 0, 0])
    mesh = Mesh(trimesh.util.concatenate([a, b]))
    assert not mesh.is_convex
    batch = two_body(mesh, Sphere(0.02), [[0, 0, 0], [0.2, 0, 0.06]])
    chord = chordal_error(a)
    assert len(batch) == 1
    assert 0.01 - chord <= batch.delta[0] <= 0.01 + 1e-12
    assert batch.normal[0] == pytest.approx([0, 0, 1], abs=0.02)
    # centre inside the part: the penetration is R - 0.03 + 0.02 (signed distance inside)
    batch = two_body(mesh, Sphere(0.02), [[0, 0, 0], [0.2, 0, 0.03]])
    assert 0.04 - chord <= batch.delta[0] <= 0.04 + 1e-12


def test_mesh_mass_properties_and_file_loading(tmp_path):
    tm = trimesh.creation.icosphere(5, radius=R)
    path = tmp_path / "ball.stl"
    tm.export(path)
    mesh = Mesh(path)
    mass, com, inertia = mesh.mass_properties(1000.0)
    exact = 1000 * 4 / 3 * math.pi * R**3
    assert exact * 0.99 < mass < exact  # inscribed polyhedron: slightly less than the sphere
    assert com == pytest.approx([0, 0, 0], abs=1e-12)
    # the inscribed icosphere (subdivision 5) has 5.4e-4 less volume and 9.0e-4 less inertia
    # than the sphere: 1.5e-3 bounds that discretisation error, from below only
    assert np.diag(inertia) == pytest.approx([0.4 * exact * R * R] * 3, rel=1.5e-3)
    assert np.all(np.diag(inertia) < 0.4 * exact * R * R)
    assert np.abs(inertia - np.diag(np.diag(inertia))).max() < 1e-12 * inertia[0, 0]


def test_bad_meshes_are_rejected_with_clear_messages(tmp_path):
    good = trimesh.creation.icosphere(2, radius=R)
    open_mesh = trimesh.Trimesh(good.vertices, good.faces[1:], process=False)
    with pytest.raises(ParameterError, match="not watertight"):
        Mesh(open_mesh)
    repaired = Mesh(open_mesh, repair=True)
    assert repaired.trimesh.is_watertight and len(repaired.faces) == len(good.faces)
    flipped = good.faces.copy()
    flipped[0] = flipped[0][::-1]
    with pytest.raises(ParameterError, match="inconsistent face winding"):
        Mesh(trimesh.Trimesh(good.vertices, flipped, process=False))
    inverted = trimesh.Trimesh(good.vertices, good.faces[:, ::-1], process=False)
    with pytest.raises(ParameterError, match="inward-pointing normals"):
        Mesh(inverted)
    assert Mesh(inverted, repair=True).trimesh.volume > 0
    flat = trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]],
                           [[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]], process=False)
    with pytest.raises(ParameterError, match="degenerate"):
        Mesh(flat)
    with pytest.raises(ParameterError, match="does not exist"):
        Mesh(tmp_path / "missing.stl")
    with pytest.raises(ParameterError, match=r"'radius' = -1 m"):
        Mesh(good, radius=-1.0)


def test_non_convex_mesh_against_a_box_is_refused_at_the_door():
    a = trimesh.creation.icosphere(2, radius=R)
    b = a.copy()
    b.apply_translation([0.2, 0, 0])
    m = ContactModel()
    m.add_shape(Mesh(trimesh.util.concatenate([a, b])), 0)
    m.add_shape(Box((0.1, 0.1, 0.1)), 1)
    m.set_default_law({"name": "hooke", "k": 1.0})
    with pytest.raises(ParameterError, match="non-convex mesh"):
        m.detect(BodyState.create([[0, 0, 0], [1, 1, 1]], mass=1.0, inertia=[1.0] * 3))


def test_moving_spinning_mesh_on_plane():
    # Icosphere falling at 0.3 m/s and spinning about the plane normal at 50 rad/s: omega x r is
    # horizontal for every contact point, so ddelta = 0.3; its tangential slip is omega x r.
    tm = trimesh.creation.icosphere(4, radius=R)
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(Mesh(tm), 0)
    m.set_default_law({"name": "hooke", "k": 1.0})
    q = axis_angle_quat([0.3, -1.0, 0.5], 0.9)
    st = BodyState.create([[0, 0, R - 1e-3]], quat=[q], vel=[[0.1, 0, -0.3]], omega=[[0, 0, 50.0]],
                          mass=1.0, inertia=[1.0] * 3)
    b = m.detect(st)
    assert len(b) == 1
    assert b.ddelta[0] == pytest.approx(0.3)
    r = b.rb[0]
    assert b.vt[0] == pytest.approx(np.array([0.1, 0, 0]) + np.cross([0, 0, 50.0], r))
