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
from mbplugin.hosts.protocol import FREE, STATIC

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
        wrench = 0
        for i in range(steps):
            before = free_fused.TAKEN["fused"]
            w0 = free_fused.TAKEN["wrench"]
            info = bk.step()
            if i >= steps - 120:
                taken += free_fused.TAKEN["fused"] - before
                wrench += free_fused.TAKEN["wrench"] - w0
                out["fn"].append(np.asarray(info.normal_force).copy())
                out["delta"].append(np.asarray(info.delta).copy())
                pos, quat = p.getBasePositionAndOrientation(body, physicsClientId=cid)
                out["pose"].append(np.r_[pos, quat])
        bk.sync()
        closest = p.getClosestPoints(body, plane, 1e-3, physicsClientId=cid)
        res = {k: np.array(v) for k, v in out.items()}
        res.update(taken=taken, wrench=wrench, closest=min(pt[8] for pt in closest),
                   keys=info.keys.copy())
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
    # the fused steps applied one force and one torque per body (the off run: one
    # applyExternalForce per corner; a step whose body carries a lag applies per corner too:
    # 4 of 120 of the hull's), and the pose is the same to the bit
    assert on["wrench"] >= 110 and off["wrench"] == 0
    for key in ("fn", "delta", "pose"):
        assert on[key].tobytes() == off[key].tobytes(), key
    assert np.array_equal(on["keys"], off["keys"])
    fn = on["fn"]
    assert fn.shape[1] == 4
    assert np.all(np.abs(fn.sum(axis=1) - M * G) <= 0.01 * M * G)
    d_static = (M * G / (4 * K)) ** (2 / 3)
    assert np.all(np.abs(on["delta"] - d_static) <= 0.01 * d_static)
    assert abs(-on["closest"] - on["delta"][-1].max()) <= 1e-7


def test_resultant_is_pybullets_per_point_forces() -> None:
    """:func:`free_fused._wrench` + :func:`free_fused._apply_wrench` (one force at the centre of
    mass and one WORLD_FRAME torque per body) move a tilted, spinning, flying box in PyBullet
    exactly as PyBullet's own ``applyExternalForce`` at each of four points does, called in
    the backend's order (its accumulators' sums: the state after 40 steps the same to the
    bit), and the force is the
    points' sum, the torque sum (p - x) x f (a closed form, 1e-12)."""
    rng = np.random.default_rng(3)
    worlds = []
    for _ in range(2):
        cid = p.connect(p.DIRECT)
        p.setGravity(0, 0, -G, physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.05],
                                     physicsClientId=cid)
        body = p.createMultiBody(M, col, basePosition=[0.3, -0.2, 0.5],
                                 baseOrientation=p.getQuaternionFromEuler([0.1, 0.2, 0.3]),
                                 physicsClientId=cid)
        p.resetBaseVelocity(body, [0.1, 0.2, -0.3], [0.4, -0.5, 0.6], physicsClientId=cid)
        worlds.append((cid, body))
    (c0, b0), (c1, b1) = worlds
    client = type("C", (), {"p": p, "id": c1})()
    try:
        for _ in range(40):
            pos = np.array(p.getBasePositionAndOrientation(b1, physicsClientId=c1)[0])
            point = pos + 0.1 * rng.normal(size=(4, 3))
            imp = DT * rng.normal(size=(4, 3))  # (impulses: forces P / dt)
            # the box is side a of the first two contacts, b of the others; the calls in the
            # backend's order (force_calls: every side b, then every side a)
            for i in (2, 3, 0, 1):
                sgn = -1.0 if i < 2 else 1.0
                p.applyExternalForce(b0, -1, (sgn * imp[i] / DT).tolist(), point[i].tolist(),
                                     p.WORLD_FRAME, physicsClientId=c0)
            forced = np.zeros(2, dtype=bool)  # rows: the box (free), the ground (static)
            ids, f, at, t = free_fused._wrench(
                imp, DT, np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), point,
                np.zeros((2, 3)), np.array([FREE, STATIC]), np.array([[b1, -1], [9, -1]]),
                np.array([pos, [0.0, 0.0, 0.0]]), forced)
            assert list(ids) == [b1] and forced.all()
            sf = np.array([-1.0, -1.0, 1.0, 1.0])[:, None] * imp / DT
            assert np.allclose(f[0], sf.sum(axis=0), rtol=0, atol=1e-12)
            assert np.allclose(t[0], np.cross(point - pos, sf).sum(axis=0), rtol=0,
                               atol=1e-12)
            free_fused._apply_wrench(client, ids, f, at, t)
            p.stepSimulation(physicsClientId=c0)
            p.stepSimulation(physicsClientId=c1)
            s0 = [p.getBasePositionAndOrientation(b0, physicsClientId=c0),
                  p.getBaseVelocity(b0, physicsClientId=c0)]
            s1 = [p.getBasePositionAndOrientation(b1, physicsClientId=c1),
                  p.getBaseVelocity(b1, physicsClientId=c1)]
            assert s0 == s1
    finally:
        p.disconnect(c0)
        p.disconnect(c1)
