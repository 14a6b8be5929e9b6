"""A law's local stiffness and damping at a contact, by central differences: written once.

The linearised contact m x'' + c x' + k x = 0 behind every step-size decision (the engine's
switch to an implicit solver, the contact-space sub-stepper's choice of method, the fixed-step
advisor's stable step; Hairer & Wanner 1996, Sect. IV.2, the test equation) needs the law's

    k = dF/d delta   (N/m)        c = dF/d ddelta   (N s/m)

at the contact's current (delta, ddelta) and state. The laws give no derivatives, so both are
central differences of the law's *raw* force (before clipping: the slopes of the law itself)

    k = (F(d + e_d, v) - F(d - e_d, v)) / (2 e_d),   e_d = max(1e-6 |d|, 1e-12 m)
    c = (F(d, v + e_v) - F(d, v - e_v)) / (2 e_v),   e_v = max(1e-6 |v|, 1e-9 m/s)

(relative steps of 1e-6: second-order truncation error ~1e-12 relative against ~1e-10 of
rounding in double precision; the floors keep the steps nonzero at first touch and at rest).

* :func:`law_slopes` - compiled, one contact, a law kernel ``kid`` with its coefficient and state
  tuples (:mod:`mbplugin.laws.kernels`); the compiled drivers call it in their loops.
* :func:`law_slopes_batch` - callable from Python: a batch of contacts of one law (its natural
  coefficient and state arrays), the same steps and quotients in NumPy around the law's own
  ``force_raw`` at the four points of every contact (for a law with a compiled kernel, the
  compiled batch loop ``laws.kernels.force_batch`` with ``MODE_RAW``: the same kernels and
  IEEE operations as :func:`law_slopes`, and no compiled entry of its own to build on a first
  run).
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit, njit_helper
from mbplugin.laws.base import Law
from mbplugin.laws.kernels import force

#: relative step of the differences (-), and its floors in delta (m) and ddelta (m/s)
REL_STEP = 1e-6
MIN_STEP_DELTA = 1e-12
MIN_STEP_RATE = 1e-9


def difference_steps(d, v):
    """(e_d, e_v): the difference steps in delta (m) and ddelta (m/s) at (d, v); scalars or
    arrays (this source is also compiled for :func:`law_slopes`)."""
    return (np.maximum(REL_STEP * np.abs(d), MIN_STEP_DELTA),
            np.maximum(REL_STEP * np.abs(v), MIN_STEP_RATE))


def difference_quotients(f_dp, f_dm, f_vp, f_vm, e_d, e_v):
    """(k, c) from the four forces F(d + e_d, v), F(d - e_d, v), F(d, v + e_v), F(d, v - e_v)
    (N): scalars or arrays (this source is also compiled for :func:`law_slopes`)."""
    return (f_dp - f_dm) / (2.0 * e_d), (f_vp - f_vm) / (2.0 * e_v)


_steps = njit_helper(difference_steps)
_quotients = njit_helper(difference_quotients)


@njit
def law_slopes(kid, d, v, c, s):
    """(k, c): dF/d delta (N/m) and dF/d ddelta (N s/m) of the raw force of law kernel ``kid``
    at indentation ``d`` (m) and rate ``v`` (m/s, > 0 approaching), coefficient tuple ``c``
    and state tuple ``s`` (:func:`mbplugin.laws.kernels.force`'s), by central differences."""
    e_d, e_v = _steps(d, v)
    return _quotients(force(kid, d + e_d, v, c, s), force(kid, d - e_d, v, c, s),
                      force(kid, d, v + e_v, c, s), force(kid, d, v - e_v, c, s), e_d, e_v)


def law_slopes_batch(law: Law, d: np.ndarray, v: np.ndarray, coef: np.ndarray,
                     state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k (N/m), c (N s/m)) of ``law`` at N contacts: indentations ``d`` (m), rates ``v``
    (m/s), coefficient rows ``coef`` (N, law.n_coef) and states ``state`` (N, law.n_state +
    law.n_memory), as :func:`law_slopes` for each contact."""
    d = np.ascontiguousarray(d, dtype=float)
    v = np.ascontiguousarray(v, dtype=float)
    coef = np.ascontiguousarray(coef, dtype=float)
    state = np.ascontiguousarray(state, dtype=float).reshape(len(d), -1)
    e_d, e_v = difference_steps(d, v)
    f4 = law.force_raw(np.concatenate([d + e_d, d - e_d, d, d]),
                       np.concatenate([v, v, v + e_v, v - e_v]),
                       np.tile(coef, (4, 1)), np.tile(state, (4, 1))).reshape(4, -1)
    with np.errstate(all="ignore"):  # inf - inf is NaN, silently, as in the compiled kernels
        return difference_quotients(f4[0], f4[1], f4[2], f4[3], e_d, e_v)
