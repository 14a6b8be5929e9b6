"""The garbage collector's thresholds while numba compiles (mbplugin._jit._CompileGC).

numba types a call of an ``overload`` by running its Python typing function inside the compile,
so such a function sees the thresholds the compile runs with; after the compile the process
must have the thresholds it had before (the user's, whatever they were), also when the compile
fails."""

from __future__ import annotations

import gc

import numba
import pytest
from numba.extending import overload

from mbplugin import _jit


def _probe():
    raise NotImplementedError


_seen: list = []


@overload(_probe)
def _probe_impl(x):
    _seen.append(gc.get_threshold())
    if isinstance(x, numba.types.UnicodeType):
        raise numba.core.errors.TypingError("no strings")
    return lambda x: x + 1


def _compiled_at_compile_thresholds_then_restored(user: tuple) -> None:
    """The typing function ran inside the compile, at the compile's thresholds; the user's
    thresholds are back after it."""
    assert _seen and all(t == _jit.COMPILE_GC_THRESHOLD for t in _seen)
    assert gc.get_threshold() == user
    assert _jit._COMPILE_GC.depth == 0


@pytest.fixture
def user_threshold():
    before = gc.get_threshold()
    gc.set_threshold(500, 7, 3)
    _seen.clear()
    yield (500, 7, 3)
    gc.set_threshold(*before)


def test_compile_runs_with_the_compile_thresholds_and_restores_the_users(user_threshold):
    @numba.njit
    def inner(x):
        return _probe(x)

    @numba.njit
    def outer(x):
        return inner(x) * 2

    assert outer(1.5) == 5.0  # (1.5 + 1) * 2
    _compiled_at_compile_thresholds_then_restored(user_threshold)  # nested: outer and inner


def test_a_failed_compile_restores_the_users_thresholds(user_threshold):
    @numba.njit
    def bad(x):
        return _probe(x)

    with pytest.raises(numba.core.errors.TypingError):
        bad("a")
    _compiled_at_compile_thresholds_then_restored(user_threshold)


def test_a_call_served_by_a_compiled_overload_leaves_the_thresholds(user_threshold):
    @numba.njit
    def f(x):
        return _probe(x)

    f(1.0)
    assert gc.get_threshold() == user_threshold
    _seen.clear()
    assert f(2.0) == 3.0  # compiled already: no compile, no typing
    assert _seen == []
    assert gc.get_threshold() == user_threshold
