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
  coefficient and state arrays), through :func:`law_slopes` for laws with a compiled kernel and
  through the law's own ``force_raw`` (the same steps and quotients) for a plug-in law without
  one; :func:`law_slopes_force_batch` also gives the applied force (the step advisor's three
  arrays from one compiled entry, not two: each entry is a module optimisation of the whole
  law dispatch and machine code of its own on a first run).
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit, njit_helper
from mbplugin.laws.base import Law
from mbplugin.laws.kernels import clip, ctuple, force, stuple_law

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


@njit
def _slopes_force_batch(kid, mode, d, v, c, s, n_ode, n_mem, k_out, c_out, f_out):
    """:func:`law_slopes` (N/m, N s/m) and the applied force (N, ``laws.kernels.clip`` per
    ``mode``) of every contact of a batch of one law, into ``k_out``, ``c_out``, ``f_out``."""
    for i in range(d.shape[0]):
        ct = ctuple(c, i)
        st = stuple_law(s, i, n_ode, n_mem)
        k_out[i], c_out[i] = law_slopes(kid, d[i], v[i], ct, st)
        f_out[i] = clip(mode, force(kid, d[i], v[i], ct, st))


def _compiled_raw(law: Law) -> bool:
    """Whether ``law``'s raw force is its compiled kernel's (built-in laws; not a plug-in)."""
    return law.kernel is not None and type(law).force_raw is Law.force_raw


def _arrays(d, v, coef, state) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    d = np.ascontiguousarray(d, dtype=float)
    return (d, np.ascontiguousarray(v, dtype=float), np.ascontiguousarray(coef, dtype=float),
            np.ascontiguousarray(state, dtype=float).reshape(len(d), -1))


def _compiled_batch(law: Law, d, v, coef, state):
    k = np.empty(len(d))
    c = np.empty(len(d))
    f = np.empty(len(d))
    _slopes_force_batch(law.kernel, law.contact_mode, d, v, coef, state, law.n_state,
                        law.n_memory, k, c, f)
    return k, c, f


def law_slopes_batch(law: Law, d: np.ndarray, v: np.ndarray, coef: np.ndarray,
                     state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k (N/m), c (N s/m)) of ``law`` at N contacts: indentations ``d`` (m), rates ``v``
    (m/s), coefficient rows ``coef`` (N, law.n_coef) and states ``state`` (N, law.n_state +
    law.n_memory), as :func:`law_slopes` for each contact."""
    d, v, coef, state = _arrays(d, v, coef, state)
    if _compiled_raw(law):
        return _compiled_batch(law, d, v, coef, state)[:2]
    # a plug-in law without a compiled kernel: its own force_raw, the four evaluations at once
    e_d, e_v = difference_steps(d, v)
    f4 = law.force_raw(np.concatenate([d + e_d, d - e_d, d, d]),
                       np.concatenate([v, v, v + e_v, v - e_v]),
                       np.tile(coef, (4, 1)), np.tile(state, (4, 1))).reshape(4, -1)
    return difference_quotients(f4[0], f4[1], f4[2], f4[3], e_d, e_v)


def law_slopes_force_batch(law: Law, d: np.ndarray, v: np.ndarray, coef: np.ndarray,
                           state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k (N/m), c (N s/m), F (N)) of ``law`` at N contacts: :func:`law_slopes_batch` and the
    applied force ``law.force`` (clipped per the law's contact mode), from one compiled batch
    loop for a law whose force is its compiled kernel's. Arguments as there."""
    if _compiled_raw(law) and type(law).force is Law.force:
        return _compiled_batch(law, *_arrays(d, v, coef, state))
    return (*law_slopes_batch(law, d, v, coef, state), law.force(d, v, coef, state))
