"""A third-party law: defined outside the catalogue, registered, used everywhere.

The law F = k delta^(3/2) + c delta ddelta (a Hertz spring with a dashpot growing with the
overlap) is written with NumPy only (``kernel = None``) and added with
``mbplugin.laws.register`` (a package would expose the class through the entry-point group
``mbplugin.laws`` instead, see docs/adding_a_law.md). It then runs in the impact analyser (on
the SciPy reference integrator) and in a PyBullet scene through ``BulletContacts``. Checks:
with c = 0 the law is elastic (energy conservation: every bounce's c_r = 1 within 1e-3 at
PyBullet's 1/240 s step); with c > 0 every bounce loses energy and its c_r equals the impact
analyser's for the same impact speed within 1e-3.

    python examples/third_party_law.py [--short] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import mbplugin
from mbplugin.laws import Law, Param, make_law, register


@register
class SqrtDashpot(Law):
    """Hertz spring plus a dashpot proportional to the overlap.

    F = k delta^(3/2) + c delta ddelta (the generalised Hunt & Crossley 1975 form
    k delta^n + lam delta^m ddelta^q with n = 3/2, m = q = 1 and a constant lam = c), clipped at
    F >= 0.
    """

    name = "sqrt_dashpot_example"
    title = "Hertz + sqrt(delta) dashpot (example)"
    source = "examples/third_party_law.py; the form of Hunt & Crossley, J. Appl. Mech. 42 (1975)"
    equation = "F = k delta^1.5 + c delta ddelta"
    params = (Param("k", "Hertz stiffness", "N/m^1.5", lo=0, lo_open=True),
              Param("c", "damping", "N s/m^2", lo=0))
    cr_range = "velocity dependent (no c_r input)"
    kernel = None
    n_coef = 2

    def coefficients(self, v_in, m_eff, r_eff):
        n = np.size(v_in)
        return np.column_stack([np.full(n, float(self.k)), np.full(n, float(self.c))])

    def force_raw(self, delta, ddelta, coef, state):
        d = np.asarray(delta, dtype=float)
        # signed power sign(d)|d|^1.5 = d sqrt|d|: the force is continued to d < 0
        return coef[:, 0] * d * np.sqrt(np.abs(d)) + coef[:, 1] * d * np.asarray(ddelta,
                                                                                  dtype=float)


def drop(law: Law, m: float) -> np.ndarray:
    """Bounces of a ball (R = 2 cm, mass ``m``) dropped from 18 cm on plane.urdf in PyBullet."""
    import pybullet as p
    import pybullet_data

    from mbplugin.bullet import BulletContacts

    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -9.81, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=0.02, physicsClientId=cid)
    ball = p.createMultiBody(m, shape, basePosition=[0, 0, 0.2], physicsClientId=cid)
    p.changeDynamics(ball, -1, linearDamping=0, physicsClientId=cid)
    contacts = BulletContacts(cid, manage=[plane], law=law)
    for _ in range(120):
        contacts.step()
    p.disconnect(physicsClientId=cid)
    return contacts.bounces()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/third_party_law", help="output folder (unused)")
    ap.parse_args(argv)
    k, m = 1e6, 0.05
    elastic = drop(make_law("sqrt_dashpot_example", k=k, c=0.0), m)
    damped = drop(make_law("sqrt_dashpot_example", k=k, c=3e4), m)
    for name, rows in (("c = 0 ", elastic), ("c = 3e4", damped)):
        for row in rows:
            print(f"{name}: PyBullet bounce v_in = {row['v_in']:.4f} m/s, c_r = {row['cr']:.6f}")
    from mbplugin.impact import impact

    law = make_law("sqrt_dashpot_example", k=k, c=3e4)
    ref = [impact(law, m, float(v), press=m * 9.81).cr_out for v in damped["v_in"]]
    worst = float(np.max(np.abs(damped["cr"] - ref), initial=0.0))
    print(f"largest |c_r - impact analyser (SciPy reference path)| = {worst:.2e}")
    ok = (len(elastic) > 0 and np.all(np.abs(elastic["cr"] - 1.0) < 1e-3)
          and len(damped) > 0 and np.all(damped["cr"] < 0.999) and worst < 1e-3)
    if not ok:
        print("FAILED: elastic c_r != 1 or damped c_r not < 1", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    with mbplugin.compile_notice(15):  # a first run compiles (~15 s on 2 cores)
        sys.exit(main())
