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


def _open(mujoco: Any, names: tuple[str, ...] = NAMES) -> np.ndarray | None:
    """The addresses (len(names),) uint64 of ``names`` in the package's C library, or
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
                             for n in names], dtype=np.uint64)
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


#: the C functions of one kinematic tree's lean path (:mod:`mbplugin.mujoco.lean_tree`),
#: in the order of :func:`load_tree`'s addresses (MuJoCo API reference, "Support" and
#: "Components"): ``void mj_jac(const mjModel*, const mjData*, mjtNum* jacp, mjtNum* jacr,
#: const mjtNum point[3], int body)``, ``void mj_fullM(const mjModel*, const mjData*,
#: mjtNum* dst)`` (MuJoCo >= 3.3's argument order), ``void mj_integratePos(const mjModel*,
#: mjtNum* qpos, const mjtNum* qvel, mjtNum dt)``, and ``void f(const mjModel*, mjData*)``
#: of the kinematics stages, and ``void mj_solveM(const mjModel*, mjData*, mjtNum* x, const
#: mjtNum* y, int n)`` (x = M^-1 y for n rows of nv, by the factor ``qLD`` that ``mj_step1``'s
#: ``mj_factorM`` left)
TREE_NAMES = ("mj_jac", "mj_fullM", "mj_integratePos", "mj_kinematics", "mj_comPos",
              "mj_comVel", "mj_solveM")
JAC, FULL_M, INTEGRATE_POS, KINEMATICS, COM_POS, COM_VEL, SOLVE_M = range(len(TREE_NAMES))
_LOADED_TREE: dict[str, np.ndarray | None] = {}


def load_tree(mujoco: Any) -> np.ndarray | None:
    """The addresses of :data:`TREE_NAMES` (as :func:`load`), None where the C library is not
    usable."""
    key = os.path.dirname(os.path.abspath(mujoco.__file__))
    if key not in _LOADED_TREE:
        _LOADED_TREE[key] = _open(mujoco, TREE_NAMES)
    return _LOADED_TREE[key]


def _ptr(builder, x):
    return builder.inttoptr(x, ir.IntType(8).as_pointer())


@intrinsic
def call_jac(typingctx, fn, m, d, jacp, jacr, point, body):
    """``mj_jac(m, d, jacp, jacr, point, body)`` in compiled code: every argument but ``body``
    an address (unsigned 64-bit integer; ``jacr`` 0: NULL), ``body`` an integer."""
    args = (fn, m, d, jacp, jacr, point, body)
    if not all(isinstance(x, types.Integer) for x in args):
        return None
    return types.void(*args), _ptrs_int


def _ptrs_int(context, builder, signature, a):
    """The code of a call ``a[0](a[1], ..., a[-2], a[-1])`` of a ``void`` C function whose
    arguments are pointers (the addresses ``a[1:-1]``) and a last ``int`` (``a[-1]``)."""
    ptr = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [ptr] * (len(a) - 2) + [i32])
    f = builder.inttoptr(a[0], fnty.as_pointer())
    last = builder.trunc(a[-1], i32) if a[-1].type.width > 32 else a[-1]
    builder.call(f, [_ptr(builder, x) for x in a[1:-1]] + [last])
    return context.get_dummy_value()


@intrinsic
def call3(typingctx, fn, m, d, x):
    """``f(m, d, x)`` in compiled code (``mj_fullM(m, d, dst)``): every argument an address."""
    args = (fn, m, d, x)
    if not all(isinstance(v, types.Integer) for v in args):
        return None
    sig = types.void(*args)

    def codegen(context, builder, signature, a):
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ptr] * 3)
        f = builder.inttoptr(a[0], fnty.as_pointer())
        builder.call(f, [_ptr(builder, v) for v in a[1:]])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def call_integrate_pos(typingctx, fn, m, qpos, qvel, dt):
    """``mj_integratePos(m, qpos, qvel, dt)`` in compiled code: addresses, ``dt`` a float."""
    if not (all(isinstance(v, types.Integer) for v in (fn, m, qpos, qvel))
            and isinstance(dt, types.Float)):
        return None
    sig = types.void(fn, m, qpos, qvel, types.float64)

    def codegen(context, builder, signature, a):
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ptr] * 3 + [ir.DoubleType()])
        f = builder.inttoptr(a[0], fnty.as_pointer())
        builder.call(f, [_ptr(builder, v) for v in a[1:4]] + [a[4]])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def call_solve_m(typingctx, fn, m, d, x, y, n):
    """``mj_solveM(m, d, x, y, n)`` in compiled code: every argument but ``n`` an address
    (unsigned 64-bit integer), ``n`` an integer (the rows of x and y, each ``nv`` long)."""
    args = (fn, m, d, x, y, n)
    if not all(isinstance(v, types.Integer) for v in args):
        return None
    return types.void(*args), _ptrs_int
