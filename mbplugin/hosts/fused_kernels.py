"""A robot's implicit step begun in one compiled call after W, for any host (the lean case of
:meth:`HostStep.step <mbplugin.hosts.step.HostStep.step>` before the host step).

Before the host step, :meth:`HostStep.step <mbplugin.hosts.step.HostStep.step>` builds each
contact's effective mass and velocity, the warm-started impulse P_lin, the implicit step's
group arrays and start (:meth:`ContactIntegrator.begin
<mbplugin.hosts.integrator.ContactIntegrator.begin>`,
:class:`~mbplugin.pipeline.implicit.ImplicitStep`) and the step's info: some fifteen Python
frames and NumPy calls around three compiled calls. :func:`lean_begin` does the same
arithmetic in one compiled call (the kernels
:func:`~mbplugin.pipeline.implicit_kernel._fill_group`,
:func:`~mbplugin.pipeline.implicit_kernel._begin_rows` and
:func:`~mbplugin.hosts.integrator._info_arrays` in the same order: the same bits) and
:meth:`ImplicitStep.begun <mbplugin.pipeline.implicit.ImplicitStep.begun>` makes the pending
step of its results; PyBullet's robots (:func:`mbplugin.bullet.fused.begin_lean`) and
MuJoCo's trees (:mod:`mbplugin.mujoco.lean_tree`) call it. No formula is written here.

Units: SI (m, m/s, kg, N, N s).
"""

from __future__ import annotations

import numpy as np

from mbplugin._jit import njit
from mbplugin.hosts.integrator import _info_arrays
from mbplugin.pipeline import implicit_kernel as ik


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


@njit
def lean_begin_into(k, wnn, vt, ddelta, normal, delta, P_lin, dt, hd, w_flat, mu, has_fr,
                    fr_mu, fr_static, same, rows, coef, mem, law, blaw, kid, mode, s0, m_eff,
                    u0, fn0, fn, slip, force, gf, gc, wf):
    """:func:`lean_begin` into the scratch group arrays ``gf``
    (:func:`~mbplugin.pipeline.layout.group_float_len` (K) floats) and ``gc`` (K records of
    :data:`~mbplugin.pipeline.layout.CONTACT`), its work arrays views of ``wf`` (7 K floats
    or more): no allocation (the same kernels in the same order: the same bits). Returns
    whether every contact is active."""
    for i in range(k):
        m_eff[i] = 1.0 / wnn[i] if wnn[i] > 0 else np.inf
        for a in range(3):
            u0[i, a] = vt[i, a] - ddelta[i] * normal[i, a]
    ik._fill_group_into(hd, k, normal, w_flat, mu, has_fr, fr_mu, fr_static, gf, gc)
    every = ik._begin_rows_into(gc, k, same, rows, coef, mem, law, blaw, kid, mode, delta, u0,
                                s0, fn0, wf)
    _info_arrays(P_lin, vt, normal, dt, fn, slip)
    for i in range(k):
        for a in range(3):
            force[i, a] = P_lin[i, a] / dt
    return every
