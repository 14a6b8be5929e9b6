"""The tangential spring (Dahl's model) of the PyBullet backend: Coulomb's bound and continuity.

Coulomb's law bounds the tangential force by mu F_N at every state; the sub-stepper needs the
force and the spring's rate continuous where a foot is unloaded (F_N -> 0 at lift-off), where
the earlier form jumped (its Radau step size underflowed in a quadruped trot)."""

from __future__ import annotations

import numpy as np

from mbplugin.pipeline.stick import FC_FLOOR, Stick, stick_force, stick_rate, stick_step

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


def test_backward_euler_step_of_the_rate() -> None:
    """``stick_step`` (the implicit step for articulated contacts) solves the backward-Euler
    equation s1 = s0 + dt ds/dt(s1) of Dahl's rate for any dt, stays within
    max(|s0|, mu F_N / k_t), and repeated steps of steady sliding reach Dahl's steady state
    k_t |s| = mu F_N along the slip."""
    rng = np.random.default_rng(2)
    s0 = rng.normal(scale=1e-3, size=(500, 3))
    vt = rng.normal(scale=0.5, size=(500, 3))
    fn = rng.uniform(0.0, 100.0, size=500)
    for dt in (1e-4, 1 / 240, 1.0):
        s1 = stick_step(s0, vt, fn, P, dt)
        assert np.allclose(s1, s0 + dt * stick_rate(s1, vt, fn, P), rtol=1e-10, atol=1e-15)
        bound = np.maximum(np.linalg.norm(s0, axis=1),
                           np.maximum(P.mu * fn, FC_FLOOR) / P.k_t)
        assert np.all(np.linalg.norm(s1, axis=1) <= bound * (1 + 1e-12))
    s = np.zeros((1, 3))
    v = np.array([[0.2, -0.1, 0.0]])
    for _ in range(200):
        s = stick_step(s, v, np.array([50.0]), P, 1 / 240)
    assert np.allclose(s, P.mu * 50.0 / P.k_t * v / np.linalg.norm(v), rtol=1e-9)
