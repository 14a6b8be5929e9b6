"""The c_r map of a sweep: output c_r against the input c_r, over impact speed, per law."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from mbplugin.errors import ParameterError


def plot_cr_map(table: Any, path: str | os.PathLike[str], max_speeds: int = 6) -> Path:
    """Write one panel per law: c_r out vs the ``cr`` input, a line per selected speed."""
    from mbplugin.plotting import pyplot, save_figure

    cols = set(table.column_names)
    if not {"law", "cr", "cr_out", "v0"} <= cols:
        raise ParameterError("--plot draws the c_r map of an impact sweep with a 'cr' input "
                             "(columns law, cr, cr_out, v0)")
    law = np.array(table.column("law").to_pylist(), dtype=object)
    cr = table.column("cr").to_numpy(zero_copy_only=False)
    out = table.column("cr_out").to_numpy(zero_copy_only=False)
    v0 = table.column("v0").to_numpy(zero_copy_only=False)
    laws = list(dict.fromkeys(law.tolist()))
    speeds = np.unique(v0)
    pick = speeds[np.unique(np.linspace(0, speeds.size - 1, min(max_speeds, speeds.size))
                            .round().astype(int))]
    plt = pyplot()
    ncol = min(4, len(laws))
    nrow = math.ceil(len(laws) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.3 * ncol, 3.0 * nrow), squeeze=False,
                             sharex=True, sharey=True)
    cmap = plt.get_cmap("viridis")
    for ax, name in zip(axes.ravel(), laws, strict=False):
        for j, v in enumerate(pick):
            sel = (law == name) & (v0 == v) & np.isfinite(cr)
            if not sel.any():
                continue
            c_in = cr[sel]
            c_out = out[sel]
            # average over the other inputs (masses, ...) at each input c_r
            u, inv = np.unique(c_in, return_inverse=True)
            mean = np.bincount(inv, weights=c_out) / np.bincount(inv)
            ax.plot(u, mean, color=cmap(j / max(1, len(pick) - 1)), lw=1.0,
                    label=f"{v:.3g} m/s")
        ax.plot([0, 1], [0, 1], "k:", lw=0.7)
        ax.set_title(name, fontsize=8)
        ax.grid(True, alpha=0.3)
    for ax in axes.ravel()[len(laws):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("c_r input")
    for ax in axes[:, 0]:
        ax.set_ylabel("c_r output")
    axes[0, 0].legend(fontsize=6, title="v0", title_fontsize=6)
    fig.tight_layout()
    return save_figure(fig, path)
