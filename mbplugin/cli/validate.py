"""``mbplugin validate``: run the reproductions, print the table, write the report.

Exit codes: 0 when no check failed (checks that could not run are listed but do not fail the
run unless ``--strict``), 1 when a check failed, 2 for bad command-line input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from mbplugin.cli.notice import ProgressLine
from mbplugin.errors import ParameterError


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``validate`` subcommand."""
    p = subparsers.add_parser(
        "validate",
        help="reproduce the source papers' tables, figures and closed forms",
        description="Run every validation case (or a selection), print a table of published vs "
        "reproduced values, optionally write a Markdown report with plots.",
    )
    p.add_argument("--only", action="append", metavar="PATTERN",
                   help="run only cases whose id matches (shell wildcards or substring; "
                        "repeatable), e.g. --only 'zhang2022.*'")
    p.add_argument("--quick", action="store_true", help="coarser sweeps (for development)")
    p.add_argument("--report", metavar="DIR",
                   help="write DIR/README.md and the PNG figures (e.g. docs/validation)")
    p.add_argument("--dpi", type=int, default=72, help="PNG resolution (default 72)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--strict", action="store_true",
                   help="count checks that could not run (missing laws) as failures")
    p.add_argument("--list", action="store_true", help="list the case ids and exit")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Entry point of ``mbplugin validate``."""
    from mbplugin.cli.common import print_json
    from mbplugin.formatting import format_table
    from mbplugin.validation.core import all_cases, run_validation, select_cases
    from mbplugin.validation.report import summary_line, text_table, to_json, write_report

    if args.list:
        cases = select_cases(args.only) if args.only else all_cases()
        print(format_table(("case", "paper", "title"), [(c.id, c.paper, c.title)
                                                        for c in cases]))
        return 0
    if not 20 <= args.dpi <= 300:
        raise ParameterError(f"--dpi {args.dpi} is outside its allowed range [20, 300]")
    if args.report:
        out = Path(args.report)
        if out.exists() and not out.is_dir():
            raise ParameterError(f"--report {args.report}: exists and is not a directory")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ParameterError(f"--report {args.report}: cannot create it ({exc.strerror})"
                                 ) from None
        if not os.access(out, os.W_OK):
            raise ParameterError(f"--report {args.report}: directory is not writable")
    cases = select_cases(args.only)
    if not cases:
        raise ParameterError(
            f"--only {' '.join(args.only)!s} matches no case (see `mbplugin validate --list`)"
        )
    report = run_validation(quick=args.quick, outdir=args.report, dpi=args.dpi,
                            progress=ProgressLine(sys.stderr), cases=cases)
    if args.report:
        path = write_report(report, args.report)
        print(f"mbplugin validate: report written to {path}", file=sys.stderr)
    if args.json:
        print_json(to_json(report))
    else:
        print(text_table(report))
        print()
        print(summary_line(report))
        for c in report.not_run:
            print(f"NOT RUN  {c.case}: {c.quantity} ({c.tol})")
    failed = report.failed or (args.strict and bool(report.not_run))
    return 1 if failed else 0
