"""Running impacts for the cases: vectorised sweeps with a scalar fallback.

Sweeps go through :class:`mbplugin.impact.ImpactBatch` (one compiled loop). A law without a
compiled kernel (a third-party law) cannot be batched; it then runs impact by impact on the
reference integrator, which is slower but gives the same quantities.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.impact import ImpactBatch, impact
from mbplugin.laws import get_law_class, make_law

#: The quantities a sweep returns (arrays).
SWEEP_KEYS = ("cr_out", "duration", "f_max", "delta_max", "delta_residual", "captured")


def accepted_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` restricted to the ones law ``name`` declares (others are dropped)."""
    cls = get_law_class(name)
    names = {p.name for p in cls.params}
    return {k: v for k, v in params.items() if k in names}


def sweep(
    name: str,
    params: dict[str, Any],
    *,
    mass: Any = 1.0,
    v0: Any = 1.0,
    mass2: Any = np.inf,
    press: Any = 0.0,
    t_max: Any = None,
    rtol: float = 1e-10,
) -> dict[str, np.ndarray]:
    """Impacts of law ``name``: every argument may be an array; all broadcast together.

    Returns the arrays of :data:`SWEEP_KEYS` (SI units; ``captured`` boolean).
    """
    arrays = {k: np.asarray(v, dtype=float) for k, v in params.items()
              if not isinstance(v, str)}
    shape = np.broadcast_shapes(
        *(a.shape for a in arrays.values()),
        np.shape(mass), np.shape(v0), np.shape(mass2), np.shape(press),
        np.shape(t_max) if t_max is not None else (),
    )
    count = int(np.prod(shape)) if shape else 1

    def flat(x: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(x, dtype=float), shape).reshape(count)

    p_flat = {k: (flat(v) if not isinstance(v, str) else v) for k, v in params.items()}
    compiled = getattr(make_law(name, **_row(p_flat, 0)), "kernel", None) is not None
    if compiled:
        law = make_law(name, **p_flat)
        batch = ImpactBatch(rtol=rtol)
        batch.add(law, mass=flat(mass), v0=flat(v0), mass2=flat(mass2), press=flat(press),
                  t_max=None if t_max is None else flat(t_max))
        res = batch.run()
        return {k: np.asarray(res[k]).reshape(shape) for k in SWEEP_KEYS}
    out = {k: np.empty(count, dtype=bool if k == "captured" else float) for k in SWEEP_KEYS}
    m_f, v_f, m2_f, p_f = flat(mass), flat(v0), flat(mass2), flat(press)
    tm_f = None if t_max is None else flat(t_max)
    for i in range(count):
        r = impact(make_law(name, **_row(p_flat, i)), float(m_f[i]), float(v_f[i]),
                   mass2=float(m2_f[i]), press=float(p_f[i]), rtol=rtol,
                   t_max=None if tm_f is None else float(tm_f[i]))
        for k in SWEEP_KEYS:
            out[k][i] = getattr(r, k)
    return {k: v.reshape(shape) for k, v in out.items()}


def _row(p_flat: dict[str, Any], i: int) -> dict[str, Any]:
    return {k: (float(v[i]) if isinstance(v, np.ndarray) else v) for k, v in p_flat.items()}
