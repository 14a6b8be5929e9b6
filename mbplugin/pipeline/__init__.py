"""The contact pipeline shared by every driver (impact analyser, standalone engine, PyBullet).

See ``docs/architecture.md`` ("The pipeline") and DESIGN.md "One pipeline, three drivers".

* :mod:`mbplugin.pipeline.rules` - the contact rules (onset, clipping, end of contact, the
  separated latch) as compiled scalar functions, written once.
* :mod:`mbplugin.pipeline.batch` - ``ContactBatch``: the contacts of one evaluation, as arrays.
* :mod:`mbplugin.pipeline.store` - ``ContactStore``: persistent contacts, onset/separation
  events, per-contact law state (re-exported by :mod:`mbplugin.contact`).
* :mod:`mbplugin.pipeline.pairs` - law forces, the rules, friction and the per-body wrenches of
  known contact pairs (their geometry is narrow phase: :mod:`mbplugin.contact.pairs`).
* :mod:`mbplugin.pipeline.dop853` - Dormand-Prince 8(5,3) tables, step control, dense output and
  the compiled step of any problem; :mod:`mbplugin.pipeline.radau` - the compiled Radau IIA core;
  :mod:`mbplugin.pipeline.ivp` - the problem registry, initial step and stiffness rule they share;
  :mod:`mbplugin.pipeline.events` - the event root finder and crossing convention. Used by the
  analyser, the engine (:mod:`mbplugin.dynamics.compiled`) and the hosts' sub-stepper; the
  pipeline never imports the engine.

Layering (``tests/test_layering.py``): this package imports :mod:`mbplugin.laws` (and the error
types and JIT shim) and never :mod:`mbplugin.contact`, :mod:`mbplugin.dynamics` or the host
packages; they import it. Geometry reaches it as arrays.
"""
