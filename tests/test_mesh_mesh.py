"""Face contact between convex meshes (and a mesh on a primitive box), and stacks of mesh cubes.

Outside facts used: the overlap of two coaxial squares (shifted, or one turned by 45 degrees)
is a rectangle or a regular octagon whose corners are computed here with plain geometry; a
face pressed into a face by d has every point of the overlap at depth d; a stack at rest carries
on the contact under body i the weight of the N - i bodies above it; the static overlap of a
law F = k delta^n under F is (F / k)^(1/n).
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import trimesh

from mbplugin.contact import BodyState, Box, ContactModel, Mesh, axis_angle_quat
from mbplugin.scene import build_scene

A = 0.05  # half edge (m)


def pair(shape_a, shape_b, pos_b, quat_b=(1.0, 0.0, 0.0, 0.0)):
    m = ContactModel()
    m.add_shape(shape_a, 0)
    m.add_shape(shape_b, 1)
    m.set_default_law({"name": "hooke", "k": 1.0})
    st = BodyState.create([[0.0, 0.0, 0.0], pos_b], quat=[[1.0, 0.0, 0.0, 0.0], quat_b],
                          mass=1.0, inertia=[1.0] * 3)
    return m.detect(st)


def cube() -> Mesh:
    return Mesh(trimesh.creation.box(extents=(2 * A, 2 * A, 2 * A)))


def same_points(got: np.ndarray, want: np.ndarray) -> None:
    assert len(got) == len(want)
    for p in want:
        assert np.min(np.linalg.norm(got - p, axis=1)) < 1e-12


@pytest.mark.parametrize("lower", ["mesh", "box"])
def test_shifted_face_on_face_gives_the_overlap_rectangle(lower: str) -> None:
    d, sx, sy = 1e-4, 0.03, 0.02
    base = cube() if lower == "mesh" else Box((A, A, A))
    b = pair(base, cube(), [sx, sy, 2 * A - d])
    assert b.delta == pytest.approx(np.full(4, d), abs=1e-15)
    assert b.normal == pytest.approx(np.tile([0.0, 0.0, 1.0], (4, 1)))
    xs, ys = (sx - A, A), (sy - A, A)
    same_points(b.point, np.array([[x, y, A - d / 2] for x in xs for y in ys]))
    assert len(set(b.key)) == 4


def test_turned_face_on_face_gives_the_overlap_octagon() -> None:
    d = 2e-4
    b = pair(cube(), cube(), [0.0, 0.0, 2 * A - d], axis_angle_quat([0, 0, 1], math.pi / 4))
    c = A * math.sqrt(2) - A  # where the turned square's edges cross x = +-A
    want = [[sx * A, sy * c, A - d / 2] for sx in (-1, 1) for sy in (-1, 1)]
    want += [[sx * c, sy * A, A - d / 2] for sx in (-1, 1) for sy in (-1, 1)]
    same_points(b.point, np.array(want))
    assert b.delta == pytest.approx(np.full(8, d), abs=1e-15)


def test_tilted_cube_on_an_edge_touches_at_the_edge_ends() -> None:
    """A cube turned about x by 30 deg resting on its lower edge on a cube's top face: the
    edge's two ends are the contacts, at the depth of the edge below the face."""
    d = 1e-4
    q = axis_angle_quat([1, 0, 0], math.radians(30))
    reach = A * (math.cos(math.radians(30)) + math.sin(math.radians(30)))  # centre to edge
    b = pair(cube(), cube(), [0.0, 0.0, A + reach - d], q)
    assert len(b) == 2
    assert b.delta == pytest.approx([d, d], abs=1e-12)
    assert sorted(b.point[:, 0]) == pytest.approx([-A, A], abs=1e-12)


def test_mesh_cube_stacks_rest_with_the_weight_above(tmp_path: Path) -> None:
    """Three mesh cubes (Hunt-Crossley, k 1e7 N/m^1.5 per corner) stacked on the floor, each
    placed at the closed-form overlap of its four corners: nothing moves, and the contacts under
    cube i carry (N - i) m g."""
    n, k, rho, g = 3, 1e7, 1200.0, 9.81
    trimesh.creation.box(extents=(2 * A,) * 3).export(tmp_path / "cube.obj")
    m = rho * (2 * A) ** 3
    bodies = [{"name": "floor", "shape": "plane", "fixed": True}]
    top = 0.0
    for i in range(n):
        delta = ((n - i) * m * g / 4 / k) ** (2 / 3)
        zc = top - delta + A
        bodies.append({"name": f"c{i}", "shape": "mesh", "file": "cube.obj", "density": rho,
                       "position": [0.0, 0.0, zc]})
        top = zc + A
    scene = build_scene({
        "scene": {"name": "stack", "duration": 0.3},
        "integrator": {"method": "adaptive", "rtol": 1e-9, "max_step": 0.01},
        "bodies": bodies,
        "contact": {"law": "hunt_crossley", "params": {"k": k, "cr": 0.3}},
    }, base_dir=tmp_path)
    y0 = scene.world.bodies.state_vector().copy()
    result = scene.run()
    y = result.final_state
    nb = n + 1
    assert np.abs(y[: 3 * nb] - y0[: 3 * nb]).max() < 1e-9
    assert np.abs(y[7 * nb : 10 * nb]).max() < 1e-9
    force: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for c in result.final_contacts:
        force[c["b"]] += c["force"]
        count[c["b"]] += 1
    for i in range(n):
        assert count[f"c{i}"] == 4
        assert force[f"c{i}"] == pytest.approx((n - i) * m * g, rel=1e-6)


def test_non_convex_mesh_parts_and_the_door_check() -> None:
    """A non-convex mesh (the Stanford bunny of pybullet_data, 10 cm) against a box: refused at
    the door with advice that exists (convex_parts), unless the pair can never meet
    (excluded); split by V-HACD into convex parts that cover it (every bunny vertex within two
    voxels of a part), the parts as shapes of one body rest on the box with their contacts."""
    import os

    import pybullet_data

    from mbplugin.contact.mesh import convex_parts
    from mbplugin.errors import ParameterError

    bunny = trimesh.load(os.path.join(pybullet_data.getDataPath(), "bunny.obj"), force="mesh")
    bunny.apply_scale(0.1 / float(bunny.extents.max()))
    m = ContactModel()
    m.add_shape(Mesh(bunny), 0)
    m.add_shape(Box((0.1, 0.1, 0.01)), 1)
    m.set_default_law({"name": "hooke", "k": 1.0})
    with pytest.raises(ParameterError, match="convex_parts"):
        m.make_store()
    m.exclude(0, 1)
    m.make_store()  # the pair cannot meet: no complaint
    parts = convex_parts(bunny, resolution=20_000)
    assert len(parts) >= 3 and all(p.is_convex for p in parts)
    voxel = (bunny.bounding_box.volume / 20_000) ** (1 / 3)
    # trimesh's signed distance is > 0 inside: the smallest distance outside any part
    dist = np.min([-trimesh.proximity.signed_distance(p, bunny.vertices) for p in parts],
                  axis=0)
    assert dist.max() < 2 * voxel
    m = ContactModel()
    for part in parts:
        m.add_shape(Mesh(part), 0)
    m.add_shape(Box((0.1, 0.1, 0.01)), 1)
    m.set_default_law({"name": "hooke", "k": 1.0})
    d = 1e-4
    bottom = min(float(p.vertices[:, 2].min()) for p in parts)
    batch = m.detect(BodyState.create([[0.0, 0.0, 0.01 - bottom - d], [0.0, 0.0, 0.0]],
                                      mass=1.0, inertia=[1.0] * 3))
    assert len(batch) >= 1
    assert batch.delta.max() == pytest.approx(d, abs=1e-12)
    assert (batch.a == 1).all()  # the box (lower shape type) is side a
