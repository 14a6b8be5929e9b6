"""Compiled bookkeeping of :class:`mbplugin.pipeline.store.ContactStore` for a host step's
common case: the contacts of a commit are the store's rows in order, one law with a compiled
kernel and no ODE state or memory. The end-of-contact test of every row (the store's rule
:func:`mbplugin.pipeline.rules.ended` with the law's raw force by kernel id,
:func:`mbplugin.laws.kernels.force`) in one call; no formula is written here.

Compiled on the first commit that asks for it (``ContactStore.commit(..., compiled=True)``:
the host backends' steps), never by the standalone engine.
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit
from mbplugin.laws.kernels import force
from mbplugin.pipeline.rules import ended


@njit
def _ends_rows(kid, mode, d, v, coef, out):
    """out[i] = the rule :func:`ended` of row i at overlap ``d[i]`` (m), rate ``v[i]`` (m/s)
    with the raw force of kernel ``kid`` and its coefficient row ``coef[i]`` (only where the
    bodies recede, v <= 0: the rule is False elsewhere, whatever the force); returns whether
    any row ended."""
    zs = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    hit = False
    for i in range(d.shape[0]):
        e = False
        if v[i] <= 0.0:
            c = (coef[i, 0], coef[i, 1], coef[i, 2], coef[i, 3], coef[i, 4], coef[i, 5],
                 coef[i, 6], coef[i, 7], coef[i, 8], coef[i, 9], coef[i, 10], coef[i, 11])
            e = ended(mode, d[i], v[i], force(kid, d[i], v[i], c, zs))
        out[i] = e
        hit = hit or e
    return hit


def ends_rows(kid: int, mode: int, delta: np.ndarray, ddelta: np.ndarray,
              coef: np.ndarray) -> np.ndarray:
    """The rows (M,) bool that end at overlaps ``delta`` (M,) m and rates ``ddelta`` (M,) m/s
    with one law of kernel id ``kid`` and contact mode ``mode``, coefficient rows ``coef``
    (M, NC_MAX) (the store's rule :func:`mbplugin.pipeline.rules.ended`)."""
    out = np.empty(len(delta), dtype=np.bool_)
    c = np.ascontiguousarray
    _ends_rows(int(kid), int(mode), c(delta, dtype=float), c(ddelta, dtype=float),
               c(coef, dtype=float), out)
    return out


@njit
def same_rows(keys, bkeys, law, kid, mode, d, v, coef, out):
    """The test of a host step's common commit in one call
    (:meth:`mbplugin.pipeline.store.ContactStore.commit_rows`): -1 when the batch's keys
    ``bkeys`` (K,) are not the store's rows ``keys`` in order or a contact's law index
    ``law`` (K,) is not 0 (the store's one law); else :func:`_ends_rows` of every row into
    ``out`` (K,) and whether any ended (1) or none (0)."""
    n = keys.shape[0]
    if bkeys.shape[0] != n or law.shape[0] != n or d.shape[0] != n:
        return -1
    for i in range(n):
        if keys[i] != bkeys[i] or law[i] != 0:
            return -1
    return 1 if _ends_rows(kid, mode, d, v, coef, out) else 0


@njit
def superset_rows(keys, bkeys, law, d, where):
    """Whether a batch (keys ``bkeys`` (K,) strictly increasing, law indices ``law`` (K,) all
    0, overlaps ``d`` (K,) m) holds the store's rows ``keys`` (M,) in order and besides them
    only pairs that do not start a contact (:func:`mbplugin.pipeline.rules.starts`: d > 0):
    a host step whose detection also holds pairs within its margin but apart (a robot's
    swing foot). Then ``where`` (M,) is each row's contact index in the batch."""
    n, m = keys.shape[0], bkeys.shape[0]
    if m <= n or law.shape[0] != m or d.shape[0] != m:
        return False
    j = 0
    for i in range(m):
        if law[i] != 0 or (i > 0 and bkeys[i] <= bkeys[i - 1]):
            return False
        if j < n and bkeys[i] == keys[j]:
            where[j] = i
            j += 1
        elif d[i] > 0.0:  # an onset: the general commit books it
            return False
    return j == n


@njit
def quiet_rows(keys, bkeys, law, kid, mode, d, v, coef, out, where, d_rows, v_rows):
    """:meth:`mbplugin.pipeline.store.ContactStore.commit_rows`' tests in one call, for a
    caller that books a quiet commit itself: 0 where :func:`same_rows` finds the batch's
    keys ``bkeys`` (K,) the store's rows ``keys`` (M,) in order and no row ending (the
    overlaps ``d`` (K,) m, rates ``v`` (K,) m/s: :meth:`ContactStore.rows_booked
    <mbplugin.pipeline.store.ContactStore.rows_booked>`); 2 where instead
    :func:`superset_rows` finds them in the batch among pairs apart (each row's contact in
    ``where`` (M,), its overlap and rate in ``d_rows``, ``v_rows`` (M,)) and no row ending
    (:meth:`ContactStore.apart_booked
    <mbplugin.pipeline.store.ContactStore.apart_booked>`); else 1 (a row ends) or -1
    (neither case: the general commit). ``out`` (>= M,) the end flags' work array."""
    hit = same_rows(keys, bkeys, law, kid, mode, d, v, coef, out)
    if hit >= 0 or not superset_rows(keys, bkeys, law, d, where):
        return hit
    for j in range(keys.shape[0]):
        d_rows[j] = d[where[j]]
        v_rows[j] = v[where[j]]
    return 1 if _ends_rows(kid, mode, d_rows, v_rows, coef, out[:keys.shape[0]]) else 2
