"""The host-independent part of a host backend: one host step of the managed contacts.

A backend (``mbplugin.mujoco``) reads the rows' state from its host,
calls :meth:`ContactLoop.step`, applies the returned impulse-equivalent forces, steps the host
and asks :meth:`ContactLoop.correction` how far to move the free bodies. Everything in
between is generic and lives here (shared/DESIGN.md, "Integration, events, hosts"):

1. the contact model: the rows' shapes, materials and laws in a
   :class:`~mbplugin.contact.ContactModel`, exactly the managed shape pairs detected;
2. detection with a predictive margin dt (2 v_max + 0.1 omega_max) + |g| dt^2 + 1 um, and the
   store's onset/end/latch rules at the step start (:meth:`ContactStore.commit`);
3. the Delassus operator W = J M^-1 J^T of the contacts (:mod:`mbplugin.pipeline.delassus`:
   I/m - [r]x I^-1 [r]x for free rows; the host's Jacobians and mass matrix for articulated
   ones) and each contact's effective mass 1 / n.W n;
4. the contact-space integration over the host step (:func:`mbplugin.pipeline.substep.
   contact_space`: groups of coupled contacts, DOP853 / Radau, events located and booked by
   the store; groups too large for it by the implicit step of
   :mod:`mbplugin.pipeline.large_groups`) or, for a step with a contact on an articulated link,
   the host-consistent implicit step (:class:`mbplugin.pipeline.implicit.ImplicitStep`): begun
   before the host step with each contact's last impulse P_lin, solved by :meth:`after` from
   the host's end state, the difference applied through the host's response
   (:meth:`Host.respond`), with verification rounds;
5. the position correction of free rows after the host's semi-implicit step: the host's end
   overlap made equal to the integrated one by a position impulse along the normals through W
   (velocities kept), and the test that tells when the host's step is predictable and there
   is nothing to correct.

Steps 3-5 are the pieces every host backend calls (``BulletContacts`` too, with its own
detection and after-step policy): :mod:`mbplugin.hosts.wmatrix` (W),
:mod:`mbplugin.hosts.integrator` (the integration and the implicit step, with their carries
between host steps), :mod:`mbplugin.hosts.correction`; the numerical machinery is
:mod:`mbplugin.pipeline`'s. This class is their order for a host behind the protocol of
:mod:`mbplugin.hosts.protocol` (docs/architecture.md, "Hosts").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin.contact import BodyState, ContactBatch, ContactModel, as_pair_law
from mbplugin.contact.kernels import decode_keys
from mbplugin.errors import ParameterError
from mbplugin.hosts.arrays import lookup, norm_rows
from mbplugin.hosts.correction import (
    MOVE_MIN,
    candidates,
    displacement,
    overlap_predicted,
    position_impulse,
)
from mbplugin.hosts.detection import margin_of
from mbplugin.hosts.integrator import (
    LOST_MARGIN,
    ContactIntegrator,
    free_response,
    host_contacts,
    step_info,
)
from mbplugin.hosts.model import check_stateful, exclude_unmanaged
from mbplugin.hosts.options import as_friction, as_stick, check_options
from mbplugin.hosts.protocol import (
    ARTICULATED,
    FREE,
    STATIC,
    ArticulatedBlock,
    Host,
    RowShape,
)
from mbplugin.hosts.wmatrix import DelassusCache, free_rows_delassus, normal_entries
from mbplugin.pipeline.delassus import (
    articulated_delassus_dense,
    articulated_response,
)
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


class ContactLoop:
    """The managed contacts of a host's rows, one host step at a time (module docstring).

    ``kind`` (N,) FREE / STATIC / ARTICULATED per row, ``mass`` (N,) kg (static rows: any),
    ``inv_inertia`` (N, 3, 3) body-frame inverse inertia of free rows (1/(kg m^2)),
    ``shapes`` the rows' :class:`RowShape` list, ``pairs`` (P, 2) the managed pairs as indices
    into ``shapes``, ``material`` the default ``{"E", "nu"}`` (or None), ``materials`` one spec
    or None per shape (wins over ``material``), ``pair_laws`` ``[(law, (row_a, row_b)), ...]``,
    ``names`` (N,) the rows' and ``shape_names`` the shapes' names for messages, ``host`` the
    host's name (the default friction mode). The options are those of the backends
    (``BulletContacts`` / ``MujocoContacts``: friction, stick, rtol, solver, articulated,
    verify, probe, large_groups)."""

    def __init__(self, kind: np.ndarray, mass: np.ndarray, inv_inertia: np.ndarray,
                 shapes: Sequence[RowShape], pairs: np.ndarray, *, law: Any,
                 material: Mapping[str, float] | None = None,
                 materials: Sequence[Mapping[str, float] | None] | None = None,
                 pair_laws: Sequence[tuple[Any, tuple[int, int]]] = (),
                 friction: Any = None, stick: Any = None, rtol: float = 1e-8,
                 solver: str = "compiled", articulated: str = "implicit", verify: int = 3,
                 probe: bool = True, large_groups: str = "implicit",
                 names: Sequence[str] | None = None,
                 shape_names: Sequence[str] | None = None, host: str = "host") -> None:
        check_options(rtol, solver, articulated, verify, large_groups)
        self.rtol, self.solver, self.articulated = float(rtol), solver, articulated
        self.verify, self.probe = int(verify), bool(probe)
        self.large_groups = large_groups
        self.friction_mode, self.friction = as_friction(
            friction, host, "the host's friction coefficient of each pair")
        self.stick = as_stick(stick)
        n = len(kind)
        self.kind = np.asarray(kind, dtype=np.int64)
        self.names = list(names) if names is not None else [f"row {i}" for i in range(n)]
        self.shape_names = (list(shape_names) if shape_names is not None
                            else [f"shape {i} of {self.names[s.row]}"
                                  for i, s in enumerate(shapes)])
        fixed = self.kind == STATIC
        self.mass = np.where(fixed, np.inf, np.asarray(mass, dtype=float))
        self.inv_inertia = np.where(fixed[:, None, None], 0.0, np.asarray(inv_inertia, float))
        self._mass1 = np.where(fixed, 1.0, self.mass)  # BodyState.mass (ignored where fixed)
        self._fixed = fixed
        self.shapes = list(shapes)
        self._build(pairs, law, material, materials, pair_laws)
        #: the contact-space integration and its carries between host steps
        self.integrator = ContactIntegrator(self.store, self.friction, self.rtol, self.stick,
                                            self.solver, self.large_groups, self.verify)
        self.last: StepInfo | None = None
        self.pending: tuple[Any, ...] | None = None
        self.margin = 0.0
        self._w_cache = DelassusCache()
        self._rot_cache: tuple[Any, ...] | None = None
        # the articulated blocks of the last W (their responses, for the implicit step)
        self._art: list[ArticulatedBlock] = []
        #: rows the last step's solve moved or pushed outside the host's own step (their
        #: flight is not booked): the bodies of large groups and of the implicit step
        self.forced = np.zeros(n, dtype=bool)

    # -- building ---------------------------------------------------------------------------------
    def _build(self, pairs: np.ndarray, law: Any, material: Mapping[str, float] | None,
               materials: Sequence[Mapping[str, float] | None] | None,
               pair_laws: Sequence[tuple[Any, tuple[int, int]]]) -> None:
        n = len(self.kind)
        shapes = self.shapes
        model = ContactModel()
        mats: list[str | None] = []  # per shape
        specs: dict[tuple[tuple[str, float], ...], str] = {}
        for i in range(len(shapes)):
            spec = materials[i] if materials is not None else None
            spec = spec if spec is not None else material
            name = None
            if spec is not None:
                tag = tuple(sorted((str(k), float(v)) for k, v in dict(spec).items()))
                name = specs.get(tag)
                if name is None:
                    name = specs[tag] = f"m{len(specs)}"
                    model.add_material(name, **dict(spec))
            mats.append(name)
        for s, mat in zip(shapes, mats, strict=True):
            model.add_shape(s.shape, s.row, mat, s.pos, s.quat)
        model.set_default_law(law)
        for lw, (ra, rb) in pair_laws:
            model.set_pair_law(lw, bodies=(int(ra), int(rb)))
        laws = [as_pair_law(law)] + [as_pair_law(lw) for lw, _ in pair_laws]
        if any(pl.hertz_k for pl in laws):
            missing = [self.shape_names[i] for i, mat in enumerate(mats) if mat is None]
            if missing:
                raise ParameterError(
                    f"law {laws[0].law.name}: no 'k' given and {', '.join(missing[:3])} "
                    f"{'has' if len(missing) == 1 else 'have'} no material (E, nu) for "
                    "Hertz's stiffness; give 'k' or material= / materials=")
        store = model.make_store()
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        rows_of = np.array([s.row for s in shapes], dtype=np.int64)
        check_stateful(store, self.articulated, bool(np.any(self.kind == ARTICULATED)))
        managed = np.zeros((n, n), dtype=bool)
        ra, rb = rows_of[pairs[:, 0]], rows_of[pairs[:, 1]]
        managed[ra, rb] = managed[rb, ra] = True
        # shape pairs of managed row pairs that are not managed themselves: the batch is
        # filtered by shape pair (a code per unordered pair), else by row pair alone
        per_row = np.bincount(rows_of, minlength=n)
        lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
        codes = np.unique(lo * len(shapes) + hi)
        rpa, rpb = np.nonzero(np.triu(managed))
        self._codes = (None if len(codes) == int(np.sum(per_row[rpa] * per_row[rpb]))
                       else codes)
        exclude_unmanaged(model, managed)
        self.model, self.store, self.managed = model, store, managed
        self.any_art = bool(np.any(self.kind == ARTICULATED))

    # -- state ------------------------------------------------------------------------------------
    def body_state(self, pos: np.ndarray, quat: np.ndarray, vel: np.ndarray,
                   omega: np.ndarray) -> BodyState:
        """The rows' :class:`~mbplugin.contact.BodyState` from their centre-of-mass poses and
        velocities (world frame; quat [w, x, y, z] of the row frame)."""
        return BodyState(pos, quat, vel, omega, self._mass1, self.inv_inertia, self._fixed)

    def detect(self, bodies: BodyState, margin: float) -> ContactBatch:
        """The managed contacts at this state with ``delta > -margin``."""
        batch = self.model.detect(bodies, margin=margin)
        if len(batch):
            keep = self.managed[batch.a, batch.b]
            if self._codes is not None:
                sa, sb, _ = decode_keys(batch.key, self.model.n_shapes)
                code = np.minimum(sa, sb) * self.model.n_shapes + np.maximum(sa, sb)
                pos = np.minimum(np.searchsorted(self._codes, code), len(self._codes) - 1)
                keep &= self._codes[pos] == code
            if not keep.all():
                batch = batch.take(keep)
        return batch

    def margin_of(self, bodies: BodyState, dt: float, g: np.ndarray) -> float:
        """The predictive margin (m) of a host step: dt (2 v_max + 0.1 omega_max) + |g| dt^2
        + 1 um (a contact that can close within the step is integrated from its start)."""
        return margin_of(bodies, dt, g)

    # -- one host step ----------------------------------------------------------------------------
    def step(self, host: Host, bodies: BodyState, t: float, dt: float,
             g: np.ndarray) -> tuple[StepInfo, ContactBatch, np.ndarray | None]:
        """Integrate the managed contacts over the host step [t, t + dt] from the rows' state
        ``bodies``. Returns the step's :class:`StepInfo`, its contacts and the
        impulse-equivalent force P / dt (K, 3) on body b of each (None: no contact). With a
        contact on an articulated row (``articulated="implicit"``) the force is the implicit
        step's first guess P_lin / dt and the step is solved by :meth:`after` once the host
        has stepped."""
        margin = self.margin_of(bodies, dt, g)
        batch = self.detect(bodies, margin)
        self.margin = 2.0 * margin
        k = len(batch)
        store = self.store
        store.commit(batch, t, aligned=False)
        self.pending = None
        integ = self.integrator
        integ.pending = None
        self.forced[:] = False
        if k == 0:
            self.last = StepInfo(0, SubstepStats(), np.zeros(0), batch.key,
                                 np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(0))
            integ.forget_warm()
            return self.last, batch, None
        n = batch.normal
        W, wnn, diag_w = self._delassus(batch, bodies, host)
        with np.errstate(divide="ignore"):
            batch.m_eff = np.where(wnn > 0, 1.0 / wnn, np.inf)
        art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
        implicit = self.articulated == "implicit" and bool(art.any())
        u0 = batch.vt - batch.ddelta[:, None] * n
        s0 = integ.stick_start(batch)
        mu = self.pair_mu(host, batch)
        if implicit:
            return self._implicit_before(batch, W, u0, s0, t, dt, mu)
        W = sp.csr_matrix(W)  # (dense when a side is articulated)
        a_free = host.free_acceleration(batch, bodies, dt, art)
        res = integ.integrate(batch, W, a_free, u0, s0, t, dt, mu)
        if res.implicit is not None:
            # the bodies of large groups move as the host moves them (the implicit step solves
            # against its semi-implicit update; no position correction, no flight booked)
            for side in (batch.a[res.implicit], batch.b[res.implicit]):
                self.forced[side[side >= 0]] = True
        force = res.impulse / dt
        un = np.einsum("ki,ki->k", res.u, n)
        self.last = StepInfo(k, res.stats, np.einsum("ki,ki->k", force, n),
                             batch.key.copy(), np.stack([batch.a, batch.b], axis=1),
                             res.delta.copy(), norm_rows(res.u - un[:, None] * n))
        self.pending = (batch, W, res, a_free, wnn if diag_w else None)
        return self.last, batch, force

    def pair_mu(self, host: Host, batch: ContactBatch) -> np.ndarray | None:
        """Each contact's friction coefficients (K, 2: mu, mu_s) with the host's friction (no
        Stribeck drop: mu_s = mu); None with ``friction=`` given or "none" (the Friction's own
        coefficients)."""
        if self.friction_mode in ("given", "none"):
            return None
        mu = host.friction(batch)
        return None if mu is None else np.stack([mu, mu], axis=1)

    def _delassus(self, batch: ContactBatch, bodies: BodyState,
                  host: Host) -> tuple[sp.csr_matrix | np.ndarray, np.ndarray, bool]:
        """W (3K, 3K; sparse for free rows, dense with an articulated side), its normal-normal
        diagonal (K,) and whether W is block diagonal; kept while every input is bitwise the
        same (free rows at rest). The articulated blocks' responses M^-1 J^T are kept in
        ``_art`` for the implicit step."""
        n = batch.normal
        wkey = (batch.a, batch.b, batch.ra, batch.rb, n, bodies.quat)
        hit = self._w_cache.get(wkey)
        if hit is not None:
            return hit
        self._art = []
        inv_i_w = self._world_inertia(bodies)[1][:-1]
        inv_m = bodies.inv_mass_ext()[:-1]
        W, blocks, art = free_rows_delassus(self.kind, batch, inv_m, inv_i_w)
        if art.any():
            for blk in host.articulated(batch, bodies, np.flatnonzero(art)):
                blk.response = articulated_response(blk.jac, blk.mass_matrix, blk.locked)
                articulated_delassus_dense(W, blk.contact, blk.sign, blk.jac, blk.response)
                self._art.append(blk)
        wnn = normal_entries(W, blocks, n)
        diag_w = blocks is not None
        self._w_cache.put(None if self._art else wkey, W, wnn, diag_w)
        return W, wnn, diag_w

    # -- the implicit step of contacts on articulated rows ----------------------------------------
    def _implicit_before(self, batch: ContactBatch, W: Any, u0: np.ndarray,
                         s0: np.ndarray | None, t: float, dt: float,
                         mu: np.ndarray | None) -> tuple[StepInfo, ContactBatch, np.ndarray]:
        """The implicit step's start (:mod:`mbplugin.pipeline.implicit`): the force P_lin / dt
        of the coming host step (each contact's impulse of the last step, zero for a new
        contact) and what :meth:`after` needs to solve the step from the host's end state."""
        k = len(batch)
        n = batch.normal
        P_lin = self.integrator.begin(batch, W, u0, s0, t, mu)
        self.last = StepInfo(k, SubstepStats(), np.einsum("ki,ki->k", P_lin, n) / dt,
                             batch.key.copy(), np.stack([batch.a, batch.b], axis=1),
                             batch.delta.copy(), norm_rows(batch.vt))
        return self.last, batch, P_lin / dt

    def after(self, host: Host, dt: float) -> None:
        """Solve the host step's impulse from the host's end state and put the host's state
        onto it (the implicit step, :mod:`mbplugin.pipeline.implicit`): the host stepped with
        P_lin; its end state with P is its end state with P_lin plus the response to
        P - P_lin, applied here through :meth:`Host.respond`. ``verify`` further rounds
        re-read the host and solve again from its corrected state while its overlaps differ
        from the solved ones by more than VERIFY_TOL (relative) or 1e-9 m."""
        if self.integrator.pending is None:
            return
        u0 = self.integrator.pending[3]

        def read() -> tuple[BodyState, np.ndarray, np.ndarray, np.ndarray]:
            bodies = host.end_state()
            return (bodies, *self._host_contacts(host, batch, bodies, u0))

        def respond(batch: ContactBatch, dP: np.ndarray, bodies: BodyState) -> float:
            return self._respond(host, batch, dP, bodies, dt)

        batch = self.integrator.pending[0]
        _, res, stats = self.integrator.after(dt, read, respond)
        info = self.last
        assert info is not None
        step_info(info, res, stats, batch.normal, dt)

    def _host_contacts(self, host: Host, batch: ContactBatch, bodies: BodyState,
                       u0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The batch's contacts in the host state ``bodies``: overlaps (K,), relative
        velocities (K, 3) and whether each was found (K,) (searched within LOST_MARGIN, far
        beyond a host step's motion); a contact not found gets the overlap -LOST_MARGIN and
        ``u0``."""
        margin = max(self.margin, LOST_MARGIN)
        now = self.model.detect_pairs(bodies, batch.key, margin)
        return host_contacts(now, batch, u0, margin)

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
        free_row = self.kind == FREE
        if free_row.any():
            inv_i_w = self._world_inertia(bodies)[1][:-1]
            rows, dv, dw = free_response(free_row, self.mass, inv_i_w, batch, dP)
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

    # -- after the host step ----------------------------------------------------------------------
    def predictable(self, dt: float, omega: np.ndarray) -> bool:
        """True when the host's semi-implicit step of the last step's free contacts needs no
        position correction: with the impulse P and the free acceleration, a contact's end
        velocity is u1 = u0 + a_free dt + W P and its overlap delta0 - dt n.u1; when that
        equals the integrated overlap within MOVE_MIN for every contact that may be corrected,
        and neither the contact points (u1 dt) nor the lever arms (omega (N, 3) of the rows at
        the step start) move by more than MOVE_MIN, there is nothing to correct (contacts at
        rest). The host must also know that none of its own constraints pushed the bodies."""
        if self.pending is None:
            return True
        batch, W, res, a_free, _ = self.pending
        sel = None
        if self.any_art or res.implicit is not None:
            keep = (self.kind[batch.a] != ARTICULATED) & (self.kind[batch.b] != ARTICULATED)
            if res.implicit is not None:  # large groups: not corrected
                keep &= ~res.implicit
            sel = np.flatnonzero(keep)
            if not len(sel):
                return True
        return overlap_predicted(batch, W, res, a_free, omega, dt, sel)

    def correction(self, now: ContactBatch, bodies: BodyState) -> tuple[np.ndarray, np.ndarray]:
        """The position correction (dx, dth) (N, 3) (m, rad) of the free rows after the host
        step: the last step's contacts as the host has them now (``now``: their pairs detected
        at the host's end state ``bodies``, e.g. ``model.detect_pairs(bodies, keys)``) get the
        integrated end overlap by a position impulse mu n on b, -mu n on a, with
        N^T W N mu = delta_host - delta_integrated over the contacts that carried force or
        touch at either end (articulated ones excluded: the implicit step already solved them
        against the host's update). Velocities are kept."""
        nr = len(self.kind)
        dx, dth = np.zeros((nr, 3)), np.zeros((nr, 3))
        if self.pending is None:
            return dx, dth
        batch, W, res, _, wdiag = self.pending
        pos = lookup(now.key, batch.key)
        d_now = np.full(len(batch), np.nan)
        found = pos >= 0
        d_now[found] = now.delta[pos[found]]
        art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
        sel = candidates(res, d_now, art)
        if not len(sel):
            return dx, dth
        gap = d_now[sel] - res.delta[sel]
        if np.max(np.abs(gap)) <= MOVE_MIN:
            return dx, dth
        n = batch.normal[sel]
        mu = position_impulse(gap, W, batch.normal, sel,
                              None if wdiag is None else wdiag[sel])
        inv_i_w = self._world_inertia(bodies)[1][:-1]
        return displacement(self.kind, self.mass, inv_i_w,
                            ((batch.b[sel], 1.0, batch.rb[sel]),
                             (batch.a[sel], -1.0, batch.ra[sel])), mu, n, wdiag is not None)

    def bounces(self) -> np.ndarray:
        """Completed contacts with their c_r (:meth:`ContactStore.bounces`)."""
        return self.store.bounces()
