"""Compiled pieces of the PyBullet backend's host step for contacts on articulated links
(robots).

A robot on managed ground at 1/240 s spends its host step in many small array operations
around PyBullet's calls (measured on the A1: ~1 ms of CPU per host step, 11x native, of which
PyBullet's own calls ~0.2 ms). The pieces here do the same arithmetic in one compiled call
each (no formula is written here):

- :func:`read_state`: the rows' poses and velocities from PyBullet (bases, links with their
  frame origins) gathered into arrays by one compiled scatter;
- :func:`link_points`: contact points in a link's frame (calculateJacobian's argument);
- :func:`world_jacobians`: one articulated body's point Jacobians in world axes (the response
  M^-1 J^T and its part of W = J M^-1 J^T are :func:`mbplugin.pipeline.delassus.articulated_w`'s,
  shared with every host; the reads of plane-sphere contacts after the host step are
  :class:`mbplugin.hosts.detection.HostContacts`).

Units: SI (m, m/s, kg, N s).
"""

from __future__ import annotations

import math
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from mbplugin._jit import njit, njit_helper
from mbplugin.bullet.kinematics import tree_jacobians, tree_mass_matrix
from mbplugin.contact import kernels as _k
from mbplugin.pipeline.delassus import articulated_w


@njit
def world_jacobians(jac, moving, r_base, point, base_p):
    """One articulated body's point Jacobians in world axes, in place.

    ``jac`` (E, 3, n): per contact side e, PyBullet's point Jacobian in the base frame where
    ``moving[e]`` (rotated here into world axes), zeros elsewhere (the base, or a link on fixed
    joints of a floating base: filled here, the point's velocity v - [r]x omega in PyBullet's
    base coordinates (omega, v), r = ``point[e]`` - ``base_p`` in the base frame); ``r_base``
    (3, 3) the base's rotation. The response and W are
    :func:`mbplugin.pipeline.delassus.articulated_w`'s."""
    ne, n = jac.shape[0], jac.shape[2]
    for e in range(ne):
        if moving[e]:
            for j in range(n):
                x0, x1, x2 = jac[e, 0, j], jac[e, 1, j], jac[e, 2, j]
                for a in range(3):
                    jac[e, a, j] = r_base[a, 0] * x0 + r_base[a, 1] * x1 + r_base[a, 2] * x2
        else:
            d0, d1, d2 = point[e, 0] - base_p[0], point[e, 1] - base_p[1], point[e, 2] - base_p[2]
            r0 = d0 * r_base[0, 0] + d1 * r_base[1, 0] + d2 * r_base[2, 0]
            r1 = d0 * r_base[0, 1] + d1 * r_base[1, 1] + d2 * r_base[2, 1]
            r2 = d0 * r_base[0, 2] + d1 * r_base[1, 2] + d2 * r_base[2, 2]
            for a in range(3):
                # -r_base @ [r]x, [r]x = [[0, -r2, r1], [r2, 0, -r0], [-r1, r0, 0]]
                jac[e, a, 0] = -(r_base[a, 1] * r2 - r_base[a, 2] * r1)
                jac[e, a, 1] = -(-r_base[a, 0] * r2 + r_base[a, 2] * r0)
                jac[e, a, 2] = -(r_base[a, 0] * r1 - r_base[a, 1] * r0)
                for b in range(3):
                    jac[e, a, 3 + b] = r_base[a, b]


@njit
def bullet_matrix(x, y, z, w, out):
    """The rotation matrix of the quaternion [x, y, z, w] (not necessarily unit) written
    into ``out`` (3, 3) as PyBullet's ``getMatrixFromQuaternion`` computes it, to the bit:
    Bullet's ``btMatrix3x3::setRotation`` (Coumans, Bullet Physics 2.x,
    src/LinearMath/btMatrix3x3.h, the scalar path in double precision: s = 2 / |q|^2,
    products of the components with their s-scaled copies, each entry's sum in that order).
    No Python-C round trip per host step (the base's rotation of a robot's W)."""
    s = 2.0 / (x * x + y * y + z * z + w * w)
    xs, ys, zs = x * s, y * s, z * s
    wx, wy, wz = w * xs, w * ys, w * zs
    xx, xy, xz = x * xs, x * ys, x * zs
    yy, yz, zz = y * ys, y * zs, z * zs
    out[0, 0], out[0, 1], out[0, 2] = 1.0 - (yy + zz), xy - wz, xz + wy
    out[1, 0], out[1, 1], out[1, 2] = xy + wz, 1.0 - (xx + zz), yz - wx
    out[2, 0], out[2, 1], out[2, 2] = xz - wy, yz + wx, 1.0 - (xx + yy)


def base_rotation(orn: Any) -> np.ndarray:
    """The rotation matrix (3, 3) of a PyBullet orientation ``orn`` [x, y, z, w]: what
    ``np.array(getMatrixFromQuaternion(orn)).reshape(3, 3)`` gives, bitwise
    (:func:`bullet_matrix`), without the PyBullet call."""
    out = np.empty((3, 3))
    x, y, z, w = orn
    bullet_matrix(float(x), float(y), float(z), float(w), out)
    return out


@njit
def link_points(quat, point, origin, out):
    """``point`` (E, 3, world) relative to ``origin`` (E, 3) in the axes of the rotations
    ``quat`` (E, 4, [w, x, y, z]): R^T (point - origin), written into ``out`` (E, 3)."""
    for e in range(quat.shape[0]):
        m = _k.quat_matrix(quat[e, 0], quat[e, 1], quat[e, 2], quat[e, 3])
        d0 = point[e, 0] - origin[e, 0]
        d1 = point[e, 1] - origin[e, 1]
        d2 = point[e, 2] - origin[e, 2]
        for i in range(3):
            out[e, i] = m[i] * d0 + m[3 + i] * d1 + m[6 + i] * d2


@njit
def force_calls(force, a, b, point, lag, kind, rows_arr, forced, static, body, link, f, pt):
    """The ``applyExternalForce`` calls of the contacts' forces ``force`` (K, 3) N on side b
    (minus on side a; ``a``, ``b`` (K,) rows, -1 none): per contact with a nonzero force,
    first every side b, then every side a, in contact order, those not of kind ``static``:
    the rows' body and link into ``body``, ``link`` (>= 2K,), the force and the point (the
    contact point ``point`` minus the row's ``lag`` (N, 3), where PyBullet has the body) into
    ``f``, ``pt`` (>= 2K, 3), the first M entries filled (the caller's kept arrays: no array
    made or returned per host step). Both sides' rows (>= 0) of such contacts are marked in
    ``forced`` (N,). Returns M."""
    k = force.shape[0]
    nlag = lag.shape[0]
    m = 0
    for side in range(2):
        sgn = 1.0 if side == 0 else -1.0
        for i in range(k):
            if force[i, 0] == 0 and force[i, 1] == 0 and force[i, 2] == 0:
                continue
            if side == 0:
                if a[i] >= 0:
                    forced[a[i]] = True
                if b[i] >= 0:
                    forced[b[i]] = True
            r = b[i] if side == 0 else a[i]
            if kind[r] == static:  # (a row index -1 wraps, as NumPy's indexing does)
                continue
            body[m], link[m] = rows_arr[r, 0], rows_arr[r, 1]
            rl = r if r >= 0 else r + nlag + 1  # lag row -1: none (zero)
            for j in range(3):
                f[m, j] = sgn * force[i, j]
                pt[m, j] = point[i, j] - (lag[rl, j] if rl < nlag else 0.0)
            m += 1
    return m


#: a link state's centre-of-mass position, orientation, frame origin, velocity, angular velocity
_LINK = itemgetter(0, 1, 4, 6, 7)


@njit
def _scatter(buf, base_rows, link_rows, pos, quat, vel, om, frame_pos):
    """Rows of the flat read ``buf``: per base (position, orientation [x, y, z, w]) then per
    base (velocity, angular velocity), then per link the 16 values of :data:`_LINK`."""
    nb = base_rows.shape[0]
    for i in range(nb):
        r, o, v = base_rows[i], 7 * i, 7 * nb + 6 * i
        for a in range(3):
            pos[r, a] = buf[o + a]
            vel[r, a] = buf[v + a]
            om[r, a] = buf[v + 3 + a]
        quat[r, 0] = buf[o + 6]
        for a in range(3):
            quat[r, 1 + a] = buf[o + 3 + a]
    o0 = 13 * nb
    for i in range(link_rows.shape[0]):
        r, o = link_rows[i], o0 + 16 * i
        for a in range(3):
            pos[r, a] = buf[o + a]
            frame_pos[r, a] = buf[o + 7 + a]
            vel[r, a] = buf[o + 10 + a]
            om[r, a] = buf[o + 13 + a]
        quat[r, 0] = buf[o + 6]
        for a in range(3):
            quat[r, 1 + a] = buf[o + 3 + a]


def read_state(pb: Any, cid: int, base_ids: list[int], base_rows: np.ndarray,
               link_groups: list[tuple[int, list[int], np.ndarray]], n: int,
               frame_pos: np.ndarray, kinematic: Any = ()) -> tuple[np.ndarray, ...]:
    """The N rows' centre-of-mass positions (m), orientations [w, x, y, z], velocities (m/s)
    and angular velocities (rad/s, world) from PyBullet client ``cid`` (module ``pb``): the
    bases ``base_ids`` (rows ``base_rows``) by ``getBasePositionAndOrientation`` and
    ``getBaseVelocity``, per body its links (``link_groups``: body, links, rows) by one
    ``getLinkStates`` with ``computeForwardKinematics``, except for the bodies in
    ``kinematic`` (their link poses already PyBullet's forward kinematics of their present
    joints: a reset computes it) (the links' URDF frame origins go to ``frame_pos``). Every
    row is a base or a link; rows neither in ``base_rows`` nor in a link group are left
    uninitialised (the caller fills them)."""
    nb = len(base_ids)
    src = []
    if nb:
        src.append(chain.from_iterable(chain.from_iterable(
            map(pb.getBasePositionAndOrientation, base_ids, repeat(cid)))))
        src.append(chain.from_iterable(chain.from_iterable(
            map(pb.getBaseVelocity, base_ids, repeat(cid)))))
    nl = 0
    for body, lks, _rows in link_groups:
        sts = pb.getLinkStates(body, lks, computeLinkVelocity=1,
                               computeForwardKinematics=body not in kinematic,
                               physicsClientId=cid)
        src.append(chain.from_iterable(chain.from_iterable(map(_LINK, sts))))
        nl += len(lks)
    buf = np.fromiter(chain.from_iterable(src), dtype=float, count=13 * nb + 16 * nl)
    link_rows = (np.concatenate([g[2] for g in link_groups]) if len(link_groups) > 1
                 else link_groups[0][2] if link_groups else np.zeros(0, dtype=np.int64))
    pos, quat, vel, om = np.empty((n, 3)), np.empty((n, 4)), np.empty((n, 3)), np.empty((n, 3))
    _scatter(buf, base_rows, link_rows, pos, quat, vel, om, frame_pos)
    return pos, quat, vel, om


@njit
def respond_body(q, v, dq, dt, floating, base, r_base, out_q, out_v, out_base):
    """One articulated body's state after a host step put onto the implicit step's solved one
    (:meth:`mbplugin.bullet.articulated.BulletArticulated.respond`, its arithmetic in one
    call): joint positions ``q`` (rad or m) and rates ``v`` of its moving joints change by dt
    times and by their part of ``dq`` (the response M^-1 J^T dP in PyBullet's coordinates:
    with ``floating`` the base's angular and linear velocity changes in its frame first), and
    a floating base's ``base`` (13,: position m, orientation [x, y, z, w], velocity m/s,
    angular velocity rad/s, world) by ``r_base`` (3, 3) times those: its position by dt times
    the velocity change, its orientation turned by dt times the angular velocity change
    (:func:`turn_quat`), written into ``out_q``, ``out_v``, ``out_base``.
    Returns the largest joint rate or base angular speed before the change (rad/s)."""
    spin = 0.0
    off = 6 if floating else 0
    for j in range(q.shape[0]):
        d = dq[off + j]
        a = abs(v[j])
        if a > spin:
            spin = a
        out_q[j] = q[j] + dt * d
        out_v[j] = v[j] + d
    if floating:
        w = np.sqrt(base[10] ** 2 + base[11] ** 2 + base[12] ** 2)
        if w > spin:
            spin = w
        dw = np.empty(3)
        dv = np.empty(3)
        for a in range(3):
            dw[a] = r_base[a, 0] * dq[0] + r_base[a, 1] * dq[1] + r_base[a, 2] * dq[2]
            dv[a] = r_base[a, 0] * dq[3] + r_base[a, 1] * dq[4] + r_base[a, 2] * dq[5]
        for a in range(3):
            out_base[a] = base[a] + dt * dv[a]
            out_base[7 + a] = base[7 + a] + dv[a]
            out_base[10 + a] = base[10 + a] + dw[a]
        t = turn_quat(base[3], base[4], base[5], base[6], dt * dw[0], dt * dw[1], dt * dw[2])
        out_base[3], out_base[4], out_base[5], out_base[6] = t
    return spin


@njit_helper
def turn_quat(x2, y2, z2, w2, ax, ay, az):
    """The quaternion (x2, y2, z2, w2) turned by the rotation vector (ax, ay, az) (rad, world
    frame): exp(rotvec) q, the update PyBullet makes of a base's orientation with its angular
    velocity over a step; returns (x, y, z, w)."""
    ang = math.sqrt(ax * ax + ay * ay + az * az)
    s = 0.5 - ang * ang / 48.0 if ang < 1e-4 else math.sin(0.5 * ang) / ang
    w, x, y, z = _k.quat_product(math.cos(0.5 * ang), s * ax, s * ay, s * az, w2, x2, y2, z2)
    return x, y, z, w


@njit
def body_delassus(q, tq, moving, base_p, base_q, r_base, parent, jtype, axis, pf_pos, pf_quat,
                  inert_pos, inert_rot_t, col, floating, mass, inertia, base_mass, base_inertia,
                  com_quat, com_rot, com_pos, pivot, axis_w, cm, cs, cj, links, point, locked,
                  cont, sgn, normal, mm, jac, W, wnn):
    """One articulated body's part of W in one call, for a W that is that part alone: its
    joint tree's mass matrix ``mm`` and point Jacobians ``jac`` (zeros on entry) at the moving
    joints' positions ``q`` (:func:`~mbplugin.bullet.kinematics.tree_mass_matrix`,
    :func:`~mbplugin.bullet.kinematics.tree_jacobians`: the tree's arrays, ``tq`` its joint
    positions per link, ``moving`` its moving joints, the base's position ``base_p``,
    orientation ``base_q`` [w, x, y, z] and rotation ``r_base``), the response and W
    (:func:`mbplugin.pipeline.delassus.articulated_w`, into ``W`` (3K, 3K) zeros) and each
    contact's n . W n (1/kg) into ``wnn`` (K,) (the terms of
    :func:`mbplugin.pipeline.delassus.block_normal_diagonal` in its order). Returns the
    response M^-1 J^T."""
    for j in range(moving.shape[0]):
        tq[moving[j]] = q[j]
    tree_mass_matrix(tq, base_p, base_q, r_base, parent, jtype, axis, pf_pos, pf_quat,
                     inert_pos, inert_rot_t, col, floating, mass, inertia, base_mass,
                     base_inertia, mm, com_quat, com_rot, com_pos, pivot, axis_w, cm, cs, cj)
    tree_jacobians(tq, base_p, base_q, r_base, parent, jtype, axis, pf_pos, pf_quat, inert_pos,
                   inert_rot_t, col, floating, links, point, jac, com_quat, com_rot, com_pos,
                   pivot, axis_w)
    resp = articulated_w(jac, mm, locked, cont, sgn, W)
    for i in range(normal.shape[0]):
        s = 0.0
        for a in range(3):
            for b in range(3):
                s += normal[i, a] * W[3 * i + a, 3 * i + b] * normal[i, b]
        wnn[i] = s
    return resp


@njit
def valid_plane_sphere_contacts(sa, sb, body, lpos, lrot, plane_n, plane_p, radius, pos, quat,
                                vel, omega, mass, inv_inertia, fixed, margin, point, normal,
                                delta, ra, rb, ddelta, vt, m_eff, idx, corner, half, skin,
                                skinned, feat, ms, vert, reach):
    """:func:`plane_sphere_contacts` (its arguments) after the rows' state's fast accept
    (:func:`~mbplugin.contact.kernels.state_all_valid` of ``pos``, ``quat``, ``vel``,
    ``omega``, ``mass``, ``inv_inertia``) in the same call (one dispatch instead of two):
    -1 with nothing written where that accept fails (then the detailed checks decide), else
    the contacts' count M."""
    if not _k.state_all_valid(pos, quat, vel, omega, mass, inv_inertia):
        return -1
    return plane_sphere_contacts(sa, sb, body, lpos, lrot, plane_n, plane_p, radius, pos, quat,
                                 vel, omega, mass, inv_inertia, fixed, margin, point, normal,
                                 delta, ra, rb, ddelta, vt, m_eff, idx, corner, half, skin,
                                 skinned, feat, ms, vert, reach)


#: m: the slack of :func:`plane_sphere_contacts`' skip of shapes beyond the margin
REACH_SLACK = 1e-7


@njit
def plane_sphere_contacts(sa, sb, body, lpos, lrot, plane_n, plane_p, radius, pos, quat, vel,
                          omega, mass, inv_inertia, fixed, margin, point, normal, delta, ra, rb,
                          ddelta, vt, m_eff, idx, corner, half, skin, skinned, feat, ms, vert,
                          reach):
    """The contacts of the plane-sphere shape pairs (``sa``, ``sb``; the contact model's
    shape arrays ``body``, ``lpos``, ``lrot``, ``plane_n``, ``plane_p``, ``radius``) whose
    overlap exceeds -``margin`` (m), at the rows' state (``pos``, ``quat`` [w, x, y, z],
    ``vel``, ``omega``, ``mass`` kg, body-frame ``inv_inertia``, ``fixed``): what the
    contact layer's detection and ``finish`` give them (its scalar kernels: the shape poses,
    :func:`~mbplugin.contact.kernels.plane_sphere`, the contact kinematics and effective mass
    with the world-frame inverse inertias), the first M rows of the outputs written (pair
    ``idx[m]`` at row m). Returns M.

    ``corner`` (K,) int64, ``half`` (S, 3) m and ``skin`` (S,) m (the model's box half
    extents and shape skins): a pair with ``corner[k]`` >= 0 is a plane-box pair's corner of
    that index (:func:`~mbplugin.contact.kernels.box_corner`,
    :func:`~mbplugin.contact.kernels.plane_point`, as
    :func:`~mbplugin.contact.kernels.plane_box_batch`), -2 a plane-mesh pair's plane feature
    ``feat[k]`` (a global feature row of the mesh tuple ``ms``,
    :func:`~mbplugin.contact.kernels.mesh_feature_point`, as
    :func:`~mbplugin.contact.kernels.plane_mesh_batch`; its deciding vertex row written to
    ``vert[m]``), -1 a plane-sphere pair. A box or mesh row whose shape lies farther from the
    plane than ``reach`` (S,) m (a radius about the shape's centre holding it) + ``margin``
    + its skins is skipped unevaluated (its overlap would be below -``margin``). With
    ``skinned`` (the model has a skin) every contact is grown by the two shapes' skins as
    the contact layer's detection grows it (delta + (s_a + s_b), the point moved by
    (s_a - s_b) / 2 along the normal)."""
    nb = pos.shape[0]
    R = np.empty((nb + 1, 3, 3))
    for i in range(nb):
        m = _k.quat_matrix(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        for a in range(3):
            for b in range(3):
                R[i, a, b] = m[3 * a + b]
    R[nb] = 0.0
    for a in range(3):
        R[nb, a, a] = 1.0
    inv_i = np.empty((nb + 1, 3, 3))
    _k.world_inverse_inertia_ext(R, inv_inertia, fixed, inv_i)
    inv_m = np.zeros(nb + 1)
    pos_e, vel_e, om_e = np.zeros((nb + 1, 3)), np.zeros((nb + 1, 3)), np.zeros((nb + 1, 3))
    for i in range(nb):
        if not fixed[i]:
            inv_m[i] = 1.0 / mass[i]
        for a in range(3):
            pos_e[i, a], vel_e[i, a], om_e[i, a] = pos[i, a], vel[i, a], omega[i, a]
    Rp = np.empty((3, 3))
    Rs = np.empty((3, 3))
    m = 0
    last_p, last_s, far = -1, -1, False
    q0 = q1 = q2 = n0 = n1 = n2 = 0.0
    cs = (0.0, 0.0, 0.0)
    for k in range(sa.shape[0]):
        p, s = sa[k], sb[k]
        if p != last_p or s != last_s:  # a new pair (a box's or hull's rows share its pose)
            cp = _k.shape_pose(p, body, lpos, lrot, pos_e, R, Rp)
            q0, q1, q2, n0, n1, n2 = _k.plane_frame(Rp, cp[0], cp[1], cp[2], plane_n[p],
                                                    plane_p[p])
            cs = _k.shape_pose(s, body, lpos, lrot, pos_e, R, Rs)
            far = corner[k] != -1 and ((cs[0] - q0) * n0 + (cs[1] - q1) * n1
                                       + (cs[2] - q2) * n2 - reach[s]
                                       > margin + skin[p] + skin[s] + REACH_SLACK)
            last_p, last_s = p, s
        if far:
            continue  # the whole shape beyond the margin (no contact the model would keep)
        if corner[k] == -1:
            t = _k.plane_sphere(q0, q1, q2, n0, n1, n2, cs[0], cs[1], cs[2], radius[s])
        elif corner[k] == -2:
            tm = _k.mesh_feature_point(q0, q1, q2, n0, n1, n2, cs[0], cs[1], cs[2], Rs, ms,
                                       feat[k])
            t = (tm[0], tm[1], tm[2], tm[3], tm[4], tm[5], tm[6])
            vert[m] = tm[7]
        else:
            x = _k.box_corner(cs[0], cs[1], cs[2], Rs, half[s, 0], half[s, 1], half[s, 2],
                              corner[k])
            t = _k.plane_point(q0, q1, q2, n0, n1, n2, x[0], x[1], x[2])
        if skinned:  # the contact layer's skins (ContactModel._finish's arithmetic)
            g = skin[p] + skin[s]
            h = 0.5 * (skin[p] - skin[s])
            t = (t[0] + h * t[3], t[1] + h * t[4], t[2] + h * t[5], t[3], t[4], t[5], t[6] + g)
        if not t[6] > -margin:
            continue
        kin = _k.contact_kinematics(body[p], body[s], t[0], t[1], t[2], t[3], t[4], t[5],
                                    pos_e, vel_e, om_e)
        for a in range(3):
            point[m, a] = t[a]
            normal[m, a] = t[3 + a]
            ra[m, a] = kin[a]
            rb[m, a] = kin[3 + a]
            vt[m, a] = kin[7 + a]
        delta[m] = t[6]
        ddelta[m] = kin[6]
        m_eff[m] = _k.effective_mass(body[p], body[s], kin[0], kin[1], kin[2], kin[3], kin[4],
                                     kin[5], t[3], t[4], t[5], inv_m, inv_i)
        idx[m] = k
        m += 1
    return m
