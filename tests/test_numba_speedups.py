"""The two changes mbplugin makes to numba's own typing machinery for a faster first compile
(mbplugin._dispatcher.fast_config_values, mbplugin._jit._quiet_color_shell) give numba's
results: checked against numba's definitions, not against our code."""

from __future__ import annotations

import itertools
import os

import numba
import numpy as np
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


@pytest.mark.skipif(jit._dispatcher is None, reason="plain numba.njit: numba left as it is")
def test_reference_counting_finds_numba_meminfos() -> None:
    """fast_meminfos finds the meminfos numba's own NRTContext.get_meminfos finds, read the
    same way from the value (chains of extractvalue indices and selects), on types beyond
    the install probe's: records, nested optionals, tuples of tuples of arrays, lists."""
    from numba.core.runtime.context import NRTContext

    d = jit._dispatcher
    fast = NRTContext.get_meminfos
    assert getattr(fast, "_mbplugin", False)  # installed
    numba_own = fast._original
    t = numba.types
    a1, a3 = t.float64[:], t.int32[:, :, ::1]
    rec = numba.from_dtype(np.dtype([("x", np.float64), ("n", np.int64)]))
    extra = [t.int64, t.boolean, t.complex128, a3, rec, t.Array(rec, 1, "C"),
             t.UniTuple(t.UniTuple(a1, 2), 3), t.Tuple((t.float64, t.Tuple((a3, t.intp)), a1)),
             t.Optional(t.Tuple((a1, t.float64))), t.List(a1), t.UniTuple(t.Optional(a1), 2),
             t.Tuple(tuple([t.float64] * 20 + [a1] * 5 + [t.UniTuple(t.intp, 3)] * 4))]
    for ty in d._probe_types() + extra:
        want = d.meminfo_paths(numba_own, ty)
        assert d.meminfo_paths(fast, ty) == want, ty
    # not vacuous: arrays are found, scalars and borrowed tuples are not
    assert len(d.meminfo_paths(fast, extra[-1])) == 5
    assert d.meminfo_paths(fast, t.float64) == []


@pytest.mark.skipif(jit._dispatcher is None, reason="plain numba.njit: numba left as it is")
def test_argument_packer_memory_is_numba_packer() -> None:
    """memo_arg_packer hands back, for the same types, a packer that flattens as a new numba
    ArgPacker does (the same LLVM argument types, the same unflattening code)."""
    from numba.core.base import BaseContext
    from numba.core.datamodel import ArgPacker

    assert getattr(BaseContext.get_arg_packer, "_mbplugin", False)
    ctx = numba.core.registry.cpu_target.target_context
    t = numba.types
    a1 = t.float64[:]
    for args in [(), (t.float64,), (a1, t.intp), (t.Tuple((a1, t.UniTuple(a1, 2), t.float64)),
                                                  t.boolean, t.Optional(a1))]:
        got = ctx.get_arg_packer(list(args))
        assert ctx.get_arg_packer(args) is got  # remembered
        new = ArgPacker(ctx.data_model_manager, args)
        assert got.argument_types == new.argument_types
        assert got._unflattener._code == new._unflattener._code
        assert got._fe_args == tuple(new._fe_args)


# ---- each library linked once at the entry (mbplugin._dispatcher._link_closure) -------------
# A diamond of callees: _L_A calls _L_B and _L_C, both call _L_D (and a numba overload,
# np.empty). The entry links every callee's own IR once; a plain numba.njit caller links a
# callee the way numba does (the callee's module with everything below it).

def _l_d(x, arrs):
    tmp = np.empty(2)
    tmp[0] = x * arrs[0][0]
    tmp[1] = arrs[1][1]
    return tmp[0] + tmp[1]


def _l_b(x, arrs):
    return _L_D(x, arrs) + 1.0


def _l_c(x, arrs):
    return 2.0 * _L_D(x, arrs)


def _l_a(x, arrs):
    return _L_B(x, arrs) + _L_C(x, arrs)


if jit._dispatcher is not None:
    _OPTS = {"nopython": True, "nogil": True, "error_model": "numpy", "no_cfunc_wrapper": True}
    _L_D, _L_B, _L_C, _L_A = (jit._dispatcher.Dispatcher(f, locals={}, targetoptions=_OPTS)
                              for f in (_l_d, _l_b, _l_c, _l_a))


@pytest.mark.skipif(jit._dispatcher is None, reason="plain numba.njit: numba left as it is")
def test_callees_linked_once_compute_the_diamond() -> None:
    """d = x a0 + b1; a = (d + 1) + 2 d = 3 d + 1, from the entry (a borrowed tuple: the
    trampoline into the callee variant) and from plain numba.njit code calling the callee."""
    arrs = (np.array([2.0, 5.0]), np.array([7.0, 0.25]))
    x = 1.5
    d = x * 2.0 + 0.25
    assert _L_A(x, arrs) == 3.0 * d + 1.0

    @numba.njit
    def plain(x, arrs):
        return _L_A(x, arrs) - _L_D(x, arrs)

    assert plain(x, arrs) == 3.0 * d + 1.0 - d
    assert isinstance(next(iter(_L_A.overloads.values())).library,
                      jit._dispatcher._EntryLibrary)
    # a callee's library holds its own code only (what it calls is linked by the entry)
    lib_b = next(iter(_L_B._callee.overloads.values())).library
    names = [f.name for f in lib_b._final_module.functions if not f.is_declaration]
    assert any("_l_b" in n for n in names)
    assert not any("_l_d" in n for n in names)


# ---- numba's own overloads compiled as callees (mbplugin._dispatcher.callee_overloads) ------

def _ov_user(n, x):
    """numba overloads (np.empty, np.arange, .sum, np.sqrt, min): sum of 0..n-1 and sqrt(x)."""
    tmp = np.empty(2)
    tmp[0] = np.arange(n).sum()
    tmp[1] = np.sqrt(x)
    return min(tmp[0], 1e300) + tmp[1]


def _template(fn):
    ctx = numba.core.registry.cpu_target.typing_context
    ctx.refresh()
    return ctx.resolve_value_type(fn).templates[0](ctx)


@pytest.mark.skipif(jit._dispatcher is None, reason="plain numba.njit: numba left as it is")
def test_numba_overloads_are_callees_only_inside_our_compiles() -> None:
    """The result is the closed form (n (n - 1) / 2 + sqrt(x)) and plain numba.njit's; the
    np.empty implementation an entry typed is a callee library (IR only, linked by the entry);
    outside this package's compiles numba's jit decorator is left as it is, and an overload
    asking for its own pipeline or a wrapper keeps it."""
    from numba.core.registry import CPUDispatcher
    from numba.core.typing.templates import _OverloadFunctionTemplate

    d = jit._dispatcher
    assert getattr(_OverloadFunctionTemplate._get_jit_decorator, "_mbplugin", False)
    entry = d.Dispatcher(_ov_user, locals={}, targetoptions={"nopython": True})
    assert entry(10, 2.25) == 45.0 + 1.5 == numba.njit(_ov_user)(10, 2.25)
    libs = [type(c.library) for disp, _ in _template(np.empty)._impl_cache.values() if disp
            for c in disp.overloads.values()]
    assert d._CalleeLibrary in libs
    t = _template(np.empty)
    assert d._COMPILING[0] == 0 and t._get_jit_decorator() is numba.core.decorators.jit
    d._COMPILING[0] += 1
    try:
        jitter = t._get_jit_decorator()
        callee = jitter(no_cpython_wrapper=True, nopython=True)(_ov_user)
        own = jitter(nopython=True, pipeline_class=numba.core.compiler.Compiler)(_ov_user)
        wrapped = jitter(nopython=True, no_cpython_wrapper=False)(_ov_user)
    finally:
        d._COMPILING[0] -= 1
    assert isinstance(callee, CPUDispatcher)
    assert callee.targetoptions["no_cfunc_wrapper"] is True
    assert callee._compiler.pipeline_class is d._CalleeCompiler
    assert own._compiler.pipeline_class is numba.core.compiler.Compiler
    assert wrapped._compiler.pipeline_class is numba.core.compiler.Compiler
    assert "no_cfunc_wrapper" not in own.targetoptions
