"""Unit quaternions of the engine: re-exported from :mod:`mbplugin.contact.rotation` (one
place; the host backends use it too)."""

from mbplugin.contact.rotation import (  # noqa: F401
    quat_from_euler_xyz,
    quat_from_rotvec,
    quat_integrate,
    quat_multiply,
    quat_normalize,
    quat_rate,
    quat_to_matrix,
    rotate,
    rotate_transpose,
)
