"""File-system checks made before long work (one place for the write test)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from mbplugin.errors import ParameterError


def check_writable(directory: str | os.PathLike[str], where: str,
                   error: type[ParameterError] = ParameterError) -> None:
    """Raise ``error("{where}: cannot write there (reason)")`` unless a file can be created in
    ``directory`` (an existing directory); the test file is removed again."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".mbplugin-write-test.", dir=Path(directory))
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise error(f"{where}: cannot write there ({exc.strerror or exc})") from None
