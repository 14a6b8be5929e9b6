"""A robot's implicit step after the host step in one compiled call (the lean path of
:meth:`mbplugin.hosts.ContactIntegrator.after` for the common case).

After the host step the implicit step reads the host's end state, solves the step's impulse
from there, puts the host onto the solved state (the response) and verifies in rounds: re-read,
solve again, respond again (:meth:`ContactIntegrator.after
<mbplugin.hosts.ContactIntegrator.after>`). For one articulated body with every contact,
whose resets are deferred (:class:`~mbplugin.bullet.articulated.BulletArticulated`: its joint
tree modelled, every managed pair the contact model's), every other row static and
plane-sphere contacts (a robot's feet on the ground), :func:`verify_rounds` does all of it in
one call: the reads are the tree's forward kinematics
(:func:`~mbplugin.bullet.kinematics.tree_link_states`; of the joint and base state read from
PyBullet after its step, then of the state the last round kept, what
``BulletArticulated.predict`` computes) and
:func:`~mbplugin.hosts.detection.host_plane_spheres`, the solve is the compiled implicit
step's (:func:`~mbplugin.pipeline.implicit_kernel.solve_step`'s kernels) and the response is
:func:`~mbplugin.bullet.fast_step.respond_body`. No formula is written here: the general
path's arithmetic in the same order, W's products by loops instead of BLAS (equal to the last
bits). A first solve that meets an onset hands back to :func:`lean_rounds`, which books it as
:meth:`ImplicitStep.solve <mbplugin.pipeline.implicit.ImplicitStep.solve>` does and solves
again from the same read; Newton's fallback and a later round's onset go to the general path.
Before the host step, :func:`lean_block` builds the same body's part of W in one call.

Units: SI (m, m/s, rad, N s).
"""

from __future__ import annotations

import time
from itertools import chain
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.bullet.articulated import held
from mbplugin.bullet.fast_step import base_rotation, body_delassus, respond_body
from mbplugin.bullet.kinematics import tree_link_states
from mbplugin.contact import BodyState
from mbplugin.hosts.detection import host_plane_spheres
from mbplugin.hosts.integrator import (
    VERIFY_DU,
    VERIFY_TOL,
    _info_arrays,
    _verify_off,
    lean_result,
)
from mbplugin.hosts.protocol import ArticulatedBlock
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.implicit_kernel import overlap_rates
from mbplugin.pipeline.store_kernel import quiet_rows

#: :func:`verify_rounds`' outcomes: the rounds ended (as the general loop ends them), the
#: general path takes the solve of the round whose read is handed back, or the step's first
#: solve (nothing changed)
DONE, HANDOVER, FIRST = 0, 1, 2
#: a fixed base's pose arguments of :func:`verify_rounds` when the base floats (unused, read-only)
_FIXED_P, _FIXED_Q = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
_FIXED_P.flags.writeable = _FIXED_Q.flags.writeable = False


@njit
def verify_rounds(first, rounds, dt, margin, tol, du, gf, gc, fn0, s0, rtol, P, d1, u1, loaded, s1,
                  dP, spin, resp, cont, sgn, floating, r_base, qh, vh, bh, fixed_p, fixed_q,
                  moving, tq, tqd, parent, jtype, axis, pf_pos, pf_quat, inert_pos, inert_rot_t,
                  com_quat, com_rot, com_pos, pivot, axis_w, lin, ang, links, rows, pos0,
                  quat0, vel0, om0, frame, sa, sb, sbody, lpos, lrot, plane_n, plane_p, radius,
                  u0, counters, d_h, u_h, found, pos, quat, vel, om, out):
    """Up to ``rounds`` verification rounds of the implicit step (module docstring), from the
    last solve (``P``, ``d1``, ``u1``, ``loaded``, ``s1`` (K, ...), updated in place), its
    correction ``dP`` (K, 3) and the spin the response saw (rad/s):

    - stop when the correction's first-order error is small, max |W dP| (dt spin + ``tol``)
      <= ``du`` (W in ``gf``);
    - the read: the rows ``pos0``, ``quat0``, ``vel0``, ``om0`` of the host's end state with
      the body's links (``links``, rows ``rows``) from its tree's forward kinematics at the
      kept joint state ``qh``, ``vh`` (moving joints ``moving`` of the tree's ``tq``, ``tqd``)
      and base ``bh`` (13,: position, [x, y, z, w], velocity, angular velocity; a fixed base:
      ``fixed_p``, ``fixed_q`` [w, x, y, z] at rest) into ``pos``, ``quat``, ``vel``, ``om``
      (and ``frame``); the contacts' overlaps ``d_h`` and velocities ``u_h`` there
      (plane-sphere pairs ``sa``, ``sb``); stop when none is off the solved one;
    - the solve from there (:func:`mbplugin.pipeline.implicit_kernel.solve_step`'s kernels;
      ``counters`` += iterations, force evaluations); where it needs the general path (an
      onset, Newton's fallback) return HANDOVER with the round's read in place;
    - the response: dq = ``resp`` (n_dof, 3E) times the sides' impulses (``cont``, ``sgn``),
      the kept state moved by :func:`respond_body` (``r_base`` the base's rotation).

    With ``first`` (1: the host's end state read into ``d_h``, ``u_h``, ``found``; 2: read
    here, :func:`_read` of the body's joint and base state read from the host) the step's
    first solve and response come before the rounds, from the impulse ``P`` (P_lin); where
    that solve needs the general path, FIRST with nothing changed but the read.

    ``out`` (3,): the rounds begun, the last spin, whether the body's state was moved (1.0).
    Returns DONE, HANDOVER or FIRST."""
    k = d1.shape[0]
    m = 3 * k
    w0 = 0  # W leads gf (mbplugin.pipeline.layout)
    ne = cont.shape[0]
    nd = resp.shape[0]
    x = np.empty(m)
    wx = np.empty(m)
    f = np.empty(3 * ne)
    dq = np.empty(nd)
    q1, v1, b1 = np.empty(qh.shape[0]), np.empty(qh.shape[0]), np.empty(13)
    base_p, base_q, base_v, base_w = np.empty(3), np.empty(4), np.zeros(3), np.zeros(3)
    Pn, ue, ed = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    dn, un = np.empty(k), np.empty((k, 3))
    F, S1, FN = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    lim = np.zeros(k)
    cnt = np.zeros(3, dtype=np.int64)
    for r in range(0 if first else 1, rounds + 1):
        out[0] = r - 1 if r > 0 else 0
        out[1] = spin
        if r > 0 or first == 2:
            status = _check_and_read(
                r > 0, dt, margin, tol, du, gf, k, m, w0, x, wx, dP, spin, d1, u1, floating, qh, vh,
                bh, fixed_p, fixed_q, moving, tq, tqd, parent, jtype, axis, pf_pos, pf_quat,
                inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot, axis_w, lin, ang,
                links, rows, pos0, quat0, vel0, om0, frame, sa, sb, sbody, lpos, lrot, plane_n,
                plane_p, radius, u0, d_h, u_h, found, pos, quat, vel, om, base_p, base_q, base_v,
                base_w)
            if status == DONE:
                return DONE
            out[0] = r if r > 0 else 0
        # the solve (solve_step's kernels), from the last impulse
        cnt[:] = 0
        if not (ik._fast_start(P, u_h, d_h, dt, k, gf, gc, Pn, ue, ed)
                and ik.newton(Pn, ue, d_h, ed, dt, k, gf, gc, fn0, s0, lim, False, rtol, cnt)):
            return HANDOVER if r > 0 else FIRST
        ik.end_state(Pn, ue, d_h, ed, dt, k, gf, gc, dn, un)
        ik._host_end(un, d_h, ed, dt, k, gf, gc, fn0, s0, dn, F, S1, FN, loaded)
        for a in range(3):
            counters[a] += cnt[a]
        any_dp = False
        for i in range(k):
            d1[i] = dn[i]
            for a in range(3):
                dP[i, a] = Pn[i, a] - P[i, a]
                any_dp = any_dp or dP[i, a] != 0.0
                P[i, a] = Pn[i, a]
                u1[i, a] = un[i, a]
                s1[i, a] = S1[i, a]
        # the response (HostStep._respond, BulletArticulated.respond)
        spin = 0.0
        if not any_dp:
            continue
        any_f = False
        for e in range(ne):
            for a in range(3):
                f[3 * e + a] = sgn[e] * dP[cont[e], a]
                any_f = any_f or f[3 * e + a] != 0.0
        if not any_f:
            continue
        for i in range(nd):
            acc = 0.0
            for j in range(3 * ne):
                acc += resp[i, j] * f[j]
            dq[i] = acc
        spin = respond_body(qh, vh, dq, dt, floating, bh, r_base, q1, v1, b1)
        out[2] = 1.0
        qh[:] = q1
        vh[:] = v1
        if floating:
            bh[:] = b1
    out[0] = rounds
    out[1] = spin
    return DONE


@njit
def rounds_end(skeys, bkeys, blaw, fkid, fmode, coef, ends, where, d_rows, v_rows, normal,
               ddelta, fn, slip, hit,
               first, rounds, dt, margin, tol, du, gf, gc, fn0, s0, rtol, P, d1, u1, loaded, s1,
               dP, spin, resp, cont, sgn, floating, r_base, qh, vh, bh, fixed_p, fixed_q,
               moving, tq, tqd, parent, jtype, axis, pf_pos, pf_quat, inert_pos, inert_rot_t,
               com_quat, com_rot, com_pos, pivot, axis_w, lin, ang, links, rows, pos0, quat0,
               vel0, om0, frame, sa, sb, sbody, lpos, lrot, plane_n, plane_p, radius, u0,
               counters, d_h, u_h, found, pos, quat, vel, om, out):
    """:func:`verify_rounds` (its arguments from ``first`` on) and, where the rounds ended
    there (DONE), the step's end in the same call: each contact's end rate ``ddelta`` (K,)
    m/s = -n . u1 (``normal`` (K, 3); :func:`~mbplugin.pipeline.implicit_kernel.overlap_rates`),
    the store's commit tests of the end
    state (:func:`~mbplugin.pipeline.store_kernel.quiet_rows` of the store's keys ``skeys``,
    the batch's ``bkeys`` and law indices ``blaw``, the law's kernel id ``fkid`` and mode
    ``fmode``, the store's ``coef``, the work arrays ``ends``, ``where``, ``d_rows``,
    ``v_rows``; its outcome into ``hit[0]``, -2 where not run) and the info's mean normal
    force ``fn`` (K,) N and slip ``slip`` (K,) m/s
    (:func:`~mbplugin.hosts.integrator._info_arrays` of P, u1). Returns the rounds'
    outcome."""
    status = verify_rounds(first, rounds, dt, margin, tol, du, gf, gc, fn0, s0, rtol, P, d1, u1,
                           loaded, s1, dP, spin, resp, cont, sgn, floating, r_base, qh, vh, bh,
                           fixed_p, fixed_q, moving, tq, tqd, parent, jtype, axis, pf_pos,
                           pf_quat, inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot,
                           axis_w, lin, ang, links, rows, pos0, quat0, vel0, om0, frame, sa, sb,
                           sbody, lpos, lrot, plane_n, plane_p, radius, u0, counters, d_h, u_h,
                           found, pos, quat, vel, om, out)
    hit[0] = -2
    if status != DONE:
        return status
    overlap_rates(u1, normal, ddelta)
    hit[0] = quiet_rows(skeys, bkeys, blaw, fkid, fmode, d1, ddelta, coef, ends, where, d_rows,
                        v_rows)
    _info_arrays(P, u1, normal, dt, fn, slip)
    return status


def _book_onsets(space: Any, P_lin: np.ndarray, d_h: np.ndarray, u_h: np.ndarray,
                 dt: float) -> bool:
    """The onsets of the first solve from the host's end state (``d_h`` (K,) m, ``u_h``
    (K, 3) m/s, the impulse ``P_lin`` (K, 3)): booked as :meth:`ImplicitStep.solve
    <mbplugin.pipeline.implicit.ImplicitStep.solve>` books them (the store's onset rules);
    whether any was."""
    k = len(d_h)
    wp = (space.W @ P_lin.ravel()).reshape(k, 3)
    ue, _, d_on = ik.host_start(u_h, wp, d_h, dt, space.gc)
    active = space.gc["active"].copy()
    space._onsets(d_on, ue)
    return bool(np.any(space.gc["active"] & ~active))


@njit
def _check_and_read(check, dt, margin, tol, du, gf, k, m, w0, x, wx, dP, spin, d1, u1, floating,
                    qh, vh, bh, fixed_p, fixed_q, moving, tq, tqd, parent, jtype, axis, pf_pos,
                    pf_quat, inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot, axis_w,
                    lin, ang, links, rows, pos0, quat0, vel0, om0, frame, sa, sb, sbody, lpos,
                    lrot, plane_n, plane_p, radius, u0, d_h, u_h, found, pos, quat, vel, om,
                    base_p, base_q, base_v, base_w):
    """A verification round's stop test and read (:func:`verify_rounds`): DONE where the
    rounds end, else HANDOVER (go on) with the read in ``d_h``, ``u_h``, ``found`` and the
    rows' state in ``pos``, ``quat``, ``vel``, ``om``; without ``check`` the read alone (the
    host's end state from its joint and base state)."""
    if not check:
        _read(floating, qh, vh, bh, fixed_p, fixed_q, moving, tq, tqd, parent, jtype, axis,
              pf_pos, pf_quat, inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot,
              axis_w, lin, ang, links, rows, pos0, quat0, vel0, om0, frame, sa, sb, sbody,
              lpos, lrot, plane_n, plane_p, radius, margin, u0, d_h, u_h, found, pos, quat,
              vel, om, base_p, base_q, base_v, base_w)
        return HANDOVER
    # the correction's first-order error
    for i in range(k):
        for a in range(3):
            x[3 * i + a] = dP[i, a]
    ik._w_times(gf, w0, m, x, wx)
    big = 0.0
    for i in range(m):
        if abs(wx[i]) > big:
            big = abs(wx[i])
    if big * (dt * spin + tol) <= du:
        return DONE
    _read(floating, qh, vh, bh, fixed_p, fixed_q, moving, tq, tqd, parent, jtype, axis, pf_pos,
          pf_quat, inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot, axis_w, lin, ang,
          links, rows, pos0, quat0, vel0, om0, frame, sa, sb, sbody, lpos, lrot, plane_n,
          plane_p, radius, margin, u0, d_h, u_h, found, pos, quat, vel, om, base_p, base_q,
          base_v, base_w)
    if not _verify_off(d_h, d1, u_h, u1, found, tol, du):
        return DONE
    return HANDOVER


@njit
def _read(floating, qh, vh, bh, fixed_p, fixed_q, moving, tq, tqd, parent, jtype, axis, pf_pos,
          pf_quat, inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot, axis_w, lin, ang,
          links, rows, pos0, quat0, vel0, om0, frame, sa, sb, sbody, lpos, lrot, plane_n,
          plane_p, radius, margin, u0, d_h, u_h, found, pos, quat, vel, om, base_p, base_q,
          base_v, base_w):
    """The host's state with the body at the joint state ``qh``, ``vh`` and base ``bh`` (the
    static rows as read: ``pos0`` ...), its links by the tree's forward kinematics, and the
    contacts there (:func:`verify_rounds`)."""
    # the static rows as read, the body's links by its forward kinematics
    pos[:] = pos0
    quat[:] = quat0
    vel[:] = vel0
    om[:] = om0
    for j in range(moving.shape[0]):
        tq[moving[j]] = qh[j]
        tqd[moving[j]] = vh[j]
    if floating:
        for a in range(3):
            base_p[a], base_v[a], base_w[a] = bh[a], bh[7 + a], bh[10 + a]
        base_q[0], base_q[1], base_q[2], base_q[3] = bh[6], bh[3], bh[4], bh[5]
    else:
        for a in range(3):
            base_p[a] = fixed_p[a]
        for a in range(4):
            base_q[a] = fixed_q[a]
    tree_link_states(tq, tqd, base_p, base_q, base_v, base_w, parent, jtype, axis, pf_pos,
                     pf_quat, inert_pos, inert_rot_t, com_quat, com_rot, com_pos, pivot,
                     axis_w, lin, ang, links, rows, pos, quat, vel, om, frame)
    host_plane_spheres(sa, sb, sbody, lpos, lrot, plane_n, plane_p, radius, pos, quat, vel,
                       om, margin, u0, d_h, u_h, found)


def lean_rounds(host: Any, blk: Any, space: Any, res: Any, dP: np.ndarray | None,
                spin: float, left: int, stats: Any, pairs: tuple[np.ndarray, np.ndarray],
                shapes: Any, margin: float, u0: np.ndarray, dt: float,
                start: tuple[Any, ...] | None = None,
                end: tuple[Any, ...] | None = None) -> tuple[Any, int, Any] | None:
    """The implicit step's solves and responses of :meth:`ContactIntegrator.after
    <mbplugin.hosts.ContactIntegrator.after>` by :func:`verify_rounds` where they qualify
    (module docstring): ``host`` the :class:`~mbplugin.bullet.host.BulletHost`, ``blk`` the
    one articulated block of W, ``space`` the pending
    :class:`~mbplugin.pipeline.implicit.ImplicitStep`, ``pairs`` the contacts' (plane,
    sphere) shapes of ``shapes`` (the contact model's arrays), ``margin`` (m) and ``u0``
    (K, 3) the reads', ``left`` the verification rounds allowed.

    ``start`` None: the rounds after the first solve ``res`` (updated in place), its
    correction ``dP`` (K, 3) and the spin its response saw (rad/s), ``stats`` the step's
    counters. ``start`` = (P_lin,): the step's read of the host's end state (the body's joint
    and base states read from PyBullet, its links by the tree's forward kinematics, the
    static rows as the step's first read), first solve and response too (``res``, ``dP``,
    ``spin``, ``stats`` None). Returns None where they do not qualify or the first solve
    needs the general path (nothing changed in PyBullet or the backend's state), else (the
    solve's result, the rounds the general loop still takes, the read of the first of them
    or None: (res, 0, None) when the rounds ended here). ``end`` (with ``start``): the
    arguments of :func:`rounds_end` before the rounds' (the store's commit test and the
    info's arrays, filled where the rounds ended here: :func:`mbplugin.bullet.fused.after_lean`
    books the step's end from them)."""
    art, read = host.art, host.read
    body, r_base, joints = blk.tag
    tree = art._trees.get(body)
    groups = read._link_groups
    fresh = start is not None
    if (tree is None or not tree.supported or not (art.defer_resets and art.plain)
            or any(art._sph.get(body, ()))
            or (body in art.pending) == fresh or len(groups) != 1 or groups[0][0] != body
            or not read._static_bases or read._last is None or not space.compiled):
        return None
    resp = blk.response
    floating = resp.shape[0] == len(joints) + 6
    k = len(u0)
    links, rows = read._link_arr[body], groups[0][2]
    pos0, quat0, vel0, om0 = read._last
    n = len(pos0)
    sc = _scratch(host, k, n)
    if fresh:  # the host's end state: its joints and base read, its links computed
        if floating and body in art._base_row:
            return None
        P = np.array(start[0], dtype=float)
        d1, u1, loaded = np.empty(k), np.empty((k, 3)), np.empty(k, dtype=np.bool_)
        dP, spin = np.zeros((k, 3)), 0.0
        c = art.client
        pb, cid = c.p, c.id
        st = (tuple(zip(*pb.getJointStates(body, joints, physicsClientId=cid), strict=True))
              if joints else ((), ()))
        qh, vh = np.array(st[0], dtype=float), np.array(st[1], dtype=float)
        host._end_joints = (body, tree, qh, st[3] if joints else ())  # (qh: the kept state)
        if floating:  # position, [x, y, z, w], velocity, angular velocity: one flat read
            bh = np.fromiter(chain.from_iterable(chain(
                pb.getBasePositionAndOrientation(body, physicsClientId=cid),
                pb.getBaseVelocity(body, physicsClientId=cid))), dtype=float, count=13)
    else:
        P, d1, u1, loaded = res.impulse, res.delta, res.u, res.loaded
        if not all(type(a) is np.ndarray and a.flags.c_contiguous for a in (P, d1, u1, loaded)):
            return None
        qs, vs = art._held.get(body, ((), ()))
        qh, vh = np.array(qs, dtype=float), np.array(vs, dtype=float)
        dP = np.array(dP, dtype=float)
        if floating:
            (bp, bo), (bv, bw) = art._pose[body], art._held_v[body]
            bh = np.array([*bp, *bo, *bv, *bw], dtype=float)
    fixed_p, fixed_q = _FIXED_P, _FIXED_Q
    if not floating:
        bh = np.zeros(13)
        p, (x, y, z, w) = art.client("getBasePositionAndOrientation", body)
        fixed_p, fixed_q = np.array(p, dtype=float), np.array([w, x, y, z])
    d_h, u_h, found, pos, quat, vel, om, counters, out = sc
    counters[:] = 0
    out[:] = 0.0
    s1 = np.array(space.s_end if not fresh else space.s0, dtype=float)
    c = np.ascontiguousarray
    wall = time.perf_counter()
    mode = 2 if fresh else 0
    fn0, s0 = c(space.fn0, dtype=float), c(space.s0, dtype=float)
    resp, cont = c(resp, dtype=float), np.asarray(blk.contact, dtype=np.int64)
    sgn, r_base, u0 = np.asarray(blk.sign, dtype=float), c(r_base, dtype=float), c(u0, dtype=float)
    tree_args, shape_args = _round_constants(tree, links, rows, read.frame_pos, pairs, shapes)
    for attempt in range(2):
        args = (mode, int(left), float(dt), float(margin), VERIFY_TOL, VERIFY_DU, space.gf,
                space.gc, fn0, s0, space.rtol, P, d1, u1, loaded, s1, dP, float(spin), resp,
                cont, sgn, floating, r_base, qh, vh, bh, fixed_p, fixed_q, *tree_args, pos0,
                quat0, vel0, om0, *shape_args, u0, counters, d_h, u_h, found, pos, quat, vel,
                om, out)
        status = verify_rounds(*args) if end is None else rounds_end(*end, *args)
        if status != FIRST:
            break
        if attempt or not _book_onsets(space, P, d_h, u_h, dt):
            return None  # Newton's fallback, or an onset the store does not book: general
        mode = 1  # the onsets booked: the solve again from the same read
        end = None  # (the store's rows changed: the end's tests were of the old ones)
    # the kept state back (the general path's lists)
    if out[2]:
        if joints:
            art._held[body] = (qh.tolist(), vh.tolist())
        if floating:
            b = bh.tolist()
            art._pose[body] = (b[0:3], b[3:7])
            art._held_v[body] = (b[7:10], b[10:13])
        art.pending[body] = (joints, floating)
    host.reads += int(out[0]) + fresh
    res = lean_result(space, None if fresh else res, stats, P, d1, u1, loaded, s1, counters,
                      dt, wall)
    if status == DONE:
        return res, 0, None
    # the read handed over (copies: the scratch arrays are the next call's)
    bodies = BodyState(pos.copy(), quat.copy(), vel.copy(), om.copy(), read._mass_read,
                       read.inv_inertia, read._fixed_read)
    return res, left - int(out[0]) + 1, (bodies, d_h.copy(), u_h.copy(), found.copy())


#: :func:`_round_constants`' last answer: (its inputs, (tree arguments, shape arguments))
_ROUND_CONST: list[Any] = [None, None]


def _round_constants(tree: Any, links: np.ndarray, rows: np.ndarray, frame_pos: np.ndarray,
                     pairs: tuple[np.ndarray, np.ndarray],
                     shapes: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """:func:`verify_rounds`' arguments that stay while the joint tree ``tree``, the body's
    ``links`` and ``rows``, the state read's URDF frame origins ``frame_pos``, the contacts'
    (plane, sphere) ``pairs`` and the contact model's arrays ``shapes`` are the same objects
    (a robot standing or walking on the same feet): the tree's arrays (moving joints, joint
    positions and rates, kinematics, work arrays, link velocities) with ``links``, ``rows``,
    and ``frame_pos`` with the pairs' shape arrays; kept for the last inputs (the tree's
    arrays are its own, written in place)."""
    last = _ROUND_CONST[0]
    if (last is not None and last[0] is tree and last[1] is links and last[2] is rows
            and last[3] is frame_pos and last[4] is pairs and last[5] is shapes):
        return _ROUND_CONST[1]
    key = (tree, links, rows, frame_pos, pairs, shapes)
    hit = ((tree._moving, tree.q, tree.qd, *tree._kin(), *tree._work(), tree._lin, tree._ang,
            links, rows),
           (frame_pos, pairs[0], pairs[1], shapes.body, shapes.lpos, shapes.lrot,
            shapes.plane_n, shapes.plane_p, shapes.radius))
    _ROUND_CONST[:] = [key, hit]
    return hit


def _scratch(host: Any, k: int, n: int) -> tuple[np.ndarray, ...]:
    """:func:`lean_rounds`' work arrays for K contacts and N rows, kept on ``host`` between
    host steps (a robot's contact set rarely changes size): the contacts' read overlaps (K,),
    velocities (K, 3), found flags (K,), the rows' state (N, 3 / 4), the solver's counters
    (3,) and the outcome (3,). None of them outlives a call (a handed-over read is copied)."""
    hit = host.__dict__.get("_lean_scratch")
    if hit is not None and hit[0] == (k, n):
        return hit[1]
    arrs = (np.empty(k), np.empty((k, 3)), np.empty(k, dtype=np.bool_), np.empty((n, 3)),
            np.empty((n, 4)), np.empty((n, 3)), np.empty((n, 3)), np.zeros(3, dtype=np.int64),
            np.zeros(3))
    host._lean_scratch = ((k, n), arrs)
    return arrs


def lean_block(art: Any, batch: Any, bodies: Any, kind: np.ndarray,
               W: np.ndarray) -> tuple[ArticulatedBlock, np.ndarray] | None:
    """``art``'s (a :class:`~mbplugin.bullet.articulated.BulletArticulated`)
    :meth:`~mbplugin.bullet.articulated.BulletArticulated.blocks` and the block's part of W
    (:func:`mbplugin.pipeline.delassus.articulated_w`, added into ``W`` (3K, 3K) zeros,
    the whole W) in one compiled call
    (:func:`~mbplugin.bullet.fast_step.body_delassus`) where every contact side is on one
    body whose tree is modelled (its ``tree``, read here the first time): (the block with
    its response, each contact's n . W n (K,)); else None (nothing changed but the tree
    read)."""
    sides = art._sides(batch, kind)
    if len(sides) != 1:
        return None
    body, cont, rows, sgn = sides[0]
    if len(cont) != len(batch):
        return None
    pb, cid = art.client.p, art.client.id
    joints = art.moving_joints(body)
    if any(art._sph[body]):  # ball joints (quaternion states): the general path
        return None
    states = pb.getJointStates(body, joints, physicsClientId=cid) if joints else []
    q = np.array([js[0] for js in states], dtype=float)
    tree = art._trees.get(body)
    if tree is None:  # read once
        tree = art.tree(body, joints, q.tolist())
    if not tree.supported:
        return None
    off = 6 if tree.floating else 0
    locked = np.array([off + i for i, js in enumerate(states) if js[3] != 0.0],
                      dtype=np.int64)
    base_p, base_o = (art.base_state(body, bodies)[:2] if body in art._base_row
                      else pb.getBasePositionAndOrientation(body, physicsClientId=cid))
    r_base = base_rotation(base_o)
    x, y, z, w = base_o
    mm = np.zeros((tree.ncol, tree.ncol))
    jac = np.zeros((len(cont), 3, tree.ncol))
    wnn = np.empty(len(batch))
    resp = body_delassus(q, tree.q, tree._moving, np.asarray(base_p, dtype=float),
                         np.array([w, x, y, z]), r_base, *tree._kin(), tree.col,
                         tree.floating, tree.mass, tree.inertia, tree.base_mass,
                         tree.base_inertia, *tree._work(), tree._cm, tree._cs, tree._cj,
                         art.rows_arr[rows, 1], np.ascontiguousarray(batch.point[cont]),
                         locked, cont, sgn, np.ascontiguousarray(batch.normal), mm, jac, W,
                         wnn)
    held(art, body, locked)
    blk = ArticulatedBlock(cont, sgn, jac, mm, locked, tag=(body, r_base, joints))
    blk.response = resp
    return blk, wnn
