"""The contact pipeline: the rules written once, and the engine's compiled path against the
analyser and against SciPy's integrator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.impact import impact
from mbplugin.laws import make_law
from mbplugin.laws.base import MODE_CLIP, MODE_RAW, MODE_TENSION
from mbplugin.pipeline import rules
from mbplugin.scene import build_scene

# steel ball on a steel plane (benchmarks/bench_dropball.py): R = 1 cm, rho = 7800 kg/m^3
R, RHO, E, NU, H, G = 0.01, 7800.0, 210e9, 0.3, 0.1, 9.81
MASS = RHO * 4.0 / 3.0 * math.pi * R**3
# Hertz (1881): k = 4/3 E* sqrt(R) for a sphere on a half-space, 1/E* = 2 (1 - nu^2) / E
K_HERTZ = 4.0 / 3.0 * E / (2.0 * (1.0 - NU**2)) * math.sqrt(R)


def _steel_drop(cr: float, duration: float, rtol: float) -> dict:
    return {
        "scene": {"duration": duration},
        "world": {"gravity": [0.0, 0.0, -G]},
        "materials": {"steel": {"E": E, "nu": NU, "density": RHO}},
        "integrator": {"method": "adaptive", "rtol": rtol},
        "output": {"contacts": False},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True, "material": "steel"},
            {"name": "ball", "shape": "sphere", "radius": R, "material": "steel",
             "position": [0.0, 0.0, R + H]},
        ],
        "contact": {"law": "zhang_sharf", "params": {"cr": cr}},
    }


def test_end_of_contact_rule_is_eq17() -> None:
    """Milehins & Marghitu (2026), Eq. 17: a contact ends while the bodies recede (ddelta <= 0)
    once the raw force is <= 0; a law that may pull ends at delta <= 0 instead. The event
    function is <= 0 exactly then, whatever its (positive) scales."""
    for mode in (MODE_CLIP, MODE_RAW):
        assert rules.ended(mode, 1e-6, -0.1, 0.0)
        assert rules.ended(mode, 1e-6, -0.1, -1.0)
        assert not rules.ended(mode, 1e-6, -0.1, 1e-9)  # still pushing
        assert not rules.ended(mode, 1e-6, 1e-9, -1.0)  # still approaching
        assert rules.end_value(mode, 1e-6, -0.1, -2.0, 1e-6, 3.0, 1e-3) <= 0.0
    assert rules.ended(MODE_TENSION, 0.0, -0.1, -5.0)
    assert not rules.ended(MODE_TENSION, 1e-9, -0.1, -5.0)  # pulls until the surfaces part
    assert rules.applied(MODE_CLIP, -3.0) == 0.0
    assert rules.applied(MODE_TENSION, -3.0) == -3.0
    assert rules.applied(MODE_RAW, -3.0) == -3.0


def test_separated_latch_rule() -> None:
    """Spec bouc-wen-collision-laws.md section 10, items 5-6: a pair that separated with a
    residual overlap d_sep stays latched until the gap opens, or until it is pressed deeper
    than d_sep while approaching (then a new contact starts)."""
    d_sep = 2e-6
    assert rules.latch_holds(1e-6, -0.1, d_sep)
    assert rules.latch_holds(3e-6, -0.1, d_sep)  # deeper but receding
    assert rules.latch_holds(1e-6, 0.1, d_sep)  # approaching, not yet deeper
    assert not rules.latch_holds(0.0, 0.1, d_sep)  # gap open
    assert not rules.latch_holds(3e-6, 0.1, d_sep)  # pressed deeper: renewed
    assert rules.latch_renew_value(3e-6, 0.1, d_sep, 1e-6, 1e-3) < 0.0
    assert rules.latch_release_value(-1e-9, 1e-6) < 0.0
    assert rules.onset_speed(-0.2) == 0.0 and rules.onset_speed(0.3) == 0.3
    assert rules.starts(1e-12) and not rules.starts(0.0)


def test_every_bounce_equals_impact_analyser_down_to_1mm_per_s() -> None:
    """Every bounce of the steel drop ball has the c_r of the isolated impact with the ball's
    weight pressing (press = m g) at the latched impact speed, within 1e-6, down to
    v_in = 1 mm/s: the engine meets onset and end of contact (Eq. 17) as events on the
    dense output and the analyser integrates the same law to its own tolerance."""
    cr = 0.8
    result = build_scene(_steel_drop(cr, 5.0, 1e-10)).run()
    law = make_law("zhang_sharf", k=K_HERTZ, n=1.5, cr=cr)
    v_in = np.array([b["v_in"] for b in result.bounces])
    got = np.array([b["cr"] for b in result.bounces])
    assert v_in[0] == pytest.approx(math.sqrt(2 * G * H), rel=1e-9)
    checked = v_in >= 1e-3
    assert checked.sum() >= 25 and v_in[checked].min() < 2e-3  # the range down to 1 mm/s
    ref = np.array([impact(law, MASS, v, press=MASS * G).cr_out for v in v_in[checked]])
    assert np.max(np.abs(got[checked] - ref)) < 1e-6


def test_compiled_path_matches_scipy_dop853() -> None:
    """The compiled segment and SciPy's DOP853 stepped from Python integrate the same world
    with the same step control: the bounce sequence agrees to the integration tolerance."""
    doc = _steel_drop(0.5, 1.0, 1e-9)
    doc["integrator"]["solver"] = "DOP853"
    fast = build_scene(doc).run()
    scene = build_scene(doc)
    scene.world.compiled_path = False
    slow = scene.run()
    assert len(fast.bounces) == len(slow.bounces) >= 5
    for a, b in zip(fast.bounces, slow.bounces, strict=True):
        assert a["t"] == pytest.approx(b["t"], rel=1e-7)
        assert a["cr"] == pytest.approx(b["cr"], abs=1e-6)
    # every onset and every end booked once on both paths (the compiled segment books the
    # ends of contact itself and continues; the SciPy path returns to Python at each); the
    # last contact may still be open at the end of the run
    assert fast.stats.events == slow.stats.events
    assert 0 <= fast.stats.events - 2 * len(fast.bounces) <= 1


def test_compiled_radau_rests_at_the_hertz_indentation() -> None:
    """With the ``auto`` solver the ball comes to rest through the compiled Radau segments
    and sits at the static Hertz indentation (m g / k)^(2/3) (Hertz 1881), as with SciPy's
    Radau stepped from Python; both give the same bounces."""
    doc = _steel_drop(0.3, 1.0, 1e-8)
    fast = build_scene(doc).run()
    scene = build_scene(doc)
    scene.world.compiled_path = False
    slow = scene.run()
    assert fast.stats.solver_steps.get("Radau", 0) > 0
    z_rest = R - (MASS * G / K_HERTZ) ** (2.0 / 3.0)
    for res in (fast, slow):
        assert res.pos[-1, 1, 2] == pytest.approx(z_rest, abs=1e-3 * (R - z_rest))
        assert abs(res.vel[-1, 1, 2]) < 1e-6
    assert len(fast.bounces) == len(slow.bounces)
    for a, b in zip(fast.bounces, slow.bounces, strict=True):
        assert a["cr"] == pytest.approx(b["cr"], abs=1e-6)


def test_compiled_onsets_book_what_the_driver_books(monkeypatch: pytest.MonkeyPatch) -> None:
    """Onsets booked inside the compiled segment (the law's compiled onset rule and time
    scale, the effective mass kernel) give the run that booking every onset in Python gives:
    the same bounces, steps and onset events (one formula, two call sites)."""
    from mbplugin.dynamics.contacts import EngineContacts

    booked = []
    onset_row = EngineContacts.onset_row
    monkeypatch.setattr(EngineContacts, "onset_row",
                        lambda self, o: (booked.append(o[0]), onset_row(self, o))[1])
    runs = []
    for chain in (True, False):
        scene = build_scene(_steel_drop(0.8, 1.0, 1e-9))
        scene.world.contacts.compiled_onsets = chain
        runs.append((scene.run(), scene.world.contacts.store))
    (fast, s_fast), (slow, s_slow) = runs
    assert len(fast.bounces) == len(slow.bounces) >= 7
    assert len(booked) == len(fast.bounces) - 1  # all but the first onset of the pair
    assert fast.stats.steps == slow.stats.steps and fast.stats.events == slow.stats.events
    for a, b in zip(fast.bounces, slow.bounces, strict=True):
        for key in ("t", "t_out", "v_in", "v_out", "cr"):
            assert a[key] == pytest.approx(b[key], rel=1e-12, abs=1e-15)
    for field in ("t", "v", "delta"):
        np.testing.assert_allclose(s_fast.onsets[field], s_slow.onsets[field], rtol=1e-12)


def test_onset_rule_and_time_scale_closed_forms() -> None:
    """The compiled onset of the Hunt-Crossley family rewrites lam = k chi / max(v_in, v_min)
    (Hunt-Crossley: chi = 3(1 - c_r)/2, review Eq. 5.12) and the compiled time scale is
    (m / (k v^(n-1)))^(1/(n+1)), as the Python coefficients() and timescale() give."""
    from mbplugin.laws import kernels
    from mbplugin.laws.base import power_timescale

    k, cr, v_min = 3e9, 0.6, 1e-3
    law = make_law("hunt_crossley", k=k, cr=cr, v_min=v_min)
    rule = law.onset_rule()
    assert rule is not None and law.timescale_rule() == (k, 1.5)
    for v_in in (2.5, 1e-5):
        row = np.zeros(12)
        row[:7] = law.coefficients(np.array([1.0]), np.array([1.0]), np.array([1.0]))[0]
        assert kernels.onset_coefficients(rule[0], rule[1], rule[2], v_in, row)
        assert row[2] == pytest.approx(k * 1.5 * (1 - cr) / max(v_in, v_min), rel=1e-15)
        want = law.coefficients(np.array([v_in]), np.array([1.0]), np.array([1.0]))[0]
        np.testing.assert_array_equal(row[:7], want)
    m, v = 0.0327, 1.4
    assert power_timescale(m, k, 1.5, v) == pytest.approx((m / (k * v**0.5)) ** 0.4, rel=1e-15)
    assert law.timescale(np.array([m]), np.array([v]))[0] == pytest.approx(
        (m / (k * v**0.5)) ** 0.4, rel=1e-15)
    hertz = make_law("hertz", k=k).onset_rule()  # F = k d^1.5: the row needs no onset value
    row = np.arange(12.0)
    assert hertz is not None and kernels.onset_coefficients(*hertz, 1.0, row)
    np.testing.assert_array_equal(row, np.arange(12.0))
    # array-valued parameters (batch studies): onsets through coefficients()
    assert make_law("hunt_crossley", k=np.array([k, 2 * k]), cr=cr).onset_rule() is None
