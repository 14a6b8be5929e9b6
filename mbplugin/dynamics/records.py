"""The contact records of a run in one compiled call.

A recorder's contact table (indentation, its rate and the applied force of every contact row at
K recorded states) and the indentation and rate the step advisor and the Python event and
memory paths read at one state are all computed by :func:`contact_records`: the bodies'
rotation matrices and world angular velocities (:func:`mbplugin.dynamics._kernels.kinematics`),
the pair geometry (:func:`mbplugin.contact.pairs.pair_geometry_records`, the pair kernels the
engine integrates with), the laws' raw forces (:func:`mbplugin.pipeline.pairs.raw_forces_records`,
the law dispatch) and the applied force (:func:`mbplugin.pipeline.rules.applied`).

Why one function: a function Python calls is compiled as an entry of its own (its CPython
wrapper, a module optimisation of everything it links, the pair kernels and every law family
among them, and its machine code; docs/architecture.md, "What a first run compiles"). These
five calls were five entries, each optimising the pair kernels or the law dispatch again; as
callees of one entry they are typed once and optimised once. The arithmetic is the same code
in the same order: the records are bitwise those of the separate calls.
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit
from mbplugin.contact import pairs as cpairs
from mbplugin.dynamics._kernels import kinematics
from mbplugin.pipeline import pairs, rules


@njit
def contact_records(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p, half, ms,
                    pos, quat, vel, omega, law, coef, ode, ns, mem, law_kid, law_ns, law_mode,
                    forces, delta, ddelta, fn):
    """delta (m), ddelta (m/s) and, with ``forces``, the applied force ``fn`` (N) of the
    listed pairs (m rows) at K states of the n bodies, written into the (K, m) outputs.

    ``pos``, ``vel`` (K, n, 3); ``quat`` (K n, 4) and ``omega`` (K n, 3) (body frame), the
    state's blocks; the pair arrays as :func:`mbplugin.contact.pairs.pair_geometry_records`
    takes them. For the forces the pairs are the contact store's rows 0..m-1: ``law`` (m,) the
    rows' law indices, ``coef`` and ``mem`` the store's rows, ``ode`` (K, m ns) the flat ODE
    states, ``law_kid``, ``law_ns``, ``law_mode`` per law (kernel id, ODE states, contact
    mode). Without ``forces`` the law arrays are not read and ``fn`` is left as it was."""
    K = pos.shape[0]
    n = pos.shape[1]
    R = np.empty((K * n, 3, 3))
    omega_w = np.empty((K * n, 3))
    kinematics(quat, omega, R, omega_w)
    cpairs.pair_geometry_records(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n,
                                plane_p, half, ms, pos, R.reshape((K, n, 3, 3)), vel,
                                omega_w.reshape((K, n, 3)), delta, ddelta)
    if forces:
        pairs.raw_forces_records(law, delta, ddelta, coef, ode, ns, mem, law_kid, law_ns, fn)
        for i in range(K):
            for r in range(delta.shape[1]):
                fn[i, r] = rules.applied(law_mode[law[r]], fn[i, r])
