"""Property test of the engine (issue 10): random small scenes never give NaN, never raise
anything but the documented errors, and never report a binary bounce with c_r outside [0, 1]
for a dissipative law.

The scenes: one to three spheres above a floor at random places (overlapping each other or the
floor or not), a random law of the Hunt-Crossley family (dissipative, target c_r in [0.3, 0.9])
or Hertz (elastic), and a random integrator: adaptive, or a fixed step at or below the step
advisor's recommendation (examples whose step turns out above it are discarded). A contact's
c_r is bounded by [0, 1] only when it is a binary collision (Newton's restitution of a
dissipative law; Stronge 2000, Ch. 2): bounces during which the same body touched something
else are not checked (a ball pushed by a neighbour can leave faster than it came).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mbplugin.dynamics.simulation import SimulationWarning
from mbplugin.errors import IntegrationError, ParameterError
from mbplugin.scene import build_scene

R = 0.01
M = 0.01
G = 9.81
DISSIPATIVE = ("hunt_crossley", "lankarani_nikravesh", "flores")


def _doc(spheres: list[tuple[int, float, float, float]], law: str, cr: float, k: float,
         method: str, dt: float | None, duration: float) -> dict:
    bodies: list[dict] = [{"name": "floor", "shape": "plane", "fixed": True}]
    for i, (lane, dx, z, vz) in enumerate(spheres):
        bodies.append({"name": f"b{i}", "shape": "sphere", "radius": R, "mass": M,
                       "position": [lane * 2.2 * R + dx, 0.0, z],
                       "velocity": [0.0, 0.0, -vz]})
    integ: dict = {"method": method}
    if dt is not None:
        integ["dt"] = dt
    params: dict = {"k": k} if law == "hertz" else {"k": k, "cr": cr}
    return {"scene": {"duration": duration}, "integrator": integ,
            "output": {"contacts": False, "record_every": 5 if dt else 1},
            "bodies": bodies, "contact": {"law": law, "params": params}}


def _binary(b: dict, everything: list[dict]) -> bool:
    """No other contact of the same body overlaps this one in time."""
    for o in everything:
        if o is b:
            continue
        if b["body"] in (o["body"], o["other"]) and o["t"] < b["t_out"] and o["t_out"] > b["t"]:
            return False
    return True


# a sphere: a lane along x (2.2 R apart), an offset that can make neighbours overlap, a height
# (slightly into the floor down to 0.995 R) and a downward speed
sphere = st.tuples(st.integers(-2, 2), st.floats(-0.6 * R, 0.6 * R), st.floats(0.995 * R, 3 * R),
                   st.floats(0.0, 1.0))
V_MAX = 1.0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spheres=st.lists(sphere, min_size=1, max_size=3, unique_by=lambda s: s[0]),
       law=st.sampled_from((*DISSIPATIVE, "hertz")),
       cr=st.floats(0.3, 0.9), k=st.sampled_from([1e5, 1e6, 1e7]),
       method=st.sampled_from(["adaptive", "symplectic_euler", "rk4"]),
       dt_fraction=st.floats(0.2, 1.0))
def test_random_scenes_are_safe(spheres: list[tuple[int, float, float, float]], law: str,
                                cr: float, k: float, method: str, dt_fraction: float) -> None:
    duration = 0.04
    dt = None
    if method != "adaptive":
        # a step from the contact time scale (m/(k v^0.5))^(1/2.5) at the fastest impact
        v = math.sqrt(V_MAX**2 + 2 * G * 3 * R)
        tau = (M / (k * math.sqrt(v))) ** 0.4
        dt = dt_fraction * tau / 8.0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SimulationWarning)
            res = build_scene(_doc(spheres, law, cr, k, method, dt, duration)).run()
    except (ParameterError, IntegrationError) as exc:  # the documented errors
        assert str(exc)
        return
    if dt is not None:
        assume(dt <= res.advice.get("recommended_dt", math.inf))
    assert np.all(np.isfinite(res.pos)) and np.all(np.isfinite(res.vel))
    for key, series in res.energy.items():
        assert np.all(np.isfinite(series)), key
    everything = res.bounces + res.contacts_at_rest
    for b in res.bounces:
        assert math.isfinite(b["cr"])
        if law in DISSIPATIVE and _binary(b, everything):
            assert 0.0 <= b["cr"] <= 1.0, b
    if law in DISSIPATIVE:
        e = res.energy
        mech = e["kinetic"] + e["potential"] + e["stored"]
        tol = 2e-3 if method != "adaptive" else 1e-6
        assert np.max(mech - mech[0]) <= tol * max(res.energy_scale, 1e-12)
