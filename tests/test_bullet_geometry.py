"""PyBullet collision shapes read into the contact layer, checked against PyBullet itself: also
PyBullet's mesh assets and cylinders on managed ground, which come to rest and stand at the
height their geometry and the law's static overlap give.

Outside facts used: PyBullet's own data (``getMeshData``: the vertices it simulates for a
default-loaded URDF cylinder; ``getLinkState``: where a wheel is; ``getAABB``); a body at rest
carries its weight on its contacts; the static overlap of F = k delta^n under F is
(F / k)^(1/n); a prism inscribed in a cylinder of radius R lying on an edge has its axis R above
the edge."""

from __future__ import annotations

import numpy as np
import pybullet as p
import pybullet_data
import pytest
import trimesh

from mbplugin.bullet import BulletContacts

G = 9.81


@pytest.fixture
def client():
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    yield cid
    p.disconnect(physicsClientId=cid)


def test_capsule_lying_on_plane_urdf(client) -> None:
    """A capsule lying along x on plane.urdf rests on its two cap ends: the contact points sit
    at the ends of its segment (PyBullet's own AABB minus the radius) and each carries half the
    weight; the ground (a 200 m box) is read as a half-space."""
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    r, h, m, k = 0.02, 0.2, 0.5, 1e6
    shape = p.createCollisionShape(p.GEOM_CAPSULE, radius=r, height=h, physicsClientId=client)
    q = p.getQuaternionFromEuler([0, np.pi / 2, 0])  # axis along x
    d = (m * G / 2 / k) ** (2 / 3)
    cap = p.createMultiBody(m, shape, basePosition=[0, 0, r - d], baseOrientation=q,
                            physicsClientId=client)
    lo, hi = p.getAABB(cap, physicsClientId=client)
    half_segment = (hi[0] - lo[0]) / 2 - r
    bk = BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5, "k": k})
    for _ in range(24):
        info = bk.step()
    batch = bk.model.detect(bk.body_state())
    assert len(batch) == 2
    assert np.sort(batch.point[:, 0]) == pytest.approx([-half_segment, half_segment], abs=1e-4)
    assert info.normal_force == pytest.approx([m * G / 2] * 2, rel=0.01)


def test_cylinder_through_the_closest_points_fallback(client) -> None:
    """A cylinder standing on its flat face: without a fallback it is an exact cylinder that
    rests on three points of its rim, each carrying m g / 3 (linear law: overlap m g / (3 k);
    three equal forces on an equilateral triangle about the axis: no torque); with
    ``fallback="closest_points"`` PyBullet's getClosestPoints supplies the contact and the
    cylinder rests at the static overlap of a linear law, m g / k (rotation held by a large
    inertia: PyBullet reports one closest point, not necessarily under the centre of mass)."""
    from mbplugin.errors import ParameterError

    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    m, k, h, r = 1.0, 1e5, 0.1, 0.03
    shape = p.createCollisionShape(p.GEOM_CYLINDER, radius=r, height=h, physicsClientId=client)
    cyl = p.createMultiBody(m, shape, basePosition=[0, 0, h / 2 + 1e-3], physicsClientId=client)
    p.changeDynamics(cyl, -1, linearDamping=0, angularDamping=0,
                     localInertiaDiagonal=[1e6] * 3, physicsClientId=client)
    law = {"name": "hunt_crossley", "n": 1.0, "cr": 0.3, "k": k}  # F = k delta at rest
    bk = BulletContacts(client, manage=[plane], law=law)
    for _ in range(180):
        info = bk.step()
    overlap = h / 2 - p.getBasePositionAndOrientation(cyl, physicsClientId=client)[0][2]
    assert len(info.normal_force) == 3
    assert overlap == pytest.approx(m * G / 3 / k, rel=0.01)
    np.testing.assert_allclose(info.normal_force, m * G / 3, rtol=0.01)
    assert info.normal_force.sum() == pytest.approx(m * G, rel=0.01)
    bk.release()
    p.resetBasePositionAndOrientation(cyl, [0, 0, h / 2 + 1e-3], [0, 0, 0, 1],
                                      physicsClientId=client)
    p.resetBaseVelocity(cyl, [0, 0, 0], [0, 0, 0], physicsClientId=client)
    with pytest.raises(ParameterError, match="fallback"):
        BulletContacts(client, manage=[plane], law=law, fallback="gjk")
    bk = BulletContacts(client, manage=[plane], law=law, fallback="closest_points")
    for _ in range(180):  # 0.75 s: drop of 1 mm, a few bounces, rest
        info = bk.step()
    overlap = h / 2 - p.getBasePositionAndOrientation(cyl, physicsClientId=client)[0][2]
    assert overlap == pytest.approx(m * G / k, rel=0.01)
    assert info.normal_force.sum() == pytest.approx(m * G, rel=0.01)
    assert len(bk.bounces()) >= 1  # it did land through the fallback contact


HC = {"name": "hunt_crossley", "cr": 0.3, "k": 1e6}


def mass_of(client, body: int) -> float:
    return sum(p.getDynamicsInfo(body, lk, physicsClientId=client)[0]
               for lk in range(-1, p.getNumJoints(body, physicsClientId=client)))


@pytest.mark.parametrize("asset", ["duck_vhacd.urdf", "teddy_vhacd.urdf", "cube"])
def test_mesh_assets_come_to_rest_on_managed_ground(client, tmp_path, asset: str) -> None:
    """Dropped 10 cm at a tilt (Hunt-Crossley k 1e6, c_r 0.3, friction mu 0.5), 6 s at 1/240 s,
    beside a box on the ground: the RMS speed over the last 2 s is below 1 mm/s and the
    contacts carry the weights within 1 % at every one of those steps (V-HACD compounds of 5
    and 15 convex parts, a cube OBJ)."""
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    q = p.getQuaternionFromEuler([0.3, 0.2, 0.1])
    if asset == "cube":
        trimesh.creation.box(extents=(0.05, 0.05, 0.05)).export(tmp_path / "cube.obj")
        shape = p.createCollisionShape(p.GEOM_MESH, fileName=str(tmp_path / "cube.obj"),
                                       physicsClientId=client)
        body = p.createMultiBody(0.1, shape, basePosition=[0, 0, 0.1], baseOrientation=q,
                                 physicsClientId=client)
    else:
        body = p.loadURDF(asset, basePosition=[0, 0, 0.1], baseOrientation=q,
                          physicsClientId=client)
    # a box beside it, managed too: the compound's parts never meet it (no complaint about a
    # non-convex mesh that "may touch" it)
    box = p.createMultiBody(0.2, p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.02] * 3,
                                                        physicsClientId=client),
                            basePosition=[0.5, 0, 0.03], physicsClientId=client)
    weight = (mass_of(client, body) + mass_of(client, box)) * G
    bk = BulletContacts(client, manage=[plane], law=HC, friction={"mu": 0.5})
    speed, force = [], []
    for _ in range(6 * 240):
        info = bk.step()
        speed.append(np.linalg.norm(p.getBaseVelocity(body, physicsClientId=client)[0]))
        force.append(info.normal_force.sum())
    last = slice(4 * 240, 6 * 240)
    assert np.sqrt(np.mean(np.square(speed[last]))) < 1e-3
    assert np.array(force[last]) == pytest.approx(weight, rel=0.01)


def wheel_urdf(path, r: float, length: float) -> str:
    path.write_text(
        '<?xml version="1.0"?><robot name="wheel"><link name="base"><inertial><mass '
        'value="1.0"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>'
        '</inertial><collision><origin rpy="1.5707963267948966 0 0" xyz="0 0 0"/><geometry>'
        f'<cylinder length="{length}" radius="{r}"/></geometry></collision></link></robot>')
    return str(path)


def test_default_loaded_cylinder_wheel_stands_at_its_height(client, tmp_path) -> None:
    """A URDF cylinder (axis horizontal) loaded with default flags: PyBullet reports a mesh
    without a file; it is modelled by the vertices PyBullet simulates, in PyBullet's frame,
    grown by PyBullet's 1 mm collision margin (the contact overlaps equal the depths of
    PyBullet's own vertices plus 1 mm, and PyBullet's getClosestPoints), and rests with its
    axis R + 1 mm - delta above the ground on an edge (2 rim corners, delta = (m g / 2 /
    k)^(2/3)) or R cos(pi / 32) + 1 mm - delta on a face (4 corners, delta = (m g / 4 /
    k)^(2/3))."""
    r, length, k = 0.1, 0.04, 1e7
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    w = p.loadURDF(wheel_urdf(tmp_path / "wheel.urdf", r, length), basePosition=[0, 0, r + 0.002],
                   physicsClientId=client)
    assert p.getCollisionShapeData(w, -1, physicsClientId=client)[0][4] == b"unknown_file"
    bk = BulletContacts(client, manage=[plane], law={**HC, "k": k}, friction={"mu": 0.8})
    for _ in range(480):
        info = bk.step()
    pos, orn = p.getBasePositionAndOrientation(w, physicsClientId=client)
    rot = np.array(p.getMatrixFromQuaternion(orn)).reshape(3, 3)
    verts = np.array(p.getMeshData(w, -1, physicsClientId=client)[1]) @ rot.T + pos
    batch = bk.model.detect(bk.body_state())
    margin = 1e-3  # PyBullet's collision margin of a hull (m)
    assert batch.delta.max() == pytest.approx(margin - verts[:, 2].min(), abs=1e-9)
    host = -min(c[8] for c in p.getClosestPoints(w, plane, 0.01, physicsClientId=client))
    assert batch.delta.max() == pytest.approx(host, abs=1e-9)
    n = len(info.normal_force)
    assert n in (2, 4)
    assert info.normal_force.sum() == pytest.approx(G, rel=1e-3)
    delta = (G / n / k) ** (2 / 3)
    axis = r if n == 2 else r * np.cos(np.pi / 32)
    assert pos[2] == pytest.approx(axis + margin - delta, abs=2e-6)


def test_r2d2_stands_on_its_wheels(client) -> None:
    """r2d2 (cylinder body and wheels loaded with default flags, STL fingers that are not
    closed surfaces), managed against the ground with the default options: no error; it stands
    on its four wheels (a generator of each 32-sided prism: 8 rim corners), carrying its
    weight, each wheel axis R + 1 mm - delta above the ground with delta the static overlap of
    an eighth of the weight per corner (the load shares differ by a few per cent: 15 % band;
    1 mm: PyBullet's collision margin, by which it grows the hull it collides). After 2 s:
    its wheels' corners touch down at a few mm/s, and Hunt-Crossley's damping, divided by that
    impact speed, holds them for ~1 s on their way to the static overlap (at 1 s still 20 %
    deeper, rising at 0.24 mm/s)."""
    r_wheel, k = 0.035, 1e7
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    robot = p.loadURDF("r2d2.urdf", basePosition=[0, 0, 0.47], physicsClientId=client)
    weight = mass_of(client, robot) * G
    bk = BulletContacts(client, manage=[plane], law={**HC, "k": k}, friction={"mu": 0.8})
    for _ in range(480):
        info = bk.step()
    assert info.normal_force.sum() == pytest.approx(weight, rel=0.01)
    batch = bk.model.detect(bk.body_state())
    links = {bk.rows[i][1] for i in batch.b}
    assert links == {2, 3, 6, 7}  # the wheels
    delta = (weight / 8 / k) ** (2 / 3)
    for lk in (2, 3, 6, 7):
        z = p.getLinkState(robot, lk, physicsClientId=client)[0][2]
        assert r_wheel + 1e-3 - 1.15 * delta <= z <= r_wheel + 1e-3 - 0.85 * delta


@pytest.mark.parametrize("kind", ["box", "hull"])
def test_box_and_hull_overlaps_are_pybullets_with_its_margin(client, tmp_path, kind) -> None:
    """A box (rounded by PyBullet's 1 mm collision margin at its edges and corners) and a convex
    hull (grown by it) pressed into managed ground at five tilts: the backend's deepest overlap
    equals PyBullet's own (-getClosestPoints) to 1e-9 m, whether a face, an edge or a corner
    is lowest (without the margin modelled: +1 mm on the hull, up to -0.73 mm on a box
    corner)."""
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    if kind == "box":
        cs = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 0.03, 0.02],
                                    physicsClientId=client)
    else:
        pts = np.random.default_rng(7).uniform(-0.04, 0.04, (14, 3))
        trimesh.convex.convex_hull(pts).export(tmp_path / "hull.obj")
        cs = p.createCollisionShape(p.GEOM_MESH, fileName=str(tmp_path / "hull.obj"),
                                    physicsClientId=client)
    body = p.createMultiBody(1.0, cs, basePosition=[0, 0, 0.3], physicsClientId=client)
    bk = BulletContacts(client, manage=[plane], law={**HC, "k": 1e7})
    for rpy in ([0, 0, 0], [0.4, 0, 0], [0.5, 0.6, 0.2], [1.2, -0.7, 2.0], [0, 0.3, 0.1]):
        orn = p.getQuaternionFromEuler(rpy)
        p.resetBasePositionAndOrientation(body, [0, 0, 0.3], orn, physicsClientId=client)
        low = min(c[8] for c in p.getClosestPoints(body, plane, 1.0, physicsClientId=client))
        p.resetBasePositionAndOrientation(body, [0, 0, 0.3 - low - 3e-4], orn,
                                          physicsClientId=client)  # 0.3 mm into the ground
        host = -min(c[8] for c in p.getClosestPoints(body, plane, 0.01, physicsClientId=client))
        ours = bk.model.detect(bk.body_state()).delta.max()
        assert host == pytest.approx(3e-4, abs=1e-9)
        assert ours == pytest.approx(host, abs=1e-9), rpy


@pytest.mark.parametrize(("shape", "skin"), [("sphere", 1e-3), ("box", -1e-3),
                                             ("box", float("nan"))])
def test_skin_outside_its_range_is_a_clear_error(shape, skin) -> None:
    """ContactModel.add_shape's skin: a Box or a Mesh only, >= 0 and finite; else an error
    naming the parameter and the allowed range."""
    from mbplugin.contact import Box, ContactModel, Sphere
    from mbplugin.errors import ParameterError

    model = ContactModel()
    model.add_material("m", E=1e9, nu=0.3)
    s = Sphere(0.01) if shape == "sphere" else Box((0.01, 0.01, 0.01))
    with pytest.raises(ParameterError, match=r"skin = .* allowed range: \[0, inf\) for a Box"):
        model.add_shape(s, 0, "m", skin=skin)
