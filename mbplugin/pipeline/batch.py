"""ContactBatch: what the detection layer hands to the force laws, as a structure of arrays.

One batch holds the N contacts found in one evaluation of the bodies' state. Every field is an
array aligned with the contacts; nothing is a Python object per contact.

Conventions (project wide): the unit ``normal`` points from body ``a`` to body ``b``;
``delta >= 0`` is the penetration depth; ``ddelta = -n . (v_b(P) - v_a(P)) > 0`` while the bodies
approach (v + omega x r at the contact point, rotation included); a positive normal force F pushes
``b`` along +n and ``a`` along -n.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass
class ContactBatch:
    """Per-contact arrays (N contacts).

    ``a``, ``b``       int64 (N,): body indices; -1 stands for static world geometry
    ``key``            int64 (N,): stable feature key, unique per (a, b, feature) and the same
                       from one step to the next while the contact persists
    ``point``          (N, 3): contact point in world coordinates (m)
    ``normal``         (N, 3): unit normal from a to b
    ``delta``          (N,): indentation (m), >= 0 for a touching pair
    ``ddelta``         (N,): indentation rate (m/s), > 0 approaching
    ``vt``             (N, 3): relative tangential velocity of b w.r.t. a at the point (m/s)
    ``m_eff``          (N,): effective mass along the normal, rotational inertia included (kg)
    ``r_eff``          (N,): effective radius (m); NaN where the geometry gives none
    ``ra``, ``rb``     (N, 3): contact point relative to the centres of mass of a and b (m)

    Optional fields (added by the detection layer; default when not given):

    ``law``            int64 (N,): index of the contact's law in the list the
                       :class:`~mbplugin.pipeline.store.ContactStore` was built with (default 0)
    ``k_hertz``        (N,): Hertz stiffness (4/3) E* sqrt(r_eff) (N/m^1.5) from the two
                       materials, used by laws assigned without a ``k`` (default NaN: unknown)
    """

    a: np.ndarray
    b: np.ndarray
    key: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    delta: np.ndarray
    ddelta: np.ndarray
    vt: np.ndarray
    m_eff: np.ndarray
    r_eff: np.ndarray
    ra: np.ndarray
    rb: np.ndarray
    law: np.ndarray | None = None
    k_hertz: np.ndarray | None = None

    def __post_init__(self) -> None:
        d = self.delta
        n = d.shape[0] if type(d) is np.ndarray else int(np.shape(d)[0])
        if self.law is None:
            self.law = np.zeros(n, dtype=np.int64)
        if self.k_hertz is None:
            self.k_hertz = np.full(n, np.nan)

    def __len__(self) -> int:
        return int(self.delta.shape[0])

    @classmethod
    def empty(cls) -> ContactBatch:
        """A batch with no contacts."""
        z1 = np.zeros(0)
        z3 = np.zeros((0, 3))
        zi = np.zeros(0, dtype=np.int64)
        return cls(zi, zi.copy(), zi.copy(), z3, z3.copy(), z1, z1.copy(), z3.copy(), z1.copy(),
                   z1.copy(), z3.copy(), z3.copy())

    @classmethod
    def concatenate(cls, batches: list[ContactBatch]) -> ContactBatch:
        """Join several batches (e.g. one per pair type) into one."""
        if not batches:
            return cls.empty()
        return cls(*(np.concatenate([getattr(b, f.name) for b in batches]) for f in fields(cls)))

    def take(self, index: np.ndarray) -> ContactBatch:
        """The sub-batch of the contacts selected by ``index`` (boolean mask or indices)."""
        return type(self)(*(getattr(self, f.name)[index] for f in fields(self)))
