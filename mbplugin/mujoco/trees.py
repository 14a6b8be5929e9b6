"""The articulated rows of a :class:`~mbplugin.mujoco.MujocoContacts` (MuJoCo's side of their
contacts, one responsibility of the host adapter :class:`~mbplugin.mujoco.host.MujocoHost`):
the kinematic trees' blocks of W = J M^-1 J^T (MuJoCo's point Jacobians ``mj_jac`` and the
matrix of MuJoCo's velocity update of the tree, :meth:`MujocoTrees.update_matrix`), and the
implicit step's response on their joints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch
from mbplugin.hosts import ARTICULATED, ArticulatedBlock

#: rad: the largest turn of a joint in one step the implicit step answers for. Its response is
#: first order in the step's turn (W of the step's start; the host's is J(q1) M^-1 J(q0)^T);
#: a light link on a weakly held joint under a heavy body can be spun by radians in a step
#: (issue 21, the fuzz's ``light`` seed 18: a 1.1 g mesh foot, 6.2e-7 kg m^2 about its hinge,
#: turned 3.6 rad in one 2 ms step; the next steps diverged, MuJoCo reset its state on a huge
#: acceleration and Newton's method then failed). The fuzz's passing robots turn <= 0.33 rad.
TURN_MAX = 1.0


def turn_message(mj: Any, m: Any, d: Any, rot_dof: np.ndarray, dt: float) -> str:
    """The one-line error of a step that turned a rotational degree of freedom (``rot_dof``,
    mask (nv,)) by more than :data:`TURN_MAX`: the fastest one's joint, its turn, its inertia
    (``dof_M0`` + ``dof_armature``, kg m^2) and the remedies."""
    speed = np.where(rot_dof, np.abs(np.asarray(d.qvel)), 0.0)
    dof = int(np.argmax(speed))
    jnt = int(m.dof_jntid[dof])
    name = mj.mj_id2name(m, mj.mjtObj.mjOBJ_JOINT, jnt) or f"#{jnt}"
    inertia = float(m.dof_M0[dof] + m.dof_armature[dof])
    return (f"implicit contact step: joint {name!r} turned {speed[dof] * dt:.3g} rad in one "
            f"{dt:g} s step (> {TURN_MAX} rad, beyond the step's first-order response; its "
            f"inertia about the axis {inertia:.3g} kg m^2): give it armature, hold it "
            "stiffer, or lower model.opt.timestep")


def _nq(m: Any, j: int) -> int:
    """The number of qpos entries of joint ``j`` (free 7, ball 4, hinge and slide 1)."""
    import mujoco

    t = int(m.jnt_type[j])
    return 7 if t == int(mujoco.mjtJoint.mjJNT_FREE) else 4 if t == int(
        mujoco.mjtJoint.mjJNT_BALL) else 1


class MujocoTrees:
    """The kinematic trees (by root body) of the articulated rows ``body`` (MuJoCo body ids,
    ``kind`` the rows' kinds, ``root`` their root bodies) of ``(m, d)``: ``tree_dofs`` and
    ``tree_qpos`` their degrees of freedom and qpos addresses, ``tree_rot`` their rotational
    degrees of freedom."""

    def __init__(self, mj: Any, m: Any, d: Any, body: np.ndarray, kind: np.ndarray,
                 root: np.ndarray) -> None:
        self.mj, self.m, self.d = mj, m, d
        self.body, self.root = body, root
        self._full: np.ndarray | None = None  # the dense mass matrix's buffer
        cn = mj.mjtConstraint  # the constraint rows of update_matrix
        self._held = (int(cn.mjCNSTR_EQUALITY), int(cn.mjCNSTR_LIMIT_JOINT),
                      int(cn.mjCNSTR_LIMIT_TENDON))
        # the degrees of freedom of each kinematic tree (by root body) of articulated rows
        dof_root = np.asarray(m.body_rootid[m.dof_bodyid], dtype=np.int64)
        self.tree_dofs = {int(r): np.flatnonzero(dof_root == r)
                          for r in np.unique(root[kind == ARTICULATED])}
        # rotational degrees of freedom (hinge, ball, a free joint's last three): the implicit
        # step's angular speed estimate
        jt = np.asarray(m.jnt_type[m.dof_jntid], dtype=np.int64)
        first = np.asarray(m.jnt_dofadr[m.dof_jntid], dtype=np.int64)
        jtype = mj.mjtJoint
        self.rot_dof = ((jt == int(jtype.mjJNT_HINGE)) | (jt == int(jtype.mjJNT_BALL))
                        | ((jt == int(jtype.mjJNT_FREE)) & (np.arange(m.nv) - first >= 3)))
        self.tree_rot = {r: dofs[self.rot_dof[dofs]] for r, dofs in self.tree_dofs.items()}
        # the qpos addresses of each tree (by root body)
        jnt_root = np.asarray(m.body_rootid[m.jnt_bodyid], dtype=np.int64)
        self.tree_qpos = {}
        for r in self.tree_dofs:
            adr = []
            for j in np.flatnonzero(jnt_root == r).tolist():
                adr.extend(range(int(m.jnt_qposadr[j]), int(m.jnt_qposadr[j]) + _nq(m, j)))
            self.tree_qpos[r] = np.array(adr, dtype=np.int64)

    def blocks(self, batch: ContactBatch, bodies: BodyState,
               entries: np.ndarray) -> list[ArticulatedBlock]:
        """W's blocks of the kinematic trees with contacts: ``mj_jac`` at each contact point,
        and the matrix of MuJoCo's velocity update of the tree (:meth:`update_matrix`)."""
        mj, m, d = self.mj, self.m, self.d
        k = len(batch)
        side = np.concatenate([batch.a, batch.b])[entries]
        point = np.concatenate([batch.point, batch.point])[entries]
        out = []
        roots = self.root[side]
        for root, dofs in self.tree_dofs.items():
            sel = np.flatnonzero(roots == root)
            if not len(sel):
                continue
            full = np.zeros((len(sel), 3, m.nv))  # mj_jac into each (3, nv) slice
            pts = point[sel]
            for i, b in enumerate(self.body[side[sel]].tolist()):
                mj.mj_jac(m, d, full[i], None, pts[i], b)
            jac = full if len(dofs) == m.nv else full[:, :, dofs]  # the tree's columns
            ent = entries[sel]
            out.append(ArticulatedBlock(ent % k, np.where(ent >= k, 1.0, -1.0), jac,
                                        self.update_matrix(dofs), tag=root))
        return out

    def update_matrix(self, dofs: np.ndarray) -> np.ndarray:
        """The matrix H (n, n) of MuJoCo's velocity update of the degrees of freedom ``dofs``
        (a kinematic tree): an impulse P at a point changes their velocities by
        H^-1 J^T P. H = M (``mj_fullM``, one call for the model's dense M; armature included)

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
        full = self._mass_matrix()
        H = full.copy() if n == m.nv else full[np.ix_(dofs, dofs)]  # the tree's (a copy)
        dt = float(m.opt.timestep)
        integ = int(m.opt.integrator)
        euler = integ == int(mj.mjtIntegrator.mjINT_EULER)
        damp = np.asarray(m.dof_damping[dofs], dtype=float)
        if damp.any() and not (euler and m.opt.disableflags
                               & int(mj.mjtDisableBit.mjDSBL_EULERDAMP)):
            H.flat[::n + 1] += dt * damp  # the diagonal
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
                mom = self._moments()
                mom = mom if n == m.nv else mom[:, dofs]
                H -= dt * (mom.T * dfdv) @ mom
        if d.nefc:
            rows = self.held_rows()
            if len(rows):
                jc = self._efc_jacobian(rows)
                jc = jc if n == m.nv else jc[:, dofs]
                on = np.flatnonzero(np.any(jc != 0, axis=1))
                if len(on):
                    jc = jc[on]
                    H += (jc.T * np.asarray(d.efc_D)[rows[on]]) @ jc
        return H

    def held_rows(self) -> np.ndarray:
        """The rows of MuJoCo's equality and limit constraints in this step (``efc_type``; the
        rows :meth:`update_matrix` adds)."""
        eq, lj, lt = self._held
        kind = self.d.efc_type[:self.d.nefc]
        return np.flatnonzero((kind == eq) | (kind == lj) | (kind == lt))

    def _mass_matrix(self) -> np.ndarray:
        """MuJoCo's joint-space mass matrix (nv, nv) of the current step, dense (``mj_fullM``;
        the same entries ``mj_mulM`` of unit vectors gives), into a buffer made once."""
        m, d = self.m, self.d
        if self._full is None:
            self._full = np.zeros((m.nv, m.nv))
        try:
            self.mj.mj_fullM(m, d, self._full)  # newer MuJoCo (4.0): (m, d, dst)
        except TypeError:
            self.mj.mj_fullM(m, self._full, d.qM)  # older 3.x: (m, dst, M)
        return self._full

    def _moments(self) -> np.ndarray:
        """The actuators' moment arms (nu, nv), dense (MuJoCo keeps them sparse:
        ``mju_sparse2dense``)."""
        m, d = self.m, self.d
        out = np.zeros((m.nu, m.nv))
        self.mj.mju_sparse2dense(out, d.actuator_moment, d.moment_rownnz, d.moment_rowadr,
                                 d.moment_colind)
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

    def respond(self, blocks: list[ArticulatedBlock], dq: list[np.ndarray],
                qadr: list[np.ndarray]) -> float:
        """``qvel`` of each block's tree changed by its ``dq`` (the implicit step's response,
        :meth:`MujocoHost.respond <mbplugin.mujoco.host.MujocoHost.respond>`); the trees' qpos
        addresses appended to ``qadr``. Returns the largest angular speed of their rotational
        degrees of freedom (rad/s)."""
        d = self.d
        spin = 0.0
        for blk, x in zip(blocks, dq, strict=True):
            dofs = self.tree_dofs[int(blk.tag)]
            d.qvel[dofs] += x
            qadr.append(self.tree_qpos[int(blk.tag)])
            rot = self.tree_rot[int(blk.tag)]
            if len(rot):
                spin = max(spin, float(np.max(np.abs(d.qvel[rot]))))
        return spin
