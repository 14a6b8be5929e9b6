"""The validation suite (``mbplugin validate``) under pytest.

Every case of :mod:`mbplugin.validation` runs here in quick mode and must have no failing check.
The expected value of every check comes from a source paper (Zhang et al. 2022 Tables 1-3 and
Fig. 7 statements; Corral et al. 2021's claims; Milehins & Marghitu 2026 Tables 2-5, closed-form
limits and invariants; Azad & Featherstone 2014 Sect. III) or from a closed form. The tests below
the case runs check the framework: published numbers reach the table, missing laws are reported
as "not run" (never passed), exit codes, and the report files.
"""

from __future__ import annotations

import json
import math
import os
import stat

import numpy as np
import pytest

from mbplugin.cli import main
from mbplugin.validation import core
from mbplugin.validation.core import FAIL, NOT_RUN, PASS, Case, Context, run_validation
from mbplugin.validation.formulas import (
    goyal_cr,
    hc_chi_for_cr,
    hc_exact_cr,
    linear_fit_r2,
    power_elastic_duration_factor,
    thornton_cr,
)

CASE_IDS = [c.id for c in core.all_cases()]

#: Laws that some checks need; when registered, their checks must run (and pass).
OPTIONAL_LAWS = ("zhang_sharf", "khatiwada", "yu", "thornton", "goyal")


@pytest.fixture(scope="module")
def quick_report():
    """All cases once, quick mode, no figures."""
    return run_validation(quick=True, progress=None)


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_case_has_no_failing_check(quick_report, case_id):
    """Each case ran without raising and none of its checks failed."""
    res = next(r for r in quick_report.cases if r.id == case_id)
    assert res.error is None, res.error
    failed = [f"{c.quantity}: published {c.published}, ours {c.ours} ({c.tol})"
              for c in res.checks if c.status == FAIL]
    assert not failed, failed
    assert res.count(PASS) > 0


def test_every_paper_is_covered(quick_report):
    """Each source paper and the closed forms contribute passing checks."""
    papers = {r.paper for r in quick_report.cases if r.count(PASS)}
    assert papers == set(core.PAPERS)


@pytest.mark.parametrize("law", OPTIONAL_LAWS)
def test_registered_laws_are_not_skipped(quick_report, law):
    """A check that needs a law runs once the law is registered."""
    if not core.law_available(law):
        skipped = [c for r in quick_report.cases for c in r.checks
                   if c.status == NOT_RUN and law in c.tol]
        assert skipped, f"{law} is missing, but no check reports 'not run' for it"
        return
    stale = [c.quantity for r in quick_report.cases for c in r.checks
             if c.status == NOT_RUN and f"'{law}'" in c.tol]
    assert not stale


def _check(report, case_id, quantity):
    res = next(r for r in report.cases if r.id == case_id)
    return next(c for c in res.checks if c.quantity == quantity)


@pytest.mark.parametrize(("table", "row", "f_max", "cr"), [
    (1, "new (1.5, 1.0)", 1089.8, 0.8891),
    (1, "Hunt-Crossley", 1095.0, 0.9002),
    (1, "Lankarani-Nikravesh", 1097.4, 0.9052),
    (2, "new (1.5, 1.0)", 4447.0, 0.7553),
    (2, "Hunt-Crossley", 4491.3, 0.8036),
    (2, "Lankarani-Nikravesh", 4515.5, 0.8234),
])
def test_zhang2022_printed_values_reach_the_table(quick_report, table, row, f_max, cr):
    """The table rows carry Zhang et al. (2022)'s printed numbers, and ours match them."""
    c = _check(quick_report, f"zhang2022.table{table}", f"{row}: F_max")
    assert c.published == f_max and abs(c.ours - f_max) <= 0.1 and c.status == PASS
    c = _check(quick_report, f"zhang2022.table{table}", f"{row}: c_r")
    assert c.published == cr and abs(c.ours - cr) <= 1.5e-4 and c.status == PASS


def test_zhang2022_q_not_one_needs_the_complex_power(quick_report):
    """Printed q != 1 c_r: complex power within 1.5e-4, signed power at least 1e-3 away."""
    for table, row, cr in ((1, "new (1.2, 0.9)", 0.8886), (2, "new (1.8, 1.1)", 0.7673)):
        c = _check(quick_report, f"zhang2022.table{table}", f"{row}: c_r, complex power")
        assert abs(c.ours - cr) <= 1.5e-4
        s = _check(quick_report, f"zhang2022.table{table}", f"{row}: c_r, signed power")
        assert s.status == "info" and cr - s.ours >= 1e-3


# --------------------------------------------------------------------------------------------------
# closed forms used as expected values
# --------------------------------------------------------------------------------------------------
def test_closed_form_constants():
    """Hertz's 2.94328, the linear pi, Goyal's factor-4 = square, Thornton's continuity."""
    assert power_elastic_duration_factor(1.5) == pytest.approx(2.94328, abs=5e-6)
    assert power_elastic_duration_factor(1.0) == pytest.approx(math.pi, rel=1e-14)
    z = np.linspace(0.05, 0.95, 7)
    assert np.allclose(goyal_cr(z, 4.0), goyal_cr(z, 2.0) ** 2, rtol=1e-13)
    assert thornton_cr(1.0, 1.0) == pytest.approx(1.0, abs=1e-12)
    assert float(thornton_cr(1.0 + 1e-9, 1.0)) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("chi", [1e-7, 1e-3, 0.3, 1.0, 5.0, 40.0, 1e3])
def test_exact_relation_solver(chi):
    """hc_exact_cr solves chi - ln(1+chi) = -chi c - ln(1 - chi c) for any chi >= 0."""
    c = hc_exact_cr(chi)
    assert 0.0 < c <= 1.0
    if 1e-3 <= chi <= 5.0:  # the relation itself, where it can be evaluated without cancellation
        w = chi * c
        assert -w - math.log1p(-w) == pytest.approx(chi - math.log1p(chi), rel=1e-10)
    if chi >= 40.0:  # c -> 1/chi as chi grows
        assert c * chi == pytest.approx(1.0, abs=1e-12)
    if chi <= 1e-3:  # c -> 1 - 2 chi / 3
        assert (1.0 - c) / chi == pytest.approx(2.0 / 3.0, rel=2e-3)
    assert hc_exact_cr(hc_chi_for_cr(0.5)) == pytest.approx(0.5, abs=1e-12)


def test_linear_fit_r2():
    """R^2 is 1 for a line and below 1 for a parabola."""
    x = np.linspace(0, 1, 11)
    assert linear_fit_r2(x, 3 * x + 1)[0] == pytest.approx(1.0)
    assert linear_fit_r2(x, x**2)[0] < 0.99


# --------------------------------------------------------------------------------------------------
# missing laws, failures, exit codes, output files
# --------------------------------------------------------------------------------------------------
def test_missing_law_is_reported_not_run(monkeypatch):
    """A check whose law is not registered is 'not run', visible, and never counted as a pass."""
    from mbplugin.validation import closed_forms

    monkeypatch.setattr(closed_forms, "law_available", lambda name: False)
    rep = run_validation(["closed.thornton"], quick=True, progress=None)
    res = rep.cases[0]
    assert res.status == NOT_RUN and res.count(PASS) == 0
    assert rep.not_run and "law 'thornton' not registered" in rep.not_run[0].tol
    assert not rep.failed


def test_cli_not_run_exit_codes(monkeypatch, capsys):
    """Not-run checks: exit 0 but listed; exit 1 with --strict."""
    from mbplugin.validation import closed_forms

    monkeypatch.setattr(closed_forms, "law_available", lambda name: False)
    assert main(["validate", "--only", "closed.thornton", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "NOT RUN  closed.thornton" in out and "1 not run" in out
    assert main(["validate", "--only", "closed.thornton", "--quick", "--strict"]) == 1


def test_cli_failing_check_exits_1(monkeypatch, capsys):
    """A failing check makes the command exit with 1 and shows FAIL in the table."""

    def bad(ctx: Context) -> None:
        ctx.abs_check("a value that is wrong", 1.0, 2.0, 0.1, source="test")

    monkeypatch.setattr(core, "CASES", [*core.CASES, Case("closed.zz_fail", "fails", "closed",
                                                           bad)])
    assert main(["validate", "--only", "closed.zz_fail"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_cli_crashing_case_is_a_failure(monkeypatch, capsys):
    """An exception inside a case is reported as a failure, not a crash of the command."""

    def boom(ctx: Context) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(core, "CASES", [*core.CASES, Case("closed.zz_boom", "raises", "closed",
                                                           boom)])
    assert main(["validate", "--only", "closed.zz_boom"]) == 1
    assert "RuntimeError: boom" in capsys.readouterr().out


def _exit_code(argv):
    try:
        return main(argv)
    except SystemExit as exc:  # argparse errors
        return exc.code


@pytest.mark.parametrize("argv", [
    ["validate", "--only", "no_such_case"],
    ["validate", "--dpi", "5"],
    ["validate", "--bogus"],
])
def test_cli_bad_input_exit_2(capsys, argv):
    """Bad input: exit code 2 and a single line on stderr."""
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mbplugin") and len(err.splitlines()) == 1


def test_cli_report_path_is_a_file(tmp_path, capsys):
    """--report naming an existing file: one line on stderr, exit 2."""
    f = tmp_path / "a_file"
    f.write_text("x")
    assert main(["validate", "--only", "closed.hertz", "--report", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a directory" in err and len(err.splitlines()) == 1


def test_cli_json(capsys):
    """--json prints one document with the checks and consistent counts."""
    assert main(["validate", "--only", "closed.hertz", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    checks = doc["cases"][0]["checks"]
    assert doc["passed"] and doc["counts"]["pass"] == len(checks)
    assert {"case", "quantity", "published", "ours", "error", "status"} <= set(checks[0])


def test_cli_report_files(tmp_path, capsys):
    """--report writes README.md and the case figures (PNG), readable by others."""
    out = tmp_path / "rep"
    assert main(["validate", "--only", "azad2014.*", "--only", "closed.goyal", "--quick",
                 "--report", str(out)]) == 0
    readme = (out / "README.md").read_text()
    assert "azad2014.cr_vs_speed" in readme and "Goyal's factor (2 vs 4)" in readme
    png = out / "azad2014_cr_vs_speed.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.stat(out / "README.md").st_mode & stat.S_IRGRP
    assert not list(out.glob(".*"))  # no temporary files left behind
    capsys.readouterr()


def test_list_cases(capsys):
    """--list shows every case id."""
    assert main(["validate", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(cid in out for cid in CASE_IDS)
