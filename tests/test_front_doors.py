"""Every front door checks what the standalone engine checks (issue 20, part 3): scenes with
``backend = "pybullet"`` get the engine's checks and preflight, the scene loader is bounded and
names what it refuses, and a run says when its physics cannot be trusted.

Bad input: exit code 2, exactly one line on stderr naming the input, nothing written to --out.
Most cases call the CLI's ``main`` in this process (the console script is that function); the
cases about hangs, working directories and timing run ``mbplugin`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mbplugin.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "scenes"
BULLET = str(SCENES / "bullet_drop_ball.toml")
BULLET_STACK = str(SCENES / "bullet_stacked_balls.toml")
DROP = str(SCENES / "drop_ball.toml")
MUJOCO = str(SCENES / "mujoco_drop_ball.toml")
G = 9.81


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _refused(args: list[str], capsys: pytest.CaptureFixture[str], out_dir: Path,
             *words: str) -> str:
    """Run ``mbplugin run ARGS --out OUT_DIR``; assert exit 2, one stderr line holding every
    word, nothing written; returns the line."""
    code, _, err = _cli(["run", *args, "--out", str(out_dir), "--quiet"], capsys)
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert not out_dir.exists()
    return lines[0]


def _variant(tmp_path: Path, source: str, old: str, new: str, name: str = "v.toml") -> str:
    """A copy of a scene file with one line replaced."""
    text = Path(source).read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return str(path)


def _mbplugin(args: list[str], cwd: Path, timeout: float = 120.0
              ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "mbplugin.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


# -- 1. scenes with backend = "pybullet": the engine's checks and preflight --------------------
@pytest.mark.parametrize(("scene", "sets", "words"), [
    # a ball 5 mm into the floor (bounced with c_r 3.33 unwarned), 0.5 m below it (hung)
    (BULLET, ["height=-0.005"], ("'floor' and 'ball' overlap by 0.005 m", "initial state")),
    (BULLET, ["height=-0.5"], ("'floor' and 'ball' overlap by 0.5 m",)),
    # two overlapping balls
    (BULLET_STACK, ["gap=-0.01"], ("'basketball' and 'tennis' overlap by 0.01 m",)),
    # duplicate names lost a body's records; mass 0 / -1 made a body static
    (BULLET, ["bodies.1.name=floor"], ("bodies[1]", "'floor' is used twice")),
    (BULLET, ["mass=0"], ("bodies[1].mass", "(0, inf)")),
    (BULLET, ["mass=-1"], ("bodies[1].mass", "(0, inf)")),
    # tracebacks: unknown material, radius <= 0, duration = 1e9
    (BULLET, ["bodies.1.material=steel"], ("bodies[1].material", "unknown material 'steel'")),
    (BULLET, ["radius=0"], ("bodies[1]", "'radius' = 0 m", "(0, inf)")),
    (BULLET, ["radius=-1"], ("bodies[1]", "'radius' = -1 m")),
    (BULLET, ["duration=1e9"], ("world.host_dt", "scene.duration")),
    # duration < host_dt ran 0 steps and exited 0
    (BULLET, ["duration=0.001"], ("scene.duration = 0.001 s", "world.host_dt")),
])
def test_pybullet_scene_refuses_what_the_engine_refuses(scene, sets, words, tmp_path, capsys):
    args = [scene]
    for s in sets:
        args += ["--set", s]
    _refused(args, capsys, tmp_path / "out", *words)


@pytest.mark.parametrize(("old", "new", "words"), [
    ('radius = "$radius"\n', "\n", ("bodies[1]", "missing field 'radius'")),
    ('shape = "sphere"\nradius = "$radius"\n', 'shape = "box"\n',
     ("bodies[1]", "missing field 'half_extents'")),
], ids=["sphere-without-radius", "box-without-half-extents"])
def test_pybullet_scene_missing_size(old, new, words, tmp_path, capsys):
    _refused([_variant(tmp_path, BULLET, old, new)], capsys, tmp_path / "out", *words)


def test_pybullet_scene_accepts_a_ball_at_its_static_overlap(tmp_path, capsys):
    """A pre-load, as in the engine: the ball placed at Hertz's static overlap
    (m g / k)^(2/3) runs, lists the overlap and stays there (to 1 %)."""
    m, k = 0.066, 1e10
    d_static = (m * G / k) ** (2.0 / 3.0)
    code, out, _ = _cli(["run", BULLET, "--set", f"height={-d_static!r}", "--set",
                         "duration=0.25", "--set", "law=hertz", "--json", "--quiet",
                         "--out", str(tmp_path / "o")], capsys)
    assert code == 0
    summary = json.loads(out)
    (ov,) = summary["initial_overlaps"]
    assert ov["delta"] == pytest.approx(d_static, rel=1e-9)
    z = float(Path(tmp_path / "o" / "records.csv").read_text().splitlines()[-1].split(",")[6])
    assert 0.0127 - z == pytest.approx(d_static, rel=0.01)
    # the text report says so too
    code, out, _ = _cli(["run", BULLET, "--set", f"height={-d_static!r}", "--set",
                         "duration=0.02", "--quiet", "--out", str(tmp_path / "t")], capsys)
    assert code == 0 and "1 initial overlaps accepted as a pre-load" in out


# -- 3. the scene file loader ---------------------------------------------------------------------
def test_huge_power_is_refused_at_once(tmp_path):
    """``mass = "= 10**10**10"`` hung the loader (a 33-billion-bit integer)."""
    t0 = time.perf_counter()
    res = _mbplugin(["run", DROP, "--set", 'mass="= 10**10**10"', "--out",
                     str(tmp_path / "o")], tmp_path, timeout=60)
    assert time.perf_counter() - t0 < 60
    assert res.returncode == 2
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "parameters.mass" in lines[0] and "10**10**10" in lines[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("text", "words"), [
    # deep expressions gave RecursionError / MemoryError tracebacks
    ('[scene]\nduration = "= ' + "(" * 5000 + "1" + ")" * 5000 + '"\n',
     ("scene.duration", "characters long")),
    ('[scene]\nduration = "= ' + "1+" * 400 + '1"\n', ("scene.duration", "nested more than")),
    ('[scene]\nduration = "= ' + "1+" * 100000 + '1"\n', ("scene.duration",)),
    # deeply nested TOML
    ("[scene]\nduration = 1\n[parameters]\nx = " + "[" * 100000 + "]" * 100000 + "\n",
     ("nested too deeply",)),
    ("[scene]\nduration = 1\n[parameters]\nx = " + "[" * 200 + "]" * 200 + "\n",
     ("nested more than",)),
    # a bad number named no key
    ("[scene]\nduration = 1\n[parameters]\nmass = 0.06.6\n[[bodies]]\nname = 'a'\n",
     ("parameters.mass", "'0.06.6'", "line 4")),
    ("[scene]\nduration = 1\n[[bodies]]\nname = 'a'\n[[bodies]]\nname = 'b'\nmass = 1e\n",
     ("bodies[1].mass", "'1e'")),
], ids=["long-expression", "deep-expression", "huge-expression", "deep-toml", "nested-toml",
        "bad-number", "bad-number-in-array-table"])
def test_scene_file_refused_with_its_key(text, words, tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    line = _refused([str(path)], capsys, tmp_path / "out", str(path), *words)
    assert len(line) < 400  # one readable line, not the whole expression


@pytest.mark.parametrize(("data", "words"), [
    ('[scene]\nduration = 1\ndescription = "caf\u00e9"\n'.encode("latin-1"),
     ("not UTF-8", "byte 0xe9 at line 3")),
    (bytes(range(256)), ("binary file",)),
], ids=["latin-1", "binary"])
def test_non_utf8_scene_files(data, words, tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_bytes(data)
    _refused([str(path)], capsys, tmp_path / "out", str(path), *words)


@pytest.mark.parametrize("name", ["../escaped", "ABSOLUTE", "a" * 300],
                         ids=["parent", "absolute", "300-characters"])
def test_scene_name_never_decides_where_files_go(name, tmp_path):
    """Without --out the files go to ./out/<name>: a name like ``../x`` or an absolute path
    wrote outside ./out; a name over 255 characters crashed."""
    work = tmp_path / "work"
    work.mkdir()
    if name == "ABSOLUTE":
        name = str(tmp_path / "absolute")
    res = _mbplugin(["run", DROP, "--set", "duration=0.02", "--set", f"scene.name={name!r}",
                     "--quiet"], work)
    assert res.returncode == 0, res.stderr
    made = list((work / "out").iterdir())
    assert len(made) == 1 and (made[0] / "summary.json").exists()
    assert sorted(p.name for p in work.iterdir()) == ["out"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # nothing beside ./work
    assert len(made[0].name) <= 100 and "/" not in made[0].name


# -- 4. physics honesty ---------------------------------------------------------------------------
def test_a_ball_resting_60_s_is_not_flagged(tmp_path, capsys):
    """A ball placed touching the floor rests 60 s: no "creates energy" warning (it came from
    the onset missed at t = 0), --strict exits 0, and it rests at Hertz's static overlap
    (m g / k)^(2/3)."""
    code, out, _ = _cli(["run", DROP, "--set", "height=0", "--set", "duration=60",
                         "--strict", "--json", "--quiet", "--out", str(tmp_path / "o")], capsys)
    summary = json.loads(out)
    assert code == 0, summary.get("warnings")
    assert "warnings" not in summary
    assert summary["energy_rise"] == 0.0
    (rest,) = summary["final_contacts"]
    assert rest["delta"] == pytest.approx((0.066 * G / 1e10) ** (2.0 / 3.0), rel=1e-6)


@pytest.mark.parametrize(("scene", "sets"), [
    (DROP, ["bodies.1.velocity=[0, 0, -1e5]", "height=0.001", "duration=0.01"]),  # sank 77 R
    (DROP, ["mass=1e300", "duration=0.5"]),  # passed through the floor
    (BULLET, ["mass=1e300", "duration=0.5"]),
    # in a host the impact passes within one host step (the overlaps read at the steps' ends
    # never show it): the pair's fastest impact through the exact analyser does
    (BULLET, ["bodies.1.velocity=[0, 0, -1e5]", "duration=0.05"]),
    (MUJOCO, ["bodies.1.velocity=[0, 0, -1e5]", "duration=0.05"]),
])
def test_overlap_beyond_the_body_is_warned(scene, sets, tmp_path, capsys):
    args = ["run", scene, "--strict", "--json", "--quiet", "--out", str(tmp_path / "o")]
    for s in sets:
        args += ["--set", s]
    code, out, _ = _cli(args, capsys)
    summary = json.loads(out)
    assert code == 3
    (w,) = [w for w in summary["warnings"] if "times the size of the smaller body" in w]
    # the smaller body is the ball (the floor is a half-space): its size is its radius
    assert "'floor' and 'ball'" in w and "(0.0127 m)" in w
    assert float(w.split("m, ")[1].split(" times")[0]) > 1.0


def test_a_million_body_grid_says_its_estimate_first(tmp_path):
    """A 1e6-body grid worked silently for minutes before a refusal: it says its estimate on
    stderr before building (the process is stopped once it has)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mbplugin.cli", "run", str(SCENES / "pile.toml"), "--set",
         "nx=100", "--set", "ny=100", "--set", "nz=100", "--out", str(tmp_path / "o")],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    line = ""
    try:
        for _ in range(5):  # the first lines on stderr (other notices may come first)
            line = proc.stderr.readline() if proc.stderr is not None else ""
            if "bodies" in line or not line:
                break
    finally:
        proc.kill()
        proc.wait()
    assert "1,000,005 bodies" in line and "min" in line, line
    assert not (tmp_path / "o").exists()
