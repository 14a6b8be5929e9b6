"""``mbplugin sweep SPEC.toml``: run a parameter sweep into a tidy table (see
:mod:`mbplugin.sweep`, docs/sweeps.md).

    mbplugin sweep cr_map.toml --out cr_map.parquet --plot        # all local cores
    mbplugin sweep cr_map.toml --dask-local 2                        # a Dask LocalCluster
    mbplugin sweep cr_map.toml --scheduler tcp://10.0.0.5:8786       # an existing Dask cluster
    mbplugin sweep scenes/drop_ball.toml --set law=hunt_crossley,flores --set cr=0.5,0.8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``sweep`` subcommand."""
    p = subparsers.add_parser(
        "sweep", help="map laws over parameters, speeds and masses (local cores or Dask)",
        description="Run a sweep spec (laws x parameter grids/samples x speeds and masses) or "
                    "a scene file x --set grids; writes one row per run (inputs, every "
                    "analyser output, an error column) to Parquet or CSV. Resumable: a "
                    "restarted sweep skips the chunks already written.",
    )
    p.add_argument("spec", help="sweep spec (TOML), or a scene file with --set grids")
    p.add_argument("--set", action="append", metavar="KEY=V1,V2", dest="sets",
                   help="scene sweeps: values of a scene parameter, repeatable (product)")
    p.add_argument("--out", metavar="FILE", help="output table, .parquet (default) or .csv "
                                                 "(default: SPEC name + .parquet)")
    p.add_argument("--workers", type=int, help="local processes (default: all cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run on this Dask distributed scheduler")
    p.add_argument("--dask-local", type=int, metavar="N", dest="dask_local",
                   help="start a Dask LocalCluster with N workers")
    p.add_argument("--overwrite", action="store_true",
                   help="discard partial output written by a different spec")
    p.add_argument("--plot", nargs="?", const="", metavar="FILE",
                   help="write the c_r map (c_r out vs in, per law, over speed); default "
                        "OUT with .png")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_sweep)
    return p


def _cmd_sweep(args: argparse.Namespace) -> int:
    from mbplugin.cli.common import print_json
    from mbplugin.sweep import load_spec, plot_cr_map, run_sweep

    spec = load_spec(args.spec, args.sets)
    out = Path(args.out) if args.out else Path(Path(args.spec).stem + ".parquet")
    plot = None
    if args.plot is not None:
        from mbplugin.plotting import check_figure_path

        plot = check_figure_path(Path(args.plot) if args.plot else out.with_suffix(".png"),
                                 "--plot")  # before the sweep, not after it

    def notice(line: str) -> None:
        print(f"mbplugin sweep: {line}", file=sys.stderr, flush=True)

    rep, table = run_sweep(spec, out, workers=args.workers, scheduler=args.scheduler,
                           dask_local=args.dask_local, overwrite=args.overwrite,
                           quiet=args.quiet, notice=notice)
    summary = rep.to_dict()
    if plot is not None:
        summary["plot"] = str(plot_cr_map(table, plot))
    if args.json:
        print_json(summary)
        return 0
    print(f"{rep.n_runs} runs in {rep.n_chunks} chunks on {rep.executor}: "
          f"{rep.wall_time:.3g} s ({rep.skipped} chunks already done)")
    if rep.errors:
        print(f"  {rep.errors} runs failed (see the 'error' column)")
    print(f"table written to {out}" + (f", plot to {summary['plot']}" if "plot" in summary
                                       else ""))
    return 0
