"""Benchmark: the first minute. The README's first command from an empty numba cache (cold) and
again with the cache it left (warm), and optionally the whole test suite from an empty cache.

Each case runs in a child process (``python -m mbplugin.cli run scenes/drop_ball.toml --plot
--out DIR``, the README's command without the console-script launcher) with ``NUMBA_CACHE_DIR``
set to a fresh empty directory for a cold run and to that same directory for the warm run that
follows it. Wall time is measured around the child; CPU time is the child's user + system time
(``os.wait4``), which depends far less on what else the machine runs. Every repeat is a new cold
cache. ``--base DIR`` runs the same cases with ``PYTHONPATH=DIR`` (e.g. a ``git worktree`` of an
older commit) interleaved with ours, repeat by repeat, so both see the same machine load; the
ratios are taken between the minima. The load average is printed before and after.

``--suite`` also times ``python -m pytest -q -x`` from an empty cache (once per tree: minutes).
``--command`` replaces the README's command (e.g. ``--command "impact --law hunt_crossley -p
k=1e9 -p cr=0.8 --mass 1 --v0 1"``), ``--example NAME`` by ``python examples/NAME.py
--short``. Run::

    python benchmarks/bench_coldstart.py [--repeat 3] [--base /tmp/base] [--suite] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_ARGS = ["run", "scenes/drop_ball.toml", "--plot"]


def _child(argv: list[str], tree: Path, cache: Path, cwd: Path,
           keep_stdout: bool = False) -> dict:
    """Run ``python argv`` with the package of ``tree`` and numba's cache in ``cache``; returns
    wall and CPU (user + system) seconds and what it wrote on stderr (and stdout with
    ``keep_stdout``: a failure's message then shows it)."""
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache))
    with tempfile.TemporaryFile() as errfile:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env,
                                stdout=errfile if keep_stdout else subprocess.DEVNULL,
                                stderr=errfile)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        errfile.seek(0)
        err = errfile.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} in {tree} failed ({proc.returncode}): "
                           f"{err[-3000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "stderr": err}


def cold_warm(tree: Path, command: list[str]) -> dict:
    """One cold run (fresh cache) and one warm run (the cache the cold run left)."""
    with tempfile.TemporaryDirectory(prefix="mbplugin-cold-") as tmp:
        cache = Path(tmp) / "numba"
        cache.mkdir()
        if command[:1] == ["--example"]:  # examples/NAME.py --short
            argv = [str(tree / "examples" / f"{command[1]}.py"), "--short"]
        else:
            argv = ["-m", "mbplugin.cli", *command]
        outs = [[], []]
        if command[:1] == ["run"] or command[:1] == ["--example"]:
            # one directory per run: a run refuses a directory holding files it does not know
            outs = [["--out", str(Path(tmp) / name)] for name in ("out_cold", "out_warm")]
        cold = _child(argv + outs[0], tree, cache, tree)
        warm = _child(argv + outs[1], tree, cache, tree)
    return {"cold_wall": cold["wall"], "cold_cpu": cold["cpu"], "warm_wall": warm["wall"],
            "warm_cpu": warm["cpu"],
            "notice_cold": "compiling numerical kernels" in cold["stderr"],
            "notice_warm": "compiling numerical kernels" in warm["stderr"]}


def suite(tree: Path) -> dict:
    """The whole test suite from an empty numba cache."""
    with tempfile.TemporaryDirectory(prefix="mbplugin-suite-") as tmp:
        r = _child(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"], tree, Path(tmp),
                   tree, keep_stdout=True)
    return {"suite_wall": r["wall"], "suite_cpu": r["cpu"]}


def _summary(runs: list[dict]) -> dict:
    keys = [k for k in runs[0] if not k.startswith("notice")]
    out = {f"{k}_min": min(r[k] for r in runs) for k in keys}
    out.update({f"{k}_median": statistics.median(r[k] for r in runs) for k in keys})
    out["notice_cold"] = all(r["notice_cold"] for r in runs)
    out["notice_warm"] = any(r["notice_warm"] for r in runs)
    return out


def _print_cold_warm(result: dict, trees: dict, repeat: int, load_before: tuple) -> None:
    print(f"{result['command']}: cold = empty numba cache, warm = the cache it left; "
          f"{repeat} repeat(s), min / median")
    print(f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.2f} before, "
          f"{result['load_after_cold_warm'][0]:.2f} after")
    print(f"{'tree':6s} {'cold wall':>15s} {'cold CPU':>15s} {'warm wall':>13s} "
          f"{'warm CPU':>13s} {'cold/warm':>9s}  notice cold/warm")
    for name in trees:
        s = result[name]
        print(f"{name:6s} {s['cold_wall_min']:6.1f} / {s['cold_wall_median']:5.1f} s "
              f"{s['cold_cpu_min']:6.1f} / {s['cold_cpu_median']:5.1f} s "
              f"{s['warm_wall_min']:5.2f} / {s['warm_wall_median']:4.2f} "
              f"{s['warm_cpu_min']:5.2f} / {s['warm_cpu_median']:4.2f} "
              f"{s['cold_wall_min'] / s['warm_wall_min']:8.1f}x  "
              f"{'yes' if s['notice_cold'] else 'no'} / {'yes' if s['notice_warm'] else 'no'}")
    if "base" in result:
        o, b = result["ours"], result["base"]
        print(f"base / ours (minima): cold CPU {b['cold_cpu_min'] / o['cold_cpu_min']:.2f}x, "
              f"cold wall {b['cold_wall_min'] / o['cold_wall_min']:.2f}x, warm wall "
              f"{b['warm_wall_min'] / o['warm_wall_min']:.2f}x", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="cold/warm pairs per tree")
    ap.add_argument("--base", default=None, help="also time the package tree at this path")
    ap.add_argument("--command", default=None,
                    help="mbplugin arguments instead of the README's (quoted, one string)")
    ap.add_argument("--example", default=None,
                    help="time examples/NAME.py --short instead of a command")
    ap.add_argument("--suite", action="store_true", help="also the test suite, cold (minutes)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    command = shlex.split(args.command) if args.command else README_ARGS
    if args.example:
        if not (ROOT / "examples" / f"{args.example}.py").is_file():
            ap.error(f"--example {args.example}: no examples/{args.example}.py")
        command = ["--example", args.example]
    trees = {"ours": ROOT}
    if args.base:
        base = Path(args.base).resolve()
        if not (base / "mbplugin" / "__init__.py").is_file():
            ap.error(f"--base {args.base}: no mbplugin package there")
        trees["base"] = base
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.repeat):
        for name, tree in trees.items():
            runs[name].append(cold_warm(tree, command))
    result: dict = {name: _summary(r) for name, r in runs.items()}
    result["load_after_cold_warm"] = os.getloadavg()
    result["command"] = (f"examples/{args.example}.py --short" if args.example
                         else "mbplugin " + " ".join(command))
    result["cpus"] = os.cpu_count()
    if not args.json:  # the cold/warm table first: the suite takes minutes (and may fail)
        _print_cold_warm(result, trees, args.repeat, load_before)
    if args.suite:
        for name, tree in trees.items():
            result[name].update(suite(tree))
            if not args.json:
                print(f"{name:6s} test suite from an empty cache: "
                      f"{result[name]['suite_wall']:.0f} s wall, "
                      f"{result[name]['suite_cpu']:.0f} s CPU", flush=True)
    result["load_before"] = load_before
    result["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.suite:
        print(f"load average after the suites: {result['load_after'][0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
