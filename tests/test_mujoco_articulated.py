"""The MuJoCo host step against MuJoCo's own outcomes and closed forms.

* The velocity update of a kinematic tree (the matrix H of ``MujocoHost.update_matrix``, W's
  articulated part and the implicit step's response): a generalised impulse tau changes the
  joint velocities of MuJoCo's own step by H^-1 tau, measured by stepping MuJoCo twice from
  the same state (with and without tau) in the same test: the Euler integrator's implicit
  joint damping, a soft equality constraint, an ``implicitfast`` position actuator's kv.
* The default friction is MuJoCo's: a box sliding on the floor (each managed pair's
  coefficient from the geoms as MuJoCo combines them; the coefficient is read from MuJoCo's
  own contact of the same pair, ``contact.friction[0]``, in the same test) stops after
  Coulomb's distance v0^2 / (2 mu g) (less MuJoCo's semi-implicit Euler's v0 dt / 2).
* A column of 40 balls (one group of 40 coupled contacts, beyond the compiled sub-stepper:
  the implicit step of large groups) holds at the static Hertz overlaps with forces
  (N - i) m g.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from mujoco_world import balls_xml, body_z, hertz_column, world

from mbplugin.mujoco import MujocoContacts

G = 9.81

_ARM = """<mujoco><option timestep="0.002" integrator="{integ}"/><worldbody>
<geom name="floor" type="plane" size="5 5 .1"/>
<body name="upper" pos="0 0 1.5"><joint name="hip" type="hinge" axis="0 1 0" {damp}/>
<geom type="capsule" fromto="0 0 0 0.3 0 -0.2" size="0.03" mass="1"/>
<body name="lower" pos="0.3 0 -0.2"><joint name="knee" type="hinge" axis="0 1 0" {damp}/>
<geom type="capsule" fromto="0 0 0 0.1 0 -0.25" size="0.025" mass="0.5"/>
<geom name="toe" type="sphere" pos="0.1 0 -0.25" size="0.02" mass="0.1"/></body></body>
</worldbody>{extra}</mujoco>"""
_EQUALITY = '<equality><joint joint1="knee" polycoef="0.3 0 0 0 0"/></equality>'
_ACTUATOR = '<actuator><position joint="knee" kp="200" kv="8"/></actuator>'


@pytest.mark.parametrize(("integ", "damp", "extra"), [
    ("Euler", 'damping="3"', ""),  # MuJoCo's Euler: joint damping implicit
    ("Euler", "", _EQUALITY),  # a soft equality constraint in the step
    ("implicitfast", 'damping="1"', _ACTUATOR),  # implicit damping and actuator kv
], ids=["euler-damping", "equality", "implicitfast-actuator"])
def test_tree_update_matrix_is_mujocos_response(integ: str, damp: str, extra: str) -> None:
    m, d = world(_ARM.format(integ=integ, damp=damp, extra=extra))
    d.qpos[:] = [0.4, -0.7]
    d.qvel[:] = [0.5, -1.0]
    d.ctrl[:] = 0.2 if m.nu else d.ctrl
    contacts = MujocoContacts(m, d, manage=[("floor", "toe")],
                              law={"name": "hunt_crossley", "cr": 0.5, "k": 1e6})
    host = contacts.host
    mujoco.mj_step1(m, d)
    assert d.ncon == 0 and (d.nefc > 0) == bool(extra == _EQUALITY)  # in the air
    (dofs,) = host.tree_dofs.values()  # the arm: one kinematic tree
    H = host.update_matrix(dofs)
    tau = np.array([0.7, -0.4])  # N m s, a generalised impulse over the step
    dt = m.opt.timestep
    after = []
    for extra_force in (np.zeros(2), tau / dt):
        s = mujoco.MjData(m)
        mujoco.mj_copyData(s, m, d)
        s.qfrc_applied[:] = extra_force
        mujoco.mj_step2(m, s)
        after.append(s.qvel[dofs].copy())
    native = after[1] - after[0]
    ours = np.linalg.solve(H, tau)
    assert np.linalg.norm(native) > 1e-2  # the impulse does move the tree
    np.testing.assert_allclose(ours, native, rtol=1e-8, atol=1e-12)
    # without the damping / constraint / actuator term the response differs (the check is
    # not vacuous): M alone
    mm = np.zeros((2, 2))
    for j in range(2):
        unit = np.zeros(m.nv)
        unit[j] = 1.0
        col = np.zeros(m.nv)
        mujoco.mj_mulM(m, d, col, unit)
        mm[:, j] = col
    assert np.max(np.abs(np.linalg.solve(mm, tau) - native)) > 1e-3 * np.max(np.abs(native))


_BOX = """<mujoco><option timestep="0.002"/><worldbody>
<geom name="floor" type="plane" size="20 20 .1" friction="0.6 0.005 0.0001"/>
<body name="box" pos="0 0 0.05"><freejoint/>
<geom name="box" type="box" size="0.05 0.05 0.05" mass="1" friction="0.3 0.005 0.0001"
 priority="{priority}"/></body></worldbody></mujoco>"""


@pytest.mark.parametrize("priority", [0, 1])
def test_default_friction_is_mujocos_and_stops_a_box_at_coulombs_distance(
        priority: int) -> None:
    m, d = world(_BOX.format(priority=priority))
    # MuJoCo's own coefficient of the pair (its contact of the box on the floor)
    mujoco.mj_forward(m, d)
    assert d.ncon > 0
    mu = float(d.contact.friction[0][0])
    assert mu == (0.3 if priority else 0.6)  # the higher priority's, else the larger
    k = 1e7  # N/m^1.5 per corner
    z_rest = 0.05 - (m.body_mass[1] * G / 4 / k) ** (2 / 3)  # each corner carries m g / 4
    d.qpos[2] = z_rest
    d.qvel[0] = v0 = 1.0
    contacts = MujocoContacts(m, d, manage=["box"],
                              law={"name": "hunt_crossley", "cr": 0.3, "k": k})
    assert contacts.friction_mode == "mujoco"
    x0 = float(d.qpos[0])
    for _ in range(round(1.2 * v0 / (mu * G) / m.opt.timestep)):
        contacts.step()
    assert abs(d.qvel[0]) < 1e-3  # stopped
    s = float(d.qpos[0]) - x0
    # Coulomb: a = mu g; MuJoCo's semi-implicit Euler moves the box by the sum of its
    # end-of-step velocities, v0^2 / (2 a) - v0 dt / 2 exactly under a constant deceleration
    a, dt = mu * G, m.opt.timestep
    assert s == pytest.approx(v0 * v0 / (2 * a) - v0 * dt / 2, rel=2e-3)


def test_a_column_of_forty_balls_holds_at_the_static_hertz_overlaps() -> None:
    N, R, M, K = 40, 0.01, 0.05, 1e5
    balls, d_static = hertz_column(N, R, M, K, G)  # Hertz: F = k d^1.5
    m, d = world(balls_xml(balls))
    contacts = MujocoContacts(m, d, manage=[f"b{i}" for i in range(N)],
                              law={"name": "hunt_crossley", "cr": 0.3, "k": K},
                              friction="none")
    z0 = np.array([body_z(m, d, f"b{i}") for i in range(N)])
    below = {int(mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"b{i}")): N - i
             for i in range(N)}
    for _ in range(50):
        info = contacts.step()
        assert info.contacts == N
        assert info.stats.implicit == N  # one group of N contacts: the large-group step
        carried = np.array([below[int(upper)] for _, upper in info.bodies])
        np.testing.assert_allclose(info.normal_force, carried * M * G, rtol=0.01)
        np.testing.assert_allclose(info.delta, [d_static[N - c] for c in carried], rtol=0.01)
    z1 = np.array([body_z(m, d, f"b{i}") for i in range(N)])
    assert np.max(np.abs(z1 - z0)) < 1e-6


_LEVER = """<mujoco><option timestep="0.002"/><worldbody>
<geom name="floor" type="plane" size="5 5 .1"/>
<body name="link" pos="0 0 0.1"><joint name="hip" type="hinge" axis="0 1 0" damping="0.5"/>
<geom type="capsule" fromto="0 0 0 0.3 0 -0.08" size="0.01" mass="1" contype="0"
 conaffinity="0"/>
<geom name="toe" type="sphere" pos="0.3 0 -0.08" size="0.02" mass="0.2"/></body>
</worldbody></mujoco>"""


def test_a_lever_rests_on_its_toe_where_mujoco_has_it() -> None:
    """A link on a hinge resting its toe on the floor (frictionless: the contact force is
    vertical): the implicit step leaves MuJoCo's state at the solved overlap, the toe's force
    balances the weight's moment about the hinge, F_N x_toe = m g x_com, and the overlap is
    Hertz's for that force."""
    m, d = world(_LEVER)
    k = 2e6
    contacts = MujocoContacts(m, d, manage=[("floor", "toe")],
                              law={"name": "hunt_crossley", "cr": 0.5, "k": k},
                              friction="none")
    for _ in range(500):  # 1 s: it settles
        info = contacts.step()
    assert info.contacts == 1
    mujoco.mj_forward(m, d)  # MuJoCo's kinematics of the state the step left
    toe = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "toe")
    link = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "link")
    host_overlap = m.geom_size[toe][0] - d.geom_xpos[toe][2]
    assert host_overlap == pytest.approx(float(info.delta[0]), rel=1e-6)
    hinge_x = d.xanchor[0][0]
    moment = m.body_mass[link] * G * (d.xipos[link][0] - hinge_x)
    force = moment / (d.geom_xpos[toe][0] - hinge_x)
    assert float(info.normal_force[0]) == pytest.approx(force, rel=0.01)
    assert host_overlap == pytest.approx((force / k) ** (2 / 3), rel=0.01)
