"""Scene files with world.backend = "pybullet" through `mbplugin run`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mbplugin.cli import main
from mbplugin.impact import impact
from mbplugin.scene import load_scene


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_drop_ball_summary_has_the_engine_keys(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["run", "scenes/bullet_drop_ball.toml", "--set", "duration=0.5",
                         "--json", "--out", str(tmp_path)], capsys)
    assert code == 0
    ours = json.loads(out)
    code, out, _ = _run(["run", "scenes/drop_ball.toml", "--set", "duration=0.5", "--json",
                         "--out", str(tmp_path / "engine")], capsys)
    engine = json.loads(out)
    for key in ("steps", "events", "wall_time", "sim_time", "energy_drift", "bounces", "bodies",
                "records"):
        assert key in ours, key
    assert ours["backend"] == "pybullet"
    assert ours["sim_time"] == pytest.approx(0.5)
    assert (tmp_path / "summary.json").exists() and (tmp_path / "records.csv").exists()
    # the same law and ball: the bounce's c_r equals the standalone engine's
    assert len(ours["bounces"]) == len(engine["bounces"]) == 1
    assert ours["bounces"][0]["cr"] == pytest.approx(engine["bounces"][0]["cr"], abs=1e-3)


def test_stacked_balls_rebound_matches_engine(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Tennis ball on basketball: the tennis ball's rebound speed (relative to the basketball,
    over the basketball's impact speed) within 1 % of the standalone engine's."""
    res = {}
    for scene in ("bullet_stacked_balls", "stacked_balls"):
        code, out, _ = _run(["run", f"scenes/{scene}.toml", "--json", "--out",
                             str(tmp_path / scene)], capsys)
        assert code == 0
        b = {(x["body"], x["other"]): x for x in json.loads(out)["bounces"]}
        res[scene] = (b[("tennis", "basketball")]["v_out"], b[("basketball", "floor")]["v_in"])
    ours, engine = res["bullet_stacked_balls"], res["stacked_balls"]
    assert ours[0] == pytest.approx(engine[0], rel=0.01)
    assert ours[0] / ours[1] == pytest.approx(engine[0] / engine[1], rel=1e-3)
    # elastic (Hertz) contacts: the relative speed is reversed, 2 v_in (both balls at v_in)
    assert ours[0] / ours[1] == pytest.approx(2.0, rel=1e-3)


def test_bad_backend_and_unsupported_keys_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["run", "scenes/bullet_drop_ball.toml", "--set", "world.backend=ode",
                         "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and err.count("\n") == 1 and "world.backend" in err
    assert not (tmp_path / "x").exists()
    code, _, err = _run(["run", "scenes/bullet_drop_ball.toml", "--set", "host_dt=1.0",
                         "--out", str(tmp_path / "y")], capsys)
    assert code == 2 and "host_dt" in err


def test_recorded_trajectory_bounces_at_the_analysers_cr() -> None:
    """The scene's records are PyBullet's synced positions (the backend defers free bodies'
    corrections): the first bounce read from the recorded trajectory alone (the touching
    speeds of the last free-flight record before and the first after the contact, from
    v^2 + 2 g (z - R)) has the impact analyser's c_r for that impact speed with the weight
    pressing, and the impact speed is the free fall's sqrt(2 g h). (Records taken without a
    sync gave 0.683 against 0.663 here.)"""
    R, m, g, h = 0.0127, 0.066, 9.81, 0.5
    scene = load_scene("scenes/bullet_drop_ball.toml", {"cr": 0.5, "duration": 0.5})
    res = scene.run()
    z, v = res.pos[:, 1, 2], res.vel[:, 1, 2]  # bodies: floor, ball
    acc = np.diff(v) / np.diff(res.t)
    free = np.abs(acc + g) <= 1e-6 * g  # host steps of free flight
    before = int(np.argmin(free))  # the contact lies inside step [before, before + 1]
    after = before + int(np.argmax(free[before:]))
    assert before > 0 and after > before and free[after:].all()
    v_in = np.sqrt(v[before] ** 2 + 2 * g * (z[before] - R))
    v_out = np.sqrt(v[after] ** 2 + 2 * g * (z[after] - R))
    assert v_in == pytest.approx(np.sqrt(2 * g * h), rel=1e-9)
    assert v_out / v_in == pytest.approx(impact(scene.law, m, v_in, press=m * g).cr_out,
                                         abs=1e-6)


@pytest.mark.parametrize("scene", ["scenes/bullet_drop_ball.toml", "scenes/mujoco_drop_ball.toml"])
def test_a_host_scene_run_again_into_its_own_out_replaces_it(
        scene: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The documented rule for ``--out`` (docs/scenes.md): a directory that holds an earlier
    mbplugin run is reused. A host scene's run (records.csv + summary.json, no engine manifest)
    was refused as 'not empty' on its second run; a foreign file still refuses it."""
    for duration in (0.2, 0.3):
        code, _, err = _run(["run", scene, "--set", f"duration={duration}", "--out",
                             str(tmp_path)], capsys)
        assert code == 0, err
        summary = json.loads((tmp_path / "summary.json").read_text())
        assert summary["sim_time"] == pytest.approx(duration)  # this run's, not the first's
    (tmp_path / "notes.txt").write_text("mine")
    code, _, err = _run(["run", scene, "--set", "duration=0.2", "--out", str(tmp_path)], capsys)
    assert code == 2 and "not empty" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "notes.txt").read_text() == "mine"
