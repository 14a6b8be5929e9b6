"""The one event root finder (:mod:`mbplugin.pipeline.events`: Brent's method, Brent 1973,
Algorithms for Minimization without Derivatives, Ch. 4) against its definition and closed forms.

Closed to adjacent floats, the located instant is the first float where the event function is
<= 0 (the crossing convention), whatever the method: checked against that definition and a
float bisection written here. An exact zero does not stop it (a flat zero of g: the first float
of the zero, not wherever an iterate landed), and the impact analyser's end of contact of a law
whose force changes sign before delta = 0 lands at the closed-form overlap.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.pipeline.events import locate_py


def _first_float(g, a: float, b: float) -> float:
    """The first float in (a, b] where g <= 0 (g(a) > 0 >= g(b), g monotone): bisection on the
    floats until a and b are adjacent."""
    while np.nextafter(a, b) < b:
        c = 0.5 * (a + b)
        if g(c) <= 0.0:
            b = c
        else:
            a = c
    return b


def _counted(g):
    calls = [0]

    def f(t: float) -> float:
        calls[0] += 1
        return g(t)
    return f, calls


ROOTS = (0.3, 1.0 / 3.0, 0.7071067811865476, 1e-9, 0.999999, 2.5)
FUNCTIONS = {
    "linear": lambda r: (lambda t: r - t),
    "cubic": lambda r: (lambda t: (r - t) * (1.0 + 3.0 * t + 5.0 * t * t)),
    "exponential": lambda r: (lambda t: math.exp(-5.0 * t) - math.exp(-5.0 * r)),
    # a Hertz force vanishing as delta^1.5: the slope is 0 at the root
    "power 1.5": lambda r: (lambda t: math.copysign(abs(r - t) ** 1.5, r - t)),
    # a flat zero: g = 0 from r on (a force that stays exactly 0)
    "flat zero": lambda r: (lambda t: max(r - t, 0.0)),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_located_instant_is_the_first_float_with_g_not_positive(name):
    for r in ROOTS:
        g = FUNCTIONS[name](r)
        a, b = 0.0, 3.0
        x = locate_py(g, a, b, g(a), g(b))
        assert g(x) <= 0.0 < g(np.nextafter(x, -np.inf)), (name, r, x)
        assert x == _first_float(g, a, b), (name, r, x)


def test_exact_roots_are_found_exactly_and_smooth_roots_in_few_evaluations():
    """Where g is smooth at its root Brent's interpolation converges superlinearly: a handful of
    evaluations where bisection to adjacent floats needs ~53; where the slope vanishes (power
    1.5) or g is flat it falls back on bisection (at most about twice its count here)."""
    bisections = math.ceil(math.log2(3.0 / np.spacing(0.3)))
    for name, limit in (("linear", 3), ("cubic", 15), ("exponential", 15),
                        ("power 1.5", 2 * bisections), ("flat zero", 2 * bisections + 4)):
        g, calls = _counted(FUNCTIONS[name](0.3))
        x = locate_py(g, 0.0, 3.0, g(0.0), g(3.0))
        assert x == 0.3 or name in ("cubic", "exponential")
        assert calls[0] - 2 <= limit, (name, calls[0])


def test_a_tolerance_bracket_is_closed_to_its_width():
    """The analyser's bracket (rtol 4e-16, atol 1e-16 on the step fraction): the returned end has
    g <= 0 and lies within the bracket's width 2 (rtol |x| + atol) of the root."""
    for r in (0.3, 1e-9, 0.999999):
        for make in FUNCTIONS.values():
            g = make(r)
            x = locate_py(g, 0.0, 1.0, g(0.0), g(1.0), 4e-16, 1e-16, 0.0, 200)
            assert g(x) <= 0.0
            assert abs(x - r) <= 2.0 * (4e-16 * abs(x) + 1e-16) + np.spacing(r)


@pytest.mark.parametrize("press", [0.0, 0.3 * 9.81])
def test_analyser_end_of_contact_at_the_closed_form_overlap(press):
    """Alizadeh et al.'s law F = k delta^1.5 + 4 pi lam delta sign(v)|v|^nl changes sign while
    receding at delta_c = (4 pi lam |v|^nl / k)^2 > 0, before delta = 0: the end of contact (the
    first instant the raw force is <= 0 while receding; Milehins & Marghitu 2026, Eq. 17) is
    there. A root finder that stopped at an exact zero of the separation function (where
    delta = 0 and the force is 0 again) ended the contact later, with no residual overlap."""
    from mbplugin.impact import impact
    from mbplugin.laws import make_law

    k, lam, nl, m, v0 = 2e9, 1e3, 0.7, 0.3, 0.9
    r = impact(make_law("alizadeh", k=k, lam=lam, nl=nl), m, v0, press=press, radius=0.01)
    v_end = r.cr_out * v0
    delta_c = (4.0 * math.pi * lam * v_end ** nl / k) ** 2
    assert r.delta_residual == pytest.approx(delta_c, rel=1e-9)
