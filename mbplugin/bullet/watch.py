"""What a :class:`~mbplugin.bullet.BulletContacts` watches in its client between two host
steps (one responsibility of the backend, an object it owns): bodies added to the client
(``loadURDF`` / ``createMultiBody`` after the backend was built) and the managed links'
mass, local inertia and lateral friction (``changeDynamics``). Either makes the backend read
the client again (``BulletContacts.refresh``) before its next host step.

Cost: one ``getNumBodies`` (~0.4 us) and one ``getDynamicsInfo`` (~2 us) per host step; the
links are checked in turn, one per host step, so a ``changeDynamics`` is seen within as many
host steps as there are rows (call ``refresh()`` right after it to have it at once).
"""

from __future__ import annotations

import warnings
from typing import Any


class ClientWatch:
    """The client ``client``'s body count and the rows ``rows`` ((body, link) pairs)'
    dynamics (mass kg, lateral friction, local inertia diagonal kg m^2) as read when built."""

    def __init__(self, client: Any, rows: list[tuple[int, int]]) -> None:
        self.client = client
        self.rows = rows
        self.n_bodies = int(client("getNumBodies"))
        self.dynamics = [self._read(b, lk) for b, lk in rows]
        self._next = 0  # the row checked at the next poll

    def _read(self, body: int, link: int) -> tuple[Any, ...]:
        info = self.client("getDynamicsInfo", body, link)
        return info[0], info[1], info[2]

    def poll(self) -> str | None:
        """What changed since the build, or None: ``"added"`` (the client holds more bodies)
        or ``"dynamics"`` (the next row in turn has another mass, inertia or lateral
        friction). A body removed lowers the count (it is remembered; a removed managed body
        is the state read's clear error)."""
        n = int(self.client("getNumBodies"))
        grew, self.n_bodies = n > self.n_bodies, n
        if grew:
            return "added"
        if not self.rows:
            return None
        i = self._next
        self._next = (i + 1) % len(self.rows)
        b, lk = self.rows[i]
        if n and self._read(b, lk) != self.dynamics[i]:
            warnings.warn(f"BulletContacts: the mass, inertia or lateral friction of body {b} "
                          f"link {lk} changed (changeDynamics); the backend checks one "
                          "link per host step, so it may have stepped with the old values: "
                          "call contacts.refresh() right after changeDynamics", stacklevel=4)
            return "dynamics"
        return None
