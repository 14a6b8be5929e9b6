"""Refactoring guard of the impact analyser: record reference results, compare a later tree's.

Not a physics test (those are in tests/): a before/after pin of ``mbplugin.impact.impact`` and
``ImpactBatch``, so that a change of the analyser's integrator can show how far its results
moved (issue 21: "bitwise or <= 1e-12 identical"). Cases:

* ``impact``: every registered built-in law, with the parameters of
  ``tests/test_law_potential.py`` (``PARAMS``; k = 2e9 N/m^n, c_r 0.6 where the law has one),
  m = 0.3 kg, v0 = 0.9 m/s, radius 0.01 m, at press 0 and press m g (g = 9.81 m/s^2);
* ``batch``: ``ImpactBatch`` over a small grid: four Hunt-Crossley-family laws and two laws
  with ODE states, c_r in {0.3, 0.6, 0.9} (or their own parameters), v0 in {0.1, 1.0} m/s,
  press in {0, m g}.

    python benchmarks/analyser_pins.py --record /tmp/analyser_before.npz   # on the old tree
    python benchmarks/analyser_pins.py --check /tmp/analyser_before.npz    # on the new tree

``--time N``: the CPU time (``time.process_time``, the minimum of N runs after one warm-up run)
of the ``impact`` cases and of ``ImpactBatch`` over ``bench_impact.py --quick``'s 2000 mixed
impacts, for a before/after comparison (run the two trees alternately)::

    python benchmarks/analyser_pins.py --time 5

``--check`` prints, per quantity, the largest relative difference |new - old| / |old| (an
absolute difference where old is 0) over all cases, and exits 1 when one exceeds ``--tol``
(default 1e-12) or a case's status (failed / captured / error text) changed.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
M, V0, RADIUS, G = 0.3, 0.9, 0.01, 9.81
#: quantities compared (ImpactResult attribute names); the first four are the issue's
KEYS = ("cr_out", "f_max", "duration", "delta_max", "cr_poisson", "cr_stronge", "t_f_max",
        "delta_residual", "energy_dissipated", "duration_overlap", "t_max_compression")
BATCH_KEYS = ("cr_out", "f_max", "duration", "delta_max", "cr_poisson", "cr_stronge",
              "t_f_max", "energy_dissipated")


def _params() -> dict:
    path = HERE.parent / "tests" / "test_law_potential.py"
    spec = importlib.util.spec_from_file_location("_pins_law_params", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.PARAMS, mod.K


def run_impacts() -> dict[str, np.ndarray]:
    from mbplugin.impact import impact
    from mbplugin.laws import get_law_class, law_names, make_law

    params, k = _params()
    out: dict[str, np.ndarray] = {}
    for name in law_names():
        if not get_law_class(name).__module__.startswith("mbplugin."):
            continue
        for press in (0.0, M * G):
            tag = f"impact/{name}/press={press:g}"
            try:
                law = make_law(name, **params.get(name, {"k": k, "cr": 0.6}))
                r = impact(law, M, V0, press=press, radius=RADIUS)
            except Exception as exc:
                out[tag + "/error"] = np.array(f"{type(exc).__name__}: {exc}")
                continue
            out[tag] = np.array([float(getattr(r, key)) for key in KEYS])
            out[tag + "/captured"] = np.array(bool(r.captured))
    return out


def run_batch() -> dict[str, np.ndarray]:
    from mbplugin.impact import ImpactBatch
    from mbplugin.laws import make_law

    crs = np.repeat([0.3, 0.6, 0.9], 4)
    v0 = np.tile(np.repeat([0.1, 1.0], 2), 3)
    press = np.tile([0.0, M * G], 6)
    b = ImpactBatch()
    for name in ("hunt_crossley", "flores", "gonthier", "lankarani_nikravesh"):
        b.add(make_law(name, k=2e9, cr=crs), M, v0, press=press)
    b.add(make_law("xiong", k=2e9, beta1=1e-4, beta2=10.0, gamma=1e4), M, v0[:4],
          press=press[:4])
    b.add(make_law("bouc_wen_hunt_crossley", k=2e9, A=1.7, c=1e5), M, v0[:4], press=press[:4])
    b.add(make_law("goldsmith", k=2e9, cr=crs, n=1.4), M, v0, press=press)
    d = b.run(errors="report")
    out = {f"batch/{key}": np.asarray(d[key], dtype=float) for key in BATCH_KEYS}
    out["batch/captured"] = np.asarray(d["captured"], dtype=bool)
    return out


def run() -> dict[str, np.ndarray]:
    return {**run_impacts(), **run_batch()}


def _rel(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    new = np.atleast_1d(np.asarray(new, dtype=float))
    old = np.atleast_1d(np.asarray(old, dtype=float))
    same = (new == old) | (np.isnan(new) & np.isnan(old))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(old != 0.0, np.abs(new - old) / np.abs(old), np.abs(new - old))
    rel = np.where(same, 0.0, rel)
    return np.where(np.isnan(rel), np.inf, rel)


def check(ref: dict[str, np.ndarray], new: dict[str, np.ndarray], tol: float) -> int:
    bad = 0
    if set(ref) != set(new):
        print("case keys differ:", sorted(set(ref) ^ set(new)))
        bad += 1
    worst = {key: (0.0, "") for key in KEYS}
    n_bitwise = n_cases = 0
    for tag in sorted(set(ref) & set(new)):
        a, b = ref[tag], new[tag]
        if tag.endswith("/error") or a.dtype == bool:
            if a.tolist() != b.tolist():
                print(f"{tag}: {a} -> {b}")
                bad += 1
            continue
        rel = _rel(b, a)
        names = KEYS if tag.startswith("impact/") else (tag.split("/")[1],)
        for j, key in enumerate(names):
            r = float(rel.max()) if len(names) == 1 else float(rel[j])
            if r > worst[key][0]:
                worst[key] = (r, tag)
        n_cases += 1
        n_bitwise += bool(np.all(rel == 0.0))
    print(f"{n_bitwise} of {n_cases} result vectors bit for bit the same")
    for key, (r, tag) in worst.items():
        flag = "  > tol" if r > tol else ""
        print(f"{key:18s} max rel diff {r:.3e}  {tag}{flag}")
        bad += r > tol
    return 1 if bad else 0


def timings(repeat: int) -> dict[str, float]:
    import time

    from mbplugin.impact import ImpactBatch
    from mbplugin.laws import make_law

    spec = importlib.util.spec_from_file_location("_pins_bench_impact", HERE / "bench_impact.py")
    bi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bi)
    cases = bi._cases(2000, 1)

    def batch() -> None:
        b = ImpactBatch()
        for name, cr, v0 in cases:
            b.add(make_law(name, k=bi.K, n=bi.N_EXP, cr=cr), bi.M0, v0)
        b.run()

    out = {}
    for name, fn in (("impact", run_impacts), ("batch", batch)):
        fn()
        best = math.inf
        for _ in range(repeat):
            c0 = time.process_time()
            fn()
            best = min(best, time.process_time() - c0)
        out[name] = best
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", metavar="FILE")
    g.add_argument("--check", metavar="FILE")
    g.add_argument("--time", type=int, metavar="N")
    ap.add_argument("--tol", type=float, default=1e-12)
    args = ap.parse_args()
    import mbplugin

    print("mbplugin from", Path(mbplugin.__file__).parent)
    if args.time:
        t = timings(args.time)
        print(f"CPU s: impact cases {t['impact']:.4f}  ImpactBatch 2000 {t['batch']:.4f}")
        return 0
    res = run()
    if args.record:
        np.savez(args.record, **res)
        n = sum(1 for t in res if not t.endswith(("/error", "/captured")))
        print(f"recorded {n} result vectors to {args.record}")
        return 0
    with np.load(args.check) as f:
        ref = {k: f[k] for k in f.files}
    return check(ref, res, args.tol)


if __name__ == "__main__":
    sys.exit(main())
