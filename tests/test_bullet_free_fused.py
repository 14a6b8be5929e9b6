"""The fused step of free bodies at rest on managed ground (``bullet/free_fused.py``): taken at
rest, and the same contacts and forces as the general path (``HostStep.step``), checked against
the outside world: static equilibrium (the contacts carry m g), Hertz's static overlap of the
corners carrying the body, and PyBullet's own ``getClosestPoints`` overlap of the body and the
plane."""

from __future__ import annotations

import numpy as np
import pybullet as p
import pybullet_data
import pytest
import trimesh

import mbplugin.bullet.backend as backend
from mbplugin.bullet import BulletContacts, free_fused

K, G, M, DT = 1e7, 9.81, 1.0, 1 / 240
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": K}


def _world(shape: str) -> tuple[int, int, int]:
    """A 1 kg box (0.2 x 0.2 x 0.1 m) or a 0.1 m cube given as a mesh hull, resting on a
    plane, friction 0.5."""
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    p.setTimeStep(DT, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    if shape == "hull":
        v = trimesh.creation.box(extents=[0.1, 0.1, 0.1]).vertices
        col = p.createCollisionShape(p.GEOM_MESH, vertices=v.tolist(), physicsClientId=cid)
    else:
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.05],
                                     physicsClientId=cid)
    body = p.createMultiBody(M, col, basePosition=[0, 0, 0.05], physicsClientId=cid)
    for b in (plane, body):
        p.changeDynamics(b, -1, lateralFriction=0.5, physicsClientId=cid)
    return cid, plane, body


def _run(shape: str, fused: bool, steps: int = 360) -> dict[str, object]:
    """``steps`` host steps of the scene with the fused path on or off (``free_begin`` then
    never taken); the last 120 steps' forces, overlaps and poses, the fused steps among them
    and PyBullet's closest points at the end."""
    cid, plane, body = _world(shape)
    saved = backend.free_begin
    if not fused:
        backend.free_begin = lambda *args: None
    try:
        bk = BulletContacts(cid, manage=[plane], law=LAW)
        out: dict[str, list] = {"fn": [], "delta": [], "pose": []}
        taken = 0
        for i in range(steps):
            before = free_fused.TAKEN["fused"]
            info = bk.step()
            if i >= steps - 120:
                taken += free_fused.TAKEN["fused"] - before
                out["fn"].append(np.asarray(info.normal_force).copy())
                out["delta"].append(np.asarray(info.delta).copy())
                pos, quat = p.getBasePositionAndOrientation(body, physicsClientId=cid)
                out["pose"].append(np.r_[pos, quat])
        bk.sync()
        closest = p.getClosestPoints(body, plane, 1e-3, physicsClientId=cid)
        res = {k: np.array(v) for k, v in out.items()}
        res.update(taken=taken, closest=min(pt[8] for pt in closest), keys=info.keys.copy())
        return res
    finally:
        backend.free_begin = saved
        p.disconnect(cid)


@pytest.mark.parametrize("shape", ["box", "hull"])
def test_free_fused_at_rest_is_the_general_path(shape: str) -> None:
    """At rest every host step takes the fused path, and it books what the general path books
    bit for bit (forces, overlaps, the body's pose); the forces carry the body, m g within
    1 %, each of the 4 corners at Hertz's static overlap (m g / (4 k))^(2/3) within 1 %, and the
    deepest overlap is PyBullet's own (``getClosestPoints``) within 1e-7 m."""
    on, off = _run(shape, True), _run(shape, False)
    assert on["taken"] == 120 and off["taken"] == 0
    for key in ("fn", "delta", "pose"):
        assert on[key].tobytes() == off[key].tobytes(), key
    assert np.array_equal(on["keys"], off["keys"])
    fn = on["fn"]
    assert fn.shape[1] == 4
    assert np.all(np.abs(fn.sum(axis=1) - M * G) <= 0.01 * M * G)
    d_static = (M * G / (4 * K)) ** (2 / 3)
    assert np.all(np.abs(on["delta"] - d_static) <= 0.01 * d_static)
    assert abs(-on["closest"] - on["delta"][-1].max()) <= 1e-7
