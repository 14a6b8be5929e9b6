"""The full acceptance matrix of issue 18 for the robots of ``tests/robot_rig.py``, both host
steps: what ``tests/test_bullet_robots.py`` checks on every robot at 1/240 s (and on a subset at
1/1000 s with shorter runs), here on every robot at 1/240 s and 1/1000 s with the full
durations.

Per robot and host step:

* quiet stance and creep: 11 s of stance with the tangential spring (Dahl), native alongside;
  over the last 0.5 s the summed foot force over the weight (within 1 %), every loaded
  contact's host overlap (``getClosestPoints``) against the backend's (2 %) and against the
  static Hertz overlap of its force (5 %), the backend's slip against the host's (2 %, floor
  1e-5 m/s); the feet's creep from 1 s to 11 s against native's (+ 0.5 mm);
* the same stance figures with regularised friction (3 s) and with steel feet on steel
  ground (3 s, over the last 1.5 s);
* dropped from 5 cm onto the feet, then 5 s of the open-loop gait: no exception, standing
  after the landing where native PyBullet is, not fallen in the gait where native PyBullet is
  not (at this host step and at 1/1000 s), the overlaps within 2 % at every loaded step of the
  gait while the robot is up.

Prints one line per robot, host step and check with the figures and PASS / FAIL; exit 1 if
one fails.

    python benchmarks/robots_matrix.py [--robots a1,...] [--hz 240,1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import robot_rig as rr


def _window(rec: dict, start: int, stop: int | None = None) -> dict:
    return {k: v[start:stop] if isinstance(v, list) or k in ("base", "tilt") else v
            for k, v in rec.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default=",".join(rr.ROBOTS), help="comma-separated")
    ap.add_argument("--hz", default="240,1000", help="host steps per second, comma-separated")
    args = ap.parse_args(argv)
    names = args.robots.split(",")
    unknown = [n for n in names if n not in rr.ROBOTS]
    if unknown:
        print(f"error: --robots: unknown {unknown[0]!r} (known: {', '.join(rr.ROBOTS)})",
              file=sys.stderr)
        return 2
    ok = True
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)

    def report(name: str, hz: float, check: str, fails: list[str], figures: str) -> None:
        nonlocal ok
        ok &= not fails
        verdict = "PASS" if not fails else "FAIL: " + "; ".join(fails)
        print(f"{name:13s} 1/{hz:<5g} {check:16s} {figures}  {verdict}", flush=True)

    def fig_text(fig: dict) -> str:
        return (f"sumF/W {fig['sum_f']:.4f}, overlap {fig['overlap']:.2e}, "
                f"Hertz {fig['hertz']:.2e}, slip {fig['slip']:+.1e}")

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name in names:
            spec = rr.ROBOTS[name]
            for hz in (float(h) for h in args.hz.split(",")):
                dt = 1.0 / hz
                t0 = time.perf_counter()
                ours = rr.run(spec, d, dt, 11.0, tangential={"stick": rr.STICK},
                              record_from=10.5, creep_from=1.0)
                native = rr.run(spec, d, dt, 11.0, ours=False, record_from=10.5,
                                creep_from=1.0)
                fig = rr.stance_figures(ours, rr.RUBBER)
                fails = rr.stance_failures(fig)
                cr, cn = rr.creep(ours), rr.creep(native)
                if not cr <= cn + rr.CREEP:
                    fails.append(f"creep {cr * 1e3:.2f} mm > native {cn * 1e3:.2f} + 0.5")
                report(name, hz, "stance (spring)", fails,
                       fig_text(fig) + f", creep {cr * 1e3:.3f} (native {cn * 1e3:.3f}) mm")
                rec = rr.run(spec, d, dt, 3.0, record_from=2.5)
                fig = rr.stance_figures(rec, rr.RUBBER)
                report(name, hz, "stance (friction)", rr.stance_failures(fig), fig_text(fig))
                rec = rr.run(spec, d, dt, 3.0, materials=rr.STEEL, record_from=1.5)
                fig = rr.stance_figures(rec, rr.STEEL)
                report(name, hz, "stance (steel)", rr.stance_failures(fig), fig_text(fig))
                fails = []
                try:
                    ours = rr.run(spec, d, dt, 6.0, lift=0.05, t_gait=1.0)
                except Exception as exc:  # the acceptance: no exception
                    report(name, hz, "drop + gait", [f"{type(exc).__name__}: {exc}"], "")
                    continue
                native = rr.run(spec, d, dt, 6.0, lift=0.05, t_gait=1.0, ours=False)
                fine = rr.run(spec, d, 1 / 1000, 6.0, lift=0.05, t_gait=1.0, ours=False,
                              record=False)
                n1 = round(1.0 / dt)
                if not rr.fell(_window(native, 0, n1)) and rr.fell(_window(ours, 0, n1)):
                    fails.append("fell at the landing (native did not)")
                if not (rr.fell(native) or rr.fell(fine)) and rr.fell(ours):
                    fails.append("fell in the gait (native did not, at 1/240 nor 1/1000 s)")
                gait = rr.stance_figures(_window(ours, n1, max(n1, rr.upright(ours))),
                                         rr.RUBBER)
                if not gait["overlap"] <= rr.OVERLAP:
                    fails.append(f"gait overlap {gait['overlap']:.3g}")
                report(name, hz, "drop + gait", fails,
                       f"fell ours {rr.fell(ours)} native {rr.fell(native)} (1/1000 s: "
                       f"{rr.fell(fine)}), forward "
                       f"{ours['base'][-1][0]:+.2f} m (native {native['base'][-1][0]:+.2f}),"
                       f" gait overlap {gait['overlap']:.2e} "
                       f"[{time.perf_counter() - t0:.0f} s]")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
