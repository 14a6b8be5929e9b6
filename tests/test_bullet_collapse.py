"""A robot on a fully managed plane (``manage=[plane]``: every pair of the plane with the
robot's links, hull corners included, the first thing a user tries) whose body falls onto it,
and the detection's prune of the gaps to the plane that cannot close (issue 18).

Expected values come from outside mbplugin: the robot's weight (PyBullet's masses), the law's
static overlap (F / k)^(2/3) (Hunt-Crossley at rest, F = k delta^1.5), PyBullet's own distance
of every link to the plane (``getClosestPoints``), the geometry of a convex hull (qhull), and
locality (a ball bouncing a metre away does not change which corners of a body at rest are
candidates).
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pybullet_data
import robot_rig as rr
from bullet_world import ground_world
from scipy.spatial import ConvexHull

from mbplugin.bullet import BulletContacts
from mbplugin.bullet.geometry import PLANE_CORNER_TOL, plane_corners

K = 2e6  # N/m^1.5
LAW = {"name": "hunt_crossley", "cr": 0.3, "k": K}


def test_a1_collapsed_on_a_fully_managed_plane_comes_to_rest(tmp_path) -> None:
    """The A1 stands 300 steps under its PD targets, the targets are cut to 20 % and it falls
    onto its body (the probe of issue 18): 5 s at 1/240 s later it is at rest, the plane
    carries its weight (Σ normal / weight within 1 %), every loaded contact sits at the law's
    static overlap of its force, and PyBullet finds no link deeper in the plane than the
    static overlap of the whole weight on one corner."""
    spec = rr.ROBOTS["a1"]
    with ground_world(rr.G, 1 / 240) as (cid, plane):
        h = rr.load(cid, spec, tmp_path)
        c = BulletContacts(cid, manage=[plane], law=LAW)
        for i in range(1200):
            rr.collapse_torques(cid, spec, h, i)
            info = c.step()
        c.sync()
        v_base = np.linalg.norm(p.getBaseVelocity(h.body, physicsClientId=cid)[0])
        assert v_base < 1e-3  # at rest (m/s)
        fn, delta = np.asarray(info.normal_force), np.asarray(info.delta)
        assert abs(fn.sum() / h.weight - 1.0) < 0.01
        loaded = fn > 1e-3 * h.weight
        assert loaded.sum() >= 3
        np.testing.assert_allclose(delta[loaded], (fn[loaded] / K) ** (2 / 3), rtol=0.02)
        deepest = (h.weight / K) ** (2 / 3)  # the whole weight on one corner (m)
        for j in range(-1, p.getNumJoints(h.body, physicsClientId=cid)):
            pts = p.getClosestPoints(h.body, plane, 0.05, linkIndexA=j, physicsClientId=cid)
            assert all(pt[8] > -deepest for pt in pts), (j, min(pt[8] for pt in pts))


def test_plane_corners_within_the_tolerance() -> None:
    """The Laikago's lower leg (656 vertices, 466 hull corners): the simplified hull's corners
    are a subset of the vertices, fewer, and no vertex lies more than the tolerance outside
    their hull (its facets' plane equations)."""
    import trimesh

    m = trimesh.load(f"{pybullet_data.getDataPath()}/laikago/lower_leg_3.stl",
                     force="mesh", process=False)
    v = np.asarray(m.vertices, dtype=float)
    tol = PLANE_CORNER_TOL * float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    kept = plane_corners(v, tol)
    full = len(ConvexHull(v).vertices)
    assert len(kept) < full / 2
    eq = ConvexHull(kept).equations
    assert float((v @ eq[:, :3].T + eq[:, 3]).max()) <= tol * (1 + 1e-9)
    d = np.min(np.linalg.norm(kept[:, None, :] - v[None, :, :], axis=2), axis=1)
    assert d.max() == 0.0  # corners are vertices


def test_a_ball_bouncing_far_away_does_not_change_a_body_s_candidates() -> None:
    """A cylinder (a 64-prism, R = 0.1 m) lies at rest on a fully managed plane; a ball
    dropped 1.5 m lands on the plane a metre away at 5.4 m/s. The ball's impact does not
    change which of the prism's corners are candidate contacts (the plane, a static row, is
    not pushed by the ball's contact; before: 38 candidates, 5 of them loaded, in the step
    of the impact): the prism's contacts in the step of the impact are those of the steps
    just before it."""
    with ground_world(rr.G, 1 / 240) as (cid, plane):
        col = p.createCollisionShape(p.GEOM_CYLINDER, radius=0.1, height=0.2,
                                     physicsClientId=cid)
        q = p.getQuaternionFromEuler([np.pi / 2, 0.0, 0.0])
        prism = p.createMultiBody(1.0, col, basePosition=[0.0, 0.0, 0.1],
                                  baseOrientation=q, physicsClientId=cid)
        ball_col = p.createCollisionShape(p.GEOM_SPHERE, radius=0.05, physicsClientId=cid)
        ball = p.createMultiBody(1.0, ball_col, basePosition=[1.0, 0.0, 1.55],
                                 physicsClientId=cid)
        c = BulletContacts(cid, manage=[plane], law=LAW)
        keys, hit = [], []
        for _ in range(140):
            info = c.step()
            side = np.asarray(info.links)[:, 1, 0]
            keys.append(frozenset(np.asarray(info.keys)[side == prism].tolist()))
            hit.append(float(np.sum(np.asarray(info.normal_force)[side == ball])))
        impact = int(np.argmax(hit))
        assert hit[impact] > 100.0 and impact > 100  # the ball's landing (N)
        assert all(k == keys[impact - 1] for k in keys[impact - 20:impact])  # at rest
        assert keys[impact] == keys[impact - 1]
