"""The MuJoCo backend: the contact laws of mbplugin inside an existing MuJoCo model.

* :mod:`~mbplugin.mujoco.backend`   ``MujocoContacts``: manage geom pairs, step
* :mod:`~mbplugin.mujoco.host`      the MuJoCo side of a host step (state, W, probes, forces)
* :mod:`~mbplugin.mujoco.native`    MuJoCo's own response off for the managed pairs
* :mod:`~mbplugin.mujoco.geometry`  MuJoCo geoms as contact-layer shapes
* :mod:`~mbplugin.mujoco.scene`     scene files with ``world.backend = "mujoco"``

The generic part of the step (detection, W, contact-space integration, the implicit step,
position correction) is :class:`mbplugin.hosts.ContactLoop`. ``import mbplugin.mujoco`` does
not import MuJoCo; ``MujocoContacts(...)`` without it installed raises an ImportError naming
the extra (``pip install 'mbplugin[mujoco]'``).
"""

from mbplugin.hosts import Stick
from mbplugin.mujoco.backend import MujocoContacts, MujocoStepInfo, Ref, body, geom

__all__ = ["MujocoContacts", "MujocoStepInfo", "Ref", "Stick", "body", "geom"]
