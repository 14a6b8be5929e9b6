"""Laws that scale their damping with the impact speed stay finite when it is ~0 (resting
contact, a last slow re-contact): the latched speed is floored at the law's ``v_min``."""

from __future__ import annotations

import numpy as np
import pytest

from mbplugin.impact import impact
from mbplugin.laws import HUNT_CROSSLEY_FAMILY, make_law

SPEED_LAWS = [*HUNT_CROSSLEY_FAMILY, "zhang2022"]


@pytest.mark.parametrize("name", SPEED_LAWS)
def test_zero_impact_speed_gives_finite_damping(name):
    law = make_law(name, k=1e9, cr=0.5)
    v_in = np.array([0.0, 1e-300, 1e-6, law.v_min, 1.0])
    coef = law.coefficients(v_in, np.ones(5), np.full(5, np.nan))
    assert np.all(np.isfinite(coef))
    # below v_min the damping equals the damping at v_min: no division by the raw speed
    assert np.allclose(coef[:4], coef[3], rtol=1e-12)
    f = law.force(np.full(5, 1e-6), np.full(5, -0.3), coef, np.zeros((5, 0)))
    assert np.all(np.isfinite(f)) and np.all(f >= 0.0)


def test_resting_ball_settles_under_its_weight():
    """A slow contact (v0 far below v_min) pressed by gravity settles at the static overlap
    (m g / k)^(2/3) instead of producing NaN or infinite damping."""
    m, g, k = 0.066, 9.81, 1e10
    law = make_law("hunt_crossley", k=k, cr=0.8, v_min=1e-3)
    r = impact(law, m, 1e-9, press=m * g, t_max=0.05)
    assert r.captured
    assert r.delta_residual == pytest.approx((m * g / k) ** (2 / 3), rel=1e-6)
