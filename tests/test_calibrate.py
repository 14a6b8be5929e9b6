"""COR calibration (issue 3 Sect. 2) against closed forms, with the cache and the errors."""

from __future__ import annotations

import json
import math

import pytest
from scipy.optimize import brentq

from mbplugin.cli import main
from mbplugin.errors import ParameterError
from mbplugin.impact import calibrate, clear_cache, impact
from mbplugin.laws import make_law


def _chi_exact(cr: float) -> float:
    """chi = d/c_r solving (1 + d/c_r)/(1 - d) = exp(d(1 + 1/c_r)) (review Eq. 5.23)."""
    d = brentq(lambda d: (1 + d / cr) / (1 - d) - math.exp(d * (1 + 1 / cr)),
               1e-3 * (1 - cr), 1 - 1e-12, xtol=1e-15, rtol=1e-15)
    return d / cr


def _cr_of_chi(chi: float) -> float:
    """Output c_r of an HC-family law with factor chi (Eq. 5.23 solved for c_r)."""
    lhs = chi - math.log1p(chi)
    return brentq(lambda c: -chi * c - math.log1p(-chi * c) - lhs, 0.0,
                  min(1.0, (1 - 1e-15) / chi), xtol=1e-15)


@pytest.mark.parametrize(("name", "chi_of_cr", "target"), [
    ("hunt_crossley", lambda c: 1.5 * (1 - c), 0.6),
    ("hunt_crossley", lambda c: 1.5 * (1 - c), 0.95),
    ("lankarani_nikravesh", lambda c: 0.75 * (1 - c * c), 0.7),
    ("lankarani_nikravesh", lambda c: 0.75 * (1 - c * c), 0.9),
])
def test_hc_and_ln_calibrated_to_exact_cr(name, chi_of_cr, target):
    """Calibrated Hunt-Crossley / Lankarani-Nikravesh reproduce the target within 1e-8 at any
    speed, mass, stiffness and exponent, with chi(cr_in) equal to the exact factor of Eq. 5.23."""
    for k, n, m, v in ((1e9, 1.5, 1.0, 1.0), (3e5, 1.1, 0.02, 7.0)):
        cal = calibrate(make_law(name, k=k, n=n, cr=0.5), target, v0=v, mass=m)
        assert cal.param == "cr"
        assert abs(cal.cr - target) < 1e-8
        assert abs(impact(cal.law, m, v).cr_out - target) < 1e-8
        assert chi_of_cr(cal.value) == pytest.approx(_chi_exact(target), rel=1e-10)


def test_hc_family_cache_is_hit_across_speed_mass_and_stiffness():
    """The HC-family root depends on (law class, target) only: the second call is served from
    the cache with a different speed, mass, stiffness and exponent, and gives the same value."""
    clear_cache()
    first = calibrate(make_law("flores", k=1e9, cr=0.5), 0.42, v0=1.0, mass=1.0)
    second = calibrate(make_law("flores", k=2e6, n=1.2, cr=0.9), 0.42, v0=0.05, mass=30.0)
    assert not first.cached and second.cached
    assert second.value == first.value and second.evaluations == 1
    assert abs(second.cr - 0.42) < 1e-8
    # Flores' chi = 8(1 - c)/(5c) inverted at the exact chi of the target
    chi = _chi_exact(0.42)
    assert first.value == pytest.approx(8 / (8 + 5 * chi), rel=1e-12)


def test_invariant_law_cache_and_kelvin_voigt_goyal_closed_form():
    """Jankowski's c_r depends on its cr input only (d^(1/4), sqrt(k m)): cached across speeds
    and masses. A clipped Kelvin-Voigt calibrated on c gives c = 2 zeta sqrt(k m) with zeta from
    the clipped-oscillator closed form exp(-(2 zeta/s) atan(s/zeta)) = target."""
    clear_cache()
    a = calibrate(make_law("jankowski", k=1e9, cr=0.5), 0.35, v0=1.0, mass=1.0)
    b = calibrate(make_law("jankowski", k=1e5, cr=0.9), 0.35, v0=3.0, mass=0.1)
    assert not a.cached and b.cached and b.value == a.value
    assert abs(a.cr - 0.35) < 1e-8 and abs(b.cr - 0.35) < 1e-8
    k, m, target = 4e5, 2.0, 0.3
    cal = calibrate(make_law("kelvin_voigt", k=k, c=10.0), target, v0=0.4, mass=m)
    assert cal.param == "c"

    def rebound(z: float) -> float:
        s = math.sqrt(1 - z * z)
        return math.exp(-(2 * z / s) * math.atan(s / z))

    zeta = brentq(lambda z: rebound(z) - target, 1e-9, 1 - 1e-12, xtol=1e-15)
    assert cal.value == pytest.approx(2 * zeta * math.sqrt(k * m), rel=1e-7)


def test_thornton_calibrated_yield_matches_closed_form():
    """Calibrating Thornton's sigma_y to a target c_r inverts Thornton's closed form
    e(V_y/v): V_y = r v0, delta_y = (5 m V_y^2/(4 k))^(2/5), sigma_y = 2 E sqrt(delta_y/R)/pi."""
    k, E, m, v0, target = 1e9, 1e10, 1.0, 1.0, 0.5

    def e(r: float) -> float:
        return (math.sqrt(6 * math.sqrt(3) / 5) * math.sqrt(1 - r * r / 6)
                * (r / (r + 2 * math.sqrt(6 / 5 - r * r / 5))) ** 0.25)

    r = brentq(lambda x: e(x) - target, 1e-9, 1.0, xtol=1e-15)
    dy = (5 * m * (r * v0) ** 2 / (4 * k)) ** 0.4
    R = (3 * k / (4 * E)) ** 2
    cal = calibrate(make_law("thornton", k=k, E=E, sigma_y=1e8), target, v0=v0, mass=m)
    assert cal.param == "sigma_y"
    assert cal.value == pytest.approx(2 * E * math.sqrt(dy / R) / math.pi, rel=1e-7)


def test_calibrated_law_is_new_and_general_path_hits_target():
    """A law without a c_r input (Xiong) is calibrated on its declared damping parameter; the
    input law is left unchanged."""
    law = make_law("xiong", k=1e9, beta1=1e-5, gamma=1e5)
    cal = calibrate(law, 0.6, v0=1.0, mass=1.0)
    assert cal.param == "beta1" and law.beta1 == 1e-5 and cal.law is not law
    assert abs(cal.cr - 0.6) < 1e-8
    assert cal.law.beta1 == cal.value


def test_unreachable_targets_are_reported():
    """Goyal's underdamped ratio can only reach c_r >= exp(-2) = 0.135335; Hunt-Crossley's
    chi <= 1.5 cannot go below the c_r of chi = 1.5 from Eq. 5.23."""
    with pytest.raises(ParameterError, match=r"unreachable.*'cr'.*0\.135335"):
        calibrate(make_law("goyal", k=1e6, cr=0.5), 0.1, v0=1.0, mass=1.0)
    floor = f"{_cr_of_chi(1.5):.6g}"
    with pytest.raises(ParameterError, match=rf"unreachable.*hunt_crossley.*{floor}"):
        calibrate(make_law("hunt_crossley", k=1e9, cr=0.5), 0.3, v0=1.0, mass=1.0)


BAD = (
    ({"target_cr": 0.0}, r"target_cr = 0 .*\(0, 1\]"),
    ({"target_cr": 1.5}, r"target_cr = 1.5 .*\(0, 1\]"),
    ({"target_cr": math.nan}, r"target_cr .*\(0, 1\]"),
    ({"v0": -1.0}, r"v0 = -1 .*\(0, inf\)"),
    ({"mass": 0.0}, r"mass = 0 .*\(0, inf\)"),
    ({"param": "lam"}, r"no numeric parameter 'lam'.*k, n, cr, v_min"),
)


@pytest.mark.parametrize(("change", "pattern"), BAD)
def test_bad_input(change, pattern):
    """Bad inputs raise a ParameterError naming the value and its allowed range."""
    args = {"target_cr": 0.5, "v0": 1.0, "mass": 1.0, **change}
    param = args.pop("param", None)
    with pytest.raises(ParameterError, match=pattern):
        calibrate(make_law("hunt_crossley", k=1e9, cr=0.5), args["target_cr"], args["v0"],
                  args["mass"], param=param)


def test_law_without_damping_parameter():
    """Hertz has nothing to dissipate with: the error lists its numeric parameters."""
    with pytest.raises(ParameterError, match=r"no damping parameter.*k, n"):
        calibrate(make_law("hertz", k=1e9), 0.5, v0=1.0, mass=1.0)


def test_cli_json_and_errors(capsys):
    """`mbplugin calibrate --json` reports the achieved c_r; bad input prints one line and
    exits with code 2."""
    code = main(["calibrate", "--law", "goldsmith", "-p", "k=1e9", "-p", "cr=0.9",
                 "--target", "0.25", "--v0", "2", "--mass", "0.5", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["param"] == "cr" and abs(out["cr"] - 0.25) < 1e-8
    assert abs(out["value"] - 0.25) < 1e-8  # Goldsmith's output c_r is its input, exactly
    code = main(["calibrate", "--law", "tsuji", "-p", "k=1e9", "-p", "alpha=0.2", "--param",
                 "alpha", "--target", "0.5", "--v0", "1", "--mass", "1"])
    assert code == 0 and "alpha" in capsys.readouterr().out
    code = main(["calibrate", "--law", "goyal", "-p", "k=1e6", "-p", "cr=0.5",
                 "--target", "0.05", "--v0", "1", "--mass", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "unreachable" in err


def test_old_import_paths_name_the_new_one():
    """Calibration moved beside the analyser (mbplugin.laws imports nothing above it): the old
    paths fail at import with a message naming the replacement; the new ones are one object."""
    import mbplugin
    import mbplugin.impact

    with pytest.raises(ImportError, match=r"mbplugin\.impact"):
        from mbplugin.laws import calibrate as _
    with pytest.raises(ImportError, match=r"mbplugin\.impact"):
        from mbplugin.laws.calibrate import clear_cache as _
    with pytest.raises(ImportError, match=r"mbplugin\.impact\.Calibration"):
        from mbplugin.laws import Calibration as _  # noqa: F401
    assert mbplugin.calibrate is mbplugin.impact.calibrate is calibrate
