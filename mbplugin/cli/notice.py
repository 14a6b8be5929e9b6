"""The one line a command prints on stderr before numba compiles (a first run, an empty cache).

Without it a first ``mbplugin run`` sits silent while the numerical kernels compile. The line
appears only when a compilation actually starts (:func:`mbplugin._jit.on_first_compile`), so a
run that finds everything in the disk cache prints nothing. The estimates are the cold-cache
compile times measured by ``benchmarks/bench_coldstart.py`` (BENCHMARKS.md), rounded up.

A command that writes a progress line in pieces (``validate``: "[1/92] case ..." then, when the
case ends, its result) writes it through :class:`ProgressLine`: a notice that fires while such a
line is open goes on a line of its own, and the open line is written again below it.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import Any, ClassVar, TextIO

from mbplugin._notice import MESSAGE

#: Rough compile time (s) of a first run of each command on a 2-core machine; others: DEFAULT.
ESTIMATE_S: dict[str, int] = {"run": 20, "impact": 15, "compare": 15, "calibrate": 15}
DEFAULT_ESTIMATE_S = 30



class ProgressLine:
    """A text stream for progress lines written in pieces: it passes every write on to
    ``stream`` and remembers the line still open (written without its end of line), so that the
    compile notice can interrupt it cleanly (:func:`with_compile_notice`)."""

    #: the streams whose lines are open now (a notice closes them first)
    OPEN: ClassVar[list[ProgressLine]] = []

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pending = ""

    def write(self, text: str) -> int:
        n = self.stream.write(text)
        tail = text.rsplit("\n", 1)
        self.pending = self.pending + tail[0] if len(tail) == 1 else tail[1]
        if self.pending and self not in ProgressLine.OPEN:
            ProgressLine.OPEN.append(self)
        elif not self.pending and self in ProgressLine.OPEN:
            ProgressLine.OPEN.remove(self)
        return n

    def flush(self) -> None:
        self.stream.flush()


def close_progress_lines() -> None:
    """End the progress lines still open (before a command's last message: an error, an
    interrupt), so that message starts a line of its own."""
    for line in list(ProgressLine.OPEN):
        line.write("\n")
        line.flush()


def _say(message: str) -> None:
    """``message`` on stderr on a line of its own; the progress lines it interrupted are
    written again below it."""
    open_lines = list(ProgressLine.OPEN)
    for line in open_lines:
        line.stream.write("\n")
        line.stream.flush()
    print(message, file=sys.stderr, flush=True)
    for line in open_lines:
        line.stream.write(line.pending)
        line.stream.flush()


def with_compile_notice(func: Callable[[argparse.Namespace], Any],
                        args: argparse.Namespace) -> Callable[[argparse.Namespace], Any]:
    """``func`` (a command), printing :data:`MESSAGE` on stderr when the first compilation
    starts (not with ``--quiet``)."""
    if getattr(args, "quiet", False):
        return func
    from mbplugin._jit import on_first_compile  # imports numba: only for a command that runs

    seconds = ESTIMATE_S.get(getattr(args, "command", None) or "", DEFAULT_ESTIMATE_S)

    def say() -> None:
        _say(MESSAGE.format(s=seconds))

    @functools.wraps(func)
    def wrapped(a: argparse.Namespace) -> Any:
        remove = on_first_compile(say)
        try:
            return func(a)
        finally:
            remove()

    return wrapped

