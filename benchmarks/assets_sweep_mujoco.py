"""What a MuJoCo user would bring, put on managed ground: MJCF models, URDFs, generated scenes.

Assets (each compiled by MuJoCo itself; one MuJoCo cannot load is skipped):

* the MJCF models that ship with the mujoco package (``mujoco/testdata``) and, when
  ``--mjcf-dir`` names a folder (e.g. gymnasium's ``envs/mujoco/assets``, unpacked from its
  wheel) or gymnasium is importable, those models too;
* every URDF of ``pybullet_data`` MuJoCo loads (its URDF importer; meshes by path, OBJ / STL),
  its root body given a free joint;
* scenes generated here: capsule, box, cylinder (on its face and its side), ellipsoid and mesh
  feet, a body with several geoms, a hinge-legged robot held by position servos, a slider, a
  ball joint, a fixed table, contype/conaffinity filters and an ``<exclude>``d pair.

A model with its own plane(s) on the world body keeps them and they are managed; any other
gets a floor plane and is placed with its lowest point (the geoms' ``geom_aabb`` in the world)
``CLEARANCE`` above it. Each is then stepped ``--steps`` steps natively (``mj_step``) and with
``MujocoContacts(model, data, manage=[floor(s)], law=Hunt-Crossley cr 0.5 k 1e7, material E
1e8 nu 0.4)`` (``--no-k``: the law without ``k``, Hertz's stiffness from the material), at the
model's own time step and at 2 ms. Reported per asset and step: ``ok`` / ``clear error``
(ParameterError, its message's head) / ``exception`` (type, message, where) / ``NaN`` /
``exploded`` (a speed over 100 m/s or a body 100 m away) / ``timeout``; the CPU cost of the
managed steps over the native ones (both in this process, the first step of each not timed);
and where the native model has come to rest (every dof's speed below 1e-2 over the last step)
the root body's height with the backend minus native MuJoCo's (``dz``, mm), where the managed
run has come to rest too (a model may come to rest later, or on another face, with the
law's restitution than with MuJoCo's inelastic soft contact). MuJoCo's soft
contact sinks by a few mm at its default solref (0.02 s time constant), the law's by
(m g / k)^(2/3) ~ 0.1 mm a kg: so |dz| of some mm is MuJoCo's softness, more than
``DZ_FLAG`` is flagged ``?``.

    python benchmarks/assets_sweep_mujoco.py                   # every asset
    python benchmarks/assets_sweep_mujoco.py --only gen/ --steps 480
    python benchmarks/assets_sweep_mujoco.py --ground box          # the floor a box
    python benchmarks/assets_sweep_mujoco.py --mjcf-dir /path/to/gymnasium/envs/mujoco/assets
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from assets_sweep import _alarm, _quiet, failure  # the PyBullet sweep's helpers

from mbplugin.mujoco import MujocoContacts

LAW_K = {"name": "hunt_crossley", "cr": 0.5, "k": 1e7}
LAW_NO_K = {"name": "hunt_crossley", "cr": 0.5}
MATERIAL = {"E": 1e8, "nu": 0.4}
CLEARANCE = 0.05  # m between the floor and the model's lowest point at the start
FLOOR = "mbp_floor"
#: the floor the sweep adds: "plane", or "box" (a 10 x 10 x 0.2 m box, its top at the
#: plane's height; many MuJoCo models make their ground so): ``--ground``
GROUND = "plane"
DZ_FLAG = 0.01  # m: a resting height off native MuJoCo's by more is flagged
V_REST = 1e-2  # m/s or rad/s: native "at rest" when every dof is slower
V_EXPLODED, X_EXPLODED = 100.0, 100.0


# -- generated scenes ------------------------------------------------------------------------
_ICO = ("0 1 1.618  0 -1 1.618  0 1 -1.618  0 -1 -1.618  1 1.618 0  -1 1.618 0  1 -1.618 0  "
        "-1 -1.618 0  1.618 0 1  1.618 0 -1  -1.618 0 1  -1.618 0 -1")
# an L-shaped (non-convex) prism's corners: MuJoCo collides its convex hull
_L = ("0 0 0  .2 0 0  .2 .05 0  .05 .05 0  .05 .2 0  0 .2 0  "
      "0 0 .05  .2 0 .05  .2 .05 .05  .05 .05 .05  .05 .2 .05  0 .2 .05")


def _free(name: str, z: float, geoms: str, quat: str = "1 0 0 0") -> str:
    return f'<body name="{name}" pos="0 0 {z}" quat="{quat}"><freejoint/>{geoms}</body>'


def _mj(body: str, assets: str = "", extra: str = "", dt: float = 0.002,
        floor: bool = True) -> str:
    fl = (f'<geom name="{FLOOR}" type="plane" size="5 5 .1"/>' if GROUND == "plane" else
          f'<geom name="{FLOOR}" type="box" size="5 5 .1" pos="0 0 -.1"/>') if floor else ""
    return (f'<mujoco><option timestep="{dt}"/><asset>{assets}</asset><worldbody>{fl}{body}'
            f"</worldbody>{extra}</mujoco>")


def _legged(n_legs: int = 4) -> str:
    """A box torso with ``n_legs`` two-link capsule legs (hip and knee hinges, sphere feet)
    held by position servos at their initial angles."""
    legs, acts = [], []
    for i in range(n_legs):
        ang = 2 * np.pi * (i + 0.5) / n_legs
        x, y = 0.15 * np.cos(ang), 0.1 * np.sin(ang)
        legs.append(
            f'<body name="thigh{i}" pos="{x:.4f} {y:.4f} 0">'
            f'<joint name="hip{i}" type="hinge" axis="0 1 0" armature=".01" damping=".5"/>'
            f'<geom type="capsule" size=".015" fromto="0 0 0 0 0 -.12" mass=".2"/>'
            f'<body name="shin{i}" pos="0 0 -.12">'
            f'<joint name="knee{i}" type="hinge" axis="0 1 0" armature=".01" damping=".5"/>'
            f'<geom type="capsule" size=".012" fromto="0 0 0 0 0 -.12" mass=".1"/>'
            f'<geom name="foot{i}" type="sphere" size=".02" pos="0 0 -.12" mass=".05"/>'
            "</body></body>")
        acts.append(f'<position joint="hip{i}" kp="60"/>'
                    f'<position joint="knee{i}" kp="60"/>')
    torso = ('<body name="torso" pos="0 0 .35"><freejoint/>'
             '<geom type="box" size=".18 .12 .04" mass="4"/>' + "".join(legs) + "</body>")
    return _mj(torso, extra="<actuator>" + "".join(acts) + "</actuator>")


def generated() -> dict[str, str]:
    """The generated scenes (name -> MJCF); every one has a floor (GROUND) named ``FLOOR``."""
    g: dict[str, str] = {}
    g["gen/sphere"] = _mj(_free("b", 0.15, '<geom type="sphere" size=".1" mass="1"/>'))
    g["gen/capsule_lying"] = _mj(_free(
        "b", 0.1, '<geom type="capsule" size=".03" fromto="-.1 0 0 .1 0 0" mass="1"/>'))
    g["gen/capsule_upright"] = _mj(_free(
        "b", 0.2, '<geom type="capsule" size=".03" fromto="0 0 -.1 0 0 .1" mass="1"/>'))
    g["gen/box"] = _mj(_free("b", 0.1, '<geom type="box" size=".1 .07 .05" mass="1"/>'))
    g["gen/box_tilted"] = _mj(_free("b", 0.2, '<geom type="box" size=".1 .07 .05" mass="1"/>',
                                    quat="0.96 0.2 0.15 0"))
    g["gen/cylinder_face"] = _mj(_free(
        "b", 0.1, '<geom type="cylinder" size=".05 .04" mass="1"/>'))
    g["gen/cylinder_side"] = _mj(_free(
        "b", 0.1, '<geom type="cylinder" size=".05 .04" mass="1"/>', quat="0.7071 0.7071 0 0"))
    g["gen/ellipsoid"] = _mj(_free(
        "b", 0.12, '<geom type="ellipsoid" size=".1 .06 .04" mass="1"/>'))
    g["gen/mesh_ico"] = _mj(
        _free("b", 0.2, '<geom type="mesh" mesh="ico" mass="1"/>'),
        assets=f'<mesh name="ico" scale=".05 .05 .05" vertex="{_ICO}"/>')
    g["gen/mesh_nonconvex"] = _mj(
        _free("b", 0.1, '<geom type="mesh" mesh="L" mass="1"/>'),
        assets=f'<mesh name="L" vertex="{_L}"/>')
    g["gen/offset_inertia"] = _mj(_free(
        "b", 0.1, '<inertial pos=".03 -.02 .01" quat="0.9 0.1 0.3 0.2" mass="1.5" '
        'diaginertia=".01 .02 .015"/><geom type="box" size=".1 .07 .05"/>'))
    g["gen/multi_geom"] = _mj(_free(
        "b", 0.12, '<geom type="box" size=".15 .1 .03" mass="2"/>'
        '<geom type="sphere" size=".03" pos=".12 .07 -.05" mass=".1"/>'
        '<geom type="sphere" size=".03" pos="-.12 .07 -.05" mass=".1"/>'
        '<geom type="capsule" size=".02" fromto=".12 -.07 -.05 -.12 -.07 -.05" mass=".1"/>'))
    g["gen/legged4"] = _legged(4)
    g["gen/hexapod"] = _legged(6)
    g["gen/slider"] = _mj(
        '<body name="b" pos="0 0 .1"><joint type="slide" axis="0 0 1"/>'
        '<geom type="box" size=".1 .1 .05" mass="2"/></body>')
    g["gen/ball_joint"] = _mj(
        '<body name="post" pos="0 0 .4"><geom type="sphere" size=".02" contype="0" '
        'conaffinity="0"/><body name="arm"><joint type="ball"/><geom type="capsule" '
        'size=".03" fromto="0 0 0 .2 0 -.38" mass="1"/></body></body>')
    g["gen/fixed_table"] = _mj(
        '<body name="table" pos="0 0 .2"><geom type="box" size=".3 .3 .02"/></body>'
        + _free("b", 0.35, '<geom type="sphere" size=".05" mass="1"/>'))
    g["gen/visual_geom"] = _mj(_free(
        "b", 0.1, '<geom type="box" size=".1 .1 .05" mass="1"/>'
        '<geom type="sphere" size=".2" pos="0 0 -.1" contype="0" conaffinity="0" mass="0"/>'))
    g["gen/contype_filter"] = _mj(
        _free("a", 0.1, '<geom type="sphere" size=".05" mass="1"/>')
        + '<body name="ghost" pos=".3 0 .3"><freejoint/><geom type="sphere" size=".05" '
          'mass="1" contype="2" conaffinity="2"/></body>')
    g["gen/exclude"] = _mj(
        _free("low", 0.06, '<geom type="box" size=".1 .1 .05" mass="1"/>')
        + '<body name="high" pos="0 0 .17"><freejoint/><geom type="box" size=".1 .1 .05" '
          'mass="1"/></body>', extra='<contact><exclude body1="low" body2="high"/></contact>')
    g["gen/stack2"] = _mj(
        _free("low", 0.06, '<geom type="box" size=".1 .1 .05" mass="1"/>')
        + '<body name="high" pos="0 0 .17"><freejoint/><geom type="box" size=".1 .1 .05" '
          'mass="1"/></body>')
    import trimesh

    prism = trimesh.creation.cylinder(radius=0.05, height=0.1, sections=300)
    g["gen/prism300_face"] = _mj(
        _free("b", 0.1, '<geom type="mesh" mesh="prism" mass="1"/>'),
        assets='<mesh name="prism" vertex="'
        + " ".join(f"{x:.9f}" for x in prism.vertices.ravel()) + '"/>')
    g["gen/box_stack5"] = _mj("".join(
        f'<body name="s{i}" pos="0 0 {0.06 + 0.105 * i:.3f}"><freejoint/><geom type="box" '
        'size=".1 .1 .05" mass="1"/></body>' for i in range(5)))
    g["gen/implicitfast"] = _mj(_free("b", 0.15, '<geom type="box" size=".1 .07 .05" '
                                      'mass="1"/>')).replace(
        '<option timestep="0.002"/>', '<option timestep="0.002" integrator="implicitfast"/>')
    return g


# -- loading ---------------------------------------------------------------------------------
def _spec_of(kind: str, src: str) -> mujoco.MjSpec:
    if kind == "xml":
        return mujoco.MjSpec.from_string(src)
    spec = mujoco.MjSpec.from_file(src)
    if src.endswith(".urdf"):
        spec.compiler.fusestatic = False  # the root link a body (to be freed), not the world
    return spec


def _world_planes(m: mujoco.MjModel) -> list[int]:
    """The floors: the world body's colliding planes and the geom named FLOOR."""
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, FLOOR)
    return [g for g in range(m.ngeom) if m.geom_bodyid[g] == 0
            and (m.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE or g == floor)
            and (m.geom_contype[g] or m.geom_conaffinity[g])]


def _lowest(m: mujoco.MjModel, d: mujoco.MjData) -> float:
    """The lowest point (m) of the colliding geoms not on the world body (their AABBs in the
    world frame)."""
    low = np.inf
    for g in range(m.ngeom):
        if m.geom_bodyid[g] == 0 or not (m.geom_contype[g] or m.geom_conaffinity[g]):
            continue
        c, h = m.geom_aabb[g, :3], m.geom_aabb[g, 3:]
        r = d.geom_xmat[g].reshape(3, 3)
        low = min(low, float(d.geom_xpos[g, 2] + r[2] @ c - np.abs(r[2]) @ h))
    return low


def build(kind: str, src: str, dt: float | None) -> tuple[mujoco.MjModel, list[int]] | None:
    """The compiled model of an asset (``kind`` "xml" for a string, else a file), placed on
    its floor, with ``dt`` as its time step (None: its own); and its managed floor geoms.
    None when MuJoCo cannot load it or nothing collides."""
    try:
        with _quiet():
            spec = _spec_of(kind, src)
            m = spec.compile()
    except Exception:
        return None
    planes = _world_planes(m)
    if not planes:
        # a URDF (or a model without ground): free the root bodies, add the floor, place it
        for b in spec.worldbody.bodies:
            if not b.joints:
                b.add_freejoint()
        box = GROUND == "box"
        spec.worldbody.add_geom(
            name=FLOOR, type=mujoco.mjtGeom.mjGEOM_BOX if box else mujoco.mjtGeom.mjGEOM_PLANE,
            size=[5, 5, 0.1], pos=[0, 0, -10])
        try:
            with _quiet():
                m = spec.compile()
        except Exception:
            return None
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        low = _lowest(m, d)
        if not np.isfinite(low):
            return None
        fl = spec.geom(FLOOR)
        fl.pos = [0, 0, low - CLEARANCE - (0.1 if box else 0.0)]
        with _quiet():
            m = spec.compile()
        planes = _world_planes(m)
    if dt is not None:
        m.opt.timestep = dt
    return m, planes


def assets(only: str | None, mjcf_dirs: list[str]) -> list[tuple[str, str, str]]:
    """(name, kind, source) of every asset."""
    out: list[tuple[str, str, str]] = []
    mjdir = Path(mujoco.__file__).parent / "testdata"
    for f in sorted(mjdir.glob("*.xml")) + sorted(mjdir.glob("*.urdf")):
        out.append((f"mujoco/{f.name}", "file", str(f)))
    for dd in mjcf_dirs:
        for f in sorted(Path(dd).glob("*.xml")):
            out.append((f"{Path(dd).name}/{f.name}", "file", str(f)))
    try:
        import pybullet_data

        root = Path(pybullet_data.getDataPath())
        for f in sorted(root.rglob("*.urdf")):
            rel = str(f.relative_to(root))
            if rel == "plane.urdf" or rel.startswith("random_urdfs/"):
                continue
            out.append((f"pybullet_data/{rel}", "file", str(f)))
    except ImportError:
        pass
    out += [(name, "xml", xml) for name, xml in generated().items()]
    return [a for a in out if not only or only in a[0]]


# -- one run ---------------------------------------------------------------------------------
def _root_z(m: mujoco.MjModel, d: mujoco.MjData) -> float:
    b = next((b for b in range(1, m.nbody) if m.body_parentid[b] == 0
              and m.body_jntnum[b] > 0), 1 if m.nbody > 1 else 0)
    return float(d.xpos[b, 2])


def run(m0: mujoco.MjModel, planes: list[int], steps: int, law: dict | None,
        timeout: float) -> dict:
    """One run on a copy of ``m0``: native (``law`` None) or managed: {status, detail, cpu,
    z, rest}."""
    m = m0.__copy__()
    d = mujoco.MjData(m)
    out: dict[str, Any] = {"status": "ok", "detail": "", "cpu": float("nan"),
                           "z": float("nan"), "rest": False}
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step: Callable[[], Any]
            if law is None:
                def step() -> None:
                    mujoco.mj_step(m, d)
            else:
                step = MujocoContacts(m, d, manage=[_geom(g) for g in planes],
                                      law=law, material=MATERIAL).step
            t0 = 0.0
            for i in range(steps):
                if i == 1:
                    t0 = time.process_time()
                step()
            out["cpu"] = time.process_time() - t0 if steps > 1 else float("nan")
        mujoco.mj_forward(m, d)
        if not (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))):
            out["status"] = "NaN"
        elif (np.abs(d.qvel).max(initial=0.0) > V_EXPLODED
              or np.abs(d.xpos).max() > X_EXPLODED):
            out["status"] = "exploded"
        out["z"] = _root_z(m, d)
        out["rest"] = bool(np.abs(d.qvel).max(initial=0.0) < V_REST)
    except Exception as exc:  # the sweep's point: every failure is reported
        out.update(failure(exc, timeout))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return out


def _geom(g: int) -> Any:
    from mbplugin.mujoco import geom

    return geom(int(g))


def _gym_assets() -> list[str]:
    try:
        import gymnasium
    except ImportError:
        return []
    p = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
    return [str(p)] if p.is_dir() else []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=240, help="steps per run (240)")
    ap.add_argument("--only", default=None, help="assets whose name contains this")
    ap.add_argument("--mjcf-dir", action="append", default=[],
                    help="a folder of MJCF models to add (repeatable)")
    ap.add_argument("--timeout", type=float, default=60.0, help="s per managed run (60)")
    ap.add_argument("--no-k", action="store_true", help="the law without k (Hertz)")
    ap.add_argument("--ground", choices=("plane", "box"), default="plane",
                    help="the floor the sweep adds: a plane (default) or a box")
    ap.add_argument("--markdown", action="store_true", help="a markdown table")
    a = ap.parse_args()
    if a.steps < 1 or a.timeout <= 0:
        print("assets_sweep_mujoco: --steps >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    law = LAW_NO_K if a.no_k else LAW_K
    global GROUND
    GROUND = a.ground
    counts: dict[str, dict[str, int]] = {"own dt": {}, "2 ms": {}, "RK4": {}}
    flagged = 0
    print(f"# load {os.getloadavg()[0]:.2f}, {a.steps} steps, law {law}, {GROUND} ground, MuJoCo "
          f"{mujoco.__version__}", flush=True)
    if a.markdown:
        print("| asset | dt (ms) | status | managed / native CPU | native z (m) | dz (mm) | "
              "detail |\n|---|---|---|---|---|---|---|")
    if True:
        for name, kind, src in assets(a.only, a.mjcf_dir + _gym_assets()):
            own_dt = None
            for key, dt in (("own dt", None), ("2 ms", 0.002)):
                built = build(kind, src, dt)
                if built is None:
                    break
                m, planes = built
                if key == "own dt":
                    own_dt = m.opt.timestep
                elif own_dt == 0.002:
                    continue  # its own step is 2 ms: run once
                label = name
                if m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4:
                    # the backend's clear error, once; then what its message asks for
                    if key == "own dt":
                        r = run(m, planes, 2, LAW_K, a.timeout)
                        print(f"{name:50s} RK4: {r['status']}: {r['detail']}", flush=True)
                        counts["RK4"][r["status"]] = counts["RK4"].get(r["status"], 0) + 1
                    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
                    label = f"{name} [Euler]"
                nat = run(m, planes, a.steps, None, a.timeout)
                if nat["status"] != "ok":
                    print(f"{label:50s} native {nat['status']} {nat['detail']}", flush=True)
                    continue
                r = run(m, planes, a.steps, law, a.timeout)
                counts[key][r["status"]] = counts[key].get(r["status"], 0) + 1
                ratio = r["cpu"] / nat["cpu"] if nat["cpu"] > 0 else float("nan")
                # the resting heights, where both have come to rest
                dz = (r["z"] - nat["z"]) * 1e3 if nat["rest"] and r["rest"] \
                    and r["status"] == "ok" else float("nan")
                flag = "?" if abs(dz) > DZ_FLAG * 1e3 else ""
                flagged += bool(flag)
                dtm = m.opt.timestep * 1e3
                if a.markdown:
                    print(f"| {label} | {dtm:g} | {r['status']} | {ratio:.1f} | {nat['z']:.4f} |"
                          f" {dz:.2f}{flag} | {r['detail']} |", flush=True)
                else:
                    print(f"{label:50s} {dtm:5.2f} ms {r['status']:12s} x{ratio:6.1f} "
                          f"z {nat['z']:8.4f} dz {dz:8.2f} mm{flag:1s} "
                          f"{'' if r['rest'] else 'moving '}{r['detail']}",
                          flush=True)
    print(f"# own dt: {counts['own dt']}; 2 ms: {counts['2 ms']}; RK4 models: "
          f"{counts['RK4']} (then run with Euler); resting height off native "
          f"by > {DZ_FLAG * 1e3:g} mm: {flagged}; load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
