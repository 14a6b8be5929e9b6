"""The PyBullet backend: the contact laws of mbplugin inside an existing PyBullet scene.

* :mod:`~mbplugin.bullet.backend`   ``BulletContacts``: attach, manage pairs, step
* :mod:`~mbplugin.bullet.substep`   contact-space integration inside a host step
* :mod:`~mbplugin.bullet.delassus`  the Delassus operator J M^-1 J^T of the contacts
* :mod:`~mbplugin.bullet.geometry`  PyBullet collision shapes as contact-layer shapes
* :mod:`~mbplugin.bullet.client`    client ids and ``BulletClient`` objects
"""

from mbplugin.bullet.backend import BulletContacts, StepInfo
from mbplugin.bullet.client import Client

__all__ = ["BulletContacts", "Client", "StepInfo"]
