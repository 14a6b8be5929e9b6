"""An articulated body's point Jacobians, mass matrix and link states from its joint tree, each
in one compiled pass: what PyBullet's ``calculateJacobian`` (one call per contact link, ~9 us
each on the A1), ``calculateMassMatrix`` and ``getLinkStates`` return, from the joint
positions (and rates) the backend reads or sets anyway.

PyBullet's conventions (Bullet's btMultiBody, measured with ``getLinkState`` on the A1,
Laikago, Mini Cheetah and generated robots with turned joint frames and inertial frames, and
pinned in tests/test_bullet_kinematics.py against ``calculateJacobian``,
``calculateMassMatrix`` and ``getLinkStates``):

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
        nb = int(c("getNumJoints", body))
        infos = [c("getJointInfo", body, j) for j in range(nb)]
        sph = [int(info[2]) == pb.JOINT_SPHERICAL for info in infos]
        # a spherical joint is three revolute joints about its child's inertial axes x, y, z
        # at q = 0, the first turned by the joint's quaternion (massless links in between;
        # PyBullet: R_child = R_parent conj(parentFrameOrn) Q, the rate omega in the child's
        # inertial frame): tree entries per PyBullet link, ``node`` the child's
        width = [3 if s_ else 1 for s_ in sph]
        nl = int(sum(width))
        self.node = np.cumsum(width, dtype=np.int64) - 1  # PyBullet link -> tree entry
        self.first = self.node - np.array(width, dtype=np.int64) + 1  # its joint's first
        self.spherical = [j for j in range(nb) if sph[j]]
        self.parent = np.empty(nl, dtype=np.int64)
        self.jtype = np.empty(nl, dtype=np.int64)
        self.axis = np.zeros((nl, 3))
        self.pf_pos = np.zeros((nl, 3))
        self.pf_quat = np.zeros((nl, 4))  # conj(parentFrameOrn), [w, x, y, z]
        self.inert_pos = np.zeros((nl, 3))
        self.inert_rot_t = np.zeros((nl, 3, 3))
        self.col = np.full(nl, -1, dtype=np.int64)
        # masses (kg) and principal moments (kg m^2, in the inertial frame); the base's
        self.mass, self.inertia = np.zeros(nl), np.zeros((nl, 3))
        dyn = c("getDynamicsInfo", body, -1)
        self.base_mass, self.base_inertia = float(dyn[0]), np.array(dyn[2], dtype=float)
        known = {pb.JOINT_REVOLUTE: REVOLUTE, pb.JOINT_PRISMATIC: PRISMATIC,
                 pb.JOINT_FIXED: FIXED, pb.JOINT_SPHERICAL: REVOLUTE}
        self.supported = True
        self._pf_sph = np.zeros((nb, 4))  # conj(parentFrameOrn) of the spherical joints
        for j in range(nb):
            info = infos[j]
            dyn = c("getDynamicsInfo", body, j)
            par = int(info[16])
            if info[2] not in known or par >= j:
                self.supported = False
            t = int(self.node[j])
            first = t - width[j] + 1
            for e in range(first, t):  # a spherical joint's massless x and y entries
                self.parent[e + 1] = e
                self.jtype[e] = REVOLUTE
                self.axis[e, e - first] = 1.0
                self.pf_quat[e] = (1.0, 0.0, 0.0, 0.0)
                self.inert_rot_t[e] = np.eye(3)
            self.parent[first] = self.node[par] if par >= 0 else -1
            self.jtype[t] = known.get(info[2], FIXED)
            self.axis[t] = (0.0, 0.0, 1.0) if sph[j] else info[13]
            self.pf_pos[first] = info[14]
            x, y, z, w = info[15]
            self.pf_quat[first] = (w, -x, -y, -z)
            self._pf_sph[j] = (w, -x, -y, -z)
            if sph[j]:
                self.pf_quat[t] = (1.0, 0.0, 0.0, 0.0)
            self.inert_pos[t] = dyn[3]
            self.inert_rot_t[t] = np.array(pb.getMatrixFromQuaternion(dyn[4])).reshape(3, 3).T
            self.mass[t] = dyn[0]
            self.inertia[t] = dyn[2]
        off = 6 if floating else 0
        self.ncol = off + int(sum(width[j] for j in moving))
        col = off
        for j in moving:
            for e in range(int(self.node[j]) - width[j] + 1, int(self.node[j]) + 1):
                self.col[e] = col
                col += 1
        self.floating = floating
        self._moving = np.array(moving, dtype=np.int64)
        self._moving_node = self.node[self._moving] if len(moving) else self._moving
        # work arrays (reused): joint positions and rates per link, the forward kinematics
        self.q, self.qd = np.zeros(nl), np.zeros(nl)
        self.com_quat = np.empty((nl, 4))
        self.com_rot = np.empty((nl, 3, 3))
        self.com_pos = np.empty((nl, 3))
        self.pivot = np.empty((nl, 3))
        self.axis_w = np.empty((nl, 3))
        self._lin, self._ang = np.empty((nl, 3)), np.empty((nl, 3))
        self._cm, self._cs, self._cj = np.empty(nl), np.empty((nl, 3)), np.empty((nl, 3, 3))

    def _set(self, q: Any, qd: Any = None) -> None:
        """The moving joints' positions ``q`` (and rates ``qd``) into the tree: one float per
        joint (rad or m), a spherical joint's position its quaternion [x, y, z, w] and rate
        its angular velocity (3, rad/s, the child's inertial axes), PyBullet's
        ``getJointStatesMultiDof`` forms."""
        if not self.spherical:
            self.q[self._moving] = q
            if qd is not None:
                self.qd[self._moving] = qd
            return
        pos = self.pf_quat
        for i, j in enumerate(self._moving.tolist()):
            t = int(self.node[j])
            if j in self.spherical:
                x, y, z, w = q[i]
                a = self._pf_sph[j]
                pos[t - 2] = _quat_mul_py(a, (w, x, y, z))
                self.q[t - 2:t + 1] = 0.0
                if qd is not None:
                    self.qd[t - 2:t + 1] = qd[i]
            else:
                self.q[t] = q[i]
                if qd is not None:
                    self.qd[t] = qd[i]

    def _nodes(self, links: Any) -> np.ndarray:
        """The tree entries of PyBullet links ``links`` (-1, the base, kept)."""
        lk = np.asarray(links, dtype=np.int64)
        if not self.spherical:
            return lk
        return np.where(lk >= 0, self.node[np.maximum(lk, 0)], -1)

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
        self._set(q)
        jac = np.zeros((len(links), 3, self.ncol))
        x, y, z, w = base_o
        tree_jacobians(self.q, np.asarray(base_p, dtype=float), np.array([w, x, y, z]), r_base,
                       *self._kin(), self.col, self.floating, self._nodes(links), point, jac,
                       *self._work())
        return jac

    def mass_matrix(self, q: Any, base_p: Any, base_o: Any, r_base: np.ndarray) -> np.ndarray:
        """The joint-space mass matrix (ncol, ncol) in PyBullet's coordinates (what
        ``calculateMassMatrix`` returns) at joint positions ``q``, the base's position
        ``base_p``, orientation ``base_o`` [x, y, z, w] and rotation ``r_base``
        (:func:`tree_mass_matrix`)."""
        self._set(q)
        mm = np.zeros((self.ncol, self.ncol))
        x, y, z, w = base_o
        tree_mass_matrix(self.q, np.asarray(base_p, dtype=float), np.array([w, x, y, z]),
                         r_base, *self._kin(), self.col, self.floating, self.mass,
                         self.inertia, self.base_mass, self.base_inertia, mm, *self._work(),
                         self._cm, self._cs, self._cj)
        return mm

    def link_states(self, q: Any, qd: Any, base_p: Any, base_o: Any, base_v: Any, base_w: Any,
                    links: np.ndarray, rows: np.ndarray, pos: np.ndarray, quat: np.ndarray,
                    vel: np.ndarray, omega: np.ndarray, frame: np.ndarray) -> None:
        """The links ``links``' states, written into the rows ``rows`` of ``pos`` (m),
        ``quat`` [w, x, y, z], ``vel`` (m/s), ``omega`` (rad/s) and ``frame`` (the URDF frame
        origins, m) (:func:`tree_link_states`) at the moving joints' positions ``q`` and
        rates ``qd``, the base's position ``base_p``, orientation ``base_o`` [x, y, z, w],
        velocity ``base_v`` and angular velocity ``base_w`` (world)."""
        self._set(q, qd)
        x, y, z, w = base_o
        tree_link_states(self.q, self.qd, np.asarray(base_p, dtype=float),
                         np.array([w, x, y, z]), np.asarray(base_v, dtype=float),
                         np.asarray(base_w, dtype=float), *self._kin(), *self._work(),
                         self._lin, self._ang, self._nodes(links), rows, pos, quat, vel, omega,
                         frame)


def _quat_mul_py(a: Any, b: Any) -> tuple[float, float, float, float]:
    """The product a b of two [w, x, y, z] quaternions (plain floats)."""
    return _k.quat_product.py_func(float(a[0]), float(a[1]), float(a[2]), float(a[3]),
                                   float(b[0]), float(b[1]), float(b[2]), float(b[3]))


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
        q0, q1, q2, q3 = _k.quat_product(q0, q1, q2, q3, pf_quat[j, 0], pf_quat[j, 1],
                                         pf_quat[j, 2], pf_quat[j, 3])
        ax0, ax1, ax2 = axis[j, 0], axis[j, 1], axis[j, 2]
        if jtype[j] == REVOLUTE:
            h = 0.5 * q[j]
            sh = math.sin(h)
            q0, q1, q2, q3 = _k.quat_product(q0, q1, q2, q3, math.cos(h), sh * ax0, sh * ax1,
                                             sh * ax2)
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


@njit_helper
def _add_inertia(rot, diag, m, d0, d1, d2, out):
    """``out`` += R diag(``diag``) R^T + m (|d|^2 E - d d^T): a body's inertia (principal
    moments ``diag`` in the axes ``rot``, mass ``m``, centre of mass at d) about the origin of
    d (the parallel axis theorem)."""
    dd = d0 * d0 + d1 * d1 + d2 * d2
    d = (d0, d1, d2)
    for a in range(3):
        for b in range(3):
            s = 0.0
            for k in range(3):
                s += rot[a, k] * diag[k] * rot[b, k]
            out[a, b] += s + m * ((dd if a == b else 0.0) - d[a] * d[b])


@njit
def tree_mass_matrix(q, base_p, base_q, r_base, parent, jtype, axis, pf_pos, pf_quat,
                     inert_pos, inert_rot_t, col, floating, mass, inertia, base_mass,
                     base_inertia, mm, com_quat, com_rot, com_pos, pivot, axis_w, cm, cs, cj):
    """The joint-space mass matrix ``mm`` (n, n, zeros on entry) of a joint tree by composite
    rigid bodies (Featherstone, Rigid Body Dynamics Algorithms, 2008, sec. 6.2, here in world
    axes about the base's centre of mass p_b): per link the subtree's mass ``cm``, first
    moment ``cs`` = sum m (c - p_b) and inertia ``cj`` about p_b; a revolute joint i moving
    its subtree at unit rate (axis a through the pivot o) gives the momentum h = a x (cs - cm
    (o - p_b)) and the angular momentum about p_b L = cj a - cs x (a x (o - p_b)) (prismatic:
    h = cm a, L = cs x a); M[j, i] for j = i and every joint above it: a_j . (L - (o_j - p_b)
    x h) (prismatic a_j . h), the base's rows (R_b e_k) . L and (R_b e_k) . h. The base's
    own block from the whole body's (mass, cs, cj)."""
    _forward(q, base_p, base_q, parent, jtype, axis, pf_pos, pf_quat, inert_pos, inert_rot_t,
             com_quat, com_rot, com_pos, pivot, axis_w)
    nl = parent.shape[0]
    for j in range(nl):
        d0, d1, d2 = com_pos[j, 0] - base_p[0], com_pos[j, 1] - base_p[1], com_pos[j, 2] - base_p[2]
        cm[j] = mass[j]
        cs[j, 0], cs[j, 1], cs[j, 2] = mass[j] * d0, mass[j] * d1, mass[j] * d2
        cj[j] = 0.0
        _add_inertia(com_rot[j], inertia[j], mass[j], d0, d1, d2, cj[j])
    tm = base_mass
    ts = np.zeros(3)
    tj = np.zeros((3, 3))
    _add_inertia(r_base, base_inertia, base_mass, 0.0, 0.0, 0.0, tj)
    for j in range(nl - 1, -1, -1):  # children after their parents: sums into the parents
        p = parent[j]
        if p >= 0:
            cm[p] += cm[j]
            for a in range(3):
                cs[p, a] += cs[j, a]
                for b in range(3):
                    cj[p, a, b] += cj[j, a, b]
        else:
            tm += cm[j]
            for a in range(3):
                ts[a] += cs[j, a]
                for b in range(3):
                    tj[a, b] += cj[j, a, b]
    h = np.empty(3)
    lm = np.empty(3)
    for i in range(nl):
        ci = col[i]
        if ci < 0:
            continue
        a0, a1, a2 = axis_w[i, 0], axis_w[i, 1], axis_w[i, 2]
        if jtype[i] == REVOLUTE:
            r0, r1, r2 = pivot[i, 0] - base_p[0], pivot[i, 1] - base_p[1], pivot[i, 2] - base_p[2]
            u0, u1, u2 = cs[i, 0] - cm[i] * r0, cs[i, 1] - cm[i] * r1, cs[i, 2] - cm[i] * r2
            h[0], h[1], h[2] = a1 * u2 - a2 * u1, a2 * u0 - a0 * u2, a0 * u1 - a1 * u0
            # a x r, then cs x (a x r)
            w0, w1, w2 = a1 * r2 - a2 * r1, a2 * r0 - a0 * r2, a0 * r1 - a1 * r0
            for a in range(3):
                lm[a] = cj[i, a, 0] * a0 + cj[i, a, 1] * a1 + cj[i, a, 2] * a2
            lm[0] -= cs[i, 1] * w2 - cs[i, 2] * w1
            lm[1] -= cs[i, 2] * w0 - cs[i, 0] * w2
            lm[2] -= cs[i, 0] * w1 - cs[i, 1] * w0
        else:
            h[0], h[1], h[2] = cm[i] * a0, cm[i] * a1, cm[i] * a2
            lm[0] = cs[i, 1] * a2 - cs[i, 2] * a1
            lm[1] = cs[i, 2] * a0 - cs[i, 0] * a2
            lm[2] = cs[i, 0] * a1 - cs[i, 1] * a0
        k = i
        while k >= 0:
            ck = col[k]
            if ck >= 0:
                b0, b1, b2 = axis_w[k, 0], axis_w[k, 1], axis_w[k, 2]
                if jtype[k] == REVOLUTE:
                    r0 = pivot[k, 0] - base_p[0]
                    r1 = pivot[k, 1] - base_p[1]
                    r2 = pivot[k, 2] - base_p[2]
                    x0 = lm[0] - (r1 * h[2] - r2 * h[1])
                    x1 = lm[1] - (r2 * h[0] - r0 * h[2])
                    x2 = lm[2] - (r0 * h[1] - r1 * h[0])
                    v = b0 * x0 + b1 * x1 + b2 * x2
                else:
                    v = b0 * h[0] + b1 * h[1] + b2 * h[2]
                mm[ck, ci] = v
                mm[ci, ck] = v
            k = parent[k]
        if floating:
            for e in range(3):
                c0, c1, c2 = r_base[0, e], r_base[1, e], r_base[2, e]
                mm[e, ci] = mm[ci, e] = c0 * lm[0] + c1 * lm[1] + c2 * lm[2]
                mm[3 + e, ci] = mm[ci, 3 + e] = c0 * h[0] + c1 * h[1] + c2 * h[2]
    if floating:
        for e in range(3):
            for f in range(3):
                # angular-angular: (R e)^T cj (R f); linear-angular: (R e) . ((R f) x ts)
                s = 0.0
                for a in range(3):
                    for b in range(3):
                        s += r_base[a, e] * tj[a, b] * r_base[b, f]
                mm[e, f] = s
                g0, g1, g2 = r_base[0, f], r_base[1, f], r_base[2, f]
                x0 = g1 * ts[2] - g2 * ts[1]
                x1 = g2 * ts[0] - g0 * ts[2]
                x2 = g0 * ts[1] - g1 * ts[0]
                v = r_base[0, e] * x0 + r_base[1, e] * x1 + r_base[2, e] * x2
                mm[3 + e, f] = v
                mm[f, 3 + e] = v
                mm[3 + e, 3 + f] = tm if e == f else 0.0
