"""Legged robots on managed ground in MuJoCo at its default 2 ms step: the robots of the PyBullet
matrix (tests/robot_rig.py), loaded by MuJoCo's own URDF importer (tests/mujoco_robot_rig.py),
not only the A1 the MuJoCo backend was built around.

Each robot stands under the rig's joint PD controller on a floor plane with every foot-floor
pair managed (Hunt-Crossley, cr = 0.3, Hertz's k; rubber-like ground, hard toes). Expected
values come from outside mbplugin: the weight (MuJoCo's masses), Hertz's static overlap
(F / k)^(2/3) with k = 4/3 E* sqrt(R) written out in tests/robot_rig.py, the host's own overlap
(R - z of each foot sphere's centre in MuJoCo, the floor at z = 0), native MuJoCo's run of the
same robot in the same test (falls).

What the robots bring that the A1 does not: Laikago's collision meshes (MuJoCo collides their
convex hulls, and adjacent links' hulls overlap: the rig turns self-collision off, PyBullet's
default); the Mini Cheetah's thigh inertias, which MuJoCo's compiler refuses unless
``balanceinertia``; turned link frames and offset inertial frames; foot links MuJoCo fuses
into the calves (the hexapod; the biped with two spheres per calf); a heavy robot on steel.
And what MuJoCo models bring beyond a URDF: joint damping, friction loss, armature, position
actuators, implicitfast, joint limits in use; capsule feet; two robots in one model; a base
welded to the world (each leg its own tree). Short runs here; the full matrix (longer stance
and gait, steel, the general path, the lean tree path's counters, the cost ratio to native
MuJoCo) is ``python benchmarks/robots_matrix_mujoco.py``.
"""

from __future__ import annotations

import mujoco_robot_rig as mr
import pytest
import robot_rig as rr

ALL = list(mr.ROBOTS)
#: the gait: robots native MuJoCo walks forward without falling in the rig's open-loop gait
#: (the biped falls natively, the heavy quadruped steps backwards and falls after ~2 s of it:
#: benchmarks/robots_matrix_mujoco.py)
GAIT = ["a1", "laikago", "aliengo", "mini_cheetah", "quad_turned", "hexapod"]


def _check_stance(rec: dict, n_feet: int, materials: tuple = mr.RUBBER) -> None:
    fig = mr.stance_figures(rec, materials)
    assert fig["loaded"] == n_feet, fig
    assert fig["sum_f_worst"] <= rr.SUM_F, fig
    assert fig["hertz"] <= rr.HERTZ, fig


@pytest.mark.parametrize("name", ALL)
def test_quiet_stance_at_the_static_hertz_overlap(name, tmp_path) -> None:
    """4 s of stance; over the last 0.5 s the summed foot force over the weight is within 1 %
    at every step, and every loaded foot's overlap in MuJoCo is the static Hertz overlap of
    its force within 5 % (the lean tree path, where it applies)."""
    spec = mr.ROBOTS[name]
    r = mr.model(spec, tmp_path)
    _check_stance(mr.run(spec, r, 4.0, record_from=3.5), len(r.feet))


@pytest.mark.parametrize(("name", "materials"), [("biped", mr.RUBBER),
                                                 ("quad_heavy", rr.STEEL)])
def test_quiet_stance_on_the_general_path(name, materials, tmp_path) -> None:
    """The same stance figures with the lean tree path off (every step through
    mbplugin/mujoco/trees.py): the biped (two feet spheres on one calf body), the heavy
    quadruped on steel feet and steel ground (E = 2e11)."""
    spec = mr.ROBOTS[name]
    r = mr.model(spec, tmp_path)
    rec = mr.run(spec, r, 4.0, record_from=3.5, materials=materials, general=True)
    assert rec["lean"] is None
    _check_stance(rec, len(r.feet), materials)


@pytest.mark.parametrize(("name", "variant"), [
    ("quad_turned", mr.MENAGERIE), ("biped", {"capsule": 0.01}), ("hexapod", {"copies": 2})])
def test_quiet_stance_of_mujoco_models(name, variant, tmp_path) -> None:
    """The stance figures on what MuJoCo users' models bring beyond the URDF: joint damping,
    friction loss and armature, position actuators, the implicitfast integrator and the knees
    pressed on their joint limits (MuJoCo's velocity update is then not M alone: the lean tree
    path takes it from the general path's ``update_matrix`` in mbplugin/mujoco/trees.py; its
    verification rounds read MuJoCo's end state, so a term missing there costs rounds rather
    than accuracy: dropping the limit term still passes here); capsule feet along turned
    calves (the geom's frame against the body's inertial frame: geometry.py's pose without the
    inertial frame's turn fails here); two robots in one model (two kinematic trees)."""
    spec = mr.ROBOTS[name]
    r = mr.model(spec, tmp_path, **variant)
    _check_stance(mr.run(spec, r, 3.0, record_from=2.5), len(r.feet))


@pytest.mark.parametrize("name", ["quad_turned", "hexapod"])
def test_fixed_base_legs_press_at_the_static_hertz_overlap(name, tmp_path) -> None:
    """The base welded to the world 3 mm below its standing height (each leg its own kinematic
    tree): the PD lowers the legs onto the floor and every foot's overlap in MuJoCo is the
    static Hertz overlap of its force within 5 % after 2 s; native MuJoCo holds the same pose
    (else the check says nothing)."""
    spec = mr.ROBOTS[name]
    r = mr.model(spec, tmp_path, fixed_press=0.003)
    assert mr.run(spec, r, 2.0, ours=False)["joint_error"] < 0.1
    rec = mr.run(spec, r, 2.0, record_from=1.5)
    fig = mr.stance_figures(rec)
    assert fig["loaded"] == len(r.feet), fig
    assert fig["hertz"] <= rr.HERTZ, fig


@pytest.mark.parametrize("name", ["biped", "quad_heavy"])
def test_drop_onto_the_feet_then_stance(name, tmp_path) -> None:
    """Dropped from 5 cm onto the feet: no exception, and in the last 0.5 s of 4 s the feet
    carry the weight within 1 % at every step (the robots the gait test leaves out; the heavy
    quadruped sways at ~0.7 Hz after the landing, still 1.5 % off at 2 s)."""
    spec = mr.ROBOTS[name]
    r = mr.model(spec, tmp_path)
    rec = mr.run(spec, r, 4.0, lift=0.05, record_from=3.5)
    assert not mr.fell(rec)
    assert mr.stance_figures(rec)["sum_f_worst"] <= rr.SUM_F


@pytest.mark.parametrize("name", GAIT)
def test_drop_onto_the_feet_then_gait_without_a_fall(name, tmp_path) -> None:
    """Dropped from 5 cm onto the feet, 1 s of stance, then 1.5 s of the open-loop gait: no
    exception, no fall, as native MuJoCo's run of the same robot (which must not fall either:
    else the check says nothing), and the robot walks forward as native does."""
    spec = mr.ROBOTS[name]
    r = mr.model(spec, tmp_path)
    native = mr.run(spec, r, 2.5, ours=False, lift=0.05, t_gait=1.0)
    ours = mr.run(spec, r, 2.5, lift=0.05, t_gait=1.0)
    assert not mr.fell(native)
    assert not mr.fell(ours)
    start = round(1.0 / mr.DT)
    fwd = ours["base"][-1, 0] - ours["base"][start, 0]
    fwd_native = native["base"][-1, 0] - native["base"][start, 0]
    assert fwd_native > 0.1 and fwd > 0.5 * fwd_native, (fwd, fwd_native)
    # the feet did lift and land in the gait (a foot without load at some step)
    assert (ours["force"][start:] == 0.0).any()
