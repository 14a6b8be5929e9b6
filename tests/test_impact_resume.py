"""An impact paused by the step budget and resumed keeps its law's memory (plastic laws).

The compiled analyser runs in calls of a bounded number of steps (the budget adapts to the
wall time, so a loaded machine pauses more often); a paused impact goes on from its carry.
The carry lost the laws' memory (Goldsmith's latched delta_max, F_max, delta_p): a plastic
impact paused after its maximum compression unloaded from no memory. Goldsmith's law with
Lankarani & Nikravesh's delta_p = (1 - c_r^2) delta_max returns the requested c_r exactly
(the energy balance of its two curves; Corral et al. 2021, Eq. 5.7), whatever the pauses.
"""

from __future__ import annotations

import numpy as np
import pytest

import mbplugin.impact as imp
from mbplugin.laws import make_law
from mbplugin.pipeline import budget


@pytest.fixture(params=[1, 3, 7])
def tiny_budget(request, monkeypatch) -> int:
    """Every compiled call of the analyser takes at most ``request.param`` steps."""
    n = request.param
    monkeypatch.setattr(imp, "first_budget", lambda: n)
    monkeypatch.setattr(budget.StepBudget, "steps", lambda self, limit=None: n)
    return n


@pytest.mark.parametrize("cr", [0.3, 0.6, 0.9])
def test_paused_goldsmith_impact_returns_its_cr(tiny_budget, cr) -> None:
    law = make_law("goldsmith", k=2e9, cr=cr, n=1.4)
    r = imp.impact(law, mass=0.3, v0=0.9)
    assert r.steps > 3 * tiny_budget  # paused several times
    assert r.cr_out == pytest.approx(cr, abs=1e-6)


def test_paused_goldsmith_batch_returns_its_cr(tiny_budget) -> None:
    crs = np.array([0.3, 0.6, 0.9])
    b = imp.ImpactBatch()
    b.add(make_law("goldsmith", k=2e9, cr=crs, n=1.4), 0.3, np.array([0.1, 0.5, 1.0]))
    d = b.run()
    np.testing.assert_allclose(d["cr_out"], crs, atol=1e-6)
