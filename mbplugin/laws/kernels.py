"""Dispatch from a kernel id to the compiled law kernels, and batch loops over contacts.

Each kernel's formula lives in its law module; this module only routes to it, so the impact
analyser, the engines and the per-contact batch evaluation all run the same code. The routing is a
static chain of ids (rather than functions passed as arguments) so that numba can cache every
compiled caller on disk.

Kernel protocol (all scalar, per contact; no arrays cross a kernel call, so the compiled hot loops
do no reference counting):

``force(d, v, c, s) -> float``
    Raw force (N), continued to d < 0. ``d`` is the indentation (m), ``v`` its rate (m/s),
    ``c`` the coefficient tuple (``NC_MAX`` floats), ``s`` the state tuple (``NS_MAX`` floats:
    ``NODE_MAX`` ODE states, then ``NMEM_MAX`` memory values).
``rate(d, v, c, s) -> tuple``
    The ``NODE_MAX`` ODE state derivatives (zeros beyond the law's own states).
``update(d, v, c, s) -> tuple``
    The ``NMEM_MAX`` memory values after an accepted step (unchanged for laws without memory).
``slopes(kid, d, v, c, s, hd, hv) -> (f, df/dd, df/dv)``
    The force and its partial derivatives (the power kernel's analytic ones, else forward
    differences): the implicit step's Newton matrix.

Each law module names its slots of these tuples next to its ``coefficients`` builder (``C_*``
coefficient slots, ``S_*`` state slots, ``M_*`` memory columns; units in the module's
docstring) and its kernels read them by name: numba folds the module-level ints into the same
constant-offset loads (tests/test_layering.py forbids integer literals as slots).
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit
from mbplugin.laws import _ids, bouc_wen, hunt_crossley, jian, plastic, power, xiong, zhang2022
from mbplugin.laws._ids import MEM0, MEM1, MEM2, MEM3, NC_MAX, NMEM_MAX, NODE_MAX, NS_MAX
from mbplugin.laws.base import MODE_RAW
from mbplugin.laws.power import C_K, C_LAM, C_M, C_MODE, C_N, C_Q, C_RC


@njit
def force(kid, d, v, c, s):
    """Raw force of kernel ``kid``."""
    if kid == _ids.POWER:
        return power.power_force(d, v, c, s)
    if kid == _ids.BOUC_WEN_HC:
        return bouc_wen.hc_force(d, v, c, s)
    if kid == _ids.BOUC_WEN_MAXWELL:
        return bouc_wen.maxwell_force(d, v, c, s)
    if kid == _ids.POWER_COMPLEX:
        return zhang2022.complex_force(d, v, c, s)
    if kid == _ids.GOLDSMITH:
        return plastic.goldsmith_force(d, v, c, s)
    if kid == _ids.THORNTON:
        return plastic.thornton_force(d, v, c, s)
    if kid == _ids.YIGIT:
        return plastic.yigit_force(d, v, c, s)
    if kid == _ids.XIONG:
        return xiong.xiong_force(d, v, c, s)
    if kid == _ids.JIAN:
        return jian.jian_force(d, v, c, s)
    return np.nan


@njit
def slopes(kid, d, v, c, s, hd, hv):
    """Raw force of kernel ``kid`` and its partial derivatives (f, df/dd, df/dv): the law's own
    (:func:`mbplugin.laws.power.power_slopes`) where it has them, else forward differences of
    :func:`force` with the steps ``hd`` (m) and ``hv`` (m/s) at the state ``s``."""
    if kid == _ids.POWER:
        return power.power_slopes(d, v, c, s)
    f = force(kid, d, v, c, s)
    return f, (force(kid, d + hd, v, c, s) - f) / hd, (force(kid, d, v + hv, c, s) - f) / hv


@njit
def rate(kid, d, v, c, s):
    """ODE state derivatives of kernel ``kid`` (zeros for stateless kernels)."""
    if kid == _ids.BOUC_WEN_HC:
        return bouc_wen.hc_rate(d, v, c, s)
    if kid == _ids.BOUC_WEN_MAXWELL:
        return bouc_wen.maxwell_rate(d, v, c, s)
    if kid == _ids.POWER_COMPLEX:
        return zhang2022.complex_rate(d, v, c, s)
    if kid == _ids.XIONG:
        return xiong.xiong_rate(d, v, c, s)
    if kid == _ids.JIAN:
        return jian.jian_rate(d, v, c, s)
    return (0.0, 0.0, 0.0, 0.0)


@njit
def update(kid, d, v, c, s):
    """Memory after an accepted step (unchanged for kernels without memory)."""
    if kid == _ids.GOLDSMITH:
        return plastic.goldsmith_update(d, v, c, s)
    if kid == _ids.THORNTON:
        return plastic.thornton_update(d, v, c, s)
    if kid == _ids.YIGIT:
        return plastic.yigit_update(d, v, c, s)
    return (s[MEM0], s[MEM1], s[MEM2], s[MEM3])


@njit
def onset_coefficients(rule, p0, p1, v_in, row):
    """Rewrite the impact-speed columns of a coefficient row ``row`` (a row of the law's
    ``coefficients``, with its stiffness) for the latched impact speed ``v_in`` (m/s) by the
    law's compiled onset rule (``Law.onset_rule``: ``rule``, ``p0``, ``p1``). Returns False
    for an unknown rule (the row is unchanged)."""
    if rule == _ids.ONSET_NONE:
        return True
    if rule == _ids.ONSET_HC:
        row[C_LAM] = hunt_crossley.hc_damping(row[C_K], p0, v_in, p1)
        return True
    return False


@njit
def clip(mode, f):
    """The force applied to the bodies from the raw force (see ``MODE_*`` in laws.base)."""
    if mode == 0 and f < 0.0:
        return 0.0
    return f


@njit
def ctuple(c, i):
    """Row ``i`` of a (N, w) coefficient array, w <= NC_MAX, as a NC_MAX-tuple (zero padded)."""
    w = c.shape[1]
    return (
        c[i, 0] if w > 0 else 0.0, c[i, 1] if w > 1 else 0.0, c[i, 2] if w > 2 else 0.0,
        c[i, 3] if w > 3 else 0.0, c[i, 4] if w > 4 else 0.0, c[i, 5] if w > 5 else 0.0,
        c[i, 6] if w > 6 else 0.0, c[i, 7] if w > 7 else 0.0, c[i, 8] if w > 8 else 0.0,
        c[i, 9] if w > 9 else 0.0, c[i, 10] if w > 10 else 0.0, c[i, 11] if w > 11 else 0.0,
    )


@njit
def stuple(s, i):
    """Row ``i`` of a packed (N, NS_MAX) state array as a tuple."""
    return (s[i, 0], s[i, 1], s[i, 2], s[i, 3], s[i, 4], s[i, 5], s[i, 6], s[i, 7])


@njit
def stuple_law(s, i, n_ode, n_mem):
    """Row ``i`` of a law's own state array (N, n_ode + n_mem) as the kernel's state tuple."""
    m = n_ode
    return (
        s[i, 0] if n_ode > 0 else 0.0, s[i, 1] if n_ode > 1 else 0.0,
        s[i, 2] if n_ode > 2 else 0.0, s[i, 3] if n_ode > 3 else 0.0,
        s[i, m] if n_mem > 0 else 0.0, s[i, m + 1] if n_mem > 1 else 0.0,
        s[i, m + 2] if n_mem > 2 else 0.0, s[i, m + 3] if n_mem > 3 else 0.0,
    )


def force_raw_batch(kid: int, d: np.ndarray, v: np.ndarray, c: np.ndarray, s: np.ndarray,
                    n_ode: int, n_mem: int) -> np.ndarray:
    """Raw force (N) of every contact of a batch of one law (natural-width coef and state
    arrays): :func:`force_batch` with ``MODE_RAW``, whose :func:`clip` returns the raw force
    (one compiled batch loop for the raw and the applied force, the same kernels)."""
    return force_batch(kid, MODE_RAW, d, v, c, s, n_ode, n_mem)


@njit
def _power_batch(mode, d, v, c, out):
    """The power kernel over a batch: only its 7 coefficients (its ``C_*`` slots) are read (a
    hot path)."""
    zs = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for i in range(d.shape[0]):
        t = power.power_row(c[i, C_K], c[i, C_N], c[i, C_LAM], c[i, C_M], c[i, C_Q],
                            c[i, C_MODE], c[i, C_RC])
        out[i] = clip(mode, power.power_force(d[i], v[i], t, zs))


@njit
def _power_batch_cols(mode, d, v, k, lam, c0, out):
    """The power kernel over a batch of one law with scalar parameters: per contact only the
    columns that vary (``k``, ``lam``) are read; exponents and options come from ``c0`` (the
    first row). With column-major coefficients that is 2 doubles per contact instead of 7."""
    zs = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for i in range(d.shape[0]):
        t = power.power_row(k[i], c0[C_N], lam[i], c0[C_M], c0[C_Q], c0[C_MODE], c0[C_RC])
        out[i] = clip(mode, power.power_force(d[i], v[i], t, zs))


def force_batch_uniform(kid: int, mode: int, d: np.ndarray, v: np.ndarray, c: np.ndarray,
                        s: np.ndarray, n_ode: int, n_mem: int) -> np.ndarray:
    """:func:`force_batch`, reading only the varying columns (k, lam) of the power kernel's
    rows when they are rows as the law's ``coefficients`` made them with scalar exponents
    (:func:`mbplugin.laws.power.uniform_rows`); any other rows are read in full."""
    if kid == _ids.POWER and c.shape[0] > 0 and power.uniform_rows(c):
        out = np.empty(d.shape[0])
        _power_batch_cols(mode, d, v, c[:, C_K], c[:, C_LAM], np.ascontiguousarray(c[0]), out)
        return out
    return force_batch(kid, mode, d, v, c, s, n_ode, n_mem)


@njit
def force_batch(kid, mode, d, v, c, s, n_ode, n_mem):
    """Applied (clipped per ``mode``) force of every contact of a batch of one law."""
    out = np.empty(d.shape[0])
    if kid == _ids.POWER and c.shape[1] >= power.N_COEF:
        _power_batch(mode, d, v, c, out)
        return out
    for i in range(d.shape[0]):
        out[i] = clip(mode, force(kid, d[i], v[i], ctuple(c, i), stuple_law(s, i, n_ode, n_mem)))
    return out


@njit
def rate_batch(kid, d, v, c, s, n_ode, n_mem):
    """ODE state derivatives of every contact of a batch, shape (N, n_ode)."""
    out = np.zeros((d.shape[0], n_ode))
    for i in range(d.shape[0]):
        r = rate(kid, d[i], v[i], ctuple(c, i), stuple_law(s, i, n_ode, n_mem))
        for j in range(n_ode):
            out[i, j] = r[j]
    return out


@njit
def update_batch(kid, d, v, c, s, n_ode, n_mem):
    """Memory update of every contact of a batch, in place on s[:, n_ode:]."""
    for i in range(d.shape[0]):
        mem = update(kid, d[i], v[i], ctuple(c, i), stuple_law(s, i, n_ode, n_mem))
        for j in range(n_mem):
            s[i, n_ode + j] = mem[j]


def pad_coef(coef: np.ndarray) -> np.ndarray:
    """Coefficient rows padded with zeros to NC_MAX columns (C-contiguous float64)."""
    coef = np.atleast_2d(np.asarray(coef, dtype=float))
    if coef.shape[1] > NC_MAX:
        raise ValueError(f"a law may use at most {NC_MAX} coefficients, got {coef.shape[1]}")
    out = np.zeros((coef.shape[0], NC_MAX))
    out[:, : coef.shape[1]] = coef
    return out


def pack_state(state: np.ndarray, n_ode: int, n_mem: int) -> np.ndarray:
    """Law state rows (N, n_ode + n_mem) laid out in the kernel's (N, NS_MAX) slots."""
    if n_ode > NODE_MAX or n_mem > NMEM_MAX:
        raise ValueError(
            f"a law may have at most {NODE_MAX} ODE states and {NMEM_MAX} memory values"
        )
    state = np.atleast_2d(np.asarray(state, dtype=float))
    if state.shape[1] != n_ode + n_mem:
        raise ValueError(f"state rows have {state.shape[1]} values, the law has {n_ode + n_mem}")
    out = np.zeros((state.shape[0], NS_MAX))
    out[:, :n_ode] = state[:, :n_ode]
    out[:, NODE_MAX : NODE_MAX + n_mem] = state[:, n_ode:]
    return out


def unpack_state(packed: np.ndarray, n_ode: int, n_mem: int) -> np.ndarray:
    """Inverse of :func:`pack_state`."""
    return np.concatenate(
        [packed[:, :n_ode], packed[:, NODE_MAX : NODE_MAX + n_mem]], axis=1
    )
