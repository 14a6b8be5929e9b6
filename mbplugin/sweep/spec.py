"""Sweep specifications (TOML): what to run, enumerated deterministically in chunks.

Impact sweeps (docs/sweeps.md)::

    [sweep]
    chunk_size = 20000            # runs per task (one ImpactBatch each)
    rtol = 1e-10

    [[laws]]
    family = "hunt_crossley"      # every Hunt-Crossley-family law; or name = "...", names = [...]
    params = { k = 1e9, n = 1.5 } # fixed parameters
    grid = { cr = { linspace = [0.01, 1.0, 100] } }          # Cartesian product
    # sample = { method = "sobol", n = 64, seed = 0, ranges = { cr = [0.1, 1.0] }, log = [] }

    [impacts]
    v0 = { geomspace = [0.01, 10.0, 30] }
    mass = { geomspace = [0.01, 10.0, 30] }
    mass2 = "inf"
    press = 0.0
    combine = "product"           # or "zip" (equal lengths)

Scene sweeps: ``[scene] file = "drop_ball.toml"`` and ``[scene.set]`` with a list of values per
``--set`` key (their Cartesian product), or any scene file with ``--set KEY=V1,V2`` grids.

A value is a number, a list, or one of ``{linspace = [a, b, n]}``, ``{geomspace = [a, b, n]}``.
Samples use :mod:`scipy.stats.qmc` (``sobol``, ``halton``, ``lhs``) or ``random`` (NumPy,
seeded); ``log`` lists the parameters sampled uniformly in log space.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError

SAMPLERS = ("sobol", "halton", "lhs", "random")
IMPACT_KEYS = ("v0", "mass", "mass2", "press")
#: Most values an axis, a sample or a product of axes may hold (each is an array in memory;
#: runs are enumerated lazily from them, so a sweep may hold far more runs).
MAX_POINTS = 10_000_000
#: Most runs of a scene sweep (each is a whole scene run; they are listed in memory).
MAX_SCENE_RUNS = 1_000_000


class SweepError(ParameterError):
    """A sweep specification or its output directory is invalid."""


@dataclass
class LawBlock:
    """One law with its parameter sets (arrays of equal length ``n_sets``)."""

    name: str
    fixed: dict[str, Any]
    varied: dict[str, np.ndarray]
    n_sets: int


@dataclass
class SweepSpec:
    """A parsed sweep: impact sweep (``blocks`` x ``impacts``) or scene sweep (``scene``)."""

    kind: str  # "impacts" or "scene"
    digest: str
    chunk_size: int
    rtol: float
    blocks: list[LawBlock] = field(default_factory=list)
    impacts: dict[str, np.ndarray] = field(default_factory=dict)
    scene_doc: dict[str, Any] | None = None
    scene_source: str = ""
    scene_sets: list[dict[str, Any]] = field(default_factory=list)
    #: accepted steps after which one impact is abandoned (an error row; ``[sweep] max_steps``)
    max_steps: int = 10_000_000

    @property
    def n_impacts(self) -> int:
        return int(next(iter(self.impacts.values())).size) if self.impacts else 0

    @property
    def n_runs(self) -> int:
        if self.kind == "scene":
            return len(self.scene_sets)
        return sum(b.n_sets for b in self.blocks) * self.n_impacts

    @property
    def n_chunks(self) -> int:
        return max(1, math.ceil(self.n_runs / self.chunk_size))

    def param_columns(self) -> dict[str, bool]:
        """Every law parameter name of the sweep (first-seen order) -> True for options
        (string columns), False for numbers."""
        from mbplugin.laws import get_law_class
        from mbplugin.laws.base import Option

        cols: dict[str, bool] = {}
        for b in self.blocks:
            for p in get_law_class(b.name).params:
                cols[p.name] = cols.get(p.name, False) or isinstance(p, Option)
        return cols


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_points(where: str, n: float, what: str = "points") -> None:
    """Refuse an axis, sample or product of more than ``MAX_POINTS`` values (with its size)."""
    if n > MAX_POINTS:
        raise SweepError(f"{where}: {n:.4g} {what} ({8 * n / 2**30:.3g} GiB per column in "
                         f"memory); at most {MAX_POINTS:.0e}: use fewer points, or a sample")


def _values(where: str, v: Any) -> np.ndarray:
    """A grid value: number, list, {linspace}, {geomspace}, or 'inf'."""
    if isinstance(v, dict):
        if len(v) != 1 or next(iter(v)) not in ("linspace", "geomspace"):
            raise SweepError(f"{where}: expected a number, a list, {{linspace = [a, b, n]}} or "
                             f"{{geomspace = [a, b, n]}}, got {v!r}")
        kind, args = next(iter(v.items()))
        if not (isinstance(args, list) and len(args) == 3 and all(_number(x) for x in args)
                and math.isfinite(args[0]) and math.isfinite(args[1])
                and float(args[2]).is_integer() and args[2] >= 1):
            raise SweepError(f"{where}.{kind}: expected [start, stop, count >= 1] (finite "
                             f"numbers), got {args!r}")
        a, b = float(args[0]), float(args[1])
        _check_points(f"{where}.{kind}", float(args[2]))
        n = int(args[2])
        if kind == "geomspace" and (a <= 0 or b <= 0):
            raise SweepError(f"{where}.geomspace: start and stop must be > 0, got {a:g}, {b:g}")
        return np.linspace(a, b, n) if kind == "linspace" else np.geomspace(a, b, n)
    vals = v if isinstance(v, list) else [v]
    if not vals:
        raise SweepError(f"{where}: empty list")
    out = []
    for x in vals:
        if isinstance(x, str) and x.strip().lower() in ("inf", "+inf"):
            out.append(math.inf)
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            out.append(float(x))
        else:
            raise SweepError(f"{where}: {x!r} is not a number")
    return np.asarray(out, dtype=float)


def _samples(where: str, s: Any) -> dict[str, np.ndarray]:
    if not isinstance(s, dict):
        raise SweepError(f"{where}: expected a table {{method, n, seed, ranges, log}}")
    unknown = set(s) - {"method", "n", "seed", "ranges", "log"}
    if unknown:
        raise SweepError(f"{where}: unknown key {sorted(unknown)[0]!r}; allowed: method, n, "
                         "seed, ranges, log")
    method = s.get("method", "sobol")
    if method not in SAMPLERS:
        raise SweepError(f"{where}.method = {method!r} is not one of {{{', '.join(SAMPLERS)}}}")
    n = s.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise SweepError(f"{where}.n = {n!r}: expected an integer >= 1")
    _check_points(f"{where}.n", n, "samples")
    ranges = s.get("ranges")
    if not isinstance(ranges, dict) or not ranges:
        raise SweepError(f"{where}.ranges: expected {{NAME = [lo, hi], ...}}")
    log = s.get("log", [])
    if not (isinstance(log, list) and all(isinstance(x, str) for x in log)):
        raise SweepError(f"{where}.log: expected a list of parameter names, got {log!r}")
    if not isinstance(s.get("seed", 0), int) or isinstance(s.get("seed", 0), bool):
        raise SweepError(f"{where}.seed = {s.get('seed')!r}: expected an integer")
    names = list(ranges)
    lo, hi = [], []
    for k in names:
        r = ranges[k]
        if not (isinstance(r, list) and len(r) == 2 and all(_number(x) for x in r)
                and math.isfinite(r[0]) and math.isfinite(r[1]) and r[0] < r[1]):
            raise SweepError(f"{where}.ranges.{k}: expected [lo, hi] with lo < hi, got {r!r}")
        a, b = float(r[0]), float(r[1])
        if k in log:
            if a <= 0:
                raise SweepError(f"{where}.ranges.{k}: log sampling needs lo > 0")
            a, b = math.log(a), math.log(b)
        lo.append(a)
        hi.append(b)
    for k in log:
        if k not in ranges:
            raise SweepError(f"{where}.log: {k!r} has no range")
    seed = int(s.get("seed", 0))
    d = len(names)
    if method == "random":
        u = np.random.default_rng(seed).random((n, d))
    else:
        from scipy.stats import qmc

        eng = {"sobol": qmc.Sobol, "halton": qmc.Halton, "lhs": qmc.LatinHypercube}[method]
        u = eng(d=d, seed=seed).random(n)  # Sobol warns when n is not a power of 2
    x = qmc_scale(u, np.array(lo), np.array(hi))
    return {k: (np.exp(x[:, i]) if k in log else x[:, i]) for i, k in enumerate(names)}


def qmc_scale(u: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Unit-cube samples to [lo, hi] per column."""
    return lo + u * (hi - lo)


def _law_names(where: str, entry: dict[str, Any]) -> list[str]:
    from mbplugin.laws import HuntCrossleyFamily, get_law_class, law_classes

    keys = [k for k in ("name", "names", "family") if k in entry]
    if len(keys) != 1:
        raise SweepError(f"{where}: give exactly one of name, names, family")
    if "family" in entry:
        fam = entry["family"]
        if fam != "hunt_crossley":
            raise SweepError(f"{where}.family = {fam!r}: allowed: hunt_crossley")
        return sorted(c.name for c in law_classes() if issubclass(c, HuntCrossleyFamily))
    names = entry[keys[0]]
    names = [names] if isinstance(names, str) else names
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise SweepError(f"{where}.{keys[0]}: expected a law name or a list of law names, got "
                         f"{entry[keys[0]]!r}")
    return [get_law_class(n).name for n in names]


def _table(where: str, v: Any, what: str) -> dict[str, Any]:
    """``v`` must be a TOML table (dict): else one line naming ``where``."""
    if not isinstance(v, dict):
        raise SweepError(f"{where}: expected a table {what}, got {v!r}")
    return v


def _product(arrays: dict[str, np.ndarray], where: str = "grid") -> dict[str, np.ndarray]:
    if not arrays:
        return {}
    _check_points(f"{where}: the product of {' x '.join(arrays)}",
                  float(np.prod([float(v.size) for v in arrays.values()])))
    grids = np.meshgrid(*arrays.values(), indexing="ij")
    return {k: g.ravel() for k, g in zip(arrays, grids, strict=True)}


def digest(obj: Any) -> str:
    """SHA-256 of a canonical JSON form (the spec's identity for resuming)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_spec(path: str | Path, sets: list[str] | None = None) -> SweepSpec:
    """Parse a sweep spec, or a scene file with ``--set KEY=V1,V2`` grids."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SweepError(f"sweep spec {str(path)!r}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"sweep spec {str(path)!r}: invalid TOML: {exc}") from None
    return build_spec(doc, base_dir=path.parent, sets=sets, source=str(path))


def _set_grid(items: list[str] | None) -> dict[str, list[Any]]:
    from mbplugin.scene import parse_value

    out: dict[str, list[Any]] = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise SweepError(f"--set {item!r}: expected KEY=V1,V2,...")
        out[key.strip()] = [parse_value(v.strip()) for v in raw.split(",")]
    return out


def build_spec(doc: dict[str, Any], base_dir: Path = Path("."), sets: list[str] | None = None,
               source: str = "sweep") -> SweepSpec:
    """A :class:`SweepSpec` from a parsed TOML document."""
    is_sweep = any(k in doc for k in ("laws", "impacts", "sweep")) or (
        "scene" in doc and isinstance(doc["scene"], dict) and "file" in doc["scene"])
    if not is_sweep:
        # a scene file itself: the --set grids are the sweep
        return _scene_spec(doc, source, _set_grid(sets), {})
    unknown = set(doc) - {"sweep", "laws", "impacts", "scene"}
    if unknown:
        raise SweepError(f"{source}: unknown table [{sorted(unknown)[0]}]; allowed: sweep, laws, "
                         "impacts, scene")
    opts = _table("[sweep]", doc.get("sweep", {}), "{name, chunk_size, rtol, description}")
    bad = set(opts) - {"name", "chunk_size", "rtol", "description", "max_steps"}
    if bad:
        raise SweepError(f"{source}: [sweep] unknown key {sorted(bad)[0]!r}; allowed: name, "
                         "chunk_size, rtol, max_steps, description")
    rtol = _rtol(opts)
    max_steps = opts.get("max_steps", SweepSpec.max_steps)
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise SweepError(f"[sweep] max_steps = {max_steps!r}: expected an integer >= 1 (steps "
                         "after which one impact is abandoned)")
    if "scene" in doc:
        sc = _table("[scene]", doc["scene"], "{file = \"SCENE.toml\", set = {KEY = [...]}}")
        if not isinstance(sc.get("file"), str) or not sc["file"]:
            raise SweepError(f"[scene] file = {sc.get('file')!r}: expected the scene file's "
                             "path (a string)")
        bad = set(sc) - {"file", "set"}
        if bad:
            raise SweepError(f"[scene] unknown key {sorted(bad)[0]!r}; allowed: file, set")
        if "laws" in doc or "impacts" in doc:
            raise SweepError(f"{source}: a sweep has either [scene] or [[laws]] and [impacts], "
                             "not both")
        file = Path(sc["file"])
        if not file.is_absolute():
            file = base_dir / file
        try:
            scene_doc = tomllib.loads(file.read_text(encoding="utf-8"))
        except (FileNotFoundError, IsADirectoryError):
            raise SweepError(f"{source}: [scene] file {str(file)!r}: no such file") from None
        except tomllib.TOMLDecodeError as exc:
            raise SweepError(f"{source}: [scene] file {str(file)!r}: invalid TOML: "
                             f"{exc}") from None
        sset = _table("[scene.set]", sc.get("set", {}), "{KEY = [V1, V2, ...]}")
        grid = {k: (v if isinstance(v, list) else [v]) for k, v in sset.items()}
        for k, v in grid.items():
            if not v:
                raise SweepError(f"[scene.set] {k}: an empty list")
        grid.update(_set_grid(sets))
        return _scene_spec(scene_doc, str(file), grid, opts)
    if sets:
        raise SweepError("--set grids apply to scene sweeps; this spec sweeps impacts")
    chunk = _chunk_size(opts, 20000)
    laws = doc.get("laws")
    if not isinstance(laws, list) or not laws:
        raise SweepError(f"{source}: no [[laws]] entries")
    blocks: list[LawBlock] = []
    from mbplugin.laws import make_law

    for i, entry in enumerate(laws):
        where = f"laws[{i}]"
        _table(where, entry, "{name | names | family, params, grid, sample}")
        bad = set(entry) - {"name", "names", "family", "params", "grid", "sample"}
        if bad:
            raise SweepError(f"{where}: unknown key {sorted(bad)[0]!r}; allowed: name, names, "
                             "family, params, grid, sample")
        fixed = dict(_table(f"{where}.params", entry.get("params", {}),
                            "{NAME = VALUE, ...}"))
        for k, v in fixed.items():
            if not (_number(v) or isinstance(v, str)):
                raise SweepError(f"{where}.params.{k} = {v!r}: expected a number or an option "
                                 f"name (varied values go in {where}.grid)")
        grid = {k: _values(f"{where}.grid.{k}", v) for k, v in
                _table(f"{where}.grid", entry.get("grid", {}), "{NAME = VALUES, ...}").items()}
        varied = _product(grid, f"{where}.grid")
        if "sample" in entry:
            smp = _samples(f"{where}.sample", entry["sample"])
            both = set(smp) & set(varied)
            if both:
                raise SweepError(f"{where}: {sorted(both)[0]!r} is both in grid and sample")
            if varied:  # product of the grid with the sample rows
                n_g = next(iter(varied.values())).size
                n_s = next(iter(smp.values())).size
                varied = {k: np.repeat(v, n_s) for k, v in varied.items()}
                varied.update({k: np.tile(v, n_g) for k, v in smp.items()})
            else:
                varied = smp
        n_sets = next(iter(varied.values())).size if varied else 1
        for name in _law_names(where, entry):
            from mbplugin.laws import get_law_class

            declared = {p.name for p in get_law_class(name).params}
            f = {k: v for k, v in fixed.items() if k in declared}
            vv = {k: v for k, v in varied.items() if k in declared}
            extra = set(fixed) | set(varied)
            if "family" not in entry and extra - declared:
                raise SweepError(f"{where}: {name} has no parameter "
                                 f"{sorted(extra - declared)[0]!r}; allowed: "
                                 f"{', '.join(sorted(declared))}")
            # check the fixed parameters now (errors at the door); varied rows fail per run
            make_law(name, **f, **{k: v[0] for k, v in vv.items()})
            blocks.append(LawBlock(name, f, vv, n_sets))
    imp = _table("[impacts]", doc.get("impacts", {}),
                 "{v0, mass, mass2, press, combine}")
    bad = set(imp) - {*IMPACT_KEYS, "combine"}
    if bad:
        raise SweepError(f"[impacts] unknown key {sorted(bad)[0]!r}; allowed: "
                         f"{', '.join(IMPACT_KEYS)}, combine")
    if "v0" not in imp or "mass" not in imp:
        raise SweepError("[impacts] needs v0 (m/s) and mass (kg)")
    vals = {k: _values(f"impacts.{k}", imp.get(k, {"mass2": "inf", "press": 0.0}.get(k)))
            for k in IMPACT_KEYS}
    combine = imp.get("combine", "product")
    if combine == "product":
        impacts = _product(vals, "[impacts]")
    elif combine == "zip":
        sizes = {v.size for v in vals.values()} - {1}
        if len(sizes) > 1:
            raise SweepError(f"[impacts] combine = 'zip' needs equal lengths, got {sorted(sizes)}")
        n = sizes.pop() if sizes else 1
        impacts = {k: np.broadcast_to(v, (n,)).copy() for k, v in vals.items()}
    else:
        raise SweepError(f"[impacts] combine = {combine!r} is not one of {{product, zip}}")
    for key, ok, allowed in (
            ("v0", np.isfinite(vals["v0"]) & (vals["v0"] > 0), "(0, inf) m/s"),
            ("mass", np.isfinite(vals["mass"]) & (vals["mass"] > 0), "(0, inf) kg"),
            ("mass2", vals["mass2"] > 0, "(0, inf] kg (inf: a wall)"),
            ("press", np.isfinite(vals["press"]), "(-inf, inf) N")):
        if not np.all(ok):
            bad_v = vals[key][np.argmin(ok)]
            raise SweepError(f"[impacts] {key} = {bad_v:g} is outside its allowed range "
                             f"{allowed}")
    ident = {"doc": {k: v for k, v in doc.items()}, "kind": "impacts"}
    return SweepSpec("impacts", digest(ident), chunk, rtol, blocks, impacts,
                     max_steps=max_steps)


def _scene_spec(scene_doc: dict[str, Any], source: str, grid: dict[str, list[Any]],
                opts: dict[str, Any]) -> SweepSpec:
    from mbplugin.scene import build_scene

    keys = list(grid)
    n_runs = math.prod(len(grid[k]) for k in keys)
    if n_runs > MAX_SCENE_RUNS:
        raise SweepError(f"{source}: the --set grids make {n_runs:.4g} scene runs; at most "
                         f"{MAX_SCENE_RUNS:.0e} (each is a whole scene run)")
    chunk = _chunk_size(opts, 1)
    rtol = _rtol(opts)
    combos = [dict(zip(keys, c, strict=True)) for c in np.ndindex(*[len(grid[k]) for k in keys])]
    sets = [{k: grid[k][i] for k, i in c.items()} for c in combos] if keys else [{}]
    for s in sets[:1]:  # the scene and every key must be valid (errors at the door)
        build_scene(copy.deepcopy(scene_doc), source, [f"{k}={_toml(v)}" for k, v in s.items()])
    ident = {"scene": scene_doc, "grid": grid, "kind": "scene"}
    return SweepSpec("scene", digest(ident), chunk, rtol,
                     scene_doc=scene_doc, scene_source=source, scene_sets=sets)


def _chunk_size(opts: dict[str, Any], default: int) -> int:
    chunk = opts.get("chunk_size", default)
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise SweepError(f"[sweep] chunk_size = {chunk!r}: expected an integer >= 1")
    return chunk


def _rtol(opts: dict[str, Any]) -> float:
    from mbplugin.impact import check_rtol

    rtol = opts.get("rtol", 1e-10)
    if not _number(rtol):
        raise SweepError(f"[sweep] rtol = {rtol!r}: expected a number")
    try:
        return check_rtol(rtol)
    except ParameterError as exc:
        raise SweepError(f"[sweep] {exc}") from None


def _toml(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return repr(v)
