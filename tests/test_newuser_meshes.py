"""Meshes a new user brings, generated here with trimesh, dropped on managed ground in PyBullet
and in MuJoCo: a tetrahedron, a flat slab, a long thin bar, a random convex hull, a cube scaled
by its URDF/MJCF ``<mesh scale>`` and a non-convex L (both hosts collide with the convex hull of
an OBJ object; so do we), and a cube resting on a slab (a mesh on a mesh).

Outside facts: a body at rest carries its weight on its contacts (sum of normal forces = m g,
1 %); the host's own distance query (PyBullet ``getClosestPoints``, MuJoCo
``mj_geomDistance``) gives the deepest overlap (2 %); Hunt-Crossley at rest is Hertz,
F = k delta^1.5 (Hunt & Crossley 1975), so the host's overlap is (F_max / k)^(2/3) for the
most loaded contact (5 %)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pybullet as p
import pybullet_data
import pytest
import trimesh

from mbplugin.bullet import BulletContacts
from mbplugin.mujoco import MujocoContacts

G, K = 9.81, 1e6
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": K}


def _meshes(folder: Path) -> dict[str, float]:
    """Write the OBJ files; returns each mesh's scale."""
    tet = trimesh.Trimesh([[0, 0, 0], [0.06, 0, 0], [0.03, 0.052, 0], [0.03, 0.017, 0.05]],
                          [[0, 2, 1], [0, 1, 3], [1, 2, 3], [2, 0, 3]])
    ell = trimesh.util.concatenate([
        trimesh.creation.box(extents=(0.1, 0.02, 0.02)),
        trimesh.creation.box(extents=(0.02, 0.1, 0.02)).apply_translation([0.04, 0.04, 0])])
    shapes = {
        "tetra": tet.apply_translation(-tet.center_mass),
        "slab": trimesh.creation.box(extents=(0.2, 0.1, 0.005)),
        "bar": trimesh.creation.box(extents=(0.4, 0.01, 0.01)),
        "hull": trimesh.convex.convex_hull(np.random.default_rng(3).uniform(-0.04, 0.04, (20, 3))),
        "cube": trimesh.creation.box(extents=(0.025,) * 3),
        "ell": ell.apply_translation(-ell.convex_hull.center_mass),
    }
    for name, mesh in shapes.items():
        mesh.export(folder / f"{name}.obj")
    return {name: (2.0 if name == "cube" else 1.0) for name in shapes}


CASES = ["tetra", "slab", "bar", "hull", "cube", "ell", "cube_on_slab"]


def _check(forces: np.ndarray, weight: float, host: float) -> None:
    forces = np.asarray(forces)
    assert forces.sum() == pytest.approx(weight, rel=0.01)
    assert host == pytest.approx((forces.max() / K) ** (2 / 3), rel=0.05)


def _urdf(folder: Path, name: str, scale: float) -> str:
    path = folder / f"{name}.urdf"
    path.write_text(
        '<?xml version="1.0"?><robot name="m"><link name="base"><inertial><mass value="0.2"/>'
        '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>'
        f'<collision><geometry><mesh filename="{folder / name}.obj" '
        f'scale="{scale} {scale} {scale}"/></geometry></collision></link></robot>')
    return str(path)


@pytest.mark.parametrize("case", CASES)
def test_pybullet_mesh_rests_on_its_weight_at_the_hosts_overlap(tmp_path: Path, case: str) -> None:
    scales = _meshes(tmp_path)
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, -G, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        top, z = case.split("_on_")[0], 0.05
        ground = [plane]
        if "_on_" in case:
            ground.append(p.loadURDF(_urdf(tmp_path, "slab", 1.0), basePosition=[0, 0, 0.005],
                                     physicsClientId=cid))
            z = 0.04
        body = p.loadURDF(_urdf(tmp_path, top, scales[top]), basePosition=[0, 0, z],
                          physicsClientId=cid)
        bk = BulletContacts(cid, manage=ground, law=LAW, friction={"mu": 0.5})
        for _ in range(360):  # 1.5 s
            info = bk.step()
        on = ground[-1]
        host = -min(c[8] for c in p.getClosestPoints(body, on, 0.01, physicsClientId=cid))
        row = next(i for i, r in enumerate(bk.rows) if r[0] == body)
        mine = (np.asarray(info.sides) == row).any(axis=1)
        assert np.linalg.norm(p.getBaseVelocity(body, physicsClientId=cid)[0]) < 1e-3
        assert np.asarray(info.delta)[mine].max() == pytest.approx(host, rel=0.02)
        _check(info.normal_force[mine], 0.2 * G, host)
    finally:
        p.disconnect(cid)


@pytest.mark.parametrize("case", CASES)
def test_mujoco_mesh_rests_on_its_weight_at_the_hosts_overlap(tmp_path: Path, case: str) -> None:
    scales = _meshes(tmp_path)
    top = case.split("_on_")[0]
    s = scales[top]
    assets = f'<mesh name="{top}" file="{tmp_path / top}.obj" scale="{s} {s} {s}"/>'
    lower, z = "", 0.05
    if "_on_" in case:
        assets += f'<mesh name="slab" file="{tmp_path}/slab.obj"/>'
        lower = ('<body name="lo" pos="0 0 0.0025"><freejoint/><geom name="lo" type="mesh" '
                 'mesh="slab" mass="0.2"/></body>')
        z = 0.04  # the cube (5 cm) 1 cm above the slab
    xml = (f'<mujoco><option timestep="0.002" gravity="0 0 {-G}"/><asset>{assets}</asset>'
           '<worldbody><geom name="floor" type="plane" size="5 5 .1"/>'
           f'{lower}<body name="b" pos="0 0 {z}"><freejoint/><geom name="b" type="mesh" '
           f'mesh="{top}" mass="0.2"/></body></worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    on = "lo" if lower else "floor"
    c = MujocoContacts(m, d, manage=["floor", "lo"] if lower else ["floor"], law=LAW,
                       friction={"mu": 0.5})
    try:
        for _ in range(400):  # 0.8 s
            info = c.step()
    finally:
        c.release()
    mujoco.mj_forward(m, d)
    host = -mujoco.mj_geomDistance(m, d, m.geom(on).id, m.geom("b").id, 1.0, None)
    mine = (np.asarray(info.geoms) == m.geom("b").id).any(axis=1)
    assert np.abs(d.qvel).max() < 1e-3
    assert np.asarray(info.delta)[mine].max() == pytest.approx(host, rel=0.02)
    _check(np.asarray(info.normal_force)[mine], 0.2 * G, host)
