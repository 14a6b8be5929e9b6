"""The Newton direction of a large implicit step through W's low rank
(:mod:`mbplugin.pipeline.lowrank`).

Expected values come from outside mbplugin: the rank of J M^-1 J^T (that of J, for M
symmetric positive definite), the linear system the direction solves (its residual with the
matrix written out by NumPy), the implicit step's own equation R(P) = P - dt F(state(P)) = 0
at the solved impulse, and the NumPy reference of the implicit step (a dense solve per
Newton iteration), on a robot whose body lies on a fully managed plane (every hull corner
near the plane a contact: the case the low rank is for).
"""

from __future__ import annotations

import numpy as np
import pybullet as p
import pytest
import robot_rig as rr
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.pipeline.delassus import symmetric_add, w_times
from mbplugin.pipeline.layout import CONTACT
from mbplugin.pipeline.lowrank import (
    LOWRANK_MIN,
    lowrank_direction,
    lowrank_end_state,
    lowrank_times,
    psd_factor,
)


def _w(rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    """J M^-1 J^T of a random J (m, n) and a random symmetric positive definite M (n, n)."""
    J = rng.normal(size=(m, n))
    B = rng.normal(size=(n, n))
    return J @ np.linalg.solve(B @ B.T + n * np.eye(n), J.T)


@pytest.mark.parametrize("n", [1, 6, 18])
def test_factor_has_the_rank_of_the_jacobian_and_reproduces_w(n: int) -> None:
    """W = J M^-1 J^T of 40 contacts (3K = 120) on n degrees of freedom: the factor's rank is
    n (rank J) and C C^T is W to rounding."""
    rng = np.random.default_rng(n)
    m = 120
    W = _w(rng, m, n)
    ct = np.empty((m // 3, m))
    r = psd_factor(W.ravel().copy(), 0, m, ct)
    assert r == n
    C = ct[:r].T
    assert np.max(np.abs(C @ C.T - W)) <= 1e-12 * np.max(np.abs(W))


def test_products_through_the_factor_are_w_s() -> None:
    """W x through the factor, C (C^T x), and the end state u = ue + W P, d = d0 - dt n . u
    + ed built on it, are NumPy's products with W written out (W = J M^-1 J^T of 80 contacts
    on 18 coordinates) to 1e-12 of their size; so is the compiled dense W x of a large group."""
    rng = np.random.default_rng(7)
    k, n, dt = 80, 18, 1 / 240
    m = 3 * k
    W = _w(rng, m, n)
    ct = np.empty((k, m))
    r = psd_factor(W.ravel().copy(), 0, m, ct)
    assert r == n
    x = rng.normal(size=m)
    out = np.empty(m)
    lowrank_times(ct, r, m, x, out)
    ref = W @ x
    assert np.max(np.abs(out - ref)) <= 1e-12 * np.max(np.abs(ref))
    assert np.max(np.abs(w_times(W, x) - ref)) <= 1e-13 * np.max(np.abs(ref))
    gc = np.zeros(k, dtype=CONTACT)
    nv = rng.normal(size=(k, 3))
    nv /= np.linalg.norm(nv, axis=1)[:, None]
    gc["normal"] = nv
    P, ue = rng.normal(size=(k, 3)), rng.normal(size=(k, 3))
    d0, ed = rng.normal(size=k), rng.normal(size=k)
    d1, u1 = np.empty(k), np.empty((k, 3))
    lowrank_end_state(P, ue, d0, ed, dt, k, ct, r, gc, d1, u1, np.empty(m))
    u_ref = ue + (W @ P.ravel()).reshape(k, 3)
    d_ref = d0 - dt * np.einsum("ij,ij->i", u_ref, nv) + ed
    assert np.max(np.abs(u1 - u_ref)) <= 1e-12 * np.max(np.abs(u_ref))
    assert np.max(np.abs(d1 - d_ref)) <= 1e-12 * np.max(np.abs(d_ref))


def test_symmetric_add_is_the_signed_scatter_of_j_minv_jt() -> None:
    """A large group's J M^-1 J^T added into W with each side's sign at its contact's rows
    (sides on permuted contacts): NumPy's product of the two factors, scattered, to rounding."""
    rng = np.random.default_rng(11)
    ne, n = 3 * LOWRANK_MIN, 18
    jrows = rng.normal(size=(3 * ne, n))
    jrows[rng.random(jrows.shape) < 0.3] = 0.0  # other limbs' coordinates
    B = rng.normal(size=(n, n))
    minv_jt = np.ascontiguousarray(np.linalg.solve(B @ B.T + n * np.eye(n), jrows.T))
    cont, sgn = rng.permutation(ne), rng.choice([-1.0, 1.0], ne)
    W = np.zeros((3 * ne, 3 * ne))
    symmetric_add(jrows, minv_jt, cont, sgn, W)
    rows = (3 * cont[:, None] + np.arange(3)[None]).ravel()
    s = np.repeat(sgn, 3)
    ref = np.zeros_like(W)
    ref[np.ix_(rows, rows)] = (s[:, None] * (jrows @ minv_jt)) * s[None]
    assert np.max(np.abs(W - ref)) <= 1e-12 * np.max(np.abs(ref))


def test_factor_refuses_a_full_rank_w_and_takes_a_zero_one() -> None:
    """A W of full rank (the identity) needs more pivots than the cap: -1 (the dense solve);
    W = 0 (no contact can move): rank 0."""
    m = 60
    ct = np.empty((m // 3, m))
    assert psd_factor(np.eye(m).ravel(), 0, m, ct) == -1
    assert psd_factor(np.zeros(m * m), 0, m, ct) == 0


def test_direction_solves_the_newton_system() -> None:
    """(I - dt D W) x = rhs with D block diagonal (D_i = dF/du_i - dt dF/ddelta_i n_i^T): the
    Woodbury solve's residual with the matrix written out is at rounding, and it is the dense
    solve's x."""
    rng = np.random.default_rng(3)
    k, n, dt = 50, 18, 1 / 240
    m = 3 * k
    W = _w(rng, m, n) * 5.0
    ct = np.empty((k, m))
    r = psd_factor(W.ravel().copy(), 0, m, ct)
    normal = rng.normal(size=(k, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    gc = np.zeros(k, dtype=CONTACT)
    gc["normal"] = normal
    dFu = -np.abs(rng.normal(size=(k, 3, 3))) * 1e3  # N s/m
    dFd = rng.normal(size=(k, 3)) * 1e5  # N/m
    D = np.zeros((m, m))
    for i in range(k):
        D[3 * i:3 * i + 3, 3 * i:3 * i + 3] = dFu[i] - dt * np.outer(dFd[i], normal[i])
    A = np.eye(m) - dt * D @ W
    rhs = rng.normal(size=m)
    x = np.empty(m)
    assert lowrank_direction(ct, r, dFu, dFd, gc, dt, k, rhs, x)
    assert np.max(np.abs(A @ x - rhs)) <= 1e-10 * np.max(np.abs(rhs))
    np.testing.assert_allclose(x, np.linalg.solve(A, rhs), rtol=1e-9, atol=1e-12)


def test_a_robot_on_its_back_solves_its_implicit_step_as_the_reference(tmp_path) -> None:
    """The A1 dropped on its back onto a fully managed plane: its hull corners near the plane
    make one implicit step of more than LOWRANK_MIN contacts (the compiled Newton through the
    low-rank direction). From random start and host states, the compiled step's impulse is a
    root of R(P) = P - dt F(state(P)) (with friction and without) and, without friction (a
    unique root), the NumPy reference's (a dense solve per iteration) to the tolerance. (With
    friction's trapezoidal Coulomb limit R is not a gradient and 44 contacts at random states
    have more than one root: the compiled solve and the reference may stop at different
    ones, on main as here.)"""

    rng = np.random.default_rng(7)
    dt = 1 / 240
    with ground_world(rr.G, dt) as (cid, plane):
        h = rr.load(cid, rr.ROBOTS["a1"], tmp_path)
        flip = p.getQuaternionFromEuler([np.pi, 0.0, 0.0])
        p.resetBasePositionAndOrientation(h.body, [0, 0, 0.08], flip, physicsClientId=cid)
        c = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.3, "k": 2e6},
                           friction=rr.FRICTION, rtol=1e-10)
        for _ in range(240):
            c.before_step()
            if c.integrator.pending is not None and len(c.integrator.pending[0]) >= 40:
                break
            p.stepSimulation(physicsClientId=cid)
            c.after_step()
        batch, space, _, _ = c.integrator.pending
        k = len(batch)
        assert k >= max(40, LOWRANK_MIN)
        ct = np.empty((k, 3 * k))
        assert 0 < psd_factor(np.ascontiguousarray(space.W).ravel(), 0, 3 * k, ct) <= 18
        for _trial in range(5):
            d0, d_lin = rng.uniform(0.0, 2e-3, k), rng.uniform(-5e-4, 2e-3, k)
            u0, u_lin = rng.uniform(-0.5, 0.5, (k, 3)), rng.uniform(-0.5, 0.5, (k, 3))
            results = []
            for friction, compiled in ((c.friction, True), (None, True), (None, False)):
                impulse, scale = rr.implicit_root(c.store, batch, space.W, friction, None,
                                                  compiled, dt, d0, d_lin, u0, u_lin)
                results.append(impulse)
            # frictionless, the residual is a gradient of a strictly convex function (the
            # root is unique: implicit_kernel.newton): the reference's root
            assert results[1] == pytest.approx(results[2], rel=1e-6, abs=1e-9 * scale)
