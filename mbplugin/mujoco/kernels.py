"""Compiled per-step kernels of the MuJoCo backend: the rows' state read from ``mjData``, the
free rows' point accelerations, the contact forces into ``xfrc_applied``, each contact's
friction coefficient, the free rows' end poses and translations.

Each kernel is one pass over the rows or contacts in place of a chain of NumPy calls of
:mod:`mbplugin.mujoco.host` / :mod:`mbplugin.mujoco.free` (a host step of 10 spheres made ~120
NumPy and binding calls of ~0.5-1 us each on the MuJoCo side, against MuJoCo's own ~13 us
step). They read and write MuJoCo's arrays through the bindings' NumPy views (``d.xipos``,
``d.qpos``, ... alias ``mjData``'s memory), fetched afresh at each call.

The results are the same bits as the NumPy expressions they replace: every sum is taken in
NumPy's order. Products and sums are written as in :func:`mbplugin.hosts.arrays.cross_rows`
and :func:`mbplugin.contact.rotation.quat_multiply`; ``R v`` as ``np.einsum("nij,nj->ni")``
sums it, (R_i0 v_0 + R_i2 v_2) + R_i1 v_1, and ``R^T v`` as ``np.einsum("nji,nj->ni")``,
(R_0i v_0 + R_1i v_1) + R_2i v_2 (NumPy 2.4's einsum inner loops; checked on random stacks of
every size 1-40 and four alignments); a norm as ``np.linalg.norm`` of four entries,
sqrt(((q0^2 + q1^2) + q2^2) + q3^2). No fast-math (no fused multiply-adds). Pinned by
``benchmarks/host_pins.py --check`` (the MuJoCo series bit for bit).

Index conventions as the callers': rows index 0..N-1, a negative row index wraps as NumPy's
(the world row -1 of an (N + 1)-row array).
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin._jit import njit
from mbplugin.contact.kernels import FEATURE_BITS, quat_matrix, quat_product


@njit
def row_state(xipos, xquat, cvel, subtree_com, body, root, iquat, iquat_unit):
    """The rows' centre-of-mass poses and velocities (pos (N, 3) m, quat (N, 4), vel (N, 3)
    m/s, omega (N, 3) rad/s, world frame) of the MuJoCo bodies ``body`` (N,): ``xipos``; the
    inertial frame's orientation ``xquat`` (x) ``iquat`` (the body's own when ``iquat_unit``);
    ``cvel`` ([omega, v] at the subtree centre of mass ``subtree_com`` of the root body
    ``root``) moved to the centre of mass, v + omega x (xipos - subtree_com)."""
    n = body.shape[0]
    pos = np.empty((n, 3))
    quat = np.empty((n, 4))
    vel = np.empty((n, 3))
    om = np.empty((n, 3))
    row_state_into(xipos, xquat, cvel, subtree_com, body, root, iquat, iquat_unit, pos, quat,
                   vel, om)
    return pos, quat, vel, om


@njit
def row_state_into(xipos, xquat, cvel, subtree_com, body, root, iquat, iquat_unit, pos, quat,
                   vel, om):
    """:func:`row_state` into the arrays ``pos``, ``quat``, ``vel``, ``om`` (N, 3 / 4)."""
    for i in range(body.shape[0]):
        b = body[i]
        r = root[i]
        x0, x1, x2 = xipos[b, 0], xipos[b, 1], xipos[b, 2]
        pos[i, 0], pos[i, 1], pos[i, 2] = x0, x1, x2
        pw, px, py, pz = xquat[b, 0], xquat[b, 1], xquat[b, 2], xquat[b, 3]
        if iquat_unit:
            quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3] = pw, px, py, pz
        else:
            quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3] = quat_product(
                pw, px, py, pz, iquat[i, 0], iquat[i, 1], iquat[i, 2], iquat[i, 3])
        w0, w1, w2 = cvel[b, 0], cvel[b, 1], cvel[b, 2]
        om[i, 0], om[i, 1], om[i, 2] = w0, w1, w2
        r0 = x0 - subtree_com[r, 0]
        r1 = x1 - subtree_com[r, 1]
        r2 = x2 - subtree_com[r, 2]
        vel[i, 0] = cvel[b, 3] + (w1 * r2 - w2 * r1)
        vel[i, 1] = cvel[b, 4] + (w2 * r0 - w0 * r2)
        vel[i, 2] = cvel[b, 5] + (w0 * r1 - w1 * r0)


@njit
def free_point_acceleration(qacc_smooth, xmat, xpos, fbody, frow, vadr, nrows, a, b, point):
    """Relative acceleration (K, 3) (m/s^2) of the contact points ``point`` (K, 3) of rows
    ``a``, ``b`` (K,) from MuJoCo's smooth acceleration ``qacc_smooth`` (the caller has run
    ``mj_fwdActuation`` + ``mj_fwdAcceleration``): the free rows ``frow`` (F,) (MuJoCo bodies
    ``fbody``, free joints' first dofs ``vadr``) have their frame origin's acceleration (the
    joint's linear dofs) and world angular acceleration (``xmat`` times the joint's local
    angular dofs) about the origin ``xpos``; every other row (of ``nrows``, and the world row
    -1) none. acc_b + alpha_b x (P - o_b) - acc_a - alpha_a x (P - o_a)."""
    out = np.empty((a.shape[0], 3))
    free_point_acceleration_into(qacc_smooth, xmat, xpos, fbody, frow, vadr, nrows, a, b,
                                 point, np.empty((3, nrows + 1, 3)), out)
    return out


@njit
def free_point_acceleration_into(qacc_smooth, xmat, xpos, fbody, frow, vadr, nrows, a, b,
                                 point, work, out):
    """:func:`free_point_acceleration` into ``out`` (K, 3), ``work`` (3, >= nrows + 1, 3)
    its rows' accelerations, angular accelerations and origins (zeroed here)."""
    acc, alpha, origin = work[0], work[1], work[2]
    for r in range(nrows + 1):
        for i in range(3):
            acc[r, i] = 0.0
            alpha[r, i] = 0.0
            origin[r, i] = 0.0
    for j in range(frow.shape[0]):
        r = frow[j]
        v = vadr[j]
        bd = fbody[j]
        acc[r, 0], acc[r, 1], acc[r, 2] = qacc_smooth[v], qacc_smooth[v + 1], qacc_smooth[v + 2]
        e0, e1, e2 = qacc_smooth[v + 3], qacc_smooth[v + 4], qacc_smooth[v + 5]
        for i in range(3):  # xmat row-major: R_ij = xmat[3 i + j]; einsum's order
            alpha[r, i] = ((xmat[bd, 3 * i] * e0 + xmat[bd, 3 * i + 2] * e2)
                           + xmat[bd, 3 * i + 1] * e1)
        origin[r, 0], origin[r, 1], origin[r, 2] = xpos[bd, 0], xpos[bd, 1], xpos[bd, 2]
    n1 = nrows + 1
    for c in range(a.shape[0]):
        ia = a[c] + n1 if a[c] < 0 else a[c]
        ib = b[c] + n1 if b[c] < 0 else b[c]
        pa0 = point[c, 0] - origin[ia, 0]
        pa1 = point[c, 1] - origin[ia, 1]
        pa2 = point[c, 2] - origin[ia, 2]
        pb0 = point[c, 0] - origin[ib, 0]
        pb1 = point[c, 1] - origin[ib, 1]
        pb2 = point[c, 2] - origin[ib, 2]
        la0, la1, la2 = alpha[ia, 0], alpha[ia, 1], alpha[ia, 2]
        lb0, lb1, lb2 = alpha[ib, 0], alpha[ib, 1], alpha[ib, 2]
        out[c, 0] = acc[ib, 0] + (lb1 * pb2 - lb2 * pb1) - acc[ia, 0] - (la1 * pa2 - la2 * pa1)
        out[c, 1] = acc[ib, 1] + (lb2 * pb0 - lb0 * pb2) - acc[ia, 1] - (la2 * pa0 - la0 * pa2)
        out[c, 2] = acc[ib, 2] + (lb0 * pb1 - lb1 * pb0) - acc[ia, 2] - (la0 * pa1 - la1 * pa0)


@njit
def add_forces(xf, xipos, body, static, a, b, point, force, forced):
    """Add the contacts' forces ``force`` (K, 3) (N) on side b and minus them on side a, at
    ``point`` (K, 3), into ``xf`` (``xfrc_applied``, nbody x 6: force and torque about the
    body's centre of mass ``xipos``, world frame) of the rows' MuJoCo bodies ``body`` (static
    rows skipped): all side-b contributions first, then side a's, each in contact order (as
    ``np.add.at``). ``forced`` (N,) is set True for both rows of a contact with a non-zero
    force."""
    k = a.shape[0]
    n = body.shape[0]
    for side in range(2):
        rows = b if side == 0 else a
        sgn = 1.0 if side == 0 else -1.0
        for c in range(k):
            r = rows[c] + n if rows[c] < 0 else rows[c]
            if static[r]:
                continue
            bd = body[r]
            f0, f1, f2 = sgn * force[c, 0], sgn * force[c, 1], sgn * force[c, 2]
            r0 = point[c, 0] - xipos[bd, 0]
            r1 = point[c, 1] - xipos[bd, 1]
            r2 = point[c, 2] - xipos[bd, 2]
            xf[bd, 0] += f0
            xf[bd, 1] += f1
            xf[bd, 2] += f2
            xf[bd, 3] += r1 * f2 - r2 * f1
            xf[bd, 4] += r2 * f0 - r0 * f2
            xf[bd, 5] += r0 * f1 - r1 * f0
    for c in range(k):
        if force[c, 0] != 0 or force[c, 1] != 0 or force[c, 2] != 0:
            forced[a[c] + n if a[c] < 0 else a[c]] = True
            forced[b[c] + n if b[c] < 0 else b[c]] = True


@njit
def pair_friction(keys, n_shapes, geoms, geom_friction, geom_priority, geom_condim):
    """Each contact's friction coefficient (K,) from its two geoms' sliding friction
    ``geom_friction[:, 0]``: the geom of higher ``geom_priority``'s, the larger at equal
    priority; 0 where the pair's ``geom_condim`` (the higher priority's, the larger at equal
    priority) is 1, MuJoCo's frictionless contact (MuJoCo's ``mj_contactParam``; the keys
    decoded as :func:`mbplugin.contact.kernels.decode_keys`, ``geoms`` the shapes' geom
    ids)."""
    k = keys.shape[0]
    out = np.empty(k)
    for c in range(k):
        pair = keys[c] >> FEATURE_BITS
        ga = geoms[pair // n_shapes]
        gb = geoms[pair % n_shapes]
        fa, fb = geom_friction[ga, 0], geom_friction[gb, 0]
        pa, pb = geom_priority[ga], geom_priority[gb]
        ca, cb = geom_condim[ga], geom_condim[gb]
        if pa > pb:
            out[c] = fa if ca != 1 else 0.0
        elif pb > pa:
            out[c] = fb if cb != 1 else 0.0
        else:
            out[c] = max(fa, fb) if max(ca, cb) != 1 else 0.0
    return out


@njit
def contact_ids(keys, n_shapes, geoms, rows, sides):
    """MuJoCo's geoms (K, 2) and bodies (K, 2) of sides a and b of each contact (keys decoded
    as :func:`mbplugin.contact.kernels.decode_keys`; ``sides`` (K, 2) the contacts' rows,
    ``rows`` the rows' bodies)."""
    k = keys.shape[0]
    g = np.empty((k, 2), dtype=np.int64)
    bd = np.empty((k, 2), dtype=np.int64)
    nr = rows.shape[0]
    for c in range(k):
        pair = keys[c] >> FEATURE_BITS
        g[c, 0] = geoms[pair // n_shapes]
        g[c, 1] = geoms[pair % n_shapes]
        for j in range(2):
            s = sides[c, j]
            bd[c, j] = rows[s + nr if s < 0 else s]
    return g, bd


@njit
def free_end_poses(qpos, q3, q4, free, ipos, iquat, ipos_zero, iquat_unit, pos, quat):
    """The free rows' centre-of-mass poses from ``qpos`` (their free joints: the body frame's
    origin at ``q3`` and orientation at ``q4``, normalised) written into ``pos`` (N, 3) and
    ``quat`` (N, 4) at rows ``free``: origin + R(q) ipos (origin alone when ``ipos_zero``),
    q (x) iquat (q alone when ``iquat_unit``). Returns False (nothing written past that row)
    at an orientation that is zero or not finite."""
    for j in range(free.shape[0]):
        r = free[j]
        w, x, y, z = qpos[q4[j, 0]], qpos[q4[j, 1]], qpos[q4[j, 2]], qpos[q4[j, 3]]
        norm = math.sqrt(((w * w + x * x) + y * y) + z * z)
        if norm == 0.0 or not math.isfinite(norm):
            return False
        w, x, y, z = w / norm, x / norm, y / norm, z / norm
        o0, o1, o2 = qpos[q3[j, 0]], qpos[q3[j, 1]], qpos[q3[j, 2]]
        if ipos_zero:
            pos[r, 0], pos[r, 1], pos[r, 2] = o0, o1, o2
        else:
            m = quat_matrix(w, x, y, z)
            v0, v1, v2 = ipos[r, 0], ipos[r, 1], ipos[r, 2]
            pos[r, 0] = o0 + ((m[0] * v0 + m[2] * v2) + m[1] * v1)
            pos[r, 1] = o1 + ((m[3] * v0 + m[5] * v2) + m[4] * v1)
            pos[r, 2] = o2 + ((m[6] * v0 + m[8] * v2) + m[7] * v1)
        if iquat_unit:
            quat[r, 0], quat[r, 1], quat[r, 2], quat[r, 3] = w, x, y, z
        else:
            quat[r, 0], quat[r, 1], quat[r, 2], quat[r, 3] = quat_product(
                w, x, y, z, iquat[r, 0], iquat[r, 1], iquat[r, 2], iquat[r, 3])
    return True


@njit
def shift_free(qpos, q3, free, dx, dth):
    """Translate the free rows ``free`` moved by ``dx`` (N, 3) (m) and not turned by ``dth``
    (N, 3): their free joints' origins (``qpos`` at ``q3``) += dx. Returns the indices into
    ``free`` of the rows translated and a flag: some row has a turn (left to the caller)."""
    f = free.shape[0]
    only = np.empty(f, dtype=np.int64)
    n = 0
    turned = False
    for j in range(f):
        r = free[j]
        if dth[r, 0] != 0 or dth[r, 1] != 0 or dth[r, 2] != 0:
            turned = True
        elif dx[r, 0] != 0 or dx[r, 1] != 0 or dx[r, 2] != 0:
            only[n] = j
            n += 1
    for i in range(n):
        j = only[i]
        r = free[j]
        for c in range(3):
            qpos[q3[j, c]] += dx[r, c]
    return only[:n], turned
