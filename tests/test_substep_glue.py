"""The contact-space sub-stepper's per-step glue (mbplugin.pipeline.substep_compiled):
the groups' start arrays and a trial state's relative-velocity fields, against their
definitions worked by hand."""

from __future__ import annotations

import numpy as np

from mbplugin.pipeline import substep_compiled as cm
from mbplugin.pipeline.batch import ContactBatch
from mbplugin.pipeline.substep import batch_at


def test_group_start_takes_each_groups_shortest_step_and_radau_flag() -> None:
    # groups {contacts 2, 0} and {contact 1} (order maps group order to the batch's)
    order = np.array([2, 0, 1])
    gptr = np.array([0, 2, 3])
    h0 = np.array([3e-4, -1.0, 1e-4])  # contact 1 carried no step
    m0 = np.array([1, 0, 2])           # contact 2 (group 0) ended on Radau after the count
    tg, hg, mg, status, imp, loaded, counters = cm.group_start(3, 2, False, order, gptr,
                                                               h0, m0)
    assert hg.tolist() == [1e-4, -1.0]  # min(1e-4, 3e-4); group 1: none positive
    assert mg.tolist() == [2, 0]        # a 2 wins over a 1; contact 1's 0 keeps Radau
    assert tg.tolist() == [0.0, 0.0] and status.tolist() == [cm.PENDING] * 2
    assert imp.shape == (3, 3) and not imp.any() and not loaded.any() and not counters.any()
    # nothing carried: SciPy's initial step, explicit; a NaN step counts as none
    _, hg, mg, *_ = cm.group_start(3, 2, False, order, gptr, np.zeros(0),
                                   np.zeros(0, dtype=np.int64))
    assert hg.tolist() == [-1.0, -1.0] and mg.tolist() == [1, 1]
    _, hg, *_ = cm.group_start(2, 2, True, order, gptr, np.array([np.nan, 2e-4]),
                               np.zeros(0, dtype=np.int64))
    assert hg.tolist() == [-1.0, 2e-4]


def test_batch_at_splits_velocity_into_approach_and_slip() -> None:
    rng = np.random.default_rng(3)
    k = 7
    n = rng.normal(size=(k, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    u = rng.normal(size=(k, 3))
    z1, z3, zi = np.zeros(k), np.zeros((k, 3)), np.zeros(k, dtype=np.int64)
    batch = ContactBatch(zi, zi, zi, z3, n, z1, z1, z3, z1, z1, z3, z3)
    d = rng.normal(size=k)
    out = batch_at(batch, d, u)
    # ddelta = -n . u (ddelta > 0 approaching: u has a component against n)
    assert np.allclose(out.ddelta, -np.sum(u * n, axis=1), rtol=0, atol=1e-15)
    assert np.allclose(np.sum(out.vt * n, axis=1), 0.0, atol=1e-15)   # slip normal to n
    assert np.allclose(out.vt - out.ddelta[:, None] * n, u, rtol=0, atol=1e-15)  # u rebuilt
    assert out.delta is d and out.normal is n
