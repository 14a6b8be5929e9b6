"""Scene files with world.backend = "mujoco" through `mbplugin run`: the standalone engine's
summary keys, and the same bounces as the engine on the same scene (drop ball, the tennis ball
on a basketball, whose elastic rebound has the closed form: relative speed 2 v_in)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mbplugin.cli import main

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


def test_drop_ball_summary_and_bounce_match_the_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours = _summary(capsys, "mujoco_drop_ball", tmp_path, "duration=0.5")
    engine = _summary(capsys, "drop_ball", tmp_path / "engine", "duration=0.5")
    assert KEYS <= set(ours)
    assert ours["backend"] == "mujoco" and ours["host_dt"] == 0.002
    assert ours["sim_time"] == pytest.approx(0.5)
    assert (tmp_path / "summary.json").exists() and (tmp_path / "records.csv").exists()
    assert len(ours["bounces"]) == len(engine["bounces"]) == 1
    b, e = ours["bounces"][0], engine["bounces"][0]
    assert (b["body"], b["other"]) == ("ball", "floor")
    assert b["cr"] == pytest.approx(e["cr"], abs=1e-6)
    assert b["t"] == pytest.approx(e["t"], abs=1e-6)  # exact free flight in MuJoCo


def test_stacked_balls_rebound_matches_the_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = {}
    for scene in ("mujoco_stacked_balls", "stacked_balls"):
        b = {(x["body"], x["other"]): x
             for x in _summary(capsys, scene, tmp_path / scene)["bounces"]}
        res[scene] = (b[("tennis", "basketball")]["v_out"], b[("basketball", "floor")]["v_in"])
    ours, engine = res["mujoco_stacked_balls"], res["stacked_balls"]
    assert ours[0] == pytest.approx(engine[0], rel=1e-6)
    # elastic (Hertz) contacts: the relative speed is reversed, 2 v_in (both balls at v_in)
    assert ours[0] / ours[1] == pytest.approx(2.0, rel=1e-3)


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
