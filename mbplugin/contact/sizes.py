"""Sizes of the bodies of a contact model (the overlap checks' yardstick)."""

from __future__ import annotations

from typing import Any

import numpy as np


def body_sizes(model: Any, n_bodies: int) -> np.ndarray:
    """(n_bodies,) each body's size (m): the largest distance from its centre of mass to the
    surface of its shapes (bounding radius plus offset); inf for a body with a plane or a hole
    (unbounded) and for bodies without shapes. ``model``: a
    :class:`~mbplugin.contact.ContactModel`."""
    c = model.arrays
    size = np.zeros(n_bodies)
    if not len(c.body):
        return np.full(n_bodies, np.inf)
    reach = np.linalg.norm(c.lpos + c.bound_center, axis=1) + c.bound
    own = (c.body >= 0) & (c.body < n_bodies)
    np.maximum.at(size, c.body[own], reach[own])
    has = np.zeros(n_bodies, dtype=bool)
    has[c.body[own]] = True
    return np.where(has, size, np.inf)


#: the fraction of a part's width along the contact normal beyond which an overlap is not a
#: contact (module docstring of :func:`overlap_limits`): past the mid-plane of the thinner part
#: the nearest way out is through its far side, the normal flips and the law pushes the wrong way
WIDTH_OVERLAP = 0.5


class ShapeWidths:
    """The widths of a contact model's shapes along a direction: ``w(n) = h(n) + h(-n)`` (m),
    ``h`` the support function of the convex shape (of its hull for a mesh). Closed forms:
    sphere ``2 r``; capsule (axis local z) ``2 (r + l |n_z|)``; box ``2 sum_i a_i |n_i|``;
    cylinder (:class:`~mbplugin.contact.cylinder.Cylinder`, axis local z)
    ``2 (l |n_z| + r sqrt(1 - n_z^2))``; ellipsoid
    (:class:`~mbplugin.contact.ellipsoid.Ellipsoid`) ``2 sqrt(n^T A^2 n)``; any other mesh (a
    hull, a V-HACD part) ``max_v v.n - min_v v.n`` over its vertices (the shape the contact
    layer collides); planes and holes (half-spaces, concave): inf. A shape's ``skin``
    (ContactModel.add_shape) adds ``2 skin``. ``model``: a
    :class:`~mbplugin.contact.ContactModel` (its arrays as they are now)."""

    def __init__(self, model: Any) -> None:
        from mbplugin.contact.cylinder import Cylinder
        from mbplugin.contact.model import BOX, CAPSULE, MESH, SPHERE

        c = model.arrays
        self.model, self.arrays = model, c
        n = c.n
        self.kind = c.kind
        self.cyl_r = np.full(n, np.nan)
        self.cyl_l = np.full(n, np.nan)
        self.meshes = [int(i) for i in np.flatnonzero(c.kind == MESH)]
        for i in list(self.meshes):
            s = model.shape(i)
            if isinstance(s, Cylinder):
                self.cyl_r[i], self.cyl_l[i] = s.cylinder_radius, s.half_length
        self.cylinder = np.isfinite(self.cyl_r)
        self.ell_axes = np.asarray(c.mesh.ellipsoid_axes)
        self.ellipsoid = np.isfinite(self.ell_axes[:, 0])
        self.meshes = [i for i in self.meshes if not (self.cylinder[i] or self.ellipsoid[i])]
        self._codes = (SPHERE, CAPSULE, BOX)

    def along(self, sid: np.ndarray, n_local: np.ndarray) -> np.ndarray:
        """(K,) the width (m) of shape ``sid[k]`` along the unit direction ``n_local[k]``
        (K, 3) given in the shape's own frame (class docstring)."""
        sphere, capsule, box = self._codes
        c = self.arrays
        sid = np.asarray(sid, dtype=np.int64)
        n = np.abs(np.asarray(n_local, dtype=float).reshape(-1, 3))
        k = self.kind[sid]
        w = np.full(len(sid), np.inf)
        m = k == sphere
        w[m] = 2.0 * c.radius[sid[m]]
        m = k == capsule
        w[m] = 2.0 * (c.radius[sid[m]] + c.half_length[sid[m]] * n[m, 2])
        m = k == box
        w[m] = 2.0 * np.einsum("ki,ki->k", c.half[sid[m]], n[m])
        m = self.cylinder[sid]
        nz = np.minimum(n[m, 2], 1.0)
        w[m] = 2.0 * (self.cyl_l[sid[m]] * nz + self.cyl_r[sid[m]] * np.sqrt(1.0 - nz * nz))
        m = self.ellipsoid[sid]
        if m.any():
            from mbplugin.contact.ellipsoid import support

            w[m] = 2.0 * support(self.ell_axes[sid[m]], n[m])
        if self.meshes:
            vs, vert = c.mesh.v_start, c.mesh.vertices
            nl = np.asarray(n_local, dtype=float).reshape(-1, 3)
            for i in self.meshes:  # a loop over the mesh shapes, each over its contacts
                at = np.flatnonzero(sid == i)
                if len(at):
                    proj = vert[vs[i]:vs[i + 1]] @ nl[at].T
                    w[at] = proj.max(axis=0) - proj.min(axis=0)
        return w + 2.0 * c.skin[sid]

    def of_contacts(self, bodies: Any, batch: Any,
                    unknown: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(wa, wb): the widths (m) of the two shapes of each contact of ``batch`` (a
        :class:`~mbplugin.pipeline.batch.ContactBatch` of this model's detection, shapes from
        its keys) along the contact's normal, the shapes posed by ``bodies``
        (:class:`~mbplugin.contact.BodyState`). ``unknown`` (n_bodies,) bool: bodies whose
        shapes the model does not hold exactly (a host's fallback shapes): width inf."""
        from mbplugin.contact.kernels import decode_keys

        c = self.arrays
        sa, sb, _ = decode_keys(batch.key, c.n)
        rot = bodies.rotations_ext()
        out = []
        for s in (sa, sb):
            R = np.matmul(rot[c.body[s]], c.lrot[s])  # shape frame -> world
            n_local = np.einsum("kji,kj->ki", R, batch.normal)
            w = self.along(s, n_local)
            if unknown is not None and len(unknown):
                bad = np.append(np.asarray(unknown, dtype=bool), False)[c.body[s]]
                w = np.where(bad, np.inf, w)
            out.append(w)
        return out[0], out[1]


def overlap_limits(model: Any, bodies: Any, batch: Any,
                   unknown: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The largest valid overlap (m) of each contact of ``batch``: :data:`WIDTH_OVERLAP` times
    the smaller width of its two shapes along its normal (:class:`ShapeWidths`), and the
    thinner shape's id. An overlap beyond it is not a
    contact: the bodies have passed into or through each other (a ball placed 6 mm into a 1 cm
    slab is past the slab's mid-plane, where the nearest way out is the far side: the normal
    flips and any law pushes it through). One rule for both hosts' construction checks and the
    engine's preflight."""
    from mbplugin.contact.kernels import decode_keys

    wa, wb = ShapeWidths(model).of_contacts(bodies, batch, unknown)
    c = model.arrays
    sa, sb, _ = decode_keys(batch.key, c.n)
    return WIDTH_OVERLAP * np.minimum(wa, wb), np.where(wb < wa, sb, sa)


class PassThroughWarning(UserWarning):
    """A managed contact's overlap passed half the width of a part mid-run (a body went into or
    through a thin part): the run goes on as before; its contacts of that pair mean nothing."""


def min_widths(model: Any) -> np.ndarray:
    """(S,) each shape's smallest width over all directions (m): sphere and capsule ``2 r``,
    box ``2 min(a_i)``, cylinder ``2 min(r, l)``, any other mesh its smallest width along its
    hull's face normals (where a thin plate's is); planes and holes inf; plus ``2 skin``."""
    from mbplugin.contact.model import BOX, CAPSULE, MESH, SPHERE

    c = model.arrays
    w = np.full(c.n, np.inf)
    k = c.kind
    m = (k == SPHERE) | (k == CAPSULE)
    w[m] = 2.0 * c.radius[m]
    w[k == BOX] = 2.0 * c.half[k == BOX].min(axis=1)
    widths = ShapeWidths(model)
    for i in np.flatnonzero(k == MESH).tolist():
        if widths.cylinder[i]:
            w[i] = 2.0 * min(widths.cyl_r[i], widths.cyl_l[i])
            continue
        hull = model.shape(i).trimesh.convex_hull
        normals = np.unique(np.round(np.asarray(hull.face_normals), 9), axis=0)
        proj = np.asarray(hull.vertices) @ normals.T
        w[i] = float(np.min(proj.max(axis=0) - proj.min(axis=0)))
    return w + 2.0 * c.skin


class OverlapWatch:
    """The per-step watch of a host backend for overlaps beyond :func:`overlap_limits` (a body
    driven into or through a thin part mid-run: a contact too soft for the impact, a fast body
    at the host's step). A step costs one comparison of its largest overlap with a bound (half
    the smallest width of any managed shape in any direction, computed at the first step);
    only a step above the bound computes the widths along its contacts' normals, and the
    first contact beyond its limit is reported once (:class:`PassThroughWarning`), the run
    left as it is."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.bound: float | None = None
        self.warned = False

    def deep(self, delta: np.ndarray | None) -> bool:
        """Whether a step's overlaps ``delta`` (m) need the exact test (cheap)."""
        if self.warned or delta is None:
            return False
        n = len(delta)
        if not n:
            return False
        if self.bound is None:
            self.bound = WIDTH_OVERLAP * float(np.min(min_widths(self.model), initial=np.inf))
        # a few contacts (a robot's feet, a ball): the list's max, ~0.2 us against ~1.2 us
        top = max(delta.tolist()) if n <= 16 else float(delta.max())
        return top > self.bound

    def check(self, bodies: Any, batch: Any, delta: np.ndarray, t: float,
              describe: Any, unknown: np.ndarray | None = None) -> None:
        """Warn (once) if an overlap ``delta`` (m, aligned with ``batch``: its normals and
        keys) exceeds its limit; ``describe(j)`` names contact j's two parts, ``t`` (s) the
        step's time."""
        import warnings

        lim, _ = overlap_limits(self.model, bodies, batch, unknown)
        over = delta > lim
        if not over.any():
            return
        j = int(np.argmax(np.where(over, delta / lim, -np.inf)))
        self.warned = True
        warnings.warn(
            f"{describe(j)}: their overlap reached {delta[j]:.4g} m in the host step from t = "
            f"{t:.6g} s, more than half the width of the thinner part along the contact normal "
            f"({lim[j]:.4g} m): a body went into or through the other (a thin part passed, or "
            "a ball sunk beyond its centre: a contact too soft for the impact, or a body too "
            "fast for the host's step); its contacts from here on mean nothing (a stiffer law, a "
            "thicker part or a smaller host step; said once)",
            PassThroughWarning, stacklevel=_user_level())


def _user_level() -> int:
    """The ``stacklevel`` of a warning raised in this function's caller that points at the
    first frame outside the package (the user's ``step()`` call)."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f, level = sys._getframe(1), 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(root):
        f, level = f.f_back, level + 1
    return level
