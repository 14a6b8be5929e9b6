"""The native columns a managed free body of a :class:`~mbplugin.bullet.BulletContacts` carries
(one responsibility of the backend's host, :class:`~mbplugin.bullet.host.BulletHost`): the
bodies PyBullet's own contacts join to it while they push, whose mass its managed contacts
move with it (:meth:`NativeColumns.couple`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.rotation import quat_to_matrix
from mbplugin.hosts.arrays import norm_rows
from mbplugin.hosts.protocol import FREE

#: a managed contact acts through its body's centre of mass when |r x n| <= CENTRAL |r|
CENTRAL = 1e-6


class Coupling(NamedTuple):
    """A host step's native columns (:meth:`mbplugin.bullet.host.BulletHost.start`): ``mass``
    (N,) kg the rows' masses in W (a coupled row's: its column's), ``stiff`` None or the rows
    coupled as one rigid body with their column (rows (R,), their centres of mass minus the
    column's (R, 3) m, the column's world inverse inertia about its centre (R, 3, 3)
    1/(kg m^2); :meth:`NativeColumns.rigid`)."""

    mass: np.ndarray
    stiff: tuple[np.ndarray, np.ndarray, np.ndarray] | None


class NativeColumns:
    """The columns of a backend's managed free rows: ``client`` the PyBullet client, ``kind``
    (N,) the rows' kinds, ``rows_arr`` (N, 2) their (body, link).

    State: ``body_mass`` (base mass (kg) by body id, NaN: not yet read) of the bodies met in
    native points;
    ``inside`` (this step's points, the mask of those inside a coupled column) or None;
    ``cache`` the last pushing pairs' bytes and their columns."""

    def __init__(self, client: Any, kind: np.ndarray, rows_arr: np.ndarray) -> None:
        self.client, self.kind, self.rows_arr = client, kind, rows_arr
        self.body_mass = np.zeros(0)
        self.body_inertia = np.zeros((0, 3))
        self.stiff: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.inside: tuple[list[tuple[Any, ...]], np.ndarray] | None = None
        self.cache: tuple[bytes, tuple[Any, ...]] | None = None

    def couple(self, batch: ContactBatch, bodies: BodyState,
               points: list[tuple[Any, ...]]) -> np.ndarray | None:
        """Give a managed free row that carries other bodies through PyBullet's own contacts
        the mass of its column: ``bodies.mass`` (a new array) of such a row set to the summed
        base mass (kg) of its column, the bodies joined by the last ``stepSimulation``'s native
        points that pushed (normalForce > 0) between two dynamic bases. Only a row alone (of
        the batch's free rows) in its column. A row whose managed contacts all act through its
        centre of mass (|r x n| <= CENTRAL |r|, a sphere's) keeps its own inertia (it rolls
        inside the column); one with lever arms (a box's corners) gets the column's as one
        rigid body (:meth:`rigid`). Returns the masses (N,) kg, or None when no row is coupled
        (``bodies`` untouched). ``points``: ``getContactPoints`` after that step; ``inside``
        then holds them and the mask of those inside a coupled column.

        Why: while PyBullet's own contact pushes it is a hard constraint: the managed force on
        the lower body moves the whole column, so the managed contact's W holds 1 / (sum m),
        not 1 / m; the forces inside the column are left out of the free acceleration
        (:meth:`mbplugin.bullet.host.BulletHost.native_acceleration`). A 1 kg sphere under two
        native 10 kg spheres with its own mass rang 9.5 % off the static overlap at 0.5 m/s
        after 480 host steps; with the column's, 0.15 % off, |v| 3e-6 m/s."""
        self.inside = self.stiff = None
        if not points:
            return None
        cols = list(zip(*points, strict=True))
        ab = np.array(cols[1:3], dtype=np.int64)
        base = (np.array(cols[3]) == -1) & (np.array(cols[4]) == -1) & (np.array(cols[9]) > 0)
        if not base.any():
            return None
        edges = ab[:, base]
        key = edges.tobytes()
        hit = self.cache
        if hit is not None and hit[0] == key:  # the same pushing pairs (a pile at rest): kept
            ids, m, comp = hit[1]
        else:
            ids, m, comp = self.graph(edges)
            self.cache = (key, (ids, m, comp))
        if comp is None:
            return None
        nb = len(ids)
        side = np.concatenate([batch.a, batch.b])
        rows = np.unique(side[side >= 0])
        rows = rows[self.kind[rows] == FREE]
        at = np.minimum(np.searchsorted(ids, self.rows_arr[rows, 0]), nb - 1)
        has = (ids[at] == self.rows_arr[rows, 0]) & (m[at] > 0)
        rows, at = rows[has], at[has]
        if not len(rows):
            return None
        total = np.bincount(comp, weights=m, minlength=nb)
        size = np.bincount(comp, minlength=nb)
        heads = np.bincount(comp[at], minlength=nb)  # the batch's free rows in each column
        # of those alone in their column, the rows whose managed contacts all act through the
        # centre of mass (|r x n| <= CENTRAL |r|: their normal response is translational)
        r = np.concatenate([batch.ra, batch.rb])
        n2 = np.concatenate([batch.normal, batch.normal])
        off = norm_rows(np.cross(r, n2)) > CENTRAL * norm_rows(r)
        bad = np.zeros(len(self.kind) + 1, dtype=bool)
        bad[side[off]] = True
        alone = (heads[comp[at]] == 1) & (size[comp[at]] > 1)
        rows, at = rows[alone], at[alone]
        if not len(rows):
            return None
        stiff = bad[rows]  # with lever arms (a box's corners): the column as one rigid body
        mass = np.array(bodies.mass, dtype=float, copy=True)
        mass[rows] = total[comp[at]]
        bodies.mass = mass
        if stiff.any():
            self.rigid(batch, bodies, rows[stiff], at[stiff], ids, m, comp)
        coupled = np.zeros(nb, dtype=bool)
        coupled[np.isin(comp, comp[at])] = True
        at = np.minimum(np.searchsorted(ids, ab), nb - 1)
        known = (ids[at] == ab).all(axis=0) & coupled[at[0]] & coupled[at[1]]
        self.inside = (points, known & (comp[at[0]] == comp[at[1]]))
        return mass

    def rigid(self, batch: ContactBatch, bodies: BodyState, rows: np.ndarray, at: np.ndarray,
              ids: np.ndarray, m: np.ndarray, comp: np.ndarray) -> None:
        """W of the free ``rows`` (R,) (each alone in its column, ``at`` (R,) its body's index in
        ``ids``) as that of their column taken as ONE rigid body: its mass (set by
        :meth:`couple`), its inverse inertia about the column's centre of mass c (into
        ``bodies.inv_inertia``, a new array, as the row's body-frame equivalent R^T I_c^-1 R)
        and the managed contacts' lever arms from c (``batch.ra``, ``batch.rb``: new arrays,
        r + x_row - c). ``stiff`` then holds (rows, x_row - c (R, 3) m, I_c^-1 (R, 3, 3)
        1/(kg m^2) world frame) for the free acceleration and the position correction.

        I_c = sum_i R_i diag(I_i) R_i^T + m_i (|d_i|^2 E - d_i d_i^T), d_i = x_i - c (the
        parallel-axis theorem; x_i, R_i the bodies' centre-of-mass poses: the row's from
        ``bodies``, the others' from ``getBasePositionAndOrientation``, their principal
        inertia I_i from ``getDynamicsInfo``).

        Why: a box's corner contacts move with the column's rotation too. With the column's
        mass but the box's own inertia (1 kg box under a 20 kg native box, k = 1e8) the column
        rocked until the upper box fell off; with neither it rested 8 % off the static
        overlap per corner at 1.9e-2 m/s after 480 host steps."""
        nr = len(bodies.mass)
        col = np.full(len(ids), -1, dtype=np.int64)
        col[comp[at]] = np.arange(len(rows))  # column -> its row (one row per column)
        owner = col[comp]
        owner[at] = -1
        others = np.flatnonzero(owner >= 0)  # the column's native bodies
        own = owner[others]
        poses = [self.client("getBasePositionAndOrientation", b) for b in ids[others].tolist()]
        x = np.array([q[0] for q in poses], dtype=float).reshape(-1, 3)
        q = np.array([q[1] for q in poses], dtype=float).reshape(-1, 4)[:, [3, 0, 1, 2]]
        rot = quat_to_matrix(q)
        mo = m[others]
        i_o = np.einsum("kij,kj,klj->kil", rot, self.body_inertia[ids[others]], rot)
        # the rows' own world inertia R (I^-1)^-1 R^T
        r_row = quat_to_matrix(bodies.quat[rows])
        i_r = np.einsum("kij,kjl,kml->kim", r_row, np.linalg.inv(bodies.inv_inertia[rows]),
                        r_row)
        mr, xr = np.asarray(m[at], dtype=float), bodies.pos[rows]
        total = mr.copy()
        np.add.at(total, own, mo)
        c = mr[:, None] * xr
        np.add.at(c, own, mo[:, None] * x)
        c /= total[:, None]

        def shift(mass: np.ndarray, d: np.ndarray) -> np.ndarray:
            dd = np.einsum("ki,ki->k", d, d)
            return mass[:, None, None] * (dd[:, None, None] * np.eye(3)
                                          - np.einsum("ki,kj->kij", d, d))

        ic = i_r + shift(mr, xr - c)
        np.add.at(ic, own, i_o + shift(mo, x - c[own]))
        inv_w = np.linalg.inv(ic)
        inv = np.array(bodies.inv_inertia, dtype=float, copy=True)
        inv[rows] = np.einsum("kji,kjl,klm->kim", r_row, inv_w, r_row)
        bodies.inv_inertia = inv
        e = np.zeros((nr + 1, 3))  # index -1 (the world): no offset
        e[rows] = xr - c
        batch.ra = batch.ra + e[batch.a]
        batch.rb = batch.rb + e[batch.b]
        self.stiff = (rows, xr - c, inv_w)

    def graph(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
        """The columns of the native points' pairs ``edges`` (2, M) body ids: (the bodies (B,),
        their base masses (B,) kg, each one's column (B,), None without a dynamic pair)."""
        ids, inv = np.unique(edges, return_inverse=True)
        inv = inv.reshape(2, -1)
        if len(ids) and ids[-1] >= len(self.body_mass):
            grown = np.full(int(ids[-1]) + 1, np.nan)
            grown[:len(self.body_mass)] = self.body_mass
            self.body_mass = grown
            grown = np.zeros((len(self.body_mass), 3))
            grown[:len(self.body_inertia)] = self.body_inertia
            self.body_inertia = grown
        bm = self.body_mass
        for b in ids[np.isnan(bm[ids])].tolist():  # each body's mass read once per run
            info = self.client("getDynamicsInfo", b, -1)
            bm[b] = float(info[0])
            self.body_inertia[b] = info[2]
        m = bm[ids]
        dyn = (m[inv[0]] > 0) & (m[inv[1]] > 0)
        if not dyn.any():
            return ids, m, None
        nb = len(ids)
        graph = coo_matrix((np.ones(int(dyn.sum())), (inv[0, dyn], inv[1, dyn])), shape=(nb, nb))
        return ids, m, connected_components(graph, directed=False)[1]
