"""The per-contact record of the compiled contact-space code: one typed, named layout.

Every compiled kernel that integrates or solves contacts (the sub-stepper's groups,
:mod:`.substep_compiled`; the implicit step, :mod:`.implicit_kernel`; the large groups'
Gauss-Seidel, :mod:`.large_groups`; PyBullet's lean verification rounds,
:mod:`mbplugin.bullet.lean`) reads a contact's data from one record of :data:`CONTACT` by field
name: ``gc[i].normal[a]``, ``gc[i].coef``, ``gc[i].active``. A group of k contacts is two
arrays: its records ``gc`` (k,) of :data:`CONTACT` and its float array ``gf``
(:func:`group_float_size`: W (3k, 3k) row-major from offset 0, then the force buffer, 3k,
from :func:`forces_at`, and the normal forces, k, from :func:`normals_at`).

The impact analyser's per-impact result and paused state are records of this module too
(:data:`IMPACT`, :data:`IMPACT_CARRY`), and so are the onsets the engine's compiled segments
book (:data:`ONSET`).

Why a NumPy structured dtype. Numba compiles an array of a structured dtype as an array of
``Record``; ``gc[i].mu`` is a load at the field's fixed offset from the element's address,
the same load the former flat buffers made at ``base + ROW_LEN * i + _MU``, and a nested array
field (``gc[i].coef[j]``) a view without a reference count. The fields are typed (the flags
bool, the ids int64, the floats float64), the record is one argument (the calls of the hot
loop keep their two arrays per group: numba counts references per array argument), and NumPy
fills and reads the same array by field name on the Python side (``gc["active"]``). A
namedtuple of arrays would be named too, but one array per field (a dozen) in every problem
tuple and call.

The group's friction model (:class:`mbplugin.pipeline.friction.Friction`: on, mu, mu_s, v_s,
v_eps, viscous, linear regularisation) and the stick spring
(:class:`mbplugin.pipeline.stick.Stick`: on, k_t, mu, c_t) are the record's ``fr_*`` and
``st_*`` fields: every contact carries the parameters its force needs (the same values in
every contact of a host step: :data:`HEAD`, the fields a host step sets once, is the subset
of :data:`CONTACT` that :func:`head` fills; :func:`put_head` copies it into a record).
Units: SI (normals unit vectors, a_free m/s^2, mu dimensionless, v_s and v_eps m/s, viscous
N s/m, k_t N/m, c_t N s/m); the coefficient row and memory as the law's kernel defines them
(:mod:`mbplugin.laws.kernels`, ``NC_MAX`` and ``NMEM_MAX`` slots).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from mbplugin._jit import njit_inline
from mbplugin.laws.kernels import NC_MAX, NMEM_MAX, NODE_MAX
from mbplugin.pipeline.dop853 import NPOW

# (coef_tuple and state_tuple spell out the kernels' tuples)
assert NC_MAX == 12 and NMEM_MAX == 4

#: The fields a host step sets once for all its contacts (its friction model and stick
#: spring): the group header, one record of its own (:func:`head`) copied into each contact
#: record (:func:`put_head`).
HEAD_FIELDS: list[tuple] = [
    ("fr_mu", "f8"),         # the Friction's kinetic coefficient (its default per contact)
    ("fr_mu_s", "f8"),       # the Friction's static coefficient
    ("fr_v_s", "f8"),        # Stribeck velocity, m/s
    ("fr_v_eps", "f8"),      # regularisation velocity, m/s
    ("fr_viscous", "f8"),    # viscous coefficient, N s/m
    ("st_k_t", "f8"),        # the stick spring's stiffness, N/m
    ("st_mu", "f8"),         # its Coulomb cap's coefficient
    ("st_c_t", "f8"),        # its damping, N s/m
    ("fr_on", "?"),          # regularised Coulomb friction on
    ("fr_linear", "?"),      # its linear regularisation (else tanh)
    ("st_on", "?"),          # the stick spring (Dahl) on instead of friction
]
#: A host step's header (:data:`HEAD_FIELDS`).
HEAD = np.dtype(HEAD_FIELDS, align=True)

#: One contact of a group: its geometry and free acceleration, the store's row of its law
#: (coefficients, memory), its friction coefficients, its flags and its ODE states' place
#: in the group's state vector, and the host step's friction model (:data:`HEAD_FIELDS`).
CONTACT = np.dtype([
    ("normal", "f8", (3,)),        # unit normal, from body a to body b
    ("a_free", "f8", (3,)),        # free relative acceleration, m/s^2
    ("coef", "f8", (NC_MAX,)),     # the law's coefficient row (a latched pair: d_sep at 0)
    ("mem", "f8", (NMEM_MAX,)),    # the law's memory
    ("mu", "f8"),                  # the pair's kinetic friction coefficient
    ("mu_s", "f8"),                # the pair's static friction coefficient
    *HEAD_FIELDS[:8],
    ("kid", "i8"),                 # the law's kernel id (mbplugin.laws.kernels)
    ("mode", "i8"),                # the law's contact mode (mbplugin.pipeline.rules)
    ("ode_off", "i8"),             # offset of its ODE states in the group's state
    ("n_states", "i8"),            # their count (0 when not active)
    ("candidate", "i8"),           # 1 onset candidate, LATCHED (2) latched, 0 neither
    ("active", "?"),               # a row of the store (a contact in force)
    ("has_memory", "?"),           # active with a law that keeps memory
    *HEAD_FIELDS[8:],
], align=True)


def group_float_size(k: np.ndarray | int) -> np.ndarray | int:
    """Length of the float array ``gf`` of groups of ``k`` contacts: W (9 k^2), the force
    buffer (3 k) and the normal forces (k). (Compiled code: :data:`group_float_len`.)"""
    return 9 * k * k + 4 * k


#: :func:`group_float_size` for compiled code
group_float_len = njit_inline(group_float_size)


@njit_inline
def forces_at(k):
    """Offset of the force buffer (3k: each contact's force on body b, N) in ``gf``; the
    normal forces (k, N) follow it (:func:`normals_at`)."""
    return 9 * k * k


@njit_inline
def normals_at(k):
    """Offset of the normal forces (k, N) in ``gf``."""
    return 9 * k * k + 3 * k


#: the headers :func:`head` made, by (id(friction), id(stick), inactive_on): (friction, stick,
#: header); at most _HEADS_MAX (then cleared)
_HEADS: dict[tuple, tuple] = {}
_HEADS_MAX = 16


def head(friction=None, stick=None, inactive_on: bool = False) -> np.ndarray:
    """A host step's header (an array of one record of :data:`HEAD`; not to be written to)
    from its :class:`~mbplugin.pipeline.friction.Friction` (None: off; not active: off unless
    ``inactive_on``, the sub-stepper's rule) and :class:`~mbplugin.pipeline.stick.Stick`
    (None: off). Kept per pair of objects (both classes are frozen: the same objects, the same
    header; a host step makes one per step)."""
    key = (id(friction), id(stick), inactive_on)
    hit = _HEADS.get(key)
    if hit is not None and hit[0] is friction and hit[1] is stick:
        return hit[2]
    if len(_HEADS) >= _HEADS_MAX:
        _HEADS.clear()
    h = _make_head(friction, stick, inactive_on)
    _HEADS[key] = (friction, stick, h)
    return h


def _make_head(friction, stick, inactive_on: bool) -> np.ndarray:
    """:func:`head` made anew."""
    h = np.zeros(1, dtype=HEAD)
    if friction is not None and (inactive_on or friction.active):
        h["fr_on"] = True
        h["fr_mu"], h["fr_mu_s"] = friction.mu, friction.static
        h["fr_v_s"], h["fr_v_eps"] = friction.v_s, friction.v_eps
        h["fr_viscous"] = friction.viscous
        h["fr_linear"] = friction.regularisation == "linear"
    if stick is not None:
        h["st_on"] = True
        h["st_k_t"], h["st_mu"], h["st_c_t"] = stick.k_t, stick.mu, stick.c_t
    return h


@njit_inline
def put_head(c, h):
    """Copy the header record ``h`` (:data:`HEAD`) into the contact record ``c``."""
    c.fr_on = h.fr_on
    c.fr_mu = h.fr_mu
    c.fr_mu_s = h.fr_mu_s
    c.fr_v_s = h.fr_v_s
    c.fr_v_eps = h.fr_v_eps
    c.fr_viscous = h.fr_viscous
    c.fr_linear = h.fr_linear
    c.st_on = h.st_on
    c.st_k_t = h.st_k_t
    c.st_mu = h.st_mu
    c.st_c_t = h.st_c_t


@njit_inline
def put_law_row(c, coef, mem, r):
    """The store's row ``r`` of coefficients ``coef`` (R, NC_MAX) and memory ``mem``
    (R, NMEM_MAX) into the contact record ``c``; ``r`` < 0: zeros (not a row of the store).
    The one copy of the store's law rows into records (the sub-stepper's pack, the implicit
    step's rows)."""
    nc = min(coef.shape[1], NC_MAX)
    nm = min(mem.shape[1], NMEM_MAX)
    if r >= 0:
        for j in range(nc):
            c.coef[j] = coef[r, j]
        for j in range(nm):
            c.mem[j] = mem[r, j]
    else:
        for j in range(nc):
            c.coef[j] = 0.0
        for j in range(nm):
            c.mem[j] = 0.0


@njit_inline
def coef_tuple(c):
    """The coefficient row of the contact record ``c`` as the kernels' NC_MAX-tuple."""
    x = c.coef
    return (x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11])


@njit_inline
def state_tuple(y, c):
    """The kernels' state tuple of the contact record ``c``: its ODE states from the group's
    state ``y`` (at ``c.ode_off``, ``c.n_states`` of them), then its memory."""
    o = c.ode_off
    n = c.n_states
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    if n > 0:
        s0 = y[o]
    if n > 1:
        s1 = y[o + 1]
    if n > 2:
        s2 = y[o + 2]
    if n > 3:
        s3 = y[o + 3]
    m = c.mem
    return (s0, s1, s2, s3, m[0], m[1], m[2], m[3])


# ---- the Radau IIA core's controller (mbplugin.pipeline.radau) --------------------------------

#: The controller state of :func:`mbplugin.pipeline.radau.radau_step` (an array of one record,
#: kept by its caller between steps): the step to try ``h``, the last step ``h_old`` and its
#: error norm ``err_old`` (-1: none), the last accepted step's start ``t_sol`` and size
#: ``h_sol`` (s; its dense output predicts the next Newton start when ``have_sol``), whether
#: the Jacobian is fresh (``cur_jac``) and the LU factors are valid (``have_lu``).
RADAU_CONTROL = np.dtype([
    ("h", "f8"), ("h_old", "f8"), ("err_old", "f8"), ("t_sol", "f8"), ("h_sol", "f8"),
    ("cur_jac", "?"), ("have_lu", "?"), ("have_sol", "?"),
], align=True)


# ---- the impact analyser's records (mbplugin.impact._compiled) --------------------------------

#: The analyser's state length at most: [delta, ddelta, impulse, work, ODE states]
NY_MAX = 4 + NODE_MAX

#: One impact's result (:func:`mbplugin.impact._compiled.impact_core`): status (0 separated,
#: 1 captured at the cut-off, 2 integration failure, PAUSED, STEP_LIMIT), end time t_s (s),
#: separation speed v_s (m/s, ddelta: < 0 receding) and residual overlap delta_s (m), peak
#: force f_max (N) at t_f_max (s), largest overlap delta_max (m), compression and total
#: impulses p_c, p_t (N s) and work w_c, w_t (J), time of maximum compression t_m (s, NaN if
#: never reached), accepted steps and right-hand-side evaluations.
IMPACT = np.dtype([
    ("t_s", "f8"), ("v_s", "f8"), ("delta_s", "f8"), ("f_max", "f8"), ("t_f_max", "f8"),
    ("delta_max", "f8"), ("p_c", "f8"), ("p_t", "f8"), ("w_c", "f8"), ("w_t", "f8"),
    ("t_m", "f8"), ("status", "i8"), ("steps", "i8"), ("nfev", "i8"),
], align=True)

#: A paused impact's integrator state (:func:`mbplugin.impact._compiled.impact_core`'s carry):
#: time t and step h (s), the peak and largest-overlap trackers, the dense outputs kept for
#: the peak's refinement (the step holding the best sample ``pk``: its start time, step,
#: sample fraction and upper bound; the steps before ``pkp`` and after ``pkn`` it and the last
#: step ``pv``), the counters, the law's memory, the compression-phase results, the states
#: ``y`` (rows: the current state, then pk, pkp, pkn, pv's starts; NY_MAX columns, the first
#: 4 + n_ode used) and the dense-output coefficients ``dense`` (pk, pkp, pkn, pv; NPOW rows).
IMPACT_CARRY = np.dtype([
    ("t", "f8"), ("h", "f8"), ("f_max", "f8"), ("t_f_max", "f8"), ("delta_max", "f8"),
    ("pk_t", "f8"), ("pk_h", "f8"), ("pk_x", "f8"), ("pk_hi", "f8"),
    ("pkp_t", "f8"), ("pkp_h", "f8"), ("pkp_hi", "f8"),
    ("pkn_t", "f8"), ("pkn_h", "f8"), ("pkn_hi", "f8"),
    ("pv_t", "f8"), ("pv_h", "f8"), ("pv_hi", "f8"),
    ("mem", "f8", (NMEM_MAX,)), ("t_m", "f8"), ("p_c", "f8"), ("w_c", "f8"),
    ("y", "f8", (5, NY_MAX)), ("dense", "f8", (4, NPOW, NY_MAX)),
    ("steps", "i8"), ("nfev", "i8"), ("have_tm", "?"), ("need_next", "?"),
], align=True)


#: The analyser's state vector's slots (:mod:`mbplugin.impact._compiled`; a flat float array,
#: the integrator's state): overlap delta (m), its rate ddelta (m/s, > 0 approaching), impulse
#: int F dt (N s), work int F ddelta dt (J), then the law's ODE states from ``Y_ODE`` on.
Y_DELTA, Y_DDELTA, Y_IMPULSE, Y_WORK, Y_ODE = 0, 1, 2, 3, 4

#: The analyser's impact as a problem of the compiled integrators
#: (:func:`mbplugin.pipeline.ivp.register_problem`, registered by this class): the law's kernel
#: id ``kid`` and contact mode, its coefficient tuple ``coef`` and ODE state count ``n_ode``,
#: the memory tuple ``mem``, the effective mass ``m_eff`` (kg) and the pressing force ``press``
#: (N).
ImpactProblem = namedtuple("ImpactProblem", ["kid", "mode", "coef", "n_ode", "mem", "m_eff",
                                             "press"])

#: An event value of the analyser on a step's dense output, as a problem of the root finder
#: (:func:`mbplugin.pipeline.events.register_events`, registered by this class): ``which``
#: (0 the maximum compression, 1 the end of contact), the step's start state ``y_old``, its
#: dense-output coefficients ``dense``, a scratch state ``tmp``, the law (``kid``, ``mode``,
#: ``coef``, ``n_ode``, ``mem`` as in :data:`ImpactProblem`) and the event scales: force
#: ``f_scale`` (N), overlap ``x_scale`` (m), impact speed ``v0`` (m/s).
ImpactEvent = namedtuple("ImpactEvent", ["which", "y_old", "dense", "tmp", "kid", "mode", "coef",
                                         "n_ode", "mem", "f_scale", "x_scale", "v0"])


# ---- the engine's records (mbplugin.dynamics.compiled) --------------------------------------

#: An onset a compiled engine segment booked itself (:func:`mbplugin.dynamics.compiled.
#: segment_chain`, for ``EngineContacts.onset_row``): time t (s), the watched pair's index,
#: overlap delta (m) and its rate ddelta (m/s, > 0 approaching), effective mass m_eff (kg),
#: contact time scale t_c (s), normal, lever arms ra, rb (m), tangential velocity vt (m/s),
#: contact point (m), and the law's coefficient row at the onset.
ONSET = np.dtype([
    ("t", "f8"), ("delta", "f8"), ("ddelta", "f8"), ("m_eff", "f8"), ("t_c", "f8"),
    ("normal", "f8", (3,)), ("ra", "f8", (3,)), ("rb", "f8", (3,)), ("vt", "f8", (3,)),
    ("point", "f8", (3,)), ("coef", "f8", (NC_MAX,)), ("watch", "i8"),
], align=True)

#: The engine's contact rows (:mod:`mbplugin.dynamics.compiled`, from
#: ``EngineContacts.compiled_arrays``: the contact store's rows in its order): per row the pair
#: (pair type, shapes sa, sb, feature), its law, coefficient row (m, NC_MAX), memory
#: (m, NMEM_MAX) and effective mass (kg); the ODE state count per row ``n_states``; per law its
#: kernel id, contact mode and ODE state count. A named tuple of arrays (numba compiles it as
#: a tuple: one argument; the rows are the store's own arrays, not copied into records).
ContactRows = namedtuple("ContactRows", ["ptype", "sa", "sb", "feat", "law", "coef", "mem",
                                         "n_states", "law_kid", "law_mode", "law_ns", "m_eff"])

#: The engine's watched pairs (:mod:`mbplugin.dynamics.compiled`): per pair its type, shapes,
#: feature, watch kind (``W_FREE``, ``W_ACTIVE``, ``W_LATCHED``, ``W_ACTIVE_MEMORY``), its row
#: in :class:`ContactRows` (-1: none) and a latched pair's separation overlap d_sep (m).
WatchedPairs = namedtuple("WatchedPairs", ["ptype", "sa", "sb", "feat", "kind", "row",
                                           "d_sep"])

#: The engine's bodies (:mod:`mbplugin.dynamics.compiled`, from
#: ``EngineContacts.compiled_arrays``): per body its inverse mass (1/kg), principal inertia
#: (kg m^2, (n, 3)) and its inverse, whether it is fixed; the world's gravity ``gacc`` (m/s^2).
EngineBodies = namedtuple("EngineBodies", ["inv_mass", "inertia", "inv_inertia", "gacc",
                                           "fixed"])

#: The engine's shapes (:mod:`mbplugin.dynamics.compiled`; the arrays of
#: :mod:`mbplugin.contact.pairs`): per shape its body, local position (m) and rotation, sphere
#: radius (m), plane normal and point (m), box half extents (m); the meshes' arrays ``mesh``.
EngineGeometry = namedtuple("EngineGeometry", ["body", "lpos", "lrot", "radius", "plane_n",
                                               "plane_p", "half", "mesh"])

#: The engine's friction (:mod:`mbplugin.dynamics.compiled`, per contact row: the arrays of
#: :func:`mbplugin.pipeline.pairs.contact_forces`): kinetic and static coefficients ``mu``,
#: ``mu_s``, Stribeck velocity ``v_s`` and regularisation velocity ``v_eps`` (m/s), viscous
#: coefficient ``viscous`` (N s/m), linear regularisation ``linear``; ``on``: any friction.
EngineFriction = namedtuple("EngineFriction", ["mu", "mu_s", "v_s", "v_eps", "viscous",
                                               "linear", "on"])

#: What the engine's compiled segments need to book an onset themselves
#: (:func:`mbplugin.dynamics.compiled.segment_chain`, from ``EngineContacts._onset_arrays``):
#: per watched pair whether it can (``ok``), its law, coefficient row (m, NC_MAX), compiled
#: onset rule and its two parameters ``p``, time-scale parameters ``ts`` (k, n); the bodies'
#: inverse masses ``inv_m`` (1/kg; N + 1 values, the last 0: the world, body -1), fixed flags
#: (N) and a work array ``iw`` (N + 1, 3, 3) for the world inverse inertias.
EngineOnsets = namedtuple("EngineOnsets", ["ok", "law", "row", "rule", "p", "ts", "inv_m",
                                           "fixed", "iw"])

#: The engine's flat state as a problem of the compiled integrators
#: (:func:`mbplugin.pipeline.ivp.register_problem`; registered by this class, not by arity):
#: the body count ``n`` and the arrays above.
EngineProblem = namedtuple("EngineProblem", ["n", "bodies", "geometry", "rows", "friction",
                                             "work"])

#: An event value of the engine's watched pairs on a step's dense output, as a problem of the
#: root finder (:func:`mbplugin.pipeline.events.register_events`; registered by this class):
#: the step's start time ``t_old`` and size ``h`` (s), start state ``y_old``, dense-output
#: coefficients ``dense``, scratch state ``ytmp`` and event values ``g``, the value's index
#: ``j``, and the problem's body count, shapes, rows, watched pairs and work arrays.
EngineEvent = namedtuple("EngineEvent", ["t_old", "h", "y_old", "dense", "ytmp", "g", "j", "n",
                                         "geometry", "rows", "watched", "work"])

#: The engine's work arrays (:mod:`mbplugin.dynamics.compiled`): per body its rotation matrix
#: ``R`` (n, 3, 3), world angular velocity ``omega_w``, force and torque (n, 3); per contact
#: row the bodies ``a``, ``b``, overlap ``d`` (m), its rate ``v`` (m/s), normal ``nrm``,
#: tangential velocity ``vt``, lever arms ``ra``, ``rb``, normal force ``fn`` and row index
#: ``rows``; two 3x3 scratch rotations ``Ra``, ``Rb``.
EngineWork = namedtuple("EngineWork", ["R", "omega_w", "force", "torque", "a", "b", "d", "v",
                                       "nrm", "vt", "ra", "rb", "fn", "rows", "Ra", "Rb"])
