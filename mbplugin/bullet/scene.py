"""Scene files with ``world.backend = "pybullet"``: the bodies are built in a PyBullet client
(``p.DIRECT``) and every pair is managed by :class:`~mbplugin.bullet.BulletContacts`.

What the backend accepts from the scene format (``docs/scenes.md``): ``[world] gravity``,
``host_dt`` (PyBullet's step, s; default 1/240), ``[materials]``, ``[contact]`` (law, params,
params_optional, friction), ``[[pairs]]`` with ``bodies``, and ``[[bodies]]`` of shape sphere,
box, plane or mesh with ``radius`` / ``half_extents`` / ``normal`` / ``file`` and ``scale`` (a mesh
is a convex hull per object of the file in PyBullet, and so in its contacts:
:mod:`mbplugin.bullet.geometry`; a mass from a density takes the hull's volume), ``material``,
``mass`` or ``density``,
``position``, ``orientation``, ``velocity``, ``angular_velocity``, ``fixed``. ``count`` / ``grid``,
loads and ``[integrator]`` are standalone-engine features: a clear error names them.

Checks (one preflight for every backend): the scene is also built as the standalone engine
would build it (the same bodies, materials, laws and pairs), so every check of the engine's
loader applies here with the same messages (missing or non-positive sizes, masses, unknown
materials, duplicate names, ...); :meth:`BulletScene.preflight` then applies the engine's
pre-run checks to that twin: initial overlaps beyond a pre-load (:mod:`mbplugin.dynamics.preflight`)
and the run's size (``duration / host_dt`` host steps of records; at least one step). During the
run an overlap beyond the smaller body's size is warned about, as in the engine.

The run gives the standalone engine's summary keys: ``steps`` (host steps), ``events`` (contact
onsets and separations), ``wall_time``, ``sim_time``, ``energy_drift`` (``None``: the dissipated
work is not tracked inside PyBullet), ``bounces`` (body, other, t, t_out, v_in, v_out, cr),
``bodies``, ``records``, plus ``backend = "pybullet"`` and ``host_dt``.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.formatting import dumps_json

UNSUPPORTED_BODY = ("count", "grid", "spacing", "jitter", "seed", "rpy_deg", "gravity_scale",
                    "inertia")


@dataclass
class BulletResult:
    """Records (host-step times, body positions) and the summary of a PyBullet scene run."""

    name: str
    body_names: list[str]
    t: np.ndarray
    pos: np.ndarray
    bounces: list[dict[str, Any]]
    steps: int
    events: int
    wall_time: float
    host_dt: float
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    contacts_at_rest: list[dict[str, Any]] = field(default_factory=list)
    #: linear velocities of the bodies' centres of mass (m/s), aligned with ``pos``
    vel: np.ndarray | None = None

    def summary(self) -> dict[str, Any]:
        out = {"scene": self.name, "backend": "pybullet", "host_dt": self.host_dt,
               "steps": self.steps, "events": self.events, "wall_time": self.wall_time,
               "sim_time": float(self.t[-1]) if len(self.t) else 0.0, "energy_drift": None,
               "bounces": self.bounces, "bodies": list(self.body_names), "records": len(self.t)}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        out.update(self.extra)
        return out

    def write(self, out_dir: str | os.PathLike[str], fmt: str = "npz",
              also: Any = ()) -> list[Path]:
        """Write the records (npz or csv) and ``summary.json`` (temp file + rename); ``also``
        (files written beside them, e.g. plots) is accepted for the engine's interface."""
        if fmt not in ("npz", "csv"):
            raise ParameterError(f"output.format = {fmt!r} is not one of {{npz, csv}}")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        if fmt == "npz":
            target = out / "records.npz"
            with tempfile.NamedTemporaryFile(dir=out, suffix=".npz", delete=False) as fh:
                np.savez(fh, t=self.t, pos=self.pos, body_names=np.array(self.body_names))
            os.replace(fh.name, target)
        else:
            target = out / "records.csv"
            cols = [self.t[:, None], self.pos.reshape(len(self.t), -1)]
            head = ["t"] + [f"{n}_{a}" for n in self.body_names for a in "xyz"]
            with tempfile.NamedTemporaryFile("w", dir=out, suffix=".csv", delete=False) as fh:
                np.savetxt(fh, np.hstack(cols), delimiter=",", header=",".join(head), comments="")
            os.replace(fh.name, target)
        paths.append(target)
        with tempfile.NamedTemporaryFile("w", dir=out, suffix=".json", delete=False) as fh:
            fh.write(dumps_json(self.summary()))
        os.replace(fh.name, out / "summary.json")
        paths.append(out / "summary.json")
        return paths


@dataclass
class BulletScene:
    """A validated scene for the PyBullet backend (same interface as the standalone Scene)."""

    path: str
    name: str
    description: str
    duration: float
    doc: dict[str, Any]
    law: Any
    pair_laws: list[tuple[Any, tuple[str, str]]]
    friction: Any
    output_format: str = "npz"
    plots: list[str] = field(default_factory=list)
    #: the same scene built for the standalone engine (its checks and its preflight)
    twin: Any = None
    _checked: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def simulation(self) -> BulletScene:
        """The object ``mbplugin run`` asks for its pre-flight check (this scene)."""
        return self

    @property
    def host_dt(self) -> float:
        """PyBullet's step (s)."""
        return float(self.doc.get("world", {}).get("host_dt", 1.0 / 240.0))

    def preflight(self) -> dict[str, Any]:
        """Checks before anything runs or is written (cached): PyBullet importable, the
        engine's initial-overlap check on the twin (:func:`check_initial_overlaps`), the run's
        size (:func:`check_run_size`: host steps and record memory); a heavy run says its
        estimate (:class:`~mbplugin.dynamics.preflight.WorkEstimate`)."""
        if self._checked is not None:
            return self._checked
        from mbplugin.dynamics import preflight as pf

        try:
            import pybullet  # noqa: F401
        except ImportError as exc:
            raise ParameterError(f"world.backend = 'pybullet' needs pybullet ({exc})") from None
        nb = len(self.doc["bodies"])
        steps = round(self.duration / self.host_dt)
        est = {"steps": steps, "records": steps + 1, "bytes_per_record": 8 * (1 + 6 * nb),
               "record_bytes": (steps + 1) * 8 * (1 + 6 * nb)}
        msgs = pf.check_run_size(est, self.host_dt, "world.host_dt", "world.host_dt")
        overlaps: list[dict[str, Any]] = []
        if self.twin is not None:
            world = self.twin.world
            overlaps, _ = pf.check_initial_overlaps(world, world.pack())
        pf.announce_run(nb, steps, "pybullet")
        self._checked = {"initial_overlaps": overlaps, "warnings": msgs}
        return self._checked

    def run(self, progress: Callable[[float], None] | None = None) -> BulletResult:
        """Build the bodies in a new ``p.DIRECT`` client, run ``duration`` s, disconnect."""
        import pybullet as p

        from mbplugin.bullet.backend import BulletContacts
        from mbplugin.dynamics import preflight as pf

        checked = self.preflight()
        doc = self.doc
        world = doc.get("world", {})
        dt = float(world.get("host_dt", 1.0 / 240.0))
        cid = p.connect(p.DIRECT)
        try:
            p.setGravity(*world.get("gravity", [0.0, 0.0, -9.81]), physicsClientId=cid)
            p.setTimeStep(dt, physicsClientId=cid)
            ids, names, mats = self._bodies(p, cid)
            by_body = {v: k for k, v in ids.items()}
            materials = doc.get("materials", {})
            per = {ids[n]: {"E": materials[m]["E"], "nu": materials[m]["nu"]}
                   for n, m in mats.items() if m is not None}
            pair_laws = [(lw, (ids[a], ids[b])) for lw, (a, b) in self.pair_laws]
            movable = [ids[n] for n in names]
            manage = [(movable[i], movable[j]) for i in range(len(movable))
                      for j in range(i + 1, len(movable))]
            contacts = BulletContacts(cid, manage=manage, law=self.law, materials=per,
                                      pair_laws=pair_laws,
                                      # a scene without a friction table is frictionless, as
                                      # in the standalone engine (not PyBullet's default)
                                      friction="none" if self.friction is None
                                      else self.friction)
            n = round(self.duration / dt)
            sizes = self._sizes(ids, names)
            peak: dict[str, Any] = {}
            t = np.zeros(n + 1)
            pos = np.zeros((n + 1, len(names), 3))
            vel = np.zeros_like(pos)
            pos[0] = [p.getBasePositionAndOrientation(ids[nm], physicsClientId=cid)[0]
                      for nm in names]
            vel[0] = [p.getBaseVelocity(ids[nm], physicsClientId=cid)[0] for nm in names]
            wall = time.perf_counter()
            for i in range(1, n + 1):
                info = contacts.step()
                if info.contacts:
                    pf.track_overlaps(peak, info.links[:, 0, 0], info.links[:, 1, 0],
                                      info.delta, sizes, by_body)
                t[i] = i * dt
                pos[i] = [p.getBasePositionAndOrientation(ids[nm], physicsClientId=cid)[0]
                          for nm in names]
                vel[i] = [p.getBaseVelocity(ids[nm], physicsClientId=cid)[0] for nm in names]
                if progress is not None:
                    progress(t[i])
            wall = time.perf_counter() - wall
        finally:
            p.disconnect(physicsClientId=cid)
        by_id = {(v, -1): k for k, v in ids.items()}
        bounces = []
        for row in contacts.bounces():
            a = by_id[contacts.rows[int(row["a"])]]
            b = by_id[contacts.rows[int(row["b"])]]
            bounces.append({"body": b, "other": a, "t": float(row["t_in"]),
                            "t_out": float(row["t_out"]), "v_in": float(row["v_in"]),
                            "v_out": float(row["v_out"]), "cr": float(row["cr"])})
        events = len(contacts.store.onsets) + len(contacts.store.separations)
        warn = list(checked["warnings"])
        deep = pf.overlap_warning(peak)
        if deep:
            warn.append(deep)
        extra = ({"initial_overlaps": checked["initial_overlaps"]}
                 if checked["initial_overlaps"] else {})
        return BulletResult(self.name, names, t, pos, bounces, n, events, wall, dt, vel=vel,
                            warnings=warn, extra=extra)

    def _sizes(self, ids: dict[str, int], names: list[str]) -> np.ndarray:
        """Each PyBullet body's size (m) indexed by body id (the twin's
        :func:`~mbplugin.dynamics.preflight.body_sizes`; inf without a twin)."""
        from mbplugin.dynamics.preflight import body_sizes

        out = np.full(max(ids.values(), default=-1) + 1, np.inf)
        twin = self.twin
        if twin is not None and twin.world.contacts is not None:
            size = body_sizes(twin.world.contacts.model, len(names))
            twin_names = list(twin.world.bodies.names)
            for nm in names:
                out[ids[nm]] = size[twin_names.index(nm)]
        return out

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
                geom = p.createCollisionShape(p.GEOM_MESH, fileName=b["file"],
                                              meshScale=[scale] * 3, physicsClientId=cid)
                hull = trimesh.load(b["file"], force="mesh").convex_hull
                hull.apply_scale(scale)
                solid = hull  # mass_properties below: rho V of the hull PyBullet collides with
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


def build_bullet_scene(doc: dict[str, Any], source: str, law_entry: Callable[..., Any],
                       friction_entry: Callable[..., Any],
                       engine_build: Callable[..., Any] | None = None,
                       base_dir: str | Path | None = None) -> BulletScene:
    """A :class:`BulletScene` from a resolved, validated scene document.

    ``law_entry(table, where)`` and ``friction_entry(table, where)`` are the scene loader's
    resolvers of ``[contact]`` / ``[[pairs]]`` laws and friction (one resolution rule for both
    backends); ``engine_build(doc, source)`` the standalone engine's builder: the scene is built
    for it too (the twin), so that its checks apply to both backends alike.
    """
    from mbplugin.scene import SceneError

    sc = doc["scene"]
    duration = float(sc["duration"])
    if not (math.isfinite(duration) and duration > 0):
        raise SceneError(f"{source}: scene.duration: {duration:g} s is outside its allowed range "
                         "(0, inf)")
    host_dt = doc.get("world", {}).get("host_dt", 1.0 / 240.0)
    if not (isinstance(host_dt, int | float) and 1e-6 <= host_dt <= 0.1):
        raise SceneError(f"{source}: world.host_dt = {host_dt!r} s is outside its allowed range "
                         "[1e-6, 0.1]")
    steps = round(duration / host_dt)
    if steps < 1:
        raise SceneError(f"{source}: scene.duration = {duration:g} s is shorter than one host "
                         f"step (world.host_dt = {host_dt:g} s): nothing would run")
    for key in ("loads", "integrator"):
        if doc.get(key):
            raise SceneError(f"{source}: [{key}] is a standalone-engine feature, not supported "
                             "with world.backend = 'pybullet'")
    names = []
    for i, b in enumerate(doc["bodies"]):
        bad = [k for k in UNSUPPORTED_BODY if k in b]
        if bad:
            raise SceneError(f"{source}: bodies[{i}].{bad[0]} is not supported with "
                             "world.backend = 'pybullet'")
        if b["shape"] not in ("sphere", "box", "plane", "mesh"):
            raise SceneError(f"{source}: bodies[{i}].shape = {b['shape']!r} is not one of "
                             "{sphere, box, plane, mesh}")
        if b["shape"] == "box" and "radius" in b:
            raise SceneError(f"{source}: bodies[{i}].radius: a box's rounding radius is not "
                             "supported with world.backend = 'pybullet' (PyBullet's boxes are "
                             "sharp)")
        if b["shape"] == "mesh":  # a file relative to the scene file's folder
            path = Path(b["file"])
            if not path.is_absolute():
                path = Path(base_dir if base_dir is not None else ".") / path
            if not path.is_file():
                raise SceneError(f"{source}: bodies[{i}].file: no mesh file {str(path)!r} (mesh "
                                 "files are read relative to the scene file)")
            b["file"] = str(path.resolve())
        names.append(b["name"])
    # the standalone engine's loader on the same document: every check of a body, material,
    # law and pair, with the engine's messages (one set of checks for both backends)
    twin = None
    if engine_build is not None:
        engine_doc = dict(doc)
        engine_doc["world"] = {k: v for k, v in doc.get("world", {}).items()
                               if k not in ("backend", "host_dt")}
        twin = engine_build(engine_doc, source).simulation
    contact = doc.get("contact")
    if not contact or "law" not in contact:
        raise SceneError(f"{source}: [contact] law is required")
    law = law_entry(contact, f"{source}: contact")
    pair_laws = []
    for j, pr in enumerate(doc.get("pairs", [])):
        if "bodies" not in pr or "law" not in pr:
            raise SceneError(f"{source}: pairs[{j}]: the pybullet backend takes pairs with "
                             "'bodies' and 'law'")
        for nm in pr["bodies"]:
            if nm not in names:
                raise SceneError(f"{source}: pairs[{j}].bodies: unknown body {nm!r}")
        pair_laws.append((law_entry(pr, f"{source}: pairs[{j}]"), tuple(pr["bodies"])))
    out = doc.get("output", {})
    return BulletScene(source, sc.get("name", Path(source).stem), sc.get("description", ""),
                       duration, doc, law, pair_laws, friction_entry(contact, f"{source}: contact"),
                       out.get("format", "npz"), [], twin=twin)
