"""The callee/entry dispatcher behind :data:`mbplugin._jit.njit` (numba internals).

numba's own ``njit`` compiles every function it meets for Python callers: a CPython wrapper, a
cfunc wrapper, module-level optimisation and machine code for each, and again for each literal
type an argument held while a loop was typed; every caller then links and optimises it once
more. :class:`Dispatcher` compiles a function that compiled code calls once, as IR only, and
makes machine code only for the functions Python calls (docs/architecture.md, "What a first run
compiles"). The arithmetic is numba's: results are bitwise those of plain ``numba.njit``.

This module subclasses and overrides private numba classes (``numba.core.dispatcher``,
``numba.core.codegen``, ``numba.core.compiler``). :mod:`mbplugin._jit` imports it only for the
numba versions it was tested with (:data:`mbplugin._jit.TESTED_NUMBA`) and only after
:func:`check` compiled and ran a probe through every path; otherwise the package runs on plain
``numba.njit`` (slower first run, same results).
"""

from __future__ import annotations

import inspect

import llvmlite.binding as ll
import numba
import numpy as np
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import Compiler
from numba.core.compiler_lock import require_global_compiler_lock
from numba.core.datamodel.models import TupleModel, register_default
from numba.core.dispatcher import _FunctionCompiler
from numba.core.environment import lookup_environment
from numba.core.registry import CPUDispatcher
from numba.extending import lower_cast


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

    def finalize(self) -> None:
        """Nothing to link: the library stays the callee's own IR, and whoever makes machine
        code of it links it with the libraries it calls (:func:`_link_closure`). numba linked
        every callee's libraries into its own module, so a callee's module held the IR of
        everything below it, copied again into each of its callers (~550 module copies and
        links in a cold drop_ball run)."""
        require_global_compiler_lock()
        self._raise_if_finalized()
        self._finalized = True

    def own_module(self):
        """The callee's own functions as a module to link (numba's linkable module of this
        library: the exported functions ``linkonce_odr``)."""
        mod = self.__dict__.get("_mb_own")
        if mod is None:
            mod = self._mb_own = JITCodeLibrary._get_module_for_linking(self)
        return mod

    def _get_module_for_linking(self):
        """numba's: the callee's functions with those of every library it calls, for a library
        that links it the way numba does (plain ``numba.njit`` code calling a callee variant);
        :class:`_EntryLibrary` links :meth:`own_module` of each library instead."""
        mod = self.__dict__.get("_mb_full")
        if mod is None:
            mod = self.own_module().clone()
            _link_closure(mod, self._linking_libraries, set(), self._reload_init)
            self._mb_full = mod
        return mod


def _link_closure(module, libraries, seen: set, reload_init: set) -> None:
    """Link into ``module`` each library of ``libraries`` and, below a :class:`_CalleeLibrary`,
    the libraries it calls, each once (``seen``), in numba's order (a library, then what it
    links); a library that numba finalised (an overload of numba's) brings its own."""
    for library in libraries:
        if library in seen:
            continue
        seen.add(library)
        reload_init.update(library._reload_init)
        if isinstance(library, _CalleeLibrary):
            module.link_in(library.own_module(), preserve=True)
            _link_closure(module, library._linking_libraries, seen, reload_init)
        else:
            module.link_in(library._get_module_for_linking(), preserve=True)


#: How many of this module's compiles (callee or entry variants, overload implementations
#: compiled as callees) are in progress: numba's own overloads are compiled as callees only
#: inside one (:func:`callee_overloads`). numba compiles under one global lock.
_COMPILING = [0]


def _compile_ours(compiler: Compiler, func):
    _COMPILING[0] += 1
    try:
        return Compiler.compile_extra(compiler, func)
    finally:
        _COMPILING[0] -= 1


class _CalleeCompiler(Compiler):
    """numba's default pipeline, with a :class:`_CalleeLibrary` for the code."""

    def compile_extra(self, func):
        if self.state.library is None:
            codegen = self.state.targetctx.codegen()
            self.state.library = _CalleeLibrary(codegen, func.__qualname__)
        return _compile_ours(self, func)


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

    def finalize(self) -> None:
        """numba's ``CPUCodeLibrary.finalize``, linking each library below this one once
        (:func:`_link_closure`; numba links the libraries it calls directly, each of which
        held everything below it)."""
        require_global_compiler_lock()
        self._codegen._check_llvm_bugs()
        self._raise_if_finalized()
        _link_closure(self._final_module, self._linking_libraries, set(), self._reload_init)
        self._optimize_final_module()
        self._final_module.verify()
        self._finalize_final_module()

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
        return _compile_ours(self, func)


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
        if (not any(_callee_type(a) is not a for a in args)
                and not self._disp.callee_shared):
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

    #: Whether every entry is a trampoline to the callee variant (one front end for a function
    #: called both from Python and from compiled code), else only those taking borrowed tuples.
    callee_shared: bool = True

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
        """numba's, then the structured dtypes the entry boxes its arrays with made canonical
        (:func:`canonical_consts`) and the environments of the callee variants linked into a
        freshly compiled entry point set in its machine code (as numba does when it loads a
        library from the cache)."""
        super().add_overload(cres)
        env = getattr(cres, "environment", None)
        if env is not None:
            canonical_consts(env.consts)
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

    def typeof_pyval(self, val):
        """numba's (the type of an argument that numba's C typeof could not find in its
        caches: a first call, a new type), after registering the dtype of a structured array
        (or of one in a tuple) as its canonical object (:func:`canonical_dtype`)."""
        _register_dtypes(val)
        return super().typeof_pyval(val)


# ---- the cost of a call from Python: record dtypes, array boxing --------------------------

#: The canonical object of each structured dtype met (:func:`canonical_dtype`), by its repr
#: (fields, formats, offsets, itemsize, alignment, titles, metadata) and itemsize.
_DTYPES: dict[tuple[str, int], np.dtype] = {}


def canonical_dtype(dtype: np.dtype) -> np.dtype:
    """One object per structured dtype: the first registered with this repr and size (an equal
    one, else ``dtype`` itself); any other dtype is returned as it is.

    Why: numba's C typeof finds a structured array's type in a dict keyed by (ndim, layout,
    read-only, dtype object). A dtype that is equal to the key's but another object costs
    NumPy's field-by-field equivalence test (its casting machinery) at every call, ~1 us warm
    for a 24-field dtype like the contact rows' (benchmarks/bench_dispatch.py: 1.25 against
    0.25 us per call), more on a host step's cold caches; and every entry that returns a record
    array boxes it with a dtype object of its own (numba makes one per entry from the record
    type, and again when it loads the entry from the disk cache), so the rows an entry returns
    and another entry takes were such a pair on every host step. :meth:`Dispatcher.add_overload`
    gives every entry the canonical objects (:func:`canonical_consts`) and
    :meth:`Dispatcher.typeof_pyval` registers the dtypes of the arguments numba types first,
    so the arrays the entries return and the ones Python makes from the same dtype are typed
    by identity."""
    if dtype.fields is None:
        return dtype
    key = (repr(dtype), dtype.itemsize)
    got = _DTYPES.get(key)
    if got is None:
        _DTYPES[key] = got = dtype
    return got if got == dtype else dtype


def _register_dtypes(val) -> None:
    """Register the dtype of a structured array ``val`` (or of the arrays in a tuple)."""
    if isinstance(val, np.ndarray):
        canonical_dtype(val.dtype)
    elif isinstance(val, tuple):
        for x in val:
            _register_dtypes(x)


def canonical_consts(consts: list) -> None:
    """Replace the structured dtypes in an environment's constants (the dtypes numba's
    array boxing reads) by their canonical objects (:func:`canonical_dtype`), in place."""
    for i, c in enumerate(consts):
        if isinstance(c, np.dtype) and c.fields is not None:
            consts[i] = canonical_dtype(c)


def fast_box_array() -> bool:
    """Box arrays returned to Python without numba's per-call unpickling; True when installed.

    numba's boxing of an array (``boxing.box_array`` through
    ``PythonAPI.nrt_adapt_ndarray_to_python``) passes ``NRT_adapt_ndarray_to_python_acqref``
    the array's Python class (``np.ndarray``) by unpickling it at every call: ``numba_unpickle``
    makes two bytes objects and an int and calls ``serialize._numba_unpickle``, a Python
    function that looks the class up in a memo by (address, hash), ~0.3 us warm and more on a
    host step's cold caches, per array returned (and leaks a reference to the class each
    time). The dtype next to it is read from the function's environment constants, a list
    item (``EnvironmentManager.read_const``). This boxer reads the class from the constants
    too, and is otherwise numba's: the same C function with the same arguments, so the same
    array objects. It boxes in the wrappers this module's compiles make (:data:`_COMPILING`:
    the entries); plain ``numba.njit`` code compiled outside them keeps numba's boxer.
    Installed only when numba's boxer and its ``nrt_adapt_ndarray_to_python``
    are as this expects (their source); arrays of another class (an ndarray subclass's
    ``box_type``) and code without NRT keep numba's path."""
    from llvmlite import ir
    from numba.core import boxing, cgutils, pythonapi, types
    from numba.np import numpy_support

    registry = pythonapi._boxers.functions
    original = registry.get(types.Array)
    if getattr(original, "_mbplugin", False):
        return True
    try:
        box_src = inspect.getsource(boxing.box_array)
        adapt_src = inspect.getsource(pythonapi.PythonAPI.nrt_adapt_ndarray_to_python)
    except (OSError, TypeError):
        return False
    if (original is not boxing.box_array
            or "c.pyapi.nrt_adapt_ndarray_to_python(typ, val, dtypeptr)" not in box_src
            or "self.unserialize(self.serialize_object(aryty.box_type))" not in adapt_src
            or '"NRT_adapt_ndarray_to_python_acqref"' not in adapt_src):
        return False
    captures = "captures(none)" in adapt_src

    def box_array(typ, val, c):
        if (not _COMPILING[0] or not c.context.enable_nrt or c.env_manager is None
                or typ.box_type is not np.ndarray):
            return original(typ, val, c)
        np_dtype = numpy_support.as_dtype(typ.dtype)
        dtypeptr = c.env_manager.read_const(c.env_manager.add_const(np_dtype))
        pytype = c.env_manager.read_const(c.env_manager.add_const(np.ndarray))
        pyapi, builder = c.pyapi, c.builder
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(pyapi.pyobj, [pyapi.voidptr, pyapi.pyobj, i32, i32, pyapi.pyobj])
        fn = pyapi._get_function(fnty, name="NRT_adapt_ndarray_to_python_acqref")
        if captures:
            fn.args[0].add_attribute("captures(none)")
        ndim = c.context.get_constant(types.int32, typ.ndim)
        writable = c.context.get_constant(types.int32, int(typ.mutable))
        aryptr = cgutils.alloca_once_value(builder, val)
        newary = builder.call(fn, [builder.bitcast(aryptr, pyapi.voidptr), pytype, ndim,
                                   writable, dtypeptr])
        c.context.nrt.decref(builder, typ, val)  # the C function took its own reference
        return newary

    box_array._mbplugin = True
    box_array._original = original
    box_array.__doc__ = original.__doc__
    registry[types.Array] = box_array
    return True


def fast_config_values() -> bool:
    """Give numba's ``TargetConfig.values()`` a faster body with the same result; True when
    installed.

    While it types a call numba looks up each overload template's implementation in a cache
    keyed by the compile flags (``numba.core.typing.templates._get_impl``): every lookup hashes
    the flags and every hit compares them, and both build ``values()``, a dict of all ~40
    options read one by one through their properties (``_values.get(name, default)`` each).
    A cold drop_ball run made ~100 000 such hashes and comparisons, 2-3 s CPU. The same dict is
    the options' defaults updated by the options set (``_values``): built that way, from the
    defaults cached per class. Installed only when it gives ``values()``'s result, keys in the
    same order, for flags with and without options set (checked here)."""
    from numba.core.compiler import Flags
    from numba.core.targetconfig import TargetConfig

    original = TargetConfig.values
    if getattr(original, "_mbplugin", False):
        return True
    defaults: dict[type, dict] = {}

    def values(self):
        cls = type(self)
        base = defaults.get(cls)
        if base is None:
            base = defaults[cls] = {k: o.default for k, o in cls.options.items()}
        out = base.copy()
        for k, x in self._values.items():
            if k in out:
                out[k] = x
        return out

    values._mbplugin = True
    values.__doc__ = original.__doc__
    probes = [Flags(), Flags()]
    probes[1].nrt = True
    probes[1].no_cpython_wrapper = True
    probes[1].error_model = "numpy"
    probes.append(Flags(probes[1]))
    probes[2].no_cfunc_wrapper = True
    for f in probes:
        want, got = original(f), values(f)
        if want != got or list(want) != list(got):
            return False
    TargetConfig.values = values
    return True


def jit(**options):
    """Decorator: a disk-cached :class:`Dispatcher` with numba target ``options``."""

    def decorate(func):
        disp = Dispatcher(func, locals={}, targetoptions=dict(options, nopython=True))
        disp.enable_caching()
        return disp

    return decorate


#: ``jit_options`` of a numba ``overload`` whose implementation only compiled code calls: compiled
#: as a callee variant (:class:`Dispatcher`: no wrappers, IR only, linked by its callers).
CALLEE_JIT_OPTIONS = {"nogil": True, "error_model": "numpy", "no_cpython_wrapper": True,
                      "no_cfunc_wrapper": True, "pipeline_class": _CalleeCompiler}


#: The options numba's own overload implementations get when one of this module's compiles
#: types them (:func:`callee_overloads`): a callee variant's (no wrappers, IR only).
_OVERLOAD_CALLEE_OPTIONS = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True,
                            "pipeline_class": _CalleeCompiler}


def callee_overloads() -> bool:
    """Compile numba's own overload implementations (``np.empty``, ``min``, array methods, ...)
    that this module's compiles call as callee variants; True when installed.

    numba compiles an overload's implementation with its ``jit`` decorator
    (``_OverloadFunctionTemplate._build_impl``: ``jitter(**self._jit_options)``) as if Python
    would call it: a CPython and a cfunc wrapper, the module-level optimisation and machine code
    of its own library, which no caller uses (each links the implementation's IR into its own
    library, and the entry optimises and compiles the whole). A cold drop_ball run compiled
    ~25 of them. While one of this module's compiles is in progress (:data:`_COMPILING`) the
    jitter of the CPU target gets :data:`_OVERLOAD_CALLEE_OPTIONS` added (numba's own already
    ask for no CPython wrapper; an implementation whose options choose a pipeline or ask for a
    wrapper is left as it is), so such an
    implementation's library stops at function-level optimised IR (:class:`_CalleeLibrary`),
    which the entry links (:func:`_link_closure`) and whose environment it sets
    (:meth:`Dispatcher.add_overload`). Plain ``numba.njit`` code compiled outside them is
    untouched. The same IR, so the same arithmetic. Installed only when numba builds overload
    implementations as this expects (checked here on its source)."""
    from numba.core.target_extension import CPU, jit_registry
    from numba.core.typing.templates import _OverloadFunctionTemplate

    original = _OverloadFunctionTemplate._get_jit_decorator
    if getattr(original, "_mbplugin", False):
        return True
    try:
        build = inspect.getsource(_OverloadFunctionTemplate._build_impl)
    except (OSError, TypeError):
        return False
    cpu_jit = jit_registry.get(CPU)
    if cpu_jit is not numba.core.decorators.jit or "jitter(**self._jit_options)" not in build:
        return False

    def callee_jit(**options):
        if "pipeline_class" in options or not all(
                options.get(k, True) for k in ("no_cpython_wrapper", "no_cfunc_wrapper")):
            return cpu_jit(**options)
        return cpu_jit(**dict(options, **_OVERLOAD_CALLEE_OPTIONS))

    def _get_jit_decorator(self):
        jitter = original(self)
        if jitter is cpu_jit and _COMPILING[0]:
            return callee_jit
        return jitter

    _get_jit_decorator._mbplugin = True
    _get_jit_decorator.__doc__ = original.__doc__
    _OverloadFunctionTemplate._get_jit_decorator = _get_jit_decorator
    return True


# ---- the probe :func:`check` runs ------------------------------------------------------------


@jit(nogil=True, error_model="numpy", no_cfunc_wrapper=True)
def _probe_item(arrays, i, scale):
    """A callee: an item of a borrowed tuple of arrays (TupleRef), scaled."""
    return scale * (arrays[0][i] + arrays[1][i])


@jit(nogil=True, error_model="numpy", no_cfunc_wrapper=True)
def _probe_sum(arrays, n):
    """An entry (called from Python with a tuple of arrays: a trampoline) calling a callee in a
    loop (a counter that starts as a literal 0), raising (the environment) and returning a view
    of an argument (an array boxed: :func:`fast_box_array`)."""
    if n > arrays[0].shape[0]:
        raise ValueError("n")
    s = 0.0
    for i in range(n):
        s += _probe_item(arrays, i, 0.5)
    return s, arrays[1][1:]


def check() -> None:
    """Compile (or load from the disk cache: numba keys it by its version and this file) and
    run a probe through the entry, trampoline, callee and borrowed-tuple paths; raises what
    numba raises when its internals are not as this module expects, AssertionError when the
    probe computes a wrong number."""
    a = np.arange(4.0)
    b = np.full(4, 2.0)
    got, view = _probe_sum((a, b), 4)
    if got != 7.0:  # 0.5 * ((0 + 1 + 2 + 3) + 4 * 2)
        raise AssertionError(f"the dispatcher probe returned {got!r}, not 7.0")
    if (type(view) is not np.ndarray or view.dtype != b.dtype or view.shape != (3,)
            or view.ctypes.data != b.ctypes.data + b.itemsize or view.base is None):
        raise AssertionError("the dispatcher probe returned a wrong view of its argument")
    try:
        _probe_sum((a, b), 5)
    except ValueError:
        pass
    else:
        raise AssertionError("the dispatcher probe did not raise")


# ---- numba's reference counting without dead instructions ------------------------------------

#: The data models' ``traverse`` methods whose getters only read (``extract_value``/``select``)
#: and whose member list depends on the type alone: what :func:`fast_meminfos` may skip a
#: member of. Any other model is traversed as numba does.
def _known_traversals() -> tuple:
    from numba.core.datamodel import models as m

    return (m.DataModel.traverse, m.UniTupleModel.traverse, m.StructModel.traverse,
            m.OptionalModel.traverse, m.DeferredStructModel.traverse, _TupleRefModel.traverse)


def _holds_meminfo(dmm, model, builder, known: tuple, busy: set) -> bool:
    """Whether a value of ``model`` can hold an NRT meminfo (itself or in a member, at any
    depth): what numba's ``NRTContext.get_meminfos`` would find in it. Cached on the model;
    ``True`` when unsure (a model outside ``known``, a recursive type)."""
    got = model.__dict__.get("_mbplugin_holds")
    if got is not None:
        return got
    if type(model).traverse not in known or id(model) in busy:
        return True
    busy.add(id(model))
    try:
        got = model.has_nrt_meminfo() or any(
            _holds_meminfo(dmm, dmm[t], builder, known, busy)
            for t, _ in model.traverse(builder))
    finally:
        busy.discard(id(model))
    model._mbplugin_holds = got
    return got


def fast_meminfos() -> bool:
    """Give numba's ``NRTContext.get_meminfos`` a body that emits no dead instructions; True
    when installed.

    numba increments and decrements the reference counts of a value (every argument, every
    variable assigned or dropped) by finding the meminfos in it: it walks every member of the
    value's data model and emits an ``extractvalue`` for each, the float, pointer, shape and
    stride fields of every array included, although only the meminfo fields are used. A cold
    drop_ball run emitted ~70 000 such dead instructions (two thirds of all its
    ``extractvalue``), each built by llvmlite in Python, printed as text, parsed and deleted by
    LLVM. This body skips the members that cannot hold a meminfo (:func:`_holds_meminfo`) and
    returns the same meminfos, in the same order, from the same instructions. Installed only
    when it finds numba's meminfos on probe types (arrays, tuples of arrays, nested and
    optional members: :func:`meminfo_paths`)."""
    from numba.core.runtime.context import NRTContext

    original = NRTContext.get_meminfos
    if getattr(original, "_mbplugin", False):
        return True
    known = _known_traversals()

    def get_meminfos(self, builder, ty, val):
        dmm = self._context.data_model_manager
        datamodel = dmm[ty]
        if not _holds_meminfo(dmm, datamodel, builder, known, set()):
            return []
        meminfos = []
        if datamodel.has_nrt_meminfo():
            meminfos.append((ty, datamodel.get_nrt_meminfo(builder, val)))
        for mtyp, getter in datamodel.traverse(builder):
            if _holds_meminfo(dmm, dmm[mtyp], builder, known, set()):
                meminfos.extend(self.get_meminfos(builder, mtyp, getter(val)))
        return meminfos

    get_meminfos._mbplugin = True
    get_meminfos._original = original
    get_meminfos.__doc__ = original.__doc__
    for ty in _probe_types():
        if meminfo_paths(original, ty) != meminfo_paths(get_meminfos, ty):
            return False
    NRTContext.get_meminfos = get_meminfos
    return True


def _probe_types() -> list:
    """Types whose meminfos :func:`fast_meminfos` must find as numba does."""
    t = numba.types
    a1, a2 = t.float64[:], t.int64[:, :]
    return [t.float64, a1, a2, t.UniTuple(a1, 3), t.Tuple((t.float64, a1, t.intp, a2)),
            t.Tuple((t.UniTuple(t.float64, 4), t.Tuple((a1, t.boolean)), t.float64)),
            t.Optional(a1), t.Tuple((t.Optional(t.float64), t.Optional(a2))),
            t.UniTuple(t.UniTuple(t.float64, 3), 2), TupleRef([a1, a2]),
            t.Tuple((TupleRef([a1, a2]), a1)), t.List(t.float64)]


def meminfo_paths(get_meminfos, ty) -> list:
    """The meminfos ``get_meminfos(nrt, builder, ty, value)`` finds in an argument of type
    ``ty`` of a scratch LLVM function, each as (its type, how it is read from the argument: the
    chain of ``extractvalue`` indices and ``select``s); for comparing numba's function with
    :func:`fast_meminfos`'s."""
    from llvmlite import ir
    # a copy: reading ``nrt`` caches it on the context (numba's subtargets copy that cache)
    ctx = numba.core.registry.cpu_target.target_context.subtarget(enable_nrt=True)
    llty = ctx.get_value_type(ty)
    fn = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [llty]), "probe")
    builder = ir.IRBuilder(fn.append_basic_block())

    def path(v):
        if isinstance(v, ir.Argument):
            return ()
        if v.opname == "extractvalue":
            return path(v.aggregate) + tuple(v.indices)
        if v.opname == "select":
            return (("select", str(v.operands[2]), path(v.operands[0]),
                     path(v.operands[1])),)
        return (v.opname,)

    return [(str(t), path(mi)) for t, mi in get_meminfos(ctx.nrt, builder, ty, fn.args[0])]


def memo_arg_packer() -> bool:
    """Give numba's ``BaseContext.get_arg_packer`` a memory; True when installed.

    numba builds an ``ArgPacker`` (the flattening of a function's argument types into LLVM
    arguments) every time it declares or calls a function: ~1400 times in a cold drop_ball
    run, each walking the engine's nested argument tuples. An ``ArgPacker`` depends only on
    the data model manager and the argument types and holds no state after it is built (its
    methods take the builder), so one per (manager, types) is the same object."""
    from numba.core.base import BaseContext
    from numba.core.datamodel import ArgPacker

    original = BaseContext.get_arg_packer
    if getattr(original, "_mbplugin", False):
        return True

    def get_arg_packer(self, fe_args):
        dmm = self.data_model_manager
        memo = dmm.__dict__.get("_mbplugin_packers")
        if memo is None:
            memo = dmm._mbplugin_packers = {}
        key = tuple(fe_args)
        packer = memo.get(key)
        if packer is None:
            packer = memo[key] = ArgPacker(dmm, key)
        return packer

    get_arg_packer._mbplugin = True
    get_arg_packer.__doc__ = original.__doc__
    probe = ArgPacker(numba.core.registry.cpu_target.target_context.data_model_manager,
                      (numba.types.float64[:],))
    if set(vars(probe)) != {"_dmm", "_fe_args", "_nargs", "_dm_args", "_unflattener",
                            "_be_args"}:
        return False  # ArgPacker keeps something else: leave numba's function
    BaseContext.get_arg_packer = get_arg_packer
    return True
