"""The PyBullet backend: the contact laws of mbplugin inside an existing PyBullet scene.

* :mod:`~mbplugin.bullet.backend`   ``BulletContacts``: attach, manage pairs, step
* :mod:`~mbplugin.bullet.geometry`  PyBullet collision shapes as contact-layer shapes
* :mod:`~mbplugin.bullet.scene`     scene files with ``world.backend = "pybullet"``
* :mod:`~mbplugin.bullet.client`    client ids and ``BulletClient`` objects

The host step's generic part is :class:`mbplugin.hosts.ContactLoop`; its numerical machinery
(contact-space integration, the Delassus operator, the implicit steps, the tangential spring)
lives in :mod:`mbplugin.pipeline` and is importable under its old names here too
(``mbplugin.bullet.substep``, ``.compiled``, ``.delassus``, ``.implicit``, ``.implicit_kernel``,
``.large_groups``, ``.stick``).
"""

import sys as _sys

from mbplugin.bullet.backend import BulletContacts, StepInfo
from mbplugin.bullet.client import Client
from mbplugin.pipeline import (
    delassus,
    implicit,
    implicit_kernel,
    large_groups,
    stick,
    substep,
    substep_compiled,
)
from mbplugin.pipeline.stick import Stick

# the modules' old names (moved to mbplugin.pipeline, issue 21): ``import
# mbplugin.bullet.substep`` and ``from mbplugin.bullet.stick import Stick`` still work
for _old, _mod in (("substep", substep), ("compiled", substep_compiled),
                   ("delassus", delassus), ("implicit", implicit),
                   ("implicit_kernel", implicit_kernel), ("large_groups", large_groups),
                   ("stick", stick)):
    _sys.modules.setdefault(f"{__name__}.{_old}", _mod)
compiled = substep_compiled

__all__ = ["BulletContacts", "Client", "StepInfo", "Stick"]
