"""A fully managed floor (``manage=["floor"]``) under a polyhedral body: only the corners that
touch, or can close in the step by their own motion, are contacts (hosts/detection.py
``prune(static=True)``), not every hull corner within the global predictive margin set by the
fastest body of the scene.

Outside-world values: the static equilibrium of a 64-sided prism (a ``mesh`` geom of a
cylinder's rim vertices: MuJoCo and the contact layer collide its convex hull) lying on a side
face: the
face's four corners (two per end) carry m g / 4 each by symmetry, each at the law's static
overlap (Hunt-Crossley at rest: F = k delta^1.5, Hunt & Crossley 1975, so delta = (F / k)^(2/3)),
while a ball flies fast far away (v = 5 m/s: a global margin of ~20 mm at 2 ms, which admits
~40 of the prism's rim corners).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from mujoco_world import prism_asset, world

from mbplugin.mujoco import MujocoContacts

CYLINDER_SECTIONS = 64

G, R, HALF, K = 9.81, 0.05, 0.1, 1e7
#: half a section about the axis: a side face of the prism down, not an edge
TURN = 180.0 / CYLINDER_SECTIONS


def _scene() -> str:
    return (f'<mujoco><option timestep="0.002" gravity="0 0 {-G}"/>'
            f'{prism_asset("prism", R, HALF, CYLINDER_SECTIONS)}<worldbody>'
            '<geom name="floor" type="plane" size="5 5 .1"/>'
            '<body name="cyl" pos="0 0 0.1"><freejoint/>'
            f'<geom name="cyl" type="mesh" mesh="prism" euler="90 0 {TURN}"/></body>'
            '<body name="ball" pos="1 0 2"><freejoint/>'
            '<geom name="ball" type="sphere" size="0.02" mass="0.05"/></body>'
            "</worldbody></mujoco>")


def test_cylinder_on_its_side_rests_on_its_four_face_corners_at_the_static_overlap() -> None:
    m, d = world(_scene())
    mass = float(m.body_mass[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "cyl")])
    f_corner = mass * G / 4.0
    delta = (f_corner / K) ** (2.0 / 3.0)
    # the face's corners at the static overlap: the face lies r cos(pi / sections) below the
    # axis
    d.qpos[2] = R * math.cos(math.pi / CYLINDER_SECTIONS) - delta
    d.qvel[6] = 5.0  # the ball (second free joint) flies along x
    contacts = MujocoContacts(m, d, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.3, "k": K})
    try:
        z0 = float(d.qpos[2])
        for _ in range(150):  # 0.3 s: the ball stays > 1 m above the floor
            info = contacts.step()
            assert info.contacts == 4
            assert float(np.sum(info.normal_force)) == pytest.approx(mass * G, rel=0.01)
            np.testing.assert_allclose(info.normal_force, f_corner, rtol=0.01)
            np.testing.assert_allclose(info.delta, delta, rtol=0.01)
        assert abs(float(d.qpos[2]) - z0) < 1e-6
        assert float(d.qpos[9]) > 1.0  # (the ball: its height)
    finally:
        contacts.release()



def _drop(ball: bool) -> np.ndarray:
    """The cylinder's qpos (steps, 7) dropped 2 cm onto its side face, 0.15 s (landing at
    0.064 s, a bounce), with the ball flying at 5 m/s far away or without the ball."""
    xml = _scene()
    if not ball:
        xml = xml[:xml.index('<body name="ball"')] + "</worldbody></mujoco>"
    m, d = world(xml)
    d.qpos[2] = R * math.cos(math.pi / CYLINDER_SECTIONS) + 0.02
    if ball:
        d.qvel[6] = 5.0
    contacts = MujocoContacts(m, d, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.3, "k": K})
    out = []
    try:
        for _ in range(75):
            contacts.step()
            out.append(d.qpos[:7].copy())
    finally:
        contacts.release()
    return np.array(out)


def test_a_fast_body_far_away_does_not_change_a_landing() -> None:
    """Bodies that do not touch do not interact: the cylinder lands and bounces the same with
    the fast ball in the scene (the global margin ~20 mm: every rim corner within it a contact
    before this prune, and the landing's onset then found at a step boundary) as without it."""
    with_ball, alone = _drop(True), _drop(False)
    assert float(np.min(alone[:, 2])) < R * math.cos(math.pi / CYLINDER_SECTIONS)  # it landed
    np.testing.assert_allclose(with_ball, alone, rtol=0, atol=1e-9)


def test_a_face_landing_records_free_fall_at_its_corners_and_later_corners_on_their_own() -> None:
    """The bounce record of a face landing (``bounces()``: one row per contact, i.e. per
    corner). Dropped h = 2 cm onto its side face, the face's four corners touch at free fall's
    t = sqrt(2 h / g) with v = sqrt(2 g h); the four neighbouring rim corners, r (cos(pi / n) -
    cos(3 pi / n)) = 0.48 mm higher, touch later and slower: no sooner than the face needs to
    sink that far at no more than free-fall speed, and once the contact has braked the body."""
    h = 0.02
    xml = _scene()
    m, d = world(xml[:xml.index('<body name="ball"')] + "</worldbody></mujoco>")
    d.qpos[2] = R * math.cos(math.pi / CYLINDER_SECTIONS) + h
    contacts = MujocoContacts(m, d, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.3, "k": K})
    try:
        for _ in range(40):  # 0.08 s: landed (0.064 s) and lifted off
            contacts.step()
        b = contacts.bounces()
    finally:
        contacts.release()
    t0, v0 = math.sqrt(2.0 * h / G), math.sqrt(2.0 * G * h)
    assert len(b) == 8
    # one onset, to rounding: MuJoCo keeps mesh vertices in float32 (~3e-9 m here, ~5e-9 s)
    face = b[b["t_in"] < b["t_in"].min() + 1e-6]
    assert len(face) == 4
    np.testing.assert_allclose(face["v_in"], v0, rtol=1e-3)
    np.testing.assert_allclose(face["t_in"], t0, rtol=0, atol=1e-5)  # 1/200 of the 2 ms step
    later = b[b["t_in"] > t0 + 1e-5]
    assert len(later) == 4
    rise = R * (math.cos(math.pi / CYLINDER_SECTIONS) - math.cos(3.0 * math.pi / CYLINDER_SECTIONS))
    dt = later["t_in"] - t0
    assert np.all(dt * (v0 + G * dt) >= rise)
    assert np.all(later["v_in"] < v0 * (1.0 - 1e-3))
    assert np.all(np.diff(b["t_out"]) >= 0)  # the rows in order of separation
