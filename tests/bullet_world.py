"""Shared set-up of the PyBullet tests: a DIRECT client with gravity and ``plane.urdf``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pybullet as p
import pybullet_data


@contextmanager
def ground_world(g: float, dt: float | None = None) -> Iterator[tuple[int, int]]:
    """A ``p.DIRECT`` client with gravity ``g`` (m/s^2, along -z), the host step ``dt`` (s; None:
    PyBullet's default 1/240 s) and the ground plane loaded; yields (client id, plane body id)
    and disconnects on exit."""
    cid = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        p.setGravity(0, 0, -g, physicsClientId=cid)
        if dt is not None:
            p.setTimeStep(dt, physicsClientId=cid)
        plane = p.loadURDF("plane.urdf", physicsClientId=cid)
        yield cid, plane
    finally:
        p.disconnect(physicsClientId=cid)
