"""A small seeded generator of URDF bodies and robots, as users bring them: the fuzz tests'
(tests/test_urdf_fuzz.py) and the sweep's (benchmarks/fuzz_urdf.py) input.

:func:`random_urdf` writes, from one integer seed, a URDF file with a floating base link and 0-6
more links, each on a revolute, prismatic or FIXED joint to a random earlier link, at a random
joint origin (xyz and rpy) with a random axis; every link with a random mass (0.05-50 kg,
log-uniform), a random inertial origin (xyz and rpy) and a full inertia tensor (that of a
uniform solid ellipsoid of random half axes a, b, c: I = m/5 diag(b^2 + c^2, a^2 + c^2,
a^2 + b^2), positive definite and within the triangle inequality A + B >= C by construction,
turned by a random rotation R as R I R^T: all six entries written); one to three collision
shapes per link drawn from box, sphere, cylinder, capsule and a convex mesh (the convex hull of
random points made by trimesh, written as ``.obj`` beside the URDF, referenced with a random
non-uniform ``scale``), each at a random origin (xyz and rpy). No visual elements; no joint
limits beyond the joint's own (the tests hold every joint at 0 by a controller).

Nothing of mbplugin is used here: the file is what a user would write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import trimesh

#: collision shape kinds and joint kinds the generator draws from
SHAPES = ("box", "sphere", "cylinder", "capsule", "mesh")
JOINTS = ("revolute", "prismatic", "fixed")
#: the mass range (kg) of a link
MASS = (0.05, 50.0)


@dataclass
class Made:
    """A generated URDF: its path, the links' names (base first), each link's parent index (the
    base -1), joint kind (the base ``"floating"``), mass (kg) and collision shapes (kind,
    size in m: box full extents (3,), sphere (r,), cylinder / capsule (r, length), mesh the
    scaled hull's vertices (n, 3) in the shape's frame), the moving joints' names."""

    path: Path
    links: list[str]
    parent: list[int]
    joint: list[str]
    mass: list[float]
    shapes: list[list[tuple[str, np.ndarray]]] = field(default_factory=list)
    #: the base is fixed to the world (an arm), not floating
    fixed_base: bool = False
    #: moving joints left free (no motor holds them), e.g. an arm's shoulder
    free: list[str] = field(default_factory=list)
    #: the feet's material against the rubber-like ground: "rubber" (hard bodies on rubber) or
    #: "steel" (steel on steel: a contact ~1000x stiffer)
    material: str = "rubber"

    @property
    def moving(self) -> list[str]:
        """Names of the revolute and prismatic joints (the joint of link i is ``j<i>``)."""
        return [f"j{i}" for i, k in enumerate(self.joint) if k in ("revolute", "prismatic")]

    @property
    def held(self) -> list[str]:
        """Names of the moving joints a controller holds at 0 (all but :attr:`free`)."""
        return [j for j in self.moving if j not in self.free]

    @property
    def total_mass(self) -> float:
        """The robot's mass (kg)."""
        return float(sum(self.mass))

    def kinds(self) -> set[str]:
        """The shape kinds and joint kinds present."""
        return {s for link in self.shapes for s, _ in link} | set(self.joint[1:])


def _rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random rotation matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _rpy(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-math.pi, math.pi, 3)


def _f(v: np.ndarray | list[float]) -> str:
    return " ".join(f"{float(x):.6g}" for x in v)


def inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """A full inertia tensor (kg m^2) of a solid ellipsoid of ``mass`` with random half axes
    0.02-0.12 m, turned by a random rotation (module docstring)."""
    a, b, c = rng.uniform(0.02, 0.12, 3)
    d = mass / 5.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    rot = _rotation(rng)
    out = rot @ np.diag(d) @ rot.T
    return 0.5 * (out + out.T)


def _mesh(rng: np.random.Generator, directory: Path, name: str) -> tuple[str, np.ndarray]:
    """A convex hull of 8-20 random points in a 2-6 cm cube written as ``name.obj``; returns
    the file name and a non-uniform scale (0.6-1.6 per axis)."""
    pts = rng.uniform(-1.0, 1.0, (int(rng.integers(8, 21)), 3)) * rng.uniform(0.02, 0.06, 3)
    hull = trimesh.convex.convex_hull(pts)
    hull.export(directory / f"{name}.obj")
    return f"{name}.obj", rng.uniform(0.6, 1.6, 3)


def _shape(rng: np.random.Generator, kind: str, directory: Path,
           name: str) -> tuple[str, np.ndarray]:
    """One collision element's geometry XML and its size (see :class:`Made`)."""
    if kind == "box":
        size = rng.uniform(0.02, 0.12, 3)
        return f'<box size="{_f(size)}"/>', size
    if kind == "sphere":
        r = rng.uniform(0.01, 0.05)
        return f'<sphere radius="{r:.6g}"/>', np.array([r])
    if kind in ("cylinder", "capsule"):
        r, length = rng.uniform(0.01, 0.04), rng.uniform(0.02, 0.12)
        return (f'<{kind} radius="{r:.6g}" length="{length:.6g}"/>',
                np.array([float(f"{r:.6g}"), float(f"{length:.6g}")]))
    fname, scale = _mesh(rng, directory, name)
    verts = trimesh.load(directory / fname, force="mesh").vertices * scale
    return f'<mesh filename="{fname}" scale="{_f(scale)}"/>', verts


def random_urdf(directory: Path, seed: int, *, links: int | None = None,
                shapes: tuple[str, ...] | None = None,
                joints: tuple[str, ...] | None = None) -> Made:
    """Write the robot of ``seed`` into ``directory`` (module docstring) and describe it.
    ``links`` (0-6) the links beyond the base (default: drawn), ``shapes`` / ``joints`` the
    kinds to draw from (default: all)."""
    rng = np.random.default_rng(seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    n = int(rng.integers(0, 7)) if links is None else int(links)
    if not 0 <= n <= 6:
        raise ValueError(f"links must be in 0..6, got {links}")
    kinds = SHAPES if shapes is None else shapes
    jkinds = JOINTS if joints is None else joints
    made = Made(directory / f"gen_{seed}.urdf", [], [], [], [])
    xml = [f'<?xml version="1.0"?>\n<robot name="gen_{seed}">']
    for i in range(n + 1):
        name = f"l{i}"
        mass = float(math.exp(rng.uniform(math.log(MASS[0]), math.log(MASS[1]))))
        tensor = inertia(rng, mass)
        com = rng.uniform(-0.03, 0.03, 3)
        # the inertia tensor is given in the inertial frame, turned by rpy: the tensor above
        # is any symmetric positive definite one, so the frame's turn adds one more rotation
        body = [f'<link name="{name}">',
                f'<inertial><origin xyz="{_f(com)}" rpy="{_f(_rpy(rng))}"/>'
                f'<mass value="{mass:.6g}"/>'
                f'<inertia ixx="{tensor[0, 0]:.8g}" ixy="{tensor[0, 1]:.8g}" '
                f'ixz="{tensor[0, 2]:.8g}" iyy="{tensor[1, 1]:.8g}" iyz="{tensor[1, 2]:.8g}" '
                f'izz="{tensor[2, 2]:.8g}"/></inertial>']
        link_shapes = []
        for s in range(int(rng.integers(1, 4))):
            kind = str(rng.choice(kinds))
            geo, size = _shape(rng, kind, directory, f"gen_{seed}_{name}_{s}")
            body.append(f'<collision><origin xyz="{_f(rng.uniform(-0.05, 0.05, 3))}" '
                        f'rpy="{_f(_rpy(rng))}"/><geometry>{geo}</geometry></collision>')
            link_shapes.append((kind, size))
        body.append("</link>")
        xml.extend(body)
        made.links.append(name)
        made.mass.append(float(f"{mass:.6g}"))
        made.shapes.append(link_shapes)
        if i == 0:
            made.parent.append(-1)
            made.joint.append("floating")
            continue
        parent = int(rng.integers(0, i))
        kind = str(rng.choice(jkinds))
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        origin = rng.uniform(-0.12, 0.12, 3)
        lim = ('<limit lower="-1.5" upper="1.5" effort="1000" velocity="10"/>'
               if kind == "revolute" else
               '<limit lower="-0.05" upper="0.05" effort="1000" velocity="1"/>'
               if kind == "prismatic" else "")
        xml.append(f'<joint name="j{i}" type="{kind}"><parent link="l{parent}"/>'
                   f'<child link="{name}"/><origin xyz="{_f(origin)}" rpy="{_f(_rpy(rng))}"/>'
                   f'<axis xyz="{_f(axis)}"/>{lim}</joint>')
        made.parent.append(parent)
        made.joint.append(kind)
    xml.append("</robot>\n")
    made.path.write_text("\n".join(xml))
    return made


#: the robot kinds of :func:`random_robot`
KINDS = ("feet", "light", "steel", "arm")


def _inertial(rng: np.random.Generator, mass: float, turned: bool = True) -> str:
    """An inertial element of ``mass`` (kg) at a random origin, turned by a random rpy or not
    (PyBullet puts a base's inertial frame upright at ``loadURDF``: a turned one tilts the
    robot)."""
    tensor = inertia(rng, mass)
    rpy = _rpy(rng) if turned else np.zeros(3)
    return (f'<inertial><origin xyz="{_f(rng.uniform(-0.01, 0.01, 3))}" rpy="{_f(rpy)}"/>'
            f'<mass value="{mass:.6g}"/>'
            f'<inertia ixx="{tensor[0, 0]:.8g}" ixy="{tensor[0, 1]:.8g}" '
            f'ixz="{tensor[0, 2]:.8g}" iyy="{tensor[1, 1]:.8g}" iyz="{tensor[1, 2]:.8g}" '
            f'izz="{tensor[2, 2]:.8g}"/></inertial>')


def random_robot(directory: Path, seed: int, kind: str) -> Made:
    """Write a robot of ``kind`` (:data:`KINDS`) from ``seed`` into ``directory`` and describe
    it: where users go and :func:`random_urdf` does not.

    - ``"feet"``: a floating box body (1-20 kg) on 2-4 legs, each a hip (revolute, random axis)
      and a shank (capsule or cylinder) ending in a foot on a fixed or revolute ankle: a flat
      box (several contacts on one link), a convex mesh (a hull: several corners) or a sphere;
      legs and feet 0.05-2 kg;
    - ``"light"``: as ``"feet"`` with a 10-50 kg body and feet of 1-10 g (light links next to a
      heavy one: a mass ratio of 1e3-5e4);
    - ``"steel"``: as ``"feet"``, its feet steel on steel (:attr:`Made.material`);
    - ``"arm"``: a base fixed to the world and a chain of 2-4 links (0.05-5 kg) reaching out
      horizontally, its shoulder a free revolute joint on a horizontal axis (no motor), the
      others held: the arm swings down onto the ground and rests on it and on the shoulder.

    Joints' origins and axes and the links' inertial frames random as in :func:`random_urdf`,
    but the base's inertial frame not turned: the robot starts upright."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    rng = np.random.default_rng(seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    made = Made(directory / f"gen_{kind}_{seed}.urdf", [], [], [], [],
                fixed_base=kind == "arm", material="steel" if kind == "steel" else "rubber")
    xml = [f'<?xml version="1.0"?>\n<robot name="gen_{kind}_{seed}">']

    def link(mass: float, shapes: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]
             ) -> int:
        # shapes: (kind, geometry XML, size, origin xyz, origin rpy)
        i = len(made.links)
        body = [f'<link name="l{i}">', _inertial(rng, mass, turned=i > 0)]
        for _, geo, _, xyz, rpy in shapes:
            body.append(f'<collision><origin xyz="{_f(xyz)}" rpy="{_f(rpy)}"/>'
                        f'<geometry>{geo}</geometry></collision>')
        body.append("</link>")
        xml.extend(body)
        made.links.append(f"l{i}")
        made.mass.append(float(f"{mass:.6g}"))
        made.shapes.append([(k, size) for k, _, size, _, _ in shapes])
        return i

    def joint(child: int, parent: int, jkind: str, xyz: np.ndarray, rpy: np.ndarray,
              axis: np.ndarray) -> None:
        lim = ('<limit lower="-1.5" upper="1.5" effort="1000" velocity="10"/>'
               if jkind == "revolute" else "")
        xml.append(f'<joint name="j{child}" type="{jkind}"><parent link="l{parent}"/>'
                   f'<child link="l{child}"/><origin xyz="{_f(xyz)}" rpy="{_f(rpy)}"/>'
                   f'<axis xyz="{_f(axis)}"/>{lim}</joint>')
        made.parent.append(parent)
        made.joint.append(jkind)

    def unit() -> np.ndarray:
        a = rng.normal(size=3)
        return a / np.linalg.norm(a)

    zero = np.zeros(3)
    if kind == "arm":
        size = rng.uniform(0.04, 0.1, 3)
        link(1.0, [("box", f'<box size="{_f(size)}"/>', size, zero, zero)])
        made.parent.append(-1)
        made.joint.append("fixed")
        n = int(rng.integers(2, 5))
        for i in range(1, n + 1):
            length = rng.uniform(0.08, 0.2)
            r = rng.uniform(0.015, 0.035)
            shape = str(rng.choice(("capsule", "cylinder", "box", "sphere")))
            if shape == "box":
                size = np.array([length, 2 * r, 2 * r])
                geo = f'<box size="{_f(size)}"/>'
            elif shape == "sphere":
                size, geo = np.array([r]), f'<sphere radius="{r:.6g}"/>'
            else:
                size = np.array([float(f"{r:.6g}"), float(f"{length:.6g}")])
                geo = f'<{shape} radius="{r:.6g}" length="{length:.6g}"/>'
            # along the link's x axis: the capsule / cylinder's z turned onto x
            rpy = np.array([0.0, math.pi / 2, 0.0]) if shape in ("capsule", "cylinder") else zero
            mass = float(math.exp(rng.uniform(math.log(0.05), math.log(5.0))))
            link(mass, [(shape, geo, size, np.array([length / 2, 0, 0]), rpy)])
            if i == 1:
                # the shoulder: free, a horizontal axis, at the base's side
                joint(i, 0, "revolute", np.array([0.0, 0.0, 0.0]), zero,
                      np.array([0.0, 1.0, 0.0]))
                made.free.append("j1")
            else:
                prev = 0.08 if i == 2 else 0.0
                joint(i, i - 1, str(rng.choice(("revolute", "fixed"))),
                      np.array([max(prev, 0.08), 0.0, 0.0]),
                      np.array([0.0, 0.0, rng.uniform(-0.5, 0.5)]), unit())
        xml.append("</robot>\n")
        made.path.write_text("\n".join(xml))
        return made
    heavy = kind == "light"
    size = rng.uniform(0.1, 0.3, 3) * np.array([1.0, 1.0, 0.4])
    mass = float(math.exp(rng.uniform(math.log(10.0 if heavy else 1.0),
                                      math.log(50.0 if heavy else 20.0))))
    link(mass, [("box", f'<box size="{_f(size)}"/>', size, zero, zero)])
    made.parent.append(-1)
    made.joint.append("floating")
    legs = int(rng.integers(2, 5))
    corners = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=float)
    for leg in range(legs):
        hip = np.array([*(corners[leg] * size[:2] / 2 * 0.9), -size[2] / 2])
        length = rng.uniform(0.06, 0.14)
        r = rng.uniform(0.01, 0.025)
        shape = str(rng.choice(("capsule", "cylinder")))
        geo = f'<{shape} radius="{r:.6g}" length="{length:.6g}"/>'
        shank = link(float(math.exp(rng.uniform(math.log(0.05), math.log(2.0)))),
                     [(shape, geo, np.array([float(f"{r:.6g}"), float(f"{length:.6g}")]),
                       np.array([0, 0, -length / 2]), zero)])
        joint(shank, 0, "revolute", hip, rng.uniform(-0.1, 0.1, 3), unit())
        foot_kind = str(rng.choice(("box", "mesh", "sphere")))
        name = f"gen_{kind}_{seed}_foot{leg}"
        if foot_kind == "box":
            fsize = np.array([rng.uniform(0.04, 0.1), rng.uniform(0.03, 0.08),
                              rng.uniform(0.01, 0.03)])
            fgeo = f'<box size="{_f(fsize)}"/>'
            drop = fsize[2] / 2
        elif foot_kind == "sphere":
            rad = rng.uniform(0.015, 0.03)
            fsize, fgeo, drop = np.array([rad]), f'<sphere radius="{rad:.6g}"/>', rad
        else:
            fgeo, fsize = _shape(rng, "mesh", directory, name)
            drop = float(np.max(np.abs(fsize[:, 2])))
        fmass = (float(math.exp(rng.uniform(math.log(0.001), math.log(0.01)))) if heavy
                 else float(math.exp(rng.uniform(math.log(0.05), math.log(2.0)))))
        foot = link(fmass, [(foot_kind, fgeo, fsize, np.array([0, 0, -drop]), zero)])
        ankle = str(rng.choice(("fixed", "revolute")))
        joint(foot, shank, ankle, np.array([0.0, 0.0, -length - r]),
              rng.uniform(-0.05, 0.05, 3), unit())
    xml.append("</robot>\n")
    made.path.write_text("\n".join(xml))
    return made
