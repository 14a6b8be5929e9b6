"""Benchmark: the implicit step's Newton solve (:func:`mbplugin.pipeline.implicit_kernel.newton`)
replayed on the A1 quadruped's recorded solves: iterations, force evaluations and time per solve.

Recording: the A1 of ``tests/robot_rig.py`` on PyBullet (``--stance`` s stance, then ``--trot``
s trot at 1/240 s) and the A1 of ``examples/mujoco_quadruped.py`` on MuJoCo (1 s + 1 s at
2 ms) run in a subprocess whose ``newton`` is wrapped to keep every call's arguments (that
subprocess compiles with ``MBPLUGIN_JIT=plain`` into a temporary numba cache: its wrapped
kernels never reach the package's cache). The replay calls ``newton`` on each recorded start
from one compiled loop (no Python between solves) and reports per host: solves, contacts per
solve, Newton iterations (``counters[0]``: the converged test included) and force evaluations
(``counters[1]``) per solve, and the thread CPU time per solve (the fastest of ``--repeat``
passes).

``--against TREE``: the same replay with TREE's ``mbplugin/pipeline/implicit_kernel.py`` (a
checkout of another commit, e.g. ``git worktree add ../other <rev>``; loaded under another
module name, the rest of the package this tree's) in the same process, passes interleaved,
with the ratio of the times and the largest difference of the roots relative to each solve's
largest impulse.

    python benchmarks/bench_newton.py [--data FILE] [--record FILE] [--against TREE]
        [--repeat 5] [--stance 2] [--trot 2]

``--record FILE`` records and saves (``.pkl``) without replaying; ``--data FILE`` replays a
saved recording (default: record into a temporary file first, ~2 min).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

_RECORDER = r'''
import pickle, sys, tempfile
from pathlib import Path
import numba
sys.path.insert(0, sys.argv[1] + "/tests")
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from mbplugin.pipeline import implicit_kernel as ik

REC = []
_orig = ik.newton
HOST = ["bullet"]


def _keep(P, ue, d0, ed, dt, k, gf, gc, fn0, s0, lim, frozen, rtol):
    REC.append(dict(host=HOST[0], P=P.copy(), ue=ue.copy(), d0=d0.copy(), ed=ed.copy(),
                    dt=float(dt), k=int(k), gf=gf.copy(), gc=gc.copy(), fn0=fn0.copy(),
                    s0=s0.copy(), lim=lim.copy(), frozen=bool(frozen), rtol=float(rtol)))


@numba.njit
def newton_kept(P, ue, d0, ed, dt, k, gf, gc, fn0, s0, lim, frozen, rtol, counters):
    with numba.objmode():
        _keep(P, ue, d0, ed, dt, k, gf, gc, fn0, s0, lim, frozen, rtol)
    return _orig(P, ue, d0, ed, dt, k, gf, gc, fn0, s0, lim, frozen, rtol, counters)


ik.newton = newton_kept
import robot_rig
with tempfile.TemporaryDirectory() as tmp:
    stance, trot = float(sys.argv[3]), float(sys.argv[4])
    robot_rig.run(robot_rig.ROBOTS["a1"], Path(tmp), 1 / 240, stance + trot, ours=True,
                  t_gait=stance, record=False)
HOST[0] = "mujoco"
import bench_mujoco as bm
bm.a1_steps(bm._example(), True)
with open(sys.argv[2], "wb") as f:
    pickle.dump(REC, f)
'''


def record(path: Path, stance: float, trot: float) -> None:
    """Run the recorder (module docstring) into ``path``."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, MBPLUGIN_JIT="plain", NUMBA_CACHE_DIR=cache,
                   PYTHONPATH=str(ROOT))
        subprocess.run([sys.executable, "-c", _RECORDER, str(ROOT), str(path), str(stance),
                        str(trot)], env=env, check=True, stderr=subprocess.DEVNULL)


def _kernel_of(tree: Path, name: str):
    spec = importlib.util.spec_from_file_location(
        name, tree / "mbplugin" / "pipeline" / "implicit_kernel.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _lists(rec: list[dict]) -> tuple:
    """The recorded calls as typed lists, one per argument (compiled replay)."""
    from numba.typed import List

    out = []
    for key in ("P", "ue", "d0", "ed", "gf", "gc", "fn0", "s0", "lim"):
        lst = List()
        for r in rec:
            lst.append(np.ascontiguousarray(r[key]))
        out.append(lst)
    scal = np.array([[r["dt"], r["rtol"]] for r in rec])
    ints = np.array([[r["k"], r["frozen"]] for r in rec], dtype=np.int64)
    return (*out, scal, ints)


def _replay_loop():
    from mbplugin._jit import njit

    @njit
    def replay(newton, P0, ue, d0, ed, gf, gc, fn0, s0, lim, scal, ints, roots, counters):
        """Every recorded solve once from its start: roots into ``roots`` (list), counters
        (N, 3)."""
        for c in range(len(P0)):
            P = roots[c]
            P[:] = P0[c]
            newton(P, ue[c], d0[c], ed[c], scal[c, 0], ints[c, 0], gf[c], gc[c], fn0[c],
                   s0[c], lim[c], ints[c, 1] != 0, scal[c, 1], counters[c])

    return replay


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="a recording to replay")
    ap.add_argument("--record", type=Path, help="record into this file and stop")
    ap.add_argument("--against", type=Path, help="another tree's kernel, same process")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stance", type=float, default=2.0)
    ap.add_argument("--trot", type=float, default=2.0)
    args = ap.parse_args(argv)
    if args.record is not None:
        record(args.record, args.stance, args.trot)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data
        if data is None:
            data = Path(tmp) / "newton.pkl"
            record(data, args.stance, args.trot)
        with open(data, "rb") as f:
            rec = pickle.load(f)
    from numba.typed import List

    from mbplugin.pipeline import implicit_kernel as ik

    kernels = {"this tree": ik.newton}
    if args.against is not None:
        kernels[str(args.against)] = _kernel_of(args.against, "_ik_against").newton
    replay = _replay_loop()
    print(f"load average {os.getloadavg()[0]:.2f}")
    hosts = sorted({r["host"] for r in rec})
    for host in hosts:
        sel = [r for r in rec if r["host"] == host]
        arrays = _lists(sel)
        n = len(sel)
        best = dict.fromkeys(kernels, float("inf"))
        roots, counts = {}, {}
        for name, fn in kernels.items():  # compile and count
            roots[name] = List([np.empty_like(r["P"]) for r in sel])
            counts[name] = np.zeros((n, 3), dtype=np.int64)
            replay(fn, *arrays, roots[name], counts[name])
        for _ in range(args.repeat):
            for name, fn in kernels.items():
                cnt = np.zeros((n, 3), dtype=np.int64)
                t = time.thread_time()
                replay(fn, *arrays, roots[name], cnt)
                best[name] = min(best[name], (time.thread_time() - t) / n)
        ks = np.array([r["k"] for r in sel])
        print(f"{host}: {n} solves, K mean {ks.mean():.2f} (max {ks.max()})")
        for name in kernels:
            c = counts[name]
            print(f"  {name:24s} iterations/solve {c[:, 0].mean():5.2f} (max {c[:, 0].max():2d})"
                  f"  evaluations/solve {c[:, 1].mean():5.2f}  {best[name] * 1e6:6.2f} us/solve")
        if len(kernels) == 2:
            a, b = kernels
            rel = max(float(np.max(np.abs(x - y)) / (np.max(np.abs(y)) + 1e-300))
                      for x, y in zip(roots[a], roots[b], strict=True))
            print(f"  time ratio {a} / {b}: {best[a] / best[b]:.3f}; roots differ by <= "
                  f"{rel:.1e} of the solve's largest impulse")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
