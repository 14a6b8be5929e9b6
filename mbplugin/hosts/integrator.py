"""The contact-space integration of one host step, and what carries over to the next: the
part of a host backend between W and the forces it hands to its host (shared/DESIGN.md,
"Integration, events, hosts": reading the host, building W, integrating, correcting positions
and keeping state are different objects; this is the integrating one, written once for every
host: ``BulletContacts`` and :class:`~mbplugin.hosts.loop.ContactLoop` drive it).

Two ways through a host step:

* :meth:`ContactIntegrator.integrate` (free and static rows, or ``articulated="substep"``):
  the exact sub-stepper :func:`mbplugin.pipeline.substep.contact_space` (groups of coupled
  contacts, DOP853 / Radau, events located and booked by the store; groups too large for it
  by the implicit step of :mod:`mbplugin.pipeline.large_groups`) over [t, t + dt] with the
  contacts' free acceleration; each contact's next solver step and solver, the large groups'
  impulses and the tangential springs carry to the next host step by contact key;
* :meth:`ContactIntegrator.begin` / :meth:`ContactIntegrator.after` (a contact on an
  articulated link, ``articulated="implicit"``): the host-consistent implicit step
  (:class:`mbplugin.pipeline.implicit.ImplicitStep`): begun before the host step with each
  contact's last impulse P_lin, solved after it from the host's end state, the difference
  applied through the host's response, with verification rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts.arrays import cross_rows, lookup, norm_rows
from mbplugin.pipeline.delassus import w_times
from mbplugin.pipeline.implicit import ImplicitStep
from mbplugin.pipeline.substep import StepResult, SubstepStats, contact_space

#: the implicit step's verification rounds (``verify``): another round while a contact's host
#: overlap after the step differs from the solved one by more than this (relative) or 1e-9 m
VERIFY_TOL = 1e-3
#: ... and the velocity change (m/s) of a correction below which no round is needed, and the
#: velocity difference (m/s, added to VERIFY_TOL relative) that calls for another round
VERIFY_DU = 1e-5
#: the distance (m) within which the implicit step looks for its contacts after the host step
LOST_MARGIN = 1.0

#: the implicit step's read of the host after its step: (the rows' state, the batch's
#: overlaps (K,) m, relative velocities (K, 3) m/s, found (K,)) (see :func:`host_contacts`)
Read = Callable[[], tuple[BodyState, np.ndarray, np.ndarray, np.ndarray]]
#: the implicit step's response: put the host onto the state with the extra impulses dP (K, 3)
#: N s (on side b, minus on side a) from ``bodies``; returns the largest joint or base angular
#: speed seen (rad/s)
Respond = Callable[[ContactBatch, np.ndarray, BodyState], float]


class ContactIntegrator:
    """One host step's contact-space integration with the carries between host steps (module
    docstring). ``store`` the contact store (set again when the owner rebuilds its model),
    ``friction`` the regularised friction law (or None), ``rtol``, ``stick``, ``solver``,
    ``large_groups``, ``verify``: the backend's options (checked by
    :func:`mbplugin.hosts.options.check_options`)."""

    def __init__(self, store: Any, friction: Any, rtol: float, stick: Any, solver: str,
                 large_groups: str, verify: int) -> None:
        self.store = store
        self.friction, self.rtol, self.stick = friction, rtol, stick
        self.solver, self.large_groups, self.verify = solver, large_groups, verify
        #: :class:`~mbplugin.pipeline.substep.GroupedContactSpace`'s ``normal_only`` (the host's)
        self.normal_only = False
        self._h: float | None = None
        self._keys: np.ndarray | None = None
        # (keys, next step per key, its solver: 1 explicit, 0 / 2 Radau, -1 unknown)
        self._h_of: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # (keys, impulses) of the last host step when it had large groups (their first guess)
        self._p_of: tuple[np.ndarray, np.ndarray] | None = None
        self._stick_keys = np.zeros(0, dtype=np.int64)
        self._stick_s = np.zeros((0, 3))
        # the implicit step: (keys, impulses (K, 3)) of the last one (the next one's P_lin)
        # and the pending one (batch, space, P_lin, u0) between begin and after
        self._warm: tuple[np.ndarray, np.ndarray] | None = None
        self.pending: tuple[ContactBatch, ImplicitStep, np.ndarray, np.ndarray] | None = None

    def forget_warm(self) -> None:
        """No implicit-step impulse carries to the next step (no contact, new keys)."""
        self._warm = None

    def stick_start(self, batch: ContactBatch) -> np.ndarray | None:
        """Each contact's tangential spring (K, 3) m at the step start (zero for a new one),
        None without ``stick``."""
        if self.stick is None:
            return None
        pos = lookup(self._stick_keys, batch.key)
        return np.where((pos >= 0)[:, None], self._stick_s[np.maximum(pos, 0)], 0.0) \
            if len(self._stick_keys) else np.zeros((len(batch), 3))

    def integrate(self, batch: ContactBatch, W: Any, a_free: np.ndarray, u0: np.ndarray,
                  s0: np.ndarray | None, t: float, dt: float,
                  mu: np.ndarray | None) -> Any:
        """The managed contacts over [t, t + dt] (:func:`contact_space`) from their overlaps
        and relative velocities ``u0`` (K, 3) m/s with the free acceleration ``a_free`` (K, 3)
        m/s^2, W (3K, 3K) sparse, springs ``s0``, per-contact friction coefficients ``mu``;
        each contact's first solver step and solver from the last host step (by key). Returns
        the sub-stepper's result (impulses, end overlaps and velocities, stats)."""
        self._warm = None
        store = self.store
        p0 = None
        if self._p_of is not None:  # the impulses of the last host step, by key
            pos = lookup(self._p_of[0], batch.key)
            p0 = np.where((pos >= 0)[:, None], self._p_of[1][np.maximum(pos, 0)], 0.0)
        space = contact_space(store, batch, W, a_free, self.friction, self.rtol,
                              self.stick, s0, self.solver, self.large_groups, p0, mu,
                              self.normal_only)
        h0 = m0 = None
        if self._h_of is not None:  # the compiled path: each contact's next step and solver
            keys, h_of, m_of = self._h_of
            if keys.shape == batch.key.shape and (keys == batch.key).all():
                h0, m0 = h_of, m_of  # the same contacts in order (read only): no gathers
            else:
                pos = lookup(keys, batch.key)
                h0 = np.where(pos >= 0, h_of[np.maximum(pos, 0)], -1.0)
                m0 = np.where(pos >= 0, m_of[np.maximum(pos, 0)], -1)
        elif self._h and self._keys is not None and np.array_equal(self._keys, store.keys):
            h0 = self._h
        res = space.integrate(t, dt, batch.delta.copy(), u0, h0, m0)
        self._h, self._keys = res.last_step, store.keys.copy()
        self._p_of = (batch.key.copy(), res.impulse) if res.stats.implicit else None
        self._h_of = (None if res.h_next is None
                      else (batch.key.copy(), res.h_next, res.method_next))
        if self.stick is not None:
            keep = lookup(store.keys, batch.key) >= 0  # contact still active
            self._stick_keys, self._stick_s = batch.key[keep], space.s_end[keep]
        return res

    # -- the implicit step of contacts on articulated rows ----------------------------------------
    def begin(self, batch: ContactBatch, W: Any, u0: np.ndarray, s0: np.ndarray | None,
              t: float, mu: np.ndarray | None) -> np.ndarray:
        """The implicit step's start (:mod:`mbplugin.pipeline.implicit`): returns the impulse
        P_lin (K, 3) N s the host steps with (each contact's impulse of the last step, zero
        for a new contact); :meth:`after` solves the step from the host's end state."""
        P_lin = self.warm_start(batch)
        space = ImplicitStep(self.store, batch, W, self.friction, self.rtol, self.stick, s0,
                             compiled=self.solver != "scipy", mu=mu)
        space.begin(t, batch.delta, u0)
        self.pending = (batch, space, P_lin, u0)
        return P_lin

    def warm_start(self, batch: ContactBatch) -> np.ndarray:
        """The impulse P_lin (K, 3) N s an implicit step of ``batch`` starts from: each
        contact's impulse of the last implicit step (by key), zero for a new contact (a new
        array)."""
        P_lin = np.zeros((len(batch), 3))
        if self._warm is not None:
            keys, imp = self._warm
            if keys.shape == batch.key.shape and (keys == batch.key).all():
                P_lin = imp.copy()  # the same contacts in order (a robot standing)
            else:
                pos = lookup(keys, batch.key)
                hit = pos >= 0
                if hit.all():  # every contact carried over: one gather
                    P_lin = imp[pos]
                else:
                    P_lin[hit] = imp[pos[hit]]
        return P_lin

    def after(self, dt: float, read: Read, respond: Respond,
              rounds: Callable[..., Any] | None = None) -> tuple[ContactBatch, Any, Any]:
        """Solve the pending implicit step's impulse from the host's end state (``read``) and
        put the host onto it (``respond``): the host stepped with P_lin; its end state with P
        is its end state with P_lin plus the response to P - P_lin. ``verify`` further rounds
        re-read the host and solve again from its corrected state while its overlaps differ
        from the solved ones by more than VERIFY_TOL (relative) or 1e-9 m. ``rounds`` (a
        host's lean path, e.g. :func:`mbplugin.bullet.lean.lean_rounds`, the same
        arithmetic): called as ``rounds(space, None, None, 0.0, verify, None, start=(P_lin,))``
        it may take the read, the first solve and response and the rounds, else after them
        as ``rounds(space, res, dP, spin, verify, stats)`` the rounds; it returns None (not
        taken), or (the solve's result, the rounds still to take here, the read of the first
        of them or None). Returns (batch, the
        solve's result, the rounds' stats)."""
        assert self.pending is not None
        batch, space, P_lin, _ = self.pending
        self.pending = None
        lean = (None if rounds is None
                else rounds(space, None, None, 0.0, self.verify, None, start=(P_lin,)))
        if lean is not None:  # the read, first solve and response (and rounds) by the host
            res, left, pre = lean
            stats = res.stats
        else:
            bodies, d_h, u_h, found = read()
            res = space.solve(dt, d_h, u_h, P_lin)
            stats = res.stats
            dP = res.impulse - P_lin
            spin = respond(batch, dP, bodies)
            left, pre = self.verify, None
            if rounds is not None and left:
                lean = rounds(space, res, dP, spin, left, stats)
                if lean is not None:
                    _, left, pre = lean
        for _ in range(left):
            if pre is not None:  # the lean path handed over this round's read
                (bodies, d_h, u_h, found), pre = pre, None
            else:
                # the response to dP is first order: W of the step's start, the host's is
                # J(q1) M^-1 J(q0)^T, a relative difference of about dt |qd| (the joints' turn
                # over the step); a correction whose error so estimated is below VERIFY_DU is
                # not verified
                if (np.max(np.abs(w_times(space.W, dP.ravel())), initial=0.0)
                        * (dt * spin + VERIFY_TOL) <= VERIFY_DU):
                    break
                bodies, d_h, u_h, found = read()
                # per contact: the overlap, and the velocity
                if not verify_off(d_h, res.delta, u_h, res.u, found, VERIFY_TOL, VERIFY_DU):
                    break
            P0 = res.impulse
            res = space.solve(dt, d_h, u_h, P0)
            stats.steps += res.stats.steps
            stats.nfev += res.stats.nfev
            dP = res.impulse - P0
            spin = respond(batch, dP, bodies)
        space.finish(res)
        stats.wall = res.stats.wall
        self.booked(batch, space, res, dt)
        return batch, res, stats

    def booked(self, batch: ContactBatch, space: Any, res: Any, dt: float) -> None:
        """:meth:`after`'s end after the store booked the step of ``dt`` s
        (``space.finish(res)``): each contact's next first step, warm-start impulse and (with
        ``stick``) spring by key."""
        keys = self.store.keys
        self._h, self._keys = dt, keys.copy()
        self._h_of = None
        if keys.shape == batch.key.shape and bool((keys == batch.key).all()):
            keep = slice(None)  # every contact still active (a robot standing): copies
            key = self._keys  # (the store's keys are the batch's)
        else:
            keep = lookup(keys, batch.key) >= 0  # contact still active
            key = batch.key[keep]
        if self.stick is not None:
            self._stick_keys, self._stick_s = key, space.s_end[keep].copy()
        self._warm = (key, res.impulse[keep].copy())


def verify_off(d_h: np.ndarray, d: np.ndarray, u_h: np.ndarray, u: np.ndarray,
               found: np.ndarray, tol: float, du: float) -> bool:
    """Whether a found contact's host overlap ``d_h`` (K,) m or velocity ``u_h`` (K, 3) m/s
    is off the solved ``d``, ``u``: |d_h - d| > tol |d| + 1e-9 m or |u_h - u| > tol |u| + du
    (m/s) (one compiled loop over float64 rows, the elementwise operations of NumPy in the
    same order: :func:`mbplugin.hosts.arrays.norm_rows`' sum)."""
    if (isinstance(d_h, np.ndarray) and isinstance(u_h, np.ndarray) and d_h.dtype == np.float64
            and u_h.dtype == np.float64 and d.dtype == np.float64 and u.dtype == np.float64):
        return _verify_off(d_h, d, u_h, u, np.asarray(found, dtype=np.bool_), float(tol),
                           float(du))
    off = ((np.abs(d_h - d) > tol * np.abs(d) + 1e-9)
           | (norm_rows(u_h - u) > tol * norm_rows(u) + du))
    return bool(np.any(off & found))


@njit
def _verify_off(d_h, d, u_h, u, found, tol, du):
    """:func:`verify_off` over float64 rows."""
    for i in range(d.shape[0]):
        if not found[i]:
            continue
        if abs(d_h[i] - d[i]) > tol * abs(d[i]) + 1e-9:
            return True
        x, y, z = u_h[i, 0] - u[i, 0], u_h[i, 1] - u[i, 1], u_h[i, 2] - u[i, 2]
        a, b, c = u[i, 0], u[i, 1], u[i, 2]
        if np.sqrt(x * x + y * y + z * z) > tol * np.sqrt(a * a + b * b + c * c) + du:
            return True
    return False


def step_info(info: Any, res: Any, stats: SubstepStats, normal: np.ndarray, dt: float) -> None:
    """Fill a host step's info (``StepInfo`` of a backend) from the implicit step's solve:
    stats, mean normal force (N), end overlap (m), end slip speed (m/s)."""
    info.stats = stats
    info.normal_force, info.slip = info_arrays(res.impulse, res.u, normal, dt)
    info.delta = res.delta.copy()


def info_arrays(P: np.ndarray, u: np.ndarray, normal: np.ndarray,
                dt: float) -> tuple[np.ndarray, np.ndarray]:
    """A step's mean normal forces n . P / dt (K,) N from its impulses ``P`` (K, 3) N s and
    slip speeds |u - (n . u) n| (K,) m/s from the velocities ``u`` (K, 3) (``u`` None: zero
    slip), ``normal`` (K, 3) unit: one compiled loop over float64 rows (the sums of
    ``einsum("ki,ki->k")`` and :func:`mbplugin.hosts.arrays.norm_rows` in their order)."""
    k = len(P)
    fn, slip = np.empty(k), np.empty(k)
    c = np.ascontiguousarray
    _info_arrays(c(P, dtype=float), c(u, dtype=float), c(normal, dtype=float), float(dt), fn,
                 slip)
    return fn, slip


@njit
def _info_arrays(P, u, n, dt, fn, slip):
    """:func:`info_arrays` into ``fn``, ``slip``."""
    for i in range(P.shape[0]):
        n0, n1, n2 = n[i, 0], n[i, 1], n[i, 2]
        fn[i] = (P[i, 0] * n0 + P[i, 1] * n1 + P[i, 2] * n2) / dt
        un = u[i, 0] * n0 + u[i, 1] * n1 + u[i, 2] * n2
        x, y, z = u[i, 0] - un * n0, u[i, 1] - un * n1, u[i, 2] - un * n2
        slip[i] = np.sqrt((x * x + y * y) + z * z)


def host_contacts(now: ContactBatch, batch: ContactBatch, u0: np.ndarray,
                  margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The batch's contacts as found again in a host state (``now``: their pairs detected
    there within ``margin`` m, at least LOST_MARGIN, far beyond a host step's motion):
    overlaps (K,) m, relative velocities (K, 3) m/s and whether each was found (K,); a contact
    not found gets the overlap -margin and ``u0``."""
    pos = lookup(now.key, batch.key)
    found = pos >= 0
    at = np.maximum(pos, 0)
    d = np.full(len(batch), -margin)
    u = u0.copy()
    if found.any():
        d[found] = now.delta[at[found]]
        u[found] = (now.vt[at[found]]
                    - now.ddelta[at[found]][:, None] * now.normal[at[found]])
    return d, u, found


def free_response(free_row: np.ndarray, mass: np.ndarray, inv_i_w: np.ndarray,
                  batch: ContactBatch,
                  dP: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The free rows' response to the impulses dP (K, 3) N s (on side b, minus on side a):
    (rows, dv (R, 3) m/s = sum dP / m, dw (R, 3) rad/s = sum I_w^-1 (r x dP)) of the rows
    touched; ``free_row`` (N,) which rows are free bodies, ``mass`` (N,) kg, ``inv_i_w`` (N,
    3, 3) their world-frame inverse inertia."""
    nr = len(free_row)
    dv = np.zeros((nr, 3))
    dw = np.zeros((nr, 3))
    touched = np.zeros(nr, dtype=bool)
    for side, sgn, r in ((batch.b, 1.0, batch.rb), (batch.a, -1.0, batch.ra)):
        free = np.flatnonzero((side >= 0) & free_row[side])
        if not len(free):
            continue
        rows = side[free]
        f = sgn * dP[free]
        np.add.at(dv, rows, f / mass[rows][:, None])
        np.add.at(dw, rows, np.einsum("kij,kj->ki", inv_i_w[rows], cross_rows(r[free], f)))
        touched[rows] = True
    rows = np.flatnonzero(touched)
    return rows, dv[rows], dw[rows]


def lean_result(space: Any, res: Any, stats: Any, P: np.ndarray, d1: np.ndarray,
                u1: np.ndarray, loaded: np.ndarray, s1: np.ndarray, counters: np.ndarray,
                dt: float, wall: float) -> Any:
    """The solve's result of a host's lean rounds (the ``rounds`` of
    :meth:`ContactIntegrator.after`, e.g. :func:`mbplugin.mujoco.lean_tree.LeanTree.rounds`):
    where ``res`` is None (the rounds took the step's first solve) a new ``StepResult`` of the
    impulse ``P`` (K, 3), overlaps ``d1`` (K,), velocities ``u1`` (K, 3) and ``loaded`` (K,)
    over ``dt`` s, else ``res`` itself; the rounds' ``counters`` (iterations, force
    evaluations) added to ``stats`` (its own with a new result), the wall time since ``wall``
    (``time.perf_counter``), and the pending ``space``'s end spring displacement ``s1`` (K,
    3) kept (with ``stick``)."""
    if res is None:
        stats = SubstepStats()
        res = StepResult(P, d1, u1, loaded, stats, dt, None)
    stats.steps += int(counters[0])
    stats.nfev += int(counters[1])
    res.stats.wall = time.perf_counter() - wall
    space.s_end = s1 if space.stick is not None else space.s0
    return res
