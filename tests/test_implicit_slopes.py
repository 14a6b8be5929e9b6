"""The implicit step's Newton matrix pieces against closed forms: the derivatives of the
regularised Coulomb friction and of the power-law contact force, and the dense solve.

The implicit step (:func:`mbplugin.pipeline.implicit_kernel.newton`) takes these derivatives
analytically with each force evaluation; here they are checked against the derivatives of the
printed formulas, worked by hand: F_t = -mu F_N tanh(v / v_eps) along one axis (its slope mu
F_N sech^2(v / v_eps) / v_eps), Coulomb's -mu F_N v / |v| in sliding (its slope -mu F_N / |v|
(I - v v^T / |v|^2): the derivative of a unit vector), the Gaussian Stribeck curve, and k d^n +
lam d^m v^q (Hertz 1882; Hunt & Crossley 1975). The solve is checked against LAPACK's
(``numpy.linalg.solve``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.laws import _ids
from mbplugin.laws.kernels import slopes
from mbplugin.laws.power import power_row
from mbplugin.pipeline.friction import friction_scalar, friction_slopes
from mbplugin.pipeline.implicit_kernel import lu_solve

MU, MU_S, V_S, V_EPS, FN = 0.6, 0.9, 0.05, 0.01, 30.0
ZS = (0.0,) * 8


def jacobian(v: np.ndarray, fn: float, mu: float, mu_s: float, v_s: float, v_eps: float,
             viscous: float, linear: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(force (3,), dF/dv (3, 3), dF/dF_N (3,)) from :func:`friction_slopes`."""
    f0, f1, f2, g, h, e0, e1, e2 = friction_slopes(v[0], v[1], v[2], fn, mu, mu_s, v_s, v_eps,
                                                   viscous, linear)
    return (np.array([f0, f1, f2]), -g * np.eye(3) - h * np.outer(v, v),
            np.array([e0, e1, e2]))


@pytest.mark.parametrize("x", [0.0, 1e-4, 5e-3, 0.02, 0.27, 1.0, 3.0, 30.0])
def test_tanh_friction_slope_along_and_across_the_slip(x: float) -> None:
    """Slip v = x v_eps along e_x, mu = mu_s: dF_x/dv_x = -mu F_N sech^2(x) / v_eps; across
    the slip dF_y/dv_y = -mu F_N tanh(x) / (x v_eps) (-mu F_N / v_eps at x = 0, the
    stiffness :func:`mbplugin.pipeline.friction.friction_stiffness` documents); dF/dF_N =
    -mu tanh(x) e_x; the force is friction_scalar's to the bit."""
    v = np.array([x * V_EPS, 0.0, 0.0])
    f, J, e = jacobian(v, FN, MU, MU, V_S, V_EPS, 0.0, False)
    along = -MU * FN / math.cosh(x) ** 2 / V_EPS
    across = -MU * FN / V_EPS * (math.tanh(x) / x if x > 0 else 1.0)
    assert J[0, 0] == pytest.approx(along, rel=1e-9, abs=1e-12 * abs(across))
    assert J[1, 1] == pytest.approx(across, rel=1e-9)
    assert J[2, 2] == pytest.approx(across, rel=1e-9)
    assert np.abs(J - np.diag(np.diag(J))).max() <= 1e-12 * abs(across)
    assert e == pytest.approx([-MU * math.tanh(x), 0.0, 0.0], rel=1e-9, abs=1e-15)
    assert tuple(f) == friction_scalar(v[0], v[1], v[2], FN, MU, MU, V_S, V_EPS, 0.0, False)


@pytest.mark.parametrize("linear", [False, True])
def test_sliding_friction_slope_is_coulombs(linear: bool) -> None:
    """Far outside the regularisation (|v| = 2000 v_eps, no Stribeck drop) the force is
    Coulomb's -mu F_N v / |v|: its slope -mu F_N / |v| (I - v v^T / |v|^2), dF/dF_N =
    -mu v / |v|, and the viscous term adds -c_v I."""
    v = np.array([12.0, -9.0, 8.0])  # |v| = 17 m/s
    s = 17.0
    cv = 0.7
    _, J, e = jacobian(v, FN, MU, MU, V_S, V_EPS, cv, linear)
    coulomb = -MU * FN / s * (np.eye(3) - np.outer(v, v) / s**2) - cv * np.eye(3)
    tanh_tail = 0.0 if linear else 1e-12  # 1 - tanh(1700) = 0 in doubles
    assert np.allclose(J, coulomb, rtol=1e-9, atol=tanh_tail)
    assert e == pytest.approx(-MU * v / s, rel=1e-12)


def test_stribeck_friction_slope_along_the_slip() -> None:
    """One axis with the Gaussian Stribeck curve: F = -(mu + (mu_s - mu) exp(-(v / v_s)^2))
    F_N tanh(v / v_eps), differentiated by hand."""
    for v in (1e-3, 0.02, 0.05, 0.2):
        ex = math.exp(-((v / V_S) ** 2))
        mu_v = MU + (MU_S - MU) * ex
        dmu = -2.0 * v / V_S**2 * (MU_S - MU) * ex
        t = math.tanh(v / V_EPS)
        slope = -(dmu * FN * t + mu_v * FN * (1.0 - t * t) / V_EPS)
        _, J, e = jacobian(np.array([v, 0.0, 0.0]), FN, MU, MU_S, V_S, V_EPS, 0.0, False)
        assert J[0, 0] == pytest.approx(slope, rel=1e-8)
        assert J[1, 1] == pytest.approx(-mu_v * FN * t / v, rel=1e-9)
        assert e[0] == pytest.approx(-mu_v * t, rel=1e-12)


def test_linear_friction_slope_inside_the_band_and_without_load() -> None:
    """The linear regularisation inside its band is the viscous -mu_s F_N / v_eps I (without
    a Stribeck drop); with F_N <= 0 only the viscous term's -c_v I and no F_N slope."""
    v = np.array([3e-3, -4e-3, 0.0])
    _, J, e = jacobian(v, FN, MU, MU, V_S, V_EPS, 0.0, True)
    assert np.allclose(J, -MU * FN / V_EPS * np.eye(3), rtol=1e-12, atol=0.0)
    assert e == pytest.approx(-MU * v / V_EPS, rel=1e-12)
    _, J, e = jacobian(v, -5.0, MU, MU_S, V_S, V_EPS, 2.0, False)
    assert np.array_equal(J, -2.0 * np.eye(3))
    assert np.array_equal(e, np.zeros(3))


@pytest.mark.parametrize(("n", "m", "q"), [(1.5, 1.5, 1.0), (1.5, 1.5, 0.5), (1.0, 0.0, 1.0),
                                           (2.2, 1.1, 1.3)])
def test_power_law_slopes(n: float, m: float, q: float) -> None:
    """f = k d^n + lam d^m v^q (d > 0, v > 0: Hertz's spring with Hunt-Crossley's damping
    for n = m = 3/2, q = 1): df/dd = k n d^(n-1) + lam m d^(m-1) v^q, df/dv = lam q d^m
    v^(q-1); the force is the kernel's own to the bit."""
    k, lam, d, v = 2.0e6, 3.0e5, 4.0e-4, 0.3
    c = power_row(k, n, lam, m, q, 0.0, 0.0)
    f, fd, fv = slopes(_ids.POWER, d, v, c, ZS, 1e-9, 1e-7)
    assert f == pytest.approx(k * d**n + lam * d**m * v**q, rel=1e-13)
    assert fd == pytest.approx(k * n * d ** (n - 1) + lam * m * d ** (m - 1) * v**q, rel=1e-12)
    assert fv == pytest.approx(lam * q * d**m * v ** (q - 1), rel=1e-12)


def test_power_law_slopes_on_its_branches() -> None:
    """Mode 1 (damping only while approaching) at v < 0: the spring's slope alone; the
    floor rc k d^n (a tension limit) where the damping pulls below it: rc times the spring's
    slope, nothing in v; d < 0 (the odd continuation): k n |d|^(n-1) and lam m |d|^(m-1)
    with the sign of d."""
    k, lam, n = 2.0e6, 3.0e5, 1.5
    d, v = 4.0e-4, -0.3
    _, fd, fv = slopes(_ids.POWER, d, v, power_row(k, n, lam, n, 1.0, 1.0, 0.0), ZS, 1e-9, 1e-7)
    assert (fd, fv) == (pytest.approx(k * n * math.sqrt(d), rel=1e-13), 0.0)
    f, fd, fv = slopes(_ids.POWER, d, -6.0, power_row(k, n, lam, n, 1.0, 0.0, 0.2), ZS, 1e-9,
                       1e-7)
    assert f == pytest.approx(0.2 * k * d**n, rel=1e-13)  # d^n (k - 6 lam) < 0.2 k d^n
    assert (fd, fv) == (pytest.approx(0.2 * k * n * math.sqrt(d), rel=1e-13), 0.0)
    _, fd, fv = slopes(_ids.POWER, -d, 0.3, power_row(k, n, lam, n, 1.0, 0.0, 0.0), ZS, 1e-9,
                       1e-7)
    assert fd == pytest.approx(k * n * math.sqrt(d) - lam * n * math.sqrt(d) * 0.3, rel=1e-12)
    assert fv == pytest.approx(lam * d**n, rel=1e-12)


def test_dense_solve_against_lapack() -> None:
    """The Newton matrix's solve (partial pivoting, in place) against LAPACK's on systems that
    need pivoting (a zero leading entry, a matrix I - dt D W of the implicit step's shape); a
    singular matrix is refused."""
    rng = np.random.default_rng(7)
    for m in (3, 6, 12):
        A = rng.normal(size=(m, m))
        A[0, 0] = 0.0
        b = rng.normal(size=m)
        x = b.copy()
        assert lu_solve(A.copy(), x, m)
        assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-10, atol=1e-12)
    W = rng.normal(size=(12, 12))
    W = W @ W.T
    D = -np.kron(np.eye(4), np.diag([2e3, 2e3, 5e4]))
    A = np.eye(12) - (1 / 240) * D @ W
    b = rng.normal(size=12)
    x = b.copy()
    assert lu_solve(A.copy(), x, 12)
    assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-14)
    S = np.ones((4, 4))
    assert not lu_solve(S, np.ones(4), 4)
