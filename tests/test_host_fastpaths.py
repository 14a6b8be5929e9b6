"""The host step's fast paths for a block-diagonal W (spheres on the ground) against the
general path they shortcut: the same groups for the compiled sub-stepper, and the same
"nothing to correct" answer as the test's closed form (u1 = u0 + a_free dt + W P, the host's
overlap delta0 - dt n.u1)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from mbplugin.hosts.correction import MOVE_MIN, overlap_predicted
from mbplugin.pipeline.delassus import free_body_blocks, is_block_pattern
from mbplugin.pipeline.substep import GroupedContactSpace


def _w(rng: np.random.Generator, k: int) -> tuple[sp.csr_matrix, np.ndarray]:
    r = rng.normal(scale=0.01, size=(k, 3))
    a = rng.normal(size=(k, 3, 3))
    W, _ = free_body_blocks(k, np.arange(k), np.arange(k), r, rng.uniform(1, 20, k),
                            a @ a.transpose(0, 2, 1))
    return W, r


def test_block_pattern_is_recognised_only_on_the_direct_build() -> None:
    W, _ = _w(np.random.default_rng(0), 4)
    assert is_block_pattern(W, 4)
    assert not is_block_pattern(W, 5)
    assert not is_block_pattern(sp.csr_matrix(W.toarray()), 4)  # the same matrix, rebuilt
    assert not is_block_pattern(W.toarray(), 4)


def test_block_groups_are_the_general_layout() -> None:
    """The layout kept for a block-diagonal W equals the one the general path derives."""
    rng = np.random.default_rng(1)
    for k in (1, 3, 17):
        W, _ = _w(rng, k)
        fast = GroupedContactSpace.__new__(GroupedContactSpace)
        slow = GroupedContactSpace.__new__(GroupedContactSpace)
        fast.k = slow.k = k
        fast.W, slow.W = W, sp.csr_matrix(W.toarray())  # untagged: the general path
        fast._groups(12)
        slow._groups(12)
        assert fast.ident and slow.ident
        for name in ("widx", "labels", "order", "sizes", "gptr", "goff", "big"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
        assert np.array_equal(fast.wdata, slow.wdata)


def test_predicted_overlap_is_the_closed_form() -> None:
    rng = np.random.default_rng(2)
    dt = 0.002
    outcomes = set()
    for _ in range(300):
        k = int(rng.integers(1, 12))
        W, r = _w(rng, k)
        n = rng.normal(size=(k, 3))
        n /= np.linalg.norm(n, axis=1)[:, None]
        s = 10.0 ** rng.integers(-16, -8)
        imp, vt, af = (rng.normal(scale=s, size=(k, 3)) for _ in range(3))
        dd = rng.normal(scale=s, size=k)
        delta = rng.normal(scale=1e-4, size=k)
        u1 = (vt - dd[:, None] * n) + af * dt + (W.toarray() @ imp.ravel()).reshape(-1, 3)
        host = delta - dt * np.sum(u1 * n, axis=1)
        d_end = host + rng.normal(scale=10.0 ** rng.integers(-15, -10), size=k)
        omega = rng.normal(scale=s, size=(k + 1, 3)) * (rng.random() < 0.5)
        ra = rng.normal(scale=0.01, size=(k, 3))
        batch = SimpleNamespace(a=np.full(k, k), b=np.arange(k), ra=ra, rb=r, normal=n,
                                vt=vt, ddelta=dd, delta=delta)
        got = overlap_predicted(batch, W, SimpleNamespace(impulse=imp, delta=d_end), af,
                                omega, dt)
        arm = dt * np.maximum(np.linalg.norm(omega[k]) * np.linalg.norm(ra, axis=1),
                              np.linalg.norm(omega[:k], axis=1) * np.linalg.norm(r, axis=1))
        want = bool(np.all(np.abs(host - d_end) <= MOVE_MIN)
                    and np.all(dt * np.linalg.norm(u1, axis=1) <= MOVE_MIN)
                    and np.all(arm <= MOVE_MIN))
        margin = min(np.min(np.abs(np.abs(host - d_end) - MOVE_MIN)),
                     np.min(np.abs(dt * np.linalg.norm(u1, axis=1) - MOVE_MIN)))
        if margin > 1e-20:  # (not at the threshold to rounding)
            assert got == want
            outcomes.add(got)
    assert outcomes == {True, False}


def test_plane_sphere_detection_is_the_contact_layers() -> None:
    """Spheres on a tilted MuJoCo plane, random states and margins: the one-call detection
    gives the contact layer's batch (``detect`` + ``keep_managed``) field by field, bitwise,
    the Hertz stiffness from the materials included."""
    from dataclasses import fields

    import mujoco

    from mbplugin.hosts.model import keep_managed
    from mbplugin.mujoco import MujocoContacts

    bodies = "".join(f'<body pos="{0.03 * i} 0 0.012"><freejoint/><geom type="sphere" '
                     f'size="0.01" mass="0.05"/></body>' for i in range(6))
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1" euler="3 -4 0"/>'
        f'{bodies}</worldbody></mujoco>')
    d = mujoco.MjData(m)
    c = MujocoContacts(m, d, manage=["floor"], law={"name": "hunt_crossley", "cr": 0.5},
                       material={"E": 2e11, "nu": 0.3})
    loop = c.loop
    assert loop._plane_spheres is not None
    rng = np.random.default_rng(4)
    seen = set()
    for _ in range(40):
        d.qpos[:] += rng.normal(scale=0.004, size=m.nq)
        d.qvel[:] = rng.normal(scale=0.3, size=m.nv)
        mujoco.mj_forward(m, d)
        state = loop.body_state(*c.host.state(d))
        margin = float(rng.uniform(0, 0.01))
        fast = loop.detect(state, margin)
        slow = keep_managed(loop.model.detect(state, margin=margin), loop.managed,
                            loop._codes, loop.model.n_shapes)
        seen.add(len(fast))
        assert len(fast) == len(slow)
        for f in fields(fast):
            x, y = getattr(fast, f.name), getattr(slow, f.name)
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        assert np.all(np.isfinite(fast.k_hertz))
    assert len(seen) > 2  # contacts come and go


class _Sides(SimpleNamespace):
    """A batch's sides (a, b, ra, rb) with its length."""

    def __len__(self) -> int:
        return len(self.a)


def test_one_free_side_w_is_the_block_build() -> None:
    """Every contact between a static row and its own free row (either side): W and its
    blocks are those of the block-diagonal build from the contacts' sides (the same bits);
    a free row on two contacts is left to the general path (W then couples them)."""
    from mbplugin.hosts.protocol import FREE, STATIC
    from mbplugin.hosts.wmatrix import _one_free_side, contact_sides, free_rows_delassus

    rng = np.random.default_rng(5)
    k = 7
    kind = np.array([STATIC] + [FREE] * k)
    inv_m = rng.uniform(1, 20, k + 1)
    a_ = rng.normal(size=(k + 1, 3, 3))
    inv_i = a_ @ a_.transpose(0, 2, 1)
    for flip in (False, True):
        batch = _Sides(a=np.zeros(k, dtype=np.int64), b=rng.permutation(k) + 1,
                       ra=rng.normal(size=(k, 3)), rb=rng.normal(size=(k, 3)))
        if flip:
            batch.a, batch.b, batch.ra, batch.rb = batch.b, batch.a, batch.rb, batch.ra
        assert _one_free_side(kind, batch.a, batch.b) == (2 if flip else 1)
        W, blocks, art = free_rows_delassus(kind, batch, inv_m, inv_i)
        contact, side, _, r = contact_sides(batch)
        free = kind[side] == FREE
        ref, ref_blocks = free_body_blocks(k, contact[free], side[free], r[free], inv_m, inv_i)
        assert is_block_pattern(W, k) and not art.any()
        assert np.array_equal(W.data, ref.data) and np.array_equal(blocks, ref_blocks)
        assert np.array_equal(W.indices, ref.indices) and np.array_equal(W.indptr, ref.indptr)
    shared = SimpleNamespace(a=np.zeros(2, dtype=np.int64), b=np.array([1, 1]))
    assert _one_free_side(kind, shared.a, shared.b) == 0
