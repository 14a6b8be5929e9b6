"""The one central-difference estimate of a law's local stiffness and damping
(:mod:`mbplugin.pipeline.stiffness`) against the laws' derivatives in closed form."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from mbplugin.laws import get_law_class, make_law
from mbplugin.laws.base import Law, Param
from mbplugin.laws.kernels import ctuple, stuple_law
from mbplugin.pipeline.stiffness import law_slopes, law_slopes_batch, law_slopes_force_batch

ROOT = Path(__file__).resolve().parents[1] / "mbplugin"
#: the package's own laws and parameters that make each constructible (test_law_potential's)
from test_law_potential import BUILTIN, PARAMS  # noqa: E402


def _slopes(law: Law, d: np.ndarray, v: np.ndarray, m_eff: float = 0.05):
    coef = law.coefficients(np.maximum(v, 1e-3), np.full(len(d), m_eff), np.full(len(d), 0.01))
    return law_slopes_batch(law, d, v, coef, np.zeros((len(d), law.n_state + law.n_memory)))


def test_hertz_slope_is_three_halves_k_sqrt_delta():
    """F = k d^1.5 (Hertz 1881): dF/dd = 1.5 k d^0.5, dF/dv = 0."""
    k = 1.2e10
    d = np.array([1e-7, 3e-6, 2e-5, 4e-4])
    v = np.array([0.3, -0.1, 0.0, 1.0])
    kk, cc = _slopes(make_law("hertz", k=k), d, v)
    np.testing.assert_allclose(kk, 1.5 * k * np.sqrt(d), rtol=1e-8)
    np.testing.assert_array_equal(cc, 0.0)


def test_power_dashpot_slopes():
    """F = k d^n + lam d^m v^q with q = 1 (Hunt & Crossley 1975's form, review Eq. 5.18):
    dF/dd = n k d^(n-1) + m lam d^(m-1) v, dF/dv = lam d^m."""
    k, n, lam, m = 5e9, 1.5, 2e9, 1.5
    law = make_law("hunt_crossley_general", k=k, n=n, lam=lam, m=m, q=1.0)
    d = np.array([2e-6, 5e-5, 3e-4])
    v = np.array([0.4, -0.2, 1.5])
    kk, cc = _slopes(law, d, v)
    np.testing.assert_allclose(kk, n * k * d ** (n - 1) + m * lam * d ** (m - 1) * v, rtol=1e-7)
    np.testing.assert_allclose(cc, lam * d**m, rtol=1e-7)


def test_kelvin_voigt_slopes_are_k_and_c():
    """F = k d + c v: the slopes are k and c at any state, also where the force pulls, to the
    rounding of the force over the step (eps |F| / e; the floor e_v = 1e-9 m/s near rest)."""
    k, c = 3e6, 40.0
    law = make_law("kelvin_voigt", k=k, c=c, allow_tension="yes")
    d = np.array([-1e-6, 0.0, 1e-5, 3e-3])
    v = np.array([-2.0, 0.0, 0.5, 1e-4])
    kk, cc = _slopes(law, d, v)
    f = np.abs(k * d) + np.abs(c * v)
    e_d = np.maximum(1e-6 * np.abs(d), 1e-12)
    e_v = np.maximum(1e-6 * np.abs(v), 1e-9)
    eps = np.finfo(float).eps
    assert np.all(np.abs(kk - k) <= 1e-9 * k + 4 * eps * f / e_d)
    assert np.all(np.abs(cc - c) <= 1e-9 * c + 4 * eps * f / e_v)


class _PluginHertz(Law):
    """F = s d^1.5 with no compiled kernel (a plug-in law: its own force_raw)."""

    name = "test_plugin_hertz"
    params = (Param("s", "stiffness", "N/m^1.5", lo=0.0, lo_open=True),)
    kernel = None

    def coefficients(self, v_in, m_eff, r_eff):
        return np.full((np.size(v_in), 1), self.s)

    def force_raw(self, delta, ddelta, coef, state):
        d = np.asarray(delta, dtype=float)
        return np.asarray(coef)[:, 0] * np.sign(d) * np.abs(d) ** 1.5

    def timescale(self, m_eff, v0):
        return np.ones(np.size(m_eff))


def test_a_law_without_kernel_takes_the_same_differences():
    """A plug-in law is differentiated through its own force_raw with the same steps: the
    Hertz closed form, and the kernel path's numbers for the same force."""
    d = np.array([1e-7, 3e-6, 2e-5])
    v = np.array([0.3, -0.1, 0.0])
    kk, cc = _slopes(_PluginHertz(s=1.2e10), d, v)
    np.testing.assert_allclose(kk, 1.5 * 1.2e10 * np.sqrt(d), rtol=1e-8)
    np.testing.assert_array_equal(cc, 0.0)
    np.testing.assert_allclose(kk, _slopes(make_law("hertz", k=1.2e10), d, v)[0], rtol=1e-9)


def test_compiled_scalar_and_batch_agree_bitwise():
    """The batch is the scalar function contact by contact (one formula)."""
    law = make_law("hunt_crossley_general", k=5e9, n=1.5, lam=1e9, m=1.5, q=1.0)
    d = np.array([1e-6, 2e-5, 7e-4])
    v = np.array([0.2, -0.3, 1e-12])
    coef = law.coefficients(np.full(3, 0.5), np.full(3, 0.05), np.full(3, 0.01))
    state = np.zeros((3, 0))
    kk, cc = law_slopes_batch(law, d, v, coef, state)
    for i in range(3):
        one = law_slopes(law.kernel, d[i], v[i], ctuple(coef, i), stuple_law(state, i, 0, 0))
        assert one == (kk[i], cc[i])


@pytest.mark.parametrize("name", [n for n in BUILTIN if get_law_class(n).kernel is not None])
def test_every_compiled_law_batch_is_the_scalar_function_bitwise(name):
    """Every law with a compiled kernel (stateful ones at a nonzero state): the batch is
    :func:`law_slopes` contact by contact, to the bit, and the force the step advisor takes
    with it (:func:`law_slopes_force_batch`, one compiled loop) is ``law.force``'s."""
    law = make_law(name, **PARAMS.get(name, {"k": 2e9, "cr": 0.6}))
    d = np.array([1e-6, 2e-5, 7e-4, -3e-7])
    v = np.array([0.2, -0.3, 1e-12, 0.05])
    coef = law.coefficients(np.full(4, 0.5), np.full(4, 0.05), np.full(4, 0.01))
    state = law.initial_state(coef) + 1e-6 * np.arange(1, 5)[:, None]
    kk, cc = law_slopes_batch(law, d, v, coef, state)
    for i in range(4):
        one = law_slopes(law.kernel, d[i], v[i], ctuple(coef, i),
                         stuple_law(state, i, law.n_state, law.n_memory))
        np.testing.assert_array_equal(np.array(one), np.array([kk[i], cc[i]]), err_msg=name)
    k3, c3, f3 = law_slopes_force_batch(law, d, v, coef, state)
    np.testing.assert_array_equal(np.stack([k3, c3]), np.stack([kk, cc]), err_msg=name)
    np.testing.assert_array_equal(f3, law.force(d, v, coef, state), err_msg=name)


def test_no_other_central_difference_of_a_law_force():
    """The difference steps appear in mbplugin.pipeline.stiffness only: no driver keeps its own
    copy of the estimate (the engine's two, the sub-stepper's, the advisor's)."""
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "stiffness.py" and path.parent.name == "pipeline":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
                    and isinstance(node.left, ast.Constant) and node.left.value == 1e-6
                    and isinstance(node.right, ast.Call)
                    and getattr(node.right.func, "id", getattr(node.right.func, "attr", ""))
                    == "abs"):
                bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    assert not bad, "central-difference steps outside pipeline/stiffness.py: " + ", ".join(bad)


@pytest.mark.parametrize("law_name", ["hertz", "kelvin_voigt"])
def test_engine_stiffness_rate_is_the_linear_oscillator_rate(law_name):
    """The engine's stiffness rate of a ball resting at its static overlap, sqrt(k_loc / m) +
    c / m: Hertz, k_loc = 1.5 k d^0.5 at d = (m g / k)^(2/3), c = 0; Kelvin-Voigt, k_loc = k
    at d = m g / k, c the dashpot's. The advisor's k and c are the same slopes."""
    from mbplugin.contact import ContactModel, Plane, Sphere
    from mbplugin.dynamics.bodies import make_bodies
    from mbplugin.dynamics.contacts import EngineContacts

    k, m, g, c = 1e9, 0.1, 9.81, 30.0
    hertz = law_name == "hertz"
    d0 = (m * g / k) ** (2 / 3) if hertz else m * g / k
    k_loc = 1.5 * k * np.sqrt(d0) if hertz else k
    c_loc = 0.0 if hertz else c
    model = ContactModel()
    model.add_shape(Plane(normal=(0.0, 0.0, 1.0)), body=0)
    model.add_shape(Sphere(0.01), body=1)
    model.set_default_law({"name": "hertz", "k": k} if hertz
                          else {"name": "kelvin_voigt", "k": k, "c": c})
    bodies = make_bodies(["floor", "ball"], [1.0, m], [np.eye(3), np.eye(3) * 4e-6],
                         fixed=[True, False], pos=np.array([[0, 0, 0], [0, 0, 0.01 - d0]]))
    ec = EngineContacts(model, bodies)
    y = ec.begin(0.0, bodies.state_vector())
    assert ec.n_active == 1
    rate = ec.stiffness_rate(y)
    assert rate == pytest.approx(np.sqrt(k_loc / m) + c_loc / m, rel=1e-6)
    _, info = ec.stable_step(y, "symplectic_euler")
    assert info["k"] == pytest.approx(k_loc, rel=1e-6)
    assert info["c"] == pytest.approx(c_loc, rel=1e-6, abs=1e-6 * np.sqrt(k * m))
