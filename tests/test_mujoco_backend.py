"""The MuJoCo backend (``mbplugin.mujoco.MujocoContacts``) against outside references.

* Drop balls at MuJoCo's default 2 ms step, steel (Hertz's k written out here from E, nu, R)
  and soft (k = 1e5), with laws whose c_r is exact (Zhang & Sharf, Khatiwada): every bounce
  with v_in > 0.15 m/s has the c_r the exact impact analyser gives for that law, mass and
  impact speed with the weight pressing (``impact(..., press=m g)``), within 1e-3; the first
  impact happens at the free-fall time sqrt(2 h / g).
* A 5-ball stack placed at the static Hertz overlaps holds (< 1 um over 0.5 s) with contact
  forces (N - i) m g within 1 % at every host step.
* Unmanaged pairs are MuJoCo's, bit for bit: a scene stepped natively and with the backend
  managing one ball's pair with the floor gives the other bodies the same qpos to the bit;
  ``release()`` restores the model's contype/conaffinity arrays and MuJoCo collides the pair
  again.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from mujoco_world import balls_xml, body_z, hertz_column, world

from mbplugin.impact.bounces import cr_errors
from mbplugin.laws import make_law
from mbplugin.mujoco import MujocoContacts

G = 9.81


def _hertz_k(E: float, nu: float, R: float) -> float:
    """Hertz's k (N/m^1.5) of a sphere of radius R on a half-space of the same material:
    (4/3) E* sqrt(R), 1/E* = 2 (1 - nu^2) / E (Johnson, Contact Mechanics, 1985, Eq. 4.22)."""
    e_star = E / (2.0 * (1.0 - nu * nu))
    return 4.0 / 3.0 * e_star * math.sqrt(R)


@pytest.mark.parametrize("case", ["steel", "soft"])
@pytest.mark.parametrize("name", ["zhang_sharf", "khatiwada"])
def test_drop_ball_bounces_have_the_analysers_cr(case: str, name: str) -> None:
    if case == "steel":
        R, M, h, T = 0.0127, 0.066, 0.1, 1.0
        law: dict = {"name": name, "cr": 0.8}
        kw: dict = {"material": {"E": 2e11, "nu": 0.3}}
        k = _hertz_k(2e11, 0.3, R)
    else:
        R, M, h, T = 0.01, 0.05, 0.1, 1.2
        law = {"name": name, "cr": 0.6, "k": 1e5}
        kw = {}
        k = 1e5
    m, d = world(balls_xml([("ball", R, M, (0.0, 0.0, R + h))]))
    contacts = MujocoContacts(m, d, manage=["floor"], law=law, **kw)
    for _ in range(round(T / m.opt.timestep)):
        contacts.step()
    rows = contacts.bounces()
    errors = cr_errors(rows, make_law(name, k=k, cr=law["cr"]), M, G)
    assert len(errors) >= 3  # bounces with v_in > 0.15 m/s
    assert np.all(errors < 1e-3)
    # exact free flight: the first impact at the free-fall time (MuJoCo's semi-implicit
    # Euler alone would land ~one step early), with the free-fall speed
    assert float(rows["t_in"][0]) == pytest.approx(math.sqrt(2 * h / G), abs=1e-6)
    assert float(rows["v_in"][0]) == pytest.approx(math.sqrt(2 * G * h), rel=1e-6)


def test_five_ball_stack_holds_at_the_static_hertz_overlaps() -> None:
    N, R, M, K = 5, 0.01, 0.05, 1e5
    balls, d_static = hertz_column(N, R, M, K, G)  # Hertz: F = k d^1.5
    m, d = world(balls_xml(balls))
    contacts = MujocoContacts(m, d, manage=[f"b{i}" for i in range(N)],
                              law={"name": "hunt_crossley", "cr": 0.3, "k": K})
    z0 = np.array([body_z(m, d, f"b{i}") for i in range(N)])
    below = {int(mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"b{i}")): N - i
             for i in range(N)}
    for _ in range(250):  # 0.5 s
        info = contacts.step()
        assert info.contacts == N
        # each contact's upper body carries the N - i balls from it up
        for (_, upper), f in zip(info.bodies, info.normal_force, strict=True):
            assert f == pytest.approx(below[int(upper)] * M * G, rel=0.01)
        for (_, upper), dl in zip(info.bodies, info.delta, strict=True):
            i = N - below[int(upper)]
            assert dl == pytest.approx(d_static[i], rel=0.01)
    z1 = np.array([body_z(m, d, f"b{i}") for i in range(N)])
    assert np.max(np.abs(z1 - z0)) < 1e-6


_SCENE = balls_xml(
    [("a", 0.02, 0.05, (0.0, 0.0, 0.3)), ("b", 0.03, 0.1, (0.2, 0.0, 0.2))],
    extra='<body name="c" pos="0.5 0 0.1" euler="10 20 0"><freejoint/>'
          '<geom type="box" size="0.03 0.04 0.05" mass="0.3"/></body>'
          '<body name="d" pos="0.21 0 0.35"><freejoint/>'
          '<geom type="capsule" size="0.02 0.04" mass="0.1"/></body>')


def _run_scene(manage: bool, steps: int = 500) -> np.ndarray:
    m, d = world(_SCENE)
    d.qvel[6:9] = [0.3, 0.1, 0.0]  # ball b rolls, the capsule lands on it
    contacts = (MujocoContacts(m, d, manage=[("floor", "a")],
                               law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5})
                if manage else None)
    out = []
    for _ in range(steps):
        if contacts is not None:
            contacts.step()
        else:
            mujoco.mj_step(m, d)
        out.append(d.qpos.copy())
    return np.array(out)


def test_unmanaged_pairs_are_native_bit_for_bit() -> None:
    native = _run_scene(False)
    ours = _run_scene(True)
    # ball a (qpos 0:7) bounces on the law instead of MuJoCo's contact: not the same
    assert np.max(np.abs(native[:, :7] - ours[:, :7])) > 1e-3
    # ball b, the box and the capsule (landing on b): MuJoCo's own contacts, bit for bit
    assert np.array_equal(native[:, 7:], ours[:, 7:])


def test_release_gives_the_pairs_back_to_mujoco() -> None:
    m, d = world(_SCENE)
    bits = (m.geom_contype.copy(), m.geom_conaffinity.copy(), m.body_contype.copy(),
            m.body_conaffinity.copy())
    contacts = MujocoContacts(m, d, manage=[("floor", "a")],
                              law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5})
    a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "a")
    mujoco.mj_forward(m, d)
    d.qpos[2] = 0.015  # ball a 5 mm into the floor: MuJoCo reports no contact for the pair
    mujoco.mj_forward(m, d)
    assert not any(a in (c.geom1, c.geom2) for c in d.contact[: d.ncon])
    contacts.release()
    for before, now in zip(bits, (m.geom_contype, m.geom_conaffinity, m.body_contype,
                                  m.body_conaffinity), strict=True):
        assert np.array_equal(before, now)
    mujoco.mj_forward(m, d)
    assert any(a in (d.contact.geom1[i], d.contact.geom2[i]) for i in range(d.ncon))
