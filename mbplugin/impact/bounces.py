"""Bounces of a simulation against the exact impact analyser.

A backend's or the engine's bounce (``ContactStore.bounces()``: impact speed ``v_in`` and
Newton's ``cr`` per completed contact) of a body of mass m on a fixed floor under gravity is the
binary collinear impact of :func:`mbplugin.impact.impact` with the body's weight pressing
(``press = m g``): the analyser integrates that impact exactly (located maximum compression and
end of contact), so the difference is the simulation's error.
"""

from __future__ import annotations

import numpy as np

from mbplugin.impact import impact
from mbplugin.laws.base import Law


def cr_errors(rows: np.ndarray, law: Law, mass: float, g: float = 9.81,
              v_min: float = 0.15) -> np.ndarray:
    """|c_r - the analyser's c_r| (-) of every bounce in ``rows`` (fields ``v_in`` m/s and
    ``cr``) with v_in > ``v_min`` (slower bounces last long enough for gravity to take a share
    the binary impact does not model when the floor is not the only force), for a body of
    ``mass`` (kg) under gravity ``g`` (m/s^2) on ``law`` (with its ``k``)."""
    fast = rows[rows["v_in"] > v_min]
    return np.array([abs(float(r["cr"]) - impact(law, mass, float(r["v_in"]),
                                                  press=mass * g).cr_out) for r in fast])
