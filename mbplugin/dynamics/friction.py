"""Friction of the engine: re-exported from :mod:`mbplugin.pipeline.friction` (one place)."""

from mbplugin.pipeline.friction import (  # noqa: F401
    Friction,
    friction_force,
    friction_scalar,
    friction_stiffness,
)
