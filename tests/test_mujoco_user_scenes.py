"""MuJoCo with what users bring (issue 21): the ``light`` fuzz robot whose 1 g foot the step
spun, and generated MJCF scenes (:mod:`mjcf_gen`), against the outside world.

The light robot of seed 18 (:func:`urdf_gen.random_robot`): a 1.1 g mesh foot on a hinge held
by an 8 Hz position actuator (6.2e-7 kg m^2 about its axis, MuJoCo's ``dof_M0``) under an
11.4 kg body. On main a 2 ms step turned the foot by 3.6 rad, MuJoCo flagged a huge
acceleration and reset its state (``mjWARN_BADQACC``), and Newton's method later failed with a
message about a Stribeck drop the friction does not have. Now the step that turns a joint by
more than :data:`mbplugin.mujoco.trees.TURN_MAX` stops with an error naming the joint before
MuJoCo has to reset anything; with the remedy it names (armature) the robot rests with the
rig's checks (sum F = m g, energy counted as the rig counts it, rest).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import mjcf_gen as mg  # noqa: E402
import urdf_fuzz_rig as fr  # noqa: E402
import urdf_gen  # noqa: E402

from mbplugin.errors import IntegrationError  # noqa: E402
from mbplugin.mujoco import MujocoContacts, geom  # noqa: E402


def _light18() -> tuple[object, object, object]:
    made = urdf_gen.random_robot(Path(tempfile.mkdtemp()), 18, "light")
    m = fr.mujoco_model(made)
    d = mujoco.MjData(m)
    robot = [g for g in range(m.ngeom) if m.geom_bodyid[g] != 0]
    d.qpos[2] = 1.0
    mujoco.mj_forward(m, d)
    low = min(mujoco.mj_geomDistance(m, d, 0, g, 10.0, None) for g in robot)
    d.qpos[2] += fr.DROP - low
    mujoco.mj_forward(m, d)
    return made, m, d


def test_light_foot_spun_by_a_step_is_a_clear_error() -> None:
    made, m, d = _light18()
    robot = [g for g in range(m.ngeom) if m.geom_bodyid[g] != 0]
    c = MujocoContacts(m, d, manage=[("floor", geom(g)) for g in robot], law=fr.law(made),
                       friction=fr.FRICTION, rtol=1e-6)
    try:
        with pytest.raises(IntegrationError, match=r"joint 'j2' turned .* rad in one 0.002 s"):
            for _ in range(750):
                c.step()
        # stopped before MuJoCo met an acceleration it had to reset its state for
        assert d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0
    finally:
        c.release()


def test_light_foot_with_armature_rests() -> None:
    made = urdf_gen.random_robot(Path(tempfile.mkdtemp()), 18, "light")
    orig = fr.mujoco_model

    def with_armature(mm: urdf_gen.Made) -> object:
        m = orig(mm)
        m.dof_armature[6:] += 1e-5  # kg m^2 on each held joint: the error's remedy
        return m

    fr.mujoco_model = with_armature
    try:
        fig = fr.run("mujoco", made, "pairs")
    finally:
        fr.mujoco_model = orig
    assert fr.verdict(fig) == []
    assert abs(fig["sum_f"] - 1.0) <= fr.SUM_F


@pytest.mark.parametrize("seed", [0, 1, 2, 8])
def test_generated_mjcf_scene(seed: int) -> None:
    """Tilted plane with box/cylinder/ellipsoid feet and margins (0), a big-box ground with
    sphere feet under Hertz (1), Euler on a slide rail (2), Euler with a free torso on sphere
    and capsule feet (8): sum F = m g cos(tilt), overlaps = mj_geomDistance, Hertz, the
    unmanaged sphere bitwise native."""
    sc = mg.random_mjcf(seed)
    fig = mg.run(sc)
    assert fig["refused"] is None
    assert mg.verdict(fig) == [], sc.label()
    assert fig["ball_off"] == 0.0
    if seed == 1:
        assert fig["hertz_n"] >= 1 and fig["hertz"] <= mg.HERTZ


def test_generated_mjcf_rk4_is_refused_in_one_line() -> None:
    sc = mg.random_mjcf(4)
    assert sc.integrator == "RK4"
    fig = mg.run(sc)
    assert fig["refused"] is not None and "integrator" in fig["refused"]
    assert "RK4" in fig["refused"] and "\n" not in fig["refused"]


def test_mjcf_generator_covers_what_users_write() -> None:
    scenes = [mg.random_mjcf(s) for s in range(30)]
    kinds = {k for sc in scenes for k in sc.foot_kind.values()}
    assert kinds == set(mg.FEET)
    assert {sc.ground for sc in scenes} == set(mg.GROUNDS)
    assert {sc.integrator for sc in scenes} == set(mg.INTEGRATORS)
    assert {j for sc in scenes for j in sc.joints} == {"hinge", "slide", "ball"}
    assert {sc.root for sc in scenes} == {"free", "slide"}
    assert any('margin="0.002"' in sc.xml for sc in scenes)
    assert np.isclose(min(sc.timestep for sc in scenes), 0.001)
    assert np.isclose(max(sc.timestep for sc in scenes), 0.004)
