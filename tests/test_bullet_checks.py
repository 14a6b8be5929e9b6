"""BulletContacts checks everything at construction, before anything changes in the client
(issue 20, part 3): a refused construction leaves PyBullet's own contact response on (measured
by native PyBullet stepping the same world), messages name PyBullet bodies, raw TypeErrors and
pybullet.errors become clear errors, and ``sync()`` every step keeps the exact parabola."""

from __future__ import annotations

import pybullet as p
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.errors import ParameterError

G = 9.81
STEEL = {"E": 2e11, "nu": 0.3}
HC = {"name": "hunt_crossley", "cr": 0.8}


def _sphere(cid: int, z: float, r: float = 0.05, m: float = 1.0) -> int:
    col = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=cid)
    body = p.createMultiBody(m, col, basePosition=[0, 0, z], physicsClientId=cid)
    p.changeDynamics(body, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=cid)
    return body


def _box(cid: int, z: float, h: float = 0.05) -> int:
    col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[h] * 3, physicsClientId=cid)
    return p.createMultiBody(1.0, col, basePosition=[0, 0, z], physicsClientId=cid)


def _z(cid: int, body: int) -> float:
    return p.getBasePositionAndOrientation(body, physicsClientId=cid)[0][2]


@pytest.mark.parametrize(("law", "word"), [
    (HC, "has no 'k'"),  # Hertz's k from the materials needs a radius
    ({"name": "kuwabara_kono", "k": 1e9, "eta1": 1.0, "zeta1": 1.0}, "needs the contact's"),
])
def test_box_on_ground_without_radius_refused_at_construction_client_untouched(law, word):
    """A box on managed ground with a law without k raised at step 68 naming "bodies 0 and 1",
    with native collision already off (the box fell to -6.7 m). Now: refused at construction,
    naming the PyBullet bodies, and the box rests on the ground as native PyBullet has it."""
    with ground_world(G) as (cid, plane):
        box = _box(cid, 0.1)
        with pytest.raises(ParameterError) as err:
            BulletContacts(cid, manage=[plane], law=law, material=STEEL)
        msg = str(err.value)
        assert f"body {plane} 'plane'" in msg and f"body {box}" in msg and word in msg
        assert "bodies 0 and 1" not in msg
        for _ in range(240):
            p.stepSimulation(physicsClientId=cid)
        # native PyBullet: the 5 cm box rests on the plane (its centre 5 cm up, within the
        # solver's slop), not fallen through
        assert _z(cid, box) == pytest.approx(0.05, abs=2e-3)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"material": {"E": 2e11}}, ("material", "missing 'nu'")),
    ({"material": {"e": 2e11, "nu": 0.3}}, ("material", "unknown key 'e'", "E, nu")),
    ({"material": STEEL, "friction": {"muu": 0.3}}, ("friction", "'muu'", "did you mean 'mu'")),
    ({"material": STEEL, "stick": {"kt": 1e4, "mu": 0.5}}, ("stick", "'kt'", "'k_t'")),
    ({"material": STEEL, "materials": {"BALL": {"E": 2e11}}}, ("materials[", "missing 'nu'")),
    ({"material": {"E": -2e11, "nu": 0.3}}, ("material: 'E'", "(0, inf)")),
    ({"material": STEEL, "flat_box": -1}, ("flat_box = -1", "(0, inf]")),
    ({"material": STEEL, "flat_box": float("nan")}, ("flat_box",)),
])
def test_bad_arguments_are_clear_errors(kwargs, words):
    with ground_world(G) as (cid, plane):
        ball = _sphere(cid, 1.0)
        if "materials" in kwargs:
            kwargs = {**kwargs, "materials": {ball: kwargs["materials"]["BALL"]}}
        with pytest.raises(ParameterError) as err:
            BulletContacts(cid, manage=[plane], law=HC, **kwargs)
        for w in words:
            assert w in str(err.value), (w, str(err.value))


def test_pairs_that_manage_nothing_are_refused():
    with ground_world(G) as (cid, plane):
        a, b = _sphere(cid, 1.0), _sphere(cid, 2.0)
        with pytest.raises(ParameterError, match=r"manage item \(1, 1\).*with itself"):
            BulletContacts(cid, manage=[(a, a)], law=HC, material=STEEL)
        with pytest.raises(ParameterError, match=r"pair_laws\[0\].*'plane'.*not managed"):
            BulletContacts(cid, manage=[(a, b)], law=HC, material=STEEL,
                           pair_laws=[({"name": "hertz", "k": 1e8}, (a, plane))])
        # the client is untouched: the balls fall onto the plane natively and rest on it
        for _ in range(600):
            p.stepSimulation(physicsClientId=cid)
        assert _z(cid, a) == pytest.approx(0.05, abs=2e-3)


@pytest.mark.parametrize("change", ["removeBody", "disconnect"])
def test_step_after_the_client_changed(change):
    """``step()`` after ``removeBody`` or a disconnect raised a raw pybullet.error."""
    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -G, physicsClientId=cid)
        ground = p.createMultiBody(0.0, p.createCollisionShape(
            p.GEOM_PLANE, physicsClientId=cid), physicsClientId=cid)
        ball = _sphere(cid, 1.0)
        contacts = BulletContacts(cid, manage=[ground], law=HC, material=STEEL)
        contacts.step()
        if change == "removeBody":
            p.removeBody(ball, physicsClientId=cid)
            words = (f"body id {ball} was removed", "removeBody")
        else:
            p.disconnect(physicsClientId=cid)
            words = (f"client {cid} was disconnected",)
        for call in (contacts.step, contacts.sync):
            with pytest.raises(ParameterError) as err:
                call()
            for w in words:
                assert w in str(err.value)
    finally:
        if p.isConnected(physicsClientId=cid):
            p.disconnect(physicsClientId=cid)


def test_sync_every_step_keeps_the_exact_parabola():
    """A ball in free flight with ``sync()`` after every step sits on z0 - g t^2 / 2 at every
    host step (every other position was g dt^2 / 2 below it)."""
    dt = 1.0 / 240.0
    with ground_world(G, dt) as (cid, plane):
        z0 = 5.0
        ball = _sphere(cid, z0)
        contacts = BulletContacts(cid, manage=[plane], law={**HC, "k": 1e7})
        for i in range(1, 25):
            contacts.step()
            contacts.sync()
            t = i * dt
            assert _z(cid, ball) == pytest.approx(z0 - 0.5 * G * t * t, abs=1e-12), i


def test_a_ball_below_the_ground_is_refused_not_stepped_forever():
    """A ball 0.5 m below the ground: its first host step never ended (the contact's overlap,
    40 radii, is far outside any law). Refused at construction; PyBullet still reports the
    pair's native contact (its response is back on)."""
    with ground_world(G) as (cid, plane):
        ball = _sphere(cid, -0.5, r=0.0127, m=0.066)
        with pytest.raises(ParameterError, match=r"'plane' and body \d+ overlap by 0.5127 m"):
            BulletContacts(cid, manage=[plane], law={**HC, "k": 1e10})
        p.performCollisionDetection(physicsClientId=cid)
        assert p.getContactPoints(ball, plane, physicsClientId=cid)
