"""ContactModel: shapes on bodies, materials, the pair law table, and detection into a batch.

The model is the immutable-in-use description (MuJoCo's "model"): which shapes hang on which
bodies, what they are made of and which force law acts between which pair. The bodies' state
changes every step and is passed to :meth:`ContactModel.detect`, which returns a
:class:`~mbplugin.pipeline.batch.ContactBatch` (arrays) for the :class:`~mbplugin.pipeline.store.
ContactStore` built by :meth:`ContactModel.make_store`.

Example::

    model = ContactModel()
    model.add_material("steel", E=207e9, nu=0.3, rho=7800)
    model.add_shape(Plane(), body=-1, material="steel")                 # ground
    model.add_shape(Sphere(0.01), body=0, material="steel")
    model.set_default_law({"name": "hunt_crossley", "cr": 0.8})         # k from Hertz
    store = model.make_store()
    batch = model.detect(bodies)                                         # BodyState

Pair law table. The law of a contact is, in order of priority: the law set for its two bodies
(:meth:`set_pair_law` with ``bodies=``), the law set for its two materials (``materials=``), the
default law. A law is given as a :class:`~mbplugin.laws.Law` instance (its ``k`` is used as is), or
as a name / ``{"name": ..., params}`` mapping; without ``k`` the stiffness is Hertz's
k = (4/3) E* sqrt(r_eff) of each contact (Hertz 1881; Corral et al. 2021, Eqs. 5.3-5.5), computed
from the two shapes' materials and the contact's effective radius.

Effective radius rule (``r_eff``; 1/r_eff = 1/R_a + 1/R_b, a plane has R = inf, a concave
surface R < 0, review Eq. 5.3):

* sphere: its radius; capsule: its radius on the caps; on the cylindrical part against a sphere of
  radius R the equivalent radius sqrt(R' R'') of the elliptic Hertz contact with
  R' = R r_c/(R + r_c), R'' = R (Johnson, *Contact Mechanics*, 1985, Sect. 4.2);
* plane, box face: flat (R = inf); box corners and edges: the box's ``radius`` if given, else flat
  for a sphere against them and undefined (NaN) for a box corner on a plane;
* spherical hole: -R_hole; cylindrical hole: R' from -R_hole and R'' = R_sphere combined as above;
* mesh: the local radius of curvature where the surface is smooth, else the mesh's ``radius``,
  else undefined (see :mod:`mbplugin.contact.mesh`);
* ellipsoid: sqrt(R1 R2) = a b c / h(n)^2 of its principal radii at the contact normal n
  (Johnson 1985, Sect. 4.2; :mod:`mbplugin.contact.ellipsoid`).

Stable keys: ``key = (shape_a * S + shape_b) * 2**20 + feature`` with S the number of shapes and
``feature`` 0 for pairs that touch at one place (sphere pairs, sphere-box, convex meshes), the end
(0, 1) for capsule-plane, 1 + the end (1, 2) for a capsule against a box or a mesh where an end
touches it (else fcl's one point, 0), the corner (0-7) for box-plane and the patch for non-convex
mesh-plane.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.contact import kernels as _k
from mbplugin.contact import narrow
from mbplugin.contact.bodies import BodyState, quat_to_matrix
from mbplugin.contact.broad import sphere_pairs
from mbplugin.contact.shapes import (
    Box,
    Capsule,
    CylindricalHole,
    Material,
    Plane,
    Sphere,
    SphericalHole,
)
from mbplugin.errors import ParameterError
from mbplugin.laws.base import Law
from mbplugin.laws.power import hertz_k
from mbplugin.laws.registry import make_law
from mbplugin.pipeline.batch import ContactBatch
from mbplugin.pipeline.store import ContactStore, PairLaw

SPHERE, CAPSULE, BOX, MESH, PLANE, SPHERE_HOLE, CYLINDER_HOLE = range(7)
_TYPE_NAMES = ("sphere", "capsule", "box", "mesh", "plane", "spherical hole", "cylindrical hole")
FEATURE_BITS = _k.FEATURE_BITS
_FEATURE_SPAN = _k.FEATURE_SPAN


def as_pair_law(law: Any) -> PairLaw:
    """A :class:`PairLaw` from a law instance, a registry name, a mapping or (name, params)."""
    if isinstance(law, PairLaw):
        return law
    if isinstance(law, Law):
        return PairLaw(law)
    if isinstance(law, str):
        name, params = law, {}
    elif isinstance(law, Mapping):
        params = dict(law)
        name = params.pop("name", None)
        if name is None:
            raise ParameterError("law mapping needs a 'name' entry, e.g. {'name': 'hertz'}")
    elif isinstance(law, tuple) and len(law) == 2 and isinstance(law[0], str):
        name, params = law[0], dict(law[1])
    else:
        raise ParameterError(
            f"a law must be a Law instance, a registry name or {{'name': ..., params}}, got {law!r}"
        )
    if params.get("k") is not None:
        return PairLaw(make_law(name, **params))
    params.pop("k", None)
    return PairLaw(make_law(name, k=1.0, **params), hertz_k=True)


@dataclass
class _Part:
    """Narrow-phase output of one pair type (shape ids, geometry, effective radius, feature)."""

    sa: np.ndarray
    sb: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    delta: np.ndarray
    r_eff: np.ndarray
    feature: np.ndarray


@dataclass
class _ShapeEntry:
    shape: Any
    kind: int
    body: int
    material: str | None
    pos: np.ndarray
    rot: np.ndarray
    skin: float = 0.0


class ContactModel:
    """Shapes attached to bodies, materials and pair laws; :meth:`detect` finds the contacts."""

    def __init__(self) -> None:
        self.materials: dict[str, Material] = {}
        self._shapes: list[_ShapeEntry] = []
        self._default: PairLaw | None = None
        self._mat_laws: dict[tuple[str, str], PairLaw] = {}
        self._body_laws: dict[tuple[int, int], PairLaw] = {}
        self._excluded: set[tuple[int, int]] = set()
        self._c: Any = None

    # -- building -----------------------------------------------------------------------------
    def add_material(
        self, name: str, E: float, nu: float, rho: float | None = None
    ) -> Material:
        """Define a material: Young's modulus ``E`` (Pa), Poisson ratio ``nu``, density ``rho``."""
        mat = Material(name, E, nu, rho)
        self.materials[name] = mat
        self._c = None
        return mat

    def _check_material(self, name: str | None) -> None:
        if name is not None and name not in self.materials:
            known = ", ".join(sorted(self.materials)) or "(none)"
            raise ParameterError(f"unknown material {name!r}; defined: {known}")

    def add_shape(
        self,
        shape: Any,
        body: int = -1,
        material: str | None = None,
        pos: Any = (0.0, 0.0, 0.0),
        quat: Any = (1.0, 0.0, 0.0, 0.0),
        skin: float = 0.0,
    ) -> int:
        """Attach ``shape`` to ``body`` (-1: static world) at the local pose ``pos`` (m) /
        ``quat`` [w, x, y, z] relative to the body's centre of mass; returns the shape id.

        ``skin`` (m, >= 0; Box and Mesh only): the shape is ``shape`` grown by a ball of this
        radius (its Minkowski sum: faces moved out by ``skin``, edges and corners rounded), as
        a host with a collision margin collides it (PyBullet: :mod:`mbplugin.bullet.geometry`).
        Every contact of the shape is its core's, its overlap deeper by ``skin`` along the same
        normal and its point moved by half of it: exact for the depth along the contact normal
        of two convex shapes (the support function of a sum is the sum of the support
        functions)."""
        from mbplugin.contact.cylinder import Cylinder
        from mbplugin.contact.ellipsoid import Ellipsoid
        from mbplugin.contact.mesh import Mesh

        kinds = {Sphere: SPHERE, Capsule: CAPSULE, Box: BOX, Mesh: MESH, Cylinder: MESH,
                 Ellipsoid: MESH, Plane: PLANE,
                 SphericalHole: SPHERE_HOLE, CylindricalHole: CYLINDER_HOLE}
        kind = kinds.get(type(shape))
        if kind is None:
            raise ParameterError(
                f"unknown shape {shape!r}; allowed: Sphere, Plane, Box, Capsule, Mesh, Cylinder, "
                "Ellipsoid, SphericalHole, CylindricalHole"
            )
        if isinstance(body, bool) or not isinstance(body, int | np.integer) or body < -1:
            raise ParameterError(f"body = {body!r} must be an integer >= -1 (-1 = static world)")
        self._check_material(material)
        skin = float(skin)
        if not (math.isfinite(skin) and skin >= 0.0) or (skin > 0.0 and kind not in (BOX, MESH)):
            raise ParameterError(
                f"shape skin = {skin!r} m is outside its allowed range: [0, inf) for a Box or a "
                "Mesh, 0 for other shapes")
        p = np.asarray(pos, dtype=float)
        q = np.asarray(quat, dtype=float)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ParameterError(f"shape pos = {pos!r} must be a finite 3-vector (m)")
        if q.shape != (4,) or not np.all(np.isfinite(q)) or np.linalg.norm(q) < 1e-12:
            raise ParameterError(f"shape quat = {quat!r} must be a finite non-zero [w, x, y, z]")
        self._shapes.append(
            _ShapeEntry(shape, kind, int(body), material, p, quat_to_matrix(q[None])[0], skin)
        )
        self._c = None
        return len(self._shapes) - 1

    def set_default_law(self, law: Any) -> None:
        """The law of every pair without an override (see :func:`as_pair_law`)."""
        self._default = as_pair_law(law)
        self._c = None

    def set_pair_law(
        self,
        law: Any,
        materials: tuple[str, str] | None = None,
        bodies: tuple[int, int] | None = None,
    ) -> None:
        """Override the law for a material pair or a body pair (the body pair wins)."""
        if (materials is None) == (bodies is None):
            raise ParameterError("set_pair_law: give exactly one of materials=(m1, m2) or "
                                 "bodies=(b1, b2)")
        entry = as_pair_law(law)
        if materials is not None:
            m1, m2 = materials
            for m in (m1, m2):
                if m not in self.materials:
                    self._check_material(m)
            self._mat_laws[tuple(sorted((m1, m2)))] = entry  # type: ignore[index]
        else:
            b1, b2 = (int(x) for x in bodies)  # type: ignore[union-attr]
            if min(b1, b2) < -1:
                raise ParameterError(f"bodies = {bodies} must be integers >= -1")
            self._body_laws[(min(b1, b2), max(b1, b2))] = entry
        self._c = None

    def exclude(self, b1: int, b2: int) -> None:
        """Never report contacts between bodies ``b1`` and ``b2`` (e.g. jointed neighbours)."""
        self._excluded.add((min(int(b1), int(b2)), max(int(b1), int(b2))))
        self._c = None

    def exclude_among(self, bodies: Iterable[int]) -> None:
        """Never report contacts between any two of ``bodies`` (e.g. a host's bodies whose
        mutual contacts another engine handles): :meth:`exclude` for every pair, kept as one
        group, so the broad phase can skip a search among them. Groups must be disjoint."""
        grp = {int(b) for b in bodies}
        taken = getattr(self, "_among", [])
        for other in taken:
            if grp & other:
                raise ParameterError(f"exclude_among: bodies {sorted(grp & other)[:3]} are "
                                     "already in another group (groups must be disjoint)")
        self._among = [*taken, frozenset(grp)]
        self._c = None

    @property
    def n_shapes(self) -> int:
        return len(self._shapes)

    def shape(self, i: int) -> Any:
        """The shape object with id ``i``."""
        return self._shapes[i].shape

    def hertz_radii(self) -> tuple[np.ndarray, np.ndarray]:
        """Per shape id, by the effective radius rule (module docstring): ``curved`` (S,) bool,
        a radius of its own wherever it touches (sphere, capsule, a box with ``radius``, a
        mesh that is not :attr:`~mbplugin.contact.Mesh.sharp`), and ``flat`` (S,) bool, a
        feature without one (plane, a box without ``radius``, a sharp mesh). A contact of two
        shapes neither of which is curved, both flat, has no effective radius for Hertz's
        stiffness (a box corner or a mesh's flat face on a plane)."""
        n = len(self._shapes)
        curved, flat = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        for i, e in enumerate(self._shapes):
            if e.kind in (SPHERE, CAPSULE) or (e.kind == BOX and e.shape.radius is not None) or (
                    e.kind == MESH and not e.shape.sharp):
                curved[i] = True
            elif e.kind in (PLANE, BOX, MESH):
                flat[i] = True
        return curved, flat

    # -- laws ---------------------------------------------------------------------------------
    @property
    def laws(self) -> list[PairLaw]:
        """The model's laws; a batch's ``law`` field indexes this list (0 = default)."""
        return list(self._compiled().laws)

    def make_store(self) -> ContactStore:
        """A :class:`ContactStore` with this model's laws."""
        return ContactStore(self.laws)

    # -- mass properties ----------------------------------------------------------------------
    def body_mass_properties(self, n_bodies: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mass (N,) kg, centre of mass (N, 3) m and inertia about it (N, 3, 3) kg m^2 per body,
        from the shapes attached to it and their materials' density (parallel axis theorem).

        Bodies without a massive shape get mass 0 (the caller must give those). The centre of
        mass is in the body frame; a body whose shapes were placed about its centre of mass gives
        (0, 0, 0).
        """
        mass = np.zeros(n_bodies)
        first = np.zeros((n_bodies, 3))
        second = np.zeros((n_bodies, 3, 3))
        for e in self._shapes:
            if e.body < 0:
                continue
            if e.body >= n_bodies:
                raise ParameterError(f"shape on body {e.body} but n_bodies = {n_bodies}")
            if e.kind in (PLANE, SPHERE_HOLE, CYLINDER_HOLE):
                continue
            rho = self.materials[e.material].rho if e.material else None
            if rho is None:
                raise ParameterError(
                    f"body {e.body}: a {_TYPE_NAMES[e.kind]} without a material density rho; "
                    "give the material's rho or the body's mass and inertia"
                )
            m, com, inertia = e.shape.mass_properties(rho)
            c = e.pos + e.rot @ com
            i_body = e.rot @ inertia @ e.rot.T
            # inertia about the body origin: I + m (|c|^2 E - c c^T)
            mass[e.body] += m
            first[e.body] += m * c
            second[e.body] += i_body + m * (c @ c * np.eye(3) - np.outer(c, c))
        with np.errstate(invalid="ignore", divide="ignore"):
            com_all = np.where(mass[:, None] > 0, first / mass[:, None], 0.0)
        shift = mass[:, None, None] * (
            np.einsum("ni,ni->n", com_all, com_all)[:, None, None] * np.eye(3)
            - np.einsum("ni,nj->nij", com_all, com_all)
        )
        return mass, com_all, second - shift

    # -- compilation --------------------------------------------------------------------------
    def _compiled(self) -> Any:
        if self._c is None:
            self._c = _Compiled(self)
        return self._c

    @property
    def arrays(self) -> Any:
        """The model's shape arrays (read-only use), rebuilt when the model changes.

        Stable fields, one row per shape id: ``kind`` (SPHERE, CAPSULE, BOX, MESH, PLANE,
        SPHERE_HOLE, CYLINDER_HOLE), ``body``, ``lpos`` (S, 3) and ``lrot`` (S, 3, 3) local pose,
        ``radius`` (spheres, capsules, holes), ``half_length`` (capsules), ``half`` (S, 3) (boxes),
        ``plane_n``/``plane_p`` (planes, local), ``user_radius``, ``bound`` (bounding radius,
        inf for unbounded shapes), ``mat`` (material index), ``max_body``, ``laws`` (PairLaw
        tuple). Used by engines that evaluate known pairs with their own compiled code.
        """
        return self._compiled()

    # -- detection ----------------------------------------------------------------------------
    def detect(self, bodies: BodyState, margin: float = 0.0) -> ContactBatch:
        """All contacts at the bodies' current state, as one :class:`ContactBatch`.

        Contacts with ``delta > -margin`` are reported (``margin`` >= 0, m; the default 0 reports
        touching pairs only; a positive margin also reports near pairs with a negative delta, the
        gap, which an engine can use to locate the instant of contact).

        Two stages: the broad phase (:meth:`candidate_keys`' pairs: bounding spheres, half-space
        tests) and the narrow phase on its candidate pairs, the same calls as
        :meth:`detect_pairs`.
        """
        _check_margin(margin)
        bodies.validate()
        c = self._compiled()
        nb = len(bodies)
        if c.max_body >= nb:
            raise ParameterError(
                f"a shape is attached to body {c.max_body} but the state has {nb} bodies"
            )
        geo, kin = self._world(c, bodies)
        self.broad_phase_calls += 1
        grown = margin + 2.0 * c.skin_max if c.skin_max else margin  # the cores' margin
        sa, sb = c.candidates(geo, grown)
        return self._finish(c, kin, bodies, c.narrow(geo, sa, sb, grown), margin, None)

    def candidate_keys(self, bodies: BodyState, margin: float = 0.0) -> np.ndarray:
        """The broad phase alone: one key (feature 0) per candidate shape pair whose bounds
        come within ``margin`` (m), sorted. With :meth:`detect_pairs` (``all_features=True``)
        it is :meth:`detect` in two steps; unlike the keys of a detection it also names the
        pairs that report no contact yet (python-fcl pairs report only overlaps)."""
        _check_margin(margin)
        bodies.validate()
        c = self._compiled()
        if c.max_body >= len(bodies):
            raise ParameterError(
                f"a shape is attached to body {c.max_body} but the state has {len(bodies)} bodies"
            )
        geo, _ = self._world(c, bodies)
        self.broad_phase_calls += 1
        sa, sb = c.candidates(geo, margin + 2.0 * c.skin_max if c.skin_max else margin)
        return np.unique(_k.encode_keys(sa, sb, np.zeros(len(sa), dtype=np.int64), c.n))

    #: How many times :meth:`detect` or :meth:`candidate_keys` ran the broad phase (a
    #: diagnostic counter for engines that promise to run it once per accepted step).
    broad_phase_calls: int = 0

    def detect_pairs(self, bodies: BodyState, keys: np.ndarray, margin: float = 0.0,
                     all_features: bool = False) -> ContactBatch:
        """The contacts of known pairs at the bodies' state, without the broad phase.

        ``keys``: contact keys (e.g. found once by :meth:`detect` with a margin, or a store's
        rows) of any pair type the narrow phase supports. Their shape pairs go through the same
        narrow-phase calls as in :meth:`detect`, so the fields are the same to the bit.
        Contacts with ``delta > -margin`` are reported: only those whose key is in ``keys``, or
        with ``all_features=True`` every contact of the keys' shape pairs (both ends of a
        capsule, every corner of a box, every patch of a non-convex mesh on a plane, also those
        not among ``keys``).
        """
        _check_margin(margin)
        c = self._compiled()
        keys = np.asarray(keys, dtype=np.int64)
        tag = keys.tobytes()
        plan = c.pair_plans.get(tag)
        if plan is None:
            uk = np.unique(keys)
            sa, sb, _ = _k.decode_keys(uk, self.n_shapes)
            if len(uk) and (int(sa.max()) >= c.n or int(sb.max()) >= c.n):
                raise ParameterError("detect_pairs: a key names a shape the model does not have")
            bad = ~c.canonical(sa, sb)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ParameterError(
                    f"detect_pairs: key {int(uk[i])} names shapes {int(sa[i])} "
                    f"({_TYPE_NAMES[c.kind[sa[i]]]}) and {int(sb[i])} "
                    f"({_TYPE_NAMES[c.kind[sb[i]]]}), not a pair detect reports (keys come "
                    "from detect or a store)")
            pair = np.unique(sa * max(c.n, 1) + sb)
            plan = (c.narrow_plan(pair // max(c.n, 1), pair % max(c.n, 1)), uk)
            if len(c.pair_plans) >= 16:
                c.pair_plans.clear()
            c.pair_plans[tag] = plan
        calls, uk = plan
        geo, kin = self._world(c, bodies)
        grown = margin + 2.0 * c.skin_max if c.skin_max else margin  # the cores' margin
        parts = [p for call in calls for p in call(geo, grown)]
        return self._finish(c, kin, bodies, parts, margin, None if all_features else uk)

    @property
    def nested_margins(self) -> bool:
        """True when the detection with a margin m1 equals the detection with any larger margin
        m2 filtered to ``delta > -m1``: every model (each contact is a fixed feature of its
        pair: a box or mesh corner, a smooth mesh region, a capsule end; none depends on the
        margin)."""
        return True

    def _world(self, c: Any, bodies: BodyState) -> tuple[_World, tuple[np.ndarray, ...]]:
        """World poses of every shape and the extended body kinematics of ``bodies``."""
        rot_ext = bodies.rotations_ext()
        pos_ext, vel_ext, om_ext = bodies.kinematics_ext()
        fixed_ext = np.concatenate([np.asarray(bodies.fixed, dtype=bool), [True]])
        n_s = len(c.body)
        R_w = np.empty((n_s, 3, 3))
        c_w = np.empty((n_s, 3))
        _k.shape_poses(c.body, c.lpos, c.lrot, np.ascontiguousarray(pos_ext),
                       np.ascontiguousarray(rot_ext), R_w, c_w)
        return _World(c, R_w, c_w, fixed_ext), (rot_ext, pos_ext, vel_ext, om_ext)

    def _finish(self, c: Any, kin: tuple[np.ndarray, ...], bodies: BodyState,
                parts: list[_Part], margin: float, keys: np.ndarray | None) -> ContactBatch:
        """Kinematics and laws of the narrow phase's parts: the batch of the contacts with
        delta > -margin (and, with ``keys`` (sorted), a key among them)."""
        parts = [p for p in parts if len(p.delta)]
        if not parts:
            return ContactBatch.empty()
        if len(parts) == 1:
            cat = {f: getattr(parts[0], f) for f in _Part.__dataclass_fields__}
        else:
            cat = {f: np.concatenate([getattr(p, f) for p in parts])
                   for f in _Part.__dataclass_fields__}
        if c.skin_max:
            # the shapes' skins (add_shape): deeper along the normal (from a to b), the point
            # midway between the grown surfaces
            ska, skb = c.skin[cat["sa"]], c.skin[cat["sb"]]
            cat["delta"] = cat["delta"] + (ska + skb)
            cat["point"] = cat["point"] + (0.5 * (ska - skb))[:, None] * cat["normal"]
        keep = cat["delta"] > -margin
        if keys is not None:
            key = _k.encode_keys(cat["sa"], cat["sb"], cat["feature"], c.n)
            if not (len(key) == len(keys) and (key == keys).all()):
                pos = np.minimum(np.searchsorted(keys, key), max(len(keys) - 1, 0))
                keep &= keys[pos] == key if len(keys) else np.zeros(len(key), dtype=bool)
            cat["key"] = key  # finish: the same keys
        if not keep.all():
            cat = {k: v[keep] for k, v in cat.items()}
        return c.finish(cat, bodies, *kin)


def _check_margin(margin: float) -> None:
    if not (math.isfinite(margin) and margin >= 0):
        raise ParameterError(f"margin = {margin:g} m is outside its allowed range [0, inf)")


@dataclass
class _World:
    c: Any
    R: np.ndarray
    center: np.ndarray
    fixed_ext: np.ndarray


class _Compiled:
    """Arrays derived from a model (rebuilt when the model changes)."""

    def __init__(self, model: ContactModel) -> None:
        from mbplugin.contact import mesh as meshmod

        shapes = model._shapes
        self.n = n = len(shapes)
        if n and n * n >= (1 << 62) // _FEATURE_SPAN:
            raise ParameterError(f"too many shapes ({n}) for 64-bit contact keys")
        self.kind = np.array([e.kind for e in shapes], dtype=np.int64)
        self.body = np.array([e.body for e in shapes], dtype=np.int64)
        self.max_body = int(self.body.max()) if n else -1
        self.lpos = np.array([e.pos for e in shapes]).reshape(n, 3)
        self.lrot = np.array([e.rot for e in shapes]).reshape(n, 3, 3)
        #: each shape's skin (m, ContactModel.add_shape) and the largest (0: none, no cost)
        self.skin = np.array([e.skin for e in shapes], dtype=float).reshape(n)
        self.skin_max = float(self.skin.max()) if n else 0.0
        self.pair_plans: dict[bytes, list] = {}  # detect_pairs: key set -> narrow-phase calls
        #: detect: the last candidate pairs (sa, sb) and their narrow-phase calls
        self.last_plan: tuple[np.ndarray, np.ndarray, list] | None = None
        #: near-plane tests: the allowed shapes of a plane, by plane, shape set and fixed bodies
        self.near_sets: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        #: world frames (p0, n) of planes, by plane and world pose
        self.plane_frames: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.identity_rot = bool(np.all(self.lrot == np.eye(3)))
        self.zero_pos = bool(np.all(self.lpos == 0.0))
        # scalar size parameters
        self.radius = np.full(n, np.nan)  # sphere, capsule, holes
        self.half_length = np.full(n, np.nan)  # capsule
        self.half = np.full((n, 3), np.nan)  # box
        self.user_radius = np.full(n, np.nan)  # box, mesh
        self.bound = np.full(n, np.inf)
        self.bound_center = np.zeros((n, 3))
        self.plane_n = np.zeros((n, 3))
        self.plane_p = np.zeros((n, 3))
        for i, e in enumerate(shapes):
            s = e.shape
            if e.kind in (SPHERE, CAPSULE, SPHERE_HOLE, CYLINDER_HOLE):
                self.radius[i] = s.radius
            if e.kind == CAPSULE:
                self.half_length[i] = s.half_length
            if e.kind == BOX:
                self.half[i] = s.half_extents
            if e.kind in (BOX, MESH) and s.radius is not None:
                self.user_radius[i] = s.radius
            if e.kind == PLANE:
                self.plane_n[i] = s.normal
                self.plane_p[i] = s.point
            if e.kind in (SPHERE, CAPSULE, BOX, MESH):
                self.bound[i] = s.bounding_radius
                if e.kind == MESH:
                    self.bound_center[i] = s.bounding_center
        #: shapes whose bounding sphere is not centred on the shape's origin (meshes)
        self.bound_offset = np.any(self.bound_center != 0.0, axis=1)
        self.mesh = meshmod.MeshSet([e.shape if e.kind == MESH else None for e in shapes])
        # materials
        names = sorted(model.materials)
        mat_index = {m: i for i, m in enumerate(names)}
        nm = len(names)
        self.mat = np.array(
            [mat_index[e.material] if e.material is not None else nm for e in shapes],
            dtype=np.int64,
        )
        #: every shape has the same material (or none): one material pair for every contact
        self.one_material = bool(n and np.all(self.mat == self.mat[0]))
        E = np.array([model.materials[m].E for m in names] + [np.nan])
        nu = np.array([model.materials[m].nu for m in names] + [np.nan])
        sig = (1.0 - nu**2) / E
        self.e_star = 1.0 / (sig[:, None] + sig[None, :])
        # laws
        if model._default is None:
            raise ParameterError(
                "no default law: call model.set_default_law(...) (e.g. {'name': 'hertz'})"
            )
        laws: list[PairLaw] = [model._default]
        self.mat_law = np.zeros((nm + 1, nm + 1), dtype=np.int64)
        for (m1, m2), entry in model._mat_laws.items():
            laws.append(entry)
            i1, i2 = mat_index[m1], mat_index[m2]
            self.mat_law[i1, i2] = self.mat_law[i2, i1] = len(laws) - 1
        codes, idx = [], []
        for (b1, b2), entry in model._body_laws.items():
            laws.append(entry)
            codes.append((b1 + 1) * (1 << 31) + (b2 + 1))
            idx.append(len(laws) - 1)
        order = np.argsort(np.array(codes, dtype=np.int64))
        self.body_law_code = np.array(codes, dtype=np.int64)[order]
        self.body_law_idx = np.array(idx, dtype=np.int64)[order]
        self.excluded = np.sort(
            np.array([(a + 1) * (1 << 31) + (b + 1) for a, b in model._excluded], dtype=np.int64)
        )
        # exclusion groups (exclude_among): per shape, the group of its body (-1: none)
        group_of = {b: g for g, grp in enumerate(getattr(model, "_among", [])) for b in grp}
        self.shape_group = np.array([group_of.get(int(b), -1) for b in self.body],
                                    dtype=np.int64)
        self.laws = tuple(laws)
        # shape groups
        self.ids = {k: np.flatnonzero(self.kind == k) for k in range(7)}
        self.bounded = np.flatnonzero(np.isin(self.kind, (SPHERE, CAPSULE, BOX, MESH)))
        gb = self.shape_group[self.bounded]
        self.bounded_one_group = bool(len(gb) and gb[0] >= 0 and np.all(gb == gb[0]))
        self._check_pairs()
        # mesh-mesh (fcl) needs convex meshes: check at the door, for the pairs that may meet
        # (not on one body, not excluded, not in one exclusion group)
        for i in self.ids[MESH]:
            if not shapes[i].shape.is_convex:
                others = (self.body != self.body[i]) & np.isin(self.kind, (CAPSULE, BOX, MESH))
                cand = np.flatnonzero(others)
                if len(cand):
                    lo = np.minimum(self.body[i], self.body[cand])
                    hi = np.maximum(self.body[i], self.body[cand])
                    code = (lo + 1) * (1 << 31) + (hi + 1)
                    others[cand[np.isin(code, self.excluded)]] = False
                    g = self.shape_group[i]
                    if g >= 0:
                        others &= self.shape_group != g
                if others.any():
                    j = int(np.flatnonzero(others)[0])
                    raise ParameterError(
                        f"shape {i} is a non-convex mesh and may touch shape {j} "
                        f"({_TYPE_NAMES[self.kind[j]]}) on another body: contact between a "
                        "mesh and a non-sphere needs convex meshes (python-fcl GJK/EPA); split it "
                        "into convex parts (mbplugin.contact.mesh.convex_parts) and add each as "
                        "a shape of the body"
                    )

    def __getstate__(self) -> dict[str, Any]:
        # the narrow-phase plans hold closures: a copy starts without them (rebuilt on use)
        state = self.__dict__.copy()
        state["pair_plans"] = {}
        state["last_plan"] = None
        state["plane_frames"] = {}
        state["near_sets"] = {}
        return state

    def _check_pairs(self) -> None:
        """Errors at the door: a law that needs Hertz k on shapes without materials."""
        mats_missing = self.mat == len(self.e_star) - 1
        if mats_missing.any() and any(e.hertz_k for e in self.laws):
            # only an error if such a shape can meet a law without k: check the default
            if self.laws[0].hertz_k:
                i = int(np.flatnonzero(mats_missing)[0])
                raise ParameterError(
                    f"shape {i} ({_TYPE_NAMES[self.kind[i]]}) has no material, but the default "
                    f"law {self.laws[0].law.name!r} was given without 'k' (Hertz k needs E and "
                    "nu of both shapes); add a material or give 'k'"
                )

    # -- pair enumeration ---------------------------------------------------------------------
    def _allowed(self, sa: np.ndarray, sb: np.ndarray, fixed_ext: np.ndarray) -> np.ndarray:
        ba, bb = self.body[sa], self.body[sb]
        ok = ba != bb
        ok &= ~(fixed_ext[ba] & fixed_ext[bb])
        ga = self.shape_group[sa]
        ok &= (ga < 0) | (ga != self.shape_group[sb])
        if len(self.excluded):
            lo, hi = np.minimum(ba, bb), np.maximum(ba, bb)
            code = (lo + 1) * (1 << 31) + (hi + 1)
            pos = np.searchsorted(self.excluded, code)
            pos = np.minimum(pos, len(self.excluded) - 1)
            ok &= self.excluded[pos] != code
        return ok

    def candidates(self, w: _World, margin: float) -> tuple[np.ndarray, np.ndarray]:
        """Broad phase: the candidate shape pairs (sa, sb) in the canonical order of the keys
        (bounded pairs from their bounding spheres, then each plane's near shapes, then every
        allowed hole-sphere pair)."""
        out_a: list[np.ndarray] = []
        out_b: list[np.ndarray] = []
        bi = self.bounded
        # every bounded shape in one exclusion group: no pair of them is allowed, no search
        if len(bi) > 1 and not self.bounded_one_group:
            centers = w.center[bi] + np.matmul(w.R[bi], self.bound_center[bi][:, :, None])[:, :, 0]
            i, j = sphere_pairs(centers, self.bound[bi], margin)
            sa, sb = bi[i], bi[j]
            ok = self._allowed(sa, sb, w.fixed_ext)
            sa, sb = sa[ok], sb[ok]
            ka, kb = self.kind[sa], self.kind[sb]
            # canonical order: the sphere is b; otherwise the lower type/id is a
            swap = (ka == SPHERE) & (kb != SPHERE)
            swap |= (ka != SPHERE) & (kb != SPHERE) & (ka > kb)
            out_a.append(np.where(swap, sb, sa))
            out_b.append(np.where(swap, sa, sb))
        for p in self.ids[PLANE]:
            for kind in (SPHERE, CAPSULE, BOX, MESH):
                ids = self.ids[kind]
                if len(ids):
                    ids = self._near_plane(w, p, ids, margin)
                    out_a.append(np.full(len(ids), p))
                    out_b.append(ids)
        sph = self.ids[SPHERE]
        for kind in (SPHERE_HOLE, CYLINDER_HOLE):
            for h in self.ids[kind]:
                if len(sph):
                    ha = np.full(len(sph), h)
                    ok = self._allowed(ha, sph, w.fixed_ext)
                    out_a.append(ha[ok])
                    out_b.append(sph[ok])
        if not out_a:
            z = np.zeros(0, dtype=np.int64)
            return z, z.copy()
        return (np.concatenate(out_a).astype(np.int64, copy=False),
                np.concatenate(out_b).astype(np.int64, copy=False))

    def canonical(self, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
        """(K,) bool: (sa, sb) is a shape pair in the order :meth:`candidates` reports it (a
        bounded pair with the sphere as b, else the lower type as a; a plane or a hole as a;
        holes only with spheres; of two shapes of one type the lower id as a)."""
        ka, kb = self.kind[sa], self.kind[sb]
        bounded_b = kb <= MESH
        ok = (ka <= MESH) & bounded_b & ((kb == SPHERE) | ((ka != SPHERE) & (ka <= kb)))
        ok |= (ka == PLANE) & bounded_b
        ok |= ((ka == SPHERE_HOLE) | (ka == CYLINDER_HOLE)) & (kb == SPHERE)
        return ok & ~((ka == kb) & (sa >= sb))  # two shapes of a type: the lower id is a

    def narrow(self, w: _World, sa: np.ndarray, sb: np.ndarray, margin: float) -> list[_Part]:
        """Narrow phase of the shape pairs (sa, sb) (canonical order, as :meth:`candidates`
        gives them or keys decode to): the calls of :meth:`narrow_plan`."""
        last = self.last_plan
        if (last is not None and len(last[0]) == len(sa) and (last[0] == sa).all()
                and (last[1] == sb).all()):
            plan = last[2]  # the same candidate pairs as the last call (bodies near rest)
        else:
            plan = self.narrow_plan(sa, sb)
            self.last_plan = (sa.copy(), sb.copy(), plan)
        parts: list[_Part] = []
        for call in plan:
            parts.extend(call(w, margin))
        return parts

    def narrow_plan(self, sa: np.ndarray, sb: np.ndarray) -> list[Any]:
        """The narrow-phase calls for the shape pairs (sa, sb), grouped by pair type: the one
        place that maps a pair type to its narrow-phase function, for
        :meth:`ContactModel.detect` and :meth:`ContactModel.detect_pairs` alike (which keeps
        the plan of a key set). Each call takes (world poses, margin) and returns parts."""
        plan: list[Any] = []
        if not len(sa):
            return plan

        def closed(fn: Any, a: np.ndarray, b: np.ndarray) -> Any:
            return lambda w, margin: [fn(w, a, b)]

        ka, kb = self.kind[sa], self.kind[sb]
        bounded = ka <= MESH
        if bounded.any():
            for k_a, k_b, fn in (
                (SPHERE, SPHERE, self._sphere_sphere),
                (CAPSULE, SPHERE, self._capsule_sphere),
                (BOX, SPHERE, self._box_sphere),
                (MESH, SPHERE, self._mesh_sphere),
            ):
                sel = bounded & (ka == k_a) & (kb == k_b)
                if sel.any():
                    plan.append(closed(fn, sa[sel], sb[sel]))
            other = bounded & (kb != SPHERE)  # sphere b with any bounded a is handled above
            sel = bounded & (ka == CAPSULE) & ((kb == BOX) | (kb == MESH))
            if sel.any():
                other &= ~sel
                plan.append(lambda w, margin, a=sa[sel], b=sb[sel]:
                            self._capsule_box(w, a, b, margin))
            if other.any():
                ga, gb = sa[other], sb[other]
                plan.append(lambda w, margin, ga=ga, gb=gb:
                            self.mesh.general_pairs(self, w, ga, gb, margin))
        on_plane = ka == PLANE
        if on_plane.any():
            for p in np.unique(sa[on_plane]):
                this = sa == p
                for kind, fn in ((SPHERE, self._plane_sphere), (CAPSULE, self._plane_capsule),
                                 (BOX, self._plane_box)):
                    sel = this & (kb == kind)
                    if sel.any():
                        plan.append(lambda w, margin, fn=fn, a=sa[sel], b=sb[sel], p=int(p):
                                    [fn(w, a, b, p)])
                sel = this & (kb == MESH)
                if sel.any():
                    mids = sb[sel]
                    plan.append(lambda w, margin, p=int(p), mids=mids:
                                self.mesh.plane_meshes(self, w, p, mids, margin))
        for kind, fn in ((SPHERE_HOLE, self._sphere_hole), (CYLINDER_HOLE, self._cylinder_hole)):
            hole = ka == kind
            if hole.any():
                for h in np.unique(sa[hole]):
                    sel = sa == h
                    plan.append(closed(fn, sa[sel], sb[sel]))
        return plan

    def _near_plane(self, w: _World, p: int, ids: np.ndarray, margin: float) -> np.ndarray:
        # the shapes allowed to touch the plane: a function of the fixed bodies only (kept
        # for the last pattern of each plane and shape set)
        tag = (p, ids[0] if len(ids) else -1, len(ids), w.fixed_ext.tobytes())
        hit = self.near_sets.get(tag)
        if hit is None:
            ok = self._allowed(np.full(len(ids), p), ids, w.fixed_ext)
            ids = ids[ok]
            # ids are sorted and unique: a contiguous run of shape ids is read as a slice
            run = (slice(int(ids[0]), int(ids[-1]) + 1)
                   if len(ids) and int(ids[-1]) - int(ids[0]) == len(ids) - 1 else ids)
            if len(self.near_sets) >= 16:
                self.near_sets.clear()
            hit = self.near_sets[tag] = (ids, run, bool(self.bound_offset[run].any()),
                                         self.bound[run])
        ids, run, offset, bound = hit
        ptag = ("near", p, w.R[p].tobytes(), w.center[p].tobytes())
        frame = self.plane_frames.get(ptag)
        if frame is None:  # the plane's normal and point, kept while its pose is the same
            if len(self.plane_frames) >= 16:
                self.plane_frames.clear()
            frame = self.plane_frames[ptag] = (w.R[p] @ self.plane_n[p],
                                               w.center[p] + w.R[p] @ self.plane_p[p])
        pn, p0 = frame
        if offset:
            centers = (w.center[run]
                       + np.matmul(w.R[run], self.bound_center[run][:, :, None])[:, :, 0])
        else:  # bounds centred on the shapes (all but meshes): R 0 = 0 exactly
            centers = w.center[run]
        s = (centers - p0) @ pn
        return ids[s < bound + margin]

    def _plane_frame(self, w: _World, sa: np.ndarray, plane: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """World surface point and outward normal (K, 3) of the planes ``sa`` (K,);
        ``plane``: every entry of ``sa`` is that plane (the narrow-phase plan knows it)."""
        if plane is not None and len(sa) > 1:
            # one plane (the ground): its frame computed once (the same bits as row by row) and
            # its rows kept while the plane's pose is bitwise the same (inputs only: never
            # written by the narrow phase)
            tag = (plane, len(sa), w.R[plane].tobytes(), w.center[plane].tobytes())
            hit = self.plane_frames.get(tag)
            if hit is None:
                if len(self.plane_frames) >= 16:
                    self.plane_frames.clear()
                p0, pn = self._plane_frame(w, sa[:1])
                hit = self.plane_frames[tag] = (np.repeat(p0, len(sa), axis=0),
                                                np.repeat(pn, len(sa), axis=0))
            return hit
        pn = np.einsum("sij,sj->si", w.R[sa], self.plane_n[sa])
        p0 = w.center[sa] + np.einsum("sij,sj->si", w.R[sa], self.plane_p[sa])
        return p0, pn

    # -- primitive pairs ----------------------------------------------------------------------
    def _sphere_sphere(self, w: _World, sa: np.ndarray, sb: np.ndarray) -> _Part:
        ra, rb = self.radius[sa], self.radius[sb]
        pt, n, d = narrow.sphere_sphere(w.center[sa], ra, w.center[sb], rb)
        return _Part(sa, sb, pt, n, d, _k.equiv_radius(ra, rb), np.zeros(len(sa), np.int64))

    def _plane_sphere(self, w: _World, sa: np.ndarray, sb: np.ndarray,
                 plane: int | None = None) -> _Part:
        p0, pn = self._plane_frame(w, sa, plane)
        r = self.radius[sb]
        pt, n, d = narrow.plane_sphere(p0, pn, w.center[sb], r)
        return _Part(sa, sb, pt, n, d, r, np.zeros(len(sa), np.int64))  # r: a new array

    def _box_sphere(self, w: _World, sa: np.ndarray, sb: np.ndarray) -> _Part:
        r = self.radius[sb]
        pt, n, d = narrow.box_sphere(w.center[sa], w.R[sa], self.half[sa], w.center[sb], r)
        # face region (sphere centre over a face) is flat; edges/corners use the box radius
        p_loc = np.einsum("kji,kj->ki", w.R[sa], w.center[sb] - w.center[sa])
        outside_axes = (np.abs(p_loc) > self.half[sa]).sum(axis=1)
        ur = self.user_radius[sa]
        edge = (outside_axes >= 2) & np.isfinite(ur)
        r_eff = np.where(edge, _k.equiv_radius(r, ur), r)
        return _Part(sa, sb, pt, n, d, r_eff, np.zeros(len(sa), np.int64))

    def _capsule_box(self, w: _World, sa: np.ndarray, sb: np.ndarray,
                     margin: float) -> list[_Part]:
        """Capsule a against box or mesh b: the capsule's two end spheres against it
        (box-sphere, mesh-sphere; normal from a to b, feature 1 + end) where one of them is
        within ``margin``, as a capsule on a plane (a capsule lying on a box's face rests on
        both ends; fcl's one point let it rock); else (its ends off the solid, crossing an
        edge or a bump) fcl's one point (feature 0)."""
        rc = self.radius[sa]
        e0, e1 = narrow.capsule_ends(w.center[sa], w.R[sa], self.half_length[sa])
        box = self.kind[sb] == BOX
        ib, im = np.flatnonzero(box), np.flatnonzero(~box)
        ur = self.user_radius[sb[ib]]
        out_p, out_n, out_d, out_r = [], [], [], []
        for e in (e0, e1):
            pt, n, d, r = (np.empty((len(sa), 3)), np.empty((len(sa), 3)), np.empty(len(sa)),
                           np.empty(len(sa)))
            if len(ib):
                b_ = sb[ib]
                pt[ib], n[ib], d[ib] = narrow.box_sphere(w.center[b_], w.R[b_], self.half[b_],
                                                         e[ib], rc[ib])
                # face region flat; edges and corners use the box's radius if it has one
                p_loc = np.einsum("kji,kj->ki", w.R[b_], e[ib] - w.center[b_])
                edge = ((np.abs(p_loc) > self.half[b_]).sum(axis=1) >= 2) & np.isfinite(ur)
                r[ib] = np.where(edge, _k.equiv_radius(rc[ib], ur), rc[ib])
            if len(im):
                part = self.mesh.mesh_sphere(self, w, sb[im], sa[im], e[im], rc[im])
                pt[im], n[im], d[im], r[im] = part.point, part.normal, part.delta, part.r_eff
            out_p.append(pt)
            out_n.append(-n)
            out_d.append(d)
            out_r.append(r)
        ends = (out_d[0] > -margin) | (out_d[1] > -margin)
        parts: list[_Part] = []
        if ends.any():
            k = int(ends.sum())
            parts.append(_Part(
                np.repeat(sa[ends], 2), np.repeat(sb[ends], 2),
                np.stack([x[ends] for x in out_p], axis=1).reshape(-1, 3),
                np.stack([x[ends] for x in out_n], axis=1).reshape(-1, 3),
                np.stack([x[ends] for x in out_d], axis=1).reshape(-1),
                np.stack([x[ends] for x in out_r], axis=1).reshape(-1),
                np.tile(np.arange(1, 3, dtype=np.int64), k)))
        if not ends.all():
            parts += self.mesh.general_pairs(self, w, sa[~ends], sb[~ends], margin)
        return parts

    def _capsule_sphere(self, w: _World, sa: np.ndarray, sb: np.ndarray) -> _Part:
        rc, r = self.radius[sa], self.radius[sb]
        pt, n, d, cap = narrow.capsule_sphere(
            w.center[sa], w.R[sa], rc, self.half_length[sa], w.center[sb], r
        )
        r1 = rc * r / (rc + r)
        r_eff = np.where(cap, r1, np.sqrt(r1 * r))
        return _Part(sa, sb, pt, n, d, r_eff, np.zeros(len(sa), np.int64))

    def _plane_capsule(self, w: _World, sa: np.ndarray, sb: np.ndarray,
                 plane: int | None = None) -> _Part:
        p0, pn = self._plane_frame(w, sa, plane)
        rc = self.radius[sb]
        pt, n, d = narrow.plane_capsule(p0, pn, w.center[sb], w.R[sb], rc, self.half_length[sb])
        k = len(sa)
        return _Part(
            np.repeat(sa, 2), np.repeat(sb, 2), pt.reshape(-1, 3), n.reshape(-1, 3),
            d.reshape(-1), np.repeat(rc, 2), np.tile(np.arange(2, dtype=np.int64), k),
        )

    def _plane_box(self, w: _World, sa: np.ndarray, sb: np.ndarray,
                 plane: int | None = None) -> _Part:
        p0, pn = self._plane_frame(w, sa, plane)
        pt, n, d = narrow.plane_box(p0, pn, w.center[sb], w.R[sb], self.half[sb])
        k = len(sa)
        return _Part(
            np.repeat(sa, 8), np.repeat(sb, 8), pt.reshape(-1, 3), n.reshape(-1, 3),
            d.reshape(-1), np.repeat(self.user_radius[sb], 8),
            np.tile(np.arange(8, dtype=np.int64), k),
        )

    def _sphere_hole(self, w: _World, sa: np.ndarray, sb: np.ndarray) -> _Part:
        rh, r = self.radius[sa], self.radius[sb]
        pt, n, d = narrow.sphere_hole_sphere(w.center[sa], rh, w.center[sb], r)
        return _Part(sa, sb, pt, n, d, _k.equiv_radius(r, -rh), np.zeros(len(sa), np.int64))

    def _cylinder_hole(self, w: _World, sa: np.ndarray, sb: np.ndarray) -> _Part:
        rh, r = self.radius[sa], self.radius[sb]
        pt, n, d = narrow.cylinder_hole_sphere(w.center[sa], w.R[sa], rh, w.center[sb], r)
        r1 = _k.equiv_radius(r, -rh)
        return _Part(sa, sb, pt, n, d, np.sqrt(r1 * r), np.zeros(len(sa), np.int64))

    def _mesh_sphere(self, w: _World, sa: np.ndarray, sb: np.ndarray) -> _Part:
        return self.mesh.mesh_sphere(self, w, sa, sb)

    # -- kinematics, keys, laws ---------------------------------------------------------------
    def finish(
        self, cat: dict[str, np.ndarray], bodies: BodyState, rot_ext: np.ndarray,
        pos_ext: np.ndarray, vel_ext: np.ndarray, om_ext: np.ndarray,
    ) -> ContactBatch:
        sa, sb = cat["sa"], cat["sb"]
        a, b = self.body[sa], self.body[sb]
        point, n = cat["point"], cat["normal"]
        k = len(sa)
        ra, rb, ddelta, vt = np.empty((k, 3)), np.empty((k, 3)), np.empty(k), np.empty((k, 3))
        m_eff = np.empty(k)
        _k.contact_kinematics_batch(a, b, np.ascontiguousarray(point), np.ascontiguousarray(n),
                                    np.ascontiguousarray(pos_ext), np.ascontiguousarray(vel_ext),
                                    np.ascontiguousarray(om_ext), bodies.inv_mass_ext(),
                                    bodies.inv_inertia_world_ext(rot_ext), ra, rb, ddelta, vt,
                                    m_eff)
        key = cat.get("key")
        if key is None:
            key = _k.encode_keys(sa, sb, cat["feature"], self.n)
        # laws: body pair > material pair > default
        if self.one_material:  # every pair of shapes: the same material pair
            ma = mb = None
            law = np.full(k, self.mat_law[self.mat[0], self.mat[0]], dtype=np.int64)
        else:
            ma, mb = self.mat[sa], self.mat[sb]
            law = self.mat_law[ma, mb]  # a new array (integer indexing)
        if len(self.body_law_code):
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            code = (lo + 1) * (1 << 31) + (hi + 1)
            pos = np.minimum(np.searchsorted(self.body_law_code, code), len(self.body_law_code) - 1)
            hit = self.body_law_code[pos] == code
            law[hit] = self.body_law_idx[pos[hit]]
        r_eff = cat["r_eff"]
        with np.errstate(invalid="ignore"):  # NumPy on the formula's source: no compile
            k_hertz = hertz_k.py_func(self.e_star[self.mat[0], self.mat[0]] if ma is None
                                      else self.e_star[ma, mb], r_eff)
        return ContactBatch(
            a.astype(np.int64, copy=False), b.astype(np.int64, copy=False),
            key.astype(np.int64, copy=False), point, n,
            cat["delta"], ddelta, vt, m_eff, r_eff, ra, rb, law, k_hertz,
        )
