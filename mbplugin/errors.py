"""Exception types raised by mbplugin.

Every error a user can cause with bad input is a :class:`ParameterError`, which is a
:class:`ValueError`, so ``except ValueError`` catches all of them. The message always
names the offending parameter and, where there is one, its allowed range.
"""

from __future__ import annotations


class MBPluginError(Exception):
    """Base class of every mbplugin exception."""


class ParameterError(MBPluginError, ValueError):
    """A parameter, option or input value is invalid (names it and its allowed range)."""


class UnknownLawError(ParameterError):
    """A law name is not in the registry."""


class IntegrationError(MBPluginError, RuntimeError):
    """The integrator could not advance (step size underflow or a non-finite state)."""


def reraise_interrupt(exc: BaseException) -> None:
    """Raise :class:`KeyboardInterrupt` when ``exc`` was caused by one.

    A Ctrl-C that arrives while a compiled (numba) function runs can surface when the function
    returns as ``SystemError: ... returned a result with an exception set`` whose cause is the
    ``KeyboardInterrupt``; an interrupt is an interrupt, never an error of the computation.
    Returns normally when ``exc`` has no such cause."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            raise KeyboardInterrupt from exc
        seen.add(id(e))
        e = e.__cause__ or e.__context__
