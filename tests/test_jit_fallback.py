"""When the callee/entry dispatcher (mbplugin._dispatcher, numba internals) cannot be used, the
package compiles with plain ``numba.njit``: one warning line, and the same results bit for bit.

Each case imports the package in a child process (the choice is made once, at import)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PRINT_CHOICE = ("import mbplugin._jit as j; "
                "print('plain' if j._dispatcher is None else 'dispatcher')")


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, **env), cwd=ROOT, check=False)


@pytest.mark.parametrize(("setup", "env", "reason"), [
    ("import numba; numba.__version__ = '0.99.0'; ", {},
     "numba 0.99.0 is outside the versions tested"),
    ("import sys; sys.modules['mbplugin._dispatcher'] = None; ", {},
     "ModuleNotFoundError"),
    ("import mbplugin._dispatcher as d\n"
     "def check():\n    raise AttributeError('no _final_module')\n"
     "d.check = check\n", {}, "AttributeError: no _final_module"),
    ("", {"MBPLUGIN_JIT": "plain"}, "MBPLUGIN_JIT=plain"),
], ids=["numba-version", "import-error", "probe-error", "env"])
def test_fallback_is_plain_njit_with_one_warning_line(setup: str, env: dict[str, str],
                                                      reason: str) -> None:
    r = _python(setup + PRINT_CHOICE, **env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["plain"]
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert "JitFallbackWarning" in lines[0] and "plain numba.njit" in lines[0], lines[0]
    assert reason in lines[0], lines[0]


def test_tested_numba_uses_the_dispatcher_silently() -> None:
    r = _python(PRINT_CHOICE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["dispatcher"]
    assert r.stderr == ""


def test_fallback_drop_ball_is_bitwise_the_dispatchers(tmp_path: Path) -> None:
    """The README's scene compiled from an empty cache with plain numba.njit (so nothing is
    loaded from what the dispatcher compiled) writes the same bytes as the dispatcher's run."""
    outs = {}
    for mode in ("plain", "dispatcher"):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        if mode == "plain":
            cache = tmp_path / "plain-cache"
            cache.mkdir()
            env.update(MBPLUGIN_JIT="plain", NUMBA_CACHE_DIR=str(cache))
        out = tmp_path / mode
        r = subprocess.run([sys.executable, "-m", "mbplugin.cli", "run", "scenes/drop_ball.toml",
                            "--out", str(out), "--quiet", "--format", "csv"], cwd=ROOT, env=env,
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr
        outs[mode] = out
    bounces = (outs["plain"] / "bounces.csv").read_text().splitlines()
    assert len(bounces) >= 8  # a header and the bounces of 2.5 s
    for name in ("bounces.csv", "bodies.csv", "contacts.csv", "energy.csv"):
        assert (outs["plain"] / name).read_bytes() == (outs["dispatcher"] / name).read_bytes(), name
