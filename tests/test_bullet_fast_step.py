"""The compiled pieces of the robots' host step against closed forms (the plane-sphere reads
of mbplugin.hosts.detection, the Jacobians of mbplugin.bullet.fast_step, the response and W
of mbplugin.pipeline.delassus).

- A sphere (radius r, centre c, velocity v, angular velocity omega) over a tilted half-space
  (surface point q, unit normal n): overlap r - (c - q) . n, contact point c - (r - delta/2) n,
  relative velocity there v + omega x (P - c) (rigid-body kinematics); the plane's own body
  moving adds minus its point velocity. The same contacts through the contact layer's
  ``detect_pairs`` give the same bits.
- An articulated body's response to contact impulses: M^-1 J^T, with the coordinates a motor
  holds constrained, (M^-1 - M^-1 S^T (S M^-1 S^T)^-1 S M^-1) J^T (Featherstone, *Rigid Body
  Dynamics Algorithms*, 2008, Sect. 8.1; the held coordinates do not move), and W = J M^-1 J^T
  per contact side with its sign; a point on the base moves as v - [r]x omega in the base
  frame (PyBullet's base coordinates (omega, v)).
"""

from __future__ import annotations

import numpy as np
import pytest

from mbplugin.bullet.fast_step import world_jacobians
from mbplugin.contact import BodyState, ContactModel, Plane, Sphere
from mbplugin.hosts.detection import HostContacts
from mbplugin.pipeline.delassus import articulated_w


def _rot(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@pytest.mark.parametrize("plane_moves", [False, True])
def test_host_reader_is_the_plane_sphere_closed_form(plane_moves: bool) -> None:
    rng = np.random.default_rng(7)
    radii = [0.01, 0.02, 0.015]
    model = ContactModel()
    n_loc = np.array([0.1, -0.2, 1.0])
    n_loc /= np.linalg.norm(n_loc)
    plane_body = 3 if plane_moves else -1
    p = model.add_shape(Plane(normal=n_loc, point=(0.0, 0.0, 0.05)), plane_body)
    offsets = rng.normal(scale=0.01, size=(3, 3))
    spheres = [model.add_shape(Sphere(r), i, pos=offsets[i]) for i, r in enumerate(radii)]
    model.set_default_law({"name": "hooke", "k": 1.0})
    reader = HostContacts(model)
    for _ in range(20):
        nb = 4
        pos = rng.normal(scale=0.02, size=(nb, 3)) + np.array([0.0, 0.0, 0.06])
        quat = rng.normal(size=(nb, 4))
        quat /= np.linalg.norm(quat, axis=1)[:, None]
        vel, om = rng.normal(size=(nb, 3)), rng.normal(size=(nb, 3))
        bodies = BodyState.create(pos, quat, vel, om, mass=1.0, inertia=[1.0] * 3)
        keys = np.sort(np.array([model.arrays.n * p + s for s in spheres]) << 20)
        u0 = rng.normal(size=(3, 3))
        d, u, found = reader.read(bodies, keys, 0.03, u0)
        if plane_moves:
            Rp = _rot(quat[3])
            nw, q0 = Rp @ n_loc, pos[3] + Rp @ np.array([0.0, 0.0, 0.05])
        else:
            nw, q0 = n_loc, np.array([0.0, 0.0, 0.05])
        for i, r in enumerate(radii):
            c = pos[i] + _rot(quat[i]) @ offsets[i]
            delta = r - (c - q0) @ nw
            if delta <= -0.03:
                assert not found[i] and d[i] == -0.03 and np.array_equal(u[i], u0[i])
                continue
            assert found[i]
            assert d[i] == pytest.approx(delta, rel=1e-12, abs=1e-15)
            point = c - (r - delta / 2) * nw
            v = vel[i] + np.cross(om[i], point - pos[i])
            if plane_moves:
                v -= vel[3] + np.cross(om[3], point - pos[3])
            assert np.allclose(u[i], v, rtol=1e-12, atol=1e-14)
        # the contact layer's own detection of the same pairs: the same bits on a static
        # plane (its world frame is then its local one; a turned plane's frame is rounded
        # differently by the layer's NumPy product)
        now = model.detect_pairs(bodies, keys, 0.03)
        at = np.searchsorted(keys, now.key)
        assert np.array_equal(found, np.isin(keys, now.key))
        u_now = now.vt - now.ddelta[:, None] * now.normal
        if plane_moves:
            assert np.allclose(d[at], now.delta, rtol=1e-14, atol=1e-17)
            assert np.allclose(u[at], u_now, rtol=1e-14, atol=1e-16)
        else:
            assert np.array_equal(d[at], now.delta)
            assert np.array_equal(u[at], u_now)


def test_host_reader_declines_other_pairs() -> None:
    model = ContactModel()
    a, b = model.add_shape(Sphere(0.01), 0), model.add_shape(Sphere(0.01), 1)
    model.set_default_law({"name": "hooke", "k": 1.0})
    bodies = BodyState.create(np.array([[0.0, 0, 0], [0.0, 0, 0.015]]), mass=1.0,
                              inertia=[1.0] * 3)
    keys = np.array([(model.arrays.n * a + b) << 20])
    assert HostContacts(model).read(bodies, keys, 0.1, np.zeros((1, 3))) is None


@pytest.mark.parametrize("locked", [[], [7, 10]])
def test_articulated_w_is_the_constrained_response(locked: list[int]) -> None:
    rng = np.random.default_rng(11)
    n, k = 12, 3  # a floating base (6) and 6 joints; 3 contacts, one on the base
    A = rng.normal(size=(n, n))
    mm = A @ A.T + n * np.eye(n)
    r_base = _rot(rng.normal(size=4))
    base_p = rng.normal(size=3)
    point = rng.normal(size=(k, 3))
    moving = np.array([True, False, True])
    raw = rng.normal(size=(k, 3, n))
    jac = np.where(moving[:, None, None], raw, 0.0)
    cont = np.array([2, 0, 1])
    sgn = np.array([1.0, -1.0, 1.0])
    W = np.zeros((3 * k, 3 * k))
    world_jacobians(jac, moving, r_base, point, base_p)
    minv_jt = articulated_w(jac, mm, np.array(locked, dtype=np.int64), cont, sgn, W)
    # the expected Jacobians: world axes, the base point's v - [r]x omega
    J = np.zeros((k, 3, n))
    J[moving] = r_base @ raw[moving]
    r = (point[1] - base_p) @ r_base
    skew = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    J[1, :, :3] = -r_base @ skew
    J[1, :, 3:6] = r_base
    assert np.allclose(jac, J, rtol=0, atol=1e-14)
    minv = np.linalg.inv(mm)
    if locked:
        s = np.array(locked)
        minv = minv - minv[:, s] @ np.linalg.inv(minv[np.ix_(s, s)]) @ minv[s, :]
    jt = J.reshape(-1, n).T
    assert np.allclose(minv_jt, minv @ jt, rtol=1e-10, atol=1e-14)
    if locked:  # the held coordinates do not respond
        assert np.max(np.abs(minv_jt[locked])) <= 1e-12 * np.max(np.abs(minv_jt))
    full = J.reshape(-1, n) @ minv @ jt
    expected = np.zeros((3 * k, 3 * k))
    for i in range(k):
        for j in range(k):
            expected[3 * cont[i]:3 * cont[i] + 3, 3 * cont[j]:3 * cont[j] + 3] += (
                sgn[i] * sgn[j] * full[3 * i:3 * i + 3, 3 * j:3 * j + 3])
    assert np.allclose(W, expected, rtol=1e-10, atol=1e-14)
    assert np.allclose(W, W.T, rtol=1e-10, atol=1e-14)  # symmetric, as J M^-1 J^T


@pytest.mark.parametrize("floating", [False, True])
def test_respond_body_is_the_semi_implicit_update(floating: bool) -> None:
    """A body's generalised velocities change by dq and its positions by dt times that (the
    host's semi-implicit update); a floating base's velocity change is R_b dq in world axes
    and its orientation turns by exp(dt R_b dq_omega) (SciPy's rotation vector)."""
    from scipy.spatial.transform import Rotation

    from mbplugin.bullet.fast_step import respond_body

    rng = np.random.default_rng(3)
    nj, dt = 5, 1 / 240
    q, v = rng.normal(size=nj), rng.normal(size=nj)
    dq = rng.normal(size=nj + (6 if floating else 0))
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)  # [x, y, z, w]
    base = np.concatenate([rng.normal(size=3), quat, rng.normal(size=3), 10 * rng.normal(size=3)])
    r_base = Rotation.from_quat(rng.normal(size=4)).as_matrix()
    q1, v1, b1 = np.empty(nj), np.empty(nj), np.zeros(13)
    spin = respond_body(q, v, dq, dt, floating, base, r_base, q1, v1, b1)
    off = 6 if floating else 0
    np.testing.assert_allclose(v1, v + dq[off:], rtol=0, atol=1e-14)
    np.testing.assert_allclose(q1, q + dt * dq[off:], rtol=0, atol=1e-14)
    expect_spin = max(np.abs(v).max(), np.linalg.norm(base[10:13]) if floating else 0.0)
    assert spin == pytest.approx(expect_spin, rel=1e-15)
    if not floating:
        assert not b1.any()
        return
    dw, dv = r_base @ dq[:3], r_base @ dq[3:6]
    np.testing.assert_allclose(b1[0:3], base[0:3] + dt * dv, rtol=0, atol=1e-14)
    np.testing.assert_allclose(b1[7:10], base[7:10] + dv, rtol=0, atol=1e-14)
    np.testing.assert_allclose(b1[10:13], base[10:13] + dw, rtol=0, atol=1e-13)
    turned = (Rotation.from_rotvec(dt * dw) * Rotation.from_quat(quat)).as_quat()
    turned *= np.sign(turned @ b1[3:7])
    np.testing.assert_allclose(b1[3:7], turned, rtol=0, atol=1e-14)


def test_info_arrays_are_the_normal_force_and_slip() -> None:
    """A step's mean normal force n . P / dt and slip speed |u - (n . u) n| (the tangential
    part of the contact velocity), against their closed forms in NumPy."""
    from mbplugin.hosts.integrator import info_arrays

    rng = np.random.default_rng(4)
    P, u, n = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    fn, slip = info_arrays(P, u, n, 1 / 240)
    np.testing.assert_allclose(fn, 240 * np.sum(P * n, axis=1), rtol=1e-14)
    vt = u - np.sum(u * n, axis=1)[:, None] * n
    np.testing.assert_allclose(slip, np.linalg.norm(vt, axis=1), rtol=1e-14)
    assert np.allclose(np.sum(vt * n, axis=1), 0.0, atol=1e-15)


def test_base_rotation_is_pybullets_matrix_to_the_bit() -> None:
    """The base's rotation the robots' W uses (``fast_step.base_rotation``, no PyBullet call)
    is what PyBullet's own ``getMatrixFromQuaternion`` returns, bitwise, for unit and
    non-unit quaternions [x, y, z, w] (Bullet normalises by 2 / |q|^2), and a rotation (R R^T
    = I, det 1) for a unit one."""
    import pybullet as p

    from mbplugin.bullet.fast_step import base_rotation

    rng = np.random.default_rng(3)
    for i in range(2000):
        q = rng.normal(size=4) * (1.0 if i % 2 else rng.uniform(0.3, 3.0))
        q = (q / np.linalg.norm(q) if i % 3 == 0 else q).tolist()
        ours = base_rotation(q)
        assert np.array_equal(ours, np.array(p.getMatrixFromQuaternion(q)).reshape(3, 3))
    assert np.allclose(ours @ ours.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(base_rotation([0.0, 0.0, np.sin(0.3), np.cos(0.3)])) == \
        pytest.approx(1.0, abs=1e-15)
