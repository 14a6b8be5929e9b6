"""The law registry: snake_case names to law classes, open to third-party laws.

Built-in laws register themselves when :mod:`mbplugin.laws` is imported. Other packages add laws
through the entry-point group ``mbplugin.laws``; each entry point names a :class:`Law` subclass::

    [project.entry-points."mbplugin.laws"]
    my_law = "my_package.laws:MyLaw"

Entry points are loaded lazily, the first time a name is looked up or the laws are listed.
"""

from __future__ import annotations

import difflib
import warnings
from importlib.metadata import entry_points
from typing import Any

from mbplugin.errors import ParameterError, UnknownLawError
from mbplugin.laws.base import Law

ENTRY_POINT_GROUP = "mbplugin.laws"

_LAWS: dict[str, type[Law]] = {}
_ALIASES: dict[str, str] = {}
_entry_points_loaded = False


def register(cls: type[Law], *, replace: bool = False) -> type[Law]:
    """Add a law class to the registry (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Law)):
        raise ParameterError(f"register: {cls!r} is not a subclass of mbplugin.laws.Law")
    name = cls.name
    if not name or not name.replace("_", "").isalnum() or name != name.lower():
        raise ParameterError(f"register: law name {name!r} must be a non-empty snake_case string")
    for key in (name, *cls.aliases):
        owner = _LAWS.get(key) or _LAWS.get(_ALIASES.get(key, ""))
        if owner is not None and owner is not cls and not replace:
            raise ParameterError(f"register: law name {key!r} is already taken by {owner.__name__}")
    _LAWS[name] = cls
    for alias in cls.aliases:
        _ALIASES[alias] = name
    return cls


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
            register(cls)
        except Exception as exc:  # a broken plug-in must not break the library
            warnings.warn(
                f"mbplugin: could not load law entry point {ep.name!r} ({ep.value}): {exc}",
                stacklevel=2,
            )


def reload_entry_points() -> None:
    """Forget which entry points were loaded and load them again (after installing a plug-in)."""
    global _entry_points_loaded
    _entry_points_loaded = False
    _load_entry_points()


def get_law_class(name: str) -> type[Law]:
    """The law class registered under ``name`` (or an alias)."""
    _load_entry_points()
    key = _ALIASES.get(name, name)
    try:
        return _LAWS[key]
    except KeyError:
        choices = sorted([*_LAWS, *_ALIASES])
        near = difflib.get_close_matches(str(name), choices, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise UnknownLawError(
            f"unknown law {name!r}{hint} (allowed: see `mbplugin laws`, {len(_LAWS)} laws)"
        ) from None


def make_law(name: str, **params: Any) -> Law:
    """Build a law from its registry name and parameters, e.g. ``make_law('hertz', k=1e9)``."""
    return get_law_class(name)(**params)


def law_names() -> list[str]:
    """Registered law names (without aliases), sorted."""
    _load_entry_points()
    return sorted(_LAWS)


def law_classes() -> list[type[Law]]:
    """Registered law classes, sorted by name."""
    _load_entry_points()
    return [_LAWS[k] for k in sorted(_LAWS)]
