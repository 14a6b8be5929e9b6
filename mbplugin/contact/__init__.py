"""Contact detection: shapes, materials, narrow and broad phase, persistent contacts.

See :mod:`mbplugin.contact.batch` for the data the detection layer hands to the force laws.
"""

from mbplugin.contact.batch import ContactBatch
from mbplugin.contact.materials import effective_modulus, effective_radius, hertz_stiffness

__all__ = ["ContactBatch", "effective_modulus", "effective_radius", "hertz_stiffness"]
