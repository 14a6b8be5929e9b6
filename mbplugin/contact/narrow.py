"""Closed-form narrow phase for the primitive shape pairs, vectorised over all pairs of a type.

Every function takes world-frame arrays (one row per candidate pair) and returns the contact
geometry as arrays: contact ``point`` (K, 3) m, unit ``normal`` (K, 3) from shape ``a`` to shape
``b`` (the first shape named in the function is ``a``), and the indentation ``delta`` (K,) m,
positive when the shapes overlap (negative: the gap). Kinematics (ddelta, m_eff) are added by the
model from the bodies' state.

Contact point: the midpoint of the two surface points along the normal (the deepest point of each
surface inside the other), so that it lies in the middle of the overlap. Signed distance / normal
algorithm: review Corral et al. (2021) Sect. 4, Eqs. 4.1-4.5; the closed forms below are standard
geometry (spec ``review-corral2021.md`` section 1.5).

Degenerate configurations (coincident sphere centres, a sphere centre on a capsule axis end
point, a pin exactly at the centre of its hole) have no defined normal; the functions then use
+z (world) so that the output stays finite.
"""

from __future__ import annotations

import numpy as np

from mbplugin.contact import kernels as _k

_EPS = 1e-300
_Z = np.array([0.0, 0.0, 1.0])


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of the rows of ``v`` and their lengths (+z where the length is 0)."""
    d = np.linalg.norm(v, axis=-1)
    ok = d > _EPS
    u = np.where(ok[..., None], v / np.where(ok, d, 1.0)[..., None], _Z)
    return u, d


def sphere_sphere(
    ca: np.ndarray, ra: np.ndarray, cb: np.ndarray, rb: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sphere a (centre ``ca``, radius ``ra``) against sphere b.

    n = (c_b - c_a)/|c_b - c_a|, delta = r_a + r_b - |c_b - c_a|, P = c_a + (r_a - delta/2) n
    (compiled scalar kernel :func:`mbplugin.contact.kernels.sphere_sphere`).
    """
    k = len(ca)
    point, normal, delta = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    _k.sphere_sphere_batch(_f2(ca), _f1(ra, k), _f2(cb), _f1(rb, k), point, normal, delta)
    return point, normal, delta


def plane_sphere(
    p0: np.ndarray, pn: np.ndarray, c: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Half-space a (surface point ``p0``, outward unit normal ``pn``) against sphere b.

    delta = r - (c - p0).n_p, n = n_p (from the plane towards the sphere),
    P = c - (r - delta/2) n_p
    (compiled scalar kernel :func:`mbplugin.contact.kernels.plane_sphere`).
    """
    k = len(c)
    point, normal, delta = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    _k.plane_sphere_batch(_f2(p0), _f2(pn), _f2(c), _f1(r, k), point, normal, delta)
    return point, normal, delta


def _f2(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def _f1(a: np.ndarray, k: int) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.shape == (k,):
        return np.ascontiguousarray(a)
    return np.ascontiguousarray(np.broadcast_to(a, (k,)))


def box_sphere(
    cb: np.ndarray, Rb: np.ndarray, h: np.ndarray, c: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Box a (centre ``cb``, rotation ``Rb`` (K, 3, 3), half extents ``h`` (K, 3)) against sphere b.

    In the box frame the sphere centre is p = R^T (c - c_b). Outside the box the closest box point
    is q = clip(p, -h, h), the normal (p - q)/|p - q| and delta = r - |p - q|. Inside, the face of
    least depth d_i = h_i - |p_i| gives n = sign(p_i) e_i and delta = r + d_i.
    """
    p = np.einsum("kji,kj->ki", Rb, c - cb)
    q = np.clip(p, -h, h)
    diff = p - q
    dist = np.linalg.norm(diff, axis=1)
    outside = dist > 0.0
    n_loc = np.empty_like(p)
    delta = np.empty(len(p))
    n_loc[outside] = diff[outside] / dist[outside, None]
    delta[outside] = r[outside] - dist[outside]
    if (~outside).any():
        pi, hi = p[~outside], h[~outside]
        depth = hi - np.abs(pi)
        ax = np.argmin(depth, axis=1)
        rows = np.arange(len(pi))
        sgn = np.where(pi[rows, ax] >= 0.0, 1.0, -1.0)
        nl = np.zeros_like(pi)
        nl[rows, ax] = sgn
        qi = pi.copy()
        qi[rows, ax] = sgn * hi[rows, ax]
        n_loc[~outside] = nl
        q[~outside] = qi
        delta[~outside] = r[~outside] + depth[rows, ax]
    n = np.einsum("kij,kj->ki", Rb, n_loc)
    q_w = cb + np.einsum("kij,kj->ki", Rb, q)
    deep = c - r[:, None] * n
    return 0.5 * (q_w + deep), n, delta


def segment_closest(
    e0: np.ndarray, e1: np.ndarray, p: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Closest points on the segments e0-e1 to the points p, and the parameters t in [0, 1]."""
    u = e1 - e0
    uu = np.einsum("ij,ij->i", u, u)
    t = np.clip(np.einsum("ij,ij->i", p - e0, u) / np.maximum(uu, _EPS), 0.0, 1.0)
    return e0 + t[:, None] * u, t


def capsule_ends(
    cc: np.ndarray, Rc: np.ndarray, half_length: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """World end points of capsule axes (local z from -half_length to +half_length)."""
    axis = Rc[:, :, 2]
    return cc - half_length[:, None] * axis, cc + half_length[:, None] * axis


def capsule_sphere(
    cc: np.ndarray, Rc: np.ndarray, rc: np.ndarray, hl: np.ndarray, c: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Capsule a against sphere b: sphere-sphere with the closest point of the capsule's axis.

    Returns point, normal, delta and ``on_cap`` (True when the closest axis point is an end
    point, i.e. the sphere touches a hemispherical cap; False on the cylindrical part).
    """
    e0, e1 = capsule_ends(cc, Rc, hl)
    q, t = segment_closest(e0, e1, c)
    point, n, delta = sphere_sphere(q, rc, c, r)
    return point, n, delta, (t <= 0.0) | (t >= 1.0)


def plane_capsule(
    p0: np.ndarray, pn: np.ndarray, cc: np.ndarray, Rc: np.ndarray, rc: np.ndarray, hl: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Half-space a against capsule b: the two end spheres, shape (K, 2, ...) (feature = end)."""
    e0, e1 = capsule_ends(cc, Rc, hl)
    pts, ns, ds = [], [], []
    for e in (e0, e1):
        pt, n, d = plane_sphere(p0, pn, e, rc)
        pts.append(pt)
        ns.append(n)
        ds.append(d)
    return np.stack(pts, axis=1), np.stack(ns, axis=1), np.stack(ds, axis=1)


#: Corner signs of a box, corner index i = sx + 2 sy + 4 sz with s = 0 for -, 1 for +.
BOX_CORNERS = np.array(
    [[(2 * (i & 1) - 1), (2 * ((i >> 1) & 1) - 1), (2 * ((i >> 2) & 1) - 1)] for i in range(8)],
    dtype=float,
)


def plane_box(
    p0: np.ndarray, pn: np.ndarray, cb: np.ndarray, Rb: np.ndarray, h: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Half-space a against box b: the 8 corners, shape (K, 8, ...) (feature = corner index).

    delta_i = -(x_i - p0).n_p for corner x_i = c_b + R_b (s_i * h); the point is the midpoint of
    the corner and its projection on the plane (compiled scalar kernels
    :func:`mbplugin.contact.kernels.box_corner` and :func:`~mbplugin.contact.kernels.plane_point`).
    """
    k = len(cb)
    point, normal, delta = np.empty((k, 8, 3)), np.empty((k, 8, 3)), np.empty((k, 8))
    _k.plane_box_batch(_f2(p0), _f2(pn), _f2(cb), _f2(Rb), _f2(h), point, normal, delta)
    return point, normal, delta


def sphere_hole_sphere(
    ch: np.ndarray, rh: np.ndarray, c: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spherical hole a (centre ``ch``, radius ``rh``) against a sphere b inside it.

    With e = |c - c_h| and u = (c - c_h)/e: delta = e - (r_h - r) (spec section 1.5, internal
    contact), the normal points from the hole wall towards the pin, n = -u, and the point is the
    midpoint of the wall point c_h + r_h u and the pin's outermost point c + r u.
    """
    u, e = _unit(c - ch)
    delta = e - (rh - r)
    point = 0.5 * ((ch + rh[:, None] * u) + (c + r[:, None] * u))
    return point, -u, delta


def cylinder_hole_sphere(
    ch: np.ndarray, Rh: np.ndarray, rh: np.ndarray, c: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cylindrical bore a (axis point ``ch``, axis = local z of ``Rh``, radius ``rh``) against a
    sphere b inside it: as the spherical hole with the offset measured perpendicular to the axis.
    """
    axis = Rh[:, :, 2]
    d = c - ch
    foot = ch + np.einsum("ij,ij->i", d, axis)[:, None] * axis
    u, e = _unit(c - foot)
    delta = e - (rh - r)
    point = 0.5 * ((foot + rh[:, None] * u) + (c + r[:, None] * u))
    return point, -u, delta
