"""The MuJoCo side of a host step (the :class:`~mbplugin.hosts.Host` protocol and the reads
and writes :class:`~mbplugin.mujoco.MujocoContacts` makes).

Rows are MuJoCo bodies; a row's frame is the body's inertial frame (``xipos``, ``xquat`` *
``body_iquat``: centre of mass and principal axes), so its inverse inertia is
diag(1 / ``body_inertia``). A row is

* static: welded to the world (``body_weldid`` = 0, the world body itself included);
* free: a body whose only joint is a free joint and which has no child body (its W is
  I/m - [r]x I^-1 [r]x);
* articulated: any other body with degrees of freedom (W from MuJoCo's point Jacobians
  ``mj_jac`` and the mass matrix of its kinematic tree, read with ``mj_mulM``).

Velocities: ``cvel`` ([omega, v] at the subtree centre of mass of the body's root, world
orientation; computed by ``mj_step1``'s velocity stage), moved to the row's centre of mass.
Free acceleration: free rows' points from MuJoCo's smooth acceleration ``qacc_smooth``
(``mj_fwdActuation`` + ``mj_fwdAcceleration``: gravity, the user's ``xfrc_applied`` /
``qfrc_applied``, actuators, passive and gyroscopic forces) as J qacc_smooth; contacts with an
articulated side from a probe step (``mj_copyData`` of the state after ``mj_step1`` to a
scratch ``MjData``, ``mj_step2`` there, velocities read): it also holds MuJoCo's own
constraints (joint limits, unmanaged contacts). Forces go to ``xfrc_applied`` (force and
torque about the body's centre of mass, world frame); the caller restores the user's values
after ``mj_step2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.dynamics.rotation import (
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    rotate,
    rotate_transpose,
)
from mbplugin.hosts import ARTICULATED, FREE, STATIC, ArticulatedBlock, HostProbe, RowShape
from mbplugin.hosts.loop import lookup
from mbplugin.hosts.protocol import cross_rows, point_velocity
from mbplugin.mujoco.geometry import row_shapes
from mbplugin.mujoco.native import NativeFilter


def row_kinds(m: Any, bodies: np.ndarray) -> np.ndarray:
    """FREE / STATIC / ARTICULATED of each MuJoCo body (module docstring)."""
    import mujoco

    free_type = int(mujoco.mjtJoint.mjJNT_FREE)
    has_child = np.zeros(m.nbody, dtype=bool)
    has_child[m.body_parentid[1:]] = True
    out = np.empty(len(bodies), dtype=np.int64)
    for i, b in enumerate(np.asarray(bodies).tolist()):
        if m.body_weldid[b] == 0:
            out[i] = STATIC
        elif (m.body_jntnum[b] == 1 and int(m.jnt_type[m.body_jntadr[b]]) == free_type
              and not has_child[b]):
            out[i] = FREE
        else:
            out[i] = ARTICULATED
    return out


class MujocoHost:
    """MuJoCo behind :class:`~mbplugin.hosts.HostAdapter`: reads and writes of the rows
    ``bodies`` (MuJoCo body ids, ``kind`` their row kinds) in ``(m, d)``, whose managed geoms
    are ``geoms`` (``name(geom)`` for messages). :attr:`loop` (set by the backend) is the
    contact loop whose model the probes detect with."""

    def __init__(self, m: Any, d: Any, bodies: np.ndarray, kind: np.ndarray,
                 geoms: np.ndarray, name: Any = None) -> None:
        import mujoco

        self.mj = mujoco
        self.m, self.d = m, d
        self.geoms = np.asarray(geoms, dtype=np.int64)
        self.name = name if name is not None else (lambda g: f"geom {g}")
        self.native: NativeFilter | None = None
        self._user_xfrc: np.ndarray | None = None
        self.body = np.asarray(bodies, dtype=np.int64)
        self.kind = kind
        self.root = np.asarray(m.body_rootid[self.body], dtype=np.int64)
        self.iquat = np.array(m.body_iquat[self.body], dtype=float)
        self.ipos = np.array(m.body_ipos[self.body], dtype=float)
        self.free = np.flatnonzero(kind == FREE)
        jnt = m.body_jntadr[self.body[self.free]]
        self.qadr = np.asarray(m.jnt_qposadr[jnt], dtype=np.int64)
        self.vadr = np.asarray(m.jnt_dofadr[jnt], dtype=np.int64)
        # the degrees of freedom of each kinematic tree (by root body) of articulated rows
        dof_root = np.asarray(m.body_rootid[m.dof_bodyid], dtype=np.int64)
        self.tree_dofs = {int(r): np.flatnonzero(dof_root == r)
                          for r in np.unique(self.root[kind == ARTICULATED])}
        self._scratch: Any = None
        self.loop: Any = None

    # -- the adapter: geometry, native response, state, forces, step -------------------------------
    def shapes(self) -> list[RowShape]:
        """The managed geoms as contact-layer shapes on their rows (:mod:`.geometry`)."""
        row = {int(b): i for i, b in enumerate(self.body.tolist())}
        return row_shapes(self.m, self.geoms.tolist(),
                          lambda g: row[int(self.m.geom_bodyid[g])], self.name)

    def disable_native(self, pairs: np.ndarray) -> None:
        """MuJoCo's response off for exactly the geom ``pairs`` (:class:`.native.NativeFilter`;
        an explicit ``<pair>`` among them is an error, the model then untouched)."""
        self.native = NativeFilter(self.m, pairs, self.name)

    def restore_native(self) -> None:
        """The model's contype/conaffinity arrays back (MuJoCo collides the pairs again)."""
        if self.native is not None:
            self.native.restore()
            self.native = None

    def read_state(self) -> tuple[np.ndarray, ...]:
        """``mj_step1`` (MuJoCo's position and velocity stages at the current state), then the
        rows' centre-of-mass poses and velocities (pos, quat, vel, omega)."""
        self.mj.mj_step1(self.m, self.d)
        return self.state(self.d)

    def step(self) -> None:
        """``mj_step2`` (actuation, acceleration, MuJoCo's constraints, integration) and the
        user's ``xfrc_applied`` back as it was before :meth:`apply`."""
        try:
            self.mj.mj_step2(self.m, self.d)
        finally:
            if self._user_xfrc is not None:
                self.d.xfrc_applied[:] = self._user_xfrc
                self._user_xfrc = None

    def state(self, d: Any) -> tuple[np.ndarray, ...]:
        """The rows' centre-of-mass poses and velocities (pos, quat, vel, omega) in ``d``
        (its kinematics and ``cvel`` current)."""
        b = self.body
        pos = d.xipos[b]  # a copy (fancy index)
        quat = quat_multiply(d.xquat[b], self.iquat)
        cvel = d.cvel[b]
        om = np.ascontiguousarray(cvel[:, :3])
        vel = cvel[:, 3:] + cross_rows(om, pos - d.subtree_com[self.root])
        return pos, quat, vel, om

    def end_state(self, bodies: BodyState) -> BodyState:
        """The rows after the host step: free rows' poses from ``qpos`` (MuJoCo's free joint:
        the body frame's origin and orientation), the others as in ``bodies`` (their contacts
        are not corrected). Velocities as in ``bodies`` (unused: the correction reads overlaps)."""
        pos, quat = bodies.pos.copy(), bodies.quat.copy()
        f = self.free
        if len(f):
            qp = self.d.qpos
            origin = qp[self.qadr[:, None] + np.arange(3)]
            q = quat_normalize(qp[self.qadr[:, None] + np.arange(3, 7)])
            pos[f] = origin + rotate(quat_to_matrix(q), self.ipos[f])
            quat[f] = quat_multiply(q, self.iquat[f])
        return BodyState(pos, quat, bodies.vel, bodies.omega, bodies.mass, bodies.inv_inertia,
                         bodies.fixed)

    # -- the Host protocol -------------------------------------------------------------------------
    def free_acceleration(self, batch: ContactBatch, bodies: BodyState, dt: float,
                          art: np.ndarray) -> np.ndarray:
        """Relative acceleration of the contact points without the managed forces (K, 3):
        J qacc_smooth for free rows, a probe step for contacts with an articulated side
        (module docstring)."""
        mj, m, d = self.mj, self.m, self.d
        k = len(batch)
        acc = np.zeros((len(self.body) + 1, 3))  # per row, index -1: the world
        alpha = np.zeros((len(self.body) + 1, 3))
        origin = np.zeros((len(self.body) + 1, 3))
        if len(self.free) and not art.all():
            mj.mj_fwdActuation(m, d)
            mj.mj_fwdAcceleration(m, d)
            qa = d.qacc_smooth
            f = self.free
            acc[f] = qa[self.vadr[:, None] + np.arange(3)]
            rot = d.xmat[self.body[f]].reshape(-1, 3, 3)
            alpha[f] = rotate(rot, qa[self.vadr[:, None] + np.arange(3, 6)])
            origin[f] = d.xpos[self.body[f]]
        pa = batch.point - origin[batch.a]
        pb = batch.point - origin[batch.b]
        a = (acc[batch.b] + cross_rows(alpha[batch.b], pb)
             - acc[batch.a] - cross_rows(alpha[batch.a], pa))
        if art.any():
            s = self._probe_data()
            mj.mj_step2(m, s)
            self._kinematics(s)
            after = self.loop.body_state(*self.state(s))
            u0 = point_velocity(bodies, batch)
            u1 = point_velocity(after, batch)
            a[art] = (u1[art] - u0[art]) / dt
        return a if k else np.zeros((0, 3))

    def articulated(self, batch: ContactBatch, bodies: BodyState,
                    entries: np.ndarray) -> list[ArticulatedBlock]:
        """W's blocks of the kinematic trees with contacts (``mj_jac`` at each contact point,
        the tree's mass matrix by ``mj_mulM`` of unit vectors: M's own entries)."""
        mj, m, d = self.mj, self.m, self.d
        k = len(batch)
        side = np.concatenate([batch.a, batch.b])[entries]
        point = np.concatenate([batch.point, batch.point])[entries]
        out = []
        for root, dofs in self.tree_dofs.items():
            sel = np.flatnonzero(self.root[side] == root)
            if not len(sel):
                continue
            jac = np.zeros((len(sel), 3, len(dofs)))
            jp = np.zeros((3, m.nv))
            for i, e in enumerate(sel.tolist()):
                mj.mj_jac(m, d, jp, None, point[e], int(self.body[side[e]]))
                jac[i] = jp[:, dofs]
            mm = np.zeros((len(dofs), len(dofs)))
            unit, col = np.zeros(m.nv), np.zeros(m.nv)
            for j, dof in enumerate(dofs.tolist()):
                unit[dof] = 1.0
                mj.mj_mulM(m, d, col, unit)
                mm[:, j] = col[dofs]
                unit[dof] = 0.0
            ent = entries[sel]
            out.append(ArticulatedBlock(ent % k, np.where(ent >= k, 1.0, -1.0), jac, mm))
        return out

    def probe(self, batch: ContactBatch, margin: float) -> HostProbe:
        """The host step with an impulse P applied (K, 3), on a scratch copy of the state after
        ``mj_step1``: whether each contact is still found, its velocity u and overlap delta at
        the step's end (the batch's pairs detected there)."""
        mj, m = self.mj, self.m

        def host(P: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            s = self._probe_data()
            self._add_forces(batch, P / m.opt.timestep, s.xfrc_applied, s)
            mj.mj_step2(m, s)
            self._kinematics(s)
            after = self.loop.body_state(*self.state(s))
            now = self.loop.model.detect_pairs(after, batch.key, margin)
            pos = lookup(now.key, batch.key)
            ok = pos >= 0
            at = np.maximum(pos, 0)
            if not len(now):
                return ok, np.zeros((len(batch), 3)), np.zeros(len(batch))
            u = now.vt[at] - now.ddelta[at][:, None] * now.normal[at]
            return ok, u, now.delta[at]

        return host

    def _probe_data(self) -> Any:
        """A scratch ``MjData`` holding the backend's data (after ``mj_step1``)."""
        if self._scratch is None:
            self._scratch = self.mj.MjData(self.m)
        self.mj.mj_copyData(self._scratch, self.m, self.d)
        return self._scratch

    def _kinematics(self, s: Any) -> None:
        """Positions and ``cvel`` of a scratch data after its ``mj_step2``."""
        mj, m = self.mj, self.m
        mj.mj_kinematics(m, s)
        mj.mj_comPos(m, s)
        mj.mj_comVel(m, s)

    # -- writes -----------------------------------------------------------------------------------
    def apply(self, batch: ContactBatch, force: np.ndarray) -> None:
        """Add the contacts' forces (K, 3) on side b (and minus them on side a) to
        ``xfrc_applied`` for the coming :meth:`step` (which gives the user's values back)."""
        if self._user_xfrc is None:
            self._user_xfrc = self.d.xfrc_applied.copy()
        self._add_forces(batch, force, self.d.xfrc_applied, self.d)

    def _add_forces(self, batch: ContactBatch, force: np.ndarray, xf: np.ndarray,
                    d: Any) -> None:
        """Force and torque about each body's centre of mass (world frame, ``d.xipos``) of
        the contacts' forces, added into ``xf``."""
        for side, sgn in ((batch.b, 1.0), (batch.a, -1.0)):
            keep = self.kind[side] != STATIC
            if not keep.any():
                continue
            body = self.body[side[keep]]
            f = sgn * force[keep]
            tau = cross_rows(batch.point[keep] - d.xipos[body], f)
            np.add.at(xf, body, np.concatenate([f, tau], axis=1))

    def settle_warmstart(self, rows: np.ndarray) -> None:
        """After :meth:`apply`: set ``qacc_warmstart`` of the degrees of freedom of ``rows``'
        kinematic trees that no MuJoCo constraint touches in this step to their smooth
        acceleration with the managed forces (what their ``qacc`` becomes: MuJoCo sets an
        unconstrained dof's acceleration to ``qacc_smooth``).

        Why: MuJoCo's constraint solver starts from the better of ``qacc_warmstart`` (the last
        step's ``qacc``) and ``qacc_smooth``, judged by one cost summed over *every* dof
        (``warmstart`` in ``engine_forward.c``). A managed force that appears (an impact) would
        add a large term of the managed body's own to that cost and flip the choice for the
        whole model; the unmanaged pairs' solve would then start elsewhere and end at the same
        solution to rounding (~1e-13 m), not to the bit. With the managed body's term zeroed,
        the choice is that of the other dofs alone."""
        if not len(rows):
            return
        mj, m, d = self.mj, self.m, self.d
        mask = np.zeros(m.nv, dtype=bool)
        free = rows[self.kind[rows] == FREE]
        if len(free):  # a free row's tree: its own six dofs
            mask[self.vadr[np.searchsorted(self.free, free)][:, None] + np.arange(6)] = True
        for r in rows[self.kind[rows] == ARTICULATED].tolist():
            mask[self._tree_dofs(r)] = True
        if d.nisland > 0:
            mask &= np.asarray(d.dof_island) < 0
        elif d.nefc > 0:
            return  # no island structure: every dof may be constrained
        if not mask.any():
            return
        mj.mj_fwdActuation(m, d)
        mj.mj_fwdAcceleration(m, d)
        d.qacc_warmstart[mask] = d.qacc_smooth[mask]

    def _tree_dofs(self, row: int) -> np.ndarray:
        """The degrees of freedom of an articulated row's kinematic tree."""
        return self.tree_dofs[int(self.root[row])]

    def move(self, dx: np.ndarray, dth: np.ndarray, end: BodyState) -> np.ndarray:
        """Move free rows by dx (m) and turn them by dth (rad, world) about their centres of
        mass (``end``: the rows' poses now, :meth:`end_state`), keeping their centre-of-mass
        velocity and world angular velocity; returns the rows moved."""
        f = self.free
        if not len(f):
            return f
        turn = (dth[f, 0] != 0) | (dth[f, 1] != 0) | (dth[f, 2] != 0)
        shift = (dx[f, 0] != 0) | (dx[f, 1] != 0) | (dx[f, 2] != 0)
        d = self.d
        only = np.flatnonzero(shift & ~turn)
        if len(only):  # a translation moves the frame's origin with the centre of mass
            d.qpos[self.qadr[only][:, None] + np.arange(3)] += dx[f[only]]
        moved = np.flatnonzero(turn)
        if not len(moved):
            return f[only]
        rows = f[moved]
        qa, va = self.qadr[moved], self.vadr[moved]
        q0 = quat_normalize(d.qpos[qa[:, None] + np.arange(3, 7)])
        r0 = quat_to_matrix(q0)
        w = rotate(r0, d.qvel[va[:, None] + np.arange(3, 6)])  # world angular velocity
        v_o = d.qvel[va[:, None] + np.arange(3)]
        v_c = v_o + cross_rows(w, rotate(r0, self.ipos[rows]))  # centre-of-mass velocity
        q1 = quat_multiply(quat_from_rotvec(dth[rows]), q0)
        r1 = quat_to_matrix(q1)
        arm1 = rotate(r1, self.ipos[rows])  # origin -> centre of mass
        d.qpos[qa[:, None] + np.arange(3)] = end.pos[rows] + dx[rows] - arm1
        d.qpos[qa[:, None] + np.arange(3, 7)] = q1
        d.qvel[va[:, None] + np.arange(3)] = v_c - cross_rows(w, arm1)
        d.qvel[va[:, None] + np.arange(3, 6)] = rotate_transpose(r1, w)
        return np.concatenate([f[only], rows])

    def touching_native(self) -> np.ndarray:
        """(N,) True for rows whose body is in one of MuJoCo's own contacts of this step (the
        contacts ``mj_step1`` found: unmanaged pairs)."""
        d = self.d
        out = np.zeros(len(self.body), dtype=bool)
        if d.ncon:
            geoms = np.asarray(d.contact.geom[: d.ncon]).ravel()
            touched = self.m.geom_bodyid[geoms]
            out = np.isin(self.body, touched)
        return out

    def flight(self, rows: np.ndarray, g: np.ndarray, dt: float) -> None:
        """Exact free flight of the free rows ``rows`` (indices into the rows) over the host
        step just taken: MuJoCo's semi-implicit Euler step, x1 = x0 + dt v1 with
        v1 = v0 + g dt, runs ahead of the parabola by g dt^2 / 2 per step; the body frame's
        origin is moved back by that (velocities are exact)."""
        if not len(rows):
            return
        pos = np.searchsorted(self.free, rows)
        qa = self.qadr[pos]
        self.d.qpos[qa[:, None] + np.arange(3)] -= 0.5 * dt * dt * g

    def ballistic(self, g: np.ndarray) -> np.ndarray:
        """(F,) True for free rows whose acceleration over the host step just taken
        (``qacc``: the step's own) was gravity's within 5 % (a flight; a body pushed by a
        native contact, a constraint or the user's force is left alone)."""
        qa = self.d.qacc[self.vadr[:, None] + np.arange(3)]
        gn = float(np.linalg.norm(g))
        return np.linalg.norm(qa - g, axis=1) <= 0.05 * gn + 1e-12

