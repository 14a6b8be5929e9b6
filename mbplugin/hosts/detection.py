"""Detection's predictive margin of a host step and the prune of its candidate contacts: the
same rules for every host backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts.arrays import norm_rows
from mbplugin.hosts.protocol import FREE

#: gaps (m) below which a detected contact is always kept (see :func:`prune`)
PRUNE_SLACK = 1e-6


def margin_of(bodies: BodyState, dt: float, g: np.ndarray) -> float:
    """The predictive margin (m) of a host step of ``dt`` s: dt (2 v_max + 0.1 omega_max) +
    |g| dt^2 + 1 um (a contact that can close within the step is integrated from its start;
    v_max m/s and omega_max rad/s the rows' largest speeds, ``g`` (3,) m/s^2)."""
    vmax = float(np.max(norm_rows(bodies.vel), initial=0.0))
    wr = float(np.max(norm_rows(bodies.omega), initial=0.0)) if bodies.omega.any() else 0.0
    return dt * (2.0 * vmax + 0.1 * wr) + dt * dt * float(np.linalg.norm(g)) + 1e-6


def prune(batch: ContactBatch, bodies: BodyState, kind: np.ndarray, store: Any, dt: float,
          g: np.ndarray) -> ContactBatch:
    """The detected contacts without those between two free bodies that cannot close in
    the coming host step (not active, not latched, a gap wider than PRUNE_SLACK).

    Detection's predictive margin is global, dt (2 v_max + 0.1 omega_max) + g dt^2: any
    two bodies might approach each other at v_max. In a cloud of bodies falling together
    (a pile being poured) their relative speeds are small and that margin takes in every
    neighbour within centimetres (300 spheres falling 0.4 m: ~16 000 candidate contacts,
    all one group, a W of 30 million entries). A gap is kept here when it may close by the
    pair's own motion over the step, dt (|u| + |omega_a| |r_a| + |omega_b| |r_b|) (u the
    relative velocity at the contact point), or once one of its bodies is pushed within
    the step by a contact that is active or may close by its own motion (that contact's
    2 (|u| + |a_free| dt) added per body: the speed an impact can give the lighter side).
    Pairs with a static or articulated side keep the global margin. ``kind`` (N,) the rows'
    kinds, ``store`` the contact store (its active and latched contacts), ``g`` (3,) m/s^2."""
    if not len(batch):
        return batch
    fe = np.append(kind == FREE, False)  # index -1: the spare False
    free2 = fe[batch.a] & fe[batch.b]
    cand = free2 & (batch.delta < -PRUNE_SLACK)
    if not cand.any():
        return batch
    known = store.rows(batch) >= 0
    if len(store.latched_keys):
        known |= store.latched(batch)
    cand &= ~known
    if not cand.any():
        return batch
    n = batch.normal
    u = batch.vt - batch.ddelta[:, None] * n
    om = np.vstack([bodies.omega, np.zeros((1, 3))])
    turn = (norm_rows(om[batch.a]) * norm_rows(batch.ra)
            + norm_rows(om[batch.b]) * norm_rows(batch.rb))
    accel = np.where(free2, 0.0, float(np.linalg.norm(g)))  # free-free: gravity cancels
    speed = norm_rows(u) + turn
    own = dt * speed + dt * dt * accel + PRUNE_SLACK
    loaded = known | (batch.delta > -own)
    push = np.zeros(len(kind) + 1)
    kick = 2.0 * (speed[loaded] + accel[loaded] * dt)
    np.maximum.at(push, batch.a[loaded], kick)
    np.maximum.at(push, batch.b[loaded], kick)
    push[-1] = 0.0
    keep = ~cand | (batch.delta > -(own + dt * (push[batch.a] + push[batch.b])))
    return batch if keep.all() else batch.take(keep)
