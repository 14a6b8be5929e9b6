"""Building a :class:`~mbplugin.bullet.BulletContacts` (one responsibility of the backend):
the managed items resolved into rows (the bodies and links in a managed pair) with their
shapes (:mod:`mbplugin.bullet.geometry`), materials, laws and kinds, the contact model and
store and the checks of the build, as a :class:`Layout`; nothing in the client is changed
(the backend then switches PyBullet's response off for the managed pairs,
:mod:`mbplugin.bullet.filters`, and reads the rows' masses, :mod:`mbplugin.bullet.rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.bullet import checks
from mbplugin.bullet.geometry import link_shapes
from mbplugin.bullet.rows import row_kind
from mbplugin.contact import ContactModel
from mbplugin.errors import ParameterError
from mbplugin.hosts.model import check_stateful, exclude_unmanaged
from mbplugin.hosts.protocol import ARTICULATED, STATIC

_MAT = "__default__"


@dataclass
class Layout:
    """What a build resolved (module docstring): ``rows`` the (body, link) rows (sorted),
    ``rows_arr`` them as (N, 2), ``kind`` (N,) FREE / STATIC / ARTICULATED, ``managed`` (N, N)
    the managed row pairs, ``model`` and ``store`` the contact model and a new store of it,
    ``fb_pairs`` (F, 2) the row pairs whose contacts come from ``getClosestPoints``,
    ``fb_shape`` (N,) each row's first shape (-1: none), ``fb_radius`` (N,) m the fallback
    rows' effective radius (NaN: not a fallback row); ``filters`` the arguments of
    :meth:`NativeFilters.set <mbplugin.bullet.filters.NativeFilters.set>`."""

    rows: list[tuple[int, int]]
    rows_arr: np.ndarray
    kind: np.ndarray
    managed: np.ndarray
    model: ContactModel
    store: Any
    fb_pairs: np.ndarray
    fb_shape: np.ndarray
    fb_radius: np.ndarray
    filters: tuple[Any, ...]


def link_key(x: Any) -> tuple[int, int | None]:
    """A body id (every link of it: ``(body, None)``) or a ``(body, link)`` tuple."""
    if isinstance(x, tuple) and len(x) == 2:
        return int(x[0]), int(x[1])
    if isinstance(x, int | np.integer) and not isinstance(x, bool):
        return int(x), None
    raise ParameterError(f"{x!r} is not a body id or a (body, link) tuple")


def parse_item(item: Any) -> Any:
    """A ``manage`` item: ``("body", id)`` or ``("pair", x, y)`` (x, y: :func:`link_key`)."""
    if isinstance(item, int | np.integer) and not isinstance(item, bool):
        return ("body", int(item))
    if isinstance(item, tuple) and len(item) == 2:
        x, y = link_key(item[0]), link_key(item[1])
        checks.check_manage_pair(item, x, y)
        return ("pair", x, y)
    raise ParameterError(f"manage item {item!r}: give a body id or a pair (x, y) of body ids "
                         "or (body, link) tuples")


def build_layout(c: Any, manage: list[Any], law: Any, material: dict[str, float] | None,
                 materials: dict[tuple[int, int | None], dict[str, float]],
                 pair_laws: list[tuple[Any, tuple[Any, Any]]], flat_box: float,
                 fallback: str | None, fallback_radius: float | None,
                 articulated: str) -> Layout:
    """Resolve and validate everything (module docstring) for the client ``c``: ``manage``
    the parsed items (:func:`parse_item`), ``materials`` and ``pair_laws`` by
    :func:`link_key`, the other arguments those of ``BulletContacts``."""
    c.check()
    bodies = c.body_ids()
    known = set(bodies)
    for key in list(materials) + [k for _, pair in pair_laws for k in pair]:
        if key[0] not in known:
            raise ParameterError(f"body id {key[0]} is not in PyBullet client {c.id}")
    wanted: set[tuple[tuple[int, int], tuple[int, int]]] = set()
    shapes_of: dict[tuple[int, int], list[Any]] = {}
    kinds: dict[tuple[int, int], int] = {}

    joints: dict[int, int] = {}  # body -> its number of joints, read once

    def links(x: tuple[int, int | None]) -> list[tuple[int, int]]:
        b, lk = x
        if b not in known:
            raise ParameterError(f"manage: body id {b} is not in PyBullet client {c.id} "
                                 f"(bodies: {sorted(known)})")
        n = joints.get(b)
        if n is None:
            n = joints[b] = int(c("getNumJoints", b))
        if lk is not None and not (-1 <= lk < n):
            raise ParameterError(f"manage: link {lk} of body {b} does not exist (allowed "
                                 f"-1 .. {n - 1})")
        return [(b, lk)] if lk is not None else [(b, j) for j in range(-1, n)]

    # every pair of a body named alone (all its links with every other body's links), and
    # the pairs named as pairs; the former are not enumerated (1000 bodies: 500000 pairs)
    full = sorted({item[1] for item in manage if item[0] == "body"})
    full_set = set(full)
    for b in full:
        links((b, None))  # an unknown body: a clear error
    link_lists = {b: links((b, None)) for b in (bodies if full else ())}
    for item in manage:
        if item[0] == "pair":
            for x in links(item[1]):
                for y in links(item[2]):
                    covered = x[0] != y[0] and (x[0] in full_set or y[0] in full_set)
                    if (x[0] != y[0] or x[1] != y[1]) and not covered:
                        wanted.add((min(x, y), max(x, y)))
    taking = ({bl for ls in link_lists.values() for bl in ls} if len(link_lists) > 1
              else set())
    taking |= {bl for pair in wanted for bl in pair}
    for bl in sorted(taking):
        kinds[bl] = row_kind(c, *bl)
    # a pair of two static (immovable) links exerts no force on anything: it is not managed
    # (PyBullet's own collision of it stays as it was) and a static link whose every partner
    # is static is not a row, its shapes never read nor checked (a fixed-base arm's open
    # mounting mesh on the ground plane)
    wanted = {(x, y) for x, y in wanted if not (kinds[x] == STATIC and kinds[y] == STATIC)}
    needed = _static_partnered(taking, kinds, full_set, wanted)
    taking = {bl for bl in taking if kinds[bl] != STATIC or bl in needed}
    # shapes (errors for unmodellable shapes of links that take part)
    for bl in sorted(taking):
        shapes_of[bl] = link_shapes(c, bl[0], bl[1], kinds[bl] == STATIC, flat_box,
                                    fallback=fallback == "closest_points")
    shaped = sorted(bl for bl in taking if shapes_of[bl])
    sb = np.array([bl[0] for bl in shaped], dtype=np.int64)
    inf = np.isin(sb, np.array(full, dtype=np.int64))
    # a shaped link takes part when a shaped link of another body pairs with it: a link of
    # a body named alone when another body has a shaped link, any other link when a body
    # named alone other than its own has one; and the links of the pairs named as pairs
    n_full = len(np.unique(sb[inf]))
    cand = np.full(len(shaped), n_full > 0)
    cand[inf] = len(np.unique(sb)) > 1
    explicit = [(x, y) for x, y in sorted(wanted) if shapes_of[x] and shapes_of[y]]
    pos_of = {bl: i for i, bl in enumerate(shaped)}
    for x, y in explicit:
        cand[pos_of[x]] = cand[pos_of[y]] = True
    rows = [bl for bl, keep in zip(shaped, cand, strict=True) if keep]
    index = {bl: i for i, bl in enumerate(rows)}
    first_shape: dict[int, int] = {}
    model = ContactModel()
    mats: dict[tuple[int, int], str | None] = {}
    for bl in rows:
        spec = materials.get((bl[0], bl[1]), materials.get((bl[0], None)))
        name = None
        if spec is not None:
            name = f"b{bl[0]}l{bl[1]}"
            model.add_material(name, **spec)
        elif material is not None:
            if _MAT not in model.materials:
                model.add_material(_MAT, **material)
            name = _MAT
        mats[bl] = name
        for s in shapes_of[bl]:
            sid = model.add_shape(s.shape, index[bl], name, s.pos, s.quat, skin=s.skin)
            first_shape.setdefault(index[bl], sid)
    # links with a fallback shape: every pair of theirs comes from getClosestPoints
    fb_radius: dict[int, float] = {}
    for bl in rows:
        fb = [s.radius for s in shapes_of[bl] if s.fallback]
        if fb:
            fb_radius[index[bl]] = (fallback_radius if fallback_radius is not None
                                    else float(np.nanmin(fb)) if np.isfinite(fb).any()
                                    else float("nan"))
            for other in range(len(rows)):
                if other != index[bl]:
                    model.exclude(index[bl], other)
    n = len(rows)
    managed = _managed_matrix(rows, full, [(index[x], index[y]) for x, y in explicit])
    static = np.array([kinds[bl] == STATIC for bl in rows], dtype=bool).reshape(n)
    managed &= ~(static[:, None] & static[None, :])
    fbm = np.zeros(n, dtype=bool)
    fbm[list(fb_radius)] = True
    fb_pairs = np.argwhere(np.triu(managed & (fbm[:, None] | fbm[None, :]), 1))
    model.set_default_law(law)
    for lw, (x, y) in pair_laws:
        for bx in links(x):
            for by in links(y):
                if bx in index and by in index:
                    model.set_pair_law(lw, bodies=(index[bx], index[by]))
    checks.check_joints(c, [bl[0] for bl in rows if kinds[bl] == ARTICULATED])
    checks.check_build(c, model, rows, managed, mats, pair_laws, links)
    store = model.make_store()
    if any(pl.hertz_k for pl in store.pair_laws):
        missing = [bl for bl in rows if mats[bl] is None]
        if missing:
            raise ParameterError(
                f"law {store.laws[0].name}: no 'k' given and link(s) {missing[:3]} have no "
                "material (E, nu) for Hertz's stiffness; give 'k' or material=/materials="
            )
        no_r = [rows[i] for i, r in fb_radius.items() if not np.isfinite(r)]
        if no_r:
            raise ParameterError(
                f"law {store.laws[0].name}: no 'k' given and the fallback shape of link(s) "
                f"{no_r[:3]} has no radius for Hertz's stiffness; give 'k' or "
                "fallback_radius="
            )
    check_stateful(store, articulated, ARTICULATED in kinds.values())
    exclude_unmanaged(model, managed)
    return Layout(rows, np.array(rows, dtype=np.int64).reshape(-1, 2),
                  np.array([kinds[bl] for bl in rows], dtype=np.int64), managed, model, store,
                  np.array(fb_pairs, dtype=np.int64).reshape(-1, 2),
                  np.array([first_shape.get(i, -1) for i in range(len(rows))], dtype=np.int64),
                  np.array([fb_radius.get(i, np.nan) for i in range(len(rows))]),
                  (full, link_lists, wanted, joints))


def _static_partnered(taking: set[tuple[int, int]], kinds: dict[tuple[int, int], int],
                      full: set[int],
                      wanted: set[tuple[tuple[int, int], tuple[int, int]]]
                      ) -> set[tuple[int, int]]:
    """The static links of ``taking`` with a partner that is not static: a link of a body
    named alone (``full``) pairs with every link of the other bodies, any other link with the
    links of the bodies named alone other than its own, and the pairs ``wanted`` (named as
    pairs) pair their two links."""
    moving: dict[int, int] = {}  # body -> its links that are not static
    for bl in taking:
        if kinds[bl] != STATIC:
            moving[bl[0]] = moving.get(bl[0], 0) + 1
    total = sum(moving.values())
    in_full = sum(v for b, v in moving.items() if b in full)
    out = set()
    for bl in taking:
        if kinds[bl] != STATIC:
            continue
        others = total - moving.get(bl[0], 0) if bl[0] in full else in_full
        if others > 0:
            out.add(bl)
    for x, y in wanted:
        if kinds[x] != STATIC:
            out.add(y)
        if kinds[y] != STATIC:
            out.add(x)
    return out


def _managed_matrix(rows: list[tuple[int, int]], full: list[int],
                    explicit: list[tuple[int, int]]) -> np.ndarray:
    """(n, n) bool: the pairs of ``rows`` ((body, link), sorted) that are managed: every pair of
    two different bodies one of which is in ``full`` (named alone), and the ``explicit`` pairs
    of row indices."""
    n = len(rows)
    body = np.array([bl[0] for bl in rows], dtype=np.int64).reshape(n)
    inf = np.isin(body, np.array(full, dtype=np.int64))
    managed = (inf[:, None] | inf[None, :]) & (body[:, None] != body[None, :])
    for i, j in explicit:
        managed[i, j] = managed[j, i] = True
    return managed
