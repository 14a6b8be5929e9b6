"""The position correction of free rows after a host's semi-implicit step, written once for
every host (``BulletContacts``, :class:`~mbplugin.hosts.loop.ContactLoop`).

A host steps a free body with semi-implicit Euler: a body that bounced inside the host step is
placed as if the step's impulse had acted at its start, so the host's end overlap of a contact
differs from the integrated one. The correction makes them equal by a position impulse mu n
on side b (-mu n on side a) of each corrected contact, with N^T W N mu = delta_host -
delta_integrated (W the step's Delassus operator), which moves a free row by dx = sum f / m
and turns it by dth = sum I_w^-1 (r x f); velocities are kept. When the host's end overlaps
can be predicted to equal the integrated ones (contacts at rest) there is nothing to correct
and the host need not be read (:func:`overlap_predicted`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from mbplugin._jit import njit, njit_inline, readonly_view
from mbplugin.contact import ContactBatch
from mbplugin.hosts.arrays import assign, cross_rows, norm_rows
from mbplugin.hosts.protocol import FREE
from mbplugin.pipeline.delassus import is_block_pattern, normal_delassus, solve_blocks

#: smallest position correction applied to a free row (m, and rad for its rotation)
MOVE_MIN = 1e-12
#: largest motion (m) of a contact point or lever arm over a host step for which the host's end
#: overlap is predicted rather than detected (:func:`predicted_overlaps`; the second-order
#: terms left out are then <= PREDICT_MAX^2 / r, 1e-15 m for a radius r of 1 mm)
PREDICT_MAX = 1e-9


def overlap_predicted(batch: ContactBatch, W: Any, res: Any, a_free: np.ndarray,
                      omega: np.ndarray, dt: float, sel: np.ndarray | None = None) -> bool:
    """True when the host's semi-implicit step of the contacts ``sel`` (indices; None: all)
    needs no position correction: with the step's impulse P (``res.impulse``) and the free
    acceleration ``a_free`` (K, 3) m/s^2 a contact's end velocity is u1 = u0 + a_free dt + W P
    and its host overlap delta0 - dt n.u1 (exact for contact points moving by less than
    MOVE_MIN over the step: no rotation or curvature term); True when that equals the
    integrated overlap ``res.delta`` within MOVE_MIN, and neither the contact points (u1 dt)
    nor the lever arms (``omega`` (N, 3) rad/s of the rows at the step start) move by more
    than MOVE_MIN."""
    a, b, ra, rb = batch.a, batch.b, batch.ra, batch.rb
    n, vt, ddelta, delta = batch.normal, batch.vt, batch.ddelta, batch.delta
    if sel is None and is_block_pattern(W, len(n)):
        # W block diagonal (spheres on the ground): the same test in one compiled loop
        return _predicted_blocks(W.data, res.impulse, vt, ddelta, n, delta, res.delta,
                                 np.ascontiguousarray(a_free, dtype=float), a, b, ra, rb,
                                 np.ascontiguousarray(omega, dtype=float), float(dt),
                                 MOVE_MIN)
    if sel is None and sp.isspmatrix_csr(W) and W.shape == (3 * len(n), 3 * len(n)):
        # W sparse (a box or a hull on its corners): the same test in one compiled loop
        return _predicted_csr(readonly_view(W.indptr), readonly_view(W.indices), W.data,
                              np.ascontiguousarray(res.impulse, dtype=float), vt, ddelta, n,
                              delta, res.delta, np.ascontiguousarray(a_free, dtype=float), a,
                              b, ra, rb, np.ascontiguousarray(omega, dtype=float), float(dt),
                              MOVE_MIN)
    wp = (W @ res.impulse.ravel()).reshape(-1, 3)
    d_end = res.delta
    if sel is not None:
        a, b, ra, rb, n, vt = a[sel], b[sel], ra[sel], rb[sel], n[sel], vt[sel]
        ddelta, delta, a_free, wp, d_end = (ddelta[sel], delta[sel], a_free[sel], wp[sel],
                                            d_end[sel])
    u1, pred = _end_overlaps(vt, ddelta, n, delta, a_free, wp, dt)
    # cheapest test first (a moving contact fails it)
    if np.max(np.abs(pred - d_end)) > MOVE_MIN:
        return False
    return _still(u1, omega, a, b, ra, rb, dt, MOVE_MIN)


def _end_overlaps(vt: np.ndarray, ddelta: np.ndarray, n: np.ndarray, delta: np.ndarray,
                  a_free: np.ndarray, wp: np.ndarray,
                  dt: float) -> tuple[np.ndarray, np.ndarray]:
    """The contacts' end velocity u1 = u0 + a_free dt + W P (K, 3) m/s of the host's
    semi-implicit step and their end overlap delta0 - dt n.u1 (K,) m (:func:`overlap_predicted`)."""
    u0 = vt - ddelta[:, None] * n
    u1 = u0 + a_free * dt + wp
    return u1, delta - dt * np.einsum("ki,ki->k", u1, n)


def _still(u1: np.ndarray, omega: np.ndarray, a: np.ndarray, b: np.ndarray, ra: np.ndarray,
           rb: np.ndarray, dt: float, bound: float) -> bool:
    """True when neither the contact points (dt |u1|) nor the lever arms (dt |omega| |r|, the
    rows' angular velocity ``omega`` (N, 3) rad/s) move by more than ``bound`` (m)."""
    if np.max(dt * norm_rows(u1)) > bound:
        return False
    if omega.any():  # (no row turns: every lever arm moves by 0)
        arm = dt * np.maximum(norm_rows(omega[a]) * norm_rows(ra),
                              norm_rows(omega[b]) * norm_rows(rb))
        if np.max(arm) > bound:
            return False
    return True


def predicted_overlaps(batch: ContactBatch, W: Any, res: Any, a_free: np.ndarray,
                       omega: np.ndarray, dt: float) -> np.ndarray | None:
    """The host's end overlaps (K,) m of the contacts after its semi-implicit step, predicted
    as in :func:`overlap_predicted` (delta0 - dt n.u1, u1 = u0 + a_free dt + W P with the
    host's own acceleration ``a_free`` (K, 3) m/s^2), where that prediction is exact to
    rounding: every contact point and lever arm moves by at most PREDICT_MAX over the step
    (the terms it leaves out, a lever arm's turn and a curved surface's slide, are second
    order: <= PREDICT_MAX^2 / r); else None (the host's overlaps are to be detected)."""
    wp = (W @ res.impulse.ravel()).reshape(-1, 3)
    u1, pred = _end_overlaps(batch.vt, batch.ddelta, batch.normal, batch.delta, a_free, wp, dt)
    if not _still(u1, omega, batch.a, batch.b, batch.ra, batch.rb, dt, PREDICT_MAX):
        return None
    return pred


@njit_inline
def _norm3(x, y, z):
    """|(x, y, z)| as :func:`mbplugin.hosts.arrays.norm_rows` sums it."""
    return math.sqrt((x * x + y * y) + z * z)


@njit
def _predicted_blocks(wdata, imp, vt, ddelta, n, delta, d_end, a_free, a, b, ra, rb, omega, dt,
                      move_min):
    """:func:`overlap_predicted` of every contact with W block diagonal (``wdata`` (9K,) its
    blocks row-major, :func:`mbplugin.pipeline.delassus.free_body_blocks`): W P row by row
    from 0 as SciPy's CSR product, u1 = (u0 + a_free dt) + W P, and the three tests (overlap,
    point motion, lever arms; no row turning: none of the last)."""
    k = n.shape[0]
    u1 = np.empty((k, 3))
    turning = False
    for i in range(k):
        for c in range(3):
            q = 9 * i + 3 * c
            wp = 0.0
            wp += wdata[q] * imp[i, 0]
            wp += wdata[q + 1] * imp[i, 1]
            wp += wdata[q + 2] * imp[i, 2]
            u1[i, c] = ((vt[i, c] - ddelta[i] * n[i, c]) + a_free[i, c] * dt) + wp
        un = u1[i, 0] * n[i, 0] + u1[i, 1] * n[i, 1] + u1[i, 2] * n[i, 2]
        if abs((delta[i] - dt * un) - d_end[i]) > move_min:
            return False
    for i in range(k):
        if dt * _norm3(u1[i, 0], u1[i, 1], u1[i, 2]) > move_min:
            return False
    for r in range(omega.shape[0]):
        if omega[r, 0] != 0.0 or omega[r, 1] != 0.0 or omega[r, 2] != 0.0:
            turning = True
    if turning:
        for i in range(k):
            # (a side -1 reads the last row, as NumPy's omega[a] does)
            pa = _norm3(omega[a[i], 0], omega[a[i], 1], omega[a[i], 2]) * _norm3(
                ra[i, 0], ra[i, 1], ra[i, 2])
            pb = _norm3(omega[b[i], 0], omega[b[i], 1], omega[b[i], 2]) * _norm3(
                rb[i, 0], rb[i, 1], rb[i, 2])
            if dt * max(pa, pb) > move_min:
                return False
    return True


@njit
def _nan_max(m, x):
    """max(m, x) as NumPy's maximum reduction takes it: NaN once either is NaN."""
    if m != m or x != x:
        return math.nan
    return x if x > m else m


@njit
def _predicted_csr(indptr, indices, wdata, imp, vt, ddelta, n, delta, d_end, a_free, a, b,
                   ra, rb, omega, dt, move_min):
    """:func:`overlap_predicted` of every contact with W (3K, 3K) in CSR (``indptr``,
    ``indices``, ``wdata``): W P row by row, each row's terms summed from 0 in stored order
    as SciPy's CSR product, u1 = (u0 + a_free dt) + W P, and the three tests of
    :func:`_end_overlaps` and :func:`_still` with their reductions' NaN (a NaN maximum passes
    its test, as ``np.max(...) > bound`` does)."""
    k = n.shape[0]
    u1 = np.empty((k, 3))
    gap = 0.0
    for i in range(k):
        for c in range(3):
            row = 3 * i + c
            wp = 0.0
            for q in range(indptr[row], indptr[row + 1]):
                col = indices[q]
                wp += wdata[q] * imp[col // 3, col % 3]
            u1[i, c] = ((vt[i, c] - ddelta[i] * n[i, c]) + a_free[i, c] * dt) + wp
        un = u1[i, 0] * n[i, 0] + u1[i, 1] * n[i, 1] + u1[i, 2] * n[i, 2]
        gap = _nan_max(gap, abs((delta[i] - dt * un) - d_end[i])) if i else abs(
            (delta[i] - dt * un) - d_end[i])
    if k and gap > move_min:
        return False
    step = 0.0
    for i in range(k):
        x = dt * _norm3(u1[i, 0], u1[i, 1], u1[i, 2])
        step = _nan_max(step, x) if i else x
    if k and step > move_min:
        return False
    turning = False
    for r in range(omega.shape[0]):
        if omega[r, 0] != 0.0 or omega[r, 1] != 0.0 or omega[r, 2] != 0.0:
            turning = True
    if turning:
        nr = omega.shape[0]
        arm = 0.0
        for i in range(k):
            # (a side -1 reads the last row, as NumPy's omega[a] does)
            ia = a[i] if a[i] >= 0 else nr + a[i]
            ib = b[i] if b[i] >= 0 else nr + b[i]
            pa = _norm3(omega[ia, 0], omega[ia, 1], omega[ia, 2]) * _norm3(
                ra[i, 0], ra[i, 1], ra[i, 2])
            pb = _norm3(omega[ib, 0], omega[ib, 1], omega[ib, 2]) * _norm3(
                rb[i, 0], rb[i, 1], rb[i, 2])
            x = dt * _nan_max(pa, pb)
            arm = _nan_max(arm, x) if i else x
        if k and arm > move_min:
            return False
    return True


def candidates(res: Any, d_now: np.ndarray, exclude: np.ndarray | None) -> np.ndarray:
    """The contacts a correction looks at (indices): those that carried force, or that either
    side sees touching at the step end (``d_now`` (K,) m the host's overlaps, NaN where not
    found: the host's free flight differs from the exact one by up to a dt^2 per step, so a
    contact the integration saw still open may be closed in the host, or the reverse), but not
    ``exclude`` (K,) (e.g. contacts on articulated links) nor those of large groups (their
    implicit step solved against the host's update)."""
    ok = (res.loaded | (d_now > 0) | (res.delta > 0)) & np.isfinite(d_now)
    if exclude is not None:
        ok &= ~exclude
    if res.implicit is not None:
        ok &= ~res.implicit
    return np.flatnonzero(ok)


def position_impulse(gap: np.ndarray, W: Any, normal: np.ndarray, sel: np.ndarray,
                     wdiag: np.ndarray | None) -> np.ndarray:
    """mu (S,) N s of the contacts ``sel`` from N^T W N mu = ``gap`` (S,) m (block diagonal
    over the groups of contacts coupled through W: one small solve per group); ``wdiag`` (S,):
    n.W n of the selected contacts when W is block diagonal (a division each)."""
    if wdiag is not None:
        mu = np.zeros(len(sel))
        np.divide(gap, wdiag, out=mu, where=wdiag != 0)
        return mu
    wnn = normal_delassus(W, normal)
    if len(sel) < len(normal):
        wnn = wnn[sel][:, sel]
    return solve_blocks(wnn, gap, rcond=1e-10)


def displacement(kind: np.ndarray, mass: np.ndarray, inv_i_w: np.ndarray,
                 sides: tuple[tuple[np.ndarray, float, np.ndarray], ...], mu: np.ndarray,
                 normal: np.ndarray, block_diagonal: bool) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dth) (N, 3) (m, rad) of the free rows under the position impulses mu n:
    ``sides`` ((rows, sign, r), ...) of the selected contacts (side b with +1, side a with -1,
    r (S, 3) m), ``normal`` (S, 3); ``kind`` (N,), ``mass`` (N,) kg, ``inv_i_w`` (N, 3, 3)
    1/(kg m^2). With W block diagonal no row is a side of two contacts (one term per row)."""
    nr = len(kind)
    dx, dth = np.zeros((nr, 3)), np.zeros((nr, 3))
    put = assign if block_diagonal else np.add.at
    for side, sgn, r in sides:
        free = kind[side] == FREE
        if not free.any():  # e.g. the ground's side of N bodies on it
            continue
        f = sgn * mu[:, None] * normal
        if not free.all():
            side, f, r = side[free], f[free], r[free]
        put(dx, side, f / mass[side][:, None])
        put(dth, side, np.einsum("kij,kj->ki", inv_i_w[side], cross_rows(r, f)))
    return dx, dth


def free_displacement(kind: np.ndarray, mass: np.ndarray, batch: ContactBatch, W: Any,
                      res: Any, d_now: np.ndarray, sel: np.ndarray, wdiag: np.ndarray | None,
                      inv_i_w: Callable[[], np.ndarray],
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The position correction of the free rows (module docstring) for the contacts ``sel``
    of the host step's ``batch`` (their :func:`candidates`): ``d_now`` (K,) m the host's
    overlaps now, ``res`` the integration's result (``res.delta`` the integrated ones), ``W``
    the step's Delassus operator, ``wdiag`` its normal diagonal when block diagonal (else
    None), ``inv_i_w()`` the rows' world-frame inverse inertia (N, 3, 3), asked for only when
    something moves. Returns (mu (S,) kg m, the position impulses; dx, dth (N, 3) m, rad),
    or None when every gap is within MOVE_MIN (contacts at rest: nothing to correct)."""
    whole = len(sel) == len(batch)  # every contact selected: no gathers

    def pick(x: np.ndarray) -> np.ndarray:
        return x if whole else x[sel]

    gap = pick(d_now) - pick(res.delta)
    if np.max(np.abs(gap)) <= MOVE_MIN:
        return None
    n = pick(batch.normal)
    mu = position_impulse(gap, W, batch.normal, sel, None if wdiag is None else pick(wdiag))
    # position impulse mu along n on b, -mu on a
    dx, dth = displacement(kind, mass, inv_i_w(),
                           ((pick(batch.b), 1.0, pick(batch.rb)),
                            (pick(batch.a), -1.0, pick(batch.ra))), mu, n, wdiag is not None)
    return mu, dx, dth
