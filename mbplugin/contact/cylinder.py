"""An exact solid cylinder: its plane contacts on the true circular rims.

A cylinder meets a half-space first on one of its two rims (the circles bounding its end
faces): its support in a direction d is h |d.a| + r |d - (d.a) a| (axis a, radius r, half length
h), reached at the rim of the end facing d, at the rim point along the part of d across the
axis. :class:`Cylinder` is a :class:`~mbplugin.contact.mesh.Mesh` (a prism of ``sections``
sides inscribed in it, for the pairs without a closed form: sphere, box, mesh, capsule, as the
mesh pairs) whose plane features are replaced by six rim points, three on each rim
(:func:`mbplugin.contact.kernels._rim_member`, compiled; the same kernel in every path that
collides a mesh with a plane):

* feature ``LOWEST`` of each rim: the rim's lowest point against the plane (the deepest point
  of the cylinder is the deeper of the two, exact to rounding at any tilt);
* two more points of each rim at +-120 degrees about the axis from it (as MuJoCo's
  ``mjc_PlaneCylinder``): an equilateral triangle on the rim, so that an end face flat on the
  plane rests on three points of equal overlap (their resultant on the axis: no torque); they
  lie 1.5 r sin(tilt) above the lowest point and carry load only while the face is nearly flat.

So a cylinder tilted on a plane touches at one rim point, lying on its side at the two ends of
its lowest generator (one point per rim, as a box's edge on its two corners), standing on an
end face at three points of its rim. The effective radius for Hertz's stiffness of a rim point
is undefined (a sharp edge): the Mesh's ``radius`` (here ``edge_radius``) or a law with ``k``.
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin.contact.mesh import Mesh
from mbplugin.contact.shapes import _positive
from mbplugin.errors import ParameterError

#: the rim points' angles about the axis from the rim's lowest point (rad)
RIM_ANGLES = (0.0, 2.0 * math.pi / 3.0, -2.0 * math.pi / 3.0)


class Cylinder(Mesh):
    """A solid cylinder of radius ``cylinder_radius`` (m) and half length ``half_length`` (m),
    axis = local z, centred at the origin (module docstring).

    ``sections``: sides of the inscribed prism used for the pairs other than the plane (its
    side is within r (1 - cos(pi / sections)) of the cylinder's). ``edge_radius`` (m): the
    effective radius of the rim for Hertz's k (the :class:`Mesh`'s ``radius``; None: undefined,
    give the law's ``k``).
    """

    def __init__(self, radius: float, half_length: float, sections: int = 64,
                 edge_radius: float | None = None) -> None:
        import trimesh

        r = _positive("Cylinder", "radius", radius)
        h = _positive("Cylinder", "half_length", half_length)
        if edge_radius is not None:
            edge_radius = _positive("Cylinder", "edge_radius", edge_radius)
        if isinstance(sections, bool) or not isinstance(sections, int | np.integer) or not (
                6 <= int(sections) <= 4096):
            raise ParameterError(
                f"Cylinder: 'sections' = {sections!r} is outside its allowed range "
                "(an integer in [6, 4096])")
        prism = trimesh.creation.cylinder(radius=r, height=2.0 * h, sections=int(sections))
        v = np.asarray(prism.vertices, dtype=float)
        # six rim vertices of the prism hold the six rim points (any rim vertices would do:
        # a rim point's model does not depend on where its vertex is)
        rim = np.flatnonzero(np.abs(np.hypot(v[:, 0], v[:, 1]) - r) <= 1e-9 * r)
        hold = [int(i) for z in (-h, h)
                for i in rim[np.abs(v[rim, 2] - z) <= 1e-9 * h][:len(RIM_ANGLES)]]
        super().__init__(prism, radius=edge_radius, plane_points=v[hold])
        self.cylinder_radius = r
        self.half_length = h
        self.sections = int(sections)
        members = self.feature_vertices
        if len(members) != 2 * len(RIM_ANGLES) or np.any(self.feature_kind != 0):
            raise RuntimeError(f"Cylinder: expected six rim features, got {len(members)}")
        vgeo = self.vertex_geometry
        #: per plane feature: the end (-1 or +1) and the index into :data:`RIM_ANGLES`
        self.rim_end = np.empty(len(members), dtype=np.int64)
        self.rim_angle = np.empty(len(members), dtype=np.int64)
        for f, vid in enumerate(members):
            k = hold.index(int(vid))
            end, j = (-1 if k < len(RIM_ANGLES) else 1), k % len(RIM_ANGLES)
            self.rim_end[f], self.rim_angle[f] = end, j
            vgeo[vid] = (0.0, 0.0, end * h, -r, 0.0, 0.0, 1.0,
                         math.cos(RIM_ANGLES[j]), math.sin(RIM_ANGLES[j]))
        self.feature_slack = np.zeros(len(members))

    def __repr__(self) -> str:
        return (f"Cylinder(radius={self.cylinder_radius}, half_length={self.half_length}, "
                f"sections={self.sections}, edge_radius={self.radius})")

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        """The exact cylinder's: m = rho pi r^2 (2 h), I_zz = m r^2 / 2,
        I_xx = I_yy = m (3 r^2 + (2 h)^2) / 12."""
        r, h = self.cylinder_radius, self.half_length
        m = rho * math.pi * r * r * 2.0 * h
        ixx = m * (3.0 * r * r + 4.0 * h * h) / 12.0
        return m, np.zeros(3), np.diag([ixx, ixx, 0.5 * m * r * r])
