"""``MujocoContacts``: any law of the catalogue inside an existing MuJoCo model.

The user names what the backend manages: geoms or bodies (every pair MuJoCo collides them
in), or pairs of them. For exactly those geom pairs MuJoCo's own contact response is switched
off (:mod:`mbplugin.mujoco.native`: the geoms' contype/conaffinity bits, in place); every other
pair keeps MuJoCo's native contact. ``contacts.step()`` replaces ``mujoco.mj_step(model, data)``:

1. ``mj_step1``: MuJoCo's position and velocity stages at the current state (collision without
   the managed pairs);
2. the rows' state (:mod:`mbplugin.mujoco.host`) to the generic contact loop
   (:class:`mbplugin.hosts.ContactLoop`): detection with a predictive margin, the managed
   contacts integrated in contact space over the host step (the law's c_r does not depend on
   MuJoCo's step), or the implicit step for contacts on articulated links;
3. the impulse-equivalent forces P / dt added to ``xfrc_applied``; ``mj_step2`` (actuation,
   acceleration, MuJoCo's constraints, integration); the user's ``xfrc_applied`` restored;
4. free bodies moved along the contact normals so that their overlap is the integrated one
   (MuJoCo's semi-implicit Euler step places a body that bounced inside the step as if it had
   bounced at the step's start), and moved onto the exact parabola after a free-flight step.

Example::

    contacts = MujocoContacts(model, data, manage=["floor"],
                              law={"name": "hunt_crossley", "cr": 0.8},
                              material={"E": 2e11, "nu": 0.3})
    for _ in range(n):
        contacts.step()          # instead of mujoco.mj_step(model, data)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.hosts import FREE, STATIC, ContactLoop, StepInfo
from mbplugin.mujoco import kernels as _k
from mbplugin.mujoco.checks import check_initial_overlaps, watch_overlaps
from mbplugin.mujoco.host import MujocoHost, row_kinds
from mbplugin.mujoco.items import Items, Ref, body, check_hertz, geom
from mbplugin.mujoco.lean import LeanSpheres
from mbplugin.mujoco.lean_tree import LeanTree
from mbplugin.mujoco.lean_tree import prepare as prepare_tree
from mbplugin.mujoco.native import constraint_error

__all__ = ["MujocoContacts", "MujocoStepInfo", "Ref", "body", "geom"]

#: per model (weakly held), how many unreleased :class:`MujocoContacts` have taken pairs from
#: MuJoCo's response: named in the error of one more that finds none left
_TAKEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class MujocoStepInfo(StepInfo):
    """:class:`~mbplugin.hosts.StepInfo` with MuJoCo's ids: ``bodies`` (K, 2) and ``geoms``
    (K, 2) of sides a and b of each contact."""

    bodies: np.ndarray | None = None
    geoms: np.ndarray | None = None


class MujocoContacts:
    """Compliant contact laws for chosen geom pairs of a MuJoCo model (module docstring).

    ``model``, ``data``  the user's ``mujoco.MjModel`` and ``mujoco.MjData`` (the model's
                 contype/conaffinity arrays are changed in place; :meth:`release` restores
                 them)
    ``manage``   items: a body (name or id, or ``body(x)``: every pair MuJoCo collides its
                 geoms in), a geom (``geom(name or id)``, or a name that is a geom's and no
                 body's), or a pair ``(x, y)`` of such items. Pairs MuJoCo itself never
                 collides (visual geoms, a body and its parent, ``<exclude>``) are not managed
    ``law``      the default law (a Law, a registry name, or ``{"name": ..., params}``; without
                 ``k`` Hertz's stiffness from the materials)
    ``material`` default material ``{"E": Pa, "nu": -}`` of every geom (None: laws need ``k``)
    ``materials`` per body or geom item: ``{"E": ..., "nu": ...}`` (a geom's wins)
    ``pair_laws`` ``[(law, (x, y)), ...]`` per pair of bodies (wins over ``law``)
    ``friction`` None or ``"mujoco"`` (the default): regularised Coulomb friction with each
                 contact's coefficient from MuJoCo, its two geoms' sliding ``friction[0]``
                 combined as MuJoCo combines them (the higher ``priority``'s, else the larger;
                 :meth:`MujocoHost.friction <mbplugin.mujoco.host.MujocoHost.friction>`);
                 ``0`` or ``"none"``: frictionless; a
                 :class:`~mbplugin.dynamics.friction.Friction` (or its parameters): that law
                 for every managed pair. ``friction_mode`` ("mujoco", "none" or "given") says
                 which
    ``stick``    a tangential spring instead of regularised friction (``Stick(k_t, mu, c_t)``)
    ``rtol``     relative tolerance of the contact-space integration
    ``solver``   ``"compiled"`` (default), ``"radau"`` or ``"scipy"`` (the reference); see
                 :func:`mbplugin.pipeline.substep.contact_space`
    ``articulated``  ``"implicit"`` (default: a step with a contact on an articulated body is
                 solved implicitly against MuJoCo's own update) or ``"substep"``
    ``verify``   verification rounds of the implicit step (0-5, default 3; see
                 :meth:`mbplugin.hosts.ContactLoop.after`)
    ``probe``    with ``articulated="substep"``: measure the free acceleration of
                 articulated contacts with a probe step
    ``large_groups``  groups of coupled contacts too large for the compiled sub-stepper (a
                 pile): ``"implicit"`` (the default; the implicit Gauss-Seidel step of
                 :mod:`mbplugin.pipeline.large_groups`) or ``"exact"`` (the SciPy path)
    ``correct_positions``  step 4 of the module docstring (free bodies)
    ``exact_flight``  free bodies of managed pairs fly on the exact parabola
    """

    def __init__(
        self,
        model: Any,
        data: Any,
        *,
        manage: Iterable[Any],
        law: Any,
        material: Mapping[str, float] | None = None,
        materials: Mapping[Any, Mapping[str, float]] | None = None,
        pair_laws: Iterable[tuple[Any, tuple[Any, Any]]] = (),
        friction: Any = None,
        stick: Any = None,
        rtol: float = 1e-8,
        solver: str = "compiled",
        articulated: str = "implicit",
        verify: int = 3,
        probe: bool = True,
        large_groups: str = "implicit",
        correct_positions: bool = True,
        exact_flight: bool = True,
    ) -> None:
        mj = _import_mujoco()
        if not isinstance(model, mj.MjModel):
            raise ParameterError(f"model = {type(model).__name__}: give a mujoco.MjModel")
        if not isinstance(data, mj.MjData):
            raise ParameterError(f"data = {type(data).__name__}: give the model's mujoco.MjData")
        if data.qpos.shape != (model.nq,) or data.xpos.shape != (model.nbody, 3):
            raise ParameterError("data: this MjData was not made for this model (its sizes "
                                 "differ); give mujoco.MjData(model)")
        allowed = {int(mj.mjtIntegrator.mjINT_EULER), int(mj.mjtIntegrator.mjINT_IMPLICIT),
                   int(mj.mjtIntegrator.mjINT_IMPLICITFAST)}
        if int(model.opt.integrator) not in allowed:
            raise ParameterError(
                "model.opt.integrator: MujocoContacts steps with mj_step1 / mj_step2, which "
                "MuJoCo provides for the Euler and implicit integrators (not RK4); set "
                "model.opt.integrator to mjINT_EULER, mjINT_IMPLICIT or mjINT_IMPLICITFAST")
        self.mj, self.mj_model, self.mj_data = mj, model, data
        self.correct_positions = bool(correct_positions)
        self.exact_flight = bool(exact_flight)
        self._items = names = Items(mj, model)
        items = list(manage)
        if not items:
            raise ParameterError("manage: name at least one body, geom or pair to manage")
        pairs = names.pairs(items)
        if not len(pairs):
            if _TAKEN.get(model):
                raise ParameterError(
                    f"manage: {items!r}: their pairs are already managed by another "
                    "MujocoContacts of this model (MuJoCo's response to them is off); call "
                    "its release() first")
            raise ParameterError(
                f"manage: {items!r} names no geom pair MuJoCo collides (contype/conaffinity, "
                "parent-child filter, <exclude>); nothing to manage")
        geoms = np.unique(pairs)
        bodies = np.unique(model.geom_bodyid[geoms])
        row_of_body = {int(b): i for i, b in enumerate(bodies.tolist())}
        kind = row_kinds(model, bodies)
        mass = np.array(model.body_mass[bodies], dtype=float)
        inertia = np.array(model.body_inertia[bodies], dtype=float)
        with np.errstate(divide="ignore"):
            inv = np.where(inertia > 0, 1.0 / inertia, 0.0)
        inv_inertia = np.einsum("ni,ij->nij", inv, np.eye(3))
        self.host = MujocoHost(model, data, bodies, kind, geoms, names.geom)
        shapes = self.host.shapes()
        shape_of = {int(g): i for i, g in enumerate(geoms.tolist())}
        spairs = np.array([[shape_of[int(a)], shape_of[int(b)]] for a, b in pairs.tolist()],
                          dtype=np.int64).reshape(-1, 2)
        per_shape = names.per_shape(materials, shape_of) if materials else None
        plaws = names.pair_laws(pair_laws, row_of_body)
        self.loop = ContactLoop(
            kind, mass, inv_inertia, shapes, spairs, law=law, material=material,
            materials=per_shape, pair_laws=plaws, friction=friction, stick=stick, rtol=rtol,
            solver=solver, articulated=articulated, verify=verify, probe=probe,
            large_groups=large_groups,
            names=[names.body(int(b)) for b in bodies.tolist()],
            shape_names=[names.geom(int(g)) for g in geoms.tolist()], host="mujoco")
        check_hertz(self.loop.model, spairs, lambda s: names.geom(int(geoms[s])))
        check_initial_overlaps(self.host, self.loop, lambda s: names.geom(int(geoms[s])))
        self.host.loop = self.loop
        #: the lean path of one kinematic tree (:mod:`.lean_tree`), or None
        self._tree = LeanTree.of(self.host)
        if self._tree is not None:  # W's block and the implicit step's rounds compiled
            self.host.articulated_delassus = self._tree.block
            self.host.verify_rounds = self._tree.rounds
        # a one-contact group moving along its normal only takes explicit steps (friction's
        # slope left out of its stiffness rate: GroupedContactSpace's normal_only)
        self.loop.integrator.normal_only = True
        #: "mujoco" (each pair's coefficient from MuJoCo's geoms), "none" or "given"; the
        #: friction law (with "mujoco" its regularisation; None: frictionless); the contact
        #: store (per-contact law state, onsets, separations); the contact layer's
        #: :class:`~mbplugin.contact.ContactModel` of the managed geoms
        self.friction_mode, self.friction = self.loop.friction_mode, self.loop.friction
        self.store, self.contact_model = self.loop.store, self.loop.model
        # everything is valid: switch MuJoCo's response off for the managed pairs
        self.host.disable_native(pairs)
        _TAKEN[model] = _TAKEN.get(model, 0) + 1
        self.pairs = pairs
        self.rows = bodies
        self.kind = kind
        self._movable = kind != STATIC
        self._no_gravity = int(mj.mjtDisableBit.mjDSBL_GRAVITY)
        self.geoms = geoms
        self.last: MujocoStepInfo | None = None
        self._released = False
        #: the lean path of the common step (:mod:`.lean`): True until known, then the
        #: :class:`~mbplugin.mujoco.lean.LeanSpheres` or False (none for this scene)
        self._lean: Any = True
        if self._tree is not None:  # (a run's one-time arrays and constants made here)
            prepare_tree(self._tree, self)

    # -- stepping ---------------------------------------------------------------------------------
    def step(self, control: Callable[[], None] | None = None) -> MujocoStepInfo:
        """One host step instead of ``mujoco.mj_step(model, data)`` (module docstring).
        ``control``: a function called after ``mj_step1`` (the state's kinematics and
        velocities are then current) to set ``ctrl`` / ``qfrc_applied`` / ``xfrc_applied`` for
        this step."""
        if self._released:
            raise ParameterError("MujocoContacts.step after release(): the pairs are MuJoCo's "
                                 "again; step with mujoco.mj_step")
        m, d = self.mj_model, self.mj_data
        loop, host = self.loop, self.host
        stepped = False
        if control is None and self._lean is not False:
            lean = self._lean
            if lean is True:
                lean = self._lean = LeanSpheres.of(self)
            if lean is not True and lean is not False:
                info, stepped = lean.step()
                if info is not None:
                    return info
        if control is None and not stepped and self._tree is not None:
            info, stepped = self._tree.step(self)
            if info is not None:
                return info
        # after mj_step1
        bodies = loop.body_state(*(host.state(d) if stepped else host.read_state()))
        if control is not None:
            control()
        dt = float(m.opt.timestep)
        g = self.gravity()
        info, batch, force = loop.step(host, bodies, float(d.time), dt, g)
        forced = np.zeros(len(self.rows), dtype=bool)
        if force is not None:
            host.apply(batch, force, forced)  # forced: the rows of non-zero forces
            host.settle_warmstart(np.flatnonzero(forced & self._movable))
        host.step()  # mj_step2, the user's xfrc_applied back
        loop.after(host, dt)  # the implicit step: solved from MuJoCo's end state
        forced |= loop.forced
        native = host.touching_native()
        # (a free row in MuJoCo's own constraints: predictable where its step's constraint
        # acceleration is the one the free acceleration took)
        # a free row in MuJoCo's own constraints: its end overlaps predicted where the step's
        # constraint acceleration is known (.native.constraint_error), else read
        err = constraint_error(host, batch) if loop.pending is not None else None
        now = None if err is None else loop.predicted_overlaps(dt, bodies.omega, err)
        if self.correct_positions and loop.pending is not None and not (
                loop.settled(now) if now is not None else (
                    loop.predictable(dt, bodies.omega) and not (native.any() and (
                        native[batch.a].any() or native[batch.b].any())))):
            end = host.end_poses(bodies)
            dx, dth = loop.correction(loop.end_overlaps(end) if now is None else now, end)
            forced[host.free_rows.move(dx, dth, end)] = True
        if self.exact_flight and len(host.free):
            host.free_rows.flight(~forced[host.free] & ~native[host.free], g, dt)
        self.last = self._info(loop.last if loop.last is not None else info)
        return self.last

    def _info(self, info: StepInfo) -> MujocoStepInfo:
        k = info.contacts
        sides = info.sides
        if k:
            geoms, bodies = _k.contact_ids(info.keys, self.loop.model.n_shapes, self.geoms,
                                           self.rows, sides)
        else:
            geoms, bodies = np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64)
        return watch_overlaps(self, MujocoStepInfo(k, info.stats, info.normal_force, info.keys,
                                                   sides, info.delta, info.slip, bodies, geoms))

    def gravity(self) -> np.ndarray:
        """MuJoCo's gravity (m/s^2; zero when disabled)."""
        opt = self.mj_model.opt
        if opt.disableflags & self._no_gravity:
            return np.zeros(3)
        return np.array(opt.gravity, dtype=float)

    # -- results ----------------------------------------------------------------------------------
    def bounces(self) -> np.ndarray:
        """Completed contacts with their c_r (:meth:`ContactStore.bounces`); ``a`` and ``b``
        are rows: MuJoCo body ``rows[a]``."""
        return self.loop.bounces()

    def release(self) -> None:
        """Give every managed pair back to MuJoCo's native response (the model's
        contype/conaffinity restored); step with ``mujoco.mj_step`` afterwards."""
        if not self._released:
            self.host.restore_native()
            self._released = True
            _TAKEN[self.mj_model] = _TAKEN.get(self.mj_model, 1) - 1

    @property
    def free_rows(self) -> np.ndarray:
        """The rows that are free bodies."""
        return np.flatnonzero(self.kind == FREE)


def _import_mujoco() -> Any:
    """The ``mujoco`` package, or an ImportError naming the extra that installs it."""
    try:
        import mujoco
    except ImportError as exc:
        raise ImportError("mbplugin.mujoco needs the mujoco package (pip install "
                          "'mbplugin[mujoco]', or pip install 'mujoco>=3.2')") from exc
    return mujoco
