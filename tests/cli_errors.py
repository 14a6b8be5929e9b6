"""Shared test helper: a command-line call that failed at the door (exit code 2, one line)."""

from __future__ import annotations

import pytest


def one_line_error(capsys: pytest.CaptureFixture[str], code: int, *needles: str) -> str:
    """Assert exit code 2 and exactly one non-empty line on stderr holding every needle;
    returns the line."""
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1, err
    for s in needles:
        assert s in lines[0], lines[0]
    return lines[0]
