"""The quadruped example (``examples/quadruped_foot_ground.py``) loaded as a module, for the
benchmarks that time its ``run`` (bench_bullet_quadruped.py, bench_bullet_stick.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "quadruped_foot_ground.py"


def load() -> ModuleType:
    """The example's module (its constants, ``run``, ``toe_stiffness``, ``backward_slide``...)."""
    spec = importlib.util.spec_from_file_location("quadruped_foot_ground", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
