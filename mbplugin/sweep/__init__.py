"""Parameter sweeps: laws x parameter grids or samples x impact speeds and masses, or a scene
file x ``--set`` grids, on local processes or a Dask cluster; resumable tidy tables.

>>> from mbplugin.sweep import load_spec, run_sweep
>>> spec = load_spec("cr_map.toml")                              # doctest: +SKIP
>>> report, table = run_sweep(spec, "cr_map.parquet")            # doctest: +SKIP

See docs/sweeps.md for the spec format and the output columns.
"""

from __future__ import annotations

from mbplugin.sweep.plot import plot_cr_map
from mbplugin.sweep.run import (
    OUTPUT_KEYS,
    SCENE_KEYS,
    Store,
    SweepReport,
    chunk_rows,
    run_chunk,
    run_sweep,
    to_table,
)
from mbplugin.sweep.spec import SweepError, SweepSpec, build_spec, load_spec

__all__ = [
    "OUTPUT_KEYS",
    "SCENE_KEYS",
    "Store",
    "SweepError",
    "SweepReport",
    "SweepSpec",
    "build_spec",
    "chunk_rows",
    "load_spec",
    "plot_cr_map",
    "run_chunk",
    "run_sweep",
    "to_table",
]
