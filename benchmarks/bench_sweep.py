"""Sweep throughput: the 1.26e6-impact c_r map (benchmarks/cr_map.toml) on one process, on
local processes and on a Dask LocalCluster, against SciPy DOP853 (benchmarks/bench_impact.py).

    python benchmarks/bench_sweep.py             # full map (1.26e6 impacts)
    python benchmarks/bench_sweep.py --quick     # 10 input c_r instead of 100
    python benchmarks/bench_sweep.py --json

Wall times include starting the process pool / cluster (and, for spawned workers, importing
mbplugin and loading the cached numba kernels). The Dask overhead per task is measured with
tasks of one impact each: (wall time x workers - compute) / tasks, after the cluster start-up
measured on a one-task sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_impact import _cases, baseline_dop853, machine  # noqa: E402

from mbplugin.sweep import build_spec, run_sweep  # noqa: E402


def _spec(n_cr: int, chunk: int | None = None):
    doc = tomllib.loads((HERE / "cr_map.toml").read_text())
    doc["laws"][0]["grid"]["cr"]["linspace"][2] = n_cr
    if chunk:
        doc["sweep"]["chunk_size"] = chunk
    return build_spec(doc)


def _timed(spec, tmp: Path, name: str, **kw) -> float:
    t0 = time.perf_counter()
    run_sweep(spec, tmp / f"{name}.parquet", **kw)
    return time.perf_counter() - t0


def dask_overhead(workers: int, n_tasks: int = 400) -> tuple[float, float, int]:
    """(cluster start-up s, overhead per task s, tasks): one-impact chunks of the c_r map on
    one LocalCluster, against the same chunks run in this process."""
    from distributed import Client, LocalCluster

    from mbplugin.sweep import run_chunk

    spec = _spec(2, chunk=1)
    todo = list(range(n_tasks))
    t0 = time.perf_counter()
    for i in todo:
        run_chunk(spec, i)
    t_serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster)
    try:
        spec_f = client.scatter(spec, broadcast=True)
        client.gather([client.submit(run_chunk, spec_f, i, pure=False) for i in range(workers)])
        t_start = time.perf_counter() - t0
        t0 = time.perf_counter()
        client.gather([client.submit(run_chunk, spec_f, i, pure=False) for i in todo])
        t_tasks = time.perf_counter() - t0
    finally:
        client.close()
        cluster.close()
    return t_start, max(0.0, (t_tasks * workers - t_serial) / n_tasks), n_tasks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 input c_r instead of 100")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    spec = _spec(10 if args.quick else 100)
    n = spec.n_runs
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t_one = _timed(spec, tmp, "one", workers=1)
        t_proc = _timed(spec, tmp, "procs", workers=args.workers)
        t_dask = _timed(spec, tmp, "dask", dask_local=args.workers)
    t_start, overhead, n_tasks = dask_overhead(args.workers)
    cases = _cases(60, 1)
    t0 = time.perf_counter()
    for c in cases:
        baseline_dop853(*c)
    t_dop = (time.perf_counter() - t0) / len(cases)
    rows = [
        ("one process (workers=1)", t_one),
        (f"local processes (workers={args.workers})", t_proc),
        (f"Dask LocalCluster ({args.workers} workers)", t_dask),
    ]
    res = {
        "impacts": n, "chunks": spec.n_chunks, "chunk_size": spec.chunk_size,
        "machine": machine(), "load_before": load0, "load_after": os.getloadavg(),
        "dop853_per_impact_s": t_dop,
        "runs": {name: {"wall_s": t, "impacts_per_s": n / t, "vs_one_process": t_one / t,
                        "vs_dop853": t_dop * n / t} for name, t in rows},
        "dask_cluster_start_s": t_start, "dask_overhead_per_task_s": overhead,
        "dask_tiny_tasks": n_tasks,
    }
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{res['machine']}; load average before {load0[0]:.2f}, after "
          f"{res['load_after'][0]:.2f}")
    print(f"c_r map: {n} impacts in {spec.n_chunks} chunks of {spec.chunk_size}")
    print(f"{'executor':<34} {'wall (s)':>9} {'impacts/s':>11} {'vs 1 proc':>10} "
          f"{'vs DOP853':>10}")
    for name, t in rows:
        r = res["runs"][name]
        print(f"{name:<34} {t:9.2f} {r['impacts_per_s']:11.4g} {r['vs_one_process']:10.2f} "
              f"{r['vs_dop853']:10.0f}")
    print(f"SciPy DOP853 (Python RHS, rtol 1e-10): {t_dop * 1e3:.2f} ms per impact "
          f"-> {t_dop * n:.0f} s for the map")
    print(f"Dask: cluster start-up {t_start:.2f} s; overhead per task "
          f"{overhead * 1e3:.2f} ms ({n_tasks} one-impact tasks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
