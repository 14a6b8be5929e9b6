"""``mbplugin impact`` (one binary impact) and ``mbplugin compare`` (the quick-start job)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from mbplugin.cli.common import parse_params, print_json
from mbplugin.errors import ParameterError
from mbplugin.formatting import format_table

#: The laws compared by ``mbplugin compare`` unless --laws is given.
DEFAULT_COMPARE = (
    "hunt_crossley",
    "lankarani_nikravesh",
    "zhiying_qishao",
    "gonthier",
    "flores",
    "safaeifar_farshidianfar",
    "zhang2022",
)


def add_parser(subparsers: Any) -> None:
    """Add the ``impact`` and ``compare`` subcommands."""
    p = subparsers.add_parser("impact", help="simulate one binary collinear impact")
    p.add_argument("--law", required=True, help="law name (see `mbplugin laws`)")
    _add_impact_inputs(p, None, None)
    p.set_defaults(func=_cmd_impact)

    p = subparsers.add_parser("compare",
                              help="compare laws at one prescribed c_r (table + loop plot)")
    p.add_argument("--laws",
                   help=f"comma-separated law names (default: {','.join(DEFAULT_COMPARE)})")
    p.add_argument("--cr", type=float, default=0.5, help="prescribed c_r (default 0.5)")
    p.add_argument("--k", type=float, default=1e9, help="stiffness (default 1e9)")
    p.add_argument("--n", type=float, default=1.5, help="stiffness exponent (default 1.5)")
    _add_impact_inputs(p, 1.0, 1.0)
    p.set_defaults(func=_cmd_compare)


def _add_impact_inputs(p: argparse.ArgumentParser, mass: float | None, v0: float | None) -> None:
    p.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                   help="law parameter, repeatable (e.g. -p k=1e9 -p n=1.5 -p cr=0.5)")
    p.add_argument("--mass", type=float, default=mass, required=mass is None,
                   help="mass of body 1 (kg)")
    p.add_argument("--mass2", type=float, default=math.inf,
                   help="mass of body 2 (kg); default inf (a fixed wall)")
    p.add_argument("--v0", type=float, default=v0, required=v0 is None,
                   help="approach speed at first contact (m/s)")
    p.add_argument("--press", type=float, default=0.0,
                   help="constant force pressing the bodies together (N)")
    p.add_argument("--radius", type=float, default=None,
                   help="effective radius (m), for laws that need it")
    p.add_argument("--rtol", type=float, default=1e-10, help="integrator relative tolerance")
    p.add_argument("--max-steps", type=int, default=None, dest="max_steps",
                   help="integrator steps after which an impact is abandoned (default: "
                        "mbplugin.impact.DEFAULT_MAX_STEPS, 1e7)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--plot", metavar="FILE", help="write the force-indentation loop (png/pdf/svg)")


def _limit(args: argparse.Namespace) -> dict[str, Any]:
    """``max_steps`` for :func:`mbplugin.impact.impact` when --max-steps was given."""
    return {} if args.max_steps is None else {"max_steps": args.max_steps}


def _cmd_impact(args: argparse.Namespace) -> int:
    from mbplugin.impact import impact
    from mbplugin.laws import make_law

    law = make_law(args.law, **parse_params(args.param))
    if args.plot:
        from mbplugin.plotting import check_figure_path

        check_figure_path(args.plot, "--plot")  # before the impact, not after it
    r = impact(law, args.mass, args.v0, mass2=args.mass2, press=args.press, radius=args.radius,
               rtol=args.rtol, record=bool(args.plot), **_limit(args))
    if args.plot:
        from mbplugin.plotting import plot_loops

        plot_loops([r], args.plot, title=f"{law.name}, v0 = {args.v0:g} m/s")
    if args.json:
        print_json(r.to_dict())
        return 0
    d = r.to_dict()
    units = {"duration": "s", "f_max": "N", "t_f_max": "s", "delta_max": "m",
             "delta_residual": "m", "energy_dissipated": "J"}
    print(f"{law!r}: mass {args.mass:g} kg, v0 {args.v0:g} m/s")
    for k, v in d.items():
        print(f"  {k:<18} {v if v is not None else 'inf'} {units.get(k, '')}".rstrip())
    if args.plot:
        print(f"  loop plot written to {args.plot}")
    return 0


# --------------------------------------------------------------------------------------------------
# compare (the quick-start job)
# --------------------------------------------------------------------------------------------------
def _cmd_compare(args: argparse.Namespace) -> int:
    from mbplugin.impact import impact
    from mbplugin.laws import get_law_class

    names = [s.strip() for s in args.laws.split(",") if s.strip()] if args.laws else list(
        DEFAULT_COMPARE
    )
    if not names:
        raise ParameterError("--laws: give at least one law name")
    if args.plot:
        from mbplugin.plotting import check_figure_path

        check_figure_path(args.plot, "--plot")  # before the impacts, not after them
    extra = parse_params(args.param)
    results = []
    for name in names:
        cls = get_law_class(name)
        accepted = {p.name for p in cls.params}
        params = {"k": args.k, "n": args.n, "cr": args.cr, **extra}
        params = {k: v for k, v in params.items() if k in accepted}
        law = cls(**params)
        results.append(impact(law, args.mass, args.v0, mass2=args.mass2, press=args.press,
                              radius=args.radius, record=bool(args.plot), **_limit(args)))
    if args.plot:
        from mbplugin.plotting import plot_loops

        plot_loops(results, args.plot,
                   title=f"c_r = {args.cr:g}, k = {args.k:g}, m = {args.mass:g} kg, "
                         f"v0 = {args.v0:g} m/s")
    if args.json:
        print_json({r.law: r.to_dict() for r in results})
        return 0
    rows = [(r.law, r.cr_out, r.cr_out - args.cr, r.f_max, r.duration * 1e3,
             r.delta_max * 1e6) for r in results]
    print(f"Impact of {args.mass:g} kg at {args.v0:g} m/s on a wall, k = {args.k:g} N/m^{args.n:g},"
          f" prescribed c_r = {args.cr:g}")
    print(format_table(("law", "c_r out", "error", "F_max (N)", "duration (ms)",
                        "delta_max (um)"), rows))
    if args.plot:
        print(f"force-indentation loops written to {args.plot}")
    return 0


