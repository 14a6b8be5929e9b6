"""The package's dependency rules, checked by walking every module's imports with ``ast``.

* ``mbplugin.laws`` is the bottom layer: it imports nothing of the package but itself, the
  error types and the JIT shim (not contact, dynamics, impact, pipeline, cli, scene, bullet, ...).
* Only ``mbplugin/cli/`` imports ``mbplugin.cli`` (library code never depends on the CLI).
* No module imports another package's private module: ``mbplugin.X._y`` only from inside
  ``mbplugin.X`` (lazy imports inside functions included).
* The host packages: ``mbplugin.bullet`` and ``mbplugin.mujoco`` (the adapters of PyBullet and
  MuJoCo with their user classes) never import each other; ``mbplugin.hosts`` (the generic
  contact loop behind the host protocol) imports no host backend; the host packages and
  ``mbplugin.dynamics`` (the standalone engine) never import each other.
* ``mbplugin.pipeline`` (the per-contact data, the rules, forces, integration) sits below the
  drivers and the geometry: it imports no ``mbplugin.contact`` (geometry reaches it as arrays;
  ``contact -> pipeline`` is the allowed direction), no driver (``mbplugin.dynamics``,
  ``mbplugin.impact``) and no host package (:data:`PIPELINE_ALLOWED` names the exceptions).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "mbplugin"
#: What mbplugin.laws may import from the package.
LAWS_MAY_IMPORT = ("mbplugin.laws", "mbplugin.errors", "mbplugin._jit")
#: The host packages (the generic loop and the adapters of the host engines).
HOST_PACKAGES = ("mbplugin.hosts", "mbplugin.bullet", "mbplugin.mujoco")
#: The host backends (one adapter package per engine).
HOST_BACKENDS = ("mbplugin.bullet", "mbplugin.mujoco")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of every mbplugin module a file imports, anywhere in the file.

    ``from a.b import c`` yields ``a.b.c`` when ``c`` is a submodule (a file or package of
    ``a/b``), else ``a.b``; relative imports are resolved against the file's package.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            for a in node.names:
                sub = ROOT.parent.joinpath(*mod.split("."), a.name)
                is_module = sub.with_suffix(".py").exists() or (sub / "__init__.py").exists()
                out.append((node.lineno, f"{mod}.{a.name}" if is_module else mod))
    return [(line, name) for line, name in out if name.split(".")[0] == "mbplugin"]


def _all_imports() -> list[tuple[str, str, int, str]]:
    """(module, file, line, imported) for every import of every module of the package."""
    rows = []
    for path in sorted(ROOT.rglob("*.py")):
        for line, name in _imports(path):
            rows.append((_module_name(path), str(path.relative_to(ROOT.parent)), line, name))
    return rows


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_walk_sees_the_package():
    """The walk finds the modules and their imports (the checks below are not vacuous)."""
    rows = _all_imports()
    modules = {r[0] for r in rows}
    assert {"mbplugin.laws.power", "mbplugin.impact", "mbplugin.cli"} <= modules
    assert any(r[0] == "mbplugin.laws.power" and r[3] == "mbplugin.laws.base" for r in rows)
    assert any(r[0].startswith("mbplugin.cli") and _within(r[3], "mbplugin.cli") for r in rows)


def test_laws_is_the_bottom_layer():
    bad = [f"{f}:{line} imports {name}" for mod, f, line, name in _all_imports()
           if _within(mod, "mbplugin.laws")
           and not any(_within(name, ok) for ok in LAWS_MAY_IMPORT)]
    assert not bad, "mbplugin.laws may import only " + ", ".join(LAWS_MAY_IMPORT) + ":\n" + \
        "\n".join(bad)


def test_only_the_cli_imports_the_cli():
    bad = [f"{f}:{line} imports {name}" for mod, f, line, name in _all_imports()
           if _within(name, "mbplugin.cli") and not _within(mod, "mbplugin.cli")]
    assert not bad, "library code must not import mbplugin.cli:\n" + "\n".join(bad)


def test_no_private_module_of_another_package():
    bad = []
    for mod, f, line, name in _all_imports():
        parts = name.split(".")
        for k in range(1, len(parts)):
            if parts[k].startswith("_") and not parts[k].startswith("__"):
                owner = ".".join(parts[:k])  # the package the private module belongs to
                if not _within(mod, owner):
                    bad.append(f"{f}:{line} imports {name} (private to {owner})")
                break
    assert not bad, "private modules imported from outside their package:\n" + "\n".join(bad)


def test_host_backends_do_not_import_each_other():
    rows = _all_imports()
    bad = [f"{f}:{line} imports {name}" for mod, f, line, name in rows
           for x in HOST_BACKENDS for y in HOST_BACKENDS
           if x != y and _within(mod, x) and _within(name, y)]
    assert not bad, "host backends import each other:\n" + "\n".join(bad)
    # the walk sees both backends on the generic loop (the check is not vacuous)
    for x in HOST_BACKENDS:
        assert any(_within(r[0], x) and _within(r[3], "mbplugin.hosts") for r in rows)


#: the generic pieces of a host step (one place each, docs/architecture.md "Hosts")
GENERIC_PIECES = ("mbplugin.hosts.step", "mbplugin.hosts.correction",
                  "mbplugin.hosts.detection", "mbplugin.hosts.options", "mbplugin.hosts.model")


def test_both_host_steps_use_the_generic_pieces():
    """The PyBullet backend (its package) and the generic loop (MuJoCo's) import each generic
    piece of a host step (the step itself: W, integration, implicit step; correction,
    detection's margin, options, model rules) rather than keeping a copy of it."""
    rows = _all_imports()
    for user in ("mbplugin.bullet", "mbplugin.hosts.loop"):
        used = {name for mod, _, _, name in rows if _within(mod, user)}
        missing = [p for p in GENERIC_PIECES if p not in used]
        assert not missing, f"{user} does not use {missing}"


def test_the_generic_loop_imports_no_host_backend():
    rows = _all_imports()
    bad = [f"{f}:{line} imports {name}" for mod, f, line, name in rows
           if _within(mod, "mbplugin.hosts") and any(_within(name, x) for x in HOST_BACKENDS)]
    assert not bad, "the generic loop imports a host backend:\n" + "\n".join(bad)
    assert any(_within(r[0], "mbplugin.hosts") and _within(r[3], "mbplugin.pipeline")
               for r in rows)


#: the longest class (lines, decorators excluded) in the host packages (shared/DESIGN.md:
#: "classes stay small and single-purpose"; issue 21: "no class over ~300 lines")
HOST_CLASS_MAX = 300


def test_host_classes_are_small_and_composed():
    """Every class of mbplugin.hosts, .bullet and .mujoco spans at most HOST_CLASS_MAX lines;
    the user classes own their parts (reading the host, building, detection, free flight,
    correction) as objects, not as base classes; both backends take the free flight's rule
    from mbplugin.hosts.flight."""
    spans, bases = [], {}
    flight = set()  # the packages that import mbplugin.hosts.flight
    for pkg in ("hosts", "bullet", "mujoco"):
        for f in sorted((ROOT / pkg).glob("*.py")):
            for node in ast.walk(ast.parse(f.read_text())):
                if isinstance(node, ast.ClassDef):
                    spans.append((node.end_lineno - node.lineno + 1, f"{pkg}/{f.name}:{node.name}"))
                    bases[node.name] = [ast.unparse(b) for b in node.bases]
                elif isinstance(node, ast.ImportFrom) and node.module == "mbplugin.hosts.flight":
                    flight.add(f"mbplugin.{pkg}")
    assert len(spans) > 20  # the walk sees the classes
    big = [f"{name}: {n} lines" for n, name in sorted(spans, reverse=True) if n > HOST_CLASS_MAX]
    assert not big, "classes over HOST_CLASS_MAX lines:\n" + "\n".join(big)
    assert bases["BulletContacts"] == [] and bases["MujocoContacts"] == []
    assert flight >= set(HOST_BACKENDS), f"{set(HOST_BACKENDS) - flight} do not use hosts.flight"


def test_dynamics_and_the_host_packages_do_not_import_each_other():
    rows = _all_imports()
    bad = [f"{f}:{line} imports {name}" for mod, f, line, name in rows
           for x in HOST_PACKAGES
           if (_within(mod, x) and _within(name, "mbplugin.dynamics"))
           or (_within(mod, "mbplugin.dynamics") and _within(name, x))]
    assert not bad, "dynamics and the host packages import each other:\n" + "\n".join(bad)
    assert any(_within(r[0], "mbplugin.dynamics") for r in rows)


#: What mbplugin.pipeline must not import: the geometry, the drivers, the host packages.
PIPELINE_FORBIDDEN = ("mbplugin.contact", "mbplugin.dynamics", "mbplugin.impact", *HOST_PACKAGES)
#: Known exceptions, each one (importing module, imported module): none left (the DOP853/Radau
#: cores, the problem registry and the stiff-switch constants moved into pipeline/).
PIPELINE_ALLOWED: tuple[tuple[str, str], ...] = ()


def test_pipeline_imports_no_geometry_driver_or_host():
    rows = _all_imports()
    bad = [f"{f}:{line} imports {name}" for mod, f, line, name in rows
           if _within(mod, "mbplugin.pipeline")
           and any(_within(name, x) for x in PIPELINE_FORBIDDEN)
           and (mod, name) not in PIPELINE_ALLOWED]
    assert not bad, "mbplugin.pipeline imports a layer above it:\n" + "\n".join(bad)
    # the walk sees the pipeline's own modules and the store (the check is not vacuous)
    assert any(r[0] == "mbplugin.pipeline.store" and r[3] == "mbplugin.pipeline.rules"
               for r in rows)
    assert any(r[0] == "mbplugin.contact.model" and r[3] == "mbplugin.pipeline.store"
               for r in rows)


def test_the_store_and_batch_keep_their_public_names():
    """``mbplugin.contact`` re-exports the per-contact data that moved to pipeline/ (public
    API): the same classes, not copies."""
    import mbplugin.contact as contact
    from mbplugin.pipeline import batch, store

    assert contact.ContactStore is store.ContactStore
    assert contact.ContactBatch is batch.ContactBatch
    for name in ("PairLaw", "AlignedContacts", "EVENT_DTYPE", "BOUNCE_DTYPE"):
        assert getattr(contact, name) is getattr(store, name)


@pytest.mark.parametrize(("source", "expected"), [
    ("from mbplugin.laws import _ids\n", "mbplugin.laws._ids"),
    ("from mbplugin.laws.power import power_force\n", "mbplugin.laws.power"),
    ("def f():\n    from mbplugin.impact import impact\n", "mbplugin.impact"),
    ("from ..laws import kernels\n", "mbplugin.laws.kernels"),
])
def test_import_walk_resolves_forms(tmp_path, monkeypatch, source, expected):
    """The walk resolves submodule, name, lazy and relative imports (checked on a fake file
    placed inside the package tree's naming scheme)."""
    fake = ROOT / "dynamics" / "_layering_probe.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    assert [name for _, name in _imports(fake)] == [expected]


#: Third-party modules whose private parts we rely on knowingly: numba's dispatcher internals
#: (behind a fallback in mbplugin._jit) and SciPy's column grouping for sparse finite
#: differences (Curtis-Powell-Reid; no public name, used by the engine's general path only).
THIRD_PARTY_PRIVATE_OK = ("numba", "scipy.optimize._numdiff")


def _third_party_private(source: str) -> list[tuple[int, str]]:
    """(line, name) of every import of a private module (a ``_x`` part) of a package other
    than mbplugin, anywhere in a file's source."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "mbplugin" or any(
                    name == ok or name.startswith(ok + ".") for ok in THIRD_PARTY_PRIVATE_OK):
                continue
            if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
                out.append((node.lineno, name))
                break
    return out


def test_no_private_module_of_a_third_party_package():
    """No import of e.g. ``scipy.integrate._ivp``: the integrators' tables are our own or read
    from public classes, so a SciPy release that moves its internals cannot break us."""
    assert _third_party_private("from scipy.integrate._ivp import radau\n") == [
        (1, "scipy.integrate._ivp")]
    bad = [f"{p.relative_to(ROOT.parent)}:{line} imports {name}"
           for p in sorted(ROOT.rglob("*.py"))
           for line, name in _third_party_private(p.read_text())]
    assert not bad, "private modules of other packages imported:\n" + "\n".join(bad)


#: The integrators' and the events' pieces (DESIGN.md "Integration, events, hosts"): each
#: defined in one module of mbplugin.pipeline and imported from there by every driver.
ONE_PLACE = {
    "pipeline/radau.py": ("radau_step", "radau_start", "radau_workspace", "_collocation",
                          "_lu_factor", "_lu_solve", "_predict_factor"),
    "pipeline/dop853.py": ("dop853_step", "dop853_dense", "dense_at", "error_norm",
                           "dense_coefficients"),
    "pipeline/ivp.py": ("initial_step", "register_problem", "problem_rhs"),
    "pipeline/events.py": ("locate", "locate_py", "brent_step", "strict_side", "event_at",
                           "register_events"),
}
#: Root finders by name: only in pipeline/events.py.
ROOT_FINDER_WORDS = ("illinois", "brent", "regula", "falsi", "strict_side", "zeroin", "bisect")
#: DOP853 step loops (a function evaluating the stages, ``stage_input``, or the step's error,
#: ``error_norm``): only the shared step's module (the engine, the hosts' sub-stepper and the
#: impact analyser all step with ``pipeline.dop853.dop853_step``).
DOP853_LOOPS_OK = ("pipeline/dop853.py",)
DOP853_LOOP_WORDS = ("stage_input", "error_norm")
#: Illinois iterations that are not event location (the implicit step's line search on the
#: slope of its merit function, NumPy reference and compiled kernel: an inexact line search that
#: stops at the first point with |phi'| <= |phi'(0)| / 4, not at a root): left as they are.
ILLINOIS_ELSEWHERE_OK = ("pipeline/implicit.py", "pipeline/implicit_kernel.py")


#: The contact rules' event-value formulas (:mod:`mbplugin.pipeline.rules`): called only by the
#: one ``event_value`` of pipeline/events.py (and by the rules themselves).
EVENT_FORMULAS = ("onset_value", "end_value", "peak_value", "apex_value", "latch_release_value",
                  "latch_renew_value", "latch_value", "end_value_batch", "latch_value_batch",
                  "latch_renew_value_batch")
#: Every driver's event values, compiled and reference: they call pipeline.events' function.
EVENT_VALUE_CALLERS = ("dynamics/compiled.py", "dynamics/contacts.py",
                       "pipeline/substep_compiled.py", "pipeline/substep.py",
                       "impact/_compiled.py", "impact/_reference.py")


def _called_name(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return None


def test_one_event_values():
    """Counted in the code: one ``event_value`` (and its array form ``event_values``), in
    pipeline/events.py, writes every driver's event values from the pair's class; no other
    module defines one or calls the rules' event-value formulas, and the engine (compiled and
    SciPy paths), the hosts' sub-stepper (compiled and NumPy reference) and the impact analyser
    (compiled and SciPy reference) all call it."""
    bad, callers = [], set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module functions (a driver's method may wrap the function)
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node.name in ("event_value", "event_values")
                    and rel != "pipeline/events.py"):
                bad.append(f"{rel}:{node.lineno} defines {node.name}")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _called_name(node)
            if name in EVENT_FORMULAS and rel not in ("pipeline/events.py", "pipeline/rules.py"):
                bad.append(f"{rel}:{node.lineno} calls rules.{name} (use events.event_value)")
            if name in ("event_value", "event_values"):
                callers.add(rel)
    assert not bad, "event values written outside pipeline.events.event_value:\n" + "\n".join(bad)
    assert set(EVENT_VALUE_CALLERS) <= callers, (
        f"drivers not calling events.event_value(s): {set(EVENT_VALUE_CALLERS) - callers}")


def _illinois_halving(fn: ast.AST) -> bool:
    """Whether a function holds Illinois' step: ``x *= 0.5`` under ``if side == ...``."""
    for node in ast.walk(fn):
        if (isinstance(node, ast.If) and isinstance(node.test, (ast.Compare, ast.BoolOp))
                and any(isinstance(n, ast.Name) and n.id == "side"
                        for n in ast.walk(node.test))):
            for sub in node.body:
                if (isinstance(sub, ast.AugAssign) and isinstance(sub.op, ast.Mult)
                        and isinstance(sub.value, ast.Constant) and sub.value.value == 0.5):
                    return True
    return False


def _brent_interpolation(fn: ast.AST) -> bool:
    """Whether a function holds Brent's inverse quadratic interpolation: the denominator
    ``(q - 1.0) * (r - 1.0) * (s - 1.0)`` (Brent 1973, Ch. 4, procedure zero)."""
    def minus_one(n: ast.AST) -> bool:
        return (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
                and isinstance(n.right, ast.Constant) and n.right.value == 1.0)
    for node in ast.walk(fn):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
                and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Mult)
                and minus_one(node.right) and minus_one(node.left.left)
                and minus_one(node.left.right)):
            return True
    return False


def _regula_falsi_point(fn: ast.AST) -> bool:
    """Whether a function computes a regula falsi point ``(a * gb - b * ga) / (gb - ga)``."""
    for node in ast.walk(fn):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Sub)
                and all(isinstance(x, ast.BinOp) and isinstance(x.op, ast.Mult)
                        for x in (node.left.left, node.left.right))
                and isinstance(node.right, ast.BinOp) and isinstance(node.right.op, ast.Sub)):
            return True
    return False


#: The iterations of a bracketing root finder, by method: what "one root finder" counts.
ROOT_FINDER_METHODS = {"Illinois": _illinois_halving, "Brent": _brent_interpolation,
                       "regula falsi": _regula_falsi_point}


def _root_finder_methods(tree: ast.AST) -> list[tuple[str, str]]:
    """(function name, method) of every function of ``tree`` holding a root finder's step."""
    return [(fn.name, method) for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for method, holds in ROOT_FINDER_METHODS.items() if holds(fn)]


def _dop853_loop(fn: ast.AST) -> bool:
    """Whether a function evaluates DOP853 stages or a step's error (a DOP853 step loop)."""
    return any((isinstance(n, ast.Attribute) and n.attr in DOP853_LOOP_WORDS)
               or (isinstance(n, ast.Name) and n.id in DOP853_LOOP_WORDS)
               for n in ast.walk(fn) if isinstance(n, ast.Call) for n in (n.func,))


def test_one_integrator_core_and_one_root_finder():
    """Counted in the code: the Radau IIA core, the DOP853 step, the initial step and the event
    root finder are each defined once, in mbplugin.pipeline; no other module defines a root
    finder by name or holds an Illinois iteration (except the implicit line search); the DOP853
    step loop is pipeline.dop853's (the impact analyser's own is gone)."""
    owner = {name: path for path, names in ONE_PLACE.items() for name in names}
    bad, seen = [], set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if fn.name in owner:
                if owner[fn.name] == rel:
                    seen.add(fn.name)
                else:
                    bad.append(f"{rel}:{fn.lineno} defines {fn.name} (lives in {owner[fn.name]})")
            if rel != "pipeline/events.py" and any(w in fn.name.lower()
                                                     for w in ROOT_FINDER_WORDS):
                bad.append(f"{rel}:{fn.lineno} defines the root finder {fn.name}")
            if (rel not in ("pipeline/events.py", *ILLINOIS_ELSEWHERE_OK)
                    and _illinois_halving(fn)):
                bad.append(f"{rel}:{fn.lineno} {fn.name} holds an Illinois iteration")
            if rel != "pipeline/events.py" and (_brent_interpolation(fn)
                                                or _regula_falsi_point(fn)):
                bad.append(f"{rel}:{fn.lineno} {fn.name} holds a root finder's iteration")
            if rel not in DOP853_LOOPS_OK and _dop853_loop(fn):
                bad.append(f"{rel}:{fn.lineno} {fn.name} holds a DOP853 step loop")
    assert not bad, "copies of the integrators' or events' pieces:\n" + "\n".join(bad)
    assert seen == set(owner), f"not found where they belong: {set(owner) - seen}"
    # one root finder: one method, one function holding its iteration (Brent's step), which the
    # compiled and the Python loop both call (on main: Illinois' update and Brent's loop)
    events_src = ast.parse((ROOT / "pipeline" / "events.py").read_text())
    assert _root_finder_methods(events_src) == [("brent_step", "Brent")]
    loops = {f.name: f for f in ast.walk(events_src) if isinstance(f, ast.FunctionDef)}
    for name in ("locate", "locate_py"):
        assert any(isinstance(n, ast.Call) and _called_name(n) == "brent_step"
                   for n in ast.walk(loops[name])), name
    # the detectors see the methods where they are (not vacuous): the implicit line search's
    # Illinois, and both methods in a small source
    implicit = ast.parse((ROOT / "pipeline" / "implicit_kernel.py").read_text())
    assert ("Illinois" in {m for _, m in _root_finder_methods(implicit)})
    both = ast.parse("def f(q, r, s, a, b, ga, gb, side):\n"
                     "    c = (a * gb - b * ga) / (gb - ga)\n"
                     "    q = (q - 1.0) * (r - 1.0) * (s - 1.0)\n")
    assert {m for _, m in _root_finder_methods(both)} == {"Brent", "regula falsi"}
    # ... and the DOP853 step loop where it is
    dop_src = ast.parse((ROOT / "pipeline" / "dop853.py").read_text())
    assert any(_dop853_loop(f) for f in ast.walk(dop_src)
               if isinstance(f, ast.FunctionDef) and f.name == "step_loop")


#: The modules whose compiled code reads per-contact data (all of pipeline/, PyBullet's lean
#: verification rounds, the impact analyser's and the engine's compiled loops)
PER_CONTACT_READERS = ("pipeline", "bullet/lean.py", "impact/_compiled.py",
                       "dynamics/compiled.py")
#: The positional slot constants the per-contact record replaced (issue 21): none may come back
OLD_SLOTS = {"FR_LEN", "INT_LEN", "ROW_LEN", "ST", "_N", "_AF", "_C", "_M", "_MU", "_MUS",
             "_KID", "_MODE", "_ACT", "_OOFF", "_NST", "_CAND", "_MEMF", "_R", "_I", "ACT",
             # the analyser's result and carry slots, the engine's onset columns
             "R_STATUS", "R_TS", "R_VS", "R_DS", "R_FMAX", "R_TFMAX", "R_DMAX", "R_PC", "R_PT",
             "R_WC", "R_WT", "R_TM", "R_STEPS", "R_NFEV", "R_LEN", "_K_T", "_K_H", "_K_FMAX",
             "_K_TFMAX", "_K_DMAX", "_K_HAVE_TM", "_K_NEED_NEXT", "_K_PK", "_K_PKP", "_K_PKN",
             "_K_PV", "_K_STEPS", "_K_NFEV", "_K_MEM", "_K_RES", "_K_Y", "ON_T", "ON_J", "ON_D",
             "ON_V", "ON_M", "ON_TC", "ON_N", "ON_RA", "ON_RB", "ON_VT", "ON_P", "ON_ROW",
             "ON_COLS"}
#: Positional slots left on purpose (module: names), solver state rather than per-contact data:
#: none since the engine's paused segments carry named tuples (SegmentCarry, RadauCarry)
SOLVER_SLOTS_OK: dict[str, set[str]] = {}


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module assigns at its top level."""
    out = set()
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        for t in targets:
            out |= {n.id for n in ([t] if isinstance(t, ast.Name) else getattr(t, "elts", []))
                    if isinstance(n, ast.Name)}
    return out


def _slot_offsets(tree: ast.Module, mine: set[str], anyone: set[str]) -> list[str]:
    """Subscripts that compute an offset from a module-level constant (``buf[base + _MU]``,
    ``gi[INT_LEN * i + _ACT]``, ``gf[_R:_R + n]``, ``gf[cm.ST + 1]``): the positional layout
    of a flat per-contact buffer. ``mine``: the module's top-level names, ``anyone``: those of
    every reader (for ``module.NAME``)."""
    def const(n: ast.AST) -> bool:
        return ((isinstance(n, ast.Name) and n.id in mine)
                or (isinstance(n, ast.Attribute) and n.attr in anyone))

    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        # a constant as a term or factor of an offset, or as a slice's bound
        offset = any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Mult))
                     and (const(n.left) or const(n.right)) for n in ast.walk(node.slice))
        bound = any(isinstance(n, ast.Slice) and any(const(x) for x in (n.lower, n.upper))
                    for n in ast.walk(node.slice))
        if offset or bound:
            bad.append(f"{node.lineno}: {ast.unparse(node)}")
    return bad


def _structured_dtypes(tree: ast.Module) -> int:
    """How many structured dtypes (``np.dtype([...])``) a module defines."""
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and _called_name(n) == "dtype"
               and n.args and isinstance(n.args[0], (ast.List, ast.ListComp, ast.Name)))


def test_per_contact_data_is_one_named_record():
    """Counted in the code: the compiled per-contact data has one layout, the typed, named
    record of mbplugin.pipeline.layout (issue 21), read by field name. No module of pipeline/
    nor bullet/lean.py defines the old slot constants or indexes a buffer by an offset computed
    from a module-level constant; the only structured dtypes are layout's; the kernels that
    read contacts build their records from it."""
    files = sorted(p for d in PER_CONTACT_READERS for p in
                   ((ROOT / d).rglob("*.py") if (ROOT / d).is_dir() else [ROOT / d]))
    trees = {p.relative_to(ROOT).as_posix(): ast.parse(p.read_text()) for p in files}
    names = {rel: _module_names(t) for rel, t in trees.items()}
    anyone = set().union(*names.values())
    bad, dtypes = [], {}
    for rel, tree in trees.items():
        bad += [f"{rel} defines {n}" for n in sorted(names[rel] & OLD_SLOTS)]
        ok = SOLVER_SLOTS_OK.get(rel, set())
        bad += [f"{rel}:{s}" for s in _slot_offsets(tree, names[rel] - ok, anyone - ok)]
        if _structured_dtypes(tree):
            dtypes[rel] = _structured_dtypes(tree)
    assert not bad, "positional per-contact slots:\n" + "\n".join(bad)
    # the contact record and its header, the analyser's result and carry, the engine's onset,
    # the Radau controller; the store's event and bounce logs (results, not read by the kernels)
    assert dtypes == {"pipeline/layout.py": 6, "pipeline/store.py": 2}
    users = {rel for rel, t in trees.items()
             if any(isinstance(n, ast.ImportFrom) and n.module == "mbplugin.pipeline.layout"
                    for n in ast.walk(t))}
    assert {"pipeline/substep_compiled.py", "pipeline/implicit_kernel.py",
            "pipeline/large_groups.py", "impact/_compiled.py", "dynamics/compiled.py"} <= users
    # the detector sees the old form (not vacuous)
    old = ast.parse("FR_LEN = 11\nROW_LEN = 24\n_KID, _ACT = range(2)\nNS = 12\n"
                    "def f(gf, gi, i, K, st):\n"
                    "    return (gf[FR_LEN + ROW_LEN * i] + gi[2 * i + _ACT] + gf[r + cm._MU]\n"
                    "            + gf[FR_LEN:FR_LEN + 3].sum() + K[st - NS - 1] + K[NS])\n")
    assert len(_slot_offsets(old, _module_names(old), {"_MU"} | _module_names(old))) == 4
    assert _module_names(old) & OLD_SLOTS == {"FR_LEN", "ROW_LEN", "_KID", "_ACT"}


def test_the_contact_record_holds_what_the_kernels_read():
    """The record's fields: typed (flags bool, ids int64, floats float64), the law's
    coefficient row and memory as wide as the kernels' tuples, the header's fields a subset of
    the contact's (copied by name), and a NumPy structured array that numba compiles."""
    import numpy as np

    from mbplugin.laws.kernels import NC_MAX, NMEM_MAX
    from mbplugin.pipeline import layout

    c = layout.CONTACT
    assert c["coef"].shape == (NC_MAX,) and c["mem"].shape == (NMEM_MAX,)
    assert c["normal"].shape == c["a_free"].shape == (3,)
    assert {c[n].kind for n in ("active", "has_memory", "fr_on", "st_on")} == {"b"}
    assert {c[n] for n in ("kid", "mode", "ode_off", "n_states", "candidate")} == {
        np.dtype(np.int64)}
    assert set(layout.HEAD.names) <= set(c.names)
    assert all(layout.HEAD[n] == c[n] for n in layout.HEAD.names)
    assert c.isalignedstruct


#: What the kernels' slot test leaves positional in laws/: the generic packing of an array row
#: into the kernels' tuples (column j is slot j, whatever the law)
LAW_PACKERS = {"kernels.py": {"ctuple", "stuple", "stuple_law"}}


def _is_njit(fn: ast.FunctionDef) -> bool:
    """Whether a function is compiled (decorated with ``njit`` or ``njit_inline``)."""
    names = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", None)
             for d in (x.func if isinstance(x, ast.Call) else x for x in fn.decorator_list)}
    return bool(names & {"njit", "njit_inline"})


def _literal_slots(tree: ast.Module, skip: set[str]) -> list[str]:
    """Integer literals as slots: ``c[2]``, ``s[4]`` in a compiled law kernel (its coefficient
    and state tuples), and ``out[:, 3]`` (a column of coefficient, state or memory rows)
    anywhere in a law module; functions named in ``skip`` left out."""
    def literal(n: ast.AST) -> bool:
        return isinstance(n, ast.Constant) and type(n.value) is int

    bad = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or fn.name in skip:
            continue
        kernel = _is_njit(fn)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Subscript):
                continue
            sl = node.slice
            scalar = (kernel and isinstance(node.value, ast.Name) and node.value.id in ("c", "s")
                      and literal(sl))
            column = isinstance(sl, ast.Tuple) and any(isinstance(x, ast.Slice) for x in sl.elts)
            column = column and any(literal(x) for x in sl.elts)
            if scalar or column:
                bad.append(f"{fn.name}:{node.lineno}: {ast.unparse(node)}")
    return bad


def test_law_kernels_read_named_slots():
    """Every law module names its coefficient and state slots (issue 21): no compiled kernel
    indexes its coefficient tuple ``c`` or state tuple ``s`` by an integer literal, and no law
    reads or writes a column of its coefficient, state or memory rows by one."""
    bad = []
    for path in sorted((ROOT / "laws").glob("*.py")):
        tree = ast.parse(path.read_text())
        bad += [f"laws/{path.name}:{s}" for s in
                _literal_slots(tree, LAW_PACKERS.get(path.name, set()))]
    assert not bad, "positional law slots:\n" + "\n".join(bad)
    # the detector sees the old forms (not vacuous), and leaves rows and Python code alone
    old = ast.parse("@njit\ndef f(d, v, c, s):\n    return c[0] * d + s[4] + c[K]\n"
                    "def g(coef, mem, c):\n    return coef[:, 1] + mem[:, M] + c[0] + mem[2:, 0]\n"
                    "@njit\ndef h(s):\n    return s[5]\n")
    assert len(_literal_slots(old, set())) == 5
    assert len(_literal_slots(old, {"f"})) == 3


def test_power_rows_put_each_value_in_its_named_slot():
    """The power kernel's tuple builder and its coefficient builder agree with its slot names,
    and the named slots are distinct and inside the kernels' tuple."""
    from mbplugin.laws import power
    from mbplugin.laws.kernels import NC_MAX

    slots = (power.C_K, power.C_N, power.C_LAM, power.C_M, power.C_Q, power.C_MODE, power.C_RC)
    assert sorted(slots) == list(range(power.N_COEF)) and power.N_COEF <= NC_MAX
    row = power.power_row.py_func(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
    cols = power.power_coefficients(1, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)[0]
    assert len(row) == NC_MAX
    assert [row[j] for j in slots] == [cols[j] for j in slots] == [1, 2, 3, 4, 5, 6, 7]
