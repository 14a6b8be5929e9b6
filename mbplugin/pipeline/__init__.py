"""The contact pipeline shared by every driver (impact analyser, standalone engine, PyBullet).

See ``docs/architecture.md`` ("The pipeline") and DESIGN.md "One pipeline, three drivers".

* :mod:`mbplugin.pipeline.rules` - the contact rules (onset, clipping, end of contact, the
  separated latch) as compiled scalar functions, written once.
* :mod:`mbplugin.pipeline.pairs` - known contact pairs of primitive shapes: geometry and
  kinematics through the narrow phase's compiled scalar kernels, law forces, friction and the
  per-body wrenches, in one compiled loop.
* :mod:`mbplugin.pipeline.dop853` - Dormand-Prince 8(5,3) tables, step control, dense output and
  the compiled step of any problem; :mod:`mbplugin.pipeline.radau` - the compiled Radau IIA core;
  :mod:`mbplugin.pipeline.ivp` - the problem registry, initial step and stiffness rule they share;
  :mod:`mbplugin.pipeline.events` - the event root finder and crossing convention. Used by the
  analyser, the engine (:mod:`mbplugin.dynamics.compiled`) and the hosts' sub-stepper; the
  pipeline never imports the engine.

This package imports :mod:`mbplugin.laws` and :mod:`mbplugin.contact`; the contact store imports
only :mod:`mbplugin.pipeline.rules` (which imports nothing but the laws), so importing either
package first works.
"""
