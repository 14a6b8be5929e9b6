"""The static prune's bound on a material point's approach to a fixed plane
(:func:`mbplugin.hosts.detection.prune` with ``points``, from
:func:`~mbplugin.hosts.detection.plane_points`).

Expected values come from outside mbplugin: the exact motion of a rigid body's point under a
constant twist, x(t) = c + v t + R(omega t) r (Rodrigues' rotation formula, evaluated by SciPy's
``Rotation.from_rotvec``), sampled finely over the step (brute force); and which contacts of a
model are a point against a plane by construction (a box's corners, a sphere's centre).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from mbplugin.contact import BodyState, ContactModel
from mbplugin.contact.shapes import Box, Plane, Sphere
from mbplugin.hosts.detection import PRUNE_SLACK, plane_points, prune
from mbplugin.hosts.protocol import FREE, STATIC
from mbplugin.pipeline.batch import ContactBatch

N_SAMPLES, N_TIMES = 4000, 400


class _Store:
    """No active or latched contact (every detected contact is a candidate)."""

    latched_keys: tuple = ()

    def rows(self, batch: ContactBatch) -> np.ndarray:
        return np.full(len(batch.key), -1)


class _Rows:
    """The rows' angular velocities: row 0 the plane (static), row 1 the moving body."""

    def __init__(self, omega: np.ndarray) -> None:
        self.omega = np.vstack([np.zeros(3), omega])


def _corner_batch(c: np.ndarray, v: np.ndarray, w: np.ndarray, r: np.ndarray,
                  lift: float) -> tuple[ContactBatch, float]:
    """One corner at c + r of a body (centre of mass c, twist v, w) above the plane z = 0 (row
    0, side a; normal +z from a to b), lifted so that its gap is ``lift``: the batch the
    detection reports (the contact point midway between the corner and its projection) and
    the corner's height."""
    x = c + r
    x[2] = lift
    cen = x - r
    point = np.array([x[0], x[1], 0.5 * lift])
    n = np.array([0.0, 0.0, 1.0])
    vp = v + np.cross(w, point - cen)
    ddelta = -float(vp @ n)
    vt = vp - (vp @ n) * n
    one = np.ones(1)
    batch = ContactBatch(a=np.array([0]), b=np.array([1]), key=np.array([7]),
                         point=point[None], normal=n[None], delta=np.array([-lift]),
                         ddelta=np.array([ddelta]), vt=vt[None], m_eff=one, r_eff=one * np.nan,
                         ra=point[None], rb=(point - cen)[None])
    return batch, cen


def _lowest(cen: np.ndarray, v: np.ndarray, w: np.ndarray, r: np.ndarray, dt: float) -> float:
    """The lowest height of the point c + v t + R(w t) r over t in [0, dt] (brute force)."""
    t = np.linspace(0.0, dt, N_TIMES)
    rot = Rotation.from_rotvec(t[:, None] * w[None]).apply(r)
    return float(np.min(cen[2] + v[2] * t + rot[:, 2]))


def test_a_pruned_corner_does_not_reach_the_plane_within_the_step() -> None:
    """Random poses and twists (|v| <= 3 m/s, |omega| <= 40 rad/s, lever arms up to 0.4 m,
    steps of 1/240 s and 1/1000 s), no gravity and no other contact (no push): every corner
    the prune drops stays above the plane over the whole step under its rigid motion, and the
    bound is tight to second order: a gap of twice the exact approach (plus 1 um) is dropped
    wherever that approach is dominated by the closing speed (the first-order bound of
    dt (|u| + |omega| |r|) kept most of them: the tangential speed and the turn)."""
    rng = np.random.default_rng(18)
    kind = np.array([STATIC, FREE])
    g = np.zeros(3)
    dropped = tight_dropped = tight_total = 0
    for i in range(N_SAMPLES):
        dt = (1 / 240, 1 / 1000)[i % 2]
        v = rng.normal(size=3) * rng.uniform(0.0, 3.0) / np.sqrt(3)
        w = rng.normal(size=3) * rng.uniform(0.0, 40.0) / np.sqrt(3)
        r = rng.normal(size=3) * rng.uniform(0.0, 0.4) / np.sqrt(3)
        c = rng.normal(size=3)
        # a gap around the step's reach: from 0 to the first-order bound's
        reach = dt * (np.linalg.norm(v) + np.linalg.norm(w) * np.linalg.norm(r)) + 1e-5
        lift = rng.uniform(2 * PRUNE_SLACK, 1.5 * reach)
        batch, cen = _corner_batch(c, v, w, r, lift)
        out = prune(batch, _Rows(w), kind, _Store(), dt, g, static=True,
                    points=np.array([1], dtype=np.int8))
        low = _lowest(cen, v, w, r, dt)
        if not len(out):
            dropped += 1
            assert low > 0.0, (i, low, lift)
        # tightness: at twice the exact approach the corner is dropped when the closing
        # speed dominates (the second-order term below a tenth of it)
        approach = lift - low
        closing = dt * max(float(batch.ddelta[0]), 0.0)
        second = 0.5 * (dt * np.linalg.norm(w)) ** 2 * (np.linalg.norm(batch.rb[0]) + lift)
        if approach > 1e-5 and second < 0.1 * closing:
            tight_total += 1
            batch2, _ = _corner_batch(c, v, w, r, 2.0 * approach + 1e-6)
            out2 = prune(batch2, _Rows(w), kind, _Store(), dt, g, static=True,
                         points=np.array([1], dtype=np.int8))
            tight_dropped += int(len(out2) == 0)
    assert dropped > N_SAMPLES // 4
    assert tight_total > 100 and tight_dropped == tight_total


def test_plane_points_are_a_box_s_corners_and_a_sphere_s_centre() -> None:
    """A box and a sphere on a plane: each box corner and the sphere is a point against the
    plane (the plane's side: 1 where it is shape a), a box on a box is not."""
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(Box((0.1, 0.2, 0.05)), 0)
    m.add_shape(Sphere(0.05), 1)
    m.add_shape(Box((0.1, 0.1, 0.1)), 2)
    m.set_default_law({"name": "hooke", "k": 1.0})
    state = BodyState.create(np.array([[0.0, 0.0, 0.04], [1.0, 0.0, 0.03], [0.0, 0.0, 0.19]]),
                             mass=1.0, inertia=[1.0] * 3)
    batch = m.detect(state, margin=0.05)
    side = plane_points(m.arrays, batch.key)
    on_plane = (batch.a == -1) | (batch.b == -1)
    assert on_plane.sum() == 5  # the box's 4 lower corners and the sphere
    assert (~on_plane).sum() >= 1  # the boxes' pair
    assert np.all(side[on_plane] > 0) and np.all(side[~on_plane] == 0)
