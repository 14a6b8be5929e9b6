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
``GEOM_MESH`` (5)       scale (x, y, z), file name                 :class:`Mesh`: its convex
                                                                   parts (below)
``GEOM_MESH`` (5)       file ``unknown_file``: a URDF cylinder      :class:`Mesh`: the convex hull
                        loaded without the implicit-cylinder       of the vertices PyBullet
                        flag, a shape made from vertices           simulates (``getMeshData``)
``GEOM_CYLINDER`` (4)   (height, radius, .): URDF cylinders with   :class:`Cylinder`: exact
                        ``URDF_USE_IMPLICIT_CYLINDER``,            on a plane, grown by the
                        ``createCollisionShape(GEOM_CYLINDER)``    margin (below)
======================  =========================================  ===========================

**Meshes as PyBullet simulates them.** A dynamic body's mesh file is, in PyBullet, a convex
hull per object of an OBJ file (a V-HACD file such as ``duck_vhacd.obj`` holds several objects:
a compound of their hulls) and one convex hull of any other file (STL); so is it here: each
connected part of an OBJ file (``o`` objects of a V-HACD OBJ do not share vertices) becomes the
convex hull of its vertices, one :class:`Mesh` each, at the shape's pose (their plane
contacts: only the corners on the hull of all the parts, ``Mesh(plane_points=)``; the others lie
inside the compound and would touch a plane only past their depth in it). A file that is not
a closed surface (r2d2's ``l_finger.stl`` has open edges) is therefore not refused: its convex
hull is what PyBullet collides with too. A static body (mass 0) keeps its file as one mesh
(PyBullet uses the triangles themselves); it must then be closed.

**Cylinders.** PyBullet turns a URDF ``<cylinder>`` loaded with default flags into a convex
hull of 32 points per rim (reported as ``GEOM_MESH`` with file ``unknown_file``): the vertices
are read with ``getMeshData`` (in the inertial frame, the shape's pose applied) and their convex
hull is the shape - the same prism PyBullet simulates, inscribed in the URDF cylinder with a
chordal error R (1 - cos(pi / 32)) = 0.48 % of R; each rim vertex is a corner contact
(:mod:`mbplugin.contact.mesh`): it rests on its end face on the rim's corners (each with the
full law), on its side on the corners of its lowest face. An implicit cylinder
(``GEOM_CYLINDER``) is an exact cylinder in PyBullet (``btCylinderShape``: a core of radius and
half height less the margin, grown by it): here a :class:`Cylinder` of that core with the margin
as ``skin`` (measured: ``getClosestPoints`` against a plane at 60 orientations, to 2e-15 m). On
a plane it touches at its rims' lowest points (tilted: one; on its side: the two ends of its
lowest generator) or, an end face flat on the plane, at three points of the rim
(:mod:`mbplugin.contact.cylinder`); against other shapes it is the inscribed prism of
``CYLINDER_SECTIONS`` = 64 sides (chordal error 0.12 % of R).

**Collision margin.** PyBullet collides a box and a convex hull (a dynamic body's mesh, a URDF
cylinder's hull) with a collision margin of 1 mm (:data:`MARGIN`): a box is its core of half
extents less 1 mm grown by a 1 mm ball (faces where the URDF puts them, edges and corners
rounded by 1 mm), a hull is grown by 1 mm all round. ``getClosestPoints`` and native contact
see those grown shapes; so does the backend: such a shape is added to the model with
``skin`` = 1 mm (:meth:`mbplugin.contact.ContactModel.add_shape`; a hull of a mesh file rests
1 mm higher than its vertices, a box on an edge or corner up to 0.73 mm lower than its sharp
corner). Spheres, capsules and planes are exact in PyBullet (no skin), so are a static body's
triangle meshes here (not measured); a margin changed by ``changeDynamics(collisionMargin=)``
cannot be read back and is not followed.

Fallback (``fallback=True``): a shape the contact layer cannot model (ellipsoid, heightfield),
and with it a ``GEOM_CYLINDER`` (the user's choice), is kept as a :class:`LinkShape` with
``fallback`` set and a stand-in :class:`Sphere` of its bounding radius that only carries the
link's material and law into the model (its pairs are excluded from the model's detection);
the backend then asks PyBullet's ``getClosestPoints`` for the link's contacts (see
``BulletContacts(fallback=...)``).

A *static* box (mass 0) whose two largest extents are both at least ``flat_box`` (default 20 m)
is a ground slab (``plane.urdf`` of ``pybullet_data`` is a 200 x 200 x 10 m box): it is modelled
as the half-space under its face of largest local z, so a mesh or a capsule resting on it uses
the plane narrow phase (one contact per corner / end) rather than a box pair.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pybullet
import trimesh

from mbplugin.contact import Box, Capsule, Cylinder, Mesh, Plane, Sphere
from mbplugin.contact.mesh import mesh_problems
from mbplugin.errors import ParameterError

GEOM_SPHERE, GEOM_BOX, GEOM_CYLINDER, GEOM_MESH, GEOM_PLANE, GEOM_CAPSULE = 2, 3, 4, 5, 6, 7
#: PyBullet's collision margin (m) of boxes and convex hulls, its default for ``loadURDF`` and
#: ``createCollisionShape`` (bullet3's URDF importer: ``gUrdfDefaultCollisionMargin``); PyBullet
#: cannot report it. Measured (``getClosestPoints`` against a plane): a hull's distance 1.000 mm
#: less than its lowest vertex's, a box on a corner 1 mm (n_x + n_y + n_z - 1) above its sharp
#: corner (n the plane normal in the box frame), to 1e-15 m.
MARGIN = 1e-3
#: Sides of the prism that stands for an implicit cylinder (``GEOM_CYLINDER``) against shapes
#: other than a plane.
CYLINDER_SECTIONS = 64
#: the tolerance of a dynamic mesh file's plane corners, relative to the diagonal of its
#: bounding box (:func:`_plane_reduced`: 0.57 mm on the A1's thigh, 0.64 mm on the Laikago's
#: lower leg)
PLANE_CORNER_TOL = 2e-3
#: a hull with at most this many corner features keeps every corner as a plane contact
PLANE_CORNER_MIN = 32
#: the directions along which :func:`plane_corners` checks the simplified hull's reach (the
#: 642 vertices of a subdivided icosahedron, about 8 degrees apart)
PLANE_DIRS = np.ascontiguousarray(trimesh.creation.icosphere(3).vertices, dtype=float)
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
    skin: float = 0.0  # PyBullet's collision margin the shape is grown by (m; module docstring)


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
    try:
        data = client("getCollisionShapeData", body, link)
    except pybullet.error:
        raise ParameterError(
            f"body {body} link {link}: PyBullet reports no collision shapes for it (a body "
            "created with useMaximalCoordinates=True, whose shapes getCollisionShapeData cannot "
            "read): create it with useMaximalCoordinates=False (the default) to manage its "
            "contacts, or leave its pairs to PyBullet") from None
    if not data:
        return _unreported(client, body, link, fallback)
    for idx, row in enumerate(data):
        gtype, dims, fname = int(row[2]), np.asarray(row[3], dtype=float), row[4]
        pos = np.asarray(row[5], dtype=float)
        quat = xyzw_to_wxyz(row[6])
        where = f"body {body} link {link}"
        path = fname.decode() if isinstance(fname, bytes) else str(fname)
        if gtype == GEOM_SPHERE:
            shape: Any = Sphere(float(dims[0]))
        elif gtype == GEOM_BOX:
            half = 0.5 * dims
            top = np.sort(dims)[-2:]
            if static and np.all(top >= flat_box):
                # ground slab: the half-space under its top face (local +z)
                shape = Plane(normal=(0.0, 0.0, 1.0), point=(0.0, 0.0, float(half[2])))
            elif np.all(half > MARGIN):
                # PyBullet's box: its core (half - margin) grown by the margin (module docstring)
                out.append(LinkShape(Box(tuple(half - MARGIN)), pos, quat, skin=MARGIN))
                continue
            else:
                shape = Box(tuple(half))
        elif gtype == GEOM_CAPSULE:
            shape = Capsule(radius=float(dims[1]), half_length=float(dims[0]) / 2.0)
        elif gtype == GEOM_PLANE:
            shape = Plane(normal=tuple(dims))
        elif gtype == GEOM_MESH and path in ("", "unknown_file"):
            # vertices PyBullet made itself (a URDF cylinder, a shape from vertices): read them,
            # in the inertial frame with the shape's pose applied
            hull = _simulated_mesh(client, body, link, idx, where, mesh_radius, fallback)
            out.append(LinkShape(hull, np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), skin=MARGIN)
                       if hull is not None else _stand_in(gtype, dims, pos, quat))
            continue
        elif gtype == GEOM_MESH:
            # a dynamic body's hulls grown by PyBullet's margin; a static body's triangles not
            out.extend(LinkShape(part, pos, quat, skin=0.0 if static else MARGIN)
                       for part in _mesh(path, dims, where, mesh_radius, static))
            continue
        elif gtype == GEOM_CYLINDER and not fallback:
            # PyBullet's implicit cylinder: its core (radius and half height less the margin)
            # grown by the margin (module docstring)
            r, h = float(dims[1]), 0.5 * float(dims[0])
            if min(r, h) > MARGIN:
                out.append(LinkShape(Cylinder(r - MARGIN, h - MARGIN, CYLINDER_SECTIONS,
                                              edge_radius=mesh_radius), pos, quat, skin=MARGIN))
                continue
            shape = Cylinder(r, h, CYLINDER_SECTIONS, edge_radius=mesh_radius)
        elif fallback:
            out.append(_stand_in(gtype, dims, pos, quat))
            continue
        else:
            raise ParameterError(
                f"{where}: PyBullet {_NAMES.get(gtype, gtype)} shape is not modelled by the "
                "contact layer (allowed: sphere, box, capsule, plane, cylinder, mesh); replace "
                "it, leave this pair to PyBullet, or ask for PyBullet's getClosestPoints with "
                "BulletContacts(..., fallback='closest_points')"
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


def _unreported(client: Any, body: int, link: int, fallback: bool) -> list[LinkShape]:
    """The shapes of a link for which ``getCollisionShapeData`` reports nothing: none when the
    link has no collision shape (its bounding box a point, grown by the 1 mm margin for a
    URDF link without ``<collision>``), else PyBullet collides with a
    shape it does not report (``GEOM_HEIGHTFIELD``: its bounding box spans the terrain): a
    fallback stand-in with ``fallback``, otherwise an error (before, such a body named in
    ``manage`` lost its native contacts and got none: a ball fell through a heightfield)."""
    lo, hi = (np.asarray(x, dtype=float) for x in client("getAABB", body, link))
    if not np.any(hi - lo > 2.0 * MARGIN + 1e-9):  # none: a point grown by the margin
        return []
    if fallback:
        bound = 0.5 * float(np.linalg.norm(hi - lo))
        return [LinkShape(Sphere(bound), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]),
                          fallback=True, radius=float("nan"))]
    raise ParameterError(
        f"body {body} link {link}: PyBullet collides with a shape it does not report "
        "(getCollisionShapeData gives none: a heightfield, GEOM_HEIGHTFIELD), which the "
        "contact layer cannot model; leave its pairs to PyBullet (manage the other bodies' "
        "pairs only), or ask for PyBullet's getClosestPoints with "
        "BulletContacts(..., fallback='closest_points')")


def _simulated_mesh(client: Any, body: int, link: int, index: int, where: str,
                    radius: float | None, fallback: bool = False) -> Mesh | None:
    """The convex hull of the vertices PyBullet simulates for collision shape ``index`` of
    ``(body, link)`` (``getMeshData``: inertial frame, the shape's pose applied); None where
    PyBullet gives no vertices (a static triangle mesh made from vertices) and ``fallback``."""

    try:
        n, verts = client("getMeshData", body, link, index)
    except Exception:  # older PyBullet: no shape index
        n, verts = client("getMeshData", body, link)
    v = np.asarray(verts, dtype=float).reshape(-1, 3)
    if (n < 4 or len(v) < 4) and fallback:
        return None
    if n < 4 or len(v) < 4:
        raise ParameterError(
            f"{where}: PyBullet reports a mesh without a file ('unknown_file') and getMeshData "
            f"gives {len(v)} vertices (a static triangle mesh made from vertices); the contact "
            "layer cannot rebuild it: leave this pair to PyBullet, give the mesh as a file "
            "(createCollisionShape(GEOM_MESH, fileName=...)), ask for PyBullet's "
            "getClosestPoints with BulletContacts(..., fallback='closest_points'), or load "
            "the URDF with p.URDF_USE_IMPLICIT_CYLINDER for a cylinder")
    return Mesh(convex_hull(v), radius=radius)


def _mesh(path: str, scale: np.ndarray, where: str, radius: float | None,
          static: bool = False) -> list[Mesh]:
    """The shapes of a mesh file as PyBullet collides with it (module docstring): the convex
    hull of each connected part for a dynamic body, the file's closed mesh for a static one."""

    if not os.path.isfile(path):
        raise ParameterError(
            f"{where}: mesh file {path!r} reported by PyBullet cannot be read; give the mesh "
            "file path in the URDF (or leave this pair to PyBullet)"
        )
    try:
        m = trimesh.load(path, force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types for unreadable files
        raise ParameterError(f"{where}: trimesh cannot read the mesh file {path!r}: {exc}"
                             ) from None
    m = m.copy()
    m.apply_scale(np.asarray(scale, dtype=float))
    if static:
        problems = mesh_problems(m)
        if problems:
            raise ParameterError(
                f"{where}: the static mesh {path!r} " + "; ".join(problems) + ": PyBullet "
                "collides with its triangles, the contact layer needs a closed surface; leave "
                "this pair to PyBullet (do not manage it) or give the body a closed mesh")
        return [Mesh(m, radius=radius)]
    pts = np.asarray(m.vertices, dtype=float)
    parts = [pts]
    if path.lower().endswith(".obj") and len(m.faces):
        # PyBullet: one hull per object or group of an OBJ file (V-HACD files: disjoint
        # objects), one hull of a file without any
        parts = [p * np.asarray(scale, dtype=float) for p in obj_groups(path)] or [pts]
    solid = [p for p in parts if _spans_volume(p)]
    if len(solid) < len(parts):
        if not solid:
            raise ParameterError(
                f"{where}: the mesh file {path!r} has no part with a volume (every object's "
                "vertices are fewer than 4 or lie in a plane): the contact layer cannot model "
                "it; give the link a closed mesh or leave its pairs to PyBullet")
        warnings.warn(f"{where}: mesh file {path!r}: {len(parts) - len(solid)} of its "
                      f"{len(parts)} parts are flat (fewer than 4 vertices or all in a plane) "
                      "and are left out; the others cover the link", stacklevel=3)
    if len(solid) == 1:
        return [_plane_reduced(convex_hull(solid[0]), radius, None)]
    # a compound: a plane meets its parts at the corners of the hull of them all
    outer = convex_hull(np.concatenate(solid)).vertices
    return [_plane_reduced(convex_hull(part), radius, outer) for part in solid]


def plane_corners(points: np.ndarray, tol: float) -> np.ndarray:
    """The corners (k, 3) of an approximate convex hull of ``points`` (n, 3) m: qhull's
    hull with option ``W`` = ``tol`` (m; Barber, Dobkin & Huhdanpaa 1996, Qhull's "min
    distance above plane for outside points": a point within ``tol`` of a facet is not made
    a vertex), so that every point lies about ``tol`` at most outside the hull of the corners
    kept (measured: the A1's thigh.obj, 463 hull corners -> 190 at tol 0.57 mm), and the
    extreme point along each direction of :data:`PLANE_DIRS` where the kept corners fall
    more than ``tol`` / 2 short of it (qhull's option is a heuristic: the A1's calf.obj kept
    a vertex 0.85 mm out at tol 0.52 mm)."""
    from scipy.spatial import ConvexHull

    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    keep = ConvexHull(pts, qhull_options=f"W{float(tol):.17g}").vertices
    # qhull's W is a heuristic: a point may stay further out (measured: the A1's calf.obj,
    # 0.85 mm at tol 0.52 mm); the extreme point along each of PLANE_DIRS whose support
    # reaches more than half the tolerance beyond the kept corners' is kept too
    sup = pts @ PLANE_DIRS.T  # (n, D) m
    short = sup.max(axis=0) - sup[keep].max(axis=0) > 0.5 * float(tol)
    extra = np.unique(np.argmax(sup[:, short], axis=0))
    return pts[np.union1d(keep, extra)]


def _plane_reduced(hull: Any, radius: float | None, outer: np.ndarray | None) -> Mesh:
    """The :class:`Mesh` of a dynamic body's convex ``hull`` (a part of a compound whose
    ``outer`` hull corners are given, or the whole shape: None) whose plane contacts are, for
    a finely tessellated hull (more than :data:`PLANE_CORNER_MIN` corner features), only the
    corners of its hull simplified to within :data:`PLANE_CORNER_TOL` of its size
    (:func:`plane_corners`; the smooth regions' members all kept): the corners a face or
    a generator lying on a plane rests on, not every vertex within a fraction of a millimetre
    of it (the Laikago's lower leg: 466 corners, ~135 of them within 4 mm of the floor when
    it lies on it). A plane may then reach at most that tolerance into the hull before a
    kept corner touches it."""
    m = Mesh(hull, radius=radius, plane_points=outer)
    if int(np.count_nonzero(m.feature_kind == 0)) <= PLANE_CORNER_MIN:
        return m
    pts = np.asarray(hull.vertices if outer is None else outer, dtype=float)
    size = float(np.linalg.norm(pts.max(axis=0) - pts.min(axis=0)))
    keep = plane_corners(pts, PLANE_CORNER_TOL * size)
    start, members = m.feature_start, m.feature_vertices
    smooth = np.concatenate([members[start[f]:start[f + 1]]
                             for f in np.flatnonzero(m.feature_kind == 1)] or [np.zeros(0, int)])
    return Mesh(hull, radius=radius,
                plane_points=np.concatenate([keep, m.vertices[smooth.astype(np.int64)]]))


def convex_hull(points: np.ndarray) -> Any:
    """The closed convex hull (a trimesh) of ``points`` (k, 3) spanning a volume:
    ``trimesh.convex.convex_hull``'s, or, where that one is left open (measured: xarm's
    left_inner_knuckle.STL, 21972 vertices, a hull of 85 with open edges once trimesh merged
    its faces), qhull's facets (scipy) as a mesh that trimesh processes (close vertices
    merged) with consistent outward normals."""
    import trimesh
    from scipy.spatial import ConvexHull

    hull = trimesh.convex.convex_hull(points)
    if hull.is_watertight:
        return hull
    hull = trimesh.Trimesh(points, ConvexHull(points).simplices, process=True)
    hull.fix_normals()
    return hull


def _spans_volume(points: np.ndarray) -> bool:
    """Whether ``points`` (k, 3) span a volume (a convex hull with an inside): at least 4
    points, not all in one plane (the third singular value of the centred points above 1e-9
    of the first)."""
    if len(points) < 4:
        return False
    sv = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    return bool(sv[0] > 0 and sv[2] > 1e-9 * sv[0])


def obj_groups(path: str) -> list[np.ndarray]:
    """The vertices (k, 3) of each object (``o``) or group (``g``) of the OBJ file ``path``
    that has faces, in file order: the parts PyBullet makes one convex hull each of (its
    Wavefront loader, tinyobjloader, starts a shape at each ``o`` and ``g``; measured with a
    ray between two boxes of one file: one hull without ``o``/``g`` lines, two with). A file
    without ``o``/``g`` lines is one part."""
    verts: list[list[float]] = []
    groups: list[set[int]] = [set()]
    with open(path, errors="replace") as fh:
        for line in fh:
            head = line[:2]
            if head == "v ":
                verts.append([float(x) for x in line.split()[1:4]])
            elif head in ("o ", "g ") or line.strip() in ("o", "g"):
                if groups[-1]:
                    groups.append(set())
            elif head == "f ":
                for tok in line.split()[1:]:
                    i = int(tok.split("/")[0])
                    groups[-1].add(i - 1 if i > 0 else len(verts) + i)
    v = np.asarray(verts, dtype=float).reshape(-1, 3)
    return [v[sorted(g)] for g in groups if g]
