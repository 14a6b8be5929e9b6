"""`mbplugin run`: summary JSON, output files (atomic), plots, one-line errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mbplugin.cli import main


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_run_json_summary_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "drop"
    code, out, _ = _run(["run", "scenes/drop_ball.toml", "--set", "law=flores", "--set", "cr=0.5",
                         "--set", "duration=0.8", "--out", str(out_dir), "--json", "--plot"],
                        capsys)
    assert code == 0
    s = json.loads(out)
    for key in ("steps", "wall_time", "sim_time", "energy_drift", "bounces"):
        assert key in s
    assert s["sim_time"] == pytest.approx(0.8)
    assert s["steps"] > 0 and s["wall_time"] > 0
    assert s["energy_drift"] < 1e-6  # the energy balance closes (stored + dissipated)
    assert len(s["bounces"]) >= 3
    b = s["bounces"][0]
    assert set(b) >= {"body", "other", "t", "v_in", "v_out", "cr"}
    assert (b["body"], b["other"]) == ("ball", "floor")
    assert b["cr"] == pytest.approx(b["v_out"] / b["v_in"])
    # the records on disk agree with the summary; no temporary file is left behind
    names = {p.name for p in out_dir.iterdir()}
    assert {"bodies.csv", "contacts.csv", "energy.csv", "bounces.csv", "summary.json",
            "trajectory.png", "energy.png", "bounces.png", "loops.png"} <= names
    assert not [n for n in names if n.startswith(".")]
    on_disk = json.loads((out_dir / "summary.json").read_text())
    assert on_disk["bounces"] == s["bounces"]
    with open(out_dir / "bounces.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert float(rows[0]["cr"]) == pytest.approx(b["cr"], rel=1e-12)
    with open(out_dir / "energy.csv") as fh:
        energy = list(csv.DictReader(fh))
    assert len(energy) == s["records"]


def test_run_table_and_npz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["run", "scenes/drop_ball.toml", "--set", "duration=0.7", "--out",
                         str(tmp_path), "--format", "npz"], capsys)
    assert code == 0
    assert "c_r" in out and "ball  floor" in out
    data = np.load(tmp_path / "result.npz")
    assert data["pos"].shape[1:] == (2, 3)
    assert data["t"][-1] == pytest.approx(0.7)
    assert list(data["body_names"]) == ["floor", "ball"]


def test_run_errors_are_one_line_exit_2(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = _run(["run", "scenes/drop_ball.toml", "--set", "law=nope", "--out",
                           str(tmp_path / "x")], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("mbplugin: error: scenes/drop_ball.toml: "
                                                   "contact.law: unknown law 'nope'")
    assert not (tmp_path / "x").exists()  # nothing written
    bad = tmp_path / "bad.toml"
    bad.write_text('[scene]\nduration = "long"\n[[bodies]]\nname = "b"\nshape = "sphere"\n')
    code, _, err = _run(["run", str(bad)], capsys)
    assert code == 2
    assert "scene.duration: expected a number" in err


def test_console_script_runs() -> None:
    """The installed entry point runs the README's job."""
    res = subprocess.run([sys.executable, "-m", "mbplugin.cli", "run", "--help"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0 and "--set" in res.stdout
