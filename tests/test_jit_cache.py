"""Numba's disk cache never serves compiled code older than the package's sources.

Numba checks only the time stamp of the file holding a cached function, not of the compiled
functions it calls in other modules; :func:`mbplugin._jit._refresh_cache` deletes the package's
cache files wherever numba keeps them when the sources changed. Seen before the fix: with
``NUMBA_CACHE_DIR`` set, a caller cached before its callee changed kept running the old callee.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from numba.core import caching

import mbplugin

PKG = Path(mbplugin.__file__).resolve().parent


def _import_in(env_cache: Path) -> None:
    # the package this test inspects, not whichever one the interpreter would import from
    # ``cwd`` (a non-editable install in site-packages, as in CI)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(env_cache),
               PYTHONPATH=os.pathsep.join([str(PKG.parent), os.environ.get("PYTHONPATH", "")]))
    env.pop("NUMBA_DISABLE_JIT", None)
    script = ("import pathlib, sys, mbplugin._jit as j; "
              f"sys.exit(j._PKG != pathlib.Path({str(PKG)!r}))")  # the same package, or fail
    subprocess.run([sys.executable, "-c", script], env=env, check=True,
                   cwd=str(env_cache))


def test_numba_cache_dir_is_cleared_when_the_sources_change(tmp_path: Path) -> None:
    # the directory numba maps mbplugin/pipeline's cache to under NUMBA_CACHE_DIR (its own rule)
    sub = caching.UserProvidedCacheLocator.get_suitable_cache_subpath(
        str(PKG / "pipeline" / "__init__.py"))
    mapped = tmp_path / sub
    mapped.mkdir(parents=True)
    stale = mapped / "kernel.f-10.py311.nbi"
    stale.write_bytes(b"old index")
    (mapped / "mbplugin-sources.sha1").write_text("written by other sources\n")
    _import_in(tmp_path)
    assert not stale.exists(), "a cache file written by other sources was kept"
    stamp = (mapped / "mbplugin-sources.sha1").read_text().strip()
    assert len(stamp) == 40 and stamp != "written by other sources"
    # the same sources again: what numba cached since is kept
    fresh = mapped / "kernel.f-10.py311.nbc"
    fresh.write_bytes(b"current")
    _import_in(tmp_path)
    assert fresh.exists(), "a cache file of the current sources was deleted"
