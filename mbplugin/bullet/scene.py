"""Scene files with ``world.backend = "pybullet"``: the bodies are built in a PyBullet client
(``p.DIRECT``) and every pair is managed by :class:`~mbplugin.bullet.BulletContacts`.

The scene format, its checks, the preflight and the run loop are every host's
(:mod:`mbplugin.host_scene`); this module is the PyBullet side of a run, :class:`BulletWorld`:
bodies of shape sphere, box (sharp), plane or mesh from the document (a mesh with ``file``,
relative to the scene file, and ``scale``: a convex hull per object of the file in PyBullet, and
so in its contacts, :mod:`mbplugin.bullet.geometry`; a mass from a density takes that hull's
volume; the body's frame and ``position`` at that hull's centre of mass, as in the standalone
engine, wherever the file's origin lies), ``host_dt`` PyBullet's step (default 1/240 s); a
scene without a friction table is frictionless, as in the standalone engine (not PyBullet's
default friction).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.host_scene import bounce_record, impact_peaks


class BulletWorld:
    """A host scene (:class:`mbplugin.host_scene.HostScene`) built in a new ``p.DIRECT``
    client: the records' bodies (``names``: every body of the document), one host step
    (:meth:`step`), the records (:meth:`read`), the bounces, the events; :meth:`close`
    disconnects."""

    #: the body shapes a PyBullet scene builds, and PyBullet's default step (s)
    SHAPES = ("sphere", "box", "plane", "mesh")
    DEFAULT_DT = 1.0 / 240.0

    @staticmethod
    def require() -> None:
        """PyBullet importable, else a ParameterError naming it."""
        try:
            import pybullet  # noqa: F401
        except ImportError as exc:
            raise ParameterError(f"world.backend = 'pybullet' needs pybullet ({exc})") from None

    def __init__(self, scene: Any) -> None:
        import pybullet as p

        from mbplugin.bullet.backend import BulletContacts

        self.p, self.doc = p, scene.doc
        world = self.doc.get("world", {})
        self.dt = float(scene.host_dt)
        self.cid = cid = p.connect(p.DIRECT)
        try:
            p.setGravity(*world.get("gravity", [0.0, 0.0, -9.81]), physicsClientId=cid)
            p.setTimeStep(self.dt, physicsClientId=cid)
            ids, names, mats = self._bodies(p, cid)
            materials = self.doc.get("materials", {})
            per = {ids[n]: {"E": materials[m]["E"], "nu": materials[m]["nu"]}
                   for n, m in mats.items() if m is not None}
            pair_laws = [(lw, (ids[a], ids[b])) for lw, (a, b) in scene.pair_laws]
            movable = [ids[n] for n in names]
            manage = [(movable[i], movable[j]) for i in range(len(movable))
                      for j in range(i + 1, len(movable))]
            self.contacts = BulletContacts(
                cid, manage=manage, law=scene.law, materials=per, pair_laws=pair_laws,
                # a scene without a friction table is frictionless, as in the standalone
                # engine (not PyBullet's default)
                friction="none" if scene.friction is None else scene.friction)
        except BaseException:
            p.disconnect(physicsClientId=cid)
            raise
        self.ids, self.names = ids, names
        self._index = np.full(max(ids.values(), default=-1) + 1, -1, dtype=np.int64)
        for i, nm in enumerate(names):
            self._index[ids[nm]] = i

    def step(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One host step; its managed contacts as (side a, side b, overlap (m)), the sides
        as indices into the document's bodies."""
        info = self.contacts.step()
        if not info.contacts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return self._index[info.links[:, 0, 0]], self._index[info.links[:, 1, 0]], info.delta

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities (m, m/s) of the bodies' centres of mass (``names``), synced
        first (:meth:`~mbplugin.bullet.BulletContacts.sync`: the backend defers free bodies'
        position corrections and books a step's exact flight at the next step, so PyBullet's
        own positions between two steps may lag by up to a host step's correction)."""
        self.contacts.sync()
        p, cid = self.p, self.cid
        pos = [p.getBasePositionAndOrientation(self.ids[nm], physicsClientId=cid)[0]
               for nm in self.names]
        vel = [p.getBaseVelocity(self.ids[nm], physicsClientId=cid)[0] for nm in self.names]
        return np.array(pos), np.array(vel)

    def bounces(self) -> list[dict[str, Any]]:
        """The completed contacts (body, other, t, t_out, v_in, v_out, cr)."""
        contacts = self.contacts
        by_id = {(v, -1): k for k, v in self.ids.items()}
        out = []
        peaks = impact_peaks(contacts.store, contacts.mass)
        for j, row in enumerate(contacts.bounces()):
            a = by_id[contacts.rows[int(row["a"])]]
            b = by_id[contacts.rows[int(row["b"])]]
            out.append(bounce_record(b, a, row, partial(peaks, j)))
        return out

    def events(self) -> int:
        """Contact onsets and separations of the run."""
        return len(self.contacts.store.onsets) + len(self.contacts.store.separations)

    def close(self) -> None:
        self.p.disconnect(physicsClientId=self.cid)

    def _bodies(self, p: Any, cid: int) -> tuple[dict[str, int], list[str], dict[str, Any]]:
        from mbplugin.contact import Box, Sphere

        ids: dict[str, int] = {}
        names: list[str] = []
        mats: dict[str, Any] = {}
        materials = self.doc.get("materials", {})
        for b in self.doc["bodies"]:
            fixed = bool(b.get("fixed", False))
            shape = b["shape"]
            if shape == "sphere":
                geom = p.createCollisionShape(p.GEOM_SPHERE, radius=b["radius"],
                                              physicsClientId=cid)
                solid: Any = Sphere(b["radius"])
            elif shape == "box":
                geom = p.createCollisionShape(p.GEOM_BOX, halfExtents=b["half_extents"],
                                              physicsClientId=cid)
                solid = Box(tuple(b["half_extents"]))
            elif shape == "mesh":
                import trimesh

                scale = float(b.get("scale", 1.0))
                hull = trimesh.load(b["file"], force="mesh").convex_hull
                hull.apply_scale(scale)
                solid = hull  # mass below: rho V of the hull PyBullet collides with
                # the body's frame at the hull's centre of mass, as in the standalone engine
                # (``position`` is the centre of mass; the file's origin may lie anywhere):
                # PyBullet puts a body's centre of mass at its shape's origin
                com = np.asarray(hull.center_mass, dtype=float)
                geom = p.createCollisionShape(p.GEOM_MESH, fileName=b["file"],
                                              meshScale=[scale] * 3,
                                              collisionFramePosition=list(-com),
                                              physicsClientId=cid)
            else:
                geom = p.createCollisionShape(p.GEOM_PLANE,
                                              planeNormal=b.get("normal", [0, 0, 1]),
                                              physicsClientId=cid)
                solid = None
            if fixed:
                mass = 0.0
            elif "mass" in b:
                mass = float(b["mass"])
            else:
                rho = b.get("density", materials.get(b.get("material"), {}).get("density"))
                mass = (float(rho) * float(solid.volume) if shape == "mesh"
                        else float(solid.mass_properties(rho)[0]))
            q = b.get("orientation", [1.0, 0.0, 0.0, 0.0])
            bid = p.createMultiBody(mass, geom, basePosition=b.get("position", [0, 0, 0]),
                                    baseOrientation=[q[1], q[2], q[3], q[0]],
                                    physicsClientId=cid)
            p.changeDynamics(bid, -1, linearDamping=0.0, angularDamping=0.0,
                             physicsClientId=cid)
            if not fixed:
                p.resetBaseVelocity(bid, b.get("velocity", [0, 0, 0]),
                                    b.get("angular_velocity", [0, 0, 0]), physicsClientId=cid)
            ids[b["name"]] = bid
            names.append(b["name"])
            mats[b["name"]] = b.get("material")
        return ids, names, mats
