"""Known contact pairs of primitive shapes: geometry and kinematics, compiled.

Inside an integration step a driver needs the geometry of a *fixed* list of pairs (the active
contacts, the watched pairs) at many trial states. :meth:`~mbplugin.contact.ContactModel.detect`
answers the general question (broad phase, every shape pair, batch assembly); this module
evaluates a known list of pairs of the primitive types

* sphere a - sphere b, plane a - sphere b, plane a - box b (corner ``feature``), plane a -
  mesh b (plane ``feature`` of the mesh: a hull corner or a smooth region,
  :func:`mbplugin.contact.mesh.plane_features`)

in one compiled loop through the *same* scalar kernels the detection loops over
(:mod:`mbplugin.contact.kernels`: shape poses, closed forms, point kinematics), so both paths give
identical numbers. Pairs of other types make the caller fall back to ``detect``.

This is narrow phase (it lives in contact/); the forces, the contact rules and the wrenches of
these pairs are the pipeline's (:mod:`mbplugin.pipeline.pairs`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.extending import overload

from mbplugin._jit import CALLEE_JIT_OPTIONS, njit, njit_helper
from mbplugin.contact import kernels as ck
from mbplugin.contact.model import BOX, MESH, PLANE, SPHERE

PAIR_SS = 0
PAIR_PS = 1
PAIR_PB = 2
PAIR_PM = 3
PAIR_OTHER = -1

decode_keys = ck.decode_keys


def pair_types(kind: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """PAIR_* code of each pair (PAIR_OTHER for types without a compiled path)."""
    ka, kb = kind[sa], kind[sb]
    out = np.full(len(sa), PAIR_OTHER, dtype=np.int64)
    out[(ka == SPHERE) & (kb == SPHERE)] = PAIR_SS
    out[(ka == PLANE) & (kb == SPHERE)] = PAIR_PS
    out[(ka == PLANE) & (kb == BOX)] = PAIR_PB
    out[(ka == PLANE) & (kb == MESH)] = PAIR_PM
    return out


def mesh_arrays(comp: Any) -> tuple[np.ndarray, ...]:
    """The mesh tuple ``ms`` of the pair kernels from a model's arrays
    (``ContactModel.arrays``): :attr:`mbplugin.contact.mesh.MeshSet.kernel_arrays`, read by
    :func:`mbplugin.contact.kernels.mesh_feature_point`; the empty tuple for a model without
    meshes, so that its compiled code does not contain the mesh-plane kernel (3 s of a first
    run's compile time; :func:`_mesh_point`)."""
    if not np.any(np.asarray(comp.kind) == MESH):
        return ()
    return comp.mesh.kernel_arrays


def _mesh_point(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, ms, s, f):
    """:func:`mbplugin.contact.kernels.mesh_feature_point` for plane feature ``f`` of mesh
    shape ``s`` (8-tuple); compiled code only. With the empty mesh tuple of a model without
    meshes (:func:`mesh_arrays`, no mesh-plane pair can occur) the kernel is not compiled."""
    raise NotImplementedError("_mesh_point is dispatched in compiled code only")


@overload(_mesh_point, jit_options=CALLEE_JIT_OPTIONS)
def _mesh_point_impl(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, ms, s, f):
    if len(ms.types) == 0:
        def no_mesh(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, ms, s, f):
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1

        return no_mesh

    def mesh(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, ms, s, f):
        return ck.mesh_feature_point(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, ms, ms[0][s] + f)

    return mesh


@njit
def pair_one(t, s_a, s_b, f, body, lpos, lrot, radius, plane_n, plane_p, half, ms, pos, R, vel,
             omega_w, Ra, Rb):
    """Geometry and kinematics of one known pair: (delta, ddelta, n0, n1, n2, ra (3), rb (3),
    vt (3)) as a 14-tuple. ``Ra``, ``Rb`` are (3, 3) work arrays; ``ms`` the mesh tuple
    (:func:`mesh_arrays`)."""
    ca0, ca1, ca2 = ck.shape_pose(s_a, body, lpos, lrot, pos, R, Ra)
    cb0, cb1, cb2 = ck.shape_pose(s_b, body, lpos, lrot, pos, R, Rb)
    if t == PAIR_SS:
        g = ck.sphere_sphere(ca0, ca1, ca2, radius[s_a], cb0, cb1, cb2, radius[s_b])
    else:
        q0, q1, q2, n0, n1, n2 = ck.plane_frame(Ra, ca0, ca1, ca2, plane_n[s_a], plane_p[s_a])
        if t == PAIR_PS:
            g = ck.plane_sphere(q0, q1, q2, n0, n1, n2, cb0, cb1, cb2, radius[s_b])
        elif t == PAIR_PM:
            m = _mesh_point(q0, q1, q2, n0, n1, n2, cb0, cb1, cb2, Rb, ms, s_b, f)
            g = (m[0], m[1], m[2], m[3], m[4], m[5], m[6])
        else:
            x0, x1, x2 = ck.box_corner(cb0, cb1, cb2, Rb, half[s_b, 0], half[s_b, 1],
                                       half[s_b, 2], f)
            g = ck.plane_point(q0, q1, q2, n0, n1, n2, x0, x1, x2)
    k = ck.contact_kinematics(body[s_a], body[s_b], g[0], g[1], g[2], g[3], g[4], g[5], pos,
                              vel, omega_w)
    return (g[6], k[6], g[3], g[4], g[5], k[0], k[1], k[2], k[3], k[4], k[5], k[7], k[8], k[9])


@njit_helper
def pair_geometry(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p, half, ms,
                  pos, R, vel, omega_w, a_out, b_out, delta, ddelta, normal, vt, ra, rb):
    """Geometry and kinematics of the listed pairs, written into the output arrays."""
    pair_geometry_into(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p, half,
                       ms, pos, R, vel, omega_w, a_out, b_out, delta, ddelta, normal, vt, ra, rb,
                       np.empty((3, 3)), np.empty((3, 3)))


@njit_helper
def pair_geometry_into(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p, half,
                       ms, pos, R, vel, omega_w, a_out, b_out, delta, ddelta, normal, vt, ra, rb,
                       Ra, Rb):
    """:func:`pair_geometry` with caller-owned (3, 3) work arrays ``Ra``, ``Rb``."""
    for k in range(sa.shape[0]):
        g = pair_one(ptype[k], sa[k], sb[k], feat[k], body, lpos, lrot, radius, plane_n,
                     plane_p, half, ms, pos, R, vel, omega_w, Ra, Rb)
        a_out[k] = body[sa[k]]
        b_out[k] = body[sb[k]]
        delta[k] = g[0]
        ddelta[k] = g[1]
        for j in range(3):
            normal[k, j] = g[2 + j]
            ra[k, j] = g[5 + j]
            rb[k, j] = g[8 + j]
            vt[k, j] = g[11 + j]


@njit
def pair_contacts(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p, half, ms,
                  pos, R, vel, omega_w, inv_m, inv_i, a_out, b_out, point, normal, delta, ddelta,
                  vt, ra, rb, m_eff):
    """The state-dependent fields of a :class:`~mbplugin.contact.ContactBatch` of the listed
    pairs (what :meth:`~mbplugin.contact.ContactModel.detect_pairs` computes for them, through
    the same kernels): :func:`pair_geometry`, the contact point (the point of ``ra``) and the
    effective mass (:func:`mbplugin.contact.kernels.effective_mass`; ``inv_m`` (N + 1,),
    ``inv_i`` (N + 1, 3, 3) as ``BodyState.inv_mass_ext`` / ``inv_inertia_world_ext``)."""
    Ra = np.empty((3, 3))
    Rb = np.empty((3, 3))
    pair_geometry_into(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p, half,
                       ms, pos, R, vel, omega_w, a_out, b_out, delta, ddelta, normal, vt, ra, rb,
                       Ra, Rb)
    for k in range(sa.shape[0]):
        i = a_out[k]
        for j in range(3):
            point[k, j] = ra[k, j] + (pos[i, j] if i >= 0 else 0.0)
        m_eff[k] = ck.effective_mass(i, b_out[k], ra[k, 0], ra[k, 1], ra[k, 2], rb[k, 0],
                                     rb[k, 1], rb[k, 2], normal[k, 0], normal[k, 1],
                                     normal[k, 2], inv_m, inv_i)


@njit
def pair_geometry_records(ptype, sa, sb, feat, body, lpos, lrot, radius, plane_n, plane_p,
                          half, ms, pos, R, vel, omega_w, delta, ddelta):
    """delta and ddelta (K, m) of the listed pairs at K states of the bodies (a recorder's
    records): pos, vel, omega_w (K, n, 3), R (K, n, 3, 3); the scalars of
    :func:`pair_geometry`."""
    Ra = np.empty((3, 3))
    Rb = np.empty((3, 3))
    for i in range(pos.shape[0]):
        for k in range(sa.shape[0]):
            g = pair_one(ptype[k], sa[k], sb[k], feat[k], body, lpos, lrot, radius, plane_n,
                         plane_p, half, ms, pos[i], R[i], vel[i], omega_w[i], Ra, Rb)
            delta[i, k] = g[0]
            ddelta[i, k] = g[1]
