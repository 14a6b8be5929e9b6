"""Names of a :class:`~mbplugin.mujoco.MujocoContacts`' items resolved in the MuJoCo model:
bodies and geoms by name or id (:func:`body`, :func:`geom`), the managed geom pairs MuJoCo
collides, the per-geom materials and the per-row pair laws, and the names in messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.mujoco.native import native_pairs


@dataclass(frozen=True)
class Ref:
    """A MuJoCo body or geom named explicitly: :func:`body` / :func:`geom`."""

    kind: str  # "body" or "geom"
    ref: str | int

    def __post_init__(self) -> None:
        if self.kind not in ("body", "geom"):
            raise ParameterError(f"Ref kind = {self.kind!r}: allowed 'body', 'geom'")
        if not (isinstance(self.ref, str) or (isinstance(self.ref, int | np.integer)
                                              and not isinstance(self.ref, bool))):
            raise ParameterError(f"{self.kind}({self.ref!r}): give a name or an id")


def body(x: str | int) -> Ref:
    """A MuJoCo body by name or id, for ``manage=``, ``materials=``, ``pair_laws=``."""
    return Ref("body", x)


def geom(x: str | int) -> Ref:
    """A MuJoCo geom by name or id (unnamed geoms: their id), for ``manage=`` and
    ``materials=``."""
    return Ref("geom", x)


class Items:
    """The items of model ``m`` (``mj`` the mujoco package): :meth:`resolve`, :meth:`pairs`,
    :meth:`per_shape`, :meth:`pair_laws`, and the names :meth:`body`, :meth:`geom` for
    messages."""

    def __init__(self, mj: Any, m: Any) -> None:
        self.mj, self.m = mj, m

    def body(self, b: int) -> str:
        name = self.mj.mj_id2name(self.m, self.mj.mjtObj.mjOBJ_BODY, b)
        return f"body {name!r}" if name else f"body {b}"

    def geom(self, g: int) -> str:
        name = self.mj.mj_id2name(self.m, self.mj.mjtObj.mjOBJ_GEOM, int(g))
        owner = self.body(int(self.m.geom_bodyid[g]))
        return f"geom {name!r} of {owner}" if name else f"geom {g} of {owner}"

    # -- items --------------------------------------------------------------------------
    def resolve(self, item: Any, where: str) -> tuple[str, np.ndarray]:
        """("body" | "geom", the geom ids) of a manage / materials / pair_laws item."""
        m, mj = self.m, self.mj
        obj_body, obj_geom = mj.mjtObj.mjOBJ_BODY, mj.mjtObj.mjOBJ_GEOM

        def body_geoms(b: int) -> np.ndarray:
            return np.arange(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]) \
                if m.body_geomnum[b] else np.zeros(0, dtype=np.int64)

        def by_name(obj: Any, name: str) -> int:
            return int(mj.mj_name2id(m, obj, name))

        if isinstance(item, Ref):
            k, v = item.kind, item.ref
            n = m.nbody if k == "body" else m.ngeom
            if isinstance(v, str):
                i = by_name(obj_body if k == "body" else obj_geom, v)
                if i < 0:
                    raise ParameterError(f"{where}: the model has no {k} named {v!r}")
            else:
                i = int(v)
                if not 0 <= i < n:
                    raise ParameterError(f"{where}: {k} id {i} is outside 0 .. {n - 1}")
            return k, (body_geoms(i) if k == "body" else np.array([i], dtype=np.int64))
        if isinstance(item, str):
            b, g = by_name(obj_body, item), by_name(obj_geom, item)
            if b >= 0 and g >= 0 and int(m.geom_bodyid[g]) != b:
                raise ParameterError(
                    f"{where}: {item!r} names a body and a geom of another body; write "
                    f"body({item!r}) or geom({item!r}) (mbplugin.mujoco)")
            if b >= 0:
                return "body", body_geoms(b)
            if g >= 0:
                return "geom", np.array([g], dtype=np.int64)
            raise ParameterError(f"{where}: the model has no body or geom named {item!r}")
        if isinstance(item, int | np.integer) and not isinstance(item, bool):
            if not 0 <= int(item) < m.nbody:
                raise ParameterError(f"{where}: body id {int(item)} is outside 0 .. "
                                     f"{m.nbody - 1}")
            return "body", body_geoms(int(item))
        raise ParameterError(f"{where}: {item!r}: give a body (name or id, or body(x)), a "
                             "geom (geom(name or id), or a name no body has) or a pair (x, y) "
                             "of them")

    def pairs(self, items: list[Any]) -> np.ndarray:
        """The managed geom pairs (P, 2), lower id first: the named ones MuJoCo collides."""
        m = self.m
        found = []
        every = np.arange(m.ngeom)
        for item in items:
            if isinstance(item, tuple) and len(item) == 2:
                gx = self.resolve(item[0], "manage")[1]
                gy = self.resolve(item[1], "manage")[1]
            else:
                gx = self.resolve(item, "manage")[1]
                gy = every[~np.isin(every, gx)]
            if not len(gx) or not len(gy):
                continue
            a = np.repeat(gx, len(gy))
            b = np.tile(gy, len(gx))
            ok = native_pairs(m, a, b)
            found.append(np.stack([np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])], 1))
        if not found:
            return np.zeros((0, 2), dtype=np.int64)
        pairs = np.unique(np.concatenate(found), axis=0)
        mocap = np.asarray(m.body_mocapid[m.geom_bodyid[pairs.ravel()]]) >= 0
        if mocap.any():
            # a mocap body is moved by the user between steps (mocap_pos / mocap_quat): no
            # velocity, no mass; the contact layer has no such row (its contacts were missed
            # or sank: a ball on a rising mocap plate fell through it)
            g = int(pairs.ravel()[np.flatnonzero(mocap)[0]])
            raise ParameterError(
                f"manage: {self.geom(g)} is on a mocap body (moved by mocap_pos / "
                "mocap_quat), which the contact layer does not model; leave its pairs to "
                "MuJoCo (manage the other items as pairs (x, y) without it)")
        return pairs

    def per_shape(self, materials: Mapping[Any, Mapping[str, float]],
                  shape_of: dict[int, int]) -> list[Mapping[str, float] | None]:
        """Each managed geom's material (``shape_of``: geom id -> shape index) from the
        ``materials`` items (a geom's spec wins over its body's)."""
        per_shape: list[Mapping[str, float] | None] = [None] * len(shape_of)
        by_geom: dict[int, Mapping[str, float]] = {}
        for item, spec in materials.items():
            kind_of, gs = self.resolve(item, "materials")
            for g in gs.tolist():
                if kind_of == "geom" or g not in by_geom:
                    by_geom[g] = spec
        for g, spec in by_geom.items():
            if g in shape_of:
                per_shape[shape_of[g]] = spec
        return per_shape

    def pair_laws(self, pair_laws: Iterable[tuple[Any, tuple[Any, Any]]],
                  row_of_body: dict[int, int]) -> list[tuple[Any, tuple[int, int]]]:
        """``[(law, (row_a, row_b)), ...]`` of the ``pair_laws`` items (pairs of bodies;
        ``row_of_body``: MuJoCo body id -> row)."""
        m = self.m
        plaws = []
        for lw, xy in pair_laws:
            if not (isinstance(xy, tuple) and len(xy) == 2):
                raise ParameterError(f"pair_laws: {xy!r} is not a pair (x, y) of bodies")
            bx = {int(m.geom_bodyid[g]) for g in self.resolve(xy[0], "pair_laws")[1]}
            by = {int(m.geom_bodyid[g]) for g in self.resolve(xy[1], "pair_laws")[1]}
            for x in bx:
                for y in by:
                    if x in row_of_body and y in row_of_body and x != y:
                        plaws.append((lw, (row_of_body[x], row_of_body[y])))
        return plaws


def check_hertz(model: Any, spairs: np.ndarray, shape_name: Any) -> None:
    """A managed shape pair whose law has no ``k`` (Hertz's stiffness) or needs the effective
    radius, and whose two shapes have none there (both flat: a plane, a box, a cylinder's or a
    sharp mesh's face, edge or corner; :meth:`~mbplugin.contact.ContactModel.hertz_radii`),
    is refused here, at construction, naming its geoms (``shape_name(shape id)``), not at its
    first contact mid-run. ``model``: the built :class:`~mbplugin.contact.ContactModel`,
    ``spairs`` (P, 2) the managed shape pairs."""
    if not len(spairs):
        return
    curved, flat = model.hertz_radii()
    a, b = spairs[:, 0], spairs[:, 1]
    sharp = ~curved[a] & ~curved[b] & flat[a] & flat[b]
    if not sharp.any():
        return
    rows = np.array([model._shapes[i].body for i in range(model.n_shapes)], dtype=np.int64)
    for q in np.flatnonzero(sharp).tolist():
        ra, rb = int(rows[a[q]]), int(rows[b[q]])
        law = model._body_laws.get((min(ra, rb), max(ra, rb)), model._default)
        if not (law.hertz_k or "r_eff" in tuple(law.law.needs)):
            continue
        pair = (f"the contact of {shape_name(int(a[q]))} with {shape_name(int(b[q]))} has "
                "none (a face, edge or corner of a plane, box, cylinder or sharp mesh on "
                "another)")
        if law.hertz_k:
            raise ParameterError(
                f"law {law.law.name!r} has no 'k' and Hertz's stiffness needs an effective "
                f"radius, but {pair}; give 'k' (e.g. law={{'name': ..., 'k': ...}}) or a "
                "pair law with 'k' for this pair (pair_laws=)")
        raise ParameterError(
            f"law {law.law.name!r} needs the contact's effective radius, but {pair}; give "
            "this pair a law that needs none (pair_laws=)")
