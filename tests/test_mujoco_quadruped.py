"""The A1 quadruped in MuJoCo (``examples/mujoco_quadruped.py``: the URDF of ``pybullet_data``
as MuJoCo loads it) standing and trotting on its toes with the backend's implicit step.

Stance: the summed toe normal force equals the weight (the robot's subtree mass times g, from
MuJoCo's model) within 1 % at every step of the last 0.5 s of a 1.5 s stance, and the mean
sinkage is the static Hertz overlap (W / (4 k))^(2/3) within 5 % (k from the two materials,
Johnson's closed form written out here). Trot (open loop, 1 s): no fall, forward motion.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mujoco_quadruped.py"


def _example():
    spec = importlib.util.spec_from_file_location("mujoco_quadruped", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a1_stands_at_the_static_hertz_sinkage_and_trots() -> None:
    q = _example()
    t_stand, t_trot = 1.5, 1.0
    rec = q.run(True, t_stand, t_trot)
    dt = float(rec["dt"])
    w = float(rec["weight"])  # the robot's subtree mass times g, from MuJoCo's model
    assert 12.0 < w / 9.81 < 13.0  # the A1's mass (12.46 kg): the model is the robot
    fsum, sink = q.stance(rec, t_stand)  # the last 0.5 s of the stance
    assert np.all(np.abs(fsum - 1.0) < 0.01)
    # Hertz: 1/E* = (1 - nu1^2)/E1 + (1 - nu2^2)/E2, k = 4/3 E* sqrt(R), delta = (F/k)^(2/3)
    e_star = 1.0 / ((1 - q.NU_GROUND**2) / q.E_GROUND + (1 - q.NU_TOE**2) / q.E_TOE)
    k = 4.0 / 3.0 * e_star * math.sqrt(q.TOE_R)
    hertz = (w / 4 / k) ** (2 / 3)
    assert abs(sink / hertz - 1.0) < 0.05
    assert not q.fallen(rec)
    trot = slice(round(t_stand / dt), None)
    assert rec["base"][-1, 0] - rec["base"][trot][0, 0] > 0.05
    # the feet did lift and land during the trot (not a shuffle at constant load)
    assert np.any(rec["force"][trot] == 0.0)
