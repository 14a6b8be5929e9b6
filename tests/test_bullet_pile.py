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


def test_gauss_seidel_finds_the_backward_euler_step_of_a_stiff_column() -> None:
    """The implicit step of a large group solves backward Euler's equations: for a linear law
    (Hooke, F = k delta, every contact closing) they are linear in the normal impulses,
    p = dt k (delta0 - dt (n . u* + G p)), G = N^T W N (the normal Delassus matrix of a column
    of 10 free spheres on the ground), solved here densely by NumPy. Stiff contacts
    (dt^2 k G up to ~700: Gauss-Seidel's slow case, each sphere pressed from both sides;
    ~800 sweeps), a tolerance of 1e-10: the impulses within 1e-8 of the dense solution
    (observed 4e-9), the end state (u1 = u* + W P, delta1 = delta0 - dt n . u1) consistent
    with them."""
    from mbplugin.contact import ContactBatch, ContactStore
    from mbplugin.laws import make_law
    from mbplugin.pipeline import large_groups, layout
    from mbplugin.pipeline.delassus import free_body_delassus, normal_delassus

    h, dt, k = 10, 1 / 240, 1e6
    rng = np.random.default_rng(5)
    d0 = rng.uniform(1e-5, 3e-5, h)
    vz = rng.uniform(0.01, 0.05, h)  # each contact's approach speed (> 0: closing)
    n = np.tile([0.0, 0.0, 1.0], (h, 1))
    z3 = np.zeros((h, 3))
    u0 = -vz[:, None] * n  # velocity of b relative to a, ddelta = -n . u = vz
    a = np.arange(-1, h - 1)  # contact j: sphere j-1 (or the ground) below sphere j
    b = np.arange(h)
    batch = ContactBatch(a, b, np.arange(h, dtype=np.int64), z3, n, d0, vz.copy(), z3.copy(),
                         np.full(h, M / 2), np.full(h, R / 2), z3.copy(), z3.copy(),
                         np.zeros(h, dtype=np.int64), np.full(h, np.nan))
    store = ContactStore(make_law("hooke", k=k))
    store.begin(batch, 0.0)
    contact = np.concatenate([np.arange(1, h), np.arange(h)])
    sign = np.concatenate([-np.ones(h - 1), np.ones(h)])
    obj = np.concatenate([np.arange(h - 1), np.arange(h)])
    r = np.concatenate([np.tile([0.0, 0.0, R], (h - 1, 1)), np.tile([0.0, 0.0, -R], (h, 1))])
    inv_i = np.array([np.eye(3) / (0.4 * M * R * R)] * h)
    W = free_body_delassus(h, contact, sign, obj, r, np.full(h, 1 / M), inv_i)
    a_free = np.zeros((h, 3))
    a_free[0] = [0.0, 0.0, -G]  # the ground does not fall
    P, d1, u1, loaded, _, info = large_groups.solve(
        store, batch, W, a_free, d0, u0, layout.head(), np.zeros((h, 2)), None, 0.0, dt,
        1e-10)
    G_nn = normal_delassus(W, n).toarray()
    c = np.einsum("ij,ij->i", u0 + a_free * dt, n)
    p = np.linalg.solve(np.eye(h) + dt * dt * k * G_nn, dt * k * (d0 - dt * c))
    assert np.all(p > 0) and loaded.all()
    assert np.max(np.abs(P @ np.array([0.0, 0.0, 1.0]) - p)) < 1e-8 * np.max(p)
    assert np.max(np.abs(P[:, :2])) == 0.0
    assert np.allclose(u1, u0 + a_free * dt + (W @ P.ravel()).reshape(h, 3), rtol=0,
                       atol=1e-12)
    assert np.allclose(d1, d0 - dt * u1[:, 2], rtol=0, atol=1e-15)
    assert info["sweeps"] > 10  # a strongly coupled column: many sweeps, converged
