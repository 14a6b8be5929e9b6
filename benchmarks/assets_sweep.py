"""Every URDF of pybullet_data dropped on managed ground, as a new user would try them.

For each URDF that native PyBullet loads and that has a collision shape: plane.urdf and the
URDF (default flags) with its lowest point (``getAABB`` of every link) 5 cm above the ground,
then ``--steps`` host steps at 1/240 s, natively and with ``BulletContacts(cid,
manage=[plane], law=Hunt-Crossley cr 0.5 k 1e7, material E 1e8 nu 0.4)``; and once more with
the law without ``k`` (Hertz's stiffness from the material). Reported per asset: ``ok`` / a
clear error (ParameterError, its message's head) / an exception (its type and message's head)
/ a non-finite state / a timeout, the CPU cost of the managed steps over the native ones (both
in this process, the native run first, the first step of each not timed) and the base's
height at the end of each run.

    python benchmarks/assets_sweep.py                     # every named asset, random_urdfs 1/20
    python benchmarks/assets_sweep.py --random 1          # all 1000 random_urdfs too
    python benchmarks/assets_sweep.py --only bike --steps 480
    python benchmarks/assets_sweep.py --markdown           # the table of BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import pybullet as p
import pybullet_data

from mbplugin.bullet import BulletContacts
from mbplugin.errors import ParameterError

G = 9.81
LAW_K = {"name": "hunt_crossley", "cr": 0.5, "k": 1e7}
LAW_NO_K = {"name": "hunt_crossley", "cr": 0.5}
MATERIAL = {"E": 1e8, "nu": 0.4}
CLEARANCE = 0.05  # m between the ground and the asset's lowest point at the start


class _TimeoutError(Exception):
    pass


def _alarm(signum, frame):
    raise _TimeoutError


def assets(random_every: int, only: str | None) -> list[str]:
    """The URDF files of pybullet_data (relative paths, sorted): every one outside
    random_urdfs/, every ``random_every``-th of random_urdfs/ (0: none)."""
    root = Path(pybullet_data.getDataPath())
    out, rnd = [], []
    for f in sorted(root.rglob("*.urdf")):
        rel = str(f.relative_to(root))
        if rel == "plane.urdf" or (only and only not in rel):
            continue
        (rnd if rel.startswith("random_urdfs/") else out).append(rel)
    return out + (rnd[::random_every] if random_every else [])


@contextlib.contextmanager
def _quiet():
    """PyBullet's C-level warnings (b3Warning) off stdout/stderr."""
    fds = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in [*fds, null]:
            os.close(fd)


def scene(rel: str) -> tuple[int, int, int] | None:
    """A client with plane.urdf and ``rel`` placed CLEARANCE above it: (client, plane, body),
    or None when PyBullet cannot load it or it has no collision shape."""
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    try:
        with _quiet():
            body = p.loadURDF(rel, physicsClientId=cid)
    except p.error:
        p.disconnect(cid)
        return None
    links = range(-1, p.getNumJoints(body, physicsClientId=cid))
    if not any(p.getCollisionShapeData(body, lk, physicsClientId=cid) for lk in links):
        p.disconnect(cid)
        return None
    low = min(p.getAABB(body, lk, physicsClientId=cid)[0][2] for lk in links)
    pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
    p.resetBasePositionAndOrientation(body, [pos[0], pos[1], pos[2] + CLEARANCE - low], orn,
                                      physicsClientId=cid)
    return cid, plane, body


def failure(exc: Exception, timeout: float) -> dict[str, str]:
    """{status, detail} of a run that raised ``exc``: a timeout (``timeout`` s), a clear
    error (ParameterError: its message's head) or an exception (its type, message's head and
    where it was raised)."""
    if isinstance(exc, _TimeoutError):
        return {"status": "timeout", "detail": f"> {timeout:g} s"}
    if isinstance(exc, ParameterError):
        return {"status": "clear error", "detail": str(exc).splitlines()[0][:110]}
    tb = traceback.extract_tb(exc.__traceback__)[-1]
    return {"status": "exception", "detail": f"{type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:90] if str(exc) else ''} "
            f"({Path(tb.filename).name}:{tb.lineno})"}


def _finite(cid: int, body: int) -> bool:
    pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
    v, w = p.getBaseVelocity(body, physicsClientId=cid)
    vals = list(pos) + list(orn) + list(v) + list(w)
    nj = p.getNumJoints(body, physicsClientId=cid)
    if nj:
        for s in p.getLinkStates(body, list(range(nj)), physicsClientId=cid):
            vals += list(s[0]) + list(s[1])
    return bool(np.all(np.isfinite(vals)))


def run(rel: str, steps: int, law: dict | None, timeout: float) -> dict:
    """One run of ``rel``: native (``law`` None) or managed with ``law``: {status, detail,
    cpu (s), z (m)}."""
    made = scene(rel)
    if made is None:
        return {"status": "skip"}
    cid, plane, body = made
    out = {"status": "ok", "detail": "", "cpu": float("nan"), "z": float("nan")}
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bc = (BulletContacts(cid, manage=[plane], law=law, material=MATERIAL)
                  if law is not None else None)
            t0 = 0.0
            for i in range(steps):
                if i == 1:  # the first step (caches filled) is not timed
                    t0 = time.process_time()
                if bc is not None:
                    bc.step()
                else:
                    p.stepSimulation(physicsClientId=cid)
            out["cpu"] = time.process_time() - t0 if steps > 1 else float("nan")
        if not _finite(cid, body):
            out["status"] = "non-finite"
        out["z"] = p.getBasePositionAndOrientation(body, physicsClientId=cid)[0][2]
    except Exception as exc:  # the sweep's point: every failure is reported
        out.update(failure(exc, timeout))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        p.disconnect(cid)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=240, help="host steps of 1/240 s (240)")
    ap.add_argument("--random", type=int, default=20,
                    help="every N-th of random_urdfs/ (20; 0: none, 1: all)")
    ap.add_argument("--only", default=None, help="assets whose path contains this")
    ap.add_argument("--timeout", type=float, default=120.0, help="s per managed run (120)")
    ap.add_argument("--markdown", action="store_true", help="a markdown table")
    a = ap.parse_args()
    if a.steps < 1 or a.random < 0 or a.timeout <= 0:
        print("assets_sweep: --steps >= 1, --random >= 0 and --timeout > 0", file=sys.stderr)
        return 2
    counts: dict[str, dict[str, int]] = {"k": {}, "no k": {}}
    rows = []
    print(f"# load {os.getloadavg()[0]:.2f}, {a.steps} steps of 1/240 s", flush=True)
    for rel in assets(a.random, a.only):
        nat = run(rel, a.steps, None, a.timeout)
        if nat["status"] != "ok":  # native cannot load it, no collision shape, or fails
            continue
        wk = run(rel, a.steps, LAW_K, a.timeout)
        nk = run(rel, a.steps, LAW_NO_K, a.timeout)
        for key, r in (("k", wk), ("no k", nk)):
            counts[key][r["status"]] = counts[key].get(r["status"], 0) + 1
        ratio = wk["cpu"] / nat["cpu"] if nat["cpu"] > 0 else float("nan")
        row = (rel, wk["status"], ratio, nat["z"], wk["z"], nk["status"],
               wk["detail"] or nk["detail"])
        rows.append(row)
        if a.markdown:
            print(f"| {rel} | {row[1]} | {ratio:.1f} | {nat['z']:.4f} | {wk['z']:.4f} | "
                  f"{row[5]} | {row[6]} |", flush=True)
        else:
            print(f"{rel:55s} {row[1]:12s} x{ratio:7.1f} z {nat['z']:8.4f} {wk['z']:8.4f}  "
                  f"no k: {row[5]:12s} {row[6]}", flush=True)
    print(f"# {len(rows)} assets; with k: {counts['k']}; without k: {counts['no k']}; "
          f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
