"""The ``mbplugin`` command line.

Every subcommand lives in its own module of this package and exposes ``add_parser(subparsers)``
(its parser sets ``func``); :data:`COMMAND_MODULES` lists them in the order ``--help`` shows
them. Only this package formats output for the terminal; library modules never import it. Every
command that reports numbers takes ``--json``. Bad input prints one line on stderr and exits with
code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from mbplugin import __version__
from mbplugin.cli.common import parse_params, print_json
from mbplugin.cli.notice import close_progress_lines, with_compile_notice
from mbplugin.errors import MBPluginError, reraise_interrupt
from mbplugin.formatting import format_table

__all__ = ["COMMAND_MODULES", "build_parser", "format_table", "main", "parse_params",
           "print_json"]

#: Modules that add subcommands (``add_parser(subparsers)``); imported when the parser is built.
COMMAND_MODULES: tuple[str, ...] = (
    "mbplugin.cli.laws",
    "mbplugin.cli.impact",
    "mbplugin.cli.calibrate",
    "mbplugin.cli.run",
    "mbplugin.cli.validate",
    "mbplugin.cli.fit",
    "mbplugin.cli.sweep",
)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"mbplugin: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``mbplugin`` argument parser with every subcommand registered."""
    parser = _Parser(prog="mbplugin", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"mbplugin {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for mod_name in COMMAND_MODULES:
        importlib.import_module(mod_name).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        # a Ctrl-C while the commands' modules and numba are imported (seconds on a loaded
        # machine) is an interrupt too: one line, exit 130, not a traceback
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        args.func = with_compile_notice(args.func, args)
    except KeyboardInterrupt:
        print("mbplugin: interrupted", file=sys.stderr)
        return 130
    try:
        try:
            return int(args.func(args) or 0)
        except SystemError as exc:  # a Ctrl-C seen inside a compiled call
            reraise_interrupt(exc)
            raise
    except (MBPluginError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        close_progress_lines()
        print(f"mbplugin: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        close_progress_lines()
        print("mbplugin: interrupted", file=sys.stderr)
        return 130
