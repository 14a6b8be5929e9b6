"""Rules of the contact model every host backend builds over its rows (``BulletContacts``,
:class:`~mbplugin.hosts.loop.ContactLoop`): which laws the implicit step can take, the
exclusion group that spares detection the pairs nobody manages, and the detected contacts
kept (:func:`keep_managed`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.contact.kernels import decode_keys
from mbplugin.errors import ParameterError


def check_stateful(store: Any, articulated: str, any_articulated: bool) -> None:
    """A ParameterError when a law with internal ODE states (``n_state``) would meet the
    implicit step of contacts on articulated links (``articulated="implicit"`` and an
    articulated row), which does not integrate them."""
    if articulated == "implicit" and any_articulated:
        stateful = [lw.name for lw in store.laws if lw.n_state]
        if stateful:
            raise ParameterError(
                f"law {stateful[0]} has internal ODE states, which the implicit step of "
                "contacts on articulated links does not integrate; give "
                "articulated='substep'")


def exclude_unmanaged(model: Any, managed: np.ndarray) -> None:
    """Rows none of whose pairs is managed among each other (``managed`` (N, N) bool; e.g. N
    bodies on a managed ground) become one exclusion group of ``model``
    (:meth:`~mbplugin.contact.ContactModel.exclude_among`), so detection skips the search
    among them (their contacts would be dropped). Rows with the fewest managed pairs first."""
    among = np.zeros(len(managed), dtype=bool)
    for r in np.argsort(managed.sum(axis=1), kind="stable").tolist():  # fewest pairs first
        if not managed[r, among].any():
            among[r] = True
    if among.sum() > 1:
        model.exclude_among(np.flatnonzero(among).tolist())


def keep_managed(batch: Any, managed: np.ndarray, codes: np.ndarray | None = None,
                 n_shapes: int = 0) -> Any:
    """The contacts of ``batch`` (a :class:`~mbplugin.contact.ContactBatch`) between managed
    rows (``managed`` (N, N) bool) and, with ``codes`` (sorted shape-pair codes lo * n_shapes
    + hi of the managed shape pairs, for rows of which only some shape pairs are managed),
    between managed shapes; the batch itself when every contact is kept."""
    if not len(batch):
        return batch
    keep = managed[batch.a, batch.b]
    if codes is not None:
        sa, sb, _ = decode_keys(batch.key, n_shapes)
        code = np.minimum(sa, sb) * n_shapes + np.maximum(sa, sb)
        pos = np.minimum(np.searchsorted(codes, code), len(codes) - 1)
        keep &= codes[pos] == code
    return batch if keep.all() else batch.take(keep)
