"""``fit`` and ``sweep`` check their input at the door: bad input is one line on stderr naming
it, exit code 2, nothing written, before any work; heavy work says its estimate first."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from cli_errors import one_line_error

import mbplugin.identify as identify
from mbplugin.cli import main
from mbplugin.identify import fit as fitmod
from mbplugin.identify import fit_law, impact_data, load_data
from mbplugin.impact import impact
from mbplugin.laws import make_law
from mbplugin.sweep import build_spec, load_spec, run_sweep
from mbplugin.sweep import run as sweep_run


def _impacts_csv(path: Path, rows: str, meta: str = "# mass: 1.0\n") -> Path:
    path.write_text(meta + textwrap.dedent(rows).lstrip())
    return path


def _table(tmp_path: Path) -> Path:
    """c_r of Flores (cr 0.62, k 1e9) at three speeds: a consistent, fittable table."""
    law = make_law("flores", k=1e9, cr=0.62)
    v = [0.5, 1.0, 2.0]
    lines = "".join(f"{x},{impact(law, 1.0, x).cr_out!r}\n" for x in v)
    return _impacts_csv(tmp_path / "ok.csv", "v0,cr\n" + lines)


FIT = ["fit", "--law", "flores", "--free", "cr", "-p", "k=1e9", "-p", "cr=0.5"]


# --------------------------------------------------------------------------------------------------
# fit
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows, meta, needle", [
    ("v0,cr,mass2\n1,0.5,2\n2,0.5,-1\n", "# mass: 1\n", "'mass2', data row 2: -1"),
    ("v0,cr,mass\n1,0.5,1\n2,0.5,0\n", "", "'mass', data row 2: 0"),
    ("v0,cr\n1,0.5\n2,inf\n", "# mass: 1\n", "'cr', data row 2: inf"),
    ("v0,duration\n1,1e-4\n2,0\n", "# mass: 1\n", "'duration', data row 2: 0"),
    ("v0,f_max\n1,-3\n2,50\n", "# mass: 1\n", "'f_max', data row 1: -3"),
    ("v0,cr,press\n1,0.5,nan\n", "# mass: 1\n", "'press', data row 1: empty"),
    # loop files: a negative v0, one missing force, a zero mass
    ("delta,force,v0\n0,0,-1\n1e-6,5,-1\n", "# mass: 1\n", "run 0: v0 = -1"),
    ("delta,force,v0\n0,0,1\n1e-6,,1\n", "# mass: 1\n", "'force', data row 2: empty"),
    ("delta,force,v0\n0,0,1\n1e-6,3,1\n", "# mass: 0\n", "run 0: mass = 0"),
])
def test_fit_refuses_data_the_model_cannot_be_evaluated_on(
        rows: str, meta: str, needle: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = _impacts_csv(tmp_path / "d.csv", rows, meta)
    one_line_error(capsys, main([*FIT, "--data", str(data)]), needle)


def test_fit_refuses_a_model_that_cannot_be_evaluated_at_the_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # k fixed outside its range: every evaluation failed, and the fit reported "converged"
    # at its start values
    data = _table(tmp_path)
    line = one_line_error(capsys, main(["fit", "--law", "flores", "--free", "cr", "-p", "k=-1e9",
                                   "-p", "cr=0.5", "--data", str(data)]), "start values")
    assert "'k'" in line
    # --mass2 0 from the command line
    one_line_error(capsys, main([*FIT, "--data", str(data), "--mass2", "0"]), "'mass2'")


def test_fit_refuses_unknown_bounds_and_a_parameter_named_twice(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(_table(tmp_path))
    one_line_error(capsys, main([*FIT, "--data", data, "--bounds", "zz=1:2"]), "'zz'",
              "not a free parameter")
    one_line_error(capsys, main([*FIT, "--data", data, "--bounds", "k=1e8:1e10"]), "'k'")
    one_line_error(capsys, main(["fit", "--law", "flores", "--free", "k,k", "-p", "k=1e9", "-p",
                            "cr=0.5", "--data", data]), "'k' is named twice")


def test_empty_cells_of_measured_columns_are_skipped(tmp_path: Path) -> None:
    # docs/identification.md: "empty cells are skipped" -- the code agrees
    law = make_law("flores", k=1e9, cr=0.62)
    v = [0.5, 1.0, 2.0]
    r = [impact(law, 1.0, x) for x in v]
    path = _impacts_csv(tmp_path / "e.csv", "v0,cr,duration\n"
                        f"{v[0]},{r[0].cr_out!r},\n"
                        f"{v[1]},,{r[1].duration!r}\n"
                        f"{v[2]},{r[2].cr_out!r},{r[2].duration!r}\n")
    data = load_data(path)
    assert np.isnan(data.targets["cr"][1]) and np.isnan(data.targets["duration"][0])
    res = fit_law("flores", data, ["cr"], start={"k": 1e9, "cr": 0.5})
    assert res.n_points == 4  # two c_r, two durations
    assert res.values["cr"] == pytest.approx(0.62, rel=1e-6)


def test_fit_plot_path_is_checked_before_the_fit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    data = str(_table(tmp_path))

    def no_fit(*a: object, **k: object) -> None:
        raise AssertionError("the fit ran before the plot path was checked")

    monkeypatch.setattr(identify, "fit_law", no_fit)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    one_line_error(capsys, main([*FIT, "--data", data, "--plot", str(blocker / "fit.png")]),
              "--plot", "cannot create its directory")
    one_line_error(capsys, main([*FIT, "--data", data, "--plot", "/proc/fit.png"]), "--plot",
              "cannot write there")
    one_line_error(capsys, main([*FIT, "--data", data, "--plot", str(tmp_path / "fit.gif")]),
              "--plot", "allowed extensions")


def test_a_heavy_fit_says_its_estimate_before_it_starts(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    n = 600
    v = rng.uniform(0.2, 2.0, n)
    data = impact_data({"v0": v, "cr": np.full(n, 0.6)}, meta={"mass": "1.0"})
    events: list[str] = []
    real = fitmod._optimise

    def optimise(*a: object, **k: object):  # type: ignore[no-untyped-def]
        events.append("optimise")
        return real(*a, **k)

    monkeypatch.setattr(fitmod, "_optimise", optimise)
    monkeypatch.setattr(fitmod, "HEAVY_SECONDS", 0.0)
    fit_law("flores", data, ["cr"], start={"k": 1e9, "cr": 0.5}, notice=events.append,
            max_nfev=3)
    assert events[0].startswith(f"{n} measured rows: one model evaluation takes about")
    assert events[1:] == ["optimise"]
    # a light fit says nothing
    events.clear()
    monkeypatch.setattr(fitmod, "HEAVY_SECONDS", 1e9)
    fit_law("flores", data, ["cr"], start={"k": 1e9, "cr": 0.5}, notice=events.append,
            max_nfev=3)
    assert events == ["optimise"]


# --------------------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------------------
GOOD = """
[sweep]
chunk_size = 4
[[laws]]
name = "hunt_crossley"
params = { k = 1e9, cr = 0.5 }
[impacts]
v0 = [0.5, 1.0]
mass = [1.0]
"""


def _spec_file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    return p


@pytest.mark.parametrize("old, new, needle", [
    ("[[laws]]\nname = \"hunt_crossley\"\nparams = { k = 1e9, cr = 0.5 }", "",
     "no [[laws]]"),
    ("params = { k = 1e9, cr = 0.5 }", "params = [1e9, 0.5]", "laws[0].params"),
    ("params = { k = 1e9, cr = 0.5 }", "params = { k = 1e9 }\ngrid = \"cr\"", "laws[0].grid"),
    ("params = { k = 1e9, cr = 0.5 }", "params = { k = [1e9, 2e9], cr = 0.5 }",
     "laws[0].params.k"),
    ("chunk_size = 4", "chunk_size = 0", "chunk_size = 0"),
    ("chunk_size = 4", "chunk_size = 4\nrtol = -1", "rtol = -1"),
    ("mass = [1.0]", "mass = [1.0]\nmass2 = -1", "mass2 = -1"),
    ("mass = [1.0]", "mass = [1.0]\npress = \"inf\"", "press = inf"),
    ("v0 = [0.5, 1.0]", "v0 = { linspace = [0.1, 1.0, 1000000000] }", "1e+09 points"),
    ("[sweep]", "scene = \"drop_ball.toml\"\n[sweep]", "[scene]"),
    ("[sweep]", "laws = [1]\n[sweep]", "laws[0]: expected a table"),
])
def test_sweep_refuses_a_bad_spec_withone_line_error(
        old: str, new: str, needle: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    text = textwrap.dedent(GOOD)
    assert old in text
    text = text.replace(old, new)
    if new.startswith("laws = [1]"):
        text = text[:text.index("[[laws]]")] + text[text.index("[impacts]"):]
    spec = _spec_file(tmp_path, text)
    out = tmp_path / "t.parquet"
    t0 = time.perf_counter()
    one_line_error(capsys, main(["sweep", str(spec), "--out", str(out), "--workers", "1",
                            "--quiet"]), needle)
    assert time.perf_counter() - t0 < 10.0
    assert not out.exists() and not (tmp_path / "t.parquet.parts").exists()


def test_scene_sweep_chunk_size_is_checked(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[1]
    for bad in (-1, 0):
        spec = _spec_file(tmp_path, f"""
            [sweep]
            chunk_size = {bad}
            [scene]
            file = "{root / 'scenes' / 'drop_ball.toml'}"
            set = {{ cr = [0.5, 0.8], duration = 0.05 }}
            """)
        out = tmp_path / "t.csv"
        one_line_error(capsys, main(["sweep", str(spec), "--out", str(out), "--workers", "1"]),
                  f"chunk_size = {bad}")
        assert not out.exists() and not (tmp_path / "t.csv.parts").exists()


def test_sweep_outputs_and_executors_are_checked_before_the_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    spec = str(_spec_file(tmp_path, GOOD))

    def no_run(*a: object, **k: object) -> None:
        raise AssertionError("a chunk ran before the output was checked")

    monkeypatch.setattr(sweep_run, "run_chunk", no_run)
    is_dir = tmp_path / "table.parquet"
    is_dir.mkdir()
    one_line_error(capsys, main(["sweep", spec, "--out", str(is_dir), "--workers", "1"]),
              "is a directory")
    one_line_error(capsys, main(["sweep", spec, "--out", "/proc/mbplugin/t.parquet", "--workers",
                            "1"]), "--out", "cannot write")
    one_line_error(capsys, main(["sweep", spec, "--out", str(tmp_path / "t.parquet"),
                            "--dask-local", "-1"]), "--dask-local -1")
    t0 = time.perf_counter()
    one_line_error(capsys, main(["sweep", spec, "--out", str(tmp_path / "t.parquet"),
                            "--scheduler", "tcp://127.0.0.1:9"]),
              "--scheduler", "cannot connect")
    assert time.perf_counter() - t0 < 10.0
    one_line_error(capsys, main(["sweep", spec, "--out", str(tmp_path / "t.parquet"), "--workers",
                            "1", "--plot", str(tmp_path / "map.gif")]), "--plot")
    assert not (tmp_path / "t.parquet.parts").exists()


def test_a_billion_run_sweep_says_its_estimate_before_it_starts(tmp_path: Path) -> None:
    spec = build_spec({
        "laws": [{"name": "hunt_crossley", "params": {"k": 1e9},
                  "grid": {"cr": {"linspace": [0.1, 0.9, 1000]}}}],
        "impacts": {"v0": {"geomspace": [0.01, 10.0, 1000]},
                    "mass": {"geomspace": [0.1, 10.0, 1000]}},
    })
    assert spec.n_runs == 10**9
    said: list[str] = []

    class StopError(Exception):
        pass

    def notice(line: str) -> None:
        said.append(line)
        raise StopError  # the user reads the estimate and stops: nothing has run

    t0 = time.perf_counter()
    with pytest.raises(StopError):
        run_sweep(spec, tmp_path / "big.parquet", workers=2, notice=notice)
    assert time.perf_counter() - t0 < 30.0
    assert len(said) == 1 and said[0].startswith("1e+09 runs in 50000 chunks: about")
    assert "2 processes" in said[0]
    assert not list((tmp_path / "big.parquet.parts").glob("chunk-*"))
    # a small sweep says nothing
    small = load_spec(_spec_file(tmp_path, GOOD))
    said.clear()
    run_sweep(small, tmp_path / "small.parquet", workers=1, notice=said.append)
    assert said == []
