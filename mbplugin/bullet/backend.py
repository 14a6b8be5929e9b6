"""``BulletContacts``: any law of the catalogue inside an existing PyBullet scene.

The user names what the backend manages: pairs of bodies or links, or every pair involving a
body (e.g. the ground). For exactly those pairs PyBullet's own contact response is switched off
(``setCollisionFilterPair``); every other pair keeps PyBullet's native behaviour. At every host
step the backend

1. reads the state of the links involved (poses, velocities) into a
   :class:`~mbplugin.contact.BodyState` and runs the contact layer's detection
   (:meth:`~mbplugin.contact.ContactModel.detect`) with a predictive margin;
2. integrates the managed contacts in contact space over the host step
   (:mod:`mbplugin.pipeline.substep`) with the Delassus operator of the links
   (:mod:`mbplugin.pipeline.delassus`), the store's laws and rules and regularised friction;
3. applies the impulse-equivalent force P / dt of every contact with ``applyExternalForce`` and
   calls ``stepSimulation``;
4. for free bodies, moves the bodies along the contact normals so that the contacts' overlap
   equals the integrated one (PyBullet's semi-implicit Euler step would otherwise place a body
   that bounced inside the step as if it had bounced at the step start); velocities are kept.
   The correction is computed from the next step's state read and kept as an offset of the
   host position until it matters (``defer_tol``, :meth:`BulletContacts.sync`).

Geometry comes from ``getCollisionShapeData`` (:mod:`mbplugin.bullet.geometry`), materials and
laws from the same :class:`~mbplugin.contact.ContactModel` tables as the standalone engine.

Example::

    contacts = BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.8},
                              material={"E": 2e11, "nu": 0.3})
    for _ in range(n):
        contacts.step()          # instead of p.stepSimulation()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.bullet import checks
from mbplugin.bullet.articulated import BulletArticulated
from mbplugin.bullet.build import build_layout, link_key, parse_item
from mbplugin.bullet.client import Client
from mbplugin.bullet.deferral import DEFER_TOL, DeferredCorrection
from mbplugin.bullet.detection import Detection
from mbplugin.bullet.filters import NativeFilters
from mbplugin.bullet.flight import FreeFlight
from mbplugin.bullet.free_fused import free_begin
from mbplugin.bullet.fused import after_lean, begin_lean, step_margin
from mbplugin.bullet.host import BulletHost
from mbplugin.bullet.rows import BulletRows
from mbplugin.bullet.watch import ClientWatch
from mbplugin.contact import BodyState
from mbplugin.errors import ParameterError
from mbplugin.hosts import step as _hstep
from mbplugin.hosts.options import as_friction, as_stick, check_options
from mbplugin.hosts.protocol import ARTICULATED, FREE
from mbplugin.hosts.step import HostStep
from mbplugin.pipeline.substep import SubstepStats


@dataclass
class StepInfo(_hstep.StepInfo):
    """What the last host step did (:class:`mbplugin.hosts.StepInfo`: managed contacts
    integrated, solver counters, forces; ``sides`` (K, 2) the rows of sides a and b) with
    PyBullet's ids: ``links`` (K, 2, 2) (body, link) of sides a and b."""

    links: np.ndarray | None = None


class BulletContacts:
    """Compliant contact laws for chosen pairs of a PyBullet client (see the module docstring).

    ``client``   PyBullet client id or ``bullet_client.BulletClient``
    ``manage``   items: a body id (every pair involving it), or a pair ``(x, y)`` where x and y
                 are body ids or ``(body, link)`` tuples
    ``law``      the default law (a Law, a registry name, or ``{"name": ..., params}``; without
                 ``k`` Hertz's stiffness from the materials)
    ``material`` default material ``{"E": Pa, "nu": -}`` of every link (None: laws need ``k``)
    ``materials`` per body or (body, link): ``{"E": ..., "nu": ...}``
    ``pair_laws`` ``[(law, (x, y)), ...]`` per pair of bodies / links (wins over ``law``)
    ``friction`` None or ``"pybullet"`` (the default): regularised Coulomb friction with each
                 pair's coefficient from PyBullet, the product of the two links'
                 ``lateral_friction`` as PyBullet combines them, bounded by 10; ``0`` or
                 ``"none"``: frictionless; a :class:`~mbplugin.dynamics.friction.Friction` (or
                 its parameters) for every managed pair. ``friction_mode`` ("pybullet", "none"
                 or "given") and ``friction`` (the law; "pybullet": its regularisation) say which
    ``flat_box`` static boxes wider than this (m) are ground half-spaces (see geometry module)
    ``rtol``     relative tolerance of the contact-space integration
    ``correct_positions``  step 4 of the module docstring (free bodies)
    ``correct_articulated``  the same correction for articulated links through the joint-space
                 mass matrix (experimental, off by default: with ``articulated="substep"``
                 it walks the A1 but its stance force swings 0.35-3.05 W; docs/bullet.md)
    ``stick``    a tangential spring instead of regularised friction (:class:`Stick`: ``k_t``,
                 ``mu``, ``c_t``; Dahl's model, no creep under a tangential load below mu F_N)
    ``exact_flight``  free bodies fly on the exact parabola between contacts (PyBullet's
                 semi-implicit step lags it by g dt t / 2; see
                 :class:`~mbplugin.bullet.flight.FreeFlight`)
    ``fallback`` ``"closest_points"``: links with a shape the contact layer cannot model
                 (cylinder, ellipsoid, heightfield) get their contacts from PyBullet's
                 ``getClosestPoints`` (see
                 :meth:`~mbplugin.bullet.detection.Detection.closest`) instead of an error
    ``fallback_radius``  effective radius (m) of those contacts for Hertz's k (default: the
                 radius PyBullet reports for the shape, a cylinder's radius)
    ``solver``   ``"compiled"`` (groups of coupled contacts in compiled code: DOP853 while a
                 group is not stiff, Radau otherwise), ``"radau"`` (the same, Radau only) or
                 ``"scipy"`` (SciPy's Radau on all contacts together, the reference); see
                 :func:`mbplugin.pipeline.substep.contact_space`. The implicit step of
                 articulated contacts solves in compiled code, with ``"scipy"`` in NumPy (its
                 reference, :class:`~mbplugin.pipeline.implicit.ImplicitStep`)
    ``probe``    with ``articulated="substep"``: the free acceleration of articulated contacts
                 by a probe host step (:meth:`~mbplugin.bullet.host.BulletHost.free_acceleration`)
    ``articulated``  how a host step with a contact on a link of an articulated body is
                 solved: ``"implicit"`` (the default; :mod:`mbplugin.pipeline.implicit`, the
                 impulse solved against the host's own semi-implicit update, for every contact
                 of that step) or ``"substep"`` (the exact sub-stepper, as for free bodies;
                 articulated links get no position correction)
    ``verify``   verification rounds of the implicit step (0-5, default 3): after the host was
                 put onto the solved state, re-read it and solve again from there while a
                 contact's overlap or velocity is off the solved one (see
                 :meth:`mbplugin.hosts.HostStep.after`; a round is taken only where the correction's
                 first-order error can matter); 0 trusts W's first-order response
    ``large_groups``  groups of coupled contacts too large for the compiled sub-stepper (more
                 than 256 states: 32 contacts, a pile): ``"implicit"`` (the default; the
                 implicit host step of :mod:`mbplugin.pipeline.large_groups`, Gauss-Seidel on a
                 sparse W) or ``"exact"`` (the step on the SciPy path: exact events, seconds
                 per host step for hundreds of contacts)
    ``defer_tol``  the deferred position correction (m; see
                 :class:`~mbplugin.bullet.deferral.DeferredCorrection`): a free
                 body's correction is computed from the next host step's state read and booked
                 as an offset of its host position; the host is reset once that offset exceeds
                 ``defer_tol`` or the body's motion over one host step (at rest), or it meets
                 a native or articulated contact or a constraint, and at :meth:`sync` /
                 :meth:`release`. 0: every correction is applied at the next step's start
    """

    def __init__(
        self,
        client: Any = 0,
        *,
        manage: Iterable[Any],
        law: Any,
        material: Mapping[str, float] | None = None,
        materials: Mapping[Any, Mapping[str, float]] | None = None,
        pair_laws: Iterable[tuple[Any, tuple[Any, Any]]] = (),
        friction: Any = None,
        flat_box: float = 20.0,
        rtol: float = 1e-8,
        correct_positions: bool = True,
        correct_articulated: bool = False,
        probe: bool = True,
        stick: Any = None,
        exact_flight: bool = True,
        fallback: str | None = None,
        fallback_radius: float | None = None,
        solver: str = "compiled",
        articulated: str = "implicit",
        verify: int = 3,
        defer_tol: float = DEFER_TOL,
        large_groups: str = "implicit",
    ) -> None:
        self.client = Client(client)
        checks.check_arguments(material=material, materials=materials, friction=friction,
                               stick=stick, flat_box=flat_box, manage=manage)
        check_options(rtol, solver, articulated, verify, large_groups)
        self.large_groups = large_groups
        checks.check_defer_fallback(defer_tol, fallback, fallback_radius)
        self.defer_tol = float(defer_tol)
        self.articulated = articulated
        self.verify = int(verify)
        self.solver = solver
        self.friction_mode, self.friction = as_friction(friction, "pybullet",
                                                        "PyBullet's lateral_friction of each pair")
        self.rtol = float(rtol)
        self.flat_box = float(flat_box)
        self.correct_positions = bool(correct_positions)
        self.probe = bool(probe)
        self.correct_articulated = bool(correct_articulated)
        self.exact_flight = bool(exact_flight)
        self.fallback = fallback
        self.fallback_radius = None if fallback_radius is None else float(fallback_radius)
        self.stick = as_stick(stick)
        self._law = law
        self._material = dict(material) if material is not None else None
        self._materials = {link_key(k): dict(v) for k, v in (materials or {}).items()}
        self._pair_laws = [(lw, (link_key(x), link_key(y))) for lw, (x, y) in pair_laws]
        self._manage: list[Any] = [parse_item(item) for item in manage]
        if not self._manage:
            raise ParameterError("manage: name at least one body or pair to manage")
        self.t = 0.0
        self.last: StepInfo | None = None
        self._filters = NativeFilters(self.client)
        self._build()
        checks.check_initial_overlaps(self)

    def _build(self) -> None:
        """Resolve and validate the managed items (:func:`~mbplugin.bullet.build.build_layout`),
        then switch PyBullet's response off for the pairs and assemble the step's objects: the
        rows' reader, the articulated bodies, the free flight, the detection, the host adapter,
        the generic step (:class:`~mbplugin.hosts.HostStep`, kept with its store and carries by
        a rebuild) and the deferred correction."""
        c = self.client
        c.check()
        lay = build_layout(c, self._manage, self._law, self._material, self._materials,
                           self._pair_laws, self.flat_box, self.fallback, self.fallback_radius,
                           self.articulated)
        # everything is valid: commit (PyBullet's response off for the managed pairs)
        self._filters.set(*lay.filters)
        carry = (self.rows, self._flight) if hasattr(self, "_flight") else None
        self.model = lay.model
        if not hasattr(self, "store"):  # a rebuild keeps the store
            self.store = lay.store
        self.rows, self._rows_arr, self.kind, self.managed = (lay.rows, lay.rows_arr, lay.kind,
                                                              lay.managed)
        #: the rows' reader: kinds, masses, inertias, friction, state
        self._read = read = BulletRows(c, lay.rows, lay.kind, self.friction_mode)
        self.mass, self.inertia, self.inv_inertia = read.mass, read.inertia, read.inv_inertia
        self._artic = sorted({b for (b, _), k in zip(lay.rows, lay.kind, strict=True)
                              if k == ARTICULATED})
        #: the articulated bodies' Jacobians, mass matrices and resets
        self._art = BulletArticulated(c, self._artic, lay.rows_arr, read.frame_pos)
        self._art.plain = not len(lay.fb_pairs)  # no getClosestPoints pair: resets deferred
        self._any_free = bool(np.any(lay.kind == FREE))
        #: the free rows' exact flight (lags) and resets
        self._flight = FreeFlight(c, lay.rows, lay.rows_arr, lay.kind, self.defer_tol, carry)
        self._detection = Detection(lay, c, self._flight, self.store)
        #: PyBullet behind the host protocol
        self._host = BulletHost(c, read, self._art, self._flight, lay.rows_arr, lay.kind,
                                self.probe)
        core = getattr(self, "core", None)
        if core is None:
            #: the generic host step (:class:`~mbplugin.hosts.HostStep`: W, the contact-space
            #: integration or the implicit step, their carries)
            core = self.core = HostStep(
                self.kind, self.mass, self.inv_inertia, self.model, self.store,
                friction_mode=self.friction_mode, friction=self.friction, rtol=self.rtol,
                stick=self.stick, solver=self.solver, large_groups=self.large_groups,
                verify=self.verify, articulated=self.articulated)
            core.make_info = self._info
            self.integrator = core.integrator
        else:  # a rebuild (add_body): the same store and carries
            core.rows(self.kind, self.mass, self.inv_inertia, self.model)
        core.redetect = self._detection.redetect
        core.plain_redetect = self._detection.plain
        core.world_inertia = read.world_inertia
        old_def = getattr(self, "_deferral", None)
        #: the deferred position correction of free rows
        self._deferral = DeferredCorrection(c, lay, self.mass, read, self._flight,
                                            self._detection, core, self._art,
                                            self.correct_positions, self.correct_articulated)
        if old_def is not None:
            self._deferral.pending, self._deferral.omega0 = old_def.pending, old_def.omega0
        self._watch = ClientWatch(c, lay.rows)  # bodies added, changeDynamics (watch.py)

    def refresh(self, body: int | None = None) -> None:
        """Read the client again, the contacts' state kept: bodies added (``add_body``: their
        pairs with managed bodies become managed), the links' mass, inertia and lateral
        friction after ``changeDynamics``; :meth:`step` finds either by itself (watch.py)."""
        self.sync()
        self._build()
        self.integrator.forget_warm()  # keys may have changed

    add_body = refresh

    def body_state(self) -> BodyState:
        """The rows' state (centre-of-mass poses and velocities) as a BodyState."""
        return self._read.state()

    @checks.host_guard
    def before_step(self, dt: float | None = None,
                    control: Callable[[], None] | None = None) -> StepInfo:
        """Integrate the managed contacts over the coming host step and apply their forces
        (``applyExternalForce``, consumed by the next ``stepSimulation``).

        ``control``: a function that sets the user's per-step inputs (``TORQUE_CONTROL``
        torques, external forces); it is called here (``articulated="substep"``: again after
        the probe step). Inputs that persist (position/velocity motors) need no callback."""
        if control is not None:
            control()
        if self._watch.poll():  # a body added, a link's dynamics changed
            self.refresh()
        c = self.client
        dt, g = c.time_step_gravity() if dt is None else (float(dt), c.gravity())
        # (no connection check: the client just answered getPhysicsEngineParameters; a
        # disconnected one raised there, host_guard's error)
        bodies = self._read.state(check=False)
        flight, deferral = self._flight, self._deferral
        if self._any_free:
            host = deferral.take(bodies, dt)
            if self.exact_flight:  # the last host step's g and dt (a change is for the next)
                flight.book(bodies, *flight.taken(g, dt))
            free = self.kind == FREE
            # pos[free] += lag[free], in place (no gathers)
            np.add(bodies.pos, flight.lag, out=bodies.pos, where=free[:, None])
        else:  # no free body (a robot on the ground): no lag, flight or deferred correction
            host = bodies.pos
        flight.due = self._any_free and self.exact_flight  # booked at the next read
        flight.last = (g, dt)
        margin = step_margin(bodies, dt, g)  # (margin_of's)
        batch = self._detection.prune(self._detection.detect(bodies, margin), bodies, dt, g)
        if self._any_free:
            flight.land(batch, bodies, host, dt)
            deferral.expect = ("pre", host, dt, bodies.quat.copy())
        deferral.margin = 2.0 * margin
        core, adapter = self.core, self._host
        core.margin = deferral.margin
        deferral.fix.coupled = adapter.start(g, control, batch, bodies)  # (a native column)
        args = (core, adapter, batch, bodies, self.t, dt)  # (fused.py, free_fused.py)
        info, batch, force = begin_lean(*args) or free_begin(*args) or core.step(*args[1:])
        flight.forced |= core.forced  # the bodies of large groups (moved as the host moves them)
        if force is not None and (not core.implicit or force.any()):
            # the implicit step's first guess P_lin / dt, or the integrated impulses' forces
            adapter.apply(batch, force)
        deferral.pending = core.pending
        deferral.omega0 = bodies.omega
        self.last = checks.watch_overlaps(self, info, batch, bodies)  # (once: a warning)
        return info

    @checks.host_guard
    def after_step(self, dt: float | None = None) -> None:
        """Book the host step: position correction of free bodies
        (:class:`~mbplugin.bullet.deferral.DeferredCorrection`), the implicit step of
        articulated contacts (solved from the host's end state), the time."""
        dt = self.client.time_step() if dt is None else float(dt)
        pend = self._deferral.begin_after()
        _ = after_lean(self.core, self._host, dt) or self._host.solve(self.core, dt)  # fused.py
        self._host.points = self._deferral.after(pend, dt)  # (native points it read)
        self.t += dt

    @checks.host_guard
    def sync(self) -> None:
        """Apply every pending position correction to PyBullet now.

        The backend defers the position correction of free bodies (see ``defer_tol`` and
        :class:`~mbplugin.bullet.deferral.DeferredCorrection`): between two steps, a body in or
        just out of a managed contact may sit up to ``defer_tol`` (or one host step's motion)
        away from its exact position in PyBullet. Call this before reading host positions
        mid-bounce (``getBasePosition...``, rendering, saving the state): it reads the bodies,
        books the last step's correction and flight and resets every free body with a lag
        (exact free flight included) to its exact position, velocities kept. Bodies at rest
        need no call. Stepping on without it is the same physics."""
        if hasattr(self, "_deferral"):  # built
            self._deferral.sync(self.exact_flight)

    def _info(self, k: int, stats: SubstepStats, normal_force: np.ndarray, keys: np.ndarray,
              sides: np.ndarray, delta: np.ndarray, slip: np.ndarray) -> StepInfo:
        """The step's :class:`StepInfo` with its sides' (body, link)."""
        return StepInfo(k, stats, normal_force, keys, sides, delta, slip,
                        self._rows_arr[sides])

    @checks.host_guard
    def step(self, control: Callable[[], None] | None = None) -> StepInfo:
        """One host step: :meth:`before_step`, ``stepSimulation``, :meth:`after_step`."""
        info = self.before_step(control=control)
        self.client("stepSimulation")
        self.after_step(self.client.last_dt)  # the client's time step, read by before_step
        return info

    def bounces(self) -> np.ndarray:
        """Completed contacts with their c_r (the store's :meth:`ContactStore.bounces`)."""
        return self.store.bounces()

    def release(self) -> None:
        """Give every managed pair back to PyBullet's native response (after :meth:`sync`: the
        bodies are left at their exact positions). Bodies whose collision group and mask the
        backend set to 0 (bodies without joints whose every pair it managed) get PyBullet's
        defaults back (group 1, mask -1; static bodies group 2, mask -1 ^ 2: PyBullet cannot
        report a group or mask the user set before)."""
        self.sync()
        self._filters.restore()
