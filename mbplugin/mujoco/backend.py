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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.contact.kernels import decode_keys
from mbplugin.errors import ParameterError
from mbplugin.hosts import FREE, STATIC, ContactLoop, StepInfo
from mbplugin.mujoco.host import MujocoHost, row_kinds
from mbplugin.mujoco.native import native_pairs


@dataclass(frozen=True)
class Ref:
    """A MuJoCo body or geom named explicitly: :func:`body` / :func:`geom`."""

    kind: str  # "body" or "geom"
    ref: str | int

    def __post_init__(self) -> None:
        if self.kind not in ("body", "geom"):
            raise ParameterError(f"Ref kind = {self.kind!r}: allowed 'body', 'geom'")
        if not (isinstance(self.ref, str) or (isinstance(self.ref, int | np.integer)
                                              and not isinstance(self.ref, bool))):
            raise ParameterError(f"{self.kind}({self.ref!r}): give a name or an id")


def body(x: str | int) -> Ref:
    """A MuJoCo body by name or id, for ``manage=``, ``materials=``, ``pair_laws=``."""
    return Ref("body", x)


def geom(x: str | int) -> Ref:
    """A MuJoCo geom by name or id (unnamed geoms: their id), for ``manage=`` and
    ``materials=``."""
    return Ref("geom", x)


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
        self._names = _Names(mj, model)
        items = list(manage)
        if not items:
            raise ParameterError("manage: name at least one body, geom or pair to manage")
        pairs = self._pairs(items)
        if not len(pairs):
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
        self.host = MujocoHost(model, data, bodies, kind, geoms, self._names.geom)
        shapes = self.host.shapes()
        shape_of = {int(g): i for i, g in enumerate(geoms.tolist())}
        spairs = np.array([[shape_of[int(a)], shape_of[int(b)]] for a, b in pairs.tolist()],
                          dtype=np.int64).reshape(-1, 2)
        per_shape: list[Mapping[str, float] | None] | None = None
        if materials:
            per_shape = [None] * len(geoms)
            by_geom: dict[int, Mapping[str, float]] = {}
            for item, spec in materials.items():
                kind_of, gs = self._resolve(item, "materials")
                for g in gs.tolist():
                    if kind_of == "geom" or g not in by_geom:
                        by_geom[g] = spec
            for g, spec in by_geom.items():
                if g in shape_of:
                    per_shape[shape_of[g]] = spec
        plaws = []
        for lw, xy in pair_laws:
            if not (isinstance(xy, tuple) and len(xy) == 2):
                raise ParameterError(f"pair_laws: {xy!r} is not a pair (x, y) of bodies")
            bx = {int(model.geom_bodyid[g]) for g in self._resolve(xy[0], "pair_laws")[1]}
            by = {int(model.geom_bodyid[g]) for g in self._resolve(xy[1], "pair_laws")[1]}
            for x in bx:
                for y in by:
                    if x in row_of_body and y in row_of_body and x != y:
                        plaws.append((lw, (row_of_body[x], row_of_body[y])))
        self.loop = ContactLoop(
            kind, mass, inv_inertia, shapes, spairs, law=law, material=material,
            materials=per_shape, pair_laws=plaws, friction=friction, stick=stick, rtol=rtol,
            solver=solver, articulated=articulated, verify=verify, probe=probe,
            large_groups=large_groups,
            names=[self._names.body(int(b)) for b in bodies.tolist()],
            shape_names=[self._names.geom(int(g)) for g in geoms.tolist()], host="mujoco")
        self.host.loop = self.loop
        # everything is valid: switch MuJoCo's response off for the managed pairs
        self.host.disable_native(pairs)
        self.pairs = pairs
        self.rows = bodies
        self.kind = kind
        self.geoms = geoms
        self.last: MujocoStepInfo | None = None
        self._released = False

    # -- names and items --------------------------------------------------------------------------
    def _resolve(self, item: Any, where: str) -> tuple[str, np.ndarray]:
        """("body" | "geom", the geom ids) of a manage / materials / pair_laws item."""
        m, mj = self.mj_model, self.mj
        obj_body, obj_geom = mj.mjtObj.mjOBJ_BODY, mj.mjtObj.mjOBJ_GEOM

        def body_geoms(b: int) -> np.ndarray:
            return np.arange(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]) \
                if m.body_geomnum[b] else np.zeros(0, dtype=np.int64)

        def by_name(obj: Any, name: str) -> int:
            return int(mj.mj_name2id(m, obj, name))

        if isinstance(item, Ref):
            k, v = item.kind, item.ref
            n = m.nbody if k == "body" else m.ngeom
            if isinstance(v, str):
                i = by_name(obj_body if k == "body" else obj_geom, v)
                if i < 0:
                    raise ParameterError(f"{where}: the model has no {k} named {v!r}")
            else:
                i = int(v)
                if not 0 <= i < n:
                    raise ParameterError(f"{where}: {k} id {i} is outside 0 .. {n - 1}")
            return k, (body_geoms(i) if k == "body" else np.array([i], dtype=np.int64))
        if isinstance(item, str):
            b, g = by_name(obj_body, item), by_name(obj_geom, item)
            if b >= 0 and g >= 0 and int(m.geom_bodyid[g]) != b:
                raise ParameterError(
                    f"{where}: {item!r} names a body and a geom of another body; write "
                    f"body({item!r}) or geom({item!r}) (mbplugin.mujoco)")
            if b >= 0:
                return "body", body_geoms(b)
            if g >= 0:
                return "geom", np.array([g], dtype=np.int64)
            raise ParameterError(f"{where}: the model has no body or geom named {item!r}")
        if isinstance(item, int | np.integer) and not isinstance(item, bool):
            if not 0 <= int(item) < m.nbody:
                raise ParameterError(f"{where}: body id {int(item)} is outside 0 .. "
                                     f"{m.nbody - 1}")
            return "body", body_geoms(int(item))
        raise ParameterError(f"{where}: {item!r}: give a body (name or id, or body(x)), a "
                             "geom (geom(name or id), or a name no body has) or a pair (x, y) "
                             "of them")

    def _pairs(self, items: list[Any]) -> np.ndarray:
        """The managed geom pairs (P, 2), lower id first: the named ones MuJoCo collides."""
        m = self.mj_model
        found = []
        every = np.arange(m.ngeom)
        for item in items:
            if isinstance(item, tuple) and len(item) == 2:
                gx = self._resolve(item[0], "manage")[1]
                gy = self._resolve(item[1], "manage")[1]
            else:
                gx = self._resolve(item, "manage")[1]
                gy = every[~np.isin(every, gx)]
            if not len(gx) or not len(gy):
                continue
            a = np.repeat(gx, len(gy))
            b = np.tile(gy, len(gx))
            ok = native_pairs(m, a, b)
            found.append(np.stack([np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])], 1))
        if not found:
            return np.zeros((0, 2), dtype=np.int64)
        return np.unique(np.concatenate(found), axis=0)

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
        bodies = loop.body_state(*host.read_state())  # after mj_step1
        if control is not None:
            control()
        dt = float(m.opt.timestep)
        g = self.gravity()
        info, batch, force = loop.step(host, bodies, float(d.time), dt, g)
        forced = np.zeros(len(self.rows), dtype=bool)
        if force is not None:
            host.apply(batch, force)
            nz = np.any(force != 0, axis=1)
            forced[batch.a[nz]] = True
            forced[batch.b[nz]] = True
            host.settle_warmstart(np.flatnonzero(forced & (self.kind != STATIC)))
        host.step()  # mj_step2, the user's xfrc_applied back
        loop.after(host, dt)  # the implicit step: solved from MuJoCo's end state
        forced |= loop.forced
        native = host.touching_native()
        if self.correct_positions and loop.pending is not None and not (
                loop.predictable(dt, bodies.omega)
                and not (native.any() and (native[batch.a].any() or native[batch.b].any()))):
            end = host.end_poses(bodies)
            now = loop.model.detect_pairs(end, batch.key, loop.margin)
            dx, dth = loop.correction(now, end)
            forced[host.free_rows.move(dx, dth, end)] = True
        if self.exact_flight and len(host.free):
            host.free_rows.flight(~forced[host.free] & ~native[host.free], g, dt)
        self.last = self._info(loop.last if loop.last is not None else info)
        return self.last

    def _info(self, info: StepInfo) -> MujocoStepInfo:
        k = info.contacts
        sides = info.sides
        geoms = np.zeros((k, 2), dtype=np.int64)
        if k:
            sa, sb, _ = decode_keys(info.keys, self.loop.model.n_shapes)
            geoms = np.stack([self.geoms[sa], self.geoms[sb]], axis=1)
        return MujocoStepInfo(k, info.stats, info.normal_force, info.keys, sides, info.delta,
                              info.slip, self.rows[sides] if k else np.zeros((0, 2), np.int64),
                              geoms)

    def gravity(self) -> np.ndarray:
        """MuJoCo's gravity (m/s^2; zero when disabled)."""
        m = self.mj_model
        if m.opt.disableflags & int(self.mj.mjtDisableBit.mjDSBL_GRAVITY):
            return np.zeros(3)
        return np.array(m.opt.gravity, dtype=float)

    # -- results ----------------------------------------------------------------------------------
    @property
    def friction_mode(self) -> str:
        """"mujoco" (each pair's coefficient from MuJoCo's geoms), "none" or "given"."""
        return self.loop.friction_mode

    @property
    def friction(self) -> Any:
        """The friction law (with "mujoco" its regularisation; None: frictionless)."""
        return self.loop.friction

    @property
    def store(self) -> Any:
        """The contact store (per-contact law state, onsets, separations)."""
        return self.loop.store

    @property
    def contact_model(self) -> Any:
        """The contact layer's :class:`~mbplugin.contact.ContactModel` of the managed geoms."""
        return self.loop.model

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

    @property
    def free_rows(self) -> np.ndarray:
        """The rows that are free bodies."""
        return np.flatnonzero(self.kind == FREE)


class _Names:
    """Names of MuJoCo bodies and geoms for messages."""

    def __init__(self, mj: Any, m: Any) -> None:
        self.mj, self.m = mj, m

    def body(self, b: int) -> str:
        name = self.mj.mj_id2name(self.m, self.mj.mjtObj.mjOBJ_BODY, b)
        return f"body {name!r}" if name else f"body {b}"

    def geom(self, g: int) -> str:
        name = self.mj.mj_id2name(self.m, self.mj.mjtObj.mjOBJ_GEOM, int(g))
        owner = self.body(int(self.m.geom_bodyid[g]))
        return f"geom {name!r} of {owner}" if name else f"geom {g} of {owner}"


def _import_mujoco() -> Any:
    """The ``mujoco`` package, or an ImportError naming the extra that installs it."""
    try:
        import mujoco
    except ImportError as exc:
        raise ImportError("mbplugin.mujoco needs the mujoco package (pip install "
                          "'mbplugin[mujoco]', or pip install 'mujoco>=3.2')") from exc
    return mujoco
