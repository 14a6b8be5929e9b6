"""Reading PyBullet: the rows of a :class:`~mbplugin.bullet.BulletContacts` (the bodies and
links in a managed pair) with their kinds, masses, inertias and lateral friction, and their
state at each host step (two PyBullet calls per base, one per body for its links)."""

from __future__ import annotations

import warnings
from itertools import chain, repeat
from typing import Any

import numpy as np

from mbplugin.bullet.fast_step import read_state
from mbplugin.bullet.geometry import xyzw_to_wxyz
from mbplugin.contact import BodyState
from mbplugin.hosts.protocol import ARTICULATED, FREE, STATIC


def row_kind(c: Any, body: int, link: int) -> int:
    """FREE, STATIC or ARTICULATED of the row (``body``, ``link``) of client ``c``: a body
    without joints is free or static by its base mass; a link of a fixed base joined to it
    by fixed joints only is static; every other link is articulated."""
    nj = int(c("getNumJoints", body))
    base_mass = float(c("getDynamicsInfo", body, -1)[0])
    if nj == 0:
        return STATIC if base_mass <= 0 else FREE
    if base_mass <= 0:
        # a fixed base: the base, and a link joined to it through fixed joints only, cannot
        # move (a robot arm's mounting plate, a fixed-base body's fixed links)
        while link != -1:
            info = c("getJointInfo", body, link)
            if info[2] != c.p.JOINT_FIXED:
                return ARTICULATED
            link = int(info[16])
        return STATIC
    return ARTICULATED


class BulletRows:
    """The rows ``rows`` ((body, link), sorted) of kinds ``kind`` (N,) in client ``client``:
    ``mass`` (N,) kg (static rows: inf), ``inertia`` (N, 3) the principal moments (kg m^2),
    ``inv_inertia`` (N, 3, 3) their body-frame inverse (static rows: 0), ``lateral_ext``
    (N + 1,) the links' lateral friction (index -1: 1), ``frame_pos`` (N, 3) m the links' URDF
    frame origins of the last :meth:`state`; read once when built (a warning names links with
    a rolling or spinning friction, which the managed pairs do not model, unless
    ``friction_mode`` is "none")."""

    def __init__(self, client: Any, rows: list[tuple[int, int]], kind: np.ndarray,
                 friction_mode: str) -> None:
        self.client = client
        self.rows = rows
        self.kind = kind
        c = client
        n = len(self.rows)
        self.mass = np.zeros(n)
        self.inertia = np.zeros((n, 3))
        lateral = np.ones(n + 1)  # index -1 (static world geometry, never a row): 1
        spin_roll = []
        for i, (b, lk) in enumerate(self.rows):
            info = c("getDynamicsInfo", b, lk)
            self.mass[i] = info[0]
            self.inertia[i] = info[2]
            lateral[i] = info[1]
            if info[6] != 0 or info[7] != 0:
                spin_roll.append((b, lk))
        # the links' lateral friction (the default friction's pair coefficients), read here
        self.lateral_ext = lateral
        if spin_roll and friction_mode != "none":
            warnings.warn(f"links {spin_roll[:3]} have a rolling or spinning friction; the "
                          "backend's managed pairs model sliding friction only (their rolling "
                          "and spinning friction are not applied)", stacklevel=4)
        fixed = self.kind == STATIC
        self.inv_inertia = np.zeros((n, 3, 3))
        for i in np.flatnonzero(~fixed):
            with np.errstate(divide="ignore"):
                d = np.where(self.inertia[i] > 0, 1.0 / self.inertia[i], 0.0)
            self.inv_inertia[i] = np.diag(d)
        self.mass = np.where(fixed, np.inf, self.mass)
        # the state read's row lists (fixed until the next rebuild): bases and links
        base = [i for i, (_, lk) in enumerate(self.rows) if lk == -1]
        self._base_rows = np.array(base, dtype=np.int64)
        self._base_ids = [self.rows[i][0] for i in base]
        self._all_base = len(base) == n
        self._link_rows = [(i, b, lk) for i, (b, lk) in enumerate(self.rows) if lk != -1]
        groups: dict[int, tuple[list[int], list[int]]] = {}
        for i, b, lk in self._link_rows:
            groups.setdefault(b, ([], []))[0].append(lk)
            groups[b][1].append(i)
        self._link_groups = [(b, lks, np.array(rows, dtype=np.int64))
                             for b, (lks, rows) in groups.items()]
        self._link_arr = {b: np.array(lks, dtype=np.int64) for b, (lks, _) in groups.items()}
        # the state read's masses (static rows: 1) and fixed flags (shared, read-only)
        self._fixed_read = self.kind == STATIC
        self._mass_read = np.where(self._fixed_read, 1.0, self.mass)
        self._fixed_read.flags.writeable = self._mass_read.flags.writeable = False
        self.frame_pos = np.zeros((n, 3))  # the links' URDF frame origins (world, m)
        # every base row static (a robot's feet on the ground): a verification round's read
        # whose link groups are all predicted takes the last read's arrays (see state)
        self._static_bases = bool(np.all(self.kind[self._base_rows] == STATIC))
        self._last: tuple[np.ndarray, ...] | None = None  # the last read's arrays
        self._rot_cache: tuple[Any, ...] | None = None  # see world_inertia
        self._free_lookup: np.ndarray | None = None  # body id -> free row (native_wrench)

    def native_wrench(self, points: list[tuple[Any, ...]], pos: np.ndarray,
                      rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The forces (R, 3) N and torques about the centres of mass ``pos`` (N, 3) m (R, 3) N m
        that PyBullet's own contact points ``points`` (``getContactPoints`` after its last
        ``stepSimulation``: the unmanaged pairs) applied to the free rows ``rows`` (R,), with
        the mask (R,) of those touched; None when no point touches one of them.

        A point's force on its body A is normalForce n_B + lateralFriction1 d_1 +
        lateralFriction2 d_2 (n_B ``contactNormalOnB``, d_i the lateral friction directions:
        Bullet's contact and friction rows act on A along them, on B against them; measured:
        m dv/dt of sliding, stacked boxes equals gravity plus these forces within 0.2 %, the
        rest PyBullet's linear damping), applied at ``positionOnA``; its opposite at
        ``positionOnB`` on body B. Free rows are bodies without joints (link -1)."""
        if not points or not len(rows):
            return None
        lookup = self._free_lookup
        if lookup is None:
            top = max(b for b, _ in self.rows) + 1
            lookup = np.full(top + 1, -1, dtype=np.int64)  # body id -> free row (-1: none)
            free = np.flatnonzero(self.kind == FREE)
            lookup[[self.rows[i][0] for i in free]] = free
            self._free_lookup = lookup
        cols = list(zip(*points, strict=True))  # transposed in C: one tuple per field
        ids = np.array(cols[1:3], dtype=np.int64)  # (2, M) bodies A, B
        ids = np.where((ids >= 0) & (ids < len(lookup) - 1), ids, len(lookup) - 1)
        side = lookup[ids]  # (2, M) their free rows (-1: none)
        want = np.zeros(len(self.rows) + 1, dtype=bool)
        want[rows] = True
        hit = want[side]  # index -1 (no free row): the last entry, False
        if not hit.any():
            return None
        f = (np.array(cols[9])[:, None] * np.array(cols[7])
             + np.array(cols[10])[:, None] * np.array(cols[11])
             + np.array(cols[12])[:, None] * np.array(cols[13]))
        force = np.zeros((len(self.rows) + 1, 3))
        torque = np.zeros((len(self.rows) + 1, 3))
        for s, sign, at in ((0, 1.0, 5), (1, -1.0, 6)):
            on = np.flatnonzero(hit[s])
            if len(on):
                r, fs = side[s, on], sign * f[on]
                np.add.at(force, r, fs)
                np.add.at(torque, r, np.cross(np.array(cols[at])[on] - pos[r], fs))
        touched = np.zeros(len(self.rows) + 1, dtype=bool)
        touched[side[hit]] = True
        return force[rows], torque[rows], touched[rows]

    def world_inertia(self, bodies: BodyState) -> tuple[np.ndarray, np.ndarray]:
        """``bodies.rotations_ext()`` and ``bodies.inv_inertia_world_ext`` of them (read-only),
        reused while the orientations are bitwise those of the last call (bodies that do not
        turn: e.g. the deferred correction and the Delassus operator of the next step read the
        same orientations; the same kernels on the same inputs give the same bits)."""
        hit = self._rot_cache
        q = bodies.quat
        if (hit is not None and hit[0].shape == q.shape and hit[3] is bodies.inv_inertia
                and np.array_equal(hit[0], q) and np.array_equal(hit[4], bodies.fixed)):
            return hit[1], hit[2]
        rot = bodies.rotations_ext()
        inv = bodies.inv_inertia_world_ext(rot)
        rot.flags.writeable = inv.flags.writeable = False
        self._rot_cache = (q.copy(), rot, inv, bodies.inv_inertia,
                           np.array(bodies.fixed, dtype=bool))
        return rot, inv

    def state(self, again: bool = False, kinematic: Any = (), predict: Any = None,
              check: bool = True) -> BodyState:
        """The rows' state (centre-of-mass poses and velocities, world frame) as PyBullet has
        them now, as a BodyState.

        ``again``: PyBullet changed since the last read of this host step by the backend's
        own resets only (the implicit step's verification rounds): no connection check, and
        the links of the bodies in ``kinematic`` (reset since the host stepped: PyBullet's
        reset computed their forward kinematics) are read without
        ``computeForwardKinematics``. The same values as a full read. ``predict`` (with
        ``again``): the articulated bodies whose reset is deferred
        (:class:`~mbplugin.bullet.articulated.BulletArticulated`: ``pending``, ``predict``);
        their links are not read but computed (what the reset and a read would give).
        ``check`` False: no connection check (the caller's last PyBullet call on this client,
        in the same host step, would have raised for a disconnected one)."""
        c = self.client
        if check and not again:
            c.check()
        n = len(self.rows)
        ids = self._base_ids
        if self._link_groups:  # links (a robot): one flat read, one compiled scatter
            skip = predict.pending if again and predict is not None else ()
            groups = ([g for g in self._link_groups if g[0] not in skip] if skip
                      else self._link_groups)
            last = self._last
            if not groups and self._static_bases and last is not None:
                # every link predicted, every base static: PyBullet changed by the backend's
                # deferred resets only, the static rows are the last read's (copied)
                pos, quat, vel, om = (a.copy() for a in last)
            else:
                pos, quat, vel, om = read_state(c.p, c.id, ids, self._base_rows, groups, n,
                                                self.frame_pos, kinematic if again else ())
            if not again:
                self._last = (pos, quat, vel, om)
            for body, _lks, rows in self._link_groups if skip else ():
                if body in skip:
                    predict.predict(body, self._link_arr[body], rows, pos, quat, vel, om,
                                    self.frame_pos)
            return BodyState(pos, quat, vel, om, self._mass_read, self.inv_inertia,
                             self._fixed_read)
        if not (self._all_base and ids):
            pos, quat, vel, om = np.zeros((n, 3)), np.zeros((n, 4)), np.zeros((n, 3)), \
                np.zeros((n, 3))
        # bases: two PyBullet calls per body (mapped in C, no Python frame per body), gathered
        # into arrays at once
        if ids:
            cid, pb, nb = c.id, c.p, len(ids)
            ps = np.fromiter(chain.from_iterable(chain.from_iterable(
                map(pb.getBasePositionAndOrientation, ids, repeat(cid)))),
                dtype=float, count=7 * nb).reshape(-1, 7)
            vs = np.fromiter(chain.from_iterable(chain.from_iterable(
                map(pb.getBaseVelocity, ids, repeat(cid)))),
                dtype=float, count=6 * nb).reshape(-1, 6)
            if self._all_base:  # every row a base: the arrays as read
                pos, quat = ps[:, 0:3].copy(), xyzw_to_wxyz(ps[:, 3:7])
                vel, om = vs[:, 0:3].copy(), vs[:, 3:6].copy()
            else:
                base = self._base_rows
                pos[base] = ps[:, 0:3]
                quat[base] = xyzw_to_wxyz(ps[:, 3:7])
                vel[base] = vs[:, 0:3]
                om[base] = vs[:, 3:6]
        # links: always with computeForwardKinematics. Without it PyBullet returns the link
        # poses cached before the last stepSimulation moved the joints (measured on the A1: after
        # a step, a toe's position read without it equals the one read with it one step earlier)
        # and velocities through that stale kinematics (4-9 cm/s off at a swinging toe)
        # (one call per body; the link frames' origins kept for calculateJacobian, whose
        # point is relative to the link frame, see bullet/articulated.py)
        for body, lks, rows in self._link_groups:
            sts = c("getLinkStates", body, lks, computeLinkVelocity=1,
                    computeForwardKinematics=1)
            # (com position, com orientation, frame origin, velocity, angular velocity)
            arr = np.array([st[0] + st[1] + st[4] + st[6] + st[7] for st in sts])
            pos[rows], quat[rows] = arr[:, 0:3], xyzw_to_wxyz(arr[:, 3:7])
            self.frame_pos[rows] = arr[:, 7:10]
            vel[rows], om[rows] = arr[:, 10:13], arr[:, 13:16]
        return BodyState(pos, quat, vel, om, self._mass_read, self.inv_inertia,
                         self._fixed_read)
