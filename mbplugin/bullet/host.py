"""PyBullet behind the host protocol of :class:`~mbplugin.hosts.HostStep`
(:class:`~mbplugin.hosts.Host`: what the generic step asks of the host during one host step),
and the forces a :class:`~mbplugin.bullet.BulletContacts` step hands to PyBullet.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress, repeat
from typing import Any

import numpy as np

from mbplugin.bullet.client import drain, vectors
from mbplugin.bullet.columns import Coupling, NativeColumns
from mbplugin.bullet.fast_step import force_calls
from mbplugin.bullet.lean import lean_block, lean_rounds
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.rotation import quat_from_rotvec, quat_multiply
from mbplugin.hosts.arrays import cross_rows
from mbplugin.hosts.protocol import (
    ARTICULATED,
    FREE,
    STATIC,
    ArticulatedBlock,
    point_velocity,
)

#: PyBullet's bound on a pair's combined friction (btManifoldResult::calculateCombinedFriction)
MAX_FRICTION = 10.0
#: gain per host step of the low-pass filter of the native contact forces on managed free rows
#: (:meth:`BulletHost.native_acceleration`; measured on the 1 + 3 + 3 kg sphere stack: 1 rings
#: and bounces, 0.1 rings at 480 steps, 0.05 settles)
NATIVE_GAIN = 0.05


class BulletHost:
    """The host side of a :class:`~mbplugin.bullet.BulletContacts` step: ``client`` the
    PyBullet client, ``read`` the rows' reader (:class:`~mbplugin.bullet.rows.BulletRows`),
    ``art`` the articulated bodies (:class:`~mbplugin.bullet.articulated.BulletArticulated`),
    ``flight`` the free rows' lags and resets (:class:`~mbplugin.bullet.flight.FreeFlight`),
    ``rows_arr`` (N, 2) the rows' (body, link), ``kind`` (N,) their kinds, ``probe`` the
    backend's option; ``g`` (3,) m/s^2 and ``control`` (the user's per-step inputs, called
    again after a probe step) are set by the backend before each step."""

    def __init__(self, client: Any, read: Any, art: Any, flight: Any, rows_arr: np.ndarray,
                 kind: np.ndarray, probe: bool) -> None:
        self.client, self.read, self.art, self.flight = client, read, art, flight
        self.rows_arr, self.kind, self.probe = rows_arr, kind, probe
        self.any_free = bool(np.any(kind == FREE))
        # the low-passed native force and torque on each row (see native_acceleration)
        self._native: tuple[np.ndarray, np.ndarray] | None = None
        # PyBullet's contact points after the last stepSimulation when the deferred correction
        # read them (one getContactPoints call per host step; taken by native_acceleration)
        self.points: list[tuple[Any, ...]] | None = None
        self.g = np.zeros(3)
        self.reads = 0  # end states read in this host step's solve (see begin_solve)
        #: the lean rounds' outcome of this host step's solve, for the general path to go on
        #: from (:func:`mbplugin.bullet.fused.after_lean`; None: none)
        self._pre: tuple[Any, ...] | None = None
        #: :meth:`apply`'s kept arrays of the ``applyExternalForce`` calls (bodies, links,
        #: forces, points)
        self._force_out: tuple[np.ndarray, ...] = (np.empty(0, dtype=np.int64),) * 2 + (
            np.empty((0, 3)),) * 2
        self.control: Callable[[], None] | None = None
        # the last friction's sides (bytes of a, b) and coefficients (see friction)
        self._mu: tuple[tuple[bytes, bytes], np.ndarray] | None = None
        # the native columns a managed free row carries (see start)
        self.columns = NativeColumns(client, kind, rows_arr)

    def free_acceleration(self, batch: ContactBatch, bodies: BodyState, dt: float,
                          art: np.ndarray) -> np.ndarray:
        """Relative acceleration of the contact points without the managed forces (m/s^2).

        Free bodies: gravity, plus for a free body that PyBullet's own (unmanaged) contacts
        also touch the acceleration and angular acceleration of those contacts' forces and
        torques in the last ``stepSimulation`` (:meth:`native_acceleration`). Contacts on
        articulated links: measured by a probe step of the
        host (``saveState``, ``stepSimulation`` with the managed pairs' response off,
        ``restoreState``): it holds everything the host applies over the step (actuators,
        gravity, joint reactions, Coriolis terms, unmanaged contacts). PyBullet consumes
        ``TORQUE_CONTROL`` torques and external forces at every ``stepSimulation``: ``control``
        (the user's function that sets them) is called again after the probe. Used by
        ``articulated="substep"`` (the implicit step needs no probe)."""
        g, kind = self.g, self.kind
        ga = np.where((kind[batch.a] != STATIC)[:, None], g, 0.0)
        gb = np.where((kind[batch.b] != STATIC)[:, None], g, 0.0)
        a = gb - ga
        if self.any_free:
            self.native_acceleration(batch, bodies, a)
        art = (kind[batch.a] == ARTICULATED) | (kind[batch.b] == ARTICULATED)
        if art.any() and self.probe:
            c = self.client
            sid = c("saveState")
            try:
                c("stepSimulation")
                after = self.read.state()
            finally:
                c("restoreState", sid)
                c("removeState", sid)
            if self.control is not None:
                self.control()
            u0 = point_velocity(bodies, batch)
            u1 = point_velocity(after, batch)
            a[art] = (u1[art] - u0[art]) / dt
        return a

    def start(self, g: np.ndarray, control: Callable[[], None] | None, batch: ContactBatch,
              bodies: BodyState) -> np.ndarray | None:
        """The host step's start (before its solve): gravity ``g`` (3,) m/s^2, the user's
        ``control``; a managed free row carrying a native column gets the column's mass
        (:meth:`NativeColumns.couple <mbplugin.bullet.columns.NativeColumns.couple>`, reading
        ``getContactPoints`` once when the deferred correction did not: ``points``, then taken
        by :meth:`native_acceleration`). Returns those masses (N,) kg with the rows coupled to
        their column as one rigid body (:class:`~mbplugin.bullet.columns.Coupling`), or None."""
        self.g, self.control = g, control
        self.columns.inside = self.columns.stiff = None
        if not self.any_free or not len(batch):
            return None
        if self.points is None:
            self.points = self.client("getContactPoints")
        mass = self.columns.couple(batch, bodies, self.points)
        return None if mass is None else Coupling(mass, self.columns.stiff)

    def native_acceleration(self, batch: ContactBatch, bodies: BodyState,
                            a: np.ndarray) -> None:
        """Add to ``a`` (K, 3) m/s^2 the contact points' relative acceleration from PyBullet's
        own contact forces on the batch's free rows: F / m and I_world^-1 tau (tau about the
        centre of mass), a_b(P) - a_a(P) with a(P) = F / m + alpha x r (no centripetal term, as
        for gravity). F and tau: ``getContactPoints`` of the host step just taken
        (:meth:`BulletRows.native_wrench <mbplugin.bullet.rows.BulletRows.native_wrench>`),
        low-passed per row with gain NATIVE_GAIN per host step (a row without a native point
        in this step: none, its filter emptied). For a row given its column's mass
        (:meth:`start`) the forces of the points inside the column are left out, their torques
        kept.

        Why: with gravity alone, a managed sphere carrying two native spheres (1 + 3 + 3 kg) was
        predicted to carry its own weight only; it rested 0.66 % short of Hertz's static
        overlap for the weight it carries, with a velocity of -0.244 m/s that the position
        correction took back every step. The native forces are the host's reaction to the last
        host step's managed force (a predictor: exact at rest; in a transient the position
        correction takes the difference back). Taken unfiltered they are an explicit coupling
        of the managed body (its own mass in W) with the natively coupled bodies (their masses
        not in W): the 1 + 3 + 3 kg stack rang at +30 % and bounced off the ground; low-passed
        with gain 0.05 it settles to the static overlap within 4e-10 in 480 host steps (gain
        0.1 still rings at 480 steps). Cost: one ``getContactPoints`` call on the whole client
        per host step with a free row in a managed contact; nothing else when no native point
        touches one (``a`` then untouched, the same bits as before). The call is saved when the
        deferred correction read the same points after that step (``points``: the N = 1000
        pile's getContactPoints is 6 ms for 1832 points)."""
        side = np.concatenate([batch.a, batch.b])
        rows = np.unique(side[side >= 0])
        rows = rows[self.kind[rows] == FREE]
        if not len(rows):
            return
        points, self.points = self.points, None
        if points is None:
            points = self.client("getContactPoints")
        inside = self.columns.inside
        if inside is not None and inside[0] is points:  # the forces inside a column: out
            same = inside[1]
            # their forces left out (the column's mass is in W), their torques kept (its
            # rotation is the row's own) but for a column taken as one rigid body (its torques
            # about the column's centre of mass: those inside it out too)
            stiff, pos = self.columns.stiff, bodies.pos
            if stiff is not None:
                pos = pos.copy()
                pos[stiff[0]] -= stiff[1]
            w = self.read.native_wrench(points, pos, rows)
            ext = self.read.native_wrench(list(compress(points, ~same)), pos, rows)
            if w is not None:
                torque = w[1]
                if stiff is not None:
                    one = np.isin(rows, stiff[0])
                    torque[one] = 0.0 if ext is None else ext[1][one]
                w = (np.zeros_like(w[0]) if ext is None else ext[0], torque, w[2])
        else:
            w = self.read.native_wrench(points, bodies.pos, rows)
        held = self._native
        if w is None:
            if held is not None:
                self._native = None  # no native point on a managed free row: no filter kept
            return
        force, torque, touched = w
        rows, force, torque = rows[touched], force[touched], torque[touched]
        n = len(self.kind)
        acc, alpha = np.zeros((n + 1, 3)), np.zeros((n + 1, 3))  # index -1: the world
        if held is not None:  # low-pass (the rows without a point this step: emptied)
            force = held[0][rows] + NATIVE_GAIN * (force - held[0][rows])
            torque = held[1][rows] + NATIVE_GAIN * (torque - held[1][rows])
        else:
            force, torque = NATIVE_GAIN * force, NATIVE_GAIN * torque
        acc[rows] = force
        alpha[rows] = torque
        self._native = (acc[:n].copy(), alpha[:n].copy())
        acc[rows] = force / bodies.mass[rows][:, None]
        inv = self.read.world_inertia(bodies)[1]
        alpha[rows] = np.einsum("kij,kj->ki", inv[rows], torque)
        on = np.flatnonzero(np.isin(batch.a, rows) | np.isin(batch.b, rows))
        ia, ib = batch.a[on], batch.b[on]
        a[on] += ((acc[ib] + cross_rows(alpha[ib], batch.rb[on]))
                  - (acc[ia] + cross_rows(alpha[ia], batch.ra[on])))

    def articulated(self, batch: ContactBatch, bodies: BodyState,
                    entries: np.ndarray) -> list[ArticulatedBlock]:
        """The articulated bodies' blocks of W from PyBullet's Jacobians and mass matrices
        (:class:`~mbplugin.bullet.articulated.BulletArticulated`)."""
        return self.art.blocks(batch, bodies, self.kind)

    def articulated_delassus(self, batch: ContactBatch, bodies: BodyState,
                             W: np.ndarray) -> tuple[ArticulatedBlock, np.ndarray] | None:
        """W of contacts all on one articulated body in one compiled call
        (:func:`mbplugin.bullet.lean.lean_block`): (its block, n . W n per contact), or None
        (:meth:`articulated` then)."""
        return lean_block(self.art, batch, bodies, self.kind, W)

    def friction(self, batch: ContactBatch) -> np.ndarray:
        """Each contact's coefficient as PyBullet combines the two links' lateral friction:
        their product bounded by MAX_FRICTION (btManifoldResult::calculateCombinedFriction,
        Bullet 2.x, src/BulletCollision/CollisionDispatch/btManifoldResult.cpp); a negative
        product is taken as 0."""
        sides = (batch.a.tobytes(), batch.b.tobytes())
        hit = self._mu
        if hit is not None and hit[0] == sides:  # the same sides (a robot standing): kept
            return hit[1]
        lat = self.read.lateral_ext
        mu = np.clip(lat[batch.a] * lat[batch.b], 0.0, MAX_FRICTION)
        mu.flags.writeable = False
        self._mu = (sides, mu)
        return mu

    def begin_solve(self) -> None:
        """Called by the backend before the host step's solve (after ``stepSimulation``): no
        end state read yet, no joint state held from an earlier step's resets."""
        self.reads = 0
        self.art.forget()

    def end_state(self) -> BodyState:
        """The rows' state after the host step. A second read in the same host step (a
        verification round: PyBullet changed by :meth:`respond`'s resets only since the first)
        skips what those resets cannot have changed (:meth:`BulletRows.state` ``again``)."""
        again = self.reads > 0
        self.reads += 1
        return self.read.state(again, self.art.reset_bodies(), self.art)

    def solve(self, core: Any, dt: float) -> None:
        """The host step's solve from its end state (``core`` the
        :class:`~mbplugin.hosts.HostStep`: :meth:`HostStep.after`), between
        :meth:`begin_solve` and the articulated bodies' deferred resets
        (:meth:`BulletArticulated.flush`: PyBullet set onto the solved state)."""
        self.begin_solve()
        try:
            core.after(self, dt)
        finally:
            self.art.flush()

    def respond(self, blocks: list[ArticulatedBlock], dq: list[np.ndarray], rows: np.ndarray,
                dv: np.ndarray, dw: np.ndarray, bodies: BodyState, dt: float) -> float:
        """Put PyBullet's state after its step onto the implicit step's solved one: the
        articulated bodies by their joint and base velocity changes ``dq`` (positions by dt
        times them), the free rows ``rows`` by dv (m/s) and dw (rad/s), their poses by dt
        times those (the host's semi-implicit update), with PyBullet's resets. Returns the
        largest joint or base angular speed seen (rad/s)."""
        spin = self.art.respond(blocks, dq, dt, bodies)
        if len(rows):
            quat = quat_multiply(quat_from_rotvec(dt * dw), bodies.quat[rows])
            self.flight.reset(rows, bodies.pos[rows] + dt * dv, quat, bodies.vel[rows] + dv,
                              bodies.omega[rows] + dw)
            self.flight.forced[rows] = True
        return spin

    def verify_rounds(self, blk: ArticulatedBlock, space: Any, res: Any, dP: np.ndarray,
                      spin: float, left: int, stats: Any, pairs: Any, shapes: Any,
                      margin: float, u0: np.ndarray, dt: float, start: Any = None,
                      end: Any = None) -> tuple[Any, int, Any] | None:
        """The implicit step's solves and responses in one compiled call where they qualify
        (:func:`mbplugin.bullet.lean.lean_rounds`: a robot's feet on the ground); None: the
        general rounds of :meth:`mbplugin.hosts.ContactIntegrator.after`. With ``start``, the
        outcome :func:`mbplugin.bullet.fused.after_lean` already had (``_pre``), taken once;
        ``end``: :func:`~mbplugin.bullet.lean.lean_rounds`' (the step's end in the same call)."""
        pre = self._pre
        if pre is not None and start is not None:
            self._pre = None
            return pre[0]
        return lean_rounds(self, blk, space, res, dP, spin, left, stats, pairs, shapes, margin,
                           u0, dt, start, end)

    def apply(self, batch: ContactBatch, force: np.ndarray) -> None:
        """``applyExternalForce`` of the contacts' forces (K, 3) on side b (minus on side a)
        at the contact points as PyBullet sees them (a free body's host position is its exact
        one minus its lag), consumed by the next ``stepSimulation``; the pushed rows are
        marked ``forced`` (no free flight booked for this step)."""
        c = self.client
        k2 = 2 * len(force)
        out = self._force_out
        if len(out[0]) < k2:  # the calls' arrays, kept (a robot: the same size every step)
            out = self._force_out = (np.empty(k2, dtype=np.int64), np.empty(k2, dtype=np.int64),
                                     np.empty((k2, 3)), np.empty((k2, 3)))
        body, link, f, pt = out
        m = force_calls(force, batch.a, batch.b, batch.point, self.flight.lag, self.kind,
                        self.rows_arr, self.flight.forced, STATIC, body, link, f, pt)
        if m:
            # one PyBullet call per contact side, mapped in C (no Python frame per call)
            drain(map(c.p.applyExternalForce, body[:m].tolist(), link[:m].tolist(),
                      vectors(f[:m]), vectors(pt[:m]), repeat(c.p.WORLD_FRAME), repeat(c.id)))
