"""The standalone engine: rigid bodies, loads, friction, integrators and contact events.

>>> from mbplugin.scene import load_scene
>>> result = load_scene("scenes/drop_ball.toml").run()
"""

from __future__ import annotations

from mbplugin.dynamics.bodies import Bodies, StateLayout, box_inertia, make_bodies, sphere_inertia
from mbplugin.dynamics.friction import Friction, friction_force
from mbplugin.dynamics.integrators import IntegratorSettings, RunStats, integrate
from mbplugin.dynamics.loads import Load, Loads, TimeFunction
from mbplugin.dynamics.world import World

__all__ = [
    "Bodies",
    "Friction",
    "IntegratorSettings",
    "Load",
    "Loads",
    "RunStats",
    "StateLayout",
    "TimeFunction",
    "World",
    "box_inertia",
    "friction_force",
    "integrate",
    "make_bodies",
    "sphere_inertia",
]
