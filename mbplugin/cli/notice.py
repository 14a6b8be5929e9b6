"""The one line a command prints on stderr before numba compiles (a first run, an empty cache).

Without it a first ``mbplugin run`` sits silent while the numerical kernels compile. The line
appears only when a compilation actually starts (:func:`mbplugin._jit.on_first_compile`), so a
run that finds everything in the disk cache prints nothing. The estimates are the cold-cache
compile times measured by ``benchmarks/bench_coldstart.py`` (BENCHMARKS.md), rounded up.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import Any

#: Rough compile time (s) of a first run of each command on a 2-core machine; others: DEFAULT.
ESTIMATE_S: dict[str, int] = {"run": 20, "impact": 15, "compare": 15, "calibrate": 15}
DEFAULT_ESTIMATE_S = 30

MESSAGE = ("mbplugin: compiling numerical kernels for the first run (about {s} s; cached "
           "afterwards)...")


def with_compile_notice(func: Callable[[argparse.Namespace], Any],
                        args: argparse.Namespace) -> Callable[[argparse.Namespace], Any]:
    """``func`` (a command), printing :data:`MESSAGE` on stderr when the first compilation
    starts (not with ``--quiet``)."""
    if getattr(args, "quiet", False):
        return func
    from mbplugin._jit import on_first_compile  # imports numba: only for a command that runs

    seconds = ESTIMATE_S.get(getattr(args, "command", None) or "", DEFAULT_ESTIMATE_S)

    def say() -> None:
        print(MESSAGE.format(s=seconds), file=sys.stderr, flush=True)

    @functools.wraps(func)
    def wrapped(a: argparse.Namespace) -> Any:
        remove = on_first_compile(say)
        try:
            return func(a)
        finally:
            remove()

    return wrapped
