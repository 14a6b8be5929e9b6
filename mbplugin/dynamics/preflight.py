"""Checks made before a run starts: initial overlaps and the work and memory a run will take.

Initial overlaps (policy, documented in ``docs/scenes.md``)
    A contact that exists in the initial state holds elastic energy the bodies never did work
    for. An overlap is accepted as a *pre-load* when it is small:

    * its law's force at that overlap (at the initial approach speed) is at most
      ``PRELOAD_WEIGHTS`` times the weight of all the movable bodies (the most a contact can
      carry at rest under gravity, with a margin: a ball placed at its static indentation, a
      stack placed touching), or
    * the overlap is at most ``OVERLAP_REL_TOL`` of the contact's effective radius (rounding of a
      placement "touching exactly");

    and in any case at most half the width of the thinner of its two shapes along the contact
    normal (:func:`mbplugin.contact.sizes.overlap_limits`, the rule of the PyBullet and MuJoCo
    backends): a soft ball placed 60 % through a 2 mm plate pushes with less than its weight,
    but it is past the plate's mid-plane.

    Larger overlaps raise :class:`InitialOverlapError` before anything is integrated, naming the
    bodies, the overlap, the force and the stored energy. The energy of an accepted pre-load
    (the law's elastic potential, ``stored`` at t = 0) is part of the initial energy, so the
    balance ``kinetic + potential + stored + dissipated - external_work`` stays honest.

Work and memory
    A fixed-step run of ``duration / dt`` steps records ``steps / record_every`` states of
    ``13 n`` numbers each; a run whose records would not fit in the available memory, or that
    would take more than ``MAX_FIXED_STEPS`` steps, raises :class:`RunTooLargeError` with the
    numbers before it starts; one of more than ``WARN_FIXED_STEPS`` steps is warned about.
    The same checks serve every backend: a PyBullet scene's run is ``duration / host_dt`` host
    steps recording ``1 + 6 n`` numbers each (``dt_name`` names the step in the messages).

Work estimates
    A scene whose size makes it heavy work says so before it starts, as a
    :class:`WorkEstimate` warning (``mbplugin run`` prints it at once on stderr): building more
    than ``HEAVY_BODIES`` bodies (~``BUILD_SECONDS_PER_BODY`` each), and a run whose estimated
    wall time exceeds ``HEAVY_SECONDS`` (:func:`estimate_seconds`: fixed steps x bodies x
    ``ENGINE_SECONDS_PER_BODY_STEP``; PyBullet host steps x (``BULLET_SECONDS_PER_STEP`` +
    bodies x ``BULLET_SECONDS_PER_BODY_STEP``); rough figures of BENCHMARKS.md, a 2-core Xeon:
    the pile's 2016 balls at 2.4 ms per step, the PyBullet backend's N = 10 / 1000 spheres at
    0.6 / 8.7 ms per host step).

Overlaps beyond a body's size
    :func:`body_sizes` gives each body's size (the bounding radius of its shapes about its
    centre; a plane or a hole: infinite). A contact whose overlap exceeds the smaller of its two
    bodies' sizes has left any contact law's range (a ball sunk below the floor, two balls
    passed through each other): the run warns (:func:`overlap_warning`), as its bounces mean
    nothing.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from mbplugin.contact.sizes import body_sizes  # noqa: F401  (the engine's checks use it)
from mbplugin.errors import ParameterError

#: An initial overlap whose law force exceeds this many times the total weight is rejected.
PRELOAD_WEIGHTS = 2.0
#: ... unless the overlap is below this fraction of the effective radius (rounding).
OVERLAP_REL_TOL = 1e-6
#: Absolute overlap tolerance (m) where the geometry gives no effective radius.
OVERLAP_ABS_TOL = 1e-9
#: Fixed-step runs longer than this are refused, longer than WARN_FIXED_STEPS warned about.
MAX_FIXED_STEPS = 10**9
WARN_FIXED_STEPS = 10**7
#: Rough engine memory per body (state, mass properties, contact model rows, work arrays), bytes.
BYTES_PER_BODY = 4096
#: Work estimates (module docstring): bodies, seconds.
HEAVY_BODIES = 20_000
HEAVY_SECONDS = 60.0
BUILD_SECONDS_PER_BODY = 1e-4
ENGINE_SECONDS_PER_BODY_STEP = 1.2e-6
BULLET_SECONDS_PER_STEP = 5e-4
BULLET_SECONDS_PER_BODY_STEP = 8e-6


class WorkEstimate(UserWarning):
    """A scene is heavy work: the estimate, said before it starts (module docstring)."""


class InitialOverlapError(ParameterError):
    """Bodies overlap in the initial state by more than the pre-load tolerance."""


class RunTooLargeError(ParameterError):
    """A run would need more memory or steps than this machine can give (numbers in the text)."""


def available_memory() -> int:
    """Bytes of memory available to a new allocation (MemAvailable on Linux, else physical)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3


def human_bytes(n: float) -> str:
    """``1.5e9`` -> ``'1.4 GiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024.0 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024.0
    return f"{n:.3g} PiB"


def check_body_count(n_bodies: int, where: str = "bodies") -> None:
    """Refuse to build more bodies than the memory can hold (before any array is allocated)."""
    need = n_bodies * BYTES_PER_BODY
    avail = available_memory()
    if need > avail:
        raise RunTooLargeError(
            f"{where}: {n_bodies:.4g} bodies need about {human_bytes(need)} of memory "
            f"(~{BYTES_PER_BODY} B each), {human_bytes(avail)} is available; use fewer bodies"
        )


def human_seconds(sec: float) -> str:
    """``5400`` -> ``'1.5 h'``."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if sec >= size:
            return f"{sec / size:.3g} {unit}"
    return f"{sec:.3g} s"


def announce_build(n_bodies: int, where: str = "bodies") -> None:
    """Say (:class:`WorkEstimate`) how long building ``n_bodies`` takes when they are many (and
    fit in memory: more are refused by :func:`check_body_count`, with no estimate first)."""
    if HEAVY_BODIES < n_bodies and n_bodies * BYTES_PER_BODY <= available_memory():
        import warnings

        warnings.warn(f"{where}: building {n_bodies:,} bodies takes about "
                      f"{human_seconds(n_bodies * BUILD_SECONDS_PER_BODY)}", WorkEstimate,
                      stacklevel=2)


def estimate_seconds(n_bodies: int, steps: int | None, backend: str = "standalone"
                     ) -> float | None:
    """Rough wall time (s) of ``steps`` steps of ``n_bodies`` bodies (None: steps unknown)."""
    if steps is None:
        return None
    if backend in ("pybullet", "mujoco"):  # a host step (the same order for both hosts)
        return steps * (BULLET_SECONDS_PER_STEP + n_bodies * BULLET_SECONDS_PER_BODY_STEP)
    return steps * n_bodies * ENGINE_SECONDS_PER_BODY_STEP


def announce_run(n_bodies: int, steps: int | None, backend: str = "standalone") -> str | None:
    """Warn (:class:`WorkEstimate`) and return the estimate of a heavy run, else None: a run
    estimated beyond ``HEAVY_SECONDS``, or adaptive steps (unknown in number) for more than
    ``HEAVY_BODIES`` bodies."""
    import warnings

    sec = estimate_seconds(n_bodies, steps, backend)
    msg = None
    if sec is not None and sec > HEAVY_SECONDS:
        msg = (f"heavy run: {steps:,} steps of {n_bodies:,} bodies, about {human_seconds(sec)} "
               f"of computing (a rough figure of BENCHMARKS.md's machine)")
    elif sec is None and n_bodies > HEAVY_BODIES:
        msg = (f"heavy run: {n_bodies:,} bodies with adaptive steps (their number is not known "
               f"in advance), about {human_seconds(n_bodies * ENGINE_SECONDS_PER_BODY_STEP)} "
               "per step")
    if msg is not None:
        warnings.warn(msg, WorkEstimate, stacklevel=2)
    return msg


def overlap_warning(peak: dict[str, Any] | None) -> str | None:
    """The warning of an overlap beyond a body's size (``peak``: the largest ratio seen, with
    the bodies' names, overlap and size), else None."""
    if not peak or not peak.get("ratio", 0.0) > 1.0:
        return None
    return (f"the overlap of '{peak['a']}' and '{peak['b']}' reached {peak['delta']:.3g} m, "
            f"{peak['ratio']:.3g} times the size of the smaller body ({peak['size']:.3g} m): "
            "the bodies passed into or through each other, far outside any contact law's "
            "range (an impact too fast or a body too heavy for the contact's stiffness); the "
            "bounces and c_r of this run mean nothing")


def track_overlaps(peak: dict[str, Any], a: np.ndarray, b: np.ndarray, delta: np.ndarray,
                   size: np.ndarray, names: Any) -> None:
    """Update ``peak`` (the largest overlap / size ratio so far) with contacts (a, b, delta):
    body indices (-1: the world, infinite size), overlaps (m); ``size`` from
    :func:`body_sizes`, ``names`` the bodies' names."""
    if not len(delta):
        return
    ext = np.append(size, np.inf)
    lim = np.minimum(ext[a], ext[b])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(lim > 0, delta / lim, 0.0)
    j = int(np.argmax(ratio))
    if ratio[j] > peak.get("ratio", 0.0):
        peak.update(ratio=float(ratio[j]), delta=float(delta[j]), size=float(lim[j]),
                    a=names[a[j]] if a[j] >= 0 else "world",
                    b=names[b[j]] if b[j] >= 0 else "world")


def total_weight(world: Any) -> float:
    """Weight (N) of all the movable bodies: sum m_i |g| |gravity_scale_i|."""
    b = world.bodies
    mov = ~b.fixed
    g = float(np.linalg.norm(world.gravity))
    return float(np.sum(b.mass[mov] * np.abs(b.gravity_scale[mov]))) * g


def initial_overlaps(world: Any, y0: np.ndarray) -> tuple[list[dict[str, Any]], float]:
    """The overlaps of the initial state ``y0`` beyond rounding (``OVERLAP_REL_TOL``): one dict
    per pair (bodies, overlap delta (m), law force (N), effective radius (m), ``accepted``), and
    the elastic energy (J) all initial contacts store; ``max_overlap`` (m, None: unbounded) the
    largest valid overlap of the pair (:func:`_width_limits`). The contact store is left empty (the
    integrator registers the initial contacts again)."""
    contacts = world.contacts
    if contacts is None:
        return [], 0.0
    try:
        return _initial_overlaps(world, contacts, y0)
    finally:
        contacts.store.reset()


def _initial_overlaps(world: Any, contacts: Any, y0: np.ndarray
                      ) -> tuple[list[dict[str, Any]], float]:
    y = contacts.begin(0.0, np.asarray(y0, dtype=float))
    if contacts.n_active == 0:
        return [], 0.0
    tab = contacts.contact_table(y)
    store = contacts.store
    rows = np.searchsorted(store.keys, tab["key"])
    rows = np.clip(rows, 0, max(len(store.keys) - 1, 0))
    r_eff = np.asarray(store.r_eff, dtype=float)[rows] if len(store.keys) else np.zeros(0)
    stored = float(contacts.stored_energy(y))
    weight = total_weight(world)
    names = world.bodies.names
    limit = _width_limits(contacts, y, tab["key"])
    out = []
    for j in range(len(tab["key"])):
        d = float(tab["delta"][j])
        if not d > 0.0:
            continue
        r = float(r_eff[j]) if j < len(r_eff) else math.nan
        geo_tol = OVERLAP_REL_TOL * r if math.isfinite(r) and r > 0 else OVERLAP_ABS_TOL
        if d <= geo_tol:
            continue  # rounding of a placement "touching": not a pre-load
        f = float(tab["force"][j])
        ok = abs(f) <= PRELOAD_WEIGHTS * weight and d <= limit[j]
        a, b = int(tab["a"][j]), int(tab["b"][j])
        out.append({
            "a": names[a] if 0 <= a < len(names) else "world",
            "b": names[b] if 0 <= b < len(names) else "world",
            "delta": d, "force": f, "r_eff": r, "accepted": bool(ok),
            "max_overlap": float(limit[j]) if math.isfinite(limit[j]) else None,
        })
    return out, stored


def _width_limits(contacts: Any, y: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """(K,) the largest valid overlap (m) of the contacts ``keys`` at ``y``: half the smaller
    width of their two shapes along the normal
    (:func:`mbplugin.contact.sizes.overlap_limits`; inf where the detection has no such key)."""
    from mbplugin.contact.sizes import overlap_limits

    out = np.full(len(keys), np.inf)
    bodies = contacts.state_from_y(y)
    batch = contacts.model.detect(bodies, margin=0.0)
    if not len(batch) or not len(keys):
        return out
    lim, _ = overlap_limits(contacts.model, bodies, batch)
    order = np.argsort(batch.key)
    at = np.clip(np.searchsorted(batch.key[order], keys), 0, len(order) - 1)
    hit = batch.key[order][at] == keys
    out[hit] = lim[order][at][hit]
    return out


def check_initial_overlaps(world: Any, y0: np.ndarray) -> tuple[list[dict[str, Any]], float]:
    """:func:`initial_overlaps`, raising :class:`InitialOverlapError` for the rejected ones."""
    found, stored = initial_overlaps(world, y0)
    bad = [o for o in found if not o["accepted"]]
    if bad:
        worst = max(bad, key=lambda o: o["delta"] / (o["max_overlap"] or math.inf))
        weight = total_weight(world)
        more = f" (and {len(bad) - 1} more overlapping pairs)" if len(bad) > 1 else ""
        if worst["delta"] > (worst["max_overlap"] or math.inf):
            raise InitialOverlapError(
                f"bodies '{worst['a']}' and '{worst['b']}' overlap by {worst['delta']:.4g} m "
                f"in the initial state{more}, more than half the width of the thinner of their "
                f"two shapes along the contact normal (at most {worst['max_overlap']:.4g} m): "
                "one is started into or through the other (a thin part), where the normal "
                "points out of the far side and the law pushes it through; move the bodies "
                "apart (see docs/scenes.md, 'Initial overlaps')")
        worst = max(bad, key=lambda o: o["delta"])
        raise InitialOverlapError(
            f"bodies '{worst['a']}' and '{worst['b']}' overlap by {worst['delta']:.4g} m in the "
            f"initial state{more}: the contact law pushes them apart with {worst['force']:.4g} N "
            f"(more than {PRELOAD_WEIGHTS:g}x the total weight {weight:.4g} N) and the initial "
            f"overlaps store {stored:.4g} J; move the bodies apart (see docs/scenes.md, "
            f"'Initial overlaps')"
        )
    return found, stored


def estimate_run(n_bodies: int, duration: float, settings: Any, record: Any,
                 n_contacts: int = 0, n_state: int = 0) -> dict[str, Any]:
    """Steps, records and record memory (bytes) of a run; ``steps`` is None for adaptive runs
    (unknown before the run)."""
    per_record = 8 * (6 + (13 * n_bodies if record.bodies else 0))
    if record.contacts:
        per_record += 8 * n_contacts * (8 + n_state)
    if settings.method == "adaptive":
        return {"steps": None, "records": None, "bytes_per_record": per_record,
                "record_bytes": None}
    steps = math.ceil(duration / float(settings.dt) - 1e-9)
    records = steps // int(record.every) + 1
    return {"steps": steps, "records": records, "bytes_per_record": per_record,
            "record_bytes": records * per_record}


def check_run_size(estimate: dict[str, Any], dt: float | None = None,
                   dt_name: str = "integrator.dt", limit: str = "output.record_every or "
                   "integrator.dt") -> list[str]:
    """Refuse (:class:`RunTooLargeError`) a run that cannot fit; returns warnings for long ones
    (``dt_name``: the step's name in the messages, ``limit``: what to raise)."""
    msgs: list[str] = []
    steps = estimate["steps"]
    if steps is None:
        return msgs
    rec_bytes = estimate["record_bytes"]
    avail = available_memory()
    advice = (" (the step advisor's recommendation is in summary.json, step_advice)"
              if dt_name == "integrator.dt" else "")
    if rec_bytes > 0.5 * avail:
        raise RunTooLargeError(
            f"the run would record {estimate['records']:.4g} states of "
            f"{human_bytes(estimate['bytes_per_record'])} each ({human_bytes(rec_bytes)}), more "
            f"than half the available memory ({human_bytes(avail)}); raise {limit}, or shorten "
            f"scene.duration"
        )
    if steps > MAX_FIXED_STEPS:
        raise RunTooLargeError(
            f"{dt_name} = {dt:g} s needs {steps:.4g} fixed steps (more than "
            f"{MAX_FIXED_STEPS:.0e}; days of computing at ~10-100 us per step); raise "
            f"{dt_name}{advice} or shorten scene.duration"
        )
    if steps > WARN_FIXED_STEPS:
        msgs.append(f"the run takes {steps:.4g} fixed steps (dt = {dt:g} s): expect a long "
                    f"wall time (~10-100 us per step)")
    return msgs


def check_adaptive_run(n_bodies: int, duration: float, settings: Any, record: Any,
                       n_contacts: int = 0, n_state: int = 0) -> list[str]:
    """An adaptive run takes at least ``duration / max_step`` steps: refuse
    (:class:`RunTooLargeError`) one whose lower bound exceeds ``MAX_FIXED_STEPS`` or whose
    records at that bound would not fit in half the available memory; returns a warning above
    ``WARN_FIXED_STEPS``. Nothing for fixed-step runs or without a finite ``max_step``."""
    max_step = float(getattr(settings, "max_step", math.inf))
    if settings.method != "adaptive" or not math.isfinite(max_step):
        return []
    steps = math.ceil(duration / max_step - 1e-9)
    where = (f"integrator.max_step = {max_step:g} s needs at least {steps:.4g} adaptive steps "
             f"for scene.duration = {duration:g} s")
    if steps > MAX_FIXED_STEPS:
        raise RunTooLargeError(
            f"{where} (more than {MAX_FIXED_STEPS:.0e}; days of computing at ~1-100 us per "
            f"step); raise integrator.max_step or shorten scene.duration")
    est = estimate_run(n_bodies, duration, settings, record, n_contacts, n_state)
    records = steps // int(record.every) + 1
    need = records * est["bytes_per_record"]
    avail = available_memory()
    if need > 0.5 * avail:
        raise RunTooLargeError(
            f"{where}: their {records:.4g} records of {human_bytes(est['bytes_per_record'])} "
            f"each ({human_bytes(need)}) exceed half the available memory "
            f"({human_bytes(avail)}); raise output.record_every or integrator.max_step")
    if steps > WARN_FIXED_STEPS:
        return [f"{where}: expect a long wall time"]
    return []
