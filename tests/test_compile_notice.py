"""The first run says that it compiles (one line on stderr, with an estimate); a run that finds
its kernels in the disk cache says nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

import mbplugin
from mbplugin._jit import on_first_compile
from mbplugin.cli.notice import DEFAULT_ESTIMATE_S, ESTIMATE_S, MESSAGE

IMPACT = ["impact", "--law", "hunt_crossley", "-p", "k=1e9", "-p", "cr=0.8", "--mass", "1",
          "--v0", "1"]


def _cli(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "mbplugin.cli", *args], capture_output=True,
                          text=True, env=env, check=False)


def test_cold_run_prints_one_compile_line_and_warm_run_none(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    cold = _cli(IMPACT, cache)
    assert cold.returncode == 0, cold.stderr
    line = MESSAGE.format(s=ESTIMATE_S["impact"])
    assert cold.stderr.splitlines().count(line) == 1, cold.stderr
    assert "cr_out" in cold.stdout  # the line went to stderr, the results to stdout
    assert any(cache.rglob("*.nbi")), "the cold run left no cache"
    warm = _cli(IMPACT, cache)
    assert warm.returncode == 0, warm.stderr
    assert "compiling" not in warm.stderr, warm.stderr
    assert warm.stdout == cold.stdout


def test_on_first_compile_fires_once_per_hook_and_only_on_a_compile() -> None:
    calls: list[str] = []
    remove = on_first_compile(lambda: calls.append("compile"))
    try:
        @numba.njit(cache=False)
        def twice(x: float) -> float:
            return 2.0 * x

        assert calls == []  # decorating compiles nothing
        assert twice(1.5) == 3.0
        assert calls == ["compile"]
        assert twice(2.0) == 4.0  # the same signature: no compile
        assert twice(2) == 4  # a new signature compiles, but the hook fired already
        assert calls == ["compile"]
    finally:
        remove()
    twice(2.5 + 0j)  # a compile after the hook was removed
    assert calls == ["compile"]


def test_a_notice_inside_a_progress_line_gets_its_own_line(capsys) -> None:
    """validate writes "[i/n] case ..." and the case's result later on the same line: a compile
    starting in between must not glue the notice onto that line; the line is written again."""
    import io

    from mbplugin.cli.notice import ProgressLine, with_compile_notice

    stream = io.StringIO()
    progress = ProgressLine(stream)

    def command(_args):
        print("[1/2] closed.hertz ...", end="", file=progress, flush=True)

        @numba.njit(cache=False)
        def thrice(x: float) -> float:
            return 3.0 * x

        assert thrice(1.0) == 3.0  # compiles: the notice fires here
        print(" 0.1 s (3 pass)", file=progress, flush=True)
        print("[2/2] closed.oscillator ... 0.2 s (1 pass)", file=progress, flush=True)

    args = type("Args", (), {"command": "validate", "quiet": False})()
    with_compile_notice(command, args)(args)
    notice = capsys.readouterr().err
    assert notice.strip() == MESSAGE.format(s=ESTIMATE_S.get("validate", DEFAULT_ESTIMATE_S))
    # the open line was closed before the notice, and written again after it
    assert stream.getvalue() == ("[1/2] closed.hertz ...\n[1/2] closed.hertz ... 0.1 s (3 pass)\n"
                                 "[2/2] closed.oscillator ... 0.2 s (1 pass)\n")
    assert ProgressLine.OPEN == []


def test_the_library_notice_for_scripts(capsys) -> None:
    """``mbplugin.compile_notice`` (what the examples wrap their ``main`` in): one line on
    stderr at the block's first compilation, none for a function already compiled, none after
    the block; a bad estimate is refused naming the parameter."""

    @numba.njit(cache=False)
    def twice(x):
        return 2.0 * x

    @numba.njit(cache=False)
    def thrice(x):
        return 3.0 * x

    twice(1.0)  # compiled before the block: says nothing inside it
    capsys.readouterr()
    with mbplugin.compile_notice(7):
        assert twice(2.0) == 4.0
        assert capsys.readouterr().err == ""
        assert thrice(2.0) == 6.0
        assert thrice(1) == 3.0  # a second compilation (int): no second line
    err = capsys.readouterr().err
    assert err == MESSAGE.format(s=7) + "\n"

    @numba.njit(cache=False)
    def four(x):
        return 4.0 * x

    assert four(1.0) == 4.0  # after the block: nothing
    assert capsys.readouterr().err == ""
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="seconds"):
            with mbplugin.compile_notice(bad):
                pass
