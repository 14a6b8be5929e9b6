"""Bad input raises a ValueError naming the parameter and its allowed range, before any
simulation; the CLI prints one line and exits with code 2."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from mbplugin.errors import ParameterError, UnknownLawError
from mbplugin.impact import ImpactBatch, impact
from mbplugin.laws import make_law

HC = {"k": 1e9, "cr": 0.5}


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"mass": 0.0, "v0": 1.0}, ("mass", "(0, inf)")),
    ({"mass": -1.0, "v0": 1.0}, ("mass", "(0, inf)")),
    ({"mass": 1.0, "v0": 0.0}, ("v0", "(0, inf)")),
    ({"mass": 1.0, "v0": -2.0}, ("v0", "(0, inf)")),
    ({"mass": math.nan, "v0": 1.0}, ("mass",)),
    ({"mass": math.inf, "v0": 1.0}, ("mass",)),
    ({"mass": 1.0, "v0": math.inf}, ("v0",)),
    ({"mass": 1.0, "v0": 1.0, "mass2": 0.0}, ("mass2", "(0, inf]")),
    ({"mass": 1.0, "v0": 1.0, "press": math.nan}, ("press", "finite")),
    ({"mass": 1.0, "v0": 1.0, "rtol": 1.0}, ("rtol", "[1e-13, 1e-3]")),
])
def test_impact_inputs(kwargs, words):
    mass = kwargs.pop("mass")
    v0 = kwargs.pop("v0")
    with pytest.raises(ValueError) as err:
        impact(make_law("hunt_crossley", **HC), mass, v0, **kwargs)
    for w in words:
        assert w in str(err.value)


@pytest.mark.parametrize(("name", "params", "words"), [
    ("hunt_crossley", {"k": 0.0, "cr": 0.5}, ("'k'", "(0, inf)")),
    ("hunt_crossley", {"k": -1e9, "cr": 0.5}, ("'k'", "(0, inf)")),
    ("hertz", {"k": math.nan}, ("'k'", "(0, inf)")),
    ("hertz", {"k": math.inf}, ("'k'",)),
    ("hunt_crossley", {"k": 1e9, "cr": 0.0}, ("'cr'", "(0, 1]")),
    ("hunt_crossley", {"k": 1e9, "cr": 1.2}, ("'cr'", "(0, 1]")),
    ("flores", {"k": 1e9, "cr": -0.3}, ("'cr'", "(0, 1]")),
    ("zhang2022", {"k": 1e9, "cr": math.nan}, ("'cr'",)),
    ("lankarani_nikravesh", {"k": 1e9, "cr": 0.5, "v_min": 0.0}, ("'v_min'", "(0, inf)")),
    ("bouc_wen_hunt_crossley", {"k": 1.0, "beta": 1.0, "gamma": 2.0}, ("'gamma'", "[-beta, beta]")),
    ("bouc_wen_maxwell", {"k": 1.0, "c": 1.0, "beta": 1.0, "gamma": -1.5}, ("'gamma'", "beta")),
    ("bouc_wen_hunt_crossley", {"k": 1.0, "alpha": 0.0}, ("'alpha'", "(0, 1)")),
    ("bouc_wen_hunt_crossley", {"k": 1.0, "alpha": 1.0}, ("'alpha'", "(0, 1)")),
    ("bouc_wen_maxwell", {"k": 1.0, "c": 0.0}, ("'c'", "(0, inf)")),
    ("bouc_wen_maxwell", {"k": 1.0, "c": -3.0}, ("'c'", "(0, inf)")),
    ("bouc_wen_maxwell", {"k": 1.0}, ("'c'", "missing")),
    ("bouc_wen_hunt_crossley", {"k": 1.0, "p": 0.5}, ("'p'", "[1, inf)")),
    ("bouc_wen_hunt_crossley", {"k": 1.0, "n": 0.5}, ("'n'", "[1, inf)")),
    ("zhang2022", {"k": 1e9, "cr": 0.5, "q": 0.0}, ("'q'", "(0, inf)")),
    ("zhang2022", {"k": 1e9, "cr": 0.5, "power": "imaginary"}, ("'power'", "signed")),
    ("kelvin_voigt", {"k": 1e6}, ("'c'", "'cr'")),
    ("kelvin_voigt", {"k": 1e6, "c": 1.0, "cr": 0.5}, ("'c'", "'cr'")),
    ("azad_featherstone", {"k": 1e10, "lam": 1e5, "lam_star": 1.0}, ("'lam'", "'lam_star'")),
    ("hunt_crossley", {"k": 1e9, "cr": 0.5, "stiffness": 3.0}, ("unknown parameter 'stiffness'",)),
    ("hunt_crossley", {"k": "stiff", "cr": 0.5}, ("'k'", "number")),
])
def test_law_parameters(name, params, words):
    with pytest.raises(ValueError) as err:
        make_law(name, **params)
    msg = str(err.value)
    assert name in msg
    for w in words:
        assert w in msg


def test_unknown_law_names_suggestions():
    with pytest.raises(UnknownLawError) as err:
        make_law("hunt_crosley", k=1.0)
    assert "hunt_crossley" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_law_needing_radius():
    law = make_law("azad_featherstone", k=1e10, lam_star=1e6)
    with pytest.raises(ParameterError, match="effective radius"):
        impact(law, 1.0, 1.0)
    with pytest.raises(ParameterError, match="radius"):
        impact(law, 1.0, 1.0, radius=-0.01)


def test_batch_inputs():
    with pytest.raises(ParameterError, match="v0"):
        ImpactBatch().add(make_law("hertz", k=1e9), mass=1.0, v0=np.array([1.0, np.nan]))
    with pytest.raises(ParameterError, match="length"):
        ImpactBatch().add(make_law("hunt_crossley", k=1e9, cr=np.array([0.2, 0.5, 0.7])),
                          mass=1.0, v0=np.ones(4))
    with pytest.raises(ParameterError, match="empty"):
        ImpactBatch().run()
    with pytest.raises(ValueError, match="'cr'"):
        make_law("hunt_crossley", k=1e9, cr=np.array([0.5, 1.5]))


def test_laws_are_immutable():
    law = make_law("hunt_crossley", **HC)
    with pytest.raises(AttributeError):
        law.cr = 0.1  # type: ignore[misc]
    assert law.replace(cr=0.2).cr == 0.2 and law.cr == 0.5


@pytest.mark.parametrize("argv", [
    ["impact", "--law", "hunt_crossley", "-p", "k=-1", "-p", "cr=0.5", "--mass", "1", "--v0", "1"],
    ["impact", "--law", "nosuchlaw", "--mass", "1", "--v0", "1"],
    ["impact", "--law", "hertz", "-p", "k=1e9", "--mass", "0", "--v0", "1"],
    ["impact", "--law", "hertz", "-p", "k=1e9", "--mass", "1", "--v0", "nan"],
    ["impact", "--law", "hertz", "-p", "k", "--mass", "1", "--v0", "1"],
    ["impact", "--law", "hertz", "-p", "k=1e9", "-p", "zz=3", "--mass", "1", "--v0", "1"],
    ["impact", "--mass", "1"],
    ["compare", "--cr", "1.5"],
    ["laws", "nosuchlaw"],
    ["nosuchcommand"],
])
def test_cli_one_line_exit_2(argv):
    proc = subprocess.run([sys.executable, "-m", "mbplugin.cli", *argv], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("mbplugin: error:")
    assert proc.stdout == ""
