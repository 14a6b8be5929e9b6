"""Every script in examples/ runs in its short mode (so none goes stale).

Each example asserts its own outcome where it has one (a bounce's c_r, a force balance) and exits
non-zero otherwise; this test only requires a clean exit and some output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def test_examples_exist() -> None:
    assert EXAMPLES, "examples/ holds no script"


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_short(script: Path, tmp_path: Path) -> None:
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(script), "--short", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, env=env,
                          cwd=script.parent.parent)
    tail = f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, f"{script.name} failed:\n{tail}"
    assert proc.stdout.strip(), f"{script.name} printed nothing"
