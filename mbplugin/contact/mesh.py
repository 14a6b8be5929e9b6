"""Triangle-mesh shapes (trimesh) and the mesh pairs of the narrow phase (in progress)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.errors import ParameterError


class Mesh:
    """A closed triangle mesh (placeholder until the mesh narrow phase lands)."""

    def __init__(self, mesh: Any, radius: float | None = None, repair: bool = False) -> None:
        raise ParameterError("Mesh shapes are not available yet")

    radius: float | None = None
    bounding_radius: float = 0.0
    bounding_center: np.ndarray = np.zeros(3)


class MeshSet:
    """Mesh data of a compiled model."""

    def __init__(self, meshes: list[Any]) -> None:
        self.meshes = meshes

    def general_pairs(self, c: Any, w: Any, sa: np.ndarray, sb: np.ndarray,
                      margin: float) -> list[Any]:
        kinds = sorted({(int(c.kind[i]), int(c.kind[j])) for i, j in zip(sa, sb, strict=True)})
        raise ParameterError(f"shape pairs {kinds} are not supported yet")

    def plane_meshes(self, c: Any, w: Any, p: int, mids: np.ndarray) -> list[Any]:
        return []

    def mesh_sphere(self, c: Any, w: Any, sa: np.ndarray, sb: np.ndarray) -> Any:
        raise ParameterError("mesh-sphere pairs are not supported yet")
