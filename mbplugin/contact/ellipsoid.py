"""An exact solid ellipsoid: its plane contact at the true deepest point, Hertz's radius there.

An ellipsoid of semi-axes (a, b, c) along its local x, y, z (A = diag(a, b, c)) has the support
function h(u) = sqrt(u^T A^2 u) in a unit direction u (shape frame), reached at the surface
point p(u) = A^2 u / h(u), whose outward normal is u. Against a half-space of outward normal n
(shape frame) the deepest point is p(-n) = -A^2 n / sqrt(n^T A^2 n), its overlap h(-n) minus the
centre's height above the plane: exact, one square root, computed in the compiled kernel
:func:`mbplugin.contact.kernels._ellipsoid_member` (the same kernel in every path that collides
a mesh with a plane: the engine, its compiled pairs, the hosts).

Hertz's effective radius there. At the point of outward normal u the Gaussian curvature of the
ellipsoid is K = h(u)^4 / (a b c)^2 (with x^2/a^2 + y^2/b^2 + z^2/c^2 = 1: K = 1 / (a^2 b^2 c^2
(x^2/a^4 + y^2/b^4 + z^2/c^4)^2), and x^2/a^4 + ... = 1 / h(u)^2), so the equivalent radius of
the elliptical contact with a plane, sqrt(R1 R2) of the two principal radii of curvature
(Johnson, *Contact Mechanics*, 1985, Sect. 4.2, Eq. 4.24's R_e = (R' R'')^(1/2), the first
approximation the contact layer takes for every non-spherical contact: a capsule's side, a
mesh's curvature estimate, :mod:`mbplugin.contact.model`), is

    R_e(u) = 1 / sqrt(K) = a b c / h(u)^2          (:func:`equivalent_radius`)

e.g. a b / c on the tip of the c axis (R1 = a^2 / c, R2 = b^2 / c), and r for a sphere
(a = b = c = r). Johnson's correction factors for the eccentricity of the contact ellipse
(F1, F2 of Sect. 4.2) are not applied: within about 1 % of the exact elliptical Hertz
overlap for R1/R2 up to 3, a few % at 10.

:class:`Ellipsoid` is a :class:`~mbplugin.contact.mesh.Mesh` (an icosphere of ``subdivisions``
scaled to the semi-axes: its vertices lie on the ellipsoid) for the pairs without a closed form
(sphere, box, mesh, capsule, another ellipsoid, through the mesh pairs), whose one plane
feature is the exact ellipsoid. Those pairs improve on the plain mesh where it is cheap:

* a sphere (or a capsule's end sphere) whose centre lies outside the ellipsoid: the exact
  nearest surface point (:func:`closest_point`, Newton on Eberly's equation), its normal, the
  overlap r - distance, and 1/r_eff = 1/R_e + 1/r with R_e = :func:`equivalent_radius` there;
* a capsule whose axis stays outside the ellipsoid: exact, the axis point nearest the
  ellipsoid (:func:`segment_closest`) as a sphere;
* a flat face of a box or a convex mesh within 1 degree of fcl's normal, the ellipsoid's
  deepest point below it inside the face: exact, as against a half-space;
* another ellipsoid: the least overlap along a direction, h_1(n) + h_2(-n) over the unit n
  (the penetration depth of two convex bodies), by descent from fcl's normal: exact to ~1e-8;
* otherwise (a box's or a mesh's edge or corner): fcl's normal and overlap on the polytope
  that contains the ellipsoid (``fcl_vertices``: fcl misses no overlap), less what that
  polytope reaches beyond the ellipsoid along the normal (:func:`support`: exact along that
  normal, the normal fcl's); the point the exact support point, the radius
  :func:`equivalent_radius` at the normal.

What is left of the polyhedron is the normal of that last case (measured against
``mj_geomDistance`` at random box poses: median 2e-9, worst 10 % of a 3e-6-3e-4 m overlap) and
a sphere centre inside the ellipsoid (trimesh's closest point on the icosphere, an overlap beyond
the sphere's radius), off by at most the icosphere's chordal error, 0.29 a_max / 4^s for s
subdivisions (the sagitta at a face's centre; 1.1e-3 of the largest semi-axis at the default 4,
7e-5 at 6).
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin.contact.kernels import ELLIPSOID_MARK
from mbplugin.contact.mesh import FEATURE_EXACT, Mesh
from mbplugin.contact.shapes import _positive
from mbplugin.errors import ParameterError

#: icosphere subdivisions of the mesh that stands in for the ellipsoid against shapes other
#: than a plane (2562 vertices; module docstring for its error)
SUBDIVISIONS = 4


def support(semi_axes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """h(u) = sqrt(u^T A^2 u) (m): the support of the ellipsoid of ``semi_axes`` (3,) or (K, 3)
    m in the unit directions ``u`` (K, 3) or (3,) (shape frame); rows broadcast."""
    au = np.asarray(semi_axes, dtype=float) * np.asarray(u, dtype=float)
    return np.sqrt((au * au).sum(axis=-1))


def support_point(semi_axes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """p(u) = A^2 u / h(u) (m, shape frame): the surface point whose outward normal is the unit
    direction ``u`` (the ellipsoid's support point; rows broadcast as :func:`support`)."""
    a = np.asarray(semi_axes, dtype=float)
    u = np.asarray(u, dtype=float)
    return a * a * u / support(a, u)[..., None]


def equivalent_radius(semi_axes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """R_e = a b c / h(u)^2 (m): sqrt(R1 R2) of the principal radii of curvature at the surface
    point whose outward normal is the unit direction ``u`` (either sign; module docstring:
    Johnson 1985, Sect. 4.2)."""
    a = np.asarray(semi_axes, dtype=float)
    au = a * np.asarray(u, dtype=float)
    return a.prod(axis=-1) / (au * au).sum(axis=-1)


#: Newton steps at most in :func:`closest_point` (from t = 0 it converges monotonically; a few
#: steps for a point within a semi-axis of the surface)
CLOSEST_STEPS = 60


def closest_point(semi_axes: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """The points of the ellipsoid's surface nearest to the points ``y`` (K, 3) outside it
    (shape frame, m; sum y_i^2 / a_i^2 >= 1): (x (K, 3), unit outward normal at x (K, 3),
    distance |y - x| (K,) m).

    x = (I + t A^-2)^-1 y for the root t >= 0 of F(t) = sum (a_i y_i / (t + a_i^2))^2 = 1
    (the Lagrange condition y - x = t A^-2 x; Eberly, "Distance from a point to an ellipse, an
    ellipsoid, or a hyperellipsoid", 2013): F is decreasing and convex on t >= 0, so Newton
    from t = 0 climbs to the root monotonically. Then y = x + d n with n = A^-2 x / |A^-2 x|
    and d = t |A^-2 x|."""
    a2 = np.asarray(semi_axes, dtype=float) ** 2
    y = np.asarray(y, dtype=float)
    ay2 = a2 * y * y
    t = np.zeros(len(y))
    scale = a2.max()
    for _ in range(CLOSEST_STEPS):
        den = t[:, None] + a2
        f = (ay2 / (den * den)).sum(axis=1) - 1.0
        df = -2.0 * (ay2 / (den * den * den)).sum(axis=1)
        step = np.where(f > 0.0, -f / df, 0.0)
        t = t + step
        if not np.any(step > 1e-15 * (t + scale)):
            break
    x = a2 * y / (t[:, None] + a2)
    g = x / a2
    gn = np.linalg.norm(g, axis=1)
    return x, g / gn[:, None], t * gn


#: Samples per round, and rounds, of :func:`segment_closest` (each round narrows the interval
#: to the two samples' spans around the best: 8x; 12 rounds: 7e-11 of the segment)
SEGMENT_SAMPLES = 17
SEGMENT_ROUNDS = 12


def segment_closest(semi_axes: np.ndarray, p0: np.ndarray, p1: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The point of the segment p0-p1 (shape frame, m) nearest to the ellipsoid, when the
    segment stays outside it: (x the nearest surface point (3,), the unit outward normal there
    (3,), the distance m), else None.

    The distance to a convex body is convex along a segment: its minimum by
    :data:`SEGMENT_ROUNDS` rounds of :data:`SEGMENT_SAMPLES` samples, each round on the spans
    either side of the last round's best (the distance's error is second order in the
    parameter's); each sample's nearest point by :func:`closest_point`."""
    a = np.asarray(semi_axes, dtype=float)
    p0, p1 = np.asarray(p0, dtype=float), np.asarray(p1, dtype=float)
    d = p1 - p0
    lo, hi = 0.0, 1.0
    best = None
    for _ in range(SEGMENT_ROUNDS):
        s = np.linspace(lo, hi, SEGMENT_SAMPLES)
        pts = p0 + s[:, None] * d
        if np.any(((pts / a) ** 2).sum(axis=1) < 1.0):
            return None
        x, n, dist = closest_point(a, pts)
        i = int(np.argmin(dist))
        best = (x[i], n[i], float(dist[i]))
        lo, hi = s[max(i - 1, 0)], s[min(i + 1, len(s) - 1)]
    return best


def _semi_axes(semi_axes: object) -> tuple[float, float, float]:
    try:
        vals = [float(x) for x in semi_axes]  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        vals = []
    if len(vals) != 3:
        raise ParameterError(
            f"Ellipsoid: 'semi_axes' = {semi_axes!r} must be three semi-axes [a, b, c] (m), "
            "each in (0, inf)")
    a, b, c = (_positive("Ellipsoid", f"semi_axes[{i}]", x) for i, x in enumerate(vals))
    return a, b, c


class Ellipsoid(Mesh):
    """A solid ellipsoid of semi-axes ``semi_axes`` = (a, b, c) (m) along its local x, y, z,
    centred at the origin (module docstring).

    ``subdivisions``: of the icosphere used for the pairs other than a plane (an integer in
    [1, 6]; 10 4^s + 2 vertices, chordal error 0.29 a_max / 4^s).
    """

    def __init__(self, semi_axes: object, subdivisions: int = SUBDIVISIONS) -> None:
        import trimesh

        axes = np.array(_semi_axes(semi_axes))
        if isinstance(subdivisions, bool) or not isinstance(subdivisions, int | np.integer) or not (
                1 <= int(subdivisions) <= 6):
            raise ParameterError(
                f"Ellipsoid: 'subdivisions' = {subdivisions!r} is outside its allowed range "
                "(an integer in [1, 6])")
        tm = trimesh.creation.icosphere(subdivisions=int(subdivisions), radius=1.0)
        unit = np.asarray(tm.vertices, dtype=float)
        unit /= np.linalg.norm(unit, axis=1)[:, None]  # on the unit sphere to rounding
        tm = trimesh.Trimesh(unit * axes, np.asarray(tm.faces), process=False)
        # one vertex holds the exact plane feature (any vertex would do: the feature's model
        # does not depend on where its vertex is)
        super().__init__(tm, radius=None, plane_points=tm.vertices[:1])
        self.semi_axes = axes
        self.subdivisions = int(subdivisions)
        if len(self.feature_vertices) != 1:
            raise RuntimeError(
                f"Ellipsoid: expected one plane feature, got {len(self.feature_vertices)}")
        vid = int(self.feature_vertices[0])
        self.vertex_geometry[vid] = (0.0, 0.0, 0.0, ELLIPSOID_MARK, axes[0], axes[1], axes[2],
                                     0.0, 0.0)
        self.feature_kind[:] = FEATURE_EXACT
        self.feature_slack = np.zeros(1)
        # the exact radius at every vertex (its outward normal A^-2 x / |A^-2 x|), for the
        # pairs that take a vertex's radius (mesh-sphere: the vertex nearest the contact)
        nrm = self.vertices / (axes * axes)
        nrm /= np.linalg.norm(nrm, axis=1)[:, None]
        self.vertex_radius = equivalent_radius(axes, nrm)
        self.sharp = False
        self.bounding_center = np.zeros(3)
        self.bounding_radius = float(axes.max())
        # fcl collides a polytope that contains the ellipsoid (the icosphere pushed out until
        # every face plane clears the unit sphere, then scaled to the semi-axes: an affine
        # map keeps the containment), so that it misses no overlap of the exact ellipsoid;
        # the mesh pairs then measure the exact overlap (MeshSet._exact_pair)
        tri = unit[tm.faces]
        fn = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        plane = np.abs(np.einsum("ij,ij->i", fn, tri[:, 0])) / np.linalg.norm(fn, axis=1)
        #: the vertices of the polytope fcl collides (m, shape frame; module docstring)
        self.fcl_vertices = unit * (axes / float(plane.min()))

    def fcl_geometry(self) -> object:
        """The polytope containing the ellipsoid (``fcl_vertices``) as an ``fcl.Convex``."""
        if self._fcl is None:
            import fcl

            faces = np.hstack([np.full((len(self.faces), 1), 3), self.faces]).ravel()
            self._fcl = fcl.Convex(self.fcl_vertices, len(self.faces), faces)
        return self._fcl

    def __repr__(self) -> str:
        a, b, c = (float(x) for x in self.semi_axes)
        return f"Ellipsoid(semi_axes=({a}, {b}, {c}), subdivisions={self.subdivisions})"

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        """The exact ellipsoid's: m = rho (4/3) pi a b c, I = m/5 diag(b^2 + c^2, a^2 + c^2,
        a^2 + b^2)."""
        a, b, c = (float(x) for x in self.semi_axes)
        m = rho * 4.0 / 3.0 * math.pi * a * b * c
        return m, np.zeros(3), np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * (m / 5.0)
