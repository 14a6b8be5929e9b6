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
from itertools import repeat
from typing import Any

import numpy as np

from mbplugin.bullet import checks
from mbplugin.bullet.build import RowsBuild
from mbplugin.bullet.client import Client, drain, vectors
from mbplugin.bullet.deferral import DEFER_TOL, DeferredCorrection
from mbplugin.bullet.detection import Detection
from mbplugin.bullet.flight import FreeFlight
from mbplugin.bullet.host import BulletHost
from mbplugin.contact import (
    BodyState,
    ContactBatch,
)
from mbplugin.errors import ParameterError
from mbplugin.hosts.arrays import (
    nonzero_rows,
)
from mbplugin.hosts.detection import margin_of
from mbplugin.hosts.options import as_friction, as_stick, check_options
from mbplugin.hosts.protocol import ARTICULATED, FREE, STATIC
from mbplugin.hosts.step import HostStep
from mbplugin.pipeline.substep import SubstepStats


@dataclass
class StepInfo:
    """What the last host step did: managed contacts integrated, solver counters, forces."""

    contacts: int
    stats: SubstepStats
    normal_force: np.ndarray  # (K,) mean normal force over the step (N)
    keys: np.ndarray
    links: np.ndarray  # (K, 2, 2) (body, link) of sides a and b
    delta: np.ndarray | None = None  # (K,) overlap at the end of the step (m)
    slip: np.ndarray | None = None  # (K,) tangential speed at the end of the step (m/s)





class BulletContacts(RowsBuild, Detection, FreeFlight, DeferredCorrection):
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
                 ``lateral_friction`` (``getDynamicsInfo``, read when the backend is built) as
                 PyBullet combines them, bounded by 10; ``0`` or ``"none"``: frictionless (the
                 default before); a :class:`~mbplugin.dynamics.friction.Friction` (or its
                 parameters): that law for every managed pair. The attributes
                 ``friction_mode`` ("pybullet", "none" or "given") and ``friction`` (the law;
                 with "pybullet" its regularisation, the coefficients being per pair) say which
    ``flat_box`` static boxes wider than this (m) are ground half-spaces (see geometry module)
    ``rtol``     relative tolerance of the contact-space integration
    ``correct_positions``  step 4 of the module docstring (free bodies)
    ``correct_articulated``  the same correction for articulated links through the joint-space
                 mass matrix (experimental, off by default: with ``articulated="substep"``
                 it walks the A1 but its stance force swings 0.35-3.05 W; docs/bullet.md)
    ``stick``    a tangential spring instead of regularised friction (:class:`Stick`: ``k_t``,
                 ``mu``, ``c_t``; Dahl's model, no creep under a tangential load below mu F_N)
    ``exact_flight``  free bodies fly on the exact parabola between contacts (PyBullet's
                 semi-implicit step lags it by g dt t / 2; see :meth:`_flight`)
    ``fallback`` ``"closest_points"``: links with a shape the contact layer cannot model
                 (cylinder, ellipsoid, heightfield) get their contacts from PyBullet's
                 ``getClosestPoints`` (see :meth:`_closest`) instead of an error
    ``fallback_radius``  effective radius (m) of those contacts for Hertz's k (default: the
                 radius PyBullet reports for the shape, a cylinder's radius)
    ``solver``   ``"compiled"`` (groups of coupled contacts in compiled code: DOP853 while a
                 group is not stiff, Radau otherwise), ``"radau"`` (the same, Radau only) or
                 ``"scipy"`` (SciPy's Radau on all contacts together, the reference); see
                 :func:`mbplugin.pipeline.substep.contact_space`. The implicit step of
                 articulated contacts solves in compiled code, with ``"scipy"`` in NumPy (its
                 reference, :class:`~mbplugin.pipeline.implicit.ImplicitStep`)
    ``probe``    with ``articulated="substep"``: measure the free acceleration of contacts on
                 articulated links with a probe step of the host (see :meth:`_a_free`);
                 otherwise gravity only (the implicit step needs no probe)
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
    ``defer_tol``  the deferred position correction (m; see :meth:`_take_deferred`): a free
                 body's correction is computed from the next host step's state read and booked
                 as an offset of its host position; the host is reset once that offset exceeds
                 ``defer_tol`` or the body's motion over one host step (at rest), or the body
                 meets a native contact, an articulated contact or a constraint, and at
                 :meth:`sync` / :meth:`release`. 0: every correction is applied at the next
                 step's start (no offset kept, the post-step read still saved)
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
        if not (isinstance(defer_tol, float | int) and not isinstance(defer_tol, bool)
                and 0 <= defer_tol <= 0.1):
            raise ParameterError(f"defer_tol = {defer_tol!r} m is outside its allowed range "
                                 "[0, 0.1]")
        self.defer_tol = float(defer_tol)
        # the deferred correction: the last step's (batch, W, res, W's normal diagonal or None)
        # awaiting the next state read, rows seen touching a native contact in that step, and
        # the host poses the next read should show (("pre", x, dt, q): x + dt v_read and q
        # turned by dt omega_read, semi-implicit Euler over the step of length dt;
        # ("post", x, 0, q): x, q)
        self._deferred: tuple[Any, ...] | None = None
        self._native_rows = np.zeros(0, dtype=np.int64)
        self._expect: tuple[str, np.ndarray, float, np.ndarray] | None = None
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
        if fallback not in (None, "closest_points"):
            raise ParameterError(f"fallback = {fallback!r}: allowed None (a shape the contact "
                                 "layer cannot model is an error) or 'closest_points'")
        if fallback_radius is not None and not (
                isinstance(fallback_radius, float | int) and np.isfinite(fallback_radius)
                and fallback_radius > 0):
            raise ParameterError(f"fallback_radius = {fallback_radius!r} m is outside its "
                                 "allowed range (0, inf)")
        self.fallback = fallback
        self.fallback_radius = None if fallback_radius is None else float(fallback_radius)
        self.stick = as_stick(stick)
        self._law = law
        self._material = dict(material) if material is not None else None
        self._materials = {self._link_key(k): dict(v) for k, v in (materials or {}).items()}
        self._pair_laws = [(lw, (self._link_key(x), self._link_key(y))) for lw, (x, y) in pair_laws]
        self._manage: list[Any] = []
        for item in manage:
            self._manage.append(self._parse_item(item))
        if not self._manage:
            raise ParameterError("manage: name at least one body or pair to manage")
        self.t = 0.0
        self.last: StepInfo | None = None
        self._prev: tuple[np.ndarray, np.ndarray] | None = None
        self._build()
        #: the generic host step (:class:`~mbplugin.hosts.HostStep`: W, the contact-space
        #: integration or the implicit step, their carries) with PyBullet behind the host
        #: protocol (:class:`~mbplugin.bullet.host.BulletHost`)
        self.core = HostStep(self.kind, self.mass, self.inv_inertia, self.model, self.store,
                             friction_mode=self.friction_mode, friction=self.friction,
                             rtol=self.rtol, stick=self.stick, solver=self.solver,
                             large_groups=self.large_groups, verify=self.verify,
                             articulated=self.articulated)
        self.core.make_info = self._info
        self.core.redetect = self._redetect
        self.core.plain_redetect = lambda: not len(self._fb_pairs)
        self.core.world_inertia = self._world_inertia
        self._host = BulletHost(self)
        self.integrator = self.core.integrator
        checks.check_initial_overlaps(self)

    def add_body(self, body: int) -> None:
        """Register a body added to the client after the backend was built (its pairs with the
        managed bodies become managed)."""
        self.sync()
        self._build()
        self._expect = None
        self.integrator.forget_warm()  # keys may have changed
        self._native_rows = np.zeros(0, dtype=np.int64)

    # -- state --
    def body_state(self) -> BodyState:
        """The rows' state (centre-of-mass poses and velocities) as a BodyState."""
        return self._read.state()

    def _world_inertia(self, bodies: BodyState) -> tuple[np.ndarray, np.ndarray]:
        """``bodies.rotations_ext()`` and ``bodies.inv_inertia_world_ext`` of them (read-only),
        reused while the orientations are bitwise those of the last call (bodies that do not
        turn: e.g. the deferred correction and the Delassus operator of the next step read the
        same orientations; the same kernels on the same inputs give the same bits)."""
        hit = self._rot_cache
        q = bodies.quat
        if (hit is not None and hit[0].shape == q.shape and hit[3] is bodies.inv_inertia
                and np.array_equal(hit[0], q) and np.array_equal(hit[4], bodies.fixed)):
            return hit[1], hit[2]
        rot = bodies.rotations_ext()
        inv = bodies.inv_inertia_world_ext(rot)
        rot.flags.writeable = inv.flags.writeable = False
        self._rot_cache = (q.copy(), rot, inv, bodies.inv_inertia,
                           np.array(bodies.fixed, dtype=bool))
        return rot, inv

    # -- stepping --
    @checks.host_guard
    def before_step(self, dt: float | None = None,
                    control: Callable[[], None] | None = None) -> StepInfo:
        """Integrate the managed contacts over the coming host step and apply their forces
        (``applyExternalForce``, consumed by the next ``stepSimulation``).

        ``control``: a function that sets the user's per-step inputs (``TORQUE_CONTROL``
        torques, external forces); it is called here (with ``articulated="substep"`` also again
        after the probe step of articulated contacts). Inputs that persist (position/velocity
        motors) need no callback."""
        if control is not None:
            control()
        c = self.client
        dt = c.time_step() if dt is None else float(dt)
        g = c.gravity()
        bodies = self.body_state()
        if self._any_free:
            host = self._take_deferred(bodies, dt)
            if self.exact_flight:
                self._flight(bodies, g, dt)
            free = self.kind == FREE
            # pos[free] += lag[free], in place (no gathers)
            np.add(bodies.pos, self._lag, out=bodies.pos, where=free[:, None])
        else:  # no free body (a robot on the ground): no lag, flight or deferred correction
            host = bodies.pos
        self._flight_due = self._any_free and self.exact_flight  # booked at the next read
        margin = margin_of(bodies, dt, g)
        batch = self._prune(self._detect(bodies, margin), bodies, dt, g)
        if self._any_free:
            self._land(batch, bodies, host, dt)
            self._expect = ("pre", host, dt, bodies.quat.copy())
        self._margin = 2.0 * margin
        core, host = self.core, self._host
        core.margin = self._margin
        host.g, host.control = g, control
        info, batch, force = core.step(host, batch, bodies, self.t, dt)
        self._forced |= core.forced  # the bodies of large groups (moved as the host moves them)
        if force is not None and (not core.implicit or force.any()):
            # the implicit step's first guess P_lin / dt, or the integrated impulses' forces
            self._apply(batch, force)
        self._pending = core.pending
        self._omega0 = bodies.omega
        self.last = info
        return info

    def _info(self, k: int, stats: SubstepStats, normal_force: np.ndarray, keys: np.ndarray,
              sides: np.ndarray, delta: np.ndarray, slip: np.ndarray) -> StepInfo:
        """The step's :class:`StepInfo` with its sides' (body, link)."""
        return StepInfo(k, stats, normal_force, keys, self._rows_arr[sides], delta, slip)

    def _a_free(self, batch: ContactBatch, g: np.ndarray, bodies: BodyState,
                dt: float, control: Callable[[], None] | None) -> np.ndarray:
        """Relative acceleration of the contact points without the managed forces (m/s^2).

        Free bodies: gravity. Contacts on articulated links: measured by a probe step of the
        host (``saveState``, ``stepSimulation`` with the managed pairs' response off,
        ``restoreState``): it holds everything the host applies over the step (actuators,
        gravity, joint reactions, Coriolis terms, unmanaged contacts). PyBullet consumes
        ``TORQUE_CONTROL`` torques and external forces at every ``stepSimulation``: ``control``
        (the user's function that sets them) is called again after the probe. Used by
        ``articulated="substep"`` (the implicit step needs no probe)."""
        ga = np.where((self.kind[batch.a] != STATIC)[:, None], g, 0.0)
        gb = np.where((self.kind[batch.b] != STATIC)[:, None], g, 0.0)
        a = gb - ga
        art = (self.kind[batch.a] == ARTICULATED) | (self.kind[batch.b] == ARTICULATED)
        if art.any() and self.probe:
            c = self.client
            sid = c("saveState")
            try:
                c("stepSimulation")
                after = self.body_state()
            finally:
                c("restoreState", sid)
                c("removeState", sid)
            if control is not None:
                control()
            u0 = self._point_velocity(bodies, batch)
            u1 = self._point_velocity(after, batch)
            a[art] = (u1[art] - u0[art]) / dt
        return a

    @staticmethod
    def _point_velocity(bodies: BodyState, batch: ContactBatch) -> np.ndarray:
        """u = v_b(P) - v_a(P) with the batch's lever arms (K, 3)."""
        _, vel, om = bodies.kinematics_ext()
        va = vel[batch.a] + np.cross(om[batch.a], batch.ra)
        vb = vel[batch.b] + np.cross(om[batch.b], batch.rb)
        return vb - va

    def _apply(self, batch: ContactBatch, force: np.ndarray) -> None:
        c = self.client
        cid, pb = c.id, c.p
        nz = np.flatnonzero(nonzero_rows(force))
        lag_ext = np.vstack([self._lag, np.zeros((1, 3))])
        for side in (batch.a[nz], batch.b[nz]):
            self._forced[side[side >= 0]] = True
        for side, sgn in ((batch.b[nz], 1.0), (batch.a[nz], -1.0)):
            keep = self.kind[side] != STATIC
            idx = nz[keep]
            if not len(idx):
                continue
            forces = vectors(sgn * force[idx])
            # the host's body sits at exact - lag: the same lever arm about its centre
            points = vectors(batch.point[idx] - lag_ext[side[keep]])
            bl = self._rows_arr[side[keep]].T.tolist()
            # one PyBullet call per contact side, mapped in C (no Python frame per call)
            drain(map(pb.applyExternalForce, bl[0], bl[1], forces, points,
                       repeat(pb.WORLD_FRAME), repeat(cid)))

    @checks.host_guard
    def step(self, control: Callable[[], None] | None = None) -> StepInfo:
        """One host step: :meth:`before_step`, ``stepSimulation``, :meth:`after_step`."""
        info = self.before_step(control=control)
        self.client("stepSimulation")
        self.after_step()
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
