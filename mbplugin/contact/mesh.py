"""Triangle-mesh shapes (trimesh) and the mesh pairs of the narrow phase.

:class:`Mesh` wraps a closed, consistently oriented triangle mesh: a ``trimesh.Trimesh``, any
object trimesh can turn into one, or a file (STL, OBJ, PLY, GLB, ...). A mesh that is not
watertight, has inconsistent winding, inward normals or degenerate faces is rejected with a
:class:`~mbplugin.errors.ParameterError`, unless ``repair=True`` (merge duplicate vertices, drop
degenerate/duplicate faces, fill holes, fix winding and normals), after which it is checked again.

Pairs (all in :class:`MeshSet`, used by :class:`~mbplugin.contact.model.ContactModel`):

* **mesh-plane** (:func:`plane_features`; the compiled kernel ``mesh_feature_point`` of
  :mod:`mbplugin.contact.kernels`, also in the engine's compiled segments):
  the candidates are the corners of the mesh's convex hull (extreme points: vertices inside a
  flat face or on a straight edge are none; a half-space meets a body first at its hull's
  corners, so this is exact while an overlap stays below the depth of the other vertices
  inside the hull). Each corner is a contact point of its own, as the primitive box's corners
  (``feature`` = the corner's feature index): a face on a plane rests on its corners, each
  carrying its share with the full law (a cube mesh is the primitive ``Box``, contact for
  contact; a face of N corners is N contacts, whatever the triangles inside it), an edge on its
  two ends. The exception is a *smooth region*: hull corners where the surface is smooth,
  convex and curved both ways (an icosphere, a UV sphere, an ellipsoid, the caps of a capsule,
  a rounded bump of a free-form part), which touches a plane at one point, so the region is
  **one** contact. Each member vertex carries the sphere fitted through its one-ring; the
  contact is the sphere blended (barycentric weights) from the three spheres of the region
  face whose vertex normals span the plane's inward direction, found by a walk from the
  deepest member: exact on a sphere (the chordal error of the facets is taken out), and
  continuous as the body turns on any smooth surface (the deepest vertex alone, or its own
  sphere, would jump by up to an edge between members and rock the body), so a mesh ball rolls
  and rests like the primitive ``Sphere``; large regions are searched by a climb from a table
  of start vertices (:func:`climb_tables`). A region that tessellates no single sphere (a
  free-form patch: an ellipsoid, a robot link's rounded side) is never deeper than its deepest
  vertex plus its chordal error (:func:`region_slack`): spheres fitted on a coarse patch bulge
  beyond its faces (up to 8 mm on the hulls of ``pybullet_data``'s robot links, against the
  hull the host collides with). Nearly cylindrical vertices (a capsule's or a
  fillet's side, which rests on a line) are corners, and a region is split where a long hull
  edge bridges two of its members (a concave mesh resting on two bumps of one region).
  Features are fixed per mesh, so contact keys are stable while a contact lasts.
* **mesh-sphere**: the closest point of the mesh to the sphere's centre
  (``trimesh.proximity.closest_point``), inside/outside from the face normal (convex meshes) or
  ``mesh.contains`` (others); one contact per pair.
* **mesh-mesh, mesh-box** (convex): python-fcl (GJK/EPA, ``fcl.Convex``/``fcl.Box``) gives the
  contact normal; when a face of one shape lies within ``FACE_ALIGN`` of it (a face contact:
  a mesh cube on a mesh cube or a box, a block on its side), the incident face of the other
  shape is clipped to the reference face's prism (Sutherland-Hodgman, :func:`clip_polygon`;
  as Bullet's polyhedral contact clipping) and every clipped vertex is a contact at its depth
  below the reference plane: a stack rests on the four corners of each interface. Otherwise
  (edges crossing, curved surfaces) one contact with fcl's depth and normal.
* every other pair without a closed form (box-box, capsule-capsule, box-capsule,
  mesh-capsule): python-fcl, one contact per pair; the point keeps fcl's position across the
  normal and is moved along the normal to the middle of the overlap (halfway between the two
  bodies' extreme planes). Contact between a mesh and a non-sphere needs convex meshes: split a
  concave body into convex parts (:func:`convex_parts`: PyBullet's V-HACD) and attach each part
  as its own shape of the body.

Effective radius of a mesh (rule). At each vertex the surface is fitted, in the frame of the
vertex normal, by the quadric z = a x^2 + b xy + c y^2 + d x + e y through its one-ring
neighbours (least squares); the principal curvatures k1, k2 are the eigenvalues of the negated
Hessian [[2a, b], [b, 2c]] (positive = convex). The vertex radius is
R_v = 1/sqrt(k1 k2) for a convex elliptic point (exact on a sphere: the Hertz equivalent radius
sqrt(R' R'') of Johnson, *Contact Mechanics* 1985, Sect. 4.2, against a plane), -1/sqrt(k1 k2)
for a concave one, infinite (flat) when both curvatures are below 1e-6 of the mesh's inverse size,
and *undefined* where the surface is not smooth (a face around the vertex deviates more than
``smooth_angle`` from the vertex normal: an edge or corner) or is saddle/cylindrical. Where it is
undefined the user-given ``radius`` is used; without one, a sphere against that feature uses the
sphere's radius alone (the feature is treated as flat, as for box edges) and a mesh-plane contact
has no radius (NaN, so a law without ``k`` cannot be used there). A contact takes R_v of the
deciding vertex (mesh-plane: the corner, or the deepest member of a smooth region, whose
radius can therefore change between onsets) or of the vertex nearest the contact point
(mesh-sphere, fcl pairs); radii combine as 1/r_eff = 1/R_a + 1/R_b.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import trimesh
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mbplugin.contact import kernels as _kernels
from mbplugin.contact.kernels import equiv_radius
from mbplugin.errors import ParameterError


def _load(mesh: Any) -> trimesh.Trimesh:
    if isinstance(mesh, trimesh.Trimesh):
        return mesh.copy()
    if isinstance(mesh, str | Path):
        path = Path(mesh)
        if not path.exists():
            raise ParameterError(f"Mesh: file {str(path)!r} does not exist")
        try:
            loaded = trimesh.load(str(path), force="mesh")
        except Exception as exc:
            raise ParameterError(f"Mesh: trimesh cannot read {str(path)!r}: {exc}") from None
    elif isinstance(mesh, trimesh.Scene):
        loaded = mesh.to_geometry() if hasattr(mesh, "to_geometry") else mesh.dump(concatenate=True)
    else:
        try:
            loaded = trimesh.Trimesh(**mesh) if isinstance(mesh, dict) else trimesh.load(mesh)
        except Exception:
            raise ParameterError(
                f"Mesh: {type(mesh).__name__} is not a trimesh object or a mesh file"
            ) from None
    if not isinstance(loaded, trimesh.Trimesh):
        raise ParameterError(f"Mesh: {type(loaded).__name__} is not a triangle mesh")
    return loaded


def mesh_problems(m: trimesh.Trimesh) -> list[str]:
    """What keeps ``m`` from being a contact mesh (too few faces, non-finite or degenerate,
    not watertight, inconsistent winding, inward normals): one phrase each, [] for none."""
    out = []
    if len(m.faces) < 4 or len(m.vertices) < 4:
        out.append(f"has {len(m.faces)} faces (a closed mesh needs at least 4)")
        return out
    if not np.all(np.isfinite(m.vertices)):
        out.append("has non-finite vertex coordinates")
        return out
    area = m.area_faces
    scale = max(float(m.scale), 1e-300)
    if np.any(area <= 1e-14 * scale * scale):
        out.append(f"has {int(np.sum(area <= 1e-14 * scale * scale))} degenerate (zero-area) faces")
        return out
    if not m.is_watertight:
        out.append("is not watertight (it has open edges or holes)")
    if not m.is_winding_consistent:
        out.append("has inconsistent face winding")
    if m.is_watertight and m.is_winding_consistent and m.volume <= 0:
        out.append("has inward-pointing normals (negative volume)")
    return out


def _repair(m: trimesh.Trimesh) -> trimesh.Trimesh:
    m = m.copy()
    m.merge_vertices()
    m.update_faces(m.nondegenerate_faces())
    m.update_faces(m.unique_faces())
    m.remove_unreferenced_vertices()
    trimesh.repair.fill_holes(m)
    trimesh.repair.fix_winding(m)
    trimesh.repair.fix_normals(m)
    return m


def _frames(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    helper = np.where(np.abs(n[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1, axis=1)[:, None]
    return t1, np.cross(n, t1)


def vertex_curvatures(m: trimesh.Trimesh, smooth_angle: float = 30.0
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per vertex the principal curvatures k1 <= k2 (1/m, positive = convex) of the quadric
    fitted through its one-ring (module docstring, "Effective radius") and whether the vertex
    is sharp (a face around it deviates more than ``smooth_angle`` degrees from the vertex
    normal: the curvature is undefined there)."""
    p = np.asarray(m.vertices, dtype=float)
    n = np.asarray(m.vertex_normals, dtype=float)
    nv = len(p)
    e = np.asarray(m.edges_unique)
    i = np.concatenate([e[:, 0], e[:, 1]])
    j = np.concatenate([e[:, 1], e[:, 0]])
    t1, t2 = _frames(n)
    q = p[j] - p[i]
    x = np.einsum("ij,ij->i", q, t1[i])
    y = np.einsum("ij,ij->i", q, t2[i])
    z = np.einsum("ij,ij->i", q, n[i])
    f = np.stack([x * x, x * y, y * y, x, y], axis=1)
    valence = np.bincount(i, minlength=nv)
    npar = 5
    mat = np.zeros((nv, npar, npar))
    rhs = np.zeros((nv, npar))
    np.add.at(mat, i, f[:, :, None] * f[:, None, :])
    np.add.at(rhs, i, f * z[:, None])
    h2 = float(np.median(np.einsum("ij,ij->i", q, q)))
    # tiny ridge on the quadratic terms, a larger one on the tilt terms of low-valence vertices
    ridge = np.zeros((nv, npar))
    ridge[:, :3] = 1e-12 * h2 * h2
    ridge[:, 3:] = np.where(valence[:, None] < 5, 1e3 * h2, 1e-12 * h2)
    mat[:, np.arange(npar), np.arange(npar)] += ridge
    coef = np.linalg.solve(mat, rhs[:, :, None])[:, :, 0]
    hess = np.empty((nv, 2, 2))
    hess[:, 0, 0] = 2.0 * coef[:, 0]
    hess[:, 0, 1] = hess[:, 1, 0] = coef[:, 1]
    hess[:, 1, 1] = 2.0 * coef[:, 2]
    k = -np.linalg.eigvalsh(hess)  # principal curvatures, positive = convex
    # smoothness: every face around the vertex within smooth_angle of the vertex normal
    fn = np.asarray(m.face_normals)
    faces = np.asarray(m.faces)
    cos_min = np.ones(nv)
    for c in range(3):
        np.minimum.at(cos_min, faces[:, c], np.einsum("ij,ij->i", fn, n[faces[:, c]]))
    return k[:, 1], k[:, 0], cos_min < math.cos(math.radians(smooth_angle))


def vertex_roundness(k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """min(|k1|, |k2|) / max(|k1|, |k2|) per vertex: 1 on a sphere, 0 on a cylinder (NaN where
    both curvatures are 0)."""
    a, b = np.abs(k1), np.abs(k2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.minimum(a, b) / np.maximum(a, b)


def vertex_radii(m: trimesh.Trimesh, smooth_angle: float = 30.0,
                 curvatures: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
    """Per-vertex radius of curvature (m) by the rule in the module docstring (NaN: undefined)
    from :func:`vertex_curvatures` (``curvatures``: its result, when already computed)."""
    k1, k2, sharp = curvatures if curvatures is not None else vertex_curvatures(m, smooth_angle)
    size = max(float(m.scale), 1e-300)
    flat = (np.abs(k1) < 1e-6 / size) & (np.abs(k2) < 1e-6 / size)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(k1 * k2 > 0, np.sign(k1) / np.sqrt(k1 * k2), np.nan)
    r = np.where(flat, np.inf, r)
    r[sharp] = np.nan
    return r


#: A vertex is on a sphere when its one-ring lies on the sphere fitted through it within this
#: fraction of the radius (exact for vertices computed on a sphere; slack for files written
#: with 8 digits); two neighbours are on one sphere when centres and radii agree within
#: ``SPHERE_AGREE`` of the radius (the fitted centre of a fine mesh read from an 8-digit OBJ
#: moves by ~1e-3 R: an 81920-triangle icosphere of 2 cm).
SPHERE_TOL = 1e-4
SPHERE_AGREE = 1e-2
#: A smooth vertex is finely tessellated when the normal of every neighbour is within this
#: angle (deg) of its own: a tessellated smooth surface (an ellipsoid of 1280 triangles: at
#: most 18 deg, 5120: 9 deg), not a coarse polyhedron that is merely round (the convex hulls
#: of the V-HACD parts of duck_vhacd and teddy_vhacd: 4 % of their vertices), which rests on
#: its faces. Two neighbours belong to one smooth region when both are finely tessellated, or
#: both on one sphere (any tessellation: an icosahedron's spheres agree exactly).
SMOOTH_LINK_DEG = 20.0
#: A smooth region has at least this many members (a vertex and its one-ring); the members of
#: a smaller one are corners (a few close vertices of a nearly flat patch of a coarse hull).
REGION_MIN = 7
#: A smooth convex vertex belongs to a smooth region (one plane contact with its neighbours)
#: when its smaller principal curvature is at least this fraction of the larger one: doubly
#: curved (a sphere 1, an ellipsoid of axes 1.5 : 1 : 0.7 at least 0.22); a nearly cylindrical
#: vertex (a capsule's or a fillet's side, which rests on a line, not a point) stays a corner.
ROUND_MIN = 0.1
#: Plane feature kind of an exact curved surface whose contact point moves over it as the body
#: turns (:class:`mbplugin.contact.ellipsoid.Ellipsoid`: one member row holds the closed form);
#: the other kinds are 0 (a corner) and 1 (a smooth region of member vertices)
FEATURE_EXACT = 2
#: An edge of the convex hull bridges a gap of the surface (a concave mesh: the edge spans two
#: bumps) when it is no mesh edge and longer than this many times the longest mesh edge at
#: either end; a plane along it touches its two ends apart, so two members of one smooth
#: region at its ends become corners (the region is split there).
BRIDGE_EDGES = 3.0
#: A smooth region's member is modelled by its fitted sphere only when that sphere's radius is
#: at most this many times the mesh's size (the diagonal of its bounding box); a larger one is
#: a nearly flat patch, a corner: the sphere's point at the edge of its cone of normals lies up
#: to r sin(half-angle) off the vertex, metres for the 70 m spheres fitted on the nearly flat
#: vertices of the Mini Cheetah's 9 cm abduction link (``mini_abad.obj`` of ``pybullet_data``:
#: an overlap of 5.03 m reported against a plane the link was 5 cm above, issue 18).
SPHERE_MAX_SIZE = 1.0


def vertex_spheres(m: trimesh.Trimesh, tol: float | None = SPHERE_TOL
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per vertex, the sphere through the vertex v that fits its one-ring best: centre c =
    argmin sum_u (|c - u|^2 - |c - v|^2)^2 (linear least squares: 2 c.(v - u) = |v|^2 - |u|^2;
    exact for vertices on a sphere, where the average of the face normals is off by up to half
    an edge's angle; elsewhere a sphere between the two principal curvatures). Returns centres
    (V, 3), radii (V,) and ok (V,): the radius is below 1e3 times the mesh's size, the sphere's
    normal (v - c)/r points outwards and (unless ``tol`` is None) the one-ring lies on the
    sphere within ``tol`` of its radius."""
    v = np.asarray(m.vertices, dtype=float)
    e = np.asarray(m.edges_unique)
    i = np.concatenate([e[:, 0], e[:, 1]])
    j = np.concatenate([e[:, 1], e[:, 0]])
    a = v[i] - v[j]
    b = 0.5 * (np.einsum("ij,ij->i", v[i], v[i]) - np.einsum("ij,ij->i", v[j], v[j]))
    mat = np.zeros((len(v), 3, 3))
    rhs = np.zeros((len(v), 3))
    np.add.at(mat, i, a[:, :, None] * a[:, None, :])
    np.add.at(rhs, i, a * b[:, None])
    scale = max(float(m.scale), 1e-300)
    ok = np.abs(np.linalg.det(mat)) > (1e-12 * scale**2) ** 3
    c = np.full((len(v), 3), np.nan)
    c[ok] = np.linalg.solve(mat[ok], rhs[ok][:, :, None])[:, :, 0]
    r = np.linalg.norm(v - c, axis=1)
    with np.errstate(invalid="ignore"):
        ok &= np.isfinite(r) & (r > 0.0) & (r < 1e3 * scale)
        resid = np.zeros(len(v))
        np.maximum.at(resid, i, np.abs(np.linalg.norm(v[j] - c[i], axis=1) - r[i]))
        if tol is not None:
            ok &= resid <= tol * r
        ok &= np.einsum("ij,ij->i", v - c, np.asarray(m.vertex_normals)) > 0.0
    return c, r, ok


def plane_features(
    m: trimesh.Trimesh, vertex_radius: np.ndarray, plane_points: Any = None,
    roundness: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The contact features of a mesh against a half-space (module docstring, "mesh-plane")
    and each vertex's surface model for them.

    Candidates are the corners of the convex hull of the vertices (qhull through
    ``scipy.spatial.ConvexHull``: extreme points only, so vertices inside a flat face or on a
    straight edge are not corners). Corners are grouped into features:

    * *smooth regions*: corners where the surface is smooth, convex and doubly curved (finite
      ``vertex_radius`` > 0: a cube's corners lie on a sphere too, but are sharp; and
      ``roundness`` = k_min / k_max >= ``ROUND_MIN``), connected along mesh edges between
      finely tessellated vertices or vertices on one sphere (``SMOOTH_LINK_DEG``; a sphere,
      an ellipsoid, a capsule's cap, a rounded free-form bump, not the few-faced hull of a
      V-HACD part): one feature each, its members
      modelled by the spheres fitted through their one-rings (:func:`vertex_spheres`; a
      smooth convex surface touches a plane at one point). A region with members at both ends
      of a hull edge that bridges a gap of the surface (``BRIDGE_EDGES``: a concave mesh that
      can rest on two bumps of one region) gives up those members as corners, until none has;
    * every other corner (an edge or corner of the mesh, a nearly cylindrical vertex: a
      capsule's or a fillet's side, which rests on a line): a feature of its own, a point. (One
      contact at the deepest of several such vertices would jump between them and rock the
      body; a point each rests on the lowest few, as a polyhedron does, with the vertex's own
      radius for Hertz k.)

    ``roundness`` (V,): k_min / k_max of each vertex (:func:`vertex_curvatures`; computed when
    not given). Returns (start (F + 1,), member vertex ids, kind (F,): 0 corner, 1 smooth
    region; vgeo (V, 9)): feature f's members are ``members[start[f]:start[f + 1]]``, corners
    first (by vertex id), then the regions (by their lowest vertex id). vgeo rows are those of
    :func:`mbplugin.contact.kernels.mesh_feature_point`: a member of a smooth region has its
    sphere's centre and radius, its normal (v - c)/r and a cone of half-angle the largest angle
    to a neighbour's normal in the region (the cones then cover the region: a point of a face
    is nearer than that to one of its corners); every other vertex is a point (centre v, radius
    0).
    """
    from scipy.spatial import ConvexHull

    v = np.asarray(m.vertices, dtype=float)
    nv = len(v)
    edges = np.asarray(m.edges_unique, dtype=np.int64)
    hull = ConvexHull(v)
    corners = np.zeros(nv, dtype=bool)
    corners[hull.vertices] = True
    if plane_points is not None:  # only the corners among these points (see Mesh)
        from scipy.spatial import cKDTree

        pts = np.asarray(plane_points, dtype=float).reshape(-1, 3)
        dist, _ = cKDTree(pts).query(v) if len(pts) else (np.full(nv, np.inf), None)
        corners &= dist <= 1e-9 * max(float(m.scale), 1e-300)
    if roundness is None:
        roundness = vertex_roundness(*vertex_curvatures(m)[:2])
    c, r, fit = vertex_spheres(m, tol=None)
    ea, eb = edges[:, 0], edges[:, 1]
    with np.errstate(invalid="ignore"):
        sph = (corners & fit & np.isfinite(vertex_radius) & (vertex_radius > 0)
               & (roundness >= ROUND_MIN) & (r <= SPHERE_MAX_SIZE * float(m.scale)))
        # links: mesh edges between two finely tessellated vertices (every neighbour's sphere
        # normal within SMOOTH_LINK_DEG) or between two vertices on one sphere (any
        # tessellation)
        n = (v - c) / r[:, None]
        cos_e = np.einsum("ij,ij->i", n[ea], n[eb])
        cos_v = np.ones(nv)
        np.minimum.at(cos_v, ea, np.nan_to_num(cos_e, nan=-1.0))
        np.minimum.at(cos_v, eb, np.nan_to_num(cos_e, nan=-1.0))
        fine = cos_v >= math.cos(math.radians(SMOOTH_LINK_DEG))
        on_sphere = vertex_spheres(m)[2]
        one_sphere = (on_sphere[ea] & on_sphere[eb]
                      & (np.linalg.norm(c[ea] - c[eb], axis=1) <= SPHERE_AGREE * r[ea])
                      & (np.abs(r[ea] - r[eb]) <= SPHERE_AGREE * r[ea]))
        linkable = (fine[ea] & fine[eb]) | one_sphere
    # edges of the hull that bridge a gap of the surface: no mesh edge, and much longer than
    # the mesh edges at their ends
    length = np.linalg.norm(v[ea] - v[eb], axis=1)
    h_v = np.zeros(nv)
    np.maximum.at(h_v, ea, length)
    np.maximum.at(h_v, eb, length)
    simp = np.asarray(hull.simplices, dtype=np.int64)
    fa, fb = simp[:, [0, 1, 2]].ravel(), simp[:, [1, 2, 0]].ravel()
    code = np.minimum(fa, fb) * nv + np.maximum(fa, fb)
    long = (~np.isin(code, np.minimum(ea, eb) * nv + np.maximum(ea, eb))
            & (np.linalg.norm(v[fa] - v[fb], axis=1)
               > BRIDGE_EDGES * np.maximum(h_v[fa], h_v[fb])))
    fa, fb = fa[long], fb[long]

    while True:
        # a corner without a linked neighbour is no region
        link = sph[ea] & sph[eb] & linkable
        sph &= np.bincount(np.concatenate([ea[link], eb[link]]), minlength=nv) > 0
        link = sph[ea] & sph[eb] & linkable
        graph = coo_matrix((np.ones(int(link.sum())), (ea[link], eb[link])), shape=(nv, nv))
        lab = np.where(sph, connected_components(graph, directed=False)[1], -1)
        # a bridge between two members of one region: both become corners; so do the members
        # of a region too small to stand for a smooth surface
        twice = (lab[fa] >= 0) & (lab[fa] == lab[fb])
        small = sph & (np.bincount(lab[sph], minlength=nv)[lab] < REGION_MIN)
        if not (twice.any() or small.any()):
            break
        sph[fa[twice]] = False
        sph[fb[twice]] = False
        sph[small] = False
    order = np.argsort(lab, kind="stable")  # ids sorted: each region in vertex order
    ids = order[lab[order] >= 0]
    groups = np.split(ids, np.flatnonzero(np.diff(lab[ids])) + 1) if len(ids) else []
    groups = sorted(groups, key=lambda g: int(g[0]))
    sharp = np.flatnonzero(corners & ~sph)
    sizes = np.array([1] * len(sharp) + [len(g) for g in groups], dtype=np.int64)
    start = np.zeros(len(sizes) + 1, dtype=np.int64)
    start[1:] = np.cumsum(sizes)
    members = np.concatenate([sharp, *groups]).astype(np.int64)
    kind = np.array([0] * len(sharp) + [1] * len(groups), dtype=np.int64)
    # surface models: spheres for the members of smooth regions, points otherwise
    vgeo = np.zeros((nv, 9))
    vgeo[:, :3] = v
    vgeo[:, 7] = 1.0
    if sph.any():
        agree = sph[ea] & sph[eb] & (lab[ea] == lab[eb])
        cos_nb = np.einsum("ij,ij->i", n[ea], n[eb])
        worst = np.ones(nv)
        np.minimum.at(worst, ea[agree], cos_nb[agree])
        np.minimum.at(worst, eb[agree], cos_nb[agree])
        half = np.arccos(np.clip(worst, -1.0, 1.0))
        vgeo[sph, :3] = c[sph]
        vgeo[sph, 3] = r[sph]
        vgeo[sph, 4:7] = n[sph]
        vgeo[sph, 7] = np.cos(half[sph])
        vgeo[sph, 8] = np.sin(half[sph])
    return start, members, kind, vgeo


def region_slack(start: np.ndarray, members: np.ndarray, kind: np.ndarray, vgeo: np.ndarray,
                 edges: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Per plane feature (:func:`plane_features`' start, members, kind, vgeo; the mesh's
    ``edges`` and ``vertices``): how far (m) its smooth model may reach beyond the region's
    deepest vertex (:func:`mbplugin.contact.kernels.mesh_feature_point` caps it there).

    A smooth region that tessellates one sphere (its members' fitted spheres agree: centres
    and radii within ``SPHERE_AGREE`` of the radius; a mesh ball, a capsule's cap) is that
    sphere: no cap (inf). Any other region (a free-form patch: an ellipsoid, a robot link's
    rounded side) is only modelled by its fitted spheres, which bulge r (1 - cos a) beyond its
    faces at an angle a from a vertex's normal (millimetres on coarse robot hulls, issue 18):
    its slack is the chordal error of its tessellation, the largest sagitta of a smooth surface
    through a region edge's ends with their normals, s = (|d.n_i| + |d.n_j|) / 6 for the edge
    d = x_j - x_i (a circle's arc of chord L and radius r: |d.n| = L^2 / (2 r) at each end,
    s = L^2 / (6 r), the sagitta rho^2 / (2 r) at the centre of an equilateral face of side L,
    rho = L / sqrt(3)). Corners: 0 (never used)."""
    out = np.zeros(len(kind))
    if not np.any(kind == 1):  # no smooth region (a polyhedron; a part with no plane feature)
        return out
    fid = np.full(len(vertices), -1, dtype=np.int64)
    fid[members] = np.repeat(np.arange(len(kind)), np.diff(start))
    ea, eb = edges[:, 0], edges[:, 1]
    inner = (fid[ea] >= 0) & (fid[ea] == fid[eb]) & (kind[np.maximum(fid[ea], 0)] == 1)
    d = vertices[eb[inner]] - vertices[ea[inner]]
    sag = (np.abs(np.einsum("ij,ij->i", d, vgeo[ea[inner], 4:7]))
           + np.abs(np.einsum("ij,ij->i", d, vgeo[eb[inner], 4:7]))) / 6.0
    np.maximum.at(out, fid[ea[inner]], sag)
    for f in np.flatnonzero(kind == 1):
        g = vgeo[members[start[f]:start[f + 1]]]
        r = float(np.median(g[:, 3]))
        c = np.median(g[:, :3], axis=0)
        if (np.all(np.linalg.norm(g[:, :3] - c, axis=1) <= SPHERE_AGREE * r)
                and np.all(np.abs(g[:, 3] - r) <= SPHERE_AGREE * r)):
            out[f] = np.inf
    return out


#: Smooth plane features (regions) with more members than this are searched by a climb
#: (:func:`mbplugin.contact.kernels.mesh_feature_point`), smaller ones scanned.
CLIMB_MIN = 48
#: The table directions of the climb's start (the vertices of an icosphere, 162 directions
#: about 15 degrees apart).
CLIMB_DIRS = np.ascontiguousarray(trimesh.creation.icosphere(2).vertices, dtype=float)


def climb_tables(
    start: np.ndarray, members: np.ndarray, kind: np.ndarray, edges: np.ndarray,
    vertices: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the climb over large smooth plane features needs (local vertex ids): per
    feature the offset of its row in the support table (-1: scanned), the support table (for
    each table direction d, the member vertex farthest along d: v.d largest; on a sphere every
    member's own sphere has the same support, so the vertex itself says where to start), and the
    neighbours of each vertex within its feature (CSR: start (V + 1,), ids) along ``edges``.
    Over a smooth convex region the overlap of the members is a single plateau with slopes down to
    the region's edge, so the climb from any start ends at the deepest member."""
    nv = len(vertices)
    size = np.diff(start)
    climb = (kind == 1) & (size > CLIMB_MIN)
    offset = np.full(len(size), -1, dtype=np.int64)
    offset[climb] = np.arange(int(climb.sum())) * len(CLIMB_DIRS)
    tables = []
    owner = np.full(nv, -1, dtype=np.int64)
    for f in np.flatnonzero(climb):
        mem = members[start[f]:start[f + 1]]
        owner[mem] = f
        support = vertices[mem] @ CLIMB_DIRS.T
        tables.append(mem[np.argmax(support, axis=0)])
    table = (np.concatenate(tables) if tables else np.zeros(0)).astype(np.int64)
    i = np.concatenate([edges[:, 0], edges[:, 1]])
    j = np.concatenate([edges[:, 1], edges[:, 0]])
    same = (owner[i] >= 0) & (owner[i] == owner[j])
    i, j = i[same], j[same]
    order = np.lexsort((j, i))
    nbr = j[order].astype(np.int64)
    nbr_start = np.zeros(nv + 1, dtype=np.int64)
    nbr_start[1:] = np.cumsum(np.bincount(i, minlength=nv))
    return offset, table, nbr_start, nbr


def convex_parts(mesh: Any, resolution: int = 100_000,
                 concavity: float = 0.0025) -> list[trimesh.Trimesh]:
    """Convex parts of a non-convex mesh: PyBullet's V-HACD (``pybullet.vhacd``: Mamou &
    Ghorbel 2009, V-HACD 2.2; the tool the ``*_vhacd.obj`` assets of ``pybullet_data`` were
    made with), one convex hull per part, largest first. ``mesh``: what :class:`Mesh` accepts;
    ``resolution`` (voxels, [1e4, 6.4e7]) and ``concavity`` (relative, [0, 1]) are V-HACD's.
    Each part goes on the body as its own shape (``model.add_shape(Mesh(part), body, ...)``);
    their contacts add up.

    Why V-HACD: PyBullet (already a dependency) ships it; CoACD (what ``trimesh.decomposition``
    calls) is a further package. It is approximate: the parts' union covers the mesh to about
    the voxel size (volume / resolution)^(1/3)."""
    import os
    import tempfile

    import pybullet

    if not (10_000 <= int(resolution) <= 64_000_000):
        raise ParameterError(f"convex_parts: resolution = {resolution} is outside its allowed "
                             "range [10000, 64000000]")
    if not (0.0 <= float(concavity) <= 1.0):
        raise ParameterError(f"convex_parts: concavity = {concavity} is outside its allowed "
                             "range [0, 1]")
    m = _load(mesh)
    with tempfile.TemporaryDirectory() as d:
        src, dst, log = (os.path.join(d, f) for f in ("in.obj", "out.obj", "log.txt"))
        m.export(src)
        out = os.dup(1)  # V-HACD prints its progress on the C stdout
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                pybullet.vhacd(src, dst, log, resolution=int(resolution),
                               maxNumVerticesPerCH=64, concavity=float(concavity))
        finally:
            os.dup2(out, 1)
            os.close(out)
        got = trimesh.load(dst, force="mesh", process=False)
    got.merge_vertices()
    parts = [trimesh.convex.convex_hull(np.asarray(p.vertices))
             for p in got.split(only_watertight=False)
             if len(p.vertices) >= 4 and np.linalg.matrix_rank(p.vertices - p.vertices[0]) == 3]
    parts.sort(key=lambda p: -p.volume)
    return parts


def convex_polygons(
    vertices: np.ndarray, faces: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The faces of the convex polyhedron spanned by ``vertices``: (unit outward normals
    (P, 3), offsets (P,) with n.x = offset on the face, start (P + 1,), vertex ids in
    counter-clockwise order about the normal). Coplanar triangles of ``faces`` (the hull's)
    merge into one polygon; each polygon keeps its extreme points only (the 2-D hull of its
    vertices in the face plane, ``scipy.spatial.ConvexHull``)."""
    from scipy.spatial import ConvexHull

    tm = trimesh.Trimesh(vertices, faces, process=False)
    groups = [np.asarray(f) for f in tm.facets]
    taken = np.zeros(len(faces), dtype=bool)
    for g in groups:
        taken[g] = True
    groups += [np.array([i]) for i in np.flatnonzero(~taken)]
    fn = np.asarray(tm.face_normals)
    normals, offsets, start, ids = [], [], [0], []
    for g in groups:
        n = fn[g].mean(axis=0)
        n /= np.linalg.norm(n)
        vid = np.unique(faces[g])
        t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(n, t1)
        uv = np.stack([vertices[vid] @ t1, vertices[vid] @ t2], axis=1)
        ring = vid[ConvexHull(uv).vertices] if len(vid) > 3 else vid
        # counter-clockwise about n: (t1, t2, n) is right-handed
        ang = np.arctan2(vertices[ring] @ t2 - uv[:, 1].mean(), vertices[ring] @ t1
                         - uv[:, 0].mean())
        ring = ring[np.argsort(ang)]
        normals.append(n)
        offsets.append(float(np.max(vertices[vid] @ n)))
        ids.append(ring)
        start.append(start[-1] + len(ring))
    return (np.array(normals), np.array(offsets), np.array(start, dtype=np.int64),
            np.concatenate(ids).astype(np.int64))


def box_polygons(half: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`convex_polygons` of a box with half extents ``half`` (m), and its corners
    (8, 3)."""
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                       dtype=float) * half
    hull = trimesh.convex.convex_hull(corners)
    # the hull reorders its vertices: map them back to the corner ids
    back = np.array([int(np.argmin(np.linalg.norm(corners - x, axis=1)))
                     for x in hull.vertices])
    n, off, start, ids = convex_polygons(np.asarray(hull.vertices), np.asarray(hull.faces))
    return n, off, start, back[ids], corners


#: Face contact between convex polyhedra: the reference face must be within this cosine of the
#: contact normal (about 25 degrees); otherwise (edges crossing, curved surfaces) the pair
#: keeps python-fcl's single point.
FACE_ALIGN = 0.9
#: An exact ellipsoid against a box or a convex mesh (:meth:`MeshSet._exact_pair`) is a face
#: contact when a flat face's normal is within this cosine of fcl's normal (1 degree; fcl's
#: normal on the ellipsoid's icosphere is off a face's by ~1e-6 rad in a face contact) and the
#: ellipsoid's deepest point below the face's plane projects inside the face
FACE_SNAP = math.cos(math.radians(1.0))
#: Gradient steps of :meth:`MeshSet._least_depth` (an exact ellipsoid against a capsule's
#: side, a mesh's edge or another ellipsoid)
DEPTH_STEPS = 60


def clip_polygon(poly: np.ndarray, ref: np.ndarray, n: np.ndarray,
                 tag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sutherland-Hodgman: the part of the convex polygon ``poly`` (K, 3) inside the prism
    over the convex polygon ``ref`` (counter-clockwise about ``n``). ``tag`` (K,) names each
    input vertex; a vertex made on an edge is tagged -(1 + 256 * (edge start's tag % 256) +
    side % 256) (side = the reference edge that cut it)."""
    pts, tags = poly, tag
    tol = 1e-12 * max(float(np.ptp(ref, axis=0).max()), 1e-300)
    m = len(ref)
    for j in range(m):
        if not len(pts):
            break
        p0 = ref[j]
        side = np.cross(ref[(j + 1) % m] - p0, n)  # outward in the face plane
        side /= np.linalg.norm(side)
        dist = (pts - p0) @ side
        out_p, out_t = [], []
        k = len(pts)
        for i in range(k):
            a, b = i, (i + 1) % k
            ina, inb = dist[a] <= tol, dist[b] <= tol
            if ina:
                out_p.append(pts[a])
                out_t.append(tags[a])
            if ina != inb:
                t = dist[a] / (dist[a] - dist[b])
                out_p.append(pts[a] + t * (pts[b] - pts[a]))
                ta = int(tags[a]) if tags[a] >= 0 else 255
                out_t.append(-(1 + 256 * (ta % 256) + j % 256))
        pts = np.array(out_p).reshape(-1, 3)
        tags = np.array(out_t, dtype=np.int64)
    return pts, tags


class Mesh:
    """A closed triangle mesh in its own local frame (see the module docstring).

    ``mesh``: a ``trimesh.Trimesh`` (copied), a ``trimesh.Scene`` or a file path.
    ``radius`` (m): effective radius to use where the curvature is undefined.
    ``repair``: try to fix a broken mesh instead of rejecting it.
    ``smooth_angle`` (deg): faces deviating more than this from a vertex normal make the vertex
    sharp (curvature undefined).
    ``plane_points`` (K, 3) m, local frame: when given, only hull corners within 1e-9 of the
    mesh's size of one of these points are plane features (a part of a compound shape: the
    corners on the hull of all the parts; the others lie inside it and touch a plane only after
    an overlap larger than their depth in it).
    """

    def __init__(
        self, mesh: Any, radius: float | None = None, repair: bool = False,
        smooth_angle: float = 30.0, plane_points: Any = None,
    ) -> None:
        m = _load(mesh)
        problems = mesh_problems(m)
        if problems and repair:
            m = _repair(m)
            problems = mesh_problems(m)
            if problems:
                raise ParameterError("Mesh: repair failed, the mesh still " + "; ".join(problems))
        elif problems:
            raise ParameterError(
                "Mesh: the mesh " + "; ".join(problems)
                + ". A contact mesh must be closed (watertight) with consistent outward normals; "
                "pass repair=True to try trimesh's repair"
            )
        if radius is not None:
            radius = float(radius)
            if not (math.isfinite(radius) and radius > 0):
                raise ParameterError(
                    f"Mesh: 'radius' = {radius:g} m is outside its allowed range (0, inf)"
                )
        if not (0.0 < float(smooth_angle) < 90.0):
            raise ParameterError(
                f"Mesh: 'smooth_angle' = {smooth_angle} deg is outside its allowed range (0, 90)"
            )
        self.trimesh = m
        self.radius = radius
        self.vertices = np.ascontiguousarray(m.vertices, dtype=float)
        self.faces = np.ascontiguousarray(m.faces, dtype=np.int64)
        self.edges = np.ascontiguousarray(m.edges_unique, dtype=np.int64)
        self.is_convex = bool(m.is_convex)
        lo, hi = self.vertices.min(axis=0), self.vertices.max(axis=0)
        self.bounding_center = 0.5 * (lo + hi)
        self.bounding_radius = float(
            np.linalg.norm(self.vertices - self.bounding_center, axis=1).max()
        )
        curv = vertex_curvatures(m, smooth_angle)
        self.vertex_radius = vertex_radii(m, smooth_angle, curv)
        roundness = vertex_roundness(curv[0], curv[1])
        #: plane contact features and the vertices' surface models (:func:`plane_features`):
        #: start (F + 1,), member vertex ids, kind (F,), vgeo (V, 9)
        self.feature_start, self.feature_vertices, self.feature_kind, self.vertex_geometry = (
            plane_features(m, self.vertex_radius, plane_points, roundness))
        #: True when some plane feature has no radius of its own (a hull corner on an edge or
        #: corner of the surface, curvature undefined, and no ``radius`` given: the effective
        #: radius rule above): such a contact on a plane (or on another sharp shape) has no
        #: Hertz stiffness, as a sharp box's corner; a law without ``k`` cannot act there
        r_feat = self.vertex_radius[self.feature_vertices]
        if radius is not None:
            r_feat = np.where(np.isnan(r_feat), radius, r_feat)
        self.sharp = not bool(np.all(np.isfinite(r_feat) & (r_feat > 0)))
        #: per plane feature: how far (m) its contact may reach beyond its deepest vertex
        #: (:func:`region_slack`)
        self.feature_slack = region_slack(self.feature_start, self.feature_vertices,
                                          self.feature_kind, self.vertex_geometry, self.edges,
                                          self.vertices)
        #: the climb over large smooth features (:func:`climb_tables`)
        self.climb = climb_tables(self.feature_start, self.feature_vertices, self.feature_kind,
                                  self.edges, self.vertices)
        self._fcl: Any = None
        self._polygons: Any = None
        self._region_faces: tuple[np.ndarray, np.ndarray] | None = None

    def __repr__(self) -> str:
        return (f"Mesh({len(self.vertices)} vertices, {len(self.faces)} faces, "
                f"convex={self.is_convex}, radius={self.radius})")

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        """Mass rho V (kg), centre of mass (3,) and inertia about it (3, 3), from trimesh."""
        m = self.trimesh
        return (float(rho * m.volume), np.asarray(m.center_mass, dtype=float),
                rho * np.asarray(m.moment_inertia, dtype=float))

    def polygons(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The faces of the mesh's convex hull as polygons (:func:`convex_polygons`; vertex
        ids of this mesh), computed once."""
        if self._polygons is None:
            from scipy.spatial import ConvexHull

            hull = ConvexHull(self.vertices)
            faces = np.asarray(hull.simplices, dtype=np.int64)
            # outward winding: qhull's facet normals (hull.equations) say which side is out
            d = np.cross(self.vertices[faces[:, 1]] - self.vertices[faces[:, 0]],
                         self.vertices[faces[:, 2]] - self.vertices[faces[:, 0]])
            flip = np.einsum("ij,ij->i", d, hull.equations[:, :3]) < 0
            faces[flip] = faces[flip][:, ::-1]
            self._polygons = convex_polygons(self.vertices, faces)
        return self._polygons

    def region_faces(self) -> tuple[np.ndarray, np.ndarray]:
        """The faces of the smooth plane regions (all three vertices members of one region:
        :func:`plane_features`) with consistent outward winding, (K, 3) vertex ids, and for
        each the region face across the edge opposite each of its vertices (K, 3; -1: none),
        computed once."""
        if self._region_faces is None:
            region = np.full(len(self.vertices), -1, dtype=np.int64)
            for f in np.flatnonzero(self.feature_kind == 1):
                region[self.feature_vertices[self.feature_start[f]:self.feature_start[f + 1]]] = f
            lab = region[self.faces]
            keep = (lab[:, 0] >= 0) & (lab[:, 0] == lab[:, 1]) & (lab[:, 1] == lab[:, 2])
            tri = np.ascontiguousarray(self.faces[keep], dtype=np.int64)
            nbr = np.full((len(tri), 3), -1, dtype=np.int64)
            if len(tri):
                nv = len(self.vertices)
                # edge opposite vertex k: (k + 1, k + 2); a neighbour runs it the other way
                a, b = tri[:, [1, 2, 0]].ravel(), tri[:, [2, 0, 1]].ravel()
                code = a * nv + b
                order = np.argsort(code)
                rev = b * nv + a
                at = np.searchsorted(code[order], rev)
                at = np.minimum(at, len(code) - 1)
                hit = code[order][at] == rev
                nbr.ravel()[hit] = order[at[hit]] // 3
            self._region_faces = (tri, nbr)
        return self._region_faces

    def fcl_geometry(self) -> Any:
        """The mesh as an ``fcl.Convex`` (convex meshes only)."""
        if self._fcl is None:
            import fcl

            faces = np.hstack([np.full((len(self.faces), 1), 3), self.faces]).ravel()
            self._fcl = fcl.Convex(self.vertices, len(self.faces), faces)
        return self._fcl


_equiv = equiv_radius  # one formula: mbplugin.contact.kernels.equiv_radius


class MeshSet:
    """Mesh data of a compiled model: all meshes' vertices and edges concatenated."""

    def __init__(self, shapes: list[Any]) -> None:
        self.shapes = shapes
        ids = [i for i, s in enumerate(shapes) if s is not None]
        n = len(shapes)
        self.v_start = np.zeros(n + 1, dtype=np.int64)
        counts = np.zeros(n, dtype=np.int64)
        for i in ids:
            counts[i] = len(shapes[i].vertices)
        self.v_start[1:] = np.cumsum(counts)
        self.v_count = counts
        if ids:
            self.vertices = np.concatenate([shapes[i].vertices for i in ids])
            self.v_shape = np.repeat(np.array(ids, dtype=np.int64), counts[ids])
            self.v_radius = np.concatenate([shapes[i].vertex_radius for i in ids])
            self.vgeo = np.concatenate([shapes[i].vertex_geometry for i in ids])
            self.edges = np.concatenate([shapes[i].edges + self.v_start[i] for i in ids])
        else:
            self.vertices = np.zeros((0, 3))
            self.v_shape = np.zeros(0, dtype=np.int64)
            self.v_radius = np.zeros(0)
            self.vgeo = np.zeros((0, 9))
            self.edges = np.zeros((0, 2), dtype=np.int64)
        # plane features of every mesh: global rows; feature f of shape s is row feat0[s] + f
        self.n_feat = np.zeros(n, dtype=np.int64)
        for i in ids:
            self.n_feat[i] = len(shapes[i].feature_kind)
        self.feat0 = np.zeros(n, dtype=np.int64)
        self.feat0[1:] = np.cumsum(self.n_feat)[:-1]
        sizes = [np.diff(shapes[i].feature_start) for i in ids]
        self.fstart = np.zeros(int(self.n_feat.sum()) + 1, dtype=np.int64)
        if ids:
            self.fstart[1:] = np.cumsum(np.concatenate(sizes))
            self.fvert = np.concatenate([shapes[i].feature_vertices + self.v_start[i]
                                         for i in ids]).astype(np.int64)
            self.fsmooth = np.concatenate([shapes[i].feature_kind > 0 for i in ids])
            fslack = np.concatenate([shapes[i].feature_slack for i in ids])
        else:
            self.fvert = np.zeros(0, dtype=np.int64)
            self.fsmooth = np.zeros(0, dtype=bool)
            fslack = np.zeros(0)
        #: feature rows whose deepest vertex can change (smooth regions of more than one corner)
        #: or whose point moves over an exact curved surface (an ellipsoid): their radius, so
        #: their Hertz k, is no constant of the pair
        exact = (np.concatenate([shapes[i].feature_kind == FEATURE_EXACT for i in ids])
                 if ids else np.zeros(0, dtype=bool))
        self.fvarying = self.fsmooth & ((np.diff(self.fstart) > 1) | exact)
        #: per shape: the semi-axes (m) of an exact ellipsoid (NaN for other shapes), whose
        #: contacts take their radius at the contact normal (:meth:`exact_radius`)
        self.ellipsoid_axes = np.full((n, 3), np.nan)
        for i in ids:
            if getattr(shapes[i], "semi_axes", None) is not None:
                self.ellipsoid_axes[i] = shapes[i].semi_axes
        self.is_ellipsoid = np.isfinite(self.ellipsoid_axes[:, 0])
        self.has_ellipsoid = bool(self.is_ellipsoid.any())
        # the climb's tables, global rows
        nd = len(CLIMB_DIRS)
        fclimb, dtab, nbr_start, nbr = [], [], [np.zeros(1, dtype=np.int64)], []
        t0 = e0 = 0
        for i in ids:
            off, table, ns, nb = shapes[i].climb
            fclimb.append(np.where(off >= 0, off + t0, -1))
            dtab.append(table + self.v_start[i])
            nbr_start.append(ns[1:] + e0)
            nbr.append(nb + self.v_start[i])
            t0 += len(table)
            e0 += len(nb)
        # the faces of the smooth regions (all three vertices in one region), global rows:
        # vertices, the neighbour across the edge opposite each vertex (-1: none), and the
        # region faces around each vertex (CSR)
        ftri, fnbr = [np.zeros((0, 3), dtype=np.int64)], [np.zeros((0, 3), dtype=np.int64)]
        f0 = 0
        for i in ids:
            tri, nb = shapes[i].region_faces()
            ftri.append(tri + self.v_start[i])
            fnbr.append(np.where(nb >= 0, nb + f0, -1))
            f0 += len(tri)
        tri_all = np.concatenate(ftri).astype(np.int64)
        order = np.argsort(tri_all.ravel(), kind="stable")
        vface_start = np.zeros(len(self.vertices) + 1, dtype=np.int64)
        vface_start[1:] = np.cumsum(np.bincount(tri_all.ravel(), minlength=len(self.vertices)))
        i64 = np.int64
        #: the mesh tuple of the compiled kernels
        #: (:func:`mbplugin.contact.kernels.mesh_feature_point`)
        self.kernel_arrays = (
            np.ascontiguousarray(self.feat0, dtype=i64), np.ascontiguousarray(self.fstart),
            np.ascontiguousarray(self.fvert), np.ascontiguousarray(self.vgeo, dtype=float),
            np.concatenate([np.zeros(0, dtype=i64), *fclimb]).astype(i64),
            np.concatenate([np.zeros(0, dtype=i64), *dtab]).astype(i64),
            CLIMB_DIRS if nd else np.zeros((0, 3)),
            np.concatenate(nbr_start).astype(i64),
            np.concatenate([np.zeros(0, dtype=i64), *nbr]).astype(i64),
            vface_start, (order // 3).astype(i64), np.ascontiguousarray(tri_all),
            np.ascontiguousarray(np.concatenate(fnbr), dtype=i64),
            np.ascontiguousarray(fslack, dtype=float),
        )
        self.convex = np.array([bool(s is not None and s.is_convex) for s in shapes], dtype=bool)
        #: hull polygons of the meshes and boxes of face contacts, by shape id (local frame)
        self._polys: dict[int, tuple[np.ndarray, ...]] = {}
        self.user_radius = np.array(
            [s.radius if (s is not None and s.radius is not None) else np.nan for s in shapes]
        )

    def _radius(self, vid: np.ndarray, sid: np.ndarray) -> np.ndarray:
        r = self.v_radius[vid]
        return np.where(np.isnan(r), self.user_radius[sid], r)

    def exact_radius(self, r: np.ndarray, sid: np.ndarray, normal: np.ndarray,
                     rot: np.ndarray) -> np.ndarray:
        """``r`` (K,) m with the contacts on an exact ellipsoid (shape ``sid``) given the
        ellipsoid's radius at their world ``normal`` (K, 3) (:func:`mbplugin.contact.
        ellipsoid.equivalent_radius` in the shape frame, ``rot`` the shapes' world rotations
        (S, 3, 3)); ``r`` itself for a model without ellipsoids."""
        if not self.has_ellipsoid:
            return r
        on = np.flatnonzero(self.is_ellipsoid[sid])
        if not len(on):
            return r
        from mbplugin.contact.ellipsoid import equivalent_radius

        s = sid[on]
        u = (rot[s] * normal[on][:, :, None]).sum(axis=1)  # R^T n, row by row
        r = np.array(r, dtype=float)
        r[on] = equivalent_radius(self.ellipsoid_axes[s], u)
        return r

    # -- mesh-plane ---------------------------------------------------------------------------
    def plane_meshes(
        self, c: Any, w: Any, p: int, mids: np.ndarray, margin: float = 0.0
    ) -> list[Any]:
        """Every plane feature of each mesh in ``mids`` on plane ``p`` with delta > -margin
        (module docstring): the compiled kernel
        :func:`mbplugin.contact.kernels.plane_mesh_batch`, the deepest member vertex of each
        feature, its radius."""
        from mbplugin.contact.model import _Part

        nf = self.n_feat[mids]
        total = int(nf.sum())
        if total == 0:
            return []
        sid = np.repeat(mids, nf)
        local = np.arange(total) - np.repeat(np.cumsum(nf) - nf, nf)
        feat = self.feat0[sid] + local
        pn = w.R[p] @ c.plane_n[p]
        p0 = w.center[p] + w.R[p] @ c.plane_p[p]
        point, normal, delta = np.empty((total, 3)), np.empty((total, 3)), np.empty(total)
        vert = np.empty(total, dtype=np.int64)
        _kernels.plane_mesh_batch(p0, pn, sid, np.ascontiguousarray(w.center),
                                  np.ascontiguousarray(w.R), feat, self.kernel_arrays, point,
                                  normal, delta, vert)
        keep = np.flatnonzero(delta > -margin)
        if not len(keep):
            return []
        sid, vert = sid[keep], vert[keep]
        r = self.exact_radius(self._radius(vert, sid), sid, normal[keep], w.R)
        return [_Part(np.full(len(keep), p), sid, point[keep], normal[keep], delta[keep],
                      r, local[keep].astype(np.int64))]

    # -- mesh-sphere --------------------------------------------------------------------------
    def mesh_sphere(self, c: Any, w: Any, sa: np.ndarray, sb: np.ndarray,
                    centres: np.ndarray | None = None, radii: np.ndarray | None = None) -> Any:
        """Mesh a against sphere b (one contact per pair), grouped by mesh; ``centres`` (K, 3)
        and ``radii`` (K,) stand for the spheres' (a capsule's end spheres)."""
        from mbplugin.contact.model import _Part

        k = len(sa)
        point = np.zeros((k, 3))
        normal = np.zeros((k, 3))
        delta = np.zeros(k)
        r_eff = np.zeros(k)
        rs = c.radius[sb] if radii is None else radii
        at = w.center[sb] if centres is None else centres
        for mid in np.unique(sa):
            sel = np.flatnonzero(sa == mid)
            shape = self.shapes[mid]
            R = w.R[mid]
            cm = w.center[mid]
            centre = at[sel]
            p_loc = (centre - cm) @ R
            if self.has_ellipsoid and self.is_ellipsoid[mid]:
                # an exact ellipsoid: the centres outside it exactly, the others below
                rest = ~self._ellipsoid_sphere(w, mid, sel, p_loc, rs, point, normal, delta,
                                               r_eff)
                if not rest.any():
                    continue
                sel, centre, p_loc = sel[rest], centre[rest], p_loc[rest]
            q, dist, tri = trimesh.proximity.closest_point(shape.trimesh, p_loc)
            fn = shape.trimesh.face_normals[tri]
            diff = p_loc - q
            side = np.einsum("ij,ij->i", diff, fn)
            if shape.is_convex:
                inside = side < 0
            else:
                inside = shape.trimesh.contains(p_loc)
            with np.errstate(invalid="ignore", divide="ignore"):
                u = diff / dist[:, None]
            u = np.where((dist > 1e-12 * shape.bounding_radius)[:, None], u, fn)
            u = np.where(inside[:, None], -u, u)
            n_w = u @ R.T
            d = np.where(inside, rs[sel] + dist, rs[sel] - dist)
            q_w = cm + q @ R.T
            point[sel] = 0.5 * (q_w + (centre - rs[sel][:, None] * n_w))
            normal[sel] = n_w
            delta[sel] = d
            # radius at the triangle vertex nearest the closest point
            corners = shape.faces[tri]
            dv = np.linalg.norm(shape.vertices[corners] - q[:, None, :], axis=2)
            v = corners[np.arange(len(sel)), np.argmin(dv, axis=1)] + self.v_start[mid]
            rm = self._radius(v, np.full(len(sel), mid))
            r_eff[sel] = np.where(np.isnan(rm), rs[sel], _equiv(rs[sel], rm))
        return _Part(sa, sb, point, normal, delta, r_eff, np.zeros(k, dtype=np.int64))

    def _ellipsoid_sphere(self, w: Any, mid: int, sel: np.ndarray, p_loc: np.ndarray,
                          rs: np.ndarray, point: np.ndarray, normal: np.ndarray,
                          delta: np.ndarray, r_eff: np.ndarray) -> np.ndarray:
        """:meth:`mesh_sphere`'s rows ``sel`` of the exact ellipsoid ``mid`` whose sphere
        centre (``p_loc``, shape frame) lies outside it, written in place: the nearest surface
        point (:func:`mbplugin.contact.ellipsoid.closest_point`), its outward normal, the
        overlap r - distance, the point midway and the radius sqrt(R1 R2) there combined with
        the sphere's (1/r_eff = 1/R_e + 1/r). A centre inside the ellipsoid (an overlap
        beyond the sphere's radius) is left to the icosphere: returns which rows were
        written (len(sel),) bool."""
        from mbplugin.contact.ellipsoid import closest_point, equivalent_radius

        axes = self.ellipsoid_axes[mid]
        done = ((p_loc / axes) ** 2).sum(axis=1) >= 1.0
        out = np.flatnonzero(done)
        if not len(out):
            return done
        x, n, dist = closest_point(axes, p_loc[out])
        R, cm = w.R[mid], w.center[mid]
        rows = sel[out]
        n_w = n @ R.T
        r = rs[rows]
        normal[rows] = n_w
        delta[rows] = r - dist
        point[rows] = cm + (x + 0.5 * (dist - r)[:, None] * n) @ R.T
        r_eff[rows] = _equiv(r, equivalent_radius(axes, n))
        return done

    # -- everything else through fcl ------------------------------------------------------------
    def _fcl_object(self, c: Any, w: Any, s: int) -> Any:
        import fcl

        kind = int(c.kind[s])
        if kind == 3:  # MESH
            geom = self.shapes[s].fcl_geometry()
        elif kind == 2:  # BOX
            geom = fcl.Box(*(2.0 * c.half[s]))
        elif kind == 1:  # CAPSULE
            geom = fcl.Capsule(float(c.radius[s]), float(2.0 * c.half_length[s]))
        else:  # pragma: no cover - spheres never reach this path
            geom = fcl.Sphere(float(c.radius[s]))
        return fcl.CollisionObject(geom, fcl.Transform(w.R[s], w.center[s]))

    def _feature_radius(self, c: Any, w: Any, s: np.ndarray, point: np.ndarray,
                        normal: np.ndarray) -> np.ndarray:
        out = np.full(len(s), np.inf)
        kind = c.kind[s]
        out[kind == 1] = c.radius[s[kind == 1]]
        box = kind == 2
        out[box] = np.where(np.isnan(c.user_radius[s[box]]), np.inf, c.user_radius[s[box]])
        for i in np.flatnonzero(kind == 3):
            sid = int(s[i])
            loc = (point[i] - w.center[sid]) @ w.R[sid]
            v = int(np.argmin(np.linalg.norm(self.shapes[sid].vertices - loc, axis=1)))
            rv = self._radius(np.array([v + self.v_start[sid]]), np.array([sid]))[0]
            out[i] = np.inf if np.isnan(rv) else rv
        return self.exact_radius(out, s, normal, w.R)

    def _support(self, c: Any, w: Any, s: int, n: np.ndarray) -> float:
        """max over the shape of x.n (m): its extent along the world direction ``n``."""
        kind = int(c.kind[s])
        R, cen = w.R[s], w.center[s]
        if kind == 3:
            axes = self.ellipsoid_axes[s]
            if np.isfinite(axes[0]):  # an exact ellipsoid: cen.n + h(R^T n)
                from mbplugin.contact.ellipsoid import support

                return float(cen @ n + support(axes, n @ R))
            return float(np.max((self.shapes[s].vertices @ R.T + cen) @ n))
        if kind == 2:
            return float(cen @ n + np.sum(c.half[s] * np.abs(R.T @ n)))
        return float(cen @ n + c.half_length[s] * abs(R[:, 2] @ n) + c.radius[s])

    def _support_point(self, c: Any, w: Any, s: int, n: np.ndarray) -> np.ndarray:
        """A point of shape ``s`` (a mesh, an exact ellipsoid, a box or a capsule) where
        x.n is largest (world, m): :meth:`_support`'s."""
        kind = int(c.kind[s])
        R, cen = w.R[s], w.center[s]
        if kind == 3:
            axes = self.ellipsoid_axes[s]
            if np.isfinite(axes[0]):
                from mbplugin.contact.ellipsoid import support_point

                return cen + R @ support_point(axes, n @ R)
            v = self.shapes[s].vertices
            return cen + R @ v[int(np.argmax(v @ (n @ R)))]
        if kind == 2:
            return cen + R @ (c.half[s] * np.where(n @ R >= 0.0, 1.0, -1.0))
        axis = R[:, 2]
        return (cen + (c.half_length[s] if axis @ n >= 0.0 else -c.half_length[s]) * axis
                + c.radius[s] * n)

    def _least_depth(self, c: Any, w: Any, s1: int, s2: int, nv: np.ndarray,
                     depth: float) -> tuple[np.ndarray, float]:
        """The normal and overlap (m) of the overlapping convex pair (s1, s2) refined from
        (``nv``, ``depth``) = (n, D(n)), D(n) = h_1(n) + h_2(-n) the overlap along n (the
        support functions, the ellipsoid's exact): the penetration depth is the least D over
        the unit directions (every D(n) is an upper bound), sought by at most
        :data:`DEPTH_STEPS` steps down D's gradient on the sphere (x_1 - x_2 less its part
        along n, x_i the support points; first step 1 / (r_1 + r_2) of the bounding radii, the
        curvature of D for two balls, then 1.5 times longer after a descent, half after a
        failure); the least D met and its direction."""
        step = 1.0 / (float(c.bound[s1]) + float(c.bound[s2]))
        best_n, best = nv, depth
        g = None
        for _ in range(DEPTH_STEPS):
            if g is None:
                g = (self._support_point(c, w, s1, best_n)
                     - self._support_point(c, w, s2, -best_n))
                g = g - (g @ best_n) * best_n
            if not np.linalg.norm(g) * step > 1e-15:
                break
            n = best_n - step * g
            n = n / np.linalg.norm(n)
            d = self._support(c, w, s1, n) + self._support(c, w, s2, -n)
            if d < best:
                best_n, best, g = n, d, None
                step *= 1.5
            else:
                step *= 0.5
        return best_n, best

    def _exact_pair(self, c: Any, w: Any, s1: int, s2: int, nv: np.ndarray,
                    base: float) -> tuple[np.ndarray, np.ndarray, float] | None:
        """(point (3,), normal (3,), overlap m) of a pair in which s1 or s2 is an exact
        ellipsoid, else None; ``nv`` the unit normal from s1 to s2 and ``base`` the overlap
        (m; minus the distance when apart) that fcl finds on the meshes (for the ellipsoid the
        polytope that contains it, ``Ellipsoid.fcl_vertices``: no overlap missed).

        A face contact (the other shape a box or a convex mesh, one of its flat faces within
        :data:`FACE_SNAP` of the normal, the ellipsoid's deepest point below that face's plane
        projecting inside the face): the face's normal and the ellipsoid's exact overlap with
        the face's plane (as against a half-space). Otherwise fcl's normal, and its overlap
        less what the polytope reaches beyond the ellipsoid along it, max_v v.d - h(d)
        (the support functions of the two shapes add along a fixed normal: exact along nv;
        the other shape's support is not used, which along a normal slightly off a capsule's
        side or a box's edge would reach to its far end). The point: the ellipsoid's exact
        support point moved along the normal to the middle of the overlap. A capsule whose
        axis stays outside the ellipsoid: exact, its axis point nearest the ellipsoid as a
        sphere (:func:`mbplugin.contact.ellipsoid.segment_closest`). Two ellipsoids: the least
        overlap over the directions from fcl's (:meth:`_least_depth`)."""
        a1, a2 = self.ellipsoid_axes[s1], self.ellipsoid_axes[s2]
        e = s2 if np.isfinite(a2[0]) else s1 if np.isfinite(a1[0]) else -1
        if e < 0:
            return None
        from mbplugin.contact.ellipsoid import segment_closest, support, support_point

        axes, R = self.ellipsoid_axes[e], w.R[e]
        o = s1 if e == s2 else s2
        if int(c.kind[o]) == 1:  # CAPSULE: its axis's nearest point to the ellipsoid
            ax = w.R[o][:, 2] * c.half_length[o]
            near = segment_closest(axes, (w.center[o] - ax - w.center[e]) @ R,
                                   (w.center[o] + ax - w.center[e]) @ R)
            if near is not None:
                x, n, dist = near
                rc = float(c.radius[o])
                nw = R @ n
                return (w.center[e] + R @ (x + 0.5 * (dist - rc) * n),
                        (nw if e == s1 else -nw), rc - dist)
        out = nv if o == s1 else -nv  # the other shape's outward normal towards the ellipsoid
        if not np.isfinite(self.ellipsoid_axes[o, 0]) and (
                int(c.kind[o]) == 2 or (int(c.kind[o]) == 3 and self.convex[o])):
            fn, off, start, ids, xw, curved = self._polys_world(c, w, o)
            f = int(np.argmax(fn @ out))
            ring = ids[start[f]:start[f + 1]]
            if fn[f] @ out >= FACE_SNAP and not curved[ring].any():
                nf = fn[f]
                x = w.center[e] + R @ support_point(axes, -nf @ R)
                depth = float(off[f] - nf @ x)
                v = xw[ring]
                edge = np.roll(v, -1, axis=0) - v
                if np.all(np.einsum("ij,ij->i", np.cross(edge, x - v), np.tile(nf, (len(v), 1)))
                          >= 0.0):
                    return x + 0.5 * depth * nf, (nf if o == s1 else -nf), depth
        depth = base
        for s_, d in ((s1, nv), (s2, -nv)):
            if np.isfinite(self.ellipsoid_axes[s_, 0]):
                loc = d @ w.R[s_]  # the direction in the shape frame
                depth += float(support(self.ellipsoid_axes[s_], loc)
                               - np.max(self.shapes[s_].fcl_vertices @ loc))
        if depth > 0.0 and np.isfinite(self.ellipsoid_axes[o, 0]):
            # two ellipsoids: from the upper bound D(nv) (fcl's depth is EPA's on polytopes)
            nv, depth = self._least_depth(
                c, w, s1, s2, nv, self._support(c, w, s1, nv) + self._support(c, w, s2, -nv))
        d = -nv if e == s2 else nv
        pos = w.center[e] + R @ support_point(axes, d @ R)
        return pos - 0.5 * depth * d, nv, depth

    def _polys_world(self, c: Any, w: Any, s: int) -> tuple[np.ndarray, ...]:
        """Shape ``s``'s hull polygons in the world: normals, offsets, start, ids, vertices
        (world), and which vertices belong to a smooth region (curved: no flat face)."""
        R, cen = w.R[s], w.center[s]
        local = self._polys.get(s)
        if local is None:
            if int(c.kind[s]) == 3:  # MESH
                mesh = self.shapes[s]
                n, off, start, ids = mesh.polygons()
                loc = mesh.vertices
                curved = np.zeros(len(loc), dtype=bool)
                fs, fv = mesh.feature_start, mesh.feature_vertices
                for f in np.flatnonzero(mesh.feature_kind == 1):
                    curved[fv[fs[f]:fs[f + 1]]] = True
            else:  # BOX
                n, off, start, ids, loc = box_polygons(c.half[s])
                curved = np.zeros(8, dtype=bool)
            local = self._polys[s] = (n, off, start, ids, loc, curved)
        n, off, start, ids, loc, curved = local
        nw = n @ R.T
        return nw, off + nw @ cen, start, ids, loc @ R.T + cen, curved

    def _manifold(self, c: Any, w: Any, s1: int, s2: int, nv: np.ndarray,
                  margin: float) -> tuple[np.ndarray, ...] | None:
        """Face contact of two convex polyhedra (meshes, boxes) along the contact normal
        ``nv`` (from s1 to s2), or None when it is not a face contact (module docstring): the
        reference face (the one of the two faces most aligned with the normal) against the
        incident face of the other shape, clipped to the reference face's prism
        (:func:`clip_polygon`); each clipped vertex inside the reference body (or within
        ``margin``) is a contact, its overlap the depth below the reference plane."""
        na, oa, sta, ida, xa, ca = self._polys_world(c, w, s1)
        nb, ob, stb, idb, xb, cb = self._polys_world(c, w, s2)
        al_a, al_b = na @ nv, -(nb @ nv)
        fa, fb = int(np.argmax(al_a)), int(np.argmax(al_b))
        if max(al_a[fa], al_b[fb]) < FACE_ALIGN:
            return None
        ring_a, ring_b = ida[sta[fa]:sta[fa + 1]], idb[stb[fb]:stb[fb + 1]]
        if ca[ring_a].any() or cb[ring_b].any():
            return None  # a curved surface: one point (fcl) with its radius
        # the reference face: the better aligned, of two parallel ones the larger (a box on a
        # box ground: the ground's face; its small face then keeps its own corners, while
        # the ground's face clipped by the small one gave cut vertices of one tag)
        if abs(al_a[fa] - al_b[fb]) <= 1e-9:
            first = np.ptp(xa[ring_a], axis=0).max() >= np.ptp(xb[ring_b], axis=0).max()
        else:
            first = al_a[fa] > al_b[fb]
        if first:
            flag, nr, off, ref, inc, tag = 0, na[fa], oa[fa], xa[ring_a], xb[ring_b], ring_b
        else:
            flag, nr, off, ref, inc, tag = 1, nb[fb], ob[fb], xb[ring_b], xa[ring_a], ring_a
        pts, tags = clip_polygon(inc, ref, nr, tag.astype(np.int64))
        if not len(pts):
            return None
        depth = off - pts @ nr
        keep = depth > -margin
        pts, tags, depth = pts[keep], tags[keep], depth[keep]
        point = pts + 0.5 * depth[:, None] * nr
        normal = np.tile(nr if flag == 0 else -nr, (len(pts), 1))
        feature = 1 + flag * (1 << 18) + np.where(tags >= 0, tags, (1 << 17) + (-tags - 1))
        # cut vertices whose edges both began at cut vertices can share a tag: the second of
        # a tag gets bit 16 (free: tags use 16 bits), a third or later is dropped (a contact
        # key must be unique)
        if len(np.unique(feature)) < len(feature):
            count: dict[int, int] = {}
            keep = np.ones(len(feature), dtype=bool)
            for i, f in enumerate(feature.tolist()):
                k = count.get(f, 0)
                count[f] = k + 1
                if k == 1:
                    feature[i] = f + (1 << 16)
                elif k > 1:
                    keep[i] = False
            point, normal, depth, feature = point[keep], normal[keep], depth[keep], feature[keep]
        return point, normal, depth, feature.astype(np.int64)

    def general_pairs(
        self, c: Any, w: Any, sa: np.ndarray, sb: np.ndarray, margin: float
    ) -> list[Any]:
        """Pairs without a closed form, one fcl query each (one contact per pair)."""
        import fcl

        from mbplugin.contact.model import _Part

        if not len(sa):
            return []
        request = fcl.CollisionRequest(num_max_contacts=1, enable_contact=True)
        near = fcl.DistanceRequest(enable_nearest_points=True)
        out_i, pts, nrm, dep, feat = [], [], [], [], []
        kind = c.kind
        for idx, (s1, s2) in enumerate(zip(sa.tolist(), sb.tolist(), strict=True)):
            result = fcl.CollisionResult()
            o1, o2 = self._fcl_object(c, w, s1), self._fcl_object(c, w, s2)
            ct = None
            if fcl.collide(o1, o2, request, result) and result.contacts:
                ct = result.contacts[0]
                nv = np.asarray(ct.normal, dtype=float)
                nv = nv / np.linalg.norm(nv)
            elif margin > 0.0:
                # apart but within the predictive margin: a contact of negative overlap (the
                # host step sees it coming; found only once overlapping, a box landing on a
                # box started 2 mm deep and gained energy at each bounce)
                res = fcl.DistanceResult()
                dist = fcl.distance(o1, o2, near, res)
                if not 0.0 < dist < margin:
                    continue
                p1, p2 = (np.asarray(x, dtype=float) for x in res.nearest_points)
                gap = p2 - p1
                if not np.linalg.norm(gap) > 0.0:
                    continue
                nv = gap / np.linalg.norm(gap)
            else:
                continue
            exact = (self._exact_pair(c, w, s1, s2, nv, -dist if ct is None
                                      else float(ct.penetration_depth))
                     if self.has_ellipsoid else None)
            if exact is not None:  # an ellipsoid: its exact support (module ellipsoid)
                out_i.append(idx)
                pts.append(exact[0])
                nrm.append(exact[1])
                dep.append(exact[2])
                feat.append(0)
                continue
            # convex meshes and boxes: a face contact gives its clipped polygon (a box
            # on a box too: fcl's one point let a box resting on a box floor rock)
            if (kind[s1] in (2, 3) and kind[s2] in (2, 3)
                    and self.convex[s1] | (kind[s1] == 2)
                    and self.convex[s2] | (kind[s2] == 2)):
                man = self._manifold(c, w, s1, s2, nv, margin)
                if man is not None:
                    for k in range(len(man[2])):
                        out_i.append(idx)
                        pts.append(man[0][k])
                        nrm.append(man[1][k])
                        dep.append(man[2][k])
                        feat.append(man[3][k])
                    continue
            if ct is None:  # the middle of the gap, its overlap the negative distance
                out_i.append(idx)
                pts.append(0.5 * (p1 + p2))
                nrm.append(nv)
                dep.append(-dist)
                feat.append(0)
                continue
            # keep fcl's tangential position, move the point along n to the middle of the
            # overlap: between a's extreme plane (max x.n over a) and b's (min x.n over b)
            mid = 0.5 * (self._support(c, w, s1, nv) - self._support(c, w, s2, -nv))
            pos = np.asarray(ct.pos, dtype=float)
            out_i.append(idx)
            pts.append(pos + (mid - pos @ nv) * nv)
            nrm.append(nv)
            dep.append(ct.penetration_depth)
            feat.append(0)
        if not out_i:
            return []
        ii = np.array(out_i, dtype=np.int64)
        point = np.array(pts, dtype=float).reshape(-1, 3)
        normal = np.array(nrm, dtype=float).reshape(-1, 3)
        normal /= np.linalg.norm(normal, axis=1)[:, None]
        a, b = sa[ii], sb[ii]
        r_eff = _equiv(self._feature_radius(c, w, a, point, normal),
                       self._feature_radius(c, w, b, point, normal))
        return [_Part(a, b, point, normal, np.array(dep, dtype=float), r_eff,
                      np.array(feat, dtype=np.int64))]
