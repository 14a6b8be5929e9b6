"""Helpers shared by the subcommands: ``-p NAME=VALUE`` parsing and JSON printing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mbplugin.errors import ParameterError
from mbplugin.formatting import dumps_json


def parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    """``['k=1e9', 'power=complex']`` -> ``{'k': 1e9, 'power': 'complex'}``."""
    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise ParameterError(f"-p {item!r}: expected NAME=VALUE, e.g. -p k=1e9")
        key, _, raw = item.partition("=")
        key = key.strip()
        if not key:
            raise ParameterError(f"-p {item!r}: empty parameter name")
        raw = raw.strip()
        try:
            out[key] = float(raw)
        except ValueError:
            out[key] = raw
    return out


def print_json(obj: Any) -> None:
    """Print one JSON document (non-finite floats become null)."""
    print(dumps_json(obj))
