"""The Radau IIA (order 5) tables satisfy their defining identities (Hairer & Wanner 1996,
Sect. IV.5 and IV.8): the nodes are the zeros of the Radau right polynomial, the Butcher matrix
built from them by the collocation conditions has the printed eigenvalues, T diagonalises its
inverse and TI inverts T; and the DOP853 tables taken from SciPy's public class are the
method's (consistency and order conditions)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial import legendre as leg

from mbplugin.pipeline import dop853 as dp
from mbplugin.pipeline import radau_tables as rt


def butcher() -> np.ndarray:
    """A of three-stage Radau IIA from the collocation conditions sum_j a_ij c_j^(k-1) =
    c_i^k / k, k = 1..3."""
    c = rt.C
    V = np.vander(c, 3, increasing=True).T  # V[k, j] = c_j^k
    rhs = np.array([c ** (k + 1) / (k + 1) for k in range(3)])  # rhs[k, i]
    return np.linalg.solve(V, rhs).T


def test_nodes_are_the_radau_right_points() -> None:
    # Radau IIA nodes on [0, 1]: the zeros of P_s(2x - 1) - P_{s-1}(2x - 1), s = 3
    p = leg.Legendre.basis(3) - leg.Legendre.basis(2)
    roots = np.sort((p.roots() + 1) / 2)
    assert rt.C == pytest.approx(roots, abs=1e-15)


def test_eigen_decomposition_of_the_inverse_butcher_matrix() -> None:
    A_inv = np.linalg.inv(butcher())
    a, b = rt.MU_COMPLEX.real, -rt.MU_COMPLEX.imag
    Lam = np.array([[rt.MU_REAL, 0, 0], [0, a, b], [0, -b, a]])
    assert rt.TI @ A_inv @ rt.T == pytest.approx(Lam, abs=1e-13)
    assert rt.TI @ rt.T == pytest.approx(np.eye(3), abs=1e-15)
    ev = np.sort_complex(np.linalg.eigvals(A_inv))
    assert ev == pytest.approx(np.sort_complex(
        np.array([rt.MU_REAL, rt.MU_COMPLEX, np.conj(rt.MU_COMPLEX)])), abs=1e-12)


def test_dense_output_reproduces_the_stages() -> None:
    # the collocation polynomial u(x) = sum_k Q_k x^(k+1) with Q = Z^T P passes through the
    # stage increments Z_i at x = c_i
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(3, 4))
    Q = Z.T @ rt.P
    for i, c in enumerate(rt.C):
        u = sum(Q[:, k] * c ** (k + 1) for k in range(3))
        assert u == pytest.approx(Z[i], abs=1e-12)


def test_dop853_tables_are_an_order_8_method() -> None:
    A, B, C = dp.A, dp.B, dp.C
    assert A.sum(axis=1) == pytest.approx(C, abs=1e-14)  # row sums are the nodes
    for q in range(1, 9):  # the bushy-tree conditions sum b_i c_i^(q-1) = 1/q up to order 8
        assert B @ C ** (q - 1) == pytest.approx(1 / q, abs=1e-14)
    assert dp.NS == 12 and dp.NS_EXT == 16 and dp.NPOW == 7
