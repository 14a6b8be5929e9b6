"""The options every host backend takes (``BulletContacts``, ``MujocoContacts``), each checked
against its allowed range at the door: friction, the tangential spring, the numerical
options of the contact-space step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.pipeline.friction import Friction
from mbplugin.pipeline.stick import Stick
from mbplugin.pipeline.substep import LARGE_GROUPS, SOLVERS

#: the ``articulated=`` modes: the implicit step (default) or the exact sub-stepper
ARTICULATED_MODES = ("implicit", "substep")
#: the regularisation of the host's friction (``friction=None``): each contact's coefficient
#: from the host's shapes with the regularised Coulomb law's defaults (tanh, v_eps = 1e-4
#: m/s); its mu is a placeholder (each contact takes its pair's)
HOST_FRICTION = Friction(mu=1.0)


def as_friction(friction: Any, host: str, source: str) -> tuple[str, Friction | None]:
    """(mode, Friction) of a backend's ``friction=``: (``host``, HOST_FRICTION) for None or
    the host's name (each contact's coefficient from the host, ``source`` says how),
    ("none", None) for 0 or "none" (frictionless), ("given", Friction) for a Friction or a
    mapping of its parameters."""
    if friction is None or (isinstance(friction, str) and friction == host):
        return host, HOST_FRICTION
    if (isinstance(friction, str) and friction == "none") or (
            isinstance(friction, int | float) and not isinstance(friction, bool)
            and friction == 0):
        return "none", None
    if isinstance(friction, Friction):
        return "given", friction
    if isinstance(friction, Mapping):
        return "given", Friction(**friction)
    raise ParameterError(f"friction = {friction!r} must be None or {host!r} ({source}, the "
                         "default), 0 or 'none' (frictionless), a Friction, or a mapping of "
                         "its parameters (mu, mu_s, v_s, v_eps, viscous, regularisation)")


def as_stick(stick: Any) -> Stick | None:
    """``stick=`` of a backend: None, a :class:`~mbplugin.pipeline.stick.Stick` or a mapping
    of k_t, mu, c_t."""
    if stick is None or isinstance(stick, Stick):
        return stick
    if not isinstance(stick, Mapping):
        raise ParameterError(f"stick = {stick!r} must be a Stick or a mapping of k_t, mu, c_t")
    return Stick(**stick)


def check_options(rtol: Any, solver: Any, articulated: Any, verify: Any,
                  large_groups: Any) -> None:
    """The numerical options of a backend, each against its allowed range."""
    if large_groups not in LARGE_GROUPS:
        raise ParameterError(f"large_groups = {large_groups!r}: allowed "
                             f"{', '.join(LARGE_GROUPS)}")
    if articulated not in ARTICULATED_MODES:
        raise ParameterError(f"articulated = {articulated!r}: allowed "
                             f"{', '.join(ARTICULATED_MODES)}")
    if not (isinstance(verify, int | np.integer) and not isinstance(verify, bool)
            and 0 <= verify <= 5):
        raise ParameterError(f"verify = {verify!r} is outside its allowed range 0..5 (an "
                             "integer: verification rounds per host step)")
    if solver not in SOLVERS:
        raise ParameterError(f"solver = {solver!r}: allowed {', '.join(SOLVERS)}")
    if not (isinstance(rtol, float | int) and not isinstance(rtol, bool)
            and 1e-13 <= rtol <= 1e-3):
        raise ParameterError(f"rtol = {rtol!r} is outside its allowed range [1e-13, 1e-3]")
