"""The A1 quadruped of ``pybullet_data`` on compliant ground, against PyBullet's native contact.

The four toe spheres (R = 2 cm) touch a rubber-like ground (E = 10 MPa, nu = 0.45) through a
Hunt-Crossley law with Hertz's stiffness and regularised Coulomb friction (mu = 0.8, v_eps =
1 cm/s) or, with ``--stick``, a tangential spring with a Coulomb limit (Dahl's model,
``mbplugin.bullet.Stick``: k_t = 5e4 N/m, mu = 0.8, c_t = 100 N s/m); every other pair (a
fallen body, a knee) keeps PyBullet's contact. The toes are links of an articulated body, so the
backend solves each host step's contact impulse implicitly against PyBullet's own update
(``articulated="implicit"``, the default; ``--articulated substep`` for the exact sub-stepper,
which fails this script's checks at 1/240 s and passes them at 1/1000 s, see docs/bullet.md).
The robot stands under a joint PD controller (torque control, |tau| <= 33.5 N m), then trots
open loop (diagonal pairs, 2.5 Hz).
The same script runs with PyBullet's native contact. Printed: summed foot normal force over the
weight in quiet stance, sinkage vs the static Hertz estimate (W / (4 k))^(2/3), falls (base
below 0.15 m or roll/pitch beyond 0.8 rad), the real-time factor, distance and yaw trotted,
the largest backward toe slide within one stance, per-foot force spikes; the full mode writes
plots of per-foot normal force, penetration and slip, and of the base path and yaw.

    python examples/quadruped_foot_ground.py [--short] [--stick] [--hz 240] [--out DIR]
                                             [--articulated implicit|substep]

Checks (exit 1 if one fails): in quiet stance the summed foot force equals the weight within
2 % and the sinkage is within 20 % of the static Hertz estimate, and the robot does not fall;
the full mode also requires the trot to move the robot forward >= 0.3 m with no toe sliding
backwards more than 1 cm within a stance (the short mode does not trot). Native contact is
printed for comparison, not checked (it slides 14.5 mm with this gait at 1/240 s).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pybullet as p
import pybullet_data

import mbplugin
from mbplugin.contact import hertz_stiffness

E_GROUND, NU_GROUND, E_TOE, NU_TOE = 1e7, 0.45, 1e9, 0.4
TOE_R = 0.02


def toe_stiffness() -> float:
    """Hertz's k (N/m^1.5) of a toe (radius TOE_R) on the ground, from both materials."""
    return float(hertz_stiffness(E_GROUND, NU_GROUND, E_TOE, NU_TOE, TOE_R))
STAND = np.array([0.0, 0.8, -1.6] * 4)
PHASE = np.array([0.0, np.pi, np.pi, 0.0])  # FR, FL, RR, RL: diagonal pairs
FREQ, THIGH, CALF = 2.5, 0.2, 0.4
MAX_TORQUE = 33.5  # N m (A1 motor limit)
KP, KD = 80.0, 1.5  # joint PD gains (N m/rad, N m s/rad)
STICK = {"k_t": 5e4, "mu": 0.8, "c_t": 100.0}  # tangential spring at the toes (Dahl)
# fallen: the base below 0.15 m (it stands at ~0.28 m) or its roll or pitch beyond 0.8 rad
FALL_HEIGHT, FALL_TILT = 0.15, 0.8


def targets(t: float, t_trot: float) -> np.ndarray:
    tgt = STAND.copy()
    if t > t_trot:
        ph = 2 * np.pi * FREQ * (t - t_trot) + PHASE
        tgt[1::3] -= THIGH * np.sin(ph)
        tgt[2::3] -= CALF * np.maximum(0.0, np.cos(ph))
    return tgt


def run(ours: bool, t_stand: float, t_trot: float, dt: float,
        stick: dict[str, float] | None = None,
        articulated: str = "implicit") -> dict[str, np.ndarray]:
    """Stand ``t_stand`` s then trot ``t_trot`` s; per-step records. ``stick``: the tangential
    spring's parameters at the feet (None: regularised friction, mu = 0.8, v_eps = 1 cm/s);
    ``articulated``: the backend's step for contacts on the robot's links."""
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -9.81, physicsClientId=cid)
    p.setTimeStep(dt, physicsClientId=cid)
    plane = p.loadURDF("plane.urdf", physicsClientId=cid)
    robot = p.loadURDF("a1/a1.urdf", [0, 0, 0.32], physicsClientId=cid)
    nj = p.getNumJoints(robot, physicsClientId=cid)
    info = [p.getJointInfo(robot, j, physicsClientId=cid) for j in range(nj)]
    motors = [j for j in range(nj) if info[j][2] == p.JOINT_REVOLUTE]
    toes = [j for j in range(nj) if info[j][12].decode().endswith("toe")]
    for j, q0 in zip(motors, STAND, strict=True):
        p.resetJointState(robot, j, q0, physicsClientId=cid)
    p.setJointMotorControlArray(robot, motors, p.VELOCITY_CONTROL, forces=[0.0] * 12,
                                physicsClientId=cid)  # motors off: torque control
    mass = sum(p.getDynamicsInfo(robot, j, physicsClientId=cid)[0] for j in range(-1, nj))
    contacts = None
    if ours:
        from mbplugin.bullet import BulletContacts

        contacts = BulletContacts(
            cid, manage=[(plane, (robot, t)) for t in toes],
            law={"name": "hunt_crossley", "cr": 0.3},
            materials={plane: {"E": E_GROUND, "nu": NU_GROUND},
                       robot: {"E": E_TOE, "nu": NU_TOE}},
            **({"stick": stick} if stick else {"friction": {"mu": 0.8, "v_eps": 1e-2}}),
            rtol=1e-6, articulated=articulated)
    n = round((t_stand + t_trot) / dt)
    rec = {k: np.zeros((n, 4)) for k in ("force", "depth", "slip")}
    rec["base"] = np.zeros((n, 3))
    rec["rpy"] = np.zeros((n, 3))  # base roll, pitch, yaw (rad)
    rec["toe_x"] = np.zeros((n, 4))
    wall = time.perf_counter()
    for i in range(n):
        t = i * dt
        js = p.getJointStates(robot, motors, physicsClientId=cid)
        q = np.array([x[0] for x in js])
        qd = np.array([x[1] for x in js])
        tau = np.clip(KP * (targets(t, t_stand) - q) - KD * qd, -MAX_TORQUE, MAX_TORQUE)

        def control(tau: np.ndarray = tau) -> None:
            # TORQUE_CONTROL torques last one stepSimulation: set again before each
            p.setJointMotorControlArray(robot, motors, p.TORQUE_CONTROL, forces=tau.tolist(),
                                        physicsClientId=cid)

        if contacts is not None:
            st = contacts.step(control=control)
            for (_, (_, link)), f, d, s in zip(st.links, st.normal_force, st.delta, st.slip,
                                                  strict=True):
                k = toes.index(int(link))
                rec["force"][i, k], rec["depth"][i, k] = f, max(d, 0.0)
                rec["slip"][i, k] = s if f > 0 else 0.0
        else:
            control()
            p.stepSimulation(physicsClientId=cid)
            for k, toe in enumerate(toes):
                cps = p.getContactPoints(robot, plane, toe, -1, physicsClientId=cid)
                rec["force"][i, k] = sum(c[9] for c in cps)
                rec["depth"][i, k] = max([-c[8] for c in cps], default=0.0)
                if cps:
                    v = p.getLinkState(robot, toe, computeLinkVelocity=1,
                                       physicsClientId=cid)[6]
                    rec["slip"][i, k] = float(np.hypot(v[0], v[1]))
        pos, orn = p.getBasePositionAndOrientation(robot, physicsClientId=cid)
        rec["base"][i] = pos
        rec["rpy"][i] = p.getEulerFromQuaternion(orn)
        rec["toe_x"][i] = [p.getLinkState(robot, toe, physicsClientId=cid)[0][0] for toe in toes]
    rec["wall"] = np.array(time.perf_counter() - wall)
    rec["weight"] = np.array(mass * 9.81)
    p.disconnect(physicsClientId=cid)
    return rec


def backward_slide(force: np.ndarray, x: np.ndarray) -> float:
    """Largest backward (-x) travel of a toe within one stance (force > 0 throughout), m."""
    worst = 0.0
    for k in range(force.shape[1]):
        on = force[:, k] > 0
        edges = np.flatnonzero(np.diff(np.r_[0, on.astype(int), 0]))
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            seg = x[a:b, k]
            worst = max(worst, float(seg[0] - seg.min()))
    return worst


def dropouts(force: np.ndarray) -> float:
    """One-step losses of contact (a foot unloaded for a single step between loaded steps) per
    stance, over all feet."""
    on = force > 0
    single = on[:-2] & ~on[1:-1] & on[2:]
    stances = int(np.sum(np.diff(np.r_[np.zeros((1, on.shape[1]), bool), on].astype(int),
                                 axis=0) == 1))
    return float(single.sum()) / max(stances, 1)


def falls(base: np.ndarray, rpy: np.ndarray) -> tuple[int, float | None]:
    """Fall episodes (entries into the fallen state: base height below FALL_HEIGHT or |roll| or
    |pitch| above FALL_TILT) and the index of the first, or None."""
    down = (base[:, 2] < FALL_HEIGHT) | (np.abs(rpy[:, :2]) > FALL_TILT).any(axis=1)
    starts = np.flatnonzero(np.diff(np.r_[0, down.astype(int)]) == 1)
    return len(starts), (int(starts[0]) if len(starts) else None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/quadruped_foot_ground", help="plots go here")
    ap.add_argument("--hz", type=float, default=240.0, help="host steps per second")
    ap.add_argument("--stick", action="store_true",
                    help="tangential spring (Dahl) at the toes instead of regularised friction")
    ap.add_argument("--articulated", choices=("implicit", "substep"), default="implicit",
                    help="the backend's step for contacts on the robot's links (default: the "
                         "implicit host-consistent step; substep: the exact sub-stepper)")
    args = ap.parse_args(argv)
    dt = 1 / args.hz
    t_stand, t_trot = (0.75, 0.0) if args.short else (10.0, 10.0)
    k = toe_stiffness()
    ok = True
    runs = {}
    for name, ours in (("native", False), ("mbplugin", True)):
        rec = runs[name] = run(ours, t_stand, t_trot, dt, STICK if args.stick else None,
                               args.articulated)
        w = float(rec["weight"])
        quiet = slice(int(0.5 * t_stand / dt), int(t_stand / dt))  # second half of the stance
        fsum = rec["force"][quiet].sum(axis=1) / w
        sink = rec["depth"][quiet].mean()
        hertz = (w / 4 / k) ** (2 / 3)
        print(f"{name:8s}: stance sum(F)/W = {fsum.mean():.4f} (min {fsum.min():.3f}, max "
              f"{fsum.max():.3f}); sinkage {sink * 1e3:.3f} mm (static Hertz "
              f"{hertz * 1e3:.3f} mm); peak foot force {rec['force'].max() / w:.2f} W; "
              f"wall {float(rec['wall']):.1f} s")
        n_fall, first = falls(rec["base"], rec["rpy"])
        wall = float(rec["wall"])
        when = f" (first at t = {first * dt:.2f} s)" if n_fall else ""
        print(f"          falls {n_fall}{when}; real-time factor "
              f"{(t_stand + t_trot) / wall:.2f}")
        if t_trot:
            i0 = int(t_stand / dt) - 1
            x0, x1 = rec["base"][i0], rec["base"][-1]
            yaw = float(np.degrees(np.unwrap(rec["rpy"][i0:, 2])[-1] - rec["rpy"][i0, 2]))
            trot = slice(int(t_stand / dt), None)
            slide = backward_slide(rec["force"][trot], rec["toe_x"][trot])
            print(f"          trot: {x1[0] - x0[0]:+.3f} m forward, {x1[1] - x0[1]:+.3f} m "
                  f"sideways, yaw {yaw:+.1f} deg, base height {x1[2]:.3f} m; largest backward "
                  f"toe slide in one stance {slide * 1e3:.1f} mm; one-step contact losses "
                  f"{dropouts(rec['force'][trot]):.2f} per stance")
        if ours:
            ok &= abs(fsum.mean() - 1) < 0.02 and abs(sink / hertz - 1) < 0.2
            ok &= n_fall == 0
            if t_trot:
                ok &= bool(x1[0] - x0[0] >= 0.3)
                ok &= slide <= 0.01
    if not args.short:
        from mbplugin.plotting import pyplot, save_figure

        plt = pyplot()
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for key, label in (("force", "normal force (N)"), ("depth", "penetration (m)"),
                           ("slip", "slip speed (m/s)")):
            fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
            for ax, name in zip(axes, ("native", "mbplugin"), strict=True):
                t = np.arange(len(runs[name][key])) * dt
                ax.plot(t, runs[name][key], lw=0.7)
                ax.set_ylabel(label)
                ax.set_title(name)
            axes[-1].set_xlabel("t (s)")
            save_figure(fig, out / f"{key}.png")
        # the gait's outcome: base path and heading, native vs ours
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for name in ("native", "mbplugin"):
            rec = runs[name]
            t = np.arange(len(rec["base"])) * dt
            axes[0].plot(rec["base"][:, 0], rec["base"][:, 1], label=name)
            axes[1].plot(t, np.degrees(np.unwrap(rec["rpy"][:, 2])), label=name)
        axes[0].set_xlabel("base x (m)")
        axes[0].set_ylabel("base y (m)")
        axes[0].set_aspect("equal", adjustable="datalim")
        axes[1].set_xlabel("t (s)")
        axes[1].set_ylabel("yaw (deg)")
        axes[0].legend()
        save_figure(fig, out / "gait.png")
    if not ok:
        print("FAILED: the stance / trot checks above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    with mbplugin.compile_notice(55):  # a first run compiles (~55 s on 2 cores)
        sys.exit(main())
