"""Contact-space integration of the managed contacts inside one host step.

Solvers (:func:`contact_space`): :class:`GroupedContactSpace` (the default) splits the
contacts into groups coupled through W and integrates each group in compiled code
(:mod:`.substep_compiled`: DOP853 while the group is not stiff at the host step, Radau
otherwise; ``solver="radau"``: Radau for every group); :class:`ContactSpace`
(``solver="scipy"``, the reference) integrates all contacts together with SciPy's Radau, as
described below. They integrate the same system with the same rules and event location, to the
same tolerances (the explicit steps' true error at or below Radau's; see ``EXPLICIT_TOL``).

A host engine steps at its own rate (PyBullet: 1/240 s) while a stiff contact lasts tens of
microseconds. Within one host step of length ``dt`` the backend integrates, for the K managed
contacts found at the step start (with a predictive margin), the state

    y = [ delta (K), u (K, 3), the law ODE states of the store rows (, s (K, 3)) ]

with ``u`` the velocity of body b relative to body a at the contact point (world frame):

    d delta/dt = -n . u                (ddelta = -n . u > 0 approaching)
    du/dt      = a_free + W f          (W: the Delassus operator, :mod:`mbplugin.pipeline.delassus`)
    f = F_N n + F_t                    (force on body b)

where F_N comes from the contact store (``ContactStore.forces``, the laws with their per-contact
coefficients and state), the law ODE states from ``ContactStore.state_rates`` and F_t from the
engine's regularised Coulomb friction (:func:`mbplugin.dynamics.friction.friction_force`) or,
with the ``stick`` option, from the tangential springs of displacement s (Dahl's model,
:func:`mbplugin.pipeline.stick.stick_force` and :func:`~mbplugin.pipeline.stick.stick_rate`, the
same scalar kernels the compiled path calls; s0 is the springs' displacement at the step start,
per contact in the batch's order, and ``s_end`` the same at its end). The geometry (normals,
lever arms) and W are frozen over the host step. The solver is SciPy's Radau IIA (order 5,
implicit: resting contacts are stiff; Hairer & Wanner 1996, Sect. IV.8) with a sparse
finite-difference Jacobian.

A crossing inside a solver step of a contact's event values (``mbplugin.pipeline.events.
event_values``, by its class: a new contact's onset, an active contact's end of contact, the
maximum compression of a law with memory, a latched pair's release, renewal and rebound apex) is
located by Brent's method on the dense output (``events.locate_py``), moved forward until the
value is strictly negative (``events.strict_side_py``, as the compiled path), and the store
books the state just past it (``ContactStore.commit``: its onset, end, latch and memory rules),
as it does at the end of the host step, so the latched impact speed and the separation speed are
those of the located instants. The impulse P of the step is the integral of f, by three-point
Gauss-Legendre quadrature on the dense output of every accepted solver step (exact for the
degree-5 collocation polynomial of Radau IIA); P / dt is the force the host applies.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.integrate import Radau
from scipy.sparse.csgraph import connected_components

from mbplugin._jit import njit, readonly_view
from mbplugin.errors import IntegrationError, ParameterError
from mbplugin.laws.base import Law
from mbplugin.laws.kernels import NODE_MAX
from mbplugin.pipeline import events, layout
from mbplugin.pipeline import substep_compiled as cm
from mbplugin.pipeline.batch import ContactBatch
from mbplugin.pipeline.delassus import is_block_pattern
from mbplugin.pipeline.events import ULPS, locate_py, strict_side_py
from mbplugin.pipeline.friction import Friction, friction_force_with, friction_params
from mbplugin.pipeline.rules import F_SCALE, V_SCALE, X_SCALE
from mbplugin.pipeline.stick import Stick, stick_force, stick_rate
from mbplugin.pipeline.store import ContactStore

#: Gauss-Legendre nodes on [0, 1] and weights (3 points, exact to degree 5)
_GAUSS = ((0.5 - math.sqrt(15.0) / 10.0, 5.0 / 18.0), (0.5, 8.0 / 18.0),
          (0.5 + math.sqrt(15.0) / 10.0, 5.0 / 18.0))


@dataclass
class SubstepStats:
    """Counters of one host step: solver steps, right-hand sides, events, wall time (s)."""

    steps: int = 0
    nfev: int = 0
    events: int = 0
    wall: float = 0.0
    #: of ``steps``, those taken by the explicit method (compiled path, ``solver="compiled"``)
    explicit: int = 0
    #: contacts in groups too large for the compiled sub-stepper, solved by the implicit step
    #: of :mod:`mbplugin.pipeline.large_groups`, and its Gauss-Seidel sweeps
    implicit: int = 0
    sweeps: int = 0


@dataclass
class StepResult:
    """End of a host step: impulse per contact (K, 3) on body b (N s), delta (K,) and u (K, 3)
    at the end, and whether the contact carried force during the step (K,)."""

    impulse: np.ndarray
    delta: np.ndarray
    u: np.ndarray
    loaded: np.ndarray
    stats: SubstepStats
    last_step: float = 0.0
    #: the next step (s) of each contact's group (K,) (compiled path; pass it back as ``h0``)
    h_next: np.ndarray | None = None
    #: the solver of each contact's group at the step end (K,): 1 explicit, 0 Radau, 2 Radau
    #: after the explicit step count (compiled path; pass it back as ``m0``)
    method_next: np.ndarray | None = None
    #: the contacts solved by the implicit step of large groups (K,) (None: none): their end
    #: overlap is the host's semi-implicit one, delta0 - dt n . u1, so the backend does not
    #: correct their bodies' positions (as for the implicit step of articulated contacts)
    implicit: np.ndarray | None = None


#: Upper bound of SciPy's finite-difference step factor (relative to max(|y|, atol))
JAC_FACTOR_MAX = 1e-3


def _cap_jac_factor(solver: Any) -> None:
    """Bound the relative step of SciPy's finite-difference Jacobian (``num_jac``).

    ``num_jac`` multiplies a column's step by 10 at every evaluation where the right-hand side
    does not change with that variable (a tangential velocity without friction, the spring of
    an unloaded contact) and never bounds it: after ~20 Jacobians within one solver the step
    overflows and the Jacobian becomes NaN (the stack at a 1/60 s host step, the quadruped's
    stick springs). Capping it keeps those columns zero and finite."""
    fac = getattr(solver, "jac_factor", None)
    if isinstance(fac, np.ndarray):
        np.minimum(fac, JAC_FACTOR_MAX, out=fac)


def batch_at(batch: ContactBatch, d: np.ndarray, u: np.ndarray) -> ContactBatch:
    """``batch`` at a trial state: geometry frozen, overlaps ``d`` (K,) and relative velocities
    ``u`` (K, 3) replaced (ddelta = -n . u, slip = u minus its normal part)."""
    n = batch.normal
    ddelta, vt = cm.relative_at(np.ascontiguousarray(u, dtype=float),
                                np.ascontiguousarray(n, dtype=float))
    # every other field shared with ``batch`` (dataclasses.replace, without its field loop)
    return type(batch)(batch.a, batch.b, batch.key, batch.point, n, d, ddelta, vt,
                       batch.m_eff, batch.r_eff, batch.ra, batch.rb, batch.law, batch.k_hertz)


class ContactSpace:
    """The managed contacts of one host step (see the module docstring)."""

    def __init__(
        self,
        store: ContactStore,
        batch: ContactBatch,
        W: sp.csr_matrix,
        a_free: np.ndarray,
        friction: Friction | None,
        rtol: float = 1e-8,
        stick: Stick | None = None,
        s0: np.ndarray | None = None,
        mu: np.ndarray | None = None,
    ) -> None:
        self.store = store
        self.batch = batch
        self.k = len(batch)
        self.W = W.toarray() if W.shape[0] <= 96 else W
        self.a_free = a_free
        self.n = batch.normal
        self.friction = friction if (friction is not None and friction.active) else None
        self.rtol = rtol
        self.stick = stick
        self.s0 = np.zeros((self.k, 3)) if s0 is None else s0
        # each contact's friction coefficients (mu, mu_s) (K, 2), or None: the Friction's
        self.mu = None if mu is None else np.asarray(mu, dtype=float).reshape(self.k, 2)
        self._memory = np.array([law.n_memory > 0 for law in store.laws])
        self.nfev = 0
        # the friction parameters per contact, prepared once (the right-hand side's friction
        # is evaluated ~15 times per solver step)
        self._fr_params: tuple[np.ndarray, ...] | None = None
        if self.friction is not None:
            fr = self.friction
            mu_c, mu_s = (fr.mu, fr.static) if self.mu is None else self.mu.T
            self._fr_params = friction_params(self.k, mu_c, mu_s, fr.v_s, fr.v_eps,
                                              fr.viscous, fr.regularisation == "linear")
        # the event classes of the store's rows since the last prepare (None: not derived)
        self._cls: tuple[np.ndarray, np.ndarray] | None = None

    # -- state layout ---------------------------------------------------------------------------
    def split(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        k = self.k
        d = y[:k]
        u = y[k : 4 * k].reshape(k, 3)
        ode = np.zeros((len(self.store), NODE_MAX))
        nm = self._n_ode
        if nm:
            ode[self._mask] = y[4 * k : 4 * k + nm]
        s = y[4 * k + nm :].reshape(-1, 3) if self.stick is not None else None
        return d, u, ode, s

    def pack(self, d: np.ndarray, u: np.ndarray, s: np.ndarray | None = None) -> np.ndarray:
        self._mask = self.store.ode_mask
        self._n_ode = int(self._mask.sum())
        parts = [d, u.ravel(), self.store.ode[self._mask]]
        if self.stick is not None:
            parts.append((self.s0 if s is None else s).ravel())
        return np.concatenate(parts)

    def at(self, d: np.ndarray, u: np.ndarray) -> ContactBatch:
        """The batch at a trial state (geometry frozen, delta and velocities replaced)."""
        return batch_at(self.batch, d, u)

    # -- dynamics -------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Group the store's active contacts by law (after every commit: rows may change).

        Between commits the right-hand side evaluates each law once on its contacts with the
        coefficient rows and memory the store holds (``law.force`` / ``law.state_rate``); a
        contact the store does not know gets no force (its onset is located as an event)."""
        al = self.store.aligned(self.batch)
        self._al = al
        self._cls = None
        self._mode = np.zeros(self.k, dtype=np.int64)
        self._groups = []
        for li in np.unique(al.law[al.active]):
            law = self.store.laws[int(li)]
            idx = np.flatnonzero(al.active & (al.law == li))
            r = al.rows[idx]
            self._mode[idx] = law.contact_mode
            self._groups.append((law, idx, r, self.store.coef[r, : law.n_coef].copy(),
                                 self.store.mem[r, : law.n_memory].copy()))

    def normal(self, d: np.ndarray, dd: np.ndarray, ode: np.ndarray,
               rates: bool = False, raw: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Normal force (K,) (``raw``: the law's unclipped force) and the law states' rates
        (M, NODE_MAX)."""
        fn = np.zeros(self.k)
        dode = np.zeros((len(self.store), NODE_MAX))
        for law, idx, r, coef, mem in self._groups:
            state = np.ascontiguousarray(np.concatenate([ode[r, : law.n_state], mem], axis=1))
            if raw:
                fn[idx] = law.force_raw(d[idx], dd[idx], coef, state)
                continue
            fn[idx] = law.force(d[idx], dd[idx], coef, state)
            if rates and law.n_state:
                dode[r, : law.n_state] = law.state_rate(d[idx], dd[idx], coef, state)
        return fn, dode

    def forces(self, y: np.ndarray, rates: bool = False) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
        """Force on body b (K, 3), ddelta (K,) and the law states' rates at state ``y``."""
        d, u, ode, s = self.split(y)
        un = np.einsum("ij,ij->i", u, self.n)
        fn, dode = self.normal(d, -un, ode, rates)
        f = fn[:, None] * self.n
        vt = u - un[:, None] * self.n
        self._ds = None
        if self.stick is not None:
            f = f + stick_force(s, vt, fn, self.stick)
            if rates:
                self._ds = stick_rate(s, vt, fn, self.stick)
        elif self._fr_params is not None:
            if vt.any() or not np.isfinite(fn).all():
                f = f + friction_force_with(vt, fn, self._fr_params)
            else:
                # no slip: the friction force -g v_t of every contact is a zero of the
                # opposite sign (g >= 0 finite), so f + F_t is exactly f - v_t (signed zeros
                # included) without the friction kernel's call
                f = f - vt
        return f, -un, dode

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        self.nfev += 1
        f, dd, dode = self.forces(y, rates=True)
        du = self.a_free + (self.W @ f.ravel()).reshape(-1, 3)
        parts = [dd, du.ravel(), dode[self._mask]]
        if self._ds is not None:
            parts.append(self._ds.ravel())
        return np.concatenate(parts)

    def sparsity(self) -> sp.csr_matrix:
        """Jacobian pattern: contacts couple through W; law states to their own contact."""
        k = self.k
        nd = 4 * k + int(self._mask.sum()) + (3 * k if self.stick is not None else 0)
        w = sp.coo_matrix(self.W)
        c = sp.csr_matrix((np.ones(len(w.row)), (w.row // 3, w.col // 3)), shape=(k, k))
        c = c + sp.eye(k, format="csr")
        # the owner contact of every state
        owner = np.concatenate([
            np.arange(k), np.repeat(np.arange(k), 3),
            np.repeat(self._row_contact(), NODE_MAX)[self._mask.ravel()],
            np.repeat(np.arange(k), 3) if self.stick is not None else np.zeros(0, dtype=int),
        ])
        valid = owner >= 0
        o = np.where(valid, owner, 0)
        own = sp.csr_matrix((valid.astype(float), (np.arange(nd), o)), shape=(nd, max(k, 1)))
        pat = own @ c @ own.T
        pat.data[:] = 1.0
        return pat

    def _row_contact(self) -> np.ndarray:
        """The contact index of each store row (-1 if its key is not in the batch)."""
        pos = np.searchsorted(self._sorted_keys, self.store.keys)
        pos = np.minimum(pos, max(self.k - 1, 0))
        hit = self._sorted_keys[pos] == self.store.keys if self.k else np.zeros(0, bool)
        return np.where(hit, self._key_order[pos], -1)

    # -- events ---------------------------------------------------------------------------------
    def _classes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per contact its class of :func:`mbplugin.pipeline.events.event_value` (free, active,
        active with memory, latched) and its separation overlap d_sep (m; 0 unless latched)."""
        if self._cls is not None:
            return self._cls
        al = self._al
        d_sep = self.store.latched_overlap(self.batch)
        lat = np.isfinite(d_sep)
        cls = np.full(self.k, events.FREE, dtype=np.int64)
        cls[al.active] = events.ACTIVE
        cls[al.active & self._memory[al.law]] = events.ACTIVE_MEMORY
        cls[lat] = events.LATCHED
        self._cls = (cls, np.where(lat, d_sep, 0.0))
        return self._cls

    def _watch(self, y: np.ndarray, cls: np.ndarray, d_sep: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Per contact: its event values (k, ``events.N_SLOTS``; :func:`mbplugin.pipeline.
        events.event_values`, the end of contact from the law's raw force) and delta (m)."""
        d, u, ode, _ = self.split(y)
        dd = -np.einsum("ij,ij->i", u, self.n)
        raw, _ = self.normal(d, dd, ode, raw=True)
        g = events.event_values(cls, np.ascontiguousarray(d), np.ascontiguousarray(dd),
                                np.ascontiguousarray(raw, dtype=float), self._mode, d_sep,
                                X_SCALE, F_SCALE, V_SCALE, np.empty((self.k, events.N_SLOTS)))
        return g, d

    def _event(self, sol: Any, t_old: float, t_new: float, y_old: np.ndarray,
               y_new: np.ndarray, g_old: np.ndarray | None = None
               ) -> tuple[float | None, np.ndarray]:
        """The earliest event time inside (t_old, t_new] (the point just past it), or None: the
        crossings of the event values of :meth:`_watch` (a latched pair's rebound apex only
        where the gap is open there: the commit then releases the latch); and the event values
        at ``y_new`` (``g_old``: those at ``y_old`` if known, with the same classes)."""
        cls, d_sep = self._classes()
        g0 = self._watch(y_old, cls, d_sep)[0] if g_old is None else g_old
        g1, _ = self._watch(y_new, cls, d_sep)
        best: float | None = None
        strict = np.zeros(g0.shape, dtype=np.bool_)
        strict[:, events.S_RULE] = cls == events.FREE
        strict[:, events.S_RENEW] = cls == events.LATCHED
        for i, slot in zip(*np.nonzero(events.crossed(g0, g1, strict)), strict=True):
            def g(t: float, i: int = int(i), slot: int = int(slot)) -> float:
                return float(self._watch(np.asarray(sol(t), dtype=float), cls, d_sep)[0][i, slot])
            te = locate_py(g, t_old, t_new, float(g0[i, slot]), float(g1[i, slot]), 0.0, 0.0, ULPS,
                           200)
            # just past the event: where its value is strictly negative (as the compiled
            # path's _locate), so that a strict rule (a latch's renewal at d = d_sep exactly,
            # an onset at d = 0) has fired there; else the next solver starts on a value of
            # exactly 0 that crosses again, an event per few ulps of time (a latched ball:
            # ~90 000 events in one host step)
            te = strict_side_py(g, te, t_new)
            if slot == events.S_EXTREMUM and cls[i] == events.LATCHED:
                d = self._watch(np.asarray(sol(te), dtype=float), cls, d_sep)[1]
                if not events.apex_books(float(d[i])):
                    continue  # the gap stayed closed: nothing to book at the apex
            if best is None or te < best:
                best = te
        return best, g1

    # -- driver ---------------------------------------------------------------------------------
    def integrate(self, t0: float, dt: float, d0: np.ndarray, u0: np.ndarray,
                  h0: float | None = None, m0: np.ndarray | None = None) -> StepResult:
        """Integrate over [t0, t0 + dt] (s) from delta ``d0`` (K,) and velocity ``u0`` (K, 3);
        ``h0`` (s) is a first step to try (e.g. the last step of the previous host step);
        ``m0`` (the compiled path's solver per contact) is not used here."""
        wall = time.perf_counter()
        stats = SubstepStats()
        self._key_order = np.argsort(self.batch.key)
        self._sorted_keys = self.batch.key[self._key_order]
        k = self.k
        y = self.pack(d0, u0)
        p = np.zeros((k, 3))
        loaded = np.zeros(k, dtype=bool)
        t, t_end = 0.0, dt
        h = h0
        sparsity = None
        self.prepare()
        while t < t_end:
            kw: dict[str, Any] = {"rtol": self.rtol, "atol": self._atol(y), "max_step": dt}
            if self.k > 16:
                if sparsity is None or sparsity.shape[0] != len(y):
                    sparsity = self.sparsity()
                kw["jac_sparsity"] = sparsity
            if h is not None:
                kw["first_step"] = min(h, t_end - t)
            solver = Radau(self.rhs, t, y, t_end, **kw)
            keys = self.store.keys.copy()
            g_old = None  # the event values at y (classes unchanged since the last commit)
            while True:
                msg = solver.step()
                _cap_jac_factor(solver)
                if solver.status == "failed":
                    raise IntegrationError(f"contact-space solver failed at t = {t0 + solver.t:.9g}"
                                           f" s: {msg}")
                stats.steps += 1
                y_old, t_old = y, t
                t_new, y_new = solver.t, solver.y.copy()
                if not np.all(np.isfinite(y_new)):
                    raise IntegrationError(f"contact state became non-finite at t = "
                                           f"{t0 + t_new:.9g} s")
                h = max(t_new - t_old, 1e-15)
                sol = solver.dense_output()
                te, g_old = self._event(sol, t_old, t_new, y_old, y_new, g_old)
                if te is not None and te < t_new:
                    y_new = np.asarray(sol(te), dtype=float)
                    t_new = te
                    stats.events += 1
                for xg, wg in _GAUSS:
                    fg, _, _ = self.forces(np.asarray(sol(t_old + xg * (t_new - t_old)),
                                                      dtype=float))
                    p += wg * (t_new - t_old) * fg
                f, _, _ = self.forces(y_new)
                loaded |= np.any(f != 0, axis=1)
                t, y = t_new, y_new
                if te is None and solver.status != "finished":
                    continue
                # an event or the end of the host step: the store books the state (its rules
                # for onset, end, latch and memory), rows may change
                d, u, ode, s_t = self.split(y)
                self.store.commit(self.at(d, u), t0 + t, ode)
                self.prepare()
                y = self.pack(d, u, s_t)
                changed = (len(self.store.keys) != len(keys)
                           or not np.array_equal(self.store.keys, keys))
                if changed:
                    sparsity = None
                break
            stats.nfev += solver.nfev
        d, u, _, s_end = self.split(y)
        self.s_end = s_end
        stats.wall = time.perf_counter() - wall
        stats.nfev = self.nfev
        return StepResult(p.copy(), d.copy(), u.copy(), loaded, stats, float(h or dt))

    def _atol(self, y: np.ndarray) -> np.ndarray:
        """Absolute tolerances: rtol x (0.1 mm for overlaps, 1 cm/s for velocities, 1e-4 for
        the law states)."""
        k, r = self.k, self.rtol
        return np.concatenate([np.full(k, 1e-4 * r), np.full(3 * k, 1e-2 * r),
                               np.full(len(y) - 4 * k, 1e-4 * r)])  # law states, springs (m)


#: the compiled path takes groups of at most this many state values, counted as 4 + NODE_MAX
#: per contact (+ 3 with the stick option) (larger groups: SciPy; dense Newton matrices of this
#: size)
COMPILED_MAX_STATES = 256

SOLVERS = ("compiled", "radau", "scipy")

#: what the compiled path does with a group of more than ``COMPILED_MAX_STATES`` states:
#: "implicit" (:mod:`mbplugin.pipeline.large_groups`: the implicit host step by Gauss-Seidel,
#: sparse W) or "exact" (the whole host step on the SciPy path, as before it existed)
LARGE_GROUPS = ("implicit", "exact")

#: the explicit method's tolerances relative to the solver's (``rtol`` and the absolute ones):
#: SciPy's Radau steps on an error estimate of order 3 for a method of order 5, so its true
#: error is far below rtol; DOP853's estimate is of its own order. At rtol x EXPLICIT_TOL the
#: explicit steps' true error is at or below Radau's at rtol (measured: BENCHMARKS.md)
EXPLICIT_TOL = 1e-3


def contact_space(store: ContactStore, batch: ContactBatch, W: sp.csr_matrix,
                  a_free: np.ndarray, friction: Friction | None, rtol: float = 1e-8,
                  stick: Stick | None = None, s0: np.ndarray | None = None,
                  solver: str = "compiled", large: str = "implicit",
                  p0: np.ndarray | None = None,
                  mu: np.ndarray | None = None,
                  normal_only: bool = False) -> ContactSpace | GroupedContactSpace:
    """The contact-space integrator of a host step: ``solver="compiled"`` (the default,
    :class:`GroupedContactSpace`: DOP853 for groups that are not stiff at the host step, Radau
    for the others, the implicit step of :mod:`mbplugin.pipeline.large_groups` for groups too
    large for it (``large="exact"``: such a step goes to the SciPy path); it hands the step to
    the SciPy path when it cannot take it), ``"radau"`` (the same with Radau for every group)
    or ``"scipy"`` (:class:`ContactSpace`, the reference). ``p0`` (K, 3): the impulses the
    contacts carried in the last host step (0 for new ones), the large groups' first guess.
    ``mu`` (K, 2): each contact's friction coefficients (mu, mu_s) with ``friction``'s
    regularisation (None: ``friction``'s own mu and mu_s for every contact). ``normal_only``:
    :class:`GroupedContactSpace`'s option of that name."""
    if solver not in SOLVERS:
        raise ParameterError(f"solver = {solver!r}: allowed {', '.join(SOLVERS)}")
    if large not in LARGE_GROUPS:
        raise ParameterError(f"large = {large!r}: allowed {', '.join(LARGE_GROUPS)}")
    if solver == "scipy":
        return ContactSpace(store, batch, W, a_free, friction, rtol, stick, s0, mu)
    return GroupedContactSpace(store, batch, W, a_free, friction, rtol, stick, s0,
                               explicit=solver == "compiled", large=large, p0=p0, mu=mu,
                               normal_only=normal_only)


def _compiled_law(law: Any) -> bool:
    return (law.kernel is not None and type(law).force_raw is Law.force_raw
            and type(law).state_rate is Law.state_rate)


def _all_compiled(laws: tuple[Law, ...]) -> bool:
    """Whether every law has a compiled kernel (:func:`_compiled_law`), kept for the last
    tuple of laws (a store's laws never change)."""
    hit = _LAW_TABLES.get("compiled")
    if hit is None or hit[0] is not laws:
        hit = _LAW_TABLES["compiled"] = (laws, all(_compiled_law(law) for law in laws))
    return hit[1]


#: the last W pattern's groups (one entry: consecutive host steps of a backend at rest)
_GROUPS_CACHE: dict[str, Any] = {}


def _pattern_of(W: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """W's (indices, indptr) when both are read-only arrays that own their data (a pattern
    shared by the W of successive steps, :func:`mbplugin.hosts.wmatrix.csr_on_pattern`: their
    identity is their content), else None."""
    ind, ptr = W.indices, W.indptr
    if (ind.flags.writeable or ptr.flags.writeable or ind.base is not None
            or ptr.base is not None):
        return None
    return ind, ptr


#: the group layout of block-diagonal W's on the shared pattern, per (K, states per contact)
_BLOCK_GROUPS: dict[tuple[int, int], Any] = {}
#: W's with more stored entries than this are not cached (their key alone costs a copy)
CACHE_NNZ = 200_000


@njit
def _block_components(indptr: np.ndarray, indices: np.ndarray, k: int) -> tuple[int, np.ndarray]:
    """Connected components of the 3x3 block pattern of a CSR W (3K, 3K) (union-find over its
    entries): their number and each contact's label, numbered in the order of each component's
    first contact (as ``scipy.sparse.csgraph.connected_components``)."""
    parent = np.arange(k)
    for r in range(3 * k):
        i = r // 3
        for e in range(indptr[r], indptr[r + 1]):
            a = i
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            b = indices[e] // 3
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            if a < b:
                parent[b] = a
            elif b < a:
                parent[a] = b
    labels = np.empty(k, dtype=np.int64)
    of_root = np.full(k, -1, dtype=np.int64)
    ng = 0
    for i in range(k):
        a = i
        while parent[a] != a:
            a = parent[a]
        if of_root[a] < 0:
            of_root[a] = ng
            ng += 1
        labels[i] = of_root[a]
    return ng, labels

#: no carried first steps / solvers (:func:`~.substep_compiled.group_start`)
_NONE_F = np.zeros(0)
_NONE_I = np.zeros(0, dtype=np.int64)
#: the last store's law tables (a store's laws never change)
_LAW_TABLES: dict[str, Any] = {}


def _candidates(store: ContactStore, batch: ContactBatch, act: np.ndarray,
                coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the compiled groups watch per contact besides the active ones' ends (``cand`` of
    :func:`~mbplugin.pipeline.substep_compiled.pack`): 1 the onset of a free pair, ``LATCHED``
    the latch of a pair latched "separated" (its release or renewal, as the engine's events;
    its d_sep in the otherwise unused coefficient slot 0 of the returned rows), 0 nothing."""
    cand = (~act).astype(np.int64)
    if not len(store.latched_keys):
        return cand, coef
    d_sep = store.latched_overlap(batch)
    lat = np.isfinite(d_sep)
    if not lat.any():
        return cand, coef
    cand[lat] = cm.LATCHED
    coef = coef.copy()
    coef[lat, 0] = d_sep[lat]
    return cand, coef


def _law_tables(laws: tuple[Law, ...]) -> tuple[np.ndarray, ...]:
    """Per law: kernel id, contact mode, ODE state count, memory flag (the compiled path's
    tables), kept for the last tuple of laws."""
    hit = _LAW_TABLES.get("last")
    if hit is None or hit[0] is not laws:
        hit = (laws, (np.array([law.kernel for law in laws], dtype=np.int64),
                      np.array([law.contact_mode for law in laws], dtype=np.int64),
                      np.array([law.n_state for law in laws], dtype=np.int64),
                      np.array([law.n_memory > 0 for law in laws])))
        _LAW_TABLES["last"] = hit
    return hit[1]


def _any_odes(nst_l: np.ndarray) -> bool:
    """Whether a law of the tables ``nst_l`` (:func:`_law_tables`) has ODE states, kept for
    the last tables."""
    hit = _LAW_TABLES.get("odes")
    if hit is None or hit[0] is not nst_l:
        hit = _LAW_TABLES["odes"] = (nst_l, bool(nst_l.any()))
    return hit[1]


class GroupedContactSpace:
    """The managed contacts of one host step, integrated group by group in compiled code
    (:mod:`.substep_compiled`): the same equations, rules, tolerances and impulse as
    :class:`ContactSpace`, with every group of contacts coupled through W integrated on its own
    (uncoupled blocks of W: exact), the stick option's springs included. Falls back to
    :class:`ContactSpace` for laws without a compiled kernel and groups of more than
    ``COMPILED_MAX_STATES`` states. ``explicit``: groups that are not stiff at the host step
    take DOP853 steps (:func:`~.substep_compiled.integrate_groups`); False: Radau for
    every group. ``normal_only``: a one-contact group whose slip, tangential free
    acceleration and tangential part of W n are exactly zero (a ball dropped straight onto a
    plane: a 1-DOF problem) is rated without friction's slope, so it takes DOP853's steps where
    the regularisation's stiffness, which never acts on it, sent it to Radau (the MuJoCo
    backend's choice: ~2.6x fewer right-hand sides while a landing rings down; the same
    bounces within the tolerance, not bit for bit)."""

    def __init__(self, store: ContactStore, batch: ContactBatch, W: sp.csr_matrix,
                 a_free: np.ndarray, friction: Friction | None, rtol: float = 1e-8,
                 stick: Stick | None = None, s0: np.ndarray | None = None,
                 explicit: bool = True, large: str = "implicit",
                 p0: np.ndarray | None = None, mu: np.ndarray | None = None,
                 normal_only: bool = False) -> None:
        self.explicit, self.normal_only = explicit, bool(normal_only)
        self.large, self.p0, self.mu = large, p0, mu
        self.store, self.batch, self.W, self.a_free = store, batch, W, a_free
        self.friction = friction if (friction is not None and friction.active) else None
        self.rtol, self.stick, self.s0 = rtol, stick, s0
        self.k = len(batch)
        self.s_end: np.ndarray | None = None
        self.fallback: ContactSpace | None = None

    def _groups(self, per: int) -> None:
        """Groups (connected components of W's block pattern) and the flat W blocks (the
        pattern's part cached while W's sparsity pattern does not change, e.g. at rest).
        ``per``: states per contact; the contacts of groups of more than COMPILED_MAX_STATES
        states go to ``self.big`` (batch indices, label -1), the others are the compiled
        path's groups."""
        k = self.k
        W = self.W
        if is_block_pattern(W, k):
            # W block diagonal on the shared pattern (free_body_blocks: spheres on the ground):
            # every contact a group of its own in the batch's order; the layout is the one
            # the general path below derives for such a W, kept per (K, per)
            hit = _BLOCK_GROUPS.get((k, per))
            if hit is None:
                rows = np.repeat(np.arange(3 * k), 3)
                cols = W.indices.astype(np.int64)
                ar = np.arange(k)
                self._layout(ar, ar, np.ones(k, dtype=np.int64), rows // 3, cols // 3, rows,
                             cols, W.data)
                if len(_BLOCK_GROUPS) > 16:
                    _BLOCK_GROUPS.clear()
                hit = _BLOCK_GROUPS[(k, per)] = (self.widx, self.labels, self.order,
                                                 self.sizes, self.gptr, self.goff)
            self.widx, self.labels, self.order, self.sizes, self.gptr, self.goff = hit
            self.ident, self.big = True, np.zeros(0, dtype=np.int64)
            self.wdata = W.data  # (read only)
            return
        key = None
        hit = _GROUPS_CACHE.get("last")
        if (hit is not None and hit[2] is not None and hit[2][0] is W.indices
                and hit[2][1] is W.indptr and hit[0][:3] == (k, per, W.shape)):
            # the same read-only pattern arrays as the last W (hosts.wmatrix.csr_on_pattern:
            # a box at rest): the same key without its bytes
            (self.widx, self.labels, self.order, self.sizes, self.gptr, self.goff,
             self.ident, self.big, wsel) = hit[1]
            self.wdata = W.data.copy() if wsel is None else W.data[wsel]
            return
        canonical_csr = sp.issparse(W) and W.format == "csr" and W.has_canonical_format
        if canonical_csr:
            if W.nnz <= CACHE_NNZ:
                key = (k, per, W.shape, W.indptr.tobytes(), W.indices.tobytes())
                if hit is not None and hit[0] == key:
                    _GROUPS_CACHE["last"] = (key, hit[1], _pattern_of(W))
                    (self.widx, self.labels, self.order, self.sizes, self.gptr, self.goff,
                     self.ident, self.big, wsel) = hit[1]
                    # canonical CSR: COO order = CSR order
                    self.wdata = W.data.copy() if wsel is None else W.data[wsel]
                    return
            # the components from W's CSR directly (a pile's W: millions of entries, whose
            # COO copy and duplicate sums took seconds); large groups leave the compiled path
            ng, labels = _block_components(readonly_view(W.indptr), readonly_view(W.indices), k)
            sizes = np.bincount(labels, minlength=ng)
            large = sizes * per > COMPILED_MAX_STATES
            if large.any():
                self._split(W, labels, sizes, large)
                return
        w = sp.coo_matrix(W)
        w.sum_duplicates()
        ci, cj = w.row // 3, w.col // 3
        if np.all(ci == cj):  # block diagonal: every contact is a group of its own
            ng, labels = k, np.arange(k)
        else:
            pattern = sp.csr_matrix((np.ones(len(ci)), (ci, cj)), shape=(k, k))
            ng, labels = connected_components(pattern, directed=False)
        sizes = np.bincount(labels, minlength=ng)
        canonical = (key is not None and np.array_equal(w.col, W.indices)
                     and np.array_equal(w.row, np.repeat(np.arange(W.shape[0]),
                                                         np.diff(W.indptr))))
        large = sizes * per > COMPILED_MAX_STATES
        if large.any():  # (a W that is not canonical CSR)
            big_c = large[labels]
            sel = np.flatnonzero(~big_c[ci])
            self._split(sp.csr_matrix((w.data[sel], (w.row[sel], w.col[sel])), shape=W.shape),
                        labels, sizes, large)
            return
        self.big = np.zeros(0, dtype=np.int64)
        order = np.argsort(labels, kind="stable")
        self._layout(labels, order, sizes, ci, cj, w.row, w.col, w.data)
        # every group one contact, in the batch's order (W block-diagonal: spheres on the
        # ground): group order = batch order, no permutation of the results
        self.ident = ng == k and bool(np.all(order == np.arange(k)))
        if canonical:
            _GROUPS_CACHE["last"] = (key, (self.widx, self.labels, order, sizes, self.gptr,
                                           self.goff, self.ident, self.big, None),
                                     _pattern_of(W))

    def _split(self, W: sp.csr_matrix, labels: np.ndarray, sizes: np.ndarray,
               large: np.ndarray) -> None:
        """The groups with ``large`` (per group) leave the compiled path: their contacts go to
        ``self.big`` (label -1), the others keep their groups (renumbered) and W's entries
        among them (a CSR ``W``'s rows and columns of those contacts only)."""
        big_c = large[labels]
        self.big = np.flatnonzero(big_c)
        keep = ~large
        labels = np.where(big_c, -1, (np.cumsum(keep) - 1)[labels])
        sizes = sizes[keep]
        small = np.flatnonzero(~big_c)
        order = small[np.argsort(labels[small], kind="stable")]
        if len(small):
            idx = (3 * small[:, None] + np.arange(3)).ravel()
            w = sp.csr_matrix(W)[idx][:, idx].tocoo()
            wrow, wcol = idx[w.row], idx[w.col]
            ci, cj, wdata = wrow // 3, wcol // 3, w.data
        else:
            wrow = wcol = ci = cj = np.zeros(0, dtype=np.int64)
            wdata = np.zeros(0)
        self._layout(labels, order, sizes, ci, cj, wrow, wcol, wdata)
        self.ident = False

    def _layout(self, labels: np.ndarray, order: np.ndarray, sizes: np.ndarray,
                ci: np.ndarray, cj: np.ndarray, wrow: np.ndarray, wcol: np.ndarray,
                wdata: np.ndarray) -> None:
        """The compiled path's group arrays: contact and float offsets, W's entries (rows
        ``wrow``, columns ``wcol`` of contacts ``ci``, ``cj``, values ``wdata``) in the groups'
        float arrays (see :mod:`.substep_compiled`)."""
        k, ng = self.k, len(sizes)
        gptr = np.zeros(ng + 1, dtype=np.int64)
        np.cumsum(sizes, out=gptr[1:])
        pos = np.zeros(k, dtype=np.int64)
        pos[order] = np.arange(len(order)) - gptr[labels[order]]
        goff = np.zeros(ng + 1, dtype=np.int64)
        np.cumsum(layout.group_float_size(sizes), out=goff[1:])
        g = labels[ci]
        # W leads a group's float array (mbplugin.pipeline.layout)
        self.widx = goff[g] + (3 * pos[ci] + wrow % 3) * (3 * sizes[g]) + 3 * pos[cj] + wcol % 3
        self.wdata = wdata
        self.labels, self.order, self.sizes, self.gptr, self.goff = labels, order, sizes, gptr, goff

    def _mu_rows(self) -> np.ndarray:
        """Each contact's friction coefficients (K, 2: mu, mu_s; zeros without friction)."""
        if self.mu is not None:
            return np.ascontiguousarray(self.mu, dtype=float).reshape(self.k, 2)
        muk = np.zeros((self.k, 2))
        if self.friction is not None:
            muk[:, 0], muk[:, 1] = self.friction.mu, self.friction.static
        return muk

    def _large(self, t0: float, dt: float, d: np.ndarray, u: np.ndarray, s: np.ndarray,
               fr: np.ndarray, muk: np.ndarray, big: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, dict]:
        """The implicit step of the large groups' contacts ``big`` (batch indices;
        :func:`mbplugin.pipeline.large_groups.solve`): their end overlap, velocity and spring
        displacement written into ``d``, ``u``, ``s`` (the batch's order); returns their
        impulses, loaded flags and the solve's counters."""
        from mbplugin.pipeline import large_groups

        whole = len(big) == self.k
        W = self.W
        if not whole:
            cols = (3 * big[:, None] + np.arange(3)).ravel()
            W = sp.csr_matrix(W)[cols][:, cols]
        sub = self.batch if whole else self.batch.take(big)
        p0 = None if self.p0 is None else np.asarray(self.p0, dtype=float)[big]
        P, d1, u1, loaded, s1, info = large_groups.solve(
            self.store, sub, W, np.asarray(self.a_free, dtype=float)[big], d[big], u[big], fr,
            muk[big], None if self.stick is None else s[big], t0, dt, self.rtol, p0)
        d[big], u[big] = d1, u1
        if self.stick is not None:
            s[big] = s1
        return P, loaded, info

    def integrate(self, t0: float, dt: float, d0: np.ndarray, u0: np.ndarray,
                  h0: float | None = None, m0: np.ndarray | None = None) -> StepResult:
        """As :meth:`ContactSpace.integrate`; ``h0`` may also be a first step per contact (K,)
        (<= 0: SciPy's initial step), e.g. :attr:`StepResult.h_next` of the previous host step,
        and ``m0`` the solver each contact's group ended the previous host step with (K,: 1
        explicit, 0 Radau, 2 Radau after the explicit step count, -1 unknown;
        :attr:`StepResult.method_next`): a group any of whose contacts was on Radau stays on
        Radau while it is stiff at its step (:func:`mbplugin.pipeline.substep_compiled.
        integrate_groups`)."""
        store = self.store
        ns = 0 if self.stick is None else 3  # spring states per contact
        ok = _all_compiled(store.laws) and self.k > 0
        if ok:
            self._groups(4 + ns + NODE_MAX)
            # groups too large for the compiled path: the implicit step (laws without ODE
            # states), else the whole step on the SciPy path
            ok = not len(self.big) or (self.large == "implicit"
                                       and not any(law.n_state for law in store.laws))
        if not ok:
            self.fallback = ContactSpace(store, self.batch, self.W, self.a_free, self.friction,
                                         self.rtol, self.stick, self.s0, self.mu)
            res = self.fallback.integrate(t0, dt, d0, u0, None if np.ndim(h0) else h0, m0)
            self.s_end = self.fallback.s_end
            return res
        wall = time.perf_counter()
        k, order, gptr, labels = self.k, self.order, self.gptr, self.labels
        ng = len(gptr) - 1
        ident = self.ident
        kid_l, mode_l, nst_l, mem_l = _law_tables(store.laws)
        fr = layout.head(self.friction, self.stick, inactive_on=True)
        muk = self._mu_rows()
        # the state in the batch's order (pack / unpack map it to the groups' order)
        nrm = np.ascontiguousarray(self.batch.normal, dtype=float)
        af = np.ascontiguousarray(self.a_free, dtype=float)
        d = np.array(d0, dtype=float)
        u = np.array(u0, dtype=float).reshape(k, 3)
        s = (np.zeros((k, 3)) if self.s0 is None else np.array(self.s0, dtype=float))
        h0 = (np.asarray(h0, dtype=float) if h0 is not None and np.ndim(h0) and ng
              else _NONE_F)
        m0 = np.asarray(m0, dtype=np.int64) if m0 is not None and np.ndim(m0) and ng else _NONE_I
        # (a group starts with the shortest step its contacts had, unknown: initial step; on
        # Radau where one of its contacts ended on it)
        tg, hg, mg, status, imp, loaded, counters = cm.group_start(k, ng, ident, order, gptr,
                                                                   h0, m0)
        odes = _any_odes(nst_l)  # a law with ODE states
        big = self.big
        t_of = None
        if len(big):
            # the large groups first: their implicit step books its onsets in the store (at
            # t0) and gives their end state, which every commit below books with the others'
            big_out = self._large(t0, dt, d, u, s, fr, muk, big)
            t_of = np.full(k, float(dt))
        for _ in range(10_000 if ng else 0):
            al = store.aligned(self.batch, copy=False)  # pack reads coef, mem, law
            act = al.active
            ode = al.ode
            cand, coef = _candidates(store, self.batch, act, al.coef)
            yptr, Y, GF, GC = cm.pack(order, gptr, self.goff, self.widx, self.wdata, fr, nrm, af,
                                      coef, al.mem, muk, act, al.law, cand, kid_l, mode_l,
                                      nst_l, mem_l, d, u, s, ns, ode)
            cm.integrate_groups(gptr, yptr, self.goff, GF, GC, Y, tg, status, hg, float(dt),
                                float(self.rtol), imp, loaded, counters, self.explicit, mg,
                                EXPLICIT_TOL, self.normal_only)
            worst = status.max()  # (FAILED > EVENT > DONE)
            if worst == cm.FAILED:
                g = int(np.argmax(status == cm.FAILED))
                raise IntegrationError(f"contact-space solver failed at t = {t0 + tg[g]:.9g} s "
                                       f"(group of {int(self.sizes[g])} contacts)")
            if not cm.unpack(order, gptr, yptr, GC, Y, d, u, s, ns, ode):
                raise IntegrationError(f"contact state became non-finite in the host step at "
                                       f"t = {t0:.9g} s")
            # the store books every contact at its group's time (its rules: onset, end,
            # latch, memory); the events stopped their groups just past the instant
            ode_rows = None
            if odes:
                ode_rows = store.ode.copy()
                ode_rows[al.rows[act]] = ode[act]
            if t_of is None:
                t_c = tg if ident else tg[labels]
            else:
                t_of[order] = tg[labels[order]]
                t_c = t_of
            booked = False
            if ode_rows is None and t_of is None and len(t_c) and t_c.min() == t_c.max():
                # every group at one instant (a body at rest): the store's compiled commit of
                # the same rows (it reads the batch's keys and laws only; the end overlaps d
                # and rates -n.u as batch_at has them)
                ddelta = cm.relative_at(u, nrm)[0]
                booked = store.commit_rows(self.batch, d, ddelta, float(t0 + t_c[0]))
            if not booked:
                store.commit(batch_at(self.batch, d, u), t0 + t_c, ode_rows, aligned=False,
                             compiled=True)
            if worst != cm.EVENT:
                break
            status[status == cm.EVENT] = cm.PENDING
        else:
            if ng:
                raise IntegrationError(f"contact-space events did not settle in the host step "
                                       f"at t = {t0:.9g} s")
            # only large groups: one booking of the step's end
            store.commit(batch_at(self.batch, d, u), t0 + dt, None, aligned=False)
        if self.stick is not None:
            self.s_end = s
        stats = SubstepStats(int(counters[0]), int(counters[1]), int(counters[2]),
                             time.perf_counter() - wall, int(counters[3]))
        if len(big):
            # results back in the batch's order: the compiled groups' (group order) and the
            # large groups' (no next step, no solver: -1)
            p_big, load_big, info = big_out
            out_imp, out_loaded = np.zeros((k, 3)), np.zeros(k, dtype=bool)
            h_of, m_of = np.full(k, -1.0), np.full(k, -1, dtype=np.int64)
            kb = len(order)
            out_imp[order], out_loaded[order] = imp[:kb], loaded[:kb]
            out_imp[big], out_loaded[big] = p_big, load_big
            if ng:
                h_of[order], m_of[order] = hg[labels[order]], mg[labels[order]]
            stats.implicit, stats.sweeps = len(big), info["sweeps"]
            stats.nfev += info["nfev"]
            hpos = h_of[h_of > 0]
            implicit = np.zeros(k, dtype=bool)
            implicit[big] = True
            return StepResult(out_imp, d, u, out_loaded, stats,
                              float(hpos.min()) if len(hpos) else float(dt), h_of, m_of,
                              implicit)
        if not ident:
            hit = _GROUPS_CACHE.get("inv")
            if hit is not None and hit[0] is order:  # the groups kept (a body at rest)
                inv = hit[1]
            else:
                inv = np.empty(k, dtype=np.int64)
                inv[order] = np.arange(k)
                inv.flags.writeable = False
                _GROUPS_CACHE["inv"] = (order, inv)
            imp, loaded, hg, mg = imp[inv], loaded[inv], hg[labels], mg[labels]
        # d and u are this call's own arrays (the batches given to the store are dropped)
        return StepResult(imp, d, u, loaded, stats, float(hg.min()), hg, mg)
