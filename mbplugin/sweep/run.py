"""Running a sweep: chunks of runs, each solved in one :class:`~mbplugin.impact.ImpactBatch`,
on local processes or a Dask cluster, written atomically so that a killed sweep resumes.

Output layout for ``--out RESULT.parquet`` (or ``.csv``)::

    RESULT.parquet.parts/manifest.json       spec digest, run and chunk counts
    RESULT.parquet.parts/chunk-000000.parquet one file per finished chunk (temp file + rename)
    RESULT.parquet                           the assembled table (temp file + rename)

A restarted sweep with the same spec skips the chunks already written; a different spec
against existing parts is refused (:class:`SweepError`) unless ``overwrite=True``.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin._fs import check_writable
from mbplugin.errors import IntegrationError, ParameterError
from mbplugin.formatting import human_duration
from mbplugin.impact import DEFAULT_MAX_STEPS, RESULT_KEYS, ImpactBatch
from mbplugin.sweep.spec import IMPACT_KEYS, SweepError, SweepSpec

#: Result columns of an impact sweep (after the inputs), then ``steps`` and ``error``.
OUTPUT_KEYS = (*RESULT_KEYS, "steps")
#: Scalar columns of a scene sweep taken from the run's summary (wall time left out: a table
#: must not depend on where it ran).
SCENE_KEYS = ("steps", "events", "sim_time", "energy_drift", "n_bounces", "cr_first", "cr_last",
              "v_in_first")


# --------------------------------------------------------------------------------------------------
# one chunk
# --------------------------------------------------------------------------------------------------
def chunk_rows(spec: SweepSpec, chunk: int) -> tuple[int, int]:
    """First and end (exclusive) run index of ``chunk``."""
    a = chunk * spec.chunk_size
    return a, min(a + spec.chunk_size, spec.n_runs)


def run_chunk(spec: SweepSpec, chunk: int) -> dict[str, np.ndarray]:
    """Every run of one chunk as columns (one row per run, in run order)."""
    if spec.kind == "scene":
        return _scene_chunk(spec, chunk)
    a, b = chunk_rows(spec, chunk)
    n_imp = spec.n_impacts
    pcols = spec.param_columns()
    parts: list[dict[str, np.ndarray]] = []
    offset = 0
    for blk in spec.blocks:
        size = blk.n_sets * n_imp
        lo, hi = max(a, offset), min(b, offset + size)
        if lo < hi:
            local = np.arange(lo - offset, hi - offset)
            parts.append(_block_rows(spec, blk, local, lo, pcols))
        offset += size
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _block_rows(spec: SweepSpec, blk: Any, local: np.ndarray, first: int,
                pcols: dict[str, bool]) -> dict[str, np.ndarray]:
    from mbplugin.laws import get_law_class

    n_imp = spec.n_impacts
    p_idx, i_idx = local // n_imp, local % n_imp
    n = local.size
    cols: dict[str, Any] = {"run": np.arange(first, first + n, dtype=np.int64),
                            "law": np.full(n, blk.name, dtype=object)}
    cls = get_law_class(blk.name)
    values: dict[str, Any] = {}
    for p in cls.params:
        if p.name in blk.varied:
            values[p.name] = blk.varied[p.name][p_idx]
        elif p.name in blk.fixed:
            values[p.name] = blk.fixed[p.name]
        else:
            values[p.name] = getattr(p, "default", None)
    for name, is_option in pcols.items():
        v = values.get(name)
        if is_option:
            cols[name] = np.full(n, v, dtype=object)
        elif v is None:
            cols[name] = np.full(n, np.nan)
        else:
            cols[name] = np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy()
    law_kw = {k: v for k, v in {**blk.fixed, **{k: blk.varied[k][p_idx] for k in blk.varied}}
              .items()}
    imp = {k: spec.impacts[k][i_idx] for k in IMPACT_KEYS}
    cols.update(imp)
    res, err = _solve(blk.name, law_kw, imp, np.arange(n), spec.rtol, spec.max_steps)
    cols.update(res)
    cols["error"] = err
    return cols


def _empty_results(n: int) -> dict[str, np.ndarray]:
    out = {k: np.full(n, np.nan) for k in OUTPUT_KEYS}
    out["captured"] = np.zeros(n, dtype=bool)
    out["steps"] = np.zeros(n, dtype=np.int64)
    return out


def _solve(name: str, law_kw: dict[str, Any], imp: dict[str, np.ndarray], rows: np.ndarray,
           rtol: float, max_steps: int = DEFAULT_MAX_STEPS
           ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Results of the given rows; a failing batch is bisected down to the failing runs."""
    from mbplugin.laws import make_law

    n = rows.size
    out = _empty_results(n)
    err = np.full(n, "", dtype=object)

    def sub(d: dict[str, Any]) -> dict[str, Any]:
        return {k: (v[rows] if isinstance(v, np.ndarray) and v.ndim == 1 else v)
                for k, v in d.items()}

    try:
        law = make_law(name, **sub(law_kw))
        if law.kernel is None:  # a third-party NumPy law: impact by impact
            return _solve_scalar(name, sub(law_kw), sub(imp), n, rtol, max_steps)
        batch = ImpactBatch(rtol=rtol, max_steps=max_steps)
        batch.add(law, **sub(imp))
        # an impact that fails (its step size underflowed, more than max_steps steps) is an
        # error row, found without running the batch again
        res = batch.run(errors="report")
    except (ParameterError, IntegrationError, ValueError, ZeroDivisionError) as exc:
        if n == 1:
            err[0] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            return out, err
        half = n // 2
        r1, e1 = _solve(name, law_kw, imp, rows[:half], rtol, max_steps)
        r2, e2 = _solve(name, law_kw, imp, rows[half:], rtol, max_steps)
        return {k: np.concatenate([r1[k], r2[k]]) for k in r1}, np.concatenate([e1, e2])
    for k in OUTPUT_KEYS:
        out[k] = np.asarray(res[k]).astype(out[k].dtype)
    err[:] = res["error"]
    return out, err


def _solve_scalar(name: str, law_kw: dict[str, Any], imp: dict[str, np.ndarray], n: int,
                  rtol: float, max_steps: int = DEFAULT_MAX_STEPS
                  ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Rows of a law without a compiled kernel, one :func:`~mbplugin.impact.impact` each."""
    from mbplugin.impact import impact
    from mbplugin.laws import make_law

    out = _empty_results(n)
    err = np.full(n, "", dtype=object)
    for j in range(n):
        kw = {k: (v[j] if isinstance(v, np.ndarray) and v.ndim == 1 else v)
              for k, v in law_kw.items()}
        try:
            r = impact(make_law(name, **kw), float(imp["mass"][j]), float(imp["v0"][j]),
                       mass2=float(imp["mass2"][j]), press=float(imp["press"][j]), rtol=rtol,
                       max_steps=max_steps)
        except (ParameterError, IntegrationError, ValueError) as exc:
            err[j] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            continue
        for k in RESULT_KEYS:
            out[k][j] = getattr(r, k)
        out["steps"][j] = r.steps
    return out, err


def _scene_chunk(spec: SweepSpec, chunk: int) -> dict[str, np.ndarray]:
    from mbplugin.scene import build_scene
    from mbplugin.sweep.spec import _toml

    a, b = chunk_rows(spec, chunk)
    rows: list[dict[str, Any]] = []
    keys = list(spec.scene_sets[0]) if spec.scene_sets else []
    for i in range(a, b):
        s = spec.scene_sets[i]
        row: dict[str, Any] = {"run": i, **{f"set.{k}": v for k, v in s.items()}}
        try:
            result = build_scene(copy.deepcopy(spec.scene_doc), spec.scene_source,
                                 [f"{k}={_toml(v)}" for k, v in s.items()]).run()
            summ = result.summary()
            bounces = summ.get("bounces") or []
            row.update({
                "steps": summ["steps"], "events": summ["events"], "sim_time": summ["sim_time"],
                "energy_drift": summ.get("energy_drift"), "n_bounces": len(bounces),
                "cr_first": bounces[0]["cr"] if bounces else None,
                "cr_last": bounces[-1]["cr"] if bounces else None,
                "v_in_first": bounces[0]["v_in"] if bounces else None,
                "error": "",
            })
        except (ParameterError, IntegrationError, ValueError) as exc:
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        rows.append(row)
    cols: dict[str, np.ndarray] = {"run": np.array([r["run"] for r in rows], dtype=np.int64)}
    for k in keys:
        vals = [r[f"set.{k}"] for r in rows]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
        cols[f"set.{k}"] = (np.array(vals, dtype=float) if numeric else
                            np.array([v if isinstance(v, str) else _toml(v) for v in vals],
                                     dtype=object))
    for k in SCENE_KEYS:
        vals = [r.get(k) for r in rows]
        cols[k] = np.array([np.nan if v is None else float(v) for v in vals])
    cols["error"] = np.array([r["error"] for r in rows], dtype=object)
    return cols


# --------------------------------------------------------------------------------------------------
# storage: atomic chunk files and the assembled table
# --------------------------------------------------------------------------------------------------
def _pa() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ParameterError("sweeps need pyarrow: pip install pyarrow") from None
    return pyarrow


def to_table(cols: dict[str, np.ndarray]) -> Any:
    """Columns -> a pyarrow Table (object columns as strings)."""
    pa = _pa()
    arrays = {}
    for k, v in cols.items():
        arrays[k] = (pa.array(v.tolist(), type=pa.string()) if v.dtype == object
                     else pa.array(v))
    return pa.table(arrays)


def _atomic(path: Path, write: Callable[[str], None]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class Store:
    """The resumable output of one sweep (see the module docstring)."""

    out: Path
    spec: SweepSpec

    @property
    def parts(self) -> Path:
        return self.out.with_name(self.out.name + ".parts")

    def chunk_path(self, i: int) -> Path:
        return self.parts / f"chunk-{i:06d}.parquet"

    def prepare(self, overwrite: bool = False) -> list[int]:
        """Create or check the parts directory; returns the chunks still to run. Everything
        that would make the sweep fail at the end (an --out that is a directory, a directory
        that cannot be created or written) is an error now, before any run."""
        where = f"--out {str(self.out)!r}"
        if self.out.suffix not in (".parquet", ".csv"):
            raise SweepError(f"{where}: allowed extensions are .parquet, .csv")
        if self.out.is_dir():
            raise SweepError(f"{where}: is a directory; give the table's file name")
        if self.parts.exists() and not self.parts.is_dir():
            raise SweepError(f"{where}: {str(self.parts)!r} (its partial output) exists and is "
                             "not a directory")
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SweepError(f"{where}: cannot write there ({exc.strerror or exc})") from None
        check_writable(self.out.parent, where, SweepError)
        manifest = {"digest": self.spec.digest, "n_runs": self.spec.n_runs,
                    "chunk_size": self.spec.chunk_size, "n_chunks": self.spec.n_chunks,
                    "kind": self.spec.kind}
        mpath = self.parts / "manifest.json"
        if self.parts.exists():
            try:
                old = json.loads(mpath.read_text())
            except (OSError, ValueError):
                old = None
            if old != manifest:
                if not overwrite:
                    what = (f"spec digest {old.get('digest')}, {old.get('n_runs')} runs"
                            if isinstance(old, dict) else "no readable manifest")
                    raise SweepError(
                        f"{self.parts} holds partial output of a different sweep ({what}; this "
                        f"spec: digest {self.spec.digest}, {self.spec.n_runs} runs): the spec "
                        "changed since it was written. Pass --overwrite to discard it, or "
                        "choose another --out"
                    )
                shutil.rmtree(self.parts)
        try:
            self.parts.mkdir(parents=True, exist_ok=True)
            if not mpath.exists():
                _atomic(mpath, lambda tmp: Path(tmp).write_text(json.dumps(manifest, indent=1)))
        except OSError as exc:
            raise SweepError(f"{where}: cannot write its partial output in "
                             f"{str(self.parts)!r} ({exc.strerror or exc})") from None
        return [i for i in range(self.spec.n_chunks) if not self.chunk_path(i).exists()]

    def write_chunk(self, i: int, cols: dict[str, np.ndarray]) -> None:
        pq = _pa().parquet
        table = to_table(cols)
        _atomic(self.chunk_path(i), lambda tmp: pq.write_table(table, tmp))

    def assemble(self) -> Any:
        """Concatenate the chunks (run order) and write the table atomically; returns it."""
        pa = _pa()
        pq = pa.parquet
        tables = [pq.read_table(self.chunk_path(i)) for i in range(self.spec.n_chunks)]
        table = pa.concat_tables(tables, promote_options="default")
        if self.out.suffix == ".csv":
            import pyarrow.csv as pcsv

            _atomic(self.out, lambda tmp: pcsv.write_csv(table, tmp))
        else:
            _atomic(self.out, lambda tmp: pq.write_table(table, tmp))
        return table


# --------------------------------------------------------------------------------------------------
# executors
# --------------------------------------------------------------------------------------------------
@dataclass
class SweepReport:
    """What :func:`run_sweep` did."""

    out: Path
    n_runs: int
    n_chunks: int
    skipped: int
    errors: int
    wall_time: float
    executor: str

    def to_dict(self) -> dict[str, Any]:
        return {"output": str(self.out), "runs": self.n_runs, "chunks": self.n_chunks,
                "chunks_skipped": self.skipped, "failed_runs": self.errors,
                "wall_time": self.wall_time, "executor": self.executor}


def _progress(total: int, quiet: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="chunk", disable=True if quiet else None, leave=False,
                desc="sweep")


def _local(spec: SweepSpec, todo: list[int], workers: int) -> Iterable[tuple[int, Any]]:
    if workers <= 1:
        for i in todo:
            yield i, run_chunk(spec, i)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
    try:
        futs = {ex.submit(run_chunk, spec, i): i for i in todo}
        for f in as_completed(futs):
            yield futs[f], f.result()
    except BaseException:
        # a Ctrl-C (or an error): the workers stop now, not after their chunks (the executor
        # has no public way to stop a running task: its worker processes are terminated)
        procs = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(timeout=5.0)
        raise
    ex.shutdown(wait=True)


def _dask(spec: SweepSpec, todo: list[int], scheduler: str | None, n_local: int | None,
          processes: bool) -> Iterable[tuple[int, Any]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ParameterError("Dask sweeps need dask.distributed: pip install "
                             "'mbplugin[dask]'") from None
    cluster = None
    if scheduler:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    else:
        cluster = LocalCluster(n_workers=int(n_local or 1), threads_per_worker=1,
                               processes=processes, dashboard_address=None)
        client = Client(cluster)
    try:
        spec_f = client.scatter(spec, broadcast=True)
        futs = {client.submit(run_chunk, spec_f, i, pure=False): i for i in todo}
        for f in as_completed(futs):
            yield futs[f], f.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_sweep(
    spec: SweepSpec,
    out: str | os.PathLike[str],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    dask_processes: bool = True,
    overwrite: bool = False,
    quiet: bool = True,
    notice: Callable[[str], None] | None = None,
) -> tuple[SweepReport, Any]:
    """Run (or resume) a sweep; returns the report and the assembled pyarrow Table.

    ``workers``: local processes (default: every core; 1 runs in this process).
    ``scheduler``: address of a running Dask scheduler (``tcp://HOST:PORT``; checked first
    with a ``CONNECT_TIMEOUT`` connection).
    ``dask_local``: start a ``dask.distributed.LocalCluster`` with this many workers
    (``dask_processes=False`` keeps them as threads of this process, for tests).
    ``notice``: called with one line before a heavy sweep starts (:func:`estimate_text`).
    """
    if scheduler and dask_local:
        raise ParameterError("give either --scheduler or --dask-local, not both")
    if workers is not None and (isinstance(workers, bool) or int(workers) != workers
                                or int(workers) < 1):
        raise ParameterError(f"workers = {workers} is outside its allowed range [1, inf)")
    if dask_local is not None and (isinstance(dask_local, bool) or int(dask_local) != dask_local
                                   or int(dask_local) < 1):
        raise ParameterError(f"--dask-local {dask_local} is outside its allowed range [1, inf) "
                             "(the number of workers)")
    if scheduler:
        check_scheduler(scheduler)
    store = Store(Path(out), spec)
    todo = store.prepare(overwrite)
    skipped = spec.n_chunks - len(todo)
    if notice is not None and todo:
        text = estimate_text(spec, len(todo), _n_workers(workers, scheduler, dask_local, todo))
        if text:
            notice(text)
    t0 = time.perf_counter()
    if not todo:
        name = "none (every chunk already written)"
        it: Iterable[tuple[int, Any]] = iter(())
    elif scheduler or dask_local:
        name = f"dask ({scheduler or f'LocalCluster x {dask_local}'})"
        it = _dask(spec, todo, scheduler, dask_local, dask_processes)
    else:
        w = _n_workers(workers, None, None, todo)
        name = f"local ({w} process{'es' if w > 1 else ''})"
        it = _local(spec, todo, w)
    bar = _progress(len(todo), quiet)
    try:
        for i, cols in it:
            store.write_chunk(i, cols)
            bar.update(1)
    finally:
        bar.close()
    table = store.assemble()
    errors = int(sum(1 for e in table.column("error").to_pylist() if e))
    rep = SweepReport(store.out, spec.n_runs, spec.n_chunks, skipped, errors,
                      time.perf_counter() - t0, name)
    return rep, table


# --------------------------------------------------------------------------------------------------
# checks before the work and the estimate of a heavy sweep
# --------------------------------------------------------------------------------------------------
#: Seconds a Dask scheduler gets to answer (the address is first checked with a TCP connection
#: of at most this long).
CONNECT_TIMEOUT = 5.0
#: Sweeps of at least this many runs (still to do) are estimated before they start: a sample of
#: ``ESTIMATE_RUNS`` runs spread over the sweep is timed (each at most ``ESTIMATE_MAX_STEPS``
#: steps), and the estimate is announced when it exceeds ``HEAVY_SECONDS``.
ESTIMATE_MIN_RUNS = 100_000
ESTIMATE_RUNS = 64
ESTIMATE_MAX_STEPS = 100_000
HEAVY_SECONDS = 60.0


def check_scheduler(address: str) -> None:
    """Refuse, within ``CONNECT_TIMEOUT``, a Dask scheduler address that takes no connection
    (``tcp://HOST:PORT``, ``tls://HOST:PORT`` or ``HOST:PORT``; other protocols are left to
    Dask)."""
    import socket
    from urllib.parse import urlsplit

    where = f"--scheduler {address!r}"
    text = address if "://" in address else f"tcp://{address}"
    parts = urlsplit(text)
    if parts.scheme not in ("tcp", "tls"):
        return
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise ParameterError(f"{where}: expected tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786")
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ParameterError(f"{where}: cannot connect to the scheduler ({why}); is it "
                             "running?") from None


def _n_workers(workers: int | None, scheduler: str | None, dask_local: int | None,
               todo: list[int]) -> int:
    """Processes that will run the chunks (1 for an external Dask cluster: unknown)."""
    if scheduler:
        return 1
    if dask_local:
        return int(dask_local)
    return min(int(workers or os.cpu_count() or 1), max(1, len(todo)))


def estimate_seconds(spec: SweepSpec, n_sample: int = ESTIMATE_RUNS) -> tuple[float, bool]:
    """Wall time (s) of every run of an impact sweep on one process, from a sample of
    ``n_sample`` runs spread over the sweep; and whether some sampled run was cut at
    ``ESTIMATE_MAX_STEPS`` steps (the estimate is then a lower bound)."""
    from mbplugin.laws import make_law

    runs = np.unique(np.linspace(0, spec.n_runs - 1, min(n_sample, spec.n_runs))
                     .round().astype(np.int64))
    n_imp = spec.n_impacts
    cut = False
    # load (or compile) the compiled loop first: the sample times the impacts, not that
    warm = ImpactBatch()
    warm.add(make_law("hunt_crossley", k=1.0, cr=0.5), 1.0, 1.0)
    warm.run()
    t0 = time.perf_counter()
    offset = 0
    for blk in spec.blocks:
        size = blk.n_sets * n_imp
        local = runs[(runs >= offset) & (runs < offset + size)] - offset
        offset += size
        if not local.size:
            continue
        p_idx, i_idx = local // n_imp, local % n_imp
        law_kw = {**blk.fixed, **{k: v[p_idx] for k, v in blk.varied.items()}}
        imp = {k: spec.impacts[k][i_idx] for k in IMPACT_KEYS}
        try:
            law = make_law(blk.name, **law_kw)
            if law.kernel is None:
                continue
            batch = ImpactBatch(rtol=spec.rtol, max_steps=ESTIMATE_MAX_STEPS)
            batch.add(law, **imp)
            res = batch.run(errors="report")
        except (ParameterError, IntegrationError, ValueError):
            continue
        cut = cut or any("max_steps" in e for e in res["error"])
    return (time.perf_counter() - t0) * spec.n_runs / runs.size, cut


def estimate_text(spec: SweepSpec, n_todo: int, workers: int) -> str:
    """One line announcing a heavy sweep (empty when it is not): runs, chunks and, for impact
    sweeps of at least ``ESTIMATE_MIN_RUNS`` runs, the estimated wall time."""
    runs = n_todo * spec.chunk_size if n_todo < spec.n_chunks else spec.n_runs
    runs = min(runs, spec.n_runs)
    if runs < ESTIMATE_MIN_RUNS:
        return ""
    head = f"{runs:.4g} runs in {n_todo} chunks"
    if spec.kind == "scene":
        return f"{head}: each is a whole scene run"
    seconds, cut = estimate_seconds(spec)
    seconds *= runs / spec.n_runs
    if seconds < HEAVY_SECONDS:
        return ""
    on = f"{workers} processes" if workers > 1 else "1 process"
    low = " at least" if cut else ""
    return (f"{head}: about{low} {human_duration(seconds / workers)} on {on} (timed on "
            f"{min(ESTIMATE_RUNS, spec.n_runs)} sampled runs)")
