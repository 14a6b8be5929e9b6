"""The MuJoCo backend's compiled per-step kernels (mbplugin/mujoco/kernels.py) against MuJoCo's
own functions on the same state: the rows' motion (``mj_objectVelocity``, ``xipos``,
``ximat``), the free rows' point accelerations (``mj_jac`` times ``qacc_smooth``), the contact
forces (``mj_applyFT`` into ``qfrc_applied``: the same smooth acceleration), each pair's friction
coefficient (MuJoCo's ``contact.friction`` of the pair), and the free rows' poses from ``qpos``
(``mj_kinematics``)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mbplugin.contact.kernels import encode_keys
from mbplugin.errors import ParameterError
from mbplugin.hosts import STATIC
from mbplugin.mujoco import MujocoContacts
from mbplugin.mujoco import kernels as k

# three free bodies with offset, turned inertial frames; a hinged arm (articulated)
_XML = """<mujoco><option gravity="0.3 -0.2 -9.81"/><worldbody>
<geom name="floor" type="plane" size="5 5 .1"/>
<body pos="0 0 0.3" quat="0.9 0.2 -0.3 0.1"><freejoint/>
<inertial pos="0.01 -0.02 0.005" quat="0.8 0.1 0.5 -0.2" mass="1" diaginertia="0.01 0.02 0.03"/>
<geom type="box" size="0.05 0.04 0.03"/></body>
<body pos="0.3 0 0.3"><freejoint/><geom type="capsule" size="0.02 0.05" pos="0.01 0 0"
 euler="10 40 0" mass="0.4"/></body>
<body pos="0.6 0 0.3"><freejoint/><geom type="sphere" size="0.05" mass="0.2"/></body>
<body pos="1 0 0.5"><joint type="hinge" axis="0 1 0"/><geom type="capsule"
 fromto="0 0 0 0.2 0 -0.2" size="0.02" mass="0.3"/></body>
</worldbody></mujoco>"""


def _moving() -> tuple[MujocoContacts, object, object]:
    """The model with random velocities (spinning bodies), the backend on it, mj_step1 run."""
    m = mujoco.MjModel.from_xml_string(_XML)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    d.qvel[:] = rng.uniform(-3.0, 3.0, m.nv)
    contacts = MujocoContacts(m, d, manage=["floor"], law={"name": "hunt_crossley", "cr": 0.5,
                                                           "k": 1e5})
    mujoco.mj_step1(m, d)
    return contacts, m, d


def test_row_state_is_mujocos_centre_of_mass_motion() -> None:
    """Each row's centre of mass, orientation, velocity and angular velocity are MuJoCo's of
    its inertial frame (``xipos``, ``ximat``, ``mj_objectVelocity`` of mjOBJ_BODY, world
    frame) to rounding."""
    contacts, m, d = _moving()
    pos, quat, vel, om = contacts.host.state(d)
    for i, b in enumerate(contacts.rows.tolist()):
        res = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b, res, 0)
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, quat[i] / np.linalg.norm(quat[i]))
        assert np.allclose(pos[i], d.xipos[b], rtol=0, atol=1e-15)
        assert np.allclose(mat, d.ximat[b], rtol=0, atol=1e-12)
        assert np.allclose(om[i], res[:3], rtol=0, atol=1e-12)
        assert np.allclose(vel[i], res[3:], rtol=0, atol=1e-12)
    assert np.abs(om[1:]).max() > 0.5  # the state moves: the checks are not of zeros


def _contacts(contacts: MujocoContacts, n: int, seed: int):
    """n random contacts (rows a, b; points near the bodies) among the world and free rows."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([[0], contacts.free_rows])  # the world row and the free rows
    a = rng.choice(rows, n)
    b = rng.choice(rows[1:], n)
    point = contacts.mj_data.xipos[contacts.rows[b]] + rng.uniform(-0.1, 0.1, (n, 3))
    return a.astype(np.int64), b.astype(np.int64), point


def test_free_point_acceleration_is_jacobian_times_smooth_acceleration() -> None:
    """The free rows' relative point acceleration without contact forces is MuJoCo's
    (J_b(P) - J_a(P)) qacc_smooth (``mj_jac`` at each point; gravity, gyroscopic forces)."""
    contacts, m, d = _moving()
    mujoco.mj_fwdActuation(m, d)
    mujoco.mj_fwdAcceleration(m, d)
    a, b, point = _contacts(contacts, 12, 1)
    fr = contacts.host.free_rows
    ours = k.free_point_acceleration(d.qacc_smooth, d.xmat, d.xpos, fr.fbody,
                                     contacts.host.free, fr.vadr, len(contacts.rows), a, b,
                                     point)
    for c in range(len(a)):
        jb, ja = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, jb, None, point[c], int(contacts.rows[b[c]]))
        mujoco.mj_jac(m, d, ja, None, point[c], int(contacts.rows[a[c]]))
        ref = (jb - ja) @ d.qacc_smooth
        assert np.allclose(ours[c], ref, rtol=1e-12, atol=1e-12)
    assert np.abs(ours).max() > 1.0


def test_forces_are_mujocos_applied_wrench() -> None:
    """The contact forces put into ``xfrc_applied`` (force and torque about each body's centre
    of mass; static rows skipped) move MuJoCo as the same forces at the contact points through
    ``mj_applyFT`` into ``qfrc_applied`` (equal ``qacc_smooth``); rows of a contact with a
    non-zero force are flagged, those of a zero-force contact not."""
    contacts, m, d = _moving()
    a, b, point = _contacts(contacts, 8, 2)
    force = np.random.default_rng(5).uniform(-20.0, 20.0, (8, 3))
    force[-1] = 0.0
    static = np.asarray(contacts.kind == STATIC)
    forced = np.zeros(len(contacts.rows), dtype=bool)
    xf = np.zeros((m.nbody, 6))
    k.add_forces(xf, d.xipos, contacts.rows, static, a, b, point, force, forced)
    d.xfrc_applied[:] = xf
    mujoco.mj_fwdAcceleration(m, d)
    ours = d.qacc_smooth.copy()
    d.xfrc_applied[:] = 0.0
    q = np.zeros(m.nv)
    for c in range(len(a)):
        mujoco.mj_applyFT(m, d, force[c], np.zeros(3), point[c], int(contacts.rows[b[c]]), q)
        if not static[a[c]]:
            mujoco.mj_applyFT(m, d, -force[c], np.zeros(3), point[c],
                              int(contacts.rows[a[c]]), q)
    d.qfrc_applied[:] = q
    mujoco.mj_fwdAcceleration(m, d)
    assert np.allclose(ours, d.qacc_smooth, rtol=1e-12, atol=1e-10)
    assert np.all(xf[0] == 0.0)  # the world body takes no force
    hit = np.zeros(len(contacts.rows), dtype=bool)
    hit[a[:-1]] = hit[b[:-1]] = True
    assert np.array_equal(forced, hit)


def test_pair_friction_is_mujocos_combination() -> None:
    """Each pair's coefficient is the one MuJoCo gives the pair's contacts
    (``contact.friction[0]``): the higher priority's, at equal priority the larger."""
    xml = """<mujoco><worldbody>
    <geom name="floor" type="plane" size="5 5 .1" friction="0.7"/>
    <body pos="0 0 0.04"><freejoint/><geom type="sphere" size="0.05" friction="0.3"/></body>
    <body pos="1 0 0.04"><freejoint/><geom type="sphere" size="0.05" friction="0.9"/></body>
    <body pos="2 0 0.04"><freejoint/><geom type="sphere" size="0.05" friction="0.2"
     priority="1"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert d.ncon == 3
    g = np.array([d.contact.geom[i] for i in range(d.ncon)], dtype=np.int64)
    keys = encode_keys(g[:, 0], g[:, 1], np.zeros(d.ncon, np.int64), m.ngeom)
    ours = k.pair_friction(keys, m.ngeom, np.arange(m.ngeom), m.geom_friction, m.geom_priority,
                           m.geom_condim)
    assert np.array_equal(ours, d.contact.friction[: d.ncon, 0])
    assert sorted(ours.tolist()) == pytest.approx([0.2, 0.7, 0.9])


def test_free_end_poses_are_mujocos_kinematics() -> None:
    """The free rows' centre-of-mass poses read from ``qpos`` (orientations not normalised)
    are MuJoCo's after ``mj_kinematics`` (``xipos``, ``ximat``); a zero orientation is an
    error naming it."""
    contacts, m, d = _moving()
    fr = contacts.host.free_rows
    rng = np.random.default_rng(7)
    d.qpos[fr.qadr[:, None] + np.arange(3)] += rng.uniform(-0.1, 0.1, (len(fr.qadr), 3))
    d.qpos[fr.qadr[:, None] + np.arange(3, 7)] = rng.uniform(-1.0, 1.0, (len(fr.qadr), 4)) * 1.7
    bodies = contacts.loop.body_state(*contacts.host.state(d))
    end = fr.end_poses(bodies)
    mujoco.mj_kinematics(m, d)
    for i in contacts.free_rows.tolist():
        b = int(contacts.rows[i])
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, end.quat[i])
        assert np.allclose(end.pos[i], d.xipos[b], rtol=0, atol=1e-12)
        assert np.allclose(mat, d.ximat[b], rtol=0, atol=1e-12)
    d.qpos[fr.qadr[1] + np.arange(3, 7)] = 0.0
    with pytest.raises(ParameterError, match="quaternion"):
        fr.end_poses(bodies)
