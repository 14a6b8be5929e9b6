"""Checks of :class:`~mbplugin.bullet.BulletContacts`: every error at construction, before anything
is changed in the PyBullet client, and a clear error when the client changes under it.

* :func:`check_arguments` (called first in ``__init__``): the keyword arguments' names and ranges
  (materials and friction / stick parameters by name, with a suggestion for a typo; ``flat_box``;
  a ``manage`` pair of an item with itself).
* :func:`check_build` (called by ``_build`` once the pairs, rows and laws are resolved, before
  the model's store is made and before any ``setCollisionFilterPair``): a ``pair_laws`` entry
  that names no managed pair, links without a material under a law without ``k``, and managed
  pairs whose geometry gives no effective radius for Hertz's stiffness or a law that needs one
  (a sharp box or mesh on the ground or on another sharp box or mesh: the contact layer's
  effective radius rule, :mod:`mbplugin.contact.model`; a mesh is sharp when one of its plane
  features has no radius, :attr:`mbplugin.contact.Mesh.sharp`) -- errors that otherwise
  surface mid-run, when PyBullet's own response of the pair is already off.
* :func:`check_initial_overlaps` (the end of ``__init__``): a managed contact whose overlap in
  the client's current state exceeds half the smaller body's size (a ball placed 0.5 m below the
  ground: its first host step never ended) is refused, and the pairs' native response given
  back, so the client is as it was.
* :func:`host_guard` (on ``step``, ``before_step``, ``after_step``, ``sync``): a raw
  ``pybullet.error`` (a body removed with ``removeBody``, the client disconnected) becomes a
  :class:`~mbplugin.errors.ParameterError` that says what happened, and an error of the contact
  layer that names its internal body indices names the PyBullet bodies instead.

Every message names PyBullet's body ids with their names (``getBodyInfo``) and link names
(``getJointInfo``), not the backend's internal row indices.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from mbplugin.contact.sizes import OverlapWatch
from mbplugin.errors import ParameterError

#: the keys of a material mapping (``material=`` / ``materials=``): ContactModel.add_material's
MATERIAL_KEYS = {"E": True, "nu": True, "rho": False}  # name: required

F = TypeVar("F", bound=Callable[..., Any])


def _suggest(key: str, allowed: Iterable[str]) -> str:
    m = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.5)
    return f" (did you mean '{m[0]}'?)" if m else ""


def check_keys(where: str, given: Any, allowed: Mapping[str, bool]) -> dict[str, Any]:
    """``given`` as a dict whose keys are among ``allowed`` (name: required) and hold every
    required one; else a ParameterError naming ``where``, the key and the allowed keys."""
    if not isinstance(given, Mapping):
        raise ParameterError(f"{where} = {given!r} must be a mapping of "
                             f"{', '.join(allowed)}")
    out = dict(given)
    for key in out:
        if key not in allowed:
            raise ParameterError(f"{where}: unknown key {key!r}{_suggest(str(key), allowed)}; "
                                 f"allowed: {', '.join(allowed)}")
    missing = [k for k, req in allowed.items() if req and k not in out]
    if missing:
        raise ParameterError(f"{where}: missing {missing[0]!r} (needs "
                             f"{', '.join(k for k, r in allowed.items() if r)})")
    return out


def dataclass_keys(cls: type) -> dict[str, bool]:
    """The parameters of a dataclass (name: required) for :func:`check_keys`."""
    return {f.name: f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            for f in dataclasses.fields(cls) if f.init}


def check_material(where: str, spec: Any) -> dict[str, Any]:
    """A material mapping ``{"E": Pa, "nu": -, "rho": kg/m^3 (optional)}`` checked by name and
    by range (:class:`~mbplugin.contact.Material`), errors naming ``where``."""
    from mbplugin.contact import Material

    out = check_keys(where, spec, MATERIAL_KEYS)
    try:
        Material("material", out["E"], out["nu"], out.get("rho"))
    except (ParameterError, TypeError, ValueError) as exc:
        msg = str(exc).replace("Material 'material': ", "")
        raise ParameterError(f"{where}: {msg}") from None
    return out


def check_arguments(*, material: Any, materials: Any, friction: Any, stick: Any,
                    flat_box: Any, manage: Any) -> None:
    """The keyword arguments of :class:`BulletContacts` that need no client (module
    docstring)."""
    from mbplugin.pipeline.friction import Friction
    from mbplugin.pipeline.stick import Stick

    if material is not None:
        check_material("material", material)
    if materials is not None:
        if not isinstance(materials, Mapping):
            raise ParameterError(f"materials = {materials!r} must be a mapping {{body or "
                                 "(body, link): {'E': ..., 'nu': ...}}")
        for key, spec in materials.items():
            check_material(f"materials[{key!r}]", spec)
    if isinstance(friction, Mapping):
        check_keys("friction", friction, dataclass_keys(Friction))
    if isinstance(stick, Mapping):
        check_keys("stick", stick, dataclass_keys(Stick))
    if (isinstance(flat_box, bool) or not isinstance(flat_box, int | float | np.floating)
            or not (flat_box > 0) or math.isnan(flat_box)):
        raise ParameterError(f"flat_box = {flat_box!r} m is outside its allowed range (0, inf] "
                             "(the width above which a static box is the ground half-space; "
                             "inf: never)")
    if isinstance(manage, str | bytes) or not isinstance(manage, Iterable):
        raise ParameterError(f"manage = {manage!r} must be a list of body ids or pairs")


def check_defer_fallback(defer_tol: Any, fallback: Any, fallback_radius: Any) -> None:
    """``defer_tol`` (m, [0, 0.1]), ``fallback`` (None or "closest_points") and
    ``fallback_radius`` (m, (0, inf) or None) of :class:`BulletContacts`."""
    if not (isinstance(defer_tol, float | int) and not isinstance(defer_tol, bool)
            and 0 <= defer_tol <= 0.1):
        raise ParameterError(f"defer_tol = {defer_tol!r} m is outside its allowed range "
                             "[0, 0.1]")
    if fallback not in (None, "closest_points"):
        raise ParameterError(f"fallback = {fallback!r}: allowed None (a shape the contact "
                             "layer cannot model is an error) or 'closest_points'")
    if fallback_radius is not None and not (
            isinstance(fallback_radius, float | int) and np.isfinite(fallback_radius)
            and fallback_radius > 0):
        raise ParameterError(f"fallback_radius = {fallback_radius!r} m is outside its "
                             "allowed range (0, inf)")


def check_manage_pair(item: Any, x: tuple[int, int | None], y: tuple[int, int | None]) -> None:
    """A ``manage`` pair of a body or link with itself is refused (it manages nothing)."""
    if x == y:
        raise ParameterError(f"manage item {item!r}: a pair of {_item(x)} with itself; give "
                             "two different bodies or links (a body id alone manages every "
                             "pair involving it)")


def _item(x: tuple[int, int | None]) -> str:
    return f"body {x[0]}" if x[1] is None else f"link {x[1]} of body {x[0]}"


def describe(client: Any, body: int, link: int | None = None) -> str:
    """``"body 3 'r2d2'"`` / ``"link 2 'right_front_wheel' of body 3 'r2d2'"``: PyBullet's
    body id and link index with their names (``getBodyInfo``, ``getJointInfo``) where the
    client has them."""

    def text(b: Any) -> str:
        return b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)

    try:
        info = client("getBodyInfo", int(body))
        name = text(info[1])
    except Exception:  # a removed body or a lost client: the id alone
        info, name = None, ""
    out = f"body {int(body)}" + (f" '{name}'" if name else "")
    if link is None:
        return out
    if int(link) == -1:
        base = text(info[0]) if info is not None else ""
        return f"the base{f' {base!r}' if base else ''} (link -1) of {out}"
    try:
        lname = text(client("getJointInfo", int(body), int(link))[12])
    except Exception:
        lname = ""
    return f"link {int(link)}" + (f" '{lname}'" if lname else "") + f" of {out}"


def _row(client: Any, bl: tuple[int, int]) -> str:
    """A row (body, link) of the backend: the body alone for a body without joints."""
    try:
        nj = int(client("getNumJoints", bl[0]))
    except Exception:
        nj = 0
    return describe(client, bl[0], None if (nj == 0 and bl[1] == -1) else bl[1])


def check_build(client: Any, model: Any, rows: list[tuple[int, int]],
                managed: np.ndarray,
                materials: Mapping[tuple[int, int], str | None],
                pair_laws: list[tuple[Any, tuple[Any, Any]]],
                links: Callable[[Any], list[tuple[int, int]]]) -> None:
    """Errors of the resolved build (module docstring), before the store is made and before
    anything is changed in the client. ``rows``: the managed (body, link) rows (sorted),
    ``managed``: (n, n) bool, the managed pairs of rows, ``materials``: the material name of
    each row (None: none), ``pair_laws``: the user's ``[(law, (x, y))]`` (x, y as ``(body,
    link or None)``), ``links(x)``: the rows of an item, ``model``: the ContactModel with its
    shapes and laws set. The pairs are checked as arrays (a pile of 1000 bodies managed
    pairwise has 500 000 of them); the first failing pair in row order is reported."""
    from mbplugin.contact.model import MESH

    index = {bl: i for i, bl in enumerate(rows)}
    for i, (_, (x, y)) in enumerate(pair_laws):
        hit = any(a in index and b in index and managed[index[a], index[b]]
                  for a in links(x) for b in links(y))
        if not hit:
            raise ParameterError(
                f"pair_laws[{i}]: the pair ({_row_item(client, x)}, {_row_item(client, y)}) is "
                "not managed (its law would never act); add it to manage= or drop it")
    n = len(rows)
    if not n:
        return
    default = model._default
    body_laws = model._body_laws

    # curvature of each row's shapes for Hertz's k: a shape with a radius of its own
    curved = np.zeros(n, dtype=bool)
    # a plane, a sharp box, a mesh with a corner that has no radius (Mesh.sharp): no radius
    flat = np.zeros(n, dtype=bool)
    sharp_mesh = np.zeros(n, dtype=bool)
    s_curved, s_flat = model.hertz_radii()
    for e, c_s, f_s in zip(model._shapes, s_curved, s_flat, strict=True):
        if e.body < 0 or e.body >= n:
            continue
        if c_s:
            curved[e.body] = True
        elif f_s:
            flat[e.body] = True
            if e.kind == MESH:
                # a sharp mesh (its features on a plane include a corner without a radius,
                # Mesh.sharp) touches with that corner whatever other shapes the link has: a
                # V-HACD compound's sharp hulls beside smooth ones (teddy_vhacd without 'k'
                # failed at its first contact, mid-run)
                sharp_mesh[e.body] = True
    curved &= ~sharp_mesh
    no_mat = np.array([materials.get(bl) is None for bl in rows], dtype=bool)
    ii, jj = np.nonzero(np.triu(managed, 1))  # row order: sorted pairs
    own = np.zeros(len(ii), dtype=bool)  # pairs with a law of their own
    laws = [default] * len(ii)
    if body_laws:
        at = {(int(i), int(j)): q for q, (i, j) in enumerate(zip(ii, jj, strict=True))}
        for (i, j), law in body_laws.items():
            q = at.get((min(i, j), max(i, j)))
            if q is not None:
                own[q] = True
                laws[q] = law
    sharp = ~(curved[ii] | curved[jj]) & flat[ii] & flat[jj]

    def failing(law: Any, sel: np.ndarray) -> np.ndarray:
        hk = bool(law.hertz_k)
        if not (hk or "r_eff" in tuple(law.law.needs)):
            return np.zeros(len(ii), dtype=bool)
        bad = sharp | ((no_mat[ii] | no_mat[jj]) if hk else False)
        return sel & bad

    bad = failing(default, ~own)
    for q in np.flatnonzero(own):
        sel = np.zeros(len(ii), dtype=bool)
        sel[q] = True
        bad |= failing(laws[q], sel)
    if not bad.any():
        return
    q = int(np.flatnonzero(bad)[0])
    law, x, y = laws[q], rows[ii[q]], rows[jj[q]]
    for bl in (x, y):
        if law.hertz_k and materials.get(bl) is None:
            raise ParameterError(
                f"law {law.law.name!r} has no 'k' and {_row(client, bl)} has no material "
                "(E, nu) for Hertz's stiffness; give 'k' or material=/materials=")
    pair = (f"the contact of {_row(client, x)} with {_row(client, y)} has none (a "
            "sharp box's or mesh's face, edge or corner on a plane or another sharp box or "
            "mesh)")
    if law.hertz_k:
        raise ParameterError(
            f"law {law.law.name!r} has no 'k' and Hertz's stiffness needs an effective "
            f"radius, but {pair}; give 'k' (e.g. law={{'name': ..., 'k': ...}}) or a "
            "pair law with 'k' for this pair")
    raise ParameterError(
        f"law {law.law.name!r} needs the contact's effective radius, but {pair}; give "
        "this pair a law that needs none (pair_laws=)")


#: the fraction of the smaller link's size (its reach from its centre of mass) beyond which an
#: overlap of the initial state is refused: pybullet_data's bike.urdf loaded at z = 0.6 starts
#: with both wheels 0.39 m (0.69 of their 0.565 m reach) in the ground; its first host steps
#: put 265 corner contacts of two rigid links at the clip of a damped law's force (~2e6 N of
#: spring against its damping), a root Newton's method does not resolve in 400 iterations
INITIAL_OVERLAP = 0.5


#: PyBullet's joint types (getJointInfo[2]) by name
_JOINT_NAMES = {0: "revolute", 1: "prismatic", 2: "spherical", 3: "planar", 4: "fixed",
                5: "point2point", 6: "gear"}


def check_joints(client: Any, bodies: Iterable[int]) -> None:
    """Refuse (ParameterError) an articulated body in ``bodies`` with a joint that is not
    revolute, prismatic, spherical or fixed (planar, ...): the backend's joint model
    (:mod:`mbplugin.bullet.kinematics`) and its joint reads and resets cover those four;
    checked at construction, never in the middle of a step."""
    for b in sorted(set(int(x) for x in bodies)):
        for j in range(int(client("getNumJoints", b))):
            t = int(client("getJointInfo", b, j)[2])
            if t not in (0, 1, 2, 4):
                raise ParameterError(
                    f"{describe(client, b, j)}: its joint is {_JOINT_NAMES.get(t, t)} (PyBullet "
                    f"joint type {t}); managed contacts of articulated bodies support revolute, "
                    "prismatic, spherical and fixed joints only: leave this body's pairs to "
                    "PyBullet (do not manage them) or model the joint by revolute or prismatic "
                    "joints in the URDF")


def check_initial_overlaps(bc: Any) -> None:
    """Refuse (ParameterError) a managed contact of the current state whose overlap exceeds
    :data:`INITIAL_OVERLAP` of the smaller of its two links' sizes
    (:func:`mbplugin.contact.sizes.body_sizes`), or half the width of either of its two shapes
    along the contact normal (:func:`mbplugin.contact.sizes.overlap_limits`: a ball started
    through a thin slab): bodies that passed into each other, far outside any law's range,
    after giving the managed pairs back to PyBullet (the client is left as it was before the
    constructor). The shapes of a ``getClosestPoints`` (fallback) pair have no width here."""
    from mbplugin.contact.sizes import WIDTH_OVERLAP, body_sizes, overlap_limits

    if not len(bc.rows):
        return
    bodies = bc.body_state()
    batch = bc._detection.detect(bodies, 0.0)
    if not len(batch):
        return
    size = np.append(body_sizes(bc.model, len(bc.rows)), np.inf)
    lim = INITIAL_OVERLAP * np.minimum(size[batch.a], size[batch.b])
    unknown = np.zeros(len(bc.rows), dtype=bool)
    unknown[np.asarray(bc._detection.fb_pairs, dtype=np.int64).reshape(-1)] = True
    wlim, thin = overlap_limits(bc.model, bodies, batch, unknown)
    over = (batch.delta > lim) | (batch.delta > wlim)
    if not over.any():
        return
    ratio = batch.delta / np.minimum(lim, wlim)
    j = int(np.argmax(np.where(over, ratio, -np.inf)))
    bc._filters.restore()  # the pair rules and the masks the build set
    c = bc.client
    ra, rb = _row(c, bc.rows[batch.a[j]]), _row(c, bc.rows[batch.b[j]])
    if batch.delta[j] > wlim[j]:
        thinner = rb if bc.model.arrays.body[thin[j]] == batch.b[j] else ra
        raise ParameterError(
            f"{ra} and {rb} overlap by {batch.delta[j]:.4g} m along their contact normal, "
            f"more than {WIDTH_OVERLAP:g} of the width of {thinner} "
            f"along it ({wlim[j] / WIDTH_OVERLAP:.4g} m; at most {wlim[j]:.4g} m): one is started "
            "into or through the other (a thin part), where the contact's normal points "
            "out of the far side and any law pushes it through; move them apart (or place "
            "the body on the side it should touch) before managing the pair")
    raise ParameterError(
        f"{ra} and {rb} overlap by "
        f"{batch.delta[j]:.4g} m, more than half the smaller one's size ({lim[j]:.4g} m): they "
        "have passed into each other, far outside any contact law's range (the implicit step "
        "cannot resolve the forces of such overlaps); move them apart before managing the "
        "pair")


def _row_item(client: Any, x: tuple[int, int | None]) -> str:
    return describe(client, x[0], x[1])


def host_guard(method: F) -> F:
    """Turn a raw ``pybullet.error`` raised inside ``method`` of a BulletContacts into a
    ParameterError saying what changed in the client (disconnected, a managed body removed);
    any other pybullet.error is re-raised with the step's context."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except self.client.p.error as exc:
            raise host_error(self, exc) from None
        except ParameterError as exc:
            named = name_rows(self, str(exc))
            if named == str(exc):
                raise
            raise ParameterError(named) from None

    return guarded  # type: ignore[return-value]


def name_rows(bc: Any, msg: str) -> str:
    """``msg`` with the contact layer's "bodies i and j" (the backend's row indices) replaced
    by the PyBullet bodies and links they are (:func:`describe`)."""
    import re

    rows = getattr(bc, "rows", [])

    def sub(m: re.Match[str]) -> str:
        i, j = int(m.group(1)), int(m.group(2))
        if not (0 <= i < len(rows) and 0 <= j < len(rows)):
            return m.group(0)
        return f"{_row(bc.client, rows[i])} and {_row(bc.client, rows[j])}"

    return re.sub(r"bodies (-?\d+) and (-?\d+)", sub, msg)


def host_error(bc: Any, exc: Exception) -> ParameterError:
    """The ParameterError of a raw pybullet.error during a step (see :func:`host_guard`)."""
    from mbplugin.bullet.client import cid_connected

    c = bc.client
    if not cid_connected(c.p, c.id):
        return ParameterError(f"PyBullet client {c.id} was disconnected while BulletContacts "
                              "uses it (call release() before p.disconnect, and step no more)")
    try:
        present = set(c.body_ids())
    except Exception:
        present = set()
    managed = {b for b, _ in getattr(bc, "rows", [])}
    gone = sorted(managed - present)
    if managed and not present:  # every body gone: p.resetSimulation (or each removed)
        return ParameterError(
            f"PyBullet client {c.id} holds no body any more (p.resetSimulation, or every body "
            f"removed) while BulletContacts manages bodies {sorted(managed)}: its contacts, "
            "pairs and joint models belong to the world that was cleared; build the world "
            "again and create a new BulletContacts for it (call release() on this one first)")
    if gone:
        return ParameterError(
            f"managed body id {gone[0]} was removed from PyBullet client {c.id} "
            f"(p.removeBody) while BulletContacts manages it; create a new BulletContacts for "
            f"the changed world (or call release() before removing a body)")
    return ParameterError(f"PyBullet call failed during the backend's step: {exc}")


def watch_overlaps(bc: Any, info: Any, batch: Any, bodies: Any) -> Any:
    """``info`` (the step's StepInfo), after the per-step watch of overlaps beyond half a
    part's width (:class:`mbplugin.contact.sizes.OverlapWatch`: one comparison per step; a
    :class:`~mbplugin.contact.sizes.PassThroughWarning`, once, when a body went into or through
    a thin part). ``batch``, ``bodies``: the step's contacts and start state (their normals and
    poses); the overlaps are the step's integrated end overlaps ``info.delta`` by key."""
    watch = bc.__dict__.get("_overlap_watch")
    if watch is None:
        watch = bc.__dict__["_overlap_watch"] = OverlapWatch(bc.model)
    if not watch.deep(info.delta) or not len(batch):
        return info
    keys = np.asarray(info.keys, dtype=np.int64)
    order = np.argsort(keys)
    at = np.clip(np.searchsorted(keys[order], batch.key), 0, len(keys) - 1)
    hit = keys[order][at] == batch.key
    delta = np.where(hit, np.asarray(info.delta, dtype=float)[order][at], -np.inf)
    unknown = np.zeros(len(bc.rows), dtype=bool)
    unknown[np.asarray(bc._detection.fb_pairs, dtype=np.int64).reshape(-1)] = True
    c = bc.client
    watch.check(bodies, batch, delta, bc.t, lambda j: (
        f"{_row(c, bc.rows[batch.a[j]])} and {_row(c, bc.rows[batch.b[j]])}"), unknown)
    return info
