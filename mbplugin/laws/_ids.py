"""Ids of the compiled force kernels (see :mod:`mbplugin.laws.kernels`).

Many laws share one kernel: every law of the form k*delta^n + lam*delta^m*ddelta^q, whatever
its damping formula, evaluates through :data:`POWER` with its own onset coefficients.

The sizes of the kernels' scalar tuples live here too (``laws.kernels`` re-exports them): a law
module names its own slots of them (``C_*`` coefficient slots, ``S_*`` state slots, ``M_*``
memory columns) and cannot import ``laws.kernels``, which imports every law module.
"""

POWER = 0  #: k delta^n + lam |delta|^m sign(ddelta)|ddelta|^q (Hunt-Crossley general form)
BOUC_WEN_HC = 1  #: Bouc-Wen-Simon-Hunt-Crossley (Milehins & Marghitu 2026, Eq. 38-39)
BOUC_WEN_MAXWELL = 2  #: Bouc-Wen-Maxwell (Milehins & Marghitu 2026, Eq. 46-47)
POWER_COMPLEX = 3  #: Zhang et al. 2022 with ddelta^q as a principal complex power (the paper's)
# 10-19: plastic, internal-state and time-dependent laws of the review's catalogue
GOLDSMITH = 10  #: Goldsmith modified Hertz with permanent indentation (plastic.py)
THORNTON = 11  #: Thornton elastic-perfectly plastic spheres (plastic.py)
YIGIT = 12  #: Yigit et al. three-phase / linearised elastoplastic (plastic.py)
XIONG = 13  #: Xiong et al. internal state with residual indentation (xiong.py)
JIAN = 14  #: Jian et al. relaxing viscoelastic damping, time since onset as state (jian.py)

# compiled onset rules (:func:`mbplugin.laws.kernels.onset_coefficients`): how a law's onset
# coefficient row follows from the latched impact speed, for engines that book onsets in
# compiled code (``Law.onset_rule``)
ONSET_NONE = 0  #: the row depends on no value latched at onset but the pair's constants (r_eff)
ONSET_HC = 1  #: Hunt-Crossley family: lam = k chi / max(v_in, v_min) (hunt_crossley.py)

# the kernel protocol's tuples (:mod:`mbplugin.laws.kernels`)
NC_MAX = 12  #: coefficient slots per contact
NODE_MAX = 4  #: ODE state slots per contact
NMEM_MAX = 4  #: memory slots per contact
NS_MAX = NODE_MAX + NMEM_MAX  #: state tuple slots: the NODE_MAX ODE states, then the memory
#: the state tuple's memory slots: memory column j of a law is state slot MEM0 + j
MEM0, MEM1, MEM2, MEM3 = range(NODE_MAX, NS_MAX)
