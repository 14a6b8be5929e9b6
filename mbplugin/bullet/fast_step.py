"""Compiled pieces of the backend's host step for contacts on articulated links (robots).

A robot on managed ground at 1/240 s spends its host step in many small array operations
around PyBullet's calls (measured on the A1: ~1 ms of CPU per host step, 11x native, of which
PyBullet's own calls ~0.2 ms). The pieces here do the same arithmetic in one compiled call
each, with the contact layer's compiled scalar kernels (no formula is written here):

- :func:`host_plane_spheres` / :class:`HostContacts`: the overlaps and relative velocities of
  known plane-sphere contacts at a host state (the implicit step's reads of the host after
  the step, :meth:`BulletContacts._host_contacts
  <mbplugin.bullet.backend.BulletContacts._host_contacts>`), through
  :func:`mbplugin.contact.kernels.shape_pose`, :func:`~mbplugin.contact.kernels.plane_frame`,
  :func:`~mbplugin.contact.kernels.plane_sphere` and
  :func:`~mbplugin.contact.kernels.contact_kinematics`, the kernels of
  :meth:`ContactModel.detect_pairs <mbplugin.contact.ContactModel.detect_pairs>`;
- :func:`read_state`: the rows' poses and velocities from PyBullet (bases, links with their
  frame origins) gathered into arrays by one compiled scatter;
- :func:`articulated_block`: one articulated body's point Jacobians in world axes, its
  response M^-1 J^T (with the joints its motors hold) and its part of the Delassus operator
  W = J M^-1 J^T (the arithmetic of :func:`mbplugin.bullet.delassus.articulated_response` and
  :func:`~mbplugin.bullet.delassus.articulated_delassus_dense`, Featherstone, *Rigid Body
  Dynamics Algorithms*, 2008, Sect. 8.1), from PyBullet's Jacobians and mass matrix.

Units: SI (m, m/s, kg, N s).
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.contact import kernels as _k
from mbplugin.contact.model import PLANE, SPHERE


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


@njit
def articulated_block(jac, moving, r_base, point, base_p, mm, locked, cont, sgn, W):
    """One articulated body's part of W, in place; returns its response M^-1 J^T (n, 3E).

    ``jac`` (E, 3, n): per contact side e, PyBullet's point Jacobian in the base frame where
    ``moving[e]`` (rotated here into world axes, in place), zeros elsewhere (the base, or a link
    on fixed joints of a floating base: filled here, the point's velocity v - [r]x omega in
    PyBullet's base coordinates (omega, v), r = ``point[e]`` - ``base_p`` in the base frame);
    ``r_base`` (3, 3) the base's rotation, ``mm`` (n, n) the joint-space mass matrix, ``locked``
    the coordinates a motor holds (:func:`mbplugin.bullet.delassus.articulated_response`);
    ``cont`` (E,) each side's contact, ``sgn`` (E,) +1 for side b, -1 for side a: W (3K, 3K)
    gains s_i s_j J_i M^-1 J_j^T (:func:`mbplugin.bullet.delassus.articulated_delassus_dense`).
    """
    ne, n = jac.shape[0], jac.shape[2]
    for e in range(ne):
        if moving[e]:
            for j in range(n):
                x0, x1, x2 = jac[e, 0, j], jac[e, 1, j], jac[e, 2, j]
                for a in range(3):
                    jac[e, a, j] = r_base[a, 0] * x0 + r_base[a, 1] * x1 + r_base[a, 2] * x2
        else:
            d0, d1, d2 = point[e, 0] - base_p[0], point[e, 1] - base_p[1], point[e, 2] - base_p[2]
            r0 = d0 * r_base[0, 0] + d1 * r_base[1, 0] + d2 * r_base[2, 0]
            r1 = d0 * r_base[0, 1] + d1 * r_base[1, 1] + d2 * r_base[2, 1]
            r2 = d0 * r_base[0, 2] + d1 * r_base[1, 2] + d2 * r_base[2, 2]
            for a in range(3):
                # -r_base @ [r]x, [r]x = [[0, -r2, r1], [r2, 0, -r0], [-r1, r0, 0]]
                jac[e, a, 0] = -(r_base[a, 1] * r2 - r_base[a, 2] * r1)
                jac[e, a, 1] = -(-r_base[a, 0] * r2 + r_base[a, 2] * r0)
                jac[e, a, 2] = -(r_base[a, 0] * r1 - r_base[a, 1] * r0)
                for b in range(3):
                    jac[e, a, 3 + b] = r_base[a, b]
    jrows = np.ascontiguousarray(jac.reshape(3 * ne, n))
    jt = np.ascontiguousarray(jrows.T)
    if locked.shape[0] == 0:
        minv_jt = np.ascontiguousarray(np.linalg.solve(mm, jt))
    else:
        minv = np.linalg.inv(mm)
        resp = minv @ jt
        ns = locked.shape[0]
        ss = np.empty((ns, ns))
        cs = np.empty((n, ns))
        rs = np.empty((ns, 3 * ne))
        for i in range(ns):
            for j in range(ns):
                ss[i, j] = minv[locked[i], locked[j]]
            for j in range(n):
                cs[j, i] = minv[j, locked[i]]
            for j in range(3 * ne):
                rs[i, j] = resp[locked[i], j]
        minv_jt = np.ascontiguousarray(resp - cs @ np.ascontiguousarray(np.linalg.solve(ss, rs)))
    full = jrows @ minv_jt
    for i in range(3 * ne):
        si = sgn[i // 3]
        ri = 3 * cont[i // 3] + i % 3
        for j in range(3 * ne):
            W[ri, 3 * cont[j // 3] + j % 3] += si * sgn[j // 3] * full[i, j]
    return minv_jt


@njit
def link_points(quat, point, origin, out):
    """``point`` (E, 3, world) relative to ``origin`` (E, 3) in the axes of the rotations
    ``quat`` (E, 4, [w, x, y, z]): R^T (point - origin), written into ``out`` (E, 3)."""
    for e in range(quat.shape[0]):
        m = _k.quat_matrix(quat[e, 0], quat[e, 1], quat[e, 2], quat[e, 3])
        d0 = point[e, 0] - origin[e, 0]
        d1 = point[e, 1] - origin[e, 1]
        d2 = point[e, 2] - origin[e, 2]
        for i in range(3):
            out[e, i] = m[i] * d0 + m[3 + i] * d1 + m[6 + i] * d2


#: a link state's centre-of-mass position, orientation, frame origin, velocity, angular velocity
_LINK = itemgetter(0, 1, 4, 6, 7)


@njit
def _scatter(buf, base_rows, link_rows, pos, quat, vel, om, frame_pos):
    """Rows of the flat read ``buf``: per base (position, orientation [x, y, z, w]) then per
    base (velocity, angular velocity), then per link the 16 values of :data:`_LINK`."""
    nb = base_rows.shape[0]
    for i in range(nb):
        r, o, v = base_rows[i], 7 * i, 7 * nb + 6 * i
        for a in range(3):
            pos[r, a] = buf[o + a]
            vel[r, a] = buf[v + a]
            om[r, a] = buf[v + 3 + a]
        quat[r, 0] = buf[o + 6]
        for a in range(3):
            quat[r, 1 + a] = buf[o + 3 + a]
    o0 = 13 * nb
    for i in range(link_rows.shape[0]):
        r, o = link_rows[i], o0 + 16 * i
        for a in range(3):
            pos[r, a] = buf[o + a]
            frame_pos[r, a] = buf[o + 7 + a]
            vel[r, a] = buf[o + 10 + a]
            om[r, a] = buf[o + 13 + a]
        quat[r, 0] = buf[o + 6]
        for a in range(3):
            quat[r, 1 + a] = buf[o + 3 + a]


def read_state(pb: Any, cid: int, base_ids: list[int], base_rows: np.ndarray,
               link_groups: list[tuple[int, list[int], np.ndarray]], n: int,
               frame_pos: np.ndarray) -> tuple[np.ndarray, ...]:
    """The N rows' centre-of-mass positions (m), orientations [w, x, y, z], velocities (m/s)
    and angular velocities (rad/s, world) from PyBullet client ``cid`` (module ``pb``): the
    bases ``base_ids`` (rows ``base_rows``) by ``getBasePositionAndOrientation`` and
    ``getBaseVelocity``, per body its links (``link_groups``: body, links, rows) by one
    ``getLinkStates`` with ``computeForwardKinematics`` (the links' URDF frame origins go to
    ``frame_pos``). Every row is a base or a link."""
    nb = len(base_ids)
    src = []
    if nb:
        src.append(chain.from_iterable(chain.from_iterable(
            map(pb.getBasePositionAndOrientation, base_ids, repeat(cid)))))
        src.append(chain.from_iterable(chain.from_iterable(
            map(pb.getBaseVelocity, base_ids, repeat(cid)))))
    nl = 0
    for body, lks, _rows in link_groups:
        sts = pb.getLinkStates(body, lks, computeLinkVelocity=1, computeForwardKinematics=1,
                               physicsClientId=cid)
        src.append(chain.from_iterable(chain.from_iterable(map(_LINK, sts))))
        nl += len(lks)
    buf = np.fromiter(chain.from_iterable(src), dtype=float, count=13 * nb + 16 * nl)
    link_rows = (np.concatenate([g[2] for g in link_groups]) if len(link_groups) != 1
                 else link_groups[0][2])
    pos, quat, vel, om = np.empty((n, 3)), np.empty((n, 4)), np.empty((n, 3)), np.empty((n, 3))
    _scatter(buf, base_rows, link_rows, pos, quat, vel, om, frame_pos)
    return pos, quat, vel, om
