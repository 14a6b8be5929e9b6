"""The common host step of free spheres on a plane in compiled code: the lean path of
:meth:`MujocoContacts.step <mbplugin.mujoco.MujocoContacts.step>`.

A host step of the general path (:meth:`MujocoContacts.step`, :class:`~mbplugin.hosts.ContactLoop`,
:class:`~mbplugin.hosts.step.HostStep`) makes some fifty Python calls between ``mj_step1`` and
``mj_step2``: the rows' state, detection, the store's booking at the step start, W, the
free acceleration, the sub-stepper's set-up, its compiled integration, the booking at the step
end, the forces. For the case most steps of a scene of balls on the ground are in, these are
done here by one compiled call after ``mj_step1`` (:func:`lean_step`: :func:`lean_start`, the
sub-stepper's own compiled integration, :func:`lean_finish`, :func:`lean_correct`), the same
kernels in the same order, over arrays kept from step to step (:class:`LeanArrays`):

* every managed pair a plane (static) and a free sphere, no sphere in two pairs (W block
  diagonal, :func:`mbplugin.hosts.wmatrix.free_rows_delassus`' ``side_blocks`` case), one
  stateless law with a compiled kernel (:meth:`ContactStore.commit_same
  <mbplugin.pipeline.store.ContactStore.commit_same>`' case), the compiled sub-stepper, no
  ``stick``, no user ``control`` callback;
* at the step: either every pair in contact (within the margin) and the store's rows exactly
  those pairs, or every pair within the margin but apart and an empty store (candidates: the
  sub-stepper watches each for its onset; their carried steps are the integrator's), or none
  of them and an empty store; no separated latch; no MuJoCo constraint (``nefc = 0``,
  ``ncon = 0``); no contact ending (no pair touching) at the step's start or end; every group
  integrated to the step's end without an event.

Anything else (an onset, a separation, an event inside the step, a user callback, a native
contact) hands the step back to the general path after ``mj_step1``; a step whose free-flight
estimate (delta + ddelta dt + |g| dt^2 / 2) has a contact end or a pair touch goes there
before the lean integration (which would stop at the event). The lean core changes
nothing that path does not compute again in the same way, so the step is the same. The
kernels are :mod:`mbplugin.mujoco.kernels` (state, free acceleration, forces),
:mod:`mbplugin.hosts.detection` (plane-sphere contacts), :mod:`mbplugin.pipeline.delassus`
(W's blocks; their triple product by ``np.dot`` per block: the BLAS product of NumPy's
stacked ``matmul``, bit for bit), :mod:`mbplugin.pipeline.substep_compiled` (the groups'
integration) and :mod:`mbplugin.pipeline.store_kernel` (the end test); no formula is written
here. MuJoCo's calls after ``mj_step1`` (``mj_fwdActuation``, ``mj_fwdAcceleration``,
``mj_step2``) are made inside the compiled call through MuJoCo's C library
(:mod:`mbplugin.mujoco.capi`), or through the bindings where that library cannot be used.
Units: SI (m, s, kg, N).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numba.core import types
from numba.experimental import structref

from mbplugin._jit import borrowed, njit
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact import kernels as ck
from mbplugin.hosts.arrays import _max_norm_rows
from mbplugin.hosts.correction import MOVE_MIN, _predicted_blocks
from mbplugin.hosts.detection import host_plane_spheres, plane_sphere_contacts
from mbplugin.hosts.protocol import FREE, STATIC
from mbplugin.laws.kernels import NC_MAX, NMEM_MAX, NODE_MAX
from mbplugin.mujoco import capi
from mbplugin.mujoco import kernels as _k
from mbplugin.pipeline import layout
from mbplugin.pipeline import substep_compiled as cm
from mbplugin.pipeline.delassus import _block_normal_diagonal, _side_parts, block_diagonal_w
from mbplugin.pipeline.layout import CONTACT
from mbplugin.pipeline.rules import starts
from mbplugin.pipeline.store import _empty_events
from mbplugin.pipeline.store_kernel import _ends_rows
from mbplugin.pipeline.substep import (
    EXPLICIT_TOL,
    GroupedContactSpace,
    StepResult,
    SubstepStats,
    _law_tables,
)

#: the fields of :class:`LeanArrays`: mjData's and mjModel's arrays (views, bound once), the
#: rows, the pairs, the law, the groups' layout, the options and the work arrays
FIELDS = ("xipos", "xquat", "cvel", "subtree_com", "qacc_smooth", "xmat", "xpos", "qpos", "qpos0",
          "xfrc", "user_xfrc", "geom_friction", "geom_priority", "geom_condim", "body", "root",
          "iquat",
          "iquat_unit", "ipos", "fbody", "free", "vadr", "q3", "q4", "ipos_zero",
          "free_iquat_unit", "static", "mass1", "mass", "inv_inertia", "fixed", "inv_m_ext",
          "sa", "sb", "sbody", "lpos", "lrot", "plane_n", "plane_p", "radius", "a", "b", "keys",
          "n_shapes", "geoms", "pair_mu", "kid", "mode", "order", "gptr", "goff", "widx", "fr",
          "kid_l", "mode_l", "nst_l", "mem_l", "move_min", "point", "normal", "delta", "ddelta",
          "vt", "m_eff", "ra", "rb", "blocks", "wnn", "d", "u", "forced", "muk",
          # the step's own arrays (STEP_FIELDS): written in place, so that the compiled calls
          # return scalars (numba boxes every array it returns: ~0.45 us each)
          "pos", "quat", "vel", "om", "a_free", "tg", "status", "imp", "loaded", "counters",
          "yptr", "Y", "GF", "GC", "ode", "s",
          # each contact's last lever-arm cross matrix, world inverse inertia and their triple
          # product (W's rotational part: kept while its factors are the same to the bit)
          "sk_last", "iw_last", "p_last",
          # the host step's own ``forced`` (bound once: written in place), the carried steps
          # and solvers of the groups in two buffers (one the integrator's carry of the last
          # step, the other this step's: a handed-over step leaves the carry as it was), and
          # :func:`lean_step`'s outputs (the normal forces, slips and end rates)
          "loop_forced", "hg2", "mg2", "fn", "slip", "dd1",
          # MuJoCo's C functions with the model's and data's addresses (:func:`.capi.load`;
          # none: empty), the law rows of a step without store rows (zero coefficients,
          # memory and ODE states, the pairs' law: the store's too, its one law) and the
          # sub-stepper's options
          "fns_c", "fns_none", "coef0", "mem0", "law", "ode0", "rtol", "auto", "tol_e",
          "normal_only",
          # the groups' integration's work arrays (:func:`.substep_compiled.group_work`), and
          # the step's other work arrays (rotations, world inverse inertias, detection indices,
          # end flags, lever-arm cross matrices, a 3 x 3 product, active and candidate flags,
          # the rows' accelerations)
          "gwork", "rot_w", "iiw_w", "idx_w", "end_w", "sk_w", "t_w", "act_w", "cand_w",
          "acc_w")

#: the fields of :data:`FIELDS` that :func:`lean_start` fills for :meth:`LeanSpheres.step`
#: (the rows' state, the free acceleration, the groups' arrays and their integration's
#: outputs)
STEP_FIELDS = FIELDS[FIELDS.index("pos"):FIELDS.index("sk_last")]


@njit
def _same_bits(x, y):
    """Whether the arrays ``x`` and ``y`` (of one shape) hold the same floats to the bit (a
    NaN never; 0.0 and -0.0 apart)."""
    for i in range(x.size):
        a, b = x.flat[i], y.flat[i]
        if not (a == b and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b))):
            return False
    return True


@structref.register
class LeanArraysType(types.StructRef):
    """numba's type of :class:`LeanArrays` (its fields' types without literal values)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class LeanArrays(structref.StructRefProxy):
    """The arrays and constants of one :class:`LeanSpheres` (:data:`FIELDS`) as one argument
    of its compiled calls: one unboxing per call instead of one per array (~60: ~4 us a
    step). Its arrays are borrowed views (:func:`~mbplugin._jit.borrowed`: no reference
    count; their owners are kept by the :class:`LeanSpheres`), so that reading a field and
    passing it to a kernel costs no atomic reference-count update (two per array and call:
    ~300 a step of 10 spheres, ~3 us, before); compiled code only (never boxed)."""


structref.define_proxy(LeanArrays, LeanArraysType, list(FIELDS))


@njit
def lean_arrays(*values):
    """A :class:`LeanArrays` of borrowed views of ``values`` (:data:`FIELDS`' order; the
    caller keeps the arrays alive as long as the result), built by a cached compiled call
    (the proxy's own constructor is compiled afresh in every process: ~0.6 s)."""
    return LeanArrays(*borrowed(values))


#: :func:`lean_start`'s and :func:`lean_finish`'s outcomes: the step's contacts integrated and
#: their forces added to ``xfrc_applied``; no contact (a free flight); the general path takes
#: the step; an event within the step (an onset, an end of contact): the sub-stepper's own
#: integration (:meth:`ContactIntegrator.integrate <mbplugin.hosts.integrator.ContactIntegrator.
#: integrate>`, which books the events in the store) of the lean step's contacts
CONTACTS, NO_CONTACT, HANDOVER, EVENTS = 0, 1, 2, 3


@njit
def lean_start(fns, expect, dt, gnorm, h0, m0, coef, mem, law, ode_src, loop_forced, A):
    """The first part of a host step of the lean case (module docstring) after ``mj_step1``,
    up to the groups' integration (the general path's order and kernels); ``fns`` the
    addresses of MuJoCo's C functions and the ``mjModel*`` / ``mjData*`` (:func:`.capi.load`,
    then ``_address`` of each; empty: the caller makes MuJoCo's calls through the bindings,
    and ``mj_fwdActuation`` + ``mj_fwdAcceleration`` before this call):

    1. the rows' state (``xipos``, ``xquat``, ``cvel``, ``subtree_com`` of ``mjData``;
       :func:`.kernels.row_state`), checked as ``BodyState.validate`` checks it;
    2. the predictive margin dt (2 v_max + 0.1 omega_max) + |g| dt^2 + 1 um (``gnorm`` |g|);
    3. the plane-sphere contacts (``sa``, ``sb``: every managed pair) with
       :func:`~mbplugin.hosts.detection.plane_sphere_contacts` into ``point`` ... ``rb``;
       ``expect`` 0: none may be found (then, with ``fns``, ``mj_step2``: NO_CONTACT), 1: all
       of them (the store's rows);
    4. the store's end test at the step start (:func:`_ends_rows`, law ``kid`` / ``mode``,
       rows ``coef``); W's blocks I/m - [r]x I_w^-1 [r]x of the spheres (sides b) and n.W n
       (``blocks``, ``wnn``), the effective masses, d = delta, u = vt - ddelta n; the free
       acceleration from ``qacc_smooth``; the friction coefficients ``muk`` (K, 2) (of
       ``geom_friction`` / ``geom_priority`` with ``pair_mu``, else as given);
    5. the groups' arrays (one group a contact: :func:`~.substep_compiled.group_start` with
       the carried first steps ``h0`` and solvers ``m0``, ``pack``).

    The rows' state ``pos``, ``quat``, ``vel``, ``om``, the free acceleration ``a_free`` and
    the groups' arrays (``tg``, ``status``, ``imp``, ``loaded``, ``counters``, ``yptr``,
    ``Y``, ``GF``, ``GC``, ``ode``, ``s``) are written into ``A``'s (:data:`STEP_FIELDS`).
    Returns (outcome, margin, hg, mg): CONTACTS for :func:`lean_finish` after
    ``integrate_groups``; HANDOVER where a condition of the lean case fails (nothing outside
    the work arrays changed but the forward stages ``mj_step2`` computes again)."""
    xipos, xquat, cvel, subtree_com = A.xipos, A.xquat, A.cvel, A.subtree_com
    qacc_smooth, xmat, xpos, qpos, qpos0 = A.qacc_smooth, A.xmat, A.xpos, A.qpos, A.qpos0
    geom_friction, geom_priority, body, root = A.geom_friction, A.geom_priority, A.body, A.root
    geom_condim = A.geom_condim
    iquat, iquat_unit, fbody, free, vadr = A.iquat, A.iquat_unit, A.fbody, A.free, A.vadr
    mass1, inv_inertia, fixed, inv_m_ext, sa = A.mass1, A.inv_inertia, A.fixed, A.inv_m_ext, A.sa
    sb, sbody, lpos, lrot, plane_n, plane_p = A.sb, A.sbody, A.lpos, A.lrot, A.plane_n, A.plane_p
    radius, a, b, keys, n_shapes, geoms = A.radius, A.a, A.b, A.keys, A.n_shapes, A.geoms
    pair_mu, kid, mode, order, gptr, goff = A.pair_mu, A.kid, A.mode, A.order, A.gptr, A.goff
    widx, fr, kid_l, mode_l, nst_l, mem_l = A.widx, A.fr, A.kid_l, A.mode_l, A.nst_l, A.mem_l
    point, normal, delta, ddelta, vt, m_eff = A.point, A.normal, A.delta, A.ddelta, A.vt, A.m_eff
    ra, rb, blocks, wnn, d, u, muk = A.ra, A.rb, A.blocks, A.wnn, A.d, A.u, A.muk
    pos, quat, vel, om = A.pos, A.quat, A.vel, A.om
    _k.row_state_into(xipos, xquat, cvel, subtree_com, body, root, iquat, iquat_unit, pos, quat,
                      vel, om)
    k = sa.shape[0]
    if not ck.state_all_valid(pos, quat, vel, om, mass1, inv_inertia):
        return _bad()
    vmax = _max_norm_rows(vel)
    wr = _max_norm_rows(om)
    margin = dt * (2.0 * vmax + 0.1 * wr) + dt * dt * gnorm + 1e-6
    if not (np.isfinite(margin) and margin >= 0.0):
        return _bad()
    n = pos.shape[0]
    rot = A.rot_w
    ck.quat_matrices(quat, rot[:n])
    for i in range(3):
        for j in range(3):
            rot[n, i, j] = 1.0 if i == j else 0.0
    inv_i_w = A.iiw_w
    ck.world_inverse_inertia_ext(rot, inv_inertia, fixed, inv_i_w)
    found = plane_sphere_contacts(sa, sb, sbody, lpos, lrot, plane_n, plane_p, radius, pos,
                                  quat, vel, om, inv_m_ext, inv_i_w, margin, A.idx_w, point,
                                  normal, delta, ddelta, vt, m_eff, ra, rb)
    c_api = fns.shape[0] > 0
    if expect != 1 and not found:
        loop_forced[:] = False
        if c_api:
            qpos0[:] = qpos
            capi.call(fns[capi.STEP2], fns[-2], fns[-1])
        return NO_CONTACT, margin, np.zeros(0), np.zeros(0, dtype=np.int64)
    if found != k or expect == 0 or ode_src.shape[0] != k:
        return _bad()
    if expect == 1:
        if _ends_rows(kid, mode, delta, ddelta, coef, A.end_w):
            return _bad()
    else:  # candidates: every pair apart (the store's start booking: no onset)
        for i in range(k):
            if starts(delta[i]):
                return _bad()
    # a contact that ends, or a pair that touches, within the step by the free flight's
    # overlap delta + ddelta dt + |g| dt^2 / 2 (gravity pressing: an estimate, which only
    # chooses the path): EVENTS, the sub-stepper's integration at once (the groups' would
    # stop at the event: ~330 us for a separation at N = 10)
    event = False
    for i in range(k):
        if (delta[i] + ddelta[i] * dt + 0.5 * gnorm * dt * dt > 0.0) != (expect == 1):
            event = True
    # W's blocks (side_blocks: I/m and [r]x, then (sk @ I_w) @ sk per block) and n.W n
    sk = A.sk_w
    _side_parts(b, rb, inv_m_ext[:n], blocks, sk)
    t = A.t_w
    sk_last, iw_last, p_last = A.sk_last, A.iw_last, A.p_last
    for e in range(k):
        # (a BLAS call each, ~0.1 us: the last product where its factors are the same bits)
        if not (_same_bits(sk[e], sk_last[e]) and _same_bits(inv_i_w[b[e]], iw_last[e])):
            np.dot(sk[e], inv_i_w[b[e]], t)
            np.dot(t, sk[e], p_last[e])
            sk_last[e] = sk[e]
            iw_last[e] = inv_i_w[b[e]]
        blocks[e] -= p_last[e]
    _block_normal_diagonal(blocks, normal, wnn)
    for i in range(k):
        m_eff[i] = 1.0 / wnn[i] if wnn[i] > 0 else np.inf
        d[i] = delta[i]
        for c in range(3):
            u[i, c] = vt[i, c] - ddelta[i] * normal[i, c]
    if c_api:
        capi.call(fns[capi.FWD_ACTUATION], fns[-2], fns[-1])
        capi.call(fns[capi.FWD_ACCELERATION], fns[-2], fns[-1])
    a_free = A.a_free
    _k.free_point_acceleration_into(qacc_smooth, xmat, xpos, fbody, free, vadr, n, a, b, point,
                                    A.acc_w, a_free)
    if pair_mu:
        mu = _k.pair_friction(keys, n_shapes, geoms, geom_friction, geom_priority,
                              geom_condim)
        for i in range(k):
            muk[i, 0] = mu[i]
            muk[i, 1] = mu[i]
    if event:
        return EVENTS, margin, np.zeros(0), np.zeros(0, dtype=np.int64)
    ode = ode_src
    s = A.s
    s[:] = 0.0
    tg, hg, mg, status, imp, loaded, counters = cm.group_start(k, k, True, order, gptr, h0,
                                                               m0)
    # every contact a row of the store (active), none latched (no candidate); or (expect 2)
    # every contact a free pair watched for its onset (the sub-stepper's _candidates: 1)
    rows = expect == 1
    act, cand = A.act_w, A.cand_w
    act[:] = rows
    cand[:] = 0 if rows else 1
    yptr, Y, GF, GC = cm.pack(order, gptr, goff, widx, blocks.ravel(), fr, normal, a_free,
                              coef, mem, muk, act, law, cand, kid_l, mode_l, nst_l, mem_l, d,
                              u, s, 0, ode)
    if Y.shape[0] != A.Y.shape[0] or GF.shape[0] != A.GF.shape[0]:
        return _bad()
    A.tg[:] = tg
    A.status[:] = status
    A.imp[:] = imp
    A.loaded[:] = loaded
    A.counters[:] = counters
    A.yptr[:] = yptr
    A.Y[:] = Y
    A.GF[:] = GF
    for i in range(k):
        A.GC[i] = GC[i]
    A.ode[:] = ode
    return CONTACTS, margin, hg, mg


@njit
def _bad():
    """:func:`lean_start`'s HANDOVER outcome."""
    return HANDOVER, 0.0, np.zeros(0), np.zeros(0, dtype=np.int64)


@njit
def lean_finish(fns, coef, dt, hg, loop_forced, A, rows=True, booked=False):
    """The rest of a host step of the lean case after :func:`lean_start` and the groups'
    ``integrate_groups`` (``A``'s ``status``, ``Y``, the impulses ``imp``): HANDOVER where a group
    did not reach the step's end (an event, a failure) or its state is not finite
    (``unpack``) or a contact ends at the end state (the store's end test); else the end
    state into ``d``, ``u``, the impulse-equivalent forces P / dt added to ``xfrc``
    (``user_xfrc`` gets its values first; ``forced`` the rows pushed), whether the host's
    step needs no position correction (:func:`~mbplugin.hosts.correction.overlap_predicted`'s
    block test, MOVE_MIN ``move_min``; ``om`` the rows' angular velocities), and with
    ``fns``: ``mj_step2`` and ``xfrc`` back to the user's.

    Returns (outcome, ddelta1, normal force (K,) N, slip (K,) m/s, predicted, free rows not
    pushed, the shortest of the groups' next steps ``hg`` (s)). The normal force n . P / dt
    and the slip |u - (n . u) n| are :class:`~mbplugin.hosts.step.HostStep`'s, its
    ``einsum("ki,ki->k")`` summed as NumPy 2 sums it, (x0 y0 + x2 y2) + x1 y1."""
    order, gptr, kid, mode, move_min, xfrc = A.order, A.gptr, A.kid, A.mode, A.move_min, A.xfrc
    qpos, qpos0, user_xfrc, xipos, body = A.qpos, A.qpos0, A.user_xfrc, A.xipos, A.body
    static, free, a, b, point, normal = A.static, A.free, A.a, A.b, A.point, A.normal
    delta, ddelta, vt, ra, rb, blocks, d = A.delta, A.ddelta, A.vt, A.ra, A.rb, A.blocks, A.d
    u, forced = A.u, A.forced
    status, yptr, GC, Y, s, ode, imp = A.status, A.yptr, A.GC, A.Y, A.s, A.ode, A.imp
    a_free, om = A.a_free, A.om
    k = d.shape[0]
    z1 = np.zeros(0)
    bad = (HANDOVER, z1, z1, z1, False, 0, 0.0)
    ddelta1 = z1
    if not booked:
        worst = cm.DONE
        for g in range(status.shape[0]):
            if status[g] == cm.FAILED or (status[g] != cm.DONE and status[g] != cm.EVENT):
                return bad
            if status[g] == cm.EVENT:
                worst = cm.EVENT
        if worst == cm.EVENT:
            return (EVENTS, z1, z1, z1, False, 0, 0.0)
        if not cm.unpack(order, gptr, yptr, GC, Y, d, u, s, 0, ode):
            return bad
        ddelta1 = cm.relative_at(u, normal)[0]
        if rows:
            if _ends_rows(kid, mode, d, ddelta1, coef, A.end_w):
                return bad
        else:  # candidates: none touching at the end (else the store's end booking: an onset)
            for i in range(k):
                if starts(d[i]):
                    return bad
    force = imp / dt
    fn, slip = np.empty(k), np.empty(k)
    for i in range(k):
        n0, n1, n2 = normal[i, 0], normal[i, 1], normal[i, 2]
        fn[i] = (force[i, 0] * n0 + force[i, 2] * n2) + force[i, 1] * n1
        un = (u[i, 0] * n0 + u[i, 2] * n2) + u[i, 1] * n1
        x, y, z = u[i, 0] - un * n0, u[i, 1] - un * n1, u[i, 2] - un * n2
        slip[i] = np.sqrt(x * x + y * y + z * z)
    predicted = _predicted_blocks(blocks.ravel(), imp, vt, ddelta, normal, delta, d, a_free, a,
                                  b, ra, rb, om, dt, move_min)
    user_xfrc[:] = xfrc
    forced[:] = False
    loop_forced[:] = False
    _k.add_forces(xfrc, xipos, body, static, a, b, point, force, forced)
    flying = 0
    for j in range(free.shape[0]):
        if not forced[free[j]]:
            flying += 1
    if fns.shape[0] > 0:
        qpos0[:] = qpos
        capi.call(fns[capi.STEP2], fns[-2], fns[-1])
        xfrc[:] = user_xfrc
    return CONTACTS, ddelta1, fn, slip, predicted, flying, hg.min() if hg.shape[0] else 0.0


@njit
def lean_step(A, coef, expect, dt, gnorm, src, which, c_api, correct):
    """A whole host step of the lean case after ``mj_step1`` in one compiled call (one
    unboxing of ``A`` and of the store's coefficients instead of one per call and array, no
    array returned): :func:`lean_start` (with MuJoCo's C calls ``A.fns_c`` where ``c_api``;
    the law rows ``coef``: the store's, or ``A.coef0`` for candidates; ``A.mem0``, ``A.law``,
    ``A.ode0`` the memory, laws and ODE states: the store's one law has no memory and no ODE
    state, so those the store holds are zeros and unread), the groups' ``integrate_groups``
    (``A.rtol``, ``A.auto``, ``A.tol_e``, ``A.normal_only``: the sub-stepper's options; the
    kept work arrays ``A.gwork``, :func:`~.substep_compiled.integrate_groups_in`) from
    the carried steps and solvers ``A.hg2[src]``, ``A.mg2[src]`` (``src`` -1: none) into
    ``A.hg2[which]``, ``A.mg2[which]``, :func:`lean_finish` (its normal forces, slips and end
    rates into ``A.fn``, ``A.slip``, ``A.dd1``) and, with ``c_api`` and ``correct`` where the
    end overlaps are not predicted, :func:`lean_correct` (margin twice the detection's, as
    the host step's); the same kernels in the same order as the separate calls. Returns
    (outcome, margin, predicted, free rows not pushed, the shortest next step (s),
    :func:`lean_correct`'s outcome (-1: not run), and the integration's counters: steps,
    right-hand sides, events, explicit steps); an outcome other than CONTACTS as
    :func:`lean_start`'s or :func:`lean_finish`'s (EVENTS: the caller's sub-stepper takes
    the step from ``A``'s contacts)."""
    fns = A.fns_c if c_api else A.fns_none
    h0, m0 = (A.hg2[src], A.mg2[src]) if src >= 0 else (A.hg2[0][:0], A.mg2[0][:0])
    out, margin, hg, mg = lean_start(fns, expect, dt, gnorm, h0, m0, coef, A.mem0, A.law,
                                     A.ode0, A.loop_forced, A)
    if out != CONTACTS:
        return out, margin, False, 0, 0.0, -1, 0, 0, 0, 0
    hv, mv = A.hg2[which], A.mg2[which]
    hv[:] = hg
    mv[:] = mg
    cm.integrate_groups_in(A.gptr, A.yptr, A.goff, A.GF, A.GC, A.Y, A.tg, A.status, hv, dt,
                           A.rtol, A.imp, A.loaded, A.counters, A.auto, mv, A.tol_e,
                           A.normal_only, A.gwork)
    out, ddelta1, fn, slip, predicted, flying, h_min = lean_finish(
        fns, coef, dt, hv, A.loop_forced, A, expect == 1)
    n = A.counters
    if out != CONTACTS:
        return out, margin, False, 0, 0.0, -1, n[0], n[1], n[2], n[3]
    A.fn[:] = fn
    A.slip[:] = slip
    if expect == 1:
        A.dd1[:] = ddelta1
    done = -1
    if correct and c_api and not predicted:
        done, fly = lean_correct(A.pos, A.quat, A.vel, A.om, 2.0 * margin, A.loaded, A.d, A)
        if done == CORRECTED:
            flying = fly
    return out, margin, predicted, flying, h_min, done, n[0], n[1], n[2], n[3]


#: :func:`lean_correct`'s outcomes: done (the rows moved marked in ``forced``), the general
#: correction's code takes it (nothing changed), an orientation that is zero or not finite
CORRECTED, GENERAL, BAD_POSE = 0, 1, 2


@njit
def lean_correct(pos, quat, vel, om, margin, loaded, d_end, A):
    """The position correction after the host's step of a lean step whose end overlap the
    host's semi-implicit step does not predict (:meth:`ContactLoop.correction
    <mbplugin.hosts.ContactLoop.correction>` of :mod:`mbplugin.hosts.correction`, the same
    kernels and order, for the lean case's block-diagonal W and static sides a): the free
    rows' end poses from ``qpos`` (:func:`.kernels.free_end_poses`, the rows' start ``pos``,
    ``quat`` elsewhere), the contacts' overlaps there (:func:`host_plane_spheres` within
    ``margin``; NaN where beyond), the contacts that carried force (``loaded``) or touch at
    either end (``d_end`` the integrated overlaps) and are found, their gaps to the
    integrated overlaps and, where one exceeds ``move_min``, the position impulses mu = gap /
    n.W n (``wnn``) along ``normal`` on the spheres (rows ``b``, lever arms ``rb``, ``mass``):
    each moves by mu n / m (:func:`.kernels.shift_free`; ``forced`` marks it). GENERAL where a
    sphere would turn (mu n not along its lever arm): nothing changed, the general code
    corrects. Returns (outcome, free rows not pushed)."""
    qpos, q3, q4, free, ipos, iquat = A.qpos, A.q3, A.q4, A.free, A.ipos, A.iquat
    ipos_zero, free_iquat_unit, sa, sb, sbody = A.ipos_zero, A.free_iquat_unit, A.sa, A.sb, A.sbody
    lpos, lrot, plane_n, plane_p, radius = A.lpos, A.lrot, A.plane_n, A.plane_p, A.radius
    wnn, b, rb, normal, mass, move_min = A.wnn, A.b, A.rb, A.normal, A.mass, A.move_min
    forced = A.forced
    n = pos.shape[0]
    k = sa.shape[0]
    epos, equat = pos.copy(), quat.copy()
    if not _k.free_end_poses(qpos, q3, q4, free, ipos, iquat, ipos_zero, free_iquat_unit,
                             epos, equat):
        return BAD_POSE, 0
    d_now, u_now = np.empty(k), np.empty((k, 3))
    found = np.empty(k, dtype=np.bool_)
    host_plane_spheres(sa, sb, sbody, lpos, lrot, plane_n, plane_p, radius, epos, equat, vel,
                       om, margin, np.zeros((k, 3)), d_now, u_now, found)
    dx, dth = np.zeros((n, 3)), np.zeros((n, 3))
    worst = 0.0
    for i in range(k):
        if not found[i]:
            d_now[i] = np.nan
    for i in range(k):
        if (loaded[i] or d_now[i] > 0 or d_end[i] > 0) and np.isfinite(d_now[i]):
            worst = max(worst, abs(d_now[i] - d_end[i]))
    if worst > move_min:
        for i in range(k):
            if not ((loaded[i] or d_now[i] > 0 or d_end[i] > 0) and np.isfinite(d_now[i])):
                continue
            mu = (d_now[i] - d_end[i]) / wnn[i] if wnn[i] != 0 else 0.0
            r = b[i]
            f0, f1, f2 = (1.0 * mu) * normal[i, 0], (1.0 * mu) * normal[i, 1], (
                1.0 * mu) * normal[i, 2]
            # a turn (r x f != 0): the general code's inertia product and rotation
            if (rb[i, 1] * f2 - rb[i, 2] * f1 != 0 or rb[i, 2] * f0 - rb[i, 0] * f2 != 0
                    or rb[i, 0] * f1 - rb[i, 1] * f0 != 0):
                return GENERAL, 0
            dx[r, 0], dx[r, 1], dx[r, 2] = f0 / mass[r], f1 / mass[r], f2 / mass[r]
    only, _ = _k.shift_free(qpos, q3, free, dx, dth)
    for j in only:
        forced[free[j]] = True
    flying = 0
    for j in range(free.shape[0]):
        if not forced[free[j]]:
            flying += 1
    return CORRECTED, flying


class LeanSpheres:
    """The lean path of one :class:`~mbplugin.mujoco.MujocoContacts` (module docstring); made
    by :meth:`of` once the general path has detected its pairs. ``c_api``: MuJoCo's calls
    after ``mj_step1`` through its C library where :func:`.capi.load` finds it (False: the
    bindings)."""

    def __init__(self, contacts: Any, det: Any, c_api: bool = True) -> None:
        from mbplugin.mujoco.backend import MujocoStepInfo

        self.c = contacts
        self.info_cls = MujocoStepInfo
        loop, host = contacts.loop, contacts.host
        self.loop, self.host, self.store, self.integ = loop, host, loop.store, loop.integrator
        mj, m, d = contacts.mj, contacts.mj_model, contacts.mj_data
        a, b, key, law, k_hertz, r_eff = det._const
        self.a, self.b, self.keys = (np.array(x) for x in (a, b, key))
        self.keys.flags.writeable = False  # (shared with the integrator's carries)
        self.const = (law, k_hertz, r_eff)
        self.sides = np.stack([self.a, self.b], axis=1)
        k = self.k = len(key)
        arr = loop.model.arrays
        fr_rows = host.free_rows
        fixed = loop._fixed
        inv_m_ext = np.zeros(len(fixed) + 1)
        inv_m_ext[:-1][~fixed] = 1.0 / loop._mass1[~fixed]
        self.pair_mu = loop.friction_mode not in ("given", "none")
        f = self.integ.friction
        f = f if (f is not None and f.active) else None
        fr = layout.head(f)  # (the lean case has no stick spring)
        muk = np.zeros((k, 2))
        if f is not None:
            muk[:, 0], muk[:, 1] = f.mu, f.static
        # the groups' layout of a block-diagonal W: every contact a group of its own
        lay = GroupedContactSpace.__new__(GroupedContactSpace)
        lay.k, lay.W = k, block_diagonal_w(k, np.zeros((k, 3, 3)))
        lay._groups(4 + NODE_MAX)
        fns = capi.load(mj) if c_api else None
        #: MuJoCo's C functions (:func:`.capi.load`), None: the bindings
        self.fns = fns
        self.user_xfrc = np.empty_like(d.xfrc_applied)
        # (the work arrays: the step's detection, W, state and flags)
        # (point, normal, delta, ddelta, vt, m_eff, ra, rb, blocks, wnn, d, u)
        self.work = (*(np.empty((k, 3)) for _ in range(2)), np.empty(k), np.empty(k),
                     np.empty((k, 3)), np.empty(k), *(np.empty((k, 3)) for _ in range(2)),
                     np.empty((k, 3, 3)), np.empty(k), np.empty(k), np.empty((k, 3)))
        self.forced = np.zeros(len(fixed), dtype=np.bool_)
        fast = loop.store._fast_law()  # (a store's laws never change)
        kid_l, mode_l, nst_l, mem_l = _law_tables(loop.store.laws)
        # the C functions, then the model's and the data's addresses
        self._fns = (np.zeros(0, dtype=np.uint64) if fns is None else
                     np.append(fns, np.array([m._address, d._address], dtype=np.uint64)))
        self._opt = m.opt
        self._gravity = m.opt.gravity  # (a view of the model's option: its values as they are)
        values = dict(
            xipos=d.xipos, xquat=d.xquat, cvel=d.cvel, subtree_com=d.subtree_com,
            qacc_smooth=d.qacc_smooth, xmat=d.xmat, xpos=d.xpos, qpos=d.qpos, qpos0=host._qpos0,
            xfrc=d.xfrc_applied, user_xfrc=self.user_xfrc, geom_friction=m.geom_friction,
            geom_priority=m.geom_priority, geom_condim=m.geom_condim, body=host.body,
            root=host.root, iquat=host.iquat,
            iquat_unit=host._iquat_unit, ipos=host.ipos, fbody=fr_rows.fbody, free=host.free,
            vadr=fr_rows.vadr, q3=fr_rows._q3, q4=fr_rows._q4, ipos_zero=fr_rows._ipos_zero,
            free_iquat_unit=fr_rows._iquat_unit, static=host._static, mass1=loop._mass1,
            mass=loop.mass, inv_inertia=loop.inv_inertia, fixed=fixed, inv_m_ext=inv_m_ext,
            sa=det.sa, sb=det.sb, sbody=arr.body, lpos=arr.lpos, lrot=arr.lrot,
            plane_n=arr.plane_n, plane_p=arr.plane_p, radius=arr.radius, a=self.a, b=self.b,
            keys=self.keys, n_shapes=int(loop.model.n_shapes), geoms=contacts.geoms,
            pair_mu=self.pair_mu, kid=int(fast[0]), mode=int(fast[1]), order=lay.order,
            gptr=lay.gptr, goff=lay.goff, widx=lay.widx, fr=fr, kid_l=kid_l, mode_l=mode_l,
            nst_l=nst_l, mem_l=mem_l, move_min=float(MOVE_MIN), forced=self.forced, muk=muk)
        for name, x in zip(("point", "normal", "delta", "ddelta", "vt", "m_eff", "ra", "rb",
                            "blocks", "wnn", "d", "u"), self.work, strict=True):
            values[name] = x
        # the step's arrays (STEP_FIELDS; one group a contact, 4 states each: a stateless law)
        nr = len(host.body)
        step_arrays = dict(
            pos=np.empty((nr, 3)), quat=np.empty((nr, 4)), vel=np.empty((nr, 3)),
            om=np.empty((nr, 3)), a_free=np.empty((k, 3)), tg=np.empty(k),
            status=np.empty(k, dtype=np.int64), imp=np.empty((k, 3)),
            loaded=np.empty(k, dtype=np.bool_), counters=np.empty(4, dtype=np.int64),
            yptr=np.empty(k + 1, dtype=np.int64), Y=np.empty(4 * k), GF=np.empty(lay.goff[-1]),
            GC=np.zeros(k, dtype=CONTACT), ode=np.empty((k, NODE_MAX)), s=np.empty((k, 3)))
        values.update(step_arrays)
        values.update(sk_last=np.full((k, 3, 3), np.nan), iw_last=np.full((k, 3, 3), np.nan),
                      p_last=np.zeros((k, 3, 3)), loop_forced=loop.forced,
                      hg2=np.zeros((2, k)), mg2=np.zeros((2, k), dtype=np.int64),
                      fn=np.zeros(k), slip=np.zeros(k), dd1=np.zeros(k), fns_c=self._fns,
                      fns_none=np.zeros(0, dtype=np.uint64), coef0=np.zeros((k, NC_MAX)),
                      mem0=np.zeros((k, NMEM_MAX)), law=np.ascontiguousarray(law, dtype=np.int64),
                      ode0=np.zeros((k, NODE_MAX)), rtol=float(self.integ.rtol),
                      auto=self.integ.solver == "compiled", tol_e=float(EXPLICIT_TOL),
                      normal_only=bool(self.integ.normal_only), gwork=cm.group_work(),
                      rot_w=np.empty((nr + 1, 3, 3)), iiw_w=np.empty((nr + 1, 3, 3)),
                      idx_w=np.empty(k, dtype=np.int64), end_w=np.empty(k, dtype=np.bool_),
                      sk_w=np.empty((k, 3, 3)), t_w=np.empty((3, 3)),
                      act_w=np.empty(k, dtype=np.bool_), cand_w=np.empty(k, dtype=np.int64),
                      acc_w=np.empty((3, nr + 1, 3)))
        #: the two buffers of the groups' carried steps and solvers (:func:`lean_step`)
        self._hv = (values["hg2"][0], values["hg2"][1])
        self._mv = (values["mg2"][0], values["mg2"][1])
        #: :func:`lean_step`'s normal forces, slips and end rates
        self.outputs = (values["fn"], values["slip"], values["dd1"])
        #: :data:`STEP_FIELDS`' arrays (those of :attr:`arrays`)
        self.step_arrays = tuple(step_arrays[name] for name in STEP_FIELDS)
        #: the compiled calls' arrays and constants (:class:`LeanArrays`: borrowed views of
        #: ``values``' arrays, kept alive by :attr:`_owners`)
        self.arrays = lean_arrays(*(values[name] for name in FIELDS))
        self._owners = values
        self._none = _empty_events()
        self._g: tuple[bytes, np.ndarray, float] | None = None
        self._keys_ok: Any = None
        self._h_ok: Any = None
        # a step of candidates only (expect 2): their coefficients as the empty store aligns
        # them (ContactStore.aligned: zeros)
        self._coef0 = values["coef0"]
        #: host steps taken by the lean path, and of them with MuJoCo's C calls
        self.steps = self.c_steps = 0
        self._no_fns = values["fns_none"]
        geoms, bodies = _k.contact_ids(key, loop.model.n_shapes, contacts.geoms, contacts.rows,
                                       self.sides)
        self.geoms_of, self.bodies_of = geoms, bodies

    @classmethod
    def of(cls, contacts: Any) -> LeanSpheres | bool:
        """The lean path of ``contacts``; False where there is none: its managed pairs are not
        all plane (static) - free sphere pairs of distinct spheres, its law not one stateless
        compiled law, its options not the compiled sub-stepper without ``stick``."""
        loop = contacts.loop
        det = loop._plane_spheres
        if (det is None or loop.solver != "compiled"
                or loop.stick is not None or loop.store._fast_law() is None
                or loop.any_art or len(loop.store.laws) != 1):
            return False
        if det._const is None:
            # the pairs' constant fields (sides, keys, laws, Hertz's k, r_eff: none depends on
            # the state) before the first step, so that the first step may be lean too
            n = len(loop.kind)
            quat = np.zeros((n, 4))
            quat[:, 0] = 1.0
            det._constants(loop.body_state(np.zeros((n, 3)), quat, np.zeros((n, 3)),
                                           np.zeros((n, 3))))
        a, b = det._const[0], det._const[1]
        kind = loop.kind
        if (not len(b) or len(np.unique(b)) != len(b) or np.any(b < 0)
                or np.any(kind[b] != FREE) or np.any((a >= 0) & (kind[a] != STATIC))):
            return False
        return cls(contacts, det)

    def _expect(self) -> int:
        """1: the store's rows are every pair and the integrator carries each one's step; 2:
        no row, and the integrator carries each pair's step or none (the pairs may be
        candidates: within the margin, apart); 0: no row (a free flight only); -1: none of
        these (the general path)."""
        store = self.store
        if len(store.latched_keys):
            return -1
        if not len(store):
            h = self.integ._h_of
            if h is None or h is self._h_ok or np.array_equal(h[0], self.keys):
                return 2
            return 0
        if store.keys is not self._keys_ok:
            if not np.array_equal(store.keys, self.keys):
                return -1
            self._keys_ok = store.keys
        h = self.integ._h_of
        if h is None:
            return -1
        if h is not self._h_ok:
            if not np.array_equal(h[0], self.keys):
                return -1
            self._h_ok = h
        return 1

    def gravity(self) -> tuple[np.ndarray, float]:
        """MuJoCo's gravity (3,) m/s^2 (:meth:`MujocoContacts.gravity
        <mbplugin.mujoco.MujocoContacts.gravity>`) and its norm (as ``np.linalg.norm``), kept
        while the option's bytes and flags are the same."""
        raw = (self._opt.disableflags, self._gravity.tobytes())
        if self._g is None or self._g[0] != raw:
            g = self.c.gravity()
            self._g = (raw, g, float(np.linalg.norm(g)))
        return self._g[1], self._g[2]

    def step(self) -> tuple[Any, bool]:
        """One host step by the lean path: (the step's info, True), or (None, whether
        ``mj_step1`` ran: the general path continues from there)."""
        expect = self._expect()
        # (LeanArrays holds the host step's ``forced``: a replaced one, the general path)
        if expect < 0 or self.loop.forced is not self._owners["loop_forced"]:
            return None, False
        c, loop, host, store, integ = self.c, self.loop, self.host, self.store, self.integ
        mj, m, d = c.mj, c.mj_model, c.mj_data
        mj.mj_step1(m, d)
        if d.nefc or d.ncon:
            return None, True
        # MuJoCo's C calls from compiled code unless a Python callback could run in them (an
        # exception it raises becomes MuJoCo's error, thrown through the compiled frames)
        c_api = self.fns is not None and (
            mj.get_mjcb_control() is None and mj.get_mjcb_act_dyn() is None
            and mj.get_mjcb_act_gain() is None and mj.get_mjcb_act_bias() is None
            and mj.get_mjcb_sensor() is None and mj.get_mjcb_time() is None
            and mj.get_mjcb_passive() is None and mj.get_mju_user_warning() is None)
        if not c_api:
            mj.mj_fwdActuation(m, d)
            mj.mj_fwdAcceleration(m, d)
        dt = float(self._opt.timestep)
        g, gnorm = self.gravity()
        wall = time.perf_counter()
        src = _carry(self, expect)
        which = 1 if src == 0 else 0  # (the carry buffer not in the integrator)
        rows = expect == 1
        coef = store.coef if rows else self._coef0
        out, margin, predicted, flying, h_min, done, *count = lean_step(
            self.arrays, coef, expect, dt, gnorm, src, which, c_api, c.correct_positions)
        event = None
        if out == EVENTS:  # the sub-stepper's integration, its events booked in the store
            event = _events(self, float(d.time), dt)
            out, _, fn, slip, predicted, flying, _ = lean_finish(
                self._fns if c_api else self._no_fns, coef, dt, self._hv[which], loop.forced,
                self.arrays, rows, True)
        if out == HANDOVER:
            return None, True
        loop.margin = 2.0 * margin
        loop.pending = None
        integ.pending = None
        self.steps += 1
        self.c_steps += c_api
        if out == NO_CONTACT:
            return _no_contact(self, c_api, g, dt), True
        if event is not None:  # (booked by the store and the integrator)
            stats = event[2].stats
        else:
            fn, slip = self.outputs[0].copy(), self.outputs[1].copy()
            stats = _book(self, rows, which, h_min, count, time.perf_counter() - wall)
        dd = self.work[10]
        info = self.info_cls(self.k, stats, fn, self.keys.copy(), self.sides.copy(), dd.copy(),
                             slip, self.bodies_of.copy(), self.geoms_of.copy())
        loop.last = info  # (a StepInfo with MuJoCo's ids)
        if not c_api:
            host._qpos0[:] = d.qpos
            try:
                mj.mj_step2(m, d)
            finally:
                d.xfrc_applied[:] = self.user_xfrc
        if c.correct_positions and not predicted and done != CORRECTED:
            flying = _correct(self, event, done, flying, h_min, which, stats)
        if c.exact_flight and flying:
            host.free_rows.flight(~self.forced[host.free], g, dt)
        c.last = info
        return info, True


def _carry(self: LeanSpheres, expect: int) -> int:
    """The buffer (0, 1) of the integrator's carried steps and solvers of the pairs for
    :func:`lean_step` (those of another path copied into buffer 1), -1: none carried."""
    h = self.integ._h_of
    if not expect or h is None:
        return -1
    if h[1] is self._hv[0]:
        return 0
    if h[1] is not self._hv[1]:
        self._hv[1][:] = h[1]
        self._mv[1][:] = h[2]
    return 1


def _no_contact(self: LeanSpheres, c_api: bool, g: np.ndarray, dt: float) -> Any:
    """The rest of a lean step without contact (:func:`lean_start`'s NO_CONTACT): the store's
    and the integrator's bookings of a step without contact (``_close``: no event), the info,
    ``mj_step2`` through the bindings (without ``c_api``), the free flight. Returns the info."""
    c, loop, host, store, integ = self.c, self.loop, self.host, self.store, self.integ
    store.last_onsets = store.last_separations = self._none  # (_close: no event)
    store._seq += 1
    integ.forget_warm()
    empty = ContactBatch.empty()
    loop.last = loop.make_info(0, SubstepStats(), np.zeros(0), empty.key,
                               np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(0))
    if not c_api:
        d = c.mj_data
        host._qpos0[:] = d.qpos
        c.mj.mj_step2(c.mj_model, d)
    if c.exact_flight and len(host.free):
        host.free_rows.flight(np.ones(len(host.free), dtype=bool), g, dt)
    c.last = c._info(loop.last)
    return c.last


def _book(self: LeanSpheres, rows: bool, which: int, h_min: float, count: list[int],
          wall: float) -> SubstepStats:
    """The store's two bookings of a lean step without event (start and end: the same rows,
    no event: ``ContactStore._close`` of no onset and no separation, twice; the last overlaps
    and rates the end's) and the integrator's carries (``ContactIntegrator.integrate``'s: the
    groups' next steps and solvers, buffer ``which``, the shortest ``h_min`` s). Returns the
    step's counters (``count``: steps, right-hand sides, events, explicit steps; ``wall`` s)."""
    store, integ = self.store, self.integ
    store.last_onsets = store.last_separations = self._none
    store._seq += 2
    if rows:
        store._delta_last, store._ddelta_last = self.work[10].copy(), self.outputs[2].copy()
    else:  # (the rows' last overlaps and rates: no row)
        store._delta_last, store._ddelta_last = np.zeros(0), np.zeros(0)
    integ._warm = None
    integ._h, integ._keys = h_min, (self.keys if rows else store.keys.copy())
    integ._p_of = None
    integ._h_of = self._h_ok = (self.keys, self._hv[which], self._mv[which])
    return SubstepStats(count[0], count[1], count[2], wall, count[3])


def _correct(self: LeanSpheres, event: Any, done: int, flying: int, h_min: float, which: int,
             stats: SubstepStats) -> int:
    """The position correction of a lean step whose end overlaps the host's step does not
    predict, after ``mj_step2``: :func:`lean_correct` unless :func:`lean_step` ran it
    (``done`` >= 0), else the general correction (:meth:`ContactLoop.correction
    <mbplugin.hosts.ContactLoop.correction>`) from the step's contacts (``event``: those of
    :func:`_events`), W and result. Returns the free rows not pushed (``flying`` where
    nothing moved)."""
    loop, host = self.loop, self.host
    pos, quat, vel, om, a_free = self.step_arrays[:5]
    imp, loaded = self.step_arrays[7:9]
    blocks, wnn, dd, u = self.work[8:]
    if done < 0:
        done, fly = lean_correct(pos, quat, vel, om, loop.margin, loaded, dd, self.arrays)
        if done == CORRECTED:
            return fly
    if event is not None:
        batch, W, res, af = event
    else:
        batch, W, af = _batch(self), block_diagonal_w(self.k, blocks.copy()), a_free.copy()
        res = StepResult(imp.copy(), dd.copy(), u.copy(), loaded.copy(), stats, h_min,
                         self._hv[which].copy(), self._mv[which].copy())
    loop.pending = (batch, W, res, af, wnn.copy())
    bodies = BodyState(pos.copy(), quat.copy(), vel.copy(), om.copy(), loop._mass1,
                       loop.inv_inertia, loop._fixed)
    end = host.end_poses(bodies)
    dx, dth = loop.correction(loop.end_overlaps(end), end)
    forced = self.forced
    forced[host.free_rows.move(dx, dth, end)] = True
    return int(np.count_nonzero(~forced[host.free]))


def _batch(self: LeanSpheres) -> ContactBatch:
    """A lean step's contacts (:class:`LeanSpheres` ``self``) as the general path's detection
    gives them (a new batch of copies of its ``work`` arrays; ``m_eff`` 1 / n.W n, as the host
    step sets it)."""
    point, normal, delta, ddelta, vt, m_eff, ra, rb = self.work[:8]
    law, k_hertz, r_eff = self.const
    return ContactBatch(self.a.copy(), self.b.copy(), self.keys.copy(), point.copy(),
                        normal.copy(), delta.copy(), ddelta.copy(), vt.copy(), m_eff.copy(),
                        r_eff.copy(), ra.copy(), rb.copy(), law.copy(), k_hertz.copy())


def _events(self: LeanSpheres, t: float, dt: float
            ) -> tuple[ContactBatch, Any, StepResult, np.ndarray]:
    """A lean step with an event (an onset, an end of contact) from :func:`lean_start`'s
    contacts, W and free acceleration: the host step's bookings and integration
    (:meth:`HostStep.step <mbplugin.hosts.step.HostStep.step>`: the store's start booking,
    :meth:`ContactIntegrator.integrate <mbplugin.hosts.integrator.ContactIntegrator.
    integrate>`, which books the events and the end) over [``t``, ``t`` + ``dt``] (s); the
    end state, impulses and loads into ``self.arrays`` for :func:`lean_finish` (``booked``).
    Returns (contacts, W, the sub-stepper's result, free acceleration (K, 3) m/s^2)."""
    store, integ, loop = self.store, self.integ, self.loop
    batch = _batch(self)
    if not store.commit_rows(batch, batch.delta, batch.ddelta, t):
        store.commit(batch, t, aligned=False, compiled=True)
    W = block_diagonal_w(self.k, self.work[8].copy())
    a_free = self.step_arrays[4].copy()
    u0 = batch.vt - batch.ddelta[:, None] * batch.normal
    res = integ.integrate(batch, W, a_free, u0, integ.stick_start(batch), t, dt,
                          loop.pair_mu(self.host, batch))
    self.work[10][:] = res.delta
    self.work[11][:] = res.u
    self.step_arrays[7][:] = res.impulse
    self.step_arrays[8][:] = res.loaded
    return batch, W, res, a_free
