"""Numba compilation helpers.

Compiled kernels are cached on disk by numba (``cache=True``) next to their source files. Numba
only checks the time stamp of the file that holds the cached function, not of the kernels it
calls in other modules, so a changed kernel could be served from a stale cache. On import this
module hashes every source file that holds compiled code and, when the hash changed, deletes
the package's numba cache files before anything is compiled: in ``__pycache__``, under
``NUMBA_CACHE_DIR`` when it is set, and in numba's user-wide cache (:func:`_refresh_cache`).

It also holds the decorators (:data:`njit`, :data:`njit_inline`, :data:`njit_helper`),
for hot loops of compiled calls :func:`borrowed` (array views that carry no reference count,
with the lifetime rule they need) and :func:`keep_alive`, and the garbage collector's
thresholds while numba compiles (:class:`_CompileGC`).

:data:`njit` is the callee/entry dispatcher of :mod:`mbplugin._dispatcher` (a first run
compiles each function once, as little code as it can), which relies on numba internals. For a
numba version outside :data:`TESTED_NUMBA`, when its probe fails (an import, attribute or
compile error), or with ``MBPLUGIN_JIT=plain`` in the environment, it is plain
``numba.njit(cache=True, nogil=True, error_model="numpy")`` instead, with one
:class:`JitFallbackWarning` line on stderr: the same results, a slower first run.
"""

from __future__ import annotations

import gc
import hashlib
import os
import signal
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import numba
import numba.core.errors
import numba.core.event
import numpy as np
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

_PKG = Path(__file__).resolve().parent


def _cache_dirs(source_dirs: list[Path]) -> list[tuple[Path, bool]]:
    """The directories numba may keep the cache of a source file of ``source_dirs`` in, with
    whether to create a missing one: ``__pycache__`` beside it (numba's default), the
    directory numba maps it to under ``NUMBA_CACHE_DIR`` when that is set, and its user-wide
    cache (used where the package's own directory is not writable; taken only if present or
    if that is the case). The mapping is numba's own (``numba.core.caching``: the source
    directory's name and the SHA-1 of its path)."""
    from numba.core import caching, config

    out: list[tuple[Path, bool]] = []
    try:
        user_root = Path(caching.AppDirs(appname="numba", appauthor=False).user_cache_dir)
    except Exception:  # numba's internals moved: the in-tree and NUMBA_CACHE_DIR ones remain
        user_root = None
    for d in source_dirs:
        probe = str(d / "__init__.py")  # the mapping depends on the directory only
        out.append((d / "__pycache__", True))
        if config.CACHE_DIR:
            sub = caching.UserProvidedCacheLocator.get_suitable_cache_subpath(probe)
            out.append((Path(config.CACHE_DIR) / sub, True))
        if user_root is not None:
            sub = caching.UserWideCacheLocator.get_suitable_cache_subpath(probe)
            out.append((user_root / sub, not os.access(d, os.W_OK)))
    return out


def _refresh_cache() -> None:
    """Delete the package's numba cache files wherever numba keeps them when the sources of the
    compiled code changed since they were written (one stamp, the SHA-1 of those sources, per
    cache directory): numba checks only the stamp of the file that holds a cached function,
    so a caller cached before its callee in another module changed would run the old callee.
    ``NUMBA_CACHE_DIR`` and the user-wide cache of a read-only install are covered too, not only
    ``__pycache__``."""
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
    new = digest.hexdigest()
    dirs = sorted({p.parent for p in sources})
    for cache_dir, create in _cache_dirs(dirs):
        stamp = cache_dir / "mbplugin-sources.sha1"
        try:
            if not cache_dir.is_dir():
                if not create:
                    continue
                cache_dir.mkdir(parents=True, exist_ok=True)
            elif stamp.exists() and stamp.read_text().strip() == new:
                continue
            for cache_file in cache_dir.glob("*.nb[ic]"):
                cache_file.unlink(missing_ok=True)
            tmp = stamp.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(new)
            tmp.replace(stamp)
        except OSError:  # not writable: numba does not use it either
            continue


_refresh_cache()

# ---- a Ctrl-C while numba compiles ----------------------------------------------------------


def _llvm_call_code():
    """The code object of llvmlite's wrapper around every call into LLVM's C library (None if
    llvmlite changed): a frame below it on the stack runs inside a callback from LLVM."""
    try:
        from llvmlite.binding import ffi

        return ffi._lib_fn_wrapper.__call__.__code__
    except (ImportError, AttributeError):
        return None


class _CompileInterrupt(numba.core.event.Listener):
    """A Ctrl-C while numba compiles is an interrupt, never lost.

    Why: while it compiles (and while it loads code from its disk cache) numba runs Python
    functions as ctypes callbacks of LLVM (llvmlite's object cache:
    ``ExecutionEngine._raw_object_cache_notify`` and ``_raw_object_cache_getbuffer``). A
    ``KeyboardInterrupt`` that Python's SIGINT handler raises inside such a callback is printed
    by ctypes as "Exception ignored on calling ctypes callback function" and dropped: the
    program runs on (seen: a cold ``mbplugin run`` interrupted while compiling went on to the
    end of its work instead of exiting with 130). So while the main thread holds numba's global
    compiler lock (event ``numba:compiler_lock``: every compile, every load from the disk
    cache), SIGINT goes to :meth:`_signal`, which

    - inside a callback from LLVM (a frame of llvmlite's C-call wrapper below the interrupted
      one, or always if llvmlite's wrapper cannot be found) only records the signal and the
      frame it arrived in; the recorded signal is delivered at the next acquire or release of
      the lock (numba's Python code, never a callback; the release runs on errors too);
    - anywhere else delivers it at once, where it arrived, as Python would have.

    Delivering is calling the handler that was installed before, with the signal number and
    that frame: Python's default handler raises ``KeyboardInterrupt``, a program's own handler
    does whatever it does (raise, or return and let the compile go on). After the outermost
    release of the lock the previous handler is installed again, the same object. A SIGINT
    that is ignored (``SIG_IGN``), left to the system (``SIG_DFL``) or handled by a handler
    installed from C is left alone (nothing is installed), and so are compiles in other threads
    (Python runs signal handlers in the main thread only). Nesting is read from the lock's
    owner, not counted, so an interrupt between the start event and the acquire (the main
    thread waiting for another thread's compile) cannot leave the handler installed for good.
    A recorded Ctrl-C waits at most until LLVM returns to numba's Python code."""

    def __init__(self) -> None:
        from numba.core.compiler_lock import global_compiler_lock

        self.lock = global_compiler_lock
        self.llvm_call = _llvm_call_code()
        self.saved: Callable | None = None
        self.pending: tuple[int, object] | None = None

    def _inside_llvm(self, frame) -> bool:
        if self.llvm_call is None:
            return True
        f = frame.f_back if frame is not None else None
        while f is not None:
            if f.f_code is self.llvm_call:
                return True
            f = f.f_back
        return False

    def _signal(self, signum: int, frame) -> None:
        if self._inside_llvm(frame):
            self.pending = (signum, frame)
        else:  # (installed again by someone after the compile: Python's handler)
            (self.saved or signal.default_int_handler)(signum, frame)

    def _deliver(self) -> None:
        pending, self.pending = self.pending, None
        handler = self.saved or signal.default_int_handler
        if pending is not None:
            if signal.getsignal(signal.SIGINT) != self._signal:
                self.saved = None
            handler(*pending)

    @staticmethod
    def _main_thread() -> bool:
        return threading.get_ident() == threading.main_thread().ident

    def on_start(self, event) -> None:
        if not self._main_thread():
            return
        if self.pending is not None:  # the lock is not taken yet: no release would follow
            self._deliver()
        if not self.lock.is_locked():  # the outermost acquire
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous) and previous != self._signal:
                try:
                    signal.signal(signal.SIGINT, self._signal)
                    self.saved = previous
                except ValueError:  # not the main interpreter
                    pass

    def on_end(self, event) -> None:
        if not self._main_thread():
            return
        if not self.lock.is_locked() and self.saved is not None:  # the outermost release
            if signal.getsignal(signal.SIGINT) == self._signal:
                signal.signal(signal.SIGINT, self.saved)
            if self.pending is None:
                self.saved = None
        self._deliver()


_COMPILE_INTERRUPT = _CompileInterrupt()
for _old in list(getattr(numba.core.event, "_registered", {}).get("numba:compiler_lock", ())):
    if type(_old).__qualname__ == "_CompileInterrupt" and type(_old).__module__ == __name__:
        # left by an import of this module that a Ctrl-C ended: two would chain their handlers
        numba.core.event.unregister("numba:compiler_lock", _old)
numba.core.event.register("numba:compiler_lock", _COMPILE_INTERRUPT)


def deliver_pending_interrupt() -> None:
    """Deliver a Ctrl-C that :class:`_CompileInterrupt` holds back (one that arrived inside a
    callback from LLVM), if any, now: for loops that return from compiled calls to Python
    (:meth:`mbplugin.pipeline.budget.StepBudget.update`), so that one is never held for longer
    than a compiled call even outside a compile. Costs one attribute test otherwise."""
    if _COMPILE_INTERRUPT.pending is not None and _COMPILE_INTERRUPT._main_thread():
        _COMPILE_INTERRUPT._deliver()

#: numba versions (major, minor) the callee/entry dispatcher (:mod:`mbplugin._dispatcher`) was
#: tested with, both ends included; outside them the package compiles with plain ``numba.njit``.
TESTED_NUMBA = ((0, 59), (0, 68))

#: Environment variable: ``plain`` compiles with plain ``numba.njit`` (the fallback) whatever
#: the numba version; read once, when :mod:`mbplugin._jit` is imported.
JIT_ENV = "MBPLUGIN_JIT"


class JitFallbackWarning(RuntimeWarning):
    """mbplugin compiles with plain ``numba.njit``: same results, a slower first run."""


def _numba_version() -> tuple[int, int]:
    try:
        major, minor = numba.__version__.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def _load_dispatcher():
    """(:mod:`mbplugin._dispatcher`, None) when it can be used (its probe passed:
    :func:`mbplugin._dispatcher.check`), else (None, why not)."""
    if os.environ.get(JIT_ENV, "").strip().lower() == "plain":
        return None, f"{JIT_ENV}=plain"
    lo, hi = TESTED_NUMBA
    if not lo <= _numba_version() <= hi:
        return None, (f"numba {numba.__version__} is outside the versions tested "
                      f"({lo[0]}.{lo[1]} to {hi[0]}.{hi[1]})")
    try:
        from mbplugin import _dispatcher

        for speedup in (_dispatcher.fast_config_values, _dispatcher.fast_meminfos,
                        _dispatcher.memo_arg_packer, _dispatcher.callee_overloads,
                        _dispatcher.fast_box_array):
            try:  # a speed-up of numba's compiler or of its wrappers: without it, as before
                speedup()
            except Exception:
                pass
        _dispatcher.check()
    except Exception as exc:  # numba's internals changed: any error means "do not use it"
        return None, f"numba {numba.__version__}: {type(exc).__name__}: {exc}".splitlines()[0]
    return _dispatcher, None


class _NoColorShell:
    """A no-op stand-in for ``numba.core.errors.ColorShell`` (see :func:`_quiet_color_shell`)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_detail) -> None:
        return None


def _quiet_color_shell() -> None:
    """Make numba's error-message highlighting skip colorama's stream wrapping (POSIX only).

    While it types a call numba tries the overloads it knows and formats a highlighted message
    for every one it rejects (~28 000 in a cold drop_ball run), each inside ``ColorShell``:
    colorama's ``init()`` and ``deinit()``, which wrap sys.stdout and sys.stderr in stream
    objects (reading the environment each time) and put them back. On POSIX the terminal reads
    the ANSI codes itself, nothing is written inside the block, and the messages are the same
    strings without it; it costs ~0.5-1 s CPU of a cold first run. Windows keeps colorama's
    conversion."""
    errors = numba.core.errors
    if os.name != "nt" and isinstance(getattr(errors, "ColorShell", None), type):
        errors.ColorShell = _NoColorShell


_quiet_color_shell()

if numba.config.DISABLE_JIT:
    _dispatcher, FALLBACK_REASON = None, None
else:
    _dispatcher, FALLBACK_REASON = _load_dispatcher()
    if FALLBACK_REASON is not None:
        warnings.warn_explicit(
            f"mbplugin compiles with plain numba.njit ({FALLBACK_REASON}): same results, a "
            f"slower first run", JitFallbackWarning, __file__, 0)

if _dispatcher is not None:
    #: Decorator for compiled, disk-cached, scalar kernels and loops: the callee/entry
    #: dispatcher (:class:`mbplugin._dispatcher.Dispatcher`), or plain ``numba.njit`` (fallback).
    njit = _dispatcher.jit(nogil=True, error_model="numpy", no_cfunc_wrapper=True)
    #: ``jit_options`` of a numba ``overload`` whose implementation only compiled code calls
    #: (compiled as a callee variant: no wrappers, IR only, linked by its callers).
    CALLEE_JIT_OPTIONS: dict = _dispatcher.CALLEE_JIT_OPTIONS
else:
    njit = numba.njit(cache=True, nogil=True, error_model="numpy")
    CALLEE_JIT_OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy"}

#: Decorator for small helpers that take arrays on hot paths: inlined into the caller at the
#: numba-IR level, so no call boundary and no array reference counting per call.
njit_inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")

#: Decorator for the small helpers of the engine's contact kernels (pose, kinematics, effective
#: mass, pair forces, slopes): with the callee/entry dispatcher an ordinary callee (typed once
#: per signature, its IR linked into the entry that calls it, where LLVM inlines it), so a
#: first run does not re-run numba's front end, copy and retype the helper at every call site
#: (``inline="always"`` does); with plain ``numba.njit`` inlined at the numba-IR level as
#: before. Warm speed is the same (BENCHMARKS.md, "The first minute"); the DOP853 stages and
#: the impact analyser's helpers stay :data:`njit_inline` (the analyser is ~1.6x slower
#: without).
njit_helper = njit if _dispatcher is not None else njit_inline




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


# ---- the garbage collector while numba compiles ---------------------------------------------

#: Python's cyclic garbage collector thresholds (:func:`gc.set_threshold`: allocations before
#: a young collection, then young collections per middle one, middle ones per full one) while
#: numba compiles (:class:`_CompileGC`): young collections every 20 000 allocations, no older
#: ones. Python's defaults are (700, 10, 10).
COMPILE_GC_THRESHOLD = (20_000, 1000, 1000)


class _CompileGC(numba.core.event.Listener):
    """Fewer garbage collections while numba compiles: from the start of the outermost
    ``numba:compile`` event (a function that is not in the disk cache) to its end, the
    collector's thresholds are :data:`COMPILE_GC_THRESHOLD`, then the previous ones again.

    Why: numba builds millions of Python objects while it types and lowers (its IR, types,
    llvmlite's IR), most of them short-lived; at Python's default thresholds that allocation
    rate sets off a full collection every second or so, and each full collection walks every
    object of the process (numba's, NumPy's, SciPy's, the compile's own). A cold drop_ball run
    spent 3.2 s of its ~18 s CPU collecting (16 full collections, 2.8 s; thread CPU time
    measured with :data:`gc.callbacks`); with these thresholds ~1 s (young garbage is still
    collected while compiling, what survives is walked again only after the compile) and the
    run's peak memory grows from ~415 to ~540 MB. Nothing numba computes depends on it. numba
    compiles under its global compiler lock, so the nesting count needs no lock of its own;
    the end event fires on errors too."""

    def __init__(self) -> None:
        self.depth = 0
        self.saved: tuple[int, ...] | None = None

    def on_start(self, event) -> None:
        if self.depth == 0:
            self.saved = gc.get_threshold()
            gc.set_threshold(*COMPILE_GC_THRESHOLD)
        self.depth += 1

    def on_end(self, event) -> None:
        self.depth -= 1
        if self.depth == 0 and self.saved is not None:
            gc.set_threshold(*self.saved)
            self.saved = None


_COMPILE_GC = _CompileGC()
numba.core.event.register("numba:compile", _COMPILE_GC)



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
def grow_rows(buf, nb, k):
    """The 2-D buffer ``buf`` holding ``nb`` rows with room for ``k`` more: itself, or where it
    is full a new one of max(2 len, nb + k) rows holding the same first ``nb`` rows (the
    growing records of the compiled loops; amortised O(1) per row). Compiled code only."""
    if nb + k <= buf.shape[0]:
        return buf
    bigger = np.empty((max(2 * buf.shape[0], nb + k), buf.shape[1]))
    copy_rows(bigger, buf, nb)
    return bigger


@njit
def copy_rows(dst, src, n):
    """Copy the first ``n`` rows of the 2-D array ``src`` into ``dst`` (as ``dst[:n] =
    src[:n]``, written as loops: numba's slice assignment brings in a shape-mismatch error
    path whose message formatting costs seconds of compile time). Compiled code only."""
    for i in range(n):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]


# ---- one specialisation per kernel: the read-only flag of the arrays Python passes ----------


@intrinsic
def as_readonly(typingctx, x):
    """The array ``x`` typed read-only (the same array: data, shape, strides, a new reference
    to its memory; no copy). Compiled code only: :func:`readonly_view`'s counterpart for a
    kernel that compiled code calls with its own (writable) index arrays and Python with
    read-only ones, so that both share one compiled variant (numba has no read-only cast)."""
    if not isinstance(x, numba.types.Array):
        return None
    ro = x if not x.mutable else x.copy(readonly=True)

    def codegen(context, builder, sig, args):
        return impl_ret_borrowed(context, builder, sig.return_type, args[0])

    return ro(x), codegen


def readonly_view(a: np.ndarray) -> np.ndarray:
    """``a`` itself when it is read-only, else a read-only view of it (no copy).

    numba compiles a kernel once per argument type, and an array's read-only flag is part of
    its type: an index array that is sometimes read-only (a W on a shared, frozen pattern,
    :func:`mbplugin.hosts.wmatrix.csr_on_pattern`) and sometimes not (a W SciPy built) would
    have a kernel compiled twice on a first run (~0.2-0.5 s CPU each). Python callers of a
    kernel that only reads such an array pass it through this, so it always has one type."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


def writable(a: np.ndarray) -> np.ndarray:
    """``a`` itself when it is writable, else a copy (the same values): for a kernel that
    compiled code calls with arrays of its own (writable) and Python with a cached, read-only
    one, so that the two share one compiled variant (see :func:`readonly_view`). For small
    arrays only (a copy per call)."""
    return a if a.flags.writeable else a.copy()
