"""The tangential spring (Dahl's model) of the PyBullet backend: Coulomb's bound and continuity.

Coulomb's law bounds the tangential force by mu F_N at every state; the sub-stepper needs the
force and the spring's rate continuous where a foot is unloaded (F_N -> 0 at lift-off), where
the earlier form jumped (its Radau step size underflowed in a quadruped trot)."""

from __future__ import annotations

import numpy as np

from mbplugin.bullet.stick import FC_FLOOR, Stick, stick_force, stick_rate

P = Stick(k_t=5e4, mu=0.8, c_t=100.0)


def test_force_never_exceeds_the_coulomb_limit() -> None:
    rng = np.random.default_rng(1)
    s = rng.normal(scale=1e-3, size=(2000, 3))
    vt = rng.normal(scale=0.5, size=(2000, 3))
    fn = rng.uniform(-10, 100, size=2000)
    f = np.linalg.norm(stick_force(s, vt, fn, P), axis=1)
    assert np.all(f <= P.mu * np.maximum(fn, 0.0) * (1 + 1e-12))
    # below the limit the spring and damper act unchanged: F = -(k_t s + c_t v)
    small = np.array([[1e-5, 0.0, 0.0]])
    assert np.allclose(stick_force(small, np.zeros((1, 3)), np.array([100.0]), P),
                       -P.k_t * small)


def test_force_and_rate_are_continuous_at_lift_off() -> None:
    s = np.array([[2e-4, -1e-4, 0.0]])  # a loaded spring (k_t |s| = 11 N)
    vt = np.array([[0.3, 0.1, 0.0]])
    for eps in (1e-6, 1e-9, 1e-12):
        up, down = np.array([eps]), np.array([-eps])
        assert np.linalg.norm(stick_force(s, vt, up, P)) <= P.mu * eps * (1 + 1e-12)
        assert np.all(stick_force(s, vt, down, P) == 0.0)
        assert np.allclose(stick_rate(s, vt, up, P), stick_rate(s, vt, down, P))
    # Dahl's steady sliding: the spring stops stretching where k_t |s| equals the Coulomb
    # limit (FC_FLOOR when unloaded), along the slip
    vhat = vt / np.linalg.norm(vt)
    for fn, limit in ((50.0, P.mu * 50.0), (0.0, FC_FLOOR)):
        s_star = limit / P.k_t * vhat
        assert np.allclose(stick_rate(s_star, vt, np.array([fn]), P), 0.0, atol=1e-12)
