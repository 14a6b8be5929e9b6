"""The engine's side of the contact pipeline: a thin adapter over :mod:`mbplugin.contact`.

:class:`EngineContacts` connects the integrators' flat state ``y`` (see
:mod:`mbplugin.dynamics.world`) to a :class:`~mbplugin.contact.ContactModel` (shapes, materials,
pair laws, detection) and its :class:`~mbplugin.contact.ContactStore` (persistent contacts, law
coefficients latched at onset, ODE state, memory, onset/separation events).

* **Right-hand side.** Between two accepted states the store's row set is frozen: only its
  active contacts exert forces (no provisional onset forces), so the right-hand side is smooth
  inside a step and the integrator meets every onset or separation as an event. The laws' ODE
  states of the active rows (``ns`` slots per row, the most any law of the model needs) sit in
  ``y`` after the bodies' block, in the store's row order.
* **Events** (adaptive integrator). For every pair being watched the adapter returns one value
  per possible transition that turns from > 0 to <= 0 exactly when the transition happens:

  - free pair, onset: ``-delta`` (the pair starts to overlap);
  - active contact, end (Milehins & Marghitu 2026, Eq. 17; the store's rule):
    ``max(F_raw / f_s, ddelta / v_s)``, or ``max(delta / x_s, ddelta / v_s)`` for laws that may
    pull (they end at delta = 0 while receding);
  - latched pair (separated with a residual overlap ``delta_sep``): release ``delta / x_s`` and
    new onset ``-min((delta - delta_sep) / x_s, ddelta / v_s)`` (pressed deeper while approaching).

  The integrator locates the first sign change; the store then books it at that state.
* **Commit.** After each accepted step or event, :meth:`EngineContacts.commit` hands the state's
  detection and the integrated ODE states to ``store.commit`` (memory, separations, latches,
  onsets) and rebuilds ``y`` for the new row set.
* **Friction** (:mod:`mbplugin.dynamics.friction`) per law index of the model, on the normal force
  the law gives (clipped at zero).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch, ContactModel
from mbplugin.contact import pairs as cpairs
from mbplugin.contact.model import MESH, PLANE
from mbplugin.dynamics import _kernels as _k
from mbplugin.dynamics import compiled as cp
from mbplugin.dynamics import records as _rec
from mbplugin.dynamics.advisor import friction_step, stable_step
from mbplugin.dynamics.bodies import Bodies
from mbplugin.dynamics.energy import stored_energy
from mbplugin.errors import ParameterError
from mbplugin.laws.base import Law
from mbplugin.laws.kernels import NC_MAX
from mbplugin.pipeline import events, pairs, rules
from mbplugin.pipeline.friction import Friction, friction_force, friction_stiffness
from mbplugin.pipeline.layout import (
    ContactRows,
    EngineBodies,
    EngineFriction,
    EngineGeometry,
    EngineOnsets,
    EngineWork,
    WatchedPairs,
)
from mbplugin.pipeline.rules import F_SCALE, V_SCALE, X_SCALE
from mbplugin.pipeline.stiffness import law_slopes_batch, law_slopes_force_batch

#: Margin (m) within which the watched pairs are reported when the model is small: effectively
#: "every pair", so that no onset inside a long free-flight step can be missed.
WATCH_ALL = 1e6
SMALL_MODEL = 64
#: Key sets whose decoded pairs `_pair_info` keeps (cleared when full).
PAIR_INFO_CACHE = 256


class EngineContacts:
    """Contacts of a world: detection, persistent state, forces, events and energy.

    ``model``     the contact model (its shapes name body indices of ``bodies``)
    ``bodies``    the world's bodies (mass properties are read from here)
    ``friction``  one :class:`Friction` (or None) per law of ``model.laws``, or a single one for all
    ``margin``    detection margin (m) of the force evaluation: active contacts keep their
                  (continued) law force down to delta = -margin; default 5 % of the smallest
                  bounding radius
    ``watch_margin``  margin (m) of the pairs watched for onset events; default: every pair for
                  models of up to 64 shapes, else twice the largest bounding radius
    """

    def __init__(
        self,
        model: ContactModel,
        bodies: Bodies,
        friction: Friction | Sequence[Friction | None] | None = None,
        margin: float | None = None,
        watch_margin: float | None = None,
    ) -> None:
        self.model = model
        self.bodies = bodies
        self.store = model.make_store()
        self.laws = self.store.laws
        self.ns = max((law.n_state for law in self.laws), default=0)
        n_laws = len(self.laws)
        if friction is None or isinstance(friction, Friction):
            table: list[Friction | None] = [friction] * n_laws
        else:
            table = list(friction)
            if len(table) != n_laws:
                raise ParameterError(
                    f"friction: got {len(table)} entries for the model's {n_laws} laws"
                )
        self.frictions = table
        f = [t if t is not None else Friction() for t in table]
        self._mu = np.array([t.mu for t in f])
        self._mu_s = np.array([t.static for t in f])
        self._v_s = np.array([t.v_s for t in f])
        self._v_eps = np.array([t.v_eps for t in f])
        self._visc = np.array([t.viscous for t in f])
        self._lin = np.array([t.regularisation == "linear" for t in f])
        self._has_friction = any(t.active for t in f)
        comp = model.arrays
        bounds = comp.bound[np.isfinite(comp.bound)]
        rmin = float(bounds.min()) if len(bounds) else 1e-3
        rmax = float(bounds.max()) if len(bounds) else 1e-3
        self.margin = 0.05 * rmin if margin is None else float(margin)
        if watch_margin is None:
            watch_margin = WATCH_ALL if model.n_shapes <= SMALL_MODEL else 2.0 * rmax
        self.watch_margin = float(watch_margin)
        #: extra margin (m) of the commit's candidate pairs over ``margin``: the broad phase
        #: reruns at a commit once a body moved a quarter of it (:meth:`_moved_far`)
        self.cand_slack = max(min(self.watch_margin - self.margin, 0.5 * rmin), 0.0)
        if comp.max_body >= len(bodies):
            raise ParameterError(
                f"a contact shape is attached to body {comp.max_body}, but there are only "
                f"{len(bodies)} bodies"
            )
        # compiled fast path: shape arrays of the model, kernels of the laws
        self._S = model.n_shapes
        self._kind = comp.kind
        self._sbody = comp.body
        self._lpos = np.ascontiguousarray(comp.lpos)
        self._lrot = np.ascontiguousarray(comp.lrot)
        self._radius = np.ascontiguousarray(comp.radius)
        self._plane_n = np.ascontiguousarray(comp.plane_n)
        self._plane_p = np.ascontiguousarray(comp.plane_p)
        self._half = np.ascontiguousarray(comp.half)
        self._ms = cpairs.mesh_arrays(comp)
        #: mesh plane features whose deepest vertex (and so its radius and Hertz k) can change
        #: between onsets: their onsets are detected, not taken from a pair's constants
        self._mesh_varying = comp.mesh.fvarying
        self._mesh_feat0 = comp.mesh.feat0
        self._law_kid = np.array([law.kernel if law.kernel is not None else -1
                                  for law in self.laws], dtype=np.int64)
        self._law_mode = np.array([law.contact_mode for law in self.laws], dtype=np.int64)
        self._law_ns = np.array([law.n_state for law in self.laws], dtype=np.int64)
        self._compiled_laws = all(
            law.kernel is not None
            and type(law).force_raw is Law.force_raw
            and type(law).force is Law.force
            and type(law).state_rate is Law.state_rate
            for law in self.laws
        )
        self.fast = True  #: use the compiled pair path when every pair type allows it
        #: let compiled segments book the lone onsets of pairs met before (see :meth:`onset`)
        self.compiled_onsets = True
        self._pair_info_cache: dict[bytes, tuple[np.ndarray, ...]] = {}
        #: per contact key: (r_eff, law, k_hertz) of a known primitive pair (constants of the
        #: pair's shapes and materials), from its first detection (see :meth:`onset`)
        self._pair_const: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        #: per contact key: (law index, a coefficient row, the law's onset rule, time-scale
        #: parameters) for the compiled onset of :func:`compiled.segment_chain`, from the
        #: pair's first onset booked here (see :meth:`onset`)
        self._onset_tpl: dict[int, tuple[int, np.ndarray, tuple, tuple[float, float]]] = {}
        self._on_cache: tuple[Any, ...] = (None, -1, None)
        self._rows_keys = np.zeros(0, dtype=np.int64)
        self._rows_geo: tuple[np.ndarray, ...] | None = None
        self._w_geo: tuple[np.ndarray, ...] | None = None
        self._wkeys = np.zeros(0, dtype=np.int64)
        self._wmode = np.zeros(0, dtype=np.int8)
        self._wlat_delta = np.zeros(0)
        self._all_keys: np.ndarray | None = None
        # the commit's candidate pairs of the last broad phase (keys, sorted), the bodies' pose
        # then
        self._cand: np.ndarray | None = None
        self._cand_pose: tuple[np.ndarray, np.ndarray] | None = None
        self._cand_seq = 0  # bumped at each broad phase
        self._w_cand_seq = -1  # the broad phase the watched keys were taken from
        self._gb: tuple | None = None  # (keys, y, batch): the watched pairs' detection at y
        self._ck: tuple | None = None  # the commit's key set and what it was made of
        # farthest shape point from each body's centre (inf with a plane or a hole on it)
        reach = (np.linalg.norm(comp.lpos, axis=1) + np.linalg.norm(comp.bound_center, axis=1)
                 + comp.bound)
        self._reach = np.zeros(len(bodies))
        movable = comp.body >= 0
        np.maximum.at(self._reach, comp.body[movable], reach[movable])
        self._w_info: tuple[np.ndarray, ...] | None = None
        self._w_info_keys: np.ndarray | None = None

    # -- sizes ------------------------------------------------------------------------------------
    @property
    def n_ode(self) -> int:
        return len(self.store) * self.ns

    # -- state helpers --
    def body_state(self, pos: np.ndarray, quat: np.ndarray, vel: np.ndarray,
                   omega_w: np.ndarray) -> BodyState:
        b = self.bodies
        return BodyState(pos, quat, vel, omega_w, b.mass, b.inv_inertia, b.fixed)

    def _by_law(self, rows: np.ndarray, ode: np.ndarray) -> Iterator[tuple[Any, ...]]:
        """Per law among the store's rows ``rows``: (the law, its mask over ``rows``, its rows,
        their coefficients (n_coef columns), their law state: ODE states of ``ode`` then
        memory), the one place of that row selection for the NumPy paths."""
        s = self.store
        lw = s.law[rows]
        for li in np.unique(lw):
            law = self.laws[li]
            sel = lw == li
            rr = rows[sel]
            yield (law, sel, rr, s.coef[rr, : law.n_coef],
                   np.concatenate([ode[rr, : law.n_state], s.mem[rr, : law.n_memory]], axis=1))

    def state_from_y(self, y: np.ndarray) -> BodyState:
        pos, quat, vel, _, _, omega_w = _k.unpack_state(y, len(self.bodies))
        return self.body_state(pos, quat, vel, omega_w)

    def _ode_view(self, ode_flat: np.ndarray) -> np.ndarray:
        """The law ODE states of the store's rows (M, ns): a view of the integrator's vector
        (row i's states at offsets [i ns, (i + 1) ns) of the block, fixed at each commit), which
        the store reads directly (no padded copy)."""
        return np.asarray(ode_flat, dtype=float).reshape(len(self.store), self.ns)

    def _ode_of(self, y: np.ndarray) -> np.ndarray:
        n13 = 13 * len(self.bodies)
        return self._ode_view(y[n13 : n13 + self.n_ode])

    def _rebuild(self, y: np.ndarray, n_ode_old: int) -> np.ndarray:
        n13 = 13 * len(self.bodies)
        ode = self.store.ode[:, : self.ns].ravel() if self.ns else np.zeros(0)
        return np.concatenate([y[:n13], ode, y[n13 + n_ode_old :]])

    # -- forces --
    def active_batch(self, batch: ContactBatch) -> ContactBatch:
        """The contacts of ``batch`` that are active rows of the store."""
        return batch.take(self.store.rows(batch) >= 0)

    def evaluate(
        self,
        t: float,
        pos: np.ndarray,
        quat: np.ndarray,
        R: np.ndarray,
        vel: np.ndarray,
        omega_w: np.ndarray,
        ode_flat: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
        """Contact forces and torques on the bodies (n, 3) (world frame), the law-state rates
        (n_ode,), the power absorbed by the normal forces and the friction power (W)."""
        n = len(self.bodies)
        force = np.zeros((n, 3))
        torque = np.zeros((n, 3))
        m = len(self.store)
        if m == 0:
            return force, torque, np.zeros(0), 0.0, 0.0
        geo = self._row_pairs()
        if geo is not None:
            sa, sb, feat, ptype = geo
            a, b, d, v, nrm, vt, ra, rb = self._geometry(ptype, sa, sb, feat, pos, R, vel,
                                                         omega_w)
            rates = np.zeros(self.n_ode)
            fn = np.empty(m)
            st = self.store
            p_n, p_f = pairs.contact_forces(
                np.arange(m), st.law, a, b, d, v, nrm, vt, ra, rb, st.coef,
                np.ascontiguousarray(ode_flat, dtype=float), self.ns, st.mem, self._law_kid,
                self._law_mode, self._law_ns, self._mu, self._mu_s, self._v_s, self._v_eps,
                self._visc, self._lin, self._has_friction, force, torque, rates, fn,
            )
            return force, torque, rates, float(p_n), float(p_f)
        # the active rows' pairs only, through the narrow phase (no broad phase)
        kb = self.model.detect_pairs(self.body_state(pos, quat, vel, omega_w), self.store.keys,
                                     self.margin)
        rates = np.zeros(self.n_ode)
        if len(kb) == 0:
            return force, torque, rates, 0.0, 0.0
        ode = self._ode_view(ode_flat)
        fn = self.store.forces(kb, ode)
        ft = self._friction(kb, fn)
        pairs.scatter_contacts(kb.a, kb.b, fn, kb.normal, ft, kb.ra, kb.rb, force, torque)
        if self.ns:
            self.store.state_rates(kb, ode, out=rates.reshape(m, self.ns))
        p_n = float(np.dot(fn, kb.ddelta))
        p_f = -float(np.einsum("ij,ij->", ft, kb.vt)) if self._has_friction else 0.0
        return force, torque, rates, p_n, p_f

    def _pair_info(self, keys: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """Decoded (sa, sb, feature, pair type) of ``keys``, or None without a compiled path."""
        if not (self.fast and self._compiled_laws):
            return None
        # a pure function of the keys (the model is frozen): cached per key set, since a run
        # meets the same few sets again at every onset and end
        tag = keys.tobytes()
        hit = self._pair_info_cache.get(tag)
        if hit is not None:
            return hit or None
        sa, sb, feat = cpairs.decode_keys(keys, self._S)
        ptype = cpairs.pair_types(self._kind, sa, sb)
        out: tuple[np.ndarray, ...] = () if np.any(ptype < 0) else (sa, sb, feat, ptype)
        if len(self._pair_info_cache) >= PAIR_INFO_CACHE:
            self._pair_info_cache.clear()
        self._pair_info_cache[tag] = out
        return out or None

    def _row_pairs(self) -> tuple[np.ndarray, ...] | None:
        """Decoded pairs of the store's rows (cached until the rows change at a commit)."""
        if self._rows_geo is None:
            info = self._pair_info(self.store.keys)
            self._rows_geo = info if info is not None else ()
        return self._rows_geo if self._rows_geo else None

    def time_scale(self) -> float:
        """The shortest contact time scale (s) of the active contacts: the law's ``timescale``
        at the latched effective mass and impact speed (floored at 1 mm/s) and the contact's
        stiffness, latched by the store at onset (``store.t_c``); inf without contacts."""
        t_c = self.store.t_c
        return float(t_c.min()) if len(t_c) else np.inf

    def first_step_hint(self) -> float:
        """A first step (s) after an event: 1/5 of the shortest contact time scale."""
        return self.time_scale() / 5.0

    def _geometry(
        self, ptype: np.ndarray, sa: np.ndarray, sb: np.ndarray, feat: np.ndarray,
        pos: np.ndarray, R: np.ndarray, vel: np.ndarray, omega_w: np.ndarray,
    ) -> tuple[np.ndarray, ...]:
        k = len(sa)
        a = np.empty(k, dtype=np.int64)
        b = np.empty(k, dtype=np.int64)
        d = np.empty(k)
        v = np.empty(k)
        nrm = np.empty((k, 3))
        vt = np.empty((k, 3))
        ra = np.empty((k, 3))
        rb = np.empty((k, 3))
        cpairs.pair_geometry(
            ptype, sa, sb, feat, self._sbody, self._lpos, self._lrot, self._radius,
            self._plane_n, self._plane_p, self._half, self._ms, np.ascontiguousarray(pos), R,
            np.ascontiguousarray(vel), omega_w, a, b, d, v, nrm, vt, ra, rb,
        )
        return a, b, d, v, nrm, vt, ra, rb

    def _kin_from_y(self, y: np.ndarray) -> tuple[np.ndarray, ...]:
        pos, _, vel, _, R, omega_w = _k.unpack_state(y, len(self.bodies))
        return pos, R, vel, omega_w

    def _friction(self, kb: ContactBatch, fn: np.ndarray) -> np.ndarray:
        if not self._has_friction:
            return np.zeros((len(kb), 3))
        li = kb.law
        return friction_force(kb.vt, fn, self._mu[li], self._mu_s[li], self._v_s[li],
                              self._v_eps[li], self._visc[li], self._lin[li])

    # -- bookkeeping ------------------------------------------------------------------------------
    def begin(self, t: float, y: np.ndarray) -> np.ndarray:
        """Register the contacts of the initial state; returns ``y`` with their ODE states.

        A pair touching exactly (delta = 0) while approaching starts in contact: the initial
        state is then the instant of first contact (as in the papers' impact setting). So does
        one touching at rest (ddelta = 0, e.g. a ball placed on the floor): otherwise its onset,
        a zero of the event function at the start, is not a sign change, and the first step
        falls into the contact without its force (the overlap's elastic energy then appears
        from nowhere: a false energy rise); a pair the loads pull apart ends at the next step.
        """
        n_old = self.n_ode  # the layout ``y`` was packed with: the rows active until now
        self.store.reset()
        self._all_keys = None
        self._w_info_keys = None
        self._cand = None
        self._gb = None
        self._ck = None
        batch = _nudge_touching(self.model.detect(self.state_from_y(y), self.margin), at_rest=True)
        self.store.begin(batch, t)
        self._rows_geo = None
        return self._rebuild(y, n_old)

    @property
    def n_active(self) -> int:
        """Number of active contacts (store rows)."""
        return len(self.store)

    def commit(self, t: float, y: np.ndarray, quick: bool = False,
               values: np.ndarray | None = None) -> tuple[bool, np.ndarray]:
        """Book the accepted state ``y`` at ``t``: (whether the contact set or a law's memory
        changed, the state rebuilt for the new row set).

        ``quick=True`` (an adaptive step in which no event function changed sign) skips the
        detection when every pair is watched by the compiled path and every event value at
        ``y`` (``values``) is still > 0: the contact set cannot have changed; only the laws'
        memory is updated. A pair that touches exactly (delta = 0) while approaching is booked
        as an onset (the event locator stops on the contact side, which can be delta = 0).
        """
        s = self.store
        if (quick and self._w_geo is not None and self.watch_margin >= WATCH_ALL
                and values is not None and np.all(self._rule_values(values) > 0.0)):
            return self._memory_only(y), y
        keys0, lat0, mem0 = s.keys.copy(), s.latched_keys.copy(), s.mem.copy()
        n_old = self.n_ode
        batch = _nudge_touching(self._detect(y))
        s.commit(batch, t, self._ode_of(y), aligned=False)
        changed = (
            not np.array_equal(keys0, s.keys)
            or not np.array_equal(lat0, s.latched_keys)
            or not np.array_equal(mem0, s.mem)
            # a broad phase since the last watch found pairs not watched: watch them now, so
            # their onset is located as an event rather than booked late at a commit
            or self._unwatched_candidates()
        )
        if not np.array_equal(keys0, s.keys):
            self._rows_geo = None
        return changed, self._rebuild(y, n_old)

    @property
    def ends_in_segment(self) -> bool:
        """True when a compiled segment may book a lone end of contact itself and continue
        (:func:`mbplugin.dynamics.compiled.segment_chain`): the laws carry no ODE states and no
        memory, so ending the only active row changes neither the state layout nor a law's
        memory; the driver then calls :meth:`end_row`."""
        if self._ends_ok is None:
            self._ends_ok = bool(self.ns == 0 and all(law.n_memory == 0 for law in self.laws))
        return self._ends_ok

    _ends_ok: bool | None = None

    def end_row(self, t: float, delta: float, ddelta: float) -> None:
        """Book the end of contact of the only active row at time ``t`` (s), located by a
        compiled segment, with the overlap ``delta`` (m) and its rate ``ddelta`` (m/s) there
        (:meth:`ContactStore.end`: separation event, latch for a residual overlap)."""
        if len(self.store) != 1:
            raise RuntimeError(f"end_row: {len(self.store)} active contacts, expected 1")
        self.store.end(t, np.zeros(1, dtype=np.int64), np.array([delta]), np.array([ddelta]))
        self._rows_geo = None

    def onset(self, t: float, y: np.ndarray, j: int) -> np.ndarray:
        """Book the onset of watched pair ``j`` at the event state ``y`` (time ``t``, s) that a
        compiled segment located while no contact was active, every other event value > 0
        (:attr:`mbplugin.dynamics.compiled.SegmentResult.onset`): what :meth:`commit` books
        there (:meth:`ContactStore.start` of that one contact) without detecting every pair.
        Returns ``y`` rebuilt for the new row."""
        if len(self.store) or self._w_geo is None:
            raise RuntimeError("onset: needs no active contact and a compiled watch")
        batch = self._pair_batch(y, j)
        if not batch.delta[0] > 0.0:  # touching exactly: commit's rule (nudged) books it
            return self.commit(t, y)[1]
        n_old = self.n_ode
        self.store.start(batch, t)
        self._rows_geo = None
        self._onset_template(int(self._wkeys[j]))
        return self._rebuild(y, n_old)

    def _varying(self, key: int) -> bool:
        """True for a mesh plane feature whose deepest vertex can change (a smooth region):
        its radius, and so its Hertz k, is not a constant of the pair."""
        if not len(self._mesh_varying):
            return False
        sa, sb, f = cpairs.decode_keys(np.array([key], dtype=np.int64), self._S)
        s = int(sb[0])
        return bool(self._kind[s] == MESH and self._kind[int(sa[0])] == PLANE
                    and self._mesh_varying[self._mesh_feat0[s] + int(f[0])])

    def _onset_template(self, key: int) -> None:
        """Keep what a compiled segment needs to book later onsets of pair ``key`` itself
        (its law's compiled onset rule and time scale, a coefficient row with the pair's
        stiffness), when the laws allow it (:attr:`ends_in_segment`)."""
        s = self.store
        if (key in self._onset_tpl or not (self.compiled_onsets and self.ends_in_segment)
                or len(s) != 1 or self._varying(key)):
            return
        li = int(s.law[0])
        law = self.laws[li]
        rule = law.onset_rule()
        if rule is None:
            return
        k_on = float(s.k_on[0])
        ts = (law.replace(k=k_on) if math.isfinite(k_on) else law).timescale_rule()
        if ts is not None:
            self._onset_tpl[key] = (li, s.coef[0].copy(), rule, ts)

    def onset_row(self, o: np.ndarray) -> None:
        """Book an onset that a compiled segment booked itself (a row of
        :attr:`SegmentResult.onsets <mbplugin.dynamics.compiled.SegmentResult>`: a record of
        :data:`mbplugin.pipeline.layout.ONSET`) in the store
        (:meth:`ContactStore.start` with the row and time scale given)."""
        j = int(o["watch"])
        keys = self._wkeys[j : j + 1]
        r_eff, law, k_hertz = self._pair_const[int(keys[0])]
        assert self._w_geo is not None
        ab = self._sbody[np.concatenate([self._w_geo[0][j : j + 1], self._w_geo[1][j : j + 1]])]
        a, b = ab[:1].astype(np.int64), ab[1:].astype(np.int64)

        def vec(name: str) -> np.ndarray:
            return o[name][None].copy()

        def one(name: str) -> np.ndarray:
            return np.array([o[name]], dtype=float)

        batch = ContactBatch(a, b, keys.copy(), vec("point"), vec("normal"), one("delta"),
                             one("ddelta"), vec("vt"), one("m_eff"), r_eff.copy(), vec("ra"),
                             vec("rb"), law.copy(), k_hertz.copy())
        self.store.start(batch, float(o["t"]), coef=o["coef"][None],
                         t_c=one("t_c"))
        self._rows_geo = None

    def _pair_batch(self, y: np.ndarray, j: int) -> ContactBatch:
        """The contact of watched pair ``j`` at ``y`` as a one-contact batch: the batch of
        :meth:`ContactModel.detect_pairs` (its first time, keeping the pair's constants r_eff,
        law and k_hertz), then the state-dependent fields by
        :func:`mbplugin.contact.pairs.pair_contacts`."""
        keys = self._wkeys[j : j + 1]
        st = self.state_from_y(y)
        const = self._pair_const.get(int(keys[0]))
        if const is None:
            batch = self.model.detect_pairs(st, keys, self.margin)
            if len(batch) != 1:
                raise RuntimeError(f"onset: pair {int(keys[0])} is not in contact")
            if not self._varying(int(keys[0])):
                self._pair_const[int(keys[0])] = (batch.r_eff, batch.law, batch.k_hertz)
            return batch
        assert self._w_geo is not None
        sa, sb, feat, ptype = (np.ascontiguousarray(x[j : j + 1], dtype=np.int64)
                               for x in self._w_geo)
        rot_ext = st.rotations_ext()
        i64 = np.int64
        a, b = np.empty(1, dtype=i64), np.empty(1, dtype=i64)
        point, normal, vt, ra, rb = (np.empty((1, 3)) for _ in range(5))
        delta, ddelta, m_eff = np.empty(1), np.empty(1), np.empty(1)
        cpairs.pair_contacts(ptype, sa, sb, feat, np.ascontiguousarray(self._sbody, dtype=i64),
                             self._lpos, self._lrot, self._radius, self._plane_n, self._plane_p,
                             self._half, self._ms, np.ascontiguousarray(st.pos), rot_ext,
                             np.ascontiguousarray(st.vel), np.ascontiguousarray(st.omega),
                             st.inv_mass_ext(), st.inv_inertia_world_ext(rot_ext), a, b, point,
                             normal, delta, ddelta, vt, ra, rb, m_eff)
        r_eff, law, k_hertz = const
        return ContactBatch(a, b, keys.copy(), point, normal, delta, ddelta, vt, m_eff,
                            r_eff.copy(), ra, rb, law.copy(), k_hertz.copy())

    def _detect(self, y: np.ndarray) -> ContactBatch:
        """Detection at ``y`` with the force margin, by the narrow phase on known pairs: for a
        small model whose pairs are all known and primitive, only those pairs' keys
        (:meth:`ContactModel.detect_pairs`); otherwise every contact of the commit's candidate
        pairs (:meth:`_commit_keys`), taken from the watched pairs' detection at ``y`` when the
        event functions were just evaluated there (the same state: no second detection)."""
        if self._all_keys is not None and self._w_geo is not None:
            return self.model.detect_pairs(self.state_from_y(y), self._all_keys, self.margin)
        keys = self._commit_keys(y)
        c = self._gb
        if (self.model.nested_margins and c is not None
                and (c[0] is keys or np.array_equal(c[0], keys)) and np.array_equal(c[1], y)):
            batch = c[2]
            return batch.take(np.flatnonzero(batch.delta > -self.margin))
        return self.model.detect_pairs(self.state_from_y(y), keys, self.margin,
                                       all_features=True)

    def _unwatched_candidates(self) -> bool:
        """True when a broad phase since the last watch found pairs that are not watched."""
        if self._w_cand_seq == self._cand_seq or self._cand is None:
            return False
        if np.isin(self._cand, self._wkeys).all():
            self._w_cand_seq = self._cand_seq
            return False
        return True

    # -- the commit's candidate pairs (a broad phase only after a far move) --
    def _moved_far(self, y: np.ndarray) -> bool:
        """Whether a body moved so far since the last candidate search that a pair outside the
        candidates (farther than margin + slack then) could now be within margin + slack / 2:
        each shape point moves at most |dc| + reach * angle (reach: the farthest shape point
        from the body's centre), and a pair's delta changes at most by its two bodies' moves."""
        if self._cand is None or self._cand_pose is None:
            return True
        n = len(self.bodies)
        pos0, quat0 = self._cand_pose
        dpos = np.linalg.norm(y[: 3 * n].reshape(n, 3) - pos0, axis=1)
        q = y[3 * n : 7 * n].reshape(n, 4)
        qn = q / np.linalg.norm(q, axis=1, keepdims=True)
        q0 = quat0 / np.linalg.norm(quat0, axis=1, keepdims=True)
        chord = np.minimum(np.linalg.norm(qn - q0, axis=1), np.linalg.norm(qn + q0, axis=1))
        angle = 4.0 * np.arcsin(np.minimum(0.5 * chord, 1.0))  # |q - q0| = 2 sin(angle / 4)
        with np.errstate(invalid="ignore"):
            turn = np.where(angle > 0.0, self._reach * angle, 0.0)
        move = dpos + turn
        return bool(2.0 * move.max(initial=0.0) > 0.5 * self.cand_slack)

    def _candidates(self, y: np.ndarray) -> None:
        """The broad phase (:meth:`ContactModel.candidate_keys` with margin + ``cand_slack``)
        at ``y`` when no candidate set exists or a body moved too far (:meth:`_moved_far`)."""
        if not self._moved_far(y):
            return
        n = len(self.bodies)
        self._cand = self.model.candidate_keys(self.state_from_y(y),
                                               self.margin + self.cand_slack)
        self._cand_pose = (y[: 3 * n].reshape(n, 3).copy(), y[3 * n : 7 * n].reshape(n, 4).copy())
        self._cand_seq += 1

    def _commit_keys(self, y: np.ndarray) -> np.ndarray:
        """The pairs to detect at a commit: for a small model every pair (the watched ones),
        else the candidates of the last broad phase (:meth:`_candidates`), with the active and
        latched rows."""
        s = self.store
        if self.watch_margin >= WATCH_ALL and self._all_keys is not None:
            base = self._all_keys
            if self._wkeys is base:
                return base
        else:
            self._candidates(y)
            assert self._cand is not None
            base = self._cand
        c = self._ck
        if c is not None and c[0] is base and c[1] is s.keys and c[2] is s.latched_keys:
            return c[3]
        keys = np.unique(np.concatenate([base, s.keys, s.latched_keys]))
        self._ck = (base, s.keys, s.latched_keys, keys)
        return keys

    def _watched_batch(self, y: np.ndarray, keys: np.ndarray) -> ContactBatch:
        """Every contact of the shape pairs of ``keys`` at ``y`` within the watch margin, by
        the narrow phase only; cached for the last state (the event functions at a step's end
        and the commit there share one detection)."""
        c = self._gb
        if (c is not None and (c[0] is keys or np.array_equal(c[0], keys))
                and np.array_equal(c[1], y)):
            return c[2]
        batch = self.model.detect_pairs(self.state_from_y(y), keys, self.watch_margin,
                                        all_features=True)
        self._gb = (keys, np.array(y, dtype=float, copy=True), batch)
        return batch

    def _memory_only(self, y: np.ndarray) -> bool:
        """Update the laws' memory of the active rows at ``y``; True if any value changed."""
        s = self.store
        if not len(s) or not np.any(self._law_ns_mem()):
            return False
        geo = self._row_pairs()
        if geo is None:
            return False
        d, v = self._delta_at(y, geo)
        ode = self._ode_of(y)
        mem0 = s.mem.copy()
        for li in np.unique(s.law):
            law = self.laws[li]
            if law.n_memory == 0:
                continue
            rr = np.flatnonzero(s.law == li)
            state = np.ascontiguousarray(
                np.concatenate([ode[rr, : law.n_state], s.mem[rr, : law.n_memory]], axis=1))
            law.update_memory(d[rr], v[rr], s.coef[rr, : law.n_coef], state)
            s.mem[rr, : law.n_memory] = state[:, law.n_state :]
        return not np.array_equal(mem0, s.mem)

    def _law_ns_mem(self) -> np.ndarray:
        return np.array([law.n_memory for law in self.laws])

    def _peak_watch(self) -> np.ndarray | None:
        """Which watched active contacts (in watch order) have a law with memory, whose
        maximum compression is an event (:func:`mbplugin.pipeline.rules.peak_value`); None when
        no law of the model has memory (no such event at all)."""
        if self._any_memory is None:
            self._any_memory = bool(np.any(self._law_ns_mem() > 0))
        if not self._any_memory or not np.any(self._wmode == 1):
            return None
        st = self.store
        rows = np.searchsorted(st.keys, self._wkeys[self._wmode == 1])
        pk = self._law_ns_mem()[st.law[rows]] > 0
        return pk if pk.any() else None

    _any_memory: bool | None = None
    #: :meth:`_peak_watch` of the pairs watched now (set by :meth:`watch`)
    _wpeak: np.ndarray | None = None

    # -- events --
    def watch(self, t: float, y: np.ndarray, values: bool = True) -> np.ndarray | None:
        """Fix the pairs watched during the next step; returns their event values at ``y``
        (None with ``values=False`` when the compiled path applies: a compiled segment
        evaluates them itself)."""
        s = self.store
        small = self.watch_margin >= WATCH_ALL
        batch = None
        if small and self._all_keys is not None:
            # every pair of a small model is watched: the key set found once stays valid
            found = self._all_keys
        else:
            # the broad phase, then the narrow phase on its pairs (the keys of pairs without a
            # contact yet, e.g. python-fcl pairs before they overlap, are watched too)
            state = self.state_from_y(y)
            cand = self.model.candidate_keys(state, self.watch_margin)
            batch = self.model.detect_pairs(state, cand, self.watch_margin, all_features=True)
            found = np.union1d(batch.key, cand)
            if small:
                self._all_keys = found
        if len(found) and self._all_keys is found:
            keys = found  # the stored keys and latches are pairs of the model: a subset
        else:
            keys = np.unique(np.concatenate([found, s.keys, s.latched_keys]))
        mode = np.zeros(len(keys), dtype=np.int8)  # 0 free, 1 active, 2 latched
        mode[np.isin(keys, s.keys)] = 1
        lat = np.isin(keys, s.latched_keys)
        mode[lat] = 2
        self._wkeys = keys
        self._wmode = mode
        pos = np.searchsorted(s.latched_keys, keys[lat])
        self._wlat_delta = s.latched_delta[pos] if len(pos) else np.zeros(0)
        if self._w_info_keys is not keys:
            self._w_info = self._pair_info(keys)
            self._w_info_keys = keys
        self._w_geo = self._w_info
        self._w_cand_seq = self._cand_seq
        self._wpeak = self._peak_watch()
        if self._w_geo is not None:
            self._w_rows = np.searchsorted(s.keys, keys[mode == 1])
            return self._values_fast(y) if values else None
        if batch is not None:
            # the detection above holds every contact of the watched pairs within the margin
            self._gb = (keys, np.array(y, dtype=float, copy=True), batch)
        return self._values(self._watched_batch(y, keys), y)

    def compiled_arrays(self, world: Any) -> tuple | None:
        """The arrays of the compiled segment (:mod:`mbplugin.dynamics.compiled`) for the
        current rows and watched pairs (call :meth:`watch` first), or None when the compiled
        path does not apply (a pair type or law without a compiled path, pairs not all watched,
        external loads)."""
        if (self._w_geo is None or self.watch_margin < WATCH_ALL
                or not getattr(world.loads, "empty", False)):
            return None
        st = self.store
        m = len(st)
        geo = self._row_pairs() if m else self._pair_info(st.keys)
        if geo is None:
            return None
        i64 = np.int64
        r_pt, r_sa, r_sb, r_ft = (np.ascontiguousarray(x, dtype=i64) for x in
                                  (geo[3], geo[0], geo[1], geo[2]))
        if not st.mem.flags.c_contiguous:
            st.mem = np.ascontiguousarray(st.mem)
        b = self.bodies
        n = len(b)
        BD = EngineBodies(np.ascontiguousarray(b.inv_mass, dtype=float),
                          np.ascontiguousarray(b.inertia), np.ascontiguousarray(b.inv_inertia),
                          np.ascontiguousarray(world._gacc),
                          np.ascontiguousarray(b.fixed, dtype=np.bool_))
        G = EngineGeometry(np.ascontiguousarray(self._sbody, dtype=i64), self._lpos, self._lrot,
                           self._radius, self._plane_n, self._plane_p, self._half, self._ms)
        CR = ContactRows(r_pt, r_sa, r_sb, r_ft, np.ascontiguousarray(st.law, dtype=i64),
                         np.ascontiguousarray(st.coef), st.mem, int(self.ns), self._law_kid,
                         self._law_mode, self._law_ns,
                         np.ascontiguousarray(st.m_eff, dtype=float))
        FR = EngineFriction(self._mu, self._mu_s, self._v_s, self._v_eps, self._visc, self._lin,
                            bool(self._has_friction))
        sa, sb, feat, ptype = self._w_geo
        mode = np.asarray(self._wmode, dtype=i64)
        w_row = np.full(len(mode), -1, dtype=i64)
        w_row[mode == 1] = self._w_rows
        if self._wpeak is not None:
            # active contacts of laws with memory: their maximum compression is watched too
            mode[np.flatnonzero(mode == 1)[self._wpeak]] = cp.W_ACTIVE_MEMORY
        w_dsep = np.zeros(len(mode))
        w_dsep[mode == 2] = self._wlat_delta
        WP = WatchedPairs(np.ascontiguousarray(ptype, dtype=i64),
                          np.ascontiguousarray(sa, dtype=i64),
                          np.ascontiguousarray(sb, dtype=i64),
                          np.ascontiguousarray(feat, dtype=i64), mode, w_row, w_dsep)
        W = EngineWork(np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3)),
                       np.empty((n, 3)), np.empty(m, dtype=i64), np.empty(m, dtype=i64),
                       np.empty(m), np.empty(m), np.empty((m, 3)), np.empty((m, 3)),
                       np.empty((m, 3)), np.empty((m, 3)), np.empty(m),
                       np.arange(m, dtype=i64), np.empty((3, 3)), np.empty((3, 3)))
        return n, BD, G, CR, FR, WP, W, self._onset_arrays()

    def _onset_arrays(self) -> EngineOnsets:
        """The ``ON`` arrays of :func:`compiled.segment_chain` for the watched pairs: per pair
        whether its onset can be booked in the segment, its law, coefficient row, onset rule
        and time-scale parameters (:meth:`_onset_template`); the bodies' inverse masses
        (N + 1, world row 0), fixed flags and a work array (N + 1, 3, 3). Cached per watch key
        set and template count."""
        keys = self._wkeys
        tag = (keys, len(self._onset_tpl))
        if self._on_cache[0] is keys and self._on_cache[1] == tag[1]:
            return self._on_cache[2]
        nw = len(keys)
        i64 = np.int64
        ok = np.zeros(nw, dtype=i64)
        law = np.zeros(nw, dtype=i64)
        row = np.zeros((nw, NC_MAX))
        rule = np.zeros(nw, dtype=i64)
        par = np.zeros((nw, 2))
        ts = np.ones((nw, 2))
        for j in range(nw) if self._onset_tpl else ():
            tpl = self._onset_tpl.get(int(keys[j]))
            if tpl is not None:
                ok[j] = 1
                law[j], row[j], (rule[j], par[j, 0], par[j, 1]), ts[j] = tpl
        b = self.bodies
        n = len(b)
        inv_m = np.zeros(n + 1)
        inv_m[:n] = b.inv_mass
        out = EngineOnsets(ok, law, row, rule, par, ts, inv_m,
                           np.ascontiguousarray(b.fixed, dtype=np.bool_), np.zeros((n + 1, 3, 3)))
        self._on_cache = (keys, tag[1], out)
        return out

    def event_values(self, t: float, y: np.ndarray) -> np.ndarray:
        """Event values of the watched pairs at state ``y`` (see the module docstring and
        :meth:`_layout`), then the maximum compression of each watched active contact of a law
        with memory."""
        if self._w_geo is not None:
            return self._values_fast(y)
        return self._values(self._watched_batch(y, self._wkeys), y)

    def _rule_values(self, values: np.ndarray) -> np.ndarray:
        """The contact rules' part of :meth:`event_values` (without the maximum compressions:
        a value <= 0 there, while the contact unloads, needs no commit)."""
        if self._wpeak is None:
            return values
        return values[: len(values) - int(np.count_nonzero(self._wpeak))]

    def event_strict(self) -> np.ndarray:
        """Which of :meth:`event_values` belong to strict rules
        (:func:`mbplugin.pipeline.events.strict_rule`: the onsets of free pairs, the renewals of
        latched pairs), for :func:`mbplugin.pipeline.events.crossed`."""
        mode = self._wmode
        npk = 0 if self._wpeak is None else int(np.count_nonzero(self._wpeak))
        return np.concatenate([mode == 0, np.ones(int(np.count_nonzero(mode == 2)), bool),
                               np.zeros(npk, bool)])

    def _layout(self, delta: np.ndarray, ddelta: np.ndarray, f_act: np.ndarray,
                mode_act: np.ndarray) -> np.ndarray:
        """The event values of the watched pairs (:func:`mbplugin.pipeline.events.
        event_values` by each pair's class) from their delta (m), ddelta (m/s) and, for the
        active ones in watch order, the law's raw force ``f_act`` (N) and contact mode
        ``mode_act``: the ``S_RULE`` value of every pair, the ``S_RENEW`` value of each latched
        pair, then the ``S_EXTREMUM`` value (the maximum compression) of each active contact
        of a law with memory (the compiled segment's set, :mod:`mbplugin.dynamics.compiled`)."""
        mode = self._wmode
        nw = len(mode)
        cls = mode.astype(np.int64)
        act = mode == 1
        lat = mode == 2
        ia = np.flatnonzero(act)
        if self._wpeak is not None:
            cls[ia[self._wpeak]] = events.ACTIVE_MEMORY
        f = np.full(nw, np.nan)
        f[ia] = f_act
        lmode = np.zeros(nw, dtype=np.int64)
        lmode[ia] = mode_act
        dsep = np.zeros(nw)
        dsep[lat] = self._wlat_delta
        g = events.event_values(cls, np.ascontiguousarray(delta, dtype=float),
                                np.ascontiguousarray(ddelta, dtype=float), f, lmode, dsep,
                                X_SCALE, F_SCALE, V_SCALE, np.empty((nw, events.N_SLOTS)))
        peaks = [] if self._wpeak is None else [g[ia[self._wpeak], events.S_EXTREMUM]]
        return np.concatenate([g[:, events.S_RULE], g[lat, events.S_RENEW], *peaks])

    def _values_fast(self, y: np.ndarray) -> np.ndarray:
        assert self._w_geo is not None
        delta, ddelta = self._delta_at(y, self._w_geo)
        act = self._wmode == 1
        rows = self._w_rows
        fr = np.empty(len(rows))
        if act.any():
            st = self.store
            n13 = 13 * len(self.bodies)
            pairs.raw_forces(rows, st.law, delta[act], ddelta[act], st.coef,
                              np.ascontiguousarray(y[n13 : n13 + self.n_ode]), self.ns, st.mem,
                              self._law_kid, self._law_ns, fr)
        return self._layout(delta, ddelta, fr, self._law_mode[self.store.law[rows]])

    def _values(self, batch: ContactBatch, y: np.ndarray) -> np.ndarray:
        keys, mode = self._wkeys, self._wmode
        nw = len(keys)
        if nw == 0:
            return np.zeros(0)
        order = np.argsort(batch.key)
        sk = batch.key[order]
        p = np.searchsorted(sk, keys)
        pc = np.minimum(p, max(len(sk) - 1, 0))
        found = (p < len(sk)) & (sk[pc] == keys) if len(sk) else np.zeros(nw, bool)
        bi = np.where(found, order[pc] if len(sk) else 0, -1)
        delta = np.where(found, batch.delta[np.maximum(bi, 0)] if len(sk) else 0.0, -np.inf)
        ddelta = np.where(found, batch.ddelta[np.maximum(bi, 0)] if len(sk) else 0.0, 0.0)
        act = mode == 1
        ia = np.flatnonzero(act)
        fr = np.full(len(ia), np.nan)
        md = np.zeros(len(ia), dtype=np.int64)
        ok = found[ia]
        if ok.any():
            sub = batch.take(bi[ia[ok]])
            rows = self.store.rows(sub)
            fr[ok] = self.store.forces(sub, self._ode_of(y), raw=True)
            md[ok] = self._law_mode[self.store.law[rows]]
        g = self._layout(delta, ddelta, fr, md)
        # pairs lost from the detection: a free pair stays apart, an active contact has ended,
        # a latched pair's gap has opened
        lost = ~found
        g[:nw][lost & (mode == 0)] = 1.0
        g[:nw][lost & act] = -1.0
        g[:nw][lost & (mode == 2)] = -1.0
        il = np.flatnonzero(mode == 2)
        g[nw : nw + len(il)][lost[il]] = 1.0
        return g

    # -- diagnostics --
    def stored_energy(self, y: np.ndarray) -> float:
        """Elastic energy (J) held by the active contacts at state ``y`` (NaN-free: contacts of
        laws without a known potential count 0; see :attr:`unknown_potential`)."""
        s = self.store
        if not len(s):
            return 0.0
        total = 0.0
        self.unknown_potential = False
        r, d, _, _ = self._rows_state(y)
        if not len(r):
            return 0.0
        ode = self._ode_of(y)
        for law, sel, rr, _, state in self._by_law(r, ode):
            u = stored_energy(law, d[sel], s.coef[rr], state)
            if np.any(np.isnan(u)):
                self.unknown_potential = True
            total += float(np.nansum(u))
        return total

    unknown_potential: bool = False

    def contact_table(self, y: np.ndarray) -> dict[str, np.ndarray]:
        """The active contacts at ``y``: key, a, b, delta, ddelta, force (N) and ODE states."""
        s = self.store
        rows, d, v, ab = self._rows_state(y)
        ode = self._ode_of(y)
        fn = np.zeros(len(rows))
        if self._compiled_laws and len(rows):
            n13 = 13 * len(self.bodies)
            pairs.raw_forces(rows, s.law, d, v, s.coef,
                             np.ascontiguousarray(y[n13 : n13 + self.n_ode]), self.ns, s.mem,
                             self._law_kid, self._law_ns, fn)
            fn = rules.applied_batch(self._law_mode[s.law[rows]], fn)
            return {
                "key": s.keys[rows], "a": ab[0], "b": ab[1], "delta": d, "ddelta": v,
                "force": fn, "state": ode[rows, : self.ns],
            }
        for law, sel, _, coef, state in self._by_law(rows, ode):
            fn[sel] = law.force(d[sel], v[sel], coef, state)
        return {
            "key": s.keys[rows], "a": ab[0], "b": ab[1], "delta": d, "ddelta": v, "force": fn,
            "state": ode[rows, : self.ns],
        }

    def records(self, Y: np.ndarray, table: bool = True, y: np.ndarray | None = None
                ) -> tuple[np.ndarray, dict[str, np.ndarray] | None, np.ndarray]:
        """:meth:`stored_energy` and :meth:`contact_table` of K states ``Y`` (K, len(y)) with
        this store's rows (a recorder's records between two contact events): (stored energy
        (K,) J, the K tables concatenated or None without ``table``, rows per state (K,)).

        With a compiled path (known primitive pairs, compiled laws) the geometry, forces and
        potentials of all K x m contacts are one call each; otherwise state by state. ``y``:
        the state vector ``Y[0]`` was taken from when K = 1 (reuses a detection cached for
        it)."""
        K = len(Y)
        s = self.store
        m = len(s)
        if m == 0:
            return np.zeros(K), None, np.zeros(K, dtype=np.int64)
        geo = self._row_pairs()
        if geo is None:
            stored = np.zeros(K)
            tabs = []
            for i in range(K):
                yi = y if (y is not None and K == 1) else Y[i]
                stored[i] = self.stored_energy(yi)
                if table:
                    tabs.append(self.contact_table(yi))
            counts = np.array([len(tb["key"]) for tb in tabs], dtype=np.int64) if table else (
                np.zeros(K, dtype=np.int64))
            if not table or not tabs:
                return stored, None, counts
            return stored, {k: np.concatenate([tb[k] for tb in tabs])
                            for k in tabs[0]}, counts
        sa, sb = geo[0], geo[1]
        n13 = 13 * len(self.bodies)
        ode_flat = np.ascontiguousarray(Y[:, n13 : n13 + self.n_ode])
        d = np.empty((K, m))
        v = np.empty((K, m))
        fn = np.empty((K, m))
        self._contact_records(Y, geo, ode_flat, table, d, v, fn)
        ode = ode_flat.reshape(K, m, self.ns)
        # stored energy, law by law (the laws' potentials are NumPy batches)
        stored = np.zeros(K)
        self.unknown_potential = False
        for li in np.unique(s.law):
            law = self.laws[li]
            rr = np.flatnonzero(s.law == li)
            st_ode = ode[:, rr, : law.n_state]
            st_mem = np.broadcast_to(s.mem[rr, : law.n_memory], (K, len(rr), law.n_memory))
            state = np.concatenate([st_ode, st_mem], axis=2).reshape(K * len(rr), -1)
            coef = np.broadcast_to(s.coef[rr], (K, len(rr), s.coef.shape[1])).reshape(
                K * len(rr), -1)
            u = stored_energy(law, d[:, rr].ravel(), coef, state).reshape(K, len(rr))
            nan = np.isnan(u)
            if nan.any():
                self.unknown_potential = True
                u = np.where(nan, 0.0, u)
            stored += u.sum(axis=1)
        counts = np.full(K, m, dtype=np.int64)
        if not table:
            return stored, None, counts
        def tile(x: np.ndarray) -> np.ndarray:
            return np.broadcast_to(x, (K, m)).ravel()

        fn = fn.ravel()
        return stored, {
            "key": tile(s.keys), "a": tile(self._sbody[sa]),
            "b": tile(self._sbody[sb]), "delta": d.ravel(), "ddelta": v.ravel(),
            "force": fn, "state": ode.reshape(K * m, self.ns),
        }, counts

    def _contact_records(self, Y: np.ndarray, geo: tuple, ode_flat: np.ndarray, forces: bool,
                         d: np.ndarray, v: np.ndarray, fn: np.ndarray) -> None:
        """delta, ddelta and (with ``forces``) the applied force of the pairs ``geo`` (the
        store's rows for the forces) at K states ``Y`` (K, len(y)) into the (K, m) outputs
        ``d``, ``v``, ``fn``: one compiled call (:func:`mbplugin.dynamics.records.
        contact_records`); ``ode_flat`` (K, n_ode) the rows' ODE states."""
        sa, sb, feat, ptype = geo
        s = self.store
        K = len(Y)
        n = len(self.bodies)
        _rec.contact_records(
            ptype, sa, sb, feat, self._sbody, self._lpos, self._lrot, self._radius,
            self._plane_n, self._plane_p, self._half, self._ms,
            np.ascontiguousarray(Y[:, : 3 * n]).reshape(K, n, 3),
            np.ascontiguousarray(Y[:, 3 * n : 7 * n]).reshape(K * n, 4),
            np.ascontiguousarray(Y[:, 7 * n : 10 * n]).reshape(K, n, 3),
            np.ascontiguousarray(Y[:, 10 * n : 13 * n]).reshape(K * n, 3),
            s.law, s.coef, ode_flat, self.ns, s.mem, self._law_kid, self._law_ns,
            self._law_mode, bool(forces), d, v, fn,
        )

    def _delta_at(self, y: np.ndarray, geo: tuple) -> tuple[np.ndarray, np.ndarray]:
        """delta (m) and ddelta (m/s) of the pairs ``geo`` at the state ``y`` (one state of
        :meth:`_contact_records`: the same compiled call as the records)."""
        k = len(geo[0])
        d = np.empty((1, k))
        v = np.empty((1, k))
        Y = np.asarray(y, dtype=float)[None, :]
        n13 = 13 * len(self.bodies)
        ode = np.ascontiguousarray(Y[:, n13 : n13 + self.n_ode])
        self._contact_records(Y, geo, ode, False, d, v, d)
        return d[0], v[0]

    def _rows_state(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    tuple[np.ndarray, np.ndarray]]:
        """(store rows present, delta, ddelta, (a, b)) of the active contacts at ``y`` (cached
        for the same state and rows: a recorder asks for energy and contacts of one state)."""
        c = self._rs_cache
        if c is not None and c[0] is y and c[1] is self.store.keys and np.array_equal(c[2], y):
            return c[3]
        out = self._rows_state_eval(y)
        self._rs_cache = (y, self.store.keys, y.copy(), out)
        return out

    _rs_cache: tuple | None = None

    def _rows_state_eval(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         tuple[np.ndarray, np.ndarray]]:
        s = self.store
        geo = self._row_pairs()
        if geo is not None:
            d, v = self._delta_at(y, geo)
            body = self._sbody.astype(np.int64, copy=False)
            return np.arange(len(s)), d, v, (body[geo[0]], body[geo[1]])
        kb = self.model.detect_pairs(self.state_from_y(y), s.keys, self.margin)
        return s.rows(kb), kb.delta, kb.ddelta, (kb.a, kb.b)

    def stiffness_rate(self, y: np.ndarray) -> float:
        """The fastest linearised contact rate (1/s) at ``y``: max over the active contacts of
        sqrt(k/m) + c/m, with the local stiffness k and damping c of the law (0 if none)."""
        s = self.store
        if not len(s):
            return 0.0
        rows, d, v, _ = self._rows_state(y)
        if not len(rows):
            return 0.0
        ode = self._ode_of(y)
        m_eff = s.m_eff[rows]
        rate = 0.0
        for law, sel, _, coef, state in self._by_law(rows, ode):
            k, c = law_slopes_batch(law, d[sel], v[sel], coef, state)
            m = m_eff[sel]
            r = np.sqrt(np.maximum(k, 0.0) / m) + np.maximum(c, 0.0) / m
            r = r[np.isfinite(r)]
            if len(r):
                rate = max(rate, float(r.max()))
        return rate

    def stable_step(self, y: np.ndarray, method: str) -> tuple[float, dict[str, float]]:
        """The largest stable fixed step (s) over the active contacts at ``y`` and what sets it.

        Local stiffness and damping by central differences of the law force in delta and ddelta
        (:func:`mbplugin.pipeline.stiffness.law_slopes_force_batch`, with the applied force).
        """
        s = self.store
        rows, d, v, ab = self._rows_state(y)
        if not len(rows):
            return float("inf"), {}
        ode = self._ode_of(y)
        m_eff = s.m_eff[rows]
        k = np.zeros(len(rows))
        c = np.zeros(len(rows))
        fn = np.zeros(len(rows))
        for law, sel, _, coef, state in self._by_law(rows, ode):
            k[sel], c[sel], fn[sel] = law_slopes_force_batch(law, d[sel], v[sel], coef, state)
        h = stable_step(k, c, m_eff, method)
        if self._has_friction:
            li = s.law[rows]
            ct = friction_stiffness(fn, self._mu_s[li], self._v_eps[li], self._visc[li])
            h = np.minimum(h, friction_step(ct, m_eff, method))
        i = int(np.argmin(h))
        w = float(np.sqrt(max(k[i], 0.0) / m_eff[i]))
        info = {"k": float(k[i]), "c": float(c[i]), "m_eff": float(m_eff[i]),
                "omega": w, "a": int(ab[0][i]), "b": int(ab[1][i])}
        return float(h[i]), info


def _nudge_touching(batch: ContactBatch, at_rest: bool = False) -> ContactBatch:
    """Pairs touching exactly (delta == 0) while approaching (``at_rest``: or at rest,
    ddelta == 0) get the smallest positive delta, so that the store (which starts contacts at
    delta > 0) books their onset now."""
    if len(batch):
        touching = (batch.delta == 0.0) & ((batch.ddelta >= 0.0) if at_rest
                                           else (batch.ddelta > 0.0))
        if touching.any():
            batch.delta = np.where(touching, np.nextafter(0.0, 1.0), batch.delta)
    return batch
