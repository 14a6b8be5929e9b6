"""Long runs stay under the user's control.

Compiled loops (the engine's segments, the impact analyser) return to Python after a step
budget and go on from a carry, bit for bit (checked here with budgets of 1 and a few steps
against one uninterrupted call): so a Ctrl-C ends a run within 2 s with exit code 130 and one
line, progress is reported inside a long segment, and limits (steps, record memory, a step
bound of an impact) stop a run with one clear line. An interrupted ``run --plot`` leaves the
earlier run's files in ``--out``, never a mix of two runs.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from cli_errors import one_line_error

import mbplugin.pipeline.budget as budget
from mbplugin.cli import main
from mbplugin.dynamics import outputs, simulation
from mbplugin.dynamics.preflight import RunTooLargeError
from mbplugin.errors import IntegrationError, reraise_interrupt
from mbplugin.impact import ImpactBatch, impact
from mbplugin.laws import make_law
from mbplugin.scene import build_scene, load_scene

ROOT = Path(__file__).resolve().parents[1]
DROP = str(ROOT / "scenes" / "drop_ball.toml")


def _tiny_budget(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.setattr(budget, "FIRST_STEPS", n)
    monkeypatch.setattr(budget, "MIN_STEPS", n)
    monkeypatch.setattr(budget, "MAX_STEPS", n)


# --------------------------------------------------------------------------------------------------
# paused and resumed: the same bits
# --------------------------------------------------------------------------------------------------
def _scene_results(path: str, sets: list[str]) -> dict[str, np.ndarray]:
    r = load_scene(path, sets).run()
    out = {k: getattr(r, k) for k in ("t", "pos", "quat", "vel", "omega")}
    out.update({f"e.{k}": v for k, v in r.energy.items()})
    out.update({f"c.{k}": v for k, v in r.contacts.items()})
    out["stats"] = np.array([r.stats.steps, r.stats.events, r.stats.nfev])
    out["steps_by_solver"] = np.array(sorted(r.stats.solver_steps.items()), dtype=object)
    out["cr"] = np.array([b["cr"] for b in r.bounces])
    return out


SCENES = [
    # a chain of lone events in compiled DOP853 segments (spheres in a row)
    (str(ROOT / "scenes" / "newtons_cradle.toml"), []),
    # DOP853 then compiled Radau while the ball rests
    (str(ROOT / "scenes" / "azad_drop.toml"), ["scene.duration=0.6"]),
    # a law with an ODE state: segments that stop at every event
    (DROP, ["law=bouc_wen_hunt_crossley", "contact.params.c=2e3", "duration=0.4",
            "height=0.05"]),
]


def test_paused_engine_segments_resume_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = [_scene_results(p, s) for p, s in SCENES]
    for n in (1, 3):
        with monkeypatch.context() as m:
            _tiny_budget(m, n)
            paused = [_scene_results(p, s) for p, s in SCENES]
        for a, b, (p, _) in zip(whole, paused, SCENES, strict=True):
            assert a.keys() == b.keys()
            for k in a:
                assert np.array_equal(a[k], b[k]), (Path(p).name, n, k)
    assert all(len(w["t"]) > 50 for w in whole)


def _impacts() -> list[np.ndarray]:
    out = []
    for name, kw, press in (("hunt_crossley", {"k": 1e9, "cr": 0.5}, 1e4),  # captured
                            ("bouc_wen_hunt_crossley", {"k": 1e9, "c": 1e3}, 0.0),  # ODE state
                            ("bouc_wen_maxwell", {"k": 1e9, "c": 1e4}, 10.0)):
        r = impact(make_law(name, **kw), 1.0, 1.0, press=press, record=True)
        out.append(np.array([r.cr_out, r.f_max, r.t_f_max, r.delta_max, r.duration, r.steps,
                             r.nfev, r.energy_dissipated, r.cr_poisson, r.cr_stronge]))
        out.append(np.column_stack([r.series.t, r.series.delta, r.series.force]))
        out.append(r.state_end)
    b = ImpactBatch()
    b.add(make_law("hunt_crossley", k=1e9, cr=np.linspace(0.3, 0.9, 7)), 1.0,
          np.geomspace(0.01, 3.0, 7), press=np.linspace(0.0, 3e3, 7))
    b.add(make_law("flores", k=1e9, cr=0.5), 2.0, np.geomspace(0.1, 1.0, 5))
    res = b.run()
    out += [np.asarray(res[k], dtype=float) for k in sorted(res) if k != "law"]
    return out


def test_paused_impacts_resume_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _impacts()
    for n in (1, 5):
        with monkeypatch.context() as m:
            _tiny_budget(m, n)
            paused = _impacts()
        for i, (a, b) in enumerate(zip(whole, paused, strict=True)):
            assert np.array_equal(a, b, equal_nan=True), (n, i)


def test_progress_is_reported_inside_one_long_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    # free fall only (no contact in 0.05 s from 0.5 m): one compiled segment, which used to
    # report nothing until its end; now the driver hears from it after every budget
    monkeypatch.setattr(budget, "FIRST_STEPS", 100)
    monkeypatch.setattr(budget, "MAX_STEPS", 100)
    scene = load_scene(DROP, ["duration=0.05", "integrator.max_step=1e-5"])
    seen: list[float] = []
    scene.run(seen.append)
    assert len(seen) >= 20
    assert np.all(np.diff(seen) > 0) and seen[-1] == pytest.approx(0.05)


# --------------------------------------------------------------------------------------------------
# limits
# --------------------------------------------------------------------------------------------------
def test_a_step_too_small_for_the_duration_is_refused_before_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["run", DROP, "--set", "integrator.max_step=1e-12", "--out", str(out)])
    one_line_error(capsys, code, "integrator.max_step = 1e-12", "2.5e+12")
    assert not out.exists()


def test_integrator_max_steps_stops_a_run_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["run", DROP, "--set", "integrator.max_steps=40", "--out", str(out), "--quiet"])
    one_line_error(capsys, code, "integrator.max_steps = 40")
    assert not out.exists()
    code = main(["run", DROP, "--set", "integrator.max_steps=0", "--out", str(out), "--quiet"])
    one_line_error(capsys, code, "max_steps")


def test_record_memory_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulation, "RECORD_MEMORY_FRACTION", 1e-12)
    with pytest.raises(RunTooLargeError, match=r"records reached .* output\.record_every"):
        load_scene(DROP, ["duration=0.2"]).run()


def test_an_impact_stiffer_than_its_time_scale_stops_at_its_step_limit(
        capsys: pytest.CaptureFixture[str]) -> None:
    law = make_law("hunt_crossley", k=1e9, cr=0.5)
    t0 = time.perf_counter()
    with pytest.raises(IntegrationError, match="more than max_steps = 20000 steps"):
        impact(law, 1.0, 1.0, press=1e12, max_steps=20000)
    assert time.perf_counter() - t0 < 5.0
    b = ImpactBatch(max_steps=20000)
    b.add(law, 1.0, 1.0, press=np.array([0.0, 1e12, 10.0]))
    res = b.run(errors="report")
    assert [bool(e) for e in res["error"]] == [False, True, False]
    assert "max_steps" in res["error"][1] and np.isnan(res["cr_out"][1])
    assert res["cr_out"][0] == pytest.approx(impact(law, 1.0, 1.0).cr_out, rel=1e-12)
    code = main(["impact", "--law", "hunt_crossley", "-p", "k=1e9", "-p", "cr=0.5", "--mass",
                 "1", "--v0", "1", "--press", "1e12", "--max-steps", "20000"])
    one_line_error(capsys, code, "max_steps = 20000")


def test_a_sweep_row_over_its_step_limit_is_an_error_row(tmp_path: Path) -> None:
    from mbplugin.sweep import build_spec, run_sweep

    spec = build_spec({"sweep": {"max_steps": 20000},
                       "laws": [{"name": "hunt_crossley", "params": {"k": 1e9, "cr": 0.5}}],
                       "impacts": {"v0": [1.0], "mass": [1.0], "press": [0.0, 1e12, 5.0]}})
    rep, table = run_sweep(spec, tmp_path / "t.csv", workers=1)
    rows = table.to_pylist()
    assert rep.errors == 1 and "max_steps = 20000" in rows[1]["error"]
    assert rows[0]["error"] == rows[2]["error"] == ""


# --------------------------------------------------------------------------------------------------
# Ctrl-C
# --------------------------------------------------------------------------------------------------
#: a child's preamble: SIGUSR1 dumps the stacks of all its threads to its stderr (how a child
#: that does not end after its SIGINT is diagnosed: :func:`_hung`); SIGINT gets Python's own
#: handler, as in a process a user runs in a terminal. A suite started in the background by a
#: script (``pytest ... &``: no job control) runs with SIGINT ignored, its children inherit
#: that, and Python leaves an inherited SIG_IGN alone: their SIGINT was then lost and the
#: Ctrl-C tests timed out (the full cold suites run in the background at load 7-9).
DUMPER = ("import faulthandler, signal\n"
          "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
          "signal.signal(signal.SIGINT, signal.default_int_handler)\n")
#: the command line in a child process, with a line on stdout once it is about to start
STARTER = (DUMPER + "import sys\nfrom mbplugin.cli import main\nprint('started', flush=True)\n"
           "sys.exit(main(sys.argv[1:]))")


SWEEP_SPEC = """
    [sweep]
    chunk_size = 1
    [[laws]]
    name = "hunt_crossley"
    params = { k = 1e9, cr = 0.5 }
    [impacts]
    v0 = [1.0]
    mass = [1.0]
    press = [0.0, 1e12, 1e12]
    """


def _long_run(out: Path) -> list[str]:
    # 2.5e8 steps of at most 1e-8 s: hours of one compiled segment after another
    return ["run", DROP, "--set", "integrator.max_step=1e-8", "--set",
            "output.record_every=1000000", "--out", str(out), "--progress"]


HUGE_PRESS = ["impact", "--law", "hunt_crossley", "-p", "k=1e9", "-p", "cr=0.5", "--mass", "1",
              "--v0", "1", "--press", "1e12"]


def _sweep(d: Path, workers: str) -> tuple[list[str], Path, Path]:
    """``mbplugin sweep`` of SWEEP_SPEC in ``d``: (arguments, table, its first chunk)."""
    spec = d / "s.toml"
    spec.write_text(textwrap.dedent(SWEEP_SPEC))
    out = d / "t.parquet"
    return (["sweep", str(spec), "--out", str(out), "--workers", workers], out,
            d / "t.parquet.parts" / "chunk-000000.parquet")


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compile (or load) what the child processes run, in their numba cache, so that a
    child's interrupt lands in the work, not in a first compilation (a Ctrl-C inside LLVM's
    compilation of a large kernel is seen only when that compilation returns: tens of seconds
    on a loaded machine with a cold cache). Each child command runs here as a child of its
    own, interrupted without a time bound, until one run of it compiles nothing (no compile
    notice), so that what a test's child finds in the cache is exactly what it runs."""
    d = tmp_path_factory.mktemp("warm")
    assert main(["run", DROP, "--set", "duration=0.05", "--out", str(d / "r"), "--quiet",
                 "--json"]) == 0
    law = make_law("hunt_crossley", k=1e9, cr=0.5)
    impact(law, 1.0, 1.0, press=1.0)
    b = ImpactBatch()
    b.add(law, 1.0, np.array([1.0, 2.0]))
    b.run()
    children = [lambda e: (_long_run(e / "out"), 1.0, e / "out"),
                lambda e: (HUGE_PRESS, 1.5, None),
                *(lambda e, w=w: (_sweep(e, w)[0], 0.5, _sweep(e, w)[2]) for w in "12")]
    for i, child in enumerate(children):
        for attempt in range(5):
            args, after, ready = child(_mkdir(d / f"child{i}-{attempt}"))
            if "--quiet" in args:
                args.remove("--quiet")  # the compile notice tells whether it compiled
            code, lines, _ = _interrupt(args, after, ready, timeout=600)
            assert code == 130, lines
            if not any("compiling" in x for x in lines):
                break
        else:
            raise AssertionError(f"child {i} still compiles after 5 runs: {lines}")


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def _hung(proc: subprocess.Popen, timeout: float, t0: float) -> str:
    """What a child that did not end within ``timeout`` s of its SIGINT was doing: its
    scheduler state and wait channel, its children, then the stacks of all its threads
    (SIGUSR1: faulthandler, registered by :data:`DUMPER`) and whatever else it wrote. The child
    is killed afterwards."""
    where = []
    for name in ("status", "wchan"):
        try:
            text = Path(f"/proc/{proc.pid}/{name}").read_text()
        except OSError as exc:  # not Linux, or already gone
            text = f"({exc})"
        where.append(text if name == "wchan" else
                     " ".join(x for x in text.splitlines()
                              if x.split(":")[0] in ("State", "Threads", "VmRSS", "SigBlk",
                                                     "SigIgn", "SigCgt")))
    kids = []
    for task in Path(f"/proc/{proc.pid}/task").glob("*/children"):
        try:
            kids += task.read_text().split()
        except OSError:
            pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    waited = time.monotonic() - t0
    proc.send_signal(signal.SIGUSR1)
    time.sleep(2.0)  # the dump is written by the signal handler itself (C level, no GIL)
    proc.kill()
    out, err = proc.communicate()
    return (f"child {proc.args[3:]} did not exit within {timeout:g} s of SIGINT "
            f"({waited:.1f} s); {where[0]}; wchan {where[1]!r}; children "
            f"{kids}; load {load}\n--- stderr (its threads' stacks at SIGUSR1 last) ---\n{err}"
            f"--- stdout ---\n{out[-2000:]}")


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupt(args: list[str], after: float, ready: Path | None = None, timeout: float = 60,
               starter: str = STARTER, sigint_ignored: bool = False
               ) -> tuple[int, list[str], float]:
    """Start ``mbplugin ARGS``, wait until it has started (and ``ready`` exists), ``after``
    seconds more, send SIGINT: (exit code, stderr lines, seconds from the signal to exit).
    A child still running ``timeout`` s after the signal fails the test with its stacks
    (:func:`_hung`). ``sigint_ignored``: the child starts with SIGINT ignored (as the children
    of a suite started in the background)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", starter, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ignore_sigint if sigint_ignored else None)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        t_wait = time.monotonic()
        while ready is not None and not ready.exists() and time.monotonic() - t_wait < 120:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        time.sleep(after)
        assert proc.poll() is None, proc.communicate()
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(_hung(proc, timeout, t0)) from None
        dt = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, [x for x in err.splitlines() if x.strip()], dt


def _assert_interrupted(code: int, lines: list[str], dt: float) -> None:
    assert code == 130, lines
    assert lines == ["mbplugin: interrupted"]
    assert dt < 2.0


def test_ctrl_c_ends_a_long_compiled_run(warm: None, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, lines, dt = _interrupt(_long_run(out), 1.0, ready=out)
    _assert_interrupted(code, lines, dt)
    assert not out.exists()  # nothing written, not even the directory the run created


def test_ctrl_c_ends_an_impact_with_a_huge_press(warm: None) -> None:
    code, lines, dt = _interrupt(HUGE_PRESS, 1.5)
    _assert_interrupted(code, lines, dt)


def test_ctrl_c_reaches_a_child_that_inherited_sigint_ignored(warm: None) -> None:
    """The children of a suite started in the background (``pytest ... &`` from a script)
    inherit SIGINT ignored: the Ctrl-C the tests send must still be a user's Ctrl-C (DUMPER
    restores Python's handler; without it this child runs on, ignoring the signal)."""
    code, lines, dt = _interrupt(HUGE_PRESS, 1.5, sigint_ignored=True)
    _assert_interrupted(code, lines, dt)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_ends_a_sweep_and_keeps_its_finished_chunks(warm: None, tmp_path: Path,
                                                           workers: str) -> None:
    # with 2 worker processes the signal reaches only the parent here (as from `kill -INT`):
    # it stops the workers, busy with their 1e7-step impacts
    args, out, first = _sweep(tmp_path, workers)
    code, lines, dt = _interrupt([*args, "--quiet"], 0.5, ready=first)
    _assert_interrupted(code, lines, dt)
    assert first.exists() and not out.exists()


def test_a_child_that_ignores_the_interrupt_fails_with_its_stacks() -> None:
    """The diagnosis of a hung child: a child that ignores SIGINT fails the test with the stack
    of the function it is stuck in (its name) and its scheduler state."""
    starter = (DUMPER + "import signal, sys, time\n"
               "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
               "def stuck_in_a_sleep():\n"
               "    print('started', flush=True)\n"
               "    time.sleep(120)\n"
               "stuck_in_a_sleep()\n")
    with pytest.raises(AssertionError) as info:
        _interrupt([], 0.0, timeout=1.0, starter=starter)
    msg = str(info.value)
    assert "did not exit within 1 s of SIGINT" in msg and "State:" in msg
    assert "in stuck_in_a_sleep" in msg and "Current thread" in msg


def test_ctrl_c_while_a_command_starts_is_an_interrupt(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A Ctrl-C while ``main`` imports the commands' modules and numba (seconds on a loaded
    machine: where the Ctrl-C tests' children were interrupted at load 10) ends the command
    with one line and exit 130, not a traceback."""
    import mbplugin.cli as cli

    def importing(func: object, args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "with_compile_notice", importing)
    capsys.readouterr()
    assert main(HUGE_PRESS) == 130
    assert capsys.readouterr().err.splitlines() == ["mbplugin: interrupted"]


def test_an_interrupt_inside_a_compiled_call_is_an_interrupt(tmp_path: Path) -> None:
    """A Ctrl-C seen inside a numba call surfaces as ``SystemError: ... returned a result with
    an exception set`` caused by the KeyboardInterrupt: validate used to record it as a failed
    case; it is an interrupt."""
    from mbplugin.validation.core import Case, run_validation

    def interrupted_call(ctx: object) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(<function f>) returned a result with an "
                              "exception set") from exc

    case = Case("test.interrupt", "an interrupted case", "closed", interrupted_call)
    with pytest.raises(KeyboardInterrupt):
        run_validation(cases=[case], progress=None)
    with pytest.raises(KeyboardInterrupt):
        reraise_interrupt(_caused_by_interrupt())
    reraise_interrupt(ValueError("not an interrupt"))  # returns


def _caused_by_interrupt() -> SystemError:
    err = SystemError("returned a result with an exception set")
    err.__cause__ = KeyboardInterrupt()
    return err


# --------------------------------------------------------------------------------------------------
# --out: one run's files, all or none
# --------------------------------------------------------------------------------------------------
def _snapshot(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


@pytest.mark.parametrize("where", ["plots", "records"])
def test_an_interrupted_write_leaves_the_earlier_run(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    first = ["run", DROP, "--set", "duration=0.6", "--out", str(out), "--quiet", "--plot",
             "--format", "npz"]
    assert main(first) == 0
    before = _snapshot(out)
    assert {"result.npz", "summary.json", "trajectory.png", "loops.png"} <= set(before)
    calls = {"n": 0}
    if where == "plots":
        import mbplugin.plotting as plotting

        real_save = plotting.save_figure

        def save(*a: object, **k: object) -> Path:
            calls["n"] += 1
            if calls["n"] == 2:  # after the first figure of the new run is written
                raise KeyboardInterrupt
            return real_save(*a, **k)

        monkeypatch.setattr(plotting, "save_figure", save)
    else:
        real_write = outputs.atomic_write

        def write(*a: object, **k: object) -> Path:
            calls["n"] += 1
            if calls["n"] == 3:  # records and bounces written, summary not yet
                raise KeyboardInterrupt
            return real_write(*a, **k)

        monkeypatch.setattr(outputs, "atomic_write", write)
    second = ["run", DROP, "--set", "duration=0.5", "--set", "law=flores", "--out", str(out),
              "--quiet", "--plot", "--format", "csv"]
    capsys.readouterr()
    assert main(second) == 130
    assert capsys.readouterr().err.strip() == "mbplugin: interrupted"
    assert calls["n"] >= 2
    assert _snapshot(out) == before  # the first run, whole; nothing of the second
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporaries
    monkeypatch.undo()
    assert main(second) == 0  # and a run that completes replaces it as a whole
    after = _snapshot(out)
    assert "result.npz" not in after and {"bodies.csv", "summary.json", "loops.png"} <= set(after)


def test_a_staged_directory_keeps_what_is_not_an_earlier_run(tmp_path: Path) -> None:
    out = tmp_path / "o"
    res = build_scene({"scene": {"duration": 0.05},
                       "bodies": [{"name": "b", "shape": "sphere", "radius": 0.1, "mass": 1.0}]
                       }).run()
    res.write(out, "csv")
    (out / "notes.txt").write_text("mine")
    res.write(out, "npz")
    names = {p.name for p in out.iterdir()}
    assert "notes.txt" in names and "result.npz" in names and "bodies.csv" not in names
    assert (out / "notes.txt").read_text() == "mine"
