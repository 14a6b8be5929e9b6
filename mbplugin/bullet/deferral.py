"""The deferred position correction of a :class:`~mbplugin.bullet.BulletContacts`' free
bodies (one responsibility of the backend, a base class of it): after PyBullet's semi-implicit
step a body that bounced inside the step is where the step's impulse acting at its start puts
it; the correction (:mod:`mbplugin.hosts.correction`) moves it so that its contacts' overlaps
equal the integrated ones. It is computed from the next step's state read and kept as an
offset of the host position (the lag of :mod:`mbplugin.bullet.flight`) until it matters
(``defer_tol``), then applied by a reset; ``after_step`` books a host step.

The methods work on the backend's state; they are the backend's own, kept apart from its
stepping.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin.bullet import checks
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
    """The deferred position correction of :class:`~mbplugin.bullet.BulletContacts` (module
    docstring)."""

    def _take_deferred(self, bodies: BodyState, dt: float) -> np.ndarray:
        """Book the last step's position correction from this state read (``bodies``: the host
        state, read before the coming host step or by :meth:`sync`). Returns the host positions
        (N, 3), updated for the rows reset here.

        The correction of :meth:`_correct` needs the host's state at the end of the step it
        corrects; unless the user changed something in between, the next step's read sees that
        same state, so the read after ``stepSimulation`` is skipped and the correction is
        computed here, from the same function on the same positions (host + lag). A free body's
        displacement is booked into its lag (exact - host position) instead of two PyBullet
        resets per body; detection and integration use host + lag (as for the exact free
        flight), and :meth:`_apply` applies the forces at the contact points as the host sees
        them. The host is reset once: by :meth:`_land`, at :meth:`sync`, or here for a body
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
        exp = self._expect
        self._expect = None
        if exp is not None and exp[1].shape == host.shape:
            want = exp[1] + exp[2] * bodies.vel if exp[0] == "pre" else exp[1]
            user = free & (absmax_rows(host - want) > HOST_TOL)
            user |= free & self._turned(bodies, exp[3], exp[2])
        native = np.zeros(n, dtype=bool)
        native[self._native_rows[self._native_rows < n]] = True
        self._native_rows = np.zeros(0, dtype=np.int64)
        user &= ~native
        self._lag[user] = 0.0
        pend, self._deferred = self._deferred, None
        if pend is not None and len(pend[0]):
            batch, W, res, wdiag = pend
            exact = BodyState(bodies.pos + self._lag, bodies.quat, bodies.vel, bodies.omega,
                              bodies.mass, bodies.inv_inertia, bodies.fixed)
            # only the corrected contacts' overlaps are needed: their pairs' narrow phase
            # (the same calls and bits as a detection; fallback pairs: a full detection)
            now = (self._detect(exact, self._margin) if len(self._fb_pairs)
                   else self.model.detect_pairs(exact, batch.key, margin=self._margin))
            pos = lookup(now.key, batch.key)
            ue = np.append(user, False)  # index -1: the ground
            ok = (pos >= 0) & ~ue[batch.a] & ~ue[batch.b]
            d_now = np.full(len(batch), np.nan)
            if ok.any():
                d_now[ok] = now.delta[pos[ok]]
            self._correct(batch, W, res, d_now, exact, raw=bodies, host=host, wdiag=wdiag)
        rows = np.flatnonzero(native & free & nonzero_rows(self._lag))
        if len(rows):
            new = bodies.pos[rows] + self._lag[rows]
            self._reset(rows, new, bodies.quat[rows], bodies.vel[rows], bodies.omega[rows])
            bodies.pos[rows] = host[rows] = new
            self._lag[rows] = 0.0
            self._forced[rows] = True
        return host

    def _native_touch(self, rows: np.ndarray) -> np.ndarray:
        """Of these rows, those whose body touched a native contact point (an unmanaged pair)
        in the last ``stepSimulation``, or all of them when the world has a constraint."""
        c = self.client
        if not len(rows):
            return rows
        if int(c("getNumConstraints")) > 0:
            return rows
        points = getattr(self, "_points", None)  # read by _host_unpredictable in this step
        if points is None:
            points = c("getContactPoints")  # PyBullet's own contacts, one call
        if not points:
            return rows[:0]
        touching = np.array(sorted({pt[1] for pt in points} | {pt[2] for pt in points}))
        return rows[np.isin(self._rows_arr[rows, 0], touching)]

    @checks.host_guard
    def after_step(self, dt: float | None = None) -> None:
        """Book the host step: position correction of free bodies, the residual acceleration of
        articulated contacts, the time."""
        c = self.client
        dt = c.time_step() if dt is None else float(dt)
        pend = getattr(self, "_pending", None)
        self._pending = None
        self._points = None  # PyBullet's contact points of this step once read
        self.core.after(self._host, dt)  # the implicit step: solved from the host's end state
        lagged = np.flatnonzero(nonzero_rows(self._lag))
        if pend is not None and self._host_unpredictable(pend, dt):
            batch, W, res, _, wdiag = pend
            art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
            nr = len(self.rows)
            mine = self._row_mask(batch)  # the free rows of the batch's contacts
            lag_mask = np.zeros(nr, dtype=bool)
            lag_mask[lagged] = True
            touched = self._native_touch(np.flatnonzero(mine | lag_mask))
            if not (self.correct_articulated and art.any()) and not mine[touched].any():
                # the correction is computed from the next step's state read
                self._deferred = (batch, W, res, wdiag)
                self._native_rows = touched
                self.t += dt
                return
            bodies = self.body_state()
            host = bodies.pos.copy()
            free = self.kind == FREE
            np.add(bodies.pos, self._lag, out=bodies.pos, where=free[:, None])  # free rows
            now = self._detect(bodies, self._margin)
            pos = lookup(now.key, batch.key)
            ok = pos >= 0
            d_now = np.full(len(batch), np.nan)
            if ok.any():
                d_now[ok] = now.delta[pos[ok]]
            if self.correct_positions:
                self._correct(batch, W, res, d_now, bodies, host=host, wdiag=wdiag)
            self._expect = ("post", host, 0.0, bodies.quat.copy())
            self._native_rows = touched
        elif len(lagged):
            self._native_rows = self._native_touch(lagged)
        self.t += dt

    def _row_mask(self, batch: ContactBatch) -> np.ndarray:
        """(N,) True for the free rows that are a side of one of the batch's contacts."""
        nr = len(self.rows)
        mask = np.zeros(nr + 1, dtype=bool)  # index -1 (the ground) lands on the spare entry
        mask[batch.a] = True
        mask[batch.b] = True
        return mask[:nr] & (self.kind == FREE)

    def _host_unpredictable(self, pend: tuple[Any, ...], dt: float) -> bool:
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
        if self._any_art or res.implicit is not None:
            art = np.zeros(len(a), dtype=bool)
            if self._any_art:
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
        if not overlap_predicted(batch, W, res, a_free, self._omega0, dt, sel):
            return True
        c = self.client
        if int(c("getNumConstraints")) > 0:
            return True
        points = c("getContactPoints")  # PyBullet's own contacts (unmanaged pairs), one call
        self._points = points  # for _native_touch in the same after_step
        if points:
            touching = {pt[1] for pt in points} | {pt[2] for pt in points}
            mine = {self.rows[i][0] for i in chain(a.tolist(), b.tolist())}
            if touching & mine:
                return True
        return False

    def _correct(self, batch: ContactBatch, W: sp.csr_matrix, res: Any, d_now: np.ndarray,
                 bodies: BodyState, host: np.ndarray, raw: BodyState | None = None,
                 wdiag: np.ndarray | None = None) -> None:
        """Move the free bodies along the contact normals so that the host's overlaps equal the
        integrated ones (``bodies``: the state at the end of the corrected step, host position
        + lag; ``d_now``: its overlaps, NaN where not found). Immediately (``raw`` None: right
        after the step): the moved bodies and those of the selected contacts that carry a lag
        are reset to their corrected exact positions. Deferred (``raw``: the host state read
        before the next step, see :meth:`_take_deferred`): a translation is booked into the
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
        self._forced[sides] = True  # exact at the step end: no flight to book for this step
        # immediate: the selected bodies leave this step at their exact positions
        synced = (sides[nonzero_rows(self._lag[sides])] if not deferred
                  else sides[:0])
        gap = pick(d_now) - pick(res.delta)
        if np.max(np.abs(gap)) <= MOVE_MIN:
            self._place(synced, np.zeros((len(self.rows), 3)), np.zeros((len(self.rows), 3)),
                        bodies, host, raw)
            return
        n = pick(batch.normal)
        mu = position_impulse(gap, W, batch.normal, sel,
                              None if wdiag is None else pick(wdiag))
        # position impulse mu along n on b, -mu on a: displacement of the free bodies
        inv_i_w = self._world_inertia(bodies)[1][:-1]
        dx, dth = displacement(self.kind, self.mass, inv_i_w,
                               ((b_s, 1.0, pick(batch.rb)), (a_s, -1.0, pick(batch.ra))), mu, n,
                               wdiag is not None)
        # bodies moved by more than MOVE_MIN (a resting contact's correction is at the rounding
        # level, ~1e-15 m: resetting its body would cost two PyBullet calls for nothing)
        moved = np.flatnonzero((absmax_rows(dx) > MOVE_MIN) | (absmax_rows(dth) > MOVE_MIN))
        self._place(np.union1d(moved, synced) if len(synced) else moved, dx, dth, bodies, host,
                    raw)
        # articulated bodies: the same position impulse through the joint-space mass matrix,
        # dq = M^-1 sum_e s_e J_e^T (mu n) (PyBullet's coordinates: base angular, base linear in
        # the base frame, then the joints)
        if self.correct_articulated:
            mu_of = np.zeros(len(batch))
            mu_of[sel] = mu
            self._art.correct(self.core._art, batch, mu_of)

    def _place(self, rows: np.ndarray, dx: np.ndarray, dth: np.ndarray, bodies: BodyState,
               host: np.ndarray, raw: BodyState | None) -> None:
        """The correction's displacement (dx, dth: (N, 3) m, rad) of these free rows: reset to
        exact + dx (immediate, or a turning body), or booked into the lag (deferred)."""
        if not len(rows):
            return
        if raw is not None:
            turn = absmax_rows(dth[rows]) > MOVE_MIN
            book = rows[~turn]
            into = np.zeros(len(self._lag), dtype=bool)
            into[book] = True  # (distinct rows) lag[book] += dx[book], in place without gathers
            np.add(self._lag, dx, out=self._lag, where=into[:, None])
            rows = rows[turn]
            if not len(rows):
                return
        pos = bodies.pos[rows] + dx[rows]
        quat = quat_multiply(quat_from_rotvec(dth[rows]), bodies.quat[rows])
        self._reset(rows, pos, quat, bodies.vel[rows], bodies.omega[rows])
        self._lag[rows] = 0.0
        host[rows] = pos
        bodies.quat[rows] = quat  # the host's orientation now (the intervention check's)
        if raw is not None:
            raw.pos[rows], raw.quat[rows] = pos, quat
