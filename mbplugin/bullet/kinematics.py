"""An articulated body's point Jacobians from its joint tree, in one compiled pass: what
PyBullet's ``calculateJacobian`` returns (one call per contact link, ~9 us each on the A1),
from the joint positions the backend reads anyway.

PyBullet's conventions (Bullet's btMultiBody, measured with ``getLinkState`` on the A1,
Laikago, Mini Cheetah and generated robots with turned joint frames and inertial frames, and
pinned in tests/test_bullet_kinematics.py against ``calculateJacobian``):

- a link's frame in the multibody is its centre-of-mass (inertial) frame; ``getJointInfo``'s
  ``parentFramePos`` is the joint's pivot in the parent's inertial frame (the base's: its
  centre-of-mass frame, the pose ``getBasePositionAndOrientation`` returns) and
  ``parentFrameOrn`` the inverse of the child's inertial frame's rotation relative to the
  parent's at q = 0; ``jointAxis`` is in the child's inertial frame;
- R_child = R_parent conj(parentFrameOrn) Rot(axis, q) (revolute), the pivot
  p_parent + R_parent parentFramePos; the URDF link frame's origin is the pivot (prismatic:
  plus q along the axis), its rotation R_child R(localInertialOrn)^T, the centre of mass at
  localInertialPos in that frame (``getDynamicsInfo``);
- the generalised velocities of a floating base are (omega, v) in the base's frame, v the
  velocity of the base's centre of mass, then the joints' rates: a point's velocity is
  R_b (v + omega x r_b) + sum_j a_j x (p - o_j) qd_j (revolute; prismatic a_j qd_j).

The Jacobians here are in world axes (PyBullet's, in the base's axes, rotated by R_b), at the
contact point itself. Units: m, rad.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mbplugin._jit import njit, njit_helper
from mbplugin.contact import kernels as _k

#: joint types of the compiled tree (PyBullet's JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_FIXED)
REVOLUTE, PRISMATIC, FIXED = 0, 1, 4


class LinkTree:
    """The joint tree of PyBullet body ``body`` (client ``c``, a
    :class:`~mbplugin.bullet.client.Client`; ``moving`` its moving joints, ``floating`` whether
    its base moves), read once: per link its parent, joint type, axis, pivot and rotation in
    the parent's inertial frame, inertial frame in the link frame, and its column in
    PyBullet's Jacobian (-1 for a fixed joint). ``supported`` is False for a tree this module
    does not model (a spherical or planar joint, a link listed before its parent): PyBullet's
    ``calculateJacobian`` and reads are used for it instead."""

    def __init__(self, c: Any, body: int, moving: list[int], floating: bool) -> None:
        pb = c.p
        nl = int(c("getNumJoints", body))
        self.parent = np.empty(nl, dtype=np.int64)
        self.jtype = np.empty(nl, dtype=np.int64)
        self.axis = np.zeros((nl, 3))
        self.pf_pos = np.zeros((nl, 3))
        self.pf_quat = np.zeros((nl, 4))  # conj(parentFrameOrn), [w, x, y, z]
        self.inert_pos = np.zeros((nl, 3))
        self.inert_rot_t = np.zeros((nl, 3, 3))
        self.col = np.full(nl, -1, dtype=np.int64)
        off = 6 if floating else 0
        self.ncol = off + len(moving)
        known = {pb.JOINT_REVOLUTE: REVOLUTE, pb.JOINT_PRISMATIC: PRISMATIC,
                 pb.JOINT_FIXED: FIXED}
        self.supported = True
        for j in range(nl):
            info = c("getJointInfo", body, j)
            dyn = c("getDynamicsInfo", body, j)
            par = int(info[16])
            if info[2] not in known or par >= j:
                self.supported = False
            self.parent[j] = par
            self.jtype[j] = known.get(info[2], FIXED)
            self.axis[j] = info[13]
            self.pf_pos[j] = info[14]
            x, y, z, w = info[15]
            self.pf_quat[j] = (w, -x, -y, -z)
            self.inert_pos[j] = dyn[3]
            self.inert_rot_t[j] = np.array(pb.getMatrixFromQuaternion(dyn[4])).reshape(3, 3).T
        for i, j in enumerate(moving):
            self.col[j] = off + i
        self.floating = floating
        self._moving = np.array(moving, dtype=np.int64)
        # work arrays (reused): joint positions and rates per link, the forward kinematics
        self.q, self.qd = np.zeros(nl), np.zeros(nl)
        self.com_quat = np.empty((nl, 4))
        self.com_rot = np.empty((nl, 3, 3))
        self.com_pos = np.empty((nl, 3))
        self.pivot = np.empty((nl, 3))
        self.axis_w = np.empty((nl, 3))
        self._lin, self._ang = np.empty((nl, 3)), np.empty((nl, 3))

    def _kin(self) -> tuple[np.ndarray, ...]:
        return (self.parent, self.jtype, self.axis, self.pf_pos, self.pf_quat, self.inert_pos,
                self.inert_rot_t)

    def _work(self) -> tuple[np.ndarray, ...]:
        return self.com_quat, self.com_rot, self.com_pos, self.pivot, self.axis_w

    def jacobians(self, q: Any, base_p: Any, base_o: Any, r_base: np.ndarray,
                  links: np.ndarray, point: np.ndarray) -> np.ndarray:
        """The point Jacobians (E, 3, ncol), world axes, of the points ``point`` (E, 3, world,
        m) on the links ``links`` (E,; -1 the base) at joint positions ``q`` (the moving
        joints', rad or m), the base's centre-of-mass position ``base_p`` (m), orientation
        ``base_o`` [x, y, z, w] and rotation ``r_base`` (3, 3)."""
        self.q[self._moving] = q
        jac = np.zeros((len(links), 3, self.ncol))
        x, y, z, w = base_o
        tree_jacobians(self.q, np.asarray(base_p, dtype=float), np.array([w, x, y, z]), r_base,
                       *self._kin(), self.col, self.floating, np.asarray(links, dtype=np.int64),
                       point, jac, *self._work())
        return jac

    def link_states(self, q: Any, qd: Any, base_p: Any, base_o: Any, base_v: Any, base_w: Any,
                    links: np.ndarray, rows: np.ndarray, pos: np.ndarray, quat: np.ndarray,
                    vel: np.ndarray, omega: np.ndarray, frame: np.ndarray) -> None:
        """The links ``links``' states, written into the rows ``rows`` of ``pos`` (m),
        ``quat`` [w, x, y, z], ``vel`` (m/s), ``omega`` (rad/s) and ``frame`` (the URDF frame
        origins, m) (:func:`tree_link_states`) at the moving joints' positions ``q`` and
        rates ``qd``, the base's position ``base_p``, orientation ``base_o`` [x, y, z, w],
        velocity ``base_v`` and angular velocity ``base_w`` (world)."""
        self.q[self._moving] = q
        self.qd[self._moving] = qd
        x, y, z, w = base_o
        tree_link_states(self.q, self.qd, np.asarray(base_p, dtype=float),
                         np.array([w, x, y, z]), np.asarray(base_v, dtype=float),
                         np.asarray(base_w, dtype=float), *self._kin(), *self._work(),
                         self._lin, self._ang, links, rows, pos, quat, vel, omega, frame)


@njit_helper
def _qmul(a0, a1, a2, a3, b0, b1, b2, b3):
    """The Hamilton product a b of two quaternions [w, x, y, z] (scalars)."""
    return (a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
            a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0)


@njit_helper
def _forward(q, base_p, base_q, parent, jtype, axis, pf_pos, pf_quat, inert_pos, inert_rot_t,
             com_quat, com_rot, com_pos, pivot, axis_w):
    """The forward kinematics of a joint tree (the module docstring's conventions; links in an
    order where a parent comes before its children): per link its inertial frame's
    orientation ``com_quat`` [w, x, y, z] and rotation ``com_rot``, its centre of mass
    ``com_pos``, its joint's pivot ``pivot`` (the URDF frame's origin at q = 0) and world axis
    ``axis_w``, from the joint positions ``q`` (per link) and the base's centre of mass
    ``base_p`` and orientation ``base_q`` [w, x, y, z]."""
    rb = _k.quat_matrix(base_q[0], base_q[1], base_q[2], base_q[3])
    for j in range(parent.shape[0]):
        p = parent[j]
        if p < 0:
            q0, q1, q2, q3 = base_q[0], base_q[1], base_q[2], base_q[3]
            for a in range(3):
                pivot[j, a] = base_p[a] + (rb[3 * a] * pf_pos[j, 0] + rb[3 * a + 1] * pf_pos[j, 1]
                                           + rb[3 * a + 2] * pf_pos[j, 2])
        else:
            q0, q1, q2, q3 = com_quat[p, 0], com_quat[p, 1], com_quat[p, 2], com_quat[p, 3]
            for a in range(3):
                pivot[j, a] = com_pos[p, a] + (com_rot[p, a, 0] * pf_pos[j, 0]
                                               + com_rot[p, a, 1] * pf_pos[j, 1]
                                               + com_rot[p, a, 2] * pf_pos[j, 2])
        # R_parent conj(parentFrameOrn), then the turn about the axis (child frame)
        q0, q1, q2, q3 = _qmul(q0, q1, q2, q3, pf_quat[j, 0], pf_quat[j, 1], pf_quat[j, 2],
                               pf_quat[j, 3])
        ax0, ax1, ax2 = axis[j, 0], axis[j, 1], axis[j, 2]
        if jtype[j] == REVOLUTE:
            h = 0.5 * q[j]
            sh = math.sin(h)
            q0, q1, q2, q3 = _qmul(q0, q1, q2, q3, math.cos(h), sh * ax0, sh * ax1, sh * ax2)
        com_quat[j, 0], com_quat[j, 1], com_quat[j, 2], com_quat[j, 3] = q0, q1, q2, q3
        m = _k.quat_matrix(q0, q1, q2, q3)
        for a in range(3):
            for b in range(3):
                com_rot[j, a, b] = m[3 * a + b]
            axis_w[j, a] = m[3 * a] * ax0 + m[3 * a + 1] * ax1 + m[3 * a + 2] * ax2
        # the link frame's origin (prismatic: moved along the axis), the centre of mass at
        # inert_pos in the link frame R_com R_inert^T
        slide = q[j] if jtype[j] == PRISMATIC else 0.0
        for a in range(3):
            s = 0.0
            for b in range(3):
                rf = (m[3 * a] * inert_rot_t[j, 0, b] + m[3 * a + 1] * inert_rot_t[j, 1, b]
                      + m[3 * a + 2] * inert_rot_t[j, 2, b])
                s += rf * inert_pos[j, b]
            com_pos[j, a] = pivot[j, a] + slide * axis_w[j, a] + s


@njit
def tree_jacobians(q, base_p, base_q, r_base, parent, jtype, axis, pf_pos, pf_quat, inert_pos,
                   inert_rot_t, col, floating, links, point, jac, com_quat, com_rot, com_pos,
                   pivot, axis_w):
    """The point Jacobians ``jac`` (E, 3, n, zeros on entry), world axes, of ``point`` (E, 3)
    on ``links`` (E,; -1 the base) (:func:`_forward`'s tree and work arrays; ``r_base`` the
    base's rotation, ``col`` each link's column, -1 for a fixed joint)."""
    _forward(q, base_p, base_q, parent, jtype, axis, pf_pos, pf_quat, inert_pos, inert_rot_t,
             com_quat, com_rot, com_pos, pivot, axis_w)
    for e in range(links.shape[0]):
        p0, p1, p2 = point[e, 0], point[e, 1], point[e, 2]
        if floating:
            # the base's columns: R_b (omega x r_b) = -[r]x R_b omega, then R_b v
            r0, r1, r2 = p0 - base_p[0], p1 - base_p[1], p2 - base_p[2]
            for b in range(3):
                c0, c1, c2 = r_base[0, b], r_base[1, b], r_base[2, b]
                jac[e, 0, b] = r2 * c1 - r1 * c2
                jac[e, 1, b] = r0 * c2 - r2 * c0
                jac[e, 2, b] = r1 * c0 - r0 * c1
                for a in range(3):
                    jac[e, a, 3 + b] = r_base[a, b]
        k = links[e]
        while k >= 0:
            c = col[k]
            if c >= 0:
                a0, a1, a2 = axis_w[k, 0], axis_w[k, 1], axis_w[k, 2]
                if jtype[k] == REVOLUTE:
                    d0, d1, d2 = p0 - pivot[k, 0], p1 - pivot[k, 1], p2 - pivot[k, 2]
                    jac[e, 0, c] = a1 * d2 - a2 * d1
                    jac[e, 1, c] = a2 * d0 - a0 * d2
                    jac[e, 2, c] = a0 * d1 - a1 * d0
                else:
                    jac[e, 0, c], jac[e, 1, c], jac[e, 2, c] = a0, a1, a2
            k = parent[k]


@njit
def tree_link_states(q, qd, base_p, base_q, base_v, base_w, parent, jtype, axis, pf_pos,
                     pf_quat, inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot, axis_w,
                     lin, ang, links, rows, pos, quat, vel, omega, frame):
    """The state of the links ``links`` (E,) written into the rows ``rows`` (E,) of ``pos``,
    ``quat`` [w, x, y, z], ``vel``, ``omega`` (centre of mass, world) and ``frame`` (the URDF
    frame's origin), what PyBullet's ``getLinkStates`` (with velocities and forward
    kinematics) reports, from the joint positions ``q`` and rates ``qd`` (per link) and the
    base's pose ``base_p``, ``base_q`` and velocities ``base_v`` (of its centre of mass) and
    ``base_w`` (world): :func:`_forward`, then per link omega = omega_parent + a qd
    (revolute), v = v_parent + omega_parent x (pivot - c_parent) + omega x (c - pivot)
    (+ a qd, prismatic). ``lin``, ``ang`` (per link, 3) are work arrays."""
    _forward(q, base_p, base_q, parent, jtype, axis, pf_pos, pf_quat, inert_pos, inert_rot_t,
             com_quat, com_rot, com_pos, pivot, axis_w)
    for j in range(parent.shape[0]):
        p = parent[j]
        if p < 0:
            w0, w1, w2 = base_w[0], base_w[1], base_w[2]
            v0, v1, v2 = base_v[0], base_v[1], base_v[2]
            c0, c1, c2 = base_p[0], base_p[1], base_p[2]
        else:
            w0, w1, w2 = ang[p, 0], ang[p, 1], ang[p, 2]
            v0, v1, v2 = lin[p, 0], lin[p, 1], lin[p, 2]
            c0, c1, c2 = com_pos[p, 0], com_pos[p, 1], com_pos[p, 2]
        d0, d1, d2 = pivot[j, 0] - c0, pivot[j, 1] - c1, pivot[j, 2] - c2
        v0, v1, v2 = v0 + w1 * d2 - w2 * d1, v1 + w2 * d0 - w0 * d2, v2 + w0 * d1 - w1 * d0
        x0, x1, x2 = axis_w[j, 0] * qd[j], axis_w[j, 1] * qd[j], axis_w[j, 2] * qd[j]
        if jtype[j] == REVOLUTE:
            w0, w1, w2 = w0 + x0, w1 + x1, w2 + x2
        elif jtype[j] == PRISMATIC:
            v0, v1, v2 = v0 + x0, v1 + x1, v2 + x2
        d0 = com_pos[j, 0] - pivot[j, 0]
        d1 = com_pos[j, 1] - pivot[j, 1]
        d2 = com_pos[j, 2] - pivot[j, 2]
        lin[j, 0] = v0 + w1 * d2 - w2 * d1
        lin[j, 1] = v1 + w2 * d0 - w0 * d2
        lin[j, 2] = v2 + w0 * d1 - w1 * d0
        ang[j, 0], ang[j, 1], ang[j, 2] = w0, w1, w2
    for e in range(links.shape[0]):
        k, r = links[e], rows[e]
        slide = q[k] if jtype[k] == PRISMATIC else 0.0
        for a in range(4):
            quat[r, a] = com_quat[k, a]
        for a in range(3):
            pos[r, a] = com_pos[k, a]
            vel[r, a] = lin[k, a]
            omega[r, a] = ang[k, a]
            frame[r, a] = pivot[k, a] + slide * axis_w[k, a]
