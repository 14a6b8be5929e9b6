"""mbplugin: compliant contact force laws as a swappable, validated part of multibody simulation.

The main entry points:

- :mod:`mbplugin.laws` -- the force-law catalogue and registry (``make_law``);
- :func:`mbplugin.impact.impact` -- an isolated binary collinear impact, solved with exact
  location of the contact events;
- the ``mbplugin`` command line (``mbplugin --help``).
"""

from __future__ import annotations

__version__ = "0.1.0"
