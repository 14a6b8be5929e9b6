"""Fit a law to drop-test data, then map laws over speeds with a sweep.

1. Identification. Zhang et al. (2022) measured the peak force of a 0.54 kg steel ball at 0.15
   and 0.5 m/s (Tables 1-2, shipped as the ``zhang2022_steel_ball`` data set). For each
   damping exponent m the paper tried, fit the velocity exponent q of their law to those peak
   forces. The paper's conclusion (Sect. 6): larger m and smaller q give a larger peak force,
   so the best q must grow with m.
2. Sweep. Three Hunt-Crossley-family laws x input c_r x speeds x masses in one table (Parquet),
   with the c_r map plot. The family's output c_r depends on its damping factor chi(c_r) only
   (the exact relation, review Eq. 5.23), never on speed or mass: the example checks every row.

    python examples/fit_and_sweep.py [--short] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import mbplugin
from mbplugin.identify import fit_law, load_data, plot_fit
from mbplugin.laws import exact_cr, get_law_class
from mbplugin.sweep import build_spec, plot_cr_map, run_sweep

K, N = 2.4144e10, 1.5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/fit_and_sweep", help="where the table and plots go")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ok = True

    data = load_data("zhang2022_steel_ball")
    best = {}
    for m in (1.2, 1.5, 1.8):
        res = fit_law("zhang2022", data, ["q"], start={"k": K, "n": N, "m": m, "q": 1.0},
                      targets=["f_max"])
        best[m] = res.values["q"]
        print(f"zhang2022, m = {m}: best q = {res.values['q']:.4f} +- {res.stderr['q']:.4f}, "
              f"peak-force errors {', '.join(f'{e:+.2%}' for e in res.residuals['f_max'])}")
        if m == 1.2:
            print(f"  plot: {plot_fit(res, out / 'fit_m1.2.png')}")
    grows = best[1.2] < best[1.5] < best[1.8]
    print(f"best q grows with m (larger m needs larger q for the same peak force): {grows}")
    ok &= grows

    n_cr, n_v = (5, 4) if args.short else (50, 20)
    spec = build_spec({
        "sweep": {"chunk_size": 2000},
        "laws": [{"names": ["hunt_crossley", "lankarani_nikravesh", "flores"],
                  "params": {"k": K, "n": N},
                  "grid": {"cr": {"linspace": [0.1, 1.0, n_cr]}}}],
        "impacts": {"v0": {"geomspace": [0.01, 5.0, n_v]}, "mass": [0.05, 0.54, 5.0]},
    })
    rep, table = run_sweep(spec, out / "cr_map.parquet", workers=1, overwrite=True)
    print(f"sweep: {rep.n_runs} impacts in {rep.wall_time:.2f} s -> {rep.out}")
    rows = table.to_pylist()
    worst = max(abs(r["cr_out"] - exact_cr(float(get_law_class(r["law"]).chi(r["cr"]))))
                for r in rows)
    print(f"largest |c_r - exact relation| over the table: {worst:.2e}")
    ok &= worst < 1e-7 and rep.errors == 0
    print(f"c_r map: {plot_cr_map(table, out / 'cr_map.png')}")
    spread = {name: float(np.ptp([r["cr_out"] for r in rows
                                  if r["law"] == name and r["cr"] == 0.1]))
              for name in ("hunt_crossley", "flores")}
    print(f"spread of c_r over speed and mass at c_r input 0.1: {spread}")
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    with mbplugin.compile_notice(25):  # a first run compiles (~25 s on 2 cores)
        sys.exit(main())
