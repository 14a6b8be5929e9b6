"""Radau IIA (order 5, three stages) tables for the compiled implicit integrator.

The collocation nodes, error weights, the eigen-decomposition of the Butcher matrix's inverse
and the dense-output coefficients of the three-stage Radau IIA method (Hairer & Wanner, *Solving
Ordinary Differential Equations II*, 2nd ed., 1996, Sect. IV.8, Table 5.6 and Eqs. 8.15-8.20).
The values and their arrangement are those of ``scipy.integrate.Radau`` so that the compiled
driver steps as SciPy's does; they are written here because SciPy keeps them in a private
module (``scipy.integrate._ivp.radau``) that may move between releases.

The defining identities (the nodes are the roots of the Radau polynomial; T diagonalises the
inverse Butcher matrix into MU_REAL and the complex pair MU_COMPLEX; TI is T's inverse) are
checked in ``tests/test_radau_tables.py``.
"""

from __future__ import annotations

import numpy as np

S6 = 6.0**0.5

#: Collocation nodes c_i (fractions of the step).
C = np.array([(4 - S6) / 10, (4 + S6) / 10, 1])
#: Weights of the embedded error estimate (times h: the estimate's stage combination).
E = np.array([-13 - 7 * S6, -13 + 7 * S6, -1]) / 3

#: The real eigenvalue of A^-1 and one of its complex pair (A: the Butcher matrix).
MU_REAL = 3 + 3 ** (2 / 3) - 3 ** (1 / 3)
MU_COMPLEX = 3 + 0.5 * (3 ** (1 / 3) - 3 ** (2 / 3)) - 0.5j * (3 ** (5 / 6) + 3 ** (7 / 6))

#: T and its inverse TI: TI A^-1 T = [[MU_REAL, 0, 0], [0, a, b], [0, -b, a]] with
#: MU_COMPLEX = a - i b (columns: the real eigenvector, the complex one's real and imaginary
#: parts, normalised as SciPy's).
T = np.array([
    [0.09443876248897524, -0.14125529502095421, 0.03002919410514742],
    [0.25021312296533332, 0.20412935229379994, -0.38294211275726192],
    [1.0, 1.0, 0.0]])
TI = np.array([
    [4.17871859155190428, 0.32768282076106237, 0.52337644549944951],
    [-4.17871859155190428, -0.32768282076106237, 0.47662355450055044],
    [0.50287263494578682, -2.57192694985560522, 0.59603920482822492]])

#: Dense output: the collocation polynomial's coefficients from the stage increments Z.
P = np.array([
    [13 / 3 + 7 * S6 / 3, -23 / 3 - 22 * S6 / 3, 10 / 3 + 5 * S6],
    [13 / 3 - 7 * S6 / 3, -23 / 3 + 22 * S6 / 3, 10 / 3 - 5 * S6],
    [1 / 3, -8 / 3, 10 / 3]])

#: Newton iterations per step before the step is retried smaller; step-size change bounds.
NEWTON_MAXITER = 6
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
