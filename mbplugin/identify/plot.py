"""Plots of a fit: measured values against the fitted model (matplotlib, extra ``plot``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from mbplugin.identify.data import LoopData
from mbplugin.identify.fit import FitResult

_LABELS = {"cr": "c_r", "duration": "duration (s)", "f_max": "peak force (N)",
           "delta_max": "max indentation (m)"}


def plot_fit(res: FitResult, path: str | os.PathLike[str]) -> Path:
    """Write a figure of data vs fit (one panel per quantity, or the loops) to ``path``."""
    from mbplugin.plotting import pyplot, save_figure

    plt = pyplot()
    data = res.data
    title = f"{res.law}: " + ", ".join(f"{k} = {v:.4g}" for k, v in res.values.items())
    if isinstance(data, LoopData):
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        pred = res.predictions.get("loop", np.array([]))
        i = 0
        for j, run in enumerate(data.runs):
            n = run.delta.size
            ax.plot(run.delta, run.force, "o", ms=3, color=f"C{j}",
                    label=f"data, v0 = {run.v0:g} m/s")
            if pred.size:
                ax.plot(run.delta, pred[i:i + n], "-", color=f"C{j}", lw=1.2)
            i += n
        ax.set_xlabel("indentation delta (m)")
        ax.set_ylabel("force (N)")
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
        ax.set_title(title, fontsize=8)
        return save_figure(fig, path)
    keys = list(res.residuals)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.8), squeeze=False)
    order = np.argsort(data.v0)
    for ax, key in zip(axes[0], keys, strict=True):
        ax.plot(data.v0[order], data.targets[key][order], "o", label="data")
        mdl = np.asarray(res.predictions.get(key, []), dtype=float)
        if mdl.size:
            ax.plot(data.v0[order], mdl[order], "x-", label=f"fit (rms {res.rms[key]:.3g})")
        ax.set_xlabel("approach speed v0 (m/s)")
        ax.set_ylabel(_LABELS.get(key, key))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)
