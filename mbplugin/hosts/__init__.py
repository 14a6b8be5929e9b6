"""Host engines behind one protocol: the generic part of a host backend.

* :mod:`~mbplugin.hosts.protocol`  row kinds, :class:`RowShape`, the :class:`Host` and
  :class:`HostAdapter` protocols
* :mod:`~mbplugin.hosts.loop`      :class:`ContactLoop`: one host step of the managed contacts
  (model, detection, W, contact-space integration or the implicit step, position correction)

A backend package (``mbplugin.mujoco``) is the adapter of its engine plus its user-facing
class; it reads the rows' state, disables the host's own response for the managed pairs, hands
the loop's forces to the host and steps it.
"""

from mbplugin.hosts.loop import ContactLoop
from mbplugin.hosts.options import ARTICULATED_MODES
from mbplugin.hosts.protocol import (
    ARTICULATED,
    FREE,
    STATIC,
    ArticulatedBlock,
    Host,
    HostAdapter,
    RowShape,
)
from mbplugin.hosts.step import HostStep, StepInfo
from mbplugin.pipeline.stick import Stick

__all__ = [
    "ARTICULATED",
    "ARTICULATED_MODES",
    "FREE",
    "STATIC",
    "ArticulatedBlock",
    "ContactLoop",
    "Host",
    "HostAdapter",
    "HostStep",
    "RowShape",
    "StepInfo",
    "Stick",
]
