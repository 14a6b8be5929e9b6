"""Plain-text tables and JSON-safe conversion, shared by the command line and the reports.

Lives outside :mod:`mbplugin.cli` so that library modules (validation reports, simulation
summaries) can format output without importing the command line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def json_safe(obj: Any) -> Any:
    """``obj`` with non-finite floats as ``None`` and NumPy scalars/arrays as Python values."""
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def dumps_json(obj: Any, indent: int | None = 2) -> str:
    """One strict JSON document (non-finite floats become ``null``)."""
    return json.dumps(json_safe(obj), indent=indent, allow_nan=False)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned numeric columns."""

    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            if not math.isfinite(v):
                return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
            return f"{v:.6g}"
        return str(v)

    text = [[cell(v) for v in r] for r in rows]
    numeric = [all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)
               for i in range(len(header))]
    widths = [max(len(h), *(len(r[i]) for r in text)) if text else len(h)
              for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for r in text:
        lines.append("  ".join(c.rjust(w) if numeric[i] else c.ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


def human_duration(seconds: float) -> str:
    """``90`` -> ``'90 s'``, ``600`` -> ``'10 min'``, ``36000`` -> ``'10 h'``, days beyond."""
    if seconds < 120:
        return f"{seconds:.2g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"
