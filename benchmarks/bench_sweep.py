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
import resource
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


def _cpu() -> float:
    """CPU seconds of this process and its finished children (pool and cluster workers)."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


CPU: dict[str, float] = {}


def _timed(spec, tmp: Path, name: str, **kw) -> float:
    c0 = _cpu()
    t0 = time.perf_counter()
    run_sweep(spec, tmp / f"{name}.parquet", **kw)
    CPU[name] = _cpu() - c0
    return time.perf_counter() - t0


def _dask_session(spec, workers: int, todo: list[int]) -> tuple[float, float, float]:
    """(start-up wall s, wall s of the tasks ``todo``, CPU s of the whole session incl.
    workers) on a fresh LocalCluster."""
    from distributed import Client, LocalCluster

    from mbplugin.sweep import run_chunk

    c0 = _cpu()
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
    return t_start, t_tasks, _cpu() - c0


def dask_overhead(workers: int, n_tasks: int = 400) -> dict[str, float]:
    """Dask's cost per task, with one-impact chunks of the c_r map: wall time x workers and
    CPU time of a LocalCluster session, each minus the same chunks run in this process."""
    from mbplugin.sweep import run_chunk

    spec = _spec(2, chunk=1)
    todo = list(range(n_tasks))
    c0 = _cpu()
    t0 = time.perf_counter()
    for i in todo:
        run_chunk(spec, i)
    t_serial = time.perf_counter() - t0
    c_serial = _cpu() - c0
    t_start, _, c_empty = _dask_session(spec, workers, [])
    _, t_tasks, c_full = _dask_session(spec, workers, todo)
    return {"start_s": t_start, "tasks": n_tasks,
            "wall_per_task_s": max(0.0, (t_tasks * workers - t_serial) / n_tasks),
            "cpu_per_task_s": max(0.0, (c_full - c_empty - c_serial) / n_tasks)}


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
    dov = dask_overhead(args.workers)
    cases = _cases(60, 1)
    t0 = time.perf_counter()
    for c in cases:
        baseline_dop853(*c)
    t_dop = (time.perf_counter() - t0) / len(cases)
    rows = [
        ("one process (workers=1)", t_one, CPU["one"]),
        (f"local processes (workers={args.workers})", t_proc, CPU["procs"]),
        (f"Dask LocalCluster ({args.workers} workers)", t_dask, CPU["dask"]),
    ]
    res = {
        "impacts": n, "chunks": spec.n_chunks, "chunk_size": spec.chunk_size,
        "machine": machine(), "load_before": load0, "load_after": os.getloadavg(),
        "dop853_per_impact_s": t_dop,
        "runs": {name: {"wall_s": t, "cpu_s": c, "impacts_per_s": n / t,
                        "vs_one_process": t_one / t, "vs_dop853": t_dop * n / t,
                        "cpu_us_per_impact": c / n * 1e6} for name, t, c in rows},
        "dask_overhead": dov,
    }
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{res['machine']}; load average before {load0[0]:.2f}, after "
          f"{res['load_after'][0]:.2f}")
    print(f"c_r map: {n} impacts in {spec.n_chunks} chunks of {spec.chunk_size}")
    print(f"{'executor':<34} {'wall (s)':>9} {'CPU (s)':>8} {'impacts/s':>11} "
          f"{'vs 1 proc':>10} {'vs DOP853':>10}")
    for name, t, c in rows:
        r = res["runs"][name]
        print(f"{name:<34} {t:9.2f} {c:8.1f} {r['impacts_per_s']:11.4g} "
              f"{r['vs_one_process']:10.2f} {r['vs_dop853']:10.0f}")
    print(f"SciPy DOP853 (Python RHS, rtol 1e-10): {t_dop * 1e3:.2f} ms per impact "
          f"-> {t_dop * n:.0f} s for the map")
    print(f"Dask: LocalCluster start-up {dov['start_s']:.2f} s; overhead per task "
          f"{dov['wall_per_task_s'] * 1e3:.2f} ms wall x workers, "
          f"{dov['cpu_per_task_s'] * 1e3:.2f} ms CPU ({dov['tasks']} one-impact tasks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
