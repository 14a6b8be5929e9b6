"""The contact rules, written once: onset, force clipping, end of contact, the separated latch.

Every driver of the contact pipeline calls these compiled scalar functions (and the vectorised
loops over them below): the contact store at accepted states (:mod:`mbplugin.pipeline.store`),
the engine's event functions and compiled small-scene integrator (:mod:`mbplugin.pipeline.run`),
the compiled impact analyser (:mod:`mbplugin.impact`) and its SciPy reference path.

Sign conventions (project wide): ``d`` = delta >= 0 penetration (m), ``v`` = ddelta > 0 while
the bodies approach (m/s), a positive force repels (N).

* **Onset.** A pair that is not in contact and not latched starts a contact when ``d > 0``
  (:func:`starts`); the impact speed latched then is ``max(v, 0)`` (:func:`onset_speed`).
  Event function: :func:`onset_value` (> 0 apart, <= 0 once touching).
* **Applied force.** ``laws.kernels.clip``: ``MODE_CLIP`` laws never pull (F = max(F_raw, 0)),
  ``MODE_TENSION`` and ``MODE_RAW`` laws apply the raw force.
* **End of contact** (Milehins & Marghitu 2026, Eq. 17): while the bodies recede (``v <= 0``),
  the first instant the raw force is <= 0 (``MODE_CLIP``, ``MODE_RAW``), or ``d <= 0`` for
  ``MODE_TENSION`` laws, which may pull until the surfaces part. Event function
  :func:`end_value` = max(first, v / v_s) with first = F_raw / f_s or d / x_s; it is <= 0
  exactly when the contact has ended, for any positive scales (:func:`ended`).
* **Separated latch** (spec ``bouc-wen-collision-laws.md`` section 10, items 5-6). A contact that
  ends with a residual overlap ``d_sep > 0`` stays latched "separated" (no force, no onset)
  until the gap opens (``d <= 0``: :func:`latch_release_value`) or the bodies come back and press
  deeper than at separation while approaching (``d > d_sep`` and ``v > 0``:
  :func:`latch_renew_value`, which then fires a new onset). :func:`latch_holds` combines both,
  :func:`latch_value` is one event function of both (the drivers watch the two values
  apart, and the apex of the rebound, :func:`apex_value`: :func:`mbplugin.pipeline.events.
  event_value`).
* **Maximum compression** of an active contact whose law has memory (``Law.n_memory > 0``):
  the approach speed turns from > 0 to <= 0 (:func:`peak_value`); every driver updates the
  law's memory at that located instant (docs/architecture.md, "When the memory is updated").
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit
from mbplugin.laws.base import MODE_TENSION
from mbplugin.laws.kernels import clip

#: Default event-function scales (m, m/s, N): only the sign of an event value matters; the
#: scales make the two halves of a max() comparable for a root finder.
X_SCALE = 1e-6
V_SCALE = 1e-3
F_SCALE = 1.0

__all__ = [
    "F_SCALE", "V_SCALE", "X_SCALE", "apex_value", "applied", "applied_batch",
    "end_value", "ended", "ended_batch",
    "latch_holds", "latch_holds_batch", "latch_release_value", "latch_renew_value",
    "latch_value", "latch_value_batch",
    "onset_speed", "onset_speed_batch", "onset_value", "peak_value", "renews", "starts",
    "starts_batch",
]


@njit
def applied(mode, f_raw):
    """The force applied to the bodies from the law's raw force (N)."""
    return clip(mode, f_raw)


@njit
def starts(d):
    """A free (not latched, not active) pair starts a contact when it overlaps."""
    return d > 0.0


@njit
def onset_speed(v):
    """The impact speed latched at onset (m/s): the approach speed, never negative."""
    return v if v > 0.0 else 0.0


@njit
def onset_value(d, xs):
    """Event function of a free pair: > 0 while apart (``d`` < 0, m), <= 0 once the shapes
    touch (``d`` >= 0): -d / ``xs`` (``xs``: the length scale, m). A driver steps to where the
    value is strictly negative (d > 0) before it books the onset, where :func:`starts` agrees.
    Works on scalars and arrays."""
    return -d / xs


@njit
def end_value(mode, d, v, f_raw, xs, fs, vs):
    """Event function of an active contact: <= 0 exactly when it has ended (see module doc)."""
    if mode == MODE_TENSION:
        a = d / xs
    else:
        a = f_raw / fs
    b = v / vs
    return a if a > b else b


@njit
def ended(mode, d, v, f_raw):
    """True when an active contact has ended at (d, v) with raw force ``f_raw``."""
    return end_value(mode, d, v, f_raw, 1.0, 1.0, 1.0) <= 0.0


@njit
def peak_value(v, vs):
    """Event function of an active contact of a law with memory: > 0 while the bodies approach
    (ddelta ``v`` > 0, m/s), <= 0 from the maximum compression on (``vs``: the speed scale,
    m/s). Works on scalars and arrays."""
    return v / vs


@njit
def apex_value(v, vs):
    """Event function of a latched pair's rebound: > 0 while it recedes (ddelta ``v`` < 0, m/s),
    <= 0 from the apex of the rebound on (the minimum of delta; ``vs``: the speed scale, m/s).
    At the apex the gap is as open as it gets in that rebound, so a gap that opened and closed
    between two evaluations of :func:`latch_release_value` is open there."""
    return -v / vs


@njit
def latch_release_value(d, xs):
    """Event function of a latched pair: <= 0 once the gap opens (the latch is released)."""
    return d / xs


@njit
def latch_renew_value(d, v, d_sep, xs, vs):
    """Event function of a latched pair: <= 0 once it is pressed deeper than the separation
    overlap ``d_sep`` while approaching (a new onset)."""
    a = (d - d_sep) / xs
    b = v / vs
    return -(a if a < b else b)


@njit
def latch_value(d, v, d_sep, xs, vs):
    """Event function of a latched pair, both of its ways out at once: the smaller of
    :func:`latch_release_value` and :func:`latch_renew_value`, < 0 once the gap has opened
    (d < 0) or the pair is pressed deeper than ``d_sep`` while approaching, whichever comes
    first (a root finder stepping to where the value is strictly negative passes either)."""
    a = latch_release_value(d, xs)
    b = latch_renew_value(d, v, d_sep, xs, vs)
    return a if a < b else b


@njit
def renews(d, v, d_sep):
    """True when a latched pair is pressed deeper than ``d_sep`` while approaching (strictly;
    :func:`latch_renew_value` is < 0 there, and a driver that locates the event steps to where
    the value is strictly negative)."""
    return d > d_sep and v > 0.0


@njit
def latch_holds(d, v, d_sep):
    """True while a pair latched at separation overlap ``d_sep`` stays latched: the gap has
    not opened and it is not pressed deeper while approaching."""
    return latch_release_value(d, 1.0) > 0.0 and not renews(d, v, d_sep)


@njit
def ended_batch(mode, d, v, f_raw):
    """:func:`ended` of every contact (``mode`` per contact), as a bool array."""
    out = np.empty(d.shape[0], dtype=np.bool_)
    for i in range(d.shape[0]):
        out[i] = ended(mode[i], d[i], v[i], f_raw[i])
    return out


@njit
def latch_holds_batch(d, v, d_sep):
    """:func:`latch_holds` of every latched pair, as a bool array."""
    out = np.empty(d.shape[0], dtype=np.bool_)
    for i in range(d.shape[0]):
        out[i] = latch_holds(d[i], v[i], d_sep[i])
    return out


@njit
def end_value_batch(mode, d, v, f_raw, xs, fs, vs):
    """:func:`end_value` of every contact (``mode`` per contact)."""
    out = np.empty(d.shape[0])
    for i in range(d.shape[0]):
        out[i] = end_value(mode[i], d[i], v[i], f_raw[i], xs, fs, vs)
    return out


@njit
def latch_renew_value_batch(d, v, d_sep, xs, vs):
    """:func:`latch_renew_value` of every latched pair."""
    out = np.empty(d.shape[0])
    for i in range(d.shape[0]):
        out[i] = latch_renew_value(d[i], v[i], d_sep[i], xs, vs)
    return out


@njit
def latch_value_batch(d, v, d_sep, xs, vs):
    """:func:`latch_value` of every latched pair."""
    out = np.empty(d.shape[0])
    for i in range(d.shape[0]):
        out[i] = latch_value(d[i], v[i], d_sep[i], xs, vs)
    return out


@njit
def applied_batch(mode, f_raw):
    """:func:`applied` of every contact (``mode`` per contact)."""
    out = np.empty(f_raw.shape[0])
    for i in range(f_raw.shape[0]):
        out[i] = applied(mode[i], f_raw[i])
    return out


def starts_batch(d: np.ndarray) -> np.ndarray:
    """:func:`starts` of every pair (indentations ``d``, m), as a bool array: NumPy on
    ``starts``' own source (the same comparison; no compiled entry to build on a first run)."""
    return np.asarray(starts.py_func(np.asarray(d, dtype=float)), dtype=np.bool_)


@njit
def onset_speed_batch(v):
    """:func:`onset_speed` of every new contact."""
    out = np.empty(v.shape[0])
    for i in range(v.shape[0]):
        out[i] = onset_speed(v[i])
    return out
