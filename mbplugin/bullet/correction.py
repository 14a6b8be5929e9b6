"""The position correction of a :class:`~mbplugin.bullet.BulletContacts`' free bodies (one
responsibility of the backend, owned by its :class:`~mbplugin.bullet.deferral.
DeferredCorrection`, which decides when): after PyBullet's semi-implicit step a body that
bounced inside the step is where the step's impulse acting at its start puts it; the
correction (:func:`mbplugin.hosts.correction.free_displacement`, written once for every host)
moves it along the contact normals so that its contacts' overlaps equal the integrated ones,
by a reset or (deferred) into its lag.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin.bullet.columns import Coupling
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.rotation import quat_from_rotvec, quat_multiply
from mbplugin.hosts.arrays import absmax_rows, cross_rows, nonzero_rows
from mbplugin.hosts.correction import MOVE_MIN, candidates, free_displacement
from mbplugin.hosts.protocol import ARTICULATED, FREE


class PositionCorrection:
    """The position correction of the rows of ``layout`` (:class:`~mbplugin.bullet.build.
    Layout`): ``mass`` (N,) kg, ``read`` the rows' reader (its world-inertia cache),
    ``flight`` the lags and resets, ``art`` the articulated bodies and ``core`` the generic
    host step (their blocks, for ``correct_articulated``)."""

    def __init__(self, layout: Any, mass: np.ndarray, read: Any, flight: Any, art: Any,
                 core: Any, correct_articulated: bool) -> None:
        self.kind, self.mass, self.nr = layout.kind, mass, len(layout.rows)
        self.read, self.flight, self.art, self.core = read, flight, art, core
        self.correct_articulated = correct_articulated
        #: the masses of the last host step's W when rows carried native bodies, with the
        #: rows coupled to theirs as one rigid body (:class:`mbplugin.bullet.columns.Coupling`),
        #: else None (``mass``)
        self.coupled: Coupling | None = None

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
        nr = self.nr
        mask = np.zeros(nr + 1, dtype=bool)  # index -1 (the ground): the spare entry
        mask[batch.a[sel]] = True
        mask[batch.b[sel]] = True
        sides = np.flatnonzero(mask[:nr] & (self.kind == FREE))
        self.flight.forced[sides] = True  # exact at the step end: no flight to book for this step
        # immediate: the selected bodies leave this step at their exact positions
        synced = (sides[nonzero_rows(self.flight.lag[sides])] if not deferred
                  else sides[:0])
        cp = self.coupled
        mass = self.mass if cp is None else cp.mass
        stiff = None if cp is None else cp.stiff

        def inv_i_w() -> np.ndarray:
            inv = self.read.world_inertia(bodies)[1][:-1]
            if stiff is None:
                return inv
            inv = inv.copy()  # a row moved with its column as one rigid body: the column's
            inv[stiff[0]] = stiff[2]
            return inv

        out = free_displacement(self.kind, mass, batch, W, res, d_now, sel, wdiag, inv_i_w)
        if out is None:  # every gap within MOVE_MIN: only the immediate syncs
            self.place(synced, np.zeros((nr, 3)), np.zeros((nr, 3)), bodies, host, raw)
            return
        mu, dx, dth = out
        if stiff is not None:  # turned about the column's centre: its own moves by dth x e
            dx[stiff[0]] += cross_rows(dth[stiff[0]], stiff[1])
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
