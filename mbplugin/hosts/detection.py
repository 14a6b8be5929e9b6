"""Detection's predictive margin of a host step and the prune of its candidate contacts: the
same rules for every host backend."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mbplugin._jit import njit, njit_inline
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact import kernels as _k
from mbplugin.contact.model import BOX, CAPSULE, MESH, PLANE, SPHERE
from mbplugin.errors import ParameterError
from mbplugin.hosts.arrays import max_norm_rows, norm_rows
from mbplugin.hosts.protocol import ARTICULATED, FREE, STATIC

#: gaps (m) below which a detected contact is always kept (see :func:`prune`)
PRUNE_SLACK = 1e-6


def margin_of(bodies: BodyState, dt: float, g: np.ndarray) -> float:
    """The predictive margin (m) of a host step of ``dt`` s: dt (2 v_max + 0.1 omega_max) +
    |g| dt^2 + 1 um (a contact that can close within the step is integrated from its start;
    v_max m/s and omega_max rad/s the rows' largest speeds, ``g`` (3,) m/s^2)."""
    vmax = max_norm_rows(bodies.vel)
    wr = max_norm_rows(bodies.omega)  # (0 for omega = 0, as before)
    return margin_value(vmax, wr, float(dt), float(np.linalg.norm(g)))


@njit
def margin_value(vmax, wr, dt, g_norm):
    """:func:`margin_of`'s margin (m) of the rows' largest speeds ``vmax`` m/s and ``wr``
    rad/s, the step ``dt`` s and gravity's magnitude ``g_norm`` m/s^2 (also called from
    compiled code)."""
    return dt * (2.0 * vmax + 0.1 * wr) + dt * dt * g_norm + 1e-6


def prune(batch: ContactBatch, bodies: BodyState, kind: np.ndarray, store: Any, dt: float,
          g: np.ndarray, static: bool = False,
          momentum: np.ndarray | None = None,
          points: np.ndarray | None = None) -> ContactBatch:
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
    Pairs with a static or articulated side keep the global margin, unless ``static``: then
    a pair of one static side (the world's geometry: a floor) and one moving row is pruned by
    the same rule, the moving side's own motion (gravity's dt^2 |g| included) and its pushes,
    where a row of an articulated body is pushed by every loaded contact on any articulated
    row (a contact on one link moves the others; the rows' trees are not known here). Without
    it the global margin, set by the fastest row (a swinging leg: 10-16 mm at 2 ms), takes in
    every hull corner of a robot's body within centimetres of the floor (the A1 collapsed on
    ``manage=["floor"]``: ~110 contacts in a step, 3-10 of them closed). A static row (a
    managed plane) is never pushed. ``momentum`` (N,) kg (with ``static``): each row's mass
    against a push through the joints (a link's own, or with the links welded to it by fixed
    joints); then a loaded contact on another articulated row pushes a row by the momentum it
    can pass on rather than its own kick: an impact of effective mass m_eff at a kick w (the
    kick above) exchanges an impulse of about m_eff w, which changes the velocity of a row of
    mass m by about m_eff w / m (momentum conservation; the contact's own row keeps the full
    kick w): a row's push from the others is min(max w, max(m_eff w) / m). Without it a
    swinging calf (m_eff 0.04-0.1 kg, corners at 8-10 m/s from omega 20-50 rad/s) pushes the
    A1's every link by 2 x 10 m/s x dt = 85 mm at 1/240 s and every hull corner of its
    collapsed body within that stays a candidate (~170 contacts, 2-8 of them closed).
    ``kind`` (N,) the rows' kinds, ``store`` the contact store (its active and latched
    contacts), ``g`` (3,) m/s^2.

    ``points`` (K,) int8 (with ``static``; :func:`plane_points`: the plane's side, 1 a or 2 b,
    else 0): the contacts whose gap is a material point's of the moving row (a sphere's or a
    capsule end's centre, a box's or a hull's corner) to a plane of the static side,
    n . (x - p0) - radius with n and p0 fixed.
    Their own motion is bounded to second order rather than by dt (|u| + |omega| |r|): a row
    moving with its twist (v, omega) carries the point along x(t) = c + v t + R(omega t) r, so
    the approach over t <= dt is

        n . (x(0) - x(t)) = t ddelta - n . (R(omega t) r - r - t omega x r)
                          <= dt max(ddelta, 0) + (|omega| dt)^2 / 2 |r|

    (``ddelta`` = -n . v(x) the point's closing speed, the same at the contact point: the two
    differ by a multiple of n, and n . (omega x n) = 0; the remainder of Taylor's formula for
    s -> R(omega s) r, whose second derivative omega x (omega x R r) has norm <= |omega|^2 |r|;
    |r| bounded by the moving side's |r_a| or |r_b| plus |delta|, the contact point being
    within |delta| of the point). The tangential speed, which cannot close a gap to a plane, and
    the first-order turn are no longer counted; gravity's dt^2 |g| and the pushes of loaded
    contacts (whose kicks keep the first-order bound: an impact's velocity change) are as
    before. The rest of a row's velocity change within the step (joint torques, the links'
    kinematics) stays what the pushes cover, as before (measured on the Mini Cheetah at rest
    with its legs flailing, 80 steps: candidates 263 -> 133, none of those dropped touching at
    the next step; a kick of the closing speed alone dropped corners that did: BENCHMARKS.md,
    branch mcprune)."""
    if not len(batch):
        return batch
    fe = np.append(kind == FREE, False)  # index -1: the spare False
    free2 = fe[batch.a] & fe[batch.b]
    one_static = np.zeros(len(batch), dtype=bool)
    if static:
        st = np.append(kind == STATIC, True)  # index -1: the world
        one_static = st[batch.a] ^ st[batch.b]
    cand = (free2 | one_static) & (batch.delta < -PRUNE_SLACK)
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
    if static and points is not None:  # a material point on a fixed plane (docstring)
        on_b = points == 2  # the plane on side b: the point on side a (1: the reverse)
        tight = ((points == 1) & st[batch.a] & ~st[batch.b]) | (on_b & st[batch.b]
                                                                 & ~st[batch.a])
        if tight.any():
            w = np.where(on_b, norm_rows(om[batch.a]), norm_rows(om[batch.b]))
            lever = np.where(on_b, norm_rows(batch.ra), norm_rows(batch.rb)) + np.abs(
                batch.delta)
            second = (dt * np.maximum(batch.ddelta, 0.0) + 0.5 * (dt * w) ** 2 * lever
                      + dt * dt * accel + PRUNE_SLACK)
            own = np.where(tight, np.minimum(own, second), own)
    loaded = known | (batch.delta > -own)
    push = np.zeros(len(kind) + 1)
    kick = 2.0 * (speed[loaded] + accel[loaded] * dt)
    np.maximum.at(push, batch.a[loaded], kick)
    np.maximum.at(push, batch.b[loaded], kick)
    if static:  # an articulated row: pushed by any loaded contact on an articulated row
        art = np.append(kind == ARTICULATED, False)
        on_art = loaded & (art[batch.a] | art[batch.b])
        if on_art.any():
            rows = np.flatnonzero(kind == ARTICULATED)
            w = kick[on_art[loaded]]
            if momentum is not None:  # the momentum a loaded contact passes on (docstring)
                p_max = float(np.max(batch.m_eff[loaded][on_art[loaded]] * w))
                m = np.asarray(momentum, dtype=float)[rows]
                pos = m > 0.0  # a massless row: the whole kick
                share = np.full(len(rows), float(w.max()))
                share[pos] = np.minimum(share[pos], p_max / m[pos])
                push[rows] = np.maximum(push[rows], share)
            else:
                push[rows] = np.maximum(push[rows], w.max())
    push[-1] = 0.0
    push[:-1][kind == STATIC] = 0.0  # a static row (a managed plane) is never pushed
    keep = ~cand | (batch.delta > -(own + dt * (push[batch.a] + push[batch.b])))
    return batch if keep.all() else batch.take(keep)


def plane_points(arrays: Any, keys: np.ndarray) -> np.ndarray:
    """(K,) int8: for the contacts of ``keys`` (the contact model's keys, ``arrays`` its
    :class:`~mbplugin.contact.model.ContactModel` arrays) whose gap is a material point's to a
    plane (:func:`prune`'s ``points``) the plane's side, 1 (a) or 2 (b), else 0: a plane
    against a sphere (its centre), a capsule (an end's centre), a box (a corner, or a rounded
    corner's centre) or a mesh's corner feature (a hull's vertex; not a smooth region, whose
    deepest point moves over it as it turns)."""
    keys = np.asarray(keys, dtype=np.int64)
    n = int(arrays.n)
    out = np.zeros(len(keys), dtype=np.int8)
    if not len(keys) or n == 0:
        return out
    sa, sb, feat = _k.decode_keys(keys, n)
    ok = (sa >= 0) & (sa < n) & (sb >= 0) & (sb < n)
    sa, sb = np.where(ok, sa, 0), np.where(ok, sb, 0)
    pa, pb = arrays.kind[sa] == PLANE, arrays.kind[sb] == PLANE
    one = ok & (pa ^ pb)
    other = np.where(pa, sb, sa)
    ko = arrays.kind[other]
    point = one & np.isin(ko, (SPHERE, CAPSULE, BOX))
    mesh = np.flatnonzero(one & (ko == MESH))
    if len(mesh):
        ms = arrays.mesh
        f, s = feat[mesh], other[mesh]
        inside = (f >= 0) & (f < ms.n_feat[s])
        smooth = np.asarray(ms.fsmooth, dtype=bool)
        if len(smooth):
            row = np.where(inside, ms.feat0[s] + f, 0)
            point[mesh] = inside & ~smooth[row]
        else:
            point[mesh] = False
    out[point & pa] = 1
    out[point & pb] = 2
    return out


@njit_inline
def _rotations(quat):
    """The rotation matrices (N, 3, 3) of the quaternions (N, 4) [w, x, y, z] (the contact
    layer's ``quat_matrix``, as ``BodyState.rotations_ext``)."""
    nb = quat.shape[0]
    R = np.empty((nb, 3, 3))
    for i in range(nb):
        m = _k.quat_matrix(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        for a in range(3):
            for b in range(3):
                R[i, a, b] = m[3 * a + b]
    return R


@njit_inline
def _plane_sphere_pair(p, s, body, lpos, lrot, plane_n, plane_p, radius, pos, R, Rp, Rs):
    """(point, normal, delta) 7-tuple of plane shape ``p`` against sphere shape ``s`` at the
    bodies' poses (``pos``, rotations ``R``; ``Rp``, ``Rs`` (3, 3) work arrays): the contact
    layer's kernels (``shape_pose``, ``plane_frame``, ``plane_sphere``)."""
    cp = _k.shape_pose(p, body, lpos, lrot, pos, R, Rp)
    q0, q1, q2, n0, n1, n2 = _k.plane_frame(Rp, cp[0], cp[1], cp[2], plane_n[p], plane_p[p])
    cs = _k.shape_pose(s, body, lpos, lrot, pos, R, Rs)
    return _k.plane_sphere(q0, q1, q2, n0, n1, n2, cs[0], cs[1], cs[2], radius[s])


@njit
def host_plane_spheres(sa, sb, body, lpos, lrot, plane_n, plane_p, radius, pos, quat, vel,
                       omega, margin, u0, d, u, found):
    """Overlap ``d`` (K,) and relative velocity ``u`` (K, 3; of sphere b's material point
    against plane a's at the contact point, world, m/s) of the plane-sphere shape pairs
    (``sa``, ``sb``; ``radius`` per shape, m) at the bodies' state (``pos``, ``quat``
    [w, x, y, z], ``vel``, ``omega`` world (N, .); a shape's body -1: the world); ``found``
    (K,) where
    d > -``margin`` (m), else d = -margin and u = ``u0``."""
    R = _rotations(quat)
    Rp = np.empty((3, 3))
    Rs = np.empty((3, 3))
    for k in range(sa.shape[0]):
        p, s = sa[k], sb[k]
        t = _plane_sphere_pair(p, s, body, lpos, lrot, plane_n, plane_p, radius, pos, R, Rp, Rs)
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


@njit
def plane_sphere_contacts(sa, sb, body, lpos, lrot, plane_n, plane_p, radius, pos, quat, vel,
                          omega, inv_m, inv_i, margin, idx, point, normal, delta, ddelta, vt,
                          m_eff, ra, rb):
    """The contacts of the plane-sphere shape pairs (``sa`` planes, ``sb`` spheres; ``radius``
    per shape, m) with delta > -``margin`` (m) at the bodies' state (``pos``, ``quat`` [w, x,
    y, z], ``vel``, ``omega`` world (N, .); a shape's body -1: the world; ``inv_m`` (N + 1,),
    ``inv_i`` (N + 1, 3, 3) world frame, as the contact layer's ``finish`` takes them): the
    contact layer's kernels (:func:`host_plane_spheres`' geometry, then ``contact_kinematics``
    and ``effective_mass``), written into the output rows in the pairs' order, ``idx`` the
    pair of each; returns their count."""
    R = _rotations(quat)
    Rp = np.empty((3, 3))
    Rs = np.empty((3, 3))
    n = 0
    for k in range(sa.shape[0]):
        p, s = sa[k], sb[k]
        t = _plane_sphere_pair(p, s, body, lpos, lrot, plane_n, plane_p, radius, pos, R, Rp, Rs)
        if not t[6] > -margin:
            continue
        idx[n] = k
        for a in range(3):
            point[n, a] = t[a]
            normal[n, a] = t[3 + a]
        delta[n] = t[6]
        ba, bb = body[p], body[s]
        kin = _k.contact_kinematics(ba, bb, t[0], t[1], t[2], t[3], t[4], t[5], pos, vel, omega)
        for a in range(3):
            ra[n, a] = kin[a]
            rb[n, a] = kin[3 + a]
            vt[n, a] = kin[7 + a]
        ddelta[n] = kin[6]
        m_eff[n] = _k.effective_mass(ba, bb, kin[0], kin[1], kin[2], kin[3], kin[4], kin[5],
                                     t[3], t[4], t[5], inv_m, inv_i)
        n += 1
    return n


class PlaneSphereDetection:
    """Detection of a host whose managed shape pairs are all plane-sphere pairs (spheres on
    the ground), in one compiled call (:func:`plane_sphere_contacts`): the batch of the
    contact layer's ``detect`` followed by :func:`mbplugin.hosts.model.keep_managed`, the
    same contacts in the same order (by key) with the same bits, without its broad phase
    and per-step Python. The pairs' constant fields (keys, bodies, laws, Hertz stiffness,
    effective radius) are the contact layer's ``finish`` of every pair, derived once.
    :meth:`of` returns None for any other model (the caller keeps the general path)."""

    def __init__(self, model: Any, sa: np.ndarray, sb: np.ndarray) -> None:
        self.model = model
        self.sa, self.sb = sa, sb
        self._c: Any = None
        self._const: tuple[np.ndarray, ...] | None = None

    @classmethod
    def of(cls, model: Any, pairs: np.ndarray, fixed: np.ndarray) -> PlaneSphereDetection | None:
        """The detector of the managed shape ``pairs`` (P, 2) of ``model`` (rows ``fixed``
        (N,) static), or None unless every pair is a plane and a sphere."""
        c = model.arrays
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if not len(pairs):
            return None
        ka, kb = c.kind[pairs[:, 0]], c.kind[pairs[:, 1]]
        plane_a = (ka == PLANE) & (kb == SPHERE)
        if not np.all(plane_a | ((kb == PLANE) & (ka == SPHERE))):
            return None
        sa = np.where(plane_a, pairs[:, 0], pairs[:, 1])
        sb = np.where(plane_a, pairs[:, 1], pairs[:, 0])
        code = np.unique(sa * c.n + sb)
        sa, sb = code // c.n, code % c.n  # sorted as the keys: the detection's order
        ok = c._allowed(sa, sb, np.append(np.asarray(fixed, dtype=bool), True))
        if not ok.any():
            return None
        return cls(model, np.ascontiguousarray(sa[ok]), np.ascontiguousarray(sb[ok]))

    def _constants(self, bodies: BodyState) -> tuple[np.ndarray, ...]:
        """(a, b, key, law, k_hertz, r_eff) of every pair: the contact layer's ``finish``."""
        c = self.model.arrays
        if self._const is None or self._c is not c:
            k = len(self.sa)
            z3 = np.zeros((k, 3))
            z3[:, 2] = 1.0
            cat = {"sa": self.sa, "sb": self.sb, "point": np.zeros((k, 3)), "normal": z3,
                   "delta": np.zeros(k), "r_eff": c.radius[self.sb],
                   "feature": np.zeros(k, dtype=np.int64)}
            rot = bodies.rotations_ext()
            full = c.finish(cat, bodies, rot, *bodies.kinematics_ext())
            self._const = (full.a, full.b, full.key, full.law, full.k_hertz, full.r_eff)
            self._c = c
        return self._const

    def detect(self, bodies: BodyState, margin: float, inv_i_w: np.ndarray) -> ContactBatch:
        """The managed contacts with delta > -``margin`` (m) at ``bodies``; ``inv_i_w`` (N + 1,
        3, 3) the rows' world-frame inverse inertia (``bodies.inv_inertia_world_ext()``)."""
        if not (math.isfinite(margin) and margin >= 0):
            raise ParameterError(f"margin = {margin:g} m is outside its allowed range [0, inf)")
        bodies.validate()
        a, b, key, law, k_hertz, r_eff = self._constants(bodies)
        c = self.model.arrays
        k = len(self.sa)
        idx = np.empty(k, dtype=np.int64)
        point, normal, vt, ra, rb = (np.empty((k, 3)) for _ in range(5))
        delta, ddelta, m_eff = np.empty(k), np.empty(k), np.empty(k)
        n = plane_sphere_contacts(self.sa, self.sb, c.body, c.lpos, c.lrot, c.plane_n,
                                  c.plane_p, c.radius, bodies.pos, bodies.quat, bodies.vel,
                                  bodies.omega, bodies.inv_mass_ext(), inv_i_w, float(margin),
                                  idx, point, normal, delta, ddelta, vt, m_eff, ra, rb)
        if not n:
            return ContactBatch.empty()
        if n == k:
            return ContactBatch(a.copy(), b.copy(), key.copy(), point, normal, delta, ddelta,
                                vt, m_eff, r_eff.copy(), ra, rb, law.copy(), k_hertz.copy())
        i = idx[:n]
        return ContactBatch(a[i], b[i], key[i], point[:n], normal[:n], delta[:n], ddelta[:n],
                            vt[:n], m_eff[:n], r_eff[i], ra[:n], rb[:n], law[i], k_hertz[i])
