"""Rigid bodies as a structure of arrays: mass properties and the 6-DOF state.

State of body i (SI units)::

    pos[i]    (3,)  centre of mass in the world frame (m)
    quat[i]   (4,)  orientation [w, x, y, z], body frame -> world frame
    vel[i]    (3,)  velocity of the centre of mass, world frame (m/s)
    omega[i]  (3,)  angular velocity in the BODY frame (rad/s)

Mass properties: ``mass`` (kg), ``inertia`` (3, 3) about the centre of mass in the body frame
(kg m^2). A fixed body has infinite mass, zero inverse mass and zero inverse inertia: forces do
not move it. ``gravity_scale`` multiplies gravity per body (0 switches it off, e.g. for a body
whose every external force is given as a load).

The integrators work on one flat vector ``y`` (see :class:`StateLayout`) holding the states of all
bodies followed by any extra states (the contact laws' ODE states, energy accumulators).
The contact layer reads the same arrays (positions, rotation matrices, velocities).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mbplugin.dynamics.rotation import quat_normalize, quat_to_matrix, rotate
from mbplugin.errors import ParameterError


def sphere_inertia(mass: float, radius: float) -> np.ndarray:
    """Inertia tensor (kg m^2) of a solid homogeneous sphere: (2/5) m r^2 I."""
    return np.eye(3) * (0.4 * mass * radius * radius)


def box_inertia(mass: float, half_extents: Sequence[float]) -> np.ndarray:
    """Inertia tensor (kg m^2) of a solid homogeneous box with half extents (a, b, c) (m)."""
    a, b, c = (2.0 * float(x) for x in half_extents)
    return np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * (mass / 12.0)


@dataclass(frozen=True)
class StateLayout:
    """Where each part of the flat state vector lives, for ``n`` bodies and ``n_extra`` extras."""

    n: int
    n_extra: int = 0

    @property
    def pos(self) -> slice:
        return slice(0, 3 * self.n)

    @property
    def quat(self) -> slice:
        return slice(3 * self.n, 7 * self.n)

    @property
    def vel(self) -> slice:
        return slice(7 * self.n, 10 * self.n)

    @property
    def omega(self) -> slice:
        return slice(10 * self.n, 13 * self.n)

    @property
    def extra(self) -> slice:
        return slice(13 * self.n, 13 * self.n + self.n_extra)

    @property
    def size(self) -> int:
        return 13 * self.n + self.n_extra

    def split(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Views (pos, quat, vel, omega) of a flat state vector (no copies)."""
        n = self.n
        return (
            y[self.pos].reshape(n, 3),
            y[self.quat].reshape(n, 4),
            y[self.vel].reshape(n, 3),
            y[self.omega].reshape(n, 3),
        )


@dataclass
class Bodies:
    """All rigid bodies of a world (structure of arrays)."""

    names: list[str]
    mass: np.ndarray
    inertia: np.ndarray
    fixed: np.ndarray
    gravity_scale: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    vel: np.ndarray
    omega: np.ndarray
    inv_mass: np.ndarray = field(init=False)
    inv_inertia: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.names)
        self.mass = np.asarray(self.mass, dtype=float).reshape(n)
        self.inertia = np.asarray(self.inertia, dtype=float).reshape(n, 3, 3)
        self.fixed = np.asarray(self.fixed, dtype=bool).reshape(n)
        self.gravity_scale = np.asarray(self.gravity_scale, dtype=float).reshape(n)
        self.pos = np.asarray(self.pos, dtype=float).reshape(n, 3).copy()
        self.quat = quat_normalize(np.asarray(self.quat, dtype=float).reshape(n, 4))
        self.vel = np.asarray(self.vel, dtype=float).reshape(n, 3).copy()
        self.omega = np.asarray(self.omega, dtype=float).reshape(n, 3).copy()
        if len(set(self.names)) != n:
            dup = sorted({x for x in self.names if self.names.count(x) > 1})[0]
            raise ParameterError(f"body name {dup!r} is used twice; names must be unique")
        movable = ~self.fixed
        bad = movable & ~(np.isfinite(self.mass) & (self.mass > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ParameterError(
                f"body {self.names[i]!r}: mass = {self.mass[i]:g} kg is outside its allowed "
                "range (0, inf)"
            )
        for arr, what in ((self.pos, "position"), (self.vel, "velocity"),
                          (self.omega, "angular_velocity"), (self.gravity_scale, "gravity_scale")):
            if not np.all(np.isfinite(arr)):
                i = int(np.flatnonzero(~np.isfinite(arr).reshape(n, -1).all(axis=1))[0])
                raise ParameterError(f"body {self.names[i]!r}: {what} must be finite")
        self.mass = np.where(self.fixed, math.inf, self.mass)
        self.inv_mass = np.where(self.fixed, 0.0, 1.0 / np.where(self.fixed, 1.0, self.mass))
        inv_i = np.zeros((n, 3, 3))
        if movable.any():
            inert = self.inertia[movable]
            sym = np.allclose(inert, np.swapaxes(inert, 1, 2), rtol=1e-10, atol=0.0)
            eig = np.linalg.eigvalsh(0.5 * (inert + np.swapaxes(inert, 1, 2)))
            if not sym or not np.all(eig > 0):
                idx = np.flatnonzero(movable)
                bad_i = int(idx[np.flatnonzero(~(eig > 0).all(axis=1))[0]]) if not np.all(
                    eig > 0) else int(idx[0])
                raise ParameterError(
                    f"body {self.names[bad_i]!r}: the inertia tensor must be symmetric positive "
                    "definite (kg m^2)"
                )
            inv_i[movable] = np.linalg.inv(inert)
        self.inv_inertia = inv_i
        # fixed bodies never move
        self.vel[self.fixed] = 0.0
        self.omega[self.fixed] = 0.0

    # -- sizes and indices ----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Index of the body called ``name`` (ParameterError if there is none)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ParameterError(
                f"no body called {name!r}; bodies: {', '.join(self.names) or '(none)'}"
            ) from None

    @property
    def layout(self) -> StateLayout:
        return StateLayout(len(self))

    # -- flat state -------------------------------------------------------------------------------
    def state_vector(self) -> np.ndarray:
        """The bodies' state as one flat vector (pos, quat, vel, omega)."""
        return np.concatenate(
            [self.pos.ravel(), self.quat.ravel(), self.vel.ravel(), self.omega.ravel()]
        )

    def set_state_vector(self, y: np.ndarray) -> None:
        """Copy a flat state (at least 13 N long) into the arrays, normalising the quaternions."""
        pos, quat, vel, omega = StateLayout(len(self)).split(np.asarray(y, dtype=float))
        self.pos[:] = pos
        self.quat[:] = quat_normalize(quat)
        self.vel[:] = vel
        self.omega[:] = omega

    # -- physics ----------------------------------------------------------------------------------
    def kinetic_energy(self, vel: np.ndarray, omega: np.ndarray) -> float:
        """Translational plus rotational kinetic energy (J) of the movable bodies."""
        from mbplugin.dynamics._kernels import kinetic

        return float(kinetic(self.mass, self.inertia, np.asarray(self.fixed, dtype=np.bool_),
                             np.ascontiguousarray(vel, dtype=float),
                             np.ascontiguousarray(omega, dtype=float)))

    def potential_energy(self, pos: np.ndarray, gravity: np.ndarray) -> float:
        """Gravitational potential energy (J), zero at the origin: -sum m s g . x."""
        m = ~self.fixed
        if not m.any():
            return 0.0
        w = self.mass[m] * self.gravity_scale[m]
        return -float(np.sum(w * (pos[m] @ gravity)))

    def kinetic_energy_records(self, vel: np.ndarray, omega: np.ndarray) -> np.ndarray:
        """:meth:`kinetic_energy` (J) of K states: vel, omega (K, n, 3) -> (K,)."""
        from mbplugin.dynamics._kernels import kinetic_records

        out = np.empty(len(vel))
        kinetic_records(self.mass, self.inertia, np.asarray(self.fixed, dtype=np.bool_),
                        np.ascontiguousarray(vel, dtype=float),
                        np.ascontiguousarray(omega, dtype=float), out)
        return out

    def potential_energy_records(self, pos: np.ndarray, gravity: np.ndarray) -> np.ndarray:
        """:meth:`potential_energy` (J) of K states: pos (K, n, 3) -> (K,)."""
        m = ~self.fixed
        if not m.any():
            return np.zeros(len(pos))
        w = self.mass[m] * self.gravity_scale[m]
        K = len(pos)
        return -np.sum(w * (pos[:, m].reshape(-1, 3) @ gravity).reshape(K, -1), axis=1)

    def linear_momentum(self, vel: np.ndarray) -> np.ndarray:
        """Total linear momentum (kg m/s) of the movable bodies."""
        m = ~self.fixed
        return (self.mass[m, None] * vel[m]).sum(axis=0)

    def angular_momentum(
        self, pos: np.ndarray, quat: np.ndarray, vel: np.ndarray, omega: np.ndarray
    ) -> np.ndarray:
        """Total angular momentum about the world origin (kg m^2/s), world frame."""
        m = ~self.fixed
        R = quat_to_matrix(quat[m])
        spin = rotate(R, np.einsum("nij,nj->ni", self.inertia[m], omega[m]))
        orbit = np.cross(pos[m], self.mass[m, None] * vel[m])
        return (spin + orbit).sum(axis=0)


def make_bodies(
    names: Sequence[str],
    mass: Sequence[float],
    inertia: Sequence[np.ndarray] | np.ndarray,
    *,
    fixed: Sequence[bool] | None = None,
    gravity_scale: Sequence[float] | None = None,
    pos: np.ndarray | None = None,
    quat: np.ndarray | None = None,
    vel: np.ndarray | None = None,
    omega: np.ndarray | None = None,
) -> Bodies:
    """Convenience constructor with defaults (at rest at the origin, identity orientation)."""
    n = len(names)
    q0 = np.zeros((n, 4))
    q0[:, 0] = 1.0
    return Bodies(
        names=list(names),
        mass=np.asarray(mass, dtype=float),
        inertia=np.asarray(inertia, dtype=float),
        fixed=np.zeros(n, bool) if fixed is None else np.asarray(fixed, bool),
        gravity_scale=np.ones(n) if gravity_scale is None else np.asarray(gravity_scale, float),
        pos=np.zeros((n, 3)) if pos is None else pos,
        quat=q0 if quat is None else quat,
        vel=np.zeros((n, 3)) if vel is None else vel,
        omega=np.zeros((n, 3)) if omega is None else omega,
    )
