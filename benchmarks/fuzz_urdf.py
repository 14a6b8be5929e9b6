"""Sweep of generated URDF robots dropped on managed ground, on PyBullet and MuJoCo.

Each seed's robot (``tests/urdf_gen.py``: a floating base and 0-6 links on revolute /
prismatic / fixed joints at random origins, random inertial frames and full inertia tensors,
masses 0.05-50 kg, boxes, spheres, cylinders, capsules and scaled trimesh convex meshes) is
dropped from 2 cm with its joints held, on each host at its usual step (PyBullet 1/240 s,
MuJoCo 2 ms), the ground's pairs managed (``--manage pairs``) or the ground whole
(``--manage whole``), for 1.5 s; the checks of ``tests/urdf_fuzz_rig.py`` (no exception, no
NaN, energy not growing, at rest, sum F / W within 1 %, host vs integrated overlap within 2 %,
sphere contacts at static Hertz within 5 %). Prints per seed and host PASS, FAIL with the
failing checks, or ROLL (still moving at the end as it does with the host's own contact: only
no exception, no NaN and energy are checked), and the counts. No timing.

    PYTHONPATH=$PWD python benchmarks/fuzz_urdf.py --seeds 0-29 --hosts bullet,mujoco \
        --manage pairs,whole

``--dt`` sets the host step (s; e.g. 0.001 for PyBullet at 1/1000 s), ``--kind`` the robots:
``urdf`` (the above, :func:`urdf_gen.random_urdf`) or one of :data:`urdf_gen.KINDS`
(:func:`urdf_gen.random_robot`: legged bodies on box, mesh and sphere feet, with 1-10 g feet
under a 10-50 kg body, with steel feet, fixed-base arms swinging onto the ground; ``arm`` is
PyBullet's only). The counts are given twice: with the energy check as the rig makes it
(kinetic + potential + what the robot stores - the work of the hosts' joint motors and
constraints) and with kinetic + potential energy alone (``energy_mech``: the rig before
issue 18's accounting).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import urdf_fuzz_rig as fr
import urdf_gen


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-29", help="e.g. 0-29 or 1,4,7 (default 0-29)")
    ap.add_argument("--hosts", default="bullet,mujoco", help="bullet, mujoco or both")
    ap.add_argument("--manage", default="pairs,whole", help="pairs, whole or both")
    ap.add_argument("--seconds", type=float, default=fr.SECONDS, help="simulated time (s)")
    ap.add_argument("--dt", type=float, default=None,
                    help="host step (s; default: PyBullet 1/240, MuJoCo 0.002)")
    ap.add_argument("--kind", default="urdf", choices=("urdf", *urdf_gen.KINDS),
                    help="the robots (module docstring; default urdf)")
    args = ap.parse_args(argv)
    if args.dt is not None and not 0.0 < args.dt <= 0.01:
        print(f"fuzz_urdf: --dt must be in (0, 0.01] s, got {args.dt}", file=sys.stderr)
        return 2
    hosts = args.hosts.split(",")
    manages = args.manage.split(",")
    for h in hosts:
        if h not in ("bullet", "mujoco"):
            print(f"fuzz_urdf: --hosts takes bullet, mujoco; got {h!r}", file=sys.stderr)
            return 2
    for mg in manages:
        if mg not in ("pairs", "whole"):
            print(f"fuzz_urdf: --manage takes pairs, whole; got {mg!r}", file=sys.stderr)
            return 2
    if args.seconds <= fr.WINDOW:
        print(f"fuzz_urdf: --seconds must be > {fr.WINDOW}", file=sys.stderr)
        return 2
    seeds = _seeds(args.seeds)
    passed = {(h, mg): 0 for h in hosts for mg in manages}
    rolled = dict.fromkeys(passed, 0)
    passed_mech, rolled_mech = dict.fromkeys(passed, 0), dict.fromkeys(passed, 0)
    with tempfile.TemporaryDirectory() as tmp:
        for s in seeds:
            made = (fr.generate(Path(tmp) / str(s), s) if args.kind == "urdf" else
                    urdf_gen.random_robot(Path(tmp) / str(s), s, args.kind))
            kinds = ",".join(sorted(made.kinds()))
            for h in hosts:
                for mg in manages:
                    fig = fr.run(h, made, mg, args.seconds, dt=args.dt)
                    bad = fr.verdict(fig)
                    roll = not bad and not fig["rest"] < fr.REST
                    passed[(h, mg)] += not bad and not roll
                    rolled[(h, mg)] += roll
                    if not fig.get("exception"):  # the energy check of KE + PE alone
                        old = fr.verdict({**fig, "energy": fig.get("energy_mech",
                                                                   fig["energy"])})
                    else:
                        old = bad
                    passed_mech[(h, mg)] += bool(not old and fig.get("rest", 1.0) < fr.REST)
                    rolled_mech[(h, mg)] += bool(not old and not fig.get("rest", 0.0) < fr.REST)
                    word = "FAIL" if bad else "ROLL" if roll else "PASS"
                    extra = ("" if fig.get("exception") else
                             f" sumF/W {fig['sum_f']:.4f} ovl {fig['overlap']:.2e}"
                             f" hertz {fig['hertz']:.2e} (n={fig['hertz_n']})"
                             f" rest {fig['rest']:.1e} energy {fig['energy']:+.1e}"
                             + (f" (KE+PE alone {fig['energy_mech']:+.1e})"
                                if "energy_mech" in fig else "")
                             + (f" limit {fig['limit']:.2f}" if "limit" in fig else ""))
                    print(f"seed {s:3d} links {len(made.links)} {h:6s} {mg:5s} "
                          f"{word}{extra} [{kinds}]"
                          + ("" if not bad else "  <- " + "; ".join(bad)), flush=True)
    for (h, mg), k in passed.items():
        km, rm = passed_mech[(h, mg)], rolled_mech[(h, mg)]
        print(f"{h} {mg}: {k} / {len(seeds)} pass, {rolled[(h, mg)]} roll as natively, "
              f"{len(seeds) - k - rolled[(h, mg)]} fail; with KE + PE alone {km} / {rm} / "
              f"{len(seeds) - km - rm}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
