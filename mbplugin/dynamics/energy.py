"""Elastic energy stored in active contacts, per law family (J).

The work done on a contact, int F ddelta dt, splits into the energy its spring holds now and the
energy its dampers (and hysteresis) have dissipated. The split needs the law's elastic potential:

* power kernel (Hunt-Crossley general form and every law built on it, F = k delta^n + damping):
  U = k delta^(n+1)/(n+1) (the damping term does no recoverable work);
* Bouc-Wen-Simon-Hunt-Crossley (Milehins & Marghitu 2026, dimensional energy balance of
  App. B, spec ``bouc-wen-collision-laws.md`` section 2.8):
  U = alpha k |delta|^(p+1)/(p+1) + (1 - alpha) k |zeta|^(p+1)/(A (p+1));
* Bouc-Wen-Maxwell (same construction, App. C, the spring sees psi = delta - rho):
  U = alpha k |psi|^(p+1)/(p+1) + (1 - alpha) k |zeta|^(p+1)/(A (p+1)).

Other laws (plastic laws with memory, third-party laws) have no potential here: their stored
energy is reported as NaN and their whole contact work counts as dissipated.
"""

from __future__ import annotations

import numpy as np

from mbplugin.laws import _ids
from mbplugin.laws.base import Law


def stored_energy(law: Law, delta: np.ndarray, coef: np.ndarray, state: np.ndarray) -> np.ndarray:
    """Elastic energy (J) of contacts of one law: ``delta`` (N,) m, ``coef`` rows (N, >= n_coef),
    ``state`` rows (N, n_state + n_memory). NaN where the law has no known potential."""
    d = np.asarray(delta, dtype=float)
    kid = law.kernel
    if kid == _ids.POWER:
        k, n = coef[:, 0], coef[:, 1]
        dp = np.maximum(d, 0.0)
        return k * dp ** (n + 1.0) / (n + 1.0)
    if kid in (_ids.BOUC_WEN_HC, _ids.BOUC_WEN_MAXWELL):
        k, p, alpha, A = coef[:, 0], coef[:, 1], coef[:, 2], coef[:, 4]
        if kid == _ids.BOUC_WEN_HC:
            psi = d
            zeta = state[:, 0]
        else:
            psi = d - state[:, 0]
            zeta = state[:, 1]
        return (alpha * k * np.abs(psi) ** (p + 1.0) / (p + 1.0)
                + (1.0 - alpha) * k * np.abs(zeta) ** (p + 1.0) / (A * (p + 1.0)))
    return np.full(d.shape, np.nan)
