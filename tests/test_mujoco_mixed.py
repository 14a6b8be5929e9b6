"""MuJoCo as a host with mixed contacts: a managed body that MuJoCo itself also constrains (a
native contact with an unmanaged body above it, an equality constraint).

Expected values are closed forms (the law's static overlap (F / k)^(2/3) of F = k delta^1.5
for the weight the body carries: its own and every body resting on it, shared by a box
face's four corners; velocity zero at rest) and native MuJoCo's own outcome in the same test
(the unmanaged contact's resting penetration, MuJoCo's solref/solimp, in a fully native run
of the same stack). Before the fix the managed body's free acceleration was MuJoCo's smooth
acceleration alone (without the native contact's force): the lower box of the stack rested
1-5 % short of its static overlap with a velocity of -2 cm/s that the position correction took
back every step.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco_world import world

from mbplugin.mujoco import MujocoContacts

G, K = 9.81, 1e7
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": K}  # F = k delta^1.5 at rest
M_LOW, M_HIGH = 1.0, 3.0  # kg
STEPS = 900  # host steps of 2 ms to settle


def _stack(shape: str, n: int, masses: list[float]) -> str:
    """n bodies of ``shape`` ("box": .2 x .2 x .1 m, "sphere": r = .05 m) stacked on the floor
    plane, each a free body (geom ``g0`` the lowest), touching at the start."""
    size = ".1 .1 .05" if shape == "box" else ".05"
    bodies = "".join(
        f'<body name="b{i}" pos="0 0 {0.05 + 0.1 * i:.3f}"><freejoint/><geom name="g{i}" '
        f'type="{shape}" size="{size}" mass="{masses[i]}"/></body>' for i in range(n))
    return ('<mujoco><option timestep="0.002"/><worldbody>'
            f'<geom name="floor" type="plane" size="5 5 .1"/>{bodies}</worldbody></mujoco>')


def _native_penetrations(m: mujoco.MjModel, d: mujoco.MjData, geom: str) -> np.ndarray:
    """MuJoCo's own contacts of ``geom`` with other unmanaged geoms: penetrations -dist (m),
    sorted (after mj_forward at the current state)."""
    mujoco.mj_forward(m, d)
    g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, geom)
    fl = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    return np.sort([-d.contact.dist[i] for i in range(d.ncon)
                    if g in d.contact.geom[i] and fl not in d.contact.geom[i]])


@pytest.mark.parametrize(("shape", "n", "corners"), [("box", 2, 4), ("sphere", 3, 1)])
def test_managed_ground_pair_under_a_native_stack_rests_at_the_static_overlap(
        shape: str, n: int, corners: int) -> None:
    """Only the floor-lowest-body pair managed, the pairs above native MuJoCo's: the lowest
    body carries every weight, (sum m) g shared by its corners (4 for a box face, 1 for a
    sphere), at the law's static overlap ((sum m) g / (corners k))^(2/3) within 1e-3 and at
    rest; the native contact above it at MuJoCo's own resting penetration (a fully native run
    of the same stack) within 1e-6."""
    masses = [M_LOW] + [M_HIGH] * (n - 1)
    xml = _stack(shape, n, masses)
    m, d = world(xml)
    c = MujocoContacts(m, d, manage=[("floor", "g0")], law=LAW)
    for _ in range(STEPS):  # the sphere stack rings: overlap off 1e-2 at 300 steps, 1e-5 at 900
        info = c.step()
    w = sum(masses) * G
    ds = (w / corners / K) ** (2 / 3)
    assert info.contacts == corners
    assert np.asarray(info.delta) == pytest.approx(ds, rel=1e-3)
    assert float(np.sum(info.normal_force)) == pytest.approx(w, rel=1e-3)
    assert np.max(np.abs(d.qvel[:6])) < 1e-4  # the managed body at rest
    assert np.max(np.abs(d.qvel)) < 1e-4
    # the native contact above it: as in a fully native run of the same stack
    mn, dn = world(xml)
    for _ in range(STEPS):
        mujoco.mj_step(mn, dn)
    native = _native_penetrations(mn, dn, "g1")
    ours = _native_penetrations(m, d, "g1")
    assert len(ours) == len(native) > 0
    assert ours == pytest.approx(native, rel=1e-6)


def test_managed_box_under_a_native_box_its_end_overlaps_predicted_as_mujoco_has_them() -> None:
    """The managed box under a native box: in the steps where its end overlaps are predicted
    rather than read (MuJoCo's constraint acceleration of the step against the one the free
    acceleration took, ``mbplugin.mujoco.native.constraint_error``; contact points moving by
    at most PREDICT_MAX), the prediction equals the overlaps detected at MuJoCo's own end
    state (``mj_step2``'s qpos, read on a scratch MjData) within 1e-15 m (measured 1.4e-17),
    in at least 200 of 300 host steps (the stack touches from the start)."""
    m, d = world(_stack("box", 2, [M_LOW, M_HIGH]))
    c = MujocoContacts(m, d, manage=[("floor", "g0")], law=LAW)
    gaps: list[float] = []
    settled = c.loop.settled

    def check(now: np.ndarray) -> bool:  # called with the predicted overlaps (K,) m
        gaps.append(float(np.max(np.abs(now - c.loop.end_overlaps(c.host.end_state())))))
        return settled(now)

    c.loop.settled = check
    for _ in range(300):
        c.step()
    assert len(gaps) >= 200
    assert max(gaps) < 1e-15


def test_managed_ball_carrying_a_welded_load_rests_at_the_static_overlap() -> None:
    """A ball on the managed floor carrying a load held by a weld equality (MuJoCo's soft
    constraint; the load collides with nothing): the contact carries both weights, at the
    static overlap ((m1 + m2) g / k)^(2/3) within 1e-3, and the ball is at rest."""
    m, d = world('<mujoco><option timestep="0.002"/><worldbody>'
                 '<geom name="floor" type="plane" size="5 5 .1"/>'
                 f'<body name="ball" pos="0 0 .05"><freejoint/><geom name="ball" type="sphere" '
                 f'size=".05" mass="{M_LOW}"/></body>'
                 '<body name="load" pos="0 0 .2"><freejoint/><geom type="sphere" size=".03" '
                 f'mass="{M_HIGH}" contype="0" conaffinity="0"/></body></worldbody>'
                 '<equality><weld body1="ball" body2="load"/></equality></mujoco>')
    c = MujocoContacts(m, d, manage=["floor"], law=LAW)
    for _ in range(600):
        info = c.step()
    w = (M_LOW + M_HIGH) * G
    assert info.contacts == 1
    assert float(info.delta[0]) == pytest.approx((w / K) ** (2 / 3), rel=1e-3)
    assert float(info.normal_force[0]) == pytest.approx(w, rel=1e-3)
    assert np.max(np.abs(d.qvel)) < 1e-4


def test_islands_disabled_the_managed_box_under_a_native_box_rests_alike() -> None:
    """With MuJoCo's constraint islands disabled (``mjDSBL_ISLAND``: no island tells which
    dofs a constraint acts on, every free dof takes the constraint solve's acceleration) the
    stack rests as with islands: four corners at the static overlap for both weights, at
    rest."""
    xml = _stack("box", 2, [M_LOW, M_HIGH]).replace(
        '<option timestep="0.002"/>',
        '<option timestep="0.002"><flag island="disable"/></option>')
    m, d = world(xml)
    assert m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_ISLAND)
    c = MujocoContacts(m, d, manage=[("floor", "g0")], law=LAW)
    for _ in range(STEPS):
        info = c.step()
    assert d.nisland == 0
    ds = ((M_LOW + M_HIGH) * G / 4 / K) ** (2 / 3)
    assert np.asarray(info.delta) == pytest.approx(ds, rel=1e-3)
    assert np.max(np.abs(d.qvel)) < 1e-4
