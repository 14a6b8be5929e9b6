"""What a host engine supplies to the generic contact loop (shared/DESIGN.md, "Integration,
events, hosts").

A *host* is an engine that owns the bodies (PyBullet, MuJoCo). The contact loop
(:class:`mbplugin.hosts.loop.ContactLoop`) works on *rows*: the host's bodies (or links) that
take part in a managed pair, each a rigid body with its centre of mass as the reference point.
Per host step the backend reads the rows' state (:class:`~mbplugin.contact.BodyState`), the
loop detects, integrates the managed contacts in contact space and returns the
impulse-equivalent forces; the backend hands them to the host and steps it. What the loop needs
from the host during that step is the :class:`Host` protocol below: the free acceleration of
the contact points, the Jacobians and mass matrix of articulated rows, the host's friction
coefficients, and (for the implicit step of articulated contacts, solved after the host step)
the host's end state and a way to put it onto the solved one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts.arrays import cross_rows

#: row kinds: a free rigid body (the loop builds its W from mass and inertia), a static one
#: (infinite mass), a link of an articulated body (W from the host's Jacobians and mass matrix)
FREE, STATIC, ARTICULATED = 0, 1, 2

@dataclass(frozen=True)
class RowShape:
    """A collision shape of row ``row``: a contact-layer shape (``mbplugin.contact.shapes``)
    at the local pose ``pos`` (m) / ``quat`` [w, x, y, z] about the row's centre of mass, in the
    row's frame (the frame of ``BodyState.quat``). ``tag``: the host's id of the shape (a
    MuJoCo geom id, a PyBullet (body, link)), for messages and results."""

    row: int
    shape: Any
    pos: np.ndarray
    quat: np.ndarray
    tag: Any = None


@dataclass
class ArticulatedBlock:
    """The contribution of one articulated body (a kinematic tree) to W = J M^-1 J^T:
    entries e (contact sides on its links) with contact index ``contact`` (E,), ``sign`` (E,)
    (+1 side b, -1 side a), point Jacobians ``jac`` (E, 3, n) in the world frame and the
    body's joint-space mass matrix ``mass_matrix`` (n, n), in the same coordinates (the
    matrix of the host's velocity update: MuJoCo's implicit damping and soft constraints
    included, see :mod:`mbplugin.mujoco.host`). ``locked``: coordinates a host constraint
    holds (PyBullet's joint motors; :func:`~mbplugin.pipeline.delassus.articulated_w`).
    ``tag``: the host's handle of the body (for :meth:`Host.respond`). ``response`` (n, 3E):
    M^-1 J^T with the locked coordinates held, filled in by the loop."""

    contact: np.ndarray
    sign: np.ndarray
    jac: np.ndarray
    mass_matrix: np.ndarray
    locked: np.ndarray | None = None
    tag: Any = None
    response: np.ndarray | None = None


class Host(Protocol):
    """The host side of one step of :class:`~mbplugin.hosts.loop.ContactLoop` (what the loop
    calls; :class:`HostAdapter` adds what the backend's user class calls).

    ``free_acceleration(batch, bodies, dt, art)``: the relative acceleration (K, 3) m/s^2 of the
    contact points (body b minus body a) without the managed forces over the coming host step:
    gravity, the user's loads, actuators, the host's own constraints (``art``: (K,) the
    contacts with an articulated side, which may need a probe step of the host).

    ``articulated(batch, bodies, entries)``: the :class:`ArticulatedBlock` of every
    articulated body among the batch's sides; ``entries`` (E,) are the indices into
    ``concatenate([batch.a, batch.b])`` of the sides on articulated rows (contact index
    ``entries % K``, side b where ``entries >= K``).

    ``friction(batch)``: each contact's friction coefficient (K,) as the host combines its
    shapes' (used when the backend's ``friction=`` is not given), or None (no host friction).

    ``end_state()``: the rows' state after the host step (the implicit step's read).

    ``respond(blocks, dq, rows, dv, dw, bodies, dt)``: put the host's state after its step onto
    the state with an extra contact impulse: each articulated block's generalised velocities
    change by ``dq[i]`` (its ``response`` times the impulses) and its positions by the host's
    update with that velocity change; free rows ``rows`` change their centre-of-mass velocity
    by ``dv`` and angular velocity by ``dw`` (world frame) and their poses by dt times those.
    ``bodies`` is :meth:`end_state`. Returns the largest joint or base angular speed seen
    (rad/s; the verification rounds' estimate of W's first-order error).
    """

    def free_acceleration(self, batch: ContactBatch, bodies: BodyState, dt: float,
                          art: np.ndarray) -> np.ndarray: ...

    def articulated(self, batch: ContactBatch, bodies: BodyState,
                    entries: np.ndarray) -> list[ArticulatedBlock]: ...

    def friction(self, batch: ContactBatch) -> np.ndarray | None: ...

    def end_state(self) -> BodyState: ...

    def respond(self, blocks: list[ArticulatedBlock], dq: list[np.ndarray], rows: np.ndarray,
                dv: np.ndarray, dw: np.ndarray, bodies: BodyState, dt: float) -> float: ...


class HostAdapter(Host, Protocol):
    """A host engine behind one protocol (shared/DESIGN.md, "Integration, events, hosts"): the
    :class:`Host` calls of the loop plus those of the backend's user class, in the order of a
    host step.

    ``shapes()``: the rows' collision geometry as :class:`RowShape` (or a clear error naming
    a shape the contact layer cannot model). ``disable_native(pairs)`` / ``restore_native()``:
    the host's own response off for exactly the managed pairs, and back.
    ``read_state()``: the rows' centre-of-mass state at the step's start (pos, quat [w, x, y,
    z], vel, omega in the world frame), after whatever the host must compute for it.
    ``apply(batch, force)``: the impulse-equivalent forces (K, 3) on side b (minus on side a)
    for the coming step, the user's own inputs kept. ``step()``: advance the host by its step
    (and give the user's inputs back)."""

    def shapes(self) -> list[RowShape]: ...

    def disable_native(self, pairs: np.ndarray) -> None: ...

    def restore_native(self) -> None: ...

    def read_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...

    def apply(self, batch: ContactBatch, force: np.ndarray) -> None: ...

    def step(self) -> None: ...


def point_velocity(bodies: BodyState, batch: ContactBatch) -> np.ndarray:
    """u = v_b(P) - v_a(P) (K, 3) of the batch's contacts with its lever arms ``ra``, ``rb``
    (the bodies' velocities at their centres of mass plus omega x r; index -1: the world)."""
    _, vel, om = bodies.kinematics_ext()
    va = vel[batch.a] + cross_rows(om[batch.a], batch.ra)
    vb = vel[batch.b] + cross_rows(om[batch.b], batch.rb)
    return vb - va
