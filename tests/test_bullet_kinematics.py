"""The backend's own point Jacobians and mass matrices (mbplugin.bullet.kinematics) against
PyBullet's ``calculateJacobian`` and ``calculateMassMatrix``, measured in the same test: the
A1, Laikago and Mini Cheetah of ``pybullet_data``, a generated quadruped with turned joint
frames, turned and offset inertial frames and fixed-joint feet, the hexapod whose fixed feet
PyBullet merges into the calves, a fixed-base arm with a prismatic joint (turned joint and
inertial frames), each at a random base pose and random joint positions.

PyBullet's Jacobian is in the base's axes at a point given from the link's URDF frame origin in
the axes of the link's inertial frame; the test builds that point from PyBullet's outputs only
(``getLinkState``'s centre-of-mass pose, ``getDynamicsInfo``'s inertial frame), rotates
PyBullet's Jacobian into world axes with ``getMatrixFromQuaternion`` of the base and compares
(relative to the Jacobian's largest entry; the mass matrix's entries relative to
sqrt(M_ii M_jj)). A contact on the base (or on links joined to a floating base by fixed joints
only) has no joint columns: the base's columns are checked against the rigid-body velocity
v + omega x r the host reports (``getBaseVelocity`` after ``resetBaseVelocity``).
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pytest
import robot_rig as rr
from bullet_world import ground_world

from mbplugin.bullet.client import Client
from mbplugin.bullet.fast_step import body_delassus
from mbplugin.bullet.kinematics import LinkTree

ARM = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base"><inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0"
    iyz="0" izz="0"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="carriage"/>
    <origin xyz="0.1 -0.05 0.3" rpy="0.3 -0.2 0.5"/><axis xyz="0.6 0 0.8"/>
    <limit lower="-1" upper="1" effort="100" velocity="1"/></joint>
  <link name="carriage"><inertial><origin xyz="0.02 0.03 -0.01" rpy="0.4 0.1 -0.6"/>
    <mass value="1.5"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/>
    </inertial></link>
  <joint name="turn" type="revolute"><parent link="carriage"/><child link="arm"/>
    <origin xyz="0.05 0.02 -0.1" rpy="-0.2 0.7 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="1"/></joint>
  <link name="arm"><inertial><origin xyz="0.0 0.01 -0.12" rpy="0.2 -0.3 0.9"/>
    <mass value="0.7"/><inertia ixx="0.004" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.002"/>
    </inertial></link>
  <joint name="tip" type="fixed"><parent link="arm"/><child link="tip"/>
    <origin xyz="0.01 0 -0.25" rpy="0.5 0 0"/></joint>
  <link name="tip"><inertial><origin xyz="0.003 0 0.002" rpy="0 0.3 0"/><mass value="0.1"/>
    <inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial></link>
</robot>
"""


def _rot(quat: tuple[float, ...]) -> np.ndarray:
    return np.array(p.getMatrixFromQuaternion(quat)).reshape(3, 3)


def _check_body(cid: int, body: int, rng: np.random.Generator) -> float:
    """The largest relative difference of our Jacobians (over every link) and mass matrix
    from PyBullet's."""
    nj = p.getNumJoints(body, physicsClientId=cid)
    moving = [j for j in range(nj)
              if p.getJointInfo(body, j, physicsClientId=cid)[2] != p.JOINT_FIXED]
    floating = p.getDynamicsInfo(body, -1, physicsClientId=cid)[0] > 0
    if floating:
        p.resetBasePositionAndOrientation(body, (5.0 * rng.normal(size=3)).tolist(),
                                          p.getQuaternionFromEuler(rng.normal(size=3)),
                                          physicsClientId=cid)
    q = rng.uniform(-1.0, 1.0, size=len(moving)).tolist()
    for j, x in zip(moving, q, strict=True):
        p.resetJointState(body, j, x, physicsClientId=cid)
    tree = LinkTree(Client(cid), body, moving, floating)
    assert tree.supported
    bp, bo = p.getBasePositionAndOrientation(body, physicsClientId=cid)
    r_base = _rot(bo)
    zero = [0.0] * len(moving)
    worst = 0.0
    links = list(range(nj))
    points, theirs = [], []
    for lk in links:
        local = rng.normal(size=3) * 0.05
        st = p.getLinkState(body, lk, computeForwardKinematics=1, physicsClientId=cid)
        dyn = p.getDynamicsInfo(body, lk, physicsClientId=cid)
        # the URDF frame origin is the centre of mass minus R_com R_inert^T inertial position
        points.append(np.array(st[0])
                      + _rot(st[1]) @ (local - _rot(dyn[4]).T @ np.array(dyn[3])))
        jl = p.calculateJacobian(body, lk, local.tolist(), q, zero, zero,
                                 physicsClientId=cid)[0]
        theirs.append(r_base @ np.array(jl))
    ours = tree.jacobians(q, bp, bo, r_base, np.array(links), np.array(points))
    for e in range(len(links)):
        worst = max(worst, float(np.abs(ours[e] - theirs[e]).max() / np.abs(theirs[e]).max()))
    # the mass matrix, each entry against sqrt(M_ii M_jj) (its natural scale)
    m_ours = tree.mass_matrix(q, bp, bo, r_base)
    m_theirs = np.array(p.calculateMassMatrix(body, q, physicsClientId=cid))
    scale = np.sqrt(np.outer(np.diag(m_theirs), np.diag(m_theirs)))
    worst = max(worst, float((np.abs(m_ours - m_theirs) / scale).max()))
    # the same in one compiled call with W = J M^-1 J^T of a contact at each point (one side
    # b each) and n . W n per contact, against PyBullet's J and M
    e, ncol = len(links), m_theirs.shape[0]
    normal = rng.normal(size=(e, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    mm, jac, W, wnn = np.zeros((ncol, ncol)), np.zeros((e, 3, ncol)), np.zeros((3 * e, 3 * e)), \
        np.zeros(e)
    x, y, z, w = bo
    body_delassus(np.array(q), tree.q, tree._moving, np.array(bp), np.array([w, x, y, z]), r_base,
                  *tree._kin(), tree.col, tree.floating, tree.mass, tree.inertia, tree.base_mass,
                  tree.base_inertia, *tree._work(), tree._cm, tree._cs, tree._cj,
                  np.array(links, dtype=np.int64), np.array(points), np.zeros(0, dtype=np.int64),
                  np.arange(e), np.ones(e), normal, mm, jac, W, wnn)
    j_all = np.concatenate(theirs)
    w_theirs = j_all @ np.linalg.solve(m_theirs, j_all.T)
    worst = max(worst, float((np.abs(mm - m_theirs) / scale).max()),
                float(np.abs(W - w_theirs).max() / np.abs(w_theirs).max()))
    nwn = np.einsum("ka,kab,kb->k", normal, w_theirs.reshape(e, 3, e, 3)[np.arange(e), :,
                                                                         np.arange(e), :], normal)
    return max(worst, float(np.abs(wnn - nwn).max() / np.abs(w_theirs).max()))


@pytest.mark.parametrize("robot", ["a1", "laikago", "mini_cheetah", "quad_turned", "hexapod"])
def test_jacobians_equal_pybullets(robot: str, tmp_path) -> None:
    rng = np.random.default_rng(11)
    with ground_world(rr.G) as (cid, _plane):
        h = rr.load(cid, rr.ROBOTS[robot], tmp_path)
        for _ in range(2):  # two random poses
            assert _check_body(cid, h.body, rng) < 1e-12


def test_prismatic_fixed_base_arm(tmp_path) -> None:
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    rng = np.random.default_rng(5)
    with ground_world(rr.G) as (cid, _plane):
        body = p.loadURDF(str(path), [0.2, -0.1, 0.5], p.getQuaternionFromEuler([0.1, 0.4, -0.3]),
                          useFixedBase=True, physicsClientId=cid)
        for _ in range(3):
            assert _check_body(cid, body, rng) < 1e-12


def test_base_columns_are_the_rigid_body_velocity(tmp_path) -> None:
    """A point on the base (and on the A1's IMU link, fixed to it): J (omega_b, v_b) equals
    v + omega x (p - p_com) with PyBullet's base velocities, (omega_b, v_b) their base-frame
    coordinates (PyBullet's generalised velocities of a floating base)."""
    rng = np.random.default_rng(2)
    with ground_world(rr.G) as (cid, _plane):
        h = rr.load(cid, rr.ROBOTS["a1"], tmp_path)
        body = h.body
        p.resetBasePositionAndOrientation(body, [0.1, 0.2, 0.5],
                                          p.getQuaternionFromEuler([0.3, -0.2, 1.0]),
                                          physicsClientId=cid)
        p.resetBaseVelocity(body, [0.3, -0.4, 0.2], [1.5, -0.7, 2.0], physicsClientId=cid)
        bp, bo = p.getBasePositionAndOrientation(body, physicsClientId=cid)
        v, w = (np.array(x) for x in p.getBaseVelocity(body, physicsClientId=cid))
        r_base = _rot(bo)
        nj = p.getNumJoints(body, physicsClientId=cid)
        moving = [j for j in range(nj)
                  if p.getJointInfo(body, j, physicsClientId=cid)[2] != p.JOINT_FIXED]
        tree = LinkTree(Client(cid), body, moving, True)
        imu = [j for j in range(nj) if p.getJointInfo(body, j, physicsClientId=cid)[1]
               == b"imu_joint"]
        links = np.array([-1, -1, *imu])
        pts = np.array(bp) + rng.normal(size=(len(links), 3)) * 0.1
        jac = tree.jacobians([0.0] * len(moving), bp, bo, r_base, links, pts)
        qd = np.concatenate([r_base.T @ w, r_base.T @ v, np.zeros(len(moving))])
        for e in range(len(links)):
            want = v + np.cross(w, pts[e] - np.array(bp))
            assert np.allclose(jac[e] @ qd, want, rtol=0, atol=1e-13 * np.abs(want).max())


@pytest.mark.parametrize("robot", ["a1", "quad_turned", "arm"])
def test_link_states_equal_pybullets(robot: str, tmp_path) -> None:
    """Every link's centre-of-mass pose and velocities from the tree at random joint positions
    and rates and base velocities equal ``getLinkStates``' (with forward kinematics and
    velocities) to 1e-12 (relative to the largest entry); the URDF frame's origin to 1e-6 m
    (PyBullet reports it in single precision, measured)."""
    rng = np.random.default_rng(7)
    with ground_world(rr.G) as (cid, _plane):
        if robot == "arm":
            path = tmp_path / "arm.urdf"
            path.write_text(ARM)
            body = p.loadURDF(str(path), [0.2, -0.1, 0.5], p.getQuaternionFromEuler(
                [0.1, 0.4, -0.3]), useFixedBase=True, physicsClientId=cid)
        else:
            body = rr.load(cid, rr.ROBOTS[robot], tmp_path).body
        floating = p.getDynamicsInfo(body, -1, physicsClientId=cid)[0] > 0
        nj = p.getNumJoints(body, physicsClientId=cid)
        moving = [j for j in range(nj)
                  if p.getJointInfo(body, j, physicsClientId=cid)[2] != p.JOINT_FIXED]
        tree = LinkTree(Client(cid), body, moving, floating)
        for _ in range(2):
            q = rng.uniform(-1.0, 1.0, size=len(moving)).tolist()
            qd = rng.uniform(-3.0, 3.0, size=len(moving)).tolist()
            p.resetJointStatesMultiDof(body, moving, [[x] for x in q], [[x] for x in qd],
                                       physicsClientId=cid)
            if floating:
                p.resetBasePositionAndOrientation(body, rng.normal(size=3).tolist(),
                                                  p.getQuaternionFromEuler(rng.normal(size=3)),
                                                  physicsClientId=cid)
                p.resetBaseVelocity(body, rng.normal(size=3).tolist(),
                                    rng.normal(size=3).tolist(), physicsClientId=cid)
            bp, bo = p.getBasePositionAndOrientation(body, physicsClientId=cid)
            bv, bw = p.getBaseVelocity(body, physicsClientId=cid)
            links = np.arange(nj)
            pos, quat, vel, om, frame = (np.zeros((nj, k)) for k in (3, 4, 3, 3, 3))
            tree.link_states(q, qd, bp, bo, bv, bw, links, links, pos, quat, vel, om, frame)
            sts = p.getLinkStates(body, list(range(nj)), computeLinkVelocity=1,
                                  computeForwardKinematics=1, physicsClientId=cid)
            want = np.array([s[0] for s in sts])
            assert np.abs(pos - want).max() <= 1e-12 * np.abs(want).max()
            wq = np.array([[s[1][3], *s[1][:3]] for s in sts])
            sign = np.sign(np.einsum("ij,ij->i", quat, wq))[:, None]  # q and -q: one turn
            assert np.abs(sign * quat - wq).max() <= 1e-12
            for got, k in ((vel, 6), (om, 7)):
                want = np.array([s[k] for s in sts])
                assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
            assert np.abs(frame - np.array([s[4] for s in sts])).max() <= 1e-6


def test_pybullet_calls_for_trees_not_modelled(tmp_path, monkeypatch) -> None:
    """A tree the module does not model (forced here) takes PyBullet's ``calculateJacobian``
    and ``calculateMassMatrix`` and resets in every verification round: the A1 standing then
    trotting (0.25 s each) at 1/240 s gives the modelled run's forces, overlaps and base pose
    to 1e-6 relative (PyBullet's Jacobian is that of a point ~1e-8 m off the contact: the
    link frame origin it is given from comes in single precision) and calls
    ``calculateJacobian`` once per contact link and step."""
    from mbplugin.bullet import kinematics

    def run() -> tuple[np.ndarray, ...]:
        rec = rr.run(rr.ROBOTS["a1"], tmp_path, 1 / 240, 0.5, t_gait=0.25)
        return np.concatenate(rec["force"]), np.concatenate(rec["delta"]), rec["base"]

    own = run()
    init = kinematics.LinkTree.__init__
    calls = []
    jacobian = p.calculateJacobian

    def unsupported(self: LinkTree, *a: object) -> None:
        init(self, *a)
        self.supported = False

    def counted(*a: object, **k: object) -> object:
        calls.append(1)
        return jacobian(*a, **k)

    monkeypatch.setattr(kinematics.LinkTree, "__init__", unsupported)
    monkeypatch.setattr(p, "calculateJacobian", counted)
    ref = run()
    assert len(calls) > 120  # about 3 contact links per step
    for a, b in zip(own, ref, strict=True):
        assert np.abs(np.asarray(a) - np.asarray(b)).max() <= 1e-6 * np.abs(b).max()
