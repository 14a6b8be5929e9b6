"""A flat face sliding on managed ground: the cost of a large group whose Gauss-Seidel solve
stalls (MuJoCo's cylinder, a 64-sided prism, on its face: 64 coplanar corner contacts of one
body; :mod:`mbplugin.pipeline.large_groups`).

Each solve of such a group used to sweep until the stall was predicted (~30 sweeps of 64
local Newton solves) before its dense Newton fallback, at every step. With
``large_groups.REMEMBER_STALLS`` a solve of the same contacts as the last stalled one goes to
the fallback at once. Both are run here in one process, alternated ``--repeat`` times: CPU
per host step (the slide of tests/test_large_groups_flat.py: v0 = 1 m/s, mu = 0.5, 110 steps
of 2 ms, to rest), the final position against Coulomb's v0^2 / (2 mu g) and the load average.

    python benchmarks/bench_large_groups_flat.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import mujoco
import numpy as np

from mbplugin.mujoco import MujocoContacts
from mbplugin.mujoco.geometry import CYLINDER_SECTIONS
from mbplugin.pipeline import large_groups

G, MASS, R, H, K, DT, MU, V0 = 9.81, 1.0, 0.05, 0.05, 1e6, 0.002, 0.5, 1.0


def run(steps: int) -> tuple[float, float]:
    """(CPU s per host step after the first, final x (m)) of one slide."""
    ds = (MASS * G / CYLINDER_SECTIONS / K) ** (2 / 3)
    xml = (f'<mujoco><option timestep="{DT}" gravity="0 0 {-G}"/><worldbody>'
           f'<geom name="floor" type="plane" size="5 5 .1" friction="{MU}"/>'
           f'<body name="cyl" pos="0 0 {H - ds}"><freejoint/>'
           f'<geom type="cylinder" size="{R} {H}" mass="{MASS}" friction="{MU}"/>'
           "</body></worldbody></mujoco>")
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    c = MujocoContacts(m, d, manage=["floor"], law={"name": "hunt_crossley", "cr": 0.3, "k": K},
                       material={"E": 1e8, "nu": 0.4})
    d.qvel[0] = V0
    c.step()
    t0 = time.process_time()
    for _ in range(steps - 1):
        c.step()
    return (time.process_time() - t0) / (steps - 1), float(d.qpos[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="alternations (3)")
    ap.add_argument("--steps", type=int, default=110, help="host steps per slide (110)")
    a = ap.parse_args()
    if a.repeat < 1 or a.steps < 2:
        print("bench_large_groups_flat: --repeat >= 1 and --steps >= 2", file=sys.stderr)
        return 2
    run(5)  # compile
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(a.repeat):
        for on in (False, True):
            large_groups.REMEMBER_STALLS = on
            t, x = run(a.steps)
            times[on].append(t)
            print(f"remember stalls {on!s:5s}: {t * 1e3:6.2f} ms per host step, x = {x:.9f} m "
                  f"(Coulomb {V0 ** 2 / (2 * MU * G):.6f}), load {os.getloadavg()[0]:.2f}",
                  flush=True)
    off, on = np.median(times[False]), np.median(times[True])
    print(f"# median {off * 1e3:.2f} -> {on * 1e3:.2f} ms per host step ({off / on:.2f}x)")
    large_groups.REMEMBER_STALLS = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
