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
