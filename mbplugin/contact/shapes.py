"""Collision shapes, each in its own local frame, with validation and mass properties.

A shape is attached to a body (or to the static world) by
:meth:`mbplugin.contact.ContactModel.add_shape` with a local position and orientation relative to
the body's centre of mass. Local frames:

* :class:`Sphere` centred at the origin.
* :class:`Plane` a half-space: the solid is on the side opposite to ``normal``; ``point`` lies on
  its surface. Static geometry (ground, walls) usually attaches to body -1.
* :class:`Box` centred at the origin, axes along the local axes, ``half_extents`` (m).
* :class:`Capsule` the set of points within ``radius`` of the segment from (0, 0, -half_length) to
  (0, 0, +half_length) (axis = local z).
* :class:`SphericalHole` / :class:`CylindricalHole` the *concave* side of a clearance joint: a
  cavity of ``radius`` centred at the origin (cylinder axis = local z, unbounded along it). They
  interact with spheres inside them (internal contact, review Corral et al. 2021, Sect. 5 Eq. 5.3
  sign rule: the concave side has a negative radius).
* :class:`Mesh` a closed triangle mesh (trimesh), see :mod:`mbplugin.contact.mesh`.

``radius`` on :class:`Box` (and on :class:`Mesh`) is the user-given effective radius of the
shape's features (a fillet radius) where the geometry defines none: box corners and edges are sharp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError


def _positive(owner: str, name: str, value: Any, unit: str = "m") -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{owner}: '{name}' must be a number, got {value!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise ParameterError(
            f"{owner}: '{name}' = {x:g} {unit} is outside its allowed range (0, inf)"
        )
    return x


def _optional_radius(owner: str, value: Any) -> float | None:
    if value is None:
        return None
    return _positive(owner, "radius", value)


@dataclass(frozen=True)
class Sphere:
    """A solid sphere of ``radius`` (m)."""

    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Sphere", "radius", self.radius))

    @property
    def bounding_radius(self) -> float:
        return self.radius

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        """Mass (kg), centre of mass (3,) and inertia about it (3, 3): m = 4/3 pi rho R^3,
        I = 2/5 m R^2."""
        m = rho * 4.0 / 3.0 * math.pi * self.radius**3
        return m, np.zeros(3), 0.4 * m * self.radius**2 * np.eye(3)


@dataclass(frozen=True)
class Plane:
    """A half-space; ``normal`` (unit, outward, local frame) and a ``point`` on the surface (m)."""

    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        n = np.asarray(self.normal, dtype=float)
        p = np.asarray(self.point, dtype=float)
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-12:
            raise ParameterError(
                f"Plane: 'normal' = {self.normal} must be a finite non-zero 3-vector"
            )
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ParameterError(f"Plane: 'point' = {self.point} must be a finite 3-vector")
        object.__setattr__(self, "normal", tuple(n / np.linalg.norm(n)))
        object.__setattr__(self, "point", tuple(p))

    @property
    def bounding_radius(self) -> float:
        return math.inf

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        raise ParameterError("Plane: a half-space has no finite mass; give the body's mass")


@dataclass(frozen=True)
class Box:
    """A box with ``half_extents`` (m, 3 values); optional feature ``radius`` (m) for Hertz k."""

    half_extents: tuple[float, float, float]
    radius: float | None = None

    def __post_init__(self) -> None:
        h = np.asarray(self.half_extents, dtype=float).reshape(-1)
        if h.shape != (3,):
            raise ParameterError(f"Box: 'half_extents' must have 3 values, got {self.half_extents}")
        vals = tuple(_positive("Box", f"half_extents[{i}]", h[i]) for i in range(3))
        object.__setattr__(self, "half_extents", vals)
        object.__setattr__(self, "radius", _optional_radius("Box", self.radius))

    @property
    def bounding_radius(self) -> float:
        return float(np.linalg.norm(self.half_extents))

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        """m = 8 rho hx hy hz; I_xx = m (hy^2 + hz^2)/3 and cyclic."""
        hx, hy, hz = self.half_extents
        m = rho * 8.0 * hx * hy * hz
        inertia = m / 3.0 * np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])
        return m, np.zeros(3), inertia


@dataclass(frozen=True)
class Capsule:
    """Points within ``radius`` (m) of the local z segment of half length ``half_length`` (m)."""

    radius: float
    half_length: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("Capsule", "radius", self.radius))
        object.__setattr__(
            self, "half_length", _positive("Capsule", "half_length", self.half_length)
        )

    @property
    def bounding_radius(self) -> float:
        return self.radius + self.half_length

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        """Cylinder (length 2h) plus two hemispheres; hemisphere centroid at 3r/8 from its face.

        I_zz = m_c r^2/2 + 2/5 m_s r^2,
        I_xx = m_c (r^2/4 + (2h)^2/12) + m_s (2 r^2/5 + (2h)^2/4 + 3 (2h) r/8).
        """
        r, hc = self.radius, 2.0 * self.half_length
        m_c = rho * math.pi * r * r * hc
        m_s = rho * 4.0 / 3.0 * math.pi * r**3
        izz = 0.5 * m_c * r * r + 0.4 * m_s * r * r
        ixx = m_c * (r * r / 4.0 + hc * hc / 12.0) + m_s * (
            0.4 * r * r + hc * hc / 4.0 + 3.0 * hc * r / 8.0
        )
        return m_c + m_s, np.zeros(3), np.diag([ixx, ixx, izz])


@dataclass(frozen=True)
class SphericalHole:
    """Concave spherical cavity of ``radius`` (m): spheres inside it touch its wall."""

    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("SphericalHole", "radius", self.radius))

    @property
    def bounding_radius(self) -> float:
        return math.inf

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        raise ParameterError("SphericalHole: a cavity has no mass of its own; give the body's mass")


@dataclass(frozen=True)
class CylindricalHole:
    """Concave cylindrical bore of ``radius`` (m), axis = local z, unbounded along the axis."""

    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _positive("CylindricalHole", "radius", self.radius))

    @property
    def bounding_radius(self) -> float:
        return math.inf

    def mass_properties(self, rho: float) -> tuple[float, np.ndarray, np.ndarray]:
        raise ParameterError(
            "CylindricalHole: a cavity has no mass of its own; give the body's mass"
        )


@dataclass(frozen=True)
class Material:
    """Young's modulus ``E`` (Pa), Poisson ratio ``nu`` (-) and density ``rho`` (kg/m^3)."""

    name: str
    E: float
    nu: float
    rho: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(f"Material: name must be a non-empty string, got {self.name!r}")
        object.__setattr__(self, "E", _positive(f"Material {self.name!r}", "E", self.E, "Pa"))
        nu = float(self.nu)
        if not (math.isfinite(nu) and -1.0 < nu < 0.5):
            raise ParameterError(
                f"Material {self.name!r}: 'nu' = {nu:g} is outside its allowed range (-1, 0.5)"
            )
        object.__setattr__(self, "nu", nu)
        if self.rho is not None:
            object.__setattr__(
                self, "rho", _positive(f"Material {self.name!r}", "rho", self.rho, "kg/m^3")
            )
