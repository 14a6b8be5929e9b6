"""The compiled passes of a free box or hull resting on its corners (hosts/wmatrix,
hosts/correction, bullet/flight, bullet/deferral), checked against the outside world: W against
the rigid-body closed form J M^-1 J^T written out densely, PyBullet's own update of a spinning
base for the orientation check, the host's own semi-implicit step for the overlap prediction.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pybullet as p
import scipy.sparse as sp

from mbplugin.bullet.flight import FreeFlight
from mbplugin.contact.rotation import quat_from_rotvec, quat_multiply
from mbplugin.hosts.correction import overlap_predicted
from mbplugin.hosts.protocol import FREE, STATIC
from mbplugin.hosts.wmatrix import free_rows_delassus


class _Batch(SimpleNamespace):
    def __len__(self) -> int:
        return len(self.a)


def _cross_matrix(r: np.ndarray) -> np.ndarray:
    x, y, z = r
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def test_box_on_its_corners_w_is_j_minv_jt() -> None:
    """Two free boxes (rows 1 and 3) on a static ground (rows 0 and 2), four corner contacts
    each (either side order): W is J M^-1 J^T of the rigid bodies (J_i = [I, -[r_i]x] on the
    twist, M^-1 = diag(I/m, I_w^-1); Featherstone 2008, Sect. 11.2) written out densely, with
    the contacts of one box coupled and the two boxes not; sparse, no block of the other box."""
    rng = np.random.default_rng(11)
    kind = np.array([STATIC, FREE, STATIC, FREE])
    inv_m = np.array([0.0, 1.0 / 1.3, 0.0, 1.0 / 0.7])
    a_ = rng.normal(size=(4, 3, 3))
    inv_i = a_ @ a_.transpose(0, 2, 1)
    inv_i[[0, 2]] = 0.0
    corners = np.array([[1, 1, -1], [1, -1, -1], [-1, 1, -1], [-1, -1, -1]]) * [0.1, 0.1, 0.05]
    a = np.array([0, 0, 0, 0, 3, 3, 3, 3])  # box 3 given as side a of its contacts
    b = np.array([1, 1, 1, 1, 2, 2, 2, 2])
    r_box = corners + rng.normal(scale=1e-3, size=(4, 3))
    ra = np.vstack([np.zeros((4, 3)), r_box[::-1]])
    rb = np.vstack([r_box, np.zeros((4, 3))])
    batch = _Batch(a=a, b=b, ra=ra, rb=rb)
    W, blocks, art = free_rows_delassus(kind, batch, inv_m, inv_i)
    assert sp.isspmatrix_csr(W) and blocks is None and not art.any()
    k = len(a)
    ref = np.zeros((3 * k, 3 * k))
    sides = [((a[i], ra[i], -1.0), (b[i], rb[i], 1.0)) for i in range(k)]
    for i in range(k):
        for j in range(k):
            for row_i, ri, sgn_i in sides[i]:
                for row_j, rj, sgn_j in sides[j]:
                    if row_i != row_j or kind[row_i] != FREE:
                        continue
                    ji = np.hstack([np.eye(3), -_cross_matrix(ri)])
                    jj = np.hstack([np.eye(3), -_cross_matrix(rj)])
                    minv = np.zeros((6, 6))
                    minv[:3, :3] = inv_m[row_i] * np.eye(3)
                    minv[3:, 3:] = inv_i[row_i]
                    ref[3 * i:3 * i + 3, 3 * j:3 * j + 3] += sgn_i * sgn_j * (ji @ minv @ jj.T)
    dense = W.toarray()
    assert np.allclose(dense, ref, rtol=1e-12, atol=1e-12)
    assert not dense[:12, 12:].any() and not dense[12:, :12].any()  # two boxes: uncoupled
    # the next step's W on the same pattern: its own data, the pattern shared read-only
    batch2 = _Batch(a=a, b=b, ra=ra * 1.01, rb=rb * 1.01)
    W2 = free_rows_delassus(kind, batch2, inv_m, inv_i)[0]
    assert np.array_equal(W2.indices, W.indices) and not W2.indices.flags.writeable
    assert not np.array_equal(W2.data, W.data) and np.allclose(W.toarray(), ref)


def test_turned_against_pybullets_own_base_update() -> None:
    """A free box spinning slowly in PyBullet (no gravity): the orientation PyBullet reads
    after a step is the one before turned by dt omega (not ``turned``); one reset by 1e-7 rad
    about another axis after the step is (``turned`` True); rows spinning faster than
    HOST_SPIN_MAX per step are never flagged."""
    cid = p.connect(p.DIRECT)
    try:
        dt = 1 / 240
        p.setTimeStep(dt, physicsClientId=cid)
        p.setGravity(0, 0, 0, physicsClientId=cid)
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.05],
                                     physicsClientId=cid)
        body = p.createMultiBody(1.0, col, basePosition=[0, 0, 1], physicsClientId=cid)
        p.changeDynamics(body, -1, angularDamping=0.0, linearDamping=0.0,
                         physicsClientId=cid)
        p.resetBaseVelocity(body, [0, 0, 0], [0.3, -0.2, 0.5], physicsClientId=cid)

        def read() -> SimpleNamespace:
            _, q = p.getBasePositionAndOrientation(body, physicsClientId=cid)
            _, w = p.getBaseVelocity(body, physicsClientId=cid)
            return SimpleNamespace(quat=np.array([[q[3], q[0], q[1], q[2]]]),
                                   omega=np.array([w]))

        flags = []
        for _ in range(20):
            q0 = read().quat
            p.stepSimulation(physicsClientId=cid)
            flags.append(bool(FreeFlight.turned(read(), q0, dt)[0]))
        assert not any(flags)
        q0 = read().quat
        p.stepSimulation(physicsClientId=cid)
        now = read()
        extra = quat_multiply(quat_from_rotvec(np.array([[1e-7, 0.0, 0.0]])), now.quat)[0]
        p.resetBasePositionAndOrientation(body, [0, 0, 1], [*extra[1:], extra[0]],
                                          physicsClientId=cid)
        moved = SimpleNamespace(quat=read().quat, omega=now.omega)
        assert bool(FreeFlight.turned(moved, q0, dt)[0])
        fast = SimpleNamespace(quat=moved.quat, omega=np.array([[0.0, 0.0, 200.0]]))
        assert not FreeFlight.turned(fast, q0, dt)[0]
    finally:
        p.disconnect(cid)


def test_overlap_prediction_with_a_sparse_w_is_the_hosts_step() -> None:
    """A contact's host overlap after a semi-implicit step is delta0 - dt n.u1 with
    u1 = u0 + a_free dt + W P (the host's update written out): a box's four corners whose
    integrated overlaps are that are predicted (no correction needed); one corner off by
    1e-9 m is not, nor a corner moving by more than MOVE_MIN over the step."""
    rng = np.random.default_rng(2)
    k, dt = 4, 1 / 240
    blocks = rng.normal(size=(3 * k, 3 * k)) * 1e-2
    W = sp.csr_matrix(blocks @ blocks.T)
    n = np.tile([0.0, 0.0, 1.0], (k, 1))
    imp = rng.normal(size=(k, 3)) * 1e-3
    a_free = np.tile([0.0, 0.0, -9.81], (k, 1))
    wp = (W.toarray() @ imp.ravel()).reshape(k, 3)
    u0 = -(a_free * dt + wp)  # at rest at the step end: u1 = 0
    delta0 = np.full(k, 2.1e-6)
    batch = _Batch(a=np.zeros(k, dtype=np.int64), b=np.ones(k, dtype=np.int64),
                   ra=np.zeros((k, 3)), rb=rng.normal(size=(k, 3)) * 0.1, normal=n,
                   vt=u0 - (u0 * n).sum(1)[:, None] * n, ddelta=-(u0 * n).sum(1),
                   delta=delta0)
    omega = np.zeros((2, 3))
    res = SimpleNamespace(impulse=imp, delta=delta0.copy())
    assert overlap_predicted(batch, W, res, a_free, omega, dt)
    off = SimpleNamespace(impulse=imp, delta=delta0 + np.array([0, 0, 1e-9, 0]))
    assert not overlap_predicted(batch, W, off, a_free, omega, dt)
    moving = _Batch(**{**batch.__dict__, "vt": batch.vt + np.array([1e-3, 0.0, 0.0])})
    assert not overlap_predicted(moving, W, res, a_free, omega, dt)
