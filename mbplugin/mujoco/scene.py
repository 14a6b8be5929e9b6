"""Scene files with ``world.backend = "mujoco"``: the bodies are built into a MuJoCo model
(``MjSpec``: a free body with one geom per movable body, a world geom per fixed one; MuJoCo's
default Euler integrator at ``world.host_dt``, default 2 ms) and every pair is managed by
:class:`~mbplugin.mujoco.MujocoContacts`.

The scene format, its checks, the preflight and the run loop are every host's
(:mod:`mbplugin.host_scene`); this module is the MuJoCo side of a run, :class:`MujocoWorld`:
bodies of shape sphere, box, capsule, ellipsoid or plane. A body's inertia is MuJoCo's of its
geom with the body's mass (uniform density, as the standalone engine's default); its
``angular_velocity`` (world frame) becomes the free joint's body-frame one. A scene without a
friction table is frictionless, as in the standalone engine (not MuJoCo's geom friction).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.host_scene import bounce_record, impact_peaks


class MujocoWorld:
    """A host scene (:class:`mbplugin.host_scene.HostScene`) built into a MuJoCo model: the
    records' bodies (``names``: the movable ones), one host step (:meth:`step`), the records
    (:meth:`read`), the bounces, the events."""

    #: the body shapes a MuJoCo scene builds, and MuJoCo's default time step (s)
    SHAPES = ("sphere", "box", "capsule", "ellipsoid", "plane")
    DEFAULT_DT = 0.002

    @staticmethod
    def require() -> None:
        """MuJoCo importable, else a ParameterError naming the extra."""
        try:
            import mujoco  # noqa: F401
        except ImportError as exc:
            raise ParameterError(f"world.backend = 'mujoco' needs the mujoco package (pip "
                                 f"install 'mbplugin[mujoco]'; {exc})") from None

    def __init__(self, scene: Any) -> None:
        import mujoco

        from mbplugin.mujoco.backend import MujocoContacts

        self.mj, self.scene, self.doc = mujoco, scene, scene.doc
        doc = self.doc
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
        self.contacts = MujocoContacts(
            m, d, manage=names, law=scene.law, materials=_geoms(per),
            pair_laws=[(lw, (_geom_body(a, bodies), _geom_body(b_, bodies)))
                       for lw, (a, b_) in scene.pair_laws],
            # a scene without a friction table is frictionless, as in the standalone engine
            # (not MuJoCo's geom friction)
            friction="none" if scene.friction is None else scene.friction)
        self.m, self.d, self.names = m, d, movable
        self.dt = float(m.opt.timestep)
        self._qa = np.array([qadr[nm] for nm in movable], dtype=np.int64).reshape(-1, 1)
        self._va = np.array([vadr[nm] for nm in movable], dtype=np.int64).reshape(-1, 1)
        # each managed geom (one per scene body, named as the body): its document index
        index = {nm: i for i, nm in enumerate(names)}
        self._doc_of_geom = np.array(
            [index.get(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, int(g)) or "", -1)
             for g in self.contacts.geoms], dtype=np.int64)

    def model(self) -> tuple[Any, list[str]]:
        """The scene's ``MjModel`` (not yet with its initial velocities) and its movable
        bodies' names."""
        import mujoco

        doc = self.doc
        spec = mujoco.MjSpec()
        spec.option.timestep = self.scene.host_dt
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
            elif shape == "ellipsoid":
                kw.update(type=gt.mjGEOM_ELLIPSOID, size=list(b["semi_axes"]))
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

    def step(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One host step; its managed contacts as (side a, side b, overlap (m)), the sides
        as indices into the document's bodies."""
        from mbplugin.contact.kernels import decode_keys

        info = self.contacts.step()
        if not info.contacts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        sa, sb, _ = decode_keys(info.keys, self.contacts.contact_model.n_shapes)
        return self._doc_of_geom[sa], self._doc_of_geom[sb], info.delta

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities (m, m/s) of the movable bodies' frame origins (``qpos``,
        ``qvel``: current after a step)."""
        d = self.d
        return d.qpos[self._qa + np.arange(3)], d.qvel[self._va + np.arange(3)]

    def bounces(self) -> list[dict[str, Any]]:
        """The completed contacts (body, other, t, t_out, v_in, v_out, cr)."""
        mujoco, m, contacts = self.mj, self.m, self.contacts
        by_row = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(b)) for b in contacts.rows]
        world_geoms = {int(g): mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, int(g))
                       for g in contacts.geoms if m.geom_bodyid[g] == 0}
        out = []
        peaks = impact_peaks(contacts.loop.store, contacts.loop.mass)
        for j, row in enumerate(contacts.bounces()):
            a, b = by_row[int(row["a"])], by_row[int(row["b"])]
            if a == "world":  # a fixed body is a geom of the world body: its geom's name
                a = _fixed_name(contacts, int(row["key"]), world_geoms)
            out.append(bounce_record(b, a, row, partial(peaks, j)))
        return out

    def events(self) -> int:
        """Contact onsets and separations of the run."""
        return len(self.contacts.store.onsets) + len(self.contacts.store.separations)

    def close(self) -> None:
        """Nothing to release (the model is the run's own)."""


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
