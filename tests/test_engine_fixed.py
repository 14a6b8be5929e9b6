"""Fixed-step integrators with contacts, and the step-size advisor against linear stability."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mbplugin.dynamics.advisor import stable_step
from mbplugin.scene import build_scene, load_scene

M, R, K, G = 0.1, 0.01, 1e5, 9.81
EPS = 1e-3  # initial offset from the static equilibrium, relative


def _resting(method: str, dt: float, duration: float, law: dict | None = None) -> dict:
    # start just below the static equilibrium m g / k of a linear (Hooke) contact
    delta0 = M * G / K
    return {
        "scene": {"duration": duration},
        "integrator": {"method": method, "dt": dt},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": R, "mass": M,
             "position": [0.0, 0.0, R - (1.0 + EPS) * delta0]},
        ],
        "contact": law or {"law": "hooke", "params": {"k": K}},
    }


@pytest.mark.parametrize(("method", "limit"), [("symplectic_euler", 2.0),
                                                ("rk4", 2.0 * math.sqrt(2.0))])
def test_advisor_matches_linear_stability_of_a_resting_contact(method: str,
                                                               limit: float) -> None:
    """A ball resting on a linear spring k is an undamped oscillator w = sqrt(k/m): the explicit
    step is stable for h w < 2 (semi-implicit Euler) and 2 sqrt(2) (RK4). The advisor says so,
    a run just below the limit stays bounded and one just above it diverges and is warned of."""
    w = math.sqrt(K / M)
    h_crit = limit / w
    i = 1
    offset = EPS * M * G / K
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        below = build_scene(_resting(method, 0.97 * h_crit, 0.2)).run()
    assert below.advice["h_stable_min"] == pytest.approx(h_crit, rel=1e-6)
    # stable (no stability warning); above the accuracy recommendation, which is said
    assert not [w for w in below.warnings if "stable step" in w]
    assert below.advice["recommended_dt"] < 0.97 * h_crit
    assert any("recommendation" in w for w in below.warnings)
    amp = np.abs(below.pos[:, i, 2] - (R - M * G / K))
    assert amp.max() < 10 * offset  # bounded (the discrete invariant is a stretched ellipse)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        above = build_scene(_resting(method, 1.03 * h_crit, 0.2)).run()
    assert above.warnings and "exceeds the stable step" in above.warnings[0]
    amp = np.abs(above.pos[:, i, 2] - (R - M * G / K))
    assert amp.max() > 100 * offset  # it diverges


def test_advisor_damped_oscillator_formula() -> None:
    """Semi-implicit Euler on m x'' + c x' + k x = 0 is stable for h w < 2 (sqrt(1 + z^2) - z)
    (Jury conditions); checked against the amplification matrix's spectral radius."""
    m, k = 1.0, 1.0
    for c in (0.0, 0.3, 2.0, 10.0):
        h = float(stable_step(np.array([k]), np.array([c]), np.array([m]),
                              "symplectic_euler")[0])
        for f, expect_stable in ((0.999, True), (1.001, False)):
            hh = f * h
            A = np.array([[1 - hh * hh * k / m, hh * (1 - hh * c / m)], [-hh * k / m,
                                                                           1 - hh * c / m]])
            rho = max(abs(np.linalg.eigvals(A)))
            assert (rho <= 1.0 + 1e-12) == expect_stable


def test_symplectic_euler_bounce_keeps_energy_bounded() -> None:
    """Hertz bounces with semi-implicit Euler: the energy between bounces does not drift (the
    method is symplectic; its energy error stays O(h) and returns after each contact) and every
    c_r is 1 to O(h)."""
    h0 = 0.005
    doc = {
        "scene": {"duration": 0.12},
        "integrator": {"method": "symplectic_euler", "dt": 5e-6},
        "output": {"contacts": False, "record_every": 10},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": R, "mass": M,
             "position": [0.0, 0.0, R + h0]},
        ],
        "contact": {"law": "hertz", "params": {"k": 1e8}},
    }
    result = build_scene(doc).run()
    assert len(result.bounces) >= 2
    for b in result.bounces:
        assert b["cr"] == pytest.approx(1.0, abs=1e-3)
    e = result.energy
    free = e["stored"] == 0.0
    total = (e["kinetic"] + e["potential"])[free]
    assert np.ptp(total) < 1e-3 * M * G * h0


@pytest.mark.parametrize(("method", "dt", "tol"), [("rk4", 1e-6, 5e-4),
                                                  ("symplectic_euler", 1e-6, 2e-3)])
def test_fixed_steps_integrate_bouc_wen_state(method: str, dt: float, tol: float) -> None:
    """The Bouc-Wen-Maxwell law's ODE states (rho, zeta) ride with the bodies in the fixed-step
    methods too: the two-balls-in-a-pipe c_r converges to the adaptive run's. A fixed step sees
    the end of contact only at a step boundary, so the error is O(dt) whatever the order (here
    the pressing force's 260 m/s^2 times dt)."""
    ref = load_scene("scenes/two_balls_pipe.toml", ["law=bouc_wen_maxwell",
                                                    "scene.duration=0.012"]).run()
    fixed = load_scene("scenes/two_balls_pipe.toml", [
        "law=bouc_wen_maxwell", "scene.duration=0.012", f"integrator.method={method}",
        f"integrator.dt={dt}", "output.record_every=100"]).run()
    assert fixed.bounces[0]["cr"] == pytest.approx(ref.bounces[0]["cr"], rel=tol)
