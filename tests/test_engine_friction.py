"""Friction: the regularised Coulomb law and its closed-form consequences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.dynamics.friction import Friction, friction_force
from mbplugin.errors import ParameterError
from mbplugin.scene import build_scene

G = 9.81


def test_friction_law_limits() -> None:
    """Far from zero slip the force is mu F_N against the slip (Coulomb 1785); the Stribeck
    curve starts at mu_s; the linear regularisation is viscous inside v_eps; the viscous term
    adds c_v v."""
    vt = np.array([[2.0, 0.0, 0.0], [0.0, -1e-9, 0.0], [1e-5, 0.0, 0.0], [0.3, 0.4, 0.0]])
    fn = np.array([10.0, 10.0, 10.0, 10.0])
    f = friction_force(vt, fn, 0.3, 0.5, 0.01, 1e-4, 0.0, False)
    assert f[0] == pytest.approx([-3.0, 0.0, 0.0], rel=1e-12)
    # tiny slip: tanh regularisation ~ mu_s F_N v / v_eps
    assert f[1, 1] == pytest.approx(0.5 * 10.0 * 1e-9 / 1e-4, rel=1e-6)
    # direction opposes the slip, magnitude mu(0.5 m/s) F_N
    assert np.dot(f[3], vt[3]) < 0
    mu_05 = 0.3 + 0.2 * math.exp(-((0.5 / 0.01) ** 2))
    assert np.linalg.norm(f[3]) == pytest.approx(mu_05 * 10.0, rel=1e-9)
    lin = friction_force(vt[2:3], fn[:1], 0.3, 0.3, 0.01, 1e-4, 0.0, True)
    assert lin[0, 0] == pytest.approx(-0.3 * 10.0 * 0.1, rel=1e-12)
    visc = friction_force(vt[:1], np.zeros(1), 0.3, 0.3, 0.01, 1e-4, 2.0, False)
    assert visc[0, 0] == pytest.approx(-4.0)
    with pytest.raises(ParameterError, match="mu_s"):
        Friction(mu=0.5, mu_s=0.3)
    with pytest.raises(ParameterError, match="v_eps"):
        Friction(mu=0.5, v_eps=0.0)


def _ball_doc(v0: float, mu: float, duration: float) -> dict:
    return {
        "scene": {"duration": duration},
        "integrator": {"method": "adaptive", "rtol": 1e-8},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": 0.02, "mass": 0.1,
             "position": [0.0, 0.0, 0.02], "velocity": [v0, 0.0, 0.0]},
        ],
        "contact": {"law": "hunt_crossley", "params": {"k": 1e9, "cr": 0.3},
                    "friction": {"mu": mu, "v_eps": 1e-4}},
    }


def test_sliding_ball_ends_rolling_at_five_sevenths() -> None:
    """A solid sphere launched sliding without spin: friction slows the slip until it rolls,
    then v = 5/7 v0 and v = w R (angular momentum about the contact point is conserved)."""
    v0, mu, r = 1.0, 0.3, 0.02
    t_slide = 2.0 * v0 / (7.0 * mu * G)
    result = build_scene(_ball_doc(v0, mu, t_slide + 0.1)).run()
    i = result.body_names.index("ball")
    vx = result.vel[-1, i, 0]
    assert vx == pytest.approx(5.0 / 7.0 * v0, rel=1e-3)
    # rolling: the contact point is at rest, v = w_y R (body and world frames coincide here up
    # to the rotation about y, which leaves w_y unchanged)
    q = result.quat[-1, i]
    from mbplugin.dynamics.rotation import quat_to_matrix

    w_world = quat_to_matrix(q[None])[0] @ result.omega[-1, i]
    assert w_world[1] * r == pytest.approx(vx, rel=1e-3)
    # during the slide the ball decelerates at mu g
    k = int(np.searchsorted(result.t, 0.5 * t_slide))
    assert result.vel[k, i, 0] == pytest.approx(v0 - mu * G * result.t[k], rel=2e-3)


def _block_doc(theta_deg: float, mu: float, duration: float) -> dict:
    th = math.radians(theta_deg)
    return {
        "scene": {"duration": duration},
        # a horizontal floor with gravity tilted by theta is an incline of angle theta
        "world": {"gravity": [G * math.sin(th), 0.0, -G * math.cos(th)]},
        "integrator": {"method": "adaptive", "rtol": 1e-8, "max_step": 0.01},
        "output": {"contacts": False},
        "bodies": [
            {"name": "slope", "shape": "plane", "fixed": True},
            {"name": "block", "shape": "box", "half_extents": [0.05, 0.05, 0.025], "mass": 1.0,
             "position": [0.0, 0.0, 0.025]},
        ],
        "contact": {"law": "hunt_crossley", "params": {"k": 1e8, "cr": 0.3},
                    "friction": {"mu": mu, "v_eps": 1e-4}},
    }


def test_block_below_friction_angle_creeps_at_regularisation_speed() -> None:
    """Below the friction angle the block holds, up to the documented creep of the tanh
    regularisation, v = v_eps atanh(tan(theta)/mu) (mu F_N tanh(v/v_eps) = m g sin(theta))."""
    theta, mu = 20.0, 0.5
    result = build_scene(_block_doc(theta, mu, 1.0)).run()
    i = result.body_names.index("block")
    v_creep = Friction(mu=mu, v_eps=1e-4).creep_speed(math.radians(theta))
    assert v_creep == pytest.approx(1e-4 * math.atanh(math.tan(math.radians(theta)) / mu))
    assert result.vel[-1, i, 0] == pytest.approx(v_creep, rel=1e-3)
    assert result.pos[-1, i, 0] < 1.1 * v_creep * 1.0  # it has not slid away
    assert abs(result.vel[-1, i, 2]) < 1e-6


def test_block_above_friction_angle_slides_at_g_sin_minus_mu_cos() -> None:
    """Above the friction angle it accelerates at a = g (sin(theta) - mu cos(theta))."""
    theta, mu = 30.0, 0.3
    th = math.radians(theta)
    result = build_scene(_block_doc(theta, mu, 0.5)).run()
    i = result.body_names.index("block")
    a = G * (math.sin(th) - mu * math.cos(th))
    t = result.t
    k1, k2 = int(np.searchsorted(t, 0.1)), len(t) - 1
    assert t[k2] - t[k1] > 0.3
    acc = (result.vel[k2, i, 0] - result.vel[k1, i, 0]) / (t[k2] - t[k1])
    assert acc == pytest.approx(a, rel=1e-3)
