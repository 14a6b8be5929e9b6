"""Elastic energy stored in active contacts (J).

The work done on a contact, int F ddelta dt, splits into the energy its elastic part holds now
and the energy its dampers (and hysteresis, plasticity) have dissipated. The split needs the
law's elastic potential, which each law gives in its own module (:meth:`Law.potential
<mbplugin.laws.base.Law.potential>`: Hertz-type springs, the Bouc-Wen energy balance, the
unloading branches of the plastic laws). Third-party laws without one report NaN and their
whole contact work counts as dissipated.
"""

from __future__ import annotations

import numpy as np

from mbplugin.laws.base import Law


def stored_energy(law: Law, delta: np.ndarray, coef: np.ndarray, state: np.ndarray) -> np.ndarray:
    """Elastic energy (J) of contacts of one law: ``delta`` (N,) m, ``coef`` rows (N, >= n_coef),
    ``state`` rows (N, n_state + n_memory). NaN where the law has no known potential."""
    return law.potential(np.asarray(delta, dtype=float), coef, state)
