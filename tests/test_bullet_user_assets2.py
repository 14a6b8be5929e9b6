"""What users bring to the PyBullet scene path (``world.backend = "pybullet"``): a mesh file
whose origin lies far from its centroid, resting on a face and balanced on an edge.

Outside facts used: a uniform cube resting on a flat floor with its centre of mass above the
middle of its bottom face stays put, upright, on its four bottom corners (m g / 4 each, static
overlap (m g / 4 k)^(2/3) for F = k delta^1.5), its centre of mass half an edge plus PyBullet's
1 mm hull margin minus that overlap above the floor, wherever the file's origin lies; the
standalone engine's convention that a mesh body's ``position`` is its centre of mass
(mbplugin/scene.py), which the PyBullet scene path now follows."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from mbplugin.scene import load_scene

pytest.importorskip("pybullet")

HALF = 0.1  # cube half edge (m)
K = 1e7  # Hunt-Crossley stiffness (N/m^1.5)
G = 9.81
#: PyBullet's collision margin of a convex hull (m; tests/test_bullet_assets.py)
PB_MARGIN = 1e-3


def _scene(tmp_path, offset: tuple[float, float, float], z: float = HALF + 0.005,
           quat: str = "[1.0, 0.0, 0.0, 0.0]",
           extents: tuple[float, float, float] = (2 * HALF,) * 3) -> str:
    m = trimesh.creation.box(extents=list(extents))
    m.apply_translation(offset)
    m.export(tmp_path / "cube.obj")
    (tmp_path / "s.toml").write_text(f'''[scene]
name = "offcube"
duration = 0.5
[world]
gravity = [0.0, 0.0, -9.81]
backend = "pybullet"
[[bodies]]
name = "floor"
shape = "plane"
fixed = true
[[bodies]]
name = "m"
shape = "mesh"
file = "cube.obj"
density = 1000.0
position = [0.0, 0.0, {z}]
orientation = {quat}
[contact]
law = "hunt_crossley"
params = {{ k = {K:g}, cr = 0.5 }}
friction = {{ mu = 0.5, v_eps = 1e-3 }}
''')
    return str(tmp_path / "s.toml")


@pytest.mark.parametrize(("offset", "extents"), [
    ((0.5, 0.0, 0.0), (2 * HALF,) * 3),
    ((0.0, -0.3, 0.2), (2 * HALF,) * 3),
    ((-0.2, 0.45, -0.1), (0.3, 0.16, 0.08)),  # a flat slab, another mass and offset
])
def test_mesh_origin_far_from_centroid_rests_upright(tmp_path, offset, extents):
    """A box mesh written 0.36-0.5 m away from its file's origin drops 5 mm and rests upright
    at its centre of mass = ``position`` (x, y kept; z from the statics above to 1 um).
    On main the body's centre of mass was the file's origin (PyBullet's default), 0.5 m
    outside the cube: it toppled off its edge and ended 0.39 m below the floor."""
    half_h = extents[2] / 2
    res = load_scene(_scene(tmp_path, offset, half_h + 0.005, extents=extents)).run()
    i = list(res.body_names).index("m")
    final = np.asarray(res.pos)[-1, i]
    assert np.allclose(final[:2], 0.0, atol=1e-6), final
    mass = 1000.0 * float(np.prod(extents))
    overlap = (mass * G / 4 / K) ** (2 / 3)
    assert final[2] == pytest.approx(half_h + PB_MARGIN - overlap, abs=1e-6), final


def test_mesh_off_origin_lands_on_edge(tmp_path):
    """The same off-origin cube turned 45 deg about x lands on an edge and balances there
    (symmetric: two corners carry m g / 2 each): its centre of mass at half the face diagonal
    plus the 1 mm hull margin minus (m g / 2 k)^(2/3), y and x kept to 0.1 mm. On main it
    pivoted about the file's origin instead."""
    z0 = HALF * np.sqrt(2.0) + 0.005
    res = load_scene(_scene(tmp_path, (0.0, -0.3, 0.2), z0,
                            "[0.9238795325, 0.3826834324, 0.0, 0.0]")).run()
    final = np.asarray(res.pos)[-1, list(res.body_names).index("m")]
    mass = 1000.0 * (2 * HALF) ** 3
    overlap = (mass * G / 2 / K) ** (2 / 3)
    assert np.allclose(final[:2], 0.0, atol=1e-4), final
    assert final[2] == pytest.approx(HALF * np.sqrt(2.0) + PB_MARGIN - overlap, abs=1e-6), final
