"""Scene files with ``world.backend = "mujoco"``: the bodies are built into a MuJoCo model
(``MjSpec``: a free body with one geom per movable body, a world geom per fixed one; MuJoCo's
default Euler integrator at ``world.host_dt``, default 2 ms) and every pair is managed by
:class:`~mbplugin.mujoco.MujocoContacts`.

The scene format and the checks are the host backends' (:mod:`mbplugin.hosts.scene`); bodies
of shape sphere, box, capsule or plane. A body's inertia is MuJoCo's of its geom with the
body's mass (uniform density, as the standalone engine's default); its ``angular_velocity``
(world frame) becomes the free joint's body-frame one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.hosts.scene import HostResult, HostScene, check_host_scene

#: the body shapes a MuJoCo scene builds
SHAPES = ("sphere", "box", "capsule", "plane")
#: MuJoCo's default time step (s)
DEFAULT_DT = 0.002


class MujocoScene:
    """A validated scene for the MuJoCo backend (same interface as the standalone Scene)."""

    def __init__(self, spec: HostScene) -> None:
        self.spec = spec
        self.path, self.name, self.description = spec.path, spec.name, spec.description
        self.duration, self.output_format, self.plots = (spec.duration, spec.output_format,
                                                         spec.plots)

    @property
    def simulation(self) -> MujocoScene:
        """The object ``mbplugin run`` asks for its pre-flight check (this scene)."""
        return self

    def preflight(self) -> None:
        """Checks before any output is written: MuJoCo importable."""
        try:
            import mujoco  # noqa: F401
        except ImportError as exc:
            raise ParameterError(f"world.backend = 'mujoco' needs the mujoco package (pip "
                                 f"install 'mbplugin[mujoco]'; {exc})") from None

    def model(self) -> tuple[Any, list[str]]:
        """The scene's ``MjModel`` (not yet with its initial velocities) and its movable
        bodies' names."""
        import mujoco

        doc = self.spec.doc
        spec = mujoco.MjSpec()
        spec.option.timestep = self.spec.host_dt
        spec.option.gravity = doc.get("world", {}).get("gravity", [0.0, 0.0, -9.81])
        gt = mujoco.mjtGeom
        movable = []
        for b in doc["bodies"]:
            shape = b["shape"]
            kw: dict[str, Any] = {"name": b["name"]}
            if shape == "sphere":
                kw.update(type=gt.mjGEOM_SPHERE, size=[b["radius"], 0, 0])
            elif shape == "box":
                kw.update(type=gt.mjGEOM_BOX, size=list(b["half_extents"]))
            elif shape == "capsule":
                kw.update(type=gt.mjGEOM_CAPSULE, size=[b["radius"], b["half_length"], 0])
            else:
                n = np.asarray(b.get("normal", [0.0, 0.0, 1.0]), dtype=float)
                kw.update(type=gt.mjGEOM_PLANE, size=[10.0, 10.0, 0.1],
                          zaxis=list(n / np.linalg.norm(n)))
            pos = list(b.get("position", [0.0, 0.0, 0.0]))
            quat = list(b.get("orientation", [1.0, 0.0, 0.0, 0.0]))
            if b.get("fixed", False):
                spec.worldbody.add_geom(pos=pos, **({"quat": quat} if shape != "plane"
                                                   else {}), **kw)
                continue
            body = spec.worldbody.add_body(name=b["name"], pos=pos, quat=quat)
            body.add_freejoint()
            if "mass" in b:
                kw["mass"] = float(b["mass"])
            else:
                rho = b.get("density", doc.get("materials", {}).get(b.get("material"), {})
                            .get("density"))
                kw["density"] = float(rho)
            body.add_geom(**kw)
            movable.append(b["name"])
        return spec.compile(), movable

    def run(self, progress: Callable[[float], None] | None = None) -> HostResult:
        """Build the model, run ``duration`` s with every pair managed, collect the records."""
        import mujoco

        from mbplugin.mujoco.backend import MujocoContacts

        doc = self.spec.doc
        m, movable = self.model()
        d = mujoco.MjData(m)
        bodies = {b["name"]: b for b in doc["bodies"]}
        qadr, vadr = {}, {}
        for name in movable:
            bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
            j = m.body_jntadr[bid]
            qadr[name], vadr[name] = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
            b = bodies[name]
            d.qvel[vadr[name]:vadr[name] + 3] = b.get("velocity", [0.0, 0.0, 0.0])
            q = np.asarray(b.get("orientation", [1.0, 0.0, 0.0, 0.0]), dtype=float)
            w = np.asarray(b.get("angular_velocity", [0.0, 0.0, 0.0]), dtype=float)
            conj = q * np.array([1.0, -1.0, -1.0, -1.0]) / np.dot(q, q)
            local = np.zeros(3)
            mujoco.mju_rotVecQuat(local, w, conj)
            d.qvel[vadr[name] + 3:vadr[name] + 6] = local
        materials = doc.get("materials", {})
        per = {b["name"]: {"E": materials[b["material"]]["E"],
                           "nu": materials[b["material"]]["nu"]}
               for b in doc["bodies"] if b.get("material") is not None}
        names = [b["name"] for b in doc["bodies"]]
        contacts = MujocoContacts(
            m, d, manage=names, law=self.spec.law, materials=_geoms(per),
            pair_laws=[(lw, (_geom_body(a, bodies), _geom_body(b_, bodies)))
                       for lw, (a, b_) in self.spec.pair_laws],
            # a scene without a friction table is frictionless, as in the standalone engine
            # (not MuJoCo's geom friction)
            friction="none" if self.spec.friction is None else self.spec.friction)
        dt = float(m.opt.timestep)
        n = round(self.duration / dt)
        t = np.zeros(n + 1)
        pos = np.zeros((n + 1, len(movable), 3))
        vel = np.zeros_like(pos)
        qa = np.array([qadr[nm] for nm in movable], dtype=np.int64).reshape(-1, 1)
        va = np.array([vadr[nm] for nm in movable], dtype=np.int64).reshape(-1, 1)
        pos[0], vel[0] = d.qpos[qa + np.arange(3)], d.qvel[va + np.arange(3)]
        wall = time.perf_counter()
        for i in range(1, n + 1):
            contacts.step()
            t[i] = i * dt
            pos[i], vel[i] = d.qpos[qa + np.arange(3)], d.qvel[va + np.arange(3)]
            if progress is not None:
                progress(t[i])
        wall = time.perf_counter() - wall
        by_row = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(b)) for b in contacts.rows]
        world_geoms = {int(g): mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, int(g))
                       for g in contacts.geoms if m.geom_bodyid[g] == 0}
        bounces = []
        for row in contacts.bounces():
            a, b = by_row[int(row["a"])], by_row[int(row["b"])]
            if a == "world":  # a fixed body is a geom of the world body: its geom's name
                a = _fixed_name(contacts, int(row["key"]), world_geoms)
            bounces.append({"body": b, "other": a, "t": float(row["t_in"]),
                            "t_out": float(row["t_out"]), "v_in": float(row["v_in"]),
                            "v_out": float(row["v_out"]), "cr": float(row["cr"])})
        events = len(contacts.store.onsets) + len(contacts.store.separations)
        return HostResult(self.name, "mujoco", movable, t, pos, bounces, n, events, wall, dt,
                          vel=vel)


def _geoms(per: dict[str, dict[str, float]]) -> dict[Any, dict[str, float]]:
    """Materials keyed by geom (each scene body's geom carries the body's name)."""
    from mbplugin.mujoco.backend import geom

    return {geom(name): spec for name, spec in per.items()}


def _geom_body(name: str, bodies: dict[str, Any]) -> Any:
    """A pair law's side: a movable body by name, a fixed one's geom (on the world body)."""
    from mbplugin.mujoco.backend import body, geom

    return geom(name) if bodies[name].get("fixed", False) else body(name)


def _fixed_name(contacts: Any, key: int, world_geoms: dict[int, str]) -> str:
    """The name of the fixed body (a world geom) in the contact with ``key``."""
    from mbplugin.contact.kernels import decode_keys

    sa, sb, _ = decode_keys(np.array([key]), contacts.contact_model.n_shapes)
    for s in (int(sa[0]), int(sb[0])):
        g = int(contacts.geoms[s])
        if g in world_geoms:
            return world_geoms[g]
    return "world"


def build_mujoco_scene(doc: dict[str, Any], source: str, law_entry: Callable[..., Any],
                       friction_entry: Callable[..., Any],
                       engine_build: Callable[..., Any] | None = None) -> MujocoScene:
    """A :class:`MujocoScene` from a resolved, validated scene document (see
    :func:`mbplugin.hosts.scene.check_host_scene`; ``engine_build``: the standalone engine's
    builder, whose checks apply too)."""
    return MujocoScene(check_host_scene(doc, source, "mujoco", law_entry, friction_entry,
                                        SHAPES, DEFAULT_DT, engine_build))
