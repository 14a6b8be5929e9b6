"""Access to a PyBullet physics client given as an id (``p.DIRECT`` / ``p.GUI``) or a
``pybullet_utils.bullet_client.BulletClient`` object.

Every PyBullet call of the backend goes through :class:`Client`, which passes the client id, so
several clients can be driven at once from one process.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError


class Client:
    """A connected PyBullet client; ``client`` is an int id or a BulletClient object."""

    def __init__(self, client: Any = 0) -> None:
        import pybullet

        self.p = pybullet
        if isinstance(client, bool):
            raise ParameterError(f"client = {client!r} must be a PyBullet client id (int) or a "
                                 "bullet_client.BulletClient")
        if isinstance(client, int | np.integer):
            cid = int(client)
        elif hasattr(client, "_client"):
            cid = int(client._client)
        else:
            raise ParameterError(f"client = {client!r} must be a PyBullet client id (int) or a "
                                 "bullet_client.BulletClient")
        self.id = cid
        self.last_dt = 0.0  # see time_step_gravity
        self.check()
        self.time_step_gravity()  # (refuses a stepping the backend cannot follow)

    def check(self) -> None:
        """Raise :class:`ParameterError` if the client is not connected."""
        if cid_connected(self.p, self.id):
            return
        raise ParameterError(f"PyBullet client {self.id} is not connected (p.connect(...) first, "
                             "and do not disconnect it while the backend uses it)")

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.p, name)(*args, physicsClientId=self.id, **kwargs)

    # -- queries --------------------------------------------------------------------------------
    def body_ids(self) -> list[int]:
        """Unique ids of every body in the client."""
        return [int(self("getBodyUniqueId", i)) for i in range(int(self("getNumBodies")))]

    def has_body(self, body: int) -> bool:
        return int(body) in self.body_ids()

    def gravity(self) -> np.ndarray:
        """The client's gravity vector (m/s^2)."""
        return _gravity(self("getPhysicsEngineParameters"))

    def time_step_gravity(self) -> tuple[float, np.ndarray]:
        """:meth:`time_step` (s) and :meth:`gravity` (m/s^2) from one PyBullet call (the time
        step also kept as ``last_dt``)."""
        prm = self.p.getPhysicsEngineParameters(physicsClientId=self.id)
        if prm["numSubSteps"] > 1 or prm["useRealTimeSimulation"]:
            raise ParameterError(stepping_error(self.id, prm))
        self.last_dt = float(prm["fixedTimeStep"])
        return self.last_dt, _gravity(prm)

    def time_step(self) -> float:
        """The host step (s): ``fixedTimeStep`` of the client (PyBullet default 1/240 s)."""
        return float(self("getPhysicsEngineParameters")["fixedTimeStep"])


def stepping_error(cid: int, prm: dict[str, Any]) -> str:
    """The message for a client whose ``stepSimulation`` is not one semi-implicit step of
    ``fixedTimeStep`` that the backend starts (``numSubSteps`` > 1, real-time simulation)."""
    if prm["useRealTimeSimulation"]:
        return (f"PyBullet client {cid} runs in real time (setRealTimeSimulation(1)): "
                "BulletContacts must take every host step itself; call "
                "setRealTimeSimulation(0) and contacts.step() in your loop")
    n, dt = int(prm["numSubSteps"]), float(prm["fixedTimeStep"])
    return (f"PyBullet client {cid} has numSubSteps = {n} (setPhysicsEngineParameter): "
            f"BulletContacts integrates each stepSimulation as one semi-implicit step of "
            f"fixedTimeStep and would apply its contact forces over {n} sub-steps it does not "
            f"see; set numSubSteps=0 and instead call setTimeStep({dt:g} / {n}) and "
            f"contacts.step() {n} times per control step")


def _gravity(prm: dict[str, Any]) -> np.ndarray:
    """The gravity vector (m/s^2) of PyBullet's ``getPhysicsEngineParameters`` dict."""
    return np.array([prm["gravityAccelerationX"], prm["gravityAccelerationY"],
                     prm["gravityAccelerationZ"]], dtype=float)


def cid_connected(p: Any, cid: int) -> bool:
    try:
        return bool(p.isConnected(physicsClientId=cid))
    except Exception:  # pybullet raises plain errors for bad ids
        return False


def vectors(a: np.ndarray) -> Iterator[tuple[float, ...]]:
    """The rows of ``a`` (N, m) as tuples of floats, made one at a time (``zip`` of its column
    lists): a call mapped over them keeps no N lists alive at once, which would trigger the
    garbage collector's passes (and promote those lists to its older generations) every step."""
    return zip(*np.asarray(a, dtype=float).T.tolist(), strict=True)


def drain(calls: Iterator[Any]) -> None:
    """Run a ``map`` of PyBullet calls to its end, discarding the results (in C: a zero-length
    ``deque`` consumes the iterator without a Python loop)."""
    deque(calls, maxlen=0)
