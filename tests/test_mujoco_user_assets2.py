"""What a new user brings to the MuJoCo host (issue 21, branch mjfuzz): a ball through a thin
slab within one step, meshes of their own (a cube mesh, a tessellated cube, a mesh whose origin
is far from its centroid, a scaled mesh, a non-convex mesh, a long thin bar, mesh on mesh, mesh
on a box ground).

Every figure is from outside the code under test: the ball's crossing from MuJoCo's own
``qpos``; rest as sum F = m g (the bodies' weights from the model's masses); overlaps against
MuJoCo's ``mj_geomDistance``; a block sliding at the Coulomb deceleration mu g (its velocity
slope from MuJoCo's ``qvel``)."""

from __future__ import annotations

import warnings

import mujoco
import pytest
from thin_ball import SOFT, M, R

from mbplugin.contact.sizes import PassThroughWarning
from mbplugin.mujoco import MujocoContacts

SLAB = '<geom name="slab" type="box" size="0.5 0.5 0.005"/>'


def _ball_on_slab(delta0: float, v: float) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """A free ball (R, M) over a 1 cm slab at z in [-5, 5] mm, overlapping it by ``delta0``
    (m), moving down at ``v`` (m/s), no gravity."""
    z = 0.005 + R - delta0
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><option gravity="0 0 0"/><worldbody>{SLAB}<body name="ball" pos="0 0 {z!r}">'
        f'<freejoint/><geom name="ball" type="sphere" size="{R}" mass="{M}"/></body>'
        "</worldbody></mujoco>")
    d = mujoco.MjData(m)
    d.qvel[2] = -v
    mujoco.mj_forward(m, d)
    return m, d


@pytest.mark.parametrize(("delta0", "v"), [(0.0002, 100.0), (0.003, 80.0), (0.001, 150.0)])
def test_a_soft_ball_fully_through_a_1cm_slab_in_one_step_is_reported(delta0, v):
    """Starting a 2 ms step barely into a 1 cm slab at 80-150 m/s, a soft ball (E = 1e7 Pa)
    ends the step wholly below it (MuJoCo's qpos: its top under the slab's bottom face), with
    no overlap at either end of the step. The run says so once (PassThroughWarning, naming
    both geoms; on main nothing was said)."""
    m, d = _ball_on_slab(delta0, v)
    contacts = MujocoContacts(m, d, manage=["slab"], law="hertz", material=SOFT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        contacts.step()
        through = float(d.qpos[2]) + R < -0.005  # wholly below the slab after one step
        for _ in range(5):
            contacts.step()
    said = [w for w in caught if issubclass(w.category, PassThroughWarning)]
    assert through
    assert len(said) == 1
    msg = str(said[0].message)
    assert "'slab'" in msg and "'ball'" in msg and "t = 0 s" in msg
    assert said[0].filename == __file__


def test_a_ball_bouncing_off_a_slab_at_speed_says_nothing():
    """The same start against a steel ball (E = 2e11 Pa) at 10 m/s: it bounces back off the
    slab (MuJoCo's qvel turns upward) and nothing is said."""
    m, d = _ball_on_slab(0.0005, 10.0)
    contacts = MujocoContacts(m, d, manage=["slab"], law="hertz",
                              material={"E": 2e11, "nu": 0.3})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PassThroughWarning)
        for _ in range(20):
            contacts.step()
    assert float(d.qvel[2]) > 0.0 and float(d.qpos[2]) > 0.005 + R - 0.001
