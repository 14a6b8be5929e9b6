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

import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from host_step_toggle import toggle_main  # noqa: E402


def _modes() -> dict[str, Any]:
    """Main's paths, keyed by what they replace."""
    from mbplugin.hosts import arrays
    from mbplugin.laws.base import Law
    from mbplugin.pipeline.substep import _law_tables

    def refresh_rows(gc: Any, st: Any, batch: Any) -> bool:
        al = st.aligned(batch, copy=False)
        gc["coef"][:, :al.coef.shape[1]] = al.coef
        gc["mem"][:, :al.mem.shape[1]] = al.mem
        kid, mode = _law_tables(st.laws)[:2]
        gc["kid"] = kid[al.law]
        gc["mode"] = mode[al.law]
        gc["active"] = al.active
        return bool(al.active.all())

    def compiled_laws(st: Any) -> bool:
        return all(law.kernel is not None and type(law).force_raw is Law.force_raw
                   and law.n_state == 0 for law in st.laws)

    off = {"solve_step": lambda *a: None, "fast_law": lambda self: None,
           "refresh_rows": refresh_rows, "compiled_laws": compiled_laws,
           "max_norm_rows": lambda a: float(np.max(arrays.norm_rows(a), initial=0.0))}
    return off


def _switches() -> list[tuple[Any, str, Any]]:
    from mbplugin.hosts import detection
    from mbplugin.pipeline import implicit_kernel as ik
    from mbplugin.pipeline import store

    off = _modes()
    return [(ik, "solve_step", off["solve_step"]),
            (store.ContactStore, "_fast_law", off["fast_law"]),
            (ik, "refresh_rows", off["refresh_rows"]),
            (ik, "compiled_laws", off["compiled_laws"]),
            (detection, "max_norm_rows", off["max_norm_rows"])]


def main(argv: list[str] | None = None) -> int:
    return toggle_main(argv, __doc__, _switches)


if __name__ == "__main__":
    raise SystemExit(main())
