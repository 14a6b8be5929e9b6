"""Forces, rules and wrenches of known contact pairs, compiled.

The geometry of a known list of pairs (delta, ddelta, normal, lever arms, tangential velocity)
is narrow phase (:mod:`mbplugin.contact.pairs`, through the detection's scalar kernels); this
module takes those arrays and evaluates the laws through their compiled kernels
(:mod:`mbplugin.laws.kernels`) with the data's coefficient rows and state layout (ODE slots, then
memory), applies the contact rules (:mod:`mbplugin.pipeline.rules`), adds regularised friction
and scatters each contact's force onto its two bodies (:func:`add_contact_wrench`).
"""

from __future__ import annotations

from mbplugin._jit import njit, njit_helper
from mbplugin.laws import kernels
from mbplugin.pipeline import rules
from mbplugin.pipeline.friction import friction_scalar


@njit_helper
def state_tuple(row, ode, ns, nsl, mem):
    """Kernel state tuple of data row ``row``: its ``nsl`` ODE states from the flat ``ode``
    (``ns`` slots per row), then its memory row."""
    s0 = ode[row * ns + 0] if nsl > 0 else 0.0
    s1 = ode[row * ns + 1] if nsl > 1 else 0.0
    s2 = ode[row * ns + 2] if nsl > 2 else 0.0
    s3 = ode[row * ns + 3] if nsl > 3 else 0.0
    return (s0, s1, s2, s3, mem[row, 0], mem[row, 1], mem[row, 2], mem[row, 3])


@njit
def raw_forces(rows, law, delta, ddelta, coef, ode, ns, mem, law_kid, law_ns, out):
    """Unclipped law forces of the contacts (data rows ``rows``) at (delta, ddelta)."""
    for k in range(rows.shape[0]):
        r = rows[k]
        li = law[r]
        out[k] = kernels.force(law_kid[li], delta[k], ddelta[k], kernels.ctuple(coef, r),
                               state_tuple(r, ode, ns, law_ns[li], mem))


@njit
def raw_forces_records(law, delta, ddelta, coef, ode, ns, mem, law_kid, law_ns, out):
    """:func:`raw_forces` of data rows 0..m-1 at K states: delta, ddelta, out (K, m), the flat
    ODE states ``ode`` (K, m ns)."""
    for i in range(delta.shape[0]):
        for r in range(delta.shape[1]):
            li = law[r]
            out[i, r] = kernels.force(law_kid[li], delta[i, r], ddelta[i, r],
                                      kernels.ctuple(coef, r),
                                      state_tuple(r, ode[i], ns, law_ns[li], mem))


@njit_helper
def add_contact_wrench(k, a, b, ra, rb, f0, f1, f2, force, torque):
    """Add contact ``k``'s force F = (f0, f1, f2) on body b[k] and -F on body a[k] (index -1 =
    world geometry, skipped), with the torques r x F about each centre of mass."""
    j = b[k]
    if j >= 0:
        force[j, 0] += f0
        force[j, 1] += f1
        force[j, 2] += f2
        torque[j, 0] += rb[k, 1] * f2 - rb[k, 2] * f1
        torque[j, 1] += rb[k, 2] * f0 - rb[k, 0] * f2
        torque[j, 2] += rb[k, 0] * f1 - rb[k, 1] * f0
    i = a[k]
    if i >= 0:
        force[i, 0] -= f0
        force[i, 1] -= f1
        force[i, 2] -= f2
        torque[i, 0] -= ra[k, 1] * f2 - ra[k, 2] * f1
        torque[i, 1] -= ra[k, 2] * f0 - ra[k, 0] * f2
        torque[i, 2] -= ra[k, 0] * f1 - ra[k, 1] * f0


@njit
def scatter_contacts(a, b, fn, normal, ft, ra, rb, force, torque):
    """Per-body wrenches: F = fn n + ft acts on b, -F on a (index -1 = world geometry, skipped),
    with the torques r x F about each centre of mass; ``force``/``torque`` (n_bodies, 3) are
    accumulated in place."""
    for k in range(a.shape[0]):
        add_contact_wrench(k, a, b, ra, rb, fn[k] * normal[k, 0] + ft[k, 0],
                           fn[k] * normal[k, 1] + ft[k, 1], fn[k] * normal[k, 2] + ft[k, 2],
                           force, torque)


@njit_helper
def contact_forces(rows, law, a, b, delta, ddelta, normal, vt, ra, rb, coef, ode, ns, mem,
                   law_kid, law_mode, law_ns, mu, mu_s, v_s, v_eps, visc, lin, fric,
                   force, torque, rates, fn_out):
    """Law forces, friction, law-state rates; forces/torques scattered onto the bodies.

    Returns (power absorbed by the normal forces, friction power) in W.
    """
    p_n = 0.0
    p_f = 0.0
    for k in range(rows.shape[0]):
        r = rows[k]
        li = law[r]
        kid = law_kid[li]
        c = kernels.ctuple(coef, r)
        s = state_tuple(r, ode, ns, law_ns[li], mem)
        d = delta[k]
        v = ddelta[k]
        fn = rules.applied(law_mode[li], kernels.force(kid, d, v, c, s))
        fn_out[k] = fn
        nsl = law_ns[li]
        if nsl > 0:
            rt = kernels.rate(kid, d, v, c, s)
            for j in range(nsl):
                rates[r * ns + j] = rt[j]
        if fric:
            f0, f1, f2 = friction_scalar(vt[k, 0], vt[k, 1], vt[k, 2], fn, mu[li], mu_s[li],
                                         v_s[li], v_eps[li], visc[li], lin[li])
        else:
            f0 = 0.0
            f1 = 0.0
            f2 = 0.0
        p_n += fn * v
        p_f -= f0 * vt[k, 0] + f1 * vt[k, 1] + f2 * vt[k, 2]
        add_contact_wrench(k, a, b, ra, rb, fn * normal[k, 0] + f0, fn * normal[k, 1] + f1,
                           fn * normal[k, 2] + f2, force, torque)
    return p_n, p_f
