"""Scene files run inside a host engine (``world.backend = "mujoco"``; the PyBullet backend's
``mbplugin.bullet.scene`` has the same checks and result, to be ported onto this module).

What a host backend accepts from the scene format (``docs/scenes.md``): ``[world] gravity``,
``host_dt`` (the host's step, s), ``[materials]``, ``[contact]`` (law, params,
params_optional, friction), ``[[pairs]]`` with ``bodies``, and ``[[bodies]]`` of the shapes the
backend builds with ``radius`` / ``half_extents`` / ``half_length``, ``material``, ``mass`` or
``density``, ``position``, ``orientation``, ``velocity``, ``angular_velocity``, ``fixed``.
``count`` / ``grid``, loads and ``[integrator]`` are standalone-engine features: a clear error
names them.

The run gives the standalone engine's summary keys: ``steps`` (host steps), ``events`` (contact
onsets and separations), ``wall_time``, ``sim_time``, ``energy_drift`` (``None``: the dissipated
work is not tracked inside the host), ``bounces`` (body, other, t, t_out, v_in, v_out, cr),
``bodies``, ``records``, plus ``backend`` and ``host_dt``.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError
from mbplugin.formatting import dumps_json

#: body keys of the standalone engine that a host backend does not take
UNSUPPORTED_BODY = ("count", "grid", "spacing", "jitter", "seed", "rpy_deg", "gravity_scale",
                    "inertia")


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
    """A scene document checked for a host backend: the parts every host reads."""

    path: str
    name: str
    description: str
    duration: float
    host_dt: float
    doc: dict[str, Any]
    law: Any
    pair_laws: list[tuple[Any, tuple[str, str]]]
    friction: Any
    output_format: str = "npz"
    plots: list[str] = field(default_factory=list)
    #: the same scene built for the standalone engine (its checks and its preflight)
    twin: Any = None


def engine_twin(doc: dict[str, Any], source: str, engine_build: Callable[..., Any]) -> Any:
    """The scene built by the standalone engine's loader ``engine_build(doc, source)`` (its
    ``simulation``): every check of a body, material, law and pair, with the engine's
    messages, applies to a host backend's scene too (one set of checks for every backend)."""
    engine_doc = dict(doc)
    engine_doc["world"] = {k: v for k, v in doc.get("world", {}).items()
                           if k not in ("backend", "host_dt")}
    return engine_build(engine_doc, source).simulation


def check_host_scene(doc: dict[str, Any], source: str, backend: str,
                     law_entry: Callable[..., Any], friction_entry: Callable[..., Any],
                     shapes: Sequence[str], default_dt: float,
                     engine_build: Callable[..., Any] | None = None) -> HostScene:
    """A :class:`HostScene` from a resolved, validated scene document (the module docstring's
    rules; ``shapes`` the body shapes the backend builds, ``default_dt`` its host step).
    ``law_entry(table, where)`` and ``friction_entry(table, where)`` are the scene loader's
    resolvers of ``[contact]`` / ``[[pairs]]`` laws and friction (one rule for every
    backend); ``engine_build`` the standalone engine's builder (:func:`engine_twin`)."""
    from mbplugin.scene import SceneError

    sc = doc["scene"]
    duration = float(sc["duration"])
    if not (math.isfinite(duration) and duration > 0):
        raise SceneError(f"{source}: scene.duration: {duration:g} s is outside its allowed "
                         "range (0, inf)")
    host_dt = doc.get("world", {}).get("host_dt", default_dt)
    if not (isinstance(host_dt, int | float) and 1e-6 <= host_dt <= 0.1):
        raise SceneError(f"{source}: world.host_dt = {host_dt!r} s is outside its allowed "
                         "range [1e-6, 0.1]")
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
        if b["shape"] not in shapes:
            raise SceneError(f"{source}: bodies[{i}].shape = {b['shape']!r} is not one of "
                             f"{{{', '.join(shapes)}}} with world.backend = {backend!r}")
        if b["shape"] == "plane" and not b.get("fixed", False):
            raise SceneError(f"{source}: bodies[{i}]: a plane must have fixed = true")
        if not b.get("fixed", False) and "mass" not in b and "density" not in b and \
                "density" not in doc.get("materials", {}).get(b.get("material"), {}):
            raise SceneError(f"{source}: bodies[{i}]: missing field 'mass' (or 'density')")
        names.append(b["name"])
    twin = engine_twin(doc, source, engine_build) if engine_build is not None else None
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
                     duration, float(host_dt), doc, law, pair_laws,
                     friction_entry(contact, f"{source}: contact"), out.get("format", "npz"),
                     [], twin=twin)
