"""Output directories of runs: checked before a run, replaced as a whole after it.

* :func:`prepare_output_dir` runs *before* the simulation: it creates the directory, checks that
  a file can be written there and that it is empty or holds an earlier mbplugin run (its
  ``summary.json`` lists the run's files under ``output``); anything else raises
  :class:`OutputDirError` (one line), so a long run is never lost to an unwritable or foreign
  ``--out``.
* :func:`atomic_write` writes a file through a temporary file in the same directory and a rename
  (a reader never sees a half-written file), with the user's usual file mode (``0666 & ~umask``,
  like any file the user creates; ``mkstemp`` alone gives 0600).
* :func:`remove_stale` removes the files an earlier run left in the directory that this run
  did not rewrite (stale records or plots never mix with new ones).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from mbplugin.errors import ParameterError

MANIFEST = "summary.json"  #: lists the run's files under "output"
#: Files an mbplugin run writes: a directory holding only these (a run made before manifests
#: existed) counts as an earlier run.
KNOWN_OUTPUTS = frozenset({
    "result.npz", "bodies.csv", "contacts.csv", "energy.csv", "bounces.csv", "summary.json",
    "trajectory.png", "energy.png", "bounces.png", "loops.png",
})


class OutputDirError(ParameterError):
    """The output directory cannot take the run's files (named in the message)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename, mode 0666 & ~umask."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def previous_run_files(out: Path) -> list[str] | None:
    """Files of the earlier run recorded in ``out``'s manifest; None if there is no manifest."""
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        files = data["output"]
        return [Path(f).name for f in files if isinstance(f, str)] + [MANIFEST]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    try:
        entries = {p.name for p in out.iterdir()}
    except OSError:
        return None
    if entries and entries <= KNOWN_OUTPUTS:
        return sorted(entries)
    return None


def prepare_output_dir(out_dir: str | os.PathLike[str]) -> Path:
    """Create and check ``out_dir`` before a run (see the module docstring)."""
    out = Path(out_dir)
    where = f"--out {str(out)!r}"
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{where}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputDirError(f"{where}: cannot create the directory ({exc.strerror})") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".mbplugin-write-test.", dir=out)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise OutputDirError(f"{where}: cannot write there ({exc.strerror})") from None
    entries = [p.name for p in out.iterdir()]
    if entries and previous_run_files(out) is None:
        raise OutputDirError(
            f"{where}: the directory is not empty and holds no earlier mbplugin run "
            f"({len(entries)} entries, e.g. {sorted(entries)[0]!r}); choose an empty or new "
            f"directory"
        )
    return out


def remove_stale(out: Path, previous: list[str] | None, written: Iterable[Path]) -> None:
    """Remove the files of an earlier run (``previous``, from :func:`previous_run_files` taken
    before the new files were written) that this run did not rewrite."""
    names = {Path(p).name for p in written}
    for name in previous or ():
        if name not in names:
            try:
                (out / name).unlink()
            except OSError:
                pass
