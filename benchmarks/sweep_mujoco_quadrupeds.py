"""The URDF quadrupeds of ``tests/robot_rig.py`` (A1, Laikago, Aliengo, Mini Cheetah) loaded
into MuJoCo by its URDF importer (``tests/mujoco_robot_rig.py``) at the host steps a user
picks, 1, 2 and 4 ms, under MuJoCo's Euler and implicitfast integrators (issue 21, branch
mjfuzz): every foot-floor pair managed (Hunt-Crossley cr = 0.3, Hertz's k, rubber-like ground,
hard toes), the rig's joint PD.

Per robot, step and integrator:

* ``stance``: 3 s of stance; over the last 0.5 s the largest |sum F / W - 1| of a step
  (weight from MuJoCo's masses; pass within 1 %) and the largest |overlap / static Hertz - 1|
  over the loaded feet (the host's overlap R - z against (F / k)^(2/3), written out in
  ``tests/robot_rig.py``; pass within 5 %).
* ``gait``: dropped from 5 cm, 1 s of stance then 1.5 s of the rig's open-loop trot: fell or
  not, with native MuJoCo's run of the same model beside it (a fall that native shares is the
  controller's, not the contact's).

No timing. ``PYTHONPATH=$PWD python benchmarks/sweep_mujoco_quadrupeds.py [--robots a1,...]
[--dts 0.001,0.002,0.004] [--integrators euler,implicitfast]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import mujoco_robot_rig as mr
import robot_rig as rr


def one(name: str, dt: float, integrator: str) -> dict[str, object]:
    """The three figures of ``name`` at step ``dt`` (s) under ``integrator``."""
    spec = mr.ROBOTS[name]
    mr.DT = dt
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        r = mr.model(spec, Path(tmp), integrator=integrator)
        r.m.opt.timestep = dt
        try:
            rec = mr.run(spec, r, 3.0, record_from=2.5)
            fig = mr.stance_figures(rec)
            out["sum_f"] = fig["sum_f_worst"]
            out["hertz"] = fig["hertz"]
            out["loaded"] = f"{fig['loaded']}/{len(r.feet)}"
            out["stance"] = (fig["sum_f_worst"] <= rr.SUM_F and fig["hertz"] <= rr.HERTZ
                             and fig["loaded"] == len(r.feet))
        except Exception as exc:
            out["stance"] = f"{type(exc).__name__}: {str(exc)[:120]}"
        try:
            native = mr.run(spec, r, 2.5, ours=False, lift=0.05, t_gait=1.0)
            ours = mr.run(spec, r, 2.5, lift=0.05, t_gait=1.0)
            out["gait"] = ("fell" if mr.fell(ours) else "walks") + (
                " (native fell)" if mr.fell(native) else "")
            out["dx"] = (float(ours["base"][-1, 0] - ours["base"][0, 0]),
                         float(native["base"][-1, 0] - native["base"][0, 0]))
        except Exception as exc:
            out["gait"] = f"{type(exc).__name__}: {str(exc)[:120]}"
    mr.DT = 0.002
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", default="a1,laikago,aliengo,mini_cheetah")
    ap.add_argument("--dts", default="0.001,0.002,0.004")
    ap.add_argument("--integrators", default="euler,implicitfast")
    a = ap.parse_args(argv)
    bad = 0
    for name in a.robots.split(","):
        for dt in (float(x) for x in a.dts.split(",")):
            for integ in a.integrators.split(","):
                f = one(name, dt, integ)
                ok = f.get("stance") is True and str(f.get("gait", "")).startswith("walks")
                bad += not ok
                sf = f"{f['sum_f']:.2e}" if "sum_f" in f else "-"
                hz = f"{f['hertz']:.3f}" if "hertz" in f else "-"
                dx = ("" if "dx" not in f else
                      f" dx {f['dx'][0]:+.3f} m (native {f['dx'][1]:+.3f})")
                print(f"{name:13s} {dt * 1e3:g} ms {integ:12s} stance {f['stance']!s:5s} "
                      f"|sumF/W-1| {sf} |d/hertz-1| {hz} loaded {f.get('loaded', '-')} "
                      f"gait {f['gait']}{dx}", flush=True)
    print(f"{bad} not passing", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
