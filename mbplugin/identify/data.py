"""Measured data for identification: impact tables (c_r, duration, peak force vs speed) and
force-indentation loops or time series.

File format (CSV, documented in ``docs/identification.md``): optional metadata lines
``# key: value`` before the header (``mass``, ``mass2``, ``press``, ``source``, ...), then one
header line and numeric rows.

Impact tables (one row per impact or per averaged set of repeats):

``v0``              approach speed (m/s), required
``cr``              measured Newton's coefficient of restitution
``duration``        contact duration (s)
``f_max``           peak contact force (N)
``delta_max``       maximum indentation (m)
``mass``, ``mass2`` masses of the bodies (kg) per row (else the metadata or the caller's value)
``press``           constant force pressing the bodies together (N; e.g. gravity along the track)
``weight``          weight of the row in the least-squares cost (default 1)
``p_NAME``          a law parameter fixed per row (e.g. ``p_cr`` = the measured c_r a law takes as
                    its input at that speed, as Zhang et al. 2022 did in Tables 1-2)

At least one of ``cr``, ``duration``, ``f_max``, ``delta_max`` must be present; an empty cell in
one of them is a value not measured (skipped), every other cell must hold a value the model can
use (a bad one is an error naming its column and data row).

Loops / time series: columns ``delta`` (m) and ``force`` (N), optionally ``t`` (s) and ``run``
(an integer grouping the samples of several impacts); per run ``v0`` (column or metadata) and
``mass``. With ``t`` the fit compares F(t); without it, F on the loading and unloading branches
at the measured indentations.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError

#: Measured quantities an impact table may hold (data column -> ImpactBatch result key).
TARGETS: dict[str, str] = {
    "cr": "cr_out",
    "duration": "duration",
    "f_max": "f_max",
    "delta_max": "delta_max",
}
#: Units of the targets other than c_r (for messages).
TARGET_UNITS = {"duration": "s", "f_max": "N", "delta_max": "m"}
#: Columns of an impact table other than the targets and ``p_NAME``.
IMPACT_INPUTS = ("v0", "mass", "mass2", "press", "weight")
#: Columns of a loop / time-series file.
LOOP_COLUMNS = ("t", "delta", "force", "run", "v0", "mass", "mass2", "press")


@dataclass
class ImpactData:
    """An impact table: arrays of equal length M (SI units); see the module docstring."""

    v0: np.ndarray
    mass: np.ndarray
    mass2: np.ndarray
    press: np.ndarray
    targets: dict[str, np.ndarray]
    weight: np.ndarray
    params: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    name: str = ""

    def __len__(self) -> int:
        return int(self.v0.size)


@dataclass
class LoopRun:
    """One measured impact's force-indentation samples."""

    delta: np.ndarray
    force: np.ndarray
    t: np.ndarray | None
    v0: float
    mass: float
    mass2: float = math.inf
    press: float = 0.0


@dataclass
class LoopData:
    """Force-indentation loops or time series, one :class:`LoopRun` per impact."""

    runs: list[LoopRun]
    meta: dict[str, str] = field(default_factory=dict)
    name: str = ""

    def __len__(self) -> int:
        return sum(r.delta.size for r in self.runs)


def dataset_names() -> list[str]:
    """Names of the data sets shipped in ``mbplugin/data`` (usable as ``--data NAME``)."""
    root = resources.files("mbplugin") / "data"
    return sorted(p.name[:-4] for p in root.iterdir() if p.name.endswith(".csv"))


def _read_text(source: str | Path) -> tuple[str, str]:
    path = Path(source)
    if path.is_file():
        return path.read_text(encoding="utf-8"), path.stem
    name = str(source)
    if name in dataset_names():
        return (resources.files("mbplugin") / "data" / f"{name}.csv").read_text("utf-8"), name
    raise ParameterError(
        f"data {str(source)!r}: no such file, and not a shipped data set "
        f"(shipped: {', '.join(dataset_names())})"
    )


def parse_csv(text: str, name: str = "data") -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """``(metadata, columns)`` of a CSV text with ``# key: value`` lines before the header."""
    meta: dict[str, str] = {}
    body: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            key, sep, val = s[1:].partition(":")
            if sep and not body:
                meta[key.strip()] = val.strip()
            continue
        body.append(line)
    if not body:
        raise ParameterError(f"{name}: no header line and no rows")
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header):
        raise ParameterError(f"{name}: repeated column names in the header {header}")
    cols: dict[str, list[float]] = {h: [] for h in header}
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ParameterError(f"{name}: row {i} has {len(row)} fields, the header "
                                 f"{len(header)}")
        for h, cell in zip(header, row, strict=True):
            if not cell.strip():
                cols[h].append(math.nan)  # an empty cell: a value not measured
                continue
            try:
                cols[h].append(float(cell))
            except ValueError:
                raise ParameterError(f"{name}: row {i}, column {h!r}: {cell!r} is not a "
                                     "number") from None
    return meta, {h: np.asarray(v, dtype=float) for h, v in cols.items()}


def _bad_row(name: str, key: str, values: np.ndarray, ok: np.ndarray, allowed: str) -> None:
    """Raise naming the first row (data row 1 = the first after the header) of ``values``
    where ``ok`` is False."""
    if not np.all(ok):
        i = int(np.argmin(ok))
        v = values[i]
        shown = "empty" if np.isnan(v) else f"{v:g}"
        raise ParameterError(f"{name}: column {key!r}, data row {i + 1}: {shown} is outside "
                             f"its allowed range {allowed}")


def _meta_float(meta: dict[str, str], key: str, default: float | None) -> float | None:
    if key not in meta:
        return default
    try:
        return float(meta[key])
    except ValueError:
        raise ParameterError(f"metadata {key!r}: {meta[key]!r} is not a number") from None


def load_data(source: str | Path, *, mass: float | None = None, mass2: float | None = None,
              press: float | None = None) -> ImpactData | LoopData:
    """Read an impact table or loop file (a path, or the name of a shipped data set).

    ``mass``/``mass2``/``press`` fill in what neither a column nor the metadata gives.
    """
    text, name = _read_text(source)
    meta, cols = parse_csv(text, name)
    if "force" in cols or "delta" in cols:
        return _loops(meta, cols, name, mass, mass2, press)
    return impact_data(cols, meta=meta, name=name, mass=mass, mass2=mass2, press=press)


def impact_data(cols: dict[str, Any], *, meta: dict[str, str] | None = None, name: str = "data",
                mass: float | None = None, mass2: float | None = None,
                press: float | None = None) -> ImpactData:
    """Check and assemble an :class:`ImpactData` from columns (dict of arrays)."""
    meta = dict(meta or {})
    cols = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in cols.items()}
    allowed = (*IMPACT_INPUTS, *TARGETS)
    unknown = [c for c in cols if c not in allowed and not c.startswith("p_")]
    if unknown:
        raise ParameterError(
            f"{name}: unknown column {unknown[0]!r}; allowed: {', '.join(allowed)}, p_NAME "
            "(a law parameter per row), or delta, force, t, run for loops"
        )
    if "v0" not in cols:
        raise ParameterError(f"{name}: missing column 'v0' (approach speed, m/s)")
    targets = {k: cols[k] for k in TARGETS if k in cols}
    if not targets:
        raise ParameterError(f"{name}: no measured column; give at least one of "
                             f"{', '.join(TARGETS)}")
    n = cols["v0"].size
    sizes = {c: v.size for c, v in cols.items()}
    if any(s != n for s in sizes.values()):
        raise ParameterError(f"{name}: columns have different lengths {sizes}")

    def col(key: str, given: float | None, default: float | None) -> np.ndarray:
        if key in cols:
            return cols[key]
        val = given if given is not None else _meta_float(meta, key, default)
        if val is None:
            raise ParameterError(f"{name}: no {key!r} column, no '# {key}:' metadata line and "
                                 f"no --{key} given ({key} in kg)")
        return np.full(n, float(val))

    v0 = cols["v0"]
    _bad_row(name, "v0", v0, np.isfinite(v0) & (v0 > 0), "(0, inf) m/s")
    m = col("mass", mass, None)
    _bad_row(name, "mass", m, np.isfinite(m) & (m > 0), "(0, inf) kg")
    m2 = col("mass2", mass2, math.inf)
    _bad_row(name, "mass2", m2, ~np.isnan(m2) & (m2 > 0), "(0, inf] kg (inf: a wall)")
    p = col("press", press, 0.0)
    _bad_row(name, "press", p, np.isfinite(p), "(-inf, inf) N")
    w = cols.get("weight", np.ones(n))
    _bad_row(name, "weight", w, np.isfinite(w) & (w >= 0), "[0, inf)")
    for key, val in targets.items():
        # empty cells (NaN) are values not measured, skipped; anything else must be a value
        # the model can produce: c_r in [0, 1.5], the others > 0 (relative residuals)
        if np.all(np.isnan(val)):
            raise ParameterError(f"{name}: column {key!r} has no values")
        if key == "cr":
            _bad_row(name, key, val, np.isnan(val) | ((val >= 0) & (val <= 1.5)),
                     "[0, 1.5] (or empty: not measured)")
        else:
            _bad_row(name, key, val, np.isnan(val) | (np.isfinite(val) & (val > 0)),
                     f"(0, inf) {TARGET_UNITS[key]} (or empty: not measured)")
    if not np.any(np.any([~np.isnan(v) for v in targets.values()], axis=0) & (w > 0)):
        raise ParameterError(f"{name}: no row has a measured value with a weight > 0")
    params = {c[2:]: v for c, v in cols.items() if c.startswith("p_")}
    for k, v in params.items():
        _bad_row(name, f"p_{k}", v, np.isfinite(v), "(-inf, inf) (the law's own range applies)")
    return ImpactData(v0, m, m2, p, targets, w, params, meta, name)


def _loops(meta: dict[str, str], cols: dict[str, np.ndarray], name: str, mass: float | None,
           mass2: float | None, press: float | None) -> LoopData:
    unknown = [c for c in cols if c not in LOOP_COLUMNS]
    if unknown:
        raise ParameterError(f"{name}: unknown column {unknown[0]!r} in a loop file; allowed: "
                             f"{', '.join(LOOP_COLUMNS)}")
    for key in ("delta", "force"):
        if key not in cols:
            raise ParameterError(f"{name}: a loop file needs columns 'delta' (m) and 'force' "
                                 f"(N); missing {key!r}")
    for key in ("delta", "force", "t", "run"):
        if key in cols:
            # a loop is compared sample by sample: every cell must hold a number
            _bad_row(name, key, cols[key], np.isfinite(cols[key]), "(-inf, inf), not empty")
    run = cols.get("run", np.zeros(cols["delta"].size))
    runs: list[LoopRun] = []
    for r in np.unique(run):
        sel = run == r

        def val(key: str, given: float | None, default: float | None, sel: Any = sel,
                r: Any = r) -> float:
            if key in cols:
                vals = np.unique(cols[key][sel])
                if vals.size != 1:
                    raise ParameterError(f"{name}: run {r:g} has several values of {key!r}")
                return float(vals[0])
            out = given if given is not None else _meta_float(meta, key, default)
            if out is None:
                raise ParameterError(f"{name}: run {r:g}: no {key!r} column or metadata")
            return float(out)

        t = cols["t"][sel] if "t" in cols else None
        lr = LoopRun(cols["delta"][sel], cols["force"][sel], t, val("v0", None, None),
                     val("mass", mass, None), val("mass2", mass2, math.inf),
                     val("press", press, 0.0))
        where = f"{name}: run {r:g}"
        for key, v, ok, allowed in (
                ("v0", lr.v0, math.isfinite(lr.v0) and lr.v0 > 0, "(0, inf) m/s"),
                ("mass", lr.mass, math.isfinite(lr.mass) and lr.mass > 0, "(0, inf) kg"),
                ("mass2", lr.mass2, lr.mass2 > 0, "(0, inf] kg (inf: a wall)"),
                ("press", lr.press, math.isfinite(lr.press), "(-inf, inf) N")):
            if not ok:
                raise ParameterError(f"{where}: {key} = {v:g} is outside its allowed range "
                                     f"{allowed}")
        if not np.any(lr.force != 0.0):
            raise ParameterError(f"{where}: every force sample is 0 (nothing to fit)")
        if t is not None and np.any(np.diff(t) < 0):
            raise ParameterError(f"{where}: column 't' must not decrease within a run")
        runs.append(lr)
    return LoopData(runs, meta, name)
