"""Plot helpers (matplotlib, optional dependency ``mbplugin[plot]``) with atomic file writes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mbplugin._fs import check_writable
from mbplugin.errors import ParameterError

#: File types :func:`save_figure` writes.
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def pyplot() -> Any:
    """matplotlib.pyplot on the non-interactive Agg backend, or a clear error if missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ParameterError(
            "plotting needs matplotlib: pip install 'mbplugin[plot]'"
        ) from None
    return plt


def check_figure_path(path: str | os.PathLike[str], what: str = "plot file") -> Path:
    """Check, before the work that a figure will show, that it can be written to ``path``: an
    allowed extension, matplotlib installed, a directory that exists or can be created (its
    nearest existing ancestor a directory that takes a file). Writes nothing. Raises
    :class:`ParameterError` naming ``what`` (e.g. ``--plot``)."""
    p = Path(path)
    if p.suffix.lower() not in FIGURE_SUFFIXES:
        raise ParameterError(f"{what} {str(p)!r}: allowed extensions are "
                             f"{', '.join(FIGURE_SUFFIXES)}")
    if p.is_dir():
        raise ParameterError(f"{what} {str(p)!r}: is a directory; give a file name")
    pyplot()
    base = Path(os.path.abspath(p.parent))
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise ParameterError(f"{what} {str(p)!r}: cannot create its directory ({str(base)!r} "
                             "is not a directory)")
    check_writable(base, f"{what} {str(p)!r}")
    return p


def save_figure(fig: Any, path: str | os.PathLike[str], dpi: int = 130) -> Path:
    """Write ``fig`` to ``path`` through a temporary file and a rename (never half-written)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        raise ParameterError(f"plot file {str(path)!r}: allowed extensions are .png, .pdf, .svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual file mode
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        pyplot().close(fig)
    return path


def plot_loops(
    results: Sequence[Any], path: str | os.PathLike[str], title: str = ""
) -> Path:
    """Force-indentation loops of recorded impacts (each an ImpactResult with a series)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    for r in results:
        s = r.series
        if s is None:
            raise ParameterError("plot_loops needs impacts run with record=True")
        ax.plot(s.delta * 1e6, s.force, label=f"{r.law} (c_out={r.cr_out:.3f})", lw=1.4)
    ax.set_xlabel("indentation delta (um)")
    ax.set_ylabel("contact force F (N)")
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)
