"""Running a world over time: recording, energy accounting, bounces, step advice, output files.

:class:`Simulation` integrates a :class:`~mbplugin.dynamics.world.World` and records, every
``record_every`` accepted steps (and at every contact event):

* the bodies' state (position, quaternion, velocity, body-frame angular velocity);
* the active contacts (key, bodies, delta, ddelta, normal force, law ODE states);
* the energies: kinetic, gravitational potential, elastic energy stored in the contacts,
  dissipated (normal-contact work not stored, plus friction), work of the external loads.

Energy balance (exact for the exact solution)::

    kinetic + potential + stored + dissipated - external_work = constant

``stored`` at t = 0 is the elastic energy of the contacts present in the initial state (an
accepted pre-load, see :mod:`mbplugin.dynamics.preflight`); ``dissipated`` is the contact work
minus the change of the stored energy, so the initial stored energy is part of the balance.

``energy_drift`` in the summary is the largest deviation of that sum from its initial value,
relative to the energy the run had to spend: initial kinetic + initial stored + the potential
energy released (initial minus lowest potential) + the largest external work. It is not capped:
a blow-up reads a drift of 10 or 1e6. ``energy_rise`` is the largest rise of the mechanical
energy (kinetic + potential + stored - external work) on the same scale: contacts only store or
dissipate, so a rise is energy created by the integration; above ``DRIFT_WARN`` the run is
flagged as ``diverged`` (a warning; ``mbplugin run --strict`` exits non-zero). A drift above
``DRIFT_WARN`` without a rise is warned about as an inaccurate dissipation account (the fixed-step
methods integrate the contact work to first order in the step).

Bounces: one record per contact that started and ended, with Newton's c_r = v_out / v_in
(approach speed latched at onset, separation speed at the end by Eq. 17 of Milehins & Marghitu
2026). A contact that starts without an approach speed (released touching, pushed into contact
by a neighbour, resting chatter of a fixed-step run: ``v_in <= v_rest``, see
:func:`rest_speed`) is not a bounce: it is reported in ``contacts_at_rest`` without a c_r.

Before the run (:meth:`Simulation.preflight`): initial overlaps are checked and the fixed-step
work and record memory estimated (:mod:`mbplugin.dynamics.preflight`). During a fixed-step run
the step advisor looks at every step; a step above its recommendation is warned about once.

During the run the records are held in memory; a run whose records grow past
``RECORD_MEMORY_FRACTION`` of the memory available at its start stops with a
:class:`~mbplugin.dynamics.preflight.RunTooLargeError` (``integrator.max_steps`` bounds the
steps the same way, :mod:`mbplugin.dynamics.integrators`).

Output (:meth:`SimulationResult.write`): ``result.npz`` or ``bodies.csv``/``contacts.csv``/
``energy.csv``, always ``bounces.csv`` (every bounce and contact at rest) and ``summary.json``
(at most ``MAX_SUMMARY_ROWS`` rows of each list, with the totals), written with the user's
usual file mode into a temporary sibling of the output directory that then replaces it as a
whole (:func:`mbplugin.dynamics.outputs.staged_dir`): a reader, or a Ctrl-C, sees the files of
one run, all or none.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.dynamics import outputs, preflight
from mbplugin.dynamics.integrators import (
    FIXED_METHODS,
    N_WORK,
    IntegratorSettings,
    RunStats,
    integrate,
)
from mbplugin.dynamics.world import World
from mbplugin.errors import ParameterError
from mbplugin.formatting import json_safe

FORMATS = ("npz", "csv")
#: With an adaptive integrator the step advice is informative only: sample every n-th record.
ADVISE_EVERY_RECORDS = 50
#: Fixed steps: the advisor re-linearises a contact whose overlap grew by this fraction beyond
#: the largest it had at an earlier look, at every onset and end, and every n-th step anyway.
ADVISE_GROWTH = 0.01
ADVISE_EVERY_STEPS = 16
#: The advisor recommends this fraction of the linear stability limit ...
STABILITY_SAFETY = 0.5
#: ... and at most 1/ACCURACY_STEPS of the shortest contact time scale (m/(k v^(n-1)))^(1/(n+1))
#: (a Hertz contact lasts about 3.2 of them: some 16 steps per contact).
ACCURACY_STEPS = 5.0
#: Relative energy-balance drift above which a run is flagged as diverging.
DRIFT_WARN = 0.02
#: A contact whose approach speed is at most REST_SPEED_REL times the run's largest body speed
#: (or, with fixed steps, REST_SPEED_STEPS |g| dt) started at rest: not a bounce.
REST_SPEED_REL = 1e-5
REST_SPEED_STEPS = 4.0
#: Rows of each list (bounces, contacts at rest, final contacts) kept in summary.json.
MAX_SUMMARY_ROWS = 200
#: A run stops (RunTooLargeError) when its records take more than this fraction of the memory
#: available at its start.
RECORD_MEMORY_FRACTION = 0.5
#: Bytes of a Python float kept in a list (the object and its pointer).
_PY_FLOAT = 32


class SimulationWarning(UserWarning):
    """A run finished but something in it deserves attention (the step, the energy balance)."""


def rest_speed(v_char: float, gravity: float, dt: float | None) -> float:
    """Approach speed (m/s) at or below which a contact counts as starting at rest."""
    v = REST_SPEED_REL * max(v_char, 0.0)
    if dt is not None:
        v = max(v, REST_SPEED_STEPS * gravity * dt)
    return max(v, 1e-300)


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
    contacts_at_rest: list[dict[str, Any]] = field(default_factory=list)
    final_contacts: list[dict[str, Any]] = field(default_factory=list)
    initial_overlaps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def energy_scale(self) -> float:
        """The energy (J) the run had to spend: initial kinetic + initial stored + potential
        released (initial minus lowest) + largest |external work|."""
        e = self.energy
        if not len(e.get("total", ())):
            return math.nan
        pe = e["potential"]
        return (float(e["kinetic"][0]) + float(e["stored"][0])
                + max(float(pe[0] - np.min(pe)), 0.0)
                + float(np.max(np.abs(e["external_work"]))))

    @property
    def energy_drift(self) -> float:
        """max |E_total(t) - E_total(0)| / :attr:`energy_scale`, not capped (module docstring)."""
        e = self.energy
        if not len(e.get("total", ())):
            return math.nan
        total = e["total"]
        return self._relative(float(np.max(np.abs(total - total[0]))))

    def _relative(self, dev: float) -> float:
        if dev <= 0.0:
            return 0.0
        e = self.energy
        scale = self.energy_scale
        # a scene with nothing to spend (bodies at rest, no pre-load): relative to the largest
        # energy seen, else infinite
        if not scale > 0.0:
            scale = max(float(np.max(np.abs(e["kinetic"]))), float(np.ptp(e["potential"])))
        return dev / scale if scale > 0.0 else math.inf

    @property
    def energy_rise(self) -> float:
        """Largest rise of the mechanical energy (kinetic + potential + stored) above its
        initial value plus the external work, relative to :attr:`energy_scale`: the energy the
        integration created (0 for an exact solution; contacts only dissipate or store)."""
        e = self.energy
        if not len(e.get("total", ())):
            return math.nan
        mech = e["kinetic"] + e["potential"] + e["stored"] - e["external_work"]
        return self._relative(float(np.max(mech - mech[0])))

    @property
    def diverged(self) -> bool:
        """True when the integration created more than ``DRIFT_WARN`` of the run's energy."""
        d = self.energy_rise
        return bool(not math.isnan(d) and d > DRIFT_WARN)

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
            "energy_rise": self.energy_rise,
            "diverged": self.diverged,
            "bounces": self.bounces[:MAX_SUMMARY_ROWS],
            "bounces_total": len(self.bounces),
            "contacts_at_rest": self.contacts_at_rest[:MAX_SUMMARY_ROWS],
            "contacts_at_rest_total": len(self.contacts_at_rest),
            "final_contacts": self.final_contacts[:MAX_SUMMARY_ROWS],
            "final_contacts_total": len(self.final_contacts),
            "bodies": list(self.body_names),
            "records": len(self.t),
        }
        if self.initial_overlaps:
            out["initial_overlaps"] = self.initial_overlaps[:MAX_SUMMARY_ROWS]
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
    def write(self, out_dir: str | os.PathLike[str], fmt: str = "npz",
              also: list[Path] | None = None, *, into: str | os.PathLike[str] | None = None
              ) -> list[Path]:
        """Write the records, ``bounces.csv`` and ``summary.json`` into ``out_dir``; returns
        their paths there. ``out_dir`` must be empty, new or hold an earlier run; the files go
        to a temporary sibling directory that then replaces ``out_dir`` as a whole (a Ctrl-C
        leaves the earlier run as it was; see :func:`mbplugin.dynamics.outputs.staged_dir`).
        ``also`` lists further files of this run (plots), recorded in the summary's
        ``output`` (those already written in ``out_dir`` are kept). ``into``: write into this
        directory instead, a :func:`~mbplugin.dynamics.outputs.staged_dir` the caller holds
        with the run's other files, which becomes ``out_dir`` when the caller's block ends."""
        if fmt not in FORMATS:
            raise ParameterError(f"output.format = {fmt!r} is not one of {{npz, csv}}")
        out = Path(out_dir)
        if into is None:
            outputs.prepare_output_dir(out)
            with outputs.staged_dir(out) as stage:
                kept = []
                for p in also or []:
                    if Path(p).is_file():
                        shutil.copy2(p, stage / Path(p).name)
                    kept.append(stage / Path(p).name)
                return self.write(out, fmt, also=kept, into=stage)
        stage = Path(into)
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
            written.append(outputs.atomic_write(stage / "result.npz", buf.getvalue()))
        else:
            written.append(outputs.atomic_write(stage / "bodies.csv",
                                                self._bodies_csv().encode()))
            written.append(outputs.atomic_write(stage / "contacts.csv",
                                                self._contacts_csv().encode()))
            written.append(outputs.atomic_write(stage / "energy.csv",
                                                self._energy_csv().encode()))
        written.append(outputs.atomic_write(stage / "bounces.csv", self._bounces_csv().encode()))
        summary_path = stage / "summary.json"
        files = [out / p.name for p in [*written, *(also or []), summary_path]]
        summary = self.summary()
        summary["output"] = [str(p) for p in files]
        text = json.dumps(json_safe(summary), indent=2, allow_nan=False)
        written.append(outputs.atomic_write(summary_path, text.encode()))
        return [out / p.name for p in written]

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
        """Every bounce, then every contact at rest (``kind``; c_r empty for the latter)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        cols = ["body", "other", "t", "t_out", "v_in", "v_out", "cr"]
        w.writerow([*cols, "kind"])
        for kind, rows in (("bounce", self.bounces), ("at_rest", self.contacts_at_rest)):
            for b in rows:
                w.writerow([*("" if c not in b else b[c] if isinstance(b[c], str)
                               else _f(b[c]) for c in cols), kind])
        return buf.getvalue()

    def _name(self, i: int) -> str:
        return self.body_names[i] if 0 <= i < len(self.body_names) else "world"


def _f(x: Any) -> str:
    return repr(float(x))


class Simulation:
    """A world, how long to run it, how to integrate and what to record.

    >>> sim = Simulation(world, 1.0, IntegratorSettings(method="adaptive"))
    >>> result = sim.run()            # checks first (preflight), then integrates
    >>> result.summary()["bounces"]
    """

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
        self._preflight: dict[str, Any] | None = None

    # -- before the run ---------------------------------------------------------------------------
    def preflight(self) -> dict[str, Any]:
        """Check the run before it starts (raises ParameterError subclasses; see
        :mod:`mbplugin.dynamics.preflight`): initial overlaps (rejected beyond the pre-load
        tolerance, else listed with their stored energy) and the fixed-step work and record
        memory (refused beyond the machine, warned about when long). Cached."""
        if self._preflight is not None:
            return self._preflight
        w = self.world
        y0 = w.pack()
        overlaps, stored = preflight.check_initial_overlaps(w, y0)
        contacts = w.contacts
        est = preflight.estimate_run(
            w.n, self.duration, self.integrator, self.record,
            n_contacts=contacts.n_active if contacts is not None else 0,
            n_state=contacts.ns if contacts is not None else 0)
        msgs = preflight.check_run_size(est, self.integrator.dt)
        msgs += preflight.check_adaptive_run(
            w.n, self.duration, self.integrator, self.record,
            n_contacts=contacts.n_active if contacts is not None else 0,
            n_state=contacts.ns if contacts is not None else 0)
        preflight.announce_run(w.n, est["steps"])
        self._preflight = {"initial_overlaps": overlaps, "initial_stored": stored,
                           "estimate": est, "warnings": msgs}
        return self._preflight

    def run(self, progress: Callable[[float], None] | None = None) -> SimulationResult:
        """Check (:meth:`preflight`), then integrate from t = 0 to the duration; returns the
        recorded result."""
        pre = self.preflight()
        self._preflight = None  # the world may change before a next run
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
        advice: dict[str, Any] = {"h_stable_min": math.inf, "time_scale_min": math.inf}
        warn: list[str] = list(pre["warnings"])
        every = self.record.every
        rec_bodies = self.record.bodies
        rec_contacts = self.record.contacts and contacts is not None
        advise = self.advise and contacts is not None
        method = self.integrator.method if fixed else "symplectic_euler"
        stored0: list[float] = []
        vmax = [0.0]
        # the largest overlap relative to the smaller body's size (preflight.track_overlaps)
        peak: dict[str, Any] = {}
        sizes = (preflight.body_sizes(contacts.model, n) if contacts is not None
                 else np.zeros(0))
        # fixed steps: the normal-contact work by the trapezoidal rule over each step's actual
        # displacement, sum (F_n + F_n+1)/2 (delta_n+1 - delta_n) (second order, consistent with
        # the stored energy), instead of the integrator's explicit F_n ddelta_n h (first order:
        # it under-reads the work of every contact by about h int F^2/m dt)
        trap = {"w": 0.0, "keys": np.zeros(0, np.int64), "f": np.zeros(0), "d": np.zeros(0)}
        trapezoid = fixed and contacts is not None

        seen = {"keys": None, "d": np.zeros(0), "age": 0}

        def needs_advice() -> bool:
            """True when the contacts of this step may be stiffer than at the advisor's last
            look: a contact started or ended, an overlap grew by ADVISE_GROWTH beyond the
            largest seen for that contact (the laws stiffen with the overlap), or
            ADVISE_EVERY_STEPS steps passed."""
            keys, d = trap["keys"], trap["d"]
            seen["age"] += 1
            if not len(keys):
                seen["keys"] = keys
                return False
            if (seen["keys"] is None or len(seen["keys"]) != len(keys)
                    or not np.array_equal(seen["keys"], keys)):
                seen["keys"], seen["d"], seen["age"] = keys, d.copy(), 0
                return True
            grew = d > seen["d"] * (1.0 + ADVISE_GROWTH) + 1e-300
            if grew.any() or seen["age"] >= ADVISE_EVERY_STEPS:
                seen["d"], seen["age"] = np.maximum(seen["d"], d), 0
                return True
            return False

        def trapezoid_work(y: np.ndarray) -> float:
            tab = contacts.contact_table(y)
            keys, f, d = tab["key"], tab["force"], tab["delta"]
            order = np.argsort(keys, kind="stable")
            keys, f, d = keys[order], f[order], d[order]
            pk, pf, pd = trap["keys"], trap["f"], trap["d"]
            pos = np.searchsorted(pk, keys)
            pos_c = np.minimum(pos, max(len(pk) - 1, 0))
            known = (pos < len(pk)) & (pk[pos_c] == keys) if len(pk) else np.zeros(len(keys), bool)
            f0 = np.where(known, pf[pos_c] if len(pk) else 0.0, 0.0)
            d0 = np.where(known, pd[pos_c] if len(pk) else 0.0, 0.0)  # onset: from delta = 0
            w_ = float(np.sum(0.5 * (f0 + f) * (d - d0)))
            # contacts that ended during the step: their force fell to 0 by delta = 0
            gone = ~np.isin(pk, keys)
            if gone.any():
                w_ += float(np.sum(0.5 * pf[gone] * (0.0 - pd[gone])))
            trap["w"] += w_
            trap["keys"], trap["f"], trap["d"] = keys, f, d
            return trap["w"]

        step_times: list[float] = []
        # the records live in memory until the run ends: stop with a clear error before they
        # take more than half the memory that was available at the start
        mem = {"used": 0, "limit": RECORD_MEMORY_FRACTION * preflight.available_memory()}
        rec_bytes = _PY_FLOAT * 7 + (8 * 13 * n if rec_bodies else 0)
        row_bytes = 8 * (7 + (contacts.ns if contacts is not None else 0))

        def account(nbytes: int, t: float) -> None:
            mem["used"] += nbytes
            if mem["used"] > mem["limit"]:
                raise preflight.RunTooLargeError(
                    f"the run's records reached {preflight.human_bytes(mem['used'])} (more than "
                    f"{RECORD_MEMORY_FRACTION:g} of the memory available at its start) at t = "
                    f"{t:.6g} s of {self.duration:g} s after {counter['steps']} steps; raise "
                    f"output.record_every, shorten scene.duration or check integrator.max_step")

        def callback(t: float, y: np.ndarray, event: str) -> None:
            if event in ("", "event"):
                step_times.append(t)
                account(_PY_FLOAT, t)
            counter["steps"] += 1 if event == "" else 0
            if trapezoid and event != "sample":
                if event == "start":
                    trap["keys"] = np.zeros(0, np.int64)
                    trapezoid_work(y)
                    trap["w"] = 0.0  # an initial pre-load did no work: its energy is stored
                else:
                    trapezoid_work(y)
                if advise and needs_advice():
                    # the advisor looks at every step of a fixed-step run (not only recorded
                    # ones) and re-linearises where the stable step can have shrunk
                    self._advise(y, method, advice)
            if (event == "" and counter["steps"] % every) or (event == "sample" and every > 1):
                return
            store(np.array([t]), np.asarray(y)[None, :], y)

        def records(ts: np.ndarray, Y: np.ndarray, kind: np.ndarray) -> None:
            """The records of a compiled segment between two contact events (kind 0 step,
            1 sample, 2 event): :func:`callback`'s selection, then one :func:`store`."""
            step = kind == 0.0
            step_times.extend(ts[kind != 1.0].tolist())
            account(_PY_FLOAT * int(np.count_nonzero(kind != 1.0)), float(ts[-1]))
            count = counter["steps"] + np.cumsum(step)
            counter["steps"] = int(count[-1])
            keep = ~((step & (count % every != 0)) | ((kind == 1.0) & (every > 1)))
            if keep.all():
                store(ts, Y)
            elif keep.any():
                store(ts[keep], Y[keep])

        def store(ts: np.ndarray, Y: np.ndarray, y1: np.ndarray | None = None) -> None:
            """Record K states (K, len(y)) with the contact store as it is now: bodies,
            energies and the contacts, each computed for the K states at once (``y1``: the
            state vector of a single record, see :meth:`EngineContacts.records`)."""
            K = len(ts)
            k0 = len(rec_t)
            rec_t.extend(ts.tolist())
            rec_y.append(Y[:, : 13 * n].copy() if rec_bodies else Y[:, :0].copy())
            pos = Y[:, : 3 * n].reshape(K, n, 3)
            vel = Y[:, 7 * n : 10 * n].reshape(K, n, 3)
            omega = Y[:, 10 * n : 13 * n].reshape(K, n, 3)
            if n:
                vmax[0] = max(vmax[0], float(np.max(np.abs(vel))))
            ke, pe = w.mechanical_energy_records(pos, vel, omega)
            n13 = 13 * n + w.n_ode
            work = Y[:, n13 : n13 + N_WORK]
            tab = None
            if contacts is not None:
                # the table also when contacts are not recorded: the overlaps are checked
                stored, tab, counts = contacts.records(Y, table=True, y=y1)
                if tab is not None:
                    preflight.track_overlaps(peak, tab["a"], tab["b"], tab["delta"], sizes,
                                             w.bodies.names)
            else:
                stored = np.zeros(K)
            if not stored0:
                stored0.append(float(stored[0]))
            # the contact work minus the change of the stored energy (an initial pre-load's
            # energy is in "stored" at t = 0, not a negative dissipation)
            w_normal = trap["w"] if trapezoid else work[:, 0]
            diss = w_normal + work[:, 1] - (stored - stored0[0])
            energy["kinetic"].extend(ke.tolist())
            energy["potential"].extend(pe.tolist())
            energy["stored"].extend(stored.tolist())
            energy["dissipated"].extend(diss.tolist())
            energy["external_work"].extend(work[:, 2].tolist())
            energy["total"].extend((ke + pe + stored + diss - work[:, 2]).tolist())
            if rec_contacts and tab is not None:
                c_rows["t"].append(np.repeat(ts, counts))
                for k in ("key", "a", "b", "delta", "ddelta", "force", "state"):
                    c_rows[k].append(tab[k])
                account(row_bytes * len(tab["key"]), float(ts[-1]))
            account(rec_bytes * K, float(ts[-1]))
            if advise and not fixed:
                for i in range(K):
                    if (k0 + i + 1) % ADVISE_EVERY_RECORDS == 1:
                        self._advise(Y[i], method, advice)

        y0 = w.pack()
        y_end, stats = integrate(w, y0, 0.0, self.duration, self.integrator, callback, progress,
                                 records)
        stats.step_times = np.array(step_times)
        advice = self._finish_advice(advice, fixed, warn) if advise else {}
        contacts_out = (_contact_records(c_rows, contacts.ns) if rec_contacts else {})
        Y = (np.concatenate(rec_y) if rec_y else np.zeros((0, 13 * n))) if rec_bodies else (
            np.zeros((len(rec_t), 13 * n)))
        K = len(rec_t)
        pos = Y[:, : 3 * n].reshape(K, n, 3)
        quat = Y[:, 3 * n : 7 * n].reshape(K, n, 4)
        vel = Y[:, 7 * n : 10 * n].reshape(K, n, 3)
        omega = Y[:, 10 * n : 13 * n].reshape(K, n, 3)
        v0 = np.abs(w.bodies.vel) if hasattr(w.bodies, "vel") else np.zeros(1)
        v_char = max(vmax[0], float(np.max(v0)) if np.size(v0) else 0.0)
        v_rest = rest_speed(v_char, float(np.linalg.norm(w.gravity)),
                            self.integrator.dt if fixed else None)
        bounces, at_rest = self._bounces(v_rest)
        state_names = _state_names(contacts.laws) if contacts is not None else []
        final_contacts = self._final_contacts(y_end)
        result = SimulationResult(
            body_names=list(w.bodies.names), t=np.array(rec_t), pos=pos, quat=quat, vel=vel,
            omega=omega, energy={k: np.array(v) for k, v in energy.items()},
            contacts=contacts_out, bounces=bounces, stats=stats, duration=self.duration,
            advice=advice, warnings=warn, name=self.name, state_names=state_names,
            final_state=y_end, contacts_at_rest=at_rest, final_contacts=final_contacts,
            initial_overlaps=pre["initial_overlaps"],
        )
        deep = preflight.overlap_warning(peak)
        if deep:
            warn.append(deep)
        warn.extend(_energy_warnings(result, advice, fixed))
        for msg in warn:
            warnings.warn(msg, SimulationWarning, stacklevel=2)
        return result

    # -- step advice ------------------------------------------------------------------------------
    def _advise(self, y: np.ndarray, method: str, advice: dict[str, Any]) -> None:
        contacts = self.world.contacts
        if contacts is None or contacts.n_active == 0:
            return
        keys = contacts.store.keys
        if keys is not advice.get("_keys"):
            # the contact time scale is latched at onset: look again when the contact set changes
            advice["_keys"] = keys
            advice["time_scale_min"] = min(advice["time_scale_min"], contacts.time_scale())
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

    def _finish_advice(self, advice: dict[str, Any], fixed: bool,
                       warn: list[str]) -> dict[str, Any]:
        """The recommendation (min of the stability and accuracy limits) and, for a fixed step
        above it, one warning."""
        advice.pop("_keys", None)
        h = advice["h_stable_min"]
        tau = advice["time_scale_min"]
        if not (math.isfinite(h) or math.isfinite(tau)):
            return {}
        stab = STABILITY_SAFETY * h
        acc = tau / ACCURACY_STEPS
        advice["recommended_dt"] = min(stab, acc)
        advice["limited_by"] = "stability" if stab <= acc else "accuracy"
        if not math.isfinite(h):
            advice.pop("h_stable_min")
        if not math.isfinite(tau):
            advice.pop("time_scale_min")
        dt = self.integrator.dt
        if fixed and dt is not None:
            advice["dt"] = dt
            rec = advice["recommended_dt"]
            between = advice.get("between", "?")
            if math.isfinite(h) and dt > h:
                warn.append(
                    f"integrator.dt = {dt:g} s exceeds the stable step {h:.3g} s of the "
                    f"stiffest contact ({between}): the run is unstable; use dt <= {rec:.3g} s")
            elif dt > rec * (1.0 + 1e-9):
                why = ("half the stable step of the stiffest contact"
                       if advice["limited_by"] == "stability"
                       else f"1/{ACCURACY_STEPS:g} of the shortest contact time scale")
                warn.append(
                    f"integrator.dt = {dt:g} s is above the step advisor's recommendation "
                    f"{rec:.3g} s ({why}, {between}): bounces and energies are inaccurate")
        return advice

    # -- contacts after the run -------------------------------------------------------------------
    def _final_contacts(self, y: np.ndarray | None) -> list[dict[str, Any]]:
        """The contacts active at the end: bodies, overlap (m), rate (m/s), normal force (N)."""
        contacts = self.world.contacts
        if contacts is None or y is None or contacts.n_active == 0:
            return []
        tab = contacts.contact_table(y)
        names = self.world.bodies.names

        def nm(i: int) -> str:
            return names[i] if 0 <= i < len(names) else "world"

        order = np.argsort(-np.abs(tab["force"]), kind="stable")
        return [{"a": nm(int(tab["a"][j])), "b": nm(int(tab["b"][j])),
                 "delta": float(tab["delta"][j]), "ddelta": float(tab["ddelta"][j]),
                 "force": float(tab["force"][j])} for j in order]

    def _bounces(self, v_rest: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Completed contacts from the store's events: (bounces, contacts at rest). A contact
        whose approach speed at onset is at most ``v_rest`` (m/s) started at rest: it has no
        meaningful c_r and is not a bounce."""
        contacts = self.world.contacts
        if contacts is None:
            return [], []
        names = self.world.bodies.names

        def nm(i: int) -> str:
            return names[i] if 0 <= i < len(names) else "world"

        out: list[dict[str, Any]] = []
        rest: list[dict[str, Any]] = []
        for r in contacts.store.bounces():
            a, b = int(r["a"]), int(r["b"])
            # report the movable body first
            body, other = (b, a) if (b >= 0 and not self.world.bodies.fixed[b]) else (a, b)
            row = {
                "body": nm(body), "other": nm(other), "t": float(r["t_in"]),
                "t_out": float(r["t_out"]), "v_in": float(r["v_in"]), "v_out": float(r["v_out"]),
            }
            if not float(r["v_in"]) > v_rest:
                rest.append(row)
            else:
                row["cr"] = float(r["cr"])
                out.append(row)
        return out, rest


def _contact_records(c_rows: dict[str, list[np.ndarray]], ns: int) -> dict[str, np.ndarray]:
    """The recorded contact rows (per field, the blocks of :meth:`Simulation.run`'s records)
    as one array per field: key, a, b (int64), t, delta, ddelta, force (float) and the law
    states (rows, ``ns``)."""
    out: dict[str, np.ndarray] = {}
    for k, parts in c_rows.items():
        if k == "state":
            out[k] = (np.concatenate(parts) if parts else np.zeros((0, ns)))
        else:
            dt = np.int64 if k in ("key", "a", "b") else float
            out[k] = np.concatenate(parts).astype(dt) if parts else np.zeros(0, dtype=dt)
    return out


def _state_names(laws: Sequence[Any]) -> list[str]:
    """The names of the law-state columns of the records: each law's own where the laws
    agree, ``state{j}`` where they differ."""
    names: list[str] = []
    for law in laws:
        for j, nm in enumerate(law.state_names):
            if j >= len(names):
                names.append(nm)
            elif names[j] != nm:
                names[j] = f"state{j}"
    return names


def _energy_warnings(result: SimulationResult, advice: dict[str, Any],
                     fixed: bool) -> list[str]:
    """The run's energy-balance warnings: energy created (diverging, or too large a step), or
    a balance that closes only to more than DRIFT_WARN of the run's energy; with the advisor's
    recommended step for a fixed-step run."""
    hint = (f" (the advisor recommends dt <= {advice['recommended_dt']:.3g} s)"
            if fixed and "recommended_dt" in advice else "")
    if result.diverged:
        return [f"the mechanical energy rose by {result.energy_rise:.3g} of the run's energy "
                f"({result.energy_scale:.4g} J): the integration creates energy (diverging or "
                f"too large a step); use a smaller step" + hint]
    if result.energy_drift > DRIFT_WARN:
        return [f"the energy balance closes only to {result.energy_drift:.3g} of the run's "
                f"energy ({result.energy_scale:.4g} J): the dissipated energy is inaccurate "
                f"(first order in the step for fixed steps); use a smaller step" + hint]
    return []
