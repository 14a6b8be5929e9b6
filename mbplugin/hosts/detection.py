"""Detection's predictive margin of a host step and the prune of its candidate contacts: the
same rules for every host backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact import kernels as _k
from mbplugin.contact.model import PLANE, SPHERE
from mbplugin.hosts.arrays import max_norm_rows, norm_rows
from mbplugin.hosts.protocol import FREE

#: gaps (m) below which a detected contact is always kept (see :func:`prune`)
PRUNE_SLACK = 1e-6


def margin_of(bodies: BodyState, dt: float, g: np.ndarray) -> float:
    """The predictive margin (m) of a host step of ``dt`` s: dt (2 v_max + 0.1 omega_max) +
    |g| dt^2 + 1 um (a contact that can close within the step is integrated from its start;
    v_max m/s and omega_max rad/s the rows' largest speeds, ``g`` (3,) m/s^2)."""
    vmax = max_norm_rows(bodies.vel)
    wr = max_norm_rows(bodies.omega)  # (0 for omega = 0, as before)
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


@njit
def host_plane_spheres(sa, sb, body, lpos, lrot, plane_n, plane_p, radius, pos, quat, vel,
                       omega, margin, u0, d, u, found):
    """Overlap ``d`` (K,) and relative velocity ``u`` (K, 3; of sphere b's material point
    against plane a's at the contact point, world, m/s) of the plane-sphere shape pairs
    (``sa``, ``sb``; ``radius`` per shape, m) at the bodies' state (``pos``, ``quat``
    [w, x, y, z], ``vel``, ``omega`` world (N, .); a shape's body -1: the world); ``found``
    (K,) where
    d > -``margin`` (m), else d = -margin and u = ``u0``."""
    nb = pos.shape[0]
    R = np.empty((nb, 3, 3))
    for i in range(nb):
        m = _k.quat_matrix(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        for a in range(3):
            for b in range(3):
                R[i, a, b] = m[3 * a + b]
    Rp = np.empty((3, 3))
    Rs = np.empty((3, 3))
    for k in range(sa.shape[0]):
        p, s = sa[k], sb[k]
        cp = _k.shape_pose(p, body, lpos, lrot, pos, R, Rp)
        q0, q1, q2, n0, n1, n2 = _k.plane_frame(Rp, cp[0], cp[1], cp[2], plane_n[p], plane_p[p])
        cs = _k.shape_pose(s, body, lpos, lrot, pos, R, Rs)
        t = _k.plane_sphere(q0, q1, q2, n0, n1, n2, cs[0], cs[1], cs[2], radius[s])
        dl = t[6]
        if not dl > -margin:
            found[k] = False
            d[k] = -margin
            for a in range(3):
                u[k, a] = u0[k, a]
            continue
        kin = _k.contact_kinematics(body[p], body[s], t[0], t[1], t[2], t[3], t[4], t[5], pos,
                                    vel, omega)
        found[k] = True
        d[k] = dl
        dd = kin[6]
        u[k, 0] = kin[7] - dd * t[3]
        u[k, 1] = kin[8] - dd * t[4]
        u[k, 2] = kin[9] - dd * t[5]


class HostContacts:
    """The overlaps and velocities of a batch's plane-sphere contacts at a host state, in one
    compiled call (:func:`host_plane_spheres`); :meth:`read` returns None for a batch with any
    other kind of pair (the caller then takes the contact layer's ``detect_pairs``)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._last: tuple[Any, ...] | None = None

    def _pairs(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        last = self._last
        if last is not None and (last[0] is keys or (
                last[0].shape == keys.shape and (last[0] == keys).all())):
            return last[1]
        c = self.model.arrays
        sa, sb, feat = _k.decode_keys(keys, c.n)
        ok = (len(keys) > 0 and bool(np.all(c.kind[sa] == PLANE))
              and bool(np.all(c.kind[sb] == SPHERE)) and not bool(np.any(feat)))
        out = (np.ascontiguousarray(sa), np.ascontiguousarray(sb)) if ok else None
        self._last = (keys.copy(), out)
        return out

    def read(self, bodies: Any, keys: np.ndarray, margin: float,
             u0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(overlaps (K,), velocities (K, 3), found (K,)) of the contacts ``keys`` at the state
        ``bodies`` (a :class:`~mbplugin.contact.BodyState`): those of the contact layer's
        ``detect_pairs(bodies, keys, margin)`` (its kernels, the same bits); a contact beyond
        ``margin`` gets -margin and ``u0``. None when a key is not a plane-sphere pair."""
        pairs = self._pairs(keys)
        if pairs is None:
            return None
        c = self.model.arrays
        k = len(keys)
        d, u, found = np.empty(k), np.empty((k, 3)), np.empty(k, dtype=np.bool_)
        host_plane_spheres(pairs[0], pairs[1], c.body, c.lpos, c.lrot, c.plane_n, c.plane_p,
                           c.radius, bodies.pos, bodies.quat, bodies.vel, bodies.omega,
                           float(margin), np.ascontiguousarray(u0, dtype=float), d, u, found)
        return d, u, found
