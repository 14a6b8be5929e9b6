"""The free rows of a :class:`~mbplugin.mujoco.MujocoContacts` (bodies whose only joint is a
free joint; one responsibility of the host adapter :class:`~mbplugin.mujoco.host.MujocoHost`):
their poses read from ``qpos`` (their free acceleration from ``qacc_smooth`` is
:func:`mbplugin.mujoco.kernels.free_point_acceleration`'s), and the writes to their free joints:
the implicit step's response, the position correction and the exact free flight
(:mod:`mbplugin.hosts.flight`).

A free joint's ``qpos`` holds the body frame's origin and orientation, its ``qvel`` the
origin's velocity and the local angular velocity; a row's reference point is the body's
centre of mass, ``body_ipos`` from the origin in the body frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact import BodyState
from mbplugin.contact.rotation import (
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    rotate,
    rotate_transpose,
)
from mbplugin.errors import ParameterError
from mbplugin.hosts.arrays import cross_rows
from mbplugin.hosts.flight import ballistic, flight_offset
from mbplugin.mujoco import kernels as _k

_XYZ = np.arange(3)
_QUAT = np.arange(3, 7)
_ANG = np.arange(3, 6)


class MujocoFreeRows:
    """The free rows ``free`` (indices into the rows) of ``(m, d)``: ``body`` (N,) the rows'
    MuJoCo bodies, ``ipos`` (N, 3) and ``iquat`` (N, 4) their centre-of-mass frames in the body
    frames; ``qadr``, ``vadr`` (F,) the free joints' qpos and qvel addresses."""

    def __init__(self, m: Any, d: Any, body: np.ndarray, free: np.ndarray, ipos: np.ndarray,
                 iquat: np.ndarray) -> None:
        self.m, self.d = m, d
        self.body, self.free, self.ipos, self.iquat = body, free, ipos, iquat
        # principal axes along the body frame's: the row's orientation is the joint's
        self._iquat_unit = bool(np.all(iquat[free] == np.array([1.0, 0.0, 0.0, 0.0])))
        # centres of mass at the body frames' origins (spheres): no lever arm
        self._ipos_zero = not np.any(ipos[free])
        self.fbody = np.asarray(body[free], dtype=np.int64)  # the free rows' MuJoCo bodies
        jnt = m.body_jntadr[body[free]]
        self.qadr = np.asarray(m.jnt_qposadr[jnt], dtype=np.int64)
        self.vadr = np.asarray(m.jnt_dofadr[jnt], dtype=np.int64)
        self._q3 = self.qadr[:, None] + _XYZ  # the origins' qpos addresses (F, 3)
        self._q4 = self.qadr[:, None] + _QUAT  # the orientations' (F, 4)
        self._v3 = self.vadr[:, None] + _XYZ  # the linear dofs (F, 3)
        self._w3 = self.vadr[:, None] + _ANG  # the angular dofs (F, 3)

    def end_poses(self, bodies: BodyState) -> BodyState:
        """The rows after the host step: free rows' poses from ``qpos`` (MuJoCo's free joint:
        the body frame's origin and orientation), the others as in ``bodies`` (their contacts
        are not corrected). Velocities as in ``bodies`` (unused: the correction reads overlaps)."""
        pos, quat = bodies.pos.copy(), bodies.quat.copy()
        if len(self.free) and not _k.free_end_poses(
                self.d.qpos, self._q3, self._q4, self.free, self.ipos, self.iquat,
                self._ipos_zero, self._iquat_unit, pos, quat):
            raise ParameterError("orientation quaternion must be finite and non-zero")
        return BodyState(pos, quat, bodies.vel, bodies.omega, bodies.mass, bodies.inv_inertia,
                         bodies.fixed)

    def respond(self, rows: np.ndarray, dv: np.ndarray, dw: np.ndarray,
                qadr: list[np.ndarray]) -> float:
        """``qvel`` of the free rows ``rows`` changed by (dv, dw) (the centre of mass's velocity
        and the world angular velocity, turned into the free joint's origin velocity and local
        angular velocity); their qpos addresses appended to ``qadr``. Returns their largest
        angular speed (rad/s)."""
        d = self.d
        pos = np.searchsorted(self.free, rows)
        qa, va = self.qadr[pos], self.vadr[pos]
        q = quat_normalize(d.qpos[qa[:, None] + _QUAT])
        r = quat_to_matrix(q)
        arm = rotate(r, self.ipos[rows])  # origin -> centre of mass
        d.qvel[va[:, None] + _XYZ] += dv - cross_rows(dw, arm)
        d.qvel[va[:, None] + _ANG] += rotate_transpose(r, dw)
        qadr.append((qa[:, None] + np.arange(7)).ravel())
        w = d.qvel[va[:, None] + _ANG]
        return float(np.max(np.sqrt(np.einsum("ij,ij->i", w, w))))

    def dofs(self, rows: np.ndarray) -> np.ndarray:
        """The six degrees of freedom (R, 6) of each of the free rows ``rows``."""
        return self.vadr[np.searchsorted(self.free, rows)][:, None] + np.arange(6)

    def move(self, dx: np.ndarray, dth: np.ndarray, end: BodyState) -> np.ndarray:
        """Move free rows by dx (m) and turn them by dth (rad, world) about their centres of
        mass (``end``: the rows' poses now, :meth:`end_poses`), keeping their centre-of-mass
        velocity and world angular velocity; returns the rows moved."""
        f = self.free
        if not len(f):
            return f
        d = self.d
        only, turned = _k.shift_free(d.qpos, self._q3, f, dx, dth)  # translations only
        if not turned:
            return f[only]
        moved = np.flatnonzero((dth[f, 0] != 0) | (dth[f, 1] != 0) | (dth[f, 2] != 0))
        rows = f[moved]
        q3, q4, v3, w3 = self._q3[moved], self._q4[moved], self._v3[moved], self._w3[moved]
        q0 = quat_normalize(d.qpos[q4])
        r0 = quat_to_matrix(q0)
        w = rotate(r0, d.qvel[w3])  # world angular velocity
        v_o = d.qvel[v3]
        v_c = v_o + cross_rows(w, rotate(r0, self.ipos[rows]))  # centre-of-mass velocity
        q1 = quat_multiply(quat_from_rotvec(dth[rows]), q0)
        r1 = quat_to_matrix(q1)
        arm1 = rotate(r1, self.ipos[rows])  # origin -> centre of mass
        d.qpos[q3] = end.pos[rows] + dx[rows] - arm1
        d.qpos[q4] = q1
        d.qvel[v3] = v_c - cross_rows(w, arm1)
        d.qvel[w3] = rotate_transpose(r1, w)
        return np.concatenate([f[only], rows])

    def flight(self, keep: np.ndarray, g: np.ndarray, dt: float) -> None:
        """Exact free flight over the host step just taken (:mod:`mbplugin.hosts.flight`) of
        the free rows whose step was a free flight (:meth:`ballistic`) and ``keep`` (F,) (not
        pushed by the backend nor touching a native contact): MuJoCo's semi-implicit Euler step
        runs ahead of the parabola by g dt^2 / 2; the body frame's origin is moved back by that
        (velocities are exact)."""
        if not keep.any():  # every free row pushed or touching (at rest): no flight
            return
        fly = self.ballistic(g) & keep
        if fly.any():
            self.d.qpos[self._q3[fly]] -= flight_offset(g, dt)

    def ballistic(self, g: np.ndarray) -> np.ndarray:
        """(F,) True for free rows whose acceleration over the host step just taken
        (``qacc``: the step's own) was gravity's (:func:`mbplugin.hosts.flight.ballistic`: a
        body pushed by a native contact, a constraint or the user's force is left alone)."""
        return ballistic(self.d.qacc[self._v3], g)
