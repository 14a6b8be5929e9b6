"""Scene files run inside a host engine: ``world.backend = "pybullet"`` or ``"mujoco"``.

The bodies are built in the host (``mbplugin.bullet.scene.BulletWorld``: a PyBullet client;
``mbplugin.mujoco.scene.MujocoWorld``: a MuJoCo model) and every pair is managed by the
host's backend. This module is the part every host shares: the checks of the document, the
preflight, the run loop and the result.

What a host backend accepts from the scene format (``docs/scenes.md``): ``[world] gravity``,
``host_dt`` (the host's step, s; default 1/240 for PyBullet, 0.002 for MuJoCo),
``[materials]``, ``[contact]`` (law, params, params_optional, friction), ``[[pairs]]`` with
``bodies``, and ``[[bodies]]`` of the shapes the host builds (``SHAPES`` of its world class)
with ``radius`` / ``half_extents`` / ``half_length`` / ``file`` and ``scale`` (a mesh, read
relative to the scene file), ``material``, ``mass`` or ``density``,
``position``, ``orientation``, ``velocity``, ``angular_velocity``, ``fixed``. ``count`` /
``grid``, loads and ``[integrator]`` are standalone-engine features: a clear error names them.

Checks (one preflight for every backend): the scene is also built as the standalone engine
would build it (the same bodies, materials, laws and pairs), so every check of the engine's
loader applies here with the same messages (missing or non-positive sizes, masses, unknown
materials, duplicate names, ...); :meth:`HostScene.preflight` then applies the engine's
pre-run checks to that twin: initial overlaps beyond a pre-load
(:mod:`mbplugin.dynamics.preflight`) and the run's size (``duration / host_dt`` host steps of
records; at least one step). During the run an overlap beyond the smaller body's size is
warned about, as in the engine.

The run gives the standalone engine's summary keys: ``steps`` (host steps), ``events``
(contact onsets and separations), ``wall_time``, ``sim_time``, ``energy_drift`` (``None``: the
dissipated work is not tracked inside the host), ``bounces`` (body, other, t, t_out, v_in,
v_out, cr), ``bodies``, ``records``, plus ``backend`` and ``host_dt``.
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

#: body keys of the standalone engine that a host backend does not take
UNSUPPORTED_BODY = ("count", "grid", "spacing", "jitter", "seed", "rpy_deg", "gravity_scale",
                    "inertia")


def bounce_record(body: str, other: str, row: Any,
                  peak: Callable[[], float] | None = None) -> dict[str, Any]:
    """One completed contact of a run's summary (``bounces``) from a row of
    :meth:`~mbplugin.contact.ContactStore.bounces`: body, other, t and t_out (s), v_in and
    v_out (m/s), cr (-); ``peak`` gives the impact's peak overlap (m, :func:`impact_peaks`;
    taken out of the record by the run's overlap check)."""
    rec = {"body": body, "other": other, "t": float(row["t_in"]),
           "t_out": float(row["t_out"]), "v_in": float(row["v_in"]),
           "v_out": float(row["v_out"]), "cr": float(row["cr"])}
    if peak is not None:
        rec["_peak"] = peak
    return rec


def impact_peaks(store: Any, mass: np.ndarray) -> Callable[[int], float]:
    """``peak(j)``: the peak overlap (m) of row j of ``store.bounces()`` if it is its pair's
    fastest completed impact (else NaN), computed when asked: the exact analyser's binary
    impact (:func:`mbplugin.impact.impact`) of the pair's law at that impact speed between the
    rows' masses ``mass`` (N,) kg (inf: fixed). A host reads overlaps only at the ends of its
    steps; an impact fast enough to pass through a body within one step shows here. Pairs
    whose law the analyser cannot run alone (a stiffness from the contact's geometry, a
    missing radius) get NaN."""
    rows = store.bounces()
    # per key the row of the largest v_in: sorted by key then v_in, the last of each key
    order = np.lexsort((rows["v_in"], rows["key"]))
    last = np.ones(len(order), dtype=bool)
    last[:-1] = rows["key"][order][1:] != rows["key"][order][:-1]
    fastest = set(order[last].tolist())
    ext = np.append(np.asarray(mass, dtype=float), np.inf)  # row -1: the world

    def peak(j: int) -> float:
        from mbplugin.errors import MBPluginError
        from mbplugin.impact import impact

        if j not in fastest:
            return math.nan
        r = rows[j]
        ma, mb = ext[int(r["a"])], ext[int(r["b"])]
        v = float(r["v_in"])
        if not (v > 0.0 and (math.isfinite(ma) or math.isfinite(mb))):
            return math.nan
        m1, m2 = (ma, mb) if math.isfinite(ma) else (mb, ma)
        try:
            return impact(store.laws[int(r["law"])], m1, v, mass2=m2).delta_max
        except MBPluginError:
            return math.nan

    return peak


def world_class(backend: str) -> Any:
    """The scene world class of a host backend (imported only when asked for)."""
    if backend == "pybullet":
        from mbplugin.bullet.scene import BulletWorld

        return BulletWorld
    from mbplugin.mujoco.scene import MujocoWorld

    return MujocoWorld


@dataclass
class HostResult:
    """Records (host-step times, body positions and velocities) and the summary of a scene run
    inside a host engine."""

    name: str
    backend: str
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
        out = {"scene": self.name, "backend": self.backend, "host_dt": self.host_dt,
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
                np.savetxt(fh, np.hstack(cols), delimiter=",", header=",".join(head),
                           comments="")
            os.replace(fh.name, target)
        paths.append(target)
        with tempfile.NamedTemporaryFile("w", dir=out, suffix=".json", delete=False) as fh:
            fh.write(dumps_json(self.summary()))
        os.replace(fh.name, out / "summary.json")
        paths.append(out / "summary.json")
        return paths


@dataclass
class HostScene:
    """A validated scene for a host backend (same interface as the standalone Scene)."""

    path: str
    name: str
    description: str
    duration: float
    host_dt: float
    backend: str
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
    def simulation(self) -> HostScene:
        """The object ``mbplugin run`` asks for its pre-flight check (this scene)."""
        return self

    def preflight(self) -> dict[str, Any]:
        """Checks before anything runs or is written (cached): the host importable, the
        engine's initial-overlap check on the twin (:func:`check_initial_overlaps`), the run's
        size (:func:`check_run_size`: host steps and record memory); a heavy run says its
        estimate (:class:`~mbplugin.dynamics.preflight.WorkEstimate`)."""
        if self._checked is not None:
            return self._checked
        from mbplugin.dynamics import preflight as pf

        world_class(self.backend).require()
        nb = len(self.doc["bodies"])
        steps = round(self.duration / self.host_dt)
        est = {"steps": steps, "records": steps + 1, "bytes_per_record": 8 * (1 + 6 * nb),
               "record_bytes": (steps + 1) * 8 * (1 + 6 * nb)}
        msgs = pf.check_run_size(est, self.host_dt, "world.host_dt", "world.host_dt")
        overlaps: list[dict[str, Any]] = []
        if self.twin is not None:
            world = self.twin.world
            overlaps, _ = pf.check_initial_overlaps(world, world.pack())
        pf.announce_run(nb, steps, self.backend)
        self._checked = {"initial_overlaps": overlaps, "warnings": msgs}
        return self._checked

    def run(self, progress: Callable[[float], None] | None = None) -> HostResult:
        """Build the bodies in the host, run ``duration`` s with every pair managed, collect
        the records (positions and velocities of the movable bodies at every host step)."""
        from mbplugin.dynamics import preflight as pf

        checked = self.preflight()
        world = world_class(self.backend)(self)
        try:
            names = world.names
            dt = world.dt
            n = round(self.duration / dt)
            sizes = self._sizes()
            peak: dict[str, Any] = {}
            t = np.zeros(n + 1)
            pos = np.zeros((n + 1, len(names), 3))
            vel = np.zeros_like(pos)
            pos[0], vel[0] = world.read()
            wall = time.perf_counter()
            for i in range(1, n + 1):
                a, b, delta = world.step()
                if len(delta):
                    pf.track_overlaps(peak, a, b, delta, sizes, self._all_names())
                t[i] = i * dt
                pos[i], vel[i] = world.read()
                if progress is not None:
                    progress(t[i])
            wall = time.perf_counter() - wall
            bounces, events = world.bounces(), world.events()
        finally:
            world.close()
        # an impact that can pass a body within one host step (v_in dt beyond twice the
        # smaller body's size): its peak overlap from the analyser, which it then compiles
        # (slower impacts show at the steps' ends)
        index = {name: i for i, name in enumerate(self._all_names())}
        for rec in bounces:
            ask = rec.pop("_peak", None)
            ia, ib = index.get(rec["other"]), index.get(rec["body"])
            if ask is None or ia is None or ib is None:
                continue
            if rec["v_in"] * dt > 2.0 * min(sizes[ia], sizes[ib]):
                d = ask()
                if math.isfinite(d):
                    pf.track_overlaps(peak, np.array([ia]), np.array([ib]), np.array([d]),
                                      sizes, self._all_names())
        warn = list(checked["warnings"])
        deep = pf.overlap_warning(peak)
        if deep:
            warn.append(deep)
        extra = ({"initial_overlaps": checked["initial_overlaps"]}
                 if checked["initial_overlaps"] else {})
        return HostResult(self.name, self.backend, names, t, pos, bounces, n, events, wall, dt,
                          vel=vel, warnings=warn, extra=extra)

    def _all_names(self) -> list[str]:
        return [b["name"] for b in self.doc["bodies"]]

    def _sizes(self) -> np.ndarray:
        """Each scene body's size (m) in document order (the twin's
        :func:`~mbplugin.contact.sizes.body_sizes`; inf without a twin)."""
        from mbplugin.contact.sizes import body_sizes

        names = self._all_names()
        out = np.full(len(names), np.inf)
        twin = self.twin
        if twin is not None and twin.world.contacts is not None:
            twin_names = list(twin.world.bodies.names)
            size = body_sizes(twin.world.contacts.model, len(twin_names))
            for i, nm in enumerate(names):
                if nm in twin_names:
                    out[i] = size[twin_names.index(nm)]
        return out


def check_host_scene(doc: dict[str, Any], source: str, backend: str,
                     law_entry: Callable[..., Any], friction_entry: Callable[..., Any],
                     engine_build: Callable[..., Any] | None = None,
                     base_dir: str | Path | None = None) -> HostScene:
    """A :class:`HostScene` from a resolved, validated scene document (the module docstring's
    rules; the shapes and default step of the backend's world class).
    ``law_entry(table, where)`` and ``friction_entry(table, where)`` are the scene loader's
    resolvers of ``[contact]`` / ``[[pairs]]`` laws and friction (one rule for every
    backend); ``engine_build(doc, source)`` the standalone engine's builder: the scene is built
    for it too (the twin), so that its checks apply to every backend alike; ``base_dir`` the
    folder mesh files are read relative to (the scene file's)."""
    from mbplugin.scene import SceneError

    wc = world_class(backend)
    sc = doc["scene"]
    duration = float(sc["duration"])
    if not (math.isfinite(duration) and duration > 0):
        raise SceneError(f"{source}: scene.duration: {duration:g} s is outside its allowed "
                         "range (0, inf)")
    host_dt = doc.get("world", {}).get("host_dt", wc.DEFAULT_DT)
    if not (isinstance(host_dt, int | float) and 1e-6 <= host_dt <= 0.1):
        raise SceneError(f"{source}: world.host_dt = {host_dt!r} s is outside its allowed "
                         "range [1e-6, 0.1]")
    if round(duration / host_dt) < 1:
        raise SceneError(f"{source}: scene.duration = {duration:g} s is shorter than one host "
                         f"step (world.host_dt = {host_dt:g} s): nothing would run")
    for key in ("loads", "integrator"):
        if doc.get(key):
            raise SceneError(f"{source}: [{key}] is a standalone-engine feature, not supported "
                             f"with world.backend = {backend!r}")
    names = []
    for i, b in enumerate(doc["bodies"]):
        bad = [k for k in UNSUPPORTED_BODY if k in b]
        if bad:
            raise SceneError(f"{source}: bodies[{i}].{bad[0]} is not supported with "
                             f"world.backend = {backend!r}")
        if b["shape"] not in wc.SHAPES:
            raise SceneError(f"{source}: bodies[{i}].shape = {b['shape']!r} is not one of "
                             f"{{{', '.join(wc.SHAPES)}}}")
        if b["shape"] == "box" and "radius" in b:
            raise SceneError(f"{source}: bodies[{i}].radius: a box's rounding radius is not "
                             f"supported with world.backend = {backend!r} (the host's boxes "
                             "are sharp)")
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
    # law and pair, with the engine's messages (one set of checks for every backend)
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
            raise SceneError(f"{source}: pairs[{j}]: the {backend} backend takes pairs with "
                             "'bodies' and 'law'")
        for nm in pr["bodies"]:
            if nm not in names:
                raise SceneError(f"{source}: pairs[{j}].bodies: unknown body {nm!r}")
        pair_laws.append((law_entry(pr, f"{source}: pairs[{j}]"), tuple(pr["bodies"])))
    out = doc.get("output", {})
    return HostScene(source, sc.get("name", Path(source).stem), sc.get("description", ""),
                     duration, float(host_dt), backend, doc, law, pair_laws,
                     friction_entry(contact, f"{source}: contact"), out.get("format", "npz"),
                     [], twin=twin)
