"""The one overlap-rate rule of the compiled host steps (issue 18): -n . u with NumPy's bits.

The general path books ``-np.einsum("ij,ij->i", u, n)`` (``ImplicitStep.finish``); the compiled
steps of both hosts (bullet/lean.py, mujoco/lean_tree.py, mujoco/tree_step.py) call
:func:`mbplugin.pipeline.implicit_kernel.overlap_rates`, which must give NumPy's value to the
bit, signed zeros included (the reference is NumPy's own einsum, not our code).
"""

from __future__ import annotations

import numpy as np

from mbplugin.pipeline.implicit_kernel import overlap_rates


def test_overlap_rates_are_numpys_einsum_to_the_bit() -> None:
    """Random velocities over eleven decades and unit normals; rows of signed zeros, among them
    one whose three products are all -0.0 (NumPy's sum starts from +0.0: rate -0.0; the
    MuJoCo step's former copy gave +0.0)."""
    rng = np.random.default_rng(7)
    for k in (1, 2, 3, 4, 5, 8, 13, 1000):
        u = rng.standard_normal((k, 3)) * 10.0 ** rng.integers(-9, 3, (k, 3))
        n = rng.standard_normal((k, 3))
        n /= np.linalg.norm(n, axis=1)[:, None]
        u[0] = (-0.0, 0.0, -0.0)
        if k > 1:
            u[1], n[1] = (0.0, 0.0, 0.0), -np.ones(3) / np.sqrt(3.0)
        out = np.empty(k)
        overlap_rates(u, n, out)
        ref = -np.einsum("ij,ij->i", u, n)
        assert np.array_equal(out, ref)
        assert np.array_equal(np.signbit(out), np.signbit(ref))


def test_host_steps_share_the_one_rate_kernel() -> None:
    """Both hosts' compiled steps use the pipeline's kernel (no private copy left)."""
    from mbplugin.bullet import lean
    from mbplugin.mujoco import tree_step

    assert lean.overlap_rates is overlap_rates
    assert tree_step.overlap_rates is overlap_rates
