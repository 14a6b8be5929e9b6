"""Host engines behind one protocol: the generic part of a host backend (docs/architecture.md,
"Hosts").

* :mod:`~mbplugin.hosts.protocol`    row kinds, :class:`RowShape`, :class:`ArticulatedBlock`,
  the :class:`Host` and :class:`HostAdapter` protocols
* :mod:`~mbplugin.hosts.step`        :class:`HostStep`: one host step after detection (commit,
  W, the contact-space integration or the implicit step)
* :mod:`~mbplugin.hosts.loop`        :class:`ContactLoop`: a HostStep with the model of the
  rows' shapes and plain detection, and the position correction (``MujocoContacts``)
* :mod:`~mbplugin.hosts.integrator`, :mod:`~mbplugin.hosts.wmatrix`,
  :mod:`~mbplugin.hosts.correction`, :mod:`~mbplugin.hosts.flight`,
  :mod:`~mbplugin.hosts.detection`, :mod:`~mbplugin.hosts.model`,
  :mod:`~mbplugin.hosts.options`, :mod:`~mbplugin.hosts.arrays` the pieces (integration and
  carries, W, correction, the exact free flight's rule, margin and prune, model rules,
  options, row-wise helpers)

A backend package (``mbplugin.bullet``, ``mbplugin.mujoco``) is the adapter of its engine plus
its user-facing class; it reads the rows' state, disables the host's own response for the
managed pairs, hands the step's forces to the host and steps it. Its user class owns one
object per responsibility (reading the host, building, detection, free flight, correction,
articulated bodies), none a base class of it.
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
