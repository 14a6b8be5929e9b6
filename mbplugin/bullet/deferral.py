"""The deferred position correction of a :class:`~mbplugin.bullet.BulletContacts`' free
bodies (one responsibility of the backend, an object it owns): after PyBullet's semi-implicit
step a body that bounced inside the step is where the step's impulse acting at its start puts
it; the correction (:mod:`mbplugin.hosts.correction`) moves it so that its contacts' overlaps
equal the integrated ones. It is computed from the next step's state read and kept as an
offset of the host position (the lag of :mod:`mbplugin.bullet.flight`) until it matters
(``defer_tol``), then applied by a reset; :meth:`DeferredCorrection.after` books a host step.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.bullet.correction import PositionCorrection
from mbplugin.contact import BodyState
from mbplugin.hosts.arrays import absmax_rows, lookup, nonzero_rows
from mbplugin.hosts.correction import overlap_predicted
from mbplugin.hosts.protocol import ARTICULATED, FREE

#: default ``defer_tol`` (m): the largest deferred position correction kept as an offset
DEFER_TOL = 1e-4
#: a host position that differs from the one the last step predicts by more than this (m) was
#: moved by something else (the user's reset, a native contact's position solve)
HOST_TOL = 1e-9


class DeferredCorrection:
    """The deferred position correction of a backend's free rows (module docstring):
    ``client`` the PyBullet client, ``layout`` the build (:class:`~mbplugin.bullet.build.
    Layout`: rows, kinds), ``mass`` (N,) kg, ``read`` the rows' reader
    (:class:`~mbplugin.bullet.rows.BulletRows`), ``flight`` the lags and resets
    (:class:`~mbplugin.bullet.flight.FreeFlight`), ``detection``
    (:class:`~mbplugin.bullet.detection.Detection`), ``core`` the generic host step
    (:class:`~mbplugin.hosts.HostStep`: its articulated blocks), ``art`` the articulated
    bodies, and the backend's options ``correct_positions``, ``correct_articulated``.

    State: ``deferred`` the last step's (batch, W, res, W's normal diagonal or None) awaiting
    the next state read; ``native_rows`` rows seen touching a native contact in that step;
    ``expect`` the host poses the next read should show (("pre", x, dt, q): x + dt v_read and
    q turned by dt omega_read, semi-implicit Euler over the step of length dt; ("post", x, 0,
    q): x, q); ``margin`` (m) the last detection's; ``pending`` the host step's carries (set
    before the step), ``omega0`` (N, 3) the rows' angular velocities at its start."""

    def __init__(self, client: Any, layout: Any, mass: np.ndarray, read: Any, flight: Any,
                 detection: Any, core: Any, art: Any, correct_positions: bool,
                 correct_articulated: bool) -> None:
        self.client, self.rows, self.rows_arr = client, layout.rows, layout.rows_arr
        self.kind, self.mass = layout.kind, mass
        self.read, self.flight, self.detection, self.core, self.art = (read, flight, detection,
                                                                       core, art)
        self.correct_positions = correct_positions
        self.correct_articulated = correct_articulated
        self.any_art = bool(np.any(self.kind == ARTICULATED))
        self.deferred: tuple[Any, ...] | None = None
        self.native_rows = np.zeros(0, dtype=np.int64)
        self.expect: tuple[str, np.ndarray, float, np.ndarray] | None = None
        self.margin = 0.0
        self.pending: tuple[Any, ...] | None = None
        self.omega0 = np.zeros((0, 3))
        self._points: Any = None  # PyBullet's contact points of this step once read
        #: the correction itself (how far to move, and the moves)
        self.fix = PositionCorrection(layout, mass, read, flight, art, core,
                                      correct_articulated)

    def take(self, bodies: BodyState, dt: float) -> np.ndarray:
        """Book the last step's position correction from this state read (``bodies``: the host
        state, read before the coming host step or by ``BulletContacts.sync``). Returns the host
        positions (N, 3), updated for the rows reset here.

        The correction of :meth:`correct` needs the host's state at the end of the step it
        corrects; unless the user changed something in between, the next step's read sees that
        same state, so the read after ``stepSimulation`` is skipped and the correction is
        computed here, from the same function on the same positions (host + lag). A free body's
        displacement is booked into its lag (exact - host position) instead of two PyBullet
        resets per body; detection and integration use host + lag (as for the exact free
        flight), and ``BulletHost.apply`` applies the forces at the contact points as the host sees
        them. The host is reset once: by ``FreeFlight.land``, at ``sync``, or here for a body
        that touched a native contact or a constraint in the last step, and for a rotation
        correction (a lag holds positions only).

        A row whose host position is not the one the last step predicts (semi-implicit Euler,
        x + dt v with the velocity now read; a reset by the backend is predicted exactly) was
        moved by the user: its lag is dropped and its contacts are not corrected (as if the
        correction had been applied right after the step and the user's reset had replaced it)."""
        free = self.kind == FREE
        host = bodies.pos.copy()
        n = len(self.rows)
        user = np.zeros(n, dtype=bool)
        exp = self.expect
        self.expect = None
        if exp is not None and exp[1].shape == host.shape:
            vel = bodies.vel
            if (exp[1].dtype == host.dtype == vel.dtype == np.float64
                    and vel.shape == host.shape):  # one compiled pass, the same test
                _moved(host, exp[1], float(exp[2]), vel, exp[0] == "pre", free, HOST_TOL,
                       user)
            else:
                want = exp[1] + exp[2] * vel if exp[0] == "pre" else exp[1]
                user = free & (absmax_rows(host - want) > HOST_TOL)
            user |= free & self.flight.turned(bodies, exp[3], exp[2])
        if self.deferred is None and not len(self.native_rows) and not user.any():
            return host  # nothing moved, touched or deferred (a body at rest): nothing to book
        native = np.zeros(n, dtype=bool)
        native[self.native_rows[self.native_rows < n]] = True
        self.native_rows = np.zeros(0, dtype=np.int64)
        user &= ~native
        self.flight.lag[user] = 0.0
        pend, self.deferred = self.deferred, None
        if pend is not None and len(pend[0]):
            batch, W, res, wdiag = pend
            exact = BodyState(bodies.pos + self.flight.lag, bodies.quat, bodies.vel, bodies.omega,
                              bodies.mass, bodies.inv_inertia, bodies.fixed)
            # only the corrected contacts' overlaps are needed: their pairs' narrow phase
            # (the same calls and bits as a detection; fallback pairs: a full detection)
            now = (self.detection.detect(exact, self.margin) if not self.detection.plain()
                   else self.detection.model.detect_pairs(exact, batch.key, margin=self.margin))
            pos = lookup(now.key, batch.key)
            ue = np.append(user, False)  # index -1: the ground
            ok = (pos >= 0) & ~ue[batch.a] & ~ue[batch.b]
            d_now = np.full(len(batch), np.nan)
            if ok.any():
                d_now[ok] = now.delta[pos[ok]]
            self.fix.correct(batch, W, res, d_now, exact, raw=bodies, host=host, wdiag=wdiag)
        rows = np.flatnonzero(native & free & nonzero_rows(self.flight.lag))
        if len(rows):
            new = bodies.pos[rows] + self.flight.lag[rows]
            self.flight.reset(rows, new, bodies.quat[rows], bodies.vel[rows], bodies.omega[rows])
            bodies.pos[rows] = host[rows] = new
            self.flight.lag[rows] = 0.0
            self.flight.forced[rows] = True
        return host

    def sync(self, exact_flight: bool) -> None:
        """Book the last step's correction and flight (``exact_flight``: the backend's option)
        from a state read now and reset every free body with a lag to its exact position,
        velocities kept (``BulletContacts.sync``)."""
        flight = self.flight
        # the last host step's free flight is booked by the next step's read: without a
        # correction or a lag pending, a sync right after a step must still book it (else a
        # sync every step leaves every other host position g dt^2 / 2 off the parabola)
        if self.deferred is None and not np.any(flight.lag != 0) and not flight.due:
            return
        dt = self.client.time_step()
        bodies = self.read.state()
        host = self.take(bodies, dt)
        if exact_flight:  # the last host step's flight (the next step then books none)
            flight.book(bodies, *flight.taken(self.client.gravity(), dt))
        flight.due = False
        rows = np.flatnonzero((self.kind == FREE) & nonzero_rows(flight.lag))
        new = bodies.pos[rows] + flight.lag[rows]
        flight.reset(rows, new, bodies.quat[rows], bodies.vel[rows], bodies.omega[rows])
        host[rows] = new
        flight.lag[rows] = 0.0
        self.expect = ("post", host, 0.0, bodies.quat.copy())

    def native_touch(self, rows: np.ndarray) -> np.ndarray:
        """Of these rows, those whose body touched a native contact point (an unmanaged pair)
        in the last ``stepSimulation``, or all of them when the world has a constraint."""
        c = self.client
        if not len(rows):
            return rows
        if int(c("getNumConstraints")) > 0:
            return rows
        points = self._points  # read by unpredictable in this step
        if points is None:
            points = self._points = c("getContactPoints")  # PyBullet's own contacts, one call
        if not points:
            return rows[:0]
        touching = np.array(sorted({pt[1] for pt in points} | {pt[2] for pt in points}))
        return rows[np.isin(self.rows_arr[rows, 0], touching)]

    def begin_after(self) -> tuple[Any, ...] | None:
        """The host step's carries (taken: :meth:`after` books them once)."""
        pend, self.pending = self.pending, None
        self._points = None
        return pend

    def after(self, pend: tuple[Any, ...] | None, dt: float) -> Any:
        """Book the host step just taken (``pend``: :meth:`begin_after`'s): the position
        correction of free bodies, now or deferred to the next state read. Returns PyBullet's
        contact points it read after the step (None: not read), for the host's next free
        acceleration (:meth:`mbplugin.bullet.host.BulletHost.native_acceleration`)."""
        self._book(pend, dt)
        return self._points

    def _book(self, pend: tuple[Any, ...] | None, dt: float) -> None:
        """:meth:`after`'s booking."""
        if pend is None and not self.flight.lag.any():
            return  # nothing to correct, no lag (a robot's implicit step: no free row)
        lagged = np.flatnonzero(nonzero_rows(self.flight.lag))
        if pend is not None and self.unpredictable(pend, dt):
            batch, W, res, _, wdiag = pend
            art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
            nr = len(self.rows)
            mine = self.flight.row_mask(batch)  # the free rows of the batch's contacts
            lag_mask = np.zeros(nr, dtype=bool)
            lag_mask[lagged] = True
            touched = self.native_touch(np.flatnonzero(mine | lag_mask))
            if not (self.correct_articulated and art.any()) and not mine[touched].any():
                # the correction is computed from the next step's state read
                self.deferred = (batch, W, res, wdiag)
                self.native_rows = touched
                return
            bodies = self.read.state()
            host = bodies.pos.copy()
            free = self.kind == FREE
            np.add(bodies.pos, self.flight.lag, out=bodies.pos, where=free[:, None])  # free rows
            now = self.detection.detect(bodies, self.margin)
            pos = lookup(now.key, batch.key)
            ok = pos >= 0
            d_now = np.full(len(batch), np.nan)
            if ok.any():
                d_now[ok] = now.delta[pos[ok]]
            if self.correct_positions:
                self.fix.correct(batch, W, res, d_now, bodies, host=host, wdiag=wdiag)
            self.expect = ("post", host, 0.0, bodies.quat.copy())
            self.native_rows = touched
        elif len(lagged):
            self.native_rows = self.native_touch(lagged)

    def unpredictable(self, pend: tuple[Any, ...], dt: float) -> bool:
        """False when the post-step state read (two PyBullet calls per body) cannot change
        anything: no contact may be corrected (articulated only, or ``correct_positions`` off),
        or every contact the correction would look at is at rest and its host overlap is known
        without reading it.

        PyBullet's step of a free body is semi-implicit Euler: with the applied impulse P and
        the free acceleration, the contact's relative velocity at the step end is
        u1 = u0 + a_free dt + W P and its overlap delta0 - dt n.u1 (exact for a contact whose
        points move by less than MOVE_MIN over the step: no rotation or curvature term). When
        that equals the integrated overlap within MOVE_MIN for every candidate contact, and no
        native contact point or constraint can push the bodies, the correction is nothing and
        the read is skipped (measured on spheres at rest on a plane: predicted vs read overlap
        within 1e-18 m, landing included). Forces the user applies in the same host step to a
        body resting on a managed contact are then seen at the next step (as for any contact)
        instead of being corrected along the normal."""
        batch, W, res, a_free, _ = pend
        if not self.correct_positions:
            return False
        # every contact _correct may select: those without an articulated side (all of them
        # when no row is articulated: no gathers)
        a, b = batch.a, batch.b
        sel = None
        if self.any_art or res.implicit is not None:
            art = np.zeros(len(a), dtype=bool)
            if self.any_art:
                art = (self.kind[a] == ARTICULATED) | (self.kind[b] == ARTICULATED)
                if self.correct_articulated and art.any():
                    return True
            if res.implicit is not None:  # large groups: not corrected (see _correct)
                art = art | res.implicit
            sel = np.flatnonzero(~art)
            if not len(sel):
                return False
            if len(sel) < len(art):
                a, b = a[sel], b[sel]
            else:
                sel = None
        # (the fused step of free bodies at rest ran the same test in its kernel:
        # mbplugin.bullet.free_fused, its result kept on the step's result)
        pre = getattr(res, "predicted", None) if sel is None else None
        if not (pre if pre is not None else
                overlap_predicted(batch, W, res, a_free, self.omega0, dt, sel)):
            return True
        c = self.client
        if int(c("getNumConstraints")) > 0:
            return True
        points = c("getContactPoints")  # PyBullet's own contacts (unmanaged pairs), one call
        self._points = points  # for native_touch in the same after
        if points:
            touching = {pt[1] for pt in points} | {pt[2] for pt in points}
            mine = {self.rows[i][0] for i in chain(a.tolist(), b.tolist())}
            if touching & mine:
                return True
        return False


@njit
def _moved(host, x, dt, vel, pre, free, tol, out):
    """out[i] (N,) True for a free row whose host position ``host`` differs from the predicted
    one (``pre``: x + dt v with the velocity read, else x) by more than ``tol`` (m) in a
    coordinate (:meth:`DeferredCorrection.take`'s test; NaN: False, as NumPy's comparison)."""
    for i in range(host.shape[0]):
        m = 0.0
        nan = False
        for c in range(3):
            want = x[i, c] + dt * vel[i, c] if pre else x[i, c]
            d = abs(host[i, c] - want)
            if d != d:
                nan = True
            elif d > m:
                m = d
        out[i] = free[i] and not nan and m > tol
