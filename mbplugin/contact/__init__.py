"""Contact detection: shapes, materials, narrow and broad phase, the contact model.

* :mod:`~mbplugin.contact.bodies`  ``BodyState``: the rigid-body state the detection reads
* :mod:`~mbplugin.contact.shapes`  shapes (sphere, plane, box, capsule, holes) and ``Material``
* :mod:`~mbplugin.contact.mesh`    triangle meshes (trimesh) and the mesh pairs
* :mod:`~mbplugin.contact.cylinder` the exact cylinder (a mesh whose plane contacts are its rims)
* :mod:`~mbplugin.contact.ellipsoid` the exact ellipsoid (a mesh whose plane contact is its
  exact deepest point, Hertz's radius there)
* :mod:`~mbplugin.contact.narrow`  closed-form narrow phase of the primitive pairs
* :mod:`~mbplugin.contact.broad`   broad phase (k-d tree on bounding spheres)
* :mod:`~mbplugin.contact.model`   ``ContactModel``: shapes on bodies, pair laws, ``detect``
* :mod:`~mbplugin.contact.pairs`   known pairs of primitive shapes: geometry and kinematics
  through the narrow phase's compiled scalar kernels (the engine's compiled path)

The per-contact data live in :mod:`mbplugin.pipeline` (``contact -> pipeline`` is the allowed
direction, never the reverse: ``tests/test_layering.py``) and are re-exported here (public API):
:class:`~mbplugin.pipeline.batch.ContactBatch` (the contacts of one evaluation, as arrays) and
:class:`~mbplugin.pipeline.store.ContactStore` (persistence, onset/separation, law state).
"""

from mbplugin.contact.bodies import BodyState, axis_angle_quat, quat_to_matrix
from mbplugin.contact.cylinder import Cylinder
from mbplugin.contact.ellipsoid import Ellipsoid
from mbplugin.contact.materials import effective_modulus, effective_radius, hertz_stiffness
from mbplugin.contact.mesh import Mesh
from mbplugin.contact.model import ContactModel, as_pair_law
from mbplugin.contact.shapes import (
    Box,
    Capsule,
    CylindricalHole,
    Material,
    Plane,
    Sphere,
    SphericalHole,
)
from mbplugin.pipeline.batch import ContactBatch
from mbplugin.pipeline.store import (
    BOUNCE_DTYPE,
    EVENT_DTYPE,
    AlignedContacts,
    ContactStore,
    PairLaw,
)

__all__ = [
    "BOUNCE_DTYPE",
    "EVENT_DTYPE",
    "AlignedContacts",
    "BodyState",
    "Box",
    "Capsule",
    "ContactBatch",
    "ContactModel",
    "ContactStore",
    "Cylinder",
    "CylindricalHole",
    "Ellipsoid",
    "Material",
    "Mesh",
    "PairLaw",
    "Plane",
    "Sphere",
    "SphericalHole",
    "as_pair_law",
    "axis_angle_quat",
    "effective_modulus",
    "effective_radius",
    "hertz_stiffness",
    "quat_to_matrix",
]
