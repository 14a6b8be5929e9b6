"""The hostjit cuts of the generic host step on and off, alternating in one process.

"Off" takes the paths these cuts bypass, main's code: the implicit step's solve by
``host_start`` + ``solve`` + ``host_end`` with BLAS W P (``implicit_kernel.solve_step``
refused), the store's end test by ``_memory_and_ends`` (``ContactStore._fast_law`` None), the
store rows of the implicit step through ``ContactStore.aligned`` (main's ``refresh_rows``),
the laws' compiled check uncached, the margin's largest speeds by ``np.max(norm_rows(.))``.
"On" the compiled calls. Minimum and median CPU time per host step of ``--repeat`` runs each
and their ratio, for the PyBullet A1 (robot_rig, 1 s stance + 1 s trot at 1/240 s), MuJoCo
N = 10 spheres (300 steps) and the MuJoCo A1 (``examples/mujoco_quadruped.py``, 1 s + 1 s): a
machine's load moves both modes alike.

    python benchmarks/host_jit_toggle.py [--repeat 6] [--cases a1,n10,mja1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))


def _modes() -> tuple[dict[str, Any], dict[str, Any]]:
    """(the compiled calls, main's paths), keyed by what they replace."""
    from mbplugin.hosts import arrays, detection
    from mbplugin.laws.base import Law
    from mbplugin.pipeline import implicit_kernel as ik
    from mbplugin.pipeline import store
    from mbplugin.pipeline.substep import _law_tables

    cm = ik.cm

    def refresh_rows(gf: Any, gi: Any, st: Any, batch: Any) -> bool:
        k = len(batch)
        al = st.aligned(batch, copy=False)
        rows = gf[ik._R:ik._R + cm.ROW_LEN * k].reshape(k, cm.ROW_LEN)
        rows[:, cm._C:cm._C + al.coef.shape[1]] = al.coef
        rows[:, cm._M:cm._M + al.mem.shape[1]] = al.mem
        kid, mode = _law_tables(st.laws)[:2]
        g = gi.reshape(k, ik.INT_LEN)
        g[:, cm._KID] = kid[al.law]
        g[:, cm._MODE] = mode[al.law]
        g[:, cm._ACT] = al.active
        return bool(al.active.all())

    def compiled_laws(st: Any) -> bool:
        return all(law.kernel is not None and type(law).force_raw is Law.force_raw
                   and law.n_state == 0 for law in st.laws)

    on = {"solve_step": ik.solve_step, "fast_law": store.ContactStore._fast_law,
          "refresh_rows": ik.refresh_rows, "compiled_laws": ik.compiled_laws,
          "max_norm_rows": detection.max_norm_rows}
    off = {"solve_step": lambda *a: None, "fast_law": lambda self: None,
           "refresh_rows": refresh_rows, "compiled_laws": compiled_laws,
           "max_norm_rows": lambda a: float(np.max(arrays.norm_rows(a), initial=0.0))}
    return on, off


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=6, help="runs per case and mode")
    ap.add_argument("--cases", default="a1,n10,mja1", help="a1 (PyBullet), n10, mja1 (MuJoCo)")
    args = ap.parse_args(argv)
    cases = args.cases.split(",")
    from mbplugin.hosts import detection
    from mbplugin.pipeline import implicit_kernel as ik
    from mbplugin.pipeline import store

    on, off = _modes()

    def mode(compiled: bool) -> None:
        m = on if compiled else off
        ik.solve_step = m["solve_step"]
        store.ContactStore._fast_law = m["fast_law"]
        ik.refresh_rows = m["refresh_rows"]
        ik.compiled_laws = m["compiled_laws"]
        detection.max_norm_rows = m["max_norm_rows"]

    runs: dict[str, tuple[Any, int]] = {}
    if "a1" in cases:
        import robot_rig

        d = Path(tempfile.mkdtemp())
        spec = robot_rig.ROBOTS["a1"]
        robot_rig.run(spec, d, 1 / 240, 0.5, t_gait=0.2, record=False)
        runs["PyBullet A1"] = (lambda: robot_rig.run(spec, d, 1 / 240, 2.0, ours=True,
                                                     t_gait=1.0, record=False), 480)
    if "n10" in cases or "mja1" in cases:
        import bench_mujoco as bm

        bm.sphere_steps(2, 20, True)
        if "n10" in cases:
            runs["MuJoCo N = 10"] = (lambda: bm.sphere_steps(10, 300, True), 300)
        if "mja1" in cases:
            q = bm._example()
            bm.a1_steps(q, True, 0.3, 0.3)
            runs["MuJoCo A1"] = (lambda: bm.a1_steps(q, True), 1000)
    print(f"load average {os.getloadavg()[0]:.2f}; CPU per host step (us), min / median")
    for name, (fn, steps) in runs.items():
        cpu: dict[bool, list[float]] = {False: [], True: []}
        for compiled in (False, True):
            mode(compiled)
            fn()  # warm
        for _ in range(args.repeat):
            for compiled in (False, True):
                mode(compiled)
                c0 = time.process_time()
                fn()
                cpu[compiled].append((time.process_time() - c0) / steps)
        a, b = np.array(cpu[False]), np.array(cpu[True])
        print(f"{name:14s} off {1e6 * a.min():7.1f} / {1e6 * np.median(a):7.1f}   on "
              f"{1e6 * b.min():7.1f} / {1e6 * np.median(b):7.1f}   on/off {b.min() / a.min():.3f}"
              f" / {np.median(b / a):.3f}")
    mode(True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
