"""Scene files with world.backend = "mujoco" through `mbplugin run`: the standalone engine's
summary keys, and bounces against outside references: the drop ball's c_r against the exact
impact analyser, its impact at the free-fall time and speed; the tennis ball on a basketball
with elastic (Hertz) contacts: the floor bounce's c_r = 1 and the tennis ball leaving the
basketball at twice their approach speed (an elastic binary impact reverses the relative
velocity)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mbplugin.cli import main
from mbplugin.impact import impact
from mbplugin.laws import make_law

G = 9.81

#: the standalone engine's summary keys, which a host backend's run gives too
KEYS = {"steps", "events", "wall_time", "sim_time", "energy_drift", "bounces", "bodies",
        "records"}


def _summary(capsys: pytest.CaptureFixture[str], scene: str, out: Path,
             *sets: str) -> dict:
    """``mbplugin run scenes/SCENE.toml --json`` (exit 0) -> the summary."""
    args = ["run", f"scenes/{scene}.toml", "--json", "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_drop_ball_summary_and_bounce(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    ours = _summary(capsys, "mujoco_drop_ball", tmp_path, "duration=0.5")
    assert KEYS <= set(ours)
    assert ours["backend"] == "mujoco" and ours["host_dt"] == 0.002
    assert ours["sim_time"] == pytest.approx(0.5)
    assert (tmp_path / "summary.json").exists() and (tmp_path / "records.csv").exists()
    assert len(ours["bounces"]) == 1
    b = ours["bounces"][0]
    assert (b["body"], b["other"]) == ("ball", "floor")
    # the scene's parameters: hunt_crossley, k = 1e10, cr = 0.8, 66 g dropped 0.5 m
    h, m = 0.5, 0.066
    law = make_law("hunt_crossley", k=1e10, cr=0.8)
    assert b["cr"] == pytest.approx(impact(law, m, b["v_in"], press=m * G).cr_out, abs=1e-6)
    assert b["t"] == pytest.approx(math.sqrt(2 * h / G), abs=1e-6)  # exact free flight
    assert b["v_in"] == pytest.approx(math.sqrt(2 * G * h), rel=1e-6)


def test_stacked_balls_elastic_rebounds(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    b = {(x["body"], x["other"]): x
         for x in _summary(capsys, "mujoco_stacked_balls", tmp_path)["bounces"]}
    floor, balls = b[("basketball", "floor")], b[("tennis", "basketball")]
    assert floor["cr"] == pytest.approx(1.0, abs=1e-6)  # Hertz: elastic
    # both balls fall together: the tennis ball meets the rebounding basketball at v_in each
    assert balls["v_out"] / floor["v_in"] == pytest.approx(2.0, rel=1e-3)


@pytest.mark.parametrize(("setting", "word"), [
    ("host_dt=1.0", "host_dt"),
    ("bodies[1].shape=mesh", "shape"),
])
def test_bad_mujoco_scene_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          setting: str, word: str) -> None:
    code = main(["run", "scenes/mujoco_drop_ball.toml", "--set", setting, "--out",
                 str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and word in err
    assert not (tmp_path / "x").exists()
