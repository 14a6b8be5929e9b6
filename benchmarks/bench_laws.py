"""Law evaluation throughput: 1e6 contacts, as a ratio to a NumPy multiply-add of the same size.

The baseline ``a * b + c`` over three float64 arrays of N elements is the cheapest vectorised
per-contact work NumPy can do; the target is a law evaluation within 5x of it. Each law is
evaluated through its public API, ``law.force(delta, ddelta, coef, state)`` (compiled batch
loop), with the per-contact coefficients and state as an engine keeps them. Best of 9 runs.

Laws whose exponents are not 1/2, 1, 3/2 or 2 need a ``pow`` per term, which alone costs more
than the multiply-add; for those the table also times the same formula written as a NumPy
expression (column ``numpy expr``), the other natural baseline.

    python benchmarks/bench_laws.py [--n 1000000] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from mbplugin.laws import make_law

LAWS = (
    ("hertz", {"k": 1e9}),
    ("hunt_crossley", {"k": 1e9, "cr": 0.5}),
    ("lankarani_nikravesh", {"k": 1e9, "cr": 0.5}),
    ("zhang2022", {"k": 1e9, "cr": 0.5, "m": 1.2, "q": 0.9}),
    ("azad_featherstone", {"k": 1e10, "lam": 1e5}),
    ("kelvin_voigt", {"k": 1e6, "c": 10.0}),
    ("bouc_wen_hunt_crossley", {"k": 1e6, "c": 1e3, "beta": 1e4, "gamma": -5e3}),
    ("bouc_wen_maxwell", {"k": 1e6, "c": 1e3, "beta": 1e4, "gamma": -5e3}),
)


REPEAT = 9


def best(fn, repeat: int | None = None) -> float:
    times = []
    for _ in range(REPEAT if repeat is None else repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="number of contacts")
    ap.add_argument("--repeat", type=int, default=9, help="best of this many runs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    n = args.n
    global REPEAT
    REPEAT = max(1, args.repeat)
    rng = np.random.default_rng(0)
    a, b, c = rng.random(n), rng.random(n), rng.random(n)
    delta = rng.uniform(0.0, 1e-4, n)
    ddelta = rng.uniform(-1.0, 1.0, n)
    v_in = rng.uniform(0.1, 2.0, n)
    m_eff = rng.uniform(0.1, 2.0, n)
    r_eff = np.full(n, 0.01)

    t_base = best(lambda: a * b + c)

    def numpy_expr(name: str, law, coef, state):
        """The same formula as a plain NumPy expression (None when not written here)."""
        if name in ("hunt_crossley", "lankarani_nikravesh"):
            return lambda: np.maximum(coef[:, 0] * delta**1.5 * (1 + coef[:, 2] / coef[:, 0]
                                                               * ddelta), 0.0)
        if name == "zhang2022":
            return lambda: np.maximum(coef[:, 0] * delta**coef[:, 1] + coef[:, 2]
                                      * delta**coef[:, 3] * np.sign(ddelta)
                                      * np.abs(ddelta)**coef[:, 4], 0.0)
        if name == "bouc_wen_hunt_crossley":
            k, p, al, cd = coef[:, 0], coef[:, 1], coef[:, 2], coef[:, 3]
            z = state[:, 0]
            return lambda: (al * k * np.sign(delta) * np.abs(delta)**p + (1 - al) * k
                            * np.sign(z) * np.abs(z)**p + cd * np.abs(delta)**p * ddelta)
        return None

    rows = []
    for name, params in LAWS:
        law = make_law(name, **params)
        coef = law.coefficients(v_in, m_eff, r_eff)
        state = np.ascontiguousarray(rng.uniform(0.0, 1e-5, (n, law.n_state + law.n_memory)))
        law.force(delta[:8], ddelta[:8], coef[:8], state[:8])  # compile / load
        t = best(lambda law=law, coef=coef, state=state: law.force(delta, ddelta, coef, state))
        expr = numpy_expr(name, law, coef, state)
        t_np = best(expr) if expr is not None else None
        rows.append({"law": name, "seconds": t, "ratio": t / t_base,
                     "ns_per_contact": t / n * 1e9, "numpy_expr_seconds": t_np})
    out = {"n": n, "baseline_madd_seconds": t_base, "laws": rows}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"N = {n:,} contacts; baseline a*b+c: {t_base * 1e3:.2f} ms")
    print(f"{'law':<26} {'time (ms)':>10} {'ns/contact':>11} {'x baseline':>11} "
          f"{'numpy expr (ms)':>16}")
    for r in rows:
        t_np = r["numpy_expr_seconds"]
        np_txt = f"{t_np * 1e3:.2f}" if t_np is not None else "-"
        print(f"{r['law']:<26} {r['seconds'] * 1e3:>10.2f} {r['ns_per_contact']:>11.1f} "
              f"{r['ratio']:>11.2f} {np_txt:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
