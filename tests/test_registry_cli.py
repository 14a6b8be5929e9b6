"""The law registry (including third-party laws through entry points) and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mbplugin.impact import RESULT_KEYS, impact
from mbplugin.laws import (
    ENTRY_POINT_GROUP,
    Law,
    Param,
    get_law_class,
    law_names,
    make_law,
    register,
    reload_entry_points,
)

ISSUE_LAWS = (
    "hooke hertz kelvin_voigt hunt_crossley lee_wang herbert_mcwhannell lankarani_nikravesh "
    "gonthier zhiying_qishao gharib_hurmuzlu flores hu_guo zhang2020 safaeifar_farshidianfar "
    "zhang2022 azad_featherstone bouc_wen_hunt_crossley bouc_wen_maxwell"
).split()


def test_every_foundation_law_is_registered_and_documented():
    names = set(law_names())
    for name in ISSUE_LAWS:
        assert name in names
        d = get_law_class(name).describe()
        assert d["source"] and d["equation"] and d["cr_range"] and d["tension"]
        assert any(ch.isdigit() for ch in d["source"])  # a year / equation number is cited
    assert get_law_class("ye") is get_law_class("flores")


def test_parameter_names_are_shared():
    """k, n, cr, lam, m, q, c and the Bouc-Wen names mean the same thing in every law."""
    expect = {"k": ("stiffness",), "cr": ("restitution",), "lam": ("damping", "dashpot"),
              "q": ("velocity exponent",)}
    for cls in (get_law_class(n) for n in law_names()):
        for p in cls.params:
            if p.name in expect:
                assert any(w in p.doc.lower() for w in expect[p.name]), (cls.name, p.name, p.doc)


_PLUGIN = '''
import numpy as np
from mbplugin.laws import Law, Param

class LinearSpring(Law):
    """A third-party law in pure NumPy: F = s * delta."""
    name = "test_linear_spring"
    title = "test spring"
    source = "test fixture (2026)"
    equation = "F = s delta"
    params = (Param("s", "spring stiffness", "N/m", lo=0.0, lo_open=True),)
    kernel = None

    def coefficients(self, v_in, m_eff, r_eff):
        return np.full((np.size(v_in), 1), self.s)

    def force_raw(self, delta, ddelta, coef, state):
        return np.asarray(coef)[:, 0] * np.asarray(delta)

    def timescale(self, m_eff, v0):
        return np.sqrt(np.asarray(m_eff) / self.s)
'''


def test_third_party_law_through_entry_points(tmp_path: Path, monkeypatch):
    """A throwaway distribution (package + .dist-info with an entry_points.txt) on sys.path is
    found through the ``mbplugin.laws`` entry-point group, and its law runs in the analyser:
    a linear spring rebounds elastically after half a period pi sqrt(m/s)."""
    pkg = tmp_path / "mbp_plugin_fixture"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(_PLUGIN))
    dist = tmp_path / "mbp_plugin_fixture-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mbp-plugin-fixture\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ntest_linear_spring = mbp_plugin_fixture:LinearSpring\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reload_entry_points()
    assert "test_linear_spring" in law_names()
    law = make_law("test_linear_spring", s=4e4)
    r = impact(law, 1.0, 0.5)
    assert r.cr_out == pytest.approx(1.0, abs=1e-6)
    assert r.duration == pytest.approx(math.pi * math.sqrt(1.0 / 4e4), rel=1e-6)
    cli = subprocess.run([sys.executable, "-m", "mbplugin.cli", "laws", "--json"],
                         capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert cli.returncode == 0, cli.stderr
    assert "test_linear_spring" in {d["name"] for d in json.loads(cli.stdout)}


def test_register_rejects_duplicates_and_non_laws():
    with pytest.raises(ValueError):
        register(int)  # type: ignore[arg-type]

    class Dup(Law):
        name = "hertz"
        params = (Param("k", "stiffness", "N/m", lo=0.0),)

    with pytest.raises(ValueError, match="already taken"):
        register(Dup)


def test_cli_impact_json_has_exactly_the_keys():
    proc = subprocess.run(
        [sys.executable, "-m", "mbplugin.cli", "impact", "--law", "hunt_crossley", "-p", "k=1e9",
         "-p", "n=1.5", "-p", "cr=0.5", "--mass", "1.0", "--v0", "1.0", "--json"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert tuple(out) == RESULT_KEYS
    # Hunt-Crossley at chi = 0.75: the exact relation, solved independently here
    from scipy.optimize import brentq

    chi = 0.75
    lhs = chi - math.log1p(chi)
    c = brentq(lambda x: -chi * x - math.log1p(-chi * x) - lhs, 0, 1, xtol=1e-14)
    assert out["cr_out"] == pytest.approx(c, abs=1e-6)
    assert out["captured"] is False


def test_cli_press_and_mass2_and_plot(tmp_path: Path):
    plot = tmp_path / "loop.png"
    proc = subprocess.run(
        [sys.executable, "-m", "mbplugin.cli", "impact", "--law", "hertz", "-p", "k=1e9",
         "--mass", "2.0", "--mass2", "2.0", "--v0", "1.0", "--json", "--plot", str(plot)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # two 2 kg bodies = 1 kg on a wall: Hertz closed form
    assert out["delta_max"] == pytest.approx((5 * 1.0 / (4 * 1e9)) ** 0.4, rel=1e-8)
    assert plot.stat().st_size > 1000
    captured = subprocess.run(
        [sys.executable, "-m", "mbplugin.cli", "impact", "--law", "hunt_crossley", "-p", "k=1e6",
         "-p", "cr=0.2", "--mass", "1.0", "--v0", "0.01", "--press", "50", "--json"],
        capture_output=True, text=True, timeout=300)
    assert json.loads(captured.stdout)["captured"] is True
    assert json.loads(captured.stdout)["duration"] is None


def test_cli_laws_lists_everything():
    proc = subprocess.run([sys.executable, "-m", "mbplugin.cli", "laws", "--json"],
                          capture_output=True, text=True, timeout=300)
    described = json.loads(proc.stdout)
    assert {d["name"] for d in described} >= set(ISSUE_LAWS)
    for d in described:
        assert d["params"] and d["cr_range"] and d["source"]
    text = subprocess.run([sys.executable, "-m", "mbplugin.cli", "laws", "bouc_wen_maxwell"],
                          capture_output=True, text=True, timeout=300).stdout
    assert "gamma" in text and "Milehins" in text


def test_cli_compare_main_job(tmp_path: Path):
    """The quick-start job: several laws at one prescribed c_r, a table and a loop plot."""
    plot = tmp_path / "loops.png"
    proc = subprocess.run([sys.executable, "-m", "mbplugin.cli", "compare", "--cr", "0.5",
                           "--plot", str(plot), "--json"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert plot.stat().st_size > 1000
    # Hu-Guo and Gonthier coincide at c_r = 0.5 (both chi = 1.5); Flores is below the target
    assert res["gonthier"]["cr_out"] == pytest.approx(res["zhang2022"]["cr_out"], abs=1e-8)
    assert res["flores"]["cr_out"] < 0.5 < res["hunt_crossley"]["cr_out"]


def test_evaluate_convenience():
    law = make_law("hunt_crossley", k=1e9, cr=0.5)
    f = law.evaluate([1e-4, 2e-4], [0.5, -0.1], v_in=1.0)
    assert f == pytest.approx(1e9 * np.array([1e-4, 2e-4]) ** 1.5 * (1 + 0.75 * np.array(
        [0.5, -0.1])), rel=1e-12)


def test_docs_laws_md_is_generated_from_the_registry():
    """docs/laws.md is the registry's own description (regenerate with
    `mbplugin laws --markdown > docs/laws.md`)."""
    from mbplugin.cli.laws import laws_markdown
    from mbplugin.laws import law_classes

    committed = (Path(__file__).resolve().parents[1] / "docs" / "laws.md").read_text()
    builtin = [c for c in law_classes() if c.__module__.startswith("mbplugin.")]
    assert committed == laws_markdown([c.describe() for c in builtin]) + "\n"
