"""Scene files: validation with the TOML path of every problem, parameters and overrides."""

from __future__ import annotations

import copy

import pytest

from mbplugin.errors import ParameterError
from mbplugin.scene import SceneError, apply_overrides, build_scene, load_scene, parse_value

BASE = {
    "scene": {"duration": 0.1},
    "parameters": {"r": 0.01, "h": 0.05, "law": "hertz"},
    "bodies": [
        {"name": "floor", "shape": "plane", "fixed": True},
        {"name": "ball", "shape": "sphere", "radius": "$r", "mass": 0.1,
         "position": [0.0, 0.0, "= r + h"]},
    ],
    "contact": {"law": "$law", "params": {"k": 1e9}},
}


def _doc(**changes: object) -> dict:
    doc = copy.deepcopy(BASE)
    for path, value in changes.items():
        node: object = doc
        parts = path.split("__")
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]  # type: ignore[index]
        if isinstance(node, list):
            node[int(parts[-1])] = value
        else:
            node[parts[-1]] = value  # type: ignore[index]
    return doc


def test_valid_scene_resolves_parameters_and_expressions() -> None:
    scene = build_scene(_doc(), "s.toml")
    b = scene.world.bodies
    assert b.names == ["floor", "ball"]
    assert b.pos[1, 2] == pytest.approx(0.06)
    assert scene.world.contacts.laws[0].name == "hertz"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"bodys": []}, "s.toml: unknown top-level key 'bodys' (did you mean 'bodies'?)"),
        ({"bodies__1__radus": 0.01}, "s.toml: bodies[1]: unknown key 'radus' (did you mean "
                                     "'radius'?)"),
        ({"bodies__1__radius": "abc"}, "s.toml: bodies[1].radius: expected a number, got str"),
        ({"bodies__1__position": [0.0, 1.0]}, "s.toml: bodies[1].position: expected a vec3"),
        ({"bodies__1__fixed": "yes"}, "s.toml: bodies[1].fixed: expected a boolean"),
        ({"world": {"gravity": [0.0, 0.0, float("nan")]}},
         "s.toml: world.gravity: expected a vec3, got a list of 3 items [0.0, 0.0, nan] "
         "(nan is not a finite number)"),
        ({"bodies__1__semi_axes": [0.01] * 3}, "semi_axes: belongs to an ellipsoid, not a sphere"),
        ({"scene": {"name": "x"}}, "s.toml: scene: missing field 'duration'"),
        ({"bodies__1__shape": "cone"}, "s.toml: bodies[1].shape: 'cone' is not one of"),
        ({"bodies__1__mass": -1.0}, "s.toml: bodies[1].mass: -1 kg is outside its allowed "
                                    "range (0, inf)"),
        ({"bodies__0__fixed": False}, "a plane is a half-space without mass"),
        ({"contact__law": "hertzz"}, "s.toml: contact.law: unknown law 'hertzz'"),
        ({"contact__params": {"k": -1.0}}, "s.toml: contact.params: hertz: parameter 'k' = -1"),
        ({"bodies__1__radius": "$rr"}, "s.toml: bodies[1].radius: unknown parameter 'rr'"),
        ({"bodies__1__position": [0.0, 0.0, "= r + hh"]}, "unknown name 'hh' in '= r + hh'"),
        ({"bodies__1__position": [0.0, 0.0, "= __import__('os')"]}, "only numbers, parameters"),
        ({"integrator": {"method": "euler"}}, "s.toml: integrator: integrator.method = 'euler' "
                                              "is not one of"),
        ({"integrator": {"rtol": "tight"}}, "s.toml: integrator.rtol: expected a number"),
        ({"loads": [{"body": "rock", "force": [0.0, 0.0, 1.0]}]}, "s.toml: loads[0].body: "
                                                                  "unknown body 'rock'"),
        ({"loads": [{"force": [0.0, 0.0, 1.0]}]}, "s.toml: loads[0]: missing field 'body'"),
        ({"pairs": [{"bodies": ["ball", "moon"], "law": "hertz"}]}, "pairs[0].bodies: unknown "
                                                                   "body 'moon'"),
        ({"output": {"format": "xlsx"}}, "s.toml: output.format: 'xlsx' is not one of"),
        ({"materials": {"steel": {"E": 2e11}}}, "s.toml: materials.steel: missing field 'nu'"),
    ],
)
def test_invalid_scenes_name_the_toml_path(changes: dict, message: str) -> None:
    doc = _doc(**{k: v for k, v in changes.items() if "__" in k})
    for k, v in changes.items():
        if "__" not in k:
            doc[k] = v
    with pytest.raises(SceneError) as err:
        build_scene(doc, "s.toml")
    assert message in str(err.value)
    assert isinstance(err.value, ParameterError)
    assert "\n" not in str(err.value)


def test_overrides_parameters_and_paths() -> None:
    doc = apply_overrides(BASE, ["law=hooke", "integrator.rtol=1e-7", "bodies.1.mass=0.2"])
    assert doc["parameters"]["law"] == "hooke"
    assert doc["integrator"]["rtol"] == 1e-7
    assert doc["bodies"][1]["mass"] == 0.2
    assert BASE["parameters"]["law"] == "hertz"  # the input is not modified
    assert parse_value("[0, 0, -10]") == [0, 0, -10]
    assert parse_value("flores") == "flores"
    assert parse_value("1e-3") == 1e-3
    with pytest.raises(SceneError, match="expected KEY=VALUE"):
        apply_overrides(BASE, ["law"])
    with pytest.raises(SceneError, match="no 'nothing' in the scene"):
        apply_overrides(BASE, ["nothing.deeper=1"])
    with pytest.raises(SceneError, match=r"'bodies\.7' is not an index"):
        apply_overrides(BASE, ["bodies.7.mass=1"])
    # a misspelt parameter names the parameter it resembles, not an unrelated top-level key
    with pytest.raises(SceneError, match=r"--set hh: not a parameter .*did you mean 'h'"):
        apply_overrides(BASE, ["hh=0.1"])


def test_values_with_units_are_refused_naming_the_parameter() -> None:
    """Scene values are SI numbers: a parameter written with its unit ('12.7 mm') and used in an
    expression is named as the culprit (was: Python's "can only concatenate str")."""
    doc = _doc(parameters={"r": "12.7 mm", "h": 0.05, "law": "hertz"})
    with pytest.raises(SceneError, match=r"bodies\[1\]\.position\[2\]: parameter 'r' = "
                                         r"'12\.7 mm' .* is not a number .*without units"):
        build_scene(doc, "s.toml")


def test_shipped_scenes_load() -> None:
    """Every scene in scenes/ is valid (built, not run)."""
    from pathlib import Path

    names = sorted(p.name for p in Path("scenes").glob("*.toml"))
    assert {"drop_ball.toml", "azad_drop.toml", "stacked_balls.toml", "stack_n.toml",
            "newtons_cradle.toml", "two_balls_pipe.toml", "pile.toml"} <= set(names)
    for name in names:
        scene = load_scene(Path("scenes") / name, ["nx=3", "ny=3", "nz=2"]
                           if name == "pile.toml" else None)
        assert scene.duration > 0


def test_unreadable_and_invalid_toml(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SceneError, match="cannot read the scene file"):
        load_scene(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[scene\nduration = 1\n")
    with pytest.raises(SceneError, match="not valid TOML"):
        load_scene(bad)
    # a broken header names its own line, not the table before it (was "scene: not valid TOML")
    bad.write_text("[scene]\nduration = 1\n[world\n")
    with pytest.raises(SceneError, match=r"line 3 '\[world': not valid TOML") as err:
        load_scene(bad)
    assert "scene:" not in str(err.value)
