"""The common host step of a MuJoCo kinematic tree after detection in one compiled call (the
lean tree path of :mod:`.lean_tree` without its Python frames between the compiled calls).

:meth:`LeanTree.step <mbplugin.mujoco.lean_tree.LeanTree.step>` makes its step from
:func:`~mbplugin.mujoco.lean_tree.tree_start` (the rows' state, the margin, the detection and
W's block), the store's commit (:meth:`ContactStore.commit_rows
<mbplugin.pipeline.store.ContactStore.commit_rows>`), the warm start
(:meth:`ContactIntegrator.warm_start
<mbplugin.hosts.integrator.ContactIntegrator.warm_start>`), the implicit begin
(:func:`~mbplugin.hosts.fused_kernels.lean_begin`), MuJoCo's step and the rounds
(:func:`~mbplugin.mujoco.lean_tree.tree_after`), the end's commit, the integrator's booking
(:meth:`ContactIntegrator.booked <mbplugin.hosts.integrator.ContactIntegrator.booked>`) and the
info's arrays (:func:`~mbplugin.hosts.integrator.info_arrays`,
:func:`.kernels.contact_ids`): some 150 Python calls around six compiled ones. Where the step
is the common one (the store's rows met again with no onset, end or latch, one compiled law
without state, no stick, no MuJoCo constraint row, no user ``xfrc_applied`` kept aside),
:func:`tree_common` does all of it after ``tree_start`` in one call, the same kernels in the
same order (the same bits), and :func:`common_step` books its outputs on the Python objects
(the store's last overlaps and sequence, the integrator's warm start, the info). Every other
case leaves the call at the point it meets it, nothing changed there, and continues by the
lean tree path's own Python code from that point: an onset, end or latch at the start
(:data:`START`: the general commit), a first solve or a round handed to the general path
(:data:`FIRST`, :data:`HANDOVER`), a row that ends at the step's end (:data:`END`: the store's
end booking). No formula is written here.

Units: SI (m, m/s, N, N s, kg).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.hosts.arrays import lookup
from mbplugin.hosts.fused_kernels import lean_begin
from mbplugin.hosts.integrator import (
    LOST_MARGIN,
    VERIFY_DU,
    VERIFY_TOL,
    _info_arrays,
    lean_result,
    step_info,
)
from mbplugin.hosts.protocol import ArticulatedBlock
from mbplugin.mujoco.lean_tree import _FIRST, _rate, tree_after
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.implicit import ImplicitStep
from mbplugin.pipeline.layout import CONTACT, head
from mbplugin.pipeline.store import _empty_events
from mbplugin.pipeline.store_kernel import _ends_rows, same_rows, superset_rows
from mbplugin.pipeline.substep import SubstepStats

#: :func:`tree_common`'s outcomes past the start: the rounds ended and the step is booked
#: (DONE), the start's commit is not the common one (START, nothing done), the first solve or
#: a round needs the general path (FIRST, HANDOVER: :func:`~.lean_tree.tree_rounds`'), the
#: end's commit is not the common one (END)
DONE, HANDOVER, FIRST, START, END = 0, 1, 2, 3, 4


@njit
def _find(keys, key):
    """The index of ``key`` in the distinct ``keys``, -1 where absent
    (:func:`mbplugin.hosts.arrays.lookup` of one key)."""
    for j in range(keys.shape[0]):
        if keys[j] == key:
            return j
    return -1


@njit
def _same(x, y):
    """Whether the int64 arrays ``x`` and ``y`` are equal (shape and values)."""
    if x.shape[0] != y.shape[0]:
        return False
    for i in range(x.shape[0]):
        if x[i] != y[i]:
            return False
    return True


@njit
def _commit_test(skeys, bkey, blaw, kid, mode, d, v, coef):
    """:meth:`ContactStore.commit_rows <mbplugin.pipeline.store.ContactStore.commit_rows>`'
    common cases at overlaps ``d`` (K,) m and rates ``v`` (K,) m/s without their booking:
    (0: the batch is the store's rows ``skeys`` in order and none ends; 1: the batch holds
    the store's rows and besides them pairs apart, none ends (``_commit_apart``); -1:
    neither, the general commit books it), the rows' overlaps and rates (the store's
    ``_delta_last``, ``_ddelta_last``)."""
    n = skeys.shape[0]
    end = np.empty(n, dtype=np.bool_)
    hit = same_rows(skeys, bkey, blaw, kid, mode, d, v, coef, end)
    if hit == 0:
        return 0, d.copy(), v.copy()
    if hit < 0:
        where = np.empty(n, dtype=np.int64)
        if superset_rows(skeys, bkey, blaw, d, where):
            dr, vr = d[where], v[where]
            if not _ends_rows(kid, mode, dr, vr, coef, end):
                return 1, dr, vr
    return -1, d[:0].copy(), v[:0].copy()


@njit
def tree_common(A, bkey, blaw, ba, bb, psa, psb, point, normal, delta, ddelta, vt, W, wnn,
                resp, cont, sgn, skeys, scoef, smem, slaw, fkid, fmode, kid_t, mode_t,
                have_warm, wkeys, wimp, hd, mu, has_fr, fr_mu, fr_static, dt, rounds,
                margin_r, tol, du, rtol, counters, d_h, u_h, found, out):
    """The common host step after :func:`~.lean_tree.tree_start` (module docstring) of the
    batch (keys ``bkey``, law indices ``blaw``, sides ``ba``, ``bb``, plane and sphere
    shapes ``psa``, ``psb``, ``point`` ... ``vt``; W (3K, 3K), ``wnn``, the tree's response
    ``resp``, ``cont``, ``sgn``) against the store's rows (``skeys``, ``scoef``, ``smem``,
    ``slaw``; its one law's kernel id and mode ``fkid``, ``fmode``; the law tables
    ``kid_t``, ``mode_t``), the integrator's warm start (``wkeys``, ``wimp``; ``have_warm``),
    the implicit step's header ``hd`` and friction (``mu`` (K, 2) or none, ``has_fr``,
    ``fr_mu``, ``fr_static``), ``dt`` s, the rounds' options (``rounds``, ``margin_r`` m,
    ``tol``, ``du`` m/s, ``rtol``) and work arrays (``counters`` ... ``out``:
    :func:`~.lean_tree.tree_rounds`'). Returns (outcome, the start's commit case (0 same rows,
    1 rows and pairs apart), P_lin, gf, gc, every contact active, m_eff, u0, fn0, the force
    P_lin / dt, the begin's normal force and slip, P, d1, u1, loaded, s0, s1, the end's
    commit case, the rows' end overlaps and rates, whether the store's rows are the batch's,
    the warm start's keys and impulses, the info's normal force (K,) N and slip (K,) m/s, its
    end overlaps (K,) m, geoms, bodies) (module docstring: the arrays of the outcomes
    reached, empty otherwise)."""
    k = bkey.shape[0]
    z1, z3 = np.empty(0), np.empty((0, 3))
    P_lin, m_eff, u0, fn0, force, fn_b, slip_b = z3, z1, z3, z1, z3, z1, z1
    gf, gc, every = z1, np.zeros(0, dtype=CONTACT), False
    P, d1, u1, loaded, s0, s1 = z3, z1, z3, np.zeros(0, dtype=np.bool_), z3, z3
    end_case, d_last, v_last, same_end = -1, z1, z1, False
    wk, wi, fn, slip, d_info = skeys[:0].copy(), z3, z1, z1, z1
    status = START
    start_case, _, _ = _commit_test(skeys, bkey, blaw, fkid, fmode, delta, ddelta, scoef)
    if start_case >= 0:
        # the warm start (ContactIntegrator.warm_start) and the store's rows (_rows_args)
        P_lin = np.zeros((k, 3))
        if have_warm:
            if _same(wkeys, bkey):
                P_lin = wimp.copy()
            else:
                for i in range(k):
                    j = _find(wkeys, bkey[i])
                    if j >= 0:
                        for a in range(3):
                            P_lin[i, a] = wimp[j, a]
        same = _same(skeys, bkey)
        rows = np.zeros(0, dtype=np.int64)
        if not same:
            rows = np.empty(k, dtype=np.int64)
            for i in range(k):
                rows[i] = _find(skeys, bkey[i])
        s0 = np.zeros((k, 3))
        m_eff, fn0, fn_b, slip_b = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
        u0, force = np.empty((k, 3)), np.empty((k, 3))
        gf, gc, every = lean_begin(k, wnn, vt, ddelta, normal, delta, P_lin, dt, hd,
                                   W.reshape(-1), mu, has_fr, fr_mu, fr_static, same, rows,
                                   scoef, smem, slaw, blaw, kid_t, mode_t, s0, m_eff, u0, fn0,
                                   fn_b, slip_b, force)
        # MuJoCo's step and the rounds (after_step's tree_after)
        P = P_lin.copy()
        d1, u1, loaded = np.empty(k), np.empty((k, 3)), np.empty(k, dtype=np.bool_)
        s1 = s0.copy()
        status = tree_after(A, ba, bb, point, force, psa, psb, rounds, dt, margin_r, tol, du,
                            gf, gc, fn0, s0, rtol, P, d1, u1, loaded, s1, resp, cont, sgn, u0,
                            counters, d_h, u_h, found, out)
    if status == DONE:
        rate = np.empty(k)
        for i in range(k):  # (lean_tree._rate: einsum's order)
            x, y, z = u1[i, 0] * normal[i, 0], u1[i, 1] * normal[i, 1], u1[i, 2] * normal[i, 2]
            rate[i] = -((x + z) + y)
        end_case, d_last, v_last = _commit_test(skeys, bkey, blaw, fkid, fmode, d1, rate,
                                                scoef)
        if end_case < 0:
            status = END
        else:  # ContactIntegrator.booked (the store's rows unchanged), step_info
            same_end = _same(skeys, bkey)
            if same_end:
                wi = P.copy()
            else:
                n = 0
                for i in range(k):
                    if _find(skeys, bkey[i]) >= 0:
                        n += 1
                wk, wi = np.empty(n, dtype=np.int64), np.empty((n, 3))
                n = 0
                for i in range(k):
                    if _find(skeys, bkey[i]) >= 0:
                        wk[n] = bkey[i]
                        for a in range(3):
                            wi[n, a] = P[i, a]
                        n += 1
            fn, slip = np.empty(k), np.empty(k)
            _info_arrays(P, u1, normal, dt, fn, slip)
            d_info = d1.copy()
    return (status, start_case, P_lin, gf, gc, every, m_eff, u0, fn0, force, fn_b, slip_b, P,
            d1, u1, loaded, s0, s1, end_case, d_last, v_last, same_end, wk, wi, fn, slip,
            d_info)


def applies(tree: Any, c: Any) -> bool:
    """Whether the step of :class:`~mbplugin.mujoco.MujocoContacts` ``c`` may take
    :func:`tree_common` (module docstring; checked after ``mj_step1``): the store with no
    latch and its one compiled law without state or memory, no stick, a compiled implicit
    step, the fused MuJoCo step of :func:`~.lean_tree.tree_after` (no constraint row, no
    user ``xfrc_applied`` kept aside), the plain re-detection."""
    loop, host = c.loop, tree.host
    store, integ = loop.store, loop.integrator
    return (not len(store.latched_keys) and len(store.laws) == 1
            and store.keys.dtype == np.int64 and store._fast_law() is not None
            and integ.stick is None and integ.solver != "scipy" and ik.compiled_laws(store)
            and not host.d.nefc and host._user_xfrc is None and tree._step2[0] != 0
            and not loop._any_free and loop.plain_redetect())


def common_step(tree: Any, c: Any, A: Any, batch: Any, pairs: tuple[np.ndarray, np.ndarray],
                start: tuple[Any, ...], t: float, dt: float) -> Any:
    """:meth:`LeanTree.step <mbplugin.mujoco.lean_tree.LeanTree.step>` after
    :func:`~.lean_tree.tree_start` (its outputs ``start``: margin, W, wnn, jac, mass matrix,
    contact, sign, response; the batch ``batch`` and its plane and sphere shapes ``pairs``;
    the :class:`~.lean_tree.TreeArrays` ``A``; time ``t`` s, step ``dt`` s) by
    :func:`tree_common` and the booking of its outputs, the rare outcomes by the lean tree
    path's own code (module docstring). Returns the step's info, or None where the start's
    commit is not the common one (nothing changed: the caller's path continues)."""
    loop, host = c.loop, tree.host
    store, integ = loop.store, loop.integrator
    margin, W, wnn, jac, mm, cont, sgn, resp = start
    friction = integ.friction
    if friction is not None and not friction.active:
        friction = None
    mu = loop.pair_mu(host, batch)
    k = len(batch)
    mu_k = None if mu is None else np.asarray(mu, dtype=float).reshape(k, 2)
    fast = store._fast_law()
    kid_t, mode_t = ik._law_tables(store.laws)[:2]
    warm = integ._warm
    wkeys, wimp = (store.keys[:0], np.empty((0, 3))) if warm is None else warm
    d_h, u_h, found, counters, out = tree._work(k)
    counters[:] = 0
    out[:] = 0.0
    left = int(integ.verify)
    c_ = np.ascontiguousarray
    wall = time.perf_counter()
    (status, start_case, P_lin, gf, gc, every, m_eff, u0, fn0, force, fn_b, slip_b, P, d1, u1,
     loaded, s0, s1, end_case, d_last, v_last, same_end, wk, wi, fn, slip, d_info) = tree_common(
        A, batch.key, batch.law, batch.a, batch.b, pairs[0], pairs[1], batch.point,
        batch.normal, batch.delta, batch.ddelta, batch.vt, W, wnn, resp, cont, sgn, store.keys,
        c_(store.coef, dtype=float), store.mem, store.law, fast[0], fast[1], kid_t, mode_t,
        warm is not None, wkeys, wimp, head(friction, None),
        ik._NO_MU if mu_k is None else c_(mu_k), friction is not None,
        0.0 if friction is None else float(friction.mu),
        0.0 if friction is None else float(friction.static), dt, left,
        max(2.0 * margin, LOST_MARGIN), VERIFY_TOL, VERIFY_DU, float(integ.rtol), counters,
        d_h, u_h, found, out)
    if status == START:
        return None
    # the start's commit (ContactStore.commit_rows: its overlaps are the batch's)
    if start_case == 0:
        store._delta_last, store._ddelta_last = batch.delta.copy(), batch.ddelta.copy()
        store._close_quiet()
    else:  # (the overlaps of the store's rows; overwritten by the end's commit)
        if status != DONE:
            where = lookup(batch.key, store.keys)
            store._delta_last, store._ddelta_last = batch.delta[where], batch.ddelta[where]
        store._close(_empty_events(), [])
    loop.pending = None
    integ.pending = None
    loop.forced[:] = False
    blk = ArticulatedBlock(cont, sgn, jac, mm, tag=tree.root)
    blk.response = resp
    loop._art = [blk]
    loop._one_body = True
    loop._w_cache.put(None, W, wnn, False)
    batch.m_eff = m_eff
    host._predictor, host._applied = (batch, force), None  # (MujocoHost.apply, .step)
    host._predictor_time = host.d.time
    ab = np.empty((k, 2), dtype=np.int64)
    ab[:, 0], ab[:, 1] = batch.a, batch.b
    if status == DONE:
        tree.steps += 1
        stats = SubstepStats()
        stats.steps += int(counters[0])
        stats.nfev += int(counters[1])
        stats.wall = time.perf_counter() - wall
        store._delta_last, store._ddelta_last = d_last, v_last
        if end_case == 0:
            store._close_quiet()
        else:
            store._close(_empty_events(), [])
        keys = store.keys.copy()
        integ._h, integ._keys, integ._h_of = dt, keys, None
        integ._warm = (keys, wi) if same_end else (wk, wi)
        loop.last = loop.make_info(k, stats, fn, batch.key.copy(), ab, d_info, slip)
        c.last = c._info(loop.last)
        return c.last
    # the rare outcomes: the pending step as begin_step makes it, then after_step's end
    space = ImplicitStep.begun(store, batch, W, friction, integ.rtol, s0, mu_k, gf, gc, t,
                               bool(every), fn0, stick=None)
    integ.pending = (batch, space, P_lin, u0)
    info = loop.last = loop.make_info(k, SubstepStats(), fn_b, batch.key.copy(), ab,
                                      batch.delta.copy(), slip_b)
    if status == FIRST:
        tree.first_handed += 1
        tree._pre = _FIRST
    else:
        tree.steps += 1
        res = lean_result(space, None, None, P, d1, u1, loaded, s1, counters, dt, wall)
        if status == END:  # ContactIntegrator.after's end (ImplicitStep.finish's commit)
            integ.pending = None
            rate = np.empty(k)
            _rate(u1, batch.normal, rate)
            if not store.commit_rows(batch, d1, rate, space.t0 + dt):
                space.finish(res)
            integ.booked(batch, space, res, dt)
            step_info(loop.last, res, res.stats, batch.normal, dt)
            c.last = c._info(loop.last)
            return c.last
        assert status == HANDOVER
        state = (A.hpos.copy(), A.hquat.copy(), A.hvel.copy(), A.hom.copy())
        tree._pre = (res, left - int(out[0]) + 1,
                     (loop.body_state(*state), d_h.copy(), u_h.copy(), found.copy()))
    try:
        loop.after(host, dt)
    finally:
        tree._pre = None
    c.last = c._info(loop.last if loop.last is not None else info)
    return c.last
