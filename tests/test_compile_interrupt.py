"""A Ctrl-C while numba compiles is an interrupt (mbplugin._jit._CompileInterrupt).

While it compiles, numba runs Python code as ctypes callbacks of LLVM (llvmlite's object cache:
``ExecutionEngine._raw_object_cache_notify``); a ``KeyboardInterrupt`` raised inside one is
printed by ctypes ("Exception ignored on calling ctypes callback function") and dropped, so
the program ran on. These tests deliver the SIGINT deterministically from inside that
callback (``os.kill(os.getpid(), SIGINT)`` in the object cache's notify hook, after the hook
did its work) and check what a user sees: a ``KeyboardInterrupt`` (the CLI: exit 130, one
line, nothing written), their own SIGINT handler called and put back, ``SIG_IGN`` left alone,
the handler put back after a compile that fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import numba
import numba.core.errors
import pytest
from numba.core.registry import cpu_target

from mbplugin import _jit
from mbplugin.cli import main

ROOT = Path(__file__).resolve().parents[1]
DROP = str(ROOT / "scenes" / "drop_ball.toml")


class Sigint:
    """The SIGINT of :func:`sigint_in_callback`: sent at the next notification while
    ``armed``; ``seen`` holds the SIGINT handler installed when it was sent."""

    def __init__(self) -> None:
        self.armed = True
        self.seen: list[object] = []


@pytest.fixture
def sigint_in_callback(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sigint]:
    """While the test runs, the next object-cache notification of numba's LLVM engine (a ctypes
    callback: LLVM has emitted a function's machine code) sends this process SIGINT after the
    hook stored the code (once, while ``armed``). Python's default SIGINT handler is installed
    for the test (a suite started in the background inherits SIGINT ignored)."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    engine = cpu_target.target_context.codegen()._engine._ee
    real = engine._object_cache_notify
    sig = Sigint()

    def notify(module: object, buf: bytes) -> None:
        real(module, buf)
        if sig.armed and not sig.seen:
            sig.seen.append(signal.getsignal(signal.SIGINT))
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(engine, "_object_cache_notify", notify)
    try:
        yield sig
    finally:
        signal.signal(signal.SIGINT, saved)
        held, _jit._COMPILE_INTERRUPT.pending = _jit._COMPILE_INTERRUPT.pending, None
    assert held is None  # no interrupt left held back for a later test


def _fresh() -> Callable[[float], float]:
    """A function numba has never compiled (no disk cache): its first call compiles two
    functions, the inner one's machine code emitted first."""

    @numba.njit
    def inner(x: float) -> float:
        return 2.0 * x

    @numba.njit
    def outer(x: float) -> float:
        return inner(x) + 1.0

    return outer


def test_a_ctrl_c_inside_an_llvm_callback_is_an_interrupt(sigint_in_callback: Sigint) -> None:
    f = _fresh()
    with pytest.raises(KeyboardInterrupt):
        f(1.0)  # without the listener: ctypes drops the interrupt and f returns 3.0
    assert len(sigint_in_callback.seen) == 1  # the signal was sent from inside the callback
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert _jit._COMPILE_INTERRUPT.pending is None and _jit._COMPILE_INTERRUPT.saved is None
    assert f(1.0) == 3.0  # an interrupted compile leaves nothing broken: the next call works


def test_a_ctrl_c_in_numbas_python_code_is_raised_where_it_lands(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside LLVM's callbacks the interrupt is not held back to the next acquire or release of
    the compiler lock (a function's typing and lowering can take seconds): it is raised where
    it arrived, as Python does. Here: in numba's Python code at the start of a compile."""
    sent: list[int] = []

    class SendSigint(numba.core.event.Listener):
        def on_start(self, event: object) -> None:
            if not sent:
                sent.append(1)
                os.kill(os.getpid(), signal.SIGINT)
                sent.append(2)  # not reached: the interrupt is raised on the line above

        def on_end(self, event: object) -> None:
            pass

    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    listener = SendSigint()
    numba.core.event.register("numba:compile", listener)
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            _fresh()(1.0)
    finally:
        numba.core.event.unregister("numba:compile", listener)
        signal.signal(signal.SIGINT, saved)
    assert sent == [1]
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any(f.name == "on_start" and f.filename == __file__ for f in frames)
    assert "_deliver" not in [f.name for f in frames]
    assert _jit._COMPILE_INTERRUPT.saved is None


def test_a_programs_own_handler_is_called_once_and_put_back(sigint_in_callback: Sigint) -> None:
    calls: list[int] = []

    def mine(signum: int, frame: object) -> None:
        calls.append(signum)

    signal.signal(signal.SIGINT, mine)
    f = _fresh()
    assert f(1.0) == 3.0  # the handler returned: the compile went on
    assert calls == [signal.SIGINT]  # called once, at a safe point, not lost in the callback
    assert len(sigint_in_callback.seen) == 1 and sigint_in_callback.seen[0] is not mine  # held back
    assert signal.getsignal(signal.SIGINT) is mine


def test_a_handler_that_raises_ends_the_compile(sigint_in_callback: Sigint) -> None:
    class StopError(Exception):
        pass

    def mine(signum: int, frame: object) -> None:
        raise StopError

    signal.signal(signal.SIGINT, mine)
    with pytest.raises(StopError):
        _fresh()(1.0)
    assert signal.getsignal(signal.SIGINT) is mine


def test_an_ignored_sigint_stays_ignored(sigint_in_callback: Sigint) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    assert _fresh()(1.0) == 3.0
    assert sigint_in_callback.seen == [signal.SIG_IGN]  # nothing installed over it
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_compile_that_fails_puts_the_handler_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def mine(signum: int, frame: object) -> None:
        pass

    seen: list[object] = []

    class Watch(numba.core.event.Listener):
        def on_start(self, event: object) -> None:
            seen.append(signal.getsignal(signal.SIGINT))

        def on_end(self, event: object) -> None:
            pass

    saved = signal.signal(signal.SIGINT, mine)
    watch = Watch()
    numba.core.event.register("numba:compile", watch)
    try:
        @numba.njit
        def bad(x: float) -> float:
            return x + "a string"

        with pytest.raises(numba.core.errors.TypingError):
            bad(1.0)
        assert seen and all(h is not mine for h in seen)  # held back while compiling
        assert signal.getsignal(signal.SIGINT) is mine  # and put back after the failure
        assert _jit._COMPILE_INTERRUPT.saved is None
    finally:
        numba.core.event.unregister("numba:compile", watch)
        signal.signal(signal.SIGINT, saved)


def test_validate_records_an_interrupt_while_compiling_as_an_interrupt(
        sigint_in_callback: Sigint, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20: "a Ctrl-C inside a numba call during validate was recorded as a failing
    check". Here the Ctrl-C lands inside numba's compilation of the case's function: the
    command ends as interrupted (130), no table, no failed case."""
    from mbplugin.validation import core

    f = _fresh()
    sigint_in_callback.armed = False

    def compiles(ctx: core.Context) -> None:
        sigint_in_callback.armed = True
        ctx.result.facts["value"] = f(1.0)

    core.all_cases()  # the registered cases, then one more
    monkeypatch.setattr(core, "CASES", [*core.CASES, core.Case(
        "test.compile_interrupt", "a case whose function compiles", "closed", compiles)])
    capsys.readouterr()
    assert main(["validate", "--only", "test.compile_interrupt"]) == 130
    out, err = capsys.readouterr()
    assert out == ""
    # the case's progress line, the compile notice on a line of its own (the compile started
    # inside the case), the progress line again, then the interrupt on a line of its own
    lines = err.splitlines()
    assert lines[0] == lines[2] == "[1/1] test.compile_interrupt ...", err
    assert lines[1].startswith("mbplugin: compiling"), err
    assert lines[3:] == ["mbplugin: interrupted"], err
    assert len(sigint_in_callback.seen) == 1


#: a child process: SIGINT from inside the first object-cache notification of LLVM's engine,
#: after the hook stored the code (at once: while ``main`` imports numba and compiles its probe;
#: ``run``: once the command's own first compilation has started); the time of the signal
#: (time.monotonic) on stdout
CHILD = textwrap.dedent("""
    import os, signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from numba.core.registry import cpu_target
    engine = cpu_target.target_context.codegen()._engine._ee
    real = engine._object_cache_notify
    armed, sent = [1] if sys.argv[1] == "import" else [], []
    def notify(module, buf):
        real(module, buf)
        if armed and not sent:
            sent.append(1)
            print(time.monotonic(), flush=True)
            os.kill(os.getpid(), signal.SIGINT)
    engine._object_cache_notify = notify
    from mbplugin.cli import main
    if not armed:
        import mbplugin._jit
        mbplugin._jit.on_first_compile(lambda: armed.append(1))
    sys.exit(main(sys.argv[2:]))
    """)


@pytest.mark.parametrize("when", ["import", "run"])
def test_ctrl_c_while_a_cold_run_compiles(when: str, tmp_path: Path) -> None:
    """``mbplugin run`` with an empty numba cache, Ctrl-C while it compiles: exit 130 within
    5 s (2 s was exceeded at load 15; a run that goes on takes the whole 20-40 s cold run), one
    line, no ``--out`` directory (without the listener the run went on to write its results and
    exit 0, or failed with a traceback)."""
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", CHILD, when, "run", DROP, "--quiet", "--out",
                           str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    t_end = time.monotonic()
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert lines == ["mbplugin: interrupted"]
    assert t_end - float(proc.stdout.split()[0]) < 5.0
    assert not out.exists()


def test_a_held_back_interrupt_is_delivered_when_a_compiled_run_returns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C still held back (it arrived inside a callback from LLVM) is delivered when a
    run's loop of compiled calls comes back to Python (``StepBudget.update``), not only at the
    compiler lock's next event: here an impact of a warm (already compiled) law, in calls of
    5 steps, with such an interrupt pending for the program's own handler."""
    import mbplugin.pipeline.budget as budget
    from mbplugin.impact import impact
    from mbplugin.laws import make_law

    law = make_law("hunt_crossley", k=1e9, cr=0.5)
    for name in ("FIRST_STEPS", "MIN_STEPS", "MAX_STEPS"):
        monkeypatch.setattr(budget, name, 5)
    whole = impact(law, 1.0, 1.0).cr_out  # compiled (or loaded) here, paused every 5 steps
    calls: list[int] = []

    def mine(signum: int, frame: object) -> None:
        calls.append(signum)
        raise KeyboardInterrupt

    monkeypatch.setattr(_jit._COMPILE_INTERRUPT, "saved", mine)
    monkeypatch.setattr(_jit._COMPILE_INTERRUPT, "pending", (signal.SIGINT, None))
    with pytest.raises(KeyboardInterrupt):
        impact(law, 1.0, 1.0)
    assert calls == [signal.SIGINT] and _jit._COMPILE_INTERRUPT.pending is None
    assert impact(law, 1.0, 1.0).cr_out == whole  # nothing pending: the impact runs through


def test_an_import_ended_by_a_ctrl_c_and_imported_again_listens_once() -> None:
    """``import mbplugin`` ended by a Ctrl-C while it compiled (its probe), then imported again
    in the same process (an interactive session): one listener, not two chaining their
    handlers (the second would put the first one's handler back after its compile)."""
    code = textwrap.dedent("""
        import sys, numba.core.event as ev
        import mbplugin._jit
        del sys.modules["mbplugin._jit"]
        import mbplugin._jit as j
        mine = [x for x in ev._registered["numba:compiler_lock"]
                if type(x).__qualname__ == "_CompileInterrupt"]
        print(len(mine), mine[0] is j._COMPILE_INTERRUPT)
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.stdout.split() == ["1", "True"], proc.stderr[-2000:]
