"""Narrow phase of the primitive pairs against hand-computed geometry and kinematics.

Every expected value below is worked out by hand in the comments (rigid-body kinematics
v + omega x r, the effective-mass formula 1/m_eff = 1/m_a + 1/m_b + (r x n).I^-1 (r x n), and the
closed-form geometry of spheres, planes, boxes and capsules).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.contact import (
    BodyState,
    Box,
    Capsule,
    ContactModel,
    CylindricalHole,
    Plane,
    Sphere,
    SphericalHole,
    axis_angle_quat,
)

S2 = math.sqrt(2.0)


def model_with(*shapes, law=None):
    """shapes: (shape, body, pos, quat) tuples."""
    m = ContactModel()
    for sh in shapes:
        shape, body = sh[0], sh[1]
        pos = sh[2] if len(sh) > 2 else (0, 0, 0)
        quat = sh[3] if len(sh) > 3 else (1, 0, 0, 0)
        m.add_shape(shape, body=body, pos=pos, quat=quat)
    m.set_default_law(law or {"name": "hooke", "k": 1.0})
    return m


def test_sphere_sphere_geometry_velocity_and_mass():
    # radii 0.1 and 0.2, centres 0.25 apart along (1, 1, 0)/sqrt2: delta = 0.05
    u = np.array([1.0, 1.0, 0.0]) / S2
    m = model_with((Sphere(0.1), 0), (Sphere(0.2), 1))
    st = BodyState.create(
        [[0, 0, 0], 0.25 * u],
        vel=[[1.0, 0, 0], [0, -1.0, 0]],
        omega=[[0, 0, 5.0], [3.0, 0, 0]],
        mass=[2.0, 3.0],
        inertia=[[1e-2] * 3, [2e-2] * 3],
    )
    b = m.detect(st)
    assert len(b) == 1 and b.a[0] == 0 and b.b[0] == 1
    assert b.delta[0] == pytest.approx(0.05)
    assert b.normal[0] == pytest.approx(u)
    # midpoint of the surface points: c_a + (r_a - delta/2) n = 0.075 u
    assert b.point[0] == pytest.approx(0.075 * u)
    # ddelta = -n.(v_b - v_a) = -(0 - 1 + -1 - 0)/sqrt2 = sqrt2 ; spin does not enter (r || n)
    assert b.ddelta[0] == pytest.approx(S2)
    # tangential: spin adds omega x r. r_a = 0.075 u, r_b = -0.175 u
    va = np.array([1.0, 0, 0]) + np.cross([0, 0, 5.0], 0.075 * u)
    vb = np.array([0, -1.0, 0]) + np.cross([3.0, 0, 0], -0.175 * u)
    vrel = vb - va
    assert b.vt[0] == pytest.approx(vrel - (vrel @ u) * u)
    # r || n: no rotational term, m_eff = 2*3/5
    assert b.m_eff[0] == pytest.approx(1.2)
    assert b.r_eff[0] == pytest.approx(0.1 * 0.2 / 0.3)


def test_spinning_sphere_on_plane_normal_and_rolling_velocity():
    # Tilted ground: normal n = R_x(30 deg) e_z. A sphere of radius 0.05 whose centre is
    # 0.04 above the plane along n: delta = 0.01. Spin about any axis leaves ddelta unchanged
    # (r = -(R - delta/2) n is parallel to n); rolling at v = omega x (R' n) gives vt = 0.
    q = axis_angle_quat([1, 0, 0], math.radians(30))
    n = np.array([0.0, -math.sin(math.radians(30)), math.cos(math.radians(30))])
    m = model_with((Plane(), -1, (0, 0, 0), q), (Sphere(0.05), 0))
    R, d = 0.05, 0.01
    rp = R - d / 2  # lever arm of the contact point
    w = np.array([7.0, 0.0, 0.0])  # spin axis perpendicular to n
    v_roll = np.cross(w, rp * n)  # centre velocity for rolling without slip
    st = BodyState.create([0.04 * n], vel=[v_roll - 0.3 * n], omega=[w], mass=1.0,
                          inertia=[[1e-3] * 3])
    b = m.detect(st)
    assert len(b) == 1 and b.a[0] == -1 and b.b[0] == 0
    assert b.normal[0] == pytest.approx(n)
    assert b.delta[0] == pytest.approx(d)
    assert b.ddelta[0] == pytest.approx(0.3)
    assert b.vt[0] == pytest.approx(np.zeros(3), abs=1e-12)
    assert b.point[0] == pytest.approx(0.04 * n - rp * n)
    assert b.r_eff[0] == pytest.approx(R)
    assert b.m_eff[0] == pytest.approx(1.0)  # r || n: no rotational term
    # the same sphere spinning about the normal: ddelta and vt unchanged by the spin
    st.omega[0] = 40.0 * n
    st.vel[0] = -0.3 * n
    b2 = m.detect(st)
    assert b2.ddelta[0] == pytest.approx(0.3)
    assert b2.vt[0] == pytest.approx(np.zeros(3), abs=1e-12)


def test_off_centre_sphere_on_rotating_body():
    # Body at the origin rotating about y with w = 2 rad/s; a sphere (R = 0.1) attached at
    # local (L, 0, 0), L = 0.5, rests 0.095 above the ground z = 0 -> delta = 0.005.
    # Centre velocity w x r = (0, 2, 0) x (0.5, 0, 0) = (0, 0, -1): ddelta = 1 m/s.
    # Contact point r = (0.5, 0, -(0.1 - 0.0025)) from the COM; r x n = (0, -0.5, 0);
    # 1/m_eff = 1/m + 0.25/I_yy = 1/4 + 0.25/0.5 = 0.75.
    L = 0.5
    m = model_with((Plane(), -1), (Sphere(0.1), 0, (L, 0, 0)))
    st = BodyState.create([[0, 0, 0.095]], omega=[[0, 2.0, 0]], mass=4.0,
                          inertia=[[1.0, 0.5, 2.0]])
    b = m.detect(st)
    assert b.delta[0] == pytest.approx(0.005)
    assert b.ddelta[0] == pytest.approx(1.0)
    # w x r at the point: (0,2,0) x (0.5, 0, -0.0975) = (2*-0.0975, 0, -1) -> vt = (-0.195, 0, 0)
    assert b.vt[0] == pytest.approx([-0.195, 0, 0])
    assert b.m_eff[0] == pytest.approx(1 / 0.75)
    assert b.rb[0] == pytest.approx([0.5, 0, -0.0975])  # b is the body, a the world


def test_sphere_box_face_edge_corner_and_inside():
    # Unit-half-extent box rotated 90 deg about z (so its local x is world y), at (1, 2, 0).
    q = axis_angle_quat([0, 0, 1], math.pi / 2)
    m = model_with((Box((1.0, 0.5, 0.25)), 0, (0, 0, 0), q), (Sphere(0.2), 1))
    base = dict(mass=[1.0, 1.0], inertia=[[1.0] * 3, [1.0] * 3])
    # face: the box's local +y face is world -x, at x = 1 - 0.5 = 0.5; sphere centre x = 0.35
    st = BodyState.create([[1, 2, 0], [0.35, 2.3, 0.1]], **base)
    b = m.detect(st)
    assert b.a[0] == 0 and b.b[0] == 1
    assert b.normal[0] == pytest.approx([-1, 0, 0])
    assert b.delta[0] == pytest.approx(0.2 - 0.15)
    # midpoint of box point (0.5, 2.3, 0.1) and sphere deepest point (0.55, 2.3, 0.1)
    assert b.point[0] == pytest.approx([0.525, 2.3, 0.1])
    # edge: top edge along world y at x = 0.5, z = 0.25; centre 0.1/sqrt2 from it diagonally
    c = np.array([0.5 - 0.1 / S2, 2.0, 0.25 + 0.1 / S2])
    st = BodyState.create([[1, 2, 0], c], **base)
    b = m.detect(st)
    assert b.normal[0] == pytest.approx([-1 / S2, 0, 1 / S2])
    assert b.delta[0] == pytest.approx(0.1)
    # corner (0.5, 3.0, 0.25) (local x = 1 -> world y = 3): centre along (-1, 1, 1)/sqrt3
    u = np.array([-1.0, 1.0, 1.0]) / math.sqrt(3)
    st = BodyState.create([[1, 2, 0], np.array([0.5, 3.0, 0.25]) + 0.15 * u], **base)
    b = m.detect(st)
    assert b.normal[0] == pytest.approx(u)
    assert b.delta[0] == pytest.approx(0.05)
    # centre inside the box, 0.05 below the top face (z = 0.25): least depth is the top face
    st = BodyState.create([[1, 2, 0], [0.9, 2.1, 0.2]], **base)
    b = m.detect(st)
    assert b.normal[0] == pytest.approx([0, 0, 1])
    assert b.delta[0] == pytest.approx(0.2 + 0.05)


def test_moving_rotating_box_against_sphere():
    # Box spinning about z at w = 3 rad/s, centre at the origin, half extents (1, 1, 1);
    # sphere R = 0.1 at (1.05, 0.4, 0): face x = 1, delta = 0.05, n = +x; the point is the midpoint
    # of the box point x = 1 and the sphere's deepest point x = 0.95: (0.975, 0.4, 0).
    # Box point velocity w x r = (0, 0, 3) x (0.975, 0.4, 0) = (-1.2, 2.925, 0);
    # sphere moving with (-2, 0, 0): ddelta = -n.(v_b - v_a) = -(-2 + 1.2) = 0.8.
    m = model_with((Box((1.0, 1.0, 1.0)), 0), (Sphere(0.1), 1))
    st = BodyState.create([[0, 0, 0], [1.05, 0.4, 0]], vel=[[0, 0, 0], [-2.0, 0, 0]],
                          omega=[[0, 0, 3.0], [0, 0, 0]], mass=[6.0, 1.0],
                          inertia=[[4.0] * 3, [1.0] * 3])
    b = m.detect(st)
    assert b.ddelta[0] == pytest.approx(0.8)
    assert b.point[0] == pytest.approx([0.975, 0.4, 0])
    assert b.vt[0] == pytest.approx([0, -2.925, 0])
    # r_a x n = (0.975, 0.4, 0) x (1, 0, 0) = (0, 0, -0.4); (r x n).I^-1.(r x n) = 0.16/4
    assert b.m_eff[0] == pytest.approx(1 / (1 / 6 + 1 + 0.04))


def test_capsule_sphere_cylinder_and_cap():
    # Capsule radius 0.1, half length 0.5 along world x (rotated 90 deg about y).
    q = axis_angle_quat([0, 1, 0], math.pi / 2)
    m = model_with((Capsule(0.1, 0.5), 0, (0, 0, 0), q), (Sphere(0.2), 1))
    base = dict(mass=[1.0, 1.0], inertia=[[1.0] * 3, [1.0] * 3])
    st = BodyState.create([[0, 0, 0], [0.2, 0, 0.25]], **base)  # over the cylinder
    b = m.detect(st)
    assert b.normal[0] == pytest.approx([0, 0, 1])
    assert b.delta[0] == pytest.approx(0.05)
    r1 = 0.1 * 0.2 / 0.3
    assert b.r_eff[0] == pytest.approx(math.sqrt(r1 * 0.2))  # Johnson (1985): sqrt(R'R'')
    st = BodyState.create([[0, 0, 0], [0.5 + 0.28 / S2, 0, 0.28 / S2]], **base)  # on the cap
    b = m.detect(st)
    assert b.normal[0] == pytest.approx([1 / S2, 0, 1 / S2])
    assert b.delta[0] == pytest.approx(0.02)
    assert b.r_eff[0] == pytest.approx(r1)


def test_capsule_plane_tilted_and_flat():
    # tilted 30 deg from horizontal about y; lower end at z_c - 0.5 sin30 = z_c - 0.25
    q = axis_angle_quat([0, 1, 0], math.pi / 2 - math.radians(30))
    m = model_with((Plane(), -1), (Capsule(0.1, 0.5), 0, (0, 0, 0), q))
    st = BodyState.create([[0, 0, 0.34]], mass=1.0, inertia=[[1.0] * 3])
    b = m.detect(st)
    assert len(b) == 1
    assert b.delta[0] == pytest.approx(0.1 - (0.34 - 0.25))
    assert b.r_eff[0] == pytest.approx(0.1)
    # flat: both ends touch with the same depth, distinct keys (features 0 and 1)
    qf = axis_angle_quat([0, 1, 0], math.pi / 2)
    m = model_with((Plane(), -1), (Capsule(0.1, 0.5), 0, (0, 0, 0), qf))
    b = m.detect(BodyState.create([[0, 0, 0.09]], mass=1.0, inertia=[[1.0] * 3]))
    assert len(b) == 2 and b.delta == pytest.approx([0.01, 0.01])
    assert len(set(b.key)) == 2
    assert sorted(b.point[:, 0]) == pytest.approx([-0.5, 0.5])


def test_box_plane_resting_cube_has_four_corners_with_quarter_mass():
    # Cube of half side h resting flat, 1 mm deep. Corner r = (+-h, +-h, -h),
    # r x n = (r_y, -r_x, 0),
    # I = 2 m h^2/3 -> (r x n).I^-1.(r x n) = 2h^2 / (2 m h^2/3) = 3/m -> m_eff = m/4.
    h, mass = 0.1, 2.0
    m = model_with((Plane(), -1), (Box((h, h, h)), 0))
    st = BodyState.create([[0, 0, h - 1e-3]], mass=mass, inertia=[[2 * mass * h * h / 3] * 3])
    b = m.detect(st)
    assert len(b) == 4 and len(set(b.key)) == 4
    assert b.delta == pytest.approx([1e-3] * 4)
    assert b.m_eff == pytest.approx([mass / 4] * 4)
    assert np.isnan(b.r_eff).all()  # sharp corners, no user radius
    assert sorted(map(tuple, np.round(b.point[:, :2], 12))) == [
        (-h, -h), (-h, h), (h, -h), (h, h)]
    assert b.point[:, 2] == pytest.approx([-5e-4] * 4)


def test_box_plane_rotating_box_on_an_edge():
    # Box rotated 45 deg about x, resting on its edge along x: the two lower corners at
    # z = c_z - h sqrt2. It spins about x at w: corner velocity w x r with r = (+-h, 0, -h sqrt2)
    # -> (w,0,0) x (x, 0, -a) = (0, w a, 0): tangential only, ddelta = 0; adding v_z = -0.2 -> 0.2.
    h = 0.1
    q = axis_angle_quat([1, 0, 0], math.pi / 4)
    m = model_with((Plane(), -1), (Box((h, h, h), radius=0.01), 0, (0, 0, 0), q))
    cz = h * S2 - 2e-4
    st = BodyState.create([[0, 0, cz]], vel=[[0, 0, -0.2]], omega=[[5.0, 0, 0]], mass=1.0,
                          inertia=[[1.0] * 3])
    b = m.detect(st)
    assert len(b) == 2
    assert b.delta == pytest.approx([2e-4, 2e-4])
    assert b.ddelta == pytest.approx([0.2, 0.2])
    a = h * S2 - 1e-4
    assert b.vt == pytest.approx(np.array([[0, 5.0 * a, 0]] * 2))
    assert b.r_eff == pytest.approx([0.01, 0.01])


def test_sphere_in_spherical_hole_negative_radius():
    # Hole R_H = 0.051, pin R_P = 0.05, clearance 1 mm; centre offset e = 1.2 mm -> delta 0.2 mm
    # along u = (0, 0.6, 0.8). Normal from the wall to the pin: -u. Review Eq. 5.3 with the
    # concave radius negative: R_eff = R_P R_H / (R_H - R_P) = 2.55 m.
    m = model_with((SphericalHole(0.051), 0), (Sphere(0.05), 1))
    u = np.array([0.0, 0.6, 0.8])
    st = BodyState.create([[0, 0, 0], 1.2e-3 * u], vel=[[0, 0, 0], 0.3 * u], mass=[10.0, 1.0],
                          inertia=[[1.0] * 3, [1.0] * 3])
    b = m.detect(st)
    assert len(b) == 1 and b.a[0] == 0 and b.b[0] == 1
    assert b.delta[0] == pytest.approx(2e-4)
    assert b.normal[0] == pytest.approx(-u)
    assert b.ddelta[0] == pytest.approx(0.3)  # pin moving outward presses into the wall
    assert b.r_eff[0] == pytest.approx(0.05 * 0.051 / 0.001)
    # no contact inside the clearance
    st.pos[1] = 0.5e-3 * u
    assert len(m.detect(st)) == 0


def test_sphere_in_cylindrical_hole():
    # Bore radius 0.021 along world x (rotated), pin 0.02; offset 1.5 mm across the axis and 7 mm
    # along it -> delta = 1.5e-3 - 1e-3; R' = 1/(1/0.02 - 1/0.021) = 0.42, R'' = 0.02.
    q = axis_angle_quat([0, 1, 0], math.pi / 2)
    m = model_with((CylindricalHole(0.021), 0, (0, 0, 0), q), (Sphere(0.02), 1))
    st = BodyState.create([[0, 0, 0], [7e-3, 0, -1.5e-3]], mass=[1.0, 1.0],
                          inertia=[[1.0] * 3, [1.0] * 3])
    b = m.detect(st)
    assert b.delta[0] == pytest.approx(5e-4)
    assert b.normal[0] == pytest.approx([0, 0, 1])
    assert b.r_eff[0] == pytest.approx(math.sqrt(0.42 * 0.02))


def test_keys_are_stable_and_fixed_pairs_skipped():
    m = model_with((Plane(), -1), (Sphere(0.1), 0), (Sphere(0.1), 1), (Sphere(0.1), 2))
    st = BodyState.create([[0, 0, 0.09], [0.19, 0, 0.09], [5, 5, 0.05]], mass=1.0,
                          inertia=[[1.0] * 3] * 3, fixed=[False, False, True])
    b1 = m.detect(st)
    st.pos[:, 2] -= 1e-4
    st.pos[0, 0] += 1e-3
    b2 = m.detect(st)
    assert sorted(b1.key) == sorted(b2.key)
    assert len(b1) == 3  # two on the ground, one sphere pair; the fixed sphere vs ground skipped
    assert set(zip(b1.a, b1.b, strict=True)) == {(-1, 0), (-1, 1), (0, 1)}


def test_hertz_stiffness_of_steel_spheres():
    # Corral et al. (2021) worked example: two steel spheres R = 10 mm, E = 207 GPa, nu = 0.3:
    # K = 1.07232e10 N/m^1.5; sphere on a steel plane: 1.51648e10.
    m = ContactModel()
    m.add_material("steel", E=207e9, nu=0.3, rho=7800)
    m.add_shape(Plane(), -1, "steel")
    m.add_shape(Sphere(0.01), 0, "steel")
    m.add_shape(Sphere(0.01), 1, "steel")
    m.set_default_law({"name": "hertz"})
    mass, _, inertia = m.body_mass_properties(2)
    assert mass == pytest.approx([3.26726e-2] * 2, rel=1e-5)
    st = BodyState.create([[0, 0, 0.0099], [0, 0, 0.0297]], mass=mass, inertia=inertia)
    b = m.detect(st)
    k = dict(zip(zip(b.a, b.b, strict=True), b.k_hertz, strict=True))
    assert k[(-1, 0)] == pytest.approx(1.51648e10, rel=1e-5)
    assert k[(0, 1)] == pytest.approx(1.07232e10, rel=1e-5)
    store = m.make_store()
    store.begin(b, 0.0)
    f = store.forces(b)
    i = int(np.flatnonzero(b.a == 0)[0])
    assert f[i] == pytest.approx(1.07232e10 * (2e-4) ** 1.5, rel=1e-5)


def test_mass_properties_from_density():
    # box 0.2 x 0.4 x 0.6 of rho = 1000: m = 48 kg, I_xx = m (0.2^2 + 0.3^2)/3 = 2.08;
    # capsule r = 0.1, h = 0.2 (cylinder 0.4): m = rho (pi r^2 0.4 + 4/3 pi r^3)
    m = ContactModel()
    m.add_material("w", E=1e9, nu=0.3, rho=1000.0)
    m.add_shape(Box((0.1, 0.2, 0.3)), 0, "w")
    m.add_shape(Capsule(0.1, 0.2), 1, "w")
    m.add_shape(Sphere(0.1), 2, "w", pos=(1.0, 0, 0))
    m.add_shape(Sphere(0.1), 2, "w", pos=(-1.0, 0, 0))
    m.set_default_law("hertz")
    mass, com, inertia = m.body_mass_properties(3)
    assert mass[0] == pytest.approx(48.0)
    assert np.diag(inertia[0]) == pytest.approx([48 * 0.13 / 3, 48 * 0.10 / 3, 48 * 0.05 / 3])
    mc = 1000 * math.pi * 0.01 * 0.4
    ms = 1000 * 4 / 3 * math.pi * 1e-3
    assert mass[1] == pytest.approx(mc + ms)
    assert inertia[1][2, 2] == pytest.approx(mc * 0.01 / 2 + 0.4 * ms * 0.01)
    # dumbbell: two spheres at +-1: I_yy = 2 (2/5 m r^2 + m 1^2), COM at the origin
    msph = 1000 * 4 / 3 * math.pi * 1e-3
    assert com[2] == pytest.approx([0, 0, 0])
    assert inertia[2][1, 1] == pytest.approx(2 * (0.4 * msph * 0.01 + msph))


def test_pair_law_table_priority_body_then_material_then_default():
    # Hooke laws with distinct k make the law of each contact visible in its force k * delta.
    m = ContactModel()
    m.add_material("steel", E=2e11, nu=0.3)
    m.add_material("rubber", E=1e7, nu=0.49)
    m.add_shape(Plane(), -1, "steel")
    m.add_shape(Sphere(0.1), 0, "steel")
    m.add_shape(Sphere(0.1), 1, "rubber")
    m.add_shape(Sphere(0.1), 2, "rubber")
    m.set_default_law({"name": "hooke", "k": 1.0})
    m.set_pair_law({"name": "hooke", "k": 10.0}, materials=("rubber", "steel"))
    m.set_pair_law({"name": "hooke", "k": 100.0}, bodies=(2, -1))
    st = BodyState.create([[0, 0, 0.09], [1, 0, 0.09], [2, 0, 0.09]], mass=1.0,
                          inertia=[1.0] * 3)
    b = m.detect(st)
    store = m.make_store()
    store.begin(b, 0.0)
    k_of = dict(zip(b.b.tolist(), (store.forces(b) / b.delta).tolist(), strict=True))
    assert k_of == pytest.approx({0: 1.0, 1: 10.0, 2: 100.0})


def test_fixed_body_contributes_nothing_to_the_effective_mass():
    # Free sphere (m = 2) on a fixed sphere moving at a prescribed velocity (a driven body):
    # m_eff = m_free, but the driven body's velocity enters ddelta: -n.(v_b - v_a).
    m = model_with((Sphere(0.1), 0), (Sphere(0.1), 1))
    st = BodyState.create([[0, 0, 0], [0, 0, 0.19]], vel=[[0, 0, 0.5], [0, 0, -0.25]],
                          mass=[1.0, 2.0], inertia=[[1.0] * 3, [1.0] * 3], fixed=[True, False])
    b = m.detect(st)
    assert b.m_eff[0] == pytest.approx(2.0)
    assert b.ddelta[0] == pytest.approx(0.75)


def _rodrigues(axis, angle):
    """Rotation matrix of ``angle`` about ``axis`` (Rodrigues' formula, written out here)."""
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def test_box_corner_effective_mass_yawed_unequal_inertias():
    # Box of half extents (a, b, c) with its principal inertias m(b^2+c^2)/3, m(a^2+c^2)/3,
    # m(a^2+b^2)/3, lying flat and turned 45 deg about the plane normal z. A rotation about n
    # leaves (r x n).I_world^-1.(r x n) as in the body frame: with r_body = (+-a, +-b, -c),
    # r x n = (+-b, -+a, 0) -> 1/m_eff = 1/m + b^2/I_x + a^2/I_y at every corner. The
    # transposed world inverse inertia R^T I^-1 R turns the lever by 90 deg instead and gives
    # 1/m + a^2/I_x + b^2/I_y (here 33 % off in m_eff).
    a, b, c, mass = 0.05, 0.15, 0.1, 3.0
    ix, iy, iz = mass * (b * b + c * c) / 3, mass * (a * a + c * c) / 3, mass * (a * a + b * b) / 3
    q = axis_angle_quat([0, 0, 1], math.pi / 4)
    m = model_with((Plane(), -1), (Box((a, b, c)), 0))
    st = BodyState.create([[0, 0, c - 1e-3]], quat=[q], mass=mass, inertia=[[ix, iy, iz]])
    bt = m.detect(st)
    assert len(bt) == 4
    expected = 1 / (1 / mass + b * b / ix + a * a / iy)
    transposed = 1 / (1 / mass + a * a / ix + b * b / iy)
    assert abs(transposed / expected - 1) > 0.3
    assert bt.m_eff == pytest.approx([expected] * 4, rel=1e-12)


def test_box_corner_effective_mass_tilted_unequal_inertias():
    # A box tilted about a skew axis so one corner is lowest, 0.1 mm into the ground.
    # 1/m_eff = 1/m + (r x n).(R I^-1 R^T).(r x n), r = R r_body of the lowest corner, n = z;
    # R from Rodrigues' formula here, the inertia diagonal in the body frame.
    a, b, c, mass = 0.04, 0.12, 0.07, 2.0
    inertia = np.array([(b * b + c * c), (a * a + c * c), (a * a + b * b)]) * mass / 3
    axis, angle = np.array([0.3, 1.0, 2.0]), 0.7
    rot = _rodrigues(axis, angle)
    corners = np.array([[sx * a, sy * b, sz * c] for sx in (-1, 1) for sy in (-1, 1)
                        for sz in (-1, 1)]) @ rot.T
    low = corners[np.argmin(corners[:, 2])]
    assert np.sort(corners[:, 2])[1] - low[2] > 1e-3  # one corner clearly lowest
    z0 = -low[2] - 1e-4
    m = model_with((Plane(), -1), (Box((a, b, c)), 0))
    st = BodyState.create([[0.3, -0.2, z0]], quat=[axis_angle_quat(axis, angle)], mass=mass,
                          inertia=[inertia])
    bt = m.detect(st)
    assert len(bt) == 1
    assert bt.delta[0] == pytest.approx(1e-4, rel=1e-9)
    u = np.cross(low, [0.0, 0.0, 1.0])
    w_world = rot @ np.diag(1 / inertia) @ rot.T
    expected = 1 / (1 / mass + u @ w_world @ u)
    transposed = 1 / (1 / mass + u @ (rot.T @ np.diag(1 / inertia) @ rot) @ u)
    assert abs(transposed / expected - 1) > 0.5  # 53 % for this pose
    assert bt.m_eff[0] == pytest.approx(expected, rel=1e-12)


def test_spheres_on_a_moving_plane_follow_its_pose_between_detections():
    # A ground plane on body 0 under three spheres (bodies 1-3, radius 0.1 at x = -1, 0, 1,
    # z = 0.08). Flat at z = 0: delta = r - z = 0.02 for each. Then the same model is detected
    # with the plane raised by 0.01 and tilted by 0.1 rad about y, surface through (0, 0, 0.01)
    # with normal n = (sin 0.1, 0, cos 0.1): delta = r - (c - p0).n, by hand per sphere. Every
    # detection must see the plane's current pose (the detection keeps per-pose values).
    m = model_with((Plane(), 0), (Sphere(0.1), 1), (Sphere(0.1), 2), (Sphere(0.1), 3))
    xs = np.array([-1.0, 0.0, 1.0])
    pos = [[0.0, 0.0, 0.0], *([x, 0.0, 0.08] for x in xs)]
    flat = BodyState.create(pos, mass=1.0, fixed=[True, False, False, False])
    b = m.detect(flat, margin=0.5)
    assert np.allclose(b.delta, 0.02, rtol=0, atol=1e-15)
    a = 0.1
    tilted = BodyState.create([[0.0, 0.0, 0.01], *pos[1:]],
                              quat=[axis_angle_quat([0, 1, 0], a)] + [[1, 0, 0, 0]] * 3,
                              mass=1.0, fixed=[True, False, False, False])
    b = m.detect(tilted, margin=0.5)
    expect = 0.1 - (xs * math.sin(a) + (0.08 - 0.01) * math.cos(a))
    assert np.allclose(b.delta, expect, rtol=0, atol=1e-14)
    assert np.allclose(b.normal, [math.sin(a), 0.0, math.cos(a)], rtol=0, atol=1e-15)
    # back to the flat pose, and with the middle sphere fixed too (another set of allowed
    # pairs: a fixed sphere on the fixed plane is no contact)
    b = m.detect(flat, margin=0.5)
    assert np.allclose(b.delta, 0.02, rtol=0, atol=1e-15)
    pinned = BodyState.create(pos, mass=1.0, fixed=[True, False, True, False])
    b = m.detect(pinned, margin=0.5)
    assert sorted(b.b.tolist()) == [1, 3]
    assert np.allclose(b.delta, 0.02, rtol=0, atol=1e-15)
