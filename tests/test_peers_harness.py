"""The peers comparison's own measurements (benchmarks/peers/common.py) on the two engines that
need no optional dependency: the hand-written SciPy baseline and mbplugin's standalone engine.

An elastic steel ball (R = 1 cm, 7800 kg/m^3, Hertz k from E = 200 GPa, nu = 0.3) dropped 10 cm
must come back with c_r = 1, and its first contact must last and peak as Hertz's closed form:
delta_max = (5 m v^2 / (4 k))^(2/5), duration = 2.94328 delta_max / v, F_max = k delta_max^1.5
(Hertz 1881; Johnson, Contact Mechanics, 1985, Sect. 11.4). Gravity acts during the 66-us contact,
which shifts these by ~1e-4 relative, far inside the tolerances.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "peers"))

import common
import engines_ours

R, RHO, E, NU, H, G = 0.01, 7800.0, 2.0e11, 0.3, 0.10, 9.81


def _hertz() -> tuple[float, float, float]:
    m = 4.0 / 3.0 * math.pi * R**3 * RHO
    e_star = 1.0 / (2.0 * (1.0 - NU**2) / E)  # steel on steel
    k = 4.0 / 3.0 * e_star * math.sqrt(R)
    v = math.sqrt(2.0 * G * H)
    dmax = (5.0 * m * v * v / (4.0 * k)) ** 0.4
    return 2.94328 * dmax / v, k * dmax**1.5, k


@pytest.mark.parametrize("runner", [engines_ours.run_scipy, engines_ours.run_standalone],
                         ids=["scipy_dop853", "mbplugin_standalone"])
def test_elastic_drop_matches_hertz(runner) -> None:
    duration, peak, k = _hertz()
    spec = common.drop_scene("steel", 1.0, duration=0.2)
    assert spec.pairs[0].k_hertz == pytest.approx(k, rel=1e-12)
    setting = {"rtol": 1e-10} if runner is engines_ours.run_scipy else {}
    m = common.drop_metrics(spec, runner(spec, setting))
    assert m["bounces"] >= 1
    assert m["cr1"] == pytest.approx(1.0, abs=1e-4)
    assert m["duration1"] == pytest.approx(duration, rel=5e-3)
    assert m["peak1"] == pytest.approx(peak, rel=2e-2)


def test_bounce_measurement_from_a_ballistic_record() -> None:
    """A made-up record (free flight, one step-long 'contact' that reverses 0.8 of the speed)
    gives c_r = 0.8 whatever the grid: the speeds are continued to the touching height."""
    import numpy as np

    h = 1e-3
    t = np.arange(0, 0.3, h)
    z = np.empty_like(t)
    v = np.empty_like(t)
    z[0], v[0] = R + H, 0.0
    for i in range(1, len(t)):
        v[i] = v[i - 1] - G * h
        z[i] = z[i - 1] + h * v[i]
        if z[i] < R:  # reverse at the step that crosses the floor (like an impulse engine)
            vt = math.sqrt(v[i - 1] ** 2 + 2 * G * (z[i - 1] - R))
            z[i], v[i] = R, 0.8 * vt
    tr = common.Trajectory(t, z[:, None], v[:, None], 0.0)
    b = common.bounces(tr, R, 1.0)
    assert b.cr[0] == pytest.approx(0.8, abs=1e-3)
