"""The PyBullet backend: the contact laws of mbplugin inside an existing PyBullet scene.

* :mod:`~mbplugin.bullet.backend`   ``BulletContacts``: attach, manage pairs, step
* :mod:`~mbplugin.bullet.substep`   contact-space integration inside a host step
* :mod:`~mbplugin.bullet.delassus`  the Delassus operator J M^-1 J^T of the contacts
* :mod:`~mbplugin.bullet.geometry`  PyBullet collision shapes as contact-layer shapes
* :mod:`~mbplugin.bullet.stick`     a tangential spring (Dahl's model) for contacts that stick
* :mod:`~mbplugin.bullet.scene`     scene files with ``world.backend = "pybullet"``
* :mod:`~mbplugin.bullet.client`    client ids and ``BulletClient`` objects
"""

from mbplugin.bullet.backend import BulletContacts, StepInfo
from mbplugin.bullet.client import Client
from mbplugin.bullet.stick import Stick

__all__ = ["BulletContacts", "Client", "StepInfo", "Stick"]
