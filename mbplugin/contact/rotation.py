"""Unit quaternions as arrays: products, rotation matrices and the exponential map.

Convention: a quaternion is ``[w, x, y, z]`` (scalar first) and rotates body-frame vectors into the
world frame, ``v_world = R(q) v_body``. The angular velocity ``omega`` is expressed in the body
frame, so the kinematic equation is (Shuster 1993, "A survey of attitude representations", Eq.
306; Diebel 2006, "Representing attitude", Eq. 109)

    dq/dt = 1/2 q (x) (0, omega_body).

Every function takes stacks of shape (N, 4) / (N, 3) and works without Python loops.
"""

from __future__ import annotations

import numpy as np

from mbplugin.contact.bodies import quat_to_matrix as _quat_to_matrix
from mbplugin.errors import ParameterError


def quat_multiply(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product p (x) q of two stacks of quaternions (N, 4)."""
    pw, px, py, pz = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    qw, qx, qy, qz = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(np.broadcast_shapes(p.shape, q.shape))
    out[..., 0] = pw * qw - px * qx - py * qy - pz * qz
    out[..., 1] = pw * qx + px * qw + py * qz - pz * qy
    out[..., 2] = pw * qy - px * qz + py * qw + pz * qx
    out[..., 3] = pw * qz + px * qy - py * qx + pz * qw
    return out


def quat_rate(q: np.ndarray, omega_body: np.ndarray) -> np.ndarray:
    """dq/dt = 1/2 q (x) (0, omega) for body-frame angular velocity ``omega`` (rad/s)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    a, b, c = omega_body[..., 0], omega_body[..., 1], omega_body[..., 2]
    out = np.empty(q.shape)
    out[..., 0] = -0.5 * (x * a + y * b + z * c)
    out[..., 1] = 0.5 * (w * a + y * c - z * b)
    out[..., 2] = 0.5 * (w * b - x * c + z * a)
    out[..., 3] = 0.5 * (w * c + x * b - y * a)
    return out


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """Quaternions scaled to unit norm (a zero quaternion raises ParameterError)."""
    q = np.asarray(q, dtype=float)
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(norm == 0.0) or not np.all(np.isfinite(norm)):
        raise ParameterError("orientation quaternion must be finite and non-zero")
    return q / norm


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (N, 3, 3) of (not necessarily unit) quaternions (N, 4).

    The quaternion is normalised on the fly, so a slightly drifted integrator state still gives
    an orthonormal matrix (one formula: :func:`mbplugin.contact.bodies.quat_to_matrix`).
    """
    return _quat_to_matrix(q)


def quat_from_rotvec(rv: np.ndarray) -> np.ndarray:
    """Unit quaternions from rotation vectors (axis * angle, rad), exact for any angle."""
    rv = np.asarray(rv, dtype=float)
    angle = np.linalg.norm(rv, axis=-1)
    half = 0.5 * angle
    # sin(half)/angle, with its Taylor series near zero
    small = angle < 1e-8
    safe = np.where(small, 1.0, angle)
    k = np.where(small, 0.5 - angle * angle / 48.0, np.sin(half) / safe)
    out = np.empty((*rv.shape[:-1], 4))
    out[..., 0] = np.cos(half)
    out[..., 1:] = rv * k[..., None]
    return out


def quat_integrate(q: np.ndarray, omega_body: np.ndarray, h: float) -> np.ndarray:
    """q (x) exp(omega h / 2): the exact rotation for a body rate held constant over ``h`` (s)."""
    return quat_normalize(quat_multiply(q, quat_from_rotvec(omega_body * h)))


def quat_from_euler_xyz(angles_deg: np.ndarray) -> np.ndarray:
    """Quaternion of fixed-axis rotations about x, then y, then z (degrees), as in URDF ``rpy``."""
    a = np.radians(np.asarray(angles_deg, dtype=float))
    ex = quat_from_rotvec(np.array([a[0], 0.0, 0.0]))
    ey = quat_from_rotvec(np.array([0.0, a[1], 0.0]))
    ez = quat_from_rotvec(np.array([0.0, 0.0, a[2]]))
    return quat_multiply(ez, quat_multiply(ey, ex))


def rotate(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R v for stacks of matrices (N, 3, 3) and vectors (N, 3)."""
    return np.einsum("nij,nj->ni", R, v)


def rotate_transpose(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R^T v for stacks of matrices (N, 3, 3) and vectors (N, 3)."""
    return np.einsum("nji,nj->ni", R, v)
