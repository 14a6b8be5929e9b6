"""The contact pipeline shared by every driver (impact analyser, standalone engine, PyBullet).

See ``docs/architecture.md`` ("The pipeline") and DESIGN.md "One pipeline, three drivers".

* :mod:`mbplugin.pipeline.rules` - the contact rules (onset, clipping, end of contact, the
  separated latch) as compiled scalar functions, written once.
* :mod:`mbplugin.pipeline.batch` - ``ContactBatch``: the contacts of one evaluation, as arrays.
* :mod:`mbplugin.pipeline.store` - ``ContactStore``: persistent contacts, onset/separation
  events, per-contact law state (re-exported by :mod:`mbplugin.contact`).
* :mod:`mbplugin.pipeline.pairs` - law forces, the rules, friction and the per-body wrenches of
  known contact pairs (their geometry is narrow phase: :mod:`mbplugin.contact.pairs`).
* :mod:`mbplugin.pipeline.dop853` - Dormand-Prince 8(5,3) tables, step control and dense output
  shared by the compiled drivers (the analyser; the engine's :mod:`mbplugin.dynamics.compiled`).

Layering (``tests/test_layering.py``): this package imports :mod:`mbplugin.laws` (and the error
types and JIT shim) and never :mod:`mbplugin.contact`, :mod:`mbplugin.dynamics` or the host
packages; they import it. Geometry reaches it as arrays.
"""
