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
import scipy.sparse as sp

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.rotation import quat_from_rotvec, quat_multiply
from mbplugin.hosts.arrays import absmax_rows, lookup, nonzero_rows
from mbplugin.hosts.correction import (
    MOVE_MIN,
    candidates,
    displacement,
    overlap_predicted,
    position_impulse,
)
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
            want = exp[1] + exp[2] * bodies.vel if exp[0] == "pre" else exp[1]
            user = free & (absmax_rows(host - want) > HOST_TOL)
            user |= free & self.flight.turned(bodies, exp[3], exp[2])
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
            self.correct(batch, W, res, d_now, exact, raw=bodies, host=host, wdiag=wdiag)
        rows = np.flatnonzero(native & free & nonzero_rows(self.flight.lag))
        if len(rows):
            new = bodies.pos[rows] + self.flight.lag[rows]
            self.flight.reset(rows, new, bodies.quat[rows], bodies.vel[rows], bodies.omega[rows])
            bodies.pos[rows] = host[rows] = new
            self.flight.lag[rows] = 0.0
            self.flight.forced[rows] = True
        return host

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
            points = c("getContactPoints")  # PyBullet's own contacts, one call
        if not points:
            return rows[:0]
        touching = np.array(sorted({pt[1] for pt in points} | {pt[2] for pt in points}))
        return rows[np.isin(self.rows_arr[rows, 0], touching)]

    def begin_after(self) -> tuple[Any, ...] | None:
        """The host step's carries (taken: :meth:`after` books them once)."""
        pend, self.pending = self.pending, None
        self._points = None
        return pend

    def after(self, pend: tuple[Any, ...] | None, dt: float) -> None:
        """Book the host step just taken (``pend``: :meth:`begin_after`'s): the position
        correction of free bodies, now or deferred to the next state read."""
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
                self.correct(batch, W, res, d_now, bodies, host=host, wdiag=wdiag)
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
        if not overlap_predicted(batch, W, res, a_free, self.omega0, dt, sel):
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

    def correct(self, batch: ContactBatch, W: sp.csr_matrix, res: Any, d_now: np.ndarray,
                 bodies: BodyState, host: np.ndarray, raw: BodyState | None = None,
                 wdiag: np.ndarray | None = None) -> None:
        """Move the free bodies along the contact normals so that the host's overlaps equal the
        integrated ones (``bodies``: the state at the end of the corrected step, host position
        + lag; ``d_now``: its overlaps, NaN where not found). Immediately (``raw`` None: right
        after the step): the moved bodies and those of the selected contacts that carry a lag
        are reset to their corrected exact positions. Deferred (``raw``: the host state read
        before the next step, see :meth:`take`): a translation is booked into the
        lag, a body that also turns is reset (``raw`` and ``host`` are updated). ``wdiag``: the
        normal-normal diagonal of W when W is block diagonal (then the normal Delassus matrix is
        that diagonal, and its solve a division)."""
        deferred = raw is not None
        # contacts that carried force, or that either side sees touching at the step end (the
        # host's free flight differs from the exact one by up to a dt^2 per step: a contact the
        # integration saw still open may be closed in the host, or the reverse)
        art = None
        if not self.correct_articulated:
            art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
        sel = candidates(res, d_now, art)
        # nothing to correct (contacts at rest: the host's overlap equals the integrated one
        # to rounding, ~1e-15 m)
        if not len(sel):
            return
        whole = len(sel) == len(batch)  # every contact selected: no gathers

        def pick(x: np.ndarray) -> np.ndarray:
            return x if whole else x[sel]

        a_s, b_s = pick(batch.a), pick(batch.b)
        nr = len(self.rows)
        mask = np.zeros(nr + 1, dtype=bool)  # index -1 (the ground): the spare entry
        mask[a_s] = True
        mask[b_s] = True
        sides = np.flatnonzero(mask[:nr] & (self.kind == FREE))
        self.flight.forced[sides] = True  # exact at the step end: no flight to book for this step
        # immediate: the selected bodies leave this step at their exact positions
        synced = (sides[nonzero_rows(self.flight.lag[sides])] if not deferred
                  else sides[:0])
        gap = pick(d_now) - pick(res.delta)
        if np.max(np.abs(gap)) <= MOVE_MIN:
            self.place(synced, np.zeros((len(self.rows), 3)), np.zeros((len(self.rows), 3)),
                        bodies, host, raw)
            return
        n = pick(batch.normal)
        mu = position_impulse(gap, W, batch.normal, sel,
                              None if wdiag is None else pick(wdiag))
        # position impulse mu along n on b, -mu on a: displacement of the free bodies
        inv_i_w = self.read.world_inertia(bodies)[1][:-1]
        dx, dth = displacement(self.kind, self.mass, inv_i_w,
                               ((b_s, 1.0, pick(batch.rb)), (a_s, -1.0, pick(batch.ra))), mu, n,
                               wdiag is not None)
        # bodies moved by more than MOVE_MIN (a resting contact's correction is at the rounding
        # level, ~1e-15 m: resetting its body would cost two PyBullet calls for nothing)
        moved = np.flatnonzero((absmax_rows(dx) > MOVE_MIN) | (absmax_rows(dth) > MOVE_MIN))
        self.place(np.union1d(moved, synced) if len(synced) else moved, dx, dth, bodies, host,
                    raw)
        # articulated bodies: the same position impulse through the joint-space mass matrix,
        # dq = M^-1 sum_e s_e J_e^T (mu n) (PyBullet's coordinates: base angular, base linear in
        # the base frame, then the joints)
        if self.correct_articulated:
            mu_of = np.zeros(len(batch))
            mu_of[sel] = mu
            self.art.correct(self.core._art, batch, mu_of)

    def place(self, rows: np.ndarray, dx: np.ndarray, dth: np.ndarray, bodies: BodyState,
               host: np.ndarray, raw: BodyState | None) -> None:
        """The correction's displacement (dx, dth: (N, 3) m, rad) of these free rows: reset to
        exact + dx (immediate, or a turning body), or booked into the lag (deferred)."""
        if not len(rows):
            return
        if raw is not None:
            turn = absmax_rows(dth[rows]) > MOVE_MIN
            book = rows[~turn]
            into = np.zeros(len(self.flight.lag), dtype=bool)
            into[book] = True  # (distinct rows) lag[book] += dx[book], in place without gathers
            np.add(self.flight.lag, dx, out=self.flight.lag, where=into[:, None])
            rows = rows[turn]
            if not len(rows):
                return
        pos = bodies.pos[rows] + dx[rows]
        quat = quat_multiply(quat_from_rotvec(dth[rows]), bodies.quat[rows])
        self.flight.reset(rows, pos, quat, bodies.vel[rows], bodies.omega[rows])
        self.flight.lag[rows] = 0.0
        host[rows] = pos
        bodies.quat[rows] = quat  # the host's orientation now (the intervention check's)
        if raw is not None:
            raw.pos[rows], raw.quat[rows] = pos, quat
