"""A convex mesh against a plane at random orientations: the deepest overlap the contact model
reports with the mesh's lowest vertex at a given gap (used by tests/test_bullet_collapse.py and
benchmarks/hull_depth.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from mbplugin.bullet.geometry import PLANE_CORNER_TOL
from mbplugin.contact import BodyState, ContactModel
from mbplugin.contact.shapes import Plane


def rotations(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n random unit quaternions (w, x, y, z) and their rotation matrices."""
    q = np.random.default_rng(seed).normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    return q, Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()


def corner_tol(mesh: Any) -> float:
    """The plane corners' tolerance of ``mesh`` (m): corners within it of the hull are left
    out (:data:`mbplugin.bullet.geometry.PLANE_CORNER_TOL` times the bounding-box diagonal)."""
    v = np.asarray(mesh.vertices, dtype=float)
    return PLANE_CORNER_TOL * float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))


def deepest(mesh: Any, q: np.ndarray, R: np.ndarray, gap: float) -> np.ndarray:
    """(n,) the deepest overlap (m; -inf: no contact within 0.1 m) the contact model reports
    for ``mesh`` turned by each quaternion ``q[i]`` (matrix ``R[i]``) with its lowest vertex at
    height ``gap`` (m; negative: into the plane z = 0)."""
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(mesh, 0)
    m.set_default_law({"name": "hooke", "k": 1.0})
    v = np.asarray(mesh.vertices, dtype=float)
    out = np.empty(len(q))
    for i, (qi, Ri) in enumerate(zip(q, R, strict=True)):
        low = float((v @ Ri.T)[:, 2].min())  # the hull's lowest point (shape frame origin 0)
        st = BodyState.create([[0.0, 0.0, gap - low]], quat=[qi], mass=1.0, inertia=[1.0] * 3)
        b = m.detect(st, margin=0.1)
        out[i] = float(np.max(b.delta)) if len(b) else -np.inf
    return out
