"""The host-consistent implicit contact step for contacts on articulated links.

The exact sub-stepper (:mod:`mbplugin.pipeline.substep`) integrates each host step's contact
dynamics in contact space and hands the host the impulse P; the host then moves its bodies
semi-implicitly, x1 = x0 + dt v1. Inside the step the integrated contact may move by a
different amount than dt v1 (a stiff contact under a large load oscillates within the step and
ends at the same velocity). Free bodies are then moved onto the integrated overlap (the
backend's position correction); links of articulated bodies are not, and on a robot's feet the
host's overlap and the integrated one stay apart (measured on the A1 quadruped at 1/240 s:
each stance step starts from a host overlap of -0.3 to -1.2 mm and its integration ends at
1.1-1.5 mm).

This module instead solves each host step's contact impulse implicitly against the host's own
update, so the contact never sees a state the host does not have (Castro, Qu, Kuppuswamy,
Alspach & Sherman, "A Transition-Aware Method for the Simulation of Compliant Contact with
Regularized Friction", IEEE RA-L 5 (2020) 1859-1866, do the same for compliant normal forces
with regularised friction inside a semi-implicit host step). The host's end state is affine
in the impulse about a point P_lin where it is known (measured):

    u1 = u_lin + W (P - P_lin),     delta1 = delta_lin - dt n . W (P - P_lin)
    P  = dt [ F_N(delta1, ddelta1) n + F_t(u1, (F_N0 + F_N1) / 2) ]

with W = J M^-1 J^T the Delassus operator of the step's start (the host's joint-space
response to a contact impulse: its joint velocities change by M^-1 J^T P, its positions by dt
times that). The backend (:meth:`BulletContacts.after_step
<mbplugin.bullet.backend.BulletContacts.after_step>`) takes the host step with the impulse
P_lin (the last step's, per contact), reads the host's end state (delta_lin, u_lin), solves
here for P and applies the difference P - P_lin to the host's end state through the same
response (joint and base velocities by M^-1 J^T (P - P_lin), positions by dt times that), so
the host's state after the step is the one this step integrated: what the user sees
(``getClosestPoints``, the toe's motion) is what the law integrates.

F_N is the contact law's normal force (the store's laws, coefficient rows and memory: no
formula here), F_t the regularised Coulomb friction of the engine
(:func:`mbplugin.dynamics.friction.friction_force`) or the tangential spring
(:mod:`mbplugin.pipeline.stick`, its rate stepped by backward Euler, :func:`stick_step`). The
normal force is taken at the step's end (backward Euler: stable for any contact stiffness, with
the law's static equilibrium exact); the Coulomb limit over the step is the trapezoidal mean
of the normal force at its start and end (with the end value alone a foot that is being
unloaded gets a friction impulse short by mu dt dF_N/2 per step).

P is found by Newton's method on the 3K residual from P_lin (in quiet stance on the A1 the
root moves by ~0.4% of the impulse from step to step, the residual there is ~20% of it: the
regularised friction is stiff, 3 Newton steps), with the derivative of each contact's force
in its own (delta, u) and a line search that cannot stall for a monotone law, with frozen
Coulomb limits as the fallback (:func:`mbplugin.pipeline.implicit_kernel.newton` and
:func:`~mbplugin.pipeline.implicit_kernel.solve`). The solve runs in compiled code
(:mod:`mbplugin.pipeline.implicit_kernel`: the forces and their analytic derivatives through
the sub-stepper's compiled law, friction and spring kernels); ``compiled=False`` keeps this
module's NumPy implementation, the reference (the same iteration and line search, with
forward-difference derivatives: an independent check of the compiled one's; both reach the
same root to the tolerance).

Costs and limits: every law must be free of ODE states (Bouc-Wen, Maxwell: use
``articulated="substep"``); no contact onset is located inside the step (a contact starts at the
step where its end overlap without impulse is positive), so the laws' c_r at impacts is not
exact as with the sub-stepper (backward Euler damps); the static equilibrium, the Coulomb limit
and the host's kinematics are.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from mbplugin.errors import IntegrationError
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.batch import ContactBatch
from mbplugin.pipeline.delassus import w_times
from mbplugin.pipeline.friction import Friction, friction_force
from mbplugin.pipeline.implicit_kernel import EPS_D, EPS_U, FALLBACK_ROUNDS, MAX_NEWTON
from mbplugin.pipeline.stick import Stick, stick_force, stick_step
from mbplugin.pipeline.store import ContactStore
from mbplugin.pipeline.substep import ContactSpace, StepResult, SubstepStats, batch_at


class ImplicitStep:
    """One host step of the contacts of ``batch`` solved implicitly (see the module docstring).

    ``W`` the Delassus operator (3K, 3K), ``friction`` regularised friction or None, ``stick``
    the tangential spring (with ``s0`` (K, 3) its displacement at the step start) or None,
    ``rtol`` the tolerance of Newton's residual relative to the impulse, ``compiled`` the
    compiled Newton solve (:mod:`mbplugin.pipeline.implicit_kernel`; False, or a law without a
    compiled kernel: the NumPy reference of this class), ``mu`` (K, 2) each contact's friction
    coefficients (mu, mu_s; None: the Friction's)."""

    def __init__(self, store: ContactStore, batch: ContactBatch, W: sp.spmatrix | np.ndarray,
                 friction: Friction | None, rtol: float = 1e-8, stick: Stick | None = None,
                 s0: np.ndarray | None = None, compiled: bool = True,
                 mu: np.ndarray | None = None) -> None:
        self.store, self.batch, self.k = store, batch, len(batch)
        self.W = W.toarray() if sp.issparse(W) else np.asarray(W, dtype=float)
        self.n = batch.normal
        self.friction = friction if (friction is not None and friction.active) else None
        self.rtol = float(rtol)
        self.stick = stick
        self.s0 = np.zeros((self.k, 3)) if s0 is None else np.asarray(s0, dtype=float)
        # each contact's friction coefficients (mu, mu_s) (K, 2), or the Friction's
        self.mu = (np.asarray(mu, dtype=float).reshape(self.k, 2) if mu is not None
                   else None)
        self.compiled = bool(compiled) and ik.compiled_laws(store)
        if self.compiled:
            # the contacts as one group of the compiled sub-stepper's layout
            self.gf, self.gc = ik.group_arrays(batch, self.W, self.friction, stick, self.mu)
        else:
            # the laws' normal force with the store's rows (the sub-stepper's evaluation)
            self.space = ContactSpace(store, batch, sp.csr_matrix((3 * self.k, 3 * self.k)),
                                      np.zeros((self.k, 3)), None, rtol)
        self.s_end: np.ndarray | None = None
        self.fn0: np.ndarray | None = None
        #: every contact active at the last _prepare (compiled path; no onset to book)
        self._all_active = False

    @classmethod
    def begun(cls, store: ContactStore, batch: ContactBatch, W: np.ndarray,
              friction: Friction | None, rtol: float, s0: np.ndarray, mu: np.ndarray | None,
              gf: np.ndarray, gc: np.ndarray, t0: float, all_active: bool,
              fn0: np.ndarray, stick: Stick | None = None) -> ImplicitStep:
        """The compiled step of ``batch`` after :meth:`begin` at ``t0``, from what ``__init__``
        and :meth:`begin` compute, computed by the caller with the same kernels
        (:func:`mbplugin.hosts.fused_kernels.lean_begin`): W (3K, 3K) float, ``friction``
        active or None, ``s0`` (K, 3) the stick springs (m; zeros without ``stick``), ``mu``
        (K, 2) or None, the group arrays ``gf``, ``gc`` with the store's rows read, whether
        every contact is active and the start's normal force ``fn0`` (K,) N."""
        self = cls.__new__(cls)
        self.store, self.batch, self.k = store, batch, len(batch)
        self.W, self.n = W, batch.normal
        self.friction, self.rtol, self.stick, self.s0, self.mu = friction, float(rtol), stick, \
            s0, mu
        self.compiled = True
        self.gf, self.gc = gf, gc
        self.s_end = None
        self.t0, self._all_active, self.fn0 = float(t0), all_active, fn0
        return self

    # -- forces -----------------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Read the store's rows (after every change of them)."""
        if self.compiled:
            self._all_active = ik.refresh_rows(self.gc, self.store, self.batch)
        else:
            self.space.prepare()

    def _start_normal(self, d0: np.ndarray, u0: np.ndarray) -> np.ndarray:
        """The normal force (K,) at the step's start."""
        if self.compiled:
            return ik.forces(d0, u0, 0.0, self.gc, np.zeros(self.k), self.s0)[2]
        return self._normal(d0, u0)

    def _end_force(self, d: np.ndarray, u: np.ndarray,
                   dt: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_force` by the path in use."""
        if self.compiled:
            f, s1, _ = ik.forces(d, u, dt, self.gc, self.fn0, self.s0)
            return f, (s1 if self.stick is not None else self.s0)
        return self._force(d, u, dt)

    def _normal(self, d: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The normal force (K,), zero where the contact is apart (d <= 0) at the end."""
        un = np.einsum("ij,ij->i", u, self.n)
        return np.where(d > 0, self.space.normal(d, -un, self.store.ode)[0], 0.0)

    def _force(self, d: np.ndarray, u: np.ndarray, dt: float,
               lim: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Force on body b (K, 3) at the end state (d, u), and the spring's end displacement;
        ``lim`` frozen Coulomb limits (None: the trapezoidal mean over the step)."""
        n = self.n
        un = np.einsum("ij,ij->i", u, n)
        fn = self._normal(d, u)
        vt = u - un[:, None] * n
        # trapezoidal mean over the step (Coulomb limit), or the fallback's frozen one
        limit = 0.5 * (fn + self.fn0) if lim is None else lim
        f = fn[:, None] * n
        s1 = self.s0
        if self.stick is not None:
            s1 = stick_step(self.s0, vt, limit, self.stick, dt)
            s1 = s1 - np.einsum("ij,ij->i", s1, n)[:, None] * n
            f = f + stick_force(s1, vt, limit, self.stick)
        elif self.friction is not None:
            fr = self.friction
            mu, mu_s = (fr.mu, fr.static) if self.mu is None else self.mu.T
            f = f + friction_force(vt, limit, mu, mu_s, fr.v_s, fr.v_eps, fr.viscous,
                                   fr.regularisation == "linear")
        return f, s1

    # -- the step ---------------------------------------------------------------------------------
    def begin(self, t0: float, d0: np.ndarray, u0: np.ndarray) -> None:
        """The step's start: overlaps ``d0`` (K,) and velocities ``u0`` (K, 3) at ``t0`` (s)
        give the normal force at the start (the trapezoidal Coulomb limit's first value)."""
        self.t0 = float(t0)
        if self.compiled:  # _prepare and _start_normal in one compiled call
            self._all_active, self.fn0 = ik.begin_rows(self.gc, self.store,
                                                       self.batch, d0, u0, self.s0)
            return
        self._prepare()
        self.fn0 = self._start_normal(d0, u0)

    def solve(self, dt: float, d_lin: np.ndarray, u_lin: np.ndarray, P_lin: np.ndarray,
              start: np.ndarray | None = None) -> StepResult:
        """The step's impulse (K, 3) for the host's end state ``d_lin`` (K,), ``u_lin`` (K, 3)
        with the impulse ``P_lin`` (K, 3) applied (see the module docstring); Newton from
        ``start`` (default ``P_lin``). Contacts not yet active whose end overlap without
        impulse is positive start here (the store's onset rules). Call :meth:`begin` first,
        :meth:`finish` at the end (after the last solve)."""
        wall = time.perf_counter()
        k, n, W = self.k, self.n, self.W
        P_lin = np.ascontiguousarray(P_lin, dtype=float).reshape(k, 3)
        if self.compiled and start is None:
            # no onset to book: the whole solve in one compiled call; None (an onset, or
            # Newton's trapezoidal solve did not converge): the general path below
            counters = np.zeros(3, dtype=np.int64)
            fast = ik.solve_step(P_lin, u_lin, d_lin, dt, self.gf, self.gc, self.fn0,
                                 self.s0, self.rtol, counters)
            if fast is not None:
                P, _, _, d1, u1, _, s1, loaded = fast
                self.s_end = s1 if self.stick is not None else self.s0
                stats = SubstepStats(steps=int(counters[0]), nfev=int(counters[1]))
                stats.wall = time.perf_counter() - wall
                return StepResult(P, d1, u1, loaded, stats, dt, None)
        wp = w_times(W, P_lin.ravel()).reshape(k, 3)
        if self.compiled:  # the same arithmetic in one call
            ue, ed, d_on = ik.host_start(u_lin, wp, d_lin, dt, self.gc)
        else:
            ue = u_lin - wp  # the end velocity without impulse
            # the model's delta1 = d_lin - dt n . W (P - P_lin) = d_lin + dt n . ue - dt n . u1
            ed = dt * np.einsum("ij,ij->i", u_lin, n)
            d_on = d_lin + dt * np.einsum("ij,ij->i", wp, n)
        self._onsets(d_on, ue)
        P0 = P_lin if start is None else np.ascontiguousarray(start, dtype=float).reshape(k, 3)
        stats = SubstepStats()
        if self.compiled:
            counters = np.zeros(3, dtype=np.int64)
            P, ok = ik.solve(P0, ue, d_lin, ed, dt, self.gf, self.gc, self.fn0, self.s0,
                             self.rtol, counters)
            stats.steps += int(counters[0])
            stats.nfev += int(counters[1])
            stats.events += int(counters[2])  # fallbacks to frozen Coulomb limits
        else:
            P, ok = self._solve(P0.copy(), ue, d_lin, ed, dt, stats)
        if not ok:
            raise IntegrationError(f"implicit contact step: Newton's method did not converge "
                                   f"with frozen Coulomb limits ({k} contacts): the contact "
                                   "law or friction is not monotone (a Stribeck drop?)")
        u1 = ue + w_times(W, P.ravel()).reshape(k, 3)
        if self.compiled:  # the same arithmetic in one call
            d1, f, s1, loaded = ik.host_end(u1, d_lin, ed, dt, self.gf, self.gc, self.fn0,
                                            self.s0)
            self.s_end = s1 if self.stick is not None else self.s0
        else:
            d1 = d_lin + ed - dt * np.einsum("ij,ij->i", u1, n)
            f, s1 = self._end_force(d1, u1, dt)
            self.s_end = s1
            loaded = np.any(f != 0, axis=1)
        stats.wall = time.perf_counter() - wall
        return StepResult(P, d1, u1, loaded, stats, dt, None)

    def finish(self, res: StepResult) -> None:
        """Book the step's end state (the store's end, latch and memory rules; in the
        common compiled case by :meth:`ContactStore.commit_same
        <mbplugin.pipeline.store.ContactStore.commit_same>`, no trial batch built)."""
        t = self.t0 + res.last_step
        if self.compiled and self.store.commit_rows(
                self.batch, res.delta, -np.einsum("ij,ij->i", res.u, self.n), t):
            return
        self.store.commit(batch_at(self.batch, res.delta, res.u), t, aligned=False,
                          compiled=self.compiled)

    def _onsets(self, d_end: np.ndarray, u: np.ndarray) -> None:
        """Book the onset (the store's rules: coefficient rows, latched impact speed -n . u)
        of the contacts not yet active whose end overlap is positive."""
        store = self.store
        if self.compiled:  # the active flags of the store's rows read by the last _prepare
            if self._all_active:
                return
            act = self.gc["active"].copy()
        else:
            act = store.aligned(self.batch, copy=False).active
        if act.all():  # every contact active (the common case): no onset
            return
        new = ~act & ~store.latched(self.batch) & (d_end > 0)
        if new.any():
            idx = np.flatnonzero(new)
            store.start(batch_at(self.batch.take(idx), d_end[idx], u[idx]), self.t0)
            self._prepare()

    def _solve(self, P: np.ndarray, ue: np.ndarray, d0: np.ndarray, ed: np.ndarray,
               dt: float, stats: SubstepStats) -> tuple[np.ndarray, bool]:
        """:func:`mbplugin.pipeline.implicit_kernel.solve` in NumPy (the reference): Newton with
        the trapezoidal Coulomb limit, then the frozen-limit rounds."""
        start = P.copy()
        P, ok = self._newton(P, ue, d0, ed, dt, stats, None)
        if ok:
            return P, True
        stats.events += 1
        P = start.copy()
        lim = np.maximum(self.fn0, 0.0)
        for _ in range(FALLBACK_ROUNDS):
            P, ok = self._newton(P, ue, d0, ed, dt, stats, lim)
            if not ok:
                return P, False
            u1 = ue + (self.W @ P.ravel()).reshape(self.k, 3)
            d1 = d0 + ed - dt * np.einsum("ij,ij->i", u1, self.n)
            new = 0.5 * (self.fn0 + self._normal(d1, u1))
            done = np.max(np.abs(new - lim), initial=0.0) <= self.rtol * (
                np.max(np.abs(new), initial=0.0) + 1e-12)
            lim = new
            if done:
                break
        return P, ok

    def _newton(self, P: np.ndarray, ue: np.ndarray, d0: np.ndarray, ed: np.ndarray,
                dt: float, stats: SubstepStats,
                lim: np.ndarray | None) -> tuple[np.ndarray, bool]:
        """Newton's method on R(P) = P - dt F(state(P)) from ``P``, with the line search of
        :func:`mbplugin.pipeline.implicit_kernel.newton` (the same iteration; the force's
        derivatives here by forward differences, EPS_D and EPS_U)."""
        k, n, W = self.k, self.n, self.W
        eye = np.eye(3 * k)
        rows = (3 * np.arange(k)[:, None, None] + np.arange(3)[None, :, None]).repeat(3, 2)
        cols = rows.transpose(0, 2, 1)

        def state(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            u1 = ue + w_times(W, P.ravel()).reshape(k, 3)
            return d0 - dt * np.einsum("ij,ij->i", u1, n) + ed, u1

        def force(d: np.ndarray, u: np.ndarray) -> np.ndarray:
            stats.nfev += 1
            return self._force(d, u, dt, lim)[0]

        def slope(P: np.ndarray, F: np.ndarray, wstep: np.ndarray) -> float:
            return float(np.dot((P - dt * F).ravel(), wstep))

        d1, u1 = state(P)
        F = force(d1, u1)
        for _ in range(MAX_NEWTON):
            stats.steps += 1
            R = P - dt * F
            if np.max(np.abs(R)) <= self.rtol * (np.max(np.abs(P)) + 1e-12):
                return P, True
            # each contact's force depends on its own (delta, u): 4 evaluations for all
            dFd = (force(d1 + EPS_D, u1) - F) / EPS_D
            dFu = np.empty((k, 3, 3))
            for j in range(3):
                du = np.zeros((k, 3))
                du[:, j] = EPS_U
                dFu[:, :, j] = (force(d1, u1 + du) - F) / EPS_U
            # dF/dP = (dF/du - dt dF/dd n^T) W, block by block
            D = np.zeros((3 * k, 3 * k))
            D[rows, cols] = dFu - dt * np.einsum("ki,kj->kij", dFd, n)
            step = np.linalg.solve(eye - dt * (D @ W), -R.ravel())
            g0 = 1.0
            if np.all(np.isfinite(step)):
                wstep = W @ step
                g0 = slope(P, F, wstep)
            if not g0 < 0.0:  # not a descent direction: dP = -R
                step = -R.ravel()
                wstep = W @ step
                g0 = slope(P, F, wstep)
                if not g0 < 0.0:  # W R = 0: P = dt F is the root
                    P = dt * F
                    d1, u1 = state(P)
                    F = force(d1, u1)
                    continue
            step = step.reshape(k, 3)
            lo, hi, glo = 0.0, 1.0, g0
            trial = P + step
            Ft = force(*state(trial))
            ghi = slope(trial, Ft, wstep)
            alpha = 1.0
            if ghi > 0.0:  # bracketed: Illinois to a point with phi' <= 0, |phi'| <= |g0| / 4
                side, found = 0, False
                for _ls in range(40):
                    c = hi - ghi * (hi - lo) / (ghi - glo) if ghi != glo else 0.5 * (lo + hi)
                    if not lo < c < hi:
                        c = 0.5 * (lo + hi)
                    trial = P + c * step
                    gc = slope(trial, force(*state(trial)), wstep)
                    if gc <= 0.0:
                        lo, glo = c, gc
                        if -gc <= 0.25 * -g0:
                            found = True
                            break
                        if side == -1:
                            ghi *= 0.5
                        side = -1
                    else:
                        hi, ghi = c, gc
                        if side == 1:
                            glo *= 0.5
                        side = 1
                    if hi - lo <= 1e-12 * hi:
                        break
                alpha = lo if (found or lo > 0.0) else hi
            moved = float(np.max(np.abs(alpha * step)))
            P = P + alpha * step
            if moved <= 4e-16 * (np.max(np.abs(P)) + 1e-300):
                # no change of P resolvable any more: with frozen limits the root to rounding,
                # with the trapezoidal ones a stall (the fallback freezes them)
                return P, lim is not None
            d1, u1 = state(P)
            F = Ft if alpha == 1.0 else force(d1, u1)
        return P, False
