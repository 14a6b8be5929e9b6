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
* :func:`staged_dir` gives a run a new temporary sibling directory to write all its files
  into and, when they are all written, renames it into place as a whole (the earlier run's
  directory is renamed away and removed): a reader, or a Ctrl-C at any moment, sees the files
  of one run, all of them, or none (the earlier run left as it was).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from mbplugin._fs import check_writable
from mbplugin.errors import ParameterError

MANIFEST = "summary.json"  #: lists the run's files under "output"
#: Files an mbplugin run writes: a directory holding only these (a run made before manifests
#: existed) counts as an earlier run.
KNOWN_OUTPUTS = frozenset({
    "result.npz", "bodies.csv", "contacts.csv", "energy.csv", "bounces.csv", "summary.json",
    "trajectory.png", "energy.png", "bounces.png", "loops.png",
    "records.npz", "records.csv",  # a host backend's run (mbplugin.host_scene), no manifest
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
    check_writable(out, where, OutputDirError)
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


#: Name prefixes of the temporary siblings :func:`staged_dir` creates (``.NAME.new-*``, then the
#: earlier run's ``.NAME.old-*`` while it is removed).
STAGE_TAG, OLD_TAG = ".new-", ".old-"


@contextlib.contextmanager
def staged_dir(out_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """A new, empty temporary directory beside ``out_dir`` for a run's files; when the block
    ends normally it replaces ``out_dir`` as a whole, when it raises (a Ctrl-C included) it is
    removed and ``out_dir`` is left as it was.

    ``out_dir`` should be new, empty or hold an earlier run (:func:`prepare_output_dir`, called
    before the run, says so early); entries of ``out_dir`` that are not the earlier run's files
    are moved over into the new directory. When the working directory lies inside ``out_dir``
    the files are moved in one by one instead (:func:`atomic_write`'s guarantee per file) and
    the earlier run's others removed."""
    out = Path(os.path.abspath(out_dir))
    if out.is_symlink():
        out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}{STAGE_TAG}", dir=out.parent))
    try:
        os.chmod(stage, 0o777 & ~_umask())
        yield stage
        _swap(stage, out)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def _swap(stage: Path, out: Path) -> None:
    """Put ``stage`` in the place of ``out``: two renames with SIGINT held back between them,
    then the entries of ``out`` that were not the earlier run's files moved over."""
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"--out {str(out)!r}: exists and is not a directory")
    previous = set(previous_run_files(out) or ()) if out.is_dir() else set()
    cwd = Path(os.getcwd())
    if out.is_dir() and (cwd == out or out in cwd.parents):
        # renaming the working directory away would leave the process in a removed directory
        names = sorted(p.name for p in stage.iterdir())
        for name in names:
            os.replace(stage / name, out / name)
        remove_stale(out, sorted(previous), [out / n for n in names])
        return
    old = None
    with _sigint_held():
        if out.is_dir():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}{OLD_TAG}", dir=out.parent))
            os.replace(out, old)  # onto the empty directory just made: an atomic rename
        os.rename(stage, out)
        for p in sorted(old.iterdir()) if old is not None else ():
            if p.name not in previous and not (out / p.name).exists():
                os.replace(p, out / p.name)  # not the earlier run's: kept
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold SIGINT back for the block (main thread, where the platform allows); a Ctrl-C that
    arrived meanwhile is delivered when the block ends."""
    hold = (hasattr(signal, "pthread_sigmask")
            and threading.current_thread() is threading.main_thread())
    if hold:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if hold:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
