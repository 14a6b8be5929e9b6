"""The validation framework: checks, cases, the run context and the runner.

A *case* reproduces one table, figure or closed form of a source paper. It runs impacts, then
records *checks*: one row each of (quantity, published value, our value, error, tolerance,
status). The status of a check is

``pass`` / ``fail``
    judged against a tolerance stated in the check (the expected value comes from a paper or a
    closed form, never from our own output);
``not run``
    the check needs a law that is not registered (yet); visible in every output, never a pass;
``info``
    reported for the record, not judged (e.g. a convention that the paper's numbers rule out:
    the open-question answers in the report quote these rows).

A case may also produce figures (only when a report directory is given) and *facts*: named
numbers the report quotes in its prose (the answers to the open questions).
"""

from __future__ import annotations

import fnmatch
import math
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from mbplugin.errors import reraise_interrupt

PASS = "pass"
FAIL = "fail"
NOT_RUN = "not run"
INFO = "info"
STATUSES = (PASS, FAIL, NOT_RUN, INFO)

#: Paper keys in report order, with the citation shown in headings.
PAPERS: dict[str, str] = {
    "zhang2022": "Zhang, Liang, Zhang, Feng, Zhao, Zhao, He (2022), Mech. Syst. Signal Process. "
    "168, 108739",
    "review": "Corral, Gismeros Moreno, Gomez Garcia, Castejon (2021), Nonlinear Dyn. 104, "
    "1269-1295 (review)",
    "bouc_wen": "Milehins & Marghitu (2026), Incremental collision laws based on the Bouc-Wen "
    "model, arXiv:2507.07953",
    "azad2014": "Azad & Featherstone (2014), A new nonlinear model of contact normal force, "
    "IEEE Trans. Robotics 30",
    "closed": "Closed forms (Hertz 1881; linear oscillator; Thornton 1997; Gonthier et al. 2004 "
    "exact relation; Goyal et al. 1994)",
}


@dataclass
class Check:
    """One judged (or reported) comparison. Values are floats, strings or None."""

    case: str
    quantity: str
    published: Any
    ours: Any
    error: float | None
    tol: str
    status: str
    source: str = ""
    unit: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dictionary (non-finite floats become None)."""
        return {
            "case": self.case,
            "quantity": self.quantity,
            "published": _jsonable(self.published),
            "ours": _jsonable(self.ours),
            "error": _jsonable(self.error),
            "tolerance": self.tol,
            "status": self.status,
            "source": self.source,
            "unit": self.unit,
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    return v


@dataclass
class Figure:
    """A figure written by a case: file name inside the report directory and its caption."""

    name: str
    caption: str


@dataclass
class CaseResult:
    """Everything one case produced."""

    id: str
    title: str
    paper: str
    checks: list[Check] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None

    def count(self, status: str) -> int:
        return sum(1 for c in self.checks if c.status == status)

    @property
    def status(self) -> str:
        """fail if any check failed, else not run if any was not run, else pass."""
        if self.error or self.count(FAIL):
            return FAIL
        if self.count(NOT_RUN):
            return NOT_RUN
        return PASS


class Context:
    """What a running case sees: options, and the collectors for checks, figures and facts."""

    def __init__(self, result: CaseResult, *, quick: bool, outdir: Path | None, dpi: int) -> None:
        self.result = result
        self.quick = quick
        self.outdir = outdir
        self.dpi = dpi

    # ---- options -------------------------------------------------------------------------
    @property
    def plots(self) -> bool:
        """True when figures are wanted (a report directory was given)."""
        return self.outdir is not None

    def n(self, full: int, quick: int) -> int:
        """Grid size: ``full`` points normally, ``quick`` with --quick."""
        return quick if self.quick else full

    # ---- checks ----------------------------------------------------------------------------
    def _add(self, quantity: str, published: Any, ours: Any, error: float | None, tol: str,
             ok: bool | None, source: str, unit: str) -> Check:
        if ok is None:
            status = INFO
        else:
            status = PASS if ok else FAIL
        c = Check(self.result.id, quantity, published, ours, error, tol, status, source, unit)
        self.result.checks.append(c)
        return c

    def abs_check(self, quantity: str, published: float, ours: float, tol: float, *,
                  source: str = "", unit: str = "") -> Check:
        """Pass when |ours - published| <= tol (error column: ours - published)."""
        err = float(ours) - float(published)
        ok = bool(np.isfinite(err) and abs(err) <= tol)
        return self._add(quantity, published, ours, err, f"|err| <= {tol:.3g}", ok, source, unit)

    def rel_check(self, quantity: str, published: float, ours: float, tol: float, *,
                  source: str = "", unit: str = "") -> Check:
        """Pass when |ours/published - 1| <= tol (error column: relative error)."""
        err = float(ours) / float(published) - 1.0
        ok = bool(np.isfinite(err) and abs(err) <= tol)
        return self._add(quantity, published, ours, err, f"|rel err| <= {tol:.3g}", ok, source,
                         unit)

    def max_check(self, quantity: str, ours: float, limit: float, *, published: Any = None,
                  source: str = "", unit: str = "") -> Check:
        """Pass when ours <= limit (e.g. a largest deviation from a closed form)."""
        ok = bool(np.isfinite(ours) and ours <= limit)
        return self._add(quantity, published, ours, None, f"<= {limit:.3g}", ok, source, unit)

    def min_check(self, quantity: str, ours: float, limit: float, *, published: Any = None,
                  source: str = "", unit: str = "") -> Check:
        """Pass when ours >= limit."""
        ok = bool(np.isfinite(ours) and ours >= limit)
        return self._add(quantity, published, ours, None, f">= {limit:.3g}", ok, source, unit)

    def bool_check(self, quantity: str, ok: bool, *, published: str, ours: str,
                   tol: str = "", source: str = "") -> Check:
        """A yes/no fact (a trend, an ordering), described in words."""
        return self._add(quantity, published, ours, None, tol, bool(ok), source, "")

    def info(self, quantity: str, published: Any, ours: Any, error: float | None = None, *,
             note: str = "reported, not judged", source: str = "", unit: str = "") -> Check:
        """A row reported for the record (not judged)."""
        return self._add(quantity, published, ours, error, note, None, source, unit)

    def not_run(self, quantity: str, reason: str, *, source: str = "") -> Check:
        """A check that could not run (e.g. its law is not registered)."""
        c = Check(self.result.id, quantity, None, None, None, f"not run: {reason}", NOT_RUN,
                  source)
        self.result.checks.append(c)
        return c

    # ---- figures, notes, facts ----------------------------------------------------------------
    def figure(self, name: str, fig: Any, caption: str) -> None:
        """Save a matplotlib figure as ``name`` (PNG) in the report directory (atomic write)."""
        from mbplugin.plotting import save_figure

        if self.outdir is None:
            from mbplugin.plotting import pyplot

            pyplot().close(fig)
            return
        path = save_figure(fig, self.outdir / name, dpi=self.dpi)
        from mbplugin.validation.report import _plain_mode

        _plain_mode(path)  # save_figure's temporary file is owner-only
        self.result.figures.append(Figure(name, caption))

    def note(self, text: str) -> None:
        """A Markdown paragraph for the report (method, conventions, assumptions)."""
        self.result.notes.append(text)

    def fact(self, key: str, value: Any) -> None:
        """A named number the report quotes (the open-question answers)."""
        self.result.facts[key] = value


@dataclass(frozen=True)
class Case:
    """A registered validation case."""

    id: str
    title: str
    paper: str
    run: Callable[[Context], None]


CASES: list[Case] = []


def case(id: str, title: str, paper: str) -> Callable[[Callable[[Context], None]],
                                                       Callable[[Context], None]]:
    """Decorator registering a case function under ``id`` (e.g. ``zhang2022.table1``)."""
    if paper not in PAPERS:
        raise ValueError(f"unknown paper key {paper!r}")

    def deco(fn: Callable[[Context], None]) -> Callable[[Context], None]:
        if any(c.id == id for c in CASES):
            raise ValueError(f"duplicate validation case id {id!r}")
        CASES.append(Case(id, title, paper, fn))
        return fn

    return deco


def all_cases() -> list[Case]:
    """Every case, in report order (paper order, then registration order)."""
    _load_case_modules()
    order = list(PAPERS)
    return sorted(CASES, key=lambda c: order.index(c.paper))


def _load_case_modules() -> None:
    from mbplugin.validation import (  # noqa: F401  (registration side effects)
        azad2014,
        bouc_wen,
        closed_forms,
        review,
        zhang2022,
    )


def select_cases(patterns: Sequence[str] | None) -> list[Case]:
    """Cases whose id matches any pattern (shell wildcards, or a plain substring)."""
    cases = all_cases()
    if not patterns:
        return cases
    out = []
    for c in cases:
        for pat in patterns:
            if fnmatch.fnmatchcase(c.id, pat) or (not any(ch in pat for ch in "*?[")
                                                   and pat in c.id):
                out.append(c)
                break
    return out


# --------------------------------------------------------------------------------------------------
# registry helpers
# --------------------------------------------------------------------------------------------------
def law_available(name: str) -> bool:
    """True when ``name`` is a registered law (looked up at run time, not import time)."""
    from mbplugin.errors import UnknownLawError
    from mbplugin.laws import get_law_class

    try:
        get_law_class(name)
    except UnknownLawError:
        return False
    return True


def missing_reason(name: str) -> str:
    """The standard wording of a check that needs an unregistered law."""
    return f"law {name!r} not registered"


# --------------------------------------------------------------------------------------------------
# the runner
# --------------------------------------------------------------------------------------------------
@dataclass
class ValidationReport:
    """The outcome of a validation run."""

    cases: list[CaseResult]
    quick: bool
    seconds: float

    def counts(self) -> dict[str, int]:
        """Number of checks per status."""
        out = dict.fromkeys(STATUSES, 0)
        for cr in self.cases:
            for c in cr.checks:
                out[c.status] += 1
            if cr.error:
                out[FAIL] += 1
        return out

    def facts(self) -> dict[str, Any]:
        """All facts of all cases, keyed ``case_id:key``."""
        return {f"{cr.id}:{k}": v for cr in self.cases for k, v in cr.facts.items()}

    @property
    def failed(self) -> bool:
        return self.counts()[FAIL] > 0

    @property
    def not_run(self) -> list[Check]:
        return [c for cr in self.cases for c in cr.checks if c.status == NOT_RUN]


def run_validation(
    patterns: Sequence[str] | None = None,
    *,
    quick: bool = False,
    outdir: str | Path | None = None,
    dpi: int = 72,
    progress: TextIO | None = sys.stderr,
    cases: Iterable[Case] | None = None,
) -> ValidationReport:
    """Run the selected cases (all by default) and collect their results.

    ``outdir`` switches figures on (PNG files are written there); the Markdown report itself is
    written by :func:`mbplugin.validation.report.write_report`. Progress goes to ``progress``
    (stderr by default; ``None`` for silence).
    """
    chosen = list(cases) if cases is not None else select_cases(patterns)
    out = Path(outdir) if outdir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    results: list[CaseResult] = []
    t_start = time.perf_counter()
    for i, c in enumerate(chosen, 1):
        res = CaseResult(c.id, c.title, c.paper)
        ctx = Context(res, quick=quick, outdir=out, dpi=dpi)
        if progress is not None:
            print(f"[{i}/{len(chosen)}] {c.id} ...", end="", file=progress, flush=True)
        t0 = time.perf_counter()
        try:
            c.run(ctx)
        except Exception as exc:  # a crashing case is a failure, reported, not fatal
            # ... but a Ctrl-C seen inside a compiled call (a SystemError caused by the
            # KeyboardInterrupt) is an interrupt, never a failed check
            reraise_interrupt(exc)
            res.error = f"{type(exc).__name__}: {exc}"
            res.notes.append("```\n" + traceback.format_exc(limit=6) + "```")
        res.seconds = time.perf_counter() - t0
        results.append(res)
        if progress is not None:
            parts = [f"{res.count(s)} {s}" for s in STATUSES if res.count(s)]
            extra = f", ERROR {res.error}" if res.error else ""
            print(f" {res.seconds:.1f} s ({', '.join(parts) or 'no checks'}{extra})",
                  file=progress, flush=True)
    return ValidationReport(results, quick, time.perf_counter() - t_start)
