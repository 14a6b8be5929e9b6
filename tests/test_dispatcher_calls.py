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
from mbplugin._jit import as_readonly, readonly_view

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


# ---- one front end per function (Dispatcher.callee_shared, mbplugin._jit.readonly_view) -----


def _squares_py(a):
    """The sum of the squares of a 1-D array's elements."""
    acc_sq = 0.0
    for v in a:
        acc_sq += v * v
    return acc_sq


# (not cached on disk: the test reads what numba typed in this process)
_OPTS = {"nopython": True, "nogil": True, "error_model": "numpy", "no_cfunc_wrapper": True}
_squares = _dispatcher.Dispatcher(_squares_py, locals={}, targetoptions=_OPTS)


def _squares_twice_py(a):
    """Twice :func:`_squares` (compiled code calling it)."""
    return 2.0 * _squares(a)


_squares_twice = _dispatcher.Dispatcher(_squares_twice_py, locals={}, targetoptions=_OPTS)


def test_a_function_called_from_python_and_compiled_code_is_typed_once() -> None:
    """numba's typemap of the entry Python calls holds the trampoline's variables only: the
    body (its local ``acc_sq``) is typed once, in the callee variant compiled code links."""
    a = np.array([1.0, 2.0, 3.0])
    assert _squares(a) == 14.0  # 1 + 4 + 9
    assert _squares_twice(a) == 28.0
    (entry,) = _squares.overloads.values()
    (callee,) = _squares._callee.overloads.values()
    assert "acc_sq" in callee.fndesc.typemap
    assert "acc_sq" not in entry.fndesc.typemap
    assert callee.library in entry.library._linking_libraries


def test_readonly_view_and_writable_keep_the_values_and_set_the_flag() -> None:
    from mbplugin._jit import readonly_view, writable

    w = np.arange(5, dtype=np.int32)
    v = readonly_view(w)
    assert not v.flags.writeable and w.flags.writeable  # the caller's array is left alone
    assert np.shares_memory(v, w) and np.array_equal(v, w)
    assert readonly_view(v) is v
    c = writable(v)
    assert c.flags.writeable and not np.shares_memory(c, w) and np.array_equal(c, w)
    assert writable(w) is w


def test_csr_kernel_compiles_once_for_frozen_and_scipy_patterns() -> None:
    """n.W n of a canonical CSR W is NumPy's n_i . W_ii n_i whether W's index arrays are a
    frozen shared pattern (read-only) or SciPy's own (writeable), from one compiled variant."""
    import scipy.sparse as sp

    from mbplugin.hosts.wmatrix import csr_on_pattern, normal_entries
    from mbplugin.pipeline.delassus import _csr_normal_diagonal

    rng = np.random.default_rng(3)
    k = 3
    dense = np.zeros((3 * k, 3 * k))
    for i, j in [(0, 0), (1, 1), (2, 2), (0, 2), (2, 0)]:
        dense[3 * i:3 * i + 3, 3 * j:3 * j + 3] = rng.normal(size=(3, 3))
    normal = rng.normal(size=(k, 3))
    want = np.array([normal[i] @ dense[3 * i:3 * i + 3, 3 * i:3 * i + 3] @ normal[i]
                     for i in range(k)])
    S = sp.csr_matrix(dense)
    n = 3 * k + 1000 * k  # a size no other test keeps a pattern for
    big = sp.block_diag([S, sp.identity(n - 3 * k)], format="csr")
    first = csr_on_pattern(big.data.copy(), big.indices, big.indptr, n)  # SciPy's arrays
    again = csr_on_pattern(big.data.copy(), big.indices, big.indptr, n)  # the frozen pattern
    assert first.indices.flags.writeable and not again.indices.flags.writeable
    normal_big = np.vstack([normal, np.ones((n // 3 - k, 3))])
    got = normal_entries(again, None, normal_big)
    before = len(_csr_normal_diagonal.overloads)
    got2 = normal_entries(first, None, normal_big)
    assert len(_csr_normal_diagonal.overloads) == before
    np.testing.assert_allclose(got[:k], want, rtol=1e-12)
    np.testing.assert_array_equal(got, got2)


def _squares_of_own_py(n):
    """:func:`_squares` of 0, 1, ..., n - 1 held in a (writable) array made in compiled code,
    passed read-only as Python passes it."""
    return _squares_ro(as_readonly(np.arange(n) * 1.0))


_squares_ro = _dispatcher.Dispatcher(_squares_py, locals={}, targetoptions=_OPTS)
_squares_of_own = _dispatcher.Dispatcher(_squares_of_own_py, locals={}, targetoptions=_OPTS)


def test_as_readonly_lets_compiled_code_share_the_read_only_variant() -> None:
    """A kernel Python calls with a read-only view and compiled code with an array of its own
    through ``as_readonly`` is typed once; the sums are the closed form (n - 1) n (2n - 1) / 6."""
    w = np.arange(4.0)
    assert _squares_ro(readonly_view(w)) == 14.0  # 0 + 1 + 4 + 9
    assert _squares_of_own(4) == 14.0 and _squares_of_own(10) == 285.0
    (callee,) = _squares_ro._callee.overloads.values()
    (arg,) = callee.signature.args
    assert not arg.mutable
    assert w.flags.writeable  # the caller's array is left alone
