"""The host-independent part of a host backend: one host step of the managed contacts.

A backend (``mbplugin.mujoco``) reads the rows' state from its host,
calls :meth:`ContactLoop.step`, applies the returned impulse-equivalent forces, steps the host
and asks :meth:`ContactLoop.correction` how far to move the free bodies. Everything in
between is generic and lives here (shared/DESIGN.md, "Integration, events, hosts"):

1. the contact model: the rows' shapes, materials and laws in a
   :class:`~mbplugin.contact.ContactModel`, exactly the managed shape pairs detected;
2. detection with a predictive margin dt (2 v_max + 0.1 omega_max) + |g| dt^2 + 1 um, and the
   store's onset/end/latch rules at the step start (:meth:`ContactStore.commit`);
3. the Delassus operator W = J M^-1 J^T of the contacts (:mod:`mbplugin.pipeline.delassus`:
   I/m - [r]x I^-1 [r]x for free rows; the host's Jacobians and mass matrix for articulated
   ones) and each contact's effective mass 1 / n.W n;
4. the contact-space integration over the host step (:func:`mbplugin.pipeline.substep.
   contact_space`: groups of coupled contacts, DOP853 / Radau, events located and booked by
   the store; groups too large for it by the implicit step of
   :mod:`mbplugin.pipeline.large_groups`) or, for a step with a contact on an articulated link,
   the host-consistent implicit step (:class:`mbplugin.pipeline.implicit.ImplicitStep`): begun
   before the host step with each contact's last impulse P_lin, solved by :meth:`after` from
   the host's end state, the difference applied through the host's response
   (:meth:`Host.respond`), with verification rounds;
5. the position correction of free rows after the host's semi-implicit step: the host's end
   overlap made equal to the integrated one by a position impulse along the normals through W
   (velocities kept), and the test that tells when the host's step is predictable and there
   is nothing to correct.

Steps 2 (after detection) to 4 are :class:`~mbplugin.hosts.step.HostStep`, which this class
extends and ``BulletContacts`` drives too (with its own detection and after-step policy); step
5 is :mod:`mbplugin.hosts.correction`; the numerical machinery is :mod:`mbplugin.pipeline`'s
(docs/architecture.md, "Hosts").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mbplugin.contact import BodyState, ContactBatch, ContactModel, as_pair_law
from mbplugin.errors import ParameterError
from mbplugin.hosts.arrays import lookup
from mbplugin.hosts.correction import (
    MOVE_MIN,
    candidates,
    free_displacement,
    overlap_predicted,
    predicted_overlaps,
)
from mbplugin.hosts.detection import PlaneSphereDetection, margin_of, plane_points, prune
from mbplugin.hosts.model import check_stateful, exclude_unmanaged, keep_managed
from mbplugin.hosts.options import as_friction, as_stick, check_options
from mbplugin.hosts.protocol import (
    ARTICULATED,
    STATIC,
    Host,
    RowShape,
)
from mbplugin.hosts.step import HostStep, StepInfo


class ContactLoop(HostStep):
    """The managed contacts of a host's rows, one host step at a time (module docstring).

    ``kind`` (N,) FREE / STATIC / ARTICULATED per row, ``mass`` (N,) kg (static rows: any),
    ``inv_inertia`` (N, 3, 3) body-frame inverse inertia of free rows (1/(kg m^2)),
    ``shapes`` the rows' :class:`RowShape` list, ``pairs`` (P, 2) the managed pairs as indices
    into ``shapes``, ``material`` the default ``{"E", "nu"}`` (or None), ``materials`` one spec
    or None per shape (wins over ``material``), ``pair_laws`` ``[(law, (row_a, row_b)), ...]``,
    ``names`` (N,) the rows' and ``shape_names`` the shapes' names for messages, ``host`` the
    host's name (the default friction mode). The options are those of the backends
    (``BulletContacts`` / ``MujocoContacts``: friction, stick, rtol, solver, articulated,
    verify, probe, large_groups)."""

    def __init__(self, kind: np.ndarray, mass: np.ndarray, inv_inertia: np.ndarray,
                 shapes: Sequence[RowShape], pairs: np.ndarray, *, law: Any,
                 material: Mapping[str, float] | None = None,
                 materials: Sequence[Mapping[str, float] | None] | None = None,
                 pair_laws: Sequence[tuple[Any, tuple[int, int]]] = (),
                 friction: Any = None, stick: Any = None, rtol: float = 1e-8,
                 solver: str = "compiled", articulated: str = "implicit", verify: int = 3,
                 probe: bool = True, large_groups: str = "implicit",
                 names: Sequence[str] | None = None,
                 shape_names: Sequence[str] | None = None, host: str = "host") -> None:
        check_options(rtol, solver, articulated, verify, large_groups)
        self.rtol, self.solver, self.articulated = float(rtol), solver, articulated
        self.verify, self.probe = int(verify), bool(probe)
        self.large_groups = large_groups
        self.friction_mode, self.friction = as_friction(
            friction, host, "the host's friction coefficient of each pair")
        self.stick = as_stick(stick)
        n = len(kind)
        self.kind = np.asarray(kind, dtype=np.int64)
        self.names = list(names) if names is not None else [f"row {i}" for i in range(n)]
        self.shape_names = (list(shape_names) if shape_names is not None
                            else [f"shape {i} of {self.names[s.row]}"
                                  for i, s in enumerate(shapes)])
        fixed = self.kind == STATIC
        self.mass = np.where(fixed, np.inf, np.asarray(mass, dtype=float))
        self.inv_inertia = np.where(fixed[:, None, None], 0.0, np.asarray(inv_inertia, float))
        self._mass1 = np.where(fixed, 1.0, self.mass)  # BodyState.mass (ignored where fixed)
        self._fixed = fixed
        self.shapes = list(shapes)
        self._build(pairs, law, material, materials, pair_laws)
        HostStep.__init__(self, self.kind, self.mass, self.inv_inertia, self.model, self.store,
                          friction_mode=self.friction_mode, friction=self.friction,
                          rtol=self.rtol, stick=self.stick, solver=self.solver,
                          large_groups=self.large_groups, verify=self.verify,
                          articulated=articulated)

    # -- building ---------------------------------------------------------------------------------
    def _build(self, pairs: np.ndarray, law: Any, material: Mapping[str, float] | None,
               materials: Sequence[Mapping[str, float] | None] | None,
               pair_laws: Sequence[tuple[Any, tuple[int, int]]]) -> None:
        n = len(self.kind)
        shapes = self.shapes
        model = ContactModel()
        mats: list[str | None] = []  # per shape
        specs: dict[tuple[tuple[str, float], ...], str] = {}
        for i in range(len(shapes)):
            spec = materials[i] if materials is not None else None
            spec = spec if spec is not None else material
            name = None
            if spec is not None:
                tag = tuple(sorted((str(k), float(v)) for k, v in dict(spec).items()))
                name = specs.get(tag)
                if name is None:
                    name = specs[tag] = f"m{len(specs)}"
                    model.add_material(name, **dict(spec))
            mats.append(name)
        for s, mat in zip(shapes, mats, strict=True):
            model.add_shape(s.shape, s.row, mat, s.pos, s.quat)
        model.set_default_law(law)
        for lw, (ra, rb) in pair_laws:
            model.set_pair_law(lw, bodies=(int(ra), int(rb)))
        laws = [as_pair_law(law)] + [as_pair_law(lw) for lw, _ in pair_laws]
        if any(pl.hertz_k for pl in laws):
            missing = [self.shape_names[i] for i, mat in enumerate(mats) if mat is None]
            if missing:
                raise ParameterError(
                    f"law {laws[0].law.name}: no 'k' given and {', '.join(missing[:3])} "
                    f"{'has' if len(missing) == 1 else 'have'} no material (E, nu) for "
                    "Hertz's stiffness; give 'k' or material= / materials=")
        store = model.make_store()
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        rows_of = np.array([s.row for s in shapes], dtype=np.int64)
        check_stateful(store, self.articulated, bool(np.any(self.kind == ARTICULATED)))
        managed = np.zeros((n, n), dtype=bool)
        ra, rb = rows_of[pairs[:, 0]], rows_of[pairs[:, 1]]
        managed[ra, rb] = managed[rb, ra] = True
        # shape pairs of managed row pairs that are not managed themselves: the batch is
        # filtered by shape pair (a code per unordered pair), else by row pair alone
        per_row = np.bincount(rows_of, minlength=n)
        lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
        codes = np.unique(lo * len(shapes) + hi)
        rpa, rpb = np.nonzero(np.triu(managed))
        self._codes = (None if len(codes) == int(np.sum(per_row[rpa] * per_row[rpb]))
                       else codes)
        exclude_unmanaged(model, managed)
        self.model, self.store, self.managed = model, store, managed
        #: every managed pair a plane and a sphere: detection in one compiled call
        self._plane_spheres = PlaneSphereDetection.of(model, pairs, self._fixed)
        self.any_art = bool(np.any(self.kind == ARTICULATED))

    # -- state ------------------------------------------------------------------------------------
    def body_state(self, pos: np.ndarray, quat: np.ndarray, vel: np.ndarray,
                   omega: np.ndarray) -> BodyState:
        """The rows' :class:`~mbplugin.contact.BodyState` from their centre-of-mass poses and
        velocities (world frame; quat [w, x, y, z] of the row frame)."""
        return BodyState(pos, quat, vel, omega, self._mass1, self.inv_inertia, self._fixed)

    def detect(self, bodies: BodyState, margin: float) -> ContactBatch:
        """The managed contacts at this state with ``delta > -margin``."""
        if self._plane_spheres is not None:  # (the same batch as below)
            return self._plane_spheres.detect(bodies, margin, self.world_inertia(bodies)[1])
        return keep_managed(self.model.detect(bodies, margin=margin), self.managed,
                            self._codes, self.model.n_shapes)

    def margin_of(self, bodies: BodyState, dt: float, g: np.ndarray) -> float:
        """The predictive margin (m) of a host step: dt (2 v_max + 0.1 omega_max) + |g| dt^2
        + 1 um (a contact that can close within the step is integrated from its start)."""
        return margin_of(bodies, dt, g)

    # -- one host step ----------------------------------------------------------------------------
    def step(self, host: Host, bodies: BodyState, t: float, dt: float,
             g: np.ndarray) -> tuple[StepInfo, ContactBatch, np.ndarray | None]:
        """Integrate the managed contacts over the host step [t, t + dt] from the rows' state
        ``bodies``. Returns the step's :class:`StepInfo`, its contacts and the
        impulse-equivalent force P / dt (K, 3) on body b of each (None: no contact). With a
        contact on an articulated row (``articulated="implicit"``) the force is the implicit
        step's first guess P_lin / dt and the step is solved by :meth:`after` once the host
        has stepped."""
        margin = self.margin_of(bodies, dt, g)
        batch = self.detect(bodies, margin)
        if self._plane_spheres is None:  # (spheres on planes: a few contacts, all kept)
            batch = prune(batch, bodies, self.kind, self.store, dt, g, static=True,
                          points=plane_points(self.model.arrays, batch.key))
        self.margin = 2.0 * margin
        return HostStep.step(self, host, batch, bodies, t, dt)

    # -- after the host step ----------------------------------------------------------------------
    def predictable(self, dt: float, omega: np.ndarray) -> bool:
        """True when the host's semi-implicit step of the last step's free contacts needs no
        position correction: with the impulse P and the free acceleration, a contact's end
        velocity is u1 = u0 + a_free dt + W P and its overlap delta0 - dt n.u1; when that
        equals the integrated overlap within MOVE_MIN for every contact that may be corrected,
        and neither the contact points (u1 dt) nor the lever arms (omega (N, 3) of the rows at
        the step start) move by more than MOVE_MIN, there is nothing to correct (contacts at
        rest). The host must also know that none of its own constraints pushed the bodies
        (else :meth:`predicted_overlaps` and :meth:`settled`)."""
        if self.pending is None:
            return True
        batch, W, res, a_free, _ = self.pending
        sel = None
        if self.any_art or res.implicit is not None:
            keep = (self.kind[batch.a] != ARTICULATED) & (self.kind[batch.b] != ARTICULATED)
            if res.implicit is not None:  # large groups: not corrected
                keep &= ~res.implicit
            sel = np.flatnonzero(keep)
            if not len(sel):
                return True
        return overlap_predicted(batch, W, res, a_free, omega, dt, sel)

    def predicted_overlaps(self, dt: float, omega: np.ndarray,
                           a_err: np.ndarray | None = None) -> np.ndarray | None:
        """The last step's contacts' overlaps (K,) m at the host's end state predicted without
        reading it (:func:`~mbplugin.hosts.correction.predicted_overlaps`: the free
        acceleration plus ``a_err`` (K, 3) m/s^2, as :meth:`predictable`), or None where the
        prediction is not exact (a contact point or lever arm moving by more than
        PREDICT_MAX, an articulated row or a large group in the step): then
        :meth:`end_overlaps`."""
        if self.pending is None:
            return None
        batch, W, res, a_free, _ = self.pending
        if self.any_art or res.implicit is not None:
            return None
        return predicted_overlaps(batch, W, res, a_free if a_err is None else a_free + a_err,
                                  omega, dt)

    def settled(self, now: np.ndarray) -> bool:
        """True when the host's end overlaps ``now`` (K,) m (:meth:`predicted_overlaps`) equal
        the integrated ones within MOVE_MIN: nothing to correct (measured on the managed box
        under a native box at rest: a tolerance of 1e-11 m made its overlap 1e-7 off the
        static one instead of 1.5e-8)."""
        assert self.pending is not None
        return bool(np.max(np.abs(now - self.pending[2].delta), initial=0.0) <= MOVE_MIN)

    def end_overlaps(self, bodies: BodyState) -> np.ndarray:
        """The last step's contacts' overlaps (K,) m at the host's end state ``bodies`` (NaN
        where a pair is beyond the step's margin): plane-sphere pairs in one compiled call
        (:class:`~mbplugin.hosts.detection.HostContacts`, the contact layer's kernels: the
        same bits as ``model.detect_pairs``), others by ``model.detect_pairs``."""
        assert self.pending is not None
        keys = self.pending[0].key
        k = len(keys)
        fast = self._reads.read(bodies, keys, self.margin, np.zeros((k, 3)))
        if fast is not None:
            d, _, found = fast
            d[~found] = np.nan
            return d
        now = self.model.detect_pairs(bodies, keys, self.margin)
        pos = lookup(now.key, keys)
        d_now = np.full(k, np.nan)
        found = pos >= 0
        d_now[found] = now.delta[pos[found]]
        return d_now

    def correction(self, now: ContactBatch | np.ndarray,
                   bodies: BodyState) -> tuple[np.ndarray, np.ndarray]:
        """The position correction (dx, dth) (N, 3) (m, rad) of the free rows after the host
        step: the last step's contacts as the host has them now (``now``: their pairs detected
        at the host's end state ``bodies``, e.g. ``model.detect_pairs(bodies, keys)``, or their
        overlaps (K,) m from :meth:`end_overlaps`, NaN where not found) get the
        integrated end overlap by a position impulse mu n on b, -mu n on a, with
        N^T W N mu = delta_host - delta_integrated over the contacts that carried force or
        touch at either end (articulated ones excluded: the implicit step already solved them
        against the host's update). Velocities are kept."""
        nr = len(self.kind)
        dx, dth = np.zeros((nr, 3)), np.zeros((nr, 3))
        if self.pending is None:
            return dx, dth
        batch, W, res, _, wdiag = self.pending
        if isinstance(now, np.ndarray):  # the overlaps of :meth:`end_overlaps`
            d_now = now
        else:
            pos = lookup(now.key, batch.key)
            d_now = np.full(len(batch), np.nan)
            found = pos >= 0
            d_now[found] = now.delta[pos[found]]
        art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
        sel = candidates(res, d_now, art)
        if not len(sel):
            return dx, dth
        out = free_displacement(self.kind, self.mass, batch, W, res, d_now, sel, wdiag,
                                lambda: self._world_inertia(bodies)[1][:-1])
        return (dx, dth) if out is None else (out[1], out[2])
