"""Moved: calibration lives beside the impact analyser it drives.

Use ``from mbplugin.impact import calibrate, Calibration, clear_cache`` (or
``from mbplugin import calibrate``); the module is :mod:`mbplugin.impact.calibration`.
``mbplugin.laws`` is the bottom layer of the package and imports nothing of the analyser.
"""

raise ImportError(
    "mbplugin.laws.calibrate moved to mbplugin.impact.calibration: use "
    "'from mbplugin.impact import calibrate, Calibration, clear_cache' "
    "(or 'from mbplugin import calibrate')"
)
