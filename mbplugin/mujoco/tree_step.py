"""The common host step of a MuJoCo kinematic tree after ``mj_step1`` in one compiled call
(the lean tree path of :mod:`.lean_tree` without its Python frames between compiled calls).

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
:func:`.kernels.contact_ids`): some 190 Python calls around six compiled ones. Where the step
is the common one (the store's rows met again with no onset, end or latch, one compiled law
without state, no stick, no MuJoCo constraint row, no user ``xfrc_applied`` kept aside:
:func:`applies`), :func:`tree_fused` does all of it in one call (after
``tree_start``), the same kernels in the same order (the same bits), and :func:`fused_step`
books its outputs on the Python objects (the store's last overlaps and sequence, the
integrator's warm start, the info; ~56 Python calls a step). Every other case leaves the
call at the point it meets it, nothing changed there, and continues by the lean tree path's
own Python code from that point: an onset, end or latch at the start (:data:`START`: the
general commit), a first solve or a round handed to the general path (:data:`FIRST`,
:data:`HANDOVER`), a row that ends at the step's end (:data:`END`: the store's end booking),
from the call's :class:`TreeOut`. A landing (an onset met by the step's first solve) stays
in the call: :func:`~mbplugin.pipeline.implicit_kernel.onset_solve` solves it with the
onset's coefficient row from the law's compiled onset rule (:func:`onset_templates`), the
rounds follow, and the call returns END with the onsets, which :func:`_rare` books in the
store (:meth:`ContactStore.start <mbplugin.pipeline.store.ContactStore.start>`, rows given)
before the end's booking; a pair without a compiled onset still hands it back (FIRST). No
formula is written here.

Units: SI (m, m/s, N, N s, kg).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import numpy as np
from numba.core import types
from numba.experimental import structref

from mbplugin._jit import borrowed, njit
from mbplugin.contact import ContactBatch
from mbplugin.contact import kernels as ck
from mbplugin.errors import ParameterError
from mbplugin.hosts.arrays import lookup
from mbplugin.hosts.fused_kernels import lean_begin_into
from mbplugin.hosts.integrator import (
    LOST_MARGIN,
    VERIFY_DU,
    VERIFY_TOL,
    _info_arrays,
    lean_result,
)
from mbplugin.hosts.protocol import ArticulatedBlock
from mbplugin.hosts.step import HostStep
from mbplugin.mujoco.backend import MujocoStepInfo
from mbplugin.mujoco.checks import watch_overlaps
from mbplugin.mujoco.kernels import contact_ids, pair_friction
from mbplugin.mujoco.lean_tree import (
    _FIRST,
    _rows_view,
    after_onset_into,
    after_sizes,
    book_end,
    start_into,
    start_sizes,
)
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.implicit import ImplicitStep
from mbplugin.pipeline.implicit_kernel import overlap_rates
from mbplugin.pipeline.layout import CONTACT, NC_MAX, head
from mbplugin.pipeline.store_kernel import _ends_rows, same_rows, superset_rows
from mbplugin.pipeline.substep import SubstepStats

#: :func:`tree_fused`'s outcomes past the start: the rounds ended and the step is booked
#: (DONE), the start's commit is not the common one (START, nothing done), the first solve or
#: a round needs the general path (FIRST, HANDOVER: :func:`~.lean_tree.tree_rounds`'), the
#: end's commit is not the common one or the first solve booked onsets (END)
DONE, HANDOVER, FIRST, START, END = 0, 1, 2, 3, 4
#: :func:`tree_fused`'s outcome where :func:`~.lean_tree.tree_start` does not apply
NOT_OK = 5
#: :func:`tree_fused`'s outcome where no managed pair is within the margin at a valid state
#: and margin (a flight: :func:`fused_step` books the empty step and takes MuJoCo's step)
EMPTY = 6
#: no warm-start impulse (0, 3)
_NO_P = np.empty((0, 3))


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


#: the fields of :class:`StepConst`: the step's :class:`~.lean_tree.TreeArrays`, MuJoCo's C
#: functions (:func:`~.lean_tree.tree_start`'s ``fns``) and ``nv``, the detection's constant
#: pair arrays (plane and sphere shapes, sides, keys, law indices, effective radii, Hertz
#: stiffnesses), the tree's rows, the contact model's shape count, the managed geoms and the
#: rows' bodies (``MujocoContacts``' ``geoms``, ``rows``), MuJoCo's geom friction, priority
#: and condim (views), the store's law (kernel id, mode, tables), the implicit step's header
#: and friction, the rounds' options, the kept arrays (:data:`KEPT`), the step's scratch
#: (float64, int64, bool: :func:`work_sizes`; the contact records) and the pairs' compiled onsets
#: (:func:`onset_templates`: rows, time-scale rules, the law's onset rule)
CONST_FIELDS = ("A", "fns", "nv", "sa", "sb", "a", "b", "key", "law", "r_eff", "k_hertz", "art",
                "n_shapes", "geoms", "rows", "gfric", "gprio", "gcondim", "fkid", "fmode", "kid_t",
                "mode_t", "hd", "mj_mu", "has_fr", "fr_mu", "fr_static", "rounds", "tol", "du",
                "rtol", "dl", "vl", "sk", "wk", "wi", "wsf", "wsi", "wsb", "wgc", "otpl",
                "otsk", "orule")
#: :class:`StepConst`'s kept arrays (:func:`kept_arrays`), written by :func:`tree_fused` at
#: the end of a common step and held by the store and the integrator until the next one (the
#: store's last overlaps and rates, a copy of its keys, the warm start's keys and impulses)
KEPT = ("dl", "vl", "sk", "wk", "wi")


def kept_arrays(n: int) -> tuple[np.ndarray, ...]:
    """:data:`KEPT`'s arrays for ``n`` managed pairs (at most ``n`` contacts a step)."""
    return (np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.empty((n, 3)))


def work_arrays(n: int, nv: int, nq: int, nrows: int) -> tuple[np.ndarray, ...]:
    """:func:`tree_fused`'s scratch (float64, int64, bool, and the implicit step's contact
    records :data:`~mbplugin.pipeline.layout.CONTACT`) for ``n`` managed pairs, ``nv``
    degrees of freedom, ``nq`` position coordinates and ``nrows`` host rows
    (:func:`work_sizes`)."""
    nf, ni, nb = work_sizes(n, nv, nq, nrows)
    return (np.empty(nf), np.empty(ni, dtype=np.int64), np.empty(nb, dtype=np.bool_),
            np.zeros(n, dtype=CONTACT))


#: the fields of :class:`TreeOut` (:func:`tree_fused`'s arrays of the rare outcomes)
OUT_FIELDS = ("a", "b", "key", "point", "normal", "delta", "ddelta", "vt", "m_eff", "r_eff",
              "ra", "rb", "law", "k_hertz", "W", "wnn", "jac", "mm", "cont", "sgn", "resp",
              "force", "mu", "s0", "gf", "gc", "every", "P_lin", "u0", "fn0", "fn_b", "slip_b",
              "P", "d1", "u1", "loaded", "s1", "counters", "out", "d_h", "u_h", "found",
              "start_case", "onset", "d_on", "dd_on", "coef_on", "t_c")


@structref.register
class StepConstType(types.StructRef):
    """numba's type of :class:`StepConst` (its fields' types without literal values)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class StepConst(structref.StructRefProxy):
    """The constants of :func:`tree_fused` (:data:`CONST_FIELDS`) as one argument, and its
    kept arrays (:data:`KEPT`)."""


structref.define_proxy(StepConst, StepConstType, list(CONST_FIELDS))


@structref.register
class TreeOutType(types.StructRef):
    """numba's type of :class:`TreeOut` (its fields' types without literal values)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class TreeOut(structref.StructRefProxy):
    """:func:`tree_fused`'s arrays for the rare outcomes (:data:`OUT_FIELDS`: the batch's,
    W's block, the implicit step's begin and solve), one object returned: read by Python only
    off the common step: :meth:`fields`, or a field by name)."""

    def fields(self) -> dict[str, Any]:
        """Every field by name (one compiled call)."""
        return dict(zip(OUT_FIELDS, _out_fields(self), strict=True))

    def __getattr__(self, name: str) -> Any:
        if name in OUT_FIELDS:
            return _out_fields(self)[OUT_FIELDS.index(name)]
        raise AttributeError(name)


structref.define_proxy(TreeOut, TreeOutType, list(OUT_FIELDS))


@njit
def _out_fields(o):
    """The fields of the :class:`TreeOut` ``o`` in :data:`OUT_FIELDS`' order."""
    return (o.a, o.b, o.key, o.point, o.normal, o.delta, o.ddelta, o.vt, o.m_eff, o.r_eff, o.ra,
            o.rb, o.law, o.k_hertz, o.W, o.wnn, o.jac, o.mm, o.cont, o.sgn, o.resp, o.force,
            o.mu, o.s0, o.gf, o.gc, o.every, o.P_lin, o.u0, o.fn0, o.fn_b, o.slip_b, o.P, o.d1,
            o.u1, o.loaded, o.s1, o.counters, o.out, o.d_h, o.u_h, o.found, o.start_case,
            o.onset, o.d_on, o.dd_on, o.coef_on, o.t_c)


@njit
def step_const(*values):
    """A :class:`StepConst` of ``values`` (:data:`CONST_FIELDS`' order) by a cached compiled
    call."""
    return StepConst(*values)


@njit
def _commit_case(skeys, bkey, blaw, kid, mode, d, v, coef, end, where, dl, vl):
    """:meth:`ContactStore.commit_rows <mbplugin.pipeline.store.ContactStore.commit_rows>`'
    common cases at overlaps ``d`` (K,) m and rates ``v`` (K,) m/s without their booking
    (0: the batch is the store's rows ``skeys`` (M,) in order and none ends; 1: the batch
    holds the store's rows and besides them pairs apart, none ends (``_commit_apart``); -1:
    neither, the general commit books it), the rows' overlaps and rates (the store's
    ``_delta_last``, ``_ddelta_last``) written into ``dl``, ``vl`` (M,) where 0 or 1;
    ``end``, ``where`` (M,) scratch."""
    n = skeys.shape[0]
    hit = same_rows(skeys, bkey, blaw, kid, mode, d, v, coef, end)
    if hit == 0:
        dl[:n] = d
        vl[:n] = v
        return 0
    if hit < 0:
        if superset_rows(skeys, bkey, blaw, d, where):
            for j in range(n):
                dl[j], vl[j] = d[where[j]], v[where[j]]
            if not _ends_rows(kid, mode, dl[:n], vl[:n], coef, end):
                return 1
    return -1


@njit
def work_sizes(n, nv, nq, nrows):
    """The float64, int64 and bool scratch lengths of :func:`tree_fused` (its
    :class:`StepConst`'s ``wsf``, ``wsi``, ``wsb``) for ``n`` managed pairs (at most ``n``
    contacts), ``nv`` degrees of freedom, ``nq`` position coordinates, ``nrows`` host rows:
    :func:`~.lean_tree.start_into`'s, then the step's own (with a compiled onset's), the
    implicit step's group arrays and begin (:func:`~mbplugin.hosts.fused_kernels.lean_begin_into`),
    then :func:`~.lean_tree.after_into`'s."""
    sf, si = start_sizes(n, nv, nrows)
    af, ab = after_sizes(n, n, nq, nrows)
    return sf + (38 + NC_MAX) * n + 3 + 9 * n * n + 11 * n + af, si + 7 * n + 3, 4 * n + ab


@njit
def tree_fused(C, dt, g_norm, H, skeys, scoef, smem, slaw, have_warm, wkeys, wimp):
    """The lean tree path's host step after ``mj_step1`` in one call:
    :func:`~.lean_tree.tree_start` (``dt``, ``g_norm``, ``H`` its own; ``A``, ``fns``,
    ``nv`` and the pairs :class:`StepConst` ``C``'s), the batch gathered as
    :meth:`LeanTree.step <mbplugin.mujoco.lean_tree.LeanTree.step>` gathers it, each
    contact's friction coefficients with ``C.mj_mu`` (MuJoCo's geoms':
    :meth:`MujocoHost.friction <mbplugin.mujoco.host.MujocoHost.friction>` as
    :meth:`HostStep.pair_mu <mbplugin.hosts.step.HostStep.pair_mu>` pairs them), then the
    common step (module docstring) against the store's rows (``skeys``, ``scoef``, ``smem``,
    ``slaw``; its one law's kernel id and mode ``C.fkid``, ``C.fmode``) and the
    integrator's warm start (``wkeys``, ``wimp``; ``have_warm``): the start's commit test,
    the warm start, the implicit begin (:func:`~mbplugin.hosts.fused_kernels.lean_begin`),
    MuJoCo's step and the rounds (:func:`~.lean_tree.after_into`), the end's commit test, the
    integrator's booking and the info (:func:`~mbplugin.hosts.integrator._info_arrays`,
    :func:`.kernels.contact_ids`).
    The step's work arrays are views of ``C``'s scratch (``wsf``, ``wsi``, ``wsb``: a numba
    allocation costs ~70 ns with its release, some 150 a step before); what leaves the call
    is fresh: the returned arrays, and a :class:`TreeOut` of copies off the common step.
    Returns (outcome (NOT_OK where ``tree_start`` does not apply), margin (m), the
    :class:`TreeOut` (None after DONE, START and NOT_OK: its boxing costs ~3 us), the keys
    (K,), the info's normal force, slip and end overlaps (3, K), its sides, geoms and bodies
    (3, K, 2), the store's row count M and the warm start's count, the rounds' iterations and
    force evaluations, the start's and end's commit cases, whether the store's rows are the
    batch's); a common step's ends in ``C``'s kept arrays (:data:`KEPT`: the store's last
    overlaps and rates and a copy of its keys (M,), the warm start's keys (where the store's
    rows are not the batch's) and impulses): an array returned costs its boxing, ~1 us."""
    A = C.A
    wf, wi, wb = C.wsf, C.wsi, C.wsb
    n, nv = C.sa.shape[0], C.nv
    sf, si = start_sizes(n, nv, A.body.shape[0])
    (ok, margin, i, point, normal, delta, ddelta, vt, _m0, ra, rb, W, wnn, jac, mm, cont,
     sgn, resp) = start_into(A, C.fns, C.sa, C.sb, C.a, C.b, C.art, dt, g_norm, nv, H, wf, wi)
    k = i.shape[0]
    key = C.key[i]
    # the step's own scratch: floats from sf, integers from si, bools from 0
    g = wi[si:si + 7 * n + 3]
    a, b, law = g[:k], g[n:n + k], g[2 * n:2 * n + k]
    psa, psb = g[3 * n:3 * n + k], g[4 * n:4 * n + k]
    rows_buf, where = g[5 * n:6 * n], g[6 * n:7 * n]
    counters = g[7 * n:7 * n + 3]
    for j in range(k):
        c = i[j]
        a[j], b[j], law[j], psa[j], psb[j] = C.a[c], C.b[c], C.law[c], C.sa[c], C.sb[c]
    nh = (38 + NC_MAX) * n + 3
    h = wf[sf:sf + nh]
    o = 0
    mu = h[o:o].reshape(0, 2)
    if ok and C.mj_mu:
        m1 = pair_friction(key, C.n_shapes, C.geoms, C.gfric, C.gprio, C.gcondim)
        mu = h[o:o + 2 * k].reshape(k, 2)
        for j in range(k):
            mu[j, 0] = m1[j]
            mu[j, 1] = m1[j]
    o += 2 * n
    d_h, u_h = h[o:o + k], h[o + n:o + n + 3 * k].reshape(k, 3)
    o += 4 * n
    P_lin, s0, u0 = (h[o:o + 3 * k].reshape(k, 3), h[o + 3 * n:o + 3 * n + 3 * k].reshape(k, 3),
                     h[o + 6 * n:o + 6 * n + 3 * k].reshape(k, 3))
    o += 9 * n
    force, P = h[o:o + 3 * k].reshape(k, 3), h[o + 3 * n:o + 3 * n + 3 * k].reshape(k, 3)
    u1, s1 = (h[o + 6 * n:o + 6 * n + 3 * k].reshape(k, 3),
              h[o + 9 * n:o + 9 * n + 3 * k].reshape(k, 3))
    o += 12 * n
    m_eff, fn0, fn_b, slip_b = h[o:o + k], h[o + n:o + n + k], h[o + 2 * n:o + 2 * n + k], h[
        o + 3 * n:o + 3 * n + k]
    o += 4 * n
    d1, rate = h[o:o + k], h[o + n:o + n + k]
    o += 2 * n
    dls, vls = h[o:o + n], h[o + n:o + 2 * n]  # (the start's commit rows: not kept)
    o += 2 * n
    out = h[o:o + 3]
    o += 3
    d_on, dd_on, t_c = h[o:o + k], h[o + n:o + n + k], h[o + 2 * n:o + 2 * n + k]
    o += 3 * n
    coef_on = h[o:o + NC_MAX * k].reshape(k, NC_MAX)
    found, loaded, end, new = wb[:k], wb[n:n + k], wb[2 * n:3 * n], wb[3 * n:3 * n + k]
    new[:] = False
    counters[:] = 0
    out[:] = 0.0
    status = NOT_OK if not ok else START
    if not ok and k == 0 and np.isfinite(margin) and margin >= 0.0:  # (start_into's tests)
        pos, quat, vel, om = _rows_view(wf[19 * n + 9 * n * n:], A.body.shape[0])
        if ck.state_all_valid(pos, quat, vel, om, A.mass1, A.inv_inertia):
            status = EMPTY
    start_case = -1
    if ok and skeys.shape[0] <= n:  # (a store of more rows than pairs: the general commit)
        start_case = _commit_case(skeys, key, law, C.fkid, C.fmode, delta, ddelta, scoef,
                                  end[:skeys.shape[0]], where[:skeys.shape[0]], dls, vls)
    if start_case < 0:
        return (status, margin, None, key, np.empty((3, k)), np.empty((3, k, 2), dtype=np.int64),
                0, 0, 0, 0, start_case, -1, False)
    # the warm start (ContactIntegrator.warm_start) and the store's rows (_rows_args)
    P_lin[:] = 0.0
    if have_warm:
        if _same(wkeys, key):
            P_lin[:] = wimp
        else:
            for j in range(k):
                r = _find(wkeys, key[j])
                if r >= 0:
                    for x in range(3):
                        P_lin[j, x] = wimp[r, x]
    same = _same(skeys, key)
    rows = rows_buf[:0]
    if not same:
        rows = rows_buf[:k]
        for j in range(k):
            rows[j] = _find(skeys, key[j])
    s0[:] = 0.0
    ob = sf + nh  # (the group arrays and the begin's work arrays, then after_into's)
    gf, gc = wf[ob:ob + 9 * k * k + 4 * k], C.wgc[:k]
    every = lean_begin_into(k, wnn, vt, ddelta, normal, delta, P_lin, dt, C.hd, W.reshape(-1),
                            mu, C.has_fr, C.fr_mu, C.fr_static, same, rows, scoef, smem, slaw,
                            law, C.kid_t, C.mode_t, s0, m_eff, u0, fn0, fn_b, slip_b, force, gf,
                            gc, wf[ob + 9 * n * n + 4 * n:ob + 9 * n * n + 11 * n])
    oa = ob + 9 * n * n + 11 * n
    # MuJoCo's step and the rounds (after_step's tree_after)
    P[:] = P_lin
    s1[:] = s0
    # (the compiled onset's arrays as borrowed views: no reference-count updates at the two
    # calls' entries and exits, ~40 atomic operations a step; owners: C and its scratch)
    oW, om, oi, otpl, otsk, orule, onew, odo, odd, ocoef, otc = borrowed(
        (W, m_eff, i, C.otpl, C.otsk, C.orule, new, d_on, dd_on, coef_on, t_c))
    status = after_onset_into(A, a, b, point, force, psa, psb, C.rounds, dt,
                              max(2.0 * margin, LOST_MARGIN), C.tol, C.du, gf, gc, fn0, s0,
                              C.rtol, P, d1, u1, loaded, s1, resp, cont, sgn, u0, counters,
                              d_h, u_h, found, out, wf[oa:], wb[4 * n:], oW, om, oi, otpl,
                              otsk, orule, onew, odo, odd, ocoef, otc)
    end_case, same_end, m, nw = -1, False, 0, 0
    landed = False
    for j in range(k):
        landed = landed or new[j]
    if status == DONE and landed:  # (the onsets' booking and the end's: the END outcome)
        status = END
    if status == DONE:
        overlap_rates(u1, normal, rate)
        m = skeys.shape[0]
        end_case = _commit_case(skeys, key, law, C.fkid, C.fmode, d1, rate, scoef, end[:m],
                                where[:m], dls, vls)
        if end_case < 0:
            status, m = END, 0
    fo = np.empty((3, k))  # the info's normal force, slip, end overlaps
    io = np.empty((3, k, 2), dtype=np.int64)  # its sides, geoms, bodies
    for j in range(k):
        io[0, j, 0], io[0, j, 1] = a[j], b[j]
    if status == DONE:  # ContactIntegrator.booked (the store's rows unchanged), step_info
        same_end = _same(skeys, key)
        if same_end:
            nw = k
            C.wi[:k] = P
        else:
            for j in range(k):
                if _find(skeys, key[j]) >= 0:
                    C.wk[nw] = key[j]
                    for x in range(3):
                        C.wi[nw, x] = P[j, x]
                    nw += 1
        _info_arrays(P, u1, normal, dt, fo[0], fo[1])
        fo[2] = d1
        geoms, bodies = contact_ids(key, C.n_shapes, C.geoms, C.rows, io[0])
        io[1], io[2] = geoms, bodies
        C.dl[:m], C.vl[:m], C.sk[:m] = dls[:m], vls[:m], skeys
        return (status, margin, None, key, fo, io, m, nw, counters[0], counters[1], start_case,
                end_case, same_end)
    cp = np.copy
    o_ = TreeOut(cp(a), cp(b), key, cp(point), cp(normal), cp(delta), cp(ddelta), cp(vt),
                 cp(m_eff), C.r_eff[i], cp(ra), cp(rb), cp(law), C.k_hertz[i], cp(W), cp(wnn),
                 cp(jac), cp(mm), cp(cont), cp(sgn), cp(resp), cp(force), cp(mu), cp(s0), cp(gf),
                 cp(gc), every, cp(P_lin), cp(u0), cp(fn0), cp(fn_b), cp(slip_b), cp(P), cp(d1),
                 cp(u1), cp(loaded), cp(s1), cp(counters), cp(out), cp(d_h), cp(u_h),
                 cp(found), start_case, cp(new), cp(d_on), cp(dd_on), cp(coef_on), cp(t_c))
    return (status, margin, o_, key, fo, io, m, nw, counters[0], counters[1], start_case,
            end_case, same_end)


def const_of(tree: Any, c: Any, det: Any, A: Any) -> tuple[Any, tuple[np.ndarray, ...], Any]:
    """The :class:`StepConst` of :class:`~.lean_tree.LeanTree` ``tree`` with the
    :class:`~.lean_tree.TreeArrays` ``A`` and the constants of the detection ``det`` of
    :class:`~mbplugin.mujoco.MujocoContacts` ``c``, and its kept arrays (made once per pair,
    kept on ``tree`` with the store's laws, the friction and the options they hold; MuJoCo's
    geom arrays bound as views), and the step's friction (None where not active)."""
    const, loop = det._const, c.loop
    store, integ = loop.store, loop.integrator
    opts = (integ.verify, integ.rtol, loop.friction_mode)
    hit = tree._step_const
    if (hit is None or hit[0] is not const or hit[1] is not det.sa or hit[3] is not A
            or hit[4] is not integ.friction or hit[5] is not store.laws or hit[6] != opts):
        a, b, key, law, k_hertz, r_eff = const
        m, cg = tree.host.m, np.ascontiguousarray
        kept = kept_arrays(len(key))
        friction = integ.friction
        if friction is not None and not friction.active:
            friction = None
        fast = store._fast_law()
        kid_t, mode_t = ik._law_tables(store.laws)[:2]
        hit = tree._step_const = (const, det.sa, (step_const(
            A, tree._fns, tree._nv, det.sa, det.sb, a, b, key, law, r_eff, k_hertz, tree._art,
            int(loop.model.n_shapes), cg(c.geoms, dtype=np.int64),
            cg(c.rows, dtype=np.int64), m.geom_friction, m.geom_priority, m.geom_condim,
            fast[0], fast[1], kid_t, mode_t, head(friction, None),
            loop.friction_mode == "mujoco", friction is not None,
            0.0 if friction is None else float(friction.mu),
            0.0 if friction is None else float(friction.static), int(integ.verify), VERIFY_TOL,
            VERIFY_DU, float(integ.rtol), *kept, *work_arrays(len(key), tree._nv, m.nq,
                                                           len(tree.host.body)),
            *onset_templates(store, k_hertz, r_eff)), kept, friction), A, integ.friction,
            store.laws, opts)
    return hit[2]


def onset_templates(store: Any, k_hertz: np.ndarray,
                    r_eff: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compiled onsets of the managed pairs under the one law of ``store`` (their
    Hertz stiffnesses ``k_hertz`` (N,) N/m^n, effective radii ``r_eff`` (N,) m), as
    :meth:`ContactStore.start <mbplugin.pipeline.store.ContactStore.start>` computes an
    onset's row: the law's compiled onset (``Law.onset_rule``: (id, p0, p1) (3,), zeros
    where it has none) rewrites a pair's row ``tpl`` (N, NC_MAX) (the law's ``coefficients``
    at v_in = 1 m/s, with the pair's Hertz k where the pair law takes it from the materials)
    at the impact speed; the contact time scale by the pair's (k, n) of
    ``Law.timescale_rule`` ``tsk`` (N, 2), NaN where the pair has no compiled onset (the
    store's own onset then: a lean tree step's FIRST outcome)."""
    n = len(k_hertz)
    tpl, tsk, rule = np.zeros((n, NC_MAX)), np.full((n, 2), np.nan), np.zeros(3)
    law, entry = store.laws[0], store.pair_laws[0]
    r0 = law.onset_rule()
    if r0 is None:
        return tpl, tsk, rule
    rule[:] = r0
    one = np.ones(1)
    for j in range(n):
        kj = float(k_hertz[j])
        if entry.hertz_k and not (np.isfinite(kj) and kj > 0):
            continue
        law_j = law.replace(k=kj) if entry.hertz_k else law
        ts = law_j.timescale_rule()
        if law_j.onset_rule() != r0 or ts is None:
            continue
        try:
            row = np.asarray(law_j.coefficients(one, one, r_eff[j:j + 1]), dtype=float)
        except (ValueError, TypeError, ParameterError):
            continue
        row = row.reshape(-1)
        if row.shape[0] > NC_MAX or not np.all(np.isfinite(row)):
            continue
        tpl[j, :row.shape[0]] = row
        tsk[j] = ts
    return tpl, tsk, rule


def applies(tree: Any, c: Any) -> bool:
    """Whether the step of :class:`~mbplugin.mujoco.MujocoContacts` ``c`` may take
    :func:`tree_fused`'s common step (module docstring; checked after ``mj_step1``): the
    store with no latch and its one compiled law without state or memory, no stick, a
    compiled implicit step, the fused MuJoCo step of :func:`~.lean_tree.tree_after` (no
    constraint row, no user ``xfrc_applied`` kept aside), the plain re-detection."""
    loop, host = c.loop, tree.host
    store, integ = loop.store, loop.integrator
    return (not len(store.latched_keys) and len(store.laws) == 1
            and store.keys.dtype == np.int64 and store._fast_law() is not None
            and integ.stick is None and integ.solver != "scipy" and ik.compiled_laws(store)
            and not host.d.nefc and host._user_xfrc is None and tree._step2[0] != 0
            and not loop._any_free and loop.plain_redetect())


def ready(tree: Any, c: Any, det: Any, A: Any) -> tuple[Any, tuple[np.ndarray, ...], Any] | None:
    """:func:`applies` then :func:`const_of` (``det``, ``A`` its own) in one call, or None
    where the step may not take :func:`tree_fused`: the tests that vary from step to step (a
    latch, MuJoCo's constraint rows, a user's ``xfrc_applied`` kept aside, the store's key
    type, the re-detection) each call, the others (the store's laws, the integrator's
    friction, stick, solver and options, the detection's constants, the tree's arrays) kept
    while the objects they read are the same ones (identity; else both functions again)."""
    loop, host = c.loop, tree.host
    store, integ = loop.store, loop.integrator
    if (len(store.latched_keys) or host.d.nefc or host._user_xfrc is not None
            or store.keys.dtype != np.int64 or not loop.plain_redetect()):
        return None
    hit = tree._ready
    if (hit is not None and hit[0] is store.laws and hit[1] is integ.friction
            and hit[2] is det._const and hit[3] is A and hit[4] is integ.stick
            and hit[5] is integ.solver and hit[6] is integ.verify and hit[7] is integ.rtol
            and hit[8] is loop.friction_mode and hit[9] is det.sa):
        return hit[10]
    if not applies(tree, c):
        return None
    const = const_of(tree, c, det, A)
    tree._ready = (store.laws, integ.friction, det._const, A, integ.stick, integ.solver,
                   integ.verify, integ.rtol, loop.friction_mode, det.sa, const)
    return const


def fused_step(tree: Any, c: Any, A: Any, const: tuple[Any, tuple[np.ndarray, ...], Any],
               H: np.ndarray, t: float, dt: float, g_norm: float) -> tuple[Any, bool]:
    """:meth:`LeanTree.step <mbplugin.mujoco.lean_tree.LeanTree.step>` after ``mj_step1`` and
    its velocity update matrix ``H`` by :func:`tree_fused` (the
    :class:`~.lean_tree.TreeArrays` ``A``, the detection's constants ``const``: the
    :class:`StepConst`, its kept arrays and the friction (:func:`const_of`); time ``t`` s,
    step ``dt`` s, gravity's magnitude ``g_norm`` m/s^2) and the booking of its outputs,
    the rare outcomes by the lean tree path's own code (module docstring).
    Returns (the step's info, True); (None, True) where :func:`~.lean_tree.tree_start` does
    not apply (the general path continues after ``mj_step1``); (None, False) where the
    start's commit is not the common one (nothing changed: the caller's lean path runs)."""
    loop, host = c.loop, tree.host
    store, integ = loop.store, loop.integrator
    C, kept, friction = const
    warm = integ._warm
    wkeys, wimp = (store.keys[:0], _NO_P) if warm is None else warm
    wall = time.perf_counter()
    (status, margin, o, keys, fo, io, m, nw, steps, nfev, _start, _end,
     same_end) = tree_fused(C, dt, g_norm, H, store.keys, store.coef, store.mem, store.law,
                            warm is not None, wkeys, wimp)
    if status == NOT_OK:
        return None, True
    if status == EMPTY:
        return _empty(c, host, margin, t, dt), True
    if status == START:
        return None, False
    tree.blocks += 1
    loop.margin = 2.0 * margin
    if status != DONE:
        return _rare(tree, c, A, o, status, wall, t, dt, friction), True
    # the start's commit (ContactStore.commit_rows), then the end's (the last overlaps its):
    # no event in either case (0: the store's rows; 1: with pairs apart, ``apart_booked``'s
    # empty events: the shared empty arrays of ``_close_quiet``, ~3 us less a step)
    store._close_quiet()
    loop.pending = None
    integ.pending = None
    loop.forced.fill(False)
    loop._art = []  # (the block is read only by a pending step's solve: none after DONE)
    loop._one_body = True
    loop._w_cache.put(None, None, None, False)
    k = len(keys)
    dl, vl, sk, wk, wi = kept
    # (MujocoHost.apply, .step: the force is the predictor of the next step's constrained
    # acceleration of free rows; a LeanTree's model has none, it is never read)
    host._predictor, host._applied = None, None
    tree.steps += 1
    stats = SubstepStats(steps, nfev, 0, time.perf_counter() - wall)
    store._delta_last, store._ddelta_last = dl[:m], vl[:m]
    store._close_quiet()
    skeys = sk[:m]
    integ._h, integ._keys, integ._h_of = dt, skeys, None
    integ._warm = (skeys if same_end else wk[:nw], wi[:nw])
    fn, slip, d_info = fo[0], fo[1], fo[2]  # (indexing: iterating costs ~1 us a view)
    ab, geoms, bodies = io[0], io[1], io[2]
    loop.last = loop.make_info(k, stats, fn, keys, ab, d_info, slip)
    # the pass-through watch of every path (checks.watch_overlaps: the common step is one
    # comparison of the largest overlap with the watch's bound, ~1 us)
    c.last = watch_overlaps(c, MujocoStepInfo(k, stats, fn, keys, ab, d_info, slip, bodies,
                                              geoms))
    return c.last, True


def _empty(c: Any, host: Any, margin: float, t: float, dt: float) -> Any:
    """:func:`fused_step`'s EMPTY outcome (no managed pair within the step's ``margin`` m at
    time ``t`` s): the general path's step of an empty batch without its state read,
    detection and Python after MuJoCo's step (``MujocoContacts.step``: nothing pending, no
    force, no correction, no free row): :meth:`HostStep.step
    <mbplugin.hosts.step.HostStep.step>`'s booking of the empty batch (the store's commit,
    which ends its rows if it has any; the empty info; no warm start), ``mj_step2``
    (:meth:`MujocoHost.step <mbplugin.mujoco.host.MujocoHost.step>`) and the step's info.
    Returns the info."""
    loop = c.loop
    loop.margin = 2.0 * margin
    HostStep.step(loop, host, ContactBatch.empty(), None, t, dt)  # (k = 0: no state read)
    host.step()
    c.last = c._info(loop.last)
    return c.last


def _rare(tree: Any, c: Any, A: Any, o: Any, status: int, wall: float, t: float,
          dt: float, friction: Any) -> Any:
    """:func:`fused_step`'s outcomes FIRST, HANDOVER and END from :func:`tree_fused`'s
    :class:`TreeOut` ``o``: the pending step as :func:`~.lean_tree.begin_step` makes it, then
    :func:`~.lean_tree.after_step`'s end (the general path's ``loop.after`` where the step is
    handed to it). Returns the step's info."""
    loop, host = c.loop, tree.host
    store, integ = loop.store, loop.integrator
    o = SimpleNamespace(**o.fields())
    batch = ContactBatch(o.a, o.b, o.key, o.point, o.normal, o.delta, o.ddelta, o.vt, o.m_eff,
                         o.r_eff, o.ra, o.rb, o.law, o.k_hertz)
    k = len(batch)
    # the start's commit (case 1, pairs apart besides the rows: ``apart_booked``'s empty
    # events as the shared empty arrays of ``_close_quiet``, as fused_step books it)
    if int(o.start_case) == 0:
        store._delta_last, store._ddelta_last = batch.delta.copy(), batch.ddelta.copy()
    else:
        where = lookup(batch.key, store.keys)
        store._delta_last, store._ddelta_last = batch.delta[where], batch.ddelta[where]
    store._close_quiet()
    loop.pending = None
    integ.pending = None
    loop.forced[:] = False
    W, wnn = o.W, o.wnn
    blk = ArticulatedBlock(o.cont, o.sgn, o.jac, o.mm, tag=tree.root)
    blk.response = o.resp
    loop._art = [blk]
    loop._one_body = True
    loop._w_cache.put(None, W, wnn, False)
    force = o.force
    host._predictor, host._applied = (batch, force), None  # (MujocoHost.apply, .step)
    host._predictor_time = host.d.time
    ab = np.empty((k, 2), dtype=np.int64)
    ab[:, 0], ab[:, 1] = batch.a, batch.b
    mu_k = o.mu if len(o.mu) else None
    every = bool(o.every)
    if o.onset.any():  # the first solve's onsets, solved in the call: the store's booking
        idx = np.flatnonzero(o.onset)  # (the onset's state: batch_at's; new, not latched)
        store.start_new(batch, idx, o.d_on[idx], o.dd_on[idx], t, o.coef_on[idx], o.t_c[idx])
        every = bool(o.gc["active"].all())  # (ImplicitStep._prepare's after the onsets)
        tree.landed += 1
    space = ImplicitStep.begun(store, batch, W, friction, integ.rtol, o.s0, mu_k, o.gf, o.gc,
                               t, every, o.fn0, stick=None)
    P_lin, u0 = o.P_lin, o.u0
    integ.pending = (batch, space, P_lin, u0)
    info = loop.last = loop.make_info(k, SubstepStats(), o.fn_b, batch.key.copy(), ab,
                                      batch.delta.copy(), o.slip_b)
    left = int(integ.verify)
    if status == FIRST:
        tree.first_handed += 1
        tree._pre = _FIRST
    else:
        tree.steps += 1
        P, d1, u1, loaded, s1, counters = o.P, o.d1, o.u1, o.loaded, o.s1, o.counters
        res = lean_result(space, None, None, P, d1, u1, loaded, s1, counters, dt, wall)
        if status == END:  # ContactIntegrator.after's end (ImplicitStep.finish's commit)
            book_end(loop, integ, store, space, batch, res, d1, u1, dt)
            c.last = c._info(loop.last)
            return c.last
        assert status == HANDOVER
        state = (A.hpos.copy(), A.hquat.copy(), A.hvel.copy(), A.hom.copy())
        tree._pre = (res, left - int(o.out[0]) + 1,
                     (loop.body_state(*state), o.d_h.copy(), o.u_h.copy(), o.found.copy()))
    try:
        loop.after(host, dt)
    finally:
        tree._pre = None
    c.last = c._info(loop.last if loop.last is not None else info)
    return c.last
