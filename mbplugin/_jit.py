"""Numba compilation helpers.

Compiled kernels are cached on disk by numba (``cache=True``) next to their source files. Numba
only checks the time stamp of the file that holds the cached function, not of the kernels it
calls in other modules, so a changed kernel could be served from a stale cache. On import this
module hashes every source file that holds compiled code and, when the hash changed, deletes
the package's numba cache files before anything is compiled.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

_PKG = Path(__file__).resolve().parent


def _refresh_cache() -> None:
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    sources = sorted(p for p in _PKG.rglob("*.py") if "__pycache__" not in p.parts)
    digest = hashlib.sha1()
    for p in sources:
        try:
            text = p.read_bytes()
        except OSError:
            continue
        if b"njit" in text:
            digest.update(p.relative_to(_PKG).as_posix().encode())
            digest.update(text)
    stamp_dir = _PKG / "__pycache__"
    stamp = stamp_dir / "numba-sources.sha1"
    new = digest.hexdigest()
    try:
        if stamp.exists() and stamp.read_text().strip() == new:
            return
        for cache_file in _PKG.rglob("__pycache__/*.nb[ic]"):
            cache_file.unlink(missing_ok=True)
        stamp_dir.mkdir(exist_ok=True)
        tmp = stamp.with_suffix(".tmp")
        tmp.write_text(new)
        tmp.replace(stamp)
    except OSError:  # read-only install: numba falls back to its user-wide cache
        return


_refresh_cache()

#: Decorator for compiled, disk-cached, scalar kernels and loops.
njit = numba.njit(cache=True, nogil=True, error_model="numpy")

#: Decorator for small helpers that take arrays on hot paths: inlined into the caller at the
#: numba-IR level, so no call boundary and no array reference counting per call.
njit_inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
