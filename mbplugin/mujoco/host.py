"""The MuJoCo side of a host step (the :class:`~mbplugin.hosts.Host` protocol and the reads
and writes :class:`~mbplugin.mujoco.MujocoContacts` makes): :class:`MujocoHost` reads the
rows' state and hands the forces to MuJoCo; the free rows' joints are
:class:`~mbplugin.mujoco.free.MujocoFreeRows`', the articulated rows' kinematic trees
:class:`~mbplugin.mujoco.trees.MujocoTrees`'.

Rows are MuJoCo bodies; a row's frame is the body's inertial frame (``xipos``, ``xquat`` *
``body_iquat``: centre of mass and principal axes), so its inverse inertia is
diag(1 / ``body_inertia``). A row is

* static: welded to the world (``body_weldid`` = 0, the world body itself included);
* free: a body whose only joint is a free joint and which has no child body (its W is
  I/m - [r]x I^-1 [r]x);
* articulated: any other body with degrees of freedom (W from MuJoCo's point Jacobians
  ``mj_jac`` and the matrix of MuJoCo's velocity update of its kinematic tree,
  :meth:`MujocoTrees.update_matrix <mbplugin.mujoco.trees.MujocoTrees.update_matrix>`:
  the mass matrix read with ``mj_mulM``, implicit damping, actuator damping of the implicit
  integrators, soft equality and limit constraints).

Velocities: ``cvel`` ([omega, v] at the subtree centre of mass of the body's root, world
orientation; computed by ``mj_step1``'s velocity stage), moved to the row's centre of mass.
Free acceleration: free rows' points from MuJoCo's smooth acceleration ``qacc_smooth``
(``mj_fwdActuation`` + ``mj_fwdAcceleration``: gravity, the user's ``xfrc_applied`` /
``qfrc_applied``, actuators, passive and gyroscopic forces) as J qacc_smooth; with
``articulated="substep"``, contacts with an articulated side from a probe step
(``mj_copyData`` of the state after ``mj_step1`` to a scratch ``MjData``, ``mj_step2``
there, velocities read): it also holds
MuJoCo's own constraints (joint limits, unmanaged contacts). The implicit step of articulated
contacts needs no probe: it reads MuJoCo's end state (:meth:`MujocoHost.end_state`) and puts it
onto the solved one (:meth:`MujocoHost.respond`). Forces go to ``xfrc_applied`` (force and
torque about the body's centre of mass, world frame); the caller restores the user's values
after ``mj_step2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.errors import IntegrationError
from mbplugin.hosts import ARTICULATED, FREE, STATIC, ArticulatedBlock, RowShape
from mbplugin.hosts.protocol import point_velocity
from mbplugin.mujoco import kernels as _k
from mbplugin.mujoco.free import MujocoFreeRows
from mbplugin.mujoco.geometry import row_shapes
from mbplugin.mujoco.native import NativeFilter
from mbplugin.mujoco.trees import TURN_MAX, MujocoTrees, turn_message


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
        self._iquat_unit = bool(np.all(self.iquat == np.array([1.0, 0.0, 0.0, 0.0])))
        self._static = np.asarray(kind == STATIC)
        self.free = np.flatnonzero(kind == FREE)
        #: the free rows' joints (poses, free acceleration, response, correction, flight)
        self.free_rows = MujocoFreeRows(m, d, self.body, self.free, self.ipos, self.iquat)
        #: the articulated rows' kinematic trees (W's blocks, response)
        self.trees = MujocoTrees(mujoco, m, d, self.body, kind, self.root)
        self.tree_dofs = self.trees.tree_dofs
        self._scratch: Any = None
        self.loop: Any = None
        # the state before mj_step2 (the implicit step's positions are MuJoCo's update from it)
        self._qpos0 = np.zeros(m.nq)
        # the managed forces (batch, (K, 3) N) applied in this host step, and those of the last
        # one with the time MuJoCo's step ended at (_constrained_acceleration's predictor)
        self._applied: tuple[ContactBatch, np.ndarray] | None = None
        self._predictor: tuple[ContactBatch, np.ndarray] | None = None
        self._predictor_time = np.nan
        # the constraint acceleration the step's free acceleration took: (dofs, qacc -
        # qacc_smooth on them), or None (.native.constraint_error)
        self.constraint_taken: tuple[np.ndarray, np.ndarray] | None = None

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
        self._qpos0[:] = self.d.qpos
        self._predictor, self._applied = self._applied, None
        try:
            self.mj.mj_step2(self.m, self.d)
            self._predictor_time = self.d.time
        finally:
            if self._user_xfrc is not None:
                self.d.xfrc_applied[:] = self._user_xfrc
                self._user_xfrc = None

    def state(self, d: Any) -> tuple[np.ndarray, ...]:
        """The rows' centre-of-mass poses and velocities (pos, quat, vel, omega) in ``d``
        (its kinematics and ``cvel`` current; :func:`.kernels.row_state`)."""
        return _k.row_state(d.xipos, d.xquat, d.cvel, d.subtree_com, self.body, self.root,
                            self.iquat, self._iquat_unit)

    def end_state(self) -> BodyState:
        """The rows' state after the host step (poses and velocities of the current ``qpos``,
        ``qvel``: kinematics on a scratch ``MjData``, the user's data untouched)."""
        s = self._scratch_data()
        s.qpos[:] = self.d.qpos
        s.qvel[:] = self.d.qvel
        self._kinematics(s)
        return self.loop.body_state(*self.state(s))

    def end_poses(self, bodies: BodyState) -> BodyState:
        """The rows after the host step (:meth:`MujocoFreeRows.end_poses
        <mbplugin.mujoco.free.MujocoFreeRows.end_poses>`)."""
        return self.free_rows.end_poses(bodies)

    # -- the Host protocol -------------------------------------------------------------------------
    def free_acceleration(self, batch: ContactBatch, bodies: BodyState, dt: float,
                          art: np.ndarray) -> np.ndarray:
        """Relative acceleration of the contact points without the managed forces (K, 3):
        J qacc_smooth for free rows, a probe step for contacts with an articulated side
        (module docstring)."""
        mj, m, d = self.mj, self.m, self.d
        k = len(batch)
        fr = self.free_rows
        self.constraint_taken = None
        if len(self.free) and not art.all():
            mj.mj_fwdActuation(m, d)
            mj.mj_fwdAcceleration(m, d)
            qacc = self._constrained_acceleration() if d.nefc else d.qacc_smooth
            a = _k.free_point_acceleration(qacc, d.xmat, d.xpos, fr.fbody, self.free,
                                           fr.vadr, len(self.body), batch.a, batch.b,
                                           batch.point)
        else:  # no free row's acceleration: zero for every row
            a = _k.free_point_acceleration(d.qacc_smooth, d.xmat, d.xpos, fr.fbody[:0],
                                           self.free[:0], fr.vadr[:0], len(self.body),
                                           batch.a, batch.b, batch.point)
        if art.any():
            s = self._probe_data()
            mj.mj_step2(m, s)
            self._kinematics(s)
            after = self.loop.body_state(*self.state(s))
            u0 = point_velocity(bodies, batch)
            u1 = point_velocity(after, batch)
            a[art] = (u1[art] - u0[art]) / dt
        return a if k else np.zeros((0, 3))

    def _constrained_acceleration(self) -> np.ndarray:
        """``qacc_smooth`` plus, on the dofs of free rows that one of MuJoCo's own constraints
        acts on in this step (a native contact, an equality, a limit: their dofs are in a
        constraint island, or any dof when islands are disabled), MuJoCo's constraint
        acceleration qacc - qacc_smooth of its constraint solve with the managed forces of
        the last host step applied (a predictor: the native constraints' reaction to the
        managed forces; exact at rest). The solve runs on the scratch ``MjData`` (the user's
        data untouched: ``mj_step2`` solves again from the same warm start). Without such a
        dof, ``qacc_smooth`` itself (the same bits as before).

        Why: ``qacc_smooth`` leaves out MuJoCo's constraint forces, so a managed box carrying
        a native box above it was predicted to carry its own weight only (its overlap 1 %
        short of Hertz's for both weights and a velocity of -1.9 cm/s that the position
        correction took back every step). Cost: one ``mj_copyData`` and one MuJoCo
        constraint solve (``mj_fwdConstraint``) per such step."""
        d = self.d
        fr = self.free_rows
        dofs = fr.dofs(self.free).ravel()
        if d.nisland > 0:
            dofs = dofs[np.asarray(d.dof_island)[dofs] >= 0]
        if not len(dofs):
            return d.qacc_smooth
        mj, m = self.mj, self.m
        s = self._probe_data()
        if self._predictor is not None and self._predictor_time == d.time:
            batch, force = self._predictor
            _k.add_forces(s.xfrc_applied, s.xipos, self.body, self._static, batch.a, batch.b,
                          batch.point, force, np.zeros(len(self.body), dtype=bool))
        mj.mj_fwdActuation(m, s)
        mj.mj_fwdAcceleration(m, s)
        mj.mj_fwdConstraint(m, s)
        qacc = d.qacc_smooth.copy()
        part = s.qacc[dofs] - s.qacc_smooth[dofs]
        qacc[dofs] += part
        self.constraint_taken = (dofs, part)  # (for .native.constraint_error)
        return qacc

    def articulated(self, batch: ContactBatch, bodies: BodyState,
                    entries: np.ndarray) -> list[ArticulatedBlock]:
        """W's blocks of the kinematic trees with contacts
        (:meth:`MujocoTrees.blocks <mbplugin.mujoco.trees.MujocoTrees.blocks>`)."""
        return self.trees.blocks(batch, bodies, entries)

    def update_matrix(self, dofs: np.ndarray) -> np.ndarray:
        """The matrix of MuJoCo's velocity update of a kinematic tree's ``dofs``
        (:meth:`MujocoTrees.update_matrix <mbplugin.mujoco.trees.MujocoTrees.update_matrix>`)."""
        return self.trees.update_matrix(dofs)

    def respond(self, blocks: list[ArticulatedBlock], dq: list[np.ndarray], rows: np.ndarray,
                dv: np.ndarray, dw: np.ndarray, bodies: BodyState, dt: float) -> float:
        """Put MuJoCo's state after its step onto the state with an extra contact impulse
        (:class:`~mbplugin.hosts.Host`): ``qvel`` of each block's tree changes by its
        ``dq``, of each free row by (dv, dw) (the centre of mass's velocity and the world
        angular velocity, turned into the free joint's origin velocity and local angular
        velocity); the positions of those joints become MuJoCo's own update from the step's
        start, ``mj_integratePos(qpos0, qvel, dt)`` (the other joints untouched). Returns the
        largest angular speed of their rotational degrees of freedom (rad/s)."""
        mj, m, d = self.mj, self.m, self.d
        qadr: list[np.ndarray] = []
        spin = self.trees.respond(blocks, dq, qadr)
        if len(rows):
            spin = max(spin, self.free_rows.respond(rows, dv, dw, qadr))
        if spin * dt > TURN_MAX:
            raise IntegrationError(turn_message(mj, m, d, self.trees.rot_dof, dt))
        if qadr:
            adr = np.concatenate(qadr)
            q = self._qpos0.copy()
            mj.mj_integratePos(m, q, d.qvel, dt)
            d.qpos[adr] = q[adr]
        return spin

    def friction(self, batch: ContactBatch) -> np.ndarray:
        """Each contact's friction coefficient (K,) as MuJoCo combines its two geoms'
        ``geom_friction[:, 0]`` (the sliding coefficient): the geom of higher
        ``geom_priority``'s, the larger of the two at equal priority (MuJoCo documentation,
        Modeling, "Contact parameters"; ``mj_contactParam`` in engine_collision_driver.c);
        0 for a pair of ``condim`` 1 (combined alike), MuJoCo's frictionless contact."""
        m = self.m
        return _k.pair_friction(batch.key, self.loop.model.n_shapes, self.geoms,
                                m.geom_friction, m.geom_priority, m.geom_condim)

    def _scratch_data(self) -> Any:
        """The scratch ``MjData`` (made once)."""
        if self._scratch is None:
            self._scratch = self.mj.MjData(self.m)
        return self._scratch

    def _probe_data(self) -> Any:
        """The scratch ``MjData`` holding the backend's data (after ``mj_step1``)."""
        s = self._scratch_data()
        self.mj.mj_copyData(s, self.m, self.d)
        return s

    def _kinematics(self, s: Any) -> None:
        """Positions and ``cvel`` of a scratch data after its ``mj_step2``."""
        mj, m = self.mj, self.m
        mj.mj_kinematics(m, s)
        mj.mj_comPos(m, s)
        mj.mj_comVel(m, s)

    # -- writes -----------------------------------------------------------------------------------
    def apply(self, batch: ContactBatch, force: np.ndarray,
              forced: np.ndarray | None = None) -> None:
        """Add the contacts' forces (K, 3) on side b (and minus them on side a) to
        ``xfrc_applied`` for the coming :meth:`step` (which gives the user's values back):
        force and torque about each body's centre of mass (world frame, ``xipos``;
        :func:`.kernels.add_forces`). ``forced`` (N,), if given, is set True for both rows of
        each contact with a non-zero force."""
        d = self.d
        if self._user_xfrc is None:
            self._user_xfrc = d.xfrc_applied.copy()
        if forced is None:
            forced = np.zeros(len(self.body), dtype=bool)
        force = np.ascontiguousarray(force, dtype=float)
        self._applied = (batch, force)  # the next step's predictor (_constrained_acceleration)
        _k.add_forces(d.xfrc_applied, d.xipos, self.body, self._static, batch.a, batch.b,
                      batch.point, force, forced)

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
        mj, m, d = self.mj, self.m, self.d
        if not len(rows) or not d.nefc:
            # no MuJoCo constraint this step: its solver does not run (qacc = qacc_smooth) and
            # the step's end overwrites qacc_warmstart with qacc
            return
        mask = np.zeros(m.nv, dtype=bool)
        free = rows[self.kind[rows] == FREE]
        if len(free):  # a free row's tree: its own six dofs
            mask[self.free_rows.dofs(free)] = True
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
        return self.trees.tree_dofs[int(self.root[row])]

    def touching_native(self) -> np.ndarray:
        """(N,) True for rows whose body is in one of MuJoCo's own contacts of this step (the
        contacts ``mj_step1`` found: unmanaged pairs)."""
        d = self.d
        out = np.zeros(len(self.body), dtype=bool)
        if d.ncon:
            geoms = np.asarray(d.contact.geom[: d.ncon]).ravel()
            mark = np.zeros(self.m.nbody, dtype=bool)  # (a mask: np.isin costs ~40 us)
            mark[self.m.geom_bodyid[geoms]] = True
            out = mark[self.body]
        return out
