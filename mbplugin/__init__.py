"""mbplugin: compliant contact force laws as a swappable, validated part of multibody simulation.

The main entry points:

- :mod:`mbplugin.laws` -- the force-law catalogue and registry (``make_law``);
- :func:`mbplugin.impact.impact` -- an isolated binary collinear impact, solved with exact
  location of the contact events;
- :func:`mbplugin.calibrate` (also :func:`mbplugin.impact.calibrate`) -- the damping value that
  makes a law reproduce a target c_r in that impact;
- :func:`mbplugin.compile_notice` -- a one-line notice on stderr while a first run compiles
  (the command line prints it by itself);
- the ``mbplugin`` command line (``mbplugin --help``).
"""

from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """Lazy top-level names (importing :mod:`mbplugin` alone stays light)."""
    if name in ("calibrate", "Calibration"):
        from mbplugin import impact

        return getattr(impact, name)
    if name == "compile_notice":
        from mbplugin._notice import compile_notice

        return compile_notice
    raise AttributeError(f"module 'mbplugin' has no attribute {name!r}")
