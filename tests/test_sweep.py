"""Sweeps (mbplugin.sweep, ``mbplugin sweep``): same table on every executor, resumable after
SIGKILL, refused when the spec changed, failed runs kept as rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from mbplugin.cli import main
from mbplugin.laws import get_law_class
from mbplugin.laws.hunt_crossley import exact_cr
from mbplugin.sweep import SweepError, load_spec, run_sweep

ROOT = Path(__file__).resolve().parents[1]

SMALL = """
[sweep]
chunk_size = 40

[[laws]]
names = ["hunt_crossley", "flores", "zhang2022"]
params = { k = 1e9, n = 1.5 }
grid = { cr = { linspace = [0.3, 0.9, 4] } }

[[laws]]
name = "hertz"
sample = { method = "sobol", n = 4, seed = 1, ranges = { k = [1e8, 1e10] }, log = ["k"] }

[impacts]
v0 = { geomspace = [0.01, 1.0, 5] }
mass = [0.1, 1.0]
"""


def _spec(tmp_path: Path, text: str = SMALL, name: str = "small.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _equal(a, b) -> None:
    assert a.column_names == b.column_names
    for name in a.column_names:
        x, y = a.column(name).to_pylist(), b.column(name).to_pylist()
        assert len(x) == len(y)
        for u, v in zip(x, y, strict=True):
            assert u == v or (u != u and v != v), (name, u, v)  # NaN == NaN


def test_local_processes_and_dask_give_identical_tables(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    assert spec.n_runs == (3 * 4 + 4) * 10 and spec.n_chunks == 4
    rep1, serial = run_sweep(spec, tmp_path / "serial.parquet", workers=1)
    rep2, procs = run_sweep(spec, tmp_path / "procs.parquet", workers=2)
    rep3, dask = run_sweep(spec, tmp_path / "dask.parquet", dask_local=1, dask_processes=False)
    assert rep2.executor.startswith("local (2") and rep3.executor.startswith("dask")
    _equal(serial, procs)
    _equal(serial, dask)
    assert serial.column("run").to_pylist() == list(range(spec.n_runs))
    assert rep1.errors == 0


def test_scheduler_address(tmp_path: Path) -> None:
    # --scheduler tcp://HOST:PORT: a cluster started elsewhere (here a LocalCluster on TCP)
    from distributed import LocalCluster

    spec = load_spec(_spec(tmp_path))
    _, serial = run_sweep(spec, tmp_path / "serial.parquet", workers=1)
    with LocalCluster(n_workers=1, processes=False, protocol="tcp://",
                      dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        rep, remote = run_sweep(spec, tmp_path / "remote.parquet",
                                scheduler=cluster.scheduler_address)
    assert rep.executor == f"dask ({cluster.scheduler_address})"
    _equal(serial, remote)


def test_hunt_crossley_rows_follow_the_exact_relation(tmp_path: Path) -> None:
    # Hunt-Crossley family: c_r out depends on chi(c_r in) only, through the exact relation
    # (Gonthier et al. 2004; Corral et al. 2021, Eq. 5.23) -- not on speed or mass
    spec = load_spec(_spec(tmp_path))
    _, table = run_sweep(spec, tmp_path / "t.csv", workers=1)
    rows = [r for r in table.to_pylist() if r["law"] in ("hunt_crossley", "flores")]
    assert len(rows) == 80
    for r in rows:
        chi = float(get_law_class(r["law"]).chi(r["cr"]))
        assert r["cr_out"] == pytest.approx(exact_cr(chi), abs=1e-7)
        assert r["error"] == ""


def test_failed_runs_are_rows_with_their_error(tmp_path: Path) -> None:
    text = SMALL.replace("linspace = [0.3, 0.9, 4]", "linspace = [0.6, 1.2, 3]")
    spec = load_spec(_spec(tmp_path, text))
    rep, table = run_sweep(spec, tmp_path / "bad.parquet", workers=1)
    rows = table.to_pylist()
    assert len(rows) == spec.n_runs
    bad = [r for r in rows if r["error"]]
    assert rep.errors == len(bad) == 3 * 10  # c_r = 1.2 for three laws x 10 impacts
    assert all(r["cr"] == pytest.approx(1.2) and "outside its allowed range" in r["error"]
               and np.isnan(r["cr_out"]) for r in bad)
    assert all(np.isfinite(r["cr_out"]) for r in rows if not r["error"])


def test_changed_spec_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    spec = load_spec(_spec(tmp_path))
    store_parts = out.with_name(out.name + ".parts")
    store_parts.mkdir()
    (store_parts / "manifest.json").write_text(json.dumps({"digest": "0" * 16, "n_runs": 1}))
    with pytest.raises(SweepError, match="spec changed since it was written"):
        run_sweep(spec, out, workers=1)
    rep, _ = run_sweep(spec, out, workers=1, overwrite=True)
    assert rep.skipped == 0


def test_sigkill_midway_resumes_to_the_same_table(tmp_path: Path) -> None:
    text = """
    [sweep]
    chunk_size = 1500

    [[laws]]
    names = ["hunt_crossley", "gonthier"]
    params = { k = 1e9 }
    grid = { cr = { linspace = [0.1, 1.0, 20] } }

    [impacts]
    v0 = { geomspace = [0.01, 10.0, 40] }
    mass = { geomspace = [0.01, 10.0, 30] }
    """
    path = _spec(tmp_path, text, "kill.toml")
    spec = load_spec(path)
    assert spec.n_chunks == 32
    out = tmp_path / "kill.parquet"
    parts = out.with_name(out.name + ".parts")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mbplugin.cli", "sweep", str(path), "--out", str(out),
           "--workers", "1", "--quiet"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        done = list(parts.glob("chunk-*.parquet")) if parts.exists() else []
        if len(done) >= 3 or proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = len(list(parts.glob("chunk-*.parquet")))
    assert 0 < finished < spec.n_chunks, "the sweep was not killed midway"
    assert not out.exists()
    rep, resumed = run_sweep(load_spec(path), out, workers=1)
    assert rep.skipped >= finished
    _, fresh = run_sweep(spec, tmp_path / "fresh.parquet", workers=1)
    _equal(resumed, fresh)
    assert pq.read_table(out).num_rows == spec.n_runs


def test_cli_sweep_plot_and_errors(tmp_path: Path, capsys) -> None:
    path = _spec(tmp_path)
    out = tmp_path / "map.parquet"
    assert main(["sweep", str(path), "--out", str(out), "--workers", "1", "--plot",
                 "--json", "--quiet"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["runs"] == 160 and Path(rep["plot"]).stat().st_size > 0
    bad = _spec(tmp_path, SMALL.replace("[impacts]", "[impact]"), "bad.toml")
    assert main(["sweep", str(bad), "--out", str(tmp_path / "b.parquet")]) == 2
    assert "unknown table [impact]" in capsys.readouterr().err
    assert main(["sweep", str(path), "--out", str(tmp_path / "x.txt")]) == 2


def test_scene_sweep(tmp_path: Path) -> None:
    spec = load_spec(ROOT / "scenes" / "drop_ball.toml",
                     ["law=hunt_crossley,flores", "height=0.02", "duration=0.1", "cr=0.5,0.9"])
    assert spec.kind == "scene" and spec.n_runs == 4
    _, table = run_sweep(spec, tmp_path / "scene.csv", workers=1)
    rows = table.to_pylist()
    assert [r["set.law"] for r in rows] == ["hunt_crossley"] * 2 + ["flores"] * 2
    assert all(r["error"] == "" and r["n_bounces"] >= 1 for r in rows)
    assert [r["set.cr"] for r in rows] == [0.5, 0.9, 0.5, 0.9]
    # a lower target c_r gives a lower first-bounce c_r, for both laws
    assert rows[0]["cr_first"] < rows[1]["cr_first"] and rows[2]["cr_first"] < rows[3]["cr_first"]


def test_third_party_law_sweep(tmp_path: Path, monkeypatch) -> None:
    # a law without a compiled kernel runs impact by impact; a linear spring's contact lasts
    # half a period, pi sqrt(m / s) (closed form); an invalid grid value becomes an error row
    from mbplugin.laws import Law, Param, registry
    from mbplugin.sweep import build_spec

    class LinearSpring(Law):
        """F = s delta (test fixture)."""

        name = "test_sweep_linear_spring"
        params = (Param("s", "spring stiffness", "N/m", lo=0.0, lo_open=True),)
        kernel = None

        def coefficients(self, v_in, m_eff, r_eff):
            return np.full((np.size(v_in), 1), self.s)

        def force_raw(self, delta, ddelta, coef, state):
            return np.asarray(coef)[:, 0] * np.asarray(delta)

        def timescale(self, m_eff, v0):
            return np.sqrt(np.asarray(m_eff) / self.s)

    monkeypatch.setitem(registry._LAWS, LinearSpring.name, LinearSpring)
    spec = build_spec({"laws": [{"name": LinearSpring.name, "grid": {"s": [1e4, 4e4, -1.0]}}],
                       "impacts": {"v0": [0.3], "mass": [1.0, 2.0]}})
    rep, table = run_sweep(spec, tmp_path / "spring.csv", workers=1)
    rows = table.to_pylist()
    assert rep.errors == 2 and all("outside its allowed range" in r["error"] for r in rows[4:])
    for r in rows[:4]:
        assert r["duration"] == pytest.approx(np.pi * np.sqrt(r["mass"] / r["s"]), rel=1e-9)
        assert r["cr_out"] == pytest.approx(1.0, abs=1e-8)
