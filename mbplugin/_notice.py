"""The one line said on stderr when numba starts to compile (a first run, an empty cache), for
scripts: :func:`compile_notice` (exported as ``mbplugin.compile_notice``). The command line says
the same line by itself (:mod:`mbplugin.cli.notice`, which also keeps progress lines whole).
This module imports numba only when a block is entered, so importing it stays light."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

#: The line; ``{s}`` is the expected compile time in seconds.
MESSAGE = ("mbplugin: compiling numerical kernels for the first run (about {s} s; cached "
           "afterwards)...")


@contextlib.contextmanager
def compile_notice(seconds: int = 30) -> Iterator[None]:
    """Inside the block, print :data:`MESSAGE` (with ``seconds``, the expected compile time in
    s) on stderr once, when numba starts its first compilation; nothing when every kernel is in
    the disk cache. For scripts (the examples): ``with mbplugin.compile_notice(60): main()``."""
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 1:
        raise ValueError(f"seconds = {seconds!r}: a whole number of seconds >= 1")
    from mbplugin._jit import on_first_compile

    remove = on_first_compile(lambda: print(MESSAGE.format(s=seconds), file=sys.stderr,
                                            flush=True))
    try:
        yield
    finally:
        remove()
