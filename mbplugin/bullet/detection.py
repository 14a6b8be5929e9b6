"""Detection of a :class:`~mbplugin.bullet.BulletContacts`' managed contacts (one
responsibility of the backend, an object it owns): the contact model's detection with the
managed pairs kept, the fallback pairs' contacts from PyBullet's ``getClosestPoints``, the
prune of gaps that cannot close in the step (:func:`mbplugin.hosts.detection.prune`) and the
implicit step's re-detection after the host step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.bullet.fast_step import plane_sphere_contacts, valid_plane_sphere_contacts
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.model import BOX, MESH, PLANE, SPHERE
from mbplugin.hosts.detection import plane_points, prune
from mbplugin.hosts.model import keep_managed
from mbplugin.hosts.protocol import ARTICULATED, FREE
from mbplugin.laws.power import hertz_k

#: above this many detected contacts a host step also prunes the gaps to static geometry that
#: cannot close (the common steps of a robot on its feet, a few contacts, skip the prune's cost)
STATIC_PRUNE_MIN = 32
#: PyBullet's joint type of a fixed joint (``getJointInfo``)
JOINT_FIXED = 4


class Detection:
    """The detection of a backend's rows (module docstring): ``layout`` the build
    (:class:`~mbplugin.bullet.build.Layout`: the contact model, the managed matrix, the
    fallback pairs and their shapes and radii), ``client`` the PyBullet client, ``flight`` the
    free rows' lags (:class:`~mbplugin.bullet.flight.FreeFlight`: PyBullet sees the host's
    positions, the bodies' state the exact ones), ``store`` the contact store."""

    def __init__(self, layout: Any, client: Any, flight: Any, store: Any) -> None:
        self.client = client
        self.model, self.managed, self.rows, self.kind = (layout.model, layout.managed,
                                                          layout.rows, layout.kind)
        self.fb_pairs, self.fb_shape, self.fb_radius = (layout.fb_pairs, layout.fb_shape,
                                                        layout.fb_radius)
        self.flight = flight
        self.store = store
        #: whether a row is a free body (without one no pair can be pruned)
        self._any_free = bool(np.any(np.asarray(self.kind) == FREE))
        #: the managed plane-sphere pairs of :meth:`lean` (False: not yet known; None: the
        #: general detection)
        self._lean: Any = False
        self._welded: np.ndarray | None = None

    def plain(self) -> bool:
        """True when every managed pair is the contact model's (no ``getClosestPoints``
        pair): a re-detection is the model's narrow phase of the pairs."""
        return not len(self.fb_pairs)

    def detect(self, bodies: BodyState, margin: float) -> ContactBatch:
        """The managed contacts at ``bodies`` within ``margin`` (m): the contact model's
        detection (and the fallback pairs'), or for a robot on the ground (no free row, every
        shape a plane or a sphere, no fallback pair) the managed plane-sphere pairs in one
        compiled call (:meth:`lean`)."""
        lean = self._lean if self._lean is not False else self._lean_pairs(bodies)
        if lean is not None:
            return self.lean(bodies, margin, lean)
        batch = self.model.detect(bodies, margin=margin)
        if len(self.fb_pairs):
            extra = self.closest(bodies, margin)
            if len(extra):
                batch = ContactBatch.concatenate([batch, extra]) if len(batch) else extra
        return keep_managed(batch, self.managed)

    def _lean_pairs(self, bodies: BodyState) -> tuple[np.ndarray, ...] | None:
        """The managed plane-sphere and plane-box pairs (planes, spheres or boxes, each box's
        8 corners as 8 rows, and the bodies, keys, laws, effective radii and Hertz k the
        contact layer's ``finish`` gives them), in the order of the model's detection (per
        plane its spheres, then its boxes' corners), where :meth:`lean` applies (no fallback
        pair, every shape a plane, a sphere or a box, no managed pair of two spheres or
        boxes, no free row unless a box is managed: free spheres keep the model's
        detection); else None. Read once (the layout is fixed until the backend is
        rebuilt)."""
        self._lean = None
        c = self.model.arrays
        kind = np.asarray(c.kind)
        if (len(self.fb_pairs) or not bool(np.all((kind == PLANE) | (kind == SPHERE)
                                                  | (kind == BOX) | (kind == MESH)))
                or bool(np.any(np.asarray(c.body) < 0))):
            return None
        planes = np.flatnonzero(kind == PLANE)
        if not len(planes):
            return None
        spheres, boxes = np.flatnonzero(kind == SPHERE), np.flatnonzero(kind == BOX)
        meshes = np.flatnonzero(kind == MESH)
        fixed_ext = np.append(np.asarray(bodies.fixed, dtype=bool), True)
        solid = np.concatenate([spheres, boxes, meshes])
        i, j = np.triu_indices(len(solid), 1)
        si, sj = solid[i], solid[j]
        if bool(np.any(c._allowed(si, sj, fixed_ext) & self.managed[c.body[si], c.body[sj]])):
            return None  # a managed pair of two spheres or boxes: the model's detection
        ms = c.mesh
        sa_l, sb_l, corner_l, local_l = [], [], [], []
        for p in planes:  # the model's narrow-phase plan: per plane spheres, boxes, meshes
            for ids, code in ((spheres, -1), (boxes, 0), (meshes, -2)):
                pa = np.full(len(ids), p)
                ok = c._allowed(pa, ids, fixed_ext) & self.managed[c.body[pa], c.body[ids]]
                ids = ids[ok]
                nf = (np.ones(len(ids), dtype=np.int64) if code == -1 else
                      np.full(len(ids), 8) if code == 0 else ms.n_feat[ids])
                sid = np.repeat(ids, nf)
                local = np.arange(len(sid)) - np.repeat(np.cumsum(nf) - nf, nf)
                sa_l.append(np.full(len(sid), p))
                sb_l.append(sid)
                corner_l.append(local if code == 0 else np.full(len(sid), code))
                local_l.append(local if code != -1 else np.zeros(len(sid), dtype=np.int64))
        sa = np.concatenate(sa_l).astype(np.int64)
        sb = np.concatenate(sb_l).astype(np.int64)
        corner = np.concatenate(corner_l).astype(np.int64)
        feature = np.concatenate(local_l).astype(np.int64)
        if not len(sa) or (bool(np.any(self.kind == FREE)) and not bool(np.any(corner != -1))):
            return None
        k = len(sa)
        mesh = corner == -2
        #: each row's global mesh feature (-1: not a mesh)
        feat = np.where(mesh, ms.feat0[sb] + feature, -1).astype(np.int64)
        cat = {"sa": sa, "sb": sb, "point": np.zeros((k, 3)),
               "normal": np.tile([0.0, 0.0, 1.0], (k, 1)), "delta": np.zeros(k),
               "r_eff": np.where(corner == -1, np.asarray(c.radius, dtype=float)[sb],
                                 np.asarray(c.user_radius, dtype=float)[sb]),
               "feature": feature}
        ref = c.finish(cat, bodies, bodies.rotations_ext(), *bodies.kinematics_ext())
        ints = np.stack([ref.a, ref.b, ref.key, ref.law]).astype(np.int64)
        floats = np.stack([ref.r_eff, ref.k_hertz]).astype(float)
        # a mesh row's radius is its deciding vertex's (read per step): its E* kept for k
        e_star = (np.broadcast_to(c.e_star[c.mat[0], c.mat[0]], k) if c.one_material
                  else c.e_star[c.mat[sa], c.mat[sb]]).astype(float)
        # a radius about each shape's centre holding it (its bound about its bound's centre)
        reach = np.asarray(c.bound, dtype=float) + np.linalg.norm(c.bound_center, axis=1)
        self._lean = (sa, sb, ref.a, ref.b, ref.key, ref.law, ref.r_eff, ref.k_hertz, ints,
                      floats, corner, feat, mesh if mesh.any() else None, e_star,
                      np.ascontiguousarray(reach))
        return self._lean

    def lean(self, bodies: BodyState, margin: float,
             pairs: tuple[np.ndarray, ...]) -> ContactBatch:
        """The contacts of the managed plane-sphere ``pairs`` (:meth:`_lean_pairs`) with an
        overlap above -``margin`` (m) at ``bodies``, in one compiled call
        (:func:`~mbplugin.bullet.fast_step.plane_sphere_contacts`: the contact layer's
        kernels; its detection's contacts, to the last bits)."""
        arrs = (bodies.pos, bodies.quat, bodies.vel, bodies.omega, bodies.mass,
                bodies.inv_inertia)
        plain = True
        for x in arrs:
            if type(x) is not np.ndarray or x.dtype != np.float64 or not x.flags.c_contiguous:
                plain = False
                break
        sa, sb, ints, floats = pairs[0], pairs[1], pairs[8], pairs[9]
        corner, feat, mesh = pairs[10], pairs[11], pairs[12]
        c = self.model.arrays
        k = len(sa)
        # the outputs as views of two blocks (two allocations instead of nine)
        v3, v1 = np.empty((5, k, 3)), np.empty((3, k))
        point, normal, ra, rb, vt = v3
        delta, ddelta, m_eff = v1
        idx, vert = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64)
        args = (sa, sb, c.body, c.lpos, c.lrot, c.plane_n, c.plane_p, c.radius, bodies.pos,
                bodies.quat, bodies.vel, bodies.omega, np.asarray(bodies.mass, dtype=float),
                bodies.inv_inertia, np.asarray(bodies.fixed, dtype=np.bool_), float(margin),
                point, normal, delta, ra, rb, ddelta, vt, m_eff, idx, corner, c.half, c.skin,
                bool(c.skin_max), feat, c.mesh.kernel_arrays, vert, pairs[14])
        # the state's fast accept (state_all_valid) and the contacts in one call
        m = valid_plane_sphere_contacts(*args) if plain else -1
        if m < 0:
            bodies.validate()  # the contact layer's checks (its error for a bad state)
            m = plane_sphere_contacts(*args)
        if m == 0:
            return ContactBatch.empty()
        sel = idx[:m]
        # the pairs' sides, keys, laws (int64) and radii, Hertz k (float) in two gathers
        (a, b, key, law), (r_eff, k_hertz) = ints[:, sel], floats[:, sel]
        if mesh is not None:  # a mesh row: its deciding vertex's radius and its Hertz k
            on = np.flatnonzero(mesh[sel])
            if len(on):
                r_eff[on] = c.mesh._radius(vert[:m][on], sb[sel[on]])
                k_hertz[on] = hertz_k.py_func(pairs[13][sel[on]], r_eff[on])
        return ContactBatch(a, b, key, point[:m], normal[:m], delta[:m], ddelta[:m], vt[:m],
                            m_eff[:m], r_eff, ra[:m], rb[:m], law, k_hertz)

    def closest(self, bodies: BodyState, margin: float) -> ContactBatch:
        """Contacts of the fallback pairs from PyBullet's ``getClosestPoints`` (distance =
        the predictive margin): per reported point, normal = -contactNormalOnB (from a to b),
        delta = -contactDistance, point = midway between the two surface points, effective
        radius ``fallback_radius`` (or the fallback shape's radius); keys, laws, Hertz k and
        kinematics as for the model's own contacts (``ContactModel.arrays.finish``). PyBullet
        reports one closest point per link pair (GJK/EPA, no contact manifold): a flat face
        resting on a plane is carried by that single point. Against a concave shape (a
        heightfield, a static triangle mesh) it reports one per triangle within reach: the
        copies of one point (a body over a shared vertex or edge) are taken once."""
        c = self.client
        cols: dict[str, list[Any]] = {k: [] for k in ("sa", "sb", "pa", "pb", "n", "d", "f",
                                                      "r")}
        for ia, ib in self.fb_pairs:
            (ba, la), (bb, lb) = self.rows[ia], self.rows[ib]
            res = c("getClosestPoints", ba, bb, float(margin), linkIndexA=la, linkIndexB=lb)
            if not res:
                continue
            if len(res) > 1:  # a concave shape: one point per triangle within reach
                res = [res[i] for i in np.flatnonzero(_distinct(res))]
            m = len(res)
            cols["sa"].append(np.full(m, self.fb_shape[ia]))
            cols["sb"].append(np.full(m, self.fb_shape[ib]))
            cols["pa"].append([r[5] for r in res])
            cols["pb"].append([r[6] for r in res])
            cols["n"].append([r[7] for r in res])
            cols["d"].append([r[8] for r in res])
            cols["f"].append(np.arange(m))
            ra, rb = self.fb_radius[ia], self.fb_radius[ib]
            cols["r"].append(np.full(m, np.fmin(ra, rb)))
        if not cols["sa"]:
            return ContactBatch.empty()
        sa, sb = np.concatenate(cols["sa"]), np.concatenate(cols["sb"])
        normal = -np.concatenate([np.asarray(x, dtype=float) for x in cols["n"]])
        point = 0.5 * (np.concatenate([np.asarray(x, dtype=float) for x in cols["pa"]])
                       + np.concatenate([np.asarray(x, dtype=float) for x in cols["pb"]]))
        delta = -np.concatenate([np.asarray(x, dtype=float) for x in cols["d"]])
        # PyBullet sees the host's positions; the bodies' state holds the exact-flight ones
        body = self.model.arrays.body
        lag_a, lag_b = self.flight.lag[body[sa]], self.flight.lag[body[sb]]
        delta = delta - np.einsum("ki,ki->k", normal, lag_b - lag_a)
        point = point + 0.5 * (lag_a + lag_b)
        cat = {"sa": sa, "sb": sb, "point": point, "normal": normal, "delta": delta,
               "r_eff": np.concatenate(cols["r"]),
               "feature": np.concatenate(cols["f"]).astype(np.int64)}
        rot_ext = bodies.rotations_ext()
        pos_ext, vel_ext, om_ext = bodies.kinematics_ext()
        return self.model.arrays.finish(cat, bodies, rot_ext, pos_ext, vel_ext, om_ext)

    def redetect(self, bodies: BodyState, keys: np.ndarray, margin: float) -> ContactBatch:
        """The contacts ``keys`` in the state ``bodies`` within ``margin`` (m) (the implicit
        step's read after the host step; the fallback pairs' through ``getClosestPoints``;
        where :meth:`lean` applies, its contacts of ``keys``: the model's ``detect_pairs``,
        the same rows in the same order)."""
        if len(self.fb_pairs):
            return self.detect(bodies, margin)
        lean = self._lean
        if lean is None or lean is False:
            return self.model.detect_pairs(bodies, keys, margin)
        batch = self.lean(bodies, margin, lean)
        keep = np.isin(batch.key, keys)
        return batch if keep.all() else batch.take(np.flatnonzero(keep))

    def prune(self, batch: ContactBatch, bodies: BodyState, dt: float,
               g: np.ndarray) -> ContactBatch:
        """The detected contacts without those between two free bodies that cannot close in
        the coming host step (:func:`mbplugin.hosts.detection.prune`; without a free row,
        e.g. a robot on the ground, ``batch`` itself: no pair has two free sides). A batch of
        more than :data:`STATIC_PRUNE_MIN` contacts is also pruned of the gaps between a moving
        row and static geometry that cannot close (``prune(static=True)``: a robot's body
        lying on a fully managed plane brings every hull corner within the global margin)."""
        many = len(batch.key) > STATIC_PRUNE_MIN
        if not (self._any_free or many):
            return batch
        if not many and not _free_pair(self.kind, batch.a, batch.b):
            return batch  # no pair of two free rows (boxes on the ground): nothing to prune
        points = (plane_points(self.model.arrays, batch.key)
                  if many and not len(self.fb_pairs) else None)
        return prune(batch, bodies, self.kind, self.store, dt, g, static=many,
                     momentum=self.welded_mass() if many else None, points=points)

    def welded_mass(self) -> np.ndarray:
        """(N,) kg: each row's mass against a push through the joints (the static prune's
        ``momentum``): an articulated row's link with every link welded to it by fixed joints
        (PyBullet's ``getJointInfo`` type ``JOINT_FIXED`` = 4; the A1's massless
        ``thigh_shoulder`` moves with its thigh), any other row its own mass (``getDynamicsInfo``).
        Read once (the layout is fixed until the backend is rebuilt)."""
        if self._welded is not None:
            return self._welded
        c = self.client
        out = np.zeros(len(self.rows))
        groups: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for i, (b, link) in enumerate(self.rows):
            if self.kind[i] != ARTICULATED:
                out[i] = float(c("getDynamicsInfo", b, link)[0])
                continue
            if b not in groups:  # each link's root through fixed joints, and the masses
                nj = int(c("getNumJoints", b))
                root = np.arange(-1, nj)  # index j + 1: link j
                mass = np.array([float(c("getDynamicsInfo", b, j)[0]) for j in range(-1, nj)])
                for j in range(nj):  # a parent's index is below its child's
                    info = c("getJointInfo", b, j)
                    if int(info[2]) == JOINT_FIXED:
                        root[j + 1] = root[int(info[16]) + 1]
                groups[b] = (root, mass)
            root, mass = groups[b]
            out[i] = float(mass[root == root[link + 1]].sum())
        self._welded = out
        return out


@njit
def _free_pair(kind, a, b):
    """True when a contact (a, b) has two FREE rows as its sides (a side -1, the world, is
    not a free row): :func:`~mbplugin.hosts.detection.prune` without ``static`` prunes no
    other contact."""
    n = kind.shape[0]
    for i in range(a.shape[0]):
        if a[i] >= 0 and b[i] >= 0 and a[i] < n and b[i] < n:
            if kind[a[i]] == FREE and kind[b[i]] == FREE:
                return True
    return False


#: two getClosestPoints results whose points on both sides lie this close (m) are one point
SAME_POINT = 1e-9


def _distinct(res: list[Any]) -> np.ndarray:
    """Mask of the ``getClosestPoints`` results ``res`` that are not a copy of an earlier one
    (both surface points within :data:`SAME_POINT`: the triangles around a shared vertex or
    edge of a heightfield each report the same closest point)."""
    pts = np.array([r[5] + r[6] for r in res], dtype=float)  # (m, 6): on A, on B
    same = np.abs(pts[:, None, :] - pts[None, :, :]).max(axis=2) <= SAME_POINT
    return ~np.tril(same, -1).any(axis=1)
