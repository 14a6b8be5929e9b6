"""``mbplugin calibrate``: the damping value that reproduces a target c_r (see :mod:`.calibrate`).

    mbplugin calibrate --law hunt_crossley -p k=1e9 --target 0.7 --v0 1 --mass 1
    mbplugin calibrate --law tsuji -p k=1e9 -p alpha=0.1 --target 0.5 --v0 1 --mass 1 --json
    mbplugin calibrate --law xiong -p k=1e9 -p beta1=1e-5 -p gamma=1e5 --param beta1 ...
"""

from __future__ import annotations

import argparse
import math
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``calibrate`` subcommand on the CLI's subparsers."""
    p = subparsers.add_parser(
        "calibrate",
        help="find the parameter value that reproduces a target c_r at one impact",
        description="Vary one law parameter (default: its c_r input or damping coefficient) "
                    "until the impact analyser returns the target coefficient of restitution.",
    )
    p.add_argument("--law", required=True, help="law name (see `mbplugin laws`)")
    p.add_argument("-p", dest="law_params", action="append", metavar="NAME=VALUE",
                   help="law parameter, repeatable (the calibrated one is the starting value)")
    p.add_argument("--param", dest="cal_param", metavar="NAME", default=None,
                   help="parameter to calibrate (default: the law's cr / damping coefficient)")
    p.add_argument("--target", type=float, required=True, help="target c_r in (0, 1]")
    p.add_argument("--v0", type=float, required=True, help="approach speed at contact (m/s)")
    p.add_argument("--mass", type=float, required=True, help="mass of body 1 (kg)")
    p.add_argument("--mass2", type=float, default=math.inf,
                   help="mass of body 2 (kg); default inf (a fixed wall)")
    p.add_argument("--press", type=float, default=0.0,
                   help="constant force pressing the bodies together (N)")
    p.add_argument("--radius", type=float, default=None,
                   help="effective radius (m), for laws that need it")
    p.add_argument("--rtol", type=float, default=1e-10, help="integrator relative tolerance")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_calibrate)
    return p


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from mbplugin.cli.common import parse_params, print_json
    from mbplugin.formatting import format_table
    from mbplugin.impact import calibrate
    from mbplugin.laws import get_law_class, make_law

    params = parse_params(args.law_params)
    names = {q.name for q in get_law_class(args.law).params}
    if "cr" in names and "cr" not in params and args.cal_param in (None, "cr"):
        params["cr"] = args.target  # start the search from the target itself
    law = make_law(args.law, **params)
    cal = calibrate(law, args.target, args.v0, args.mass, param=args.cal_param,
                    mass2=args.mass2, press=args.press, radius=args.radius, rtol=args.rtol)
    if args.json:
        print_json(cal.to_dict())
        return 0
    print(f"{cal.law!r}: mass {args.mass:g} kg, v0 {args.v0:g} m/s")
    rows = [(cal.law.name, cal.param, f"{cal.value:.12g}", cal.target, f"{cal.cr:.12g}",
             cal.cr - cal.target, cal.cached)]
    print(format_table(("law", "parameter", "value", "target c_r", "c_r", "error", "cached"),
                       rows))
    return 0
