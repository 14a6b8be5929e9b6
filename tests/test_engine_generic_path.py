"""The engine's general contact path (pairs without compiled kernels: meshes, capsules, ...).

Inside a step only the narrow phase runs on known pairs; the broad phase runs at the start and
again only when a body moved farther than the watch margin allows. A mesh ball bounces like the
primitive sphere it approximates.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import trimesh

from mbplugin.impact import impact
from mbplugin.laws import make_law
from mbplugin.scene import build_scene

R, H, G, E, NU, RHO = 0.01, 0.1, 9.81, 210e9, 0.3, 7800.0


def _drop(shape: dict, duration: float, law: dict, height: float = H,
          quat: list[float] | None = None) -> dict:
    ball = {"name": "ball", "material": "steel", "position": [0.0, 0.0, R + height], **shape}
    if quat is not None:
        ball["orientation"] = quat
    return {
        "scene": {"duration": duration},
        "world": {"gravity": [0.0, 0.0, -G]},
        "materials": {"steel": {"E": E, "nu": NU, "density": RHO}},
        "integrator": {"method": "adaptive", "rtol": 1e-9},
        "output": {"contacts": False},
        "bodies": [{"name": "floor", "shape": "plane", "fixed": True, "material": "steel"},
                   ball],
        "contact": law,
    }


def test_mesh_ball_bounces_like_the_sphere(tmp_path: Path) -> None:
    """A steel icosphere (subdivision 3, 642 vertices, R = 1 cm) dropped 10 cm on a steel plane
    with the Hunt-Crossley law (target c_r 0.8, Hertz k from the materials): its first bounce
    has the c_r of the primitive sphere and of the impact analyser at its own impact speed,
    mass and stiffness (press = m g), within 1e-6.

    Tolerance. The icosphere's lowest point is a vertex on the sphere (the pole), so the
    chordal error does not move the onset (same impact speed, to the float32 rounding of STL)
    and the impact is central; it changes the stiffness only, through the curvature radius
    fitted at the pole (0.6 % below R, k by 0.3 %). Hunt-Crossley's c_r depends on its damping
    factor alone, not on k (Corral et al. 2021, Eq. 5.23, dimensionless form), except through
    the weight acting during the contact: relative effect g t_c / v_in = 5e-4, changed by
    (2/5)(0.3 %) with t_c ~ k^(-2/5), i.e. 6e-7. The integration error at rtol 1e-9 is below
    1e-7 (the primitive drop ball matches the analyser to 1e-6 at rtol 1e-8).

    The broad phase runs three times in the whole run (pre-flight, start, first watch), not per
    right-hand side (hundreds of evaluations)."""
    trimesh.creation.icosphere(subdivisions=3, radius=R).export(tmp_path / "ball.stl")
    law = {"law": "hunt_crossley", "params": {"cr": 0.8}}
    mesh_scene = build_scene(_drop({"shape": "mesh", "file": "ball.stl", "radius": R}, 0.1432,
                                   law), base_dir=tmp_path)
    model = mesh_scene.world.contacts.model
    calls0 = model.broad_phase_calls
    mesh = mesh_scene.run()
    broad = model.broad_phase_calls - calls0
    sphere = build_scene(_drop({"shape": "sphere", "radius": R}, 0.1432, law)).run()
    bm, bs = mesh.bounces[0], sphere.bounces[0]
    # STL stores float32 vertices: the pole sits ~1e-9 R off the sphere (v_in by ~1e-9)
    assert bm["v_in"] == pytest.approx(math.sqrt(2 * G * H), rel=1e-8)
    assert bm["v_in"] == pytest.approx(bs["v_in"], rel=1e-8)
    assert bm["cr"] == pytest.approx(bs["cr"], abs=1e-6)
    # the analyser at the mesh ball's speed, mass and the stiffness of its pole vertex
    m = float(mesh_scene.world.bodies.mass[1])
    k = float(model.detect(mesh_scene.world.contacts.state_from_y(
        mesh_scene.world.bodies.state_vector()), margin=1.0).k_hertz[0])
    assert k == pytest.approx(4 / 3 * E / (2 * (1 - NU**2)) * math.sqrt(R), rel=0.01)
    ref = impact(make_law("hunt_crossley", k=k, n=1.5, cr=0.8), m, bm["v_in"], press=m * G)
    assert bm["cr"] == pytest.approx(ref.cr_out, abs=1e-6)
    # detection inside the steps is narrow-phase only
    assert mesh.summary()["rhs_evaluations"] > 300
    assert broad <= 3


def test_broad_phase_reruns_only_after_a_far_move() -> None:
    """A horizontal capsule (r = 1 cm, half length 3 cm) dropped 10 cm with a 2 cm watch
    margin: the broad phase reruns as it falls (every few mm of travel), fewer times than
    there are accepted steps, and the onset is still located as an event: both ends land
    together and each bounces as the analyser's impact of half the mass (Zhang & Sharf 2004
    law, target c_r 0.5, moved by the weight acting during the contact)."""
    s = 1 / math.sqrt(2.0)
    doc = _drop({"shape": "capsule", "radius": R, "half_length": 0.03}, 0.1432,
                {"law": "zhang_sharf", "params": {"cr": 0.5}}, quat=[s, s, 0.0, 0.0])
    doc["integrator"]["max_step"] = 1e-3  # at most 1.4 mm of travel per step
    scene = build_scene(doc)
    contacts = scene.world.contacts
    contacts.watch_margin = 0.02
    model = contacts.model
    calls0 = model.broad_phase_calls
    res = scene.run()
    calls = model.broad_phase_calls - calls0
    assert len(res.bounces) == 2
    # by symmetry each end carries half the capsule: the analyser's impact of m/2 pressed by
    # m g/2 on the Hertz spring of a radius-R sphere on the plane
    m = float(scene.world.bodies.mass[1])
    k = 4 / 3 * E / (2 * (1 - NU**2)) * math.sqrt(R)
    for b in res.bounces:
        assert b["t"] == pytest.approx(math.sqrt(2 * H / G), rel=1e-9)  # onset located
        ref = impact(make_law("zhang_sharf", k=k, n=1.5, cr=0.5), m / 2, b["v_in"],
                     press=m * G / 2)
        assert b["cr"] == pytest.approx(ref.cr_out, abs=1e-6)
    steps = res.summary()["steps"]
    # 10 cm of fall / (watch margin - force margin) / 4 per rerun: about 20
    assert 5 <= calls < steps


def test_mesh_ball_on_a_box_through_python_fcl(tmp_path: Path) -> None:
    """The icosphere of the test above dropped on a fixed steel box instead of a plane: the
    mesh-box pair goes through python-fcl, which reports a pair only once it overlaps. It is
    watched from the start all the same (the broad phase's candidate pairs, not only the
    reported contacts), so the onset is located at the free-fall time (to STL's float32
    rounding, as above) and the bounce has the sphere-on-box c_r within 2e-6: the same
    reasons as on the plane (6e-7) plus the depth of fcl's EPA, measured 4e-7 here."""
    trimesh.creation.icosphere(subdivisions=3, radius=R).export(tmp_path / "ball.stl")
    law = {"law": "hunt_crossley", "params": {"cr": 0.8}}
    table = {"name": "table", "shape": "box", "half_extents": [0.1, 0.1, 0.01], "fixed": True,
             "position": [0.0, 0.0, -0.01], "material": "steel"}
    out = []
    for shape in ({"shape": "mesh", "file": "ball.stl", "radius": R},
                  {"shape": "sphere", "radius": R}):
        doc = _drop(shape, 0.1432, law)
        doc["bodies"][0] = table
        out.append(build_scene(doc, base_dir=tmp_path).run().bounces)
    (mesh,), (sphere,) = out
    assert mesh["t"] == pytest.approx(math.sqrt(2 * H / G), rel=1e-8)
    assert mesh["cr"] == pytest.approx(sphere["cr"], abs=2e-6)
