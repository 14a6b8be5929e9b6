"""The source papers' tables, figures and closed forms as runnable checks (``mbplugin validate``).

>>> from mbplugin.validation import run_validation
>>> report = run_validation(["closed.hertz"], progress=None)
>>> report.failed
False

Cases live in one module per paper (:mod:`.zhang2022`, :mod:`.review`, :mod:`.bouc_wen`,
:mod:`.azad2014`, :mod:`.closed_forms`); the framework is in :mod:`.core`, the outputs in
:mod:`.report` and the command line in :mod:`.cli`.
"""

from __future__ import annotations

from mbplugin.validation.core import (
    CASES,
    FAIL,
    INFO,
    NOT_RUN,
    PASS,
    Case,
    CaseResult,
    Check,
    Context,
    ValidationReport,
    all_cases,
    law_available,
    run_validation,
    select_cases,
)
from mbplugin.validation.report import markdown, text_table, to_json, write_report

__all__ = [
    "CASES",
    "FAIL",
    "INFO",
    "NOT_RUN",
    "PASS",
    "Case",
    "CaseResult",
    "Check",
    "Context",
    "ValidationReport",
    "all_cases",
    "law_available",
    "markdown",
    "run_validation",
    "select_cases",
    "text_table",
    "to_json",
    "write_report",
]
