"""Numba compilation helpers.

Compiled kernels are cached on disk by numba (``cache=True``) next to their source files. Numba
only checks the time stamp of the file that holds the cached function, not of the kernels it
calls in other modules, so a changed kernel could be served from a stale cache. On import this
module hashes every source file that holds compiled code and, when the hash changed, deletes
the package's numba cache files before anything is compiled.

It also holds the decorators (:data:`njit`, :data:`njit_inline`) and, for hot loops of compiled
calls, :func:`borrowed` (array views that carry no reference count, with the lifetime rule
they need) and :func:`keep_alive`.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Callable
from pathlib import Path

import llvmlite.binding as ll
import numba
import numba.core.event
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import Compiler
from numba.core.datamodel.models import TupleModel, register_default
from numba.core.dispatcher import _FunctionCompiler
from numba.core.environment import lookup_environment
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic, lower_cast

_PKG = Path(__file__).resolve().parent


def _refresh_cache() -> None:
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    sources = sorted(p for p in _PKG.rglob("*.py") if "__pycache__" not in p.parts)
    digest = hashlib.sha1()
    for p in sources:
        try:
            text = p.read_bytes()
        except OSError:
            continue
        if b"njit" in text:
            digest.update(p.relative_to(_PKG).as_posix().encode())
            digest.update(text)
    stamp_dir = _PKG / "__pycache__"
    stamp = stamp_dir / "numba-sources.sha1"
    new = digest.hexdigest()
    try:
        if stamp.exists() and stamp.read_text().strip() == new:
            return
        for cache_file in _PKG.rglob("__pycache__/*.nb[ic]"):
            cache_file.unlink(missing_ok=True)
        stamp_dir.mkdir(exist_ok=True)
        tmp = stamp.with_suffix(".tmp")
        tmp.write_text(new)
        tmp.replace(stamp)
    except OSError:  # read-only install: numba falls back to its user-wide cache
        return


_refresh_cache()

class TupleRef(numba.types.Tuple):
    """The type a callee variant (:class:`Dispatcher`) takes a heterogeneous tuple of arrays
    as: the same value and layout as the tuple, borrowed from the caller, so without reference
    counting of its arrays. numba reference-counts every array of a tuple argument at a
    function's entry and exit and every array of a tuple variable when it is assigned or
    dropped; for the engine's problem tuples (~50 arrays) that was half of the LLVM IR of the
    functions that pass them on. The caller owns the tuple for the duration of the call (it is
    an argument of the call); a value of this type must not outlive the call, so a callee that
    returns one is refused (:meth:`Dispatcher.get_call_template`). An element taken out of it is
    an ordinary, reference-counted value."""

    def __new__(cls, types):
        return object.__new__(cls)

    @property
    def key(self):
        return ("ref", self.types)


@register_default(TupleRef)
class _TupleRefModel(TupleModel):
    def traverse(self, builder):
        return []  # borrowed: no reference counting (see TupleRef)


@lower_cast(numba.types.BaseTuple, TupleRef)
@lower_cast(TupleRef, numba.types.BaseTuple)
def _tuple_ref_cast(context, builder, fromty, toty, val):
    if tuple(fromty.types) == tuple(toty.types):
        return val
    items = [context.cast(builder, builder.extract_value(val, i), f, t)
             for i, (f, t) in enumerate(zip(fromty.types, toty.types, strict=True))]
    return context.make_tuple(builder, toty, items)


def _has_array(t) -> bool:
    if isinstance(t, numba.types.Array):
        return True
    return isinstance(t, numba.types.BaseTuple) and any(_has_array(x) for x in t.types)


def _callee_type(t):
    """The type a callee variant takes an argument of type ``t`` as: without literal values,
    and a heterogeneous tuple holding arrays (nested ones too) as a :class:`TupleRef`."""
    t = numba.types.unliteral(t)
    if isinstance(t, numba.types.Tuple) and _has_array(t):
        return TupleRef([_callee_type(x) for x in t.types])
    return t


def _holds_ref(t) -> bool:
    if isinstance(t, TupleRef):
        return True
    if isinstance(t, numba.types.BaseTuple):
        return any(_holds_ref(x) for x in t.types)
    return False


class _NoEnvCodegen:
    """The codegen of a :class:`_CalleeLibrary` as numba's lowering sees it: everything as the
    real codegen, except that the function's environment is not written into the (absent)
    machine code; :meth:`Dispatcher.add_overload` sets it in the code of the entry point."""

    def __init__(self, codegen) -> None:
        self._codegen = codegen

    def __getattr__(self, name):
        return getattr(self._codegen, name)

    def set_env(self, env_name, env) -> None:
        pass


class _CalleeLibrary(JITCodeLibrary):
    """The code library of a callee variant: LLVM IR that only compiled callers link into
    their own library. numba finalises every library it compiles (module-level optimisation of
    the function and of everything it links, then machine code); for a function only ever
    called from compiled code both are redone by the caller (the entry point's library
    optimises the whole linked module and emits its machine code), so a callee's library
    keeps its function-level optimised IR and stops there."""

    @property
    def codegen(self):
        return _NoEnvCodegen(self._codegen)

    def _optimize_final_module(self) -> None:
        pass

    def _finalize_final_module(self) -> None:
        self._finalized = True

    def get_pointer_to_function(self, name) -> int:
        self._ensure_finalized()
        return 0


class _CalleeCompiler(Compiler):
    """numba's default pipeline, with a :class:`_CalleeLibrary` for the code."""

    def compile_extra(self, func):
        if self.state.library is None:
            codegen = self.state.targetctx.codegen()
            self.state.library = _CalleeLibrary(codegen, func.__qualname__)
        return super().compile_extra(func)


class _EntryLibrary(JITCodeLibrary):
    """The code library of an entry variant (a function called from Python): numba's, with
    every function it linked in made private to it before the module-level optimisation.

    numba links a callee into each caller as ``linkonce_odr``: a definition that another copy
    may replace, so LLVM neither infers attributes for it (read-only and non-captured
    arguments, no undefined values) nor changes its signature; numba used to optimise every
    callee's library on its own first, where the callee was still an exact definition. The
    callee libraries now stop at IR (:class:`_CalleeLibrary`), and the entry's library is the
    only place that machine code is made for them: made ``private`` (not even a symbol in the
    object code, so no other library can resolve to it), the linked functions are exact
    definitions of this library alone, which LLVM optimises as a whole (attributes, inlining,
    dead arguments). Same arithmetic, bitwise the same results; the engine's steel drop
    and the backend's contact-space kernel run faster (BENCHMARKS.md)."""

    def _optimize_final_module(self) -> None:
        for fn in self._final_module.functions:
            if not fn.is_declaration and fn.linkage == ll.Linkage.linkonce_odr:
                fn.linkage = "private"
        super()._optimize_final_module()


class _EntryPipeline(Compiler):
    """numba's default pipeline, with an :class:`_EntryLibrary` for the code."""

    def compile_extra(self, func):
        if self.state.library is None:
            codegen = self.state.targetctx.codegen()
            self.state.library = _EntryLibrary(codegen, func.__qualname__)
            self.state.library.enable_object_caching()
        return super().compile_extra(func)


class _CalleeDispatcher(CPUDispatcher):
    """The callee variant of a :class:`Dispatcher` (see there)."""

    def get_call_template(self, args, kws):
        args = tuple(_callee_type(a) for a in args)
        kws = {k: _callee_type(v) for k, v in kws.items()}
        out = super().get_call_template(args, kws)
        for cres in self.overloads.values():
            if _holds_ref(cres.signature.return_type):
                raise numba.core.errors.TypingError(
                    f"{self.py_func.__qualname__} returns a tuple argument (or a part of one "
                    "that is a tuple of arrays) borrowed from its caller: return a new tuple "
                    "of its items instead")
        return out


def _trampoline(py_func, callee: _CalleeDispatcher):
    """``def f(a, b, ...): return callee(a, b, ...)`` under ``py_func``'s name, or None when
    the function has defaults, ``*args``, ``**kwargs`` or keyword-only parameters."""
    params = inspect.signature(py_func).parameters.values()
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty for p in params):
        return None
    names = ", ".join(p.name for p in params)
    namespace: dict = {}
    exec(f"def trampoline({names}):\n    return callee({names})\n", {"callee": callee},
         namespace)
    fn = namespace["trampoline"]
    fn.__qualname__ = py_func.__qualname__
    fn.__module__ = py_func.__module__
    return fn


class _EntryCompiler(_FunctionCompiler):
    """numba's function compiler for the Python-callable variant of a :class:`Dispatcher`:
    it compiles a trampoline that calls the callee variant (:func:`_trampoline`)."""

    def __init__(self, disp, *args) -> None:
        super().__init__(*args)
        self._disp = disp
        self._impl = None

    def _get_implementation(self, args, kws):
        if not any(_callee_type(a) is not a for a in args):
            return self.py_func  # nothing borrowed: the trampoline would only add a compile
        if self._impl is None:
            fn = _trampoline(self.py_func, self._disp._callee_dispatcher())
            self._impl = self.py_func if fn is None else fn
        return self._impl


class Dispatcher(CPUDispatcher):
    """numba's CPU dispatcher, arranged so that a first run compiles each function once and
    generates as little code as it can (module docs).

    * A call from another compiled function (numba types it through
      :meth:`get_call_template`) is served by a *callee* variant: a second dispatcher of the
      same Python function compiled without the wrappers that let Python and first-class
      function values call it (``no_cpython_wrapper``, ``no_cfunc_wrapper``), for argument
      types without literal values (numba types a loop in several passes and would otherwise
      compile a callee once more for every literal an argument held on the way, a counter's
      initial ``0``), taking tuples of arrays borrowed (:class:`TupleRef`). Its code library
      stops at function-level optimised LLVM IR (:class:`_CalleeLibrary`): every caller links
      it into its own and the entry point optimises and compiles the whole. Callee variants
      are not cached on disk (they have no machine code); the entry points that link them are.
    * A call from Python compiles the *entry* variant (cached on disk as numba does): a
      trampoline that calls the callee variant (:class:`_EntryCompiler`), so a function that
      is both called from Python and from compiled code is compiled once.

    The arithmetic of every function is the same as numba's plain ``njit`` would generate.
    """

    _callee: _CalleeDispatcher | None = None

    def __init__(self, py_func, locals, targetoptions) -> None:
        super().__init__(py_func, locals=locals, targetoptions=targetoptions)
        self._compiler = _EntryCompiler(self, py_func, self.targetdescr, targetoptions, locals,
                                        _EntryPipeline)

    def _callee_dispatcher(self) -> _CalleeDispatcher:
        callee = self._callee
        if callee is None:
            options = dict(self.targetoptions, no_cpython_wrapper=True, no_cfunc_wrapper=True)
            callee = _CalleeDispatcher(self.py_func, locals=self.locals, targetoptions=options,
                                       pipeline_class=_CalleeCompiler)
            self._callee = callee
        return callee

    def get_call_template(self, args, kws):
        """Typing of a call from compiled code: the callee variant (class docs)."""
        return self._callee_dispatcher().get_call_template(args, kws)

    def add_overload(self, cres) -> None:
        """numba's, then the environments of the callee variants linked into a freshly
        compiled entry point set in its machine code (as numba does when it loads a library from
        the cache)."""
        super().add_overload(cres)
        module = getattr(cres.library, "_final_module", None)
        if module is None:
            return
        for gv in module.global_variables:
            if gv.name.startswith("_ZN08NumbaEnv"):
                env = lookup_environment(gv.name)
                if env is not None:
                    cres.library.codegen.set_env(gv.name, env)

    def get_overload(self, sig):
        """The compiled callee variant for ``sig`` (what lowering a call from compiled code
        links to; the Python-callable variants stay in ``overloads``)."""
        return self._callee_dispatcher().get_overload(sig)


def _jit(**options):
    def decorate(func):
        if numba.config.DISABLE_JIT:
            return func
        disp = Dispatcher(func, locals={}, targetoptions=dict(options, nopython=True))
        disp.enable_caching()
        return disp

    return decorate


#: Decorator for compiled, disk-cached, scalar kernels and loops (see :class:`Dispatcher`).
njit = _jit(nogil=True, error_model="numpy", no_cfunc_wrapper=True)

#: ``jit_options`` of a numba ``overload`` whose implementation only compiled code calls: compiled
#: as a callee variant (:class:`Dispatcher`: no wrappers, IR only, linked by its callers).
CALLEE_JIT_OPTIONS = {"nogil": True, "error_model": "numpy", "no_cpython_wrapper": True,
                      "no_cfunc_wrapper": True, "pipeline_class": _CalleeCompiler}

#: Decorator for small helpers that take arrays on hot paths: inlined into the caller at the
#: numba-IR level, so no call boundary and no array reference counting per call.
njit_inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")


def on_first_compile(callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` once, when numba next starts to compile a function (one that is not
    in the disk cache: a first run, or a new argument type). Returns the function that removes
    the hook. For a front end that says "compiling..." before a silent minute, and only then."""
    fired = False

    class _Listener(numba.core.event.Listener):
        def on_start(self, event) -> None:
            nonlocal fired
            if not fired:
                fired = True
                callback()

        def on_end(self, event) -> None:
            pass

    listener = _Listener()
    numba.core.event.register("numba:compile", listener)
    return lambda: numba.core.event.unregister("numba:compile", listener)


# ---- reference-free array views (:func:`borrowed`, :func:`keep_alive`) ----------------------


def _borrow_value(context, builder, typ, value):
    """The LLVM value of ``value`` (type ``typ``) with every array's meminfo and parent NULL."""
    if isinstance(typ, numba.types.Array):
        src = context.make_array(typ)(context, builder, value=value)
        dst = context.make_array(typ)(context, builder)
        context.populate_array(dst, data=src.data, shape=src.shape, strides=src.strides,
                               itemsize=src.itemsize, meminfo=None)
        return dst._getvalue()
    if isinstance(typ, numba.types.BaseTuple):
        items = [_borrow_value(context, builder, t, builder.extract_value(value, i))
                 for i, t in enumerate(typ.types)]
        return context.make_tuple(builder, typ, items)
    return value


def _borrowable(typ) -> bool:
    """An array, a number, a boolean, or a (nested) tuple of those."""
    if isinstance(typ, (numba.types.Array, numba.types.Number, numba.types.Boolean)):
        return True
    if isinstance(typ, numba.types.BaseTuple):
        return all(_borrowable(t) for t in typ.types)
    return False


@intrinsic
def borrowed(typingctx, x):
    """A view of the array ``x`` (same data, shape, strides and type) that holds no reference
    to its memory (NULL meminfo, no parent), or for a (nested) tuple of arrays and scalars the
    same tuple with every array replaced by such a view. Compiled code only.

    Why: numba reference-counts every array it passes to a compiled call that is not inlined:
    at the call's entry and exit it increments and decrements the count of each array argument
    and of each array in a tuple argument (NRT_incref / NRT_decref: atomic, serialising
    instructions). In a hot loop that calls small kernels with many arrays (a right-hand side
    whose problem tuple holds ~50 arrays, a step, an error norm) these updates can cost more
    than the arithmetic. Passing a borrowed view costs none.

    Lifetime rule: a borrowed view does not keep its memory alive. Every view must be derived
    from an array that stays alive for as long as the view is used: an argument of the
    function, or a local owner named in a :func:`keep_alive` call at the end of the function
    (numba releases a local variable after its last use, not at the end of its scope). A view
    must never escape the function (not returned, not stored in a returned or longer-lived
    container). An owner reassigned in a loop is safe only if every view of the old owner is
    replaced at the same time."""
    if not (isinstance(x, numba.types.Array) or
            (isinstance(x, numba.types.BaseTuple) and _borrowable(x))):
        return None

    def codegen(context, builder, sig, args):
        return _borrow_value(context, builder, sig.args[0], args[0])

    return x(x), codegen


@njit
def keep_alive(*owners):
    """Nothing: a use of the owners of :func:`borrowed` views at the end of a function, so that
    numba does not release them (it releases a variable after its last use) while the views
    are in use. Compiled code only."""


@njit
def copy_rows(dst, src, n):
    """Copy the first ``n`` rows of the 2-D array ``src`` into ``dst`` (as ``dst[:n] =
    src[:n]``, written as loops: numba's slice assignment brings in a shape-mismatch error
    path whose message formatting costs seconds of compile time). Compiled code only."""
    for i in range(n):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]
