"""Zhang et al. (2022), Tables 1 and 2: the steel-ball impacts (m0 = 0.54 kg, k = 2.4144e10).

Expected values are the numbers printed in the paper's tables (transcribed in
spec/zhang2022-arbitrary-exponents.md, section 5). The durations are the time until the overlap
closes (``duration_overlap``): the laws with m < n reach zero force slightly before delta = 0.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mbplugin.impact import impact
from mbplugin.laws import make_law, zhang2022_lambda
from mbplugin.laws.zhang2022 import complex_exit_cr

M0 = 0.54
K = 2.4144e10
N = 1.5

# (v0, input c_r, rows: name, extra params, printed c_r, duration 1e-4 s, F_max N)
TABLES = {
    1: (0.15, 0.8892, [
        ("zhang2022", {"m": 1.5, "q": 1.0}, 0.8891, 2.620, 1089.8),
        ("zhang2022", {"m": 1.2, "q": 0.9}, 0.8886, 2.618, 1088.9),
        ("zhang2022", {"m": 1.2, "q": 1.1}, 0.8880, 2.618, 1080.6),
        ("zhang2022", {"m": 1.8, "q": 0.9}, 0.8945, 2.618, 1100.9),
        ("zhang2022", {"m": 1.8, "q": 1.1}, 0.8950, 2.616, 1090.6),
        ("hunt_crossley", {}, 0.9002, 2.614, 1095.0),
        ("lankarani_nikravesh", {}, 0.9052, 2.612, 1097.4),
    ]),
    2: (0.5, 0.7568, [
        ("zhang2022", {"m": 1.5, "q": 1.0}, 0.7553, 2.106, 4447.0),
        ("zhang2022", {"m": 1.2, "q": 0.9}, 0.7548, 2.104, 4419.2),
        ("zhang2022", {"m": 1.2, "q": 1.1}, 0.7540, 2.102, 4322.2),
        ("zhang2022", {"m": 1.8, "q": 0.9}, 0.7665, 2.102, 4581.7),
        ("zhang2022", {"m": 1.8, "q": 1.1}, 0.7673, 2.098, 4474.2),
        ("hunt_crossley", {}, 0.8036, 2.085, 4491.3),
        ("lankarani_nikravesh", {}, 0.8234, 2.078, 4515.5),
    ]),
}
ROWS = [(t, *row) for t, (_, _, rows) in TABLES.items() for row in rows]


def _run(table: int, name: str, extra: dict, power: str = "signed"):
    v0, cr, _ = TABLES[table]
    params = {"k": K, "n": N, "cr": cr, **extra}
    if name == "zhang2022":
        params["power"] = power
    return impact(make_law(name, **params), M0, v0), v0


@pytest.mark.parametrize(("table", "name", "extra", "cr", "dur", "fmax"), ROWS)
def test_peak_force_and_duration(table, name, extra, cr, dur, fmax):
    """F_max within 0.2 N and the duration within a small multiple of the measured deviation.

    Tolerances on the duration (the printed rows of Table 1 span only 0.31 %, adjacent rows
    0.08 %, so a looser bound would let rows swap):

    * Hunt-Crossley and Lankarani-Nikravesh: 3e-4. Their force has no ambiguity; the
      measured deviation is <= 2.0e-4, the rounding of the printed value (3 decimals) alone is
      up to 2.4e-4.
    * the new model: 1.5e-3. The measured deviation is up to 1.34e-3 (Table 2, m = 1.8,
      q = 1.1), for both conventions of ddelta^q and for q = 1 as well (-1.2e-3), so it comes
      from the paper's integration (RK4 at a fixed step, end of contact at a step), not from the
      law.
    """
    r, _ = _run(table, name, extra)
    assert abs(r.f_max - fmax) <= 0.2
    tol = 1.5e-3 if name == "zhang2022" else 3e-4
    assert abs(r.duration_overlap * 1e4 - dur) <= tol * dur


@pytest.mark.parametrize(("table", "name", "extra", "cr", "dur", "fmax"), [
    row for row in ROWS if row[1] != "zhang2022" or row[2] == {"m": 1.5, "q": 1.0}
])
def test_output_cr_q1_rows(table, name, extra, cr, dur, fmax):
    """Output c_r of HC, LN and the new model at (1.5, 1.0) within 2e-4 of the printed values."""
    r, _ = _run(table, name, extra)
    assert abs(r.cr_out - cr) <= 2e-4


@pytest.mark.parametrize(("table", "name", "extra", "cr", "dur", "fmax"), [
    row for row in ROWS if row[1] == "zhang2022" and row[2]["q"] != 1.0
])
def test_output_cr_complex_power(table, name, extra, cr, dur, fmax):
    """power='complex' reproduces the printed c_r for q != 1 (|ddelta| at separation)."""
    r, v0 = _run(table, name, extra, power="complex")
    assert abs(complex_exit_cr(r, v0) - cr) <= 1.5e-4
    assert abs(r.f_max - fmax) <= 0.2


def test_signed_power_is_lower_than_printed():
    """The signed convention dissipates more in restitution: c_r 0.003-0.006 below the paper."""
    for table in (1, 2):
        for name, extra, cr, _, _ in TABLES[table][2]:
            if name != "zhang2022" or extra["q"] == 1.0:
                continue
            r, _ = _run(table, name, extra, power="signed")
            assert 0.002 < cr - r.cr_out < 0.0065


@settings(max_examples=60, deadline=None)
@given(
    m0=st.floats(1e-3, 1e3), k=st.floats(1e3, 1e12), n=st.floats(1.0, 3.0),
    cr=st.floats(0.05, 1.0), v0=st.floats(1e-3, 1e2),
)
def test_eq35_reduces_to_hu_guo(m0, k, n, cr, v0):
    """Eq. 35 with m = n, q = 1 equals Hu-Guo's 3k(1-c_r)/(2 c_r v0), whatever n and m0."""
    lam = zhang2022_lambda(m0, k, n, n, 1.0, cr, v0)
    expected = 1.5 * k * (1.0 - cr) / (cr * v0)
    assert lam == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_dimensionless_invariance():
    """Eqs. 41-46: the dimensionless system depends on n, m, q, c_r only (not on k, m0, v0)."""
    base = impact(make_law("zhang2022", k=K, n=N, m=1.2, q=0.9, cr=0.6), M0, 0.3)
    for k, m0, v0 in ((1e6, 2.0, 3.0), (1e11, 0.01, 0.02)):
        r = impact(make_law("zhang2022", k=k, n=N, m=1.2, q=0.9, cr=0.6), m0, v0)
        assert r.cr_out == pytest.approx(base.cr_out, abs=1e-8)
        # the peak force in units of m0 v0^2 / delta_max is invariant too
        scale_b = M0 * 0.3**2 / base.delta_max
        scale_r = m0 * v0**2 / r.delta_max
        assert r.f_max / scale_r == pytest.approx(base.f_max / scale_b, rel=1e-7)


def test_fig7_trend_larger_m_smaller_q_more_force():
    """Fig. 7: larger m and smaller q give a larger peak force; delta_max barely moves."""
    def run(m, q):
        return impact(make_law("zhang2022", k=1.0, n=1.5, m=m, q=q, cr=0.6), 1.0, 1.0)

    assert run(1.8, 1.0).f_max > run(1.5, 1.0).f_max > run(1.2, 1.0).f_max
    assert run(1.5, 0.9).f_max > run(1.5, 1.0).f_max > run(1.5, 1.1).f_max
    dmax = [run(m, q).delta_max for m, q in ((1.2, 0.9), (1.2, 1.1), (1.8, 0.9), (1.8, 1.1))]
    assert np.ptp(dmax) / np.mean(dmax) < 0.05
