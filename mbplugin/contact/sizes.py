"""Sizes of the bodies of a contact model (the overlap checks' yardstick)."""

from __future__ import annotations

from typing import Any

import numpy as np


def body_sizes(model: Any, n_bodies: int) -> np.ndarray:
    """(n_bodies,) each body's size (m): the largest distance from its centre of mass to the
    surface of its shapes (bounding radius plus offset); inf for a body with a plane or a hole
    (unbounded) and for bodies without shapes. ``model``: a
    :class:`~mbplugin.contact.ContactModel`."""
    c = model.arrays
    size = np.zeros(n_bodies)
    if not len(c.body):
        return np.full(n_bodies, np.inf)
    reach = np.linalg.norm(c.lpos + c.bound_center, axis=1) + c.bound
    own = (c.body >= 0) & (c.body < n_bodies)
    np.maximum.at(size, c.body[own], reach[own])
    has = np.zeros(n_bodies, dtype=bool)
    has[c.body[own]] = True
    return np.where(has, size, np.inf)
