"""The overlap a mesh hull reports against a plane, against the hull's own depth (issue 18).

Each mesh (the convex hulls PyBullet collides with: ``bullet.geometry._mesh``) at 300 random
orientations (seed 18) with its lowest vertex 1 mm below the plane z = 0 (Hooke, margin
0.1 m): printed, the smallest and largest excess of the deepest reported overlap over 1 mm
(the hull's depth: its lowest vertex), the plane corners' tolerance (hull corners within it
are left out: the floor of the excess) and each smooth region's slack (the chordal error
its contact may reach beyond its deepest vertex; inf: a tessellated sphere, which keeps its
sphere). Meshes: the Mini Cheetah's abduction link, Laikago's lower leg, the A1's calf
(``pybullet_data``) and a trimesh icosphere (r = 2 cm, 642 vertices).

    python benchmarks/hull_depth.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pybullet_data
import trimesh

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import hull_probe

from mbplugin.bullet.geometry import _mesh


def excess(path: str) -> str:
    """One line per hull of the mesh file ``path`` (module docstring)."""
    lines = []
    for mesh in _mesh(path, np.ones(3), path, None):
        v = np.asarray(mesh.vertices, dtype=float)
        tol = hull_probe.corner_tol(mesh)
        q, R = hull_probe.rotations(300, 18)
        ex = list(hull_probe.deepest(mesh, q, R, -1e-3) - 1e-3)
        slack = getattr(mesh, "feature_slack", None)
        sl = ("-" if slack is None
              else np.array2string(slack[mesh.feature_kind == 1] * 1e3, precision=3))
        lines.append(f"{len(v):5d} vertices: excess {min(ex) * 1e3:+.3f} .. "
                     f"{max(ex) * 1e3:+.3f} mm (corner tol {tol * 1e3:.3f} mm; "
                     f"region slack {sl} mm)")
    return "\n".join(lines)


def main() -> None:
    d = pybullet_data.getDataPath()
    with tempfile.TemporaryDirectory() as tmp:
        ball = f"{tmp}/icosphere.obj"
        trimesh.creation.icosphere(3, radius=0.02).export(ball)
        for name, path in (("abduction link", f"{d}/mini_cheetah/meshes/mini_abad.obj"),
                           ("Laikago lower_leg_3", f"{d}/laikago/lower_leg_3.stl"),
                           ("A1 calf", f"{d}/a1/meshes/calf.obj"),
                           ("icosphere r 2 cm", ball)):
            print(f"{name:20s} {excess(path)}", flush=True)


if __name__ == "__main__":
    main()
