"""The two changes mbplugin makes to numba's own typing machinery for a faster first compile
(mbplugin._dispatcher.fast_config_values, mbplugin._jit._quiet_color_shell) give numba's
results: checked against numba's definitions, not against our code."""

from __future__ import annotations

import itertools
import os

import numba
import pytest
from numba.core.compiler import Flags
from numba.core.targetconfig import TargetConfig

import mbplugin._jit as jit


def _by_property(cfg: TargetConfig) -> dict:
    """numba's definition of ``values()``: every option read through its property."""
    return {k: getattr(cfg, k) for k in cfg.options}


@pytest.mark.skipif(jit._dispatcher is None, reason="plain numba.njit: numba left as it is")
def test_config_values_are_the_options_read_one_by_one() -> None:
    assert getattr(TargetConfig.values, "_mbplugin", False)  # installed
    settings = [("nrt", True), ("no_cpython_wrapper", True), ("error_model", "numpy"),
                ("boundscheck", True), ("no_cfunc_wrapper", True), ("enable_looplift", True)]
    configs = [Flags()]
    for r in range(1, 4):
        for combo in itertools.combinations(settings, r):
            f = Flags()
            for k, v in combo:
                setattr(f, k, v)
            configs.append(f)
            configs.append(Flags(f))  # a copy
    for f in configs:
        got = f.values()
        want = _by_property(f)
        assert got == want and list(got) == list(want)
    # equality and hashing follow values(): equal options <=> equal flags, equal hashes
    for f, g in itertools.combinations(configs, 2):
        assert (f == g) == (_by_property(f) == _by_property(g))
        if f == g:
            assert hash(f) == hash(g)


@pytest.mark.skipif(os.name == "nt", reason="Windows keeps colorama's conversion")
def test_typing_errors_keep_their_message() -> None:
    assert numba.core.errors.ColorShell is jit._NoColorShell

    @numba.njit
    def bad(x):
        return x.no_such_attribute

    with pytest.raises(numba.core.errors.TypingError) as info:
        bad(1.0)
    assert "Unknown attribute 'no_such_attribute' of type float64" in str(info.value)
