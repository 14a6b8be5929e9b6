"""Bodies started into or through a thin part, the standalone engine (issues 18 and 21).

The engine's preflight accepts an initial overlap whose law force is below twice the weight: a
soft ball (Hertz k = 1e5) placed 60 % of the way through a 2 mm plate pushes with 1.5 N and ran
without a word on main. The width rule of the hosts (half the thinner shape's width along the
normal) now refuses it; the plate's half-thickness is the closed-form bound, and a placement
within it (and any overlap of a thick part the force rule accepts) still runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.dynamics.preflight import InitialOverlapError
from mbplugin.scene import build_scene

G = 9.81
R, K = 0.05, 1e5


def _doc(t: float, frac: float, rpy: tuple[float, float, float] = (0.0, 0.0, 0.0),
         plate: dict | None = None) -> dict:
    """A fixed plate 1 m across, ``t`` thick along its local z, turned by ``rpy`` (deg), and
    a ball ``frac`` of ``t`` into it along the plate's normal (gravity against the normal)."""
    a = np.radians(rpy)
    cx, sx, cy, sy = math.cos(a[0]), math.sin(a[0]), math.cos(a[1]), math.sin(a[1])
    n = np.array([sy, -sx * cy, cx * cy])  # R_x(a0) R_y(a1) e_z (a2 = 0)
    pos = n * (t / 2 + R - frac * t)
    body = plate or {"shape": "box", "half_extents": [0.5, 0.5, t / 2]}
    return {
        "scene": {"duration": 1e-3},
        "world": {"gravity": list(-G * n)},
        "integrator": {"method": "adaptive", "rtol": 1e-9},
        "output": {"contacts": False},
        "bodies": [
            {"name": "plate", "fixed": True, "rpy_deg": list(rpy), **body},
            {"name": "ball", "shape": "sphere", "radius": R, "mass": 1.0,
             "position": [float(x) for x in pos]},
        ],
        "contact": {"law": "hertz", "params": {"k": K}},
    }


@pytest.mark.parametrize("rpy", [(0.0, 0.0, 0.0), (30.0, 0.0, 0.0), (0.0, 90.0, 0.0)])
@pytest.mark.parametrize("t", [0.002, 0.005])
def test_soft_ball_60_percent_through_a_thin_plate_is_refused(t, rpy):
    # the force rule alone accepts it: k (0.6 t)^1.5 is below twice the weight
    assert K * (0.6 * t) ** 1.5 < 2 * G
    with pytest.raises(InitialOverlapError,
                       match=rf"overlap by {0.6 * t:.4g} m .*at most {t / 2:.4g} m"):
        build_scene(_doc(t, 0.6, rpy)).run()


def test_within_half_the_plate_and_thick_plates_run():
    res = build_scene(_doc(0.002, 0.4)).run()
    (ov,) = res.initial_overlaps
    assert ov["accepted"] and ov["max_overlap"] == pytest.approx(0.001, rel=1e-12)
    # 3 mm into a 20 cm thick box: the force rule decides (16 N < 2 weights), as on main
    thick = _doc(0.2, 0.015)
    (ov,) = build_scene(thick).run().initial_overlaps
    assert ov["delta"] == pytest.approx(0.003, rel=1e-9) and ov["accepted"]
