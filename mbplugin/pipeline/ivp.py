"""What the compiled integrators share (as ``scipy.integrate._ivp``'s ``base``/``common``): the
registry of *problems* they integrate, SciPy's initial step, and the stiffness rule of the
``auto`` solver.

A problem is a tuple ``P`` of arrays and scalars with a compiled right-hand side ``f(y, out, P)``
registered by the driver that owns it (the standalone engine's flat state:
:mod:`mbplugin.dynamics.compiled`; the hosts' contact groups: :mod:`mbplugin.pipeline.
substep_compiled`). The methods (:mod:`mbplugin.pipeline.dop853`, :mod:`mbplugin.pipeline.radau`)
call :func:`problem_rhs`, which numba resolves at compile time to the registered right-hand side
(no function-pointer argument, so the callers stay cacheable on disk).
"""

from __future__ import annotations

import math

from numba.extending import overload

from mbplugin._jit import CALLEE_JIT_OPTIONS, njit

#: "auto" solver: the explicit step counts as stability-limited when h (sqrt(k/m) + c/m) of the
#: stiffest active contact exceeds STIFF_HW for STIFF_STEPS consecutive steps (in an impact the
#: accuracy keeps h w near 0.1; DOP853 is stable up to h w of about 3). Used by the engine
#: (:mod:`mbplugin.dynamics.integrators`) and the hosts' sub-stepper.
STIFF_HW = 1.0
STIFF_STEPS = 3


# ---- problems of the compiled integrators---------------------------------------------------
#: (predicate on the numba type of a problem tuple, compiled right-hand side f(y, out, P))
_PROBLEMS: list = []


def register_problem(accepts, rhs, inline: bool = False) -> None:
    """Make the compiled Radau core (:func:`radau_step`, :func:`initial_step`) and the DOP853
    step loop integrate the problems whose tuple ``P`` has a numba type ``accepts(type)`` says
    yes to, with the compiled right-hand side ``rhs(y, out, P)`` (dy/dt of the flat state ``y``
    into ``out``). Dispatch is resolved at compile time (numba ``overload``), so the callers
    stay cacheable on disk (a function passed as an argument would not be). Register at import
    of the problem's module; the predicates must not overlap.

    ``inline``: the right-hand side is inlined at every call (numba IR level: no call, no array
    reference counting per evaluation), for a cheap one: the impact analyser's (called, its
    ImpactBatch ran 3-8 % slower than with its own loop; inlined, 3 % faster). It must then
    hold no branch whose variables numba's SSA pass cannot place after inlining (a
    ``NumbaIRAssumptionWarning`` at compile time): select with tuple indexing instead."""
    _PROBLEMS.append((accepts, rhs, inline))


def problem_rhs(y, out, P):
    """dy/dt of problem ``P`` (see :func:`register_problem`); compiled code only."""
    raise NotImplementedError("problem_rhs is dispatched in compiled code only")


def _problem_impl(P, inline):
    for accepts, rhs, inl in _PROBLEMS:
        if inl == inline and accepts(P):
            return rhs.py_func  # compiled as the implementation itself: no extra call level
    return None


@overload(problem_rhs, jit_options=CALLEE_JIT_OPTIONS)
def _problem_rhs_impl(y, out, P):
    return _problem_impl(P, False)


@overload(problem_rhs, jit_options=CALLEE_JIT_OPTIONS, inline="always")
def _problem_rhs_inline(y, out, P):
    return _problem_impl(P, True)


@njit
def initial_step(y, f0, t, t_end, max_step, rtol, atol, ytmp, f1, order, P):
    """SciPy's ``select_initial_step`` (Hairer, Norsett & Wanner, Sect. II.4) for the
    problem ``P`` (see :func:`problem_rhs`); ``atol`` (nn,)."""
    length = t_end - t
    nn = y.shape[0]
    d0 = 0.0
    d1 = 0.0
    for i in range(nn):
        sc = atol[i] + abs(y[i]) * rtol
        d0 += (y[i] / sc) ** 2
        d1 += (f0[i] / sc) ** 2
    d0 = math.sqrt(d0 / nn)
    d1 = math.sqrt(d1 / nn)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, length)
    for i in range(nn):
        ytmp[i] = y[i] + h0 * f0[i]
    problem_rhs(ytmp, f1, P)
    d2 = 0.0
    for i in range(nn):
        sc = atol[i] + abs(y[i]) * rtol
        d2 += ((f1[i] - f0[i]) / sc) ** 2
    d2 = math.sqrt(d2 / nn) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100 * h0, h1, length, max_step)

