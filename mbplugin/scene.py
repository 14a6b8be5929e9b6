"""Scene files: a TOML description of bodies, materials, contact laws, loads and the run.

The format is documented in ``docs/scenes.md``; ready scenes live in ``scenes/``. A scene file is
read with :mod:`tomllib`, ``--set`` overrides are applied, ``$name`` / ``= expression`` values are
resolved against its ``[parameters]``, and the whole document is validated (unknown keys, wrong
types, missing fields, bad values; every message names the TOML path, e.g.
``bodies[1].radius``) before anything is built or run.

>>> scene = load_scene("scenes/drop_ball.toml", ["law=flores", "cr=0.5"])
>>> result = scene.run()
>>> result.bounces[0]["cr"]
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import operator
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.errors import MBPluginError, ParameterError

# --------------------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------------------
NUM = "number"
INT = "integer"
STR = "string"
BOOL = "boolean"
VEC3 = "vec3"
VEC4 = "vec4"
TABLE = "table"
LIST_STR = "list of strings"
LIST_NUM = "list of numbers"
LIST_VEC3 = "list of 3-vectors"
INERTIA = "3 numbers or a 3x3 table"
GRID = "3 integers"

_FRICTION = {"mu": NUM, "mu_s": NUM, "v_s": NUM, "v_eps": NUM, "viscous": NUM,
             "regularisation": STR}
_PROFILE = {"type": STR, "t0": NUM, "t1": NUM, "freq": NUM, "phase": NUM, "rate": NUM}
LAW = "law name (or, from Python, a Law or Calibration object)"
_LAW_KEYS = {"law": LAW, "params": TABLE, "params_optional": TABLE, "friction": TABLE}

SCHEMA: dict[str, Any] = {
    "scene": {"name": STR, "description": STR, "duration": NUM},
    "parameters": None,  # free-form
    "world": {"gravity": VEC3, "backend": STR, "host_dt": NUM},
    "integrator": {"method": STR, "dt": NUM, "solver": STR, "rtol": NUM, "atol": NUM,
                   "max_step": NUM, "first_step": NUM, "event_samples": INT,
                   "switch_steps": INT, "contact_samples": INT, "max_steps": INT},
    "output": {"format": STR, "record_every": INT, "bodies": BOOL, "contacts": BOOL,
               "plots": LIST_STR},
    "materials": TABLE,
    "contact": {**_LAW_KEYS, "margin": NUM},
    "pairs": [{"bodies": LIST_STR, "materials": LIST_STR, **_LAW_KEYS}],
    "bodies": [{
        "name": STR, "shape": STR, "radius": NUM, "half_extents": VEC3, "normal": VEC3,
        "material": STR, "mass": NUM, "density": NUM, "inertia": INERTIA,
        "position": VEC3, "orientation": VEC4, "rpy_deg": VEC3, "velocity": VEC3,
        "angular_velocity": VEC3, "fixed": BOOL, "gravity_scale": NUM, "count": INT,
        "spacing": VEC3, "grid": GRID, "jitter": NUM, "seed": INT, "half_length": NUM,
        "kind": STR, "file": STR, "scale": NUM, "semi_axes": VEC3,
    }],
    "loads": [{"body": STR, "force": VEC3, "torque": VEC3, "profile": TABLE, "t": LIST_NUM,
               "force_table": LIST_VEC3, "torque_table": LIST_VEC3}],
    "analysis": {"phases": LIST_NUM, "micro_height": NUM, "report_bodies": LIST_STR},
}
_MATERIAL = {"E": NUM, "nu": NUM, "density": NUM}
REQUIRED = {
    "scene": ("duration",),
    "bodies[]": ("name", "shape"),
    "loads[]": ("body",),
    "materials.*": ("E", "nu"),
}
SHAPES = ("sphere", "box", "plane", "capsule", "hole", "mesh", "ellipsoid")
#: Fields each shape needs, and the fields that belong to one shape only.
SHAPE_NEEDS = {"sphere": ("radius",), "box": ("half_extents",), "plane": (),
               "capsule": ("radius", "half_length"), "hole": ("radius",), "mesh": ("file",),
               "ellipsoid": ("semi_axes",)}
SHAPE_ONLY = {"half_extents": ("box",), "normal": ("plane",), "half_length": ("capsule",),
              "kind": ("hole",), "file": ("mesh",), "scale": ("mesh",),
              "semi_axes": ("ellipsoid",)}
HOLE_KINDS = ("spherical", "cylindrical")
PLOTS = ("trajectory", "energy", "bounces", "loops")


class SceneError(ParameterError):
    """A scene file is invalid (the message names the file and the TOML path)."""


def _err(where: str, msg: str) -> SceneError:
    return SceneError(f"{where}: {msg}")


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _check_type(where: str, v: Any, kind: str) -> None:
    ok = True
    if kind == NUM:
        ok = _is_num(v) and math.isfinite(v)
    elif kind == INT:
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif kind == STR:
        ok = isinstance(v, str)
    elif kind == LAW:
        ok = isinstance(v, str) or _as_law_object(v) is not None
    elif kind == BOOL:
        ok = isinstance(v, bool)
    elif kind in (VEC3, VEC4):
        n = 3 if kind == VEC3 else 4
        ok = isinstance(v, list) and len(v) == n and all(_is_num(x) and math.isfinite(x)
                                                          for x in v)
    elif kind == TABLE:
        ok = isinstance(v, dict)
    elif kind == LIST_STR:
        ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
    elif kind == LIST_NUM:
        ok = isinstance(v, list) and all(_is_num(x) and math.isfinite(x) for x in v)
    elif kind == LIST_VEC3:
        ok = isinstance(v, list) and all(
            isinstance(r, list) and len(r) == 3
            and all(_is_num(x) and math.isfinite(x) for x in r) for r in v)
    elif kind == INERTIA:
        ok = (isinstance(v, list) and len(v) == 3 and (
            all(_is_num(x) for x in v)
            or all(isinstance(r, list) and len(r) == 3 and all(_is_num(x) for x in r)
                   for r in v)))
    elif kind == GRID:
        ok = isinstance(v, list) and len(v) == 3 and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v)
    if not ok:
        raise _err(where, f"expected {_article(kind)}, got {_show(v)}{_nonfinite_note(v)}")


def _as_law_object(v: Any) -> Any:
    """A Law given directly (or a Calibration's calibrated law), else None."""
    from mbplugin.laws.base import Law

    if isinstance(v, Law):
        return v
    law = getattr(v, "law", None)
    return law if isinstance(law, Law) else None


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _nonfinite_note(v: Any) -> str:
    """' (nan is not a finite number)' when a list (or a list of lists) holds a nan or an inf,
    else '': a vector of the right length is refused for that alone, so the message says so."""
    if not isinstance(v, list):
        return ""
    flat = [y for x in v for y in (x if isinstance(x, list) else [x])]
    bad = [x for x in flat if _is_num(x) and not math.isfinite(x)]
    return f" ({bad[0]!r} is not a finite number)" if bad else ""


def _show(v: Any) -> str:
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return f"a list of {len(v)} items {v!r}"[:80]
    return f"{type(v).__name__} {v!r}"[:80]


def _check_table(where: str, data: Any, spec: dict[str, str], required: Sequence[str] = ()) -> None:
    if not isinstance(data, dict):
        raise _err(where, f"expected a table, got {_show(data)}")
    for key, val in data.items():
        if key not in spec:
            close = _closest(key, spec)
            hint = f" (did you mean '{close}'?)" if close else ""
            raise _err(where, f"unknown key '{key}'{hint}; allowed: {', '.join(spec)}")
        _check_type(f"{where}.{key}", val, spec[key])
    for key in required:
        if key not in data:
            raise _err(where, f"missing field '{key}'")


def _closest(key: str, options: Any) -> str | None:
    import difflib

    m = difflib.get_close_matches(key, list(options), n=1, cutoff=0.6)
    return m[0] if m else None


def validate_document(doc: dict[str, Any], source: str = "scene") -> None:
    """Check the structure and types of a resolved scene document (SceneError if invalid)."""
    for key, val in doc.items():
        if key not in SCHEMA:
            close = _closest(key, SCHEMA)
            hint = f" (did you mean '{close}'?)" if close else ""
            raise _err(source, f"unknown top-level key '{key}'{hint}; allowed: "
                               f"{', '.join(SCHEMA)}")
        spec = SCHEMA[key]
        where = f"{source}: {key}"
        if spec is None:
            if not isinstance(val, dict):
                raise _err(where, f"expected a table, got {_show(val)}")
            continue
        if isinstance(spec, list):
            if not isinstance(val, list) or not all(isinstance(x, dict) for x in val):
                raise _err(where, f"expected an array of tables ([[{key}]]), got {_show(val)}")
            for i, item in enumerate(val):
                _check_table(f"{where}[{i}]", item, spec[0], REQUIRED.get(f"{key}[]", ()))
                for sub in ("friction", "profile"):
                    if sub in item:
                        _check_table(f"{where}[{i}].{sub}", item[sub],
                                     _FRICTION if sub == "friction" else _PROFILE)
            continue
        if spec == TABLE:  # materials
            if not isinstance(val, dict):
                raise _err(where, f"expected a table, got {_show(val)}")
            for name, mat in val.items():
                _check_table(f"{where}.{name}", mat, _MATERIAL, REQUIRED["materials.*"])
            continue
        _check_table(where, val, spec, REQUIRED.get(key, ()))
        if key == "contact" and "friction" in val:
            _check_table(f"{where}.friction", val["friction"], _FRICTION)
    if "scene" not in doc:
        raise _err(source, "missing table [scene] (with at least 'duration')")
    if "bodies" not in doc or not doc["bodies"]:
        raise _err(source, "missing [[bodies]]: a scene needs at least one body")


# --------------------------------------------------------------------------------------------------
# overrides and parameters
# --------------------------------------------------------------------------------------------------
def parse_value(text: str) -> Any:
    """A ``--set`` value as TOML (number, boolean, array, quoted string), else a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


Overrides = str | Mapping[str, Any] | Sequence[str] | None


def _override_items(items: Overrides) -> list[tuple[str, Any]]:
    """``"law=flores"``, ``["law=flores", "cr=0.5"]`` or ``{"law": "flores", "cr": 0.5}`` as
    (key, value) pairs (strings parsed as TOML values, mapping values taken as they are)."""
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    if isinstance(items, Mapping):
        return [(str(k).strip(), v) for k, v in items.items()]
    out = []
    for item in items:
        if not isinstance(item, str):
            raise SceneError(f"--set {item!r}: expected a 'KEY=VALUE' string")
        if "=" not in item:
            raise SceneError(f"--set {item!r}: expected KEY=VALUE, e.g. --set law=hertz")
        key, _, raw = item.partition("=")
        out.append((key.strip(), parse_value(raw.strip())))
    return out


def apply_overrides(doc: dict[str, Any], items: Overrides) -> dict[str, Any]:
    """Apply overrides: a name of ``[parameters]`` or a dotted TOML path
    (``integrator.rtol=1e-8``, ``bodies.0.position=[0, 0, 2]``), given as one ``KEY=VALUE``
    string, a list of them or a mapping ``{KEY: value}``."""
    doc = copy.deepcopy(doc)
    for key, value in _override_items(items):
        params = doc.get("parameters")
        if "." not in key and isinstance(params, dict) and key in params:
            params[key] = value
            continue
        if "." not in key and key not in SCHEMA:
            names = sorted(params) if isinstance(params, dict) else []
            close = _closest(key, [*names, *SCHEMA])
            hint = f" (did you mean '{close}'?)" if close else ""
            raise SceneError(f"--set {key}: not a parameter of the scene{hint}; parameters: "
                             f"{', '.join(names) or '(none)'}; or a dotted path such as "
                             "integrator.rtol")
        parts = key.split(".")
        node: Any = doc
        for j, part in enumerate(parts):
            last = j == len(parts) - 1
            where = ".".join(parts[: j + 1])
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise SceneError(f"--set {key}: '{where}' is not an index of a list of "
                                     f"{len(node)}")
                if last:
                    node[int(part)] = value
                else:
                    node = node[int(part)]
            elif isinstance(node, dict):
                if last:
                    node[part] = value
                elif part in node:
                    node = node[part]
                elif j == 0 and part in SCHEMA and SCHEMA[part] not in (None,) and not isinstance(
                        SCHEMA[part], list):
                    node[part] = {}
                    node = node[part]
                else:
                    known = ", ".join(sorted(params)) if isinstance(params, dict) else "(none)"
                    raise SceneError(f"--set {key}: no '{where}' in the scene; parameters: "
                                     f"{known}")
            else:
                raise SceneError(f"--set {key}: '{where}' is not a table")
    return doc


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.Mod: operator.mod,
}
_FUNCS: dict[str, Any] = {
    "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan, "atan": math.atan,
    "asin": math.asin, "acos": math.acos, "exp": math.exp, "log": math.log, "log10": math.log10,
    "radians": math.radians, "degrees": math.degrees, "abs": abs, "min": min, "max": max,
    "pi": math.pi, "e": math.e,
}


#: Limits of a ``= expression`` (the loader's budget: an expression is evaluated in microseconds
#: or refused): its length in characters, the nesting of its operations, and the size of an
#: integer intermediate (bits; a float holds < 2**1024, so a larger integer is no scene value).
MAX_EXPR_CHARS = 1000
MAX_EXPR_DEPTH = 100
MAX_INT_BITS = 1024


def _clip(text: str, n: int = 60) -> str:
    """``text`` cut to ``n`` characters for a one-line message."""
    return text if len(text) <= n else text[: n - 3] + "..."


def evaluate_expression(expr: str, names: dict[str, Any], where: str) -> Any:
    """Safely evaluate an arithmetic expression over numbers, parameters and math functions.

    Bounded: at most ``MAX_EXPR_CHARS`` characters, ``MAX_EXPR_DEPTH`` nested operations and
    integers of ``MAX_INT_BITS`` bits (``10**10**10`` is refused at once instead of computed);
    anything else a clear :class:`SceneError` naming ``where``."""
    shown = _clip(expr)

    def big(v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > MAX_INT_BITS:
            raise _err(where, f"'= {shown}': a value exceeds the range of a float (1.8e308)")
        return v

    def power(a: Any, b: Any) -> Any:
        if (isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1
                and b * math.log2(abs(a)) > MAX_INT_BITS):
            raise _err(where, f"'= {shown}': a value exceeds the range of a float (1.8e308)")
        return operator.pow(a, b)

    def ev(node: ast.AST, depth: int) -> Any:
        if depth > MAX_EXPR_DEPTH:
            raise _err(where, f"'= {shown}' is nested more than {MAX_EXPR_DEPTH} levels deep")
        depth += 1
        if isinstance(node, ast.Expression):
            return ev(node.body, depth)
        if isinstance(node, ast.Constant) and _is_num(node.value):
            return big(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            op = power if isinstance(node.op, ast.Pow) else _BINOPS[type(node.op)]
            return big(op(ev(node.left, depth), ev(node.right, depth)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand, depth)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Name):
            if node.id in names:
                val = names[node.id]
                if isinstance(val, str):
                    raise _err(where, f"parameter '{node.id}' = {_clip(val, 40)!r} in "
                                      f"'= {shown}' is not a number (scene values are SI "
                                      "numbers without units: m, kg, s, N)")
                return val
            if node.id in _FUNCS and not callable(_FUNCS[node.id]):
                return _FUNCS[node.id]
            raise _err(where, f"unknown name '{_clip(node.id, 40)}' in '= {shown}' (parameters: "
                              f"{_clip(', '.join(sorted(names)), 200) or '(none)'})")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and callable(_FUNCS.get(node.func.id)) and not node.keywords):
            return big(_FUNCS[node.func.id](*(ev(a, depth) for a in node.args)))
        raise _err(where, f"'= {shown}': only numbers, parameters, + - * / ** % and math "
                          "functions are allowed")

    if len(expr) > MAX_EXPR_CHARS:
        raise _err(where, f"'= {shown}' is {len(expr)} characters long (at most "
                          f"{MAX_EXPR_CHARS}); use [parameters] for its parts")
    try:
        tree = ast.parse(expr, mode="eval")
        val = ev(tree, 0)
        if isinstance(val, complex):
            raise _err(where, f"'= {shown}' is not a real number ({val:g})")
        if _is_num(val):
            float(val)  # OverflowError for an integer beyond a float's range
    except SceneError:
        raise
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _err(where, f"cannot evaluate '= {shown}': {_clip(msg, 100)}") from None
    except (RecursionError, MemoryError):
        raise _err(where, f"'= {shown}' is nested too deeply to evaluate") from None
    if _is_num(val) and not math.isfinite(val):
        raise _err(where, f"'= {shown}' is not finite")
    return val


def resolve_parameters(doc: dict[str, Any], source: str = "scene") -> dict[str, Any]:
    """Replace ``"$name"`` by the parameter and ``"= expr"`` by its value, everywhere."""
    params = dict(doc.get("parameters") or {})
    if not isinstance(doc.get("parameters", {}), dict):
        raise _err(f"{source}: parameters", "expected a table")
    # parameters may refer to earlier parameters
    resolved: dict[str, Any] = {}
    for k, v in params.items():
        resolved[k] = _resolve(v, resolved, f"{source}: parameters.{k}")

    def walk(node: Any, where: str) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, f"{where}.{k}") for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(node)]
        return _resolve(node, resolved, where)

    out = {k: (walk(v, f"{source}: {k}") if k != "parameters" else resolved)
           for k, v in doc.items()}
    return out


def _resolve(v: Any, names: dict[str, Any], where: str) -> Any:
    if isinstance(v, str):
        s = v.strip()
        if s.startswith("$"):
            key = s[1:]
            if key not in names:
                raise _err(where, f"unknown parameter '{key}' (parameters: "
                                  f"{', '.join(sorted(names)) or '(none)'})")
            return names[key]
        if s.startswith("="):
            return evaluate_expression(s[1:].strip(), names, where)
    if isinstance(v, list):
        return [_resolve(x, names, f"{where}[{i}]") for i, x in enumerate(v)]
    return v


# --------------------------------------------------------------------------------------------------
# building
# --------------------------------------------------------------------------------------------------
@dataclass
class BodySpec:
    name: str
    shape: str
    data: dict[str, Any]
    where: str
    position: np.ndarray


@dataclass
class Scene:
    """A validated scene, ready to run."""

    path: str
    name: str
    description: str
    duration: float
    doc: dict[str, Any]
    simulation: Any
    output_format: str = "npz"
    plots: list[str] = field(default_factory=list)
    analysis: dict[str, Any] = field(default_factory=dict)
    shape_owner: list[str] = field(default_factory=list)

    @property
    def world(self) -> Any:
        return self.simulation.world

    def run(self, progress: Callable[[float], None] | None = None) -> Any:
        """Run the simulation; returns a :class:`~mbplugin.dynamics.simulation.SimulationResult`
        with the scene's analysis (``result.extra["analysis"]``)."""
        result = self.simulation.run(progress)
        result.extra["analysis"] = analyse(self, result)
        return result


#: A scene file larger than this is refused before it is read (bytes).
MAX_SCENE_BYTES = 64 * 1024**2
#: Tables and arrays of a scene document nest at most this deep.
MAX_NESTING = 32
#: Characters of a scene name kept in its default output folder ``out/<name>``.
MAX_NAME_CHARS = 100


def load_scene(path: str | Path, overrides: Overrides = None) -> Scene:
    """Read, override, resolve, validate and build a scene file (SceneError if invalid).

    ``overrides``: ``"law=flores"``, ``["law=flores", "cr=0.5"]`` or ``{"law": "flores"}``.
    Mesh files named in the scene are read relative to the scene file's folder. A file that is
    not UTF-8 text, is larger than ``MAX_SCENE_BYTES`` or nests deeper than ``MAX_NESTING``
    is refused with a one-line SceneError naming it; a TOML syntax error names the key."""
    p = Path(path)
    src = str(path)
    try:
        size = p.stat().st_size
        if size > MAX_SCENE_BYTES:
            raise SceneError(f"{src}: the scene file is {size / 1024**2:.3g} MiB, more than "
                             f"{MAX_SCENE_BYTES // 1024**2} MiB: not a scene file?")
        data = p.read_bytes()
    except OSError as exc:
        raise SceneError(f"{src}: cannot read the scene file ({exc.strerror})") from None
    text = _decode(data, src)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SceneError(f"{src}: {_toml_error(text, exc)}") from None
    except (RecursionError, MemoryError):
        raise SceneError(f"{src}: not a scene: its tables or arrays are nested too deeply "
                         f"(at most {MAX_NESTING} levels)") from None
    return build_scene(doc, src, overrides, base_dir=p.parent)


def _decode(data: bytes, src: str) -> str:
    """The text of a scene file: UTF-8 (a byte-order mark allowed), else a SceneError naming
    the file and the first bad byte."""
    if b"\x00" in data:
        raise SceneError(f"{src}: a binary file (it holds NUL bytes), not a TOML scene file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SceneError(f"{src}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, "
                         f"column {col}); save the scene file as UTF-8") from None


def _toml_error(text: str, exc: Exception) -> str:
    """A TOML syntax error with the key path of its line (``bodies[1].mass: ...``)."""
    import re

    msg = str(exc).splitlines()[0] if str(exc) else "invalid"
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if not m:
        return f"not valid TOML: {_clip(msg, 200)}"
    lineno = int(m.group(1))
    lines = text.splitlines()
    table, counts = "", {}
    for raw in lines[: lineno - 1]:
        hdr = re.match(r"\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$", raw)
        if hdr:
            name = hdr.group(2).replace(" ", "").replace('"', "")
            if hdr.group(1) == "[[":
                counts[name] = counts.get(name, -1) + 1
                table = f"{name}[{counts[name]}]"
            else:
                table = name
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    if line.lstrip().startswith("["):  # the table header itself is broken: name its line
        return (f"line {lineno} {_clip(line.strip(), 40)!r}: not valid TOML, a broken table "
                f"header ({_clip(msg, 120)})")
    key = re.match(r"\s*([A-Za-z0-9_\-.\"']+)\s*=\s*(.*?)\s*(#.*)?$", line)
    if key:
        name = key.group(1).replace('"', "").replace("'", "")
        where = f"{table}.{name}" if table else name
        return (f"{where}: not a valid TOML value {_clip(key.group(2), 40)!r} "
                f"({_clip(msg, 120)})")
    return f"{table + ': ' if table else ''}not valid TOML: {_clip(msg, 160)}"


def check_nesting(doc: Any, source: str = "scene") -> None:
    """Refuse a document whose tables/arrays nest deeper than ``MAX_NESTING`` (walked without
    recursion, so a deep document cannot exhaust the stack)."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            raise SceneError(f"{source}: not a scene: its tables or arrays are nested more than "
                             f"{MAX_NESTING} levels deep")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((v, depth + 1) for v in node)


def default_out_dir(name: str) -> Path:
    """``out/<name>``, the output folder of a run without ``--out``: the scene name made a
    plain folder name (letters, digits, ``-``, ``_``, ``.``; no path separators, no leading
    dot), at most ``MAX_NAME_CHARS`` characters (a longer name keeps its start and a hash of
    the whole), so that a scene name never decides where outside ``./out`` files go."""
    import hashlib
    import re

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("._") or "scene"
    if len(safe) > MAX_NAME_CHARS:
        digest = hashlib.sha1(str(name).encode("utf-8", "replace")).hexdigest()[:8]
        safe = f"{safe[: MAX_NAME_CHARS - 9]}-{digest}"
    return Path("out") / safe


def build_scene(doc: dict[str, Any], source: str = "scene",
                overrides: Overrides = None, base_dir: str | Path | None = None) -> Scene:
    """Build a scene from a document: the parsed TOML of a scene file, or a dict written in
    Python with the same tables (see ``docs/scenes.md``). In a Python document a ``law`` may be
    a :class:`~mbplugin.laws.Law` or a :class:`~mbplugin.impact.Calibration` instead of a
    name. Mesh files are read relative to ``base_dir`` (default: the working directory).

    >>> scene = build_scene({"scene": {"duration": 0.5},
    ...                      "bodies": [{"name": "floor", "shape": "plane", "fixed": True},
    ...                                 {"name": "ball", "shape": "sphere", "radius": 0.01,
    ...                                  "mass": 0.05, "position": [0, 0, 0.1]}],
    ...                      "contact": {"law": "hertz", "params": {"k": 1e9}}})
    >>> result = scene.run()
    """
    check_nesting(doc, source)
    doc = apply_overrides(doc, overrides)
    check_nesting(doc, source)
    doc = resolve_parameters(doc, source)
    validate_document(doc, source)
    backend = doc.get("world", {}).get("backend", "standalone")
    if backend not in ("standalone", "pybullet", "mujoco"):
        raise SceneError(f"{source}: world.backend = {backend!r} is not one of "
                         "{standalone, pybullet, mujoco}")
    try:
        if backend in ("pybullet", "mujoco"):
            from mbplugin.host_scene import check_host_scene

            return check_host_scene(doc, source, backend, _law_entry,  # type: ignore[return-value]
                                    _friction, _build, base_dir=base_dir)
        return _build(doc, source, Path(base_dir) if base_dir is not None else Path("."))
    except SceneError:
        raise
    except MBPluginError as exc:
        raise SceneError(f"{source}: {exc}") from None


def _build(doc: dict[str, Any], src: str, base_dir: Path = Path(".")) -> Scene:
    """A checked scene document ``doc`` (from ``src``) into its standalone :class:`Scene`:
    materials, bodies, contact laws, loads, integrator and output, in that order (the first
    bad field raises a :class:`SceneError` naming it)."""
    from mbplugin.contact import ContactModel
    from mbplugin.dynamics.loads import Loads
    from mbplugin.dynamics.simulation import Simulation
    from mbplugin.dynamics.world import World

    sc = doc["scene"]
    duration = float(sc["duration"])
    if not duration > 0:
        raise _err(f"{src}: scene.duration", f"{duration:g} s is outside its allowed range "
                                             "(0, inf)")
    gravity = doc.get("world", {}).get("gravity", [0.0, 0.0, -9.81])

    # -- materials --
    model = ContactModel()
    materials = doc.get("materials", {})
    for name, m in materials.items():
        try:
            model.add_material(name, m["E"], m["nu"], m.get("density"))
        except ParameterError as exc:
            raise _err(f"{src}: materials.{name}", str(exc)) from None
    specs = _body_specs(doc, src, materials)
    names = [s.name for s in specs]
    bodies, shape_owner = _bodies(specs, model, materials, src, base_dir)
    engine_contacts = _engine_contacts(doc, src, model, bodies, materials, names)
    loads = Loads(len(specs))
    for i, ld in enumerate(doc.get("loads", [])):
        loads.add(_load(ld, names, f"{src}: loads[{i}]"))
    world = World(bodies, gravity=gravity, loads=loads, contacts=engine_contacts)
    settings, fmt, plots, record, analysis = _run_settings(doc, src, names)
    name = sc.get("name", Path(src).stem)
    sim = Simulation(world, duration, settings, record, name=name)
    return Scene(path=src, name=name, description=sc.get("description", ""), duration=duration,
                 doc=doc, simulation=sim, output_format=fmt, plots=list(plots),
                 analysis=analysis, shape_owner=shape_owner)


def _body_specs(doc: dict[str, Any], src: str, materials: dict[str, Any]) -> list[BodySpec]:
    """The scene's ``[[bodies]]`` tables, each ``count`` or ``grid`` expanded into its bodies
    (positions m: ``position`` plus the ``spacing`` offsets and the seeded ``jitter``), checked:
    shape and its fields, material, counts, unique names."""
    from mbplugin.dynamics.preflight import announce_build, check_body_count

    announce_build(sum(math.prod(b["grid"]) if isinstance(b.get("grid"), list)
                       else max(b.get("count", 1), 1) if isinstance(b.get("count"), int)
                       else 1 for b in doc["bodies"]), f"{src}: bodies")
    specs: list[BodySpec] = []
    for i, b in enumerate(doc["bodies"]):
        where = f"{src}: bodies[{i}]"
        shape = b["shape"]
        if shape not in SHAPES:
            raise _err(f"{where}.shape", f"'{shape}' is not one of {{{', '.join(SHAPES)}}}")
        for k in SHAPE_NEEDS[shape]:
            if k not in b:
                raise _err(where, f"missing field '{k}' ({_article(shape)} needs it)")
        for k, owners in SHAPE_ONLY.items():
            if k in b and shape not in owners:
                raise _err(f"{where}.{k}", f"belongs to {_article(' or '.join(owners))}, "
                                           f"not {_article(shape)}")
        if "material" in b and b["material"] not in materials:
            raise _err(f"{where}.material", f"unknown material '{b['material']}'; defined: "
                                            f"{', '.join(materials) or '(none)'}")
        pos0 = np.array(b.get("position", [0.0, 0.0, 0.0]), dtype=float)
        if "grid" in b or "count" in b:
            if "grid" in b and "count" in b:
                raise _err(where, "give either 'count' or 'grid', not both")
            dims = b["grid"] if "grid" in b else [b["count"], 1, 1]
            if "count" in b and b["count"] < 1:
                raise _err(f"{where}.count", f"{b['count']} is outside its allowed range [1, inf)")
            n_new = math.prod(int(x) for x in dims)
            try:
                check_body_count(len(specs) + n_new, where)
            except ParameterError as exc:
                raise _err(where, str(exc).split(": ", 1)[-1]) from None
            sp = np.array(b.get("spacing", [0.0, 0.0, 0.0]), dtype=float)
            idx = np.indices(dims).reshape(3, -1).T
            if "count" in b:
                offsets = idx[:, :1] * sp[None, :]
            else:
                offsets = idx * sp[None, :]
            jit = float(b.get("jitter", 0.0))
            if jit < 0:
                raise _err(f"{where}.jitter", f"{jit:g} m is outside its allowed range [0, inf)")
            if jit > 0:
                rng = np.random.default_rng(int(b.get("seed", 0)))
                offsets = offsets + rng.uniform(-jit, jit, offsets.shape)
            for k, off in enumerate(offsets):
                specs.append(BodySpec(f"{b['name']}_{k}", shape, b, f"{where} (#{k})", pos0 + off))
        else:
            for k in ("spacing", "jitter", "seed"):
                if k in b:
                    raise _err(where, f"'{k}' needs 'count' or 'grid'")
            specs.append(BodySpec(b["name"], shape, b, where, pos0))
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise _err(s.where, f"body name '{s.name}' is used twice")
        seen.add(s.name)
    return specs


def _bodies(specs: list[BodySpec], model: Any, materials: dict[str, Any], src: str,
            base_dir: Path) -> tuple[Any, list[str]]:
    """The bodies of ``specs`` (:class:`~mbplugin.dynamics.bodies.Bodies`: pose, twist, mass
    kg, inertia kg m^2, from ``mass``, ``density`` or the material's density) with their shapes
    added to ``model``; and each shape's owner (body name)."""
    from mbplugin.dynamics.bodies import Bodies
    from mbplugin.dynamics.rotation import quat_from_euler_xyz, quat_normalize, quat_to_matrix

    names = [s.name for s in specs]
    n = len(specs)
    shapes_cache: dict[int, Any] = {}
    mass = np.zeros(n)
    inertia = np.zeros((n, 3, 3))
    fixed = np.zeros(n, bool)
    gscale = np.ones(n)
    pos = np.zeros((n, 3))
    quat = np.zeros((n, 4))
    vel = np.zeros((n, 3))
    omega = np.zeros((n, 3))
    shape_owner: list[str] = []
    for i, s in enumerate(specs):
        b, where = s.data, s.where
        fixed[i] = bool(b.get("fixed", False))
        gscale[i] = float(b.get("gravity_scale", 1.0))
        pos[i] = s.position
        if "orientation" in b and "rpy_deg" in b:
            raise _err(where, "give either 'orientation' or 'rpy_deg', not both")
        if "orientation" in b:
            try:
                quat[i] = quat_normalize(np.array(b["orientation"], dtype=float))
            except ParameterError:
                raise _err(f"{where}.orientation", "must be a non-zero quaternion [w, x, y, z]"
                           ) from None
        elif "rpy_deg" in b:
            quat[i] = quat_from_euler_xyz(np.array(b["rpy_deg"], dtype=float))
        else:
            quat[i] = [1.0, 0.0, 0.0, 0.0]
        vel[i] = b.get("velocity", [0.0, 0.0, 0.0])
        w_world = np.array(b.get("angular_velocity", [0.0, 0.0, 0.0]), dtype=float)
        omega[i] = quat_to_matrix(quat[i][None])[0].T @ w_world
        # shape
        shp = shapes_cache.get(id(b)) if s.shape == "mesh" else None
        if shp is None:
            shp = _shape(s.shape, b, where, base_dir)
            if s.shape == "mesh":
                shapes_cache[id(b)] = shp
        if s.shape == "plane" and not fixed[i]:
            raise _err(where, "a plane is a half-space without mass: it must have fixed = true")
        com = np.zeros(3)
        if s.shape == "mesh":
            # the body's position is its centre of mass: the mesh sits at -com in its frame
            com = np.asarray(shp.mass_properties(1.0)[1], dtype=float)
        model.add_shape(shp, body=i, material=b.get("material"), pos=tuple(-com))
        shape_owner.append(s.name)
        mass[i], inertia[i] = _mass_properties(s, shp, bool(fixed[i]), materials)
    try:
        bodies = Bodies(names=names, mass=mass, inertia=inertia, fixed=fixed,
                        gravity_scale=gscale, pos=pos, quat=quat, vel=vel, omega=omega)
    except ParameterError as exc:
        raise _err(f"{src}: bodies", str(exc)) from None
    return bodies, shape_owner


def _mass_properties(s: BodySpec, shp: Any, fixed: bool,
                     materials: dict[str, Any]) -> tuple[float, np.ndarray]:
    """Body ``s``'s mass (kg) and inertia (3, 3) (kg m^2) about its centre of mass: from its
    ``mass`` or ``density`` (else its material's density) and its shape ``shp``'s unit-density
    mass properties, or a given ``inertia``; a fixed body's mass is infinite."""
    b, where = s.data, s.where
    if fixed:
        if "mass" in b or "density" in b:
            raise _err(where, "a fixed body takes no 'mass' or 'density'")
        return math.inf, np.eye(3)
    if "mass" in b and "density" in b:
        raise _err(where, "give either 'mass' or 'density', not both")
    rho = b.get("density")
    if rho is None and "mass" not in b:
        mat = materials.get(b.get("material", ""), {})
        rho = mat.get("density")
        if rho is None:
            raise _err(where, "missing field 'mass' (or 'density', or a material with a "
                              "density)")
    if s.shape == "hole" and "mass" not in b:
        raise _err(where, "a hole (a cavity) has no volume of its own: give its 'mass' "
                          "(and 'inertia'), or make it fixed")
    if s.shape == "hole":
        m1, i1 = 1.0, np.eye(3) * (0.4 * float(b["radius"]) ** 2)
    else:
        m1, _, i1 = shp.mass_properties(1.0)
    if "mass" in b:
        mass = float(b["mass"])
        if not (math.isfinite(mass) and mass > 0):
            raise _err(f"{where}.mass", f"{mass:g} kg is outside its allowed range (0, inf)")
    else:
        if not (rho is not None and rho > 0):
            raise _err(f"{where}.density", f"{rho} kg/m^3 is outside its allowed range "
                                           "(0, inf)")
        mass = m1 * float(rho)
    if "inertia" in b:
        iv = np.array(b["inertia"], dtype=float)
        return mass, np.diag(iv) if iv.ndim == 1 else iv
    return mass, i1 * (mass / m1)


def _engine_contacts(doc: dict[str, Any], src: str, model: Any, bodies: Any,
                     materials: dict[str, Any], names: list[str]) -> Any:
    """The scene's contact laws (``[contact]``: the default law and friction; ``[[pairs]]``:
    per pair of materials or bodies) set in ``model``, and the engine's contacts over
    ``bodies`` (None: fewer than two bodies, or no contact table)."""
    from mbplugin.dynamics.contacts import EngineContacts

    contact = doc.get("contact")
    pairs = doc.get("pairs", [])
    frictions: list[Any] = []
    if not (len(names) >= 2 and (contact is not None or pairs)):
        return None
    if contact is None or "law" not in contact:
        raise _err(f"{src}: contact", "missing field 'law': the default law of every pair "
                                      "(add [contact] law = \"...\")")
    model.set_default_law(_law_entry(contact, f"{src}: contact"))
    frictions.append(_friction(contact, f"{src}: contact"))
    mat_pairs = [(i, p) for i, p in enumerate(pairs) if "materials" in p]
    body_pairs = [(i, p) for i, p in enumerate(pairs) if "bodies" in p]
    seen_pairs: set[tuple[str, ...]] = set()
    for i, p in enumerate(pairs):
        where = f"{src}: pairs[{i}]"
        if ("materials" in p) == ("bodies" in p):
            raise _err(where, "give exactly one of 'bodies' or 'materials'")
        sel = p.get("materials", p.get("bodies"))
        if len(sel) != 2:
            raise _err(where, f"expected 2 names, got {len(sel)}")
        key = ("m" if "materials" in p else "b", *sorted(sel))
        if key in seen_pairs:
            raise _err(where, f"the pair {sel} is given twice")
        seen_pairs.add(key)
        if "law" not in p:
            raise _err(where, "missing field 'law'")
    for i, p in mat_pairs:
        where = f"{src}: pairs[{i}]"
        for m in p["materials"]:
            if m not in materials:
                raise _err(f"{where}.materials", f"unknown material '{m}'")
        model.set_pair_law(_law_entry(p, where), materials=tuple(p["materials"]))
        frictions.append(_friction(p, where))
    for i, p in body_pairs:
        where = f"{src}: pairs[{i}]"
        idx = []
        for nm in p["bodies"]:
            if nm not in names:
                raise _err(f"{where}.bodies", f"unknown body '{nm}'; bodies: "
                                              f"{_list(names)}")
            idx.append(names.index(nm))
        model.set_pair_law(_law_entry(p, where), bodies=(idx[0], idx[1]))
        frictions.append(_friction(p, where))
    margin = contact.get("margin")
    try:
        engine_contacts = EngineContacts(model, bodies, frictions, margin=margin)
    except ParameterError as exc:
        raise _err(f"{src}: contact", str(exc)) from None
    if len(engine_contacts.laws) != len(frictions):
        raise _err(f"{src}: pairs", "internal: law table and friction table disagree")
    return engine_contacts


def _run_settings(doc: dict[str, Any], src: str, names: list[str]) -> tuple[Any, ...]:
    """The scene's ``[integrator]``, ``[output]`` and ``[analysis]`` tables, checked:
    (integrator settings, output format, plots, record settings, analysis table)."""
    from mbplugin.dynamics.integrators import IntegratorSettings
    from mbplugin.dynamics.simulation import FORMATS, RecordSettings

    integ = doc.get("integrator", {})
    try:
        settings = IntegratorSettings(**{k: v for k, v in integ.items()})
    except ParameterError as exc:
        raise _err(f"{src}: integrator", str(exc)) from None
    out = doc.get("output", {})
    fmt = out.get("format", "npz")
    if fmt not in FORMATS:
        raise _err(f"{src}: output.format", f"'{fmt}' is not one of {{npz, csv}}")
    plots = out.get("plots", list(PLOTS))
    for pl in plots:
        if pl not in PLOTS:
            raise _err(f"{src}: output.plots", f"'{pl}' is not one of {{{', '.join(PLOTS)}}}")
    try:
        record = RecordSettings(every=out.get("record_every", 1), bodies=out.get("bodies", True),
                                contacts=out.get("contacts", True))
    except ParameterError as exc:
        raise _err(f"{src}: output", str(exc)) from None
    analysis = doc.get("analysis", {})
    for nm in analysis.get("report_bodies", []):
        if nm not in names:
            raise _err(f"{src}: analysis.report_bodies", f"unknown body '{nm}'")
    return settings, fmt, plots, record, analysis


def _shape(kind: str, b: dict[str, Any], where: str, base_dir: Path) -> Any:
    """The contact shape of a [[bodies]] entry."""
    from mbplugin.contact import (
        Box,
        Capsule,
        CylindricalHole,
        Ellipsoid,
        Mesh,
        Plane,
        Sphere,
        SphericalHole,
    )

    try:
        if kind == "sphere":
            return Sphere(b["radius"])
        if kind == "box":
            return Box(tuple(b["half_extents"]), b.get("radius"))
        if kind == "plane":
            return Plane(tuple(b.get("normal", [0.0, 0.0, 1.0])))
        if kind == "capsule":
            return Capsule(b["radius"], b["half_length"])
        if kind == "hole":
            hk = b.get("kind", "spherical")
            if hk not in HOLE_KINDS:
                raise _err(f"{where}.kind", f"'{hk}' is not one of {{{', '.join(HOLE_KINDS)}}}")
            return (SphericalHole if hk == "spherical" else CylindricalHole)(b["radius"])
        if kind == "ellipsoid":
            return Ellipsoid(b["semi_axes"])
        # mesh: a file relative to the scene file's folder
        path = Path(b["file"])
        if not path.is_absolute():
            path = base_dir / path
        if not path.is_file():
            raise _err(f"{where}.file", f"no mesh file {str(path)!r} (mesh files are read "
                                        "relative to the scene file)")
        import trimesh

        try:
            tm = trimesh.load(str(path), force="mesh")
        except Exception as exc:  # trimesh raises many types for unreadable files
            raise _err(f"{where}.file", f"cannot read the mesh {str(path)!r}: {exc}") from None
        scale = float(b.get("scale", 1.0))
        if not scale > 0:
            raise _err(f"{where}.scale", f"{scale:g} is outside its allowed range (0, inf)")
        if scale != 1.0:
            tm.apply_scale(scale)
        return Mesh(tm, b.get("radius"))
    except ParameterError as exc:
        if isinstance(exc, SceneError):
            raise
        raise _err(where, str(exc)) from None


def _list(names: Sequence[str], k: int = 8) -> str:
    return ", ".join(names[:k]) + (", ..." if len(names) > k else "")


def _law_entry(table: dict[str, Any], where: str) -> Any:
    """The law of a [contact] or [[pairs]] table as a PairLaw (Hertz k when 'k' is absent)."""
    from mbplugin.contact import as_pair_law
    from mbplugin.laws import get_law_class

    obj = _as_law_object(table["law"])
    if obj is not None:
        from mbplugin.contact import PairLaw

        if table.get("params") or table.get("params_optional"):
            raise _err(f"{where}.params", "a law given as an object carries its own "
                                          "parameters: leave 'params' out")
        return PairLaw(obj)
    name = table["law"]
    try:
        cls = get_law_class(name)
    except ParameterError as exc:
        raise _err(f"{where}.law", str(exc)) from None
    params = dict(table.get("params", {}))
    accepted = {p.name for p in cls.params}
    for k, v in table.get("params_optional", {}).items():
        if k in accepted and k not in params:
            params[k] = v
    for k, v in params.items():
        if not (_is_num(v) or isinstance(v, str | bool)):
            raise _err(f"{where}.params.{k}", f"expected a number or a string, got {_show(v)}")
    try:
        if "k" not in accepted:  # a law without a stiffness parameter (e.g. Jian's)
            from mbplugin.contact import PairLaw
            from mbplugin.laws import make_law

            return PairLaw(make_law(name, **params))
        return as_pair_law({"name": name, **params})
    except ParameterError as exc:
        raise _err(f"{where}.params", str(exc)) from None


def _friction(table: dict[str, Any], where: str) -> Any:
    from mbplugin.dynamics.friction import Friction

    f = table.get("friction")
    if f is None:
        return None
    try:
        return Friction(**f)
    except ParameterError as exc:
        raise _err(f"{where}.friction", str(exc)) from None


def _load(ld: dict[str, Any], names: list[str], where: str) -> Any:
    from mbplugin.dynamics.loads import Load, TimeFunction

    if ld["body"] not in names:
        raise _err(f"{where}.body", f"unknown body '{ld['body']}'; bodies: {_list(names)}")
    bi = names.index(ld["body"])
    table = "t" in ld
    if table:
        if "profile" in ld or "force" in ld or "torque" in ld:
            raise _err(where, "a table load ('t') takes 'force_table'/'torque_table', not "
                              "'force'/'torque'/'profile'")
        if "force_table" not in ld and "torque_table" not in ld:
            raise _err(where, "missing field 'force_table' or 'torque_table' next to 't'")
        try:
            return Load(bi, table_t=np.array(ld["t"], dtype=float),
                        table_force=np.array(ld["force_table"], dtype=float)
                        if "force_table" in ld else None,
                        table_torque=np.array(ld["torque_table"], dtype=float)
                        if "torque_table" in ld else None)
        except ParameterError as exc:
            raise _err(where, str(exc)) from None
    if "force_table" in ld or "torque_table" in ld:
        raise _err(where, "'force_table'/'torque_table' need the times 't'")
    if "force" not in ld and "torque" not in ld:
        raise _err(where, "missing field 'force' or 'torque'")
    prof = None
    if "profile" in ld:
        p = dict(ld["profile"])
        kind = p.pop("type", "constant")
        try:
            prof = TimeFunction(kind, **p)
        except (ParameterError, TypeError) as exc:
            raise _err(f"{where}.profile", str(exc)) from None
    return Load(bi, force=np.array(ld["force"], dtype=float) if "force" in ld else None,
                torque=np.array(ld["torque"], dtype=float) if "torque" in ld else None,
                profile=prof)


# --------------------------------------------------------------------------------------------------
# analysis
# --------------------------------------------------------------------------------------------------
def analyse(scene: Scene, result: Any) -> dict[str, Any]:
    """Scene-level figures: accepted steps per time phase, bounce heights and micro-bounces,
    the resting contacts' resonant frequency, final velocities of chosen bodies."""
    cfg = scene.analysis
    out: dict[str, Any] = {}
    world = scene.world
    g = float(np.linalg.norm(world.gravity))
    stats = result.stats
    if "phases" in cfg and getattr(stats, "step_times", None) is not None:
        edges = [float(x) for x in cfg["phases"]]
        st = np.asarray(stats.step_times)
        out["steps_per_phase"] = [
            {"from": a, "to": b, "steps": int(np.sum((st > a) & (st <= b)))}
            for a, b in itertools.pairwise(edges)
        ]
    if "micro_height" in cfg and g > 0:
        hmin = float(cfg["micro_height"])
        heights = [b["v_out"] ** 2 / (2 * g) for b in result.bounces]
        below = [i for i, h in enumerate(heights) if h < hmin]
        out["bounce_heights"] = heights
        if below:
            first = below[0]
            out["height_below_threshold_at"] = result.bounces[first]["t_out"]
            out["bounces_before_threshold"] = first
            out["micro_bounces"] = len(heights) - first
        if result.bounces:
            out["last_separation"] = result.bounces[-1]["t_out"]
    contacts = world.contacts
    if contacts is not None and contacts.n_active and result.final_state is not None:
        # linearised resonance sqrt(k_local/m_eff)/(2 pi) of the stiffest resting contact
        _, info = contacts.stable_step(result.final_state, "symplectic_euler")
        if info:
            out["resting_frequency_hz"] = info["omega"] / (2 * math.pi)
            out["resting_contacts"] = int(contacts.n_active)
    for nm in cfg.get("report_bodies", []):
        i = result.body_names.index(nm)
        if len(result.t):
            out.setdefault("final_velocity", {})[nm] = result.vel[-1, i].tolist()
            out.setdefault("max_velocity", {})[nm] = result.vel[:, i].max(axis=0).tolist()
    return out
