"""``mbplugin laws``: the law catalogue on the terminal, as JSON or as Markdown."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from typing import Any

from mbplugin.cli.common import print_json
from mbplugin.formatting import format_table


def add_parser(subparsers: Any) -> None:
    """Add the ``laws`` subcommand."""
    p = subparsers.add_parser("laws", help="list the force laws (parameters, valid c_r, source)")
    p.add_argument("name", nargs="?", help="show one law in detail")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--markdown", action="store_true", help="print the catalogue as Markdown")
    p.set_defaults(func=_cmd_laws)


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
    rows = [(d["name"], " ".join(p["name"] for p in d["params"]), d["cr_range"], d["source"])
            for d in described]
    print(format_table(("law", "parameters", "valid c_r", "source"), _fit(rows)))
    print(f"\n{len(rows)} laws; `mbplugin laws NAME` for details, --json for machines.")
    return 0


def _fit(rows: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """Shorten the last columns so that every line fits the terminal (``COLUMNS``)."""
    width = shutil.get_terminal_size((100, 24)).columns
    heads = ("law", "parameters", "valid c_r")
    fixed_w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads[:1])]
    # law names stay whole; parameters, c_r and source share what is left
    left = width - fixed_w[0] - 2 * 3
    out = []
    for name, params, cr, src in rows:
        out.append((name, params, cr, src))
    for col, share in ((1, 0.3), (2, 0.25)):
        cap = max(8, int(left * share))
        out = [tuple(_cut(v, cap) if i == col else v for i, v in enumerate(r)) for r in out]
    used = fixed_w[0] + sum(max(len(h), *(len(r[i]) for r in out))
                            for i, h in enumerate(heads) if i) + 2 * 3
    cap = max(8, width - used)
    return [(a, b, c, _cut(d, cap)) for a, b, c, d in out]


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(n - 3, 1)] + "..."


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


