"""One host step of the managed contacts after detection, for every host backend: the store's
rules at the step start, W, each contact's effective mass, then the contact-space integration
or (a contact on an articulated row, ``articulated="implicit"``) the implicit step begun before
the host steps and solved after it (shared/DESIGN.md, "Integration, events, hosts").

:class:`HostStep` is that order, written once; the host supplies what only it knows through
the :class:`~mbplugin.hosts.protocol.Host` protocol (the free acceleration, the articulated
bodies' Jacobians and mass matrices, its friction coefficients, its end state and the
response that puts it onto the solved state). ``BulletContacts`` drives it after its own
detection (prune, fallback, deferral); :class:`~mbplugin.hosts.loop.ContactLoop` (MuJoCo) after
the plain one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts.arrays import norm_rows
from mbplugin.hosts.detection import HostContacts
from mbplugin.hosts.integrator import (
    LOST_MARGIN,
    ContactIntegrator,
    free_response,
    host_contacts,
    info_arrays,
    step_info,
)
from mbplugin.hosts.protocol import ARTICULATED, FREE, ArticulatedBlock, Host
from mbplugin.hosts.wmatrix import DelassusCache, free_rows_delassus, normal_entries
from mbplugin.pipeline.delassus import articulated_w
from mbplugin.pipeline.substep import SubstepStats


@dataclass
class StepInfo:
    """What the last host step did: managed contacts integrated, solver counters, forces.

    ``sides`` (K, 2): the rows of sides a and b of each contact (the backend maps rows to its
    host's ids, e.g. ``MujocoContacts.last.bodies``)."""

    contacts: int
    stats: SubstepStats
    normal_force: np.ndarray  # (K,) mean normal force over the step (N)
    keys: np.ndarray
    sides: np.ndarray  # (K, 2) rows of sides a and b
    delta: np.ndarray | None = None  # (K,) overlap at the end of the step (m)
    slip: np.ndarray | None = None  # (K,) tangential speed at the end of the step (m/s)


class HostStep:
    """The managed contacts of a host's rows over one host step, after detection (module
    docstring). ``kind`` (N,) FREE / STATIC / ARTICULATED per row, ``mass`` (N,) kg (static
    rows: inf), ``inv_inertia`` (N, 3, 3) 1/(kg m^2) body-frame inverse inertia (static rows:
    0), ``model`` / ``store`` the contact model and store, ``friction_mode`` / ``friction``
    (:func:`mbplugin.hosts.options.as_friction`), the numerical options (checked by the
    backend). ``make_info(contacts, stats, normal_force, keys, sides, delta, slip)`` builds
    the step's info (default :class:`StepInfo`; a backend may map ``sides`` to its host's ids);
    ``redetect(bodies, keys, margin)`` finds the step's contacts again in the host's end state
    (default ``model.detect_pairs``); ``world_inertia(bodies)`` gives ``rotations_ext()`` and
    the world-frame inverse inertia (default: cached while orientations are bitwise equal).
    ``margin`` (m): the margin of the step's detection (set by the backend)."""

    def __init__(self, kind: np.ndarray, mass: np.ndarray, inv_inertia: np.ndarray,
                 model: Any, store: Any, *, friction_mode: str, friction: Any, rtol: float,
                 stick: Any, solver: str, large_groups: str, verify: int,
                 articulated: str) -> None:
        self.rows(kind, mass, inv_inertia, model)
        self.store = store
        self.friction_mode, self.friction = friction_mode, friction
        self.articulated = articulated
        #: the contact-space integration and its carries between host steps
        self.integrator = ContactIntegrator(store, friction, rtol, stick, solver, large_groups,
                                            verify)
        self.make_info: Callable[..., Any] = StepInfo
        self.redetect: Callable[[BodyState, np.ndarray, float], ContactBatch] = (
            lambda bodies, keys, margin: self.model.detect_pairs(bodies, keys, margin))
        #: whether ``redetect`` is the model's ``detect_pairs`` now (then plane-sphere
        #: contacts are read in one compiled call, :class:`HostContacts`: the same bits)
        self.plain_redetect: Callable[[], bool] = lambda: True
        self.world_inertia: Callable[[BodyState], tuple[np.ndarray, np.ndarray]] = \
            self._world_inertia
        self.last: Any = None
        self.pending: tuple[Any, ...] | None = None
        self.margin = 0.0

    def rows(self, kind: np.ndarray, mass: np.ndarray, inv_inertia: np.ndarray,
             model: Any) -> None:
        """(Re)set the rows and the model (a backend rebuilt after a body was added): W and
        the rotations are computed afresh; the integrator's carries are kept."""
        self.kind, self.mass, self.inv_inertia, self.model = kind, mass, inv_inertia, model
        self._any_free = bool(np.any(kind == FREE))
        self._w_cache = DelassusCache()
        self._rot_cache: tuple[Any, ...] | None = None
        self._reads = HostContacts(model)
        # the articulated blocks of the last W (their responses, for the implicit step)
        self._art: list[ArticulatedBlock] = []
        #: the last W was one articulated body's with every contact (the host's one call)
        self._one_body = False
        #: the host's last kept friction coefficients (K,) and their (K, 2) pairs (pair_mu)
        self._mu_pair: tuple[np.ndarray, np.ndarray] | None = None
        #: rows the last step's solve moved or pushed outside the host's own step (their
        #: flight is not booked): the bodies of large groups and of the implicit step
        self.forced = np.zeros(len(kind), dtype=bool)

    def step(self, host: Host, batch: ContactBatch, bodies: BodyState, t: float,
             dt: float) -> tuple[Any, ContactBatch, np.ndarray | None]:
        """Integrate the detected contacts ``batch`` over the host step [t, t + dt] from the
        rows' state ``bodies``. Returns the step's info, its contacts and the
        impulse-equivalent force P / dt (K, 3) on body b of each (None: no contact). With a
        contact on an articulated row (``articulated="implicit"``) the force is the implicit
        step's first guess P_lin / dt and the step is solved by :meth:`after` once the host
        has stepped (:attr:`implicit` says so)."""
        k = len(batch)
        store = self.store
        if not (type(t) is float and store.commit_rows(batch, batch.delta, batch.ddelta, t)):
            store.commit(batch, t, aligned=False, compiled=True)
        self.pending = None
        integ = self.integrator
        integ.pending = None
        self.forced[:] = False
        if k == 0:
            self.last = self.make_info(0, SubstepStats(), np.zeros(0), batch.key,
                                       np.zeros((0, 2), dtype=np.int64), np.zeros(0),
                                       np.zeros(0))
            integ.forget_warm()
            return self.last, batch, None
        n = batch.normal
        W, wnn, diag_w = self._delassus(batch, bodies, host)
        m_eff = np.full(k, np.inf)
        np.divide(1.0, wnn, out=m_eff, where=wnn > 0)
        batch.m_eff = m_eff
        if self._one_body:  # W of one articulated body with every contact (_delassus)
            art, implicit = None, self.articulated == "implicit"
        else:
            art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
            implicit = self.articulated == "implicit" and bool(art.any())
        u0 = batch.vt - batch.ddelta[:, None] * n
        s0 = integ.stick_start(batch)
        mu = self.pair_mu(host, batch)
        if implicit:
            return self._implicit_before(batch, W, u0, s0, t, dt, mu)
        if not sp.isspmatrix_csr(W):
            W = sp.csr_matrix(W)  # (dense when a side is articulated)
        if art is None:
            art = np.ones(k, dtype=bool)  # every contact on the articulated body
        a_free = host.free_acceleration(batch, bodies, dt, art)
        res = integ.integrate(batch, W, a_free, u0, s0, t, dt, mu)
        if res.implicit is not None:
            # the bodies of large groups move as the host moves them (the implicit step solves
            # against its semi-implicit update; no position correction, no flight booked)
            for side in (batch.a[res.implicit], batch.b[res.implicit]):
                self.forced[side[side >= 0]] = True
        force = res.impulse / dt
        un = np.einsum("ki,ki->k", res.u, n)
        self.last = self.make_info(k, res.stats, np.einsum("ki,ki->k", force, n),
                                   batch.key.copy(), np.stack([batch.a, batch.b], axis=1),
                                   res.delta.copy(), norm_rows(res.u - un[:, None] * n))
        self.pending = (batch, W, res, a_free, wnn if diag_w else None)
        return self.last, batch, force

    @property
    def implicit(self) -> bool:
        """True between an implicit step's begin (:meth:`step`) and its solve (:meth:`after`)."""
        return self.integrator.pending is not None

    def pair_mu(self, host: Host, batch: ContactBatch) -> np.ndarray | None:
        """Each contact's friction coefficients (K, 2: mu, mu_s) with the host's friction (no
        Stribeck drop: mu_s = mu); None with ``friction=`` given or "none" (the Friction's own
        coefficients)."""
        if self.friction_mode in ("given", "none"):
            return None
        mu = host.friction(batch)
        if mu is None:
            return None
        hit = self._mu_pair
        if hit is not None and hit[0] is mu:  # the host kept its coefficients: so are these
            return hit[1]
        pair = np.stack([mu, mu], axis=1)
        if not mu.flags.writeable:  # (a host's kept array: kept here too, read-only)
            pair.flags.writeable = False
            self._mu_pair = (mu, pair)
        return pair

    def _delassus(self, batch: ContactBatch, bodies: BodyState,
                  host: Host) -> tuple[sp.csr_matrix | np.ndarray, np.ndarray, bool]:
        """W (3K, 3K; sparse for free rows, dense with an articulated side), its normal-normal
        diagonal (K,) and whether W is block diagonal; kept while every input is bitwise the
        same (free rows at rest). The articulated blocks' responses M^-1 J^T are kept in
        ``_art`` for the implicit step."""
        n = batch.normal
        self._one_body = False
        wkey = (batch.a, batch.b, batch.ra, batch.rb, n, bodies.quat, self.kind, self.mass,
                self.inv_inertia, np.asarray(bodies.mass))
        hit = self._w_cache.get(wkey)
        if hit is not None:
            return hit
        self._art = []
        if self._any_free:
            inv_i_w = self.world_inertia(bodies)[1][:-1]
            inv_m = bodies.inv_mass_ext()[:-1]
            W, blocks, art = free_rows_delassus(self.kind, batch, inv_m, inv_i_w)
        else:  # no free row (a robot on the ground): W is the articulated bodies' part alone
            k = len(batch)
            W, blocks = np.zeros((3 * k, 3 * k)), None
            # every contact on one articulated body: the host's W in one call where it has one
            lean = getattr(host, "articulated_delassus", None)
            hit = None if lean is None else lean(batch, bodies, W)
            if hit is not None:
                self._art.append(hit[0])
                self._one_body = True  # every contact has a side on that body
                self._w_cache.put(None, W, hit[1], False)
                return W, hit[1], False
            art = self.kind[np.concatenate([batch.a, batch.b])] == ARTICULATED
        if art.any():
            for blk in host.articulated(batch, bodies, np.flatnonzero(art)):
                blk.response = articulated_w(
                    np.ascontiguousarray(blk.jac, dtype=float),
                    np.ascontiguousarray(blk.mass_matrix, dtype=float),
                    np.asarray(() if blk.locked is None else blk.locked, dtype=np.int64),
                    np.asarray(blk.contact, dtype=np.int64),
                    np.asarray(blk.sign, dtype=float), W)
                self._art.append(blk)
        wnn = normal_entries(W, blocks, n)
        diag_w = blocks is not None
        self._w_cache.put(None if self._art else wkey, W, wnn, diag_w)
        return W, wnn, diag_w

    # -- the implicit step of contacts on articulated rows ----------------------------------------
    def _implicit_before(self, batch: ContactBatch, W: Any, u0: np.ndarray,
                         s0: np.ndarray | None, t: float, dt: float,
                         mu: np.ndarray | None) -> tuple[Any, ContactBatch, np.ndarray]:
        """The implicit step's start (:mod:`mbplugin.pipeline.implicit`): the force P_lin / dt
        of the coming host step (each contact's impulse of the last step, zero for a new
        contact) and what :meth:`after` needs to solve the step from the host's end state."""
        k = len(batch)
        n = batch.normal
        P_lin = self.integrator.begin(batch, W, u0, s0, t, mu)
        # the force P_lin n / dt and the slip |vt| (vt normal to n: |vt - (n . vt) n|)
        fn, slip = info_arrays(P_lin, batch.vt, n, dt)
        self.last = self.make_info(k, SubstepStats(), fn, batch.key.copy(),
                                   np.stack([batch.a, batch.b], axis=1), batch.delta.copy(),
                                   slip)
        return self.last, batch, P_lin / dt

    def after(self, host: Host, dt: float) -> None:
        """Solve the host step's impulse from the host's end state and put the host's state
        onto it (the implicit step, :mod:`mbplugin.pipeline.implicit`; nothing without one):
        the host stepped with P_lin; its end state with P is its end state with P_lin plus the
        response to P - P_lin, applied through :meth:`Host.respond`, with the verification
        rounds of :meth:`ContactIntegrator.after`. The step's info gets the solved forces."""
        if self.integrator.pending is None:
            return
        batch, _, _, u0 = self.integrator.pending

        def read() -> tuple[BodyState, np.ndarray, np.ndarray, np.ndarray]:
            bodies = host.end_state()
            margin = max(self.margin, LOST_MARGIN)
            if self.plain_redetect():  # plane-sphere contacts (feet): one compiled call
                fast = self._reads.read(bodies, batch.key, margin, u0)
                if fast is not None:
                    return (bodies, *fast)
            now = self.redetect(bodies, batch.key, margin)
            return (bodies, *host_contacts(now, batch, u0, margin))

        def respond(batch: ContactBatch, dP: np.ndarray, bodies: BodyState) -> float:
            return self._respond(host, batch, dP, bodies, dt)

        _, res, stats = self.integrator.after(dt, read, respond,
                                              self._lean_rounds(host, batch, u0, dt))
        step_info(self.last, res, stats, batch.normal, dt)

    def _lean_rounds(self, host: Host, batch: ContactBatch, u0: np.ndarray,
                     dt: float) -> Callable[..., Any] | None:
        """The host's lean verification rounds (an optional ``verify_rounds`` of the host, e.g.
        :meth:`mbplugin.bullet.host.BulletHost.verify_rounds`) for :meth:`ContactIntegrator.after`
        where they may apply: one articulated block, no free row, plane-sphere contacts read
        by :class:`HostContacts`; else None (the general rounds)."""
        lean = getattr(host, "verify_rounds", None)
        if lean is None or len(self._art) != 1 or self._any_free or not self.plain_redetect():
            return None
        pairs = self._reads._pairs(batch.key)
        if pairs is None:
            return None
        blk, shapes, margin = self._art[0], self.model.arrays, max(self.margin, LOST_MARGIN)
        return lambda space, res, dP, spin, left, stats, start=None: lean(
            blk, space, res, dP, spin, left, stats, pairs, shapes, margin, u0, dt, start)

    def _respond(self, host: Host, batch: ContactBatch, dP: np.ndarray, bodies: BodyState,
                 dt: float) -> float:
        """The host's state after a step taken with P_lin put onto the state with P_lin + dP
        (K, 3; on body b, -dP on body a) through :meth:`Host.respond`: articulated blocks'
        generalised velocities change by their response M^-1 J^T dP, free rows by dP / m and
        I_w^-1 (r x dP). Returns the host's largest joint or base angular speed (rad/s)."""
        if not np.any(dP):
            return 0.0
        blocks, dqs = [], []
        for blk in self._art:
            f = (blk.sign[:, None] * dP[blk.contact]).ravel()
            if f.any():
                blocks.append(blk)
                dqs.append(blk.response @ f)
        rows = np.zeros(0, dtype=np.int64)
        dv = dw = np.zeros((0, 3))
        if self._any_free:
            inv_i_w = self.world_inertia(bodies)[1][:-1]
            rows, dv, dw = free_response(self.kind == FREE, self.mass, inv_i_w, batch, dP)
        self.forced[rows] = True
        return host.respond(blocks, dqs, rows, dv, dw, bodies, dt)

    def _world_inertia(self, bodies: BodyState) -> tuple[np.ndarray, np.ndarray]:
        """``bodies.rotations_ext()`` and the world-frame inverse inertia of them, reused while
        the orientations are bitwise those of the last call."""
        hit = self._rot_cache
        q = bodies.quat
        if hit is not None and hit[0].shape == q.shape and np.array_equal(hit[0], q):
            return hit[1], hit[2]
        rot = bodies.rotations_ext()
        inv = bodies.inv_inertia_world_ext(rot)
        self._rot_cache = (q.copy(), rot, inv)
        return rot, inv

    def bounces(self) -> np.ndarray:
        """Completed contacts with their c_r (:meth:`ContactStore.bounces`)."""
        return self.store.bounces()
