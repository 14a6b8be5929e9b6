"""The exact free flight of free rows, written once for every host.

A host that steps a free body with semi-implicit Euler, v1 = v0 + g dt, x1 = x0 + dt v1 (PyBullet,
MuJoCo's Euler and implicit integrators), has exact velocities under a constant acceleration
but runs ahead of the parabola by g dt^2 / 2 per step (a g dt t / 2 lag after t s of flight:
a ball landing at speed v lands about one host step early). A backend keeps its free rows on
the exact parabola by taking :func:`flight_offset` off each host step of a free flight;
:func:`ballistic` tells a free flight from a step in which something else (a native contact, a
constraint, the user's force or reset) pushed the body, which is left alone.
"""

from __future__ import annotations

import numpy as np

from mbplugin.hosts.arrays import norm_rows

#: a step whose velocity change is gravity's within this fraction (plus 1e-12) is a free
#: flight (PyBullet's default linear damping, 0.04 s^-1, changes it by ~1e-4 of g dt)
BALLISTIC_TOL = 0.05


def ballistic(change: np.ndarray, gravity: np.ndarray) -> np.ndarray:
    """(N,) True for rows whose velocity change (or acceleration) ``change`` (N, 3) over the
    host step is ``gravity``'s (3,) (g dt, or g) within BALLISTIC_TOL of its norm."""
    return (norm_rows(change - gravity)
            <= BALLISTIC_TOL * float(np.linalg.norm(gravity)) + 1e-12)


def flight_offset(g: np.ndarray, dt: float) -> np.ndarray:
    """(3,) m: how far the host's semi-implicit step of length ``dt`` (s) runs ahead of the
    exact parabola under gravity ``g`` (m/s^2), g dt^2 / 2 (module docstring)."""
    return 0.5 * dt * dt * g
