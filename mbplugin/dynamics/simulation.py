"""Running a world over time: recording, energy accounting, bounces, step advice, output files.

:class:`Simulation` integrates a :class:`~mbplugin.dynamics.world.World` and records, every
``record_every`` accepted steps (and at every contact event):

* the bodies' state (position, quaternion, velocity, body-frame angular velocity);
* the active contacts (key, bodies, delta, ddelta, normal force, law ODE states);
* the energies: kinetic, gravitational potential, elastic energy stored in the contacts,
  dissipated (normal-contact work not stored, plus friction), work of the external loads.

Energy balance (exact for the exact solution)::

    kinetic + potential + stored + dissipated - external_work = constant

``energy_drift`` in the summary is the largest relative deviation of that sum from its initial
value (relative to the largest kinetic-plus-potential energy range of the run).

Bounces: one record per contact that started and ended, with Newton's c_r = v_out / v_in
(approach speed latched at onset, separation speed at the end by Eq. 17 of Milehins & Marghitu
2026).

Output (:meth:`SimulationResult.write`): ``result.npz`` or ``bodies.csv``/``contacts.csv``/
``energy.csv``/``bounces.csv``, and ``summary.json``, each written to a temporary file in the
output directory and renamed into place (a reader never sees a half-written file).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.dynamics.integrators import FIXED_METHODS, IntegratorSettings, RunStats, integrate
from mbplugin.dynamics.world import World
from mbplugin.errors import ParameterError
from mbplugin.formatting import json_safe

FORMATS = ("npz", "csv")
#: With an adaptive integrator the step advice is informative only: sample every n-th record.
ADVISE_EVERY_RECORDS = 50


@dataclass(frozen=True)
class RecordSettings:
    """What to record: every ``every``-th accepted step (events always), bodies, contacts."""

    every: int = 1
    bodies: bool = True
    contacts: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
            raise ParameterError(
                f"output.record_every = {self.every!r} is outside its allowed range [1, inf)"
            )


@dataclass
class SimulationResult:
    """Everything a run produced (SI units; arrays indexed by record, then body/contact)."""

    body_names: list[str]
    t: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    vel: np.ndarray
    omega: np.ndarray
    energy: dict[str, np.ndarray]
    contacts: dict[str, np.ndarray]
    bounces: list[dict[str, Any]]
    stats: RunStats
    duration: float
    advice: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    name: str = ""
    state_names: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    final_state: np.ndarray | None = field(default=None, repr=False)

    @property
    def energy_drift(self) -> float:
        """max |E_total(t) - E_total(0)| / E_scale (see the module docstring)."""
        e = self.energy
        if not len(e.get("total", ())):
            return math.nan
        total = e["total"]
        mech = e["kinetic"] + e["potential"]
        scale = max(float(np.max(e["kinetic"])), float(np.ptp(mech)), float(np.ptp(e["potential"])),
                    abs(float(total[0])) if abs(float(total[0])) > 0 else 0.0, 1e-300)
        return float(np.max(np.abs(total - total[0])) / scale)

    def summary(self) -> dict[str, Any]:
        """The JSON summary (``mbplugin run --json``)."""
        st = self.stats
        out: dict[str, Any] = {
            "scene": self.name,
            "steps": int(st.steps),
            "events": int(st.events),
            "rhs_evaluations": int(st.nfev),
            "wall_time": float(st.wall_time),
            "sim_time": float(st.t_end),
            "energy_drift": self.energy_drift,
            "bounces": self.bounces,
            "bodies": list(self.body_names),
            "records": len(self.t),
        }
        if st.solver_steps:
            out["solver_steps"] = dict(st.solver_steps)
        if len(self.energy.get("total", ())):
            out["energy_final"] = {k: float(v[-1]) for k, v in self.energy.items()}
            out["energy_initial"] = {k: float(v[0]) for k, v in self.energy.items()}
        if self.advice:
            out["step_advice"] = self.advice
        if self.warnings:
            out["warnings"] = list(self.warnings)
        out.update(self.extra)
        return out

    # -- files ----------------------------------------------------------------------------------
    def write(self, out_dir: str | os.PathLike[str], fmt: str = "npz") -> list[Path]:
        """Write the records and ``summary.json`` into ``out_dir`` (created); returns the paths."""
        if fmt not in FORMATS:
            raise ParameterError(f"output.format = {fmt!r} is not one of {{npz, csv}}")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if fmt == "npz":
            arrays: dict[str, np.ndarray] = {
                "t": self.t, "pos": self.pos, "quat": self.quat, "vel": self.vel,
                "omega": self.omega, "body_names": np.array(self.body_names),
            }
            arrays.update({f"energy_{k}": v for k, v in self.energy.items()})
            arrays.update({f"contact_{k}": v for k, v in self.contacts.items()})
            buf = io.BytesIO()
            np.savez_compressed(buf, **arrays)
            written.append(_atomic_write(out / "result.npz", buf.getvalue()))
        else:
            written.append(_atomic_write(out / "bodies.csv", self._bodies_csv().encode()))
            written.append(_atomic_write(out / "contacts.csv", self._contacts_csv().encode()))
            written.append(_atomic_write(out / "energy.csv", self._energy_csv().encode()))
            written.append(_atomic_write(out / "bounces.csv", self._bounces_csv().encode()))
        text = json.dumps(json_safe(self.summary()), indent=2, allow_nan=False)
        written.append(_atomic_write(out / "summary.json", text.encode()))
        return written

    def _bodies_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["t", "body", "x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz",
                    "wx", "wy", "wz"])
        for k in range(len(self.t)):
            for i, name in enumerate(self.body_names):
                w.writerow([repr(float(self.t[k])), name, *map(_f, self.pos[k, i]),
                            *map(_f, self.quat[k, i]), *map(_f, self.vel[k, i]),
                            *map(_f, self.omega[k, i])])
        return buf.getvalue()

    def _contacts_csv(self) -> str:
        c = self.contacts
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        ns = c["state"].shape[1] if "state" in c and c["state"].ndim == 2 else 0
        names = self.state_names[:ns] + [f"state{j}" for j in range(len(self.state_names), ns)]
        w.writerow(["t", "key", "body_a", "body_b", "delta", "ddelta", "force", *names])
        for k in range(len(c.get("t", ()))):
            w.writerow([_f(c["t"][k]), int(c["key"][k]), self._name(int(c["a"][k])),
                        self._name(int(c["b"][k])), _f(c["delta"][k]), _f(c["ddelta"][k]),
                        _f(c["force"][k]), *map(_f, c["state"][k, :ns])])
        return buf.getvalue()

    def _energy_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        keys = list(self.energy)
        w.writerow(["t", *keys])
        for k in range(len(self.t)):
            w.writerow([_f(self.t[k]), *(_f(self.energy[key][k]) for key in keys)])
        return buf.getvalue()

    def _bounces_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        cols = ["body", "other", "t", "t_out", "v_in", "v_out", "cr"]
        w.writerow(cols)
        for b in self.bounces:
            w.writerow([b[c] if isinstance(b[c], str) else _f(b[c]) for c in cols])
        return buf.getvalue()

    def _name(self, i: int) -> str:
        return self.body_names[i] if 0 <= i < len(self.body_names) else "world"


def _f(x: Any) -> str:
    return repr(float(x))


def _atomic_write(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


class Simulation:
    """A world, how long to run it, how to integrate and what to record."""

    def __init__(
        self,
        world: World,
        duration: float,
        integrator: IntegratorSettings | None = None,
        record: RecordSettings | None = None,
        name: str = "",
        advise: bool = True,
    ) -> None:
        if not (isinstance(duration, int | float) and math.isfinite(duration) and duration > 0):
            raise ParameterError(f"duration = {duration!r} s is outside its allowed range (0, inf)")
        self.world = world
        self.duration = float(duration)
        self.integrator = integrator or IntegratorSettings()
        self.record = record or RecordSettings()
        self.name = name
        self.advise = advise

    def run(self, progress: Callable[[float], None] | None = None) -> SimulationResult:
        """Integrate from t = 0 to the duration; returns the recorded result."""
        w = self.world
        n = w.n
        contacts = w.contacts
        rec_t: list[float] = []
        rec_y: list[np.ndarray] = []
        energy: dict[str, list[float]] = {k: [] for k in (
            "kinetic", "potential", "stored", "dissipated", "external_work", "total")}
        c_rows: dict[str, list[np.ndarray]] = {k: [] for k in (
            "t", "key", "a", "b", "delta", "ddelta", "force", "state")}
        counter = {"steps": 0}
        fixed = self.integrator.method in FIXED_METHODS
        advice: dict[str, Any] = {"h_stable_min": math.inf}
        warn: list[str] = []
        every = self.record.every
        rec_bodies = self.record.bodies
        rec_contacts = self.record.contacts and contacts is not None
        advise = self.advise and contacts is not None
        method = self.integrator.method if fixed else "symplectic_euler"
        advise_every = max(1, every)

        step_times: list[float] = []

        def callback(t: float, y: np.ndarray, event: str) -> None:
            if event in ("", "event"):
                step_times.append(t)
            counter["steps"] += 1 if event == "" else 0
            if (event == "" and counter["steps"] % every) or (event == "sample" and every > 1):
                if advise and fixed and counter["steps"] % advise_every == 0:
                    self._advise(y, method, advice)
                return
            rec_t.append(t)
            rec_y.append(y[: 13 * n].copy() if rec_bodies else y[: 0].copy())
            pos, _quat, vel, omega = w.bodies.layout.split(y)
            ke, pe = w.mechanical_energy(pos, vel, omega)
            _, work = w.split(y)
            stored = contacts.stored_energy(y) if contacts is not None else 0.0
            diss = float(work[0] + work[1] - stored)
            energy["kinetic"].append(ke)
            energy["potential"].append(pe)
            energy["stored"].append(stored)
            energy["dissipated"].append(diss)
            energy["external_work"].append(float(work[2]))
            energy["total"].append(ke + pe + stored + diss - float(work[2]))
            if rec_contacts:
                tab = contacts.contact_table(y)
                m = len(tab["key"])
                c_rows["t"].append(np.full(m, t))
                for k in ("key", "a", "b", "delta", "ddelta", "force", "state"):
                    c_rows[k].append(tab[k])
            if advise and (fixed or len(rec_t) % ADVISE_EVERY_RECORDS == 1):
                self._advise(y, method, advice)

        y0 = w.pack()
        y_end, stats = integrate(w, y0, 0.0, self.duration, self.integrator, callback, progress)
        stats.step_times = np.array(step_times)
        if advise and math.isfinite(advice["h_stable_min"]):
            h = advice["h_stable_min"]
            advice["recommended_dt"] = 0.5 * h
            if fixed and self.integrator.dt is not None and self.integrator.dt > h:
                msg = (f"integrator.dt = {self.integrator.dt:g} s exceeds the stable step "
                       f"{h:.3g} s of the stiffest contact ({advice.get('between', '?')}); "
                       f"use dt <= {0.5 * h:.3g} s")
                warn.append(msg)
                warnings.warn(msg, stacklevel=2)
        else:
            advice = {}
        ns = contacts.ns if contacts is not None else 0
        contacts_out: dict[str, np.ndarray] = {}
        if rec_contacts:
            for k, parts in c_rows.items():
                if k == "state":
                    contacts_out[k] = (np.concatenate(parts) if parts else np.zeros((0, ns)))
                else:
                    dt = np.int64 if k in ("key", "a", "b") else float
                    contacts_out[k] = np.concatenate(parts).astype(dt) if parts else np.zeros(
                        0, dtype=dt)
        Y = np.array(rec_y) if rec_bodies else np.zeros((len(rec_t), 13 * n))
        K = len(rec_t)
        pos = Y[:, : 3 * n].reshape(K, n, 3)
        quat = Y[:, 3 * n : 7 * n].reshape(K, n, 4)
        vel = Y[:, 7 * n : 10 * n].reshape(K, n, 3)
        omega = Y[:, 10 * n : 13 * n].reshape(K, n, 3)
        bounces = self._bounces()
        state_names: list[str] = []
        if contacts is not None:
            for law in contacts.laws:
                for j, nm in enumerate(law.state_names):
                    if j >= len(state_names):
                        state_names.append(nm)
                    elif state_names[j] != nm:
                        state_names[j] = f"state{j}"
        return SimulationResult(
            body_names=list(w.bodies.names), t=np.array(rec_t), pos=pos, quat=quat, vel=vel,
            omega=omega, energy={k: np.array(v) for k, v in energy.items()},
            contacts=contacts_out, bounces=bounces, stats=stats, duration=self.duration,
            advice=advice, warnings=warn, name=self.name, state_names=state_names,
            final_state=y_end,
        )

    def _advise(self, y: np.ndarray, method: str, advice: dict[str, Any]) -> None:
        contacts = self.world.contacts
        if contacts is None or contacts.n_active == 0:
            return
        h, info = contacts.stable_step(y, method)
        if h < advice["h_stable_min"]:
            advice["h_stable_min"] = h
            names = self.world.bodies.names

            def nm(i: int) -> str:
                return names[i] if 0 <= i < len(names) else "world"

            if info:
                advice["between"] = f"{nm(int(info['a']))}-{nm(int(info['b']))}"
                advice["stiffness"] = info["k"]
                advice["damping"] = info["c"]
                advice["m_eff"] = info["m_eff"]
                advice["frequency_hz"] = info["omega"] / (2 * math.pi)

    def _bounces(self) -> list[dict[str, Any]]:
        contacts = self.world.contacts
        if contacts is None:
            return []
        names = self.world.bodies.names

        def nm(i: int) -> str:
            return names[i] if 0 <= i < len(names) else "world"

        out = []
        for r in contacts.store.bounces():
            a, b = int(r["a"]), int(r["b"])
            # report the movable body first
            body, other = (b, a) if (b >= 0 and not self.world.bodies.fixed[b]) else (a, b)
            out.append({
                "body": nm(body), "other": nm(other), "t": float(r["t_in"]),
                "t_out": float(r["t_out"]), "v_in": float(r["v_in"]), "v_out": float(r["v_out"]),
                "cr": float(r["cr"]),
            })
        return out
