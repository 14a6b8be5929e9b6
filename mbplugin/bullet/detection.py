"""Detection of a :class:`~mbplugin.bullet.BulletContacts`' managed contacts (one
responsibility of the backend, an object it owns): the contact model's detection with the
managed pairs kept, the fallback pairs' contacts from PyBullet's ``getClosestPoints``, the
prune of gaps that cannot close in the step (:func:`mbplugin.hosts.detection.prune`) and the
implicit step's re-detection after the host step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts.detection import prune
from mbplugin.hosts.model import keep_managed


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

    def plain(self) -> bool:
        """True when every managed pair is the contact model's (no ``getClosestPoints``
        pair): a re-detection is the model's narrow phase of the pairs."""
        return not len(self.fb_pairs)

    def detect(self, bodies: BodyState, margin: float) -> ContactBatch:
        batch = self.model.detect(bodies, margin=margin)
        if len(self.fb_pairs):
            extra = self.closest(bodies, margin)
            if len(extra):
                batch = ContactBatch.concatenate([batch, extra]) if len(batch) else extra
        return keep_managed(batch, self.managed)

    def closest(self, bodies: BodyState, margin: float) -> ContactBatch:
        """Contacts of the fallback pairs from PyBullet's ``getClosestPoints`` (distance =
        the predictive margin): per reported point, normal = -contactNormalOnB (from a to b),
        delta = -contactDistance, point = midway between the two surface points, effective
        radius ``fallback_radius`` (or the fallback shape's radius); keys, laws, Hertz k and
        kinematics as for the model's own contacts (``ContactModel.arrays.finish``). PyBullet
        reports one closest point per link pair (GJK/EPA, no contact manifold): a flat face
        resting on a plane is carried by that single point."""
        c = self.client
        cols: dict[str, list[Any]] = {k: [] for k in ("sa", "sb", "pa", "pb", "n", "d", "f",
                                                      "r")}
        for ia, ib in self.fb_pairs:
            (ba, la), (bb, lb) = self.rows[ia], self.rows[ib]
            res = c("getClosestPoints", ba, bb, float(margin), linkIndexA=la, linkIndexB=lb)
            if not res:
                continue
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
        step's read after the host step; the fallback pairs' through ``getClosestPoints``)."""
        return (self.model.detect_pairs(bodies, keys, margin)
                if not len(self.fb_pairs) else self.detect(bodies, margin))

    def prune(self, batch: ContactBatch, bodies: BodyState, dt: float,
               g: np.ndarray) -> ContactBatch:
        """The detected contacts without those between two free bodies that cannot close in
        the coming host step (:func:`mbplugin.hosts.detection.prune`)."""
        return prune(batch, bodies, self.kind, self.store, dt, g)
