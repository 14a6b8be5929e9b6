"""The exact free flight of a :class:`~mbplugin.bullet.BulletContacts`' free bodies (one
responsibility of the backend, an object it owns): PyBullet's semi-implicit step lags the
exact parabola by g dt t / 2; :class:`FreeFlight` keeps each free body's offset from
PyBullet's position (its *lag*), books each host step's flight at the next state read and
resets bodies whose lag matters (``BulletContacts.sync`` puts every body at its exact
position).
"""

from __future__ import annotations

import math
from itertools import repeat
from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.bullet.client import drain, vectors
from mbplugin.contact import BodyState, ContactBatch
from mbplugin.contact.rotation import quat_from_rotvec, quat_multiply
from mbplugin.hosts.arrays import nonzero_rows, norm_rows
from mbplugin.hosts.flight import BALLISTIC_TOL, ballistic, flight_offset
from mbplugin.hosts.protocol import ARTICULATED, FREE

#: a host orientation (rad) the last step does not predict was set by the
#: user (PyBullet's update, the exponential map of the end-of-step angular velocity, is
#: predicted to ~1e-15 rad)
HOST_ANGLE_TOL = 1e-9
#: above this rotation per host step (rad) the orientation is not checked (PyBullet clamps
#: a base's rotation per step at pi / 4)
HOST_SPIN_MAX = 0.5
#: a body whose managed contacts move less than this along their normals over a host step (m)
#: is settling: its lag is applied once it exceeds that motion (a body at rest shows its exact
#: position, sliding or not)
REST_MOVE = 1e-6


class FreeFlight:
    """The free-flight bookkeeping of the rows ``rows_arr`` ((N, 2) (body, link)) of kinds
    ``kind`` (N,) in PyBullet client ``client`` (module docstring): ``lag`` (N, 3) m, exact -
    host position; ``vprev`` (N, 3) m/s the velocities of the last read (NaN: none);
    ``forced`` (N,) rows the backend pushed (a managed force) or placed (a position
    correction) in the last host step, whose flight is not booked for that step; ``due``: a
    host step's flight is still to be booked by the next read. ``old``: the bookkeeping of a
    previous build (``add_body``), carried over for the rows kept."""

    def __init__(self, client: Any, rows: list[tuple[int, int]], rows_arr: np.ndarray,
                 kind: np.ndarray, defer_tol: float,
                 old: tuple[list[tuple[int, int]], FreeFlight] | None = None) -> None:
        self.client = client
        self.rows_arr = rows_arr
        self.kind = kind
        self.defer_tol = defer_tol
        self.due = False
        n = len(rows)
        self.lag, self.vprev = np.zeros((n, 3)), np.full((n, 3), np.nan)
        self.forced = np.zeros(n, dtype=bool)
        #: PyBullet's velocity clamp lifted on the free rows' bodies (:meth:`lift_clamp`)
        self.unclamped = False
        #: gravity (m/s^2) and dt (s) of the host step whose flight is due (see :meth:`taken`)
        self.last: tuple[np.ndarray, float] | None = None if old is None else old[1].last
        if old is not None and old[0]:
            where = {bl: i for i, bl in enumerate(old[0])}
            prev = old[1]
            for j, bl in enumerate(rows):
                i = where.get(bl)
                if i is not None:
                    self.lag[j], self.vprev[j], self.forced[j] = (prev.lag[i], prev.vprev[i],
                                                                  prev.forced[i])
            self.due = prev.due

    def taken(self, g: np.ndarray, dt: float) -> tuple[np.ndarray, float]:
        """Gravity and time step of the host step to book: those the backend read for it
        (``last``), not ``g`` and ``dt`` read now (a ``setGravity`` / ``setTimeStep`` between
        two steps acts from the next one; booked with the new ones, the step just taken looked
        non-ballistic and the flight's lag was dropped)."""
        return (g, dt) if self.last is None else self.last

    def book(self, bodies: BodyState, g: np.ndarray, dt: float) -> None:
        """Book the host's free-flight error of free bodies and use the exact positions.

        PyBullet's step is semi-implicit Euler, v+ = v + a dt, x+ = x + v+ dt: under a constant
        acceleration its velocities at the host steps are exact but its positions run ahead
        along a by a dt^2 / 2 per step (a g dt t / 2 lag after a flight of t s: a ball landing
        at speed v lands about one host step early, so bounce times drift by ~1 host step per
        bounce). Per free row the backend keeps ``lag`` = exact - host position: a step
        without a managed force whose velocity change is gravity's g dt (within 5 %, e.g.
        PyBullet's default linear damping) adds -g dt^2 / 2; any other change (a native
        contact, a user's force or reset) clears it (the host's trajectory is then not
        ballistic and is left alone); a step with a position correction (the deferred correction)
        clears it (the integrated state is exact). Detection and the contact-space integration
        use ``pos + lag``; :meth:`land` moves a body to that position when it comes within
        the predictive margin of a managed contact."""
        vel, lag, vprev = bodies.vel, self.lag, self.vprev
        if (isinstance(vel, np.ndarray) and vel.dtype == np.float64 and vel.shape == lag.shape
                and vel.flags.c_contiguous and vprev.flags.c_contiguous
                and lag.flags.c_contiguous):
            # one compiled pass, the same elementwise operations (flight_offset, ballistic)
            gd = g * dt
            _book(vel, lag, vprev, self.forced, self.kind == FREE, np.ascontiguousarray(gd),
                  flight_offset(g, dt), BALLISTIC_TOL * float(np.linalg.norm(gd)) + 1e-12)
            self.vprev = vel.copy()
            self.forced[:] = False
            return
        free = self.kind == FREE
        gd = g * dt
        known = np.isfinite(self.vprev)
        ok = free & ~self.forced & known[:, 0] & known[:, 1] & known[:, 2]
        dv = bodies.vel - np.where(known, self.vprev, 0.0)
        fly = ballistic(dv, gd)
        np.subtract(self.lag, flight_offset(g, dt), out=self.lag, where=(ok & fly)[:, None])
        self.lag[ok & ~fly] = 0.0
        self.vprev = bodies.vel.copy()
        self.forced[:] = False

    def lift_clamp(self) -> None:
        """Lift PyBullet's coordinate velocity clamp (``maxJointVelocity``, 100 m/s and
        100 rad/s by default) on the bodies of the free rows, once, at their first managed
        step (:meth:`land`; after the construction's checks, so a refused construction leaves
        the client as it was). PyBullet clamps a multibody's base velocities too: a managed
        ball at 150 m/s or spinning at 150 rad/s was slowed to 100 in its first host step with
        nothing acting on it, natively as well (measured; its momentum not conserved, its
        exact flight wrong). As :func:`mbplugin.bullet.articulated.lift_velocity_clamp` for
        motor-held robots; the user's own setting on those bodies is overridden."""
        from mbplugin.bullet.articulated import lift_velocity_clamp

        free = np.unique(self.rows_arr[self.kind == FREE, 0])
        lift_velocity_clamp(self.client, [int(b) for b in free])
        self.unclamped = True

    def land(self, batch: ContactBatch, bodies: BodyState, host: np.ndarray,
              dt: float) -> None:
        """Move the free bodies of the batch's contacts to their exact positions (``bodies``:
        host position + lag) when their lag exceeds ``defer_tol``, or their contacts' normal
        motion over one host step while that is below REST_MOVE (settling: a body at rest
        shows its exact position), or when the batch holds a contact on an articulated link
        (the probe steps read the host's positions). ``host`` is updated."""
        if not self.unclamped:
            self.lift_clamp()
        if not len(batch) or not _any_lagged(self.kind, self.lag, batch.a, batch.b):
            return  # no free row of the batch carries a lag (a body at rest): nothing to land
        mine = self.row_mask(batch)
        rows = np.flatnonzero(mine & nonzero_rows(self.lag))
        if not len(rows):
            return
        art = ((self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)).any()
        if not art:
            lag = norm_rows(self.lag[rows])
            # motion along the contact normals over one host step (a body sliding on the
            # ground settles all the same): the largest |d delta / dt| of each row's contacts
            speed = np.zeros(len(self.kind) + 1)
            mine = np.zeros(len(self.kind) + 1, dtype=bool)
            mine[rows] = True
            e = np.flatnonzero(mine[batch.a] | mine[batch.b])  # index -1: the spare False
            vn = np.abs(batch.ddelta[e])
            np.maximum.at(speed, batch.a[e], vn)
            np.maximum.at(speed, batch.b[e], vn)
            move = dt * speed[rows]
            rows = rows[(lag > self.defer_tol) | ((move < REST_MOVE) & (lag > move))]
        self.reset(rows, bodies.pos[rows], bodies.quat[rows], bodies.vel[rows],
                    bodies.omega[rows])
        host[rows] = bodies.pos[rows]
        self.lag[rows] = 0.0

    def reset(self, rows: np.ndarray, pos: np.ndarray, quat: np.ndarray, vel: np.ndarray,
               omega: np.ndarray) -> None:
        """Place free rows (base poses, quat [w, x, y, z]) keeping the given velocities: two
        PyBullet calls per body, mapped in C (no Python frame per call); the pose reset zeroes
        the velocity, which the second call restores."""
        if not len(rows):
            return
        c = self.client
        cid, pb = c.id, c.p
        ids = self.rows_arr[rows, 0].tolist()
        xyzw = vectors(np.asarray(quat)[:, [1, 2, 3, 0]])
        drain(map(pb.resetBasePositionAndOrientation, ids, vectors(pos), xyzw, repeat(cid)))
        drain(map(pb.resetBaseVelocity, ids, vectors(vel), vectors(omega), repeat(cid)))

    @staticmethod
    def turned(bodies: BodyState, quat: np.ndarray, dt: float) -> np.ndarray:
        """(N,) True where the host orientation read is not ``quat`` (wxyz) turned over ``dt``
        by the angular velocity read (PyBullet's update of a base: q+ = exp(dt omega+) q, world
        frame) within HOST_ANGLE_TOL, i.e. something else turned the body (a user's reset of
        the orientation alone). Rows spinning faster than HOST_SPIN_MAX per step: False.
        One compiled loop (:func:`_turned`) for float64 (N, 4) / (N, 3) arrays, else NumPy's
        (:func:`_turned_numpy`)."""
        read, omega = bodies.quat, bodies.omega
        if (isinstance(read, np.ndarray) and isinstance(quat, np.ndarray)
                and isinstance(omega, np.ndarray) and read.shape == quat.shape
                and read.ndim == 2 and read.shape[1] == 4 and omega.shape == (len(read), 3)
                and read.dtype == quat.dtype == omega.dtype == np.float64):
            out = np.empty(len(read), dtype=bool)
            _turned(omega, read, quat, float(dt), HOST_ANGLE_TOL, HOST_SPIN_MAX, out)
            return out
        return _turned_numpy(bodies, quat, dt)

    def row_mask(self, batch: ContactBatch) -> np.ndarray:
        """(N,) True for the free rows that are a side of one of the batch's contacts."""
        nr = len(self.kind)
        mask = np.zeros(nr + 1, dtype=bool)  # index -1 (the ground) lands on the spare entry
        mask[batch.a] = True
        mask[batch.b] = True
        return mask[:nr] & (self.kind == FREE)


def _turned_numpy(bodies: BodyState, quat: np.ndarray, dt: float) -> np.ndarray:
    """:meth:`FreeFlight.turned` in NumPy (any input arrays)."""
    spin = dt * bodies.omega
    turning = np.flatnonzero(nonzero_rows(spin))
    read = bodies.quat
    if not len(turning) and read.shape == quat.shape and np.array_equal(read, quat):
        return np.zeros(len(read), dtype=bool)  # nothing turns, nothing turned
    if len(turning):
        quat = quat.copy()
        quat[turning] = quat_multiply(quat_from_rotvec(spin[turning]), quat[turning])
    # angle between two unit quaternions q1, q2 (either sign): 4 asin(|q1 -+ q2| / 2),
    # ~2 |q1 -+ q2| when small (resolved to ~1e-16 rad, unlike one from q1 . q2)
    d, e = read - quat, read + quat
    chord2 = np.minimum(np.einsum("ij,ij->i", d, d), np.einsum("ij,ij->i", e, e))
    slow = np.einsum("ij,ij->i", spin, spin) <= HOST_SPIN_MAX**2
    return slow & (4.0 * chord2 > HOST_ANGLE_TOL**2)


@njit
def _turned(omega, read, quat, dt, tol, spin_max, out):
    """out[i] of :meth:`FreeFlight.turned` per row, the operations of :func:`_turned_numpy`
    (quat_from_rotvec of dt omega, its Hamilton product with ``quat``, the chords to the
    quaternion read): a row that does not turn is compared with ``quat`` as it is."""
    for i in range(read.shape[0]):
        s0, s1, s2 = dt * omega[i, 0], dt * omega[i, 1], dt * omega[i, 2]
        qw, qx, qy, qz = quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3]
        if s0 != 0.0 or s1 != 0.0 or s2 != 0.0:
            angle = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
            half = 0.5 * angle
            k = 0.5 - angle * angle / 48.0 if angle < 1e-8 else math.sin(half) / angle
            pw, px, py, pz = math.cos(half), s0 * k, s1 * k, s2 * k
            qw, qx, qy, qz = (pw * qw - px * qx - py * qy - pz * qz,
                              pw * qx + px * qw + py * qz - pz * qy,
                              pw * qy - px * qz + py * qw + pz * qx,
                              pw * qz + px * qy - py * qx + pz * qw)
        d0, d1, d2, d3 = read[i, 0] - qw, read[i, 1] - qx, read[i, 2] - qy, read[i, 3] - qz
        e0, e1, e2, e3 = read[i, 0] + qw, read[i, 1] + qx, read[i, 2] + qy, read[i, 3] + qz
        chord2 = min(d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3, e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3)
        slow = s0 * s0 + s1 * s1 + s2 * s2 <= spin_max * spin_max
        out[i] = slow and 4.0 * chord2 > tol * tol


@njit
def _book(vel, lag, vprev, forced, free, gd, off, tol):
    """:meth:`FreeFlight.book`'s lag update per row, the NumPy path's operations: a free,
    not forced row with a finite last velocity whose velocity change minus ``gd`` (3,) has
    norm sqrt((x^2 + y^2) + z^2) <= ``tol`` takes ``off`` (3,) off its lag; one whose change
    is not ballistic gets a zero lag."""
    for i in range(vel.shape[0]):
        if not free[i] or forced[i]:
            continue
        p0, p1, p2 = vprev[i, 0], vprev[i, 1], vprev[i, 2]
        if not (np.isfinite(p0) and np.isfinite(p1) and np.isfinite(p2)):
            continue
        x, y, z = (vel[i, 0] - p0) - gd[0], (vel[i, 1] - p1) - gd[1], (vel[i, 2] - p2) - gd[2]
        if math.sqrt(x * x + y * y + z * z) <= tol:
            lag[i, 0] = lag[i, 0] - off[0]
            lag[i, 1] = lag[i, 1] - off[1]
            lag[i, 2] = lag[i, 2] - off[2]
        else:
            lag[i, 0] = lag[i, 1] = lag[i, 2] = 0.0


@njit
def _any_lagged(kind, lag, a, b):
    """True when a FREE row that is a side of a contact (a, b) has a nonzero lag (a side
    -1 reads the last row, as :meth:`FreeFlight.row_mask`'s spare entry does not: -1 is the
    world there, never a free row)."""
    n = kind.shape[0]
    for s in range(2):
        side = a if s == 0 else b
        for i in range(side.shape[0]):
            r = side[i]
            if 0 <= r < n and kind[r] == FREE and (
                    lag[r, 0] != 0.0 or lag[r, 1] != 0.0 or lag[r, 2] != 0.0):
                return True
    return False
