"""PyBullet collision shapes (``getCollisionShapeData``) as contact-layer shapes.

PyBullet reports, per collision shape of a link: the geometry type, its dimensions, the mesh file
(for meshes) and the shape's local pose relative to the link's centre of mass (inertial frame).
The mapping (PyBullet Quickstart Guide, ``createCollisionShape``):

======================  =========================================  ===========================
PyBullet type           dimensions                                 contact-layer shape
======================  =========================================  ===========================
``GEOM_SPHERE`` (2)     (radius, ., .)                             :class:`Sphere`
``GEOM_BOX`` (3)        full extents (x, y, z)                     :class:`Box` (half extents),
                                                                   or :class:`Plane` (see below)
``GEOM_CAPSULE`` (7)    (height, radius, .): height between the     :class:`Capsule`
                        centres of the two caps, axis = local z
``GEOM_PLANE`` (6)      the plane normal (local)                   :class:`Plane` through the origin
``GEOM_MESH`` (5)       scale (x, y, z), file name                 :class:`Mesh` (trimesh)
``GEOM_CYLINDER`` (4)   (height, radius, .)                        not modelled: an error, or
                                                                   the getClosestPoints
                                                                   fallback (below)
======================  =========================================  ===========================

Fallback (``fallback=True``): a shape the contact layer cannot model (cylinder, ellipsoid,
heightfield) is kept as a :class:`LinkShape` with ``fallback`` set and a stand-in
:class:`Sphere` of its bounding radius that only carries the link's material and law into the
model (its pairs are excluded from the model's detection); the backend then asks PyBullet's
``getClosestPoints`` for the link's contacts (see ``BulletContacts(fallback=...)``).

A *static* box (mass 0) whose two largest extents are both at least ``flat_box`` (default 20 m)
is a ground slab (``plane.urdf`` of ``pybullet_data`` is a 200 x 200 x 10 m box): it is modelled
as the half-space under its face of largest local z, so a mesh or a capsule resting on it uses
the plane narrow phase (one contact per touching region / end) rather than a box pair.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.contact import Box, Capsule, Mesh, Plane, Sphere
from mbplugin.errors import ParameterError

GEOM_SPHERE, GEOM_BOX, GEOM_CYLINDER, GEOM_MESH, GEOM_PLANE, GEOM_CAPSULE = 2, 3, 4, 5, 6, 7
_NAMES = {2: "sphere", 3: "box", 4: "cylinder", 5: "mesh", 6: "plane", 7: "capsule", 8: "ellipsoid",
          9: "heightfield"}


@dataclass
class LinkShape:
    """One collision shape of a link: the contact-layer shape and its local pose about the
    link's centre of mass (``pos`` m, ``quat`` [w, x, y, z])."""

    shape: Any
    pos: np.ndarray
    quat: np.ndarray
    fallback: bool = False  # not modelled: contacts from PyBullet's getClosestPoints
    radius: float = float("nan")  # fallback shapes: the radius PyBullet reports (m), else NaN


def xyzw_to_wxyz(q: Any) -> np.ndarray:
    """PyBullet's [x, y, z, w] quaternion(s) as [w, x, y, z]."""
    a = np.asarray(q, dtype=float)
    return np.concatenate([a[..., 3:4], a[..., :3]], axis=-1)


def link_shapes(
    client: Any, body: int, link: int, static: bool, flat_box: float = 20.0,
    mesh_radius: float | None = None, fallback: bool = False,
) -> list[LinkShape]:
    """The contact-layer shapes of ``(body, link)`` (link -1 = base) of a :class:`Client`.

    Raises :class:`ParameterError` naming the body, link and type for a shape the contact layer
    cannot model (cylinder, ellipsoid, heightfield, a mesh file PyBullet does not report),
    unless ``fallback``: then such a shape is returned as a fallback stand-in (module docstring).
    """
    out: list[LinkShape] = []
    for row in client("getCollisionShapeData", body, link):
        gtype, dims, fname = int(row[2]), np.asarray(row[3], dtype=float), row[4]
        pos = np.asarray(row[5], dtype=float)
        quat = xyzw_to_wxyz(row[6])
        where = f"body {body} link {link}"
        if gtype == GEOM_SPHERE:
            shape: Any = Sphere(float(dims[0]))
        elif gtype == GEOM_BOX:
            half = 0.5 * dims
            top = np.sort(dims)[-2:]
            if static and np.all(top >= flat_box):
                # ground slab: the half-space under its top face (local +z)
                shape = Plane(normal=(0.0, 0.0, 1.0), point=(0.0, 0.0, float(half[2])))
            else:
                shape = Box(tuple(half))
        elif gtype == GEOM_CAPSULE:
            shape = Capsule(radius=float(dims[1]), half_length=float(dims[0]) / 2.0)
        elif gtype == GEOM_PLANE:
            shape = Plane(normal=tuple(dims))
        elif gtype == GEOM_MESH:
            shape = _mesh(fname, dims, where, mesh_radius)
        elif fallback:
            out.append(_stand_in(gtype, dims, pos, quat))
            continue
        else:
            raise ParameterError(
                f"{where}: PyBullet {_NAMES.get(gtype, gtype)} shape is not modelled by the "
                "contact layer (allowed: sphere, box, capsule, plane, mesh); replace it (e.g. a "
                "cylinder by a capsule or a mesh), leave this pair to PyBullet, or ask for "
                "PyBullet's getClosestPoints with BulletContacts(..., fallback='closest_points')"
            )
        out.append(LinkShape(shape, pos, quat))
    return out


def _stand_in(gtype: int, dims: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> LinkShape:
    """A fallback shape: a stand-in sphere of the shape's bounding radius (it only carries the
    material and law; the contacts come from getClosestPoints) and the radius PyBullet reports
    (cylinder: dims = (height, radius); other types: NaN)."""
    if gtype == GEOM_CYLINDER:
        radius = float(dims[1])
        bound = float(np.hypot(dims[1], dims[0] / 2.0))
    else:
        radius = float("nan")
        bound = float(np.max(np.abs(dims))) if np.any(np.abs(dims) > 0) else 1.0
    return LinkShape(Sphere(max(bound, 1e-9)), pos, quat, fallback=True, radius=radius)


def _mesh(fname: Any, scale: np.ndarray, where: str, radius: float | None) -> Mesh:
    import trimesh

    path = fname.decode() if isinstance(fname, bytes) else str(fname)
    if not path or not os.path.isfile(path):
        raise ParameterError(
            f"{where}: mesh file {path!r} reported by PyBullet cannot be read; give the mesh "
            "file path in the URDF (or leave this pair to PyBullet)"
        )
    m = trimesh.load(path, force="mesh")
    m = m.copy()
    m.apply_scale(np.asarray(scale, dtype=float))
    return Mesh(m, radius=radius)
