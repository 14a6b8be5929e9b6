"""Drop-ball acceptance: the engine against the impact analyser and energy conservation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mbplugin.impact import impact
from mbplugin.laws import HUNT_CROSSLEY_FAMILY, make_law
from mbplugin.scene import build_scene, load_scene

SCENE = "scenes/drop_ball.toml"
M, R, H, G, K = 0.066, 0.0127, 0.5, 9.81, 1e10


@pytest.mark.parametrize("law", HUNT_CROSSLEY_FAMILY)
def test_first_bounce_cr_equals_impact_analyser(law: str) -> None:
    """The scene's first bounce (events at contact onset and at the end of contact, Eq. 17)
    has the c_r of the isolated impact solved by the analyser with the ball's weight as the
    pressing force (press = m g) at the same approach speed sqrt(2 g h)."""
    scene = load_scene(SCENE, [f"law={law}", "cr=0.7", "duration=0.33"])
    result = scene.run()
    first = result.bounces[0]
    v0 = math.sqrt(2 * G * H)
    assert first["v_in"] == pytest.approx(v0, rel=1e-9)
    ref = impact(make_law(law, k=K, n=1.5, cr=0.7), M, first["v_in"], press=M * G)
    assert first["cr"] == pytest.approx(ref.cr_out, rel=1e-6)
    assert first["t_out"] - first["t"] == pytest.approx(ref.duration, rel=1e-5)


def _drop_doc(law: dict, mass: float, radius: float, gap: float, v_down: float,
              duration: float, rtol: float) -> dict:
    return {
        "scene": {"duration": duration},
        "world": {"gravity": [0.0, 0.0, -G]},
        "integrator": {"method": "adaptive", "solver": "DOP853", "rtol": rtol},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": radius, "mass": mass,
             "position": [0.0, 0.0, radius + gap], "velocity": [0.0, 0.0, -v_down]},
        ],
        "contact": law,
    }


def test_elastic_energy_drift_over_100_bounces() -> None:
    """Hertz contact conserves energy (Hertz 1881: F = k delta^1.5 is conservative): with the
    adaptive integrator kinetic + potential + stored elastic energy stays within 1e-6 of its
    initial value over 100 bounces."""
    mass, radius, h = 0.05, 0.01, 0.01
    flight = 2 * math.sqrt(2 * h / G)
    doc = _drop_doc({"law": "hertz", "params": {"k": 1e9}}, mass, radius, h, 0.0,
                    100.5 * flight, 1e-10)
    result = build_scene(doc).run()
    assert len(result.bounces) >= 100
    e = result.energy
    total = e["kinetic"] + e["potential"] + e["stored"]
    drift = np.max(np.abs(total - total[0])) / (mass * G * h)
    assert drift < 1e-6
    # every bounce of an elastic law returns the impact speed
    cr = np.array([b["cr"] for b in result.bounces])
    assert np.all(np.abs(cr - 1.0) < 1e-6)


DISSIPATIVE = [
    *HUNT_CROSSLEY_FAMILY,
    "kelvin_voigt",
    "azad_featherstone",
    "hunt_crossley_general",
    "bouc_wen_hunt_crossley",
]


def _law_table(name: str, k: float, cr: float, m: float) -> dict:
    if name == "kelvin_voigt":
        return {"law": name, "params": {"k": k / 1e3, "cr": cr}}
    if name == "azad_featherstone":
        return {"law": name, "params": {"k": k, "lam": (1.0 - cr) * k * 1e-3}}
    if name == "hunt_crossley_general":
        return {"law": name, "params": {"k": k, "lam": (1.0 - cr) * k, "m": 1.5}}
    if name == "bouc_wen_hunt_crossley":
        return {"law": name, "params": {"k": k, "c": (1.0 - cr) * k, "alpha": 0.5,
                                        "beta": 3e3, "gamma": -1.5e3, "n": 1.0}}
    return {"law": name, "params": {"k": k, "cr": cr}}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    law=st.sampled_from(DISSIPATIVE),
    cr=st.floats(0.2, 0.95),
    log_k=st.floats(7.0, 10.0),
    mass=st.floats(0.01, 1.0),
    speed=st.floats(0.1, 4.0),
)
def test_dissipative_laws_never_create_energy(law: str, cr: float, log_k: float, mass: float,
                                              speed: float) -> None:
    """With a dissipative law the mechanical energy (kinetic + potential + elastic energy held
    by the contact) never increases beyond the integrator's tolerance, across impacts,
    separations (the elastic energy left in a residual overlap is lost) and flights."""
    radius = 0.02
    duration = min(3.0 * 2.0 * speed / G + 0.005, 1.5)
    doc = _drop_doc(_law_table(law, 10.0**log_k, cr, mass), mass, radius, 1e-4, speed,
                    duration, 1e-9)
    result = build_scene(doc).run()
    e = result.energy
    total = e["kinetic"] + e["potential"] + e["stored"]
    scale = 0.5 * mass * speed**2 + mass * G * 1e-4
    rise = float(np.max(np.diff(total)))
    assert rise < 1e-6 * scale
    assert total[-1] <= total[0] + 1e-6 * scale
    assert len(result.bounces) >= 1
