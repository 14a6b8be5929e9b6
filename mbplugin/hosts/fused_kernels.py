"""A robot's implicit step begun in one compiled call after W, for any host (the lean case of
:meth:`HostStep.step <mbplugin.hosts.step.HostStep.step>` before the host step; used by
:meth:`mbplugin.mujoco.lean_tree.LeanTree.step`).

Before the host step, :meth:`HostStep.step <mbplugin.hosts.step.HostStep.step>` builds each
contact's effective mass and velocity, the warm-started impulse P_lin, the implicit step's
group arrays and start (:meth:`ContactIntegrator.begin
<mbplugin.hosts.integrator.ContactIntegrator.begin>`,
:class:`~mbplugin.pipeline.implicit.ImplicitStep`) and the step's info: some fifteen Python
frames and NumPy calls around three compiled calls. :func:`lean_begin` does the same
arithmetic in one compiled call (the kernels :func:`~mbplugin.pipeline.implicit_kernel._fill_group`,
:func:`~mbplugin.pipeline.implicit_kernel._begin_rows` and
:func:`~mbplugin.hosts.integrator._info_arrays` in the same order: the same bits) and
:func:`begun_step` makes the pending :class:`~mbplugin.pipeline.implicit.ImplicitStep` of its
results. No formula is written here. (Branch a1fuse writes the same kernel in
``bullet/fused.py`` and ``ImplicitStep.begun``: one of each stays at the merge.)

Units: SI (m, m/s, kg, N, N s).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin._jit import njit
from mbplugin.hosts.arrays import lookup
from mbplugin.hosts.integrator import _info_arrays
from mbplugin.pipeline import implicit_kernel as ik
from mbplugin.pipeline.implicit import ImplicitStep


@njit
def lean_begin(k, wnn, vt, ddelta, normal, delta, P_lin, dt, hd, w_flat, mu, has_fr, fr_mu,
               fr_static, same, rows, coef, mem, law, blaw, kid, mode, s0, m_eff, u0, fn0, fn,
               slip, force):
    """The implicit step's begin after W (``wnn`` (K,) each contact's n . W n, W (3K, 3K)
    row-major in ``w_flat``) in one call: each contact's effective mass ``m_eff`` (K,) kg
    (1 / n.W n, inf where n.W n <= 0) and velocity ``u0`` (K, 3) m/s (vt - ddelta n), the
    implicit step's group arrays (:func:`~mbplugin.pipeline.implicit_kernel._fill_group`:
    header ``hd``, normals, friction coefficients ``mu`` (K, 2) or the Friction's) and its
    start (:func:`~mbplugin.pipeline.implicit_kernel._begin_rows`: the store's rows, springs
    ``s0`` (K, 3) m, the normal force ``fn0`` (K,) N at the start), the info's mean normal
    force ``fn`` (K,) N and slip ``slip`` (K,) m/s of P_lin (K, 3) N s
    (:func:`~mbplugin.hosts.integrator._info_arrays`) and the force P_lin / dt (K, 3) N.
    Returns (gf, gc, every contact active)."""
    for i in range(k):
        m_eff[i] = 1.0 / wnn[i] if wnn[i] > 0 else np.inf
        for a in range(3):
            u0[i, a] = vt[i, a] - ddelta[i] * normal[i, a]
    gf, gc = ik._fill_group(hd, k, normal, w_flat, mu, has_fr, fr_mu, fr_static)
    every = ik._begin_rows(gc, k, same, rows, coef, mem, law, blaw, kid, mode, delta, u0, s0,
                           fn0)
    _info_arrays(P_lin, vt, normal, dt, fn, slip)
    for i in range(k):
        for a in range(3):
            force[i, a] = P_lin[i, a] / dt
    return gf, gc, every


def begun_step(store: Any, batch: Any, W: np.ndarray, friction: Any, rtol: float, stick: Any,
               s0: np.ndarray, mu: np.ndarray | None, gf: np.ndarray, gc: np.ndarray,
               t0: float, all_active: bool, fn0: np.ndarray) -> ImplicitStep:
    """The compiled :class:`~mbplugin.pipeline.implicit.ImplicitStep` of ``batch`` after its
    ``begin`` at ``t0`` (s), from what its ``__init__`` and ``begin`` compute, computed by
    :func:`lean_begin` with the same kernels: W (3K, 3K) float, ``friction`` active or None,
    ``stick`` or None with ``s0`` (K, 3) m its springs, ``mu`` (K, 2) or None, the group
    arrays ``gf``, ``gc`` with the store's rows read, whether every contact is active and the
    start's normal force ``fn0`` (K,) N."""
    space = ImplicitStep.__new__(ImplicitStep)
    space.store, space.batch, space.k = store, batch, len(batch)
    space.W, space.n = W, batch.normal
    space.friction, space.rtol, space.stick = friction, float(rtol), stick
    space.s0, space.mu = s0, mu
    space.compiled = True
    space.gf, space.gc = gf, gc
    space.s_end = None
    space.t0, space._all_active, space.fn0 = float(t0), bool(all_active), fn0
    return space


def warm_start(integ: Any, key: np.ndarray) -> np.ndarray:
    """The impulse P_lin (K, 3) N s an implicit step of the contacts ``key`` (K,) starts from:
    each contact's impulse of ``integ``'s (:class:`~mbplugin.hosts.integrator.ContactIntegrator`)
    last implicit step, by key, zero for a new contact (a new array): the lines of
    :meth:`ContactIntegrator.begin <mbplugin.hosts.integrator.ContactIntegrator.begin>`
    (a1fuse's ``ContactIntegrator.warm_start``)."""
    P_lin = np.zeros((len(key), 3))
    if integ._warm is not None:
        keys, imp = integ._warm
        if keys.shape == key.shape and (keys == key).all():
            P_lin = imp.copy()  # the same contacts in order (a robot standing)
        else:
            pos = lookup(keys, key)
            hit = pos >= 0
            if hit.all():  # every contact carried over: one gather
                P_lin = imp[pos]
            else:
                P_lin[hit] = imp[pos[hit]]
    return P_lin
