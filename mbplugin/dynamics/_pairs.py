"""Compiled evaluation of known contact pairs (the engine's hot path for primitive shapes).

Inside an integration step the engine needs the geometry and kinematics of a *fixed* list of
pairs (the store's active contacts, the watched pairs) at many trial states. The contact model's
:meth:`~mbplugin.contact.ContactModel.detect` answers the general question (broad phase, every
shape pair, batch assembly) with NumPy, which for a handful of contacts costs about a millisecond
of call overhead per evaluation. This module evaluates the known pairs of the three primitive
types in one compiled loop:

* sphere a - sphere b, plane a - sphere b, plane a - box b (corner ``feature``),

with exactly the formulas of :mod:`mbplugin.contact.narrow` (contact point at the middle of the
overlap, normal from a to b, +z for coincident sphere centres) and of
``ContactModel.finish`` (ddelta = -n . (v_b(P) - v_a(P)), tangential slip v_t). The test
``tests/test_engine_contacts.py::test_compiled_pairs_match_detect`` checks both paths agree to
round-off. Pairs of other types make the caller fall back to ``detect``.

Keys are decoded with the contact model's scheme ``key = (s_a S + s_b) 2**FEATURE_BITS + feature``.

The force loop evaluates the laws through their compiled kernels (``mbplugin.laws.kernels``)
with the store's padded coefficient rows and the state layout of the kernels (ODE slots, then
memory), adds regularised friction and scatters forces and torques to the bodies.
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin._jit import njit
from mbplugin.contact.model import BOX, FEATURE_BITS, PLANE, SPHERE
from mbplugin.dynamics._kernels import add_contact_wrench
from mbplugin.dynamics.friction import friction_scalar
from mbplugin.laws import kernels

PAIR_SS = 0
PAIR_PS = 1
PAIR_PB = 2
PAIR_OTHER = -1


def decode_keys(keys: np.ndarray, n_shapes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shape a, shape b, feature) of contact keys."""
    keys = np.asarray(keys, dtype=np.int64)
    feat = keys & ((1 << FEATURE_BITS) - 1)
    pair = keys >> FEATURE_BITS
    return pair // n_shapes, pair % n_shapes, feat


def pair_types(kind: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """PAIR_* code of each pair (PAIR_OTHER for types without a compiled path)."""
    ka, kb = kind[sa], kind[sb]
    out = np.full(len(sa), PAIR_OTHER, dtype=np.int64)
    out[(ka == SPHERE) & (kb == SPHERE)] = PAIR_SS
    out[(ka == PLANE) & (kb == SPHERE)] = PAIR_PS
    out[(ka == PLANE) & (kb == BOX)] = PAIR_PB
    return out


@njit
def _frame(s, body, lpos, lrot, pos, R, Rw):
    """World rotation Rw (3,3, written) and centre (tuple) of shape s."""
    bi = body[s]
    if bi < 0:
        for i in range(3):
            for j in range(3):
                Rw[i, j] = lrot[s, i, j]
        return lpos[s, 0], lpos[s, 1], lpos[s, 2]
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for k in range(3):
                acc += R[bi, i, k] * lrot[s, k, j]
            Rw[i, j] = acc
    c0 = pos[bi, 0] + R[bi, 0, 0] * lpos[s, 0] + R[bi, 0, 1] * lpos[s, 1] + R[bi, 0, 2] * lpos[s, 2]
    c1 = pos[bi, 1] + R[bi, 1, 0] * lpos[s, 0] + R[bi, 1, 1] * lpos[s, 1] + R[bi, 1, 2] * lpos[s, 2]
    c2 = pos[bi, 2] + R[bi, 2, 0] * lpos[s, 0] + R[bi, 2, 1] * lpos[s, 1] + R[bi, 2, 2] * lpos[s, 2]
    return c0, c1, c2


@njit
def pair_geometry(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p, half,
                  pos, R, vel, omega_w, a_out, b_out, delta, ddelta, normal, vt, ra, rb):
    """Geometry and kinematics of the listed pairs, written into the output arrays."""
    Ra = np.empty((3, 3))
    Rb = np.empty((3, 3))
    for k in range(sa.shape[0]):
        s_a = sa[k]
        s_b = sb[k]
        ca0, ca1, ca2 = _frame(s_a, body, lpos, lrot, pos, R, Ra)
        cb0, cb1, cb2 = _frame(s_b, body, lpos, lrot, pos, R, Rb)
        t = ptype[k]
        if t == PAIR_SS:
            d0 = cb0 - ca0
            d1 = cb1 - ca1
            d2 = cb2 - ca2
            dist = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if dist > 1e-300:
                n0 = d0 / dist
                n1 = d1 / dist
                n2 = d2 / dist
            else:
                n0 = 0.0
                n1 = 0.0
                n2 = 1.0
            r_a = radius[s_a]
            dl = r_a + radius[s_b] - dist
            w = r_a - 0.5 * dl
            p0 = ca0 + w * n0
            p1 = ca1 + w * n1
            p2 = ca2 + w * n2
        else:
            # plane a: normal and surface point in the world
            n0 = Ra[0, 0] * plane_n[s_a, 0] + Ra[0, 1] * plane_n[s_a, 1] + Ra[0, 2] * plane_n[
                s_a, 2]
            n1 = Ra[1, 0] * plane_n[s_a, 0] + Ra[1, 1] * plane_n[s_a, 1] + Ra[1, 2] * plane_n[
                s_a, 2]
            n2 = Ra[2, 0] * plane_n[s_a, 0] + Ra[2, 1] * plane_n[s_a, 1] + Ra[2, 2] * plane_n[
                s_a, 2]
            q0 = ca0 + Ra[0, 0] * plane_p[s_a, 0] + Ra[0, 1] * plane_p[s_a, 1] + Ra[0, 2] * (
                plane_p[s_a, 2])
            q1 = ca1 + Ra[1, 0] * plane_p[s_a, 0] + Ra[1, 1] * plane_p[s_a, 1] + Ra[1, 2] * (
                plane_p[s_a, 2])
            q2 = ca2 + Ra[2, 0] * plane_p[s_a, 0] + Ra[2, 1] * plane_p[s_a, 1] + Ra[2, 2] * (
                plane_p[s_a, 2])
            if t == PAIR_PS:
                r = radius[s_b]
                sd = (cb0 - q0) * n0 + (cb1 - q1) * n1 + (cb2 - q2) * n2
                dl = r - sd
                w = r - 0.5 * dl
                p0 = cb0 - w * n0
                p1 = cb1 - w * n1
                p2 = cb2 - w * n2
            else:
                f = feat[k]
                sx = 2.0 * (f & 1) - 1.0
                sy = 2.0 * ((f >> 1) & 1) - 1.0
                sz = 2.0 * ((f >> 2) & 1) - 1.0
                l0 = sx * half[s_b, 0]
                l1 = sy * half[s_b, 1]
                l2 = sz * half[s_b, 2]
                x0 = cb0 + Rb[0, 0] * l0 + Rb[0, 1] * l1 + Rb[0, 2] * l2
                x1 = cb1 + Rb[1, 0] * l0 + Rb[1, 1] * l1 + Rb[1, 2] * l2
                x2 = cb2 + Rb[2, 0] * l0 + Rb[2, 1] * l1 + Rb[2, 2] * l2
                dl = -((x0 - q0) * n0 + (x1 - q1) * n1 + (x2 - q2) * n2)
                p0 = x0 + 0.5 * dl * n0
                p1 = x1 + 0.5 * dl * n1
                p2 = x2 + 0.5 * dl * n2
        ba = body[s_a]
        bb = body[s_b]
        a_out[k] = ba
        b_out[k] = bb
        delta[k] = dl
        normal[k, 0] = n0
        normal[k, 1] = n1
        normal[k, 2] = n2
        # contact point relative to the centres of mass; world geometry has its origin there
        if ba >= 0:
            ra0 = p0 - pos[ba, 0]
            ra1 = p1 - pos[ba, 1]
            ra2 = p2 - pos[ba, 2]
            va0 = vel[ba, 0] + omega_w[ba, 1] * ra2 - omega_w[ba, 2] * ra1
            va1 = vel[ba, 1] + omega_w[ba, 2] * ra0 - omega_w[ba, 0] * ra2
            va2 = vel[ba, 2] + omega_w[ba, 0] * ra1 - omega_w[ba, 1] * ra0
        else:
            ra0 = p0
            ra1 = p1
            ra2 = p2
            va0 = 0.0
            va1 = 0.0
            va2 = 0.0
        if bb >= 0:
            rb0 = p0 - pos[bb, 0]
            rb1 = p1 - pos[bb, 1]
            rb2 = p2 - pos[bb, 2]
            vb0 = vel[bb, 0] + omega_w[bb, 1] * rb2 - omega_w[bb, 2] * rb1
            vb1 = vel[bb, 1] + omega_w[bb, 2] * rb0 - omega_w[bb, 0] * rb2
            vb2 = vel[bb, 2] + omega_w[bb, 0] * rb1 - omega_w[bb, 1] * rb0
        else:
            rb0 = p0
            rb1 = p1
            rb2 = p2
            vb0 = 0.0
            vb1 = 0.0
            vb2 = 0.0
        ra[k, 0] = ra0
        ra[k, 1] = ra1
        ra[k, 2] = ra2
        rb[k, 0] = rb0
        rb[k, 1] = rb1
        rb[k, 2] = rb2
        w0 = vb0 - va0
        w1 = vb1 - va1
        w2 = vb2 - va2
        vn = w0 * n0 + w1 * n1 + w2 * n2
        ddelta[k] = -vn
        vt[k, 0] = w0 - vn * n0
        vt[k, 1] = w1 - vn * n1
        vt[k, 2] = w2 - vn * n2


@njit
def _state(row, ode, ns, nsl, mem):
    s0 = ode[row * ns + 0] if nsl > 0 else 0.0
    s1 = ode[row * ns + 1] if nsl > 1 else 0.0
    s2 = ode[row * ns + 2] if nsl > 2 else 0.0
    s3 = ode[row * ns + 3] if nsl > 3 else 0.0
    return (s0, s1, s2, s3, mem[row, 0], mem[row, 1], mem[row, 2], mem[row, 3])


@njit
def raw_forces(rows, law, delta, ddelta, coef, ode, ns, mem, law_kid, law_ns, out):
    """Unclipped law forces of the contacts (store rows ``rows``) at (delta, ddelta)."""
    for k in range(rows.shape[0]):
        r = rows[k]
        li = law[r]
        out[k] = kernels.force(law_kid[li], delta[k], ddelta[k], kernels.ctuple(coef, r),
                               _state(r, ode, ns, law_ns[li], mem))


@njit
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
        s = _state(r, ode, ns, law_ns[li], mem)
        d = delta[k]
        v = ddelta[k]
        fn = kernels.clip(law_mode[li], kernels.force(kid, d, v, c, s))
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
