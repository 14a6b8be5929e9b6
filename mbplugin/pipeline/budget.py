"""How many steps a compiled loop may take before it returns to Python.

A compiled (numba) loop cannot see a Ctrl-C, report progress or check a limit: Python's signal
handlers run only between bytecodes. The long loops (the engine's segments,
:mod:`mbplugin.dynamics.compiled`; the impact analyser, :mod:`mbplugin.impact._compiled`) take a
step budget per call and, when it is spent, return a *carry* with which the next call goes on
exactly where the last one stopped (the same steps, the same bits). :class:`StepBudget` sizes the
budget from the measured cost of the previous calls so that one call takes about
``TARGET_SECONDS`` of wall time: short enough for a Ctrl-C to be honoured within a fraction of a
second and for a progress line per call, long enough that the returns cost nothing measurable.
"""

from __future__ import annotations

from mbplugin._jit import deliver_pending_interrupt

#: Wall time (s) one compiled call should take.
TARGET_SECONDS = 0.1
#: Budget of the first call (before any cost is measured), and the range of every budget.
FIRST_STEPS = 2000
MIN_STEPS = 16
MAX_STEPS = 1 << 40
#: A budget grows by at most this factor per call (a cheap stretch of steps must not let the
#: next, costlier one run for long).
MAX_GROWTH = 8.0


def first_budget() -> int:
    """The budget of a first call (before any cost is measured), within the allowed range."""
    return min(max(int(FIRST_STEPS), int(MIN_STEPS), 1), max(int(MAX_STEPS), 1))


class StepBudget:
    """The step budget of the next compiled call, from the cost of the previous ones.

    >>> b = StepBudget()
    >>> n = b.steps()                 # budget of the next call
    >>> b.update(steps_taken, seconds)
    """

    def __init__(self) -> None:
        self._lo = max(int(MIN_STEPS), 1)
        self._hi = max(int(MAX_STEPS), self._lo)
        self._n = first_budget()

    def steps(self, limit: int | None = None) -> int:
        """Steps the next call may take (at most ``limit`` when given, at least 1)."""
        n = self._n
        if limit is not None:
            n = min(n, int(limit))
        return max(n, 1)

    def update(self, steps: int, seconds: float) -> None:
        """Record that a call took ``steps`` accepted steps in ``seconds`` of wall time (and
        deliver a Ctrl-C held back while numba compiled: :func:`deliver_pending_interrupt`)."""
        deliver_pending_interrupt()
        if steps <= 0 or not seconds > 0.0:
            if seconds < 0.25 * TARGET_SECONDS:
                self._n = min(int(self._n * MAX_GROWTH), self._hi)
            return
        want = TARGET_SECONDS * steps / seconds
        self._n = int(min(max(want, self._lo), self._n * MAX_GROWTH, self._hi))
        self._n = max(self._n, self._lo)
