"""Scene acceptance: Azad & Featherstone's step-size experiment, a resting stack, the Bouc-Wen
two-balls-in-a-pipe example against the impact analyser."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.impact import impact
from mbplugin.laws import make_law
from mbplugin.scene import load_scene

# Azad & Featherstone (2014), Sect. II-C: Simulink ode23t needed 958 + 887 + 255 steps.
SIMULINK_STEPS = 958 + 887 + 255


def test_azad_drop_steps_bounce_decay_and_settling() -> None:
    """66 g ball, 1 m, g = 10, k = 1e10, lam = 1e5 (Eq. 11), 5 s: fewer steps than Simulink's
    2100, bounce height below 1 mm at about 2.4 s, the paper's 26 micro-bounces, then rest on
    the plate at the Hertz static indentation (m g / k)^(2/3) with the linearised resonance
    sqrt(1.5 k delta0^0.5 / m)/(2 pi) = 1.5 kHz (the paper quotes a limiting 1.4 kHz)."""
    scene = load_scene("scenes/azad_drop.toml")
    result = scene.run()
    a = result.extra["analysis"]
    assert result.stats.steps < SIMULINK_STEPS
    assert sum(p["steps"] for p in a["steps_per_phase"]) == result.stats.steps
    assert a["height_below_threshold_at"] == pytest.approx(2.4, abs=0.05)
    assert a["micro_bounces"] == 26
    # settled: the ball rests on the plate for the last 2.4 s
    assert a["last_separation"] < 2.6
    m, k, g = 0.066, 1e10, 10.0
    delta0 = (m * g / k) ** (2.0 / 3.0)
    i = result.body_names.index("ball")
    z_end = result.pos[-1, i, 2]
    assert 0.0127 - z_end == pytest.approx(delta0, rel=1e-3)
    assert abs(result.vel[-1, i, 2]) < 1e-6
    f_lin = math.sqrt(1.5 * k * math.sqrt(delta0) / m) / (2 * math.pi)
    assert a["resting_frequency_hz"] == pytest.approx(f_lin, rel=1e-3)
    assert 1.4e3 <= a["resting_frequency_hz"] <= 1.6e3


def test_stack_of_ten_stays_at_rest() -> None:
    """Ten balls stacked on the floor settle and then stay put: after 1 s no ball moves by more
    than 1 um during the next 10 s, and the contact forces carry the weight above each contact
    (statics: F_i = (N - i) m g)."""
    scene = load_scene("scenes/stack_n.toml", ["n=10", "duration=11"])
    result = scene.run()
    i1 = int(np.searchsorted(result.t, 1.0))
    assert result.t[-1] == pytest.approx(11.0)
    drift = np.abs(result.pos[i1:] - result.pos[i1]).max()
    assert drift < 1e-6
    world = scene.world
    tab = world.contacts.contact_table(result.final_state)
    m = world.bodies.mass[1]
    order = np.argsort(tab["a"])
    expected = (10 - np.arange(10)) * m * 9.81
    np.testing.assert_allclose(tab["force"][order], expected, rtol=1e-6)


@pytest.mark.parametrize("law", ["bouc_wen_hunt_crossley", "bouc_wen_maxwell"])
def test_two_balls_pipe_matches_impact_analyser(law: str) -> None:
    """Milehins & Marghitu (2026), Sect. 6: the engine's 3-D run of both balls reproduces the
    analyser's binary collinear impact with the effective external force
    u(t) = m_eff (g + (2/pi) D atan(w t)) (spec section 4.3) -- c_r and separation time."""
    scene = load_scene("scenes/two_balls_pipe.toml", [f"law={law}"])
    result = scene.run()
    first = result.bounces[0]
    a, rho1, rho2, g, D, w = 0.05, 3000.0, 1000.0, 9.81, 250.0, 1000.0
    m1 = 4.0 / 3.0 * math.pi * a**3 * rho1
    m2 = 4.0 / 3.0 * math.pi * a**3 * rho2
    m_eff = m1 * m2 / (m1 + m2)
    assert m_eff == pytest.approx(0.392699, rel=1e-5)  # spec section 4.3
    ref_law = make_law(law, k=1e6, c=1e3, p=1.5, n=1.5, alpha=0.5, beta=1e4, gamma=-5e3, A=1.0)
    ref = impact(ref_law, m1, 2.0, mass2=m2, rtol=1e-11,
                 force_ext=lambda t: m_eff * (g + 2.0 / math.pi * D * math.atan(w * t)))
    assert first["v_in"] == pytest.approx(2.0, rel=1e-12)
    assert first["t"] == 0.0
    assert first["cr"] == pytest.approx(ref.cr_out, rel=1e-4)
    assert first["t_out"] == pytest.approx(ref.duration, rel=1e-4)
    # a hysteretic law lets go with a residual overlap (Eq. 17, spec section 1.3)
    assert ref.delta_residual > 0


def test_newtons_cradle_with_and_without_gaps() -> None:
    """Equal elastic balls with gaps: each impact is a binary elastic collision that swaps the
    velocities, so the last ball leaves at v0 and the others stop. Touching Hertz balls: the
    contacts overlap and the pulse disperses (the last ball leaves slower, the striker recoils);
    momentum and energy are still conserved."""
    v0 = 0.5
    names = ["striker", "ball_0", "ball_1", "ball_2", "ball_3"]
    gapped = load_scene("scenes/newtons_cradle.toml").run()
    v = np.array([gapped.vel[-1, gapped.body_names.index(n), 0] for n in names])
    np.testing.assert_allclose(v, [0, 0, 0, 0, v0], atol=1e-6 * v0)
    touching = load_scene("scenes/newtons_cradle.toml", ["gap=0"]).run()
    v = np.array([touching.vel[-1, touching.body_names.index(n), 0] for n in names])
    assert v.sum() == pytest.approx(v0, rel=1e-9)  # equal masses: momentum
    assert (v**2).sum() == pytest.approx(v0**2, rel=1e-7)  # energy (all contacts ended)
    assert 0.95 * v0 < v[-1] < 0.9999 * v0
    assert v[0] < 0


def test_stacked_balls_sequential_elastic_collision() -> None:
    """With a gap the floor bounce ends before the balls meet: the top ball leaves with the
    elastic two-body result v' = ((m_t - m_b) v_t + 2 m_b v_b)/(m_t + m_b) of the velocities at
    contact onset (gravity acts on both alike), about 2.6x the impact speed for m_t/m_b = 0.095
    (the (3 - mu)/(1 + mu) limit of the classic demonstration)."""
    result = load_scene("scenes/stacked_balls.toml").run()
    pair = [b for b in result.bounces if {b["body"], b["other"]} == {"basketball", "tennis"}]
    assert len(pair) == 1
    t_on = pair[0]["t"]
    k = int(np.argmin(np.abs(result.t - t_on)))
    assert result.t[k] == pytest.approx(t_on, abs=1e-12)
    ib, it = result.body_names.index("basketball"), result.body_names.index("tennis")
    vb, vt = result.vel[k, ib, 2], result.vel[k, it, 2]
    mb, mt = 0.6, 0.057
    expected = ((mt - mb) * vt + 2 * mb * vb) / (mt + mb)
    v_after = result.extra["analysis"]["max_velocity"]["tennis"][2]
    assert v_after == pytest.approx(expected, rel=2e-3)
    v_impact = math.sqrt(2 * 9.81 * 1.0)
    mu = mt / mb
    assert v_after / v_impact == pytest.approx((3 - mu) / (1 + mu), rel=0.01)
