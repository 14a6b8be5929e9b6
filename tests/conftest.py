"""Test configuration: property-based tests draw the same examples on every run (CI included),
so that a failure is reproducible rather than a matter of luck."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("mbplugin", derandomize=True, print_blob=True)
settings.load_profile("mbplugin")
