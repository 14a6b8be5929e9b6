"""Contact force laws: the interface, the registry and the built-in catalogue.

>>> from mbplugin.laws import make_law
>>> law = make_law("hunt_crossley", k=1e9, n=1.5, cr=0.8)
"""

from __future__ import annotations

from mbplugin.laws.base import (
    MODE_CLIP,
    MODE_RAW,
    MODE_TENSION,
    Law,
    Option,
    Param,
)
from mbplugin.laws.bouc_wen import BoucWenHuntCrossley, BoucWenMaxwell
from mbplugin.laws.hunt_crossley import (
    Flores,
    GharibHurmuzlu,
    Gonthier,
    HerbertMcWhannell,
    HuGuo,
    HuntCrossley,
    HuntCrossleyFamily,
    LankaraniNikravesh,
    LeeWang,
    SafaeifarFarshidianfar,
    Zhang2020,
    ZhiyingQishao,
    exact_cr,
)
from mbplugin.laws.power import (
    AzadFeatherstone,
    Hertz,
    Hooke,
    HuntCrossleyGeneral,
    KelvinVoigt,
    PowerLaw,
)
from mbplugin.laws.registry import (
    ENTRY_POINT_GROUP,
    get_law_class,
    law_classes,
    law_names,
    make_law,
    register,
    reload_entry_points,
)
from mbplugin.laws.zhang2022 import Zhang2022, zhang2022_lambda

_BUILTIN = (
    Hooke,
    Hertz,
    KelvinVoigt,
    HuntCrossleyGeneral,
    AzadFeatherstone,
    HuntCrossley,
    LeeWang,
    HerbertMcWhannell,
    LankaraniNikravesh,
    Gonthier,
    ZhiyingQishao,
    GharibHurmuzlu,
    Flores,
    HuGuo,
    Zhang2020,
    SafaeifarFarshidianfar,
    Zhang2022,
    BoucWenHuntCrossley,
    BoucWenMaxwell,
)
for _cls in _BUILTIN:
    register(_cls)

#: Laws of the form k delta^n (1 + chi(c_r) ddelta / v_in) (output c_r depends on chi only).
HUNT_CROSSLEY_FAMILY = tuple(c.name for c in _BUILTIN if issubclass(c, HuntCrossleyFamily))

__all__ = [
    "ENTRY_POINT_GROUP",
    "HUNT_CROSSLEY_FAMILY",
    "MODE_CLIP",
    "MODE_RAW",
    "MODE_TENSION",
    "AzadFeatherstone",
    "BoucWenHuntCrossley",
    "BoucWenMaxwell",
    "Flores",
    "GharibHurmuzlu",
    "Gonthier",
    "HerbertMcWhannell",
    "Hertz",
    "Hooke",
    "HuGuo",
    "HuntCrossley",
    "HuntCrossleyFamily",
    "HuntCrossleyGeneral",
    "KelvinVoigt",
    "LankaraniNikravesh",
    "Law",
    "LeeWang",
    "Option",
    "Param",
    "PowerLaw",
    "SafaeifarFarshidianfar",
    "Zhang2020",
    "Zhang2022",
    "ZhiyingQishao",
    "exact_cr",
    "get_law_class",
    "law_classes",
    "law_names",
    "make_law",
    "register",
    "reload_entry_points",
    "zhang2022_lambda",
]
