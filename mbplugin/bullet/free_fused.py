"""Free bodies at rest on static ground in two compiled calls (the lean case of
:meth:`mbplugin.hosts.HostStep.step` for free rows: a box on its corners, a hull on a face).

A free body resting on managed static ground costs :meth:`HostStep.step
<mbplugin.hosts.HostStep.step>` about a hundred Python frames and NumPy calls around a dozen
compiled ones: the store's commit at the step start
(:meth:`ContactStore.commit_rows <mbplugin.pipeline.store.ContactStore.commit_rows>`), W of the
free rows (:func:`mbplugin.hosts.wmatrix.free_rows_delassus`) and its normal entries, each
contact's effective mass and velocity, the free acceleration (gravity; PyBullet's own contacts
on the rows, :meth:`BulletHost.native_acceleration
<mbplugin.bullet.host.BulletHost.native_acceleration>`), the contact-space integration
(:meth:`GroupedContactSpace.integrate <mbplugin.pipeline.substep.GroupedContactSpace.integrate>`:
its groups, ``group_start``, ``pack``, ``integrate_groups``, ``unpack``, the store's commit of
the step's end) and the step's info. :func:`free_begin` does the same for the common case
(every contact between a FREE and a STATIC row, no articulated row, one stateless compiled
law, no latch, no stick spring, the compiled solver, the batch's contacts the store's rows in
order and none ending, W on the pattern whose groups the last general step laid out) with its
arithmetic in two compiled calls, :func:`_begin_kernel` (the commit's test, W, m_eff, u0, the
gravity part of the free acceleration) and :func:`_integrate_kernel` (the integration and the
end commit's test): the same kernels in the same order on the same inputs, so the same bits.
Whatever else happens (an onset, an end, an event inside the step, a new W pattern, a native
contact point) is found by a test before anything is changed, and the general path takes the
step (or, after the start's quiet commit, the integration) from the same state. No formula is
written here. A step taken whole applies its forces itself, one force at the centre of mass
and one torque per body (:func:`_wrench`: the sums PyBullet accumulates from one
``applyExternalForce`` per contact, so the same bits), and hands the deferred correction its
``overlap_predicted`` test's answer (``res.predicted``).

Units: SI (m, m/s, kg, N s).
"""

from __future__ import annotations

import time
from itertools import repeat
from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin._jit import as_readonly, njit
from mbplugin.bullet.client import drain, vectors
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.kernels import world_inverse_inertia_of
from mbplugin.hosts.arrays import norm_rows
from mbplugin.hosts.correction import MOVE_MIN, _predicted_blocks, _predicted_csr
from mbplugin.hosts.protocol import ARTICULATED, STATIC
from mbplugin.hosts.wmatrix import _ON_PATTERN, _free_static_kernel
from mbplugin.laws.kernels import NODE_MAX
from mbplugin.pipeline import layout
from mbplugin.pipeline import substep as sub
from mbplugin.pipeline import substep_compiled as cm
from mbplugin.pipeline.delassus import _csr_normal_diagonal
from mbplugin.pipeline.store_kernel import same_rows
from mbplugin.pipeline.substep import EXPLICIT_TOL, StepResult, SubstepStats

#: how many host steps took :func:`free_begin`'s fused path, how many it handed back, and how
#: many of the fused ones applied one resultant per body (:func:`_wrench`) (counters for tests
#: and benchmarks; never read by the step)
TAKEN = {"fused": 0, "general": 0, "wrench": 0}


def free_begin(core: Any, host: Any, batch: ContactBatch, bodies: BodyState, t: Any,
               dt: float) -> tuple[Any, ContactBatch, np.ndarray] | None:
    """:meth:`HostStep.step <mbplugin.hosts.HostStep.step>` (``core``) of the detected
    contacts ``batch`` at the rows' state ``bodies`` over [t, t + dt] (s) with the
    :class:`~mbplugin.bullet.host.BulletHost` ``host``, for the case of the module docstring:
    the same result and state (the store's commits, the integrator's carries, the pending
    position correction's W and result, the info). Returns (info, batch, force P / dt (K, 3)
    N; None where it applied the forces itself, one resultant force and torque per body:
    :func:`_wrench`, :func:`_apply_wrench`), or None with nothing changed where the case does
    not hold (then call ``core.step``)."""
    k = batch.delta.shape[0]
    integ, store = core.integrator, core.store
    case = core.__dict__.get("_free_case")
    if case is None or case[0] is not core.kind:  # no articulated row (kept per kind array)
        case = core._free_case = (core.kind, not bool(np.any(core.kind == ARTICULATED)))
    if (k == 0 or type(t) is not float or not core._any_free or not case[1]
            or integ.stick is not None or integ.solver == "scipy"
            or (host.points is None or host.points)):  # (a native point: its acceleration)
        return None
    test = store.rows_test_args(batch)
    if test is None or not sub._all_compiled(store.laws):
        return None
    kid_l, mode_l, nst_l, mem_l = sub._law_tables(store.laws)
    hit = sub._GROUPS_CACHE.get("last")
    tpl = _ON_PATTERN.get(3 * k)
    if (sub._any_odes(nst_l) or hit is None or hit[2] is None or hit[1][8] is not None
            or len(hit[1][7]) or hit[0][:3] != (k, 4 + NODE_MAX, (3 * k, 3 * k))
            or tpl is None or tpl.indices is not hit[2][0] or tpl.indptr is not hit[2][1]):
        return None  # (the groups of W's pattern: laid out by the general path)
    widx, labels, order, _, gptr, goff, ident = hit[1][:7]
    h0, m0 = sub._NONE_F, sub._NONE_I
    hof = integ._h_of
    if hof is not None:  # each contact's carried step and solver, the same contacts in order
        if not (hof[0].shape == batch.key.shape and (hof[0] == batch.key).all()):
            return None
        h0, m0 = hof[1], hof[2]
    mu = core.pair_mu(host, batch)
    friction = integ.friction if (integ.friction is not None and integ.friction.active) \
        else None
    muk = np.zeros((k, 2)) if mu is None else np.ascontiguousarray(mu, dtype=float)
    if mu is None and friction is not None:
        muk[:, 0], muk[:, 1] = friction.mu, friction.static
    c = np.ascontiguousarray
    n = c(batch.normal, dtype=float)
    d = np.array(batch.delta, dtype=float)
    wall = time.perf_counter()
    flight = host.flight
    (code, data, m_eff, u0, a_free, imp, loaded, hg, mg, counters, ddelta, u, ab, fn, slip,
     wrench, flags) = _free_kernel(*test, c(batch.ddelta, dtype=float), c(store.coef, dtype=float),
                     np.empty(k, dtype=np.bool_), core.kind, batch.a, batch.b,
                     c(batch.ra, dtype=float), c(batch.rb, dtype=float),
                     c(bodies.inv_mass_ext()[:-1], dtype=float),
                     c(bodies.quat, dtype=float).reshape(-1, 4),
                     c(bodies.inv_inertia, dtype=float), np.asarray(bodies.fixed, dtype=np.bool_),
                     n,
                     c(batch.vt, dtype=float), c(host.g, dtype=float), tpl.indptr, tpl.indices,
                     len(gptr) - 1, ident, order, gptr, c(h0, dtype=float),
                     c(m0, dtype=np.int64), goff, widx,
                     layout.head(friction, None, inactive_on=True), store.mem, muk, kid_l,
                     mode_l, nst_l, mem_l, store.ode, float(dt), float(integ.rtol),
                     integ.solver == "compiled", EXPLICIT_TOL, bool(integ.normal_only), labels,
                     store.law, d, c(batch.point, dtype=float), flight.lag, host.rows_arr,
                     c(bodies.pos, dtype=float), flight.forced, c(batch.delta, dtype=float),
                     c(bodies.omega, dtype=float), _blocks(tpl, k))
    if code == 1:  # an onset or an end at the start, or W not on the laid-out pattern
        TAKEN["general"] += 1
        return None
    # HostStep.step's state from here on: the start's quiet commit, W and its carries
    store.rows_booked(batch.delta, batch.ddelta)  # (commit_rows' quiet booking)
    core.pending = None
    integ.pending = None
    core.forced[:] = False
    core._one_body = False
    core._art = []
    batch.m_eff = m_eff
    host.points = None  # (taken by the native acceleration: none, its low-pass emptied)
    host._native = None
    W = _SHELL(sp.csr_matrix)  # W on the pattern (csr_on_pattern's shallow copy)
    W.__dict__.update(tpl.__dict__)
    W.data = data
    if code == 0:  # the whole integration quiet: GroupedContactSpace.integrate's state
        stats = SubstepStats(int(counters[0]), int(counters[1]), int(counters[2]),
                             time.perf_counter() - wall, int(counters[3]))
        res = StepResult(imp, d, u, loaded, stats, float(hg.min()), hg, mg)
        res.predicted = bool(flags[0])  # (overlap_predicted's: DeferredCorrection reads it)
        store.rows_booked(d, ddelta)  # (commit_rows' quiet booking of the end)
        integ._warm = None
        integ._h, integ._keys = res.last_step, store.keys.copy()
        integ._p_of = None
        integ._h_of = (batch.key.copy(), hg, mg)
        TAKEN["fused"] += 1
    else:  # an event, an end or an onset inside the step: the general integration
        TAKEN["general"] += 1
        res = integ.integrate(batch, W, a_free, u0, None, t, dt, mu)
    if code == 0:  # (the info's arrays from the kernel: HostStep.step's, the same bits)
        core.last = core.make_info(k, res.stats, fn, batch.key.copy(), ab, res.delta.copy(),
                                   slip)
        core.pending = (batch, W, res, a_free, None)
        if len(wrench[0]):  # each pushed body's resultant, applied here (_wrench)
            _apply_wrench(host.client, *wrench)
            TAKEN["wrench"] += 1
            return core.last, batch, None
        return core.last, batch, res.impulse / dt
    force = res.impulse / dt
    un = np.einsum("ki,ki->k", res.u, n)
    core.last = core.make_info(k, res.stats, np.einsum("ki,ki->k", force, n),
                               batch.key.copy(), ab, res.delta.copy(),
                               norm_rows(res.u - un[:, None] * n))
    core.pending = (batch, W, res, a_free, None)
    return core.last, batch, force


def _apply_wrench(client: Any, ids: np.ndarray, force: np.ndarray, at: np.ndarray,
                  torque: np.ndarray) -> None:
    """Per body ``ids`` (M,) (bases) one ``applyExternalForce`` of ``force`` (M, 3) N at its
    centre of mass ``at`` (M, 3) m as PyBullet has it (no torque from it) and one
    ``applyExternalTorque`` of ``torque`` (M, 3) N m, both WORLD_FRAME (PyBullet >= 3.1.9:
    the base torque in the world frame, bullet3 pull 3950), consumed by the next
    ``stepSimulation``: what the contacts' forces at their points add to the body's force and
    torque accumulators, the same sums in the same order (:func:`_wrench`)."""
    pb, cid, ids_l = client.p, client.id, ids.tolist()
    drain(map(pb.applyExternalForce, ids_l, repeat(-1), vectors(force), vectors(at),
              repeat(pb.WORLD_FRAME), repeat(cid)))
    drain(map(pb.applyExternalTorque, ids_l, repeat(-1), vectors(torque),
              repeat(pb.WORLD_FRAME), repeat(cid)))


_SHELL = object.__new__


@njit
def _begin_kernel(skeys, bkeys, blaw, fkid, fmode, delta, ddelta, coef, end, kind, a, b, ra,
                  rb, inv_m, inv_i, normal, vt, g):
    """:func:`free_begin`'s first call: the store's commit test
    (:func:`~mbplugin.pipeline.store_kernel.same_rows` of the store's keys ``skeys``, the
    batch's keys ``bkeys`` and law indices ``blaw``, the law's kernel id ``fkid`` and mode
    ``fmode``, the overlaps ``delta`` (K,) m, rates ``ddelta`` (K,) m/s, the store's ``coef``,
    work array ``end``), then W of the free rows (:func:`~mbplugin.hosts.wmatrix.
    _free_static_kernel` of the rows' ``kind``, the contacts' sides ``a``, ``b`` and lever
    arms ``ra``, ``rb`` (K, 3) m, the rows' 1/m ``inv_m`` (N,) 1/kg and world inverse inertia
    ``inv_i`` (N, 3, 3)), its normal entries n.W n (K,) 1/kg at the normals ``normal`` (K, 3),
    m_eff (K,) kg (inf where n.W n <= 0), u0 = vt - ddelta n (K, 3) m/s and gravity's relative
    acceleration (K, 3) m/s^2 (``g`` (3,) on each non-static side, b minus a). Returns (0, W's
    indptr, indices, data, n.W n, m_eff, u0, a_free); a nonzero first value (the test found
    an onset, an end or not the store's rows: its value; W not free-static CSR: 3) with
    nothing else computed."""
    k = bkeys.shape[0]
    hit = same_rows(skeys, bkeys, blaw, fkid, fmode, delta, ddelta, coef, end)
    e0, e3 = np.zeros(0), np.zeros((0, 3))
    ei = np.zeros(0, dtype=np.int32)
    if hit != 0:
        return hit, ei, ei, e0, e0, e0, e3, e3
    indptr, indices, data = _free_static_kernel(kind, a, b, ra, rb, inv_m, inv_i)
    if indptr.shape[0] == 0:
        return 3, ei, ei, e0, e0, e0, e3, e3
    wnn = _csr_normal_diagonal(as_readonly(indptr), as_readonly(indices), data, normal, k)
    m_eff = np.full(k, np.inf)
    u0 = np.empty((k, 3))
    af = np.empty((k, 3))
    n = kind.shape[0]
    for i in range(k):
        if wnn[i] > 0:
            m_eff[i] = 1.0 / wnn[i]
        ka, kb = kind[a[i] if a[i] >= 0 else n + a[i]], kind[b[i] if b[i] >= 0 else n + b[i]]
        for j in range(3):
            u0[i, j] = vt[i, j] - ddelta[i] * normal[i, j]
            ga = g[j] if ka != STATIC else 0.0
            gb = g[j] if kb != STATIC else 0.0
            af[i, j] = gb - ga
    return 0, indptr, indices, data, wnn, m_eff, u0, af


@njit
def _integrate_kernel(k, ng, ident, order, gptr, h0, m0, goff, widx, wdata, hd, nrm, af, coef,
                      mem, muk, law, kid_l, mode_l, nst_l, mem_l, d, u, ode, dt, rtol,
                      explicit, tol_e, normal_only, skeys, bkeys, blaw, fkid, fmode, labels,
                      end):
    """:func:`free_begin`'s second call: :meth:`GroupedContactSpace.integrate
    <mbplugin.pipeline.substep.GroupedContactSpace.integrate>`'s compiled calls for its
    quiet case (every contact active and known to the store, no latch, no ODE state, no
    spring): :func:`~mbplugin.pipeline.substep_compiled.group_start`, ``pack``,
    ``integrate_groups``, ``unpack`` (into ``d`` (K,) m and ``u`` (K, 3) m/s, the start state
    in the batch's order), the end rates (``relative_at``) and the end commit's test
    (``same_rows``), the results in the batch's order (the arguments as those functions take
    them; ``labels`` each contact's group, ``end`` a work array). Returns (True: every group
    reached the step's end without an event at one instant and no contact ends there,
    impulses (K, 3) N s, loaded (K,), each contact's next step (K,) s and solver (K,), the
    counters (4,), the end rates (K,) m/s); False: the general integration takes the step
    (nothing outside this call's own arrays was written)."""
    tg, hg, mg, status, imp, loaded, counters = cm.group_start(k, ng, ident, order, gptr, h0,
                                                               m0)
    act = np.ones(k, dtype=np.bool_)
    cand = np.zeros(k, dtype=np.int64)
    s = np.zeros((k, 3))
    yptr, Y, GF, GC = cm.pack(order, gptr, goff, widx, wdata, hd, nrm, af, coef, mem, muk, act,
                              law, cand, kid_l, mode_l, nst_l, mem_l, d, u, s, 0, ode)
    cm.integrate_groups(gptr, yptr, goff, GF, GC, Y, tg, status, hg, dt, rtol, imp, loaded,
                        counters, explicit, mg, tol_e, normal_only)
    e = np.zeros(0)
    fail = (False, imp, loaded, e, mg, counters, e)
    for gi in range(ng):
        if status[gi] != cm.DONE or tg[gi] != tg[0]:
            return fail
    if not cm.unpack(order, gptr, yptr, GC, Y, d, u, s, 0, ode):
        return fail
    ddelta = cm.relative_at(u, nrm)[0]
    if same_rows(skeys, bkeys, blaw, fkid, fmode, d, ddelta, coef, end) != 0:
        return fail
    if ident:
        return True, imp, loaded, hg, mg, counters, ddelta
    imp_b = np.empty((k, 3))
    loaded_b = np.empty(k, dtype=np.bool_)
    h_b = np.empty(k)
    m_b = np.empty(k, dtype=np.int64)
    for c in range(k):
        j = order[c]
        imp_b[j, 0], imp_b[j, 1], imp_b[j, 2] = imp[c, 0], imp[c, 1], imp[c, 2]
        loaded_b[j] = loaded[c]
    for i in range(k):
        h_b[i] = hg[labels[i]]
        m_b[i] = mg[labels[i]]
    return True, imp_b, loaded_b, h_b, m_b, counters, ddelta


@njit
def _free_kernel(skeys, bkeys, blaw, fkid, fmode, ddelta, coef, end, kind, a, b, ra, rb, inv_m,
                 quat, inv_ib, fixed, normal, vt, g, pat_ptr, pat_ind, ng, ident, order, gptr,
                 h0, m0, goff, widx, hd, mem, muk, kid_l, mode_l, nst_l, mem_l, ode, dt, rtol,
                 explicit, tol_e, normal_only, labels, slaw, d, point, lag, rows_arr, pos,
                 forced, delta0, omega, blockw):
    """:func:`free_begin`'s one compiled call: :func:`_begin_kernel` (the start's commit test,
    W, m_eff, u0, gravity's acceleration; its arguments, ``d`` (K,) m the overlaps, the rows'
    world inverse inertia from their orientations ``quat`` (N, 4) [w, x, y, z], body-frame
    inverse inertias ``inv_ib`` (N, 3, 3) and ``fixed`` (N,):
    :func:`~mbplugin.contact.kernels.world_inverse_inertia_of`, the same bits as
    :meth:`BulletRows.world_inertia <mbplugin.bullet.rows.BulletRows.world_inertia>`), W's
    pattern against the laid-out one (``pat_ptr``, ``pat_ind``), then :func:`_integrate_kernel`
    (its arguments; the end state into ``d`` and a new u) and the contacts' sides (K, 2).
    ``slaw``: the store's law per row. Returns (code, W's data, m_eff, u0, a_free, impulses,
    loaded, next steps, solvers, counters, end rates, end velocities, sides): code 0 the step
    taken whole, 2 the start quiet but the integration not (W, m_eff, u0 and a_free valid:
    the general integration goes on from them), 1 nothing valid (the general step)."""
    k = bkeys.shape[0]
    inv_i = world_inverse_inertia_of(quat, inv_ib, fixed)[:-1]  # (BulletRows.world_inertia's)
    hit, indptr, indices, data, _, m_eff, u0, af = _begin_kernel(
        skeys, bkeys, blaw, fkid, fmode, d, ddelta, coef, end, kind, a, b, ra, rb, inv_m, inv_i,
        normal, vt, g)
    e0, e3 = np.zeros(0), np.zeros((0, 3))
    ei = np.zeros(0, dtype=np.int64)
    eb = np.zeros(0, dtype=np.bool_)
    ab = np.empty((k, 2), dtype=np.int64)
    same = hit == 0 and indptr.shape[0] == pat_ptr.shape[0] and \
        indices.shape[0] == pat_ind.shape[0]
    if same:
        for i in range(indptr.shape[0]):
            same = same and indptr[i] == pat_ptr[i]
        for i in range(indices.shape[0]):
            same = same and indices[i] == pat_ind[i]
    ew = (ei, e3, e3, e3)
    flags = np.zeros(1, dtype=np.bool_)
    if not same:
        return 1, e0, e0, e3, e3, e3, eb, e0, ei, ei, e0, e3, ab, e0, e0, ew, flags
    for i in range(k):
        ab[i, 0], ab[i, 1] = a[i], b[i]
    u = u0.copy()
    ok, imp, loaded, hg, mg, counters, dd = _integrate_kernel(
        k, ng, ident, order, gptr, h0, m0, goff, widx, data, hd, normal, af, coef, mem, muk,
        slaw, kid_l, mode_l, nst_l, mem_l, d, u, ode, dt, rtol, explicit, tol_e, normal_only,
        skeys, bkeys, blaw, fkid, fmode, labels, end)
    if not ok:
        return 2, data, m_eff, u0, af, imp, loaded, hg, mg, counters, dd, u, ab, e0, e0, ew, \
            flags
    fn, slip = np.empty(k), np.empty(k)
    for i in range(k):  # HostStep.step's info: n . P / dt and |u - (n . u) n|, NumPy's sums
        n0, n1, n2 = normal[i, 0], normal[i, 1], normal[i, 2]
        f0, f1, f2 = imp[i, 0] / dt, imp[i, 1] / dt, imp[i, 2] / dt
        fn[i] = (f0 * n0 + f2 * n2) + f1 * n1  # (einsum("ki,ki->k")'s order)
        un = (u[i, 0] * n0 + u[i, 2] * n2) + u[i, 1] * n1
        x, y, z = u[i, 0] - un * n0, u[i, 1] - un * n1, u[i, 2] - un * n2
        slip[i] = np.sqrt((x * x + y * y) + z * z)
    # overlap_predicted's test of the host's end overlaps (the deferred correction's, for
    # DeferredCorrection.unpredictable: its W, impulses, start rows' angular velocities)
    if blockw:
        pred = _predicted_blocks(data, imp, vt, ddelta, normal, delta0, d, af, a, b, ra, rb,
                                 omega, dt, MOVE_MIN)
    else:
        pred = _predicted_csr(as_readonly(indptr), as_readonly(indices), data, imp, vt,
                              ddelta, normal, delta0, d, af, a, b, ra, rb, omega, dt,
                              MOVE_MIN)
    flags[0] = pred
    return 0, data, m_eff, u0, af, imp, loaded, hg, mg, counters, dd, u, ab, fn, slip, \
        _wrench(imp, dt, a, b, point, lag, kind, rows_arr, pos, forced), flags


@njit
def _wrench(imp, dt, a, b, point, lag, kind, rows_arr, pos, forced):
    """Each pushed body's resultant force and torque about its centre of mass of the
    contacts' forces P / dt (``imp`` (K, 3) N s, ``dt`` s) on side b, minus on side a, at the
    contact points ``point`` (K, 3) m: the sums PyBullet's ``applyExternalForce`` per contact
    side (:func:`~mbplugin.bullet.fast_step.force_calls`' calls, in their order) adds to a
    base's accumulators, force += f and torque += (p - x) x f with ``x`` the base's position
    ``pos`` (N, 3) m as PyBullet has it. Taken where every pushed side not of kind STATIC is a
    base (link -1 in ``rows_arr`` (N, 2)) without a lag (``lag`` (N, 3): ``pos`` is then
    PyBullet's own); the rows pushed are marked in ``forced`` (N,), as ``force_calls`` marks
    them. Returns (bodies (M,), forces (M, 3) N, their points ``pos`` (M, 3) m, torques (M, 3)
    N m); no rows (nothing marked) where it is not taken (``force_calls`` then)."""
    k, n = imp.shape[0], kind.shape[0]
    slot = np.full(n, -1, dtype=np.int64)
    m = 0
    for side in range(2):  # the rows pushed, in force_calls' order; each a lag-free base
        for i in range(k):
            if imp[i, 0] / dt == 0 and imp[i, 1] / dt == 0 and imp[i, 2] / dt == 0:
                continue
            r = b[i] if side == 0 else a[i]
            rr = r if r >= 0 else r + n
            if kind[rr] == STATIC:
                continue
            if r < 0 or rows_arr[r, 1] != -1 or lag[r, 0] != 0.0 or lag[r, 1] != 0.0 \
                    or lag[r, 2] != 0.0:
                return np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)), \
                    np.zeros((0, 3))
            if slot[r] < 0:
                slot[r] = m
                m += 1
    ids = np.empty(m, dtype=np.int64)
    f, at, t = np.zeros((m, 3)), np.empty((m, 3)), np.zeros((m, 3))
    for r in range(n):
        if slot[r] >= 0:
            ids[slot[r]] = rows_arr[r, 0]
            for j in range(3):
                at[slot[r], j] = pos[r, j]
    for side in range(2):
        sgn = 1.0 if side == 0 else -1.0
        for i in range(k):
            g0, g1, g2 = imp[i, 0] / dt, imp[i, 1] / dt, imp[i, 2] / dt
            if g0 == 0 and g1 == 0 and g2 == 0:
                continue
            if side == 0:
                if a[i] >= 0:
                    forced[a[i]] = True
                if b[i] >= 0:
                    forced[b[i]] = True
            r = b[i] if side == 0 else a[i]
            if r < 0 or slot[r] < 0:
                continue
            s = slot[r]
            g0, g1, g2 = sgn * g0, sgn * g1, sgn * g2
            x, y, z = point[i, 0] - pos[r, 0], point[i, 1] - pos[r, 1], point[i, 2] - pos[r, 2]
            f[s, 0] += g0
            f[s, 1] += g1
            f[s, 2] += g2
            t[s, 0] += y * g2 - z * g1  # (btVector3::cross)
            t[s, 1] += z * g0 - x * g2
            t[s, 2] += x * g1 - y * g0
    return ids, f, at, t


def _blocks(tpl: Any, k: int) -> bool:
    """Whether W on the pattern ``tpl`` is block diagonal for K = ``k`` contacts
    (:func:`~mbplugin.pipeline.delassus.is_block_pattern` of W, which copies ``tpl``'s tag and
    index arrays)."""
    return getattr(tpl, "_block_pattern_k", -1) == k and not tpl.indices.flags.writeable
