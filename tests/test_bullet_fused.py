"""The robot's implicit step begun in one compiled call and solved after the host step without
the general closures (mbplugin.bullet.fused): the same run, to the bit, as the general path
they replace, and taken at the steps they are for."""

from __future__ import annotations

import numpy as np
import robot_rig as rr

from mbplugin.bullet import backend


def test_fused_begin_gives_the_general_run_to_the_bit(tmp_path, monkeypatch) -> None:
    """The A1 standing then trotting (0.25 s each) at 1/240 s: per step the contacts' keys,
    forces, overlaps and slips, the base's pose and the feet are bitwise those of the run in
    which every step begins on the general path (HostStep.step) and is solved by
    BulletHost.solve; the fused begin and after_lean took every step with a contact but the
    first (the contacts carried the robot: the run's mean sum of F_N within 5 % of its weight,
    by momentum balance)."""
    spec = rr.ROBOTS["a1"]
    taken, after = [], []
    fused, fused_after = backend.begin_lean, backend.after_lean

    def counted(*a: object) -> object:
        out = fused(*a)
        taken.append(out is not None)
        return out

    def counted_after(*a: object) -> bool:
        out = fused_after(*a)
        after.append(out)
        return out

    def run() -> dict:
        return rr.run(spec, tmp_path, 1 / 240, 0.5, t_gait=0.25)

    monkeypatch.setattr(backend, "begin_lean", counted)
    monkeypatch.setattr(backend, "after_lean", counted_after)
    fast = run()
    with monkeypatch.context() as m:
        m.setattr(backend, "begin_lean", lambda *a: None)
        m.setattr(backend, "after_lean", lambda *a: False)
        ref = run()
    with_contacts = sum(len(k) > 0 for k in fast["keys"])
    # (the first step with a contact reads the joint tree on the general path)
    assert sum(taken) >= with_contacts - 1 > 0.8 * fast["steps"]
    assert sum(after) >= with_contacts - 1
    # momentum balance: the mean normal force over the run carries the weight
    mean = np.mean([f.sum() for f in fast["force"]]) / fast["weight"]
    assert abs(mean - 1.0) < 0.05
    for name in ("keys", "force", "delta", "slip"):
        for a, b in zip(fast[name], ref[name], strict=True):
            assert np.array_equal(a, b), name
    for name in ("base", "feet", "tilt"):
        assert np.array_equal(fast[name], ref[name]), name
