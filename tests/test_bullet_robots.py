"""Legged robots on managed ground: the contact the user sees in PyBullet is the one the law
integrates, at 1/240 s and 1/1000 s, for robots of ``pybullet_data`` and robots of our own.

The matrix (tests/robot_rig.py): the A1, Laikago, Aliengo and Mini Cheetah of ``pybullet_data``,
and four robots written by tests/robot_urdf.py: a light quadruped whose leg frames are turned
and whose centres of mass and principal axes sit off its links' frames, a heavy one whose feet
are spheres of its calves, a hexapod whose fixed foot links PyBullet merges into its calves
(``URDF_MERGE_FIXED_LINKS``), a biped on heel-and-toe feet (two contacts on one link). Each
stands under a joint PD controller (torque control) on plane.urdf with every foot-ground pair
managed (Hunt-Crossley, cr = 0.3, Hertz's k; rubber-like ground and hard toes, or steel on
steel).

Expected values come from outside mbplugin: the robot's weight (PyBullet's masses), Hertz's
static overlap (F / k)^(2/3) with k = 4/3 E* sqrt(R) written out in the rig, the host's own
overlap (``getClosestPoints``) and slip (its link velocities), native PyBullet's run of the same
robot in the same test (toe creep, falls). Quiet stance: the last 0.5 s of the run.

What it caught: the verification rounds of the implicit step booked the host's velocity defect
twice (the A1's loaded toes sat at 0.92-0.94 of the static Hertz overlap in the host while the
backend reported 1.00; with POSITION_CONTROL Newton's method failed); PyBullet's
``calculateJacobian`` takes its point from the link's URDF frame origin, not its centre of mass
(W off by 8-110 % on the generated robots, which then bounced or collapsed); a body whose only
joints are fixed crashed (``getJointStates`` of no joints is None).

The full matrix (both host steps for every check, 10 s of creep, 5 s of gait) is
``python benchmarks/robots_matrix.py``; this suite runs every robot at 1/240 s (4 s of creep,
3 s of gait) and three at 1/1000 s (stance) to fit the CI budget (BENCHMARKS.md).
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pytest
import robot_rig as rr
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts

ALL = list(rr.ROBOTS)


def _check_stance(fig: dict[str, float]) -> None:
    assert not rr.stance_failures(fig), fig


@pytest.mark.parametrize("name", ALL)
def test_quiet_stance_and_creep_at_240_hz(name, tmp_path) -> None:
    """5 s of stance with the tangential spring (Dahl): in the last 0.5 s the feet carry the
    weight, the host's overlap of every loaded contact is the backend's and the static Hertz
    overlap of its force, the host's slip is the backend's; from 1 s on the feet creep no
    more than natively + 0.5 mm (over 4 s here, 10 s in benchmarks/robots_matrix.py)."""
    spec = rr.ROBOTS[name]
    stick = {"stick": rr.STICK}
    ours = rr.run(spec, tmp_path, 1 / 240, 5.0, tangential=stick, record_from=4.5,
                  creep_from=1.0)
    native = rr.run(spec, tmp_path, 1 / 240, 5.0, ours=False, record_from=4.5,
                    creep_from=1.0)
    _check_stance(rr.stance_figures(ours, rr.RUBBER))
    assert rr.creep(ours) <= rr.creep(native) + rr.CREEP


def test_the_rig_measures_creep_at_the_toes(tmp_path) -> None:
    """The creep is measured at the toes (the foot spheres' centres), not at the foot links'
    centres of mass: the rig's toe positions are PyBullet's own closest points on the robot
    plus the radius along the contact normal (``getClosestPoints``), on every robot standing
    (the heavy quadruped's and the hexapod's foot links are calves whose centres of mass sit
    ~0.1-0.2 m above the toe)."""
    for name, spec in rr.ROBOTS.items():
        with ground_world(rr.G, 1 / 240) as (cid, plane):
            h = rr.load(cid, spec, tmp_path)
            toes = rr.toe_positions(cid, h)
            host = []
            for f in h.feet:
                cps = p.getClosestPoints(h.body, plane, 0.1, f, -1, physicsClientId=cid)
                host += [np.asarray(c[5]) + h.radius[f] * np.asarray(c[7]) for c in cps]
            assert len(host) == len(toes), name
            # match each toe to the nearest closest-point sphere centre
            dist = np.linalg.norm(toes[:, None, :] - np.asarray(host)[None], axis=2)
            assert np.max(np.min(dist, axis=1)) < 1e-6, name


@pytest.mark.parametrize("name", ALL)
def test_steel_feet_stand_at_240_hz(name, tmp_path) -> None:
    """Steel feet on steel ground (E = 2e11: an overlap of ~1 um, a contact stiffer than the host
    step resolves): no exception at touchdown, and the quiet stance is the closed form's (over
    1.5 s: on rigid feet the heavy quadruped sways slowly under its PD, +-1.5 % of its weight
    over ~1.5 s)."""
    rec = rr.run(rr.ROBOTS[name], tmp_path, 1 / 240, 3.0, materials=rr.STEEL, record_from=1.5)
    _check_stance(rr.stance_figures(rec, rr.STEEL))


@pytest.mark.parametrize("name", ALL)
def test_drop_onto_the_feet_and_trot_where_native_does(name, tmp_path) -> None:
    """Dropped from 5 cm onto its feet, the robot lands without an exception and stands where
    native PyBullet's stands; then it plays its open-loop gait for 3 s (5 s in
    benchmarks/robots_matrix.py) and does not fall where native PyBullet does not (at 1/240 s
    and at 1/1000 s: where native's outcome depends on its step, the converged one counts
    too). During the gait, while the robot is up, every loaded contact's host overlap is the
    backend's within 2 %."""
    spec = rr.ROBOTS[name]
    ours = rr.run(spec, tmp_path, 1 / 240, 4.0, lift=0.05, t_gait=1.0, record_from=0.0)
    native = rr.run(spec, tmp_path, 1 / 240, 4.0, lift=0.05, t_gait=1.0, ours=False,
                    record_from=0.0)

    def first_second(rec: dict) -> dict:
        return {k: v[:240] if isinstance(v, list) or k in ("base", "tilt") else v
                for k, v in rec.items()}

    if not rr.fell(first_second(native)):  # (PyBullet's merged hexapod flies apart)
        assert not rr.fell(first_second(ours))  # landed and stands
    # native PyBullet's own outcome depends on its step for a marginal gait: the heavy
    # quadruped walks back and falls at 1/1000 s (-1.5 m; the backend at 1/240 and 1/1000 s
    # alike) and stands at 1/240 s; the gait must not fall where native stands at both
    fine = rr.run(spec, tmp_path, 1 / 1000, 4.0, lift=0.05, t_gait=1.0, ours=False,
                  record=False)
    if not (rr.fell(native) or rr.fell(fine)):
        assert not rr.fell(ours)
    # (while the robot is up: a fallen robot's flailing legs are no gait)
    gait = {k: v[240:rr.upright(ours)] if isinstance(v, list) else v for k, v in ours.items()}
    assert rr.stance_figures(gait, rr.RUBBER)["overlap"] <= rr.OVERLAP


@pytest.mark.parametrize("name", ["a1", "quad_turned", "biped"])
def test_quiet_stance_at_1000_hz(name, tmp_path) -> None:
    """The quiet stance at 1/1000 s (regularised friction): the same figures."""
    rec = rr.run(rr.ROBOTS[name], tmp_path, 1 / 1000, 1.5, record_from=1.0)
    _check_stance(rr.stance_figures(rec, rr.RUBBER))


@pytest.mark.parametrize("name", ["a1", "laikago"])
def test_position_control_motors_at_240_hz(name, tmp_path) -> None:
    """PyBullet's POSITION_CONTROL motors (velocity constraints in its solver, below their
    force limit) hold the joints: the feet's response to a contact impulse is the constrained
    robot's, not the free one's (Newton's method failed on it before). The quiet stance's
    figures are those of the torque-controlled robot."""
    rec = rr.run(rr.ROBOTS[name], tmp_path, 1 / 240, 1.5, record_from=1.0, motors=200.0)
    _check_stance(rr.stance_figures(rec, rr.RUBBER))


def test_a_body_whose_feet_are_on_fixed_joints_stands_on_them() -> None:
    """A box whose four sphere feet hang from it on FIXED joints (a multibody without a moving
    joint: ``getJointStates`` of no joint is None, ``calculateJacobian`` refuses it; this
    crashed at the first contact) rests on them: each foot carries a quarter of the weight
    (symmetry) at the static Hertz overlap, in the host."""
    R, m = 0.02, 4.0
    with ground_world(rr.G, 1 / 240) as (cid, plane):
        foot = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        box = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.15, 0.1, 0.03],
                                     physicsClientId=cid)
        corners = [[x, y, -0.06] for x in (0.12, -0.12) for y in (0.08, -0.08)]
        body = p.createMultiBody(m - 4 * 0.05, box, -1, [0, 0, 0.06 + R + 0.001],
                                 linkMasses=[0.05] * 4, linkCollisionShapeIndices=[foot] * 4,
                                 linkVisualShapeIndices=[-1] * 4, linkPositions=corners,
                                 linkOrientations=[[0, 0, 0, 1]] * 4,
                                 linkInertialFramePositions=[[0, 0, 0]] * 4,
                                 linkInertialFrameOrientations=[[0, 0, 0, 1]] * 4,
                                 linkParentIndices=[0] * 4, linkJointTypes=[p.JOINT_FIXED] * 4,
                                 linkJointAxis=[[0, 0, 1]] * 4, physicsClientId=cid)
        for j in range(-1, 4):
            p.changeDynamics(body, j, linearDamping=0, angularDamping=0, physicsClientId=cid)
        # the feet's pairs with the ground (the sharp box has no Hertz radius: a law without
        # k is refused for it at construction)
        contacts = BulletContacts(cid, manage=[(plane, (body, j)) for j in range(4)],
                                  law={"name": "hunt_crossley", "cr": 0.3},
                                  materials={plane: rr.RUBBER[0], body: rr.RUBBER[1]},
                                  friction=rr.FRICTION)
        for _ in range(480):
            st = contacts.step()
        host = [-min(c[8] for c in p.getClosestPoints(body, plane, 0.005, j, -1,
                                                       physicsClientId=cid))
                for j in range(4)]
    static = (m * rr.G / 4 / rr.hertz_k(rr.RUBBER, R)) ** (2 / 3)
    assert np.sum(st.normal_force) == pytest.approx(m * rr.G, rel=1e-3)
    assert np.array(host) == pytest.approx(static, rel=0.01)
    assert np.sort(st.delta) == pytest.approx(np.sort(host), rel=1e-3)


@pytest.mark.parametrize("materials", [rr.RUBBER, rr.STEEL])
@pytest.mark.parametrize("tangential", [{"friction": {"mu": 0.8, "v_eps": 1e-4}},
                                        {"stick": rr.STICK}])
def test_newton_converges_from_far(materials, tangential, tmp_path) -> None:
    """The implicit step's Newton solve cannot stall for a monotone law (a line search on the
    monotone slope R . W dP, frozen Coulomb limits as the fallback; implicit_kernel.newton):
    the A1's four coupled feet, from P = 0, with start and end states 0-20 mm deep (rubber;
    steel: 0-50 um) moving at up to 3 m/s (friction with v_eps = 0.1 mm/s, or the spring),
    converge every time to a root of R(P) = P - dt F(state(P)), the NumPy reference's. (The
    backtracking on |R| it replaced failed on 1-2 of 60 such rubber problems: "Newton's
    method did not converge".)"""

    rng = np.random.default_rng(18)
    dt = 1 / 240
    with ground_world(rr.G, dt) as (cid, plane):
        h = rr.load(cid, rr.ROBOTS["a1"], tmp_path)
        contacts = BulletContacts(cid, manage=[(plane, (h.body, f)) for f in h.feet],
                                  law={"name": "hunt_crossley", "cr": 0.3},
                                  materials={plane: materials[0], h.body: materials[1]},
                                  rtol=1e-10, **tangential)
        while contacts.step().contacts < 4:  # lands
            pass
        contacts.before_step()
        batch, space, _, _ = contacts.integrator.pending
        k = len(batch)
        deep = 2e-2 if materials is rr.RUBBER else 5e-5  # forces up to ~1e3 / ~1e5 N
        for _trial in range(30):
            d0, d_lin = rng.uniform(0.0, deep, k), rng.uniform(-deep / 4, deep, k)
            u0, u_lin = rng.uniform(-3.0, 3.0, (k, 3)), rng.uniform(-3.0, 3.0, (k, 3))
            results = []
            for compiled in (True, False):
                impulse, scale = rr.implicit_root(contacts.store, batch, space.W,
                                                  contacts.friction, contacts.stick, compiled,
                                                  dt, d0, d_lin, u0, u_lin)
                results.append(impulse)
            assert results[0] == pytest.approx(results[1], rel=1e-6, abs=1e-9 * scale)
