"""Compiled per-body loops of the equations of motion (numba, cached on disk).

The formulas are those of :mod:`mbplugin.dynamics.world` and :mod:`mbplugin.dynamics.rotation`;
compiled, one body costs a few nanoseconds instead of the microseconds of many small NumPy calls.
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit
from mbplugin.contact.kernels import quat_matrix


@njit
def kinematics(quat, omega, R, omega_w):
    """Rotation matrices R (n,3,3) of the (normalised on the fly) quaternions and the world
    angular velocities omega_w = R omega (n,3), written in place."""
    for i in range(quat.shape[0]):
        m = quat_matrix(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        for a in range(3):
            for b in range(3):
                R[i, a, b] = m[3 * a + b]
        for a in range(3):
            omega_w[i, a] = R[i, a, 0] * omega[i, 0] + R[i, a, 1] * omega[i, 1] + R[i, a, 2] * (
                omega[i, 2])


@njit
def dynamics(quat, vel, omega, R, force, torque_w, inv_mass, inertia, inv_inertia, gacc, fixed,
             out):
    """Write dy/dt of the bodies' block of the flat state into ``out`` (13 n values).

    Layout of ``out``: [pos (3n), quat (4n), vel (3n), omega (3n)].
    """
    n = quat.shape[0]
    for i in range(n):
        o_p = 3 * i
        o_q = 3 * n + 4 * i
        o_v = 7 * n + 3 * i
        o_w = 10 * n + 3 * i
        if fixed[i]:
            for a in range(3):
                out[o_p + a] = 0.0
                out[o_v + a] = 0.0
                out[o_w + a] = 0.0
            for a in range(4):
                out[o_q + a] = 0.0
            continue
        for a in range(3):
            out[o_p + a] = vel[i, a]
            out[o_v + a] = force[i, a] * inv_mass[i] + gacc[i, a]
        wx = omega[i, 0]
        wy = omega[i, 1]
        wz = omega[i, 2]
        qw = quat[i, 0]
        qx = quat[i, 1]
        qy = quat[i, 2]
        qz = quat[i, 3]
        out[o_q + 0] = -0.5 * (qx * wx + qy * wy + qz * wz)
        out[o_q + 1] = 0.5 * (qw * wx + qy * wz - qz * wy)
        out[o_q + 2] = 0.5 * (qw * wy - qx * wz + qz * wx)
        out[o_q + 3] = 0.5 * (qw * wz + qx * wy - qy * wx)
        # body-frame torque R^T tau
        tb0 = (R[i, 0, 0] * torque_w[i, 0] + R[i, 1, 0] * torque_w[i, 1]
               + R[i, 2, 0] * torque_w[i, 2])
        tb1 = (R[i, 0, 1] * torque_w[i, 0] + R[i, 1, 1] * torque_w[i, 1]
               + R[i, 2, 1] * torque_w[i, 2])
        tb2 = (R[i, 0, 2] * torque_w[i, 0] + R[i, 1, 2] * torque_w[i, 1]
               + R[i, 2, 2] * torque_w[i, 2])
        # gyroscopic term w x (I w)
        iw0 = inertia[i, 0, 0] * wx + inertia[i, 0, 1] * wy + inertia[i, 0, 2] * wz
        iw1 = inertia[i, 1, 0] * wx + inertia[i, 1, 1] * wy + inertia[i, 1, 2] * wz
        iw2 = inertia[i, 2, 0] * wx + inertia[i, 2, 1] * wy + inertia[i, 2, 2] * wz
        r0 = tb0 - (wy * iw2 - wz * iw1)
        r1 = tb1 - (wz * iw0 - wx * iw2)
        r2 = tb2 - (wx * iw1 - wy * iw0)
        for a in range(3):
            out[o_w + a] = inv_inertia[i, a, 0] * r0 + inv_inertia[i, a, 1] * r1 + (
                inv_inertia[i, a, 2] * r2)


@njit
def power(force, torque_w, vel, omega_w):
    """sum F . v + tau . omega (W)."""
    acc = 0.0
    for i in range(force.shape[0]):
        for a in range(3):
            acc += force[i, a] * vel[i, a] + torque_w[i, a] * omega_w[i, a]
    return acc


def unpack_state(y: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """The bodies' part of the engine's flat state ``y`` (:meth:`World.pack
    <mbplugin.dynamics.world.World.pack>`: [pos, quat, vel, omega, ...]) of ``n`` bodies:
    pos (n, 3) m, quat (n, 4), vel (n, 3) m/s, omega (n, 3) rad/s (body frame) as contiguous
    views of ``y`` where it is contiguous, and their :func:`kinematics`: R (n, 3, 3) and
    omega_w (n, 3) rad/s (world frame). The one place of that layout on the Python paths."""
    pos = np.ascontiguousarray(y[: 3 * n]).reshape(n, 3)
    quat = np.ascontiguousarray(y[3 * n : 7 * n]).reshape(n, 4)
    vel = np.ascontiguousarray(y[7 * n : 10 * n]).reshape(n, 3)
    omega = np.ascontiguousarray(y[10 * n : 13 * n]).reshape(n, 3)
    R = np.empty((n, 3, 3))
    omega_w = np.empty((n, 3))
    kinematics(quat, omega, R, omega_w)
    return pos, quat, vel, omega, R, omega_w


@njit
def kinetic(mass, inertia, fixed, vel, omega):
    """Kinetic energy (J): sum over the movable bodies of m v.v / 2 + omega.(I omega) / 2
    (body-frame omega and inertia)."""
    acc = 0.0
    for i in range(mass.shape[0]):
        if fixed[i]:
            continue
        w0 = omega[i, 0]
        w1 = omega[i, 1]
        w2 = omega[i, 2]
        acc += 0.5 * mass[i] * (vel[i, 0] ** 2 + vel[i, 1] ** 2 + vel[i, 2] ** 2)
        acc += 0.5 * (w0 * (inertia[i, 0, 0] * w0 + inertia[i, 0, 1] * w1 + inertia[i, 0, 2] * w2)
                      + w1 * (inertia[i, 1, 0] * w0 + inertia[i, 1, 1] * w1
                              + inertia[i, 1, 2] * w2)
                      + w2 * (inertia[i, 2, 0] * w0 + inertia[i, 2, 1] * w1
                              + inertia[i, 2, 2] * w2))
    return acc


@njit
def kinetic_records(mass, inertia, fixed, vel, omega, out):
    """:func:`kinetic` of K recorded states at once: vel, omega (K, n, 3) -> out (K,)."""
    for k in range(vel.shape[0]):
        out[k] = kinetic(mass, inertia, fixed, vel[k], omega[k])
