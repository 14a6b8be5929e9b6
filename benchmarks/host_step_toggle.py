"""The host step's compiled row helpers on and off, alternating in one process.

"Off" takes the NumPy paths the helpers replaced (``hosts.arrays.norm_rows`` /
``cross_rows`` column by column, ``verify_off``'s NumPy expression, n.W n by ``einsum``), the
same results bit for bit; "on" the compiled loops. Minimum and median CPU time per host step
of ``--repeat`` runs each, and their ratio, for the PyBullet A1 (robot_rig, 1 s stance + 1 s
trot at 1/240 s), MuJoCo N = 10 spheres (300 steps) and the MuJoCo A1
(``examples/mujoco_quadruped.py``, 1 s + 1 s). A lower bound of the branch's gain: the other
cuts (caches, fast paths for an unchanged key set) stay on in both.

    python benchmarks/host_step_toggle.py [--repeat 6] [--cases a1,n10,mja1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))


def _numpy_paths() -> dict[str, Any]:
    """The replaced NumPy paths, keyed by what they replace."""
    import scipy.sparse as sp

    from mbplugin.hosts import arrays
    from mbplugin.pipeline import delassus

    def normal_entries(W: Any, blocks: Any, normal: np.ndarray) -> np.ndarray:
        if blocks is None and sp.issparse(W):
            return delassus.normal_diagonal(W, normal)
        b = arrays.diagonal_blocks(W) if blocks is None else blocks
        return np.einsum("ki,kij,kj->k", normal, b, normal)

    def verify_off(d_h: np.ndarray, d: np.ndarray, u_h: np.ndarray, u: np.ndarray,
                   found: np.ndarray, tol: float, du: float) -> bool:
        nr = arrays.norm_rows
        off = (np.abs(d_h - d) > tol * np.abs(d) + 1e-9) | (nr(u_h - u) > tol * nr(u) + du)
        return bool(np.any(off & found))

    return {"float_rows": lambda a: False, "verify_off": verify_off,
            "normal_entries": normal_entries}


def compare(mode: Callable[[bool], None], cases: list[str], repeat: int) -> None:
    """Print the minimum and median CPU time per host step of ``repeat`` runs with
    ``mode(False)`` and ``mode(True)`` alternating, and their ratio, for the ``cases`` (a1:
    the PyBullet A1 of robot_rig, 1 s stance + 1 s trot at 1/240 s; n10: MuJoCo N = 10
    spheres, 300 steps; mja1: the MuJoCo A1 of ``examples/mujoco_quadruped.py``, 1 s + 1 s);
    leaves ``mode(True)``."""
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
        for _ in range(repeat):
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


def toggle_main(argv: list[str] | None, doc: str,
                switches: Callable[[], list[tuple[Any, str, Any]]]) -> int:
    """The command line of a toggle benchmark: ``switches()`` (called after the package's
    import) gives (owner, attribute, its "off" value) per switch; "on" is the attribute's
    value at that call. Runs :func:`compare`."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=6, help="runs per case and mode")
    ap.add_argument("--cases", default="a1,n10,mja1", help="a1 (PyBullet), n10, mja1 (MuJoCo)")
    args = ap.parse_args(argv)
    sw = [(owner, name, getattr(owner, name), off) for owner, name, off in switches()]

    def mode(compiled: bool) -> None:
        for owner, name, on, off in sw:
            setattr(owner, name, on if compiled else off)

    compare(mode, args.cases.split(","), args.repeat)
    return 0


def _switches() -> list[tuple[Any, str, Any]]:
    from mbplugin.hosts import arrays, integrator
    from mbplugin.hosts import step as hstep

    off = _numpy_paths()
    return [(arrays, "_float_rows", off["float_rows"]),
            (integrator, "verify_off", off["verify_off"]),
            (hstep, "normal_entries", off["normal_entries"])]


def main(argv: list[str] | None = None) -> int:
    return toggle_main(argv, __doc__, _switches)


if __name__ == "__main__":
    raise SystemExit(main())
