"""Piles with every pair managed: the implicit step of large contact groups against statics.

Spheres stacked in columns on ``plane.urdf``, the columns side by side and touching (so that
every contact of the pile is one group, coupled through W), every pair managed (the plane and
every sphere named alone), released 2 mm above the ground: they land and come to rest. The
references are Newton's and Hertz's closed forms: the contact i-th from the top of a column
carries i m g, so its overlap at rest is (i m g / k)^(2/3) (k the pair's Hertz stiffness), and
the contacts between neighbouring columns carry no load (overlap 0). The benchmark at
N = 1000 is ``benchmarks/bench_bullet_pile.py``; these tests take N = 100 and 36.
"""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pytest
from bullet_world import ground_world

from mbplugin.bullet import BulletContacts
from mbplugin.contact import hertz_stiffness
from mbplugin.errors import ParameterError

G, R, M = 9.81, 0.01, 0.05
LAYERS = 4


def _pile(cid: int, n: int, drop: float = 0.002) -> list[list[int]]:
    """n spheres (R = 1 cm, 50 g) in columns of LAYERS on a square grid of pitch 2R (touching
    side by side and one above the other), ``drop`` above the ground; returns the columns'
    body ids, bottom first."""
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=R, physicsClientId=cid)
    cols = n // LAYERS
    side = math.ceil(math.sqrt(cols))
    columns: list[list[int]] = [[] for _ in range(cols)]
    for layer in range(LAYERS):
        for c in range(cols):
            pos = [2 * R * (c % side), 2 * R * (c // side), R + drop + 2 * R * layer]
            b = p.createMultiBody(M, shape, basePosition=pos, physicsClientId=cid)
            p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
            columns[c].append(b)
    return columns


def _overlaps(cid: int, columns: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The host's overlaps (m) of every column's contacts, ground first ((cols, LAYERS)), and
    of every pair of horizontal neighbours (2R - distance)."""
    pos = {b: np.array(p.getBasePositionAndOrientation(b, physicsClientId=cid)[0])
           for col in columns for b in col}
    vert = np.array([[R - pos[col[0]][2]] + [2 * R - np.linalg.norm(pos[col[j]] - pos[col[j - 1]])
                                            for j in range(1, LAYERS)] for col in columns])
    layer = [[col[j] for col in columns] for j in range(LAYERS)]
    side = []
    for bodies in layer:
        xy = np.array([pos[b] for b in bodies])
        d = np.linalg.norm(xy[:, None, :] - xy[None, :, :], axis=2)
        i, j = np.nonzero(np.triu(d < 2.5 * R, 1))
        side.append(2 * R - d[i, j])
    return vert, np.concatenate(side)


def _settle(material: dict | None, law: dict, n: int, steps: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, object]:
    with ground_world(G, 1 / 240) as (cid, plane):
        columns = _pile(cid, n)
        kw = {"material": material} if material else {}
        bk = BulletContacts(cid, manage=[plane, *[b for col in columns for b in col]], law=law,
                            **kw)
        implicit = 0
        for _ in range(steps):
            info = bk.step()
            implicit = max(implicit, info.stats.implicit)
        bk.sync()
        vert, side = _overlaps(cid, columns)
        load = (LAYERS - np.arange(LAYERS)) * M * G  # contact j from the ground carries this
        return vert, side, load, (bk.last, implicit)


def test_soft_pile_lands_and_rests_at_the_static_hertz_overlaps() -> None:
    """100 soft spheres (Hunt-Crossley k = 1e5 N/m^1.5, cr 0.5; PyBullet's lateral friction,
    the default: 0.5 x 0.5 between spheres, 0.5 x 1 on the ground) in 25 columns of 4, ~260
    contacts in one group (the implicit step of large groups), after 1.5 s: every column
    contact's overlap within 1 % of (i m g / k)^(2/3) (observed 4e-7), the side contacts at
    0 overlap (< 1e-9 m) and without force, and the reported normal forces of the loaded
    contacts are the weights above them within 1 %."""
    k = 1e5
    vert, side, load, (last, implicit) = _settle(None, {"name": "hunt_crossley", "cr": 0.5,
                                                        "k": k}, 100, 360)
    assert implicit > 32  # the large-group path took the pile
    expected = (load / k) ** (2 / 3)
    assert np.max(np.abs(vert / expected[None, :] - 1)) < 0.01
    assert len(side) == 2 * 4 * 5 * LAYERS  # 5 x 5 columns: 40 neighbour pairs per layer
    assert np.max(np.abs(side)) < 1e-9
    f = np.sort(last.normal_force)
    assert np.all(np.abs(f[:len(side)]) < 1e-9 * M * G)  # the side contacts: no load
    loaded = np.sort(f[len(side):]).reshape(LAYERS, -1)  # 25 of each load, lightest first
    assert np.max(np.abs(loaded / load[::-1, None] - 1)) < 0.01


def test_steel_pile_rests_at_the_static_hertz_overlaps() -> None:
    """36 steel spheres (Hertz k from E = 200 GPa, nu = 0.3 on every link; sphere-sphere
    k = 4/3 E* sqrt(R/2), sphere-plane 4/3 E* sqrt(R)) in 9 columns of 4 (~110 contacts, one
    group): stiff contacts (omega dt ~ 60) through the same implicit step; every column
    contact's overlap within 1 % of (i m g / k)^(2/3) after 1 s (observed 3e-5), the side
    contacts at 0."""
    steel = {"E": 2e11, "nu": 0.3}
    vert, side, load, (_, implicit) = _settle(steel, {"name": "hunt_crossley", "cr": 0.5}, 36,
                                              240)
    assert implicit > 32
    k = np.array([float(hertz_stiffness(2e11, 0.3, 2e11, 0.3, R, math.inf if j == 0 else R))
                  for j in range(LAYERS)])
    expected = (load / k) ** (2 / 3)
    assert np.max(np.abs(vert / expected[None, :] - 1)) < 0.01
    assert np.max(np.abs(side)) < 1e-9


def test_large_groups_option_is_checked() -> None:
    """``large_groups`` other than "implicit" / "exact": a clear error naming both."""
    with ground_world(G) as (cid, plane), pytest.raises(ParameterError,
                                                        match="implicit, exact"):
        BulletContacts(cid, manage=[plane], law={"name": "hunt_crossley", "cr": 0.5, "k": 1e5},
                       large_groups="gauss")
