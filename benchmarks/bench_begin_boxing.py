"""Benchmark: a compiled call that hands arrays back to Python against one that fills the
caller's (branch pba2, ``bullet/fused.begin_body``).

numba's dispatcher boxes every array a compiled call returns (a record array's dtype is
unpickled on the way); ``begin_body`` returns (outcome, response M^-1 J^T, gf, gc CONTACT
records, every active). Tried on branch pba2: filling caller-allocated arrays instead and
returning the outcome alone. Not taken: NumPy's ``np.zeros`` of the record dtype in Python
(~1.3 us) costs what the boxing saves (this benchmark: no faster, often slower).
In one process, thread CPU time per call, ``--rounds`` interleaved rounds of ``--calls`` calls
each, an A1's sizes (K = 4 contacts, 18 coordinates): the returning call against the filling
one with its three arrays allocated in Python per call (as ``fused.begin_lean`` does).

    python benchmarks/bench_begin_boxing.py [--rounds 5] [--calls 20000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mbplugin._jit import njit
from mbplugin.pipeline.layout import CONTACT, group_float_size

K, N = 4, 18


@njit
def returned(x, k, n):
    gf = np.zeros(9 * k * k + 4 * k)
    gc = np.zeros(k, dtype=CONTACT)
    resp = np.empty((n, 3 * k))
    resp[:, :] = x[0]
    gf[0] = x[0]
    return 0, resp, gf, gc, True


@njit
def filled(x, k, n, gf, gc, resp, flag):
    resp[:, :] = x[0]
    gf[0] = x[0]
    flag[0] = True
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args(argv)
    x, flag = np.ones(3), np.zeros(1, dtype=np.int64)

    def ret() -> object:
        return returned(x, K, N)

    def fill() -> object:
        gf, gc = np.zeros(group_float_size(K)), np.zeros(K, dtype=CONTACT)
        return filled(x, K, N, gf, gc, np.empty((N, 3 * K)), flag)

    ret()
    fill()
    for r in range(args.rounds):
        us = []
        for f in (ret, fill):
            t = time.thread_time()
            for _ in range(args.calls):
                f()
            us.append((time.thread_time() - t) / args.calls * 1e6)
        print(f"round {r}: returned {us[0]:.2f} us, filled (allocated in Python) {us[1]:.2f} "
              f"us per call, ratio {us[1] / us[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
