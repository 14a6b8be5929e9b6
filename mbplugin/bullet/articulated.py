"""The articulated bodies of a :class:`~mbplugin.bullet.BulletContacts` (PyBullet's side of
their contacts): the blocks of W = J M^-1 J^T (:class:`~mbplugin.hosts.ArticulatedBlock`: point
Jacobians and mass matrix from the joint tree PyBullet reports, :mod:`mbplugin.bullet.kinematics`,
the joints its motors hold), and the resets that put them onto the implicit step's solved state
(deferred to one per host step) or correct their positions.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from mbplugin.bullet.fast_step import (
    base_rotation,
    link_points,
    respond_body,
    turn_quat,
    world_jacobians,
)
from mbplugin.bullet.geometry import xyzw_to_wxyz
from mbplugin.bullet.kinematics import LinkTree
from mbplugin.contact import BodyState, ContactBatch, axis_angle_quat
from mbplugin.contact.rotation import quat_multiply
from mbplugin.hosts.protocol import ARTICULATED, ArticulatedBlock

#: no floating base (respond_body's unused base argument)
_NO_BASE = np.zeros(13)

#: PyBullet's clamp of a multibody's coordinate velocities (``changeDynamics``'
#: ``maxJointVelocity``, rad/s or m/s; PyBullet's default 100) set on the articulated bodies
#: whose joints a motor holds (:func:`held`): far above any rate a step's
#: contact force gives a light link
MAX_COORDINATE_VELOCITY = 1e12


class BulletArticulated:
    """The articulated bodies ``bodies`` (PyBullet ids) of a backend's rows: ``rows_arr`` (N,
    2) the rows' (body, link), ``frame_pos`` (N, 3) m the links' URDF frame origins of the
    last state read (the backend's arrays, shared). A block's ``tag`` is (body, its base's
    rotation matrix, its moving joints).

    With ``defer_resets`` (the default) and ``plain`` (set by the backend: every managed pair
    is the contact model's, no ``getClosestPoints``), the resets of a body whose joint tree
    :class:`~mbplugin.bullet.kinematics.LinkTree` models are deferred: :meth:`respond` keeps
    the state it would set, a verification round's read takes that body's rows from the
    tree's forward kinematics of it (:meth:`predict`, what PyBullet's reset and read would
    return, to rounding), and :meth:`flush` sets PyBullet once at the end of the host step's
    solve (one reset per body and host step instead of one per round)."""

    #: defer the resets of modelled trees to :meth:`flush` (False: reset in every round)
    defer_resets = True

    def __init__(self, client: Any, bodies: list[int], rows_arr: np.ndarray,
                 frame_pos: np.ndarray) -> None:
        self.client = client
        self.bodies = bodies
        self.rows_arr = rows_arr
        self.frame_pos = frame_pos
        self._joints: dict[int, list[int]] = {}  # see moving_joints
        self._sph: dict[int, list[bool]] = {}  # see moving_joints
        self._trees: dict[int, LinkTree] = {}  # see tree
        self._sides_of: tuple[Any, ...] | None = None  # see _sides
        # each body's base row, if the base is a row: its pose and velocities are in every
        # state read (the same floats PyBullet returns; no getBase... call needed)
        self._base_row = {int(b): i for i, (b, lk) in enumerate(rows_arr.tolist()) if lk == -1}
        # joint positions and velocities (lists) a respond set with its reset, per body: the
        # values PyBullet returns until it steps (a reset's round trip is exact), read by the
        # next verification round instead of getJointStates; cleared by :meth:`forget`
        self._held: dict[int, tuple[list[float], list[float]]] = {}
        self._held_v: dict[int, tuple[list[float], list[float]]] = {}  # bases' (v, omega)
        # deferred resets: the bases' poses (position, [x, y, z, w]) and the bodies whose
        # state :meth:`flush` sets, with their moving joints and whether the base moves
        self._pose: dict[int, tuple[list[float], list[float]]] = {}
        self.pending: dict[int, tuple[list[int], bool]] = {}
        self.plain = True

    def forget(self) -> None:
        """Drop the joint states held from the last :meth:`respond` (called before the host
        step's solve: PyBullet's joints change with anything else); a deferred reset still
        pending is set first."""
        if self.pending:
            self.flush()
        for held in (self._held, self._held_v, self._pose):
            if held:
                held.clear()

    def flush(self) -> None:
        """Set PyBullet onto the state the deferred rounds of :meth:`respond` kept: per body
        one ``resetJointStatesMultiDof``, its base's pose and velocity resets (the order of
        an immediate respond)."""
        c = self.client
        pb, cid = c.p, c.id
        for body, (joints, floating) in self.pending.items():
            if joints:
                (qs, vs), sph = self._held[body], self._sph[body]
                pb.resetJointStatesMultiDof(body, joints, multi_dof(qs, sph), multi_dof(vs, sph),
                                            physicsClientId=cid)
            if floating:
                pos, orn = self._pose[body]
                vel, om = self._held_v[body]
                pb.resetBasePositionAndOrientation(body, pos, orn, physicsClientId=cid)
                pb.resetBaseVelocity(body, vel, om, physicsClientId=cid)
        self.pending.clear()

    def predict(self, body: int, links: np.ndarray, rows: np.ndarray, pos: np.ndarray,
                quat: np.ndarray, vel: np.ndarray, omega: np.ndarray,
                frame: np.ndarray) -> None:
        """The rows ``rows`` (links ``links``) of a body whose reset is pending, written into
        a state read's ``pos``, ``quat`` [w, x, y, z], ``vel``, ``omega`` and ``frame`` (URDF
        frame origins): the tree's forward kinematics of the kept state (the base's row,
        if a row, that state itself)."""
        floating = self.pending[body][1]
        qs, vs = self._held.get(body, ((), ()))
        if floating:
            (bp, bo), (bv, bw) = self._pose[body], self._held_v[body]
        else:
            bp, bo = self.client("getBasePositionAndOrientation", body)
            bv = bw = (0.0, 0.0, 0.0)
        self._trees[body].link_states(qs, vs, bp, bo, bv, bw, links, rows, pos, quat, vel,
                                      omega, frame)
        row = self._base_row.get(body)
        if row is not None and floating:
            pos[row], vel[row], omega[row] = bp, bv, bw
            quat[row] = (bo[3], bo[0], bo[1], bo[2])

    def reset_bodies(self) -> Any:
        """The bodies whose joints :meth:`respond` reset since :meth:`forget` (a view)."""
        return self._held.keys()

    def base_state(self, body: int, bodies: BodyState) -> tuple[Any, ...]:
        """``body``'s base position (m), orientation [x, y, z, w], velocity (m/s) and angular
        velocity (rad/s), as lists of floats: from ``bodies`` (a state read of PyBullet as it
        is now) where the base is a row, else from PyBullet."""
        row = self._base_row.get(body)
        if row is None:
            c = self.client
            pos, orn = c("getBasePositionAndOrientation", body)
            vel, om = c("getBaseVelocity", body)
            return pos, orn, vel, om
        w, x, y, z = bodies.quat[row].tolist()
        return (bodies.pos[row].tolist(), [x, y, z, w], bodies.vel[row].tolist(),
                bodies.omega[row].tolist())

    def blocks(self, batch: ContactBatch, bodies: BodyState,
               kind: np.ndarray) -> list[ArticulatedBlock]:
        """The articulated bodies' blocks of W (``kind`` (N,) the rows' kinds): per body with a
        contact, its contacts' point Jacobians J (world axes) and mass matrix M, from the
        body's joint tree (:class:`~mbplugin.bullet.kinematics.LinkTree`; PyBullet's
        ``calculateJacobian`` / ``calculateMassMatrix`` for a tree it does not model), and the
        joints its motors hold (the response M^-1 J^T and J M^-1 J^T are
        :class:`~mbplugin.hosts.HostStep`'s)."""
        out = []
        c = self.client
        for body, cont, rows, sgn in self._sides(batch, kind):
            point = batch.point[cont]
            joints = self.moving_joints(body)
            pb, cid = c.p, c.id
            q, _, motor = read_joints(c, body, joints, self._sph[body])
            tree = self.tree(body, joints, q)
            # joints whose motor (POSITION_CONTROL / VELOCITY_CONTROL, PyBullet's default velocity
            # motors) acted in the last step: held by a velocity constraint (every column)
            locked = [int(tree.col[e]) for i, j in enumerate(joints) if motor[i]
                      for e in range(int(tree.first[j]), int(tree.node[j]) + 1)]
            # PyBullet's Jacobians and mass matrix are in the base's frame (its coordinates:
            # base angular and linear velocity in the base frame, then the joints); the
            # contact layer works in world axes
            base_p, base_o = (self.base_state(body, bodies)[:2] if body in self._base_row
                              else pb.getBasePositionAndOrientation(body, physicsClientId=cid))
            r_base = base_rotation(base_o)
            lks = self.rows_arr[rows, 1]
            if tree.supported:  # one compiled pass each (kinematics module; PyBullet's to 1e-15)
                mm = tree.mass_matrix(q, base_p, base_o, r_base)
                jac = tree.jacobians(q, base_p, base_o, r_base, lks, point)
            else:
                mm = np.array(pb.calculateMassMatrix(body, q, physicsClientId=cid), dtype=float)
                local = np.empty((len(lks), 3))
                link_points(bodies.quat[rows], point, self.frame_pos[rows], local)
                jac = bullet_jacobians(c, body, q, mm.shape[0], lks if joints else None,
                                       local, point, r_base, base_p)
            held(self, body, locked)
            out.append(ArticulatedBlock(cont, sgn, jac, mm, np.array(locked, dtype=np.int64),
                                        tag=(body, r_base, joints)))
        return out

    def tree(self, body: int, joints: list[int], q: list[float]) -> LinkTree:
        """``body``'s joint tree (:class:`~mbplugin.bullet.kinematics.LinkTree`), read once
        (``joints`` its moving joints at positions ``q``: whether its base moves is whether
        PyBullet's mass matrix has the base's 6 coordinates)."""
        tree = self._trees.get(body)
        if tree is None:
            flat = [y for x in multi_dof(q) for y in x]
            n = len(self.client("calculateMassMatrix", body, flat))
            floating = n == len(q) + 2 * sum(self._sph[body]) + 6
            tree = self._trees[body] = LinkTree(self.client, body, joints, floating)
        return tree

    def _sides(self, batch: ContactBatch,
               kind: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Per articulated body with a contact side: (body, its sides' contacts, rows, signs
        +1 on side b / -1 on side a); kept while the batch's sides (``batch.a``, ``batch.b``)
        and ``kind`` are those of the last call (a robot standing: every host step)."""
        ab = (batch.a.tobytes(), batch.b.tobytes())
        hit = self._sides_of
        if hit is not None and hit[0] is kind and hit[1] == ab:
            return hit[2]
        out = []
        for body in self.bodies:
            on_b = self.rows_arr[batch.b, 0] == body
            on_a = (batch.a >= 0) & (self.rows_arr[batch.a, 0] == body)
            on_b &= kind[batch.b] == ARTICULATED
            on_a &= kind[batch.a] == ARTICULATED
            if not (on_b.any() or on_a.any()):
                continue
            ib, ia = np.flatnonzero(on_b), np.flatnonzero(on_a)
            out.append((body, np.concatenate([ib, ia]), np.concatenate([batch.b[ib], batch.a[ia]]),
                        np.concatenate([np.ones(len(ib)), -np.ones(len(ia))])))
        self._sides_of = (kind, ab, out)
        return out

    def moving_joints(self, body: int) -> list[int]:
        """The joints of ``body`` that are not fixed (the coordinates of PyBullet's mass
        matrix and Jacobians), read once per body."""
        cache = self._joints
        if body not in cache:
            c = self.client
            types = [c("getJointInfo", body, j)[2] for j in range(int(c("getNumJoints", body)))]
            cache[body] = [j for j, t in enumerate(types) if t != c.p.JOINT_FIXED]
            # per moving joint: spherical (a quaternion, 3 rates)
            self._sph[body] = [types[j] == c.p.JOINT_SPHERICAL for j in cache[body]]
        return cache[body]

    def respond(self, blocks: list[ArticulatedBlock], dqs: list[np.ndarray], dt: float,
                bodies: BodyState) -> float:
        """Put the articulated bodies' state after a host step taken with P_lin onto the state
        with P_lin + dP: each block's joint and base velocities change by ``dqs`` (its M^-1
        J^T dP: the mass matrix and point Jacobians of the step's start, the frame of W) and
        positions by dt times that (the host's semi-implicit update; a base's orientation
        turned by dt times its angular velocity change), by PyBullet's resets (one
        ``resetJointStatesMultiDof`` per body, its base's pose and velocity resets). ``bodies``
        is the state read of PyBullet as it is now (bases that are rows are taken from it);
        the joints' states are read (``getJointStates``) or, in a verification round, those
        the last round set. Returns the largest joint or base angular speed seen (rad/s)."""
        spin = 0.0  # the largest joint or base angular speed seen (rad/s)
        c = self.client
        pb, cid = c.p, c.id
        defer = self.defer_resets and self.plain
        for blk, dq in zip(blocks, dqs, strict=True):
            body, r_base, joints = blk.tag
            sph = self._sph[body]
            floating = len(dq) == len(joints) + 2 * sum(sph) + 6
            tree = self._trees.get(body)
            lazy = defer and tree is not None and tree.supported
            if joints:
                held = self._held.get(body)
                qs, vs = held if held is not None else read_joints(c, body, joints, sph)[:2]
            else:
                qs = vs = ()
            if floating:
                held_v = self._held_v.get(body)
                if held_v is None or body in self._base_row:
                    pos, orn, vel, om = self.base_state(body, bodies)
                elif lazy:  # the pose and velocities the last round kept
                    (pos, orn), (vel, om) = self._pose[body], held_v
                else:  # the velocities the last round set (a reset's round trip is exact)
                    pos, orn = pb.getBasePositionAndOrientation(body, physicsClientId=cid)
                    vel, om = held_v
                base = np.array([*pos, *orn, *vel, *om], dtype=float)
            else:
                base = _NO_BASE
            # the arithmetic in one compiled call (fast_step.respond_body); the joints of a
            # tree with ball joints in Python (advance_joints: quaternions), its base compiled
            ball = any(sph)
            n1 = 0 if ball else len(qs)
            q1, v1, b1 = np.empty(n1), np.empty(n1), np.empty(13)
            spin = max(spin, respond_body(np.array(qs[:n1], dtype=float),
                                          np.array(vs[:n1], dtype=float),
                                          np.ascontiguousarray(dq, dtype=float), float(dt),
                                          floating, base, r_base, q1, v1, b1))
            if joints:
                if ball:
                    spin = max(spin, max(abs(x) for v in multi_dof(vs) for x in v))
                    qs, vs = advance_joints(qs, vs, (dq[6:] if floating else dq).tolist(), dt,
                                            sph)
                else:
                    qs, vs = q1.tolist(), v1.tolist()
                if not lazy:
                    pb.resetJointStatesMultiDof(body, joints, multi_dof(qs), multi_dof(vs),
                                                physicsClientId=cid)
                self._held[body] = (qs, vs)
            if floating:
                b = b1.tolist()
                pos, orn, vel, om = b[0:3], b[3:7], b[7:10], b[10:13]
                if lazy:
                    self._pose[body] = (pos, orn)
                else:
                    pb.resetBasePositionAndOrientation(body, pos, orn, physicsClientId=cid)
                    pb.resetBaseVelocity(body, vel, om, physicsClientId=cid)
                self._held_v[body] = (vel, om)
            if lazy:
                self.pending[body] = (joints, floating)
        return spin

    def correct(self, blocks: list[ArticulatedBlock], batch: ContactBatch,
                mu_of: np.ndarray) -> None:
        """The position correction of the articulated bodies of ``blocks`` (the last W's;
        ``correct_articulated``): position impulses ``mu_of`` (K,) N s along the contacts'
        normals (on side b, minus on side a) through the joint-space mass matrix,
        dq = M^-1 sum_e s_e J_e^T (mu n) (PyBullet's coordinates: base angular, base linear in
        the base frame, then the joints), applied by PyBullet's resets (velocities kept)."""
        c = self.client
        for blk in blocks:
            cont, sgn, jac, mm = blk.contact, blk.sign, blk.jac, blk.mass_matrix
            body, r_base, joints = blk.tag
            f = (sgn * mu_of[cont])[:, None] * batch.normal[cont]
            if not np.any(f):
                continue
            dq = np.linalg.solve(mm, np.einsum("eij,ei->j", jac, f))
            sph = self._sph[body]
            qs, vs, _ = read_joints(c, body, joints, sph)
            floating = mm.shape[0] == len(joints) + 2 * sum(sph) + 6
            if floating:
                pos, orn = c("getBasePositionAndOrientation", body)
                vel, om = c("getBaseVelocity", body)
                dth = r_base @ dq[:3]
                qb = xyzw_to_wxyz(orn)
                ang = float(np.linalg.norm(dth))
                if ang > 0:
                    qb = quat_multiply(axis_angle_quat(dth, ang), qb)
                c("resetBasePositionAndOrientation", body, list(np.asarray(pos) + r_base @ dq[3:6]),
                  [qb[1], qb[2], qb[3], qb[0]])
                c("resetBaseVelocity", body, list(vel), list(om))
            if joints:  # one reset of every joint (velocities kept)
                dj = (dq[6:] if floating else dq).tolist()
                new = advance_joints(qs, vs, dj, 1.0, sph)[0]  # dq as a rate over 1 s
                c("resetJointStatesMultiDof", body, joints, multi_dof(new), multi_dof(vs))


#: per backend's articulated bodies (:class:`BulletArticulated`), those whose clamp is lifted
_LIFTED: weakref.WeakKeyDictionary[Any, set[int]] = weakref.WeakKeyDictionary()


def held(art: BulletArticulated, body: int, locked: Any) -> None:
    """A block of ``art``'s ``body`` was built with its ``locked`` coordinates (joints its
    motors hold): lift PyBullet's velocity clamp on it, once (:func:`lift_velocity_clamp`)."""
    lifted = _LIFTED.setdefault(art, set())
    if len(locked) and body not in lifted:
        lifted.add(body)
        lift_velocity_clamp(art.client, [body])


def lift_velocity_clamp(c: Any, bodies: list[int]) -> None:
    """Set PyBullet's coordinate velocity clamp of the articulated ``bodies`` (client ``c``)
    to :data:`MAX_COORDINATE_VELOCITY`. PyBullet adds a step's accelerations from the applied
    forces to the coordinates' velocities and clamps each to ``maxJointVelocity`` (100 by
    default) *before* its constraints (the joints' motors) act. The contact model's force
    P_lin / dt on a light link exceeds it there (a 3 g foot under an 11.6 kg body: 710 N for
    one 1/240 s step gives its joint 126 rad/s with the motors off); the clamp cuts that free
    rate and the motor's correction from the clamped rate puts an angular impulse the contact
    never gave into the held robot (measured: the step's change of angular momentum 5-10x the
    contact's moment; energy +1.47 M g h, issue 18). The backend's W treats the held joints
    as locked, as the motors do: the clamp must not act on the free rate in between. Only on
    bodies with motor-held joints (:func:`held`): elsewhere the clamp
    stays PyBullet's, which bounds e.g. an explicit PD torque law unstable on a light link
    (the hexapod of tests/robot_rig.py, kd = 0.025: its joints run away in free flight,
    natively too, without the clamp)."""
    for body in bodies:
        c("changeDynamics", body, -1, maxJointVelocity=MAX_COORDINATE_VELOCITY)


def bullet_jacobians(c: Any, body: int, q: list[float], n: int, lks: np.ndarray | None,
                     local: np.ndarray, point: np.ndarray, r_base: np.ndarray,
                     base_p: Any) -> np.ndarray:
    """The point Jacobians (E, 3, n), world axes, of ``point`` (E, 3) on the links ``lks``
    (E,; None: a body without moving joints) of ``body`` at joint positions ``q``, by
    PyBullet's ``calculateJacobian`` (client ``c``; one call per contact on a moving link):
    the joint trees :class:`~mbplugin.bullet.kinematics.LinkTree` does not model.
    ``calculateJacobian``'s point ``local`` (E, 3) is from the link's URDF frame origin, in
    the axes of its inertial frame (measured: the point's velocity J qd equals the host's,
    v + omega x r, to rounding only so, for links whose centre of mass is off their frame's
    origin or whose inertial axes are turned: 8-110 % errors in W otherwise)."""
    jac = np.zeros((len(point), 3, n))
    zero = [0.0] * len(q)
    moving = (lks != -1) if lks is not None else np.zeros(len(point), dtype=bool)
    local = local.tolist()
    for e in np.flatnonzero(moving).tolist():
        jac[e] = c("calculateJacobian", body, int(lks[e]), local[e], q, zero, zero)[0]
    # world axes; the base, or no moving joint (links on fixed joints of a floating base: one
    # rigid body; calculateJacobian wants a joint): the point's velocity in the base frame is
    # v - [r]x omega, r from the base's centre of mass, PyBullet's base coordinates (omega, v)
    world_jacobians(jac, moving, r_base, point, np.asarray(base_p, dtype=float))
    return jac


def turn_xyzw(q: Any, rotvec: list[float]) -> list[float]:
    """The quaternion ``q`` (x, y, z, w) turned by the rotation vector ``rotvec`` (rad, world
    frame): exp(rotvec) q, the update PyBullet makes of a base's orientation with its angular
    velocity over a step (one body: plain floats, no arrays)."""
    return list(turn_quat.py_func(*q, *rotvec))  # plain floats


def multi_dof(xs: list[Any], sph: list[bool] | None = None) -> list[Any]:
    """Per joint positions or rates (a float, or a list for a spherical joint) in the form of
    PyBullet's ``resetJointStatesMultiDof``: a list per joint; with ``sph`` (per joint:
    spherical) none of them spherical, a 1-tuple per joint (PyBullet takes any sequence; one
    C call, no list made per joint)."""
    if sph is not None and not any(sph):
        return list(zip(xs))
    return [x if isinstance(x, list) else [x] for x in xs]


def read_joints(c: Any, body: int, joints: list[int],
                sph: list[bool]) -> tuple[list[Any], list[Any], list[bool]]:
    """The positions, rates and whether a motor acted in the last step of ``body``'s
    ``joints`` (``sph`` per joint: spherical): a float per 1-dof joint (``getJointStates``),
    for a spherical one its quaternion [x, y, z, w] and rate (3, rad/s, the child's inertial
    axes) as lists (``getJointStatesMultiDof``, which ``getJointStates`` is not: it gives a
    spherical joint's first quaternion component)."""
    if not joints:
        return [], [], []
    if not any(sph):
        states = c.p.getJointStates(body, joints, physicsClientId=c.id)
        return ([s[0] for s in states], [s[1] for s in states],
                [s[3] != 0.0 for s in states])
    states = c("getJointStatesMultiDof", body, joints)
    qs = [list(s[0]) if sp else s[0][0] for s, sp in zip(states, sph, strict=True)]
    vs = [list(s[1]) if sp else s[1][0] for s, sp in zip(states, sph, strict=True)]
    return qs, vs, [any(t != 0.0 for t in s[3]) for s in states]


def advance_joints(qs: list[Any], vs: list[Any], dj: list[float], dt: float,
                   sph: list[bool]) -> tuple[list[Any], list[Any]]:
    """Joint positions ``qs`` and rates ``vs`` (:func:`read_joints`' forms) after a rate
    change ``dj`` (per column: 1 per joint, 3 per spherical joint) held over ``dt`` (s): a
    1-dof joint q + dt d, v + d; a spherical joint's quaternion turned by dt d in its child's
    axes, Q exp(dt d) (its rate is in those axes, as PyBullet's), its rate + d."""
    out_q, out_v, i = [], [], 0
    for q, v, sp in zip(qs, vs, sph, strict=True):
        if sp:
            d = dj[i:i + 3]
            i += 3
            x, y, z, w = q
            ang = dt * math.hypot(*d)
            if ang > 0.0:
                w, x, y, z = quat_multiply(np.array([w, x, y, z]),
                                           axis_angle_quat(np.array(d), ang)).tolist()
                norm = math.sqrt(w * w + x * x + y * y + z * z)
                x, y, z, w = x / norm, y / norm, z / norm, w / norm
            out_q.append([x, y, z, w])
            out_v.append([a + b for a, b in zip(v, d, strict=True)])
        else:
            out_q.append(q + dt * dj[i])
            out_v.append(v + dj[i])
            i += 1
    return out_q, out_v
