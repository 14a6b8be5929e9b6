"""Profile: where a cold first run's compile CPU goes, per compiled function.

Runs an mbplugin command (default: the README's ``run scenes/drop_ball.toml``) in a child
process with ``NUMBA_CACHE_DIR`` a fresh empty directory and a listener on numba's
``numba:compile`` events (:mod:`numba.core.event`): for every function numba compiles, its
CPU time exclusive of the compiles nested in it (thread CPU time, so another process's load
does not count); ``--example NAME`` runs ``examples/NAME.py --short --out DIR`` instead of a
command. Prints the total, the largest functions, the functions Python calls (entry
variants: a module optimisation and machine code each) and groups by module. Run::

    python benchmarks/profile_coldstart.py [--command "run scenes/drop_ball.toml"] [--top 30]
    python benchmarks/profile_coldstart.py --example mesh_scene
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys, time
import numba.core.event as ev

stack, rows = [], []

class L(ev.Listener):
    def on_start(self, event):
        stack.append([time.thread_time(), 0.0])

    def on_end(self, event):
        t0, nested = stack.pop()
        total = time.thread_time() - t0
        if stack:
            stack[-1][1] += total
        disp = event.data["dispatcher"]
        opts = getattr(disp, "targetoptions", {}) or {}
        callee = bool(opts.get("no_cpython_wrapper"))
        name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
        rows.append({"name": name, "excl": total - nested, "incl": total,
                     "callee": callee, "sig": str(event.data.get("args"))})

ev.register("numba:compile", L())
out_path = sys.argv[1]
t0 = time.process_time()
if sys.argv[2] == "--example":
    import runpy
    sys.argv = [sys.argv[3], *sys.argv[4:]]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit:
        pass
else:
    from mbplugin.cli import main
    try:
        main(sys.argv[2:])
    except SystemExit:
        pass
cpu = time.process_time() - t0
json.dump({"rows": rows, "cpu": cpu}, open(out_path, "w"))
"""


def profile(tree: Path, command: list[str]) -> dict:
    """Run ``command`` cold in a child with ``tree`` on PYTHONPATH; the compile events."""
    with tempfile.TemporaryDirectory(prefix="mbplugin-prof-") as tmp:
        cache = Path(tmp) / "numba"
        cache.mkdir()
        argv = list(command)
        if argv[:1] == ["run"] or argv[:1] == ["--example"]:
            argv += ["--out", str(Path(tmp) / "out")]
        result = Path(tmp) / "events.json"
        env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", _CHILD, str(result), *argv], cwd=tree,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        data = json.loads(result.read_text())
    data["wall"] = wall
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--command", default="run scenes/drop_ball.toml")
    ap.add_argument("--example", default=None,
                    help="profile examples/NAME.py --short instead of a command")
    ap.add_argument("--tree", default=str(ROOT), help="package tree (PYTHONPATH)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--json", default=None, help="also write the events to this file")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    tree = Path(args.tree).resolve()
    command = shlex.split(args.command)
    if args.example:
        script = tree / "examples" / f"{args.example}.py"
        if not script.is_file():
            ap.error(f"--example {args.example}: no {script}")
        command = ["--example", str(script), "--short"]
        args.command = f"examples/{args.example}.py --short"
    data = profile(tree, command)
    rows = data["rows"]
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    total = sum(r["excl"] for r in rows)
    entries = [r for r in rows if not r["callee"]]
    print(f"mbplugin {args.command}: cold, {os.cpu_count()} CPUs, load {load[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print(f"main-thread CPU {data['cpu']:.1f} s, wall {data['wall']:.1f} s, compiling "
          f"{total:.1f} s in {len(rows)} compiles ({len(entries)} entries: "
          f"{sum(r['excl'] for r in entries):.1f} s exclusive)")
    agg: dict[str, list] = defaultdict(lambda: [0.0, 0, False])
    for r in rows:
        a = agg[r["name"]]
        a[0] += r["excl"]
        a[1] += 1
        a[2] = a[2] or not r["callee"]
    print(f"\nlargest {args.top} functions (exclusive CPU s, compiles, E = entry):")
    for name, (t, n, e) in sorted(agg.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {t:6.2f}  {n:3d} {'E' if e else ' '} {name}")
    print("\nentries (called from Python), exclusive CPU s:")
    for r in sorted(entries, key=lambda r: -r["excl"]):
        print(f"  {r['excl']:6.2f}  {r['name']}")
    mods: dict[str, float] = defaultdict(float)
    for r in rows:
        mods[r["name"].rsplit(".", 1)[0]] += r["excl"]
    print("\nby module:")
    for m, t in sorted(mods.items(), key=lambda kv: -kv[1]):
        print(f"  {t:6.2f}  {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
