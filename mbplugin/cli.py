"""The ``mbplugin`` command line.

Subcommands: ``laws`` (the catalogue), ``impact`` (one impact), ``compare`` (several laws at one
prescribed c_r: the quick-start job), plus the commands other modules register through
:data:`COMMAND_MODULES` (each module exposes ``add_parser(subparsers)``; its parser sets
``func``). Every command that reports numbers takes ``--json``. Bad input prints one line on
stderr and exits with code 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from mbplugin import __version__
from mbplugin.errors import MBPluginError, ParameterError

#: Modules that add subcommands (``add_parser(subparsers)``); imported lazily.
COMMAND_MODULES: tuple[str, ...] = (
    "mbplugin.laws.calibrate_cli",
    "mbplugin.scene_cli",
    "mbplugin.validation.cli",
)

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


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"mbplugin: error: {message}\n")


def parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    """``['k=1e9', 'power=complex']`` -> ``{'k': 1e9, 'power': 'complex'}``."""
    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise ParameterError(f"-p {item!r}: expected NAME=VALUE, e.g. -p k=1e9")
        key, _, raw = item.partition("=")
        key = key.strip()
        if not key:
            raise ParameterError(f"-p {item!r}: empty parameter name")
        raw = raw.strip()
        try:
            out[key] = float(raw)
        except ValueError:
            out[key] = raw
    return out


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def print_json(obj: Any) -> None:
    """Print one JSON document (non-finite floats become null)."""
    print(json.dumps(_json_safe(obj), indent=2, allow_nan=False))


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned numeric columns."""

    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            if not math.isfinite(v):
                return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
            return f"{v:.6g}"
        return str(v)

    text = [[cell(v) for v in r] for r in rows]
    numeric = [all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)
               for i in range(len(header))]
    widths = [max(len(h), *(len(r[i]) for r in text)) if text else len(h)
              for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for r in text:
        lines.append("  ".join(c.rjust(w) if numeric[i] else c.ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# laws
# --------------------------------------------------------------------------------------------------
def _cmd_laws(args: argparse.Namespace) -> int:
    from mbplugin.laws import get_law_class, law_classes

    classes = [get_law_class(args.name)] if args.name else law_classes()
    described = [c.describe() for c in classes]
    if args.markdown:
        print(laws_markdown(described))
        return 0
    if args.json:
        print_json(described if not args.name else described[0])
        return 0
    if args.name:
        d = described[0]
        print(f"{d['name']}: {d['title']}")
        if d["aliases"]:
            print(f"  aliases:  {', '.join(d['aliases'])}")
        print(f"  equation: {d['equation']}")
        print(f"  c_r:      {d['cr_range']}")
        print(f"  tension:  {d['tension']}")
        if d["state"] or d["memory"]:
            print(f"  state:    {', '.join(d['state'] + d['memory'])}")
        print(f"  source:   {d['source']}")
        print("  parameters:")
        for p in d["params"]:
            default = "" if p.get("default") is None else f" (default {p['default']})"
            unit = f" [{p['unit']}]" if p.get("unit") and p["unit"] != "-" else ""
            print(f"    {p['name']:<9} {p['range']:<16} {p['doc']}{unit}{default}")
        return 0
    rows = [
        (d["name"], " ".join(p["name"] for p in d["params"]), d["cr_range"], d["source"][:60])
        for d in described
    ]
    print(format_table(("law", "parameters", "valid c_r", "source"), rows))
    print(f"\n{len(rows)} laws; `mbplugin laws NAME` for details, --json for machines.")
    return 0


def laws_markdown(described: Sequence[dict[str, Any]]) -> str:
    """The law catalogue as Markdown (``mbplugin laws --markdown > docs/laws.md``)."""
    out = [
        "# Law catalogue",
        "",
        "Generated from the registry by `mbplugin laws --markdown > docs/laws.md`; do not edit by",
        "hand. Conventions: delta >= 0 penetration (m), ddelta > 0 approaching (m/s), F > 0",
        "repulsive (N), c_r is Newton's coefficient; v_in is the impact speed latched at onset,",
        "m_eff and r_eff the effective mass and radius. `mbplugin laws NAME` prints one entry.",
        "",
        "| law | equation | valid c_r | source |",
        "|---|---|---|---|",
    ]
    for d in described:
        eq = d["equation"].replace("|", "\\|")
        out.append(f"| [`{d['name']}`](#{d['name']}) | {eq} | {d['cr_range']} | {d['source']} |")
    for d in described:
        out += ["", f"## {d['name']}", "", f"**{d['title']}**"]
        if d["aliases"]:
            out.append(f"(aliases: {', '.join('`' + a + '`' for a in d['aliases'])})")
        out += ["", f"- Equation: `{d['equation']}`", f"- Valid c_r: {d['cr_range']}",
                f"- Tension: {d['tension']}", f"- Source: {d['source']}"]
        needs = d["needs"] if isinstance(d["needs"], str) else ", ".join(d["needs"])
        if needs:
            out.append(f"- Latched at onset: {needs}")
        if d["state"] or d["memory"]:
            out.append(f"- Per-contact state: {', '.join(d['state'] + d['memory'])}")
        out += ["", "| parameter | allowed | default | unit | meaning |", "|---|---|---|---|---|"]
        for p in d["params"]:
            default = "" if p.get("default") is None else str(p["default"])
            unit = p.get("unit", "")
            out.append(f"| `{p['name']}` | {p['range']} | {default} | {unit} | {p['doc']} |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------
# impact
# --------------------------------------------------------------------------------------------------
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
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--plot", metavar="FILE", help="write the force-indentation loop (png/pdf/svg)")


def _cmd_impact(args: argparse.Namespace) -> int:
    from mbplugin.impact import impact
    from mbplugin.laws import make_law

    law = make_law(args.law, **parse_params(args.param))
    r = impact(law, args.mass, args.v0, mass2=args.mass2, press=args.press, radius=args.radius,
               rtol=args.rtol, record=bool(args.plot))
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
    extra = parse_params(args.param)
    results = []
    for name in names:
        cls = get_law_class(name)
        accepted = {p.name for p in cls.params}
        params = {"k": args.k, "n": args.n, "cr": args.cr, **extra}
        params = {k: v for k, v in params.items() if k in accepted}
        law = cls(**params)
        results.append(impact(law, args.mass, args.v0, mass2=args.mass2, press=args.press,
                              radius=args.radius, record=bool(args.plot)))
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


# --------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mbplugin", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"mbplugin {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("laws", help="list the force laws (parameters, valid c_r, source)")
    p.add_argument("name", nargs="?", help="show one law in detail")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--markdown", action="store_true", help="print the catalogue as Markdown")
    p.set_defaults(func=_cmd_laws)

    p = sub.add_parser("impact", help="simulate one binary collinear impact")
    p.add_argument("--law", required=True, help="law name (see `mbplugin laws`)")
    _add_impact_inputs(p, None, None)
    p.set_defaults(func=_cmd_impact)

    p = sub.add_parser("compare", help="compare laws at one prescribed c_r (table + loop plot)")
    p.add_argument("--laws",
                   help=f"comma-separated law names (default: {','.join(DEFAULT_COMPARE)})")
    p.add_argument("--cr", type=float, default=0.5, help="prescribed c_r (default 0.5)")
    p.add_argument("--k", type=float, default=1e9, help="stiffness (default 1e9)")
    p.add_argument("--n", type=float, default=1.5, help="stiffness exponent (default 1.5)")
    _add_impact_inputs(p, 1.0, 1.0)
    p.set_defaults(func=_cmd_compare)

    for mod_name in COMMAND_MODULES:
        importlib.import_module(mod_name).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (MBPluginError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"mbplugin: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mbplugin: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
