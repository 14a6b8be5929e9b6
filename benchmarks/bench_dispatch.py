"""Benchmark: the cost of one call from Python into compiled code, by the package's
dispatcher (:class:`mbplugin._dispatcher.Dispatcher`, what ``mbplugin._jit.njit`` is), by plain
``numba.njit`` and by a ``numba.cfunc`` through ctypes, same process, interleaved.

Each case is a function that does (almost) nothing with its arguments, so that the call is all
there is: 0/10/50/100 float64 array arguments returning a float; one array argument returning
1 or 5 new arrays (a tuple), a tuple of 10 arrays, a number; and one argument of each special
kind (a record array returned by a compiled function of the same variant, one returned by a
second such function, one made by Python from the same dtype object, one of an equal dtype
that is another object, a read-only array, a non-contiguous view, a
structref, a tuple of arrays). Variants:

* ``ours``: the package's dispatcher (the entry variant, as ``_jit.njit`` compiles it, without
  the disk cache);
* ``plain``: ``numba.njit(nogil=True, error_model="numpy")``;
* ``entry``: ``ours``' compiled CPython wrapper called directly (its overload's
  ``entry_point``: no type resolution, the arguments' unboxing and the result's boxing only);
* ``cfunc``: the float-array cases as a ``numba.cfunc`` taking data pointers, called through
  ctypes with the pointers precomputed (the floor of a call without numba's wrappers).

So ``ours - entry`` is numba's type resolution (typeof of each argument, the overload lookup),
``entry`` itself the wrappers' unboxing and boxing. Every variant runs ``--batch`` calls per
measurement, the variants in a rotating order, ``--rounds`` times; printed: the fastest
measurement per call (us; the machine is shared: the least disturbed batch). ``--cold``
evicts the caches (a pass over a 16 MB buffer, not timed) before each timed call instead, the
state of a host step's calls (each entry is called once between tens of microseconds of other
work): medians of single calls. The load average is printed before and after. Run it with
another tree's ``PYTHONPATH`` to measure that tree's dispatcher (``ours``).

    PYTHONPATH=<tree> python benchmarks/bench_dispatch.py [--rounds 7] [--batch 2000] [--cold]
        [--json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pickle
import time

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

from mbplugin import _jit

OPTIONS = {"nogil": True, "error_model": "numpy"}


@structref.register
class _BoxType(types.StructRef):
    pass


class _Box(structref.StructRefProxy):
    pass


structref.define_proxy(_Box, _BoxType, ["a", "x"])


#: a record dtype of the size of the contact rows' (pipeline/layout.CONTACT: 24 fields)
_ROW = np.dtype([(f"v{i}", np.float64, (3,)) for i in range(4)]
                + [(f"x{i}", np.float64) for i in range(10)]
                + [(f"k{i}", np.int64) for i in range(5)]
                + [(f"b{i}", np.bool_) for i in range(5)], align=True)


def _function(name: str, params: list[str], body: str):
    """A Python function ``name(params)`` with ``body`` (one line) made by ``exec``."""
    ns: dict = {"np": np, "ROW": _ROW}
    exec(f"def {name}({', '.join(params)}):\n    {body}\n", ns)
    return ns[name]


def _cases() -> list[tuple[str, object, tuple, bool]]:
    """(label, Python function, arguments, has a cfunc variant)."""
    out = []
    for n in (0, 10, 50, 100):
        params = [f"a{i}" for i in range(n)]
        body = "return 1.0" if n == 0 else "return a0[0]"
        out.append((f"{n} arrays -> float", _function(f"f{n}", params, body),
                    tuple(np.zeros(3) for _ in range(n)), True))
    a = np.zeros(3)
    out.append(("1 array -> 1 new array", _function("r1", ["a"], "return np.empty(3)"), (a,),
                False))
    out.append(("1 array -> 5 new arrays", _function(
        "r5", ["a"], "return (np.empty(3), np.empty(3), np.empty(3), np.empty(3), "
        "np.empty(3))"), (a,), False))
    out.append(("1 array -> tuple of 10", _function(
        "rt", ["a"], "return (" + ", ".join(["np.empty(3)"] * 10) + ")"), (a,), False))
    out.append(("1 array -> same array", _function("rs", ["a"], "return a"), (a,), False))
    # the rows a compiled function made are typed first (numba keys its record types by the
    # first dtype object it meets), then Python's array of the same dtype object
    out.append(("record array made compiled", _function("fm", ["a"], "return a[0].x0"),
                "maker", False))
    out.append(("record array, 2nd compiled", _function("f2", ["a"], "return a[0].x0"),
                "maker2", False))
    rec = np.zeros(3, dtype=_ROW)
    out.append(("record array made by Python", _function("fr", ["a"], "return a[0].x0"),
                (rec,), False))
    out.append(("record array, equal dtype", _function("fe", ["a"], "return a[0].x0"),
                (np.zeros(3, dtype=pickle.loads(pickle.dumps(_ROW))),), False))
    ro = np.zeros(3)
    ro.setflags(write=False)
    out.append(("read-only array -> float", _function("fo", ["a"], "return a[0]"), (ro,),
                False))
    out.append(("strided view -> float", _function("fv", ["a"], "return a[0]"),
                (np.zeros(6)[::2],), False))
    out.append(("structref -> float", _function("fs", ["s"], "return s.x"),
                (_Box(np.zeros(3), 1.0),), False))
    out.append(("tuple of 10 arrays -> float", _function("ft", ["t"], "return t[0][0]"),
                (tuple(np.zeros(3) for _ in range(10)),), False))
    out.append(("(array, int, float) tuple", _function("fh", ["t"], "return t[0][0]"),
                ((np.zeros(3), 1, 2.0),), False))
    return out


def _cfunc(n: int):
    """A cfunc of ``n`` float64 pointers returning float64, its ctypes function."""
    sig = types.float64(*([types.CPointer(types.float64)] * n))
    body = "return 1.0" if n == 0 else "return a0[0]"
    fn = numba.cfunc(sig, nopython=True)(_function(f"c{n}", [f"a{i}" for i in range(n)], body))
    proto = ctypes.CFUNCTYPE(ctypes.c_double, *([ctypes.c_void_p] * n))
    return fn, proto(fn.address)


def _warm(fn, args: tuple, batch: int) -> float:
    t = time.perf_counter()
    for _ in range(batch):
        fn(*args)
    return (time.perf_counter() - t) / batch


_EVICT = np.ones(2_000_000)


def _cold(fn, args: tuple, batch: int) -> float:
    times = []
    for _ in range(batch):
        _EVICT.sum()
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    ap.add_argument("--batch", type=int, default=1000, help="calls per measurement")
    ap.add_argument("--cold", action="store_true",
                    help="evict the caches before each call (medians of single calls)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    measure = _cold if args.cold else _warm
    batch = max(1, args.batch // 10) if args.cold else args.batch
    rows = []
    if _jit._dispatcher is None:
        print(f"error: the package compiles with plain numba.njit ({_jit.FALLBACK_REASON})")
        return 2

    def ours_jit(py):
        return _jit._dispatcher.Dispatcher(py, locals={}, targetoptions=dict(
            OPTIONS, nopython=True, no_cfunc_wrapper=True))

    maker = _function("make_rows", [], "return np.zeros(3, dtype=ROW)")
    maker2 = _function("make_rows2", [], "return np.empty(3, dtype=ROW)")
    made = {"maker": {"ours": ours_jit(maker)(), "plain": numba.njit(**OPTIONS)(maker)()},
            "maker2": {"ours": ours_jit(maker2)(), "plain": numba.njit(**OPTIONS)(maker2)()}}
    for label, py, fargs, has_c in _cases():
        ours = ours_jit(py)
        plain = numba.njit(**OPTIONS)(py)
        if isinstance(fargs, str):  # the rows a compiled function of each variant made
            oargs, pargs = (made[fargs]["ours"],), (made[fargs]["plain"],)
        else:
            oargs = pargs = fargs
        ours(*oargs)
        plain(*pargs)
        (cres,) = ours.overloads.values()
        variants = {"ours": (ours, oargs), "plain": (plain, pargs),
                    "entry": (cres.entry_point, oargs)}
        if has_c:
            _, proto = _cfunc(len(oargs))
            variants["cfunc"] = (proto, tuple(a.ctypes.data for a in oargs))
        times: dict[str, list[float]] = {k: [] for k in variants}
        names = list(variants)
        for r in range(args.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                fn, a = variants[k]
                times[k].append(measure(fn, a, batch))
        pick = np.median if args.cold else np.min
        rows.append({"case": label, **{k: 1e6 * float(pick(v)) for k, v in times.items()}})
    load1 = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"cold": args.cold, "load": [load0, load1], "rows": rows}))
        return 0
    how = ("cold: median of single calls after a cache eviction" if args.cold
           else "warm: fastest batch")
    print(f"mbplugin from {os.path.dirname(_jit.__file__)}; us per call, {args.rounds} "
          f"interleaved rounds ({how}); numba {numba.__version__}; load average {load0:.2f}"
          " (before)")
    print(f"{'case':30s} {'ours':>7s} {'plain':>7s} {'entry':>7s} {'cfunc':>7s}"
          f" {'ours-entry':>10s}")
    for row in rows:
        c = f"{row['cfunc']:7.2f}" if "cfunc" in row else f"{'':7s}"
        print(f"{row['case']:30s} {row['ours']:7.2f} {row['plain']:7.2f} {row['entry']:7.2f} {c}"
              f" {row['ours'] - row['entry']:10.2f}")
    print(f"load average {load1:.2f} (after)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
