"""MuJoCo's own contact response off for exactly the managed geom pairs.

Which pairs MuJoCo collides (its collision driver, ``engine_collision_driver.c``): two geoms g1,
g2 on bodies b1, b2 are a candidate ("dynamic" pair) when

* their bitmasks match: ``contype1 & conaffinity2 || contype2 & conaffinity1``;
* the bodies pass ``filterBodyPair``: not welded to the same body, not both without degrees of
  freedom, and (unless ``mjDSBL_FILTERPARENT``) neither weld body the other's weld parent
  where both are not the world;
* the body pair is not in the model's ``<exclude>`` list.

Explicit ``<contact><pair>`` elements bypass all of that. :func:`native_pairs` gives the
dynamic pairs among a set of geoms; a managed pair is a pair the user named that MuJoCo would
collide (visual geoms with contype = conaffinity = 0, a body and its parent, excluded pairs
are never managed).

How the response is switched off: by the geoms' ``contype``/``conaffinity`` bits, changed in
place in the user's ``mjModel`` (:class:`NativeFilter`). Why this mechanism:

* it is exact per geom pair and costs nothing per step (MuJoCo does not even run its
  narrow phase on the managed pairs, and every other pair's contacts are the same, in the same
  order, as without the backend);
* it is per model: ``mjcb_contactfilter`` is one global callback per process (it would replace
  the bitmask test for every model, a Python callback per candidate pair); the ``<exclude>``
  list is per body pair and needs a recompiled model (new ``mjModel``/``mjData`` objects the
  user's script does not hold); marking the contacts' ``exclude`` field between
  ``mj_collision`` and ``mj_makeConstraint`` means re-running MuJoCo's position stage piece
  by piece (version dependent) or building every managed contact's constraint rows twice.

The bit assignment: a vertex cover of the managed pairs' graph (greedy, the geom with most
managed pairs first). A cover geom X all of whose collisions are managed gets
contype = conaffinity = 0. Any other cover geom X gets a bit k_X no geom uses:
contype_X = conaffinity_X = {k_X}, and k_X is added to the conaffinity of every geom (and flex)
MuJoCo collided X with whose pair is not managed. No geom but X has k_X in its contype, so the
bitmask test of every pair not involving a cover geom is unchanged, and of a pair (X, Y) it
passes exactly when (X, Y) collided before and is not managed. The bodies' aggregated bits
(``body_contype``/``body_conaffinity``, MuJoCo's first test of a body pair) get the new bits
added (never removed: the geom test decides). :meth:`NativeFilter.restore` puts every array
back. Limits: one free bit per cover geom with unmanaged collisions (31 bits in all, fewer the
model uses); an explicit ``<pair>`` among the managed pairs is an error (remove it from the
model or leave the pair to MuJoCo).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.mujoco import kernels as _k

#: bits usable as contype/conaffinity (bit 31 is the sign of MuJoCo's int)
N_BITS = 31


def _bitmask(ct: np.ndarray, ca: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """MuJoCo's bitmask test (``!filterBitmask``): geoms i, j (arrays) may collide."""
    return ((ct[i] & ca[j]) != 0) | ((ct[j] & ca[i]) != 0)


def body_pair_ok(m: Any, b1: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """MuJoCo's ``filterBodyPair`` (sleeping aside) and ``<exclude>`` list for body pairs:
    True where the bodies may collide."""
    import mujoco

    weld = m.body_weldid
    w1, w2 = weld[b1], weld[b2]
    ok = w1 != w2
    dof = m.body_dofnum
    ok &= ~((dof[w1] == 0) & (dof[w2] == 0))
    if not (m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)):
        p1 = weld[m.body_parentid[w1]]
        p2 = weld[m.body_parentid[w2]]
        ok &= ~((w1 != 0) & (w2 != 0) & ((w1 == p2) | (w2 == p1)))
    if m.nexclude:
        lo, hi = np.minimum(b1, b2), np.maximum(b1, b2)
        sig = (lo.astype(np.int64) << 16) + hi
        ok &= ~np.isin(sig, np.asarray(m.exclude_signature, dtype=np.int64))
    return ok


def native_pairs(m: Any, g1: np.ndarray, g2: np.ndarray) -> np.ndarray:
    """True where MuJoCo collides geoms ``g1[i]``, ``g2[i]`` as a dynamic pair (the module
    docstring's three tests)."""
    g1, g2 = np.asarray(g1, dtype=np.int64), np.asarray(g2, dtype=np.int64)
    ok = _bitmask(m.geom_contype, m.geom_conaffinity, g1, g2) & (g1 != g2)
    b = m.geom_bodyid
    return ok & body_pair_ok(m, b[g1], b[g2])


def explicit_pairs(m: Any) -> set[tuple[int, int]]:
    """The model's explicit ``<contact><pair>`` geom pairs (lower id first)."""
    return {(min(int(a), int(b)), max(int(a), int(b)))
            for a, b in zip(m.pair_geom1, m.pair_geom2, strict=True)}


class NativeFilter:
    """The managed geom pairs (P, 2) switched off in ``m`` in place (module docstring);
    :meth:`restore` gives them back."""

    def __init__(self, m: Any, pairs: np.ndarray, names: Any = None) -> None:
        self.m = m
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        name = names if names is not None else (lambda g: f"geom {g}")
        explicit = explicit_pairs(m)
        for a, b in pairs.tolist():
            if (min(a, b), max(a, b)) in explicit:
                raise ParameterError(
                    f"manage: {name(a)} and {name(b)} are an explicit <contact><pair> of the "
                    "model, which MuJoCo collides whatever the contype/conaffinity bits; remove "
                    "the <pair> element to manage the pair, or leave it to MuJoCo")
        self._saved = {k: np.array(getattr(m, k)) for k in (
            "geom_contype", "geom_conaffinity", "body_contype", "body_conaffinity",
            "flex_contype", "flex_conaffinity")}
        ct0, ca0 = self._saved["geom_contype"], self._saved["geom_conaffinity"]
        ng = len(ct0)
        adj: dict[int, set[int]] = {}
        for a, b in pairs.tolist():
            if a != b:
                adj.setdefault(a, set()).add(b)
                adj.setdefault(b, set()).add(a)
        # greedy vertex cover: geoms by decreasing number of managed pairs; a geom joins the
        # cover when one of its pairs is not covered yet (every pair is: the first of its
        # two geoms met joins)
        cover: list[int] = []
        taken: set[int] = set()
        for x in sorted(adj, key=lambda g: (-len(adj[g]), g)):
            if not adj[x] <= taken:
                cover.append(x)
                taken.add(x)
        used = 0
        for arr in (ct0, ca0, self._saved["flex_contype"], self._saved["flex_conaffinity"]):
            for v in np.asarray(arr).tolist():
                used |= int(v)
        free_bits = [k for k in range(N_BITS) if not used >> k & 1]
        ct, ca = ct0.astype(np.int64).copy(), ca0.astype(np.int64).copy()
        fct = self._saved["flex_contype"].astype(np.int64)
        fca = self._saved["flex_conaffinity"].astype(np.int64).copy()
        every = np.arange(ng)
        plan: list[tuple[int, np.ndarray, np.ndarray]] = []
        need = 0
        for x in cover:
            keep = _bitmask(ct0, ca0, np.full(ng, x), every) & (every != x)
            keep[list(adj[x])] = False
            fkeep = (((ct0[x] & fca) != 0) | ((fct & ca0[x]) != 0)) if len(fca) else \
                np.zeros(0, dtype=bool)
            if keep.any() or fkeep.any():
                need += 1
            plan.append((x, keep, fkeep))
        if need > len(free_bits):
            raise ParameterError(
                f"manage: switching MuJoCo's response off for these pairs needs {need} "
                f"contype/conaffinity bits no geom uses; the model leaves {len(free_bits)} of "
                f"{N_BITS} free. Manage fewer partners of the geoms with unmanaged collisions "
                "(e.g. every pair of the ground) or free bits in the model")
        # the cover geoms' own bits first (they replace the old ones), then the partners'
        bits = iter(free_bits)
        own = [(1 << next(bits)) if (keep.any() or fkeep.any()) else 0
               for _, keep, fkeep in plan]
        for (x, _, _), k in zip(plan, own, strict=True):
            ct[x] = ca[x] = k
        for (_, keep, fkeep), k in zip(plan, own, strict=True):
            ca[keep] |= k
            fca[fkeep] |= k
        # apply (everything checked): the geoms' bits, the bodies' aggregates (bits added)
        m.geom_contype[:] = ct
        m.geom_conaffinity[:] = ca
        if len(fca):
            m.flex_conaffinity[:] = fca
        bct = self._saved["body_contype"].astype(np.int64).copy()
        bca = self._saved["body_conaffinity"].astype(np.int64).copy()
        np.bitwise_or.at(bct, m.geom_bodyid, ct)
        np.bitwise_or.at(bca, m.geom_bodyid, ca)
        m.body_contype[:] = bct
        m.body_conaffinity[:] = bca
        self.pairs = pairs
        self.bits_used = need

    def restore(self) -> None:
        """Every changed array back to the model's own values (MuJoCo collides the pairs
        again)."""
        for k, v in self._saved.items():
            getattr(self.m, k)[:] = v


def constraint_error(host: Any, batch: Any) -> np.ndarray | None:
    """After ``mj_step2``: the contact points' relative acceleration (K, 3) m/s^2 by which
    MuJoCo's own constraint acceleration qacc - qacc_smooth in the step just taken (its solve
    with this step's managed forces) differs from the one ``host``'s free acceleration took
    (:meth:`MujocoHost._constrained_acceleration <mbplugin.mujoco.host.MujocoHost.
    _constrained_acceleration>`: with the last step's managed forces, on the free rows' dofs in
    a constraint island), the difference's :func:`.kernels.free_point_acceleration` at the
    contacts of ``batch``. None when the step's free acceleration took no constraint
    acceleration.

    Why: a free row in a native constraint was position-corrected at every host step (read,
    detection, solve: ~140x native MuJoCo's step on two stacked boxes) because the
    predictor's constraint force could not be vouched for. With this error the host's end
    state is known without reading it: MuJoCo's semi-implicit Euler step with the free
    acceleration plus this error (:meth:`mbplugin.hosts.loop.ContactLoop.predictable`,
    :meth:`~mbplugin.hosts.loop.ContactLoop.predicted_overlaps`)."""
    part = host.constraint_taken
    if part is None:
        return None
    d = host.d
    dofs, took = part
    err = np.zeros(host.m.nv)
    err[dofs] = (d.qacc[dofs] - d.qacc_smooth[dofs]) - took
    fr = host.free_rows
    return _k.free_point_acceleration(err, d.xmat, d.xpos, fr.fbody, host.free, fr.vadr,
                                      len(host.body), batch.a, batch.b, batch.point)
