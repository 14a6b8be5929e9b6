"""Legged robots of our own making, written as URDF files for the PyBullet robot tests.

:func:`legged_urdf` writes a robot with N legs (a biped, a quadruped, a hexapod): a box body, per
leg an optional abduction joint (about the body's x axis), a hip and a knee (about y), and the
foot: a sphere on its own link joined to the calf by a FIXED joint, or the calf's own collision
sphere, or a foot link (on a fixed ankle) carrying a heel and a toe sphere (two contacts on one
link). What the tests vary through it and what PyBullet must get right for them:

* masses and inertias (a light and a heavy robot);
* link frames: each joint's origin may be turned (``frame_rpy``); the joint axis and the child's
  geometry are written in the turned frame, so the robot is physically the same while every
  link frame differs from the body's;
* inertial frames: each link's centre of mass may sit off its link origin (``com_offset``,
  along the link as a fraction of it, and sideways) with its principal axes turned
  (``inertia_rpy``), as URDF's ``<inertial><origin>`` allows;
* the standing pose (:func:`stand_pose`): hip angle theta, knee -2 theta, so each foot is right
  under its hip (thigh and calf of equal length).

Nothing here is computed by mbplugin: it is the robot a user would bring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


def _rot(rpy: tuple[float, float, float]) -> np.ndarray:
    """URDF's rotation of roll-pitch-yaw (fixed axes x, y, z): Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), \
        math.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _v(x: np.ndarray) -> str:
    return " ".join(repr(float(c)) for c in x)


def _box_inertia(m: float, size: tuple[float, float, float]) -> np.ndarray:
    a, b, c = size
    return m / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


@dataclass
class Robot:
    """What :func:`legged_urdf` wrote: the file, the standing joint targets (per moving joint,
    in PyBullet's joint order), the stand's base height (m), the foot radius (m), the number
    of legs and the total mass (kg)."""

    path: Path
    targets: list[float]
    height: float
    foot_radius: float
    legs: int
    mass: float
    joints_per_leg: int
    feet_per_leg: int = 1
    names: list[str] = field(default_factory=list)


def legged_urdf(directory: Path, name: str, *, legs: int = 4, body: tuple[float, float, float]
                = (0.5, 0.3, 0.1), body_mass: float = 10.0, thigh: float = 0.2,
                leg_masses: tuple[float, float] = (1.0, 0.3), foot_radius: float = 0.02,
                foot_mass: float = 0.05, foot: str = "fixed", abduction: bool = True,
                frame_rpy: tuple[float, float, float] = (0.0, 0.0, 0.0),
                com_offset: tuple[float, float] = (0.0, 0.0),
                inertia_rpy: tuple[float, float, float] = (0.0, 0.0, 0.0),
                body_com: tuple[float, float, float] = (0.0, 0.0, 0.0),
                theta: float = 0.6, spread: float = 1.0, calf_box: bool = True) -> Robot:
    """Write ``directory/name.urdf`` (see the module docstring) and return its :class:`Robot`.

    ``legs`` 2, 4 or 6 (hips along the body's sides), ``body`` its box size (m) and mass (kg),
    ``thigh`` the thigh and calf length (m), ``leg_masses`` (thigh, calf) kg, ``foot``
    ``"fixed"`` (a sphere link on a FIXED joint), ``"calf"`` (the calf's own collision sphere)
    or ``"heel_toe"`` (a foot link on a fixed ankle with two spheres, 6 * foot_radius apart
    along x, level in the standing pose), ``abduction`` an abduction joint per leg,
    ``frame_rpy`` the turn of every leg link's frame (rad), ``com_offset`` each leg link's
    centre of mass along the link (fraction of its length) and sideways (m), ``inertia_rpy``
    its principal axes' turn, ``body_com`` the body's centre of mass offset (m), ``theta`` the
    standing hip angle (rad), ``spread`` the hips' lateral distance over the body's width,
    ``calf_box`` a collision box along the calf (without it the foot sphere is the calf's only
    shape: a box that touches the ground in a gait has no Hertz radius)."""
    frame = _rot(frame_rpy)
    ft = frame.T  # world (the body's) vectors into a turned joint frame
    lx, ly, lz = body
    if legs == 2:
        hips = [(0.0, +ly / 2 * spread), (0.0, -ly / 2 * spread)]
    else:
        xs = np.linspace(lx / 2, -lx / 2, legs // 2)
        hips = [(float(x), s * ly / 2 * spread) for x in xs for s in (+1.0, -1.0)]
    m_thigh, m_calf = leg_masses
    links: list[str] = []
    joints: list[str] = []
    targets: list[float] = []
    names: list[str] = []

    def inertial(mass: float, length: float, radius: float) -> str:
        c = np.array([com_offset[1], 0.0, -com_offset[0] * length])
        i = _box_inertia(mass, (2 * radius, 2 * radius, length))
        return (f'<inertial><origin xyz="{_v(ft @ c)}" rpy="{_v(inertia_rpy)}"/>'
                f'<mass value="{mass}"/><inertia ixx="{i[0]:.9g}" ixy="0" ixz="0" '
                f'iyy="{i[1]:.9g}" iyz="0" izz="{i[2]:.9g}"/></inertial>')

    def capsule(length: float, radius: float) -> str:
        # a box along the middle 60 % of the link, clear of the ground at the foot (its frame
        # turned: the box's own orientation turned back)
        return (f'<collision><origin xyz="{_v(ft @ np.array([0, 0, -length / 2]))}" '
                f'rpy="{_v(_rpy_of(ft))}"/><geometry><box size="{2 * radius} {2 * radius} '
                f'{0.6 * length}"/></geometry></collision>')

    def sphere(at: np.ndarray, radius: float) -> str:
        return (f'<collision><origin xyz="{_v(ft @ at)}"/><geometry><sphere radius="{radius}"/>'
                '</geometry></collision>')

    def joint(kind: str, jname: str, parent: str, child: str, xyz: np.ndarray,
              axis: np.ndarray) -> None:
        # the joint's origin in the parent's frame; a leg's first joint turns the frame by
        # frame_rpy (every leg link's frame is then turned so against the body's)
        rpy = frame_rpy if parent == "body" else (0.0, 0.0, 0.0)
        joints.append(f'<joint name="{jname}" type="{kind}"><parent link="{parent}"/>'
                      f'<child link="{child}"/><origin xyz="{_v(xyz)}" rpy="{_v(rpy)}"/>'
                      f'<axis xyz="{_v(ft @ axis)}"/><limit lower="-3" upper="3" effort="200" '
                      'velocity="50"/><dynamics damping="0" friction="0"/></joint>')

    body_i = _box_inertia(body_mass, body)
    links.append(f'<link name="body"><inertial><origin xyz="{_v(body_com)}"/><mass '
                 f'value="{body_mass}"/><inertia ixx="{body_i[0]:.9g}" ixy="0" ixz="0" '
                 f'iyy="{body_i[1]:.9g}" iyz="0" izz="{body_i[2]:.9g}"/></inertial>'
                 f'<collision><geometry><box size="{lx} {ly} {lz}"/></geometry></collision>'
                 '</link>')
    mass = body_mass
    r_leg = 0.012
    for k, (hx, hy) in enumerate(hips):
        parent = "body"
        at_parent = np.array([hx, hy, -lz / 2])  # the hip on the body's underside
        at_parent_frame = at_parent  # the body's frame is not turned
        if abduction:
            links.append(f'<link name="hip{k}">{inertial(0.3, 0.04, 0.03)}</link>')
            joint("revolute", f"abduct{k}", parent, f"hip{k}", at_parent_frame,
                  np.array([1.0, 0, 0]))
            targets.append(0.0)
            names.append(f"abduct{k}")
            mass += 0.3
            parent, at_parent_frame = f"hip{k}", ft @ np.array([0, 0, -0.04])
        links.append(f'<link name="thigh{k}">{inertial(m_thigh, thigh, r_leg)}'
                     f'{capsule(thigh, r_leg)}</link>')
        joint("revolute", f"hip{k}_pitch", parent, f"thigh{k}", at_parent_frame,
              np.array([0, 1.0, 0]))
        links.append(f'<link name="calf{k}">{inertial(m_calf, thigh, 0.8 * r_leg)}'
                     + (capsule(thigh, 0.8 * r_leg) if calf_box else "")
                     + (sphere(np.array([0, 0, -thigh]), foot_radius) if foot == "calf" else "")
                     + '</link>')
        joint("revolute", f"knee{k}", f"thigh{k}", f"calf{k}", ft @ np.array([0, 0, -thigh]),
              np.array([0, 1.0, 0]))
        targets += [theta, -2.0 * theta]
        names += [f"hip{k}_pitch", f"knee{k}"]
        mass += m_thigh + m_calf
        if foot in ("fixed", "heel_toe"):
            at_foot = ft @ np.array([0, 0, -thigh])
            if foot == "fixed":
                geo = sphere(np.zeros(3), foot_radius)
            else:
                # heel and toe level in the standing pose: the calf (and the foot fixed to it)
                # is turned there by hip + knee = -theta about y
                level = _rot((0.0, theta, 0.0))
                geo = (sphere(level @ np.array([3 * foot_radius, 0, 0]), foot_radius)
                       + sphere(level @ np.array([-3 * foot_radius, 0, 0]), foot_radius))
            links.append(f'<link name="foot{k}">{inertial(foot_mass, 0.01, foot_radius)}'
                         f'{geo}</link>')
            joint("fixed", f"ankle{k}", f"calf{k}", f"foot{k}", at_foot, np.array([0, 1.0, 0]))
            mass += foot_mass
    text = (f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(links) + "\n"
            + "\n".join(joints) + "\n</robot>\n")
    path = Path(directory) / f"{name}.urdf"
    path.write_text(text)
    height = (lz / 2 + (0.04 if abduction else 0.0) + 2 * thigh * math.cos(theta)
              + foot_radius)
    return Robot(path, targets, height, foot_radius, legs, mass,
                 3 if abduction else 2, 2 if foot == "heel_toe" else 1, names)


def _rpy_of(R: np.ndarray) -> tuple[float, float, float]:
    """Roll, pitch, yaw of a rotation matrix (URDF's convention, :func:`_rot`'s inverse)."""
    pitch = math.asin(max(-1.0, min(1.0, -R[2, 0])))
    roll = math.atan2(R[2, 1], R[2, 2])
    yaw = math.atan2(R[1, 0], R[0, 0])
    return roll, pitch, yaw
