"""The MuJoCo side of a host step (the :class:`~mbplugin.hosts.Host` protocol and the reads
and writes :class:`~mbplugin.mujoco.MujocoContacts` makes).

Rows are MuJoCo bodies; a row's frame is the body's inertial frame (``xipos``, ``xquat`` *
``body_iquat``: centre of mass and principal axes), so its inverse inertia is
diag(1 / ``body_inertia``). A row is

* static: welded to the world (``body_weldid`` = 0, the world body itself included);
* free: a body whose only joint is a free joint and which has no child body (its W is
  I/m - [r]x I^-1 [r]x);
* articulated: any other body with degrees of freedom (W from MuJoCo's point Jacobians
  ``mj_jac`` and the matrix of MuJoCo's velocity update of its kinematic tree,
  :meth:`MujocoHost.update_matrix`: the mass matrix read with ``mj_mulM``, implicit damping,
  actuator damping of the implicit integrators, soft equality and limit constraints).

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
from mbplugin.contact.kernels import decode_keys
from mbplugin.contact.rotation import (
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    rotate,
    rotate_transpose,
)
from mbplugin.hosts import ARTICULATED, FREE, STATIC, ArticulatedBlock, RowShape
from mbplugin.hosts.arrays import cross_rows
from mbplugin.hosts.protocol import point_velocity
from mbplugin.mujoco.geometry import row_shapes
from mbplugin.mujoco.native import NativeFilter


def _nq(m: Any, j: int) -> int:
    """The number of qpos entries of joint ``j`` (free 7, ball 4, hinge and slide 1)."""
    import mujoco

    t = int(m.jnt_type[j])
    return 7 if t == int(mujoco.mjtJoint.mjJNT_FREE) else 4 if t == int(
        mujoco.mjtJoint.mjJNT_BALL) else 1


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
        # the state before mj_step2 (the implicit step's positions are MuJoCo's update from it)
        self._qpos0 = np.zeros(m.nq)
        # rotational degrees of freedom (hinge, ball, a free joint's last three): the implicit
        # step's angular speed estimate
        jt = np.asarray(m.jnt_type[m.dof_jntid], dtype=np.int64)
        first = np.asarray(m.jnt_dofadr[m.dof_jntid], dtype=np.int64)
        jtype = mujoco.mjtJoint
        self._rot_dof = ((jt == int(jtype.mjJNT_HINGE)) | (jt == int(jtype.mjJNT_BALL))
                         | ((jt == int(jtype.mjJNT_FREE)) & (np.arange(m.nv) - first >= 3)))
        # the qpos addresses of each tree (by root body) and of each free row
        jnt_root = np.asarray(m.body_rootid[m.jnt_bodyid], dtype=np.int64)
        self.tree_qpos = {}
        for r in self.tree_dofs:
            adr = []
            for j in np.flatnonzero(jnt_root == r).tolist():
                adr.extend(range(int(m.jnt_qposadr[j]), int(m.jnt_qposadr[j]) + _nq(m, j)))
            self.tree_qpos[r] = np.array(adr, dtype=np.int64)

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

    def end_state(self) -> BodyState:
        """The rows' state after the host step (poses and velocities of the current ``qpos``,
        ``qvel``: kinematics on a scratch ``MjData``, the user's data untouched)."""
        s = self._scratch_data()
        s.qpos[:] = self.d.qpos
        s.qvel[:] = self.d.qvel
        self._kinematics(s)
        return self.loop.body_state(*self.state(s))

    def end_poses(self, bodies: BodyState) -> BodyState:
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
        """W's blocks of the kinematic trees with contacts: ``mj_jac`` at each contact point,
        and the matrix of MuJoCo's velocity update of the tree (:meth:`update_matrix`)."""
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
            ent = entries[sel]
            out.append(ArticulatedBlock(ent % k, np.where(ent >= k, 1.0, -1.0), jac,
                                        self.update_matrix(dofs), tag=root))
        return out

    def update_matrix(self, dofs: np.ndarray) -> np.ndarray:
        """The matrix H (n, n) of MuJoCo's velocity update of the degrees of freedom ``dofs``
        (a kinematic tree): an impulse P at a point changes their velocities by
        H^-1 J^T P. H = M (its entries by ``mj_mulM`` of unit vectors; armature included)

        * + dt diag(dof_damping): the joint damping MuJoCo's Euler integrator takes implicitly
          (unless ``mjDSBL_EULERDAMP``), and the implicit integrators too;
        * - dt D_act with the implicit integrators (``implicit``, ``implicitfast``): the
          actuators' force derivative in the joint velocities, moment^T (df/dv) moment, df/dv
          the affine gain's ``gainprm[2]`` times ctrl (or act) plus the affine bias'
          ``biasprm[2]`` (a position actuator's -kv);
        * + J_c^T D_c J_c over MuJoCo's equality and limit constraints of this step
          (``efc_J``, ``efc_D`` of ``mj_step1``): a soft constraint in its quadratic state
          adds that term to the Hessian of MuJoCo's constraint problem (Todorov 2014,
          "Analytically-invertible dynamics with contacts and constraints", ICRA; MuJoCo
          documentation, Computation: the primal problem), so its velocity response to an
          extra impulse is (M + J_c^T D_c J_c)^-1 J^T P.

        Not modelled: the Coriolis derivative of ``implicit``, tendon damping, MuJoCo's own
        contacts and friction losses (the response is then that without them)."""
        mj, m, d = self.mj, self.m, self.d
        n = len(dofs)
        H = np.zeros((n, n))
        unit, col = np.zeros(m.nv), np.zeros(m.nv)
        for j, dof in enumerate(dofs.tolist()):
            unit[dof] = 1.0
            mj.mj_mulM(m, d, col, unit)
            H[:, j] = col[dofs]
            unit[dof] = 0.0
        dt = float(m.opt.timestep)
        integ = int(m.opt.integrator)
        euler = integ == int(mj.mjtIntegrator.mjINT_EULER)
        damp = np.asarray(m.dof_damping[dofs], dtype=float)
        if damp.any() and not (euler and m.opt.disableflags
                               & int(mj.mjtDisableBit.mjDSBL_EULERDAMP)):
            H[np.arange(n), np.arange(n)] += dt * damp
        if not euler and m.nu:
            dfdv = np.zeros(m.nu)
            aff_g = m.actuator_gaintype == int(mj.mjtGain.mjGAIN_AFFINE)
            aff_b = m.actuator_biastype == int(mj.mjtBias.mjBIAS_AFFINE)
            stateless = m.actuator_dyntype == int(mj.mjtDyn.mjDYN_NONE)
            drive = np.where(stateless, d.ctrl, 0.0)
            if m.na:
                act = np.zeros(m.nu)
                has = m.actuator_actadr >= 0
                act[has] = d.act[m.actuator_actadr[has] + m.actuator_actnum[has] - 1]
                drive = np.where(stateless, drive, act)
            dfdv += np.where(aff_g, m.actuator_gainprm[:, 2] * drive, 0.0)
            dfdv += np.where(aff_b, m.actuator_biasprm[:, 2], 0.0)
            if dfdv.any():
                mom = self._moments()[:, dofs]
                H -= dt * (mom.T * dfdv) @ mom
        if d.nefc:
            cn = mj.mjtConstraint
            kind = np.asarray(d.efc_type[:d.nefc])
            rows = np.flatnonzero((kind == int(cn.mjCNSTR_EQUALITY))
                                  | (kind == int(cn.mjCNSTR_LIMIT_JOINT))
                                  | (kind == int(cn.mjCNSTR_LIMIT_TENDON)))
            if len(rows):
                jc = self._efc_jacobian(rows)[:, dofs]
                on = np.flatnonzero(np.any(jc != 0, axis=1))
                if len(on):
                    jc = jc[on]
                    H += (jc.T * np.asarray(d.efc_D)[rows[on]]) @ jc
        return H

    def _moments(self) -> np.ndarray:
        """The actuators' moment arms (nu, nv), dense (MuJoCo keeps them sparse)."""
        m, d = self.m, self.d
        out = np.zeros((m.nu, m.nv))
        for i in range(m.nu):
            a, n = int(d.moment_rowadr[i]), int(d.moment_rownnz[i])
            out[i, d.moment_colind[a:a + n]] = d.actuator_moment[a:a + n]
        return out

    def _efc_jacobian(self, rows: np.ndarray) -> np.ndarray:
        """Rows of the constraint Jacobian ``efc_J`` (len(rows), nv), dense or sparse."""
        m, d = self.m, self.d
        if self.mj.mj_isSparse(m):
            out = np.zeros((len(rows), m.nv))
            for i, r in enumerate(rows.tolist()):
                a, n = int(d.efc_J_rowadr[r]), int(d.efc_J_rownnz[r])
                out[i, d.efc_J_colind[a:a + n]] = d.efc_J[a:a + n]
            return out
        return np.asarray(d.efc_J[:d.nefc * m.nv]).reshape(d.nefc, m.nv)[rows]

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
        spin = 0.0
        for blk, x in zip(blocks, dq, strict=True):
            dofs = self.tree_dofs[int(blk.tag)]
            d.qvel[dofs] += x
            qadr.append(self.tree_qpos[int(blk.tag)])
            rot = self._rot_dof[dofs]
            if rot.any():
                spin = max(spin, float(np.max(np.abs(d.qvel[dofs[rot]]))))
        if len(rows):
            pos = np.searchsorted(self.free, rows)
            qa, va = self.qadr[pos], self.vadr[pos]
            q = quat_normalize(d.qpos[qa[:, None] + np.arange(3, 7)])
            r = quat_to_matrix(q)
            arm = rotate(r, self.ipos[rows])  # origin -> centre of mass
            d.qvel[va[:, None] + np.arange(3)] += dv - cross_rows(dw, arm)
            d.qvel[va[:, None] + np.arange(3, 6)] += rotate_transpose(r, dw)
            qadr.append((qa[:, None] + np.arange(7)).ravel())
            w = d.qvel[va[:, None] + np.arange(3, 6)]
            spin = max(spin, float(np.max(np.sqrt(np.einsum("ij,ij->i", w, w)))))
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
        Modeling, "Contact parameters"; ``mj_contactParam`` in engine_collision_driver.c)."""
        m = self.m
        sa, sb, _ = decode_keys(batch.key, self.loop.model.n_shapes)
        ga, gb = self.geoms[sa], self.geoms[sb]
        fa, fb = m.geom_friction[ga, 0], m.geom_friction[gb, 0]
        pa, pb = m.geom_priority[ga], m.geom_priority[gb]
        return np.where(pa > pb, fa, np.where(pb > pa, fb, np.maximum(fa, fb)))

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

