"""Calls from Python into the package's dispatcher (mbplugin._dispatcher): each argument type
gets its own compiled overload (never one compiled for another layout, dtype or write flag),
record arrays returned by one entry and taken by another share the dtype object the caller
made, and arrays are boxed as NumPy's own objects without leaking references.

The references are NumPy's results and objects, numba's ``typeof`` and CPython's reference
counts, not values our code computed."""

from __future__ import annotations

import gc
import pickle
import sys

import numba
import numpy as np
import pytest

import mbplugin._jit  # noqa: F401  (installs the dispatcher's speed-ups, as the package does)
from mbplugin import _dispatcher

jit = _dispatcher.jit(nogil=True, error_model="numpy", no_cfunc_wrapper=True)

ROW = np.dtype([("p", np.float64, (3,)), ("x", np.float64), ("k", np.int64),
                ("on", np.bool_)], align=True)
OTHER = np.dtype([("x", np.float64), ("k", np.int64)])


@jit
def total(a):
    """The sum of an array's elements (any dtype, layout, dimension, write flag)."""
    s = 0.0
    for v in a.ravel():
        s += v
    return s


@jit
def first_set(a):
    """Writes 1 into the first element of a 1-D array (a typing error for a read-only one)."""
    a[0] = 1


@jit
def rows(n):
    """n record rows of ROW, row i with x = i and k = 2i (a record array made compiled)."""
    out = np.zeros(n, dtype=ROW)
    for i in range(n):
        out[i].x = i
        out[i].k = 2 * i
    return out


@jit
def row_sum(r):
    """The sum of x + k over the rows of a record array (any record dtype with x and k)."""
    s = 0.0
    for i in range(r.shape[0]):
        s += r[i].x + r[i].k
    return s


@jit
def scaled(a, c):
    """A new array c * a and a view of ``a`` without its first element."""
    return c * a, a[1:]


def test_every_layout_dtype_and_write_flag_has_its_own_overload() -> None:
    base = np.arange(24.0).reshape(4, 6)
    ro = base.copy()
    ro.setflags(write=False)
    args = [base, base.astype(np.float32), base.astype(np.int64), base[:, ::2],
            np.asfortranarray(base), ro, base[::2, 1], base.ravel(), ro[1:, ::3]]
    for a in args:
        assert total(a) == pytest.approx(float(np.sum(a, dtype=np.float64)), rel=1e-12)
    # again in another order: each call must find its own overload, none another's
    for a in reversed(args):
        assert total(a) == pytest.approx(float(np.sum(a, dtype=np.float64)), rel=1e-12)
    want = {(numba.typeof(a),) for a in args}
    assert set(total.signatures) == want
    assert len(total.signatures) == len(args)


def test_a_read_only_array_never_takes_the_writeable_overload() -> None:
    w = np.zeros(3)
    first_set(w)
    assert w[0] == 1.0
    ro = np.zeros(3)
    ro.setflags(write=False)
    with pytest.raises(numba.core.errors.TypingError):
        first_set(ro)
    assert ro[0] == 0.0
    view = np.zeros(6)[::2]  # non-contiguous, writeable: its own overload, which writes
    first_set(view)
    assert view[0] == 1.0 and view.base[1] == 0.0


def test_record_arrays_dispatch_by_dtype() -> None:
    r = np.zeros(3, dtype=ROW)
    r["x"], r["k"] = [1.0, 2.0, 3.0], [4, 5, 6]
    o = np.zeros(2, dtype=OTHER)
    o["x"], o["k"] = [0.5, 0.25], [7, 8]
    equal = np.zeros(3, dtype=pickle.loads(pickle.dumps(ROW)))  # equal, another object
    equal["x"], equal["k"] = [1.0, 1.0, 1.0], [1, 1, 1]
    assert equal.dtype == ROW and equal.dtype is not ROW
    assert row_sum(r) == float(np.sum(r["x"]) + np.sum(r["k"]))
    assert row_sum(o) == float(np.sum(o["x"]) + np.sum(o["k"]))
    assert row_sum(equal) == 6.0
    assert row_sum(r[::2]) == float(np.sum(r["x"][::2]) + np.sum(r["k"][::2]))
    assert {(numba.typeof(a),) for a in (r, o, r[::2])} == set(row_sum.signatures)


def test_record_arrays_returned_share_the_callers_dtype_object() -> None:
    """The first record array of ROW the dispatcher types is the caller's (ROW itself); the rows
    an entry returns carry that object, so numba's typeof finds them by identity (no
    field-by-field comparison of two equal dtypes at every call)."""
    mine = np.zeros(2, dtype=ROW)
    assert row_sum(mine) == 0.0
    made = rows(4)
    assert made.dtype is ROW
    np.testing.assert_array_equal(made["x"], np.arange(4.0))
    np.testing.assert_array_equal(made["k"], 2 * np.arange(4))
    assert row_sum(made) == float(np.sum(np.arange(4.0)) + np.sum(2 * np.arange(4)))


def test_arrays_are_boxed_as_numpy_objects_without_leaking_references() -> None:
    a = np.arange(5.0)
    new, view = scaled(a, 2.0)
    assert type(new) is np.ndarray and type(view) is np.ndarray
    np.testing.assert_array_equal(new, 2.0 * a)
    assert new.flags.writeable and new.flags.c_contiguous
    assert np.shares_memory(view, a) and not np.shares_memory(new, a)
    np.testing.assert_array_equal(view, a[1:])
    ro = np.arange(4.0)
    ro.setflags(write=False)
    new_ro, view_ro = scaled(ro, 1.0)
    assert new_ro.flags.writeable and not view_ro.flags.writeable  # as NumPy's views
    # the boxed arrays own their memory: they outlive everything else
    del a, ro
    gc.collect()
    np.testing.assert_array_equal(new, 2.0 * np.arange(5.0))
    np.testing.assert_array_equal(view_ro, [1.0, 2.0, 3.0])
    # numba's boxer took a reference to np.ndarray for every array it returned
    b = np.ones(3)
    scaled(b, 1.0)
    before = sys.getrefcount(np.ndarray)
    for _ in range(1000):
        scaled(b, 1.0)
    assert sys.getrefcount(np.ndarray) - before < 10
