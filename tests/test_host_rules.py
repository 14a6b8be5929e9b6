"""The host paths apply the contact rules as the engine does (issue 21): the law's contact mode
(a law that may pull keeps its tension) and the separated latch's events located inside the
host step (its release when the gap opens, its renewal when the bodies press deeper than the
separation overlap), on the compiled sub-stepper and on the SciPy path.

References from outside the host code: the exact impact analyser ``impact(...)`` for c_r, and
the ballistic flight of the ball between its separation and the next onset in closed form.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pybullet as p
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.impact import impact
from mbplugin.laws import make_law
from mbplugin.laws.power import KelvinVoigt

G = 9.81
R = 0.01
M = 0.05
K = 1e5


def _drop(law, height: float, duration: float) -> BulletContacts:
    """A ball of mass M, radius R dropped ``height`` (m) onto PyBullet's plane at 1/240 s."""
    with ground_world(G) as (cid, plane):
        s = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
        b = p.createMultiBody(M, s, basePosition=[0, 0, R + height], physicsClientId=cid)
        p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
        bk = BulletContacts(cid, manage=[plane], law=law)
        for _ in range(round(duration * 240)):
            bk.step()
        return bk


def test_a_law_that_pulls_keeps_its_tension():
    """Kelvin-Voigt with allow_tension='yes' (MODE_TENSION) pulls until the overlap closes and
    then gives Anagnostopoulos' c_r exactly; clipped (MODE_CLIP) it lets go early with a higher
    c_r. Each PyBullet bounce against the exact analyser on the same law, v_in and load."""
    for tension, cr_sign in (("yes", 0), ("no", 1)):
        law = make_law("kelvin_voigt", k=K, cr=0.5, allow_tension=tension)
        bounces = _drop(law, 0.05, 0.4).bounces()
        fast = bounces[bounces["v_in"] > 0.15]
        assert len(fast) >= 2
        for row in fast:
            ref = impact(law, M, float(row["v_in"]), press=M * G)
            assert abs(row["cr"] - ref.cr_out) < 1e-3, (tension, row, ref.cr_out)
        if cr_sign == 0:
            cr_tension = fast["cr"][0]
        else:
            assert fast["cr"][0] > cr_tension + 0.05  # the rule matters: the test can fail


def _next_onset(bk: Any) -> tuple[np.ndarray, np.ndarray]:
    """The first separation that ends with a residual overlap and the onset after it."""
    sep, on = bk.store.separations, bk.store.onsets
    i = int(np.flatnonzero(sep["delta"] > 0)[0])
    return sep[i], on[on["t"] > sep[i]["t"]][0]


def test_latch_renewal_is_located_in_the_host_step():
    """A heavily damped clipped Kelvin-Voigt contact lets go at d_sep = c v / k > 0 with a
    rebound too slow to open the gap (v^2 / 2g < d_sep): the pair stays latched, falls back and
    renews exactly when the overlap passes d_sep again, after the ballistic 2 v / g, at speed
    v (not at the next host step, deeper, after falling through without a force)."""
    law = make_law("kelvin_voigt", k=K, cr=0.1)
    sep, on = _next_onset(_drop(law, 2e-4, 0.1))
    v, d_sep = float(sep["v"]), float(sep["delta"])
    assert v * v / (2 * G) < d_sep  # the gap never opens
    assert on["t"] == pytest.approx(sep["t"] + 2 * v / G, abs=1e-7)
    assert on["v"] == pytest.approx(v, rel=1e-5)
    assert on["delta"] == pytest.approx(d_sep, rel=1e-4)


def test_latch_release_is_located_in_the_host_step():
    """A rebound that opens the gap (v^2 / 2g > d_sep) and lands again within one host step:
    the latch is released when the gap opens and the new onset is at first touch (delta = 0)
    after the ballistic flight d_sep - v t + g t^2 / 2 = 0, at speed sqrt(v^2 - 2 g d_sep)."""
    law = make_law("kelvin_voigt", k=K, cr=0.5)
    sep, on = _next_onset(_drop(law, 3e-5, 0.05))
    v, d_sep = float(sep["v"]), float(sep["delta"])
    assert v * v / (2 * G) > d_sep
    t_fly = (v + math.sqrt(v * v - 2 * G * d_sep)) / G
    assert t_fly < 1 / 240  # one host step: without the release event no onset is seen
    assert on["t"] == pytest.approx(sep["t"] + t_fly, abs=1e-7)
    assert on["v"] == pytest.approx(math.sqrt(v * v - 2 * G * d_sep), rel=1e-5)
    assert abs(on["delta"]) < 1e-9


class _PluginKelvinVoigt(KelvinVoigt):
    """Kelvin-Voigt without its compiled kernel (a plug-in law): the host takes the SciPy
    contact-space path."""

    name = "test_plugin_kelvin_voigt"
    kernel = None

    def force_raw(self, delta, ddelta, coef, state):
        c = np.asarray(coef, dtype=float)  # the power row: k, n = 1, lam = c, m = 0, q = 1
        return c[:, 0] * np.asarray(delta, dtype=float) + c[:, 2] * np.asarray(ddelta)


def test_latch_renewal_on_the_scipy_path():
    """The same renewal through the SciPy contact-space path (a law without a kernel)."""
    ref = make_law("kelvin_voigt", k=K, cr=0.1)
    c = float(ref.coefficients(np.ones(1), np.full(1, M), np.full(1, R))[0, 2])
    law = _PluginKelvinVoigt(k=K, c=c)
    assert law.kernel is None and law.contact_mode == ref.contact_mode
    sep, on = _next_onset(_drop(law, 2e-4, 0.03))
    v, d_sep = float(sep["v"]), float(sep["delta"])
    assert v * v / (2 * G) < d_sep
    assert on["t"] == pytest.approx(sep["t"] + 2 * v / G, abs=1e-7)
    assert on["v"] == pytest.approx(v, rel=1e-5)


def test_latch_renewal_on_mujoco():
    """The same renewal on the MuJoCo host at its 2 ms step (the generic host loop)."""
    from mujoco_world import balls_xml, world

    from mbplugin.mujoco import MujocoContacts

    m, d = world(balls_xml([("ball", R, M, (0.0, 0.0, R + 2e-4))]))
    contacts = MujocoContacts(m, d, manage=["floor"], law=make_law("kelvin_voigt", k=K, cr=0.1))
    for _ in range(round(0.03 / m.opt.timestep)):
        contacts.step()
    sep, on = _next_onset(contacts)
    v, d_sep = float(sep["v"]), float(sep["delta"])
    assert v * v / (2 * G) < d_sep
    assert on["t"] == pytest.approx(sep["t"] + 2 * v / G, abs=1e-7)
    assert on["v"] == pytest.approx(v, rel=1e-5)
    assert on["delta"] == pytest.approx(d_sep, rel=1e-4)
