"""MuJoCo geoms as contact-layer shapes.

A geom's size, type and pose come from the compiled ``mjModel`` (MuJoCo's XML reference,
``geom/@size``); the pose is taken relative to its body's inertial frame (``body_ipos``,
``body_iquat``: the body's centre of mass and principal axes), the row frame of the contact
layer.

=================  ===========================================  ==================================
MuJoCo geom        size                                         contact-layer shape
=================  ===========================================  ==================================
``plane``          (render extents)                             :class:`Plane` (normal = local z;
                                                                infinite, as MuJoCo's)
``sphere``         (radius)                                     :class:`Sphere`
``capsule``        (radius, half length)                        :class:`Capsule`
``box``            (half extents)                               :class:`Box`
``mesh``           vertices ``mesh_vert``, faces ``mesh_face``  :class:`Mesh` (trimesh) of the
                                                                convex hull, as MuJoCo collides
                                                                it
``cylinder``       (radius, half length)                        :class:`Cylinder`: exact on a
                                                                plane (its rims), a prism of
                                                                ``CYLINDER_SECTIONS`` sides
                                                                against other shapes
``ellipsoid``      (semi-axes)                                  :class:`Ellipsoid`: exact on a
                                                                plane (its deepest point), an
                                                                icosphere of
                                                                ``ELLIPSOID_SUBDIVISIONS``
                                                                against other shapes
``hfield``, ``sdf``                                             an error naming the geom
=================  ===========================================  ==================================

A cylinder against a plane is MuJoCo's exact cylinder (:mod:`mbplugin.contact.cylinder`: the
lowest point of each rim, and a face flat on the plane on three rim points; its deepest overlap
is ``mj_geomDistance``'s to rounding). Against any other shape it is the inscribed prism, its
side off by at most r (1 - cos(pi / sections)) (1.2e-3 r for 64 sides). An ellipsoid against a
plane is exact (:mod:`mbplugin.contact.ellipsoid`: the deepest point -A^2 n / sqrt(n^T A^2 n),
Hertz's radius sqrt(R1 R2) of its principal radii there); against a sphere, a capsule, another
ellipsoid and a face of a box or a convex mesh exact too; against a box's or a mesh's edge its
overlap is the exact support function's along the normal fcl finds on a polytope around it
(:mod:`mbplugin.contact.ellipsoid`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mbplugin.contact import Box, Capsule, Mesh, Plane, Sphere
from mbplugin.contact.cylinder import Cylinder
from mbplugin.contact.ellipsoid import Ellipsoid
from mbplugin.errors import ParameterError
from mbplugin.hosts import RowShape

#: sides of the prism that stands in for a cylinder geom against shapes other than a plane
CYLINDER_SECTIONS = 64
#: subdivisions of the icosphere that stands in for an ellipsoid geom against shapes other than
#: a plane (2562 vertices)
ELLIPSOID_SUBDIVISIONS = 4


def geom_pose(m: Any, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Geom ``g``'s pose about its body's centre of mass, in the body's principal frame:
    ``pos`` (3,) m and ``quat`` (4,) [w, x, y, z] (the inverse of the inertial frame composed
    with the geom's frame, both in the body frame)."""
    import mujoco

    b = int(m.geom_bodyid[g])
    ipos, iquat = np.array(m.body_ipos[b], dtype=float), np.array(m.body_iquat[b], float)
    inv = np.zeros(4)
    mujoco.mju_negQuat(inv, iquat)
    pos = np.zeros(3)
    mujoco.mju_rotVecQuat(pos, np.array(m.geom_pos[g], dtype=float) - ipos, inv)
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, inv, np.array(m.geom_quat[g], dtype=float))
    return pos, quat


def geom_shape(m: Any, g: int, where: str) -> Any:
    """The contact-layer shape of geom ``g`` (module docstring); ``where`` names the geom in
    errors."""
    import mujoco
    import trimesh

    gt = mujoco.mjtGeom
    kind = int(m.geom_type[g])
    size = np.array(m.geom_size[g], dtype=float)
    if kind == gt.mjGEOM_PLANE:
        return Plane((0.0, 0.0, 1.0))
    if kind == gt.mjGEOM_SPHERE:
        return Sphere(size[0])
    if kind == gt.mjGEOM_CAPSULE:
        return Capsule(size[0], size[1])
    if kind == gt.mjGEOM_BOX:
        return Box(tuple(size))
    if kind == gt.mjGEOM_CYLINDER:
        return Cylinder(size[0], size[1], sections=CYLINDER_SECTIONS)
    if kind == gt.mjGEOM_ELLIPSOID:
        return Ellipsoid(tuple(size), subdivisions=ELLIPSOID_SUBDIVISIONS)
    if kind == gt.mjGEOM_MESH:
        mid = int(m.geom_dataid[g])
        va, vn = int(m.mesh_vertadr[mid]), int(m.mesh_vertnum[mid])
        fa, fn = int(m.mesh_faceadr[mid]), int(m.mesh_facenum[mid])
        verts = np.array(m.mesh_vert[va:va + vn], dtype=float)
        faces = np.array(m.mesh_face[fa:fa + fn], dtype=np.int64)
        tm = trimesh.Trimesh(verts, faces, process=True)
        if not (tm.is_watertight and tm.is_convex):
            tm = tm.convex_hull  # MuJoCo collides a mesh geom by its convex hull
        return Mesh(tm)
    names = {int(gt.mjGEOM_HFIELD): "height field", int(gt.mjGEOM_SDF): "SDF"}
    raise ParameterError(
        f"{where}: a MuJoCo {names.get(kind, f'type-{kind}')} geom is not modelled by the "
        "contact layer (allowed: plane, sphere, capsule, box, mesh, cylinder, ellipsoid); "
        "leave its pairs to MuJoCo (do not name them in manage=) or replace the geom")


def row_shapes(m: Any, geoms: list[int], row_of: Callable[[int], int],
               name: Callable[[int], str]) -> list[RowShape]:
    """:class:`~mbplugin.hosts.RowShape` of each geom (its row: ``row_of(geom)``; its
    MuJoCo id as the tag); ``name(geom)`` for errors."""
    out = []
    for g in geoms:
        pos, quat = geom_pose(m, g)
        out.append(RowShape(row_of(g), geom_shape(m, g, name(g)), pos, quat, g))
    return out
