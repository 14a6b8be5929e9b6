"""Bodies started into or through a thin part, PyBullet (issues 18 and 21).

A ball or a box placed 60 % of the way through a thin part (slabs of 2 mm, 1 cm and 3 cm in three
orientations, a thin mesh plate, a thin cylinder disc, a thin wall link of a URDF) was accepted:
the old size check compares the overlap with half the smaller body's bounding size (a 1 m slab:
~0.7 m). Now refused at construction, naming the bodies, the overlap (PyBullet's own
``getClosestPoints`` distance) and the allowed width, the client left as it was (PyBullet's
response to the pair back on). A ball placed at its static Hertz overlap on the same parts is
accepted and its first step's force is Hertz's k delta^1.5 (k = 4/3 E* sqrt(R), delta from
``getClosestPoints``); thick parts keep accepting the same overlaps."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pybullet as p
import pytest
from thin_ball import DELTA_STATIC, SOFT, G, K, M, R

from mbplugin.bullet import BulletContacts
from mbplugin.errors import ParameterError

#: slab orientations: flat, tilted 30 deg about x, a vertical wall (90 deg about y)
TILTS = {"flat": (0.0, 0.0, 0.0), "tilted": (math.radians(30), 0.0, 0.0),
         "wall": (0.0, math.pi / 2, 0.0)}


@contextmanager
def world(normal: np.ndarray) -> Iterator[int]:
    """A DIRECT client with gravity G against ``normal`` (the slab's outward normal)."""
    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(*(-G * normal), physicsClientId=cid)
        yield cid
    finally:
        p.disconnect(physicsClientId=cid)


def _normal(tilt: str) -> tuple[np.ndarray, list[float]]:
    q = p.getQuaternionFromEuler(TILTS[tilt])
    n = np.array(p.getMatrixFromQuaternion(q)).reshape(3, 3)[:, 2]
    return n, list(q)


def _slab(cid: int, kind: str, t: float, q: list[float], tmp: Path) -> int:
    """A static part 1 m across and ``t`` thick along its local z, centred at the origin."""
    if kind == "box":
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.5, 0.5, t / 2],
                                     physicsClientId=cid)
        return p.createMultiBody(0, col, baseOrientation=q, physicsClientId=cid)
    if kind == "mesh":
        import trimesh

        path = tmp / f"plate_{t:g}.obj"
        trimesh.creation.box(extents=[1.0, 1.0, t]).export(path)
        col = p.createCollisionShape(p.GEOM_MESH, fileName=str(path), physicsClientId=cid)
        return p.createMultiBody(0, col, baseOrientation=q, physicsClientId=cid)
    if kind == "cylinder":  # a disc of radius 0.5 m from a URDF
        path = tmp / f"disc_{t:g}.urdf"
        path.write_text(
            f'<robot name="disc"><link name="disc"><inertial><mass value="0"/><inertia '
            f'ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry>'
            f'<cylinder radius="0.5" length="{t}"/></geometry></collision></link></robot>')
        return p.loadURDF(str(path), baseOrientation=q, useFixedBase=True, physicsClientId=cid)
    raise ValueError(kind)


def _ball(cid: int, pos: np.ndarray, r: float = R) -> int:
    col = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=cid)
    return p.createMultiBody(M, col, basePosition=list(pos), physicsClientId=cid)


def _cube(cid: int, pos: np.ndarray, q: list[float], h: float = 0.02) -> int:
    col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[h] * 3, physicsClientId=cid)
    return p.createMultiBody(M, col, basePosition=list(pos), baseOrientation=q,
                             physicsClientId=cid)


def _host_overlap(cid: int, a: int, b: int, link_b: int = -1) -> float:
    """PyBullet's own overlap of a and b (-getClosestPoints' smallest distance)."""
    pts = p.getClosestPoints(a, b, 0.05, linkIndexB=link_b, physicsClientId=cid)
    return -min(pt[8] for pt in pts)


def _host_width(cid: int, part: int, n: np.ndarray, link: int = -1,
                at: np.ndarray | None = None) -> float:
    """The part's thickness along ``n`` through ``at`` as PyBullet collides it (a mesh's
    collision margin included): 0.4 m minus the gaps of two 1 cm probe balls 0.2 m either side."""
    at = np.zeros(3) if at is None else at
    gaps = []
    for side in (1.0, -1.0):
        probe = _ball(cid, at + side * 0.2 * n, r=0.01)
        pts = p.getClosestPoints(probe, part, 1.0, linkIndexB=link, physicsClientId=cid)
        gaps.append(min(pt[8] for pt in pts))
        p.removeBody(probe, physicsClientId=cid)
    return 0.4 - 2 * 0.01 - sum(gaps)


def _refused(cid: int, ball: int, other: int, law: object, link: int = -1) -> str:
    """The construction's error; the pair's native response is back on afterwards."""
    host = _host_overlap(cid, ball, other, link)
    with pytest.raises(ParameterError) as err:
        BulletContacts(cid, manage=[(ball, other)], law=law, material=SOFT)
    msg = str(err.value)
    said = float(re.search(r"overlap by ([0-9.e+-]+) m", msg).group(1))
    assert said == pytest.approx(host, rel=2e-3)  # the overlap PyBullet measures
    assert "width" in msg and f"body {ball}" in msg and f"body {other}" in msg
    p.performCollisionDetection(physicsClientId=cid)
    assert p.getContactPoints(ball, other, physicsClientId=cid)  # PyBullet's response back
    return msg


@pytest.mark.parametrize("tilt", sorted(TILTS))
@pytest.mark.parametrize("t", [0.002, 0.01, 0.03])
@pytest.mark.parametrize("kind", ["box", "mesh", "cylinder"])
def test_ball_started_60_percent_through_a_thin_part_is_refused(kind, t, tilt, tmp_path):
    """Accepted on main (overlap 0.6 t against ~0.35 m); refused now, the allowed overlap
    t / 2 named."""
    n, q = _normal(tilt)
    with world(n) as cid:
        slab = _slab(cid, kind, t, q, tmp_path)
        w = _host_width(cid, slab, n)  # t, or t + 2 margins for a mesh
        assert t * (1 - 1e-9) <= w < t + 0.005
        ball = _ball(cid, n * (w / 2 + R - 0.6 * w))
        msg = _refused(cid, ball, slab, "hertz")
        allowed = float(re.search(r"at most ([0-9.e+-]+) m", msg).group(1))
        assert allowed == pytest.approx(w / 2, rel=2e-3)


@pytest.mark.parametrize("kind", ["box", "mesh", "cylinder"])
def test_cube_started_60_percent_through_a_thin_part_is_refused(kind, tmp_path):
    n, q = _normal("tilted")
    t = 0.01
    with world(n) as cid:
        slab = _slab(cid, kind, t, q, tmp_path)
        w = _host_width(cid, slab, n)
        cube = _cube(cid, n * (w / 2 + 0.02 - 0.6 * w), q)
        _refused(cid, cube, slab, {"name": "hertz", "k": 1e8})


@pytest.mark.parametrize("tilt", sorted(TILTS))
@pytest.mark.parametrize("kind", ["box", "mesh", "cylinder"])
def test_ball_at_its_static_overlap_on_a_thin_part_gets_hertz_force(kind, tilt, tmp_path):
    """The static Hertz overlap (0.33 mm) on a 2 mm part is valid: accepted, and the first
    step's normal force is Hertz's k delta^1.5 at PyBullet's own overlap, within 1 %."""
    n, q = _normal(tilt)
    t = 0.002
    with world(n) as cid:
        slab = _slab(cid, kind, t, q, tmp_path)
        ball = _ball(cid, n * (_host_width(cid, slab, n) / 2 + R - DELTA_STATIC))
        delta = _host_overlap(cid, ball, slab)
        assert delta == pytest.approx(DELTA_STATIC, rel=1e-2)
        contacts = BulletContacts(cid, manage=[(ball, slab)], law="hertz", material=SOFT)
        contacts.step()
        force = float(np.sum(contacts.last.normal_force))
        assert force == pytest.approx(K * delta**1.5, rel=1e-2)


def test_thick_parts_and_a_disc_side_accept_the_same_overlap(tmp_path):
    """0.6 of 1 cm (6 mm) into a 20 cm thick box, and into the side of a 1 cm disc (its width
    along the radial normal is 1 m): accepted, as on main."""
    n, q = _normal("flat")
    with world(n) as cid:
        thick = _slab(cid, "box", 0.2, q, tmp_path)
        ball = _ball(cid, n * (0.1 + R - 0.006))
        BulletContacts(cid, manage=[(ball, thick)], law="hertz", material=SOFT).release()
    side = np.array([1.0, 0.0, 0.0])
    with world(side) as cid:
        disc = _slab(cid, "cylinder", 0.01, q, tmp_path)
        ball = _ball(cid, side * (0.5 + R - 0.006))
        assert _host_overlap(cid, ball, disc) > 0.005  # beyond half the disc's thickness
        BulletContacts(cid, manage=[(ball, disc)], law="hertz", material=SOFT).release()


def test_ball_started_through_a_thin_wall_link_of_a_urdf_is_refused(tmp_path):
    """A fixed-base URDF with a 5 mm wall on a revolute joint: a ball 60 % through the wall is
    refused, naming the link."""
    t = 0.005
    urdf = tmp_path / "walled.urdf"
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" '
                'ixy="0" ixz="0" iyz="0"/></inertial>')
    urdf.write_text(
        f'<robot name="walled"><link name="base">{inertial}</link>'
        f'<link name="wall">{inertial}<collision><origin xyz="0 0 0.5"/><geometry><box '
        f'size="0.5 {t} 0.5"/></geometry></collision></link>'
        '<joint name="hinge" type="revolute"><parent link="base"/><child link="wall"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>'
        '</robot>')
    with world(np.array([0.0, 0.0, 1.0])) as cid:
        robot = p.loadURDF(str(urdf), useFixedBase=True, physicsClientId=cid)
        y = np.array([0.0, 1.0, 0.0])
        w = _host_width(cid, robot, y, link=0, at=np.array([0.0, 0.0, 0.5]))
        assert w == pytest.approx(t, rel=1e-6)
        ball = _ball(cid, np.array([0.0, w / 2 + R - 0.6 * w, 0.5]))
        msg = _refused(cid, ball, robot, "hertz", link=0)
        assert "'wall'" in msg


@pytest.mark.parametrize(("material", "through"), [(SOFT, True), ({"E": 2e11, "nu": 0.3}, False)])
def test_a_fast_ball_through_a_thin_slab_mid_run_is_said_once(material, through, tmp_path):
    """A ball at 50 m/s onto a 1 cm slab at PyBullet's 1/240 s step: a soft contact
    (E = 1e7 Pa) lets it through (PyBullet's own position ends below the slab) and the run says
    so once (PassThroughWarning); steel bounces it back, without a word."""
    import warnings

    from mbplugin.contact.sizes import PassThroughWarning

    n, q = _normal("flat")
    with world(n) as cid:
        p.setGravity(0, 0, 0, physicsClientId=cid)
        slab = _slab(cid, "box", 0.01, q, tmp_path)
        ball = _ball(cid, n * (0.005 + R + 0.3))
        p.resetBaseVelocity(ball, [0, 0, -50.0], physicsClientId=cid)
        contacts = BulletContacts(cid, manage=[(ball, slab)], law="hertz", material=material)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(60):
                contacts.step()
        contacts.sync()
        z = p.getBasePositionAndOrientation(ball, physicsClientId=cid)[0][2]
        said = [w for w in caught if issubclass(w.category, PassThroughWarning)]
        assert (z < -0.005 - R) == through and (z > 0.005 + R) == (not through)
        assert len(said) == (1 if through else 0)
        if through:
            assert f"body {ball}" in str(said[0].message) and "0.005 m" in str(said[0].message)
            assert said[0].filename == __file__  # points at the user's step() call
