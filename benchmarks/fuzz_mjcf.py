"""Sweep of generated MJCF scenes (``tests/mjcf_gen.py``, issue 21) with their feet-ground pairs
managed on MuJoCo: per seed PASS, FAIL with the failing checks, or REFUSED with the
construction's one-line error (e.g. RK4, which ``mj_step1``/``mj_step2`` do not provide), and
the counts. Checks (:func:`mjcf_gen.run`): no exception or NaN, sum F = m g cos(tilt) within
1 % at rest, each loaded foot's overlap against ``mj_geomDistance`` within 2 %, a sphere foot's
static overlap against Hertz within 5 %, the unmanaged sphere bitwise native. No timing.

    PYTHONPATH=$PWD python benchmarks/fuzz_mjcf.py --seeds 0-59
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import mjcf_gen as mg


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-29", help="e.g. 0-59 or 1,4,7 (default 0-29)")
    args = ap.parse_args(argv)
    counts = {"PASS": 0, "FAIL": 0, "REFUSED": 0}
    for seed in _seeds(args.seeds):
        sc = mg.random_mjcf(seed)
        fig = mg.run(sc)
        bad = mg.verdict(fig)
        state = "REFUSED" if fig["refused"] else "FAIL" if bad else "PASS"
        counts[state] += 1
        why = fig["refused"] or "; ".join(bad)
        print(f"seed {seed:3d} {sc.label():70s} {state}" + (f"  <- {why}" if why else ""),
              flush=True)
    print(f"mjcf: {counts['PASS']} pass, {counts['FAIL']} fail, {counts['REFUSED']} refused")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
