"""``mbplugin fit``: fit a law's free parameters to measured impacts or loops (see
:mod:`mbplugin.identify`, docs/identification.md).

    mbplugin fit --law zhang2022 --data zhang2022_steel_ball --free m,q \
        -p k=2.4144e10 -p n=1.5 --targets f_max
    mbplugin fit --law flores --data drops.csv --free k,cr -p k=1e9 -p cr=0.5 --plot fit.png
    mbplugin fit --law bouc_wen_hunt_crossley --base --data cart.csv --free Bb,Gb,kappa \
        -p Bb=17 -p Gb=13 -p kappa=0.3 -p sigma_b=0.08 -p n=1 -p p=1 -p Tb=0.025 --k-known 255
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``fit`` subcommand."""
    p = subparsers.add_parser(
        "fit", help="fit a law's parameters to measured c_r / duration / peak force or loops",
        description="Least-squares identification of the free parameters of a contact law "
                    "(SciPy least_squares or COBYQA, multi-start) from a CSV of impacts or "
                    "force-indentation loops (docs/identification.md).",
    )
    p.add_argument("--law", required=True, help="law name (see `mbplugin laws`)")
    p.add_argument("--data", required=True,
                   help="CSV file, or the name of a shipped data set (e.g. zhang2022_steel_ball)")
    p.add_argument("--free", required=True, metavar="NAMES",
                   help="comma-separated parameters to fit, e.g. k,cr")
    p.add_argument("-p", dest="law_params", action="append", metavar="NAME=VALUE",
                   help="start value of a free parameter or value of a fixed one, repeatable")
    p.add_argument("--bounds", action="append", metavar="NAME=LO:HI",
                   help="bounds of a free parameter, repeatable")
    p.add_argument("--targets", metavar="NAMES",
                   help="measured columns to fit (default: all of cr, duration, f_max, "
                        "delta_max the data hold)")
    p.add_argument("--weights", metavar="NAME=W,...",
                   help="weight per quantity, e.g. cr=1,f_max=0.5")
    p.add_argument("--method", choices=("least_squares", "cobyqa"), default=None,
                   help="optimiser (default least_squares; cobyqa for --base)")
    p.add_argument("--starts", type=int, default=1, help="number of starts (multi-start)")
    p.add_argument("--seed", type=int, default=0, help="seed of the extra starts")
    p.add_argument("--mass", type=float, help="mass (kg) when the data give none")
    p.add_argument("--mass2", type=float, help="mass of body 2 (kg); default inf (a wall)")
    p.add_argument("--press", type=float, help="constant pressing force (N); default 0")
    p.add_argument("--base", action="store_true",
                   help="Bouc-Wen base-parameter fit (Bb, Gb, kappa, sigma_b, n, p, Tb; "
                        "Milehins & Marghitu 2026, Sect. 7)")
    p.add_argument("--k-known", type=float, dest="k_known",
                   help="with --base: the known spring stiffness (constraint 64, dimensional "
                        "parameters in the report)")
    p.add_argument("--rtol", type=float, default=1e-10, help="integrator relative tolerance")
    p.add_argument("--plot", nargs="?", const="fit.png", metavar="FILE",
                   help="write a data-vs-fit figure (default fit.png)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_fit)
    return p


def _pairs(text: str | None, what: str) -> dict[str, float]:
    from mbplugin.errors import ParameterError

    out: dict[str, float] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, val = item.partition("=")
        try:
            out[key.strip()] = float(val)
        except ValueError:
            sep = ""
        if not sep:
            raise ParameterError(f"{what} {item!r}: expected NAME=NUMBER")
    return out


def _bounds(items: list[str] | None) -> dict[str, tuple[float, float]]:
    from mbplugin.errors import ParameterError

    out: dict[str, tuple[float, float]] = {}
    for item in items or ():
        key, _, rng = item.partition("=")
        lo, sep, hi = rng.partition(":")
        try:
            out[key.strip()] = (float(lo), float(hi))
        except ValueError:
            sep = ""
        if not sep:
            raise ParameterError(f"--bounds {item!r}: expected NAME=LO:HI, e.g. k=1e8:1e10")
    return out


def _cmd_fit(args: argparse.Namespace) -> int:
    from mbplugin.cli.common import parse_params, print_json
    from mbplugin.formatting import format_table
    from mbplugin.identify import fit_bouc_wen_base, fit_law, load_data, plot_fit

    if args.plot:
        from mbplugin.plotting import check_figure_path

        check_figure_path(args.plot, "--plot")  # before the fit, not after it

    def notice(line: str) -> None:
        print(f"mbplugin fit: {line}", file=sys.stderr, flush=True)

    data = load_data(args.data, mass=args.mass, mass2=args.mass2, press=args.press)
    free = [s for s in args.free.split(",") if s.strip()]
    start = parse_params(args.law_params)
    targets = [s.strip() for s in args.targets.split(",")] if args.targets else None
    weights = _pairs(args.weights, "--weights")
    if args.base:
        from mbplugin.identify.data import ImpactData

        if not isinstance(data, ImpactData):
            from mbplugin.errors import ParameterError

            raise ParameterError("--base fits impact tables (v0 with cr/duration), not loops")
        if targets:
            data.targets = {k: v for k, v in data.targets.items() if k in targets}
        res = fit_bouc_wen_base(args.law, data, free, start=start, bounds=_bounds(args.bounds),
                                weights=weights, k=args.k_known, method=args.method or "cobyqa",
                                n_starts=args.starts, seed=args.seed, rtol=args.rtol,
                                notice=notice)
    else:
        res = fit_law(args.law, data, free, start=start, bounds=_bounds(args.bounds),
                      weights=weights, targets=targets, method=args.method or "least_squares",
                      n_starts=args.starts, seed=args.seed, rtol=args.rtol, notice=notice)
    out = res.to_dict()
    if args.plot:
        out["plot"] = str(plot_fit(res, args.plot))
    if args.json:
        print_json(out)
        return 0
    print(f"{res.law}{' (base parameters)' if res.base_model else ''}: {res.n_points} residuals, "
          f"{res.method}, {res.n_starts} start(s), {res.nfev} model evaluations")
    rows = [(k, res.start[k], res.values[k], res.stderr[k]) for k in res.names]
    print(format_table(("parameter", "start", "fitted", "std. error"), rows))
    print()
    print(format_table(("quantity", "rms residual"), [(k, v) for k, v in res.rms.items()]))
    print(f"\ncost {res.cost:.6g}; {'converged' if res.success else 'NOT converged'}: "
          f"{res.message}")
    for w in res.warnings:
        print(f"warning: {w}")
    if "plot" in out:
        print(f"plot written to {out['plot']}")
    if not math.isfinite(res.cost):
        return 1
    return 0
