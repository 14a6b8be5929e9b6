"""The rigid-body state the contact detection reads, as a structure of arrays.

:class:`BodyState` holds N rigid bodies. It is deliberately small so that an engine can own it (or
copy its arrays into its own structure) and hand it to :meth:`mbplugin.contact.ContactModel.detect`
at every evaluation.

Conventions

* ``pos`` is the position of the body's **centre of mass** in the world frame (m). Shapes are
  attached to a body with a local offset and rotation relative to that point.
* ``quat`` is the orientation as a unit quaternion ``[w, x, y, z]`` rotating body-frame vectors
  into the world frame (it is normalised on use).
* ``vel`` is the velocity of the centre of mass (m/s), ``omega`` the angular velocity **in the
  world frame** (rad/s); the velocity of a material point at world offset r from the centre of
  mass is ``vel + omega x r``.
* ``mass`` (kg) and ``inv_inertia`` (the inverse of the inertia tensor about the centre of mass,
  in the **body** frame, 1/(kg m^2)). In the world frame I^-1 = R I_body^-1 R^T.
* ``fixed`` marks bodies of infinite mass (grounded or driven): they contribute nothing to the
  effective mass but their given velocities still count in the relative velocity.
* Body index ``-1`` is the static world (for geometry that belongs to no body, e.g. the ground
  plane). The helpers below append one row for it, so ``array[-1]`` is the world row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.contact import kernels as _k
from mbplugin.errors import ParameterError

_EYE3 = np.eye(3)
#: the last masses' 1/m (:meth:`BodyState.inv_mass_ext`): (mass dtype, shape and bytes, fixed
#: bytes; result)
_INV_MASS: dict[str, tuple[tuple[Any, ...], np.ndarray]] = {}


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrices (N, 3, 3) of unit quaternions (N, 4) ``[w, x, y, z]`` (normalised here;
    compiled kernel :func:`mbplugin.contact.kernels.quat_matrix`)."""
    q = np.asarray(quat, dtype=float)
    flat = np.ascontiguousarray(q.reshape(-1, 4))
    out = np.empty((flat.shape[0], 3, 3))
    _k.quat_matrices(flat, out)
    return out.reshape(*q.shape[:-1], 3, 3)


def axis_angle_quat(axis: Any, angle: float) -> np.ndarray:
    """The unit quaternion ``[w, x, y, z]`` of a rotation by ``angle`` (rad) about ``axis``."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    return np.concatenate([[np.cos(angle / 2.0)], np.sin(angle / 2.0) * a])


@dataclass
class BodyState:
    """State and inertia of N rigid bodies (see the module docstring for the conventions).

    ``pos`` (N, 3) m, ``quat`` (N, 4) [w, x, y, z], ``vel`` (N, 3) m/s, ``omega`` (N, 3) rad/s in
    the world frame, ``mass`` (N,) kg, ``inv_inertia`` (N, 3, 3) 1/(kg m^2) in the body frame,
    ``fixed`` (N,) bool.
    """

    pos: np.ndarray
    quat: np.ndarray
    vel: np.ndarray
    omega: np.ndarray
    mass: np.ndarray
    inv_inertia: np.ndarray
    fixed: np.ndarray

    def __len__(self) -> int:
        return int(self.pos.shape[0])

    @classmethod
    def create(
        cls,
        pos: Any,
        quat: Any = None,
        vel: Any = None,
        omega: Any = None,
        mass: Any = 1.0,
        inertia: Any = None,
        fixed: Any = False,
    ) -> BodyState:
        """Build a state from array-likes, filling defaults and checking shapes and values.

        ``quat`` defaults to the identity, ``vel``/``omega`` to zero. ``inertia`` is the inertia
        tensor about the centre of mass in the body frame (N, 3, 3), or its diagonal (N, 3), or
        ``None`` for a point mass (no rotational inertia: the inverse is taken as zero, so the
        body does not rotate under contact torques). It is inverted here.
        """
        p = np.array(pos, dtype=float, ndmin=2)
        n = p.shape[0]
        q = (np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)) if quat is None
             else np.array(quat, dtype=float, ndmin=2))
        v = np.zeros((n, 3)) if vel is None else np.array(vel, dtype=float, ndmin=2)
        w = np.zeros((n, 3)) if omega is None else np.array(omega, dtype=float, ndmin=2)
        m = np.broadcast_to(np.asarray(mass, dtype=float), (n,)).copy()
        fx = np.broadcast_to(np.asarray(fixed, dtype=bool), (n,)).copy()
        if inertia is None:
            inv_i = np.zeros((n, 3, 3))
        else:
            inertia_arr = np.asarray(inertia, dtype=float)
            if inertia_arr.ndim <= 2:  # principal moments, (3,) or (N, 3)
                inertia_arr = np.broadcast_to(inertia_arr, (n, 3))
                inertia_arr = inertia_arr[:, :, None] * np.eye(3)
            inertia_arr = np.broadcast_to(inertia_arr, (n, 3, 3))
            ev = np.linalg.eigvalsh(inertia_arr)
            if not np.all(np.isfinite(ev)) or np.any(ev[~fx] <= 0):
                raise ParameterError(
                    "inertia must be a symmetric positive definite (3, 3) tensor per body "
                    "(eigenvalues in (0, inf))"
                )
            inv_i = np.zeros((n, 3, 3))
            inv_i[~fx] = np.linalg.inv(inertia_arr[~fx])
        state = cls(p, q, v, w, m, inv_i, fx)
        state.validate()
        return state

    def validate(self) -> None:
        """Raise :class:`ParameterError` for wrong shapes, NaN poses/velocities or bad masses."""
        n = len(self)
        shapes = {
            "pos": (self.pos, (n, 3)),
            "quat": (self.quat, (n, 4)),
            "vel": (self.vel, (n, 3)),
            "omega": (self.omega, (n, 3)),
            "mass": (self.mass, (n,)),
            "inv_inertia": (self.inv_inertia, (n, 3, 3)),
            "fixed": (self.fixed, (n,)),
        }
        for name, (arr, shape) in shapes.items():
            if np.shape(arr) != shape:
                raise ParameterError(
                    f"body state '{name}' has shape {np.shape(arr)}, expected {shape}"
                )
        arrs = (self.pos, self.quat, self.vel, self.omega, self.mass, self.inv_inertia)
        if (all(type(a) is np.ndarray and a.dtype == np.float64 and a.flags.c_contiguous
                for a in arrs) and _k.state_all_valid(*arrs)):
            return  # every check below passes (one compiled pass)
        for name in ("pos", "quat", "vel", "omega"):
            arr = getattr(self, name)
            if not np.isfinite(arr).all():
                i = int(np.argwhere(~np.isfinite(arr))[0, 0])
                raise ParameterError(
                    f"body {i}: '{name}' is not finite ({arr[i]}); allowed range (-inf, inf)"
                )
        # quaternion norms >= 1e-12: every squared norm >= 1e-23 is enough (rounding is ~1e-16
        # relative); the exact test only when some is that small
        q = np.asarray(self.quat, dtype=float)
        if len(q) and np.einsum("ij,ij->i", q, q).min() < 1e-23:
            qn = np.linalg.norm(self.quat, axis=1)
            if np.any(qn < 1e-12):
                i = int(np.argmin(qn))
                raise ParameterError(
                    f"body {i}: quaternion has zero norm; expected a unit [w, x, y, z]"
                )
        mass = np.asarray(self.mass, dtype=float)
        if len(mass) and not (mass.min() > 0 and mass.max() < np.inf):  # else all are fine
            # fixed bodies may have any mass
            free = ~np.asarray(self.fixed, dtype=bool)
            bad = ~np.isfinite(self.mass) | (self.mass <= 0)
            if np.any(bad & free):
                i = int(np.argwhere(bad & free)[0, 0])
                raise ParameterError(
                    f"body {i}: mass = {self.mass[i]:g} kg, allowed range (0, inf)"
                )
        if not np.isfinite(self.inv_inertia).all():
            raise ParameterError("inv_inertia must be finite")

    @classmethod
    def from_body_frame(
        cls,
        pos: np.ndarray,
        quat: np.ndarray,
        vel: np.ndarray,
        omega_body: np.ndarray,
        mass: np.ndarray,
        inv_inertia: np.ndarray,
        fixed: np.ndarray,
    ) -> BodyState:
        """A state from arrays whose angular velocity is in the body frame (omega_w = R omega_b).

        For engines that integrate the body-frame angular velocity; no other copies are made.
        """
        rot = quat_to_matrix(quat)
        return cls(pos, quat, vel, np.einsum("nij,nj->ni", rot, omega_body), mass, inv_inertia,
                   fixed)

    # -- derived arrays with one extra row for the static world (index -1) ------------------------
    def rotations_ext(self) -> np.ndarray:
        """Rotation matrices (N + 1, 3, 3); the last row (index -1) is the world's identity."""
        out = np.empty((len(self) + 1, 3, 3))
        q = np.asarray(self.quat, dtype=float)
        _k.quat_matrices(np.ascontiguousarray(q.reshape(-1, 4)), out[:-1])  # quat_to_matrix
        out[-1] = _EYE3
        return out

    def kinematics_ext(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``pos``, ``vel``, ``omega`` with a zero world row appended, each (N + 1, 3)."""
        z = np.zeros((1, 3))
        return (
            np.concatenate([self.pos, z]),
            np.concatenate([self.vel, z]),
            np.concatenate([self.omega, z]),
        )

    def inv_mass_ext(self) -> np.ndarray:
        """1/m (N + 1,) with 0 for fixed bodies and for the world row (a new array; the last
        masses' result is kept and copied while ``mass`` and ``fixed`` are bitwise the same:
        a host builds a state per step from the same masses)."""
        fixed = np.asarray(self.fixed, dtype=bool)
        key = ((self.mass.dtype.str, self.mass.shape, self.mass.tobytes(), fixed.tobytes())
               if type(self.mass) is np.ndarray else None)
        hit = _INV_MASS.get("last")
        if key is not None and hit is not None and hit[0] == key:
            return hit[1].copy()
        out = np.zeros(len(self) + 1)
        if not fixed.any():  # every body free: no selection
            np.divide(1.0, self.mass, out=out[:-1])
        else:
            free = ~fixed
            out[:-1][free] = 1.0 / self.mass[free]
        if key is not None:
            _INV_MASS["last"] = (key, out.copy())
        return out

    def inv_inertia_world_ext(self, rot_ext: np.ndarray | None = None) -> np.ndarray:
        """World-frame inverse inertia R I_body^-1 R^T (N + 1, 3, 3); 0 for fixed bodies/world."""
        rot = self.rotations_ext() if rot_ext is None else rot_ext
        out = np.empty((len(self) + 1, 3, 3))
        _k.world_inverse_inertia_ext(np.ascontiguousarray(rot, dtype=float),
                                     np.ascontiguousarray(self.inv_inertia, dtype=float),
                                     np.asarray(self.fixed, dtype=np.bool_), out)
        return out
