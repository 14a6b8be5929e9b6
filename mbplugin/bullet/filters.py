"""PyBullet's own contact response off for exactly the managed pairs, and back (the host
protocol's ``disable_native`` / ``restore_native`` for :class:`~mbplugin.bullet.BulletContacts`).

A body without joints named alone has every pair managed: its collision group and mask go to 0
(it touches nothing natively) instead of one pair rule per other link (PyBullet looks each pair
of overlapping bounding boxes up in its rules at every step, in a hash map of 4096 keys: 1000
bodies' 500000 rules made stepSimulation ~15x slower, 164 vs 11 ms); the other pairs get
``setCollisionFilterPair`` rules.
"""

from __future__ import annotations

from typing import Any


class NativeFilters:
    """The collision filters a backend set in PyBullet client ``client``: ``pairs`` (the
    ((body, link), (body, link)) pairs with a rule) and ``masked`` (bodies whose group and
    mask are 0)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.pairs: list[tuple[tuple[int, int], tuple[int, int]]] = []
        self.masked: list[int] = []

    def set(self, full: list[int], link_lists: dict[int, list[tuple[int, int]]],
            wanted: set[tuple[tuple[int, int], tuple[int, int]]],
            joints: dict[int, int]) -> None:
        """Switch PyBullet's response off for the managed pairs (module docstring): every pair
        of the bodies ``full`` (named alone; ``link_lists`` every body's links, ``joints`` its
        number of joints) with the other bodies' links, and the pairs ``wanted``; the rules
        and masks of a previous call that are no longer wanted are given back."""
        c = self.client
        masked = sorted(b for b in full if joints.get(b, 1) == 0)
        mset = set(masked)
        rules: set[tuple[tuple[int, int], tuple[int, int]]] = set()
        for b in full:
            if b in mset:
                continue
            for x in link_lists[b]:
                for b2, ls in link_lists.items():
                    if b2 != b and b2 not in mset:
                        rules.update((min(x, y), max(x, y)) for y in ls)
        rules |= {pr for pr in wanted if pr[0][0] not in mset and pr[1][0] not in mset}
        old = self.pairs
        for x, y in old:
            if (min(x, y), max(x, y)) not in rules and x[0] not in mset and y[0] not in mset:
                c("setCollisionFilterPair", x[0], y[0], x[1], y[1], 1)
        for x, y in sorted(rules - set(old)):
            c("setCollisionFilterPair", x[0], y[0], x[1], y[1], 0)
        for b in sorted(set(self.masked) - mset):
            self.unmask(b)
        for b in masked:
            c("setCollisionFilterGroupMask", b, -1, 0, 0)
        self.pairs = sorted(rules)
        self.masked = masked

    def restore(self) -> None:
        """Give every managed pair back to PyBullet's native response: the pair rules removed,
        the masked bodies given PyBullet's default group and mask (:meth:`unmask`)."""
        for x, y in self.pairs:
            self.client("setCollisionFilterPair", x[0], y[0], x[1], y[1], 1)
        self.pairs = []
        for b in self.masked:
            self.unmask(b)
        self.masked = []

    def unmask(self, body: int) -> None:
        """PyBullet's default collision group and mask of a body without joints (its base's
        mass 0: the static filter group 2, colliding with all but static bodies; PyBullet
        cannot report a group or mask the user set before)."""
        c = self.client
        static = float(c("getDynamicsInfo", body, -1)[0]) <= 0
        c("setCollisionFilterGroupMask", body, -1, 2 if static else 1, -3 if static else -1)
