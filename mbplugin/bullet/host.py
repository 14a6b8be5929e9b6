"""PyBullet behind the host protocol of :class:`~mbplugin.hosts.HostStep`
(:class:`~mbplugin.hosts.Host`: what the generic step asks of the host during one host step),
for a :class:`~mbplugin.bullet.BulletContacts`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.rotation import quat_from_rotvec, quat_multiply
from mbplugin.hosts.protocol import ArticulatedBlock

#: PyBullet's bound on a pair's combined friction (btManifoldResult::calculateCombinedFriction)
MAX_FRICTION = 10.0


class BulletHost:
    """The host side of a :class:`~mbplugin.bullet.BulletContacts` step: ``contacts`` the
    backend (its state read, probe step, articulated bodies, resets); ``g`` (3,) m/s^2 and
    ``control`` (the user's per-step inputs, called again after a probe step) are set by the
    backend before each step."""

    def __init__(self, contacts: Any) -> None:
        self.contacts = contacts
        self.g = np.zeros(3)
        self.control: Callable[[], None] | None = None

    def free_acceleration(self, batch: ContactBatch, bodies: BodyState, dt: float,
                          art: np.ndarray) -> np.ndarray:
        """Gravity on the free sides; a probe step of the host for contacts on articulated
        links (``BulletContacts._a_free``)."""
        return self.contacts._a_free(batch, self.g, bodies, dt, self.control)

    def articulated(self, batch: ContactBatch, bodies: BodyState,
                    entries: np.ndarray) -> list[ArticulatedBlock]:
        """The articulated bodies' blocks of W from PyBullet's Jacobians and mass matrices
        (:class:`~mbplugin.bullet.articulated.BulletArticulated`)."""
        c = self.contacts
        return c._art.blocks(batch, bodies, c.kind)

    def friction(self, batch: ContactBatch) -> np.ndarray:
        """Each contact's coefficient as PyBullet combines the two links' lateral friction:
        their product bounded by MAX_FRICTION (btManifoldResult::calculateCombinedFriction,
        Bullet 2.x, src/BulletCollision/CollisionDispatch/btManifoldResult.cpp); a negative
        product is taken as 0."""
        lat = self.contacts._lateral_ext
        return np.clip(lat[batch.a] * lat[batch.b], 0.0, MAX_FRICTION)

    def end_state(self) -> BodyState:
        """The rows' state after the host step."""
        return self.contacts.body_state()

    def respond(self, blocks: list[ArticulatedBlock], dq: list[np.ndarray], rows: np.ndarray,
                dv: np.ndarray, dw: np.ndarray, bodies: BodyState, dt: float) -> float:
        """Put PyBullet's state after its step onto the implicit step's solved one: the
        articulated bodies by their joint and base velocity changes ``dq`` (positions by dt
        times them), the free rows ``rows`` by dv (m/s) and dw (rad/s), their poses by dt
        times those (the host's semi-implicit update), with PyBullet's resets. Returns the
        largest joint or base angular speed seen (rad/s)."""
        c = self.contacts
        spin = c._art.respond(blocks, dq, dt)
        if len(rows):
            quat = quat_multiply(quat_from_rotvec(dt * dw), bodies.quat[rows])
            c._reset(rows, bodies.pos[rows] + dt * dv, quat, bodies.vel[rows] + dv,
                     bodies.omega[rows] + dw)
            c._forced[rows] = True
        return spin
