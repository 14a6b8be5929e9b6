"""The host-consistent implicit contact step for contacts on articulated links.

The exact sub-stepper (:mod:`mbplugin.bullet.substep`) integrates each host step's contact
dynamics in contact space and hands the host the impulse P; the host then moves its bodies
semi-implicitly, x1 = x0 + dt v1. Inside the step the integrated contact may move by a
different amount than dt v1 (a stiff contact under a large load oscillates within the step and
ends at the same velocity). Free bodies are then moved onto the integrated overlap (the
backend's position correction); links of articulated bodies are not, and on a robot's feet the
host's overlap and the integrated one stay apart: measured on the A1 quadruped of
``examples/quadruped_foot_ground.py`` at 1/240 s, each stance step starts from a host overlap
of -0.3 to -1.2 mm and its integration ends at 1.1-1.5 mm with the host's end velocity, the
leg's free acceleration (~500 m/s^2 into the ground) taken up in a transient whose half period
is about one host step. The friction limit is then low over much of every step: a 1 s stance
+ 3 s trot walked backwards with 21 mm of toe slide per stance (this step: +1.27 m, 6.2 mm).

This module instead solves each host step's contact impulse implicitly against the host's own
update, so the contact never sees a state the host does not have (Castro, Qu, Kuppuswamy,
Alspach & Sherman, "A Transition-Aware Method for the Simulation of Compliant Contact with
Regularized Friction", IEEE RA-L 5 (2020) 1859-1866, do the same for compliant normal forces
with regularised friction inside a semi-implicit host step):

    u1 = u0 + a_free dt + W P + e_u,     delta1 = delta0 - dt n . u1 + e_d
    P  = dt [ F_N(delta1, ddelta1) n + F_t(u1, (F_N0 + F_N1) / 2) ]

F_N is the contact law's normal force (the store's laws, coefficient rows and memory: no
formula here), F_t the regularised Coulomb friction of the engine
(:func:`mbplugin.dynamics.friction.friction_force`) or the tangential spring
(:mod:`mbplugin.bullet.stick`, its rate stepped by backward Euler, :func:`stick_step`). The
normal force is taken at the step's end (backward Euler: stable for any contact stiffness, with
the law's static equilibrium exact); the Coulomb limit over the step is the trapezoidal mean
of the normal force at its start and end (with the end value alone a foot that is being
unloaded gets a friction impulse short by mu dt dF_N/2 per step: 10.9 instead of 6.2 mm of
backward slide per stance on the A1's 1 s + 3 s run at 1/240 s).

``e_u``, ``e_d`` are the host's defects: PyBullet's step moves an articulated link through its
joint coordinates, so the contact point's velocity at the step's end is J(q1) qd1, not
J(q0) qd1 as W assumes (measured: 1-3 % of W P), and its overlap follows the forward
kinematics, not dt n . u1. With ``host`` given (a probe of the host step with the impulse
applied, see ``BulletContacts._verify_probe``), each verification round measures the host's
end velocity and overlap for the current P, books the difference as the defects and solves
again (a defect correction; on the A1's 1 s + 3 s trot the largest velocity defect of a
step, median over steps, is 8.2 cm/s in the first round and 0.09 cm/s in the second; the
overlap defect, ~0.2 mm, is the kinematics' and does not depend on P). P is found by Newton's
method on the 3K residual from P = 0, with a finite-difference derivative of each contact's
force in its own (delta, u) and backtracking on the residual norm. The solve runs in compiled
code (:mod:`mbplugin.bullet.implicit_kernel`: the forces through the sub-stepper's compiled law,
friction and spring kernels); ``compiled=False`` keeps this module's NumPy implementation, the
reference (the same iteration; both give the same impulse to rounding).

Costs and limits: every law must be free of ODE states (Bouc-Wen, Maxwell: use
``articulated="substep"``); no contact onset is located inside the step (a contact starts at the
step where its predicted end overlap is positive), so the laws' c_r at impacts is not exact as
with the sub-stepper (backward Euler damps); the static equilibrium, the Coulomb limit and the
host's kinematics are.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin.bullet import implicit_kernel as ik
from mbplugin.bullet.implicit_kernel import EPS_D, EPS_U, MAX_NEWTON
from mbplugin.bullet.stick import Stick, stick_force, stick_step
from mbplugin.bullet.substep import ContactSpace, StepResult, SubstepStats, batch_at
from mbplugin.contact import ContactBatch, ContactStore
from mbplugin.dynamics.friction import Friction, friction_force
from mbplugin.errors import IntegrationError

#: the host probe: impulse P (K, 3) -> (contact found at the probe's end (K,), its velocity
#: u (K, 3), its overlap delta (K,))
HostProbe = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


class ImplicitStep:
    """One host step of the contacts of ``batch`` solved implicitly (see the module docstring).

    ``W`` the Delassus operator (3K, 3K), ``a_free`` (K, 3) the contacts' free acceleration,
    ``friction`` regularised friction or None, ``stick`` the tangential spring (with ``s0``
    (K, 3) its displacement at the step start) or None, ``rtol`` the tolerance of Newton's
    residual relative to the impulse, ``host`` the probe of the host step, ``verify`` the
    number of verification rounds with it, ``watch`` (K,) bool: the contacts whose defects the
    probe books (those on articulated links), ``compiled`` the compiled Newton solve
    (:mod:`mbplugin.bullet.implicit_kernel`; False, or a law without a compiled kernel: the
    NumPy reference of this class), ``mu`` (K, 2) each contact's friction coefficients (mu,
    mu_s; None: the Friction's). Newton starts from P = 0 (the free motion) at
    every host step: the root found does not depend on the previous step's (with the previous
    impulse as the start, a 1 s + 3 s trot of the A1 settled on other roots in some steps and
    its toes slid 16.6 instead of 6.9 mm)."""

    def __init__(self, store: ContactStore, batch: ContactBatch, W: sp.spmatrix | np.ndarray,
                 a_free: np.ndarray, friction: Friction | None, rtol: float = 1e-8,
                 stick: Stick | None = None, s0: np.ndarray | None = None,
                 host: HostProbe | None = None, verify: int = 1,
                 watch: np.ndarray | None = None, compiled: bool = True,
                 mu: np.ndarray | None = None) -> None:
        self.store, self.batch, self.k = store, batch, len(batch)
        self.W = W.toarray() if sp.issparse(W) else np.asarray(W, dtype=float)
        self.a_free = a_free
        self.n = batch.normal
        self.friction = friction if (friction is not None and friction.active) else None
        self.rtol = float(rtol)
        self.stick = stick
        self.s0 = np.zeros((self.k, 3)) if s0 is None else np.asarray(s0, dtype=float)
        self.host, self.verify = host, int(verify)
        self.watch = np.ones(self.k, dtype=bool) if watch is None else watch
        # each contact's friction coefficients (mu, mu_s) (K, 2), or the Friction's
        self.mu = (np.asarray(mu, dtype=float).reshape(self.k, 2) if mu is not None
                   else None)
        self.compiled = bool(compiled) and ik.compiled_laws(store)
        if self.compiled:
            # the contacts as one group of the compiled sub-stepper's layout
            self.gf, self.gi = ik.group_arrays(batch, self.W, self.friction, stick, self.mu)
        else:
            # the laws' normal force with the store's rows (the sub-stepper's evaluation)
            self.space = ContactSpace(store, batch, sp.csr_matrix((3 * self.k, 3 * self.k)),
                                      a_free, None, rtol)
        self.s_end: np.ndarray | None = None
        #: largest velocity (m/s) and overlap (m) defect booked by each verification round
        self.defects: list[tuple[float, float]] = []

    # -- forces -----------------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Read the store's rows (after every change of them)."""
        if self.compiled:
            ik.refresh_rows(self.gf, self.gi, self.store, self.batch)
        else:
            self.space.prepare()

    def _start_normal(self, d0: np.ndarray, u0: np.ndarray) -> np.ndarray:
        """The normal force (K,) at the step's start."""
        if self.compiled:
            return ik.forces(d0, u0, 0.0, self.gf, self.gi, np.zeros(self.k), self.s0)[2]
        return self._normal(d0, u0)

    def _end_force(self, d: np.ndarray, u: np.ndarray,
                   dt: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_force` by the path in use."""
        if self.compiled:
            f, s1, _ = ik.forces(d, u, dt, self.gf, self.gi, self.fn0, self.s0)
            return f, (s1 if self.stick is not None else self.s0)
        return self._force(d, u, dt)

    def _normal(self, d: np.ndarray, u: np.ndarray) -> np.ndarray:
        un = np.einsum("ij,ij->i", u, self.n)
        return self.space.normal(d, -un, self.store.ode)[0]

    def _force(self, d: np.ndarray, u: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """Force on body b (K, 3) at the end state (d, u), and the spring's end displacement."""
        n = self.n
        un = np.einsum("ij,ij->i", u, n)
        fn = self._normal(d, u)
        vt = u - un[:, None] * n
        limit = 0.5 * (fn + self.fn0)  # trapezoidal mean over the step (Coulomb limit)
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
    def integrate(self, t0: float, dt: float, d0: np.ndarray, u0: np.ndarray,
                  h0: Any = None, m0: Any = None) -> StepResult:
        """The host step [t0, t0 + dt] (s) from overlaps ``d0`` (K,) and velocities ``u0``
        (K, 3); ``h0`` and ``m0`` are ignored (the interface of the sub-steppers)."""
        wall = time.perf_counter()
        k, n, W, store = self.k, self.n, self.W, self.store
        ustar = u0 + self.a_free * dt
        eu, ed = np.zeros((k, 3)), np.zeros(k)

        def state(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            u1 = ustar + eu + (W @ P.ravel()).reshape(k, 3)
            return d0 - dt * np.einsum("ij,ij->i", u1, n) + ed, u1

        self._prepare()
        self.fn0 = self._start_normal(d0, u0)
        P = np.zeros((k, 3))
        stats = SubstepStats()
        rounds = 1 + (self.verify if self.host is not None else 0)
        for r in range(rounds):
            if r:
                ok, uh, dh = self.host(P)
                ok = ok & self.watch
                d1, u1 = state(P)
                self.defects.append((float(np.max(np.abs(uh[ok] - u1[ok]), initial=0.0)),
                                     float(np.max(np.abs(dh[ok] - d1[ok]), initial=0.0))))
                eu[ok] += uh[ok] - u1[ok]
                ed[ok] += dh[ok] - d1[ok]
            self._onsets(t0, state(P)[0], ustar + eu)
            if self.compiled:
                counters = np.zeros(2, dtype=np.int64)
                P, ok = ik.solve(P, ustar + eu, d0, ed, dt, self.gf, self.gi, self.fn0,
                                 self.s0, self.rtol, counters)
                stats.steps += int(counters[0])
                stats.nfev += int(counters[1])
                if not ok:
                    raise IntegrationError(f"implicit contact step: Newton's method did not "
                                           f"converge in {MAX_NEWTON} iterations ({k} "
                                           "contacts)")
            else:
                P = self._solve(P, state, dt, stats)
        d1, u1 = state(P)
        f, s1 = self._end_force(d1, u1, dt)
        self.s_end = s1
        loaded = np.any(f != 0, axis=1)
        store.commit(batch_at(self.batch, d1, u1), t0 + dt, aligned=False)
        stats.wall = time.perf_counter() - wall
        return StepResult(P.copy(), d1, u1, loaded, stats, dt, None)

    def _onsets(self, t0: float, d_end: np.ndarray, u: np.ndarray) -> None:
        """Book the onset (the store's rules: coefficient rows, latched impact speed -n . u)
        of the contacts not yet active whose end overlap is positive."""
        store = self.store
        act = store.aligned(self.batch).active
        new = ~act & ~store.latched(self.batch) & (d_end > 0)
        if new.any():
            idx = np.flatnonzero(new)
            store.start(batch_at(self.batch.take(idx), d_end[idx], u[idx]), t0)
            self._prepare()

    def _solve(self, P: np.ndarray, state: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
               dt: float, stats: SubstepStats) -> np.ndarray:
        """Newton's method on R(P) = P - dt F(state(P)) from ``P``."""
        k, n, W = self.k, self.n, self.W
        eye = np.eye(3 * k)
        rows = (3 * np.arange(k)[:, None, None] + np.arange(3)[None, :, None]).repeat(3, 2)
        cols = rows.transpose(0, 2, 1)
        for _ in range(MAX_NEWTON):
            stats.steps += 1
            d1, u1 = state(P)
            F, _ = self._force(d1, u1, dt)
            R = P - dt * F
            scale = self.rtol * (np.max(np.abs(P)) + 1e-12)
            if np.max(np.abs(R)) <= scale:
                return P
            # each contact's force depends on its own (delta, u): 4 evaluations for all
            dFd = (self._force(d1 + EPS_D, u1, dt)[0] - F) / EPS_D
            dFu = np.empty((k, 3, 3))
            for j in range(3):
                du = np.zeros((k, 3))
                du[:, j] = EPS_U
                dFu[:, :, j] = (self._force(d1, u1 + du, dt)[0] - F) / EPS_U
            stats.nfev += 5
            # dF/dP = (dF/du - dt dF/dd n^T) W, block by block
            D = np.zeros((3 * k, 3 * k))
            D[rows, cols] = dFu - dt * np.einsum("ki,kj->kij", dFd, n)
            step = np.linalg.solve(eye - dt * (D @ W), -R.ravel()).reshape(k, 3)
            r0 = float(np.linalg.norm(R))
            lam = 1.0
            while True:
                trial = P + lam * step
                dt1, ut1 = state(trial)
                stats.nfev += 1
                rt = float(np.linalg.norm(trial - dt * self._force(dt1, ut1, dt)[0]))
                if rt < (1.0 - 1e-4 * lam) * r0 or lam < 1e-6:
                    break
                lam *= 0.5
            P = trial
        raise IntegrationError(f"implicit contact step: Newton's method did not converge in "
                               f"{MAX_NEWTON} iterations ({k} contacts)")
