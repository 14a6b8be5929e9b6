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

from mbplugin._jit import njit
from mbplugin.contact import kernels as _k

#: joint types of the compiled tree (PyBullet's JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_FIXED)
REVOLUTE, PRISMATIC, FIXED = 0, 1, 4


class LinkTree:
    """The joint tree of PyBullet body ``body`` (client ``c``, a
    :class:`~mbplugin.bullet.client.Client`), read once: per link its parent, joint type, axis,
    pivot and rotation in the parent's inertial frame, inertial frame in the link frame, and
    its column in PyBullet's Jacobian (-1 for a fixed joint). ``supported`` is False for a
    tree this module does not model (a spherical or planar joint, a link listed before its
    parent): :func:`tree_jacobians` is then not used and PyBullet's ``calculateJacobian`` is."""

    def __init__(self, c: Any, body: int, moving: list[int], floating: bool) -> None:
        pb = c.p
        nl = int(c("getNumJoints", body))
        self.parent = np.empty(nl, dtype=np.int64)
        self.jtype = np.empty(nl, dtype=np.int64)
        self.axis = np.zeros((nl, 3))
        self.pf_pos = np.zeros((nl, 3))
        self.pf_rot = np.zeros((nl, 3, 3))
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
            # the inverse of parentFrameOrn (its transpose)
            self.pf_rot[j] = np.array(pb.getMatrixFromQuaternion(info[15])).reshape(3, 3).T
            self.inert_pos[j] = dyn[3]
            self.inert_rot_t[j] = np.array(pb.getMatrixFromQuaternion(dyn[4])).reshape(3, 3).T
        for i, j in enumerate(moving):
            self.col[j] = off + i
        self.floating = floating
        # work arrays of the forward kinematics (reused)
        self.q = np.zeros(nl)
        self._moving = np.array(moving, dtype=np.int64)
        self.com_rot = np.empty((nl, 3, 3))
        self.com_pos = np.empty((nl, 3))
        self.pivot = np.empty((nl, 3))
        self.axis_w = np.empty((nl, 3))

    def jacobians(self, q: list[float], base_p: Any, r_base: np.ndarray, links: np.ndarray,
                  point: np.ndarray) -> np.ndarray:
        """The point Jacobians (E, 3, ncol), world axes, of the points ``point`` (E, 3, world,
        m) on the links ``links`` (E,; -1 the base) at joint positions ``q`` (the moving
        joints', rad or m) and the base's centre-of-mass position ``base_p`` (m) and rotation
        ``r_base`` (3, 3)."""
        self.q[self._moving] = q
        jac = np.zeros((len(links), 3, self.ncol))
        tree_jacobians(self.q, np.asarray(base_p, dtype=float), r_base, self.parent, self.jtype,
                       self.axis, self.pf_pos, self.pf_rot, self.inert_pos, self.inert_rot_t,
                       self.col, self.floating, np.asarray(links, dtype=np.int64), point, jac,
                       self.com_rot, self.com_pos, self.pivot, self.axis_w)
        return jac


@njit
def tree_jacobians(q, base_p, r_base, parent, jtype, axis, pf_pos, pf_rot, inert_pos,
                   inert_rot_t, col, floating, links, point, jac, com_rot, com_pos, pivot,
                   axis_w):
    """The forward kinematics of a joint tree (the module docstring's conventions; links in
    an order where a parent comes before its children) and the point Jacobians ``jac`` (E, 3,
    n, zeros on entry) of ``point`` (E, 3) on ``links`` (E,; -1 the base), world axes.
    ``com_rot``, ``com_pos``, ``pivot``, ``axis_w`` (per link) are work arrays: the links'
    inertial frames, pivots and world joint axes."""
    nl = parent.shape[0]
    rj = np.empty((3, 3))
    for j in range(nl):
        p = parent[j]
        # the joint frame at q = 0: R_parent conj(parentFrameOrn), pivot p + R parentFramePos
        for a in range(3):
            s = 0.0
            for b in range(3):
                rp = r_base[a, b] if p < 0 else com_rot[p, a, b]
                s += rp * pf_pos[j, b]
                acc = 0.0
                for c in range(3):
                    rpc = r_base[a, c] if p < 0 else com_rot[p, a, c]
                    acc += rpc * pf_rot[j, c, b]
                rj[a, b] = acc
            pivot[j, a] = (base_p[a] if p < 0 else com_pos[p, a]) + s
        ax0, ax1, ax2 = axis[j, 0], axis[j, 1], axis[j, 2]
        if jtype[j] == REVOLUTE:
            h = 0.5 * q[j]
            sh = math.sin(h)
            m = _k.quat_matrix(math.cos(h), sh * ax0, sh * ax1, sh * ax2)
            for a in range(3):
                for b in range(3):
                    com_rot[j, a, b] = (rj[a, 0] * m[b] + rj[a, 1] * m[3 + b]
                                        + rj[a, 2] * m[6 + b])
        else:
            for a in range(3):
                for b in range(3):
                    com_rot[j, a, b] = rj[a, b]
        for a in range(3):
            axis_w[j, a] = com_rot[j, a, 0] * ax0 + com_rot[j, a, 1] * ax1 + com_rot[j, a, 2] * ax2
        # the link frame's origin (prismatic: moved along the axis), the centre of mass at
        # inert_pos in the link frame R_com R_inert^T
        slide = q[j] if jtype[j] == PRISMATIC else 0.0
        for a in range(3):
            s = 0.0
            for b in range(3):
                rf = 0.0
                for c in range(3):
                    rf += com_rot[j, a, c] * inert_rot_t[j, c, b]
                s += rf * inert_pos[j, b]
            com_pos[j, a] = pivot[j, a] + slide * axis_w[j, a] + s
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
