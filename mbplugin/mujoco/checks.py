"""Construction checks of :class:`~mbplugin.mujoco.MujocoContacts` that read the model's state.

Initial overlaps beyond a part's width
    A managed contact of the state the backend starts from whose overlap exceeds half the width
    of either of its two geoms along the contact normal
    (:func:`mbplugin.contact.sizes.overlap_limits`: the support extent h(n) + h(-n) of the
    geom's shape) is not a contact: a ball or a box started into or through a thin part (a
    1 cm plate, a thin cylinder disc, a thin mesh) is past the part's mid-plane, where the
    contact's normal points out of the far side and any law pushes it through (or, before the
    mid-plane, with a force the step cannot resolve). It is refused at construction, naming the
    geoms, the overlap and the allowed width, before MuJoCo's response to the managed pairs is
    switched off (the model is left as it was). The rule is the PyBullet backend's
    (:func:`mbplugin.bullet.checks.check_initial_overlaps`); a plane has no width (a half-space).

A body through a thin part within one step
    The per-step watch (:func:`watch_overlaps`) reads the step's integrated end overlaps and,
    above the watch's bound, detects again at the step's end state. A body that ends the step
    wholly beyond a thin part (a soft ball at 80-150 m/s barely touching a 1 cm slab at the
    start of a 2 ms step) has no contact there, and was not reported. Such a step (its
    integrated overlap is beyond the bound: it went more than the part's width) now compares
    each contact's two geom centres along the contact's start normal at the step's start and
    end (:func:`_watch_crossings`): a change of sign is a body that crossed the other's
    mid-plane (the plane through its centre normal to the contact), reported once as a
    :class:`~mbplugin.contact.sizes.PassThroughWarning`; the common step pays nothing more.
    A body that crosses without touching at the step's start (tunnelling from free flight) is
    the host's step, not a contact, and is not looked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact.sizes import OverlapWatch
from mbplugin.errors import ParameterError


def check_initial_overlaps(host: Any, loop: Any, geom_name: Any) -> None:
    """Refuse (ParameterError) a managed contact of ``host``'s current ``qpos`` (kinematics on
    a copy of the user's ``MjData``, left untouched) whose overlap exceeds half the width of
    either geom along its normal (module docstring). ``loop``: the backend's
    :class:`~mbplugin.hosts.ContactLoop`, ``geom_name(shape id)``: a geom's name for the
    message."""
    from mbplugin.contact.kernels import decode_keys
    from mbplugin.contact.sizes import WIDTH_OVERLAP, overlap_limits

    s = host._probe_data()  # a copy of the user's data (qpos, mocap poses)
    host._kinematics(s)
    bodies = loop.body_state(*host.state(s))
    batch = loop.detect(bodies, 0.0)
    if not len(batch):
        return
    lim, thin = overlap_limits(loop.model, bodies, batch)
    over = batch.delta > lim
    if not over.any():
        return
    j = int(np.argmax(np.where(over, batch.delta / lim, -np.inf)))
    sa, sb, _ = decode_keys(batch.key[j:j + 1], loop.model.n_shapes)
    ga, gb, gt = (geom_name(int(x)) for x in (sa[0], sb[0], thin[j]))
    raise ParameterError(
        f"{ga} and {gb} overlap by {batch.delta[j]:.4g} m along their contact normal in "
        f"the initial state, more than {WIDTH_OVERLAP:g} of the width of {gt} along "
        f"it ({lim[j] / WIDTH_OVERLAP:.4g} m; at most {lim[j]:.4g} m): one is started into or "
        "through the other (a thin part), where the contact's normal points out of the far "
        "side and any law pushes it through; move them apart (or place the body on the side "
        "it should touch: set qpos, then mj_forward) before managing the pair")


def watch_overlaps(c: Any, info: Any) -> Any:
    """``info`` (a step's MujocoStepInfo), after the per-step watch of overlaps beyond half a
    part's width (:class:`mbplugin.contact.sizes.OverlapWatch`: one comparison per step; a
    :class:`~mbplugin.contact.sizes.PassThroughWarning`, once, when a body went into or
    through a thin part). ``c``: the MujocoContacts; a step above the watch's bound detects
    its contacts again at the end state (a scratch ``MjData``) for their normals and
    overlaps."""
    watch = c.__dict__.get("_overlap_watch")
    if watch is None:
        watch = c.__dict__["_overlap_watch"] = OverlapWatch(c.contact_model)
    if not watch.deep(info.delta):  # (the common step ends here: ~1 us)
        return info
    from mbplugin.contact.kernels import decode_keys

    bodies = c.host.end_state()
    batch = c.loop.detect(bodies, 0.0)
    if len(batch):
        sa, sb, _ = decode_keys(batch.key, c.contact_model.n_shapes)
        name = c._items.geom
        t0 = float(c.mj_data.time) - float(c.mj_model.opt.timestep)  # the step's start
        watch.check(bodies, batch, batch.delta, t0, lambda j: (
            f"{name(int(c.geoms[sa[j]]))} and {name(int(c.geoms[sb[j]]))}"))
    if not watch.warned:  # (the end state has no deep contact: a body may be wholly through)
        _watch_crossings(c, watch)
    return info


def _watch_crossings(c: Any, watch: Any) -> None:
    """Warn (once, :class:`~mbplugin.contact.sizes.PassThroughWarning`) if a contact at the
    step's start (detected again at the start state: ``mj_data``'s kinematics are
    ``mj_step1``'s) has its two geom centres on opposite sides, along the contact's normal, at
    the step's end (the current ``qpos``: kinematics on a scratch ``MjData``) from its start
    (module docstring)."""
    import warnings

    from mbplugin.contact.kernels import decode_keys
    from mbplugin.contact.sizes import PassThroughWarning, _user_level

    host, loop, d = c.host, c.loop, c.mj_data
    start = loop.body_state(*host.state(d))
    batch = loop.detect(start, 0.0)
    if not len(batch):
        return
    sa, sb, _ = decode_keys(batch.key, c.contact_model.n_shapes)
    ga, gb = c.geoms[sa], c.geoms[sb]
    s = host._scratch_data()
    s.qpos[:] = d.qpos
    host.mj.mj_kinematics(c.mj_model, s)
    n = batch.normal
    s0 = np.einsum("ij,ij->i", d.geom_xpos[gb] - d.geom_xpos[ga], n)
    s1 = np.einsum("ij,ij->i", s.geom_xpos[gb] - s.geom_xpos[ga], n)
    crossed = s0 * s1 < 0.0
    if not crossed.any():
        return
    j = int(np.flatnonzero(crossed)[0])
    name = c._items.geom
    watch.warned = True
    t0 = float(d.time) - float(c.mj_model.opt.timestep)
    warnings.warn(
        f"{name(int(ga[j]))} and {name(int(gb[j]))}: one passed through the other in the "
        f"host step from t = {t0:.6g} s (their centres crossed along the contact normal, "
        f"{s0[j]:.4g} m before, {s1[j]:.4g} m after; the step's start overlap "
        f"{batch.delta[j]:.4g} m): a contact too soft for the impact, or a body too fast for "
        "the host's step; its contacts from here on mean nothing (a stiffer law, a thicker part "
        "or a smaller host step; said once)", PassThroughWarning, stacklevel=_user_level())
