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

from mbplugin.bullet import BulletContacts
from mbplugin.bullet.geometry import obj_groups
from mbplugin.errors import ParameterError

G = 9.81
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": 1e6}


@pytest.fixture
def client():
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    yield cid
    p.disconnect(physicsClientId=cid)


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
def test_obj_parts_are_pybullets(client, tmp_path, tag) -> None:
    """Two boxes 1 m apart in one OBJ file: PyBullet makes one hull of them without ``o``/``g``
    lines (a ray through the gap hits it) and one hull each with them (the ray passes); the
    backend's parts are the same."""
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


def test_flat_part_dropped_box_rests_at_hertz(client, tmp_path) -> None:
    """A box plus a stray triangle object (panda's link6.obj has such slivers) is managed: the
    flat part is left out with a one-line warning and the box comes to rest on its four
    bottom corners, its centre h/2 - (m g / (4 k))^(2/3) above the ground."""
    h, m, k = 0.1, 1.0, LAW["k"]
    box = trimesh.creation.box((h, h, h))
    tri = trimesh.Trimesh([[0, 0, 0.02], [0.01, 0, 0.02], [0, 0.01, 0.02]], [[0, 1, 2]])
    _obj(tmp_path / "boxtri.obj", [box, tri])
    _urdf(tmp_path / "boxtri.urdf", "boxtri.obj", m)
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
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
    assert z == pytest.approx(h / 2 - (m * G / 4 / k) ** (2 / 3), abs=2e-6)


def test_mesh_without_volume_is_a_clear_error(client, tmp_path) -> None:
    """A mesh file whose only part is a triangle: a ParameterError at construction naming the
    body, link and file (PyBullet loads it natively)."""
    tri = trimesh.Trimesh([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]], [[0, 1, 2]])
    _obj(tmp_path / "tri.obj", [tri])
    _urdf(tmp_path / "tri.urdf", "tri.obj")
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    p.loadURDF(str(tmp_path / "tri.urdf"), [0, 0, 0.2], physicsClientId=client)
    with pytest.raises(ParameterError, match=r"body 1 link -1.*tri\.obj.*no part with a volume"):
        BulletContacts(client, manage=[plane], law=LAW)


def test_static_pair_not_checked_nor_managed(client, tmp_path) -> None:
    """A static (mass 0) open mesh lying on plane.urdf (a fixed-base arm's mounting plate):
    the pair of two static bodies is not managed, so the open mesh is neither refused nor a
    row, and a ball dropped next to it rests at its static Hertz-form overlap
    (m g / k)^(2/3)."""
    plate = trimesh.creation.box((0.3, 0.3, 0.02))
    plate.update_faces(np.arange(len(plate.faces)) != 0)  # a hole: not watertight
    plate.export(tmp_path / "plate.stl")
    assert not trimesh.load(tmp_path / "plate.stl").is_watertight
    _urdf(tmp_path / "plate.urdf", "plate.stl", mass=0.0)
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
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


def test_kuka_fixed_base_on_managed_plane(client) -> None:
    """pybullet_data's kuka_iiwa (base mass 0, its base mesh open) on managed ground: built
    and stepped; its base stays where native PyBullet keeps it."""
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    kuka = p.loadURDF("kuka_iiwa/model.urdf", [0, 0, 0.3], physicsClientId=client)
    start = p.getBasePositionAndOrientation(kuka, physicsClientId=client)[0]
    bc = BulletContacts(client, manage=[plane], law=LAW, material={"E": 1e8, "nu": 0.4})
    for _ in range(24):
        bc.step()
    assert p.getBasePositionAndOrientation(kuka, physicsClientId=client)[0] == start


def test_deep_initial_overlap_is_a_clear_error(client) -> None:
    """A ball started 0.6 of its radius into the ground (pybullet_data's bike at z = 0.6
    starts with its wheels 0.69 of their reach in it): refused at construction, the client
    left as it was; 0.4 of the radius is accepted."""
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    r = 0.1
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=client)
    ball = p.createMultiBody(1.0, shape, basePosition=[0, 0, 0.4 * r], physicsClientId=client)
    with pytest.raises(ParameterError, match=r"overlap by 0\.06 m, more than half"):
        BulletContacts(client, manage=[plane], law=LAW)
    p.resetBasePositionAndOrientation(ball, [0, 0, 0.6 * r], [0, 0, 0, 1],
                                      physicsClientId=client)
    BulletContacts(client, manage=[plane], law=LAW)


def test_spherical_joint_is_a_clear_error_at_construction(client, tmp_path) -> None:
    """A robot with a ball joint (type="spherical"; PyBullet's calculateJacobian refuses it):
    a ParameterError at construction naming the link and the joint type."""
    link = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" '
            'ixz="0" iyz="0"/></inertial><collision><geometry><sphere radius="0.05"/>'
            '</geometry></collision>')
    (tmp_path / "ball.urdf").write_text(
        f'<robot name="ballj"><link name="base">{link}</link><link name="arm">{link}</link>'
        '<joint name="j" type="spherical"><parent link="base"/><child link="arm"/>'
        '<origin xyz="0 0 -0.2"/></joint></robot>')
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    p.loadURDF(str(tmp_path / "ball.urdf"), [0, 0, 0.5], physicsClientId=client)
    with pytest.raises(ParameterError, match=r"link 0 'arm'.*spherical"):
        BulletContacts(client, manage=[plane], law=LAW)
