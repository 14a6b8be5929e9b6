"""MuJoCo's C functions called from compiled code: the lean path
(:mod:`mbplugin.mujoco.lean`) makes its step's MuJoCo calls inside its compiled calls
instead of through the Python bindings.

The ``mujoco`` package ships its C library next to ``mujoco/__init__.py`` (``libmujoco.so.*``,
``libmujoco.*.dylib``, ``mujoco.dll``); the bindings' ``MjModel._address`` and
``MjData._address`` are the ``mjModel*`` and ``mjData*`` they wrap. :func:`load` opens that
library (the process has it loaded already: the same code and global state as the
bindings'), checks that its ``mj_version()`` is the bindings' and returns the addresses of
the functions :data:`NAMES`, each ``void f(const mjModel* m, mjData* d)`` (MuJoCo API
reference, "Main simulation" and "Components": ``mj_step1``, ``mj_step2``,
``mj_fwdActuation``, ``mj_fwdAcceleration``); :func:`call` calls one of them from compiled
code. Where the library cannot be found or loaded, or its version is not the bindings', it
returns None and the caller keeps the bindings' calls.
"""

from __future__ import annotations

import ctypes
import glob
import os
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: the C functions :func:`load` resolves, in the order of its addresses
NAMES = ("mj_step1", "mj_step2", "mj_fwdActuation", "mj_fwdAcceleration")
#: their indices in :func:`load`'s array
STEP1, STEP2, FWD_ACTUATION, FWD_ACCELERATION = range(len(NAMES))
#: :func:`load`'s outcome per package directory (the library is loaded once)
_LOADED: dict[str, np.ndarray | None] = {}


def library_paths(mujoco: Any) -> list[str]:
    """The C library files next to the ``mujoco`` package's ``__init__.py``."""
    here = os.path.dirname(os.path.abspath(mujoco.__file__))
    out: list[str] = []
    for pattern in ("libmujoco.so*", "libmujoco*.dylib", "mujoco.dll"):
        out.extend(sorted(glob.glob(os.path.join(here, pattern))))
    return out


def _open(mujoco: Any) -> np.ndarray | None:
    """The addresses (len(NAMES),) uint64 of :data:`NAMES` in the package's C library, or
    None: no library file, it does not load, a function is missing, or its ``mj_version()``
    is not the bindings' ``mujoco.mj_version()``."""
    for path in library_paths(mujoco):
        try:
            lib = ctypes.CDLL(path)
            lib.mj_version.restype = ctypes.c_int
            lib.mj_version.argtypes = []
            if int(lib.mj_version()) != int(mujoco.mj_version()):
                continue
            return np.array([ctypes.cast(getattr(lib, n), ctypes.c_void_p).value
                             for n in NAMES], dtype=np.uint64)
        except (OSError, AttributeError, TypeError):
            continue
    return None


def load(mujoco: Any) -> np.ndarray | None:
    """The addresses of :data:`NAMES` (module docstring), None where the C library is not
    usable (then call MuJoCo through its bindings)."""
    key = os.path.dirname(os.path.abspath(mujoco.__file__))
    if key not in _LOADED:
        _LOADED[key] = _open(mujoco)
    return _LOADED[key]


@intrinsic
def call(typingctx, fn, m, d):
    """``f(m, d)`` in compiled code: ``fn`` the address of a C function ``void f(const
    mjModel*, mjData*)`` (:func:`load`), ``m`` / ``d`` the ``mjModel*`` / ``mjData*``
    (``_address``), each an unsigned 64-bit integer."""
    if not all(isinstance(x, types.Integer) for x in (fn, m, d)):
        return None
    sig = types.void(fn, m, d)

    def codegen(context, builder, signature, args):
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ptr, ptr])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        builder.call(f, [builder.inttoptr(args[1], ptr), builder.inttoptr(args[2], ptr)])
        return context.get_dummy_value()

    return sig, codegen
