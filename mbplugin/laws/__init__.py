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
from mbplugin.laws.dashpot import Anagnostopoulos, Choi, Goyal, Jankowski
from mbplugin.laws.exact import Khatiwada, Yu, ZhangSharf, exact_chi
from mbplugin.laws.granular import Alizadeh, BordbarHyppanen, Falcon, Ristow, Schafer, Tsuji
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
from mbplugin.laws.jian import Jian
from mbplugin.laws.plastic import Goldsmith, Thornton, Wang, Yigit
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
from mbplugin.laws.viscoelastic import Brilliantov1996, Brilliantov2015, KuwabaraKono, Zheng
from mbplugin.laws.xiong import Xiong
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
    ZhangSharf,
    Khatiwada,
    Yu,
    Anagnostopoulos,
    Goyal,
    Jankowski,
    Tsuji,
    KuwabaraKono,
    Brilliantov1996,
    Zheng,
    Brilliantov2015,
    Falcon,
    BordbarHyppanen,
    Ristow,
    Schafer,
    Alizadeh,
    Wang,
    Goldsmith,
    Thornton,
    Yigit,
    Choi,
    Xiong,
    Jian,
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
    "Alizadeh",
    "Anagnostopoulos",
    "AzadFeatherstone",
    "BordbarHyppanen",
    "BoucWenHuntCrossley",
    "BoucWenMaxwell",
    "Brilliantov1996",
    "Brilliantov2015",
    "Choi",
    "Falcon",
    "Flores",
    "GharibHurmuzlu",
    "Goldsmith",
    "Gonthier",
    "Goyal",
    "HerbertMcWhannell",
    "Hertz",
    "Hooke",
    "HuGuo",
    "HuntCrossley",
    "HuntCrossleyFamily",
    "HuntCrossleyGeneral",
    "Jankowski",
    "Jian",
    "KelvinVoigt",
    "Khatiwada",
    "KuwabaraKono",
    "LankaraniNikravesh",
    "Law",
    "LeeWang",
    "Option",
    "Param",
    "PowerLaw",
    "Ristow",
    "SafaeifarFarshidianfar",
    "Schafer",
    "Thornton",
    "Tsuji",
    "Wang",
    "Xiong",
    "Yigit",
    "Yu",
    "Zhang2020",
    "Zhang2022",
    "ZhangSharf",
    "Zheng",
    "ZhiyingQishao",
    "exact_chi",
    "exact_cr",
    "get_law_class",
    "law_classes",
    "law_names",
    "make_law",
    "register",
    "reload_entry_points",
    "zhang2022_lambda",
]


#: Names that moved out of this package, and where they live now.
_MOVED = {
    "calibrate": "mbplugin.impact.calibrate (or mbplugin.calibrate)",
    "Calibration": "mbplugin.impact.Calibration (or mbplugin.Calibration)",
}


def __getattr__(name: str) -> object:
    if name in _MOVED:
        raise ImportError(
            f"mbplugin.laws.{name} moved to {_MOVED[name]}: calibration drives the impact "
            f"analyser, and mbplugin.laws imports nothing above it"
        )
    raise AttributeError(f"module 'mbplugin.laws' has no attribute {name!r}")
