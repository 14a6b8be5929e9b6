"""A robot on a fully managed plane (``manage=[plane]``: every pair of the plane with the
robot's links, hull corners included, the first thing a user tries) whose body falls onto it,
and the detection's prune of the gaps to the plane that cannot close (issue 18).

Expected values come from outside mbplugin: the robot's weight (PyBullet's masses), the law's
static overlap (F / k)^(2/3) (Hunt-Crossley at rest, F = k delta^1.5), PyBullet's own distance
of every link to the plane (``getClosestPoints``), the geometry of a convex hull (qhull), and
locality (a ball bouncing a metre away does not change which corners of a body at rest are
candidates), the support function of a mesh's convex hull (the lowest of its vertices over a
plane: PyBullet collides with the hull of a dynamic mesh), native PyBullet's own run of the
same collapse.
"""

from __future__ import annotations

import hull_probe
import numpy as np
import pybullet as p
import pybullet_data
import pytest
import robot_rig as rr
import trimesh
from bullet_world import ground_world
from scipy.spatial import ConvexHull

from mbplugin.bullet import BulletContacts
from mbplugin.bullet.geometry import _mesh, plane_corners
from mbplugin.contact import BodyState, ContactModel
from mbplugin.contact.mesh import Mesh
from mbplugin.contact.shapes import Plane

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
    tol = hull_probe.corner_tol(m)
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


#: Hull meshes of pybullet_data's robots (file, test orientations), and how far above the hull's
#: depth the overlap may reach: the chordal error of a smooth surface through their hulls (edges
#: of 1-2 cm on a curvature radius of ~5-10 cm: L^2 / (6 r) below 0.5 mm). Land reported up to
#: +5.06 mm (abduction link), +8.08 mm (Laikago's lower leg): the fitted spheres' bulge.
#: The A1's calf: qhull's simplified hull left its lowest vertex 0.85 mm out at a tolerance of
#: 0.52 mm (before the extreme vertices along PLANE_DIRS were kept: bullet.geometry.plane_corners).
HULLS = [("mini_cheetah/meshes/mini_abad.obj", 300), ("laikago/lower_leg_3.stl", 100),
         ("a1/meshes/calf.obj", 300)]
CHORD_TOL = 5e-4


@pytest.mark.parametrize("path,count", HULLS)
def test_mesh_plane_overlap_is_the_hull_s_depth_at_any_orientation(path: str, count: int
                                                                   ) -> None:
    """A robot link's hull (the Mini Cheetah's abduction link ``mini_abad.obj``, 9 cm;
    Laikago's lower leg) against a plane at random orientations: 5 cm above the plane no
    overlap; the hull 1 mm into it, the deepest overlap reported is the depth of the lowest
    vertex of the link's convex hull (the hull PyBullet collides with) to within the plane
    corners' tolerance below and the hull's chordal error above (``CHORD_TOL``; land: +5.06 mm
    on the abduction link, +8.08 mm on the lower leg, the bulge of spheres fitted on coarse
    patches; before: 0.47-5.2 m of overlap from fitted spheres of up to 70 m, 5.03 m for the
    link 5 cm above the plane in the collapse of issue 18)."""
    (mesh,) = _mesh(f"{pybullet_data.getDataPath()}/{path}", np.ones(3), "link", None)
    tol = hull_probe.corner_tol(mesh)
    q, R = hull_probe.rotations(count, 18)
    for gap, want in ((-1e-3, 1e-3), (0.05, None)):
        got = hull_probe.deepest(mesh, q, R, gap)
        for qi, d in zip(q, got, strict=True):
            if want is None:
                assert d < 0.0, (qi, d)
            else:
                assert want - tol <= d <= want + CHORD_TOL, (qi, d)


def test_mesh_ball_keeps_its_sphere_against_a_plane() -> None:
    """A mesh ball (a trimesh icosphere, r = 2 cm, 642 vertices: one sphere) 1 mm into a plane
    at 100 random orientations: its overlap is the sphere's, 1 mm (r minus the centre's height)
    to 1e-9 m, not its hull's (which is up to the chordal error less): the sphere is what a
    mesh ball stands for, and its Hertz behaviour (tests/test_mesh_plane.py) rests on it."""
    r = 0.02
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(Mesh(trimesh.creation.icosphere(3, radius=r)), 0)
    m.set_default_law({"name": "hooke", "k": 1.0})
    q, _ = hull_probe.rotations(100, 7)
    for qi in q:
        st = BodyState.create([[0.0, 0.0, r - 1e-3]], quat=[qi], mass=1.0, inertia=[1.0] * 3)
        b = m.detect(st, margin=0.1)
        assert len(b) == 1 and float(b.delta[0]) == pytest.approx(1e-3, abs=1e-9)


def test_mini_cheetah_collapsed_on_a_fully_managed_plane_carries_its_weight(tmp_path) -> None:
    """The Mini Cheetah of ``pybullet_data`` on ``manage=[plane]`` through the collapse probe
    (PD targets cut to 20 % at step 300: it jumps ~0.5 m, lands on its back at ~460 and lies
    there from ~680, its legs kept moving by the PD controller, natively too: base height
    0.052 m, ΣF/W over 50-step windows 0.97-1.01 and the base drifting ~2 cm per 200 steps;
    so it is never at rest, and ΣF/W is averaged over 100 steps): 800 steps at 1/240 s
    without an exception (land: a 90 J energy kick at the landing from a 5 m false overlap,
    the robot thrown 2.7 m high, IntegrationError at step 1000), the base on the plane as
    natively (within 5 mm) and the plane carrying the weight: Σ normal force / weight over
    steps 700-800 within 1 % (native PyBullet's own, measured here, within 5 %)."""
    spec = rr.ROBOTS["mini_cheetah"]
    out = {}
    for ours in (False, True):
        with ground_world(rr.G, 1 / 240) as (cid, plane):
            h = rr.load(cid, spec, tmp_path)
            c = BulletContacts(cid, manage=[plane], law=LAW) if ours else None
            ratio = []
            for i in range(800):
                rr.collapse_torques(cid, spec, h, i)
                if c is not None:
                    fn = float(np.sum(c.step().normal_force))
                else:
                    p.stepSimulation(physicsClientId=cid)
                    fn = sum(pt[9] for pt in p.getContactPoints(h.body, plane,
                                                                physicsClientId=cid))
                ratio.append(fn / h.weight)
            z = p.getBasePositionAndOrientation(h.body, physicsClientId=cid)[0][2]
            out[ours] = (float(np.mean(ratio[700:])), z)
    (r_nat, z_nat), (r_ours, z_ours) = out[False], out[True]
    assert abs(r_nat - 1.0) < 0.05  # native lies on the plane too
    assert abs(r_ours - 1.0) < 0.01
    assert abs(z_ours - z_nat) < 5e-3
