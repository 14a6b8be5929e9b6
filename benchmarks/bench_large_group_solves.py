"""Benchmark: the large-group implicit step's work on the pile with every pair managed.

The ``pile_all`` case of ``benchmarks/host_pins.py`` (N = 100 spheres on PyBullet's plane,
every pair managed: one large group of ~300 contacts solved by
:func:`mbplugin.pipeline.large_groups.solve`, 60 host steps of 1/240 s), run ``--runs`` times
after one warm-up run. Printed: the sums over the timed runs of the solves' counters
(Gauss-Seidel sweeps, local Newton iterations, force evaluations, dense fallbacks, calls), the
wall time inside ``solve``, each run's CPU time (``time.process_time``) and the load average.
Compare two trees by alternating them, each with its own numba cache:

    PYTHONPATH=<tree A> NUMBA_CACHE_DIR=<its cache> \
        python benchmarks/bench_large_group_solves.py --runs 3
    PYTHONPATH=<tree B> NUMBA_CACHE_DIR=<its cache> \
        python benchmarks/bench_large_group_solves.py --runs 3
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs (1-20)")
    args = ap.parse_args()
    if not 1 <= args.runs <= 20:
        ap.error(f"--runs {args.runs} is outside its allowed range 1..20")
    from mbplugin.pipeline import large_groups as lg

    tot: dict[str, Any] = {}
    solve = lg.solve

    def counted(*a: Any, **k: Any) -> Any:
        out = solve(*a, **k)
        for key in ("sweeps", "newton", "nfev", "dense", "wall"):
            tot[key] = tot.get(key, 0) + out[-1][key]
        tot["calls"] = tot.get("calls", 0) + 1
        return out

    lg.solve = counted  # (looked up at each call by pipeline/substep.py)
    spec = importlib.util.spec_from_file_location("host_pins", HERE / "host_pins.py")
    pins = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pins)
    pins.CASES["pile_all"]()  # warm-up: compiled kernels loaded
    tot.clear()
    cpu = []
    for _ in range(args.runs):
        t0 = time.process_time()
        pins.CASES["pile_all"]()
        cpu.append(time.process_time() - t0)
    print(f"{lg.__file__}")
    print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                           for k, v in tot.items()))
    print(f"  CPU per run (s): {', '.join(f'{x:.3f}' for x in cpu)}; "
          f"load {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
