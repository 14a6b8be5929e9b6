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

The full matrix (both host steps for every check, 10 s creep everywhere) is
``python benchmarks/robots_matrix.py``; this suite runs every robot at 1/240 s and a subset at
1/1000 s with shorter runs (BENCHMARKS.md).
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pytest
import robot_rig as rr
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts

ALL = list(rr.ROBOTS)
#: the acceptance tolerances (issue 18): summed force / weight, host vs backend overlap, host vs
#: static Hertz, creep over native (m)
SUM_F, OVERLAP, HERTZ, CREEP = 0.01, 0.02, 0.05, 5e-4


def _check_stance(fig: dict[str, float]) -> None:
    assert fig["loaded"] > 0
    assert abs(fig["sum_f"] - 1.0) <= SUM_F, fig
    assert fig["overlap"] <= OVERLAP, fig
    assert fig["hertz"] <= HERTZ, fig
    assert fig["slip"] <= 1e-5, fig


@pytest.mark.parametrize("name", ALL)
def test_quiet_stance_and_creep_at_240_hz(name, tmp_path) -> None:
    """11 s of stance with the tangential spring (Dahl): in the last 0.5 s the feet carry the
    weight, the host's overlap of every loaded contact is the backend's and the static Hertz
    overlap of its force, the host's slip is the backend's; over 10 s the feet creep no more
    than natively + 0.5 mm."""
    spec = rr.ROBOTS[name]
    stick = {"stick": rr.STICK}
    ours = rr.run(spec, tmp_path, 1 / 240, 11.0, tangential=stick, record_from=10.5,
                  creep_from=1.0)
    native = rr.run(spec, tmp_path, 1 / 240, 11.0, ours=False, record_from=10.5,
                    creep_from=1.0)
    _check_stance(rr.stance_figures(ours, rr.RUBBER))
    assert rr.creep(ours) <= rr.creep(native) + CREEP
