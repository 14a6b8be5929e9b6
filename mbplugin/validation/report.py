"""Output of a validation run: the terminal table, JSON, and the Markdown report.

The Markdown report (``README.md`` in the report directory, next to the PNG figures the cases
wrote) is generated, never edited by hand: ``mbplugin validate --report docs/validation``.
Files are written atomically (temporary file, then rename).
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any

from mbplugin import __version__
from mbplugin.validation.core import FAIL, INFO, NOT_RUN, PAPERS, PASS, STATUSES, ValidationReport

# --------------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------------


def fmt(v: Any, digits: int = 6) -> str:
    """A value for a table cell: floats with ``digits`` significant digits, None as '-'."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f"{f:.{digits}g}"
    return str(v)


def fmt_err(v: Any) -> str:
    """An error cell: three significant digits with sign."""
    if v is None:
        return "-"
    f = float(v)
    if not math.isfinite(f):
        return fmt(f)
    return f"{f:+.3g}"


def _short(text: str, width: int = 44) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def text_table(report: ValidationReport) -> str:
    """The terminal table: case, quantity, published, ours, error, tolerance, result."""
    from mbplugin.formatting import format_table

    rows = []
    for cr in report.cases:
        for c in cr.checks:
            rows.append((c.case, c.quantity, _short(fmt(c.published)), _short(fmt(c.ours)),
                         fmt_err(c.error),
                         c.tol, c.status.upper() if c.status == FAIL else c.status))
        if cr.error:
            rows.append((cr.id, "case raised an exception", "-", "-", "-", cr.error[:60], "FAIL"))
    return format_table(("case", "quantity", "published", "ours", "error", "tolerance",
                         "result"), rows)


def summary_line(report: ValidationReport) -> str:
    """One line: counts per status and the run time."""
    n = report.counts()
    total = sum(n.values())
    parts = ", ".join(f"{n[s]} {s}" for s in STATUSES)
    return f"{total} checks in {len(report.cases)} cases: {parts} ({report.seconds:.1f} s)"


def to_json(report: ValidationReport) -> dict[str, Any]:
    """The machine-readable report."""
    return {
        "version": __version__,
        "quick": report.quick,
        "seconds": report.seconds,
        "counts": report.counts(),
        "passed": not report.failed,
        "cases": [
            {
                "id": cr.id,
                "title": cr.title,
                "paper": cr.paper,
                "status": cr.status,
                "seconds": cr.seconds,
                "error": cr.error,
                "checks": [c.to_dict() for c in cr.checks],
                "figures": [f.name for f in cr.figures],
            }
            for cr in report.cases
        ],
        "answers": answers_markdown(report),
    }


# --------------------------------------------------------------------------------------------------
# open questions
# --------------------------------------------------------------------------------------------------


def answers_markdown(report: ValidationReport) -> dict[str, str]:
    """The answers to the spec's open questions, with numbers from this run (Markdown)."""
    facts = report.facts()
    out: dict[str, str] = {}
    rows = []
    for table in (1, 2):
        prefix = f"zhang2022.table{table}:"
        keys = sorted({k.split(":", 2)[2] for k in facts
                       if k.startswith(prefix + "cr_pub:")})
        for key in keys:
            pub = facts[f"{prefix}cr_pub:{key}"]
            c = facts[f"{prefix}cr_complex:{key}"]
            s = facts[f"{prefix}cr_signed:{key}"]
            rows.append(f"| {table} | {key} | {pub:.4f} | {c:.5f} ({c - pub:+.5f}) | "
                        f"{s:.5f} ({s - pub:+.5f}) |")
    if rows:
        errs_s = [facts[k.replace("cr_pub:", "cr_signed:")] - v for k, v in facts.items()
                  if ":cr_pub:" in k]
        errs_c = [facts[k.replace("cr_pub:", "cr_complex:")] - v for k, v in facts.items()
                  if ":cr_pub:" in k]
        lo, hi = min(abs(e) for e in errs_s), max(abs(e) for e in errs_s)
        side = "low" if all(e < 0 for e in errs_s) else "high" if all(e > 0 for e in errs_s) \
            else "on both sides"
        out["complex_power"] = (
            "**The complex-power convention for q != 1 (Zhang et al. 2022).** The printed output "
            f"c_r of the {len(rows)} q != 1 rows of Tables 1 and 2 is reproduced to "
            f"{max(abs(e) for e in errs_c):.1e} (print resolution 1e-4) only when ddelta^q is "
            "evaluated as the principal complex power during restitution (`zhang2022` option "
            "`power='complex'`, c_r = |ddelta|/v0 at separation). The physically motivated "
            f"sign(ddelta)|ddelta|^q misses every one of them by {lo:.4f}-{hi:.4f} "
            f"({lo * 1e4:.0f}-{hi * 1e4:.0f} print units), always {side}. F_max and the "
            "durations agree with the table in both conventions (they are set in compression, "
            "where ddelta > 0). So the authors evaluated ddelta^q of a negative velocity in "
            "complex arithmetic (as MATLAB does); its real part, |ddelta|^q cos(pi q), weakens "
            "the restitution damping by |cos(pi q)| = 0.95 for q = 0.9 and 1.1. We keep the "
            "signed power as the default and offer `power='complex'` to reproduce the paper.\n\n"
            "| Table | row | printed c_r | complex power (error) | signed power (error) |\n"
            "|---|---|---|---|---|\n" + "\n".join(rows)
        )
    z = {k.split(":", 1)[0]: k for k in facts if k.endswith(":z2020_cr")}
    if z:
        lines = []
        for cid in sorted(z):
            f = {k.split(":", 1)[1]: v for k, v in facts.items() if k.startswith(cid + ":")}
            lines.append(
                f"| {cid.rsplit('table', 1)[1]} | {f['cr_in']:.4f} | {f['z2020_cr_pub']:.4f} | "
                f"{f['z2020_cr']:.4f} ({f['z2020_cr'] - f['z2020_cr_pub']:+.4f}) | "
                f"{f['z2020_f_pub']:.1f} | {f['z2020_f']:.1f} | {f['z2020_chi_print']:.4f} | "
                f"{f['z2020_chi_needed']:.4f} |"
            )
        zf = [{k.split(":", 1)[1]: v for k, v in facts.items() if k.startswith(cid + ":")}
              for cid in sorted(z)]
        d_cr = ", ".join(f"{(f['z2020_cr'] - f['z2020_cr_pub']) * 1e4:+.0f}" for f in zf)
        d_f = ", ".join(f"{f['z2020_f'] - f['z2020_f_pub']:+.1f} N" for f in zf)
        d_chi = ", ".join(f"{(f['z2020_chi_needed'] / f['z2020_chi_print'] - 1) * 100:+.1f} %"
                          for f in zf)
        out["zhang2020"] = (
            "**The Zhang et al. 2020 factor as printed by the review.** With the review's "
            "chi = 249(1 - c_r)/(6 + 160 c_r) (`zhang2020`) the Zhang 2020 rows of Zhang et al. "
            "2022 Tables 1-2 are *not* reproduced: the output c_r misses the printed value by "
            f"{d_cr} print units (0.15 and 0.5 m/s) and F_max by {d_f}, while every other row of "
            "the tables is matched to 1.5 print units in c_r and 0.1 N. Our integration is not "
            "the cause: the simulated c_r equals the root of the exact Hunt-Crossley relation at "
            "the printed chi to 1e-6 (a check in `zhang2022.table1/2`). Inverting the exact "
            "relation, the printed c_r needs a chi larger than the printed formula's by "
            f"{d_chi}: a small but real difference, so the review's expression is at best an "
            "approximate transcription of Zhang et al. (2020), whose original is not among our "
            "sources (Zhang et al. 2022 describe it as Eq. 35 with m = n, q = 1 plus 'a minor "
            "adjustment to the equivalent velocity'). We keep `zhang2020` as printed by the "
            "review and document the discrepancy.\n\n"
            "| Table | input c_r | printed c_r | ours (error) | printed F_max (N) | ours (N) | "
            "chi printed | chi needed |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(lines)
        )
    g = {k.split(":", 1)[1]: v for k, v in facts.items() if k.startswith("closed.goyal:")}
    if "goyal_zeta" in g:
        rows = [f"| {z:g} | {s:.6f} | {f2:.6f} | {f4:.6f} |" for z, s, f2, f4 in
                zip(g["goyal_zeta"], g["goyal_sim"], g["goyal_f2"], g["goyal_f4"], strict=True)]
        law_txt = ""
        if "goyal_law_default" in g:
            law_txt = (" The registered `goyal` law (factor 2 by default) returns its target c_r "
                       "exactly; with `factor=4` the clipped contact returns the square root of "
                       "the target (targets " + ", ".join(f"{t:g}" for t in
                                                          g.get("goyal_targets", [])) +
                       " -> " + ", ".join(f"{c:.4f}" for c in g.get("goyal_law_f4", [])) + ").")
        out["goyal"] = (
            "**Goyal's factor (2 vs 4).** For the linear spring-dashpot whose force is clipped at "
            "zero (the contact ends when k delta + c ddelta = 0, Goyal et al.'s rule) the "
            "simulated c_r equals exp(-(2 zeta/sqrt(1-zeta^2)) atan(sqrt(1-zeta^2)/zeta)) to "
            "1e-6 for every damping ratio, while the review's printed factor 4 gives the square "
            "of it (the energy ratio, not Newton's c_r): the correct factor is 2." + law_txt
            + "\n\n| zeta | simulated c_r (clipped KV) | factor 2 | factor 4 (as printed) |\n"
            "|---|---|---|---|\n" + "\n".join(rows)
        )
    durs = [abs(c.error) for cr in report.cases if cr.id.startswith("zhang2022.table")
            for c in cr.checks if "duration (overlap)" in c.quantity and c.error is not None]
    if durs:
        out["duration"] = (
            "**Duration convention of Zhang et al. 2022 Tables 1-2.** The printed durations are "
            "the time until the overlap returns to zero (`ImpactResult.duration_overlap`): within "
            f"{max(durs) * 100:.2f} % for every row and both power conventions. The force-based "
            "end of contact (Milehins & Marghitu 2026, Eq. 17; `ImpactResult.duration`) is "
            "shorter for m < n, where the force vanishes while delta > 0 (listed as `info` "
            "rows)."
        )
    return out


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|")


def markdown(report: ValidationReport) -> str:
    """The whole report as one Markdown document."""
    n = report.counts()
    lines = [
        "# Validation report",
        "",
        "Generated by `mbplugin validate --report docs/validation` (mbplugin "
        f"{__version__}{', --quick' if report.quick else ''}); do not edit by hand. Every case "
        "reproduces a table, figure, stated property or closed form of a source paper; the "
        "expected values come from the papers or from closed forms, never from our own output. "
        "Result `info` marks rows reported for the record and not judged; `not run` marks checks "
        "whose law is not registered.",
        "",
        f"**{summary_line(report)}.** Overall: "
        + ("**FAILED**" if report.failed else "**passed**")
        + (f", {n[NOT_RUN]} checks not run" if n[NOT_RUN] else "") + ".",
        "",
        "| case | title | result | pass | fail | not run | info | time (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cr in report.cases:
        lines.append(f"| [`{cr.id}`](#{_anchor(cr.id)}) | {_md_cell(cr.title)} | "
                     f"{cr.status} | {cr.count(PASS)} | {cr.count(FAIL)} | {cr.count(NOT_RUN)} | "
                     f"{cr.count(INFO)} | {cr.seconds:.1f} |")
    nr = report.not_run
    if nr:
        lines += ["", "**Not run:**", ""]
        lines += [f"- `{c.case}`: {_md_cell(c.quantity)} ({c.tol})" for c in nr]
    answers = answers_markdown(report)
    if answers:
        lines += ["", "## Answers to the open questions", ""]
        for text in answers.values():
            lines += [text, ""]
    for paper, cite in PAPERS.items():
        cases = [cr for cr in report.cases if cr.paper == paper]
        if not cases:
            continue
        lines += ["", f"## {cite}", ""]
        for cr in cases:
            lines += [f'<a id="{_anchor(cr.id)}"></a>', "",
                      f"### `{cr.id}`: {cr.title}", "",
                      f"Result: **{cr.status}** ({cr.seconds:.1f} s).", ""]
            if cr.error:
                lines += [f"**The case raised an exception:** `{cr.error}`", ""]
            for note in cr.notes:
                lines += [note, ""]
            if cr.checks:
                lines += ["| quantity | published / expected | ours | error | tolerance | "
                          "result | source |", "|---|---|---|---|---|---|---|"]
                for c in cr.checks:
                    unit = f" {c.unit}" if c.unit and isinstance(c.published, (int, float)) \
                        else ""
                    lines.append(
                        f"| {_md_cell(c.quantity)} | {_md_cell(fmt(c.published))}{unit} | "
                        f"{_md_cell(fmt(c.ours))} | {fmt_err(c.error)} | {_md_cell(c.tol)} | "
                        f"{'**FAIL**' if c.status == FAIL else c.status} | "
                        f"{_md_cell(c.source)} |")
                lines.append("")
            for fig in cr.figures:
                lines += [f"![{fig.caption}]({fig.name})", "", f"*{fig.caption}*", ""]
    lines += [
        "",
        "## Regenerating and extending",
        "",
        "`mbplugin validate --report docs/validation` rewrites this file and the figures "
        "(`--quick` for coarser sweeps, `--only PATTERN` for a selection, `--json` for machines, "
        "`--strict` to fail on checks that could not run). A case is a function decorated with "
        "`@case(id, title, paper)` in `mbplugin/validation/<paper>.py` that records its checks "
        "through the `Context` it receives (`abs_check`, `rel_check`, `max_check`, `min_check`, "
        "`bool_check`, `info`, `not_run`) and its figures through `ctx.figure`; the expected "
        "value of a check must come from a paper or a closed form.",
    ]
    return "\n".join(lines).rstrip() + "\n"


def _anchor(case_id: str) -> str:
    return case_id.replace(".", "-").replace("_", "-")


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        _plain_mode(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _plain_mode(path: str | os.PathLike[str]) -> None:
    """Give a file the permissions of an ordinary new file (mkstemp makes it owner-only)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def write_report(report: ValidationReport, outdir: str | os.PathLike[str]) -> Path:
    """Write ``README.md`` into ``outdir`` (the figures were written by the run itself)."""
    return atomic_write_text(Path(outdir) / "README.md", markdown(report))
