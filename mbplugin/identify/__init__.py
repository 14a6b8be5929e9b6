"""Parameter identification: fit contact laws to measured impacts and loops.

>>> from mbplugin.identify import load_data, fit_law
>>> data = load_data("zhang2022_steel_ball")            # a shipped data set (or a CSV path)
>>> res = fit_law("zhang2022", data, free=["m", "q"], start={"k": 2.4144e10, "n": 1.5},
...               targets=["f_max"])                      # doctest: +SKIP

* :mod:`mbplugin.identify.data` -- file formats and the shipped data sets;
* :func:`fit_law` -- any law's free parameters, dimensional, ``least_squares`` or COBYQA;
* :func:`fit_bouc_wen_base` -- the Bouc-Wen base-parameter problem of Milehins & Marghitu (2026);
* :func:`plot_fit` -- data against the fitted model (matplotlib, extra ``plot``).
"""

from __future__ import annotations

from mbplugin.identify.bouc_wen import BASE_NAMES, base_predict, fit_bouc_wen_base
from mbplugin.identify.data import (
    TARGETS,
    ImpactData,
    LoopData,
    LoopRun,
    dataset_names,
    impact_data,
    load_data,
)
from mbplugin.identify.fit import METHODS, FitResult, fit_law
from mbplugin.identify.plot import plot_fit

__all__ = [
    "BASE_NAMES",
    "METHODS",
    "TARGETS",
    "FitResult",
    "ImpactData",
    "LoopData",
    "LoopRun",
    "base_predict",
    "dataset_names",
    "fit_bouc_wen_base",
    "fit_law",
    "impact_data",
    "load_data",
    "plot_fit",
]
