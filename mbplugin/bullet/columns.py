"""The native columns a managed free body of a :class:`~mbplugin.bullet.BulletContacts` carries
(one responsibility of the backend's host, :class:`~mbplugin.bullet.host.BulletHost`): the
bodies PyBullet's own contacts join to it while they push, whose mass its managed contacts
move with it (:meth:`NativeColumns.couple`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts.arrays import norm_rows
from mbplugin.hosts.protocol import FREE

#: a managed contact acts through its body's centre of mass when |r x n| <= CENTRAL |r|
CENTRAL = 1e-6


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
        self.inside: tuple[list[tuple[Any, ...]], np.ndarray] | None = None
        self.cache: tuple[bytes, tuple[Any, ...]] | None = None

    def couple(self, batch: ContactBatch, bodies: BodyState,
               points: list[tuple[Any, ...]]) -> np.ndarray | None:
        """Give a managed free row that carries other bodies through PyBullet's own contacts
        the mass of its column: ``bodies.mass`` (a new array) of such a row set to the summed
        base mass (kg) of its column, the bodies joined by the last ``stepSimulation``'s native
        points that pushed (normalForce > 0) between two dynamic bases. Only a row alone (of
        the batch's free rows) in its column and whose managed contacts all act through its
        centre of mass (|r x n| <= CENTRAL |r|, a sphere's). Returns the masses (N,) kg, or
        None when no row is coupled (``bodies`` untouched). ``points``: ``getContactPoints``
        after that step; ``inside`` then holds them and the mask of those inside a coupled
        column.

        Why: while PyBullet's own contact pushes it is a hard constraint: the managed force on
        the lower body moves the whole column, so the managed contact's W holds 1 / (sum m),
        not 1 / m; the forces inside the column are left out of the free acceleration
        (:meth:`mbplugin.bullet.host.BulletHost.native_acceleration`). A 1 kg sphere under two
        native 10 kg spheres with its own mass rang 9.5 % off the static overlap at 0.5 m/s
        after 480 host steps; with the column's, 0.15 % off, |v| 3e-6 m/s. A row with lever
        arms (a box's corners) is left out: its rotation is coupled to the column too, and the
        column's mass with the row's own inertia made a 1 kg box under a 20 kg box rock until
        the upper box fell off."""
        self.inside = None
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
        ok = (heads[comp[at]] == 1) & (size[comp[at]] > 1) & ~bad[rows]
        rows, at = rows[ok], at[ok]
        if not len(rows):
            return None
        mass = np.array(bodies.mass, dtype=float, copy=True)
        mass[rows] = total[comp[at]]
        bodies.mass = mass
        coupled = np.zeros(nb, dtype=bool)
        coupled[np.isin(comp, comp[at])] = True
        at = np.minimum(np.searchsorted(ids, ab), nb - 1)
        known = (ids[at] == ab).all(axis=0) & coupled[at[0]] & coupled[at[1]]
        self.inside = (points, known & (comp[at[0]] == comp[at[1]]))
        return mass

    def graph(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
        """The columns of the native points' pairs ``edges`` (2, M) body ids: (the bodies (B,),
        their base masses (B,) kg, each one's column (B,), None without a dynamic pair)."""
        ids, inv = np.unique(edges, return_inverse=True)
        inv = inv.reshape(2, -1)
        if len(ids) and ids[-1] >= len(self.body_mass):
            grown = np.full(int(ids[-1]) + 1, np.nan)
            grown[:len(self.body_mass)] = self.body_mass
            self.body_mass = grown
        bm = self.body_mass
        for b in ids[np.isnan(bm[ids])].tolist():  # each body's mass read once per run
            bm[b] = float(self.client("getDynamicsInfo", b, -1)[0])
        m = bm[ids]
        dyn = (m[inv[0]] > 0) & (m[inv[1]] > 0)
        if not dyn.any():
            return ids, m, None
        nb = len(ids)
        graph = coo_matrix((np.ones(int(dyn.sum())), (inv[0, dyn], inv[1, dyn])), shape=(nb, nb))
        return ids, m, connected_components(graph, directed=False)[1]
