"""ContactStore: persistent contacts, onset/separation events and per-contact law state.

The store sits between the detection layer (which produces a fresh :class:`ContactBatch` at every
evaluation of the bodies' state) and the force laws (which need values latched at contact onset
and per-contact state that lives as long as the contact). It matches the contacts of a batch to
the ones it already knows by their stable ``key`` and keeps, for every *active* contact, one row:

``keys`` (M,)             the contact keys, sorted ascending (row order of every array below)
``law`` (M,)              index of the contact's law in :attr:`ContactStore.laws`
``a``, ``b`` (M,)         body indices (-1 = static world)
``coef`` (M, NC_MAX)      the law's coefficient row from ``law.coefficients(v_in, m_eff, r_eff)``
                          computed once at onset (zero padded)
``ode`` (M, NODE_MAX)     the law's ODE states (``law.state_names``, zero padded); the engine
                          integrates them and hands them back to :meth:`ContactStore.commit`
``mem`` (M, NMEM_MAX)     the law's memory values (``law.memory_names``), updated at commit
``v_in``, ``m_eff``, ``r_eff``, ``t_on`` (M,)   the values latched at onset
``k_on`` (M,)             Hertz's stiffness baked into the row at onset (NaN: the law's own k)
``t_c`` (M,)              the contact time scale at onset: ``law.timescale(m_eff, v)`` with
                          v = max(v_in, 1 mm/s) and the row's stiffness (inf where unknown)

Engine protocol (one accepted step from t0 to t1)::

    store = model.make_store()            # or ContactStore([law_0, law_1, ...])
    batch0 = model.detect(bodies0)
    store.begin(batch0, t0)               # onsets of contacts present at t0
    y_ode = store.ode.copy()              # (M, NODE_MAX), row order = store.keys
    # ... every stage of the integrator, at a trial state:
    batch = model.detect(bodies)
    f = store.forces(batch, y_ode_stage)  # (N,) clipped normal force, aligned with batch
    dy = store.state_rates(batch, y_ode_stage)   # (M, NODE_MAX), aligned with store rows
    # ... after the step is accepted:
    batch1 = model.detect(bodies1)
    store.commit(batch1, t1, y_ode_new)   # memory, separations, onsets; rows may change
    y_ode = store.ode.copy()              # re-read: rows were added/removed/reordered

Rules applied by :meth:`ContactStore.commit` (and :meth:`ContactStore.begin`), each evaluated
by the compiled functions of :mod:`mbplugin.pipeline.rules` (written once, shared with the
engine's event functions and the impact analyser):

* **Onset.** A contact whose key is not known, with ``delta > 0``, starts: its law's
  coefficients are computed from ``v_in = max(ddelta, 0)`` (laws that divide by the impact speed
  floor it themselves, e.g. the Hunt-Crossley family's ``v_min``), ``m_eff`` and ``r_eff`` of the
  batch; its state starts at ``law.initial_state`` (zero for the built-in laws): *a new contact
  starts clean*. Laws assigned without a stiffness (:class:`PairLaw` with ``hertz_k=True``) get
  the batch's Hertz stiffness ``k_hertz`` baked into their coefficient row.
* **Memory.** ``law.update_memory`` runs on every active contact present in the batch.
* **End of contact** (by ``law.contact_mode``; Milehins & Marghitu 2026, Eq. 17): for
  ``MODE_CLIP`` and ``MODE_RAW`` the first commit where the raw force is <= 0 while the bodies
  recede (``ddelta <= 0``); for ``MODE_TENSION`` where ``delta <= 0`` while receding. A known key
  that is missing from the batch has lost geometric contact and ends too. Its row is dropped.
* **Separated latch** (spec ``bouc-wen-collision-laws.md`` section 10, items 5-6). A contact that
  ends with a residual overlap ``delta_sep > 0`` (hysteretic laws; a Kelvin-Voigt dashpot that
  lets go early) is latched "separated": while latched it gets no force and no onset, until the
  gap opens (``delta <= 0`` or the pair is no longer reported), or the bodies come back and press
  deeper than the separation overlap (``delta > delta_sep`` while approaching), which fires a new
  onset.

Between commits the row set is frozen: :meth:`ContactStore.forces` evaluates known contacts with
their stored coefficients and the given ODE states; a contact the integrator meets inside a step
that the store does not know yet gets a *provisional* force (coefficients from the current
``ddelta``, initial state) and becomes a real contact at the next commit.

Events. Every commit appends onset and separation records (structured arrays of
:data:`EVENT_DTYPE`: time, key, bodies, law, speed, delta); :attr:`ContactStore.onsets`,
:attr:`ContactStore.separations` hold all of them, :attr:`ContactStore.last_onsets` /
:attr:`ContactStore.last_separations` those of the latest commit, and
:meth:`ContactStore.bounces` pairs them into one row per completed contact with Newton's
coefficient of restitution ``v_out / v_in`` of that bounce.

Laws are evaluated group by group: one vectorised call per distinct law present (a loop over
the few laws, never over contacts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.laws import kernels as law_kernels
from mbplugin.laws.base import MODE_TENSION, Law
from mbplugin.laws.kernels import NC_MAX, NMEM_MAX, NODE_MAX
from mbplugin.pipeline import rules, store_kernel
from mbplugin.pipeline.batch import ContactBatch

#: Record of one onset or separation event. ``v`` is the approach speed ``ddelta`` at onset
#: (m/s, > 0 approaching) or the separation speed ``-ddelta`` at separation (m/s, > 0 receding);
#: ``delta`` the indentation at that instant (m); ``t`` the time given to the commit (s); ``step``
#: the number of the commit (0, 1, ...) that recorded it.
EVENT_DTYPE = np.dtype(
    [("t", "f8"), ("key", "i8"), ("a", "i8"), ("b", "i8"), ("law", "i8"), ("v", "f8"),
     ("delta", "f8"), ("step", "i8")]
)

#: One completed contact: onset and separation of the same key, Newton's c_r = v_out / v_in.
BOUNCE_DTYPE = np.dtype(
    [("key", "i8"), ("a", "i8"), ("b", "i8"), ("law", "i8"), ("t_in", "f8"), ("t_out", "f8"),
     ("v_in", "f8"), ("v_out", "f8"), ("delta_out", "f8"), ("cr", "f8")]
)


def _law_exponent(law: Law) -> float | None:
    values = law.values()
    for name in ("n", "p"):
        if name in values and values[name] is not None:
            return float(np.asarray(values[name]).flat[0])
    return None


@dataclass(frozen=True)
class PairLaw:
    """A law assigned to contacts, with or without its own stiffness.

    ``hertz_k=True`` means the user gave no ``k``: at onset each contact's coefficient row is
    computed with ``k`` = the batch's ``k_hertz`` (4/3 E* sqrt(r_eff), Hertz 1881; Corral et al.
    2021, Eqs. 5.3-5.5). Only laws with a Hertz exponent of 1.5 accept that. ``law`` then holds a
    placeholder ``k`` that is never used for the force.
    """

    law: Law
    hertz_k: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.law, Law):
            raise ParameterError(f"PairLaw: {self.law!r} is not an mbplugin law instance")
        if getattr(self.law, "size", 1) != 1:
            raise ParameterError(
                f"{self.law.name}: a law assigned to contacts must have scalar parameters "
                "(array-valued parameters are for batch studies)"
            )
        if self.law.n_coef > NC_MAX or self.law.n_state > NODE_MAX or self.law.n_memory > NMEM_MAX:
            raise ParameterError(
                f"{self.law.name}: at most {NC_MAX} coefficients, {NODE_MAX} ODE states and "
                f"{NMEM_MAX} memory values per contact"
            )
        if self.hertz_k:
            if "k" not in self.law.values():
                raise ParameterError(
                    f"{self.law.name}: has no stiffness parameter 'k'; Hertz k cannot be used"
                )
            expo = _law_exponent(self.law)
            if expo is not None and expo != 1.5:
                raise ParameterError(
                    f"{self.law.name}: Hertz stiffness from materials needs the exponent 1.5, "
                    f"got {expo:g}; give 'k' explicitly"
                )
            if expo is None and "1.5" not in next(
                (p.unit for p in self.law.params if p.name == "k"), ""
            ):
                raise ParameterError(
                    f"{self.law.name}: its stiffness is not a Hertz (N/m^1.5) stiffness; give 'k'"
                )


@dataclass
class AlignedContacts:
    """Store rows seen from a batch: everything aligned with the batch's N contacts.

    ``rows`` (N,) store row of each contact or -1 (not active); ``active`` (N,) bool;
    ``law`` (N,) law index (the store's for active contacts, the batch's otherwise);
    ``coef`` (N, NC_MAX) and ``ode`` (N, NODE_MAX), ``mem`` (N, NMEM_MAX): zeros where not active.
    """

    rows: np.ndarray
    active: np.ndarray
    law: np.ndarray
    coef: np.ndarray
    ode: np.ndarray
    mem: np.ndarray


def _empty_events() -> np.ndarray:
    return np.zeros(0, dtype=EVENT_DTYPE)


#: the events of a booking without any (one shared empty array: a robot's every host step
#: books none, and a new structured array costs ~0.6 us; nothing appends to an event array)
_NO_EVENTS = _empty_events()


class ContactStore:
    """Persistent contacts with per-contact law coefficients and state (see the module docs).

    ``laws``: one law (used for every contact) or a sequence of :class:`~mbplugin.laws.Law` /
    :class:`PairLaw`; a batch's ``law`` field indexes this sequence.
    """

    def __init__(self, laws: Law | PairLaw | Sequence[Law | PairLaw]) -> None:
        if isinstance(laws, Law | PairLaw):
            laws = [laws]
        entries = [x if isinstance(x, PairLaw) else PairLaw(x) for x in laws]
        if not entries:
            raise ParameterError("ContactStore needs at least one law")
        self.pair_laws: tuple[PairLaw, ...] = tuple(entries)
        self.laws: tuple[Law, ...] = tuple(e.law for e in entries)
        self._n_state = np.array([law.n_state for law in self.laws])
        self._n_mem = np.array([law.n_memory for law in self.laws])
        self._hertz_laws: dict[tuple[int, float], Law] = {}  # (pair law, Hertz k) -> law
        self.reset()

    # -- state ------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every contact, latch and event."""
        self.keys = np.zeros(0, dtype=np.int64)
        self.law = np.zeros(0, dtype=np.int64)
        self.a = np.zeros(0, dtype=np.int64)
        self.b = np.zeros(0, dtype=np.int64)
        self.coef = np.zeros((0, NC_MAX))
        self.ode = np.zeros((0, NODE_MAX))
        self.mem = np.zeros((0, NMEM_MAX))
        self.v_in = np.zeros(0)
        self.m_eff = np.zeros(0)
        self.r_eff = np.zeros(0)
        self.t_on = np.zeros(0)
        self.k_on = np.zeros(0)
        self.t_c = np.zeros(0)
        self._delta_last = np.zeros(0)
        self._ddelta_last = np.zeros(0)
        # separated latch: sorted keys and the overlap at separation
        self.latched_keys = np.zeros(0, dtype=np.int64)
        self.latched_delta = np.zeros(0)
        self._onsets: list[np.ndarray] = []
        self._separations: list[np.ndarray] = []
        self.last_onsets = _empty_events()
        self.last_separations = _empty_events()
        self._seq = 0

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @property
    def ode_mask(self) -> np.ndarray:
        """(M, NODE_MAX) bool: which ODE slots of each row are real states of its law."""
        return np.arange(NODE_MAX)[None, :] < self._n_state[self.law][:, None]

    @property
    def onsets(self) -> np.ndarray:
        """All onset events so far (structured array of :data:`EVENT_DTYPE`)."""
        return np.concatenate(self._onsets) if self._onsets else _empty_events()

    @property
    def separations(self) -> np.ndarray:
        """All separation events so far (structured array of :data:`EVENT_DTYPE`)."""
        return np.concatenate(self._separations) if self._separations else _empty_events()

    # -- matching ---------------------------------------------------------------------------------
    def rows(self, batch: ContactBatch) -> np.ndarray:
        """The store row of each contact of ``batch`` (N,), -1 where the key is not active."""
        return _lookup(self.keys, batch.key)

    def latched(self, batch: ContactBatch) -> np.ndarray:
        """(N,) bool: contacts of ``batch`` whose key is latched "separated"."""
        return _lookup(self.latched_keys, batch.key) >= 0

    def latched_overlap(self, batch: ContactBatch) -> np.ndarray:
        """(N,) the separation overlap d_sep (m) of the contacts of ``batch`` that are latched
        "separated" (the overlap a new onset must exceed), NaN for the others."""
        i = _lookup(self.latched_keys, batch.key)
        if not len(self.latched_keys):
            return np.full(i.shape, np.nan)
        return np.where(i >= 0, self.latched_delta[np.maximum(i, 0)], np.nan)

    def _same_keys(self, batch: ContactBatch) -> bool:
        """Whether the keys of ``batch`` are exactly the store's rows, in the same order."""
        k = batch.key
        return k.shape[0] == self.keys.shape[0] and bool((k == self.keys).all())

    def aligned(self, batch: ContactBatch, copy: bool = True) -> AlignedContacts:
        """Coefficients and state of the store's contacts, aligned with ``batch``.

        ``copy=False``: when the batch's keys are the store's rows in order, ``law``,
        ``coef`` and ``mem`` may be the store's own arrays (for a caller that only reads
        them; ``ode`` is always the caller's own)."""
        if self._same_keys(batch):
            # the batch's contacts are the store's rows in the same order (the common case of
            # a host step): no key search, contiguous copies instead of gathers
            n = len(batch)
            if not copy:
                return AlignedContacts(np.arange(n), np.ones(n, dtype=bool), self.law,
                                       self.coef, self.ode.copy(), self.mem)
            return AlignedContacts(np.arange(n), np.ones(n, dtype=bool), self.law.copy(),
                                   self.coef.copy(), self.ode.copy(), self.mem.copy())
        rows = self.rows(batch)
        act = rows >= 0
        if not len(self):
            n = len(batch)
            return AlignedContacts(rows, act, np.asarray(batch.law, dtype=np.int64).copy(),
                                   np.zeros((n, NC_MAX)), np.zeros((n, NODE_MAX)),
                                   np.zeros((n, NMEM_MAX)))
        r = np.maximum(rows, 0)
        law = np.where(act, self.law[r], batch.law)
        coef, ode, mem = self.coef[r], self.ode[r], self.mem[r]
        if not act.all():
            coef[~act] = 0.0
            ode[~act] = 0.0
            mem[~act] = 0.0
        return AlignedContacts(rows, act, law, coef, ode, mem)

    # -- evaluation between commits ---------------------------------------------------------------
    def forces(
        self, batch: ContactBatch, ode: np.ndarray | None = None, raw: bool = False
    ) -> np.ndarray:
        """Normal force magnitudes (N,) of the contacts of ``batch`` (N, > 0 repulsive).

        ``ode`` (M, NODE_MAX) are the ODE states of the store's rows at this trial state (default:
        the stored ones; (M, w) with the laws' most states <= w <= NODE_MAX is accepted too).
        The force is clipped per law (``law.force``) unless ``raw=True`` (``law.force_raw``, for
        event location). Latched ("separated") contacts and contacts with
        ``delta <= 0`` the store does not know give 0; contacts with ``delta > 0`` it does not
        know yet give a provisional onset force (see the module docstring).
        """
        self._check_batch(batch, unique=False)
        ode_src = self._ode_arg(ode)
        n = len(batch)
        out = np.zeros(n)
        rows = self.rows(batch)
        known = rows >= 0
        all_known = bool(known.all())
        if all_known or known.any():
            idx = np.arange(n) if all_known else np.flatnonzero(known)
            r = rows if all_known else rows[idx]
            for li, sel in self._groups(self.law[r]):
                law = self.laws[li]
                ii, rr = (idx, r) if sel is None else (idx[sel], r[sel])
                state = self._state_of(li, ode_src, rr)
                c = self.coef[rr, : law.n_coef]
                fn = law.force_raw if raw else law.force
                out[ii] = fn(batch.delta[ii], batch.ddelta[ii], c, state)
        if all_known:
            return out
        new = ~known & rules.starts_batch(batch.delta) & ~self.latched(batch)
        if new.any():
            idx = np.flatnonzero(new)
            for li in np.unique(batch.law[idx]):
                ii = idx[batch.law[idx] == li]
                law = self.laws[li]
                coef = self._onset_coef(li, batch, ii)
                state = law.initial_state(coef)
                fn = law.force_raw if raw else law.force
                out[ii] = fn(batch.delta[ii], batch.ddelta[ii], coef, state)
        return out

    def state_rates(self, batch: ContactBatch, ode: np.ndarray | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
        """Time derivatives (M, NODE_MAX) of the ODE states of the store's rows.

        Aligned with the store rows (``store.keys``), not with the batch. Rows whose key is not in
        ``batch`` (geometric contact lost inside the step) and unused slots get 0. ``out``: an
        (M, w) array (w between the laws' most states and NODE_MAX, e.g. a view of an
        integrator's state derivative) to write them into and return instead.
        """
        self._check_batch(batch, unique=False)
        ode_src = self._ode_arg(ode)
        if out is None:
            out = np.zeros((len(self), NODE_MAX))
        else:
            self._ode_arg(out)
            out[...] = 0.0
        if not len(self) or not self._n_state.any():
            return out
        pos = _find(batch.key, self.keys)  # batch index of each store row
        present = pos >= 0
        for li in np.unique(self.law[present]):
            law = self.laws[li]
            if law.n_state == 0:
                continue
            rr = np.flatnonzero(present & (self.law == li))
            ii = pos[rr]
            state = self._state_of(li, ode_src, rr)
            c = self.coef[rr, : law.n_coef]
            out[rr, : law.n_state] = law.state_rate(batch.delta[ii], batch.ddelta[ii], c, state)
        return out

    # -- bookkeeping at accepted states -----------------------------------------------------------
    def begin(self, batch: ContactBatch, t: float) -> AlignedContacts:
        """Register the contacts of a state (onsets, latches, ends) without a memory update.

        Use it for the initial state of a simulation (or after moving bodies by hand). Returns the
        store's rows aligned with ``batch``.
        """
        return self.commit(batch, t, None, update_memory=False)

    def commit(
        self,
        batch: ContactBatch,
        t: float,
        ode: np.ndarray | None = None,
        update_memory: bool = True,
        aligned: bool = True,
        compiled: bool = False,
    ) -> AlignedContacts | None:
        """Book an accepted state: ODE states, memory, separations, latches and onsets.

        ``batch`` is the detection at the accepted state (time ``t``, s: a float, or one time
        per contact of the batch (N,) for its onset/separation records) and ``ode``
        (M, NODE_MAX) the integrated ODE states of the store's rows as they were before this call
        (default: unchanged). After the call the rows may have changed: re-read :attr:`ode`.
        Returns the new rows aligned with ``batch`` (None with ``aligned=False``).
        ``compiled``: the end-of-contact test of the common case (the batch's keys are the
        rows, one stateless law with a compiled kernel) in one compiled call
        (:mod:`mbplugin.pipeline.store_kernel`: the same rule and force, the same result).
        """
        if (compiled and ode is None and type(t) is float
                and self.commit_same(batch, batch.delta, batch.ddelta, t)):
            return self.aligned(batch) if aligned else None
        # the common case of a driver's consecutive commits: the batch's keys are the store's
        # rows in the same order (nothing gone, nothing new, row i = contact i; sorted and
        # unique as the rows are)
        same = self._same_keys(batch)
        inc = self._check_batch(batch, unique=not same) or same
        if ode is not None:
            arr = self._ode_arg(ode)
            self.ode = np.zeros((len(self), NODE_MAX))
            self.ode[:, : arr.shape[1]] = arr
        if not isinstance(t, float) and np.ndim(t):
            # one time per contact of the batch (a driver that integrates groups of contacts
            # separately books each at its own instant); keys no longer reported get the latest
            t_of = np.asarray(t, dtype=float)
            if t_of.shape != (len(batch),):
                t_of = np.broadcast_to(t_of, (len(batch),))
            t = float(t_of.max()) if len(t_of) else 0.0
        else:
            t = float(t)
            t_of = None
        delta = batch.delta
        ddelta = batch.ddelta

        # 1. keys known before this commit that are no longer reported: geometric contact lost
        sep_chunks: list[np.ndarray] = []
        if not same:
            gone = _find(batch.key, self.keys, inc) < 0
            if gone.any():
                sep_chunks.append(
                    self._events(t, self.keys[gone], self.a[gone], self.b[gone], self.law[gone],
                                 -self._ddelta_last[gone], self._delta_last[gone])
                )
                self._keep_rows(~gone)

        # 2. separated latches: released when the gap opens or the bodies press deeper
        is_lat = None
        if len(self.latched_keys):
            lat = _lookup(self.latched_keys, batch.key)
            is_lat = lat >= 0
            keep = np.zeros(len(self.latched_keys), dtype=bool)
            ii = np.flatnonzero(is_lat)
            li = lat[ii]
            still = rules.latch_holds_batch(delta[ii], ddelta[ii], self.latched_delta[li])
            keep[li[still]] = True
            self.latched_keys = self.latched_keys[keep]
            self.latched_delta = self.latched_delta[keep]
            is_lat = _lookup(self.latched_keys, batch.key) >= 0

        # 3. onsets: unknown, touching, not latched (none when every key is a row)
        on_chunk = _empty_events()
        if not same:
            rows = self.rows(batch)
            new = (rows < 0) & rules.starts_batch(delta)
            if is_lat is not None:
                new &= ~is_lat
            if new.any():
                idx_new = np.flatnonzero(new)
                on_chunk = self._onset(batch, idx_new, t if t_of is None else t_of[idx_new])
                rows = self.rows(batch)
            same = self._same_keys(batch)

        # 4. memory update and end-of-contact test on every active row (all present now)
        fast = self._fast_law() if compiled and same else None
        if fast is not None:  # one stateless compiled law: the end test in one call
            end_rows = store_kernel.ends_rows(fast[0], fast[1], delta, ddelta, self.coef)
            self._delta_last = delta.copy()
            self._ddelta_last = ddelta.copy()
        elif same:
            end_rows = self._memory_and_ends(batch, None, None, update_memory)
            self._delta_last = delta.copy()
            self._ddelta_last = ddelta.copy()
        else:
            present = rows >= 0
            end_rows = np.zeros(len(self), dtype=bool)
            if present.any():
                idx = np.flatnonzero(present)
                fast = self._fast_law() if compiled else None
                if fast is not None:  # the end test of the rows present in one call
                    r = rows[idx]
                    ends = store_kernel.ends_rows(fast[0], fast[1], delta[idx], ddelta[idx],
                                                  self.coef[r])
                    end_rows[r[ends]] = True
                else:
                    end_rows = self._memory_and_ends(batch, idx, rows[idx], update_memory)
                where = _find(batch.key, self.keys, inc)
                self._delta_last = delta[where].copy()
                self._ddelta_last = ddelta[where].copy()

        if end_rows.any():
            bi = _find(batch.key, self.keys[end_rows], inc)
            sep_chunks.append(self._end_rows(t if t_of is None else t_of[bi], end_rows,
                                             delta[bi], ddelta[bi]))
        self._close(on_chunk, sep_chunks)
        return self.aligned(batch) if aligned else None

    def commit_same(self, batch: ContactBatch, delta: np.ndarray, ddelta: np.ndarray,
                    t: float) -> bool:
        """:meth:`commit` of ``batch`` with overlaps ``delta`` (K,) m and rates ``ddelta`` (K,)
        m/s (> 0 approaching) at time ``t`` (s) in its common compiled case: the batch's keys
        are the store's rows in the same order, no separated latch, one stateless law with a
        compiled kernel (the end-of-contact test in one call: :meth:`commit` with
        ``compiled=True``, the same steps and result). Returns False, nothing changed, where
        that case does not hold (then call :meth:`commit`). No trial batch is built: e.g.
        :meth:`ImplicitStep.finish <mbplugin.pipeline.implicit.ImplicitStep.finish>` books
        its end state (K, m/s) this way."""
        if len(self.latched_keys) or not self._same_keys(batch):
            return False
        fast = self._fast_law()
        if fast is None:
            return False
        self._check_batch(batch, unique=False)  # the law indices (the error of commit)
        end_rows = store_kernel.ends_rows(fast[0], fast[1], delta, ddelta, self.coef)
        self._delta_last = delta.copy()
        self._ddelta_last = ddelta.copy()
        sep_chunks: list[np.ndarray] = []
        if end_rows.any():
            bi = _find(batch.key, self.keys[end_rows], True)
            sep_chunks.append(self._end_rows(t, end_rows, delta[bi], ddelta[bi]))
        self._close(_empty_events(), sep_chunks)
        return True

    def commit_rows(self, batch: ContactBatch, delta: np.ndarray, ddelta: np.ndarray,
                    t: float) -> bool:
        """:meth:`commit_same` (the same arguments, result and return value) with its tests
        in one compiled call (:func:`mbplugin.pipeline.store_kernel.same_rows`: the keys are
        the store's rows in order, the law indices valid, no row ends) where it holds; else
        :meth:`commit_same` itself (which also books the rows that end, or raises)."""
        if len(self.latched_keys):
            return False
        fast = self._fast_law()
        if fast is None:
            return False
        keys, bk, law = self.keys, batch.key, batch.law
        c = np.ascontiguousarray
        if not (keys.dtype == bk.dtype == law.dtype == np.int64 and len(self.laws) == 1):
            return self.commit_same(batch, delta, ddelta, t)
        end = np.empty(len(keys), dtype=np.bool_)
        hit = store_kernel.same_rows(keys, bk, law, fast[0], fast[1], c(delta, dtype=float),
                                     c(ddelta, dtype=float), c(self.coef, dtype=float), end)
        if hit < 0 and self._commit_apart(batch, delta, ddelta, t, fast):
            return True
        if hit:
            return self.commit_same(batch, delta, ddelta, t)  # a row ends, or not the case
        self._delta_last = delta.copy()
        self._ddelta_last = ddelta.copy()
        self._close_quiet()
        return True

    def rows_test_args(self, batch: ContactBatch) -> tuple | None:
        """The arguments of :func:`store_kernel.same_rows` before the overlaps (the store's
        keys, the batch's keys and law indices, the law's kernel id and contact mode) where
        :meth:`commit_rows` would take its compiled test (no latch, one compiled stateless
        law, int64 keys and law indices), for a caller that runs that test inside its own
        compiled call and books a quiet result with :meth:`rows_booked`; else None (call
        :meth:`commit_rows`)."""
        if len(self.latched_keys) or len(self.laws) != 1:
            return None
        fast = self._fast_law()
        keys, bk, law = self.keys, batch.key, batch.law
        if fast is None or not (keys.dtype == bk.dtype == law.dtype == np.int64):
            return None
        return keys, bk, law, fast[0], fast[1]

    def rows_booked(self, delta: np.ndarray, ddelta: np.ndarray) -> None:
        """:meth:`commit_rows`' booking where its test (run by the caller with
        :meth:`rows_test_args`) found the batch's keys the store's rows in order and no row
        ending: copies of the overlaps ``delta`` (K,) m and rates ``ddelta`` (K,) m/s kept, no
        event (the same state as :meth:`commit_rows`)."""
        self._delta_last = delta.copy()
        self._ddelta_last = ddelta.copy()
        self._close_quiet()

    def _commit_apart(self, batch: ContactBatch, delta: np.ndarray, ddelta: np.ndarray,
                      t: float, fast: tuple[int, int]) -> bool:
        """:meth:`commit` (``compiled``) of a batch that holds the store's rows in order and
        besides them only pairs apart (no onset: :func:`store_kernel.superset_rows`, keys
        strictly increasing, law indices 0), at overlaps ``delta`` (K,) m and rates
        ``ddelta`` (K,) m/s, time ``t`` (s): the general commit's steps for that case (no row
        gone, no latch, no onset; the compiled end test of the rows present, in row order)
        without its key searches. Returns False, nothing changed, where the case does not
        hold."""
        where = np.empty(len(self.keys), dtype=np.int64)
        d = np.ascontiguousarray(delta, dtype=float)
        if not store_kernel.superset_rows(self.keys, batch.key, batch.law, d, where):
            return False
        d_rows, v_rows = delta[where], ddelta[where]
        end_rows = store_kernel.ends_rows(fast[0], fast[1], d_rows, v_rows, self.coef)
        if not end_rows.any():
            self.apart_booked(d_rows, v_rows)
            return True
        self._delta_last = d_rows.copy()
        self._ddelta_last = v_rows.copy()
        sep_chunks = [self._end_rows(t, end_rows, d_rows[end_rows], v_rows[end_rows])]
        self._close(_empty_events(), sep_chunks)
        return True

    def apart_booked(self, d_rows: np.ndarray, v_rows: np.ndarray) -> None:
        """:meth:`_commit_apart`'s booking where no row ends (a caller may run its tests in
        its own compiled call: :func:`store_kernel.superset_rows` and the end test of the
        rows' overlaps ``d_rows`` (M,) m and rates ``v_rows`` (M,) m/s, the store's rows in
        order): copies of them kept, no event."""
        self._delta_last = d_rows.copy()
        self._ddelta_last = v_rows.copy()
        self._close(_empty_events(), [])

    def _fast_law(self) -> tuple[int, int] | None:
        """(kernel id, contact mode) of the store's one law when it has a compiled kernel, no
        ODE state, no memory and is not a tension law (:meth:`commit`'s compiled end test);
        None otherwise."""
        hit = self.__dict__.get("_fast")
        if hit is not None and hit[0] is self.laws:
            return hit[1]
        law = self.laws[0]
        fast = None
        if not (len(self.laws) != 1 or law.kernel is None
                or type(law).force_raw is not Law.force_raw or law.n_state or law.n_memory
                or law.contact_mode == MODE_TENSION):
            fast = (int(law.kernel), int(law.contact_mode))
        self._fast = (self.laws, fast)
        return fast

    def _memory_and_ends(self, batch: ContactBatch, idx: np.ndarray | None,
                         r: np.ndarray | None, update_memory: bool) -> np.ndarray:
        """Memory update (with ``update_memory``) and end-of-contact test of the rows ``r``,
        present in ``batch`` as its contacts ``idx`` (both None: every row, row i = contact
        i); returns the ended rows as a mask over the store's rows."""
        delta, ddelta = batch.delta, batch.ddelta
        end_rows = np.zeros(len(self), dtype=bool)
        every = r is None
        for li, sel in self._groups(self.law if every else self.law[r]):
            law = self.laws[li]
            if every:
                ii = rr = None if sel is None else np.flatnonzero(sel)
            else:
                ii, rr = (idx, r) if sel is None else (idx[sel], r[sel])
            d = delta if ii is None else delta[ii]
            v = ddelta if ii is None else ddelta[ii]
            state = c = None
            if update_memory and law.n_memory:
                state = self._state_of(li, self.ode, rr)
                c = self._coef_of(law, rr)
                law.update_memory(d, v, c, state)
                if rr is None:
                    self.mem[:, : law.n_memory] = state[:, law.n_state :]
                else:
                    self.mem[rr, : law.n_memory] = state[:, law.n_state :]
            # the end test (rules.ended) needs the raw force only where the bodies recede
            # (ddelta <= 0): it is False wherever ddelta > 0 (or NaN), whatever the force
            recede = v <= 0
            if not recede.any():
                continue
            sub: np.ndarray | slice = slice(None)
            m = len(v)
            if not (ii is None and state is None and law.kernel is not None
                    and type(law).force_raw is Law.force_raw):
                sub = np.flatnonzero(recede)
                m = len(sub)
                if m == len(v):  # every contact recedes: no selection
                    sub = slice(None)
            # (else every row of a compiled law: its raw force for all of them in one call,
            # unused where the bodies approach, the test False there: no selection)
            rs = rr if isinstance(sub, slice) else (sub if rr is None else rr[sub])
            ds = np.ascontiguousarray(d[sub], dtype=float)
            vs = np.ascontiguousarray(v[sub], dtype=float)
            if law.contact_mode == MODE_TENSION:
                f = np.zeros(m)
            elif state is not None:  # the state and rows the memory update used
                f = law.force_raw(ds, vs, c[sub], state[sub])
            elif law.kernel is not None and type(law).force_raw is Law.force_raw:
                # Law.force_raw's kernel on arrays already in its input form (contiguous
                # float rows of the law's widths)
                f = law_kernels.force_raw_batch(law.kernel, ds, vs, self._coef_of(law, rs),
                                                self._state_of(li, self.ode, rs), law.n_state,
                                                law.n_memory)
            else:
                f = law.force_raw(ds, vs, self._coef_of(law, rs), self._state_of(li, self.ode, rs))
            mode = np.full(m, law.contact_mode, dtype=np.int64)
            ends = rules.ended_batch(mode, ds, vs, np.asarray(f, dtype=float))
            if rs is None:
                end_rows |= ends
            else:
                end_rows[rs[ends]] = True
        return end_rows

    def _coef_of(self, law: Law, rr: np.ndarray | None) -> np.ndarray:
        """The coefficient rows (len(rr), n_coef) of ``law`` at the store rows ``rr`` (None:
        every row)."""
        if rr is None:
            return np.ascontiguousarray(self.coef[:, : law.n_coef])
        return self.coef[rr, : law.n_coef]

    def _state_of(self, li: int, ode: np.ndarray, rr: np.ndarray | None) -> np.ndarray:
        """The state array (len(rr), n_state + n_memory) of law ``li`` at the rows ``rr`` (None:
        every row) from the ODE states ``ode`` (M, >= n_state) and the stored memory."""
        ns, nm = int(self._n_state[li]), int(self._n_mem[li])
        n = ode.shape[0] if rr is None else len(rr)
        if ns + nm == 0:
            return np.empty((n, 0))
        o = ode[:, :ns] if rr is None else ode[rr, :ns]
        m = self.mem[:, :nm] if rr is None else self.mem[rr, :nm]
        return np.ascontiguousarray(np.concatenate([o, m], axis=1))

    def start(self, batch: ContactBatch, t: float, coef: np.ndarray | None = None,
              t_c: np.ndarray | None = None) -> None:
        """Book the onset of the contacts of ``batch``, found by a driver that located the
        onset itself (e.g. a compiled engine segment, at the first overlap of a watched pair)
        at time ``t`` (s): what :meth:`commit` does for new contacts (coefficient rows and
        values latched at onset, onset events, the memory update and the end-of-contact test
        of the new rows), with no other change. Every contact of ``batch`` must be new: not
        active, not latched, overlapping (``delta > 0``). ``coef`` (N, <= NC_MAX) and ``t_c``
        (N,): the coefficient rows and contact time scales, when the driver computed them
        with the laws' compiled onset (``Law.onset_rule``, ``Law.timescale_rule``); one law
        for the whole batch then."""
        self._check_batch(batch)
        if len(self) and (self.rows(batch) >= 0).any():
            raise ParameterError("start: a contact of the batch is already active (use commit)")
        if len(self.latched_keys) and self.latched(batch).any():
            raise ParameterError("start: a contact of the batch is latched (use commit)")
        if not rules.starts_batch(batch.delta).all():
            raise ParameterError("start: every contact must overlap (delta > 0); use commit")
        t = float(t)
        on_chunk = self._onset(batch, np.arange(len(batch)), t, coef, t_c)
        rows = self.rows(batch)
        end_rows = self._memory_and_ends(batch, np.arange(len(batch)), rows, True)
        sep_chunks = []
        if end_rows.any():
            bi = _find(batch.key, self.keys[end_rows])
            sep_chunks.append(self._end_rows(t, end_rows, batch.delta[bi], batch.ddelta[bi]))
        self._close(on_chunk, sep_chunks)

    def start_new(self, batch: ContactBatch, idx: np.ndarray, delta: np.ndarray,
                  ddelta: np.ndarray, t: float, coef: np.ndarray, t_c: np.ndarray) -> None:
        """:meth:`start` of the contacts ``idx`` (indices) of ``batch`` with their onset
        overlaps ``delta`` (m) and rates ``ddelta`` (m/s) (len(idx),) at time ``t`` (s), the
        coefficient rows ``coef`` and time scales ``t_c`` (s) given (one law), for a driver
        that found them new itself (a compiled step's onsets: neither active nor latched,
        e.g. :func:`mbplugin.mujoco.tree_step.tree_fused`): the same rows and events as
        ``start`` of ``batch.take(idx)`` with that state, without the sub-batch and the
        active / latched tests (the overlap test kept)."""
        if not rules.starts_batch(delta).all():
            raise ParameterError("start_new: every contact must overlap (delta > 0)")
        on = _OnsetRows(batch.key[idx], batch.law[idx], batch.a[idx], batch.b[idx], delta,
                        ddelta, batch.m_eff[idx], batch.r_eff[idx], batch.k_hertz[idx])
        t = float(t)
        every = np.arange(len(on.key))
        on_chunk = self._onset(on, every, t, coef, t_c)  # type: ignore[arg-type]
        rows = _lookup(self.keys, on.key)
        end_rows = self._memory_and_ends(on, every, rows, True)  # type: ignore[arg-type]
        sep_chunks = []
        if end_rows.any():
            bi = _find(on.key, self.keys[end_rows])
            sep_chunks.append(self._end_rows(t, end_rows, delta[bi], ddelta[bi]))
        self._close(on_chunk, sep_chunks)

    def _close(self, on_chunk: np.ndarray, sep_chunks: list[np.ndarray]) -> None:
        """The events of one booking: latest onsets and separations, appended to all."""
        self.last_onsets = on_chunk
        self.last_separations = (
            np.concatenate(sep_chunks) if sep_chunks else _empty_events()
        )
        if len(on_chunk):
            self._onsets.append(on_chunk)
        if len(self.last_separations):
            self._separations.append(self.last_separations)
        self._seq += 1

    def _close_quiet(self) -> None:
        """:meth:`_close` of a booking without onsets or separations (the common step of
        :meth:`commit_rows`): no event array built."""
        self.last_onsets = self.last_separations = _NO_EVENTS
        self._seq += 1

    def _end_rows(self, t: float | np.ndarray, end_rows: np.ndarray, delta: np.ndarray,
                  ddelta: np.ndarray) -> np.ndarray:
        """End the contacts of the rows ``end_rows`` (bool mask) at time ``t`` with their
        overlap ``delta`` and its rate ``ddelta`` there: separation events, a latch for a
        residual overlap (delta > 0), rows removed. Returns the separation events."""
        ev = self._events(t, self.keys[end_rows], self.a[end_rows], self.b[end_rows],
                          self.law[end_rows], -ddelta, delta)
        residual = delta > 0
        if residual.any():
            lk = np.concatenate([self.latched_keys, self.keys[end_rows][residual]])
            ld = np.concatenate([self.latched_delta, delta[residual]])
            order = np.argsort(lk, kind="stable")
            self.latched_keys, self.latched_delta = lk[order], ld[order]
        self._keep_rows(~end_rows)
        return ev

    def end(self, t: float, rows: np.ndarray, delta: np.ndarray, ddelta: np.ndarray) -> None:
        """Book the end of contact of ``rows`` (indices), found by a driver that located the
        end itself (the rule of :func:`mbplugin.pipeline.rules.ended`, e.g. a compiled engine
        segment) at time ``t`` (s) with overlap ``delta`` (m) and rate ``ddelta`` (m/s) there:
        what :meth:`commit` does for those rows (separation events, latch, rows removed), with
        no other change."""
        mask = np.zeros(len(self), dtype=bool)
        mask[np.asarray(rows, dtype=np.int64)] = True
        order = np.argsort(np.asarray(rows, dtype=np.int64), kind="stable")
        d = np.asarray(delta, dtype=float)[order]
        v = np.asarray(ddelta, dtype=float)[order]
        self._close(_empty_events(), [self._end_rows(float(t), mask, d, v)])

    def bounces(self) -> np.ndarray:
        """One row per completed contact (onset then separation of the same key), in order of
        separation (``t_out``).

        A row is one contact key: for a mesh or convex body, one corner (vertex) against the
        other side, not one body. ``t_in`` (s) and ``v_in`` (m/s) are that contact's onset
        time and its own normal approach speed ``ddelta`` at the onset; ``t_out``, ``v_out`` its
        separation and separation speed. A face landing flat gives one row per face corner,
        each with the free-fall ``v_in``; corners that touch only after the body has sunk
        (e.g. the neighbouring rim corners of a prism, ``r (cos(pi/n) - cos(3 pi/n))`` higher)
        get their own later rows, with the slower speed of the body by then, and, separating
        first, come first. For the body's landing take the earliest ``t_in`` (its rows' common
        ``v_in``), not row 0.

        ``cr = v_out / v_in`` is Newton's coefficient of restitution of that bounce (review
        Corral et al. 2021, Eq. 2.2), meaningful for a collinear impact.
        """
        on, off = self.onsets, self.separations
        if not len(off):
            return np.zeros(0, dtype=BOUNCE_DTYPE)
        ev = np.concatenate([on, off])
        kind = np.concatenate([np.zeros(len(on), dtype=np.int8), np.ones(len(off), dtype=np.int8)])
        order = np.lexsort((kind, ev["step"], ev["key"]))
        ev, kind = ev[order], kind[order]
        is_off = np.flatnonzero(kind == 1)
        is_off = is_off[is_off > 0]
        ok = (kind[is_off - 1] == 0) & (ev["key"][is_off - 1] == ev["key"][is_off])
        is_off = is_off[ok]
        o, s = ev[is_off - 1], ev[is_off]
        out = np.zeros(len(is_off), dtype=BOUNCE_DTYPE)
        for name in ("key", "a", "b", "law"):
            out[name] = s[name]
        out["t_in"], out["t_out"] = o["t"], s["t"]
        out["v_in"], out["v_out"], out["delta_out"] = o["v"], s["v"], s["delta"]
        with np.errstate(divide="ignore", invalid="ignore"):
            out["cr"] = np.where(o["v"] > 0, s["v"] / o["v"], np.nan)
        return out[np.argsort(out["t_out"], kind="stable")]

    # -- internals --------------------------------------------------------------------------------
    def _events(
        self, t: float, key: np.ndarray, a: np.ndarray, b: np.ndarray, law: np.ndarray,
        v: np.ndarray, delta: np.ndarray,
    ) -> np.ndarray:
        ev = np.zeros(len(key), dtype=EVENT_DTYPE)
        ev["t"], ev["key"], ev["a"], ev["b"], ev["law"] = t, key, a, b, law
        ev["v"], ev["delta"], ev["step"] = v, delta, self._seq
        return ev

    def _groups(self, law_idx: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
        """(law index, selection mask or None for all) of the distinct laws in ``law_idx``."""
        if len(self.laws) == 1:
            return [(0, None)]
        uniq = np.unique(law_idx)
        if len(uniq) == 1:
            return [(int(uniq[0]), None)]
        return [(int(li), law_idx == li) for li in uniq]

    def _check_batch(self, batch: ContactBatch, unique: bool = True) -> bool:
        """Raise for law indices out of range (and, with ``unique``, duplicate keys); returns
        whether the keys are strictly increasing (sorted and unique; False without
        ``unique``: not checked)."""
        n = len(batch)
        nl = len(self.laws)
        if n and (bool(batch.law.any()) if nl == 1
                  else (batch.law.min() < 0 or batch.law.max() >= nl)):
            raise ParameterError(
                f"batch law index out of range: allowed [0, {nl - 1}] "
                f"for the {nl} laws of this store"
            )
        if not unique:
            return False
        k = batch.key
        inc = n < 2 or bool((k[1:] > k[:-1]).all())
        if not inc:
            k = np.sort(k)
            if np.any(k[1:] == k[:-1]):
                dup = int(k[1:][k[1:] == k[:-1]][0])
                raise ParameterError(f"batch has duplicate contact key {dup}; keys must be unique")
        return inc

    def _ode_arg(self, ode: np.ndarray | None) -> np.ndarray:
        if ode is None:
            return self.ode
        arr = np.asarray(ode, dtype=float)
        # (M, NODE_MAX), or (M, w) with the laws' most ODE states <= w <= NODE_MAX (a view of
        # an integrator's state vector: no padded copy)
        w_min = int(self._n_state.max(initial=0))
        if arr.ndim != 2 or arr.shape[0] != len(self) or not w_min <= arr.shape[1] <= NODE_MAX:
            raise ParameterError(
                f"ode has shape {arr.shape}, expected ({len(self)}, {NODE_MAX}) (or "
                f"({len(self)}, w) with {w_min} <= w <= {NODE_MAX}): one row per "
                "active contact in the order of store.keys (re-read store.ode after commit)"
            )
        return arr

    def _time_scale(self, law: Law, batch: ContactBatch, ii: np.ndarray) -> np.ndarray:
        """Contact time scales (s) of the new contacts ``ii`` whose coefficients ``law`` gave
        (with its Hertz k, if any); inf where unknown."""
        v = np.maximum(np.abs(batch.ddelta[ii]), 1e-3)
        try:
            tc = np.asarray(law.timescale(batch.m_eff[ii], v), dtype=float)
            if tc.shape != (len(ii),):
                tc = np.broadcast_to(tc, (len(ii),))
        except (KeyError, TypeError, ValueError, AttributeError, ParameterError):
            return np.full(len(ii), np.inf)
        return np.where(np.isfinite(tc) & (tc > 0), tc, np.inf)

    def _onset_coef(self, li: int, batch: ContactBatch, ii: np.ndarray) -> np.ndarray:
        """Coefficient rows (len(ii), n_coef) of the new contacts ``ii`` with law ``li``."""
        return self._onset_coef_law(li, batch, ii)[0]

    def _onset_coef_law(self, li: int, batch: ContactBatch, ii: np.ndarray
                        ) -> tuple[np.ndarray, Law]:
        """(coefficient rows, the law that computed them: with the contacts' Hertz k if the
        pair law takes it from the materials) of the new contacts ``ii`` with law ``li``."""
        entry = self.pair_laws[li]
        law = entry.law
        v_in = rules.onset_speed_batch(np.ascontiguousarray(batch.ddelta[ii], dtype=float))
        m_eff = batch.m_eff[ii]
        r_eff = batch.r_eff[ii]
        needs = tuple(law.needs)
        if "m_eff" in needs and not np.all(np.isfinite(m_eff) & (m_eff > 0)):
            raise ParameterError(
                f"{law.name}: needs a finite effective mass m_eff > 0 (kg); contact between "
                f"bodies {int(batch.a[ii][0])} and {int(batch.b[ii][0])} has none"
            )
        if "r_eff" in needs and not np.all(np.isfinite(r_eff) & (r_eff > 0)):
            raise ParameterError(
                f"{law.name}: needs an effective radius r_eff > 0 (m); give the shape a radius "
                f"(contact between bodies {int(batch.a[ii][0])} and {int(batch.b[ii][0])})"
            )
        if entry.hertz_k:
            k = batch.k_hertz[ii]
            bad = ~(np.isfinite(k) & (k > 0))
            if bad.any():
                j = ii[np.argmax(bad)]
                raise ParameterError(
                    f"{law.name}: no 'k' was given and the contact between bodies "
                    f"{int(batch.a[j])} and {int(batch.b[j])} has no Hertz stiffness "
                    "(needs materials E, nu on both shapes and a finite effective radius); "
                    "give 'k' or a shape radius"
                )
            if len(k) == 1:
                # one contact (an event of a small scene): the law with this Hertz k, cached
                # per pair law and k (a contact pair's k never changes)
                tag = (li, float(k[0]))
                cached = self._hertz_laws.get(tag)
                if cached is None:
                    if len(self._hertz_laws) >= 256:
                        self._hertz_laws.clear()
                    cached = self._hertz_laws[tag] = law.replace(k=float(k[0]))
                law = cached
            else:
                law = law.replace(k=k)
        coef = np.asarray(law.coefficients(v_in, m_eff, r_eff), dtype=float)
        return np.atleast_2d(coef).reshape(len(ii), -1), law

    def _onset(self, batch: ContactBatch, idx: np.ndarray, t: float | np.ndarray,
               given: np.ndarray | None = None, given_tc: np.ndarray | None = None
               ) -> np.ndarray:
        m = len(idx)
        law_idx = batch.law[idx].astype(np.int64)
        coef = np.zeros((m, NC_MAX))
        ode = np.zeros((m, NODE_MAX))
        mem = np.zeros((m, NMEM_MAX))
        k_on = np.full(m, np.nan)
        t_c = np.full(m, np.inf)
        groups = self._groups(law_idx)
        if given is not None and len(groups) != 1:
            raise ParameterError("start: given coefficient rows need one law for the batch")
        for li, pick in groups:
            sel = np.arange(m) if pick is None else np.flatnonzero(pick)
            law = self.laws[li]
            if given is not None:
                c = np.asarray(given, dtype=float).reshape(m, -1)
                t_c[sel] = np.asarray(given_tc, dtype=float)
            else:
                c, law_k = self._onset_coef_law(li, batch, idx[sel])
                t_c[sel] = self._time_scale(law_k, batch, idx[sel])
            if self.pair_laws[li].hertz_k:
                k_on[sel] = batch.k_hertz[idx[sel]]
            coef[sel, : c.shape[1]] = c
            if law.n_state or law.n_memory:
                s0 = np.asarray(law.initial_state(c), dtype=float).reshape(len(sel), -1)
                ode[sel, : law.n_state] = s0[:, : law.n_state]
                mem[sel, : law.n_memory] = s0[:, law.n_state :]
        keys = batch.key[idx]
        t_on = (np.full(m, t) if type(t) is float  # (a driver's one time: no broadcast)
                else np.broadcast_to(np.asarray(t, dtype=float), (m,)).copy())
        new = (keys, law_idx, batch.a[idx], batch.b[idx], coef, ode, mem, batch.ddelta[idx],
               batch.m_eff[idx], batch.r_eff[idx], t_on, k_on, t_c, batch.delta[idx],
               batch.ddelta[idx])
        if len(self.keys):
            for name, x in zip(self._ROW_FIELDS, new, strict=True):
                setattr(self, name, np.concatenate([getattr(self, name), x]))
            self._keep_rows(np.argsort(self.keys, kind="stable"))
        else:  # the first rows (a lone onset of a small scene): no merge
            for name, x in zip(self._ROW_FIELDS, new, strict=True):
                setattr(self, name, x)
            if m > 1:
                self._keep_rows(np.argsort(self.keys, kind="stable"))
        return self._events(t, keys, batch.a[idx], batch.b[idx], law_idx, batch.ddelta[idx],
                            batch.delta[idx])

    _ROW_FIELDS = ("keys", "law", "a", "b", "coef", "ode", "mem", "v_in", "m_eff", "r_eff",
                   "t_on", "k_on", "t_c", "_delta_last", "_ddelta_last")

    def _keep_rows(self, index: np.ndarray) -> None:
        for name in self._ROW_FIELDS:
            setattr(self, name, getattr(self, name)[index])


class _OnsetRows(NamedTuple):
    """The fields of new contacts :meth:`ContactStore.start_new` books (a batch's, by
    name: :meth:`ContactStore._onset` and ``_memory_and_ends`` read only these)."""

    key: np.ndarray
    law: np.ndarray
    a: np.ndarray
    b: np.ndarray
    delta: np.ndarray
    ddelta: np.ndarray
    m_eff: np.ndarray
    r_eff: np.ndarray
    k_hertz: np.ndarray


def _find(keys: np.ndarray, query: np.ndarray, increasing: bool = False) -> np.ndarray:
    """Index of each ``query`` key in the unique array ``keys``, -1 if absent (``increasing``:
    ``keys`` is known to be sorted, no sort needed)."""
    if increasing:
        return _lookup(np.asarray(keys, dtype=np.int64), query)
    order = np.argsort(keys, kind="stable")
    pos = _lookup(np.asarray(keys, dtype=np.int64)[order], query)
    return np.where(pos >= 0, order[np.maximum(pos, 0)] if len(order) else pos, -1)


def _lookup(sorted_keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Index of each ``query`` key in the sorted unique array ``sorted_keys``, -1 if absent."""
    q = np.asarray(query, dtype=np.int64)
    if not len(sorted_keys):
        return np.full(q.shape, -1, dtype=np.int64)
    pos = np.searchsorted(sorted_keys, q)
    pos_c = np.minimum(pos, len(sorted_keys) - 1)
    return np.where(sorted_keys[pos_c] == q, pos_c, -1).astype(np.int64)
