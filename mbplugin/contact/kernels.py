"""Compiled scalar geometry kernels: shape poses, closed-form narrow phase, point kinematics, keys.

Each function here is one formula for one pair or one contact, on scalars (tuples in, tuples
out, no arrays cross a call). The vectorised detection (:mod:`mbplugin.contact.narrow`,
:meth:`mbplugin.contact.ContactModel.detect`) loops over them, and so does the
known-pair path (:mod:`mbplugin.contact.pairs`), so a closed form exists exactly once.

Conventions: the normal points from shape ``a`` to shape ``b``; ``delta`` > 0 is the overlap (m);
the contact point is the middle of the overlap. Closed forms: standard geometry (review Corral et
al. 2021, Sect. 4, Eqs. 4.1-4.5; spec ``review-corral2021.md`` section 1.5).
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin._jit import njit, njit_helper

#: Contact keys: ``key = (shape_a * S + shape_b) * 2**FEATURE_BITS + feature`` (S shapes).
FEATURE_BITS = 20
FEATURE_SPAN = 1 << FEATURE_BITS
_EPS = 1e-300


@njit
def quat_matrix(w, x, y, z):
    """Rotation matrix (row-major 9-tuple) of the quaternion [w, x, y, z], normalised here."""
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return (
        1.0 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y),
        s * (x * y + w * z), 1.0 - s * (x * x + z * z), s * (y * z - w * x),
        s * (x * z - w * y), s * (y * z + w * x), 1.0 - s * (x * x + y * y),
    )


@njit_helper
def quat_product(pw, px, py, pz, qw, qx, qy, qz):
    """The Hamilton product p (x) q of two quaternions [w, x, y, z] given as scalars (a
    4-tuple), the terms summed in the order of :func:`mbplugin.contact.rotation.quat_multiply`
    (its array form), so both give the same bits."""
    return (pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw)


@njit
def quat_matrices(quat, out):
    """Rotation matrices (N, 3, 3) of the quaternions (N, 4), written into ``out``."""
    for i in range(quat.shape[0]):
        m = quat_matrix(quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
        for a in range(3):
            for b in range(3):
                out[i, a, b] = m[3 * a + b]


@njit_helper
def shape_pose(s, body, lpos, lrot, pos, R, Rw):
    """World rotation ``Rw`` (3, 3, written) and centre (tuple) of shape ``s``: the body's pose
    (``pos``, ``R``; body -1 = the world) composed with the shape's local pose."""
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
def sphere_sphere(ca0, ca1, ca2, ra, cb0, cb1, cb2, rb):
    """Sphere a against sphere b: (point, normal, delta) as a 7-tuple.

    n = (c_b - c_a)/|c_b - c_a| (+z for coincident centres), delta = r_a + r_b - |c_b - c_a|,
    P = c_a + (r_a - delta/2) n.
    """
    d0 = cb0 - ca0
    d1 = cb1 - ca1
    d2 = cb2 - ca2
    dist = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if dist > _EPS:
        n0 = d0 / dist
        n1 = d1 / dist
        n2 = d2 / dist
    else:
        n0 = 0.0
        n1 = 0.0
        n2 = 1.0
    dl = ra + rb - dist
    w = ra - 0.5 * dl
    return ca0 + w * n0, ca1 + w * n1, ca2 + w * n2, n0, n1, n2, dl


@njit
def plane_sphere(q0, q1, q2, n0, n1, n2, c0, c1, c2, r):
    """Half-space a (surface point q, outward unit normal n) against sphere b (centre c, radius r).

    delta = r - (c - q).n, normal n, P = c - (r - delta/2) n.
    """
    sd = (c0 - q0) * n0 + (c1 - q1) * n1 + (c2 - q2) * n2
    dl = r - sd
    w = r - 0.5 * dl
    return c0 - w * n0, c1 - w * n1, c2 - w * n2, n0, n1, n2, dl


@njit_helper
def box_corner(c0, c1, c2, Rb, h0, h1, h2, corner):
    """World position of corner ``corner`` (index sx + 2 sy + 4 sz, s = 0 for -, 1 for +) of the
    box with centre c, rotation Rb (3, 3) and half extents h."""
    l0 = (2.0 * (corner & 1) - 1.0) * h0
    l1 = (2.0 * ((corner >> 1) & 1) - 1.0) * h1
    l2 = (2.0 * ((corner >> 2) & 1) - 1.0) * h2
    return (c0 + Rb[0, 0] * l0 + Rb[0, 1] * l1 + Rb[0, 2] * l2,
            c1 + Rb[1, 0] * l0 + Rb[1, 1] * l1 + Rb[1, 2] * l2,
            c2 + Rb[2, 0] * l0 + Rb[2, 1] * l1 + Rb[2, 2] * l2)


@njit
def plane_point(q0, q1, q2, n0, n1, n2, x0, x1, x2):
    """Half-space a against a point x of shape b (a box corner): delta = -(x - q).n, the
    normal n, the point midway between x and its projection on the plane."""
    dl = -((x0 - q0) * n0 + (x1 - q1) * n1 + (x2 - q2) * n2)
    return x0 + 0.5 * dl * n0, x1 + 0.5 * dl * n1, x2 + 0.5 * dl * n2, n0, n1, n2, dl


#: A cylinder's rim (:func:`_rim_member`) takes a direction fixed in the body for its points
#: once its axis is within this sine of the plane's normal (a face flat on the plane, where the
#: lowest rim point is undefined); the deepest point is then off by at most 2 r RIM_UPRIGHT.
RIM_UPRIGHT = 1e-9


@njit_helper
def _rim_member(q0, q1, q2, n0, n1, n2, Rb, vgeo, v, y0, y1, y2):
    """A point of the rim of an exact cylinder (:class:`mbplugin.contact.cylinder.Cylinder`)
    against the half-space (q, n): its overlap and the point (4-tuple, as
    :func:`_mesh_member`).

    Member row ``v`` holds the rim: its centre (vgeo[v, 0:3], shape frame; ``y`` in the world),
    minus its radius R (vgeo[v, 3] < 0), the cylinder's unit axis a (vgeo[v, 4:7]) and the
    cosine and sine of the point's angle phi about the axis (vgeo[v, 7:9]) from the rim's
    lowest point. With A = Rb a and w = -n + (n.A) A the part of -n across the axis, u = w / |w|
    is the direction of the rim's lowest point (the support of a circle of radius R in the
    direction -n: y + R u, exact), and the point is y + R (cos phi u + sin phi (A x u)). When
    |w| <= :data:`RIM_UPRIGHT` (the face flat on the plane: every rim point equally low), u
    is a direction across the axis fixed in the body, so the points keep their places on the
    rim."""
    R = -vgeo[v, 3]
    a0 = Rb[0, 0] * vgeo[v, 4] + Rb[0, 1] * vgeo[v, 5] + Rb[0, 2] * vgeo[v, 6]
    a1 = Rb[1, 0] * vgeo[v, 4] + Rb[1, 1] * vgeo[v, 5] + Rb[1, 2] * vgeo[v, 6]
    a2 = Rb[2, 0] * vgeo[v, 4] + Rb[2, 1] * vgeo[v, 5] + Rb[2, 2] * vgeo[v, 6]
    na = n0 * a0 + n1 * a1 + n2 * a2
    w0 = -n0 + na * a0
    w1 = -n1 + na * a1
    w2 = -n2 + na * a2
    wn = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if wn > RIM_UPRIGHT:
        u0 = w0 / wn
        u1 = w1 / wn
        u2 = w2 / wn
    else:  # a fixed direction across the axis: local x (or y) less its part along the axis
        ex = 1.0 if abs(vgeo[v, 4]) < 0.9 else 0.0
        ey = 1.0 - ex
        ea = ex * vgeo[v, 4] + ey * vgeo[v, 5]
        p0 = ex - ea * vgeo[v, 4]
        p1 = ey - ea * vgeo[v, 5]
        p2 = -ea * vgeo[v, 6]
        pn = math.sqrt(p0 * p0 + p1 * p1 + p2 * p2)
        u0 = (Rb[0, 0] * p0 + Rb[0, 1] * p1 + Rb[0, 2] * p2) / pn
        u1 = (Rb[1, 0] * p0 + Rb[1, 1] * p1 + Rb[1, 2] * p2) / pn
        u2 = (Rb[2, 0] * p0 + Rb[2, 1] * p1 + Rb[2, 2] * p2) / pn
    c = vgeo[v, 7]
    s = vgeo[v, 8]
    x0 = y0 + R * (c * u0 + s * (a1 * u2 - a2 * u1))
    x1 = y1 + R * (c * u1 + s * (a2 * u0 - a0 * u2))
    x2 = y2 + R * (c * u2 + s * (a0 * u1 - a1 * u0))
    return -((x0 - q0) * n0 + (x1 - q1) * n1 + (x2 - q2) * n2), x0, x1, x2


#: Column 3 of a member row of ``vgeo`` that holds an exact ellipsoid (:func:`_ellipsoid_member`)
ELLIPSOID_MARK = -math.inf


@njit_helper
def _ellipsoid_member(q0, q1, q2, n0, n1, n2, Rb, vgeo, v, y0, y1, y2):
    """The deepest point of an exact ellipsoid (:class:`mbplugin.contact.ellipsoid.Ellipsoid`)
    against the half-space (q, n): its overlap and the point (4-tuple, as :func:`_mesh_member`).

    Member row ``v`` holds the ellipsoid: its centre (vgeo[v, 0:3], shape frame; ``y`` in the
    world), :data:`ELLIPSOID_MARK` (vgeo[v, 3]) and its semi-axes (a, b, c) along the shape's
    x, y, z (vgeo[v, 4:7], m). With A = diag(a, b, c) and u = -Rb^T n the direction into the
    plane in the shape frame, the support of the ellipsoid in u is h(u) = sqrt(u^T A^2 u),
    reached at p = A^2 u / h(u) (the point whose outward normal A^-2 p / |A^-2 p| is u: exact,
    one square root); the point is y + Rb p. For a = b = c = r: p = r u / |u|, a sphere's lowest
    point (:func:`plane_sphere`, to rounding)."""
    u0 = -(Rb[0, 0] * n0 + Rb[1, 0] * n1 + Rb[2, 0] * n2)
    u1 = -(Rb[0, 1] * n0 + Rb[1, 1] * n1 + Rb[2, 1] * n2)
    u2 = -(Rb[0, 2] * n0 + Rb[1, 2] * n1 + Rb[2, 2] * n2)
    a2 = vgeo[v, 4] * vgeo[v, 4]
    b2 = vgeo[v, 5] * vgeo[v, 5]
    c2 = vgeo[v, 6] * vgeo[v, 6]
    h = math.sqrt(a2 * u0 * u0 + b2 * u1 * u1 + c2 * u2 * u2)
    p0 = a2 * u0 / h
    p1 = b2 * u1 / h
    p2 = c2 * u2 / h
    x0 = y0 + Rb[0, 0] * p0 + Rb[0, 1] * p1 + Rb[0, 2] * p2
    x1 = y1 + Rb[1, 0] * p0 + Rb[1, 1] * p1 + Rb[1, 2] * p2
    x2 = y2 + Rb[2, 0] * p0 + Rb[2, 1] * p1 + Rb[2, 2] * p2
    return -((x0 - q0) * n0 + (x1 - q1) * n1 + (x2 - q2) * n2), x0, x1, x2


@njit_helper
def _mesh_member(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, vgeo, v):
    """One member vertex row ``v`` of a mesh plane feature against the half-space (q, n): its
    overlap and contact point before the half-overlap shift (4-tuple; see
    :func:`mesh_feature_point`)."""
    l0 = vgeo[v, 0]
    l1 = vgeo[v, 1]
    l2 = vgeo[v, 2]
    y0 = c0 + Rb[0, 0] * l0 + Rb[0, 1] * l1 + Rb[0, 2] * l2
    y1 = c1 + Rb[1, 0] * l0 + Rb[1, 1] * l1 + Rb[1, 2] * l2
    y2 = c2 + Rb[2, 0] * l0 + Rb[2, 1] * l1 + Rb[2, 2] * l2
    r = vgeo[v, 3]
    h = (y0 - q0) * n0 + (y1 - q1) * n1 + (y2 - q2) * n2
    if r == 0.0:  # a corner: the point itself
        return -h, y0, y1, y2
    if r < 0.0:
        if r == ELLIPSOID_MARK:  # an exact ellipsoid
            return _ellipsoid_member(q0, q1, q2, n0, n1, n2, Rb, vgeo, v, y0, y1, y2)
        # a rim point of an exact cylinder
        return _rim_member(q0, q1, q2, n0, n1, n2, Rb, vgeo, v, y0, y1, y2)
    m0 = Rb[0, 0] * vgeo[v, 4] + Rb[0, 1] * vgeo[v, 5] + Rb[0, 2] * vgeo[v, 6]
    m1 = Rb[1, 0] * vgeo[v, 4] + Rb[1, 1] * vgeo[v, 5] + Rb[1, 2] * vgeo[v, 6]
    m2 = Rb[2, 0] * vgeo[v, 4] + Rb[2, 1] * vgeo[v, 5] + Rb[2, 2] * vgeo[v, 6]
    cb = -(m0 * n0 + m1 * n1 + m2 * n2)  # cos of the angle between the normal and -n
    cv = vgeo[v, 7]
    if cb >= cv:  # -n inside the cone: the sphere's lowest point
        return r - h, y0 - r * n0, y1 - r * n1, y2 - r * n2
    # the sphere's point at the edge of the cone, towards -n
    sv = vgeo[v, 8]
    t0 = -n0 - cb * m0
    t1 = -n1 - cb * m1
    t2 = -n2 - cb * m2
    tn = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if tn > 0.0:
        t0 /= tn
        t1 /= tn
        t2 /= tn
    e0 = y0 + r * (cv * m0 + sv * t0)
    e1 = y1 + r * (cv * m1 + sv * t1)
    e2 = y2 + r * (cv * m2 + sv * t2)
    return -((e0 - q0) * n0 + (e1 - q1) * n1 + (e2 - q2) * n2), e0, e1, e2


@njit_helper
def _deepest(ids, lo, hi, q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, vgeo, best, b0, b1, b2, bv):
    """The deepest of the member vertices ``ids[lo:hi]`` (:func:`_mesh_member`) and the best so
    far (overlap ``best``, point b, vertex ``bv``): a strictly deeper member wins (5-tuple)."""
    for i in range(lo, hi):
        v = ids[i]
        d, y0, y1, y2 = _mesh_member(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, vgeo, v)
        if d > best:
            best = d
            b0 = y0
            b1 = y1
            b2 = y2
            bv = v
    return best, b0, b1, b2, bv


#: At most this many faces are visited by :func:`_blend`'s walk (it starts at the deepest
#: member, next to where it ends: a few faces).
BLEND_WALK = 64


@njit_helper
def _blend(u0, u1, u2, v, vgeo, vface_start, vface, ftri, fnbr):
    """Where the smooth region around member vertex row ``v`` has the direction ``u`` (shape
    frame, unit) as its outward normal: the region face whose vertex normals (vgeo[:, 4:7])
    span ``u`` (u = sum w_i n_i, all w_i >= 0), found by a walk over the region's faces from a
    face around ``v`` (each move across the edge of the most negative weight), and the
    weights' blend of the three vertices' spheres: (found, centre (3), radius) in the shape
    frame. Continuous in ``u`` (two faces give the same blend on their shared edge). Not found
    (a vertex without region faces, ``u`` beyond the region's edge): found = False."""
    lo = vface_start[v]
    if lo == vface_start[v + 1]:
        return False, 0.0, 0.0, 0.0, 0.0
    f = vface[lo]
    for _ in range(BLEND_WALK):
        a = ftri[f, 0]
        b = ftri[f, 1]
        c = ftri[f, 2]
        # u = wa na + wb nb + wc nc (Cramer's rule)
        ax, ay, az = vgeo[a, 4], vgeo[a, 5], vgeo[a, 6]
        bx, by, bz = vgeo[b, 4], vgeo[b, 5], vgeo[b, 6]
        cx, cy, cz = vgeo[c, 4], vgeo[c, 5], vgeo[c, 6]
        det = (ax * (by * cz - bz * cy) - bx * (ay * cz - az * cy) + cx * (ay * bz - az * by))
        if not det > 0.0:
            return False, 0.0, 0.0, 0.0, 0.0
        wa = (u0 * (by * cz - bz * cy) - bx * (u1 * cz - u2 * cy)
              + cx * (u1 * bz - u2 * by)) / det
        wb = (ax * (u1 * cz - u2 * cy) - u0 * (ay * cz - az * cy)
              + cx * (ay * u2 - az * u1)) / det
        wc = (ax * (by * u2 - bz * u1) - bx * (ay * u2 - az * u1)
              + u0 * (ay * bz - az * by)) / det
        k = 0
        wmin = wa
        if wb < wmin:
            k = 1
            wmin = wb
        if wc < wmin:
            k = 2
            wmin = wc
        if wmin >= 0.0:
            sw = wa + wb + wc
            wa /= sw
            wb /= sw
            wc /= sw
            return (True, wa * vgeo[a, 0] + wb * vgeo[b, 0] + wc * vgeo[c, 0],
                    wa * vgeo[a, 1] + wb * vgeo[b, 1] + wc * vgeo[c, 1],
                    wa * vgeo[a, 2] + wb * vgeo[b, 2] + wc * vgeo[c, 2],
                    wa * vgeo[a, 3] + wb * vgeo[b, 3] + wc * vgeo[c, 3])
        f = fnbr[f, k]  # across the edge opposite the vertex of the most negative weight
        if f < 0:
            return False, 0.0, 0.0, 0.0, 0.0
    return False, 0.0, 0.0, 0.0, 0.0


@njit_helper
def _vertex_support(u0, u1, u2, vgeo, v):
    """u . x_v of member vertex row ``v`` in the shape frame (m): its vertex x_v = c + r m
    (centre, radius and normal of its sphere; a corner's centre, r = 0)."""
    r = vgeo[v, 3]
    return ((vgeo[v, 0] + r * vgeo[v, 4]) * u0 + (vgeo[v, 1] + r * vgeo[v, 5]) * u1
            + (vgeo[v, 2] + r * vgeo[v, 6]) * u2)


@njit_helper
def _region_support(u0, u1, u2, vgeo, fvert, lo, hi, nbr_start, nbr, climb, bv, v0):
    """The support of a smooth region's vertices in the direction ``u`` (shape frame, unit):
    max over its members of u . x_v (m). A scanned region (``climb`` False) over its members
    ``fvert[lo:hi]``; a climbed one by a steepest ascent along its edges (``nbr``) from member
    ``bv`` (the deepest member of the sphere model, next to the deepest vertex)."""
    if not climb:
        s = -np.inf
        for i in range(lo, hi):
            d = _vertex_support(u0, u1, u2, vgeo, fvert[i])
            if d > s:
                s = d
        return s
    best = -np.inf
    for start in (bv, v0):
        at = start
        s = _vertex_support(u0, u1, u2, vgeo, at)
        while True:
            nxt = at
            for i in range(nbr_start[at], nbr_start[at + 1]):
                d = _vertex_support(u0, u1, u2, vgeo, nbr[i])
                if d > s:
                    s = d
                    nxt = nbr[i]
            if nxt == at:
                break
            at = nxt
        if s > best:
            best = s
    return best


@njit_helper
def mesh_feature_point(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, ms, g):
    """Mesh plane feature ``g`` (a global feature row) against the half-space (surface point q,
    outward unit normal n): (point (3), normal (3), delta, vertex row) as an 8-tuple.

    ``ms`` = (first feature row per shape, fstart, fvert, vgeo, fclimb, dtab, dirs, nbr_start,
    nbr, vface_start, vface, ftri, fnbr, fslack) (:class:`mbplugin.contact.mesh.MeshSet`). Each
    member vertex row v of ``vgeo`` (V, 9) holds the vertex's local surface model in the shape
    frame: centre (3) and radius r of a sphere, its unit normal (3), and the cosine and sine of
    the half-angle of the cone of normals it covers. A sharp corner has r = 0 and its centre at
    the vertex: a point, placed as :func:`box_corner` (x = c + Rb v), with :func:`plane_point`.
    A smooth vertex is the sphere of centre x_c = c + Rb v_c, radius r (as :func:`plane_sphere`:
    delta = r - (x_c - q).n) while the direction -n lies in its cone; beyond, the sphere's point
    at the edge of the cone nearest -n (continuous at the edge). A member with r < 0 is a point
    of an exact cylinder's rim (:func:`_rim_member`), or, r = :data:`ELLIPSOID_MARK`, an exact
    ellipsoid (:func:`_ellipsoid_member`). A corner feature is its vertex.
    A smooth region's member of largest delta is found over ``fvert[fstart[g]:fstart[g + 1]]``,
    or, for a large region (``fclimb[g]`` >= 0), by a steepest ascent along the region's edges
    (``nbr``) from the support vertex (``dtab``) of the nearest of the table directions ``dirs``
    to -n in the shape frame: on a convex region the same member, in a few dozen evaluations
    instead of all. The region's contact is then the sphere blended from the spheres of the face
    whose vertex normals span -n (:func:`_blend`, the region faces ``ftri`` with their
    neighbours ``fnbr`` and the faces around each vertex ``vface``): its overlap and lowest
    point move continuously as the body turns (the deepest member's own sphere, on a surface
    that is no sphere, would jump by up to an edge between members); the member's sphere where
    no region face spans -n. A region that is no tessellated sphere (``fslack[g]`` finite,
    :func:`mbplugin.contact.mesh.region_slack`: a free-form patch whose fitted spheres bulge
    beyond its faces) is then never deeper than its deepest vertex plus that slack, its chordal
    error (the hull the host collides with; the point is moved along n by the excess): the
    vertices' support in -n, a scan of its members or, climbed, the better of two steepest
    ascents along its edges, from the deepest member and from the table's start.
    """
    fstart, fvert, vgeo, fclimb, dtab, dirs, nbr_start, nbr = (ms[1], ms[2], ms[3], ms[4],
                                                               ms[5], ms[6], ms[7], ms[8])
    ct = fclimb[g]
    # -n in the shape frame (Rb^T (-n))
    u0 = -(Rb[0, 0] * n0 + Rb[1, 0] * n1 + Rb[2, 0] * n2)
    u1 = -(Rb[0, 1] * n0 + Rb[1, 1] * n1 + Rb[2, 1] * n2)
    u2 = -(Rb[0, 2] * n0 + Rb[1, 2] * n1 + Rb[2, 2] * n2)
    v0 = -1
    if ct < 0:
        _, b0, b1, b2, bv = _deepest(fvert, fstart[g], fstart[g + 1], q0, q1, q2, n0, n1, n2,
                                     c0, c1, c2, Rb, vgeo, -np.inf, 0.0, 0.0, 0.0, -1)
    else:
        # the nearest table direction to -n, that direction's support vertex, then up the
        # region's edges while a neighbour is deeper
        kd = 0
        dmax = -np.inf
        for k in range(dirs.shape[0]):
            dd = dirs[k, 0] * u0 + dirs[k, 1] * u1 + dirs[k, 2] * u2
            if dd > dmax:
                dmax = dd
                kd = k
        bv = dtab[ct + kd]
        v0 = bv
        best, b0, b1, b2 = _mesh_member(q0, q1, q2, n0, n1, n2, c0, c1, c2, Rb, vgeo, bv)
        while True:
            at = bv
            best, b0, b1, b2, bv = _deepest(nbr, nbr_start[at], nbr_start[at + 1], q0, q1, q2,
                                            n0, n1, n2, c0, c1, c2, Rb, vgeo, best, b0, b1, b2,
                                            at)
            if bv == at:
                break
    if vgeo[bv, 3] > 0.0:  # a smooth region: the blended sphere where -n is
        ok, l0, l1, l2, r = _blend(u0, u1, u2, bv, vgeo, ms[9], ms[10], ms[11], ms[12])
        if ok:
            y0 = c0 + Rb[0, 0] * l0 + Rb[0, 1] * l1 + Rb[0, 2] * l2
            y1 = c1 + Rb[1, 0] * l0 + Rb[1, 1] * l1 + Rb[1, 2] * l2
            y2 = c2 + Rb[2, 0] * l0 + Rb[2, 1] * l1 + Rb[2, 2] * l2
            b0 = y0 - r * n0
            b1 = y1 - r * n1
            b2 = y2 - r * n2
        slack = ms[13][g]
        if slack < np.inf:
            # a free-form region (no tessellated sphere): never deeper than its deepest vertex
            # (the hull the host collides with) plus its chordal error: its fitted spheres
            # bulge r (1 - cos a) beyond the faces at an angle a from a vertex's normal (up to
            # 8 mm on the hulls of pybullet_data's robot links, issue 18)
            cap = ((q0 - c0) * n0 + (q1 - c1) * n1 + (q2 - c2) * n2 + slack
                   + _region_support(u0, u1, u2, vgeo, fvert, fstart[g], fstart[g + 1],
                                     nbr_start, nbr, ct >= 0, bv, v0))
            over = (q0 - b0) * n0 + (q1 - b1) * n1 + (q2 - b2) * n2 - cap
            if over > 0.0:
                b0 += over * n0
                b1 += over * n1
                b2 += over * n2
    t = plane_point(q0, q1, q2, n0, n1, n2, b0, b1, b2)
    return t[0], t[1], t[2], t[3], t[4], t[5], t[6], bv


@njit_helper
def plane_frame(Rw, c0, c1, c2, pn, pp):
    """World surface point and unit normal of a plane shape (local normal ``pn``, local point
    ``pp``) at the world pose (Rw, c)."""
    n0 = Rw[0, 0] * pn[0] + Rw[0, 1] * pn[1] + Rw[0, 2] * pn[2]
    n1 = Rw[1, 0] * pn[0] + Rw[1, 1] * pn[1] + Rw[1, 2] * pn[2]
    n2 = Rw[2, 0] * pn[0] + Rw[2, 1] * pn[1] + Rw[2, 2] * pn[2]
    q0 = c0 + Rw[0, 0] * pp[0] + Rw[0, 1] * pp[1] + Rw[0, 2] * pp[2]
    q1 = c1 + Rw[1, 0] * pp[0] + Rw[1, 1] * pp[1] + Rw[1, 2] * pp[2]
    q2 = c2 + Rw[2, 0] * pp[0] + Rw[2, 1] * pp[1] + Rw[2, 2] * pp[2]
    return q0, q1, q2, n0, n1, n2


@njit_helper
def point_velocity(bi, p0, p1, p2, pos, vel, omega_w):
    """(r, v) of the material point P of body ``bi`` (-1: the world, at rest, r = P):
    r = P - x_cm, v = v_cm + omega x r (6-tuple)."""
    if bi < 0:
        return p0, p1, p2, 0.0, 0.0, 0.0
    r0 = p0 - pos[bi, 0]
    r1 = p1 - pos[bi, 1]
    r2 = p2 - pos[bi, 2]
    return (r0, r1, r2,
            vel[bi, 0] + omega_w[bi, 1] * r2 - omega_w[bi, 2] * r1,
            vel[bi, 1] + omega_w[bi, 2] * r0 - omega_w[bi, 0] * r2,
            vel[bi, 2] + omega_w[bi, 0] * r1 - omega_w[bi, 1] * r0)


@njit_helper
def contact_kinematics(ba, bb, p0, p1, p2, n0, n1, n2, pos, vel, omega_w):
    """Kinematics of a contact at P with normal n (a to b): (ra, rb, ddelta, vt) as a 10-tuple.

    ddelta = -n . (v_b(P) - v_a(P)) (> 0 approaching), vt the tangential relative velocity.
    """
    ra0, ra1, ra2, va0, va1, va2 = point_velocity(ba, p0, p1, p2, pos, vel, omega_w)
    rb0, rb1, rb2, vb0, vb1, vb2 = point_velocity(bb, p0, p1, p2, pos, vel, omega_w)
    w0 = vb0 - va0
    w1 = vb1 - va1
    w2 = vb2 - va2
    vn = w0 * n0 + w1 * n1 + w2 * n2
    return (ra0, ra1, ra2, rb0, rb1, rb2, -vn, w0 - vn * n0, w1 - vn * n1, w2 - vn * n2)


@njit
def contact_kinematics_batch(a, b, point, normal, pos, vel, omega_w, inv_m, inv_i, ra, rb, ddelta,
                             vt, m_eff):
    """:func:`contact_kinematics` and :func:`effective_mass` of every contact, written into
    ``ra``, ``rb`` (K, 3), ``ddelta`` (K,), ``vt`` (K, 3) and ``m_eff`` (K,). ``pos``, ``vel``,
    ``omega_w`` are the bodies' arrays, ``inv_m`` (N + 1,) and ``inv_i`` (N + 1, 3, 3) as
    :func:`effective_mass` takes them. (One compiled call: a function Python calls is compiled
    as an entry of its own, docs/architecture.md "What a first run compiles".)"""
    for k in range(a.shape[0]):
        t = contact_kinematics(a[k], b[k], point[k, 0], point[k, 1], point[k, 2], normal[k, 0],
                               normal[k, 1], normal[k, 2], pos, vel, omega_w)
        ra[k, 0] = t[0]
        ra[k, 1] = t[1]
        ra[k, 2] = t[2]
        rb[k, 0] = t[3]
        rb[k, 1] = t[4]
        rb[k, 2] = t[5]
        ddelta[k] = t[6]
        vt[k, 0] = t[7]
        vt[k, 1] = t[8]
        vt[k, 2] = t[9]
        m_eff[k] = effective_mass(a[k], b[k], ra[k, 0], ra[k, 1], ra[k, 2], rb[k, 0], rb[k, 1],
                                  rb[k, 2], normal[k, 0], normal[k, 1], normal[k, 2], inv_m,
                                  inv_i)


@njit_helper
def world_inverse_inertia(R, inv_ib, out):
    """World-frame inverse inertia R I_body^-1 R^T (3, 3) of a body with rotation ``R`` and
    body-frame inverse inertia ``inv_ib``, written into ``out``."""
    for i in range(3):
        a0 = R[i, 0] * inv_ib[0, 0] + R[i, 1] * inv_ib[1, 0] + R[i, 2] * inv_ib[2, 0]
        a1 = R[i, 0] * inv_ib[0, 1] + R[i, 1] * inv_ib[1, 1] + R[i, 2] * inv_ib[2, 1]
        a2 = R[i, 0] * inv_ib[0, 2] + R[i, 1] * inv_ib[1, 2] + R[i, 2] * inv_ib[2, 2]
        for j in range(3):
            out[i, j] = a0 * R[j, 0] + a1 * R[j, 1] + a2 * R[j, 2]


@njit
def state_all_valid(pos, quat, vel, omega, mass, inv_inertia):
    """One pass over a body state (N rows): True when every position, quaternion, velocity and
    inverse-inertia value is finite, every quaternion's squared norm is >= 1e-23 and every mass
    finite and > 0. A fast accept for :meth:`mbplugin.contact.BodyState.validate` (False: its
    detailed checks decide)."""
    for i in range(pos.shape[0]):
        for a in range(3):
            if not (math.isfinite(pos[i, a]) and math.isfinite(vel[i, a])
                    and math.isfinite(omega[i, a])):
                return False
        s = 0.0
        for a in range(4):
            q = quat[i, a]
            if not math.isfinite(q):
                return False
            s += q * q
        if not s >= 1e-23:
            return False
        m = mass[i]
        if not (m > 0.0 and m < math.inf):
            return False
        for a in range(3):
            for b in range(3):
                if not math.isfinite(inv_inertia[i, a, b]):
                    return False
    return True


@njit
def world_inverse_inertia_ext(rot, inv_ib, fixed, out):
    """:func:`world_inverse_inertia` of N bodies into ``out`` (N + 1, 3, 3), zero for fixed
    bodies and for the last (world) row; ``rot`` has at least N rows."""
    out[:] = 0.0
    for b in range(inv_ib.shape[0]):
        if not fixed[b]:
            world_inverse_inertia(rot[b], inv_ib[b], out[b])


@njit
def world_inverse_inertia_of(quat, inv_ib, fixed):
    """The world-frame inverse inertia (N + 1, 3, 3) of N bodies at orientations ``quat``
    (N, 4) [w, x, y, z] (:func:`quat_matrices`, the world row's identity appended, then
    :func:`world_inverse_inertia_ext`: ``BodyState.inv_inertia_world_ext`` of
    ``rotations_ext``, the same bits), 1/(kg m^2)."""
    n = quat.shape[0]
    rot = np.empty((n + 1, 3, 3))
    quat_matrices(quat, rot[:n])
    for i in range(3):
        for j in range(3):
            rot[n, i, j] = 1.0 if i == j else 0.0
    out = np.empty((n + 1, 3, 3))
    world_inverse_inertia_ext(rot, inv_ib, fixed, out)
    return out


@njit_helper
def _along(bi, r0, r1, r2, n0, n1, n2, inv_m, inv_i):
    """1/m + (r x n) . I_w^-1 (r x n) of body ``bi`` (``inv_m`` (N + 1,), ``inv_i`` (N + 1, 3,
    3) world frame, with zero rows for fixed bodies and a last zero row for the world, -1)."""
    c0 = r1 * n2 - r2 * n1
    c1 = r2 * n0 - r0 * n2
    c2 = r0 * n1 - r1 * n0
    w = inv_m[bi]
    w += c0 * (inv_i[bi, 0, 0] * c0 + inv_i[bi, 0, 1] * c1 + inv_i[bi, 0, 2] * c2)
    w += c1 * (inv_i[bi, 1, 0] * c0 + inv_i[bi, 1, 1] * c1 + inv_i[bi, 1, 2] * c2)
    w += c2 * (inv_i[bi, 2, 0] * c0 + inv_i[bi, 2, 1] * c1 + inv_i[bi, 2, 2] * c2)
    return w


@njit_helper
def effective_mass(ba, bb, ra0, ra1, ra2, rb0, rb1, rb2, n0, n1, n2, inv_m, inv_i):
    """Effective mass (kg) of a contact along its normal n, rotational inertia included:
    m_eff = 1 / (1/m_a + 1/m_b + (r_a x n) . I_a^-1 (r_a x n) + (r_b x n) . I_b^-1 (r_b x n))
    with the world-frame inverse inertias I^-1 = R I_body^-1 R^T: the inverse of the normal
    component of the two bodies' impulse response at the contact point (rigid-body impulse
    dynamics; for two free point masses Corral et al. 2021, Eq. 5.14, m1 m2 / (m1 + m2)); inf
    when neither body can move."""
    w = (_along(ba, ra0, ra1, ra2, n0, n1, n2, inv_m, inv_i)
         + _along(bb, rb0, rb1, rb2, n0, n1, n2, inv_m, inv_i))
    return 1.0 / w if w > 0.0 else np.inf


@njit
def sphere_sphere_batch(ca, ra, cb, rb, point, normal, delta):
    """:func:`sphere_sphere` of every row, written into the output arrays."""
    for k in range(ca.shape[0]):
        t = sphere_sphere(ca[k, 0], ca[k, 1], ca[k, 2], ra[k], cb[k, 0], cb[k, 1], cb[k, 2], rb[k])
        _put(k, t, point, normal, delta)


@njit
def plane_sphere_batch(p0, pn, c, r, point, normal, delta):
    """:func:`plane_sphere` of every row, written into the output arrays."""
    for k in range(c.shape[0]):
        t = plane_sphere(p0[k, 0], p0[k, 1], p0[k, 2], pn[k, 0], pn[k, 1], pn[k, 2], c[k, 0],
                         c[k, 1], c[k, 2], r[k])
        _put(k, t, point, normal, delta)


@njit
def plane_box_batch(p0, pn, cb, Rb, h, point, normal, delta):
    """The 8 corners of every box against its plane: outputs (K, 8, ...) (feature = corner)."""
    for k in range(cb.shape[0]):
        for f in range(8):
            x0, x1, x2 = box_corner(cb[k, 0], cb[k, 1], cb[k, 2], Rb[k], h[k, 0], h[k, 1],
                                    h[k, 2], f)
            t = plane_point(p0[k, 0], p0[k, 1], p0[k, 2], pn[k, 0], pn[k, 1], pn[k, 2], x0, x1,
                            x2)
            for j in range(3):
                point[k, f, j] = t[j]
                normal[k, f, j] = t[3 + j]
            delta[k, f] = t[6]


@njit
def plane_mesh_batch(p0, pn, sid, cw, Rw, feat, ms, point, normal, delta, vert):
    """Mesh plane features against one half-space (surface point ``p0``, unit normal ``pn``):
    row k is feature ``feat[k]`` (global row) of mesh shape ``sid[k]`` at its world pose
    (``cw``, ``Rw``), :func:`mesh_feature_point` (``ms`` the mesh tuple), written into the
    output arrays with the deciding vertex's global row in ``vert``."""
    for k in range(sid.shape[0]):
        s = sid[k]
        t = mesh_feature_point(p0[0], p0[1], p0[2], pn[0], pn[1], pn[2], cw[s, 0], cw[s, 1],
                               cw[s, 2], Rw[s], ms, feat[k])
        _put(k, t, point, normal, delta)
        vert[k] = t[7]


@njit
def _put(k, t, point, normal, delta):
    point[k, 0] = t[0]
    point[k, 1] = t[1]
    point[k, 2] = t[2]
    normal[k, 0] = t[3]
    normal[k, 1] = t[4]
    normal[k, 2] = t[5]
    delta[k] = t[6]


def decode_keys(keys: np.ndarray, n_shapes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shape a, shape b, feature) of contact keys (inverse of :func:`encode_keys`)."""
    keys = np.asarray(keys, dtype=np.int64)
    feat = keys & (FEATURE_SPAN - 1)
    pair = keys >> FEATURE_BITS
    return pair // n_shapes, pair % n_shapes, feat


def encode_keys(sa: np.ndarray, sb: np.ndarray, feature: np.ndarray, n_shapes: int) -> np.ndarray:
    """Contact keys of (shape a, shape b, feature)."""
    return (np.asarray(sa, dtype=np.int64) * n_shapes + sb) * FEATURE_SPAN + feature


def equiv_radius(r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """Effective radius 1/(1/r1 + 1/r2) (inf = flat, a negative radius = concave side; NaN
    propagates; results <= 0 give NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(np.isinf(r1), 0.0, 1.0 / r1) + np.where(np.isinf(r2), 0.0, 1.0 / r2)
        out = np.where(inv > 0, 1.0 / inv, np.nan)
    return out


@njit
def shape_poses(body, lpos, lrot, pos, R, Rw, cw):
    """World rotation (S, 3, 3) and centre (S, 3) of every shape (see :func:`shape_pose`)."""
    for s in range(body.shape[0]):
        c = shape_pose(s, body, lpos, lrot, pos, R, Rw[s])
        cw[s, 0] = c[0]
        cw[s, 1] = c[1]
        cw[s, 2] = c[2]
