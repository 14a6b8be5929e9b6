"""A robot's implicit step begun in two compiled calls (the lean case of
:meth:`mbplugin.hosts.HostStep.step` before the host step).

Before the host step, :meth:`HostStep.step <mbplugin.hosts.HostStep.step>` books the detected
contacts in the store, builds W of the articulated body that carries them
(:meth:`HostStep._delassus <mbplugin.hosts.HostStep._delassus>`, for one body
:func:`mbplugin.bullet.lean.lean_block`), each contact's effective mass and velocity, the
warm-started impulse P_lin, the implicit step's group arrays and its start
(:meth:`ContactIntegrator.begin <mbplugin.hosts.ContactIntegrator.begin>`,
:class:`~mbplugin.pipeline.implicit.ImplicitStep`) and the step's info: about twenty Python
frames and NumPy calls around six compiled calls. For the common robot case (every contact on
one articulated body whose joint tree is modelled, no free row, no ball joint, compiled laws,
no stick spring) :func:`begin_lean` does the same in two compiled calls: W of the body
(:func:`~mbplugin.bullet.fast_step.body_delassus`, as :func:`~mbplugin.bullet.lean.lean_block`
calls it) and :func:`lean_begin` (the kernels of the rest,
:func:`~mbplugin.pipeline.implicit_kernel._fill_group`,
:func:`~mbplugin.pipeline.implicit_kernel._begin_rows`,
:func:`~mbplugin.hosts.integrator._info_arrays`, in the same order: the same bits), and sets
the same state on the step's objects; every other case (checked before anything is changed)
takes the general path. After the host step, :func:`after_lean` takes the host's lean rounds
and the step's end without :meth:`HostStep.after <mbplugin.hosts.HostStep.after>`'s general
closures (the same calls in the same order). No formula is written here.

Units: SI (m, m/s, kg, N s).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.bullet.articulated import held
from mbplugin.bullet.fast_step import body_delassus, bullet_matrix
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts.arrays import _max_norm_rows, max_norm_rows
from mbplugin.hosts.detection import margin_value
from mbplugin.hosts.fused_kernels import lean_begin
from mbplugin.hosts.integrator import LOST_MARGIN, step_info
from mbplugin.hosts.protocol import ArticulatedBlock
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.implicit import ImplicitStep
from mbplugin.pipeline.layout import CONTACT, head
from mbplugin.pipeline.store_kernel import quiet_rows
from mbplugin.pipeline.substep import SubstepStats, _law_tables


def begin_lean(core: Any, host: Any, batch: ContactBatch, bodies: BodyState, t: Any,
               dt: float) -> tuple[Any, ContactBatch, np.ndarray] | None:
    """:meth:`HostStep.step <mbplugin.hosts.HostStep.step>` (``core``) of the detected
    contacts ``batch`` at the rows' state ``bodies`` over [t, t + dt] with the
    :class:`~mbplugin.bullet.host.BulletHost` ``host``, for the case of the module docstring:
    the same result and state (the store's commit, W and its block, the pending implicit
    step, the info) with its arithmetic in two compiled calls (W, :func:`lean_begin`). Returns
    (info, batch, force P_lin / dt (K, 3) N), or None with nothing changed where the case
    does not hold (then call ``core.step``)."""
    k = batch.delta.shape[0]  # (len(batch))
    integ = core.integrator
    store = core.store
    art = getattr(host, "art", None)
    known = None if art is None else _KNOWN.pop(art, None)  # (taken once, here or never)
    if (k == 0 or type(t) is not float or core.articulated != "implicit" or core._any_free
            or art is None or integ.stick is not None or integ.solver == "scipy"
            or not ik.compiled_laws(store)):
        return None
    sides = art._sides(batch, core.kind)
    if len(sides) != 1:
        return None
    body, cont, _, sgn = sides[0]
    if len(cont) != k:
        return None
    joints = art.moving_joints(body)
    tree = art._trees.get(body)
    if any(art._sph[body]) or tree is None or not tree.supported:
        return None
    # the case holds (lean_block would take it): HostStep.step's commit, its common case
    # tested in the compiled call below (test: that test's arguments)
    test = store.rows_test_args(batch)
    if test is None:
        _commit(store, batch, t)
    core.pending = None
    integ.pending = None
    core.forced[:] = False
    # lean_block's reads: the joints' positions and the joints whose motor acted; where the
    # last host step's lean end left PyBullet's joints at the state it kept (known) and every
    # moving joint is above a link the state read has, that state, checked in begin_body
    pb, cid = art.client.p, art.client.id
    rows_chk = (_known_rows(host.read, body, tree) if known is not None and known[0] == body
                and known[1] is tree and joints and test is not None else None)
    if rows_chk is not None:
        q, locked = known[2], _locked(known[3], tree.floating)
    else:
        q, locked = _joint_read(pb, cid, body, joints, tree.floating)
        rows_chk = _NO_CHECK
    held(art, body, locked)  # (before the host step: PyBullet's clamp lifted)
    base_p, base_o = (art.base_state(body, bodies)[:2] if body in art._base_row
                      else pb.getBasePositionAndOrientation(body, physicsClientId=cid))
    x, y, z, w = base_o
    # ContactIntegrator.begin's warm start and ImplicitStep's arguments
    mu = core.pair_mu(host, batch)
    P_lin = integ.warm_start(batch)
    friction = integ.friction if (integ.friction is not None and integ.friction.active) \
        else None
    mu_k = None if mu is None else np.asarray(mu, dtype=float).reshape(k, 2)
    c = np.ascontiguousarray
    n = batch.normal
    ncol = tree.ncol
    mm, jac = np.zeros((ncol, ncol)), np.zeros((k, 3, ncol))
    W = np.zeros((3 * k, 3 * k))
    s0 = np.zeros((k, 3))
    v1, v3 = np.empty((4, k)), np.empty((3, k, 3))
    wnn, m_eff, fn0, fn = v1
    u0, force, _ = v3
    slip = np.empty(k)
    tree_args, links, in_order = _constants(art, tree, sides)
    r_base = np.empty((3, 3))  # the base's rotation: filled by begin_body, else below
    nc = c(n, dtype=float)
    kid, mode = _law_tables(store.laws)[:2]
    delassus = (q, tree.q, tree._moving, np.asarray(base_p, dtype=float),
                np.array([w, x, y, z]), r_base, *tree_args, links,
                c(batch.point if in_order else batch.point[cont]), locked, cont, sgn, nc, mm,
                jac, W, wnn)
    delta, ddelta = c(batch.delta, dtype=float), c(batch.ddelta, dtype=float)
    begin = (c(batch.vt, dtype=float), ddelta, delta, P_lin, float(dt), head(friction, None),
             ik._NO_MU if mu_k is None else c(mu_k), friction is not None,
             0.0 if friction is None else float(friction.mu),
             0.0 if friction is None else float(friction.static), store.mem, store.law, kid,
             mode, s0, m_eff, u0, fn0, fn, slip, force)
    if test is not None:  # the commit's tests, W and the begin in one call
        m = len(test[0])
        where, rows_dv = np.empty(m, dtype=np.int64), np.empty((2, m))
        head_args = (*test, c(store.coef, dtype=float), np.empty(k, dtype=np.bool_), where,
                     *rows_dv)
        hit, resp, gf, gc, every = begin_body(*head_args, *rows_chk, bodies.pos, bodies.quat,
                                              *delassus, *begin)
        if hit == STALE:  # PyBullet's joints moved since (the user's resets): read them
            q, locked, delassus = _reread(art, pb, cid, body, joints, tree, delassus)
            hit, resp, gf, gc, every = begin_body(*head_args, *_NO_CHECK, bodies.pos,
                                                  bodies.quat, *delassus, *begin)
        elif rows_chk is not _NO_CHECK and hit != 0 and hit != 2:  # (nothing checked)
            q, locked, delassus = _reread(art, pb, cid, body, joints, tree, delassus)
        if hit == 0:  # the common commit (commit_rows' own booking)
            store.rows_booked(batch.delta, batch.ddelta)
        elif hit == 2:  # the store's rows among pairs apart (a swing foot near the ground)
            store.apart_booked(*rows_dv)
        else:  # a row ends or an onset: the commit first (nothing else changed)
            _commit(store, batch, t)
            test = None
    if test is None:
        bullet_matrix(float(x), float(y), float(z), float(w), r_base)  # (base_rotation's)
        _, same, srows, coef, mem, law, blaw, kid, mode = ik._rows_args(store, batch)
        resp = body_delassus(*delassus)
        gf, gc, every = lean_begin(
            k, wnn, begin[0], ddelta, nc, delta, P_lin, float(dt), begin[5], W.reshape(-1),
            *begin[6:10], same, srows, coef, mem, law, c(blaw), kid, mode, *begin[14:])
    # HostStep._delassus' and lean_block's state
    blk = ArticulatedBlock(cont, sgn, jac, mm, locked, tag=(body, r_base, joints))
    blk.response = resp
    core._art = [blk]
    core._one_body = True
    core._w_cache.put(None, W, wnn, False)
    batch.m_eff = m_eff
    # the pending implicit step (ContactIntegrator.begin) and the step's info
    space = ImplicitStep.begun(store, batch, W, friction, integ.rtol, s0, mu_k, gf, gc, t,
                               bool(every), fn0)
    integ.pending = (batch, space, P_lin, u0)
    ab = np.empty((k, 2), dtype=np.int64)
    ab[:, 0], ab[:, 1] = batch.a, batch.b
    core.last = core.make_info(k, SubstepStats(), fn, batch.key.copy(), ab, batch.delta.copy(),
                               slip)
    return core.last, batch, force


#: :func:`begin_body`'s outcome where the joint state it was given is not PyBullet's
STALE = -3
#: m (and quaternion units): :func:`begin_body`'s bound on a link's centre of mass and
#: orientation from the kept joint state against the state read (the two forward kinematics
#: agree to ~1e-15; a user's reset moves a link by far more)
KNOWN_TOL = 1e-12
#: :func:`begin_body`'s arguments without the check (no link rows)
_NO_CHECK = (False, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
#: per backend's articulated bodies (:class:`~mbplugin.bullet.articulated.BulletArticulated`):
#: (body, its tree, the joint positions (n,) PyBullet holds, the joints' motor torques of the
#: host step) as :func:`after_lean` left PyBullet, taken by the next :func:`begin_lean`
_KNOWN: weakref.WeakKeyDictionary[Any, tuple[Any, ...]] = weakref.WeakKeyDictionary()


def _locked(tau: Any, floating: bool) -> np.ndarray:
    """The columns whose motor acted (``tau`` the joints' motor torques, N m or N: nonzero;
    NaN in, -0.0 out), offset by a floating base's 6."""
    locked = np.array(tau, dtype=float).nonzero()[0]  # (a C method: no frame)
    if floating:
        locked += 6
    return locked


def _joint_read(pb: Any, cid: int, body: int, joints: list[int],
                floating: bool) -> tuple[np.ndarray, np.ndarray]:
    """``body``'s moving ``joints``' positions (n,) and the columns whose motor acted, read
    from PyBullet (one ``getJointStates``)."""
    if not joints:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    cols = tuple(zip(*pb.getJointStates(body, joints, physicsClientId=cid), strict=True))
    return np.array(cols[0], dtype=float), _locked(cols[3], floating)


def _reread(art: Any, pb: Any, cid: int, body: int, joints: list[int], tree: Any,
            delassus: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]]:
    """The joints read from PyBullet after a kept state was not taken (:data:`STALE`, or the
    commit's tests failed before the check): (q, locked, ``delassus`` with them, its mass
    matrix, Jacobians and W zeroed again)."""
    q, locked = _joint_read(pb, cid, body, joints, tree.floating)
    held(art, body, locked)
    i = len(delassus) - 8  # (q, ..., locked, cont, sgn, normal, mm, jac, W, wnn)
    for a in delassus[-4:-1]:
        a[...] = 0.0
    return q, locked, (q, *delassus[1:i], locked, *delassus[i + 1:])


def _known_rows(read: Any, body: int, tree: Any) -> tuple[Any, ...] | None:
    """:func:`begin_body`'s check arguments (True, the body's links and their rows of the
    state read) where every moving joint of ``tree`` is above one of those links (a joint
    reset moves one of them), else None; kept per (read's groups, body, tree)."""
    key = (read._link_groups, body, tree)
    hit = _ROWS_CHK.get(id(tree))
    if hit is not None and hit[0][0] is key[0] and hit[0][1] == body and hit[0][2] is tree:
        return hit[1]
    out = None
    for b, lks, rows in read._link_groups:
        if b != body:
            continue
        seen = np.zeros(len(tree.parent), dtype=bool)
        for lk in lks:
            while lk >= 0 and not seen[lk]:
                seen[lk] = True
                lk = int(tree.parent[lk])
        if seen[tree._moving].all():
            out = (True, np.asarray(lks, dtype=np.int64), np.asarray(rows, dtype=np.int64))
    _ROWS_CHK[id(tree)] = (key, out)
    return out


#: :func:`_known_rows`' answers by tree id: ((groups, body, tree), answer)
_ROWS_CHK: dict[int, tuple[tuple[Any, ...], Any]] = {}


def _commit(store: Any, batch: ContactBatch, t: float) -> None:
    """:meth:`HostStep.step <mbplugin.hosts.HostStep.step>`'s commit of ``batch`` at ``t``
    (s)."""
    if not store.commit_rows(batch, batch.delta, batch.ddelta, t):
        store.commit(batch, t, aligned=False, compiled=True)


@njit
def begin_body(skeys, bkeys, blaw, fkid, fmode, coef, end, where, d_rows, v_rows, check,
               clinks, crows, cpos, cquat, q, tq,
               moving, base_p, base_q, r_base, parent, jtype, axis, pf_pos, pf_quat, inert_pos,
               inert_rot_t, col, floating, mass, inertia, base_mass, base_inertia, com_quat,
               com_rot, com_pos, pivot, axis_w, cm, cs, cj, links, point, locked, cont, sgn,
               normal, mm, jac, W, wnn, vt, ddelta, delta, P_lin, dt, hd, mu, has_fr, fr_mu,
               fr_static, mem, slaw, kid, mode, s0, m_eff, u0, fn0, fn, slip, force):
    """:func:`begin_lean`'s compiled calls in one: the store's commit tests
    (:func:`~mbplugin.pipeline.store_kernel.quiet_rows` of the store's keys ``skeys``, the
    batch's ``bkeys`` and law indices ``blaw``, the law's kernel id ``fkid`` and mode
    ``fmode``, the overlaps ``delta`` (K,) m and rates ``ddelta`` (K,) m/s, the store's
    ``coef``, its work arrays ``end``, ``where``, ``d_rows``, ``v_rows``), then where they
    found a quiet commit (0: the keys the store's rows in order; 2: those rows among pairs
    apart) W of the body (:func:`~mbplugin.bullet.fast_step.body_delassus`, its arguments
    ``q`` ... ``wnn``; the base's rotation ``r_base`` (3, 3) written first, from its
    orientation ``base_q`` [w, x, y, z], as :func:`~mbplugin.bullet.fast_step.base_rotation`
    computes it) and the implicit step's begin
    (:func:`~mbplugin.hosts.fused_kernels.lean_begin` with each contact's row of the store,
    the store's ``mem`` and law indices ``slaw``, the laws' kernel ids ``kid`` and modes
    ``mode``; its other arguments as there). Returns (the tests' outcome: 0 or 2 where the
    rest ran, else -1 or 1 with nothing else done, the body's response M^-1 J^T, gf, gc,
    every contact active). With ``check``, the joint positions ``q`` are a kept state
    (:func:`begin_lean`): W's forward kinematics of each of the links ``clinks`` is compared
    with the state read's rows ``crows`` (``cpos``, ``cquat``; :func:`_links_at`) and where
    one is off, :data:`STALE` is returned with nothing else done."""
    hit = quiet_rows(skeys, bkeys, blaw, fkid, fmode, delta, ddelta, coef, end, where, d_rows,
                     v_rows)
    if hit != 0 and hit != 2:
        return hit, np.empty((0, 0)), np.empty(0), np.zeros(0, dtype=CONTACT), False
    # the base's rotation r_base (fast_step.base_rotation's: base_q is [w, x, y, z])
    bullet_matrix(base_q[1], base_q[2], base_q[3], base_q[0], r_base)
    k = bkeys.shape[0]
    rows = np.empty(0, dtype=np.int64)
    if hit == 2:  # contact i: the store's row j where where[j] = i, else none (-1)
        rows = np.full(k, -1, dtype=np.int64)
        for j in range(skeys.shape[0]):
            rows[where[j]] = j
    resp = body_delassus(q, tq, moving, base_p, base_q, r_base, parent, jtype, axis, pf_pos,
                         pf_quat, inert_pos, inert_rot_t, col, floating, mass, inertia,
                         base_mass, base_inertia, com_quat, com_rot, com_pos, pivot, axis_w, cm,
                         cs, cj, links, point, locked, cont, sgn, normal, mm, jac, W, wnn)
    if check and not _links_at(clinks, crows, cpos, cquat, com_pos, com_quat):
        return STALE, resp, np.empty(0), np.zeros(0, dtype=CONTACT), False
    gf, gc, every = lean_begin(k, wnn, vt, ddelta, normal, delta, P_lin, dt, hd,
                               W.reshape(W.size), mu, has_fr, fr_mu, fr_static, hit == 0, rows,
                               coef, mem, slaw, blaw, kid, mode, s0, m_eff, u0, fn0, fn, slip,
                               force)
    return hit, resp, gf, gc, every


@njit
def _links_at(links, rows, pos, quat, com_pos, com_quat):
    """Whether each link ``links[e]``'s centre of mass ``com_pos`` and orientation
    ``com_quat`` [w, x, y, z] (a forward kinematics) are within :data:`KNOWN_TOL` of the
    state read's row ``rows[e]`` (``pos``, ``quat``; the quaternion up to its sign)."""
    for e in range(links.shape[0]):
        lk, r = links[e], rows[e]
        for a in range(3):
            if not abs(com_pos[lk, a] - pos[r, a]) <= KNOWN_TOL:
                return False
        dp = dm = 0.0
        for a in range(4):
            dp = max(dp, abs(com_quat[lk, a] - quat[r, a]))
            dm = max(dm, abs(com_quat[lk, a] + quat[r, a]))
        if not min(dp, dm) <= KNOWN_TOL:
            return False
    return True


def after_lean(core: Any, host: Any, dt: float) -> bool:
    """:meth:`BulletHost.solve <mbplugin.bullet.host.BulletHost.solve>` of ``core`` (the
    :class:`~mbplugin.hosts.HostStep`) with one articulated block of W, no free row and
    plane-sphere contacts read by the host's compiled read (the case of
    :meth:`HostStep._lean_rounds <mbplugin.hosts.step.HostStep._lean_rounds>`: a robot's feet
    on the ground), without :meth:`HostStep.after <mbplugin.hosts.step.HostStep.after>`'s
    general read and response closures: the host's lean rounds (``host.verify_rounds`` with
    its start, :func:`mbplugin.bullet.lean.lean_rounds`) and, where they took the whole step,
    :meth:`ContactIntegrator.after <mbplugin.hosts.integrator.ContactIntegrator.after>`'s end
    of the step (the store's commit, the warm start) given their outcome, and
    :func:`~mbplugin.hosts.integrator.step_info`: the same calls in the same order as the
    general path (the same bits). Anything else goes on in :meth:`HostStep.after` from what
    ran here (``host._pre``: the lean rounds' outcome, taken once). The articulated bodies'
    deferred resets are flushed at the end, as ``BulletHost.solve`` does. Returns False,
    nothing run, where the case does not hold (then call ``host.solve``)."""
    integ = core.integrator
    pend = integ.pending
    if pend is None or core._any_free or len(core._art) != 1 or not core.plain_redetect():
        return False
    batch, space, P_lin, u0 = pend
    pairs = core._reads._pairs(batch.key)
    if pairs is None:
        return False
    host.begin_solve()
    host._end_joints = None
    whole = False
    try:
        test = core.store.rows_test_args(batch)
        k = len(u0)
        end = None if test is None else (
            *test, core.store.coef, *_end_scratch(k, len(test[0])),
            np.ascontiguousarray(batch.normal, dtype=float), *_end_work[2], *np.empty((2, k)),
            _end_work[3])
        if end is not None:
            end[-1][0] = -2  # (rounds_end's outcome: not run)
        lean = host.verify_rounds(core._art[0], space, None, None, 0.0, integ.verify, None,
                                  pairs, core.model.arrays, max(core.margin, LOST_MARGIN), u0,
                                  dt, (P_lin,), end)
        if lean is not None and lean[1] == 0 and lean[2] is None:  # the whole step here
            whole = True
            if end is not None and end[-1][0] in (0, 2):  # and its end's commit quiet: booked
                _booked(core, batch, space, lean[0], end, dt)
            else:
                _, res, stats = integ.after(dt, _no_read, _no_respond, lambda *a, **k: lean)
                step_info(core.last, res, stats, batch.normal, dt)
        else:  # the general path goes on from the rounds' outcome
            host._pre = (lean,)
            try:
                core.after(host, dt)
            finally:
                host._pre = None
    finally:
        host.art.flush()
    if whole and host._end_joints is not None:  # PyBullet's joints now the rounds' kept state
        _KNOWN[host.art] = host._end_joints
    return True


#: :func:`_end_scratch`' kept work arrays: ((K, M), (the end flags (K,), each row's contact
#: (M,), its overlap and rate (M,) each), (the end rates (K,),), the tests' outcome (1,))
_end_work: list[Any] = [None, (), (), None]


def _end_scratch(k: int, m: int) -> tuple[np.ndarray, ...]:
    """The work arrays of :func:`after_lean`'s end tests for K contacts and M rows of the
    store, kept between host steps in ``_end_work`` (none outlives the step's end: the store
    copies what it keeps); returns the first four."""
    if _end_work[0] != (k, m):
        _end_work[:] = [(k, m), (np.empty(k, dtype=np.bool_), np.empty(m, dtype=np.int64),
                                 *np.empty((2, m))), (np.empty(k),),
                        np.empty(1, dtype=np.int64)]
    return _end_work[1]


def _booked(core: Any, batch: ContactBatch, space: Any, res: Any, end: tuple[Any, ...],
            dt: float) -> None:
    """:meth:`ContactIntegrator.after <mbplugin.hosts.integrator.ContactIntegrator.after>`'s
    end and :func:`~mbplugin.hosts.integrator.step_info` where the lean rounds took the whole
    step and found its end's commit quiet (``end``: :func:`mbplugin.bullet.lean.rounds_end`'s
    arguments before the rounds', filled: the tests' work arrays, the end rates (K,) m/s,
    mean normal forces (K,) N and slips (K,) m/s, the outcome): the store's booking
    (:meth:`ContactStore.rows_booked <mbplugin.pipeline.store.ContactStore.rows_booked>` or
    :meth:`~mbplugin.pipeline.store.ContactStore.apart_booked`, as :meth:`ImplicitStep.finish
    <mbplugin.pipeline.implicit.ImplicitStep.finish>` books it), the integrator's carries
    (:meth:`~mbplugin.hosts.integrator.ContactIntegrator.booked`) and the step's info: the
    same state."""
    integ = core.integrator
    integ.pending = None
    *_, d_rows, v_rows, _, ddelta, fn, slip, hit = end
    if hit[0] == 0:
        core.store.rows_booked(res.delta, ddelta)
    else:
        core.store.apart_booked(d_rows, v_rows)
    integ.booked(batch, space, res, dt)
    info = core.last
    info.stats = res.stats
    info.normal_force, info.slip = fn, slip
    info.delta = res.delta.copy()


def step_margin(bodies: BodyState, dt: float, g: np.ndarray) -> float:
    """:func:`mbplugin.hosts.detection.margin_of` (the host step's predictive margin, m, of the
    rows' state ``bodies``, the step ``dt`` s and gravity ``g`` (3,) m/s^2; the same value)
    with gravity's magnitude kept while ``g`` is bitwise the last call's (a host step's
    ``np.linalg.norm`` of three numbers costs more than the rest of the margin)."""
    key = g.tobytes()
    if _G_NORM[0] != key:
        _G_NORM[:] = [key, float(np.linalg.norm(g))]
    v, w = bodies.vel, bodies.omega
    if (type(v) is np.ndarray and type(w) is np.ndarray and v.dtype == w.dtype == np.float64
            and v.ndim == w.ndim == 2 and v.shape[1] == w.shape[1] == 3):
        return _margin_rows(v, w, float(dt), _G_NORM[1])  # (one call, the same operations)
    return margin_value(max_norm_rows(v), max_norm_rows(w), float(dt), _G_NORM[1])


@njit
def _margin_rows(vel, omega, dt, g_norm):
    """:func:`step_margin`'s margin (m) of float64 rows ``vel`` (N, 3) m/s and ``omega`` (N,
    3) rad/s: :func:`~mbplugin.hosts.detection.margin_value` of their
    :func:`~mbplugin.hosts.arrays.max_norm_rows`."""
    return margin_value(_max_norm_rows(vel), _max_norm_rows(omega), dt, g_norm)


#: :func:`step_margin`'s gravity (its bytes) and magnitude (m/s^2)
_G_NORM: list[Any] = [None, 0.0]


def _no_read() -> Any:
    raise AssertionError("after_lean: the lean rounds took the read")  # pragma: no cover


def _no_respond(*args: Any) -> float:
    raise AssertionError("after_lean: the lean rounds took the response")  # pragma: no cover


#: :func:`_constants`' last answer: (tree, sides, (tree arguments, links, in order))
_CONST: list[Any] = [None, None, None]


def _constants(art: Any, tree: Any, sides: Any) -> tuple[tuple[Any, ...], np.ndarray, bool]:
    """``body_delassus``' arguments that stay while the tree and the contacts' sides do (a
    robot standing or walking on the same feet): the joint tree's arrays from its parents to
    its work arrays, the contacts' links, and whether the contacts' order is the batch's
    (their points then need no gather); kept for the last (tree, ``sides``) (``sides`` is
    ``art._sides``' kept list while the batch's sides are the same)."""
    if _CONST[0] is tree and _CONST[1] is sides:
        return _CONST[2]
    _, cont, rows, _ = sides[0]
    args = (*tree._kin(), tree.col, tree.floating, tree.mass, tree.inertia, tree.base_mass,
            tree.base_inertia, *tree._work(), tree._cm, tree._cs, tree._cj)
    links = np.ascontiguousarray(art.rows_arr[rows, 1])
    hit = (args, links, bool(np.array_equal(cont, np.arange(len(cont)))))
    _CONST[:] = [tree, sides, hit]
    return hit
