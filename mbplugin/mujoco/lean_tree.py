"""One kinematic tree's implicit step in compiled code: the lean path of a MuJoCo robot's
host step (:class:`~mbplugin.hosts.step.HostStep` with its host hooks
``articulated_delassus`` and ``verify_rounds``, as :mod:`mbplugin.bullet.lean` for PyBullet).

For a model whose managed rows are one articulated kinematic tree (floating or fixed base)
owning every degree of freedom, with static other sides (a robot's feet on the ground), the
two articulated parts of the general path are each one compiled call that makes MuJoCo's C
calls itself (:mod:`mbplugin.mujoco.capi`, through ``_address``):

* :func:`tree_block` before the host step: W's block of the tree (the general path's
  :meth:`MujocoTrees.blocks <mbplugin.mujoco.trees.MujocoTrees.blocks>` and
  :meth:`~mbplugin.mujoco.trees.MujocoTrees.update_matrix`): the point Jacobians ``mj_jac``
  at each contact point, the joint-space mass matrix ``mj_fullM``, the response M^-1 J^T by
  ``mj_solveM`` on the factor ``qLD`` that ``mj_step1`` left (where the velocity update is M
  alone; else :func:`~mbplugin.pipeline.delassus.articulated_w`'s dense solve of the update
  matrix), W = J M^-1 J^T (:func:`~mbplugin.pipeline.delassus.articulated_add`) and each
  contact's n . W n;
* :func:`tree_rounds` after it: the read of MuJoCo's end state (``mj_kinematics``,
  ``mj_comPos``, ``mj_comVel`` on the scratch ``MjData``, :func:`.kernels.row_state`,
  :func:`~mbplugin.hosts.detection.host_plane_spheres`), the solve (the kernels of
  :func:`mbplugin.pipeline.implicit_kernel.solve_step`, the general path's compiled solve),
  the response (``qvel`` += M^-1 J^T dP, ``qpos`` of MuJoCo's ``mj_integratePos`` from the
  step's start) and the verification rounds of :meth:`ContactIntegrator.after
  <mbplugin.hosts.integrator.ContactIntegrator.after>`.

The general path's arithmetic in its order; no formula is written here. Where MuJoCo's
velocity update is not M alone (joint damping, the implicit integrators' actuator term, soft
equality and limit constraints in the step: MuJoCo Menagerie's models), W's block is made
from the general path's own matrix (:meth:`MujocoTrees.update_matrix`, called per step by
:meth:`LeanTree._update`) in place of ``mj_fullM``'s M. An onset or Newton's fallback met
by a solve (the first solve hands the whole step back, a later round hands its read back),
free rows and any other contact keep the general path. :meth:`LeanTree.step`
takes a whole host step this way: :func:`tree_start` (with the rows' state and the margin),
:func:`begin_step` (the implicit begin in one compiled call,
:func:`mbplugin.hosts.fused_kernels.lean_begin`), ``mj_step2`` and :func:`after_step`
(:func:`tree_rounds` called directly).
Units: SI (m, m/s, N s, kg).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba.core import types
from numba.experimental import structref

from mbplugin._jit import njit
from mbplugin.contact import ContactBatch
from mbplugin.contact import kernels as ck
from mbplugin.errors import ParameterError
from mbplugin.hosts.arrays import _max_norm_rows
from mbplugin.hosts.detection import host_plane_spheres, margin_value, plane_sphere_contacts
from mbplugin.hosts.fused_kernels import lean_begin
from mbplugin.hosts.integrator import (
    LOST_MARGIN,
    VERIFY_DU,
    VERIFY_TOL,
    _verify_off,
    lean_result,
    step_info,
)
from mbplugin.hosts.protocol import ARTICULATED, STATIC, ArticulatedBlock
from mbplugin.mujoco import capi
from mbplugin.mujoco.kernels import add_forces, row_state_into
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.delassus import articulated_add, articulated_w
from mbplugin.pipeline.implicit import ImplicitStep
from mbplugin.pipeline.layout import head
from mbplugin.pipeline.substep import SubstepStats

#: :func:`tree_rounds`' outcomes: the rounds ended, the general path takes the round whose read
#: is handed back, or the step's first solve (MuJoCo's data unchanged)
DONE, HANDOVER, FIRST = 0, 1, 2
#: :meth:`LeanTree.step`'s first solve handed to the general path
_FIRST = object()
#: :func:`tree_block`'s velocity update matrix where it is M itself (``mj_fullM`` there)
_M = np.empty((0, 0))

#: the fields of :class:`TreeArrays`: MuJoCo's C functions and addresses, the user's and the
#: scratch ``mjData``'s arrays (views, bound once), the tree's and the rows' constants, the
#: contact model's shape arrays
FIELDS = ("fns", "qpos", "qvel", "qpos0", "qadr", "rot", "sqpos", "sqvel", "sxipos", "sxquat",
          "scvel", "scom", "body", "root", "iquat", "iquat_unit", "sbody", "lpos", "lrot",
          "plane_n", "plane_p", "radius", "mass1", "inv_inertia", "fixed", "inv_m_ext",
          "xipos", "xquat", "cvel", "subtree_com", "xfrc", "xfrc_user", "hbody", "hstatic",
          "step2", "hpos", "hquat", "hvel", "hom")


@structref.register
class TreeArraysType(types.StructRef):
    """numba's type of :class:`TreeArrays` (its fields' types without literal values)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class TreeArrays(structref.StructRefProxy):
    """The constant arrays of one :class:`LeanTree` (:data:`FIELDS`) as one argument of
    :func:`tree_rounds`: one unboxing per call instead of one per array (:mod:`.lean`'s
    ``LeanArrays``)."""


structref.define_proxy(TreeArrays, TreeArraysType, list(FIELDS))


@njit
def tree_arrays(*values):
    """A :class:`TreeArrays` of ``values`` (:data:`FIELDS`' order), built by a cached compiled
    call (the proxy's own constructor is compiled afresh in every process)."""
    return TreeArrays(*values)


@njit
def block_sizes(k, nv):
    """The float and integer scratch lengths of :func:`block_into` for ``k`` contacts on
    ``nv`` degrees of freedom (at most ``k`` tree sides)."""
    return 3 * k * nv * 3 + nv * nv + k + 3, k


@njit
def tree_block(fns, a, b, art, body, point, normal, nv, H, W, wnn):
    """W's block of the one tree (module docstring) added into ``W`` (3K, 3K) and n . W n
    into ``wnn`` (K,): the contacts' sides ``a``, ``b`` (rows; ``art`` (N,) True for the
    tree's rows, ``body`` (N,) their MuJoCo bodies), ``point`` / ``normal`` (K, 3) world;
    ``fns`` the addresses of :data:`.capi.TREE_NAMES` then ``mjModel*``, ``mjData*``;
    ``H`` (nv, nv) the matrix of MuJoCo's velocity update (:meth:`MujocoTrees.update_matrix
    <mbplugin.mujoco.trees.MujocoTrees.update_matrix>`), or (0, 0): M itself (``mj_fullM``;
    M^-1 J^T by ``mj_solveM``: the general path's at roundoff).
    The entries are the general path's: the sides a on the tree, then the sides b, in contact
    order (sign -1, +1). Returns (ok, jac (E, 3, nv), mass matrix (nv, nv), contact (E,),
    sign (E,), response (nv, 3E)); not ok where a contact has no side or both sides on the
    tree (W untouched). Its arrays are fresh (:func:`block_into` on new scratch)."""
    nf, ni = block_sizes(a.shape[0], nv)
    return block_into(fns, a, b, art, body, point, normal, nv, H, W, wnn, np.empty(nf),
                      np.empty(ni, dtype=np.int64))


@njit
def block_into(fns, a, b, art, body, point, normal, nv, H, W, wnn, wf, wi):
    """:func:`tree_block` with its arrays views of the scratch ``wf`` (float64) and ``wi``
    (int64) of :func:`block_sizes`' lengths or more (no allocation of its own where H is M:
    a host step's fixed cost; the views are overwritten by the scratch's next use)."""
    k = a.shape[0]
    ne = 0
    for i in range(k):
        if art[a[i]] == art[b[i]]:
            ne = -1
            break
        ne += 1
    e0 = max(ne, 0)
    cont = wi[:e0]
    o = 0
    sgn = wf[o:o + e0]
    o += e0
    jac = wf[o:o + e0 * 3 * nv].reshape(e0, 3, nv)
    o += e0 * 3 * nv
    jac[:] = 0.0
    if H.shape[0] == nv:
        mm = H
    else:
        mm = wf[o:o + nv * nv].reshape(nv, nv)
        o += nv * nv
    if ne < 0:
        return False, jac, mm, cont, sgn, wf[o:o].reshape(nv, 0)
    e = 0
    for side in range(2):
        for i in range(k):
            r = a[i] if side == 0 else b[i]
            if art[r]:
                cont[e] = i
                sgn[e] = -1.0 if side == 0 else 1.0
                e += 1
    m, d = fns[-2], fns[-1]
    pt = wf[o:o + 3]
    o += 3
    base = jac.ctypes.data
    for e in range(ne):
        i = cont[e]
        pt[0], pt[1], pt[2] = point[i, 0], point[i, 1], point[i, 2]
        r = a[i] if sgn[e] < 0 else b[i]
        capi.call_jac(fns[capi.JAC], m, d, base + np.uint64(e * 3 * nv * 8), np.uint64(0),
                      pt.ctypes.data, body[r])
    if H.shape[0] == nv:
        resp = articulated_w(jac, mm, np.empty(0, dtype=np.int64), cont, sgn, W)
    else:  # M^-1 J^T by MuJoCo's own factor of M (qLD of mj_step1's mj_factorM)
        capi.call3(fns[capi.FULL_M], m, d, mm.ctypes.data)
        jrows = jac.reshape(3 * ne, nv)
        x = wf[o:o + 3 * ne * nv].reshape(3 * ne, nv)
        o += 3 * ne * nv
        capi.call_solve_m(fns[capi.SOLVE_M], m, d, x.ctypes.data, jrows.ctypes.data, 3 * ne)
        resp = wf[o:o + 3 * ne * nv].reshape(nv, 3 * ne)  # (x.T, C order)
        for j in range(nv):
            for r in range(3 * ne):
                resp[j, r] = x[r, j]
        articulated_add(jrows, resp, cont, sgn, W)
    for i in range(k):  # (normal_entries: the diagonal blocks' n . B n, row-major)
        s = 0.0
        for p in range(3):
            for q in range(3):
                s += normal[i, p] * W[3 * i + p, 3 * i + q] * normal[i, q]
        wnn[i] = s
    return True, jac, mm, cont, sgn, resp


@njit
def start_sizes(k, nv, nrows):
    """The float and integer scratch lengths of :func:`start_into` for ``k`` managed pairs
    on ``nv`` degrees of freedom and ``nrows`` host rows."""
    bf, bi = block_sizes(k, nv)
    return 19 * k + 9 * k * k + 13 * nrows + bf, 3 * k + bi


@njit
def tree_start(A, fns, sa, sb, a, b, art, dt, g_norm, nv, H):
    """The start of a host step of the lean case after ``mj_step1`` (:meth:`LeanTree.step`):
    the rows' state in the user's data (``A.xipos`` ... of :func:`.kernels.row_state`, as
    :meth:`MujocoHost.state <mbplugin.mujoco.host.MujocoHost.state>`) checked as
    ``BodyState.validate`` checks it, the step's margin (m) of
    :func:`~mbplugin.hosts.detection.margin_of` (``dt`` s, gravity's magnitude ``g_norm``
    m/s^2), the plane-sphere contacts of the managed pairs (``sa``, ``sb``; sides ``a``,
    ``b``) with delta > -margin (:func:`~mbplugin.hosts.detection.plane_sphere_contacts`,
    the world-frame inverse inertia of the contact layer's kernels: the general detection's
    batch) and W's block of the tree (:func:`tree_block`, ``fns`` with the user's data,
    ``H`` its velocity update matrix).
    Returns (ok, margin, idx (the pairs found), point, normal, delta, ddelta, vt, m_eff, ra,
    rb, W, wnn, jac, mass matrix, contact, sign, response), the contacts' rows the found
    ones; not ok where the state or the margin (finite, >= 0) is not valid, no pair is found
    or :func:`tree_block` does not apply (nothing changed). Its arrays are fresh
    (:func:`start_into` on new scratch)."""
    nf, ni = start_sizes(sa.shape[0], nv, A.body.shape[0])
    return start_into(A, fns, sa, sb, a, b, art, dt, g_norm, nv, H, np.empty(nf),
                      np.empty(ni, dtype=np.int64))


@njit
def start_into(A, fns, sa, sb, a, b, art, dt, g_norm, nv, H, wf, wi):
    """:func:`tree_start` with its arrays views of the scratch ``wf`` (float64) and ``wi``
    (int64) of :func:`start_sizes`' lengths or more (:func:`block_into`)."""
    k = sa.shape[0]
    pos, quat, vel, om = _rows_view(wf[19 * k + 9 * k * k:], A.body.shape[0])
    row_state_into(A.xipos, A.xquat, A.cvel, A.subtree_com, A.body, A.root, A.iquat,
                   A.iquat_unit, pos, quat, vel, om)
    margin = margin_value(_max_norm_rows(vel), _max_norm_rows(om), dt, g_norm)
    idx = wi[:k]
    o = 0
    point = wf[o:o + 3 * k].reshape(k, 3)
    normal = wf[o + 3 * k:o + 6 * k].reshape(k, 3)
    vt = wf[o + 6 * k:o + 9 * k].reshape(k, 3)
    ra = wf[o + 9 * k:o + 12 * k].reshape(k, 3)
    rb = wf[o + 12 * k:o + 15 * k].reshape(k, 3)
    delta, ddelta, m_eff = wf[15 * k:16 * k], wf[16 * k:17 * k], wf[17 * k:18 * k]
    o = 18 * k
    found = 0
    if (np.isfinite(margin) and margin >= 0.0
            and ck.state_all_valid(pos, quat, vel, om, A.mass1, A.inv_inertia)):
        inv_i_w = ck.world_inverse_inertia_of(quat, A.inv_inertia, A.fixed)
        found = plane_sphere_contacts(sa, sb, A.sbody, A.lpos, A.lrot, A.plane_n, A.plane_p,
                                      A.radius, pos, quat, vel, om, A.inv_m_ext, inv_i_w,
                                      margin, idx, point, normal, delta, ddelta, vt, m_eff,
                                      ra, rb)
    f = found
    W = wf[o:o + 9 * f * f].reshape(3 * f, 3 * f)
    W[:] = 0.0
    o += 9 * k * k
    wnn = wf[o:o + f]
    o += k
    ok = found > 0
    if ok:
        ab = wi[k:3 * k].reshape(2, k)
        for j in range(f):
            ab[0, j], ab[1, j] = a[idx[j]], b[idx[j]]
        ok, jac, mm, cont, sgn, resp = block_into(
            fns, ab[0, :f], ab[1, :f], art, A.body, point[:f], normal[:f], nv, H, W, wnn,
            wf[o + 13 * A.body.shape[0]:], wi[3 * k:])
    else:
        jac, mm, cont = np.empty((0, 3, nv)), np.empty((nv, nv)), np.empty(0, dtype=np.int64)
        sgn, resp = np.empty(0), np.empty((nv, 0))
    return (ok, margin, idx[:f], point[:f], normal[:f], delta[:f], ddelta[:f], vt[:f], m_eff[:f],
            ra[:f], rb[:f], W, wnn, jac, mm, cont, sgn, resp)


@njit
def _rows_view(st, n):
    """The rows' pos (N, 3), quat (N, 4), vel (N, 3), omega (N, 3) as views of the float
    scratch ``st`` (13 N or more) for ``n`` = N rows."""
    return (st[:3 * n].reshape(n, 3), st[3 * n:7 * n].reshape(n, 4),
            st[7 * n:10 * n].reshape(n, 3), st[10 * n:13 * n].reshape(n, 3))


@njit
def _read(A, sa, sb, margin, u0, d_h, u_h, found, st):
    """MuJoCo's state (``A.qpos``, ``A.qvel``) on the scratch data (``A.fns[-1]``; its arrays
    ``A.sqpos`` ...), its kinematics and velocities, the rows' state
    (:func:`.kernels.row_state`, into the scratch ``st``: :func:`_rows_view`) and the
    contacts' overlaps ``d_h`` and velocities ``u_h`` there (:meth:`MujocoHost.end_state
    <mbplugin.mujoco.host.MujocoHost.end_state>` and :class:`HostContacts.read
    <mbplugin.hosts.detection.HostContacts>`). Returns the rows' (pos, quat, vel, omega)."""
    A.sqpos[:] = A.qpos
    A.sqvel[:] = A.qvel
    fns = A.fns
    m, s = fns[-3], fns[-1]
    capi.call(fns[capi.KINEMATICS], m, s)
    capi.call(fns[capi.COM_POS], m, s)
    capi.call(fns[capi.COM_VEL], m, s)
    pos, quat, vel, om = _rows_view(st, A.body.shape[0])
    row_state_into(A.sxipos, A.sxquat, A.scvel, A.scom, A.body, A.root, A.iquat,
                   A.iquat_unit, pos, quat, vel, om)
    host_plane_spheres(sa, sb, A.sbody, A.lpos, A.lrot, A.plane_n, A.plane_p, A.radius, pos,
                       quat, vel, om, margin, u0, d_h, u_h, found)
    return pos, quat, vel, om


@njit
def rounds_size(k, ne, nq, nrows):
    """The float scratch length of :func:`rounds_into` for ``k`` contacts, ``ne`` tree sides,
    ``nq`` position coordinates and ``nrows`` host rows."""
    return 6 * k + 3 * ne + nq + 13 * nrows + ik.round_solve_size(k)


@njit
def tree_rounds(A, sa, sb, first, rounds, dt, margin, tol, du, gf, gc, fn0, s0, rtol, P, d1,
                u1, loaded, s1, dP, spin, resp, cont, sgn, u0, counters, d_h, u_h, found, out):
    """:func:`rounds_into` on new scratch (its arguments but ``wf``)."""
    return rounds_into(A, sa, sb, first, rounds, dt, margin, tol, du, gf, gc, fn0, s0, rtol, P,
                       d1, u1, loaded, s1, dP, spin, resp, cont, sgn, u0, counters, d_h, u_h,
                       found, out, np.empty(rounds_size(d1.shape[0], cont.shape[0],
                                                        A.qpos.shape[0], A.body.shape[0])))


@njit
def rounds_into(A, sa, sb, first, rounds, dt, margin, tol, du, gf, gc, fn0, s0, rtol, P, d1,
                u1, loaded, s1, dP, spin, resp, cont, sgn, u0, counters, d_h, u_h, found, out,
                wf):
    """:func:`rounds_onset_into` without a compiled onset (the first solve's onset: FIRST)."""
    e = wf[:0]  # (empty views: no allocation)
    return rounds_onset_into(A, sa, sb, first, rounds, dt, margin, tol, du, gf, gc, fn0, s0,
                             rtol, P, d1, u1, loaded, s1, dP, spin, resp, cont, sgn, u0,
                             counters, d_h, u_h, found, out, wf, e.reshape(0, 0), e, cont[:0],
                             e.reshape(0, 0), e.reshape(0, 2), e, found[:0], e, e,
                             e.reshape(0, 0), e)


@njit
def rounds_onset_into(A, sa, sb, first, rounds, dt, margin, tol, du, gf, gc, fn0, s0, rtol, P,
                      d1, u1, loaded, s1, dP, spin, resp, cont, sgn, u0, counters, d_h, u_h,
                      found, out, wf, W, m_eff, pair, tpl, tsk, rule, new, d_on, dd_on,
                      coef_on, t_c):
    """Up to ``rounds`` verification rounds of the implicit step from the last solve (``P``,
    ``d1``, ``u1``, ``loaded``, ``s1``, updated in place), its correction ``dP`` and the spin
    its response saw, as :meth:`ContactIntegrator.after
    <mbplugin.hosts.integrator.ContactIntegrator.after>` takes them: stop when max |W dP|
    (dt spin + ``tol``) <= ``du``; the read (:func:`_read`); stop when no found contact is off
    the solved one; the solve (:func:`~mbplugin.pipeline.implicit_kernel.solve_step`'s
    kernels); the response (:meth:`MujocoHost.respond
    <mbplugin.mujoco.host.MujocoHost.respond>`: ``qvel`` += ``resp`` times the sides'
    impulses, the tree's ``qadr`` of ``mj_integratePos(qpos0, qvel, dt)``, the spin the
    largest |qvel| of ``rot``). ``first`` 1: the step's read, first solve (from ``P`` =
    P_lin) and response come first. ``A`` the :class:`TreeArrays` (``A.fns``:
    :data:`.capi.TREE_NAMES`' addresses, then ``mjModel*``, the user's ``mjData*`` and the
    scratch ``mjData*``), ``sa``, ``sb`` the contacts' plane and sphere shapes.

    ``out`` (3,): the rounds begun, the last spin, whether MuJoCo's state was moved. Returns
    DONE, HANDOVER (the round's read in ``d_h``, ``u_h``, ``found``; the rows' state
    returned) or FIRST (the first solve needs the general path; MuJoCo's data unchanged).

    ``wf``: float64 scratch of :func:`rounds_size` or more (the rounds' work arrays as its
    views: no allocation of their own).

    A first solve that meets an onset (``first`` 1, ``pair`` (K,) each contact's managed
    pair, not empty) is taken here for a law with a compiled onset
    (:func:`~mbplugin.pipeline.implicit_kernel.onset_solve` with W (3K, 3K), the effective
    masses ``m_eff`` (K,) and the pairs' onset rows ``tpl``, time-scale rules ``tsk`` and the
    law's rule ``rule``; the onsets for the store's booking in ``new``, ``d_on``, ``dd_on``,
    ``coef_on``, ``t_c``); else FIRST."""
    k = d1.shape[0]
    m = 3 * k
    nd = resp.shape[0]
    ne3 = 3 * cont.shape[0]
    x, wx = wf[:m], wf[m:2 * m]
    f = wf[2 * m:2 * m + ne3]
    qbuf = wf[2 * m + ne3:2 * m + ne3 + A.qpos.shape[0]]
    o = 2 * m + ne3 + A.qpos.shape[0]
    st = wf[o:o + 13 * A.body.shape[0]]
    sol = wf[o + 13 * A.body.shape[0]:]  # (round_solve_into's scratch)
    fns, qpos, qvel, qpos0, qadr, rot = A.fns, A.qpos, A.qvel, A.qpos0, A.qadr, A.rot
    e0 = wf[:0]
    state = (e0.reshape(0, 3), e0.reshape(0, 4), e0.reshape(0, 3), e0.reshape(0, 3))
    for r in range(0 if first else 1, rounds + 1):
        out[0] = r - 1 if r > 0 else 0
        out[1] = spin
        if r > 0:  # the correction's first-order error (the general loop's test)
            for i in range(k):
                for a in range(3):
                    x[3 * i + a] = dP[i, a]
            ik._w_times(gf, 0, m, x, wx)
            big = 0.0
            for i in range(m):
                big = max(big, abs(wx[i]))
            if big * (dt * spin + tol) <= du:
                return DONE, state
        state = _read(A, sa, sb, margin, u0, d_h, u_h, found, st)
        if r > 0:
            if not _verify_off(d_h, d1, u_h, u1, found, tol, du):
                return DONE, state
            out[0] = r
        # the solve (solve_step's kernels), from the last impulse
        got = ik.round_solve_into(P, u_h, d_h, dt, gf, gc, fn0, s0, rtol, counters, d1, u1,
                                  loaded, s1, dP, sol)
        if got < 0 and r == 0 and pair.shape[0] > 0:  # an onset: compiled where it can be
            got = ik.onset_solve(P, u_h, d_h, dt, W, gf, gc, fn0, s0, rtol, counters, d1, u1,
                                 loaded, s1, dP, m_eff, pair, tpl, tsk, rule, new, d_on, dd_on,
                                 coef_on, t_c)
        if got < 0:
            return (HANDOVER if r > 0 else FIRST), state
        # the response (HostStep._respond, MujocoHost.respond)
        spin = 0.0
        if got == 0 or not ik.side_impulses(dP, cont, sgn, f):
            continue
        dq = np.dot(resp, f)
        for i in range(nd):
            qvel[i] += dq[i]
        for i in range(rot.shape[0]):
            spin = max(spin, abs(qvel[rot[i]]))
        qbuf[:] = qpos0
        capi.call_integrate_pos(fns[capi.INTEGRATE_POS], fns[-3], qbuf.ctypes.data,
                                qvel.ctypes.data, dt)
        for i in range(qadr.shape[0]):
            qpos[qadr[i]] = qbuf[qadr[i]]
        out[2] = 1.0
    out[0] = rounds
    out[1] = spin
    return DONE, state


def _plain_update(mj: Any, m: Any) -> bool:
    """Whether the matrix of MuJoCo's velocity update of the model's dofs is its mass matrix
    M alone (:meth:`MujocoTrees.update_matrix
    <mbplugin.mujoco.trees.MujocoTrees.update_matrix>` without its other terms): the Euler
    integrator without joint damping or with ``mjDSBL_EULERDAMP``, or an implicit one without
    actuators and damping (MuJoCo's constraints are checked per step)."""
    euler = int(m.opt.integrator) == int(mj.mjtIntegrator.mjINT_EULER)
    eulerdamp_off = bool(m.opt.disableflags & int(mj.mjtDisableBit.mjDSBL_EULERDAMP))
    if np.any(m.dof_damping) and not (euler and eulerdamp_off):
        return False
    return euler or not m.nu


class LeanTree:
    """The lean path of one MuJoCo kinematic tree (module docstring), the hooks
    ``articulated_delassus`` (:meth:`block`) and ``verify_rounds`` (:meth:`rounds`) of its
    :class:`~mbplugin.mujoco.host.MujocoHost` ``host``; made by :meth:`of`."""

    def __init__(self, host: Any, fns: np.ndarray, root: int) -> None:
        m, d = host.m, host.d
        self.host = host
        self.root = root
        self._fns = np.append(fns, np.array([m._address, d._address], dtype=np.uint64))
        self._art = np.ascontiguousarray(host.kind == ARTICULATED)
        self._body = np.ascontiguousarray(host.body, dtype=np.int64)
        self._qadr = np.ascontiguousarray(host.trees.tree_qpos[root], dtype=np.int64)
        self._rot = np.ascontiguousarray(host.trees.tree_rot[root], dtype=np.int64)
        self._iquat = np.ascontiguousarray(host.iquat, dtype=float)
        self._tree_arrays: tuple[Any, Any] | None = None
        loop = host.loop
        fixed = np.asarray(loop._fixed, dtype=np.bool_)
        self._mass1 = np.ascontiguousarray(loop._mass1, dtype=float)
        self._inv_inertia = np.ascontiguousarray(loop.inv_inertia, dtype=float)
        self._fixed = np.ascontiguousarray(fixed)
        self._inv_m_ext = np.zeros(len(fixed) + 1)  # (BodyState.inv_mass_ext)
        self._inv_m_ext[:-1][~fixed] = 1.0 / self._mass1[~fixed]
        self._work_k: tuple[int, tuple[np.ndarray, ...]] | None = None
        steps = capi.load(host.mj)  # mj_step2 from compiled code (tree_after), where usable
        self._step2 = np.array([0 if steps is None else steps[capi.STEP2]], dtype=np.uint64)
        #: the options of a velocity update that was M itself (None: it was not)
        self._opt = ((m.opt.integrator, m.opt.disableflags) if _plain_update(host.mj, m)
                     else None)
        self._dofs = host.trees.tree_dofs[root]
        #: the model's joint damping (MuJoCo's array, a view: a user's change is seen)
        self._damping = m.dof_damping
        #: W blocks built here; implicit steps whose read, solves and responses ran here (all
        #: rounds, or up to a handed-back round); first solves handed to the general path
        self.blocks = self.steps = self.first_handed = 0
        #: steps whose first solve's onsets were solved in compiled code (:mod:`.tree_step`)
        self.landed = 0
        #: :meth:`step`'s rounds handed to the general path (taken by :meth:`rounds`)
        self._pre: Any = None
        self._gn: tuple[tuple[bytes, int], float] | None = None
        from mbplugin.mujoco import tree_step  # (it imports this module's kernels)

        #: the common step after tree_start in one compiled call (:mod:`.tree_step`)
        self._ts = tree_step
        self._nv = int(m.nv)
        self._mopt = m.opt  # (the model's options, the same live object at every access)
        #: (.tree_step's) StepConst per detection constants, laws, friction and options
        self._step_const: tuple[Any, ...] | None = None
        self._ready: tuple[Any, ...] | None = None  # (.tree_step.ready's kept tests)

    @classmethod
    def of(cls, host: Any) -> LeanTree | None:
        """The lean path of ``host``'s rows where they qualify: MuJoCo's C library usable
        (:func:`.capi.load_tree`; ``mj_fullM`` of argument order (m, d, dst)), no free row,
        every other row static, one kinematic tree owning all ``nv`` degrees of freedom (any
        velocity update: :meth:`_update`); else None."""
        mj, m, d = host.mj, host.m, host.d
        fns = capi.load_tree(mj)
        kind = host.kind
        trees = host.trees.tree_dofs
        if (fns is None or len(trees) != 1 or np.any((kind != ARTICULATED) & (kind != STATIC))
                or not np.any(kind == ARTICULATED)):
            return None
        root, dofs = next(iter(trees.items()))
        if len(dofs) != m.nv:
            return None
        try:  # MuJoCo's argument order (m, d, dst) of mj_fullM (the C call's)
            mj.mj_fullM(m, d, np.zeros((m.nv, m.nv)))
        except TypeError:
            return None
        return cls(host, fns, int(root))

    def _update(self) -> np.ndarray:
        """The matrix H of MuJoCo's velocity update of the tree in this step for
        :func:`tree_block`: (0, 0) where it is M itself (:func:`_plain_update`, no equality or
        limit row of MuJoCo in the step: ``mj_fullM`` in compiled code), else the general
        path's :meth:`MujocoHost.update_matrix <mbplugin.mujoco.host.MujocoHost.update_matrix>`
        (joint damping, the implicit integrators' actuator term, the constraint rows); the
        options, damping and rows are read each step (a user may change them between steps)."""
        host = self.host
        m, d = host.m, host.d
        opt = self._mopt
        if d.nefc and len(host.trees.held_rows()):
            return host.update_matrix(self._dofs)
        if (opt.integrator, opt.disableflags) == self._opt and not np.count_nonzero(
                self._damping):  # (count_nonzero: ~0.3 us, ndarray.any ~2 us on this view)
            return _M
        if _plain_update(host.mj, m):
            self._opt = (opt.integrator, opt.disableflags)
            return _M
        return host.update_matrix(self._dofs)

    def block(self, batch: Any, bodies: Any,
              W: np.ndarray) -> tuple[ArticulatedBlock, np.ndarray] | None:
        """The tree's :class:`~mbplugin.hosts.protocol.ArticulatedBlock` (its response set) and
        n . W n (K,), its part of W added into ``W`` (:func:`tree_block`); None where the
        step does not qualify (a contact not between the tree and a static row): W
        untouched."""
        H = self._update()
        k = len(batch)
        wnn = np.empty(k)
        ok, jac, mm, cont, sgn, resp = tree_block(
            self._fns, batch.a, batch.b, self._art, self._body,
            np.ascontiguousarray(batch.point, dtype=float),
            np.ascontiguousarray(batch.normal, dtype=float), int(self.host.m.nv), H, W, wnn)
        if not ok:
            return None
        self.blocks += 1
        blk = ArticulatedBlock(cont, sgn, jac, mm, tag=self.root)
        blk.response = resp
        return blk, wnn

    def rounds(self, blk: ArticulatedBlock, space: Any, res: Any, dP: np.ndarray | None,
               spin: float, left: int, stats: Any, pairs: tuple[np.ndarray, np.ndarray],
               shapes: Any, margin: float, u0: np.ndarray, dt: float,
               start: tuple[Any, ...] | None = None) -> tuple[Any, int, Any] | None:
        """The implicit step's read, solves, responses and rounds of
        :meth:`ContactIntegrator.after <mbplugin.hosts.integrator.ContactIntegrator.after>`
        by :func:`tree_rounds` (the hook's arguments as
        :func:`mbplugin.bullet.lean.lean_rounds` takes them): with ``start`` = (P_lin,) from
        the host's end state (None where the first solve needs the general path: nothing
        changed); without, the rounds after the general path's first solve ``res``. Returns
        (the solve's result, the rounds the general loop still takes, the read of the first
        of them or None) or None."""
        host = self.host
        if blk.tag != self.root or not space.compiled:
            return None
        fresh = start is not None
        if fresh and self._pre is not None:  # :meth:`step`'s own rounds, handed over
            pre, self._pre = self._pre, None
            return None if pre is _FIRST else pre
        k = len(u0)
        if fresh:
            P = np.array(start[0], dtype=float)
            d1, u1, loaded = np.empty(k), np.empty((k, 3)), np.empty(k, dtype=np.bool_)
            dP, spin = np.zeros((k, 3)), 0.0
        else:
            P, d1, u1, loaded = res.impulse, res.delta, res.u, res.loaded
            if not all(type(a) is np.ndarray and a.flags.c_contiguous
                       for a in (P, d1, u1, loaded)):
                return None
            dP = np.array(dP, dtype=float)
        A = self._arrays(shapes)
        d_h, u_h, found, counters, out = self._work(k)
        counters[:] = 0
        out[:] = 0.0
        s1 = np.array(space.s_end if not fresh else space.s0, dtype=float)
        c = np.ascontiguousarray
        wall = time.perf_counter()
        status, (pos, quat, vel, om) = tree_rounds(
            A, pairs[0], pairs[1], 1 if fresh else 0, int(left), float(dt), float(margin),
            VERIFY_TOL, VERIFY_DU, space.gf, space.gc, c(space.fn0, dtype=float),
            c(space.s0, dtype=float), space.rtol, P, d1, u1, loaded, s1, dP, float(spin),
            c(blk.response, dtype=float), np.asarray(blk.contact, dtype=np.int64),
            np.asarray(blk.sign, dtype=float), c(u0, dtype=float), counters, d_h, u_h, found,
            out)
        if status == FIRST:
            self.first_handed += 1
            return None
        self.steps += fresh
        res = lean_result(space, None if fresh else res, stats, P, d1, u1, loaded, s1,
                          counters, dt, wall)
        if status == DONE:
            return res, 0, None
        bodies = host.loop.body_state(pos, quat, vel, om)
        return res, left - int(out[0]) + 1, (bodies, d_h.copy(), u_h.copy(), found.copy())

    def step(self, c: Any) -> tuple[Any, bool]:
        """One host step of :class:`~mbplugin.mujoco.MujocoContacts` ``c`` (no ``control``
        callback) by the lean path where it applies: a managed pair is found at the step start
        (every managed pair a plane-sphere pair), ``articulated="implicit"`` (W's block from
        :meth:`_update`'s matrix). Then the step is the general path's calls
        without their generic parts: :func:`tree_start` (the rows' state, the margin, the
        detection and W's block), the store's commit, the implicit step's begin
        (:func:`begin_step`, one compiled call for compiled laws; else
        :meth:`HostStep._implicit_before <mbplugin.hosts.step.HostStep._implicit_before>`),
        the forces, ``mj_step2`` and the solve (:func:`after_step`, or :meth:`HostStep.after
        <mbplugin.hosts.step.HostStep.after>` whose rounds are :meth:`rounds`). Returns (the
        step's info, True), or (None, whether ``mj_step1`` ran: the general path continues
        from there)."""
        loop, host = c.loop, self.host
        store, integ = loop.store, loop.integrator
        det = loop._plane_spheres
        const = None if det is None else det._const
        shapes = loop.model.arrays
        if const is None or det._c is not shapes or loop.articulated != "implicit":
            return None, False
        a, b, key, law, k_hertz, r_eff = const
        mj, m, d = host.mj, host.m, host.d
        mj.mj_step1(m, d)
        H = self._update()
        dt = float(self._mopt.timestep)
        t = float(d.time)
        A = self._arrays(shapes)
        ts = self._ts
        fc = ts.ready(self, c, det, A)
        if fc is not None:  # the common step in one call (.tree_step)
            info, stepped = ts.fused_step(self, c, A, fc, H, t, dt, self._g_norm(c))
            if stepped:
                return info, True
        (ok, margin, i, point, normal, delta, ddelta, vt, m_eff, ra, rb, W, wnn, jac, mm, cont,
         sgn, resp) = tree_start(A, self._fns, det.sa, det.sb, a, b, self._art, dt,
                                 self._g_norm(c), int(m.nv), H)
        if not ok:
            return None, True
        self.blocks += 1
        if len(i) == len(key):  # (PlaneSphereDetection.detect's batch)
            batch = ContactBatch(a.copy(), b.copy(), key.copy(), point, normal, delta, ddelta,
                                 vt, m_eff, r_eff.copy(), ra, rb, law.copy(), k_hertz.copy())
            pairs = (det.sa, det.sb)
        else:
            batch = ContactBatch(a[i], b[i], key[i], point, normal, delta, ddelta, vt, m_eff,
                                 r_eff[i], ra, rb, law[i], k_hertz[i])
            pairs = (det.sa[i], det.sb[i])
        loop.margin = 2.0 * margin
        # HostStep.step: the store's commit, W (the hook's bookkeeping), the implicit begin
        if not store.commit_rows(batch, batch.delta, batch.ddelta, t):
            store.commit(batch, t, aligned=False, compiled=True)
        loop.pending = None
        integ.pending = None
        loop.forced[:] = False
        blk = ArticulatedBlock(cont, sgn, jac, mm, tag=self.root)
        blk.response = resp
        loop._art = [blk]
        loop._one_body = True
        loop._w_cache.put(None, W, wnn, False)
        s0 = integ.stick_start(batch)
        mu = loop.pair_mu(host, batch)
        if integ.solver != "scipy" and ik.compiled_laws(store):
            info, force = begin_step(loop, integ, store, batch, W, wnn, s0, mu, t, dt)
        else:
            k = len(batch)
            m_eff = np.full(k, np.inf)
            np.divide(1.0, wnn, out=m_eff, where=wnn > 0)
            batch.m_eff = m_eff
            u0 = batch.vt - batch.ddelta[:, None] * batch.normal
            info, batch, force = loop._implicit_before(batch, W, u0, s0, t, dt, mu)
        # MujocoContacts.step: the forces, MuJoCo's step, the implicit step's solve
        fused = not d.nefc and host._user_xfrc is None and self._step2[0] != 0
        if not (fused and after_step(self, loop, integ, host, dt, A, pairs, force)):
            forced = np.zeros(len(c.rows), dtype=bool)
            host.apply(batch, force, forced)
            if d.nefc:  # (settle_warmstart's work: none without a MuJoCo constraint)
                host.settle_warmstart(np.flatnonzero(forced & c._movable))
            host.step()
            if not after_step(self, loop, integ, host, dt, A, pairs):
                loop.after(host, dt)
        c.last = c._info(loop.last if loop.last is not None else info)
        return c.last, True

    def _g_norm(self, c: Any) -> float:
        """|g| (m/s^2) of ``c``'s gravity (:func:`~mbplugin.hosts.detection.margin_of`'s
        ``np.linalg.norm``), kept while the gravity is bitwise the same."""
        opt = self._mopt
        key = (opt.gravity.tobytes(), opt.disableflags)  # (what c.gravity() reads)
        hit = self._gn
        if hit is None or hit[0] != key:
            hit = self._gn = (key, float(np.linalg.norm(c.gravity())))
        return hit[1]

    def _arrays(self, shapes: Any) -> Any:
        """The :class:`TreeArrays` of the contact model's shape arrays ``shapes`` (made once
        per arrays object; the scratch ``MjData``'s views bound with it)."""
        hit = self._tree_arrays
        if hit is not None and hit[0] is shapes:
            return hit[1]
        host = self.host
        s = host._scratch_data()
        fns = np.append(self._fns, np.uint64(s._address))
        d = host.d
        A = tree_arrays(fns, d.qpos, d.qvel, host._qpos0, self._qadr, self._rot, s.qpos,
                        s.qvel, s.xipos, s.xquat, s.cvel, s.subtree_com, self._body,
                        np.ascontiguousarray(host.root, dtype=np.int64), self._iquat,
                        bool(host._iquat_unit), shapes.body, shapes.lpos, shapes.lrot,
                        shapes.plane_n, shapes.plane_p, shapes.radius, self._mass1,
                        self._inv_inertia, self._fixed, self._inv_m_ext, d.xipos, d.xquat,
                        d.cvel, d.subtree_com, d.xfrc_applied, np.empty_like(d.xfrc_applied),
                        np.ascontiguousarray(host.body, dtype=np.int64),
                        np.ascontiguousarray(host._static, dtype=np.bool_), self._step2,
                        *(np.empty((len(host.body), w)) for w in (3, 4, 3, 3)))
        self._tree_arrays = (shapes, A)
        return A

    def _work(self, k: int) -> tuple[np.ndarray, ...]:
        """:func:`tree_rounds`' read arrays for K contacts (kept between host steps; a read
        handed back is copied): overlaps (K,), velocities (K, 3), found (K,), counters (3,),
        outcome (3,)."""
        hit = self._work_k
        if hit is None or hit[0] != k:
            hit = self._work_k = (k, (np.empty(k), np.empty((k, 3)), np.empty(k, dtype=np.bool_),
                                      np.zeros(3, dtype=np.int64), np.zeros(3)))
        return hit[1]


def prepare(tree: LeanTree, c: Any) -> None:
    """Make at construction what the first host steps of :class:`~mbplugin.mujoco.
    MujocoContacts` ``c`` (its :class:`LeanTree` ``tree``) would make once (a run's
    fixed cost, ~0.5-3 ms of which was paid inside its first two steps): the host's
    scratch ``MjData`` (a 14 MB arena on the A1), the detection's pair constants
    (``PlaneSphereDetection._constants``, from the rows' state of the current ``qpos``,
    ``qvel`` on the scratch data: the constants do not depend on the state), the
    :class:`TreeArrays` and :mod:`.tree_step`'s ``StepConst`` (its numba typing of 44
    arguments). Each is remade as before where its inputs change; where the state cannot
    be read, nothing but the scratch data is made."""
    host, loop = tree.host, c.loop
    host._scratch_data()
    det = loop._plane_spheres
    if det is None or loop.articulated != "implicit":
        return
    with np.errstate(all="ignore"):
        try:
            det._constants(host.end_state())
        except (ParameterError, ValueError, FloatingPointError):
            return
    tree._ts.ready(tree, c, det, tree._arrays(loop.model.arrays))


def begin_step(loop: Any, integ: Any, store: Any, batch: ContactBatch, W: np.ndarray,
               wnn: np.ndarray, s0: np.ndarray | None, mu: np.ndarray | None, t: float,
               dt: float) -> tuple[Any, np.ndarray]:
    """The implicit step's begin of :meth:`LeanTree.step` (``loop``'s
    :meth:`HostStep._implicit_before <mbplugin.hosts.step.HostStep._implicit_before>` with
    the batch's effective masses and velocities before it) by one compiled call
    (:func:`~mbplugin.hosts.fused_kernels.lean_begin`, the same kernels: the same bits)
    for compiled laws: the pending step of ``integ`` and ``loop``'s info set. Returns (the
    info, the force P_lin / dt (K, 3) N)."""
    k = len(batch)
    friction = integ.friction
    if friction is not None and not friction.active:
        friction = None
    stick = integ.stick
    s0 = np.zeros((k, 3)) if s0 is None else np.ascontiguousarray(s0, dtype=float)
    mu_k = None if mu is None else np.asarray(mu, dtype=float).reshape(k, 2)
    P_lin = integ.warm_start(batch)
    _, same, srows, coef, mem, law, blaw, kid, mode = ik._rows_args(store, batch)
    c = np.ascontiguousarray
    n = c(batch.normal, dtype=float)
    v1, v3 = np.empty((4, k)), np.empty((2, k, 3))
    m_eff, fn0, fn, slip = v1
    u0, force = v3
    gf, gc, every = lean_begin(
        k, wnn, c(batch.vt, dtype=float), c(batch.ddelta, dtype=float), n,
        c(batch.delta, dtype=float), P_lin, float(dt), head(friction, stick),
        W.reshape(-1), ik._NO_MU if mu_k is None else c(mu_k), friction is not None,
        0.0 if friction is None else float(friction.mu),
        0.0 if friction is None else float(friction.static), same, srows, coef, mem, law,
        c(blaw), kid, mode, s0, m_eff, u0, fn0, fn, slip, force)
    batch.m_eff = m_eff
    space = ImplicitStep.begun(store, batch, W, friction, integ.rtol, s0, mu_k, gf, gc, t,
                               bool(every), fn0, stick=stick)
    integ.pending = (batch, space, P_lin, u0)
    ab = np.empty((k, 2), dtype=np.int64)
    ab[:, 0], ab[:, 1] = batch.a, batch.b
    loop.last = loop.make_info(k, SubstepStats(), fn, batch.key.copy(), ab,
                               batch.delta.copy(), slip)
    return loop.last, force


@njit
def after_sizes(k, ne, nq, nrows):
    """The float and bool scratch lengths of :func:`after_into` for ``k`` contacts, ``ne``
    tree sides, ``nq`` position coordinates and ``nrows`` host rows."""
    return 3 * k + rounds_size(k, ne, nq, nrows), nrows


@njit
def tree_after(A, a, b, point, force, sa, sb, rounds, dt, margin, tol, du, gf, gc, fn0, s0,
               rtol, P, d1, u1, loaded, s1, resp, cont, sgn, u0, counters, d_h, u_h, found,
               out):
    """:func:`after_into` on new scratch (its arguments but ``wf``, ``wb``)."""
    nf, nb = after_sizes(d1.shape[0], cont.shape[0], A.qpos.shape[0], A.hbody.shape[0])
    return after_into(A, a, b, point, force, sa, sb, rounds, dt, margin, tol, du, gf, gc, fn0,
                      s0, rtol, P, d1, u1, loaded, s1, resp, cont, sgn, u0, counters, d_h,
                      u_h, found, out, np.empty(nf), np.empty(nb, dtype=np.bool_))


@njit
def after_into(A, a, b, point, force, sa, sb, rounds, dt, margin, tol, du, gf, gc, fn0, s0,
               rtol, P, d1, u1, loaded, s1, resp, cont, sgn, u0, counters, d_h, u_h, found,
               out, wf, wb):
    """:func:`after_onset_into` without a compiled onset (the first solve's onset: FIRST)."""
    e = wf[:0]  # (empty views: no allocation)
    return after_onset_into(A, a, b, point, force, sa, sb, rounds, dt, margin, tol, du, gf, gc,
                            fn0, s0, rtol, P, d1, u1, loaded, s1, resp, cont, sgn, u0,
                            counters, d_h, u_h, found, out, wf, wb, e.reshape(0, 0), e,
                            cont[:0], e.reshape(0, 0), e.reshape(0, 2), e, found[:0], e, e,
                            e.reshape(0, 0), e)


@njit
def after_onset_into(A, a, b, point, force, sa, sb, rounds, dt, margin, tol, du, gf, gc, fn0,
                     s0, rtol, P, d1, u1, loaded, s1, resp, cont, sgn, u0, counters, d_h, u_h,
                     found, out, wf, wb, W, m_eff, pair, tpl, tsk, rule, new, d_on, dd_on,
                     coef_on, t_c):
    """MuJoCo's host step and the implicit step's rounds in one call (:meth:`LeanTree.step`
    without a MuJoCo constraint row): the contacts' forces ``force`` (K, 3) N (sides ``a``,
    ``b``, ``point`` (K, 3)) added to ``xfrc_applied`` (:func:`.kernels.add_forces`, as
    :meth:`MujocoHost.apply <mbplugin.mujoco.host.MujocoHost.apply>`; the user's values kept
    in ``A.xfrc_user``), ``qpos0`` the state before it, ``mj_step2`` (``A.step2``), the user's
    ``xfrc_applied`` back (:meth:`MujocoHost.step <mbplugin.mujoco.host.MujocoHost.step>`),
    then :func:`tree_rounds` from its first solve (the other arguments are its own). Returns
    :func:`tree_rounds`' outcome; its rows' state of a HANDOVER in ``A.hpos``, ``A.hquat``,
    ``A.hvel``, ``A.hom`` (returned arrays would cost their boxing in every step).
    ``wf`` (float64), ``wb`` (bool): scratch of :func:`after_sizes`' lengths or more (the
    step's work arrays as their views). The arguments from ``W`` on: the first solve's
    compiled onset (:func:`rounds_onset_into`)."""
    A.xfrc_user[:] = A.xfrc
    forced = wb[:A.hbody.shape[0]]
    forced[:] = False
    add_forces(A.xfrc, A.xipos, A.hbody, A.hstatic, a, b, point, force, forced)
    A.qpos0[:] = A.qpos
    fns = A.fns
    capi.call(A.step2[0], fns[-3], fns[-2])
    A.xfrc[:] = A.xfrc_user
    k = d1.shape[0]
    dP = wf[:3 * k].reshape(k, 3)
    dP[:] = 0.0
    status, state = rounds_onset_into(A, sa, sb, 1, rounds, dt, margin, tol, du, gf, gc, fn0,
                                      s0, rtol, P, d1, u1, loaded, s1, dP, 0.0, resp, cont,
                                      sgn, u0, counters, d_h, u_h, found, out, wf[3 * k:], W,
                                      m_eff, pair, tpl, tsk, rule, new, d_on, dd_on, coef_on,
                                      t_c)
    if status == HANDOVER:
        A.hpos[:], A.hquat[:], A.hvel[:], A.hom[:] = state
    return status


def book_end(loop: Any, integ: Any, store: Any, space: Any, batch: ContactBatch, res: Any,
             d1: np.ndarray, u1: np.ndarray, dt: float) -> None:
    """The end of a lean tree step as ContactIntegrator.after's (ImplicitStep.finish's commit):
    the store's rows committed at the end overlaps ``d1`` (K,) m and rates -n . ``u1`` (the
    integrator's finish where a row ends), the integrator's booking and the step's info
    (``loop.last``)."""
    integ.pending = None
    rate = np.empty(len(batch))
    ik.overlap_rates(u1, batch.normal, rate)
    if not store.commit_rows(batch, d1, rate, space.t0 + dt):
        space.finish(res)
    integ.booked(batch, space, res, dt)
    step_info(loop.last, res, res.stats, batch.normal, dt)


def after_step(tree: LeanTree, loop: Any, integ: Any, host: Any, dt: float,
               A: Any = None, pairs: tuple[np.ndarray, np.ndarray] | None = None,
               force: np.ndarray | None = None) -> bool:
    """:meth:`LeanTree.step`'s implicit solve after ``mj_step2`` (``tree`` the
    :class:`LeanTree`): the pending step's read, solves, responses and rounds by
    :func:`tree_rounds` (:meth:`LeanTree.rounds` with its start, from the arrays
    :func:`begin_step` made), the step's end by :meth:`ContactIntegrator.after
    <mbplugin.hosts.integrator.ContactIntegrator.after>` (its ``rounds`` the outcome) and
    :func:`~mbplugin.hosts.integrator.step_info`, as :meth:`HostStep.after
    <mbplugin.hosts.step.HostStep.after>` does it. A first solve or round that needs the
    general path is handed to it (``loop.after``; :meth:`LeanTree.rounds` returns what ran
    here). Returns False, nothing run, where :meth:`HostStep.after`'s lean rounds do not
    apply (then call ``loop.after``). ``A``, ``pairs``: the step's :class:`TreeArrays` and
    its contacts' plane and sphere shapes, where known. With ``force`` (K, 3) N, MuJoCo's
    host step is not taken yet: :func:`tree_after` applies it, steps MuJoCo and takes the
    rounds in one call (False: nothing done, MuJoCo not stepped)."""
    pend = integ.pending
    if pend is None or loop._any_free or not loop.plain_redetect():
        return False
    batch, space, P_lin, u0 = pend
    if pairs is None:  # (the pending batch's plane and sphere shapes: step's own)
        pairs = loop._reads._pairs(batch.key)
    blk = loop._art[0]
    if pairs is None or not space.compiled or blk.tag != tree.root:
        return False
    k = len(u0)
    P = P_lin.copy()
    d1, u1, loaded = np.empty(k), np.empty((k, 3)), np.empty(k, dtype=np.bool_)
    if A is None:
        A = tree._arrays(loop.model.arrays)
    d_h, u_h, found, counters, out = tree._work(k)
    counters[:] = 0
    out[:] = 0.0
    s1 = space.s0.copy()
    store = integ.store
    left = int(integ.verify)
    c = np.ascontiguousarray
    wall = time.perf_counter()
    if force is not None:  # (the wall time then includes mj_step2's)
        f = c(force, dtype=float)
        status = tree_after(
            A, batch.a, batch.b, c(batch.point, dtype=float), f, pairs[0], pairs[1], left,
            float(dt), max(loop.margin, LOST_MARGIN), VERIFY_TOL, VERIFY_DU, space.gf, space.gc,
            c(space.fn0, dtype=float), c(space.s0, dtype=float), space.rtol, P, d1, u1, loaded,
            s1, c(blk.response, dtype=float), np.asarray(blk.contact, dtype=np.int64),
            np.asarray(blk.sign, dtype=float), c(u0, dtype=float), counters, d_h, u_h, found,
            out)
        host._predictor, host._applied = (batch, f), None  # (MujocoHost.apply, .step)
        host._predictor_time = host.d.time
        if status == HANDOVER:
            state = (A.hpos.copy(), A.hquat.copy(), A.hvel.copy(), A.hom.copy())
    else:
        status, state = tree_rounds(
            A, pairs[0], pairs[1], 1, left, float(dt), max(loop.margin, LOST_MARGIN),
            VERIFY_TOL, VERIFY_DU, space.gf, space.gc, c(space.fn0, dtype=float),
            c(space.s0, dtype=float), space.rtol, P, d1, u1, loaded, s1, np.zeros((k, 3)),
            0.0, c(blk.response, dtype=float), np.asarray(blk.contact, dtype=np.int64),
            np.asarray(blk.sign, dtype=float), c(u0, dtype=float), counters, d_h, u_h, found,
            out)
    if status == FIRST:
        tree.first_handed += 1
        tree._pre = _FIRST
    else:
        tree.steps += 1
        res = lean_result(space, None, None, P, d1, u1, loaded, s1, counters, dt, wall)
        if status == DONE:
            book_end(loop, integ, store, space, batch, res, d1, u1, dt)
            return True
        tree._pre = (res, left - int(out[0]) + 1,
                     (loop.body_state(*state), d_h.copy(), u_h.copy(), found.copy()))
    try:
        loop.after(host, dt)
    finally:
        tree._pre = None
    return True
