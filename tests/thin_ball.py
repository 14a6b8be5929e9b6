"""The soft test ball of tests/test_thin_parts_*.py and its static Hertz figures, written out
from Hertz's closed form (ball on a flat face: R_eff = R, k = 4/3 E* sqrt(R), E* of the ball
against an equal material, E / (2 (1 - nu^2)))."""

from __future__ import annotations

import math

G = 9.81
R = 0.05  # ball radius (m)
M = 1.0  # ball mass (kg)
SOFT = {"E": 1e7, "nu": 0.3}  # static Hertz overlap of the ball ~0.33 mm
E_STAR = SOFT["E"] / (2.0 * (1.0 - SOFT["nu"] ** 2))
K = 4.0 / 3.0 * E_STAR * math.sqrt(R)  # Hertz, ball on a flat face (R_eff = R), N/m^1.5
DELTA_STATIC = (M * G / K) ** (2.0 / 3.0)  # m
