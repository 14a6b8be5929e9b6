"""The engine never hangs, never creates energy silently, never loses a finished run (issue 10).

One test per defect of the issue, each asserting the outcome: an error naming the problem
before anything runs, or the physics (energy balance including the initial stored energy,
mechanical energy that never rises with dissipative laws, c_r within [0, 1]).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from mbplugin.cli import main
from mbplugin.dynamics.preflight import InitialOverlapError, RunTooLargeError
from mbplugin.dynamics.simulation import SimulationWarning
from mbplugin.errors import ParameterError
from mbplugin.scene import SceneError, build_scene, load_scene

G = 9.81


def _ball_doc(z: float, law: dict, method: str = "adaptive", dt: float | None = None,
              duration: float = 0.2, radius: float = 0.01, mass: float = 0.01,
              **output: object) -> dict:
    integ: dict = {"method": method}
    if dt is not None:
        integ["dt"] = dt
    if method == "adaptive":
        integ.update(rtol=1e-10, solver="DOP853")
    return {
        "scene": {"duration": duration},
        "integrator": integ,
        "output": {"contacts": False, **output},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": radius, "mass": mass,
             "position": [0.0, 0.0, z]},
        ],
        "contact": law,
    }


def _quiet_run(scene):
    """A run expected to be right: a SimulationWarning fails the test (pyproject's
    filterwarnings makes it an error)."""
    return scene.run()


# -- 1. deep initial overlap: no hang -------------------------------------------------------------
def test_deep_initial_overlap_is_an_error_within_seconds() -> None:
    """A sphere 1 m below the floor (k = 1e9, adaptive) used to stall the Radau loop for
    minutes: now an error before any step, naming the bodies and the overlap."""
    law = {"law": "hunt_crossley", "params": {"k": 1e9, "cr": 0.8}}
    build_scene(_ball_doc(0.02, law, duration=1e-3)).run()  # compiled kernels loaded: not timed
    doc = _ball_doc(-1.0, law)
    t0 = time.perf_counter()
    with pytest.raises(InitialOverlapError, match=r"'floor' and 'ball' overlap by 1\.01 m"):
        build_scene(doc).run()
    assert time.perf_counter() - t0 < 10.0


# -- 2. initial overlaps: rejected, or a pre-load counted in the balance --------------------------
def test_half_overlapping_spheres_are_rejected(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    scene = tmp_path / "two.toml"
    scene.write_text("""
[scene]
duration = 0.1
[world]
gravity = [0.0, 0.0, 0.0]
[[bodies]]
name = "a"
shape = "sphere"
radius = 0.01
mass = 0.01
[[bodies]]
name = "b"
shape = "sphere"
radius = 0.01
mass = 0.01
position = [0.01, 0.0, 0.0]
[contact]
law = "hertz"
params = { k = 1e9 }
""")
    out = tmp_path / "out"
    assert main(["run", str(scene), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "'a' and 'b' overlap by 0.01 m" in err and "J" in err
    assert not out.exists()  # nothing written: the check comes before the run


@pytest.mark.parametrize("depth", [5e-3, 2e-2, 0.1])
def test_ball_sunk_into_the_floor_is_rejected(depth: float) -> None:
    doc = _ball_doc(0.01 - depth, {"law": "hertz", "params": {"k": 1e9}})
    with pytest.raises(InitialOverlapError, match=f"overlap by {depth:.4g} m"):
        build_scene(doc).run()


def test_preload_energy_is_in_the_balance_elastic() -> None:
    """A Hertz ball placed pressed into the floor with 1.5 times its weight (an accepted
    pre-load) starts with the stored energy k delta0^2.5/2.5 (Hertz's potential); with it the
    energy balance closes to 1e-6 and an elastic contact dissipates nothing."""
    k, m, r = 1e8, 0.01, 0.01
    delta0 = (1.5 * m * G / k) ** (2.0 / 3.0)
    doc = _ball_doc(r - delta0, {"law": "hertz", "params": {"k": k}}, mass=m, duration=0.05)
    res = build_scene(doc).run()
    assert res.initial_overlaps and res.initial_overlaps[0]["accepted"]
    e = res.energy
    assert e["stored"][0] == pytest.approx(k * delta0**2.5 / 2.5, rel=1e-9)
    assert res.energy_drift < 1e-6
    assert np.max(np.abs(e["dissipated"])) < 1e-6 * res.energy_scale
    assert res.summary()["energy_initial"]["stored"] > 0


def test_preload_energy_never_rises_dissipative() -> None:
    k, m, r = 1e8, 0.01, 0.01
    delta0 = (1.9 * m * G / k) ** (2.0 / 3.0)
    doc = _ball_doc(r - delta0, {"law": "hunt_crossley", "params": {"k": k, "cr": 0.5}},
                    mass=m, duration=0.05)
    res = build_scene(doc).run()
    e = res.energy
    mech = e["kinetic"] + e["potential"] + e["stored"]
    assert np.all(np.diff(mech) <= 1e-9 * res.energy_scale)
    assert np.min(e["dissipated"]) >= -1e-9 * res.energy_scale
    assert res.energy_drift < 1e-6


# -- 3. unwritable --out: checked before the run --------------------------------------------------
def test_unwritable_out_fails_before_the_run(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    t0 = time.perf_counter()
    # a 1000 s run would take minutes: the error must come first
    code = main(["run", "scenes/drop_ball.toml", "--set", "duration=1000", "--quiet",
                 "--out", str(blocker / "sub")])
    assert code == 2 and time.perf_counter() - t0 < 20.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "cannot create" in err


def test_foreign_non_empty_out_is_refused(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "thesis.tex").write_text("precious")
    code = main(["run", "scenes/drop_ball.toml", "--set", "duration=0.1", "--quiet",
                 "--out", str(tmp_path)])
    assert code == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "thesis.tex").read_text() == "precious"


# -- 4. the step advisor --------------------------------------------------------------------------
def test_advisor_warns_hertz_rk4_and_reports_advice(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    """Hertz + RK4 at dt = 5e-5 s: two steps per steel contact; c_r came out 1.556 silently.
    Now the summary has step_advice and a warning, printed once (no Python warning line)."""
    code = main(["run", "scenes/drop_ball.toml", "--set", "law=hertz", "--set",
                 "integrator.method=rk4", "--set", "integrator.dt=5e-5", "--set",
                 "duration=0.35", "--out", str(tmp_path / "o"), "--quiet", "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    s = json.loads(out)
    adv = s["step_advice"]
    assert adv["recommended_dt"] < 5e-5
    assert len(s["warnings"]) >= 1 and "5e-05" in s["warnings"][0]
    assert "Warning" not in err


def test_advisor_sees_unrecorded_steps_and_warns_at_its_own_limit() -> None:
    law = {"law": "hertz", "params": {"k": 1e7}}
    base = _ball_doc(0.01 + 0.005, law, method="symplectic_euler", dt=1e-5, duration=0.04)
    every1 = _quiet_run(build_scene(base))
    rec = every1.advice["recommended_dt"]
    sparse = _quiet_run(build_scene(_ball_doc(0.015, law, method="symplectic_euler", dt=1e-5,
                                              duration=0.04, record_every=10)))
    # the same advice whether or not the contact's steps were recorded
    assert sparse.advice["h_stable_min"] == pytest.approx(every1.advice["h_stable_min"],
                                                          rel=1e-3)
    below = build_scene(_ball_doc(0.015, law, method="symplectic_euler", dt=0.9 * rec,
                                  duration=0.04))
    above = build_scene(_ball_doc(0.015, law, method="symplectic_euler", dt=1.2 * rec,
                                  duration=0.04))
    # below the recommendation: no step warning; symplectic Euler at h w ~ 0.9 still reads an
    # energy rise of ~10 % (its energies mix time levels: an O(h w) error), which is flagged
    with pytest.warns(SimulationWarning, match="creates energy"):
        rb = below.run()
    with pytest.warns(SimulationWarning):  # above the recommendation: expected
        ra = above.run()
    assert not [w for w in rb.warnings if "recommendation" in w]
    assert [w for w in ra.warnings if "recommendation" in w]  # at 1.2x, not only above 2x


def test_pile_scene_runs_within_the_advisor_and_loses_energy() -> None:
    """The shipped pile (a small version: 3x3x2 balls, 40 ms) runs at or below the advisor's
    step and its mechanical energy never rises (frictional, damped contacts only dissipate).
    The N = 1e3 case is in benchmarks/bench_pile_energy.py (BENCHMARKS.md)."""
    res = _quiet_run(load_scene("scenes/pile.toml", ["nx=3", "ny=3", "nz=2",
                                                     "duration=0.04",
                                                     "output.record_every=10"]))
    adv = res.advice
    assert adv["dt"] <= adv["recommended_dt"]
    assert not res.diverged
    e = res.energy
    mech = e["kinetic"] + e["potential"] + e["stored"]
    # semi-implicit Euler's energy error oscillates by O(dt) within a contact; beyond that the
    # mechanical energy only decreases
    assert np.all(np.diff(mech) <= 1e-3 * res.energy_scale)
    assert res.energy_rise <= 1e-3


# -- 5. resting contact under fixed steps ---------------------------------------------------------
def test_resting_ball_fixed_step_no_chatter_bounces_and_honest_dissipation() -> None:
    """A ball released touching the floor (no approach speed) under semi-implicit Euler with a
    speed-scaled damping law: its contact is not a bounce, and the dissipated energy never
    exceeds the energy the ball lost."""
    doc = _ball_doc(0.01, {"law": "lankarani_nikravesh", "params": {"k": 1e7, "cr": 0.5}},
                    method="symplectic_euler", dt=5e-5, duration=0.3)
    res = _quiet_run(build_scene(doc))
    assert res.bounces == []
    e = res.energy
    mech = e["kinetic"] + e["potential"] + e["stored"]
    lost = mech[0] - mech
    assert np.all(e["dissipated"] <= lost + 0.05 * max(res.energy_scale, 1e-12))
    assert len(json.dumps(res.summary(), default=float)) < 200_000


# -- 6. blow-up: honest drift, flagged, --strict --------------------------------------------------
def _unstable_doc() -> dict:
    m, k = 0.1, 1e5
    w = math.sqrt(k / m)
    d0 = m * G / k
    return {
        "scene": {"duration": 0.08},
        "integrator": {"method": "symplectic_euler", "dt": 2.4 / w},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True},
            {"name": "ball", "shape": "sphere", "radius": 0.01, "mass": m,
             "position": [0.0, 0.0, 0.01 - 1.001 * d0]},
        ],
        "contact": {"law": "hooke", "params": {"k": k}},
    }


def test_blow_up_drift_is_not_saturated_and_is_flagged(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """Semi-implicit Euler at 1.2x its stability limit (h w = 2.4 > 2) on a resting contact:
    the energy grows without bound. The drift says so (>> 1, not 1.0009) and the run is
    flagged diverging; --strict exits non-zero."""
    with pytest.warns(SimulationWarning):  # unstable on purpose: expected
        res = build_scene(_unstable_doc()).run()
    assert res.energy_drift > 10.0 and res.energy_rise > 10.0
    assert res.diverged
    assert any("creates energy" in w for w in res.warnings)
    assert all(0.0 <= b["cr"] <= 1.0 + 1e-9 or b["v_in"] > 0 for b in res.bounces)
    scene = tmp_path / "unstable.toml"
    scene.write_text(_to_toml(_unstable_doc()))
    code = main(["run", str(scene), "--quiet", "--strict", "--out", str(tmp_path / "o")])
    assert code == 3
    assert "warning:" in capsys.readouterr().out


def _to_toml(doc: dict) -> str:
    lines: list[str] = []

    def val(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        return repr(float(v)) if isinstance(v, float) else str(v)

    for key, table in doc.items():
        if isinstance(table, list):
            for item in table:
                lines.append(f"[[{key}]]")
                lines += [f"{k} = {val(v)}" for k, v in item.items()]
        else:
            lines.append(f"[{key}]")
            lines += [f"{k} = {val(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


# -- 7. contacts that start at rest ---------------------------------------------------------------
def test_cradle_touching_reports_contacts_at_rest_not_bounces() -> None:
    """Newton's cradle with the balls touching: the contacts between resting balls start
    without an approach speed (c_r 1e8, 6e17, nan before). They are contacts at rest, and every
    bounce left has c_r in [0, 1] (Hertz is elastic: energy conservation bounds v_out by the
    approach speed in a binary impact)."""
    from mbplugin.cli.run import moving_axis

    res = load_scene("scenes/newtons_cradle.toml", ["gap=0"]).run()
    assert moving_axis(res.pos) == 0  # the trajectory plot shows x, the row's axis
    assert len(res.contacts_at_rest) >= 2
    assert all("cr" not in c for c in res.contacts_at_rest)
    for b in res.bounces:
        assert 0.0 <= b["cr"] <= 1.0 + 1e-6
    assert res.summary()["contacts_at_rest_total"] == len(res.contacts_at_rest)


def test_bodies_released_touching_give_no_nan_bounce() -> None:
    """Two balls stacked touching on the floor (issue 8: stack_n printed a nan bounce)."""
    doc = {
        "scene": {"duration": 0.05},
        "integrator": {"method": "adaptive", "solver": "auto", "rtol": 1e-8},
        "output": {"contacts": False},
        "materials": {"steel": {"E": 2e11, "nu": 0.3, "density": 7800.0}},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True, "material": "steel"},
            {"name": "ball", "count": 2, "shape": "sphere", "radius": 0.01,
             "material": "steel", "position": [0.0, 0.0, 0.01], "spacing": [0.0, 0.0, 0.02]},
        ],
        "contact": {"law": "lankarani_nikravesh", "params": {"cr": 0.5}},
    }
    res = build_scene(doc).run()
    assert all(math.isfinite(b["cr"]) for b in res.bounces)
    s = res.summary()
    assert s["final_contacts_total"] == 2  # the stack rests on two contacts ...
    total = sum(c["force"] for c in s["final_contacts"] if "floor" in (c["a"], c["b"]))
    m = 7800.0 * 4.0 / 3.0 * math.pi * 0.01**3
    assert total == pytest.approx(2 * m * G, rel=1e-3)  # ... the floor carries both weights


# -- 8. unbounded work ----------------------------------------------------------------------------
def test_tiny_step_refused_with_numbers() -> None:
    doc = _ball_doc(0.1, {"law": "hertz", "params": {"k": 1e9}}, method="symplectic_euler",
                    dt=1e-12, duration=0.5)
    with pytest.raises(RunTooLargeError, match=r"(5e\+11|states)"):
        build_scene(doc).run()


def test_huge_grid_refused_before_allocating() -> None:
    doc = _ball_doc(0.1, {"law": "hertz", "params": {"k": 1e9}})
    doc["bodies"][1].update(grid=[1000, 1000, 1000], spacing=[0.03, 0.03, 0.03])
    t0 = time.perf_counter()
    with pytest.raises(SceneError, match=r"1e\+09 bodies need about .* available"):
        build_scene(doc)
    assert time.perf_counter() - t0 < 5.0


# -- 9. output hygiene ----------------------------------------------------------------------------
def test_output_modes_stale_files_and_capped_summary(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import mbplugin.dynamics.simulation as sim_mod

    old = os.umask(0o022)
    try:
        res = _quiet_run(load_scene("scenes/drop_ball.toml", ["duration=1.5"]))
        monkeypatch.setattr(sim_mod, "MAX_SUMMARY_ROWS", 2)
        out = tmp_path / "o"
        res.write(out, "csv")
        modes = {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()}
        assert set(modes.values()) == {0o644}, modes
        s = json.loads((out / "summary.json").read_text())
        assert len(s["bounces"]) == 2 and s["bounces_total"] == len(res.bounces) > 2
        rows = (out / "bounces.csv").read_text().splitlines()
        assert len(rows) == 1 + len(res.bounces) + len(res.contacts_at_rest)
        # the same directory again, another format: no stale CSV of the first run stays
        res.write(out, "npz")
        names = {p.name for p in out.iterdir()}
        assert names == {"result.npz", "bounces.csv", "summary.json"}
    finally:
        os.umask(old)


# -- usability ------------------------------------------------------------------------------------
def test_calibration_plugs_into_impact_and_scenes() -> None:
    """calibrate() returns a Calibration: impact() and scene documents take it as the law."""
    from mbplugin.impact import calibrate, impact
    from mbplugin.laws import make_law

    law = make_law("hunt_crossley", k=2.4144e10, n=1.5, cr=0.8892)
    exact = calibrate(law, target_cr=0.8892, v0=0.15, mass=0.54)
    assert impact(exact, mass=0.54, v0=0.15).cr_out == pytest.approx(0.8892, abs=1e-6)
    doc = _ball_doc(0.0127, {"law": exact}, radius=0.0127, mass=0.54, duration=0.01)
    doc["bodies"][1]["velocity"] = [0.0, 0.0, -0.15]
    doc["world"] = {"gravity": [0.0, 0.0, 0.0]}
    res = build_scene(doc).run()
    assert res.bounces[0]["cr"] == pytest.approx(0.8892, abs=1e-5)


def test_overrides_as_string_list_or_mapping() -> None:
    for ov in ("law=flores", ["law=flores"], {"law": "flores"}):
        assert load_scene("scenes/drop_ball.toml", ov).world.contacts.laws[0].name == "flores"
    with pytest.raises(ParameterError, match="KEY=VALUE"):
        load_scene("scenes/drop_ball.toml", ["flores"])


def test_capsule_and_hole_in_scene_files_bounce_elastically() -> None:
    """A capsule lying flat dropped on the floor and a sphere rattling in a spherical hole
    (a clearance joint), both Hertz: every bounce returns the impact speed (c_r = 1)."""
    cap = _ball_doc(0.1, {"law": "hertz", "params": {"k": 1e8}}, duration=0.2)
    cap["bodies"][1] = {"name": "rod", "shape": "capsule", "radius": 0.01, "half_length": 0.05,
                        "mass": 0.05, "rpy_deg": [90.0, 0.0, 0.0], "position": [0, 0, 0.03]}
    res = build_scene(cap).run()
    assert res.bounces and abs(res.bounces[0]["cr"] - 1.0) < 1e-5
    hole = {
        "scene": {"duration": 0.05},
        "world": {"gravity": [0.0, 0.0, 0.0]},
        "integrator": {"method": "adaptive", "solver": "DOP853", "rtol": 1e-10},
        "output": {"contacts": False},
        "bodies": [
            {"name": "bearing", "shape": "hole", "kind": "spherical", "radius": 0.011,
             "fixed": True},
            {"name": "pin", "shape": "sphere", "radius": 0.01, "mass": 0.02,
             "velocity": [0.1, 0.0, 0.0]},
        ],
        "contact": {"law": "hertz", "params": {"k": 1e8}},
    }
    res = build_scene(hole).run()
    assert len(res.bounces) >= 2
    assert all(abs(b["cr"] - 1.0) < 1e-5 for b in res.bounces)
    with pytest.raises(SceneError, match="half_length"):
        build_scene({**cap, "bodies": [cap["bodies"][0], {**cap["bodies"][1],
                                                          "shape": "sphere"}]})


def test_mesh_by_file_relative_to_the_scene(tmp_path: Path) -> None:
    """A box mesh read from a file next to the scene: its mass and inertia are the box's
    (m = rho a b c, I_zz = m (a^2 + b^2)/12) and it is a contact shape of the world."""
    import trimesh

    (tmp_path / "meshes").mkdir()
    trimesh.creation.box(extents=(0.04, 0.04, 0.02)).export(tmp_path / "meshes" / "brick.stl")
    scene = tmp_path / "brick.toml"
    scene.write_text("""
[scene]
duration = 0.6
[[bodies]]
name = "floor"
shape = "plane"
fixed = true
[[bodies]]
name = "brick"
shape = "mesh"
file = "meshes/brick.stl"
radius = 0.005
density = 2000.0
position = [0.0, 0.0, 0.015]
[contact]
law = "hunt_crossley"
params = { k = 1e7, cr = 0.3 }
""")
    world = load_scene(scene).world
    m = 2000.0 * 0.04 * 0.04 * 0.02
    assert world.bodies.mass[1] == pytest.approx(m, rel=1e-6)  # STL stores float32
    assert world.bodies.inertia[1][2, 2] == pytest.approx(m * (0.04**2 + 0.04**2) / 12,
                                                           rel=1e-6)
    assert world.contacts.model.n_shapes == 2
    with pytest.raises(SceneError, match="no mesh file"):
        load_scene(scene, ['bodies.1.file="nope.stl"'])


def test_laws_table_fits_the_terminal(capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["laws"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_quick_start_shows_hunt_crossley_bias_and_the_exact_law() -> None:
    """The quick start's Hunt-Crossley ball at target c_r 0.8 bounces at the c_r that the exact
    relation (Corral et al. 2021, Eq. 5.23) gives for chi = 3(1 - 0.8)/2, i.e. 0.833; the exact
    law (Zhang & Sharf 2004) returns the target."""
    from mbplugin.laws.hunt_crossley import exact_cr

    hc = load_scene("scenes/drop_ball.toml", ["duration=0.7"]).run()
    assert hc.bounces[0]["cr"] == pytest.approx(exact_cr(0.3), abs=2e-3)
    assert hc.bounces[0]["cr"] == pytest.approx(0.833, abs=2e-3)
    zs = load_scene("scenes/drop_ball.toml", ["duration=0.7", "law=zhang_sharf"]).run()
    assert zs.bounces[0]["cr"] == pytest.approx(0.8, abs=2e-3)
