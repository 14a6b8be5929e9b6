"""Assets a user brings, one per failure class the sweep of pybullet_data found
(benchmarks/assets_sweep.py): files and robots generated here, plus pybullet_data's kuka.

Outside facts used: PyBullet's own outcome (a ray between two boxes of one OBJ file hits a
single convex hull, not two: how PyBullet's loader splits a file into parts; PyBullet refusing
nothing of these scenes natively); the static overlap of F = k delta^n under F is
(F / k)^(1/n) (a box resting on its four bottom corners carries m g / 4 on each); a body at
rest on the ground is where native PyBullet puts it when nothing touches (a fixed base)."""

from __future__ import annotations

import warnings

import numpy as np
import pybullet as p
import pybullet_data
import pytest
import trimesh
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.bullet.client import Client
from mbplugin.bullet.geometry import obj_groups
from mbplugin.bullet.kinematics import LinkTree
from mbplugin.errors import ParameterError

G = 9.81
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": 1e6}
#: PyBullet's collision margin of a convex hull (m): it collides a mesh's hull grown by 1 mm
#: (bullet3's default margin; measured with getClosestPoints in the tests that use it)
PB_MARGIN = 1e-3


@pytest.fixture
def world():
    """(client, plane): tests/bullet_world.py's ground."""
    with ground_world(G) as w:
        yield w


def _obj(path, parts, tag="o") -> None:
    """Write the meshes ``parts`` into one OBJ file, each after an ``o``/``g`` line (tag None:
    no such lines)."""
    lines, base = [], 0
    for i, m in enumerate(parts):
        if tag:
            lines.append(f"{tag} part{i}")
        lines += [f"v {x:.9g} {y:.9g} {z:.9g}" for x, y, z in m.vertices]
        lines += [f"f {a + base} {b + base} {c + base}" for a, b, c in m.faces + 1]
        base += len(m.vertices)
    path.write_text("\n".join(lines) + "\n")


def _urdf(path, mesh, mass=1.0) -> None:
    path.write_text(
        f'<robot name="r"><link name="b"><inertial><mass value="{mass}"/><inertia ixx="0.01" '
        'iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry>'
        f'<mesh filename="{mesh}"/></geometry></collision></link></robot>')


@pytest.mark.parametrize("tag", [None, "o", "g"])
def test_obj_parts_are_pybullets(world, tmp_path, tag) -> None:
    """Two boxes 1 m apart in one OBJ file: PyBullet makes one hull of them without ``o``/``g``
    lines (a ray through the gap hits it) and one hull each with them (the ray passes); the
    backend's parts are the same."""
    client, _plane = world
    a = trimesh.creation.box((0.2, 0.2, 0.2))
    b = trimesh.creation.box((0.2, 0.2, 0.2))
    b.apply_translation((1.0, 0, 0))
    _obj(tmp_path / "two.obj", [a, b], tag)
    cs = p.createCollisionShape(p.GEOM_MESH, fileName=str(tmp_path / "two.obj"),
                                physicsClientId=client)
    body = p.createMultiBody(1.0, cs, physicsClientId=client)
    hit = p.rayTest([0.5, 0, 1], [0.5, 0, -1], physicsClientId=client)[0][0] == body
    assert len(obj_groups(str(tmp_path / "two.obj"))) == (1 if tag is None else 2)
    assert hit == (tag is None)


def test_flat_part_dropped_box_rests_at_hertz(world, tmp_path) -> None:
    """A box plus a stray triangle object (panda's link6.obj has such slivers) is managed: the
    flat part is left out with a one-line warning and the box comes to rest on its four
    bottom corners, its centre h/2 + 1 mm - (m g / (4 k))^(2/3) above the ground: PyBullet
    collides the hull grown by its 1 mm margin, and getClosestPoints shows each corner at
    the static overlap (m g / (4 k))^(2/3)."""
    client, plane = world
    h, m, k = 0.1, 1.0, LAW["k"]
    box = trimesh.creation.box((h, h, h))
    tri = trimesh.Trimesh([[0, 0, 0.02], [0.01, 0, 0.02], [0, 0.01, 0.02]], [[0, 1, 2]])
    _obj(tmp_path / "boxtri.obj", [box, tri])
    _urdf(tmp_path / "boxtri.urdf", "boxtri.obj", m)
    body = p.loadURDF(str(tmp_path / "boxtri.urdf"), [0, 0, h / 2 + 0.002],
                      physicsClientId=client)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        bc = BulletContacts(client, manage=[plane], law=LAW)
    flat = [w for w in got if "flat" in str(w.message)]
    assert len(flat) == 1 and "boxtri.obj" in str(flat[0].message)
    for _ in range(240):
        bc.step()
    z = p.getBasePositionAndOrientation(body, physicsClientId=client)[0][2]
    static = (m * G / 4 / k) ** (2 / 3)
    assert z == pytest.approx(h / 2 + PB_MARGIN - static, abs=2e-6)
    host = -min(c[8] for c in p.getClosestPoints(body, plane, 0.01, physicsClientId=client))
    assert host == pytest.approx(static, rel=0.02)


def test_mesh_without_volume_is_a_clear_error(world, tmp_path) -> None:
    """A mesh file whose only part is a triangle: a ParameterError at construction naming the
    body, link and file (PyBullet loads it natively)."""
    client, plane = world
    tri = trimesh.Trimesh([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]], [[0, 1, 2]])
    _obj(tmp_path / "tri.obj", [tri])
    _urdf(tmp_path / "tri.urdf", "tri.obj")
    p.loadURDF(str(tmp_path / "tri.urdf"), [0, 0, 0.2], physicsClientId=client)
    with pytest.raises(ParameterError, match=r"body 1 link -1.*tri\.obj.*no part with a volume"):
        BulletContacts(client, manage=[plane], law=LAW)


def test_static_pair_not_checked_nor_managed(world, tmp_path) -> None:
    """A static (mass 0) open mesh lying on plane.urdf (a fixed-base arm's mounting plate):
    the pair of two static bodies is not managed, so the open mesh is neither refused nor a
    row, and a ball dropped next to it rests at its static Hertz-form overlap
    (m g / k)^(2/3)."""
    client, plane = world
    plate = trimesh.creation.box((0.3, 0.3, 0.02))
    plate.update_faces(np.arange(len(plate.faces)) != 0)  # a hole: not watertight
    plate.export(tmp_path / "plate.stl")
    assert not trimesh.load(tmp_path / "plate.stl").is_watertight
    _urdf(tmp_path / "plate.urdf", "plate.stl", mass=0.0)
    plate_id = p.loadURDF(str(tmp_path / "plate.urdf"), [0, 0, 0.005], physicsClientId=client)
    r, m, k = 0.05, 0.5, LAW["k"]
    ball = p.createMultiBody(m, p.createCollisionShape(p.GEOM_SPHERE, radius=r,
                                                       physicsClientId=client),
                             basePosition=[1.0, 0, r], physicsClientId=client)
    bc = BulletContacts(client, manage=[plane], law=LAW)
    assert plate_id not in {b for b, _ in bc.rows} and ball in {b for b, _ in bc.rows}
    for _ in range(240):
        bc.step()
    z = p.getBasePositionAndOrientation(ball, physicsClientId=client)[0][2]
    assert z == pytest.approx(r - (m * G / k) ** (2 / 3), abs=2e-6)


def test_kuka_fixed_base_on_managed_plane(world) -> None:
    """pybullet_data's kuka_iiwa (base mass 0, its base mesh open) on managed ground: built
    and stepped; its base stays where native PyBullet keeps it."""
    client, plane = world
    kuka = p.loadURDF("kuka_iiwa/model.urdf", [0, 0, 0.3], physicsClientId=client)
    start = p.getBasePositionAndOrientation(kuka, physicsClientId=client)[0]
    bc = BulletContacts(client, manage=[plane], law=LAW, material={"E": 1e8, "nu": 0.4})
    for _ in range(24):
        bc.step()
    assert p.getBasePositionAndOrientation(kuka, physicsClientId=client)[0] == start


def test_deep_initial_overlap_is_a_clear_error(world) -> None:
    """A ball started 0.6 of its radius into the ground (pybullet_data's bike at z = 0.6
    starts with its wheels 0.69 of their reach in it): refused at construction, the client
    left as it was; 0.4 of the radius is accepted."""
    client, plane = world
    r = 0.1
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=client)
    ball = p.createMultiBody(1.0, shape, basePosition=[0, 0, 0.4 * r], physicsClientId=client)
    with pytest.raises(ParameterError, match=r"overlap by 0\.06 m, more than half"):
        BulletContacts(client, manage=[plane], law=LAW)
    p.resetBasePositionAndOrientation(ball, [0, 0, 0.6 * r], [0, 0, 0, 1],
                                      physicsClientId=client)
    BulletContacts(client, manage=[plane], law=LAW)


BALL_ARM = """<robot name="ballarm">
<link name="base"><inertial><origin xyz="0.01 0.02 -0.03" rpy="0.1 0.2 0.3"/><mass value="2"/>
  <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
<link name="arm"><inertial><origin xyz="0.03 -0.01 -0.1" rpy="0.3 -0.2 0.5"/><mass value="1"/>
  <inertia ixx="0.01" iyy="0.02" izz="0.015" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><origin xyz="0 0 -0.2"/><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
<joint name="ball" type="spherical"><parent link="base"/><child link="arm"/>
  <origin xyz="0.05 0 -0.1" rpy="0.4 0.1 -0.2"/></joint>
<link name="hand"><inertial><origin xyz="0 0.02 -0.05"/><mass value="0.5"/>
  <inertia ixx="0.005" iyy="0.004" izz="0.003" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><sphere radius="0.03"/></geometry></collision></link>
<joint name="wrist" type="revolute"><parent link="arm"/><child link="hand"/>
  <origin xyz="0 0.03 -0.25" rpy="0 0.3 0"/><axis xyz="0 1 0"/>
  <limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
</robot>"""


def _rot(q) -> np.ndarray:
    return np.array(p.getMatrixFromQuaternion(q)).reshape(3, 3)


@pytest.mark.parametrize("robot", ["ball_arm", "humanoid"])
def test_spherical_joints_equal_pybullets(world, tmp_path, robot) -> None:
    """Ball joints (PyBullet: position a quaternion [x, y, z, w], rate the angular velocity in
    the child's inertial axes, pinned here) in the joint tree, at random states set by
    ``resetJointStatesMultiDof``: every link's pose and velocities equal ``getLinkStates``'
    (1e-12 relative), the point velocities J qd at random points equal PyBullet's v + omega x
    r, and the mass matrix is the kinetic energy's, sum m v_k . v_l + omega_k^T I omega_l
    from PyBullet's own link velocities at unit rates of each coordinate (PyBullet's
    calculateMassMatrix accepts spherical joints but matches neither this nor any ordering
    of the quaternion tried, even at identity quaternions: measured, not used)."""
    client, _plane = world
    if robot == "ball_arm":
        (tmp_path / "ballarm.urdf").write_text(BALL_ARM)
        body = p.loadURDF(str(tmp_path / "ballarm.urdf"), [0, 0, 1], physicsClientId=client)
    else:
        body = p.loadURDF("humanoid/humanoid.urdf", [0, 0, 1.5], globalScaling=0.25,
                          physicsClientId=client)
    nj = p.getNumJoints(body, physicsClientId=client)
    moving = [j for j in range(nj)
              if p.getJointInfo(body, j, physicsClientId=client)[2] != p.JOINT_FIXED]
    sph = [p.getJointInfo(body, j, physicsClientId=client)[2] == p.JOINT_SPHERICAL
           for j in moving]
    assert any(sph)
    tree = LinkTree(Client(client), body, moving, True)
    rng = np.random.default_rng(5)
    links = np.arange(nj)

    def state(q, qd, bv, bw):
        p.resetJointStatesMultiDof(body, moving, [x if isinstance(x, list) else [x] for x in q],
                                   [x if isinstance(x, list) else [x] for x in qd],
                                   physicsClientId=client)
        p.resetBaseVelocity(body, list(bv), list(bw), physicsClientId=client)
        return p.getLinkStates(body, list(range(nj)), computeLinkVelocity=1,
                               computeForwardKinematics=1, physicsClientId=client)

    for _ in range(2):
        q, qd = [], []
        for s in sph:
            x = rng.normal(size=4)
            q.append((x / np.linalg.norm(x)).tolist() if s else float(rng.uniform(-1, 1)))
            qd.append(rng.normal(size=3).tolist() if s else float(rng.normal()))
        p.resetBasePositionAndOrientation(body, rng.normal(size=3).tolist(),
                                          p.getQuaternionFromEuler(rng.normal(size=3)),
                                          physicsClientId=client)
        bv, bw = rng.normal(size=3), rng.normal(size=3)
        sts = state(q, qd, bv, bw)
        bp, bo = p.getBasePositionAndOrientation(body, physicsClientId=client)
        r_b = _rot(bo)
        pos, quat, vel, om, frame = (np.zeros((nj, k)) for k in (3, 4, 3, 3, 3))
        tree.link_states(q, qd, bp, bo, bv, bw, links, links, pos, quat, vel, om, frame)
        com = np.array([s[0] for s in sts])
        assert np.abs(pos - com).max() <= 1e-12 * np.abs(com).max()
        wq = np.array([[s[1][3], *s[1][:3]] for s in sts])
        sign = np.sign(np.einsum("ij,ij->i", quat, wq))[:, None]
        assert np.abs(sign * quat - wq).max() <= 1e-12
        for got, k in ((vel, 6), (om, 7)):
            want = np.array([s[k] for s in sts])
            assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
        # J qd at random points: PyBullet's v + omega x r
        pts = com + 0.05 * rng.normal(size=(nj, 3))
        jac = tree.jacobians(q, bp, bo, r_b, links, pts)
        gen = np.concatenate([r_b.T @ bw, r_b.T @ bv,
                              [y for x in qd for y in (x if isinstance(x, list) else [x])]])
        want = (np.array([s[6] for s in sts])
                + np.cross(np.array([s[7] for s in sts]), pts - com))
        assert np.abs(np.einsum("eij,j->ei", jac, gen) - want).max() <= 1e-12 * np.abs(
            want).max()
        # the mass matrix from PyBullet's link velocities at unit rates
        n = tree.ncol
        vels, oms = np.zeros((n, nj + 1, 3)), np.zeros((n, nj + 1, 3))
        for col in range(n):
            e = np.zeros(n)
            e[col] = 1.0
            rates, i = [], 6
            for s in sph:
                rates.append(e[i:i + 3].tolist() if s else float(e[i]))
                i += 3 if s else 1
            u = state(q, rates, r_b @ e[3:6], r_b @ e[:3])
            vels[col, :nj] = [s[6] for s in u]
            oms[col, :nj] = [s[7] for s in u]
            vels[col, nj], oms[col, nj] = r_b @ e[3:6], r_b @ e[:3]
        kin = np.zeros((n, n))
        for lk in range(-1, nj):
            dyn = p.getDynamicsInfo(body, lk, physicsClientId=client)
            rl = _rot(sts[lk][1]) if lk >= 0 else r_b  # the base: its inertial frame's pose
            iw = rl @ np.diag(dyn[2]) @ rl.T
            v, w = vels[:, lk], oms[:, lk]
            kin += dyn[0] * v @ v.T + w @ iw @ w.T
        mm = tree.mass_matrix(q, bp, bo, r_b)
        scale = np.sqrt(np.outer(np.diag(kin), np.diag(kin)))
        assert np.abs(mm - kin).max() <= 1e-10 * scale.max()


def test_ball_joint_robot_rests_at_hertz(world, tmp_path) -> None:
    """Two balls joined by a ball joint at the first one's centre, the second's centre of mass
    at its own ball's centre: lying on managed ground, the joint carries no weight, so each
    ball rests at r - (m_i g / k)^(2/3) (Hertz form of the law with k); the total normal force
    equals the weight (1 %)."""
    client, plane = world
    r, m1, m2, k = 0.05, 1.0, 0.5, LAW["k"]
    inertia = 'ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"'
    (tmp_path / "balls.urdf").write_text(
        f'<robot name="balls"><link name="a"><inertial><mass value="{m1}"/><inertia {inertia}/>'
        f'</inertial><collision><geometry><sphere radius="{r}"/></geometry></collision></link>'
        f'<link name="b"><inertial><origin xyz="0.2 0 0"/><mass value="{m2}"/><inertia '
        f'{inertia}/></inertial><collision><origin xyz="0.2 0 0"/><geometry><sphere '
        f'radius="{r}"/></geometry></collision></link><joint name="ball" type="spherical">'
        '<parent link="a"/><child link="b"/></joint></robot>')
    body = p.loadURDF(str(tmp_path / "balls.urdf"), [0, 0, r + 0.002], physicsClientId=client)
    bc = BulletContacts(client, manage=[plane], law=LAW, friction={"mu": 0.5})
    for _ in range(480):
        info = bc.step()
    za = p.getBasePositionAndOrientation(body, physicsClientId=client)[0][2]
    zb = p.getLinkState(body, 0, computeForwardKinematics=1, physicsClientId=client)[0][2]
    assert za == pytest.approx(r - (m1 * G / k) ** (2 / 3), abs=1e-6)
    assert zb == pytest.approx(r - (m2 * G / k) ** (2 / 3), abs=1e-6)
    assert np.sum(info.normal_force) == pytest.approx((m1 + m2) * G, rel=0.01)


def test_planar_joint_is_a_clear_error_at_construction(world, tmp_path) -> None:
    """A robot with a planar joint (not modelled): a ParameterError at construction naming
    the link and the joint type."""
    client, plane = world
    link = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" '
            'ixz="0" iyz="0"/></inertial><collision><geometry><sphere radius="0.05"/>'
            '</geometry></collision>')
    (tmp_path / "planar.urdf").write_text(
        f'<robot name="pl"><link name="base">{link}</link><link name="arm">{link}</link>'
        '<joint name="j" type="planar"><parent link="base"/><child link="arm"/>'
        '<origin xyz="0 0 -0.2"/><axis xyz="0 0 1"/></joint></robot>')
    body = p.loadURDF(str(tmp_path / "planar.urdf"), [0, 0, 0.5], physicsClientId=client)
    jtype = p.getJointInfo(body, 0, physicsClientId=client)[2]
    if jtype != p.JOINT_PLANAR:
        pytest.fail(f"PyBullet loaded the planar joint as type {jtype}")
    with pytest.raises(ParameterError, match=r"link 0 'arm'.*planar"):
        BulletContacts(client, manage=[plane], law=LAW)


def test_hull_closed_where_trimesh_leaves_it_open() -> None:
    """xarm's left_inner_knuckle.STL (pybullet_data): trimesh's convex hull of its 21972
    vertices has open edges; the backend's hull is closed and holds qhull's own volume
    (scipy.spatial.ConvexHull, 1e-9 relative)."""
    from scipy.spatial import ConvexHull

    from mbplugin.bullet.geometry import convex_hull

    root = pybullet_data.getDataPath()
    path = next(iter(sorted(__import__("glob").glob(
        f"{root}/xarm/**/left_inner_knuckle.STL", recursive=True))))
    pts = np.asarray(trimesh.load(path, force="mesh", process=False).vertices)  # m
    assert not trimesh.convex.convex_hull(pts).is_watertight  # the case this is about
    hull = convex_hull(pts)
    assert hull.is_watertight
    assert hull.volume == pytest.approx(ConvexHull(pts).volume, rel=1e-9)


def test_compound_on_many_corners_where_gauss_seidel_fails(world, monkeypatch) -> None:
    """pybullet_data's random_urdfs/580 (a V-HACD compound) dropped from 6 cm onto managed
    ground: ~35 corner contacts on one rigid body land at once, a large group whose W has
    rank 6, on which nonlinear Gauss-Seidel stalls (it did not converge in 20000 sweeps); the dense
    Newton solve takes that step. After 2 s the body rests within 1 mm of native
    PyBullet's height after the same drop (the law's static overlaps, (m g / (35 k))^(2/3) ~
    1e-6 m, and native's own penetration, ~5e-4 m, are below it). (From 5 cm, as before
    PyBullet's 1 mm margin was modelled, the cr = 0.5 bounce now turns it onto another face:
    a landing on many corners is chaotic; before, it rested 1.0 mm below native, the margin.)"""
    from mbplugin.pipeline import large_groups

    def drop(cid: int) -> int:
        body = p.loadURDF("random_urdfs/580/580.urdf", physicsClientId=cid)
        low = p.getAABB(body, -1, physicsClientId=cid)[0][2]
        pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
        p.resetBasePositionAndOrientation(body, [pos[0], pos[1], pos[2] + 0.06 - low], orn,
                                          physicsClientId=cid)
        return body

    client, plane = world
    with ground_world(G) as (native_cid, _):
        nb = drop(native_cid)
        for _ in range(240):
            p.stepSimulation(physicsClientId=native_cid)
        native = p.getBasePositionAndOrientation(nb, physicsClientId=native_cid)[0][2]
    body = drop(client)
    used = []
    dense = large_groups._dense
    monkeypatch.setattr(large_groups, "_dense", lambda *a: used.append(1) or dense(*a))
    bc = BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5,
                                                     "k": 1e7})
    for _ in range(480):
        bc.step()
    z = p.getBasePositionAndOrientation(body, physicsClientId=client)[0][2]
    assert used
    assert abs(z - native) < 1e-3


def test_sharp_compound_part_without_k_is_refused_at_construction(world) -> None:
    """teddy_vhacd (15 hulls, some with a sharp corner on the ground, some smooth) under a law
    without k: refused at construction (Hertz's stiffness has no radius at a sharp corner),
    not at its first contact in the middle of a step."""
    client, plane = world
    p.loadURDF("teddy_vhacd.urdf", [0, 0, 0.3], physicsClientId=client)
    with pytest.raises(ParameterError, match=r"no 'k' and Hertz's stiffness needs an "):
        BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5},
                       material={"E": 1e8, "nu": 0.4})
