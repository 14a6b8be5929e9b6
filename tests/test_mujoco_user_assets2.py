"""What a new user brings to the MuJoCo host (issue 21, branch mjfuzz): a ball through a thin
slab within one step, meshes of their own (a cube mesh, a tessellated cube, a mesh whose origin
is far from its centroid, a scaled mesh, a non-convex mesh, a long thin bar, mesh on mesh, mesh
on a box ground).

Every figure is from outside the code under test: the ball's crossing from MuJoCo's own
``qpos``; rest as sum F = m g (the bodies' weights from the model's masses); overlaps against
MuJoCo's ``mj_geomDistance``; a block sliding at the Coulomb deceleration mu g (its velocity
slope from MuJoCo's ``qvel``)."""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pytest
from thin_ball import SOFT, M, R

from mbplugin.contact.sizes import PassThroughWarning
from mbplugin.mujoco import MujocoContacts

SLAB = '<geom name="slab" type="box" size="0.5 0.5 0.005"/>'


def _ball_on_slab(delta0: float, v: float) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """A free ball (R, M) over a 1 cm slab at z in [-5, 5] mm, overlapping it by ``delta0``
    (m), moving down at ``v`` (m/s), no gravity."""
    z = 0.005 + R - delta0
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><option gravity="0 0 0"/><worldbody>{SLAB}<body name="ball" pos="0 0 {z!r}">'
        f'<freejoint/><geom name="ball" type="sphere" size="{R}" mass="{M}"/></body>'
        "</worldbody></mujoco>")
    d = mujoco.MjData(m)
    d.qvel[2] = -v
    mujoco.mj_forward(m, d)
    return m, d


@pytest.mark.parametrize(("delta0", "v"), [(0.0002, 100.0), (0.003, 80.0), (0.001, 150.0)])
def test_a_soft_ball_fully_through_a_1cm_slab_in_one_step_is_reported(delta0, v):
    """Starting a 2 ms step barely into a 1 cm slab at 80-150 m/s, a soft ball (E = 1e7 Pa)
    ends the step wholly below it (MuJoCo's qpos: its top under the slab's bottom face), with
    no overlap at either end of the step. The run says so once (PassThroughWarning, naming
    both geoms; on main nothing was said)."""
    m, d = _ball_on_slab(delta0, v)
    contacts = MujocoContacts(m, d, manage=["slab"], law="hertz", material=SOFT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        contacts.step()
        through = float(d.qpos[2]) + R < -0.005  # wholly below the slab after one step
        for _ in range(5):
            contacts.step()
    said = [w for w in caught if issubclass(w.category, PassThroughWarning)]
    assert through
    assert len(said) == 1
    msg = str(said[0].message)
    assert "'slab'" in msg and "'ball'" in msg and "t = 0 s" in msg
    assert said[0].filename == __file__


def test_a_ball_bouncing_off_a_slab_at_speed_says_nothing():
    """The same start against a steel ball (E = 2e11 Pa) at 10 m/s: it bounces back off the
    slab (MuJoCo's qvel turns upward) and nothing is said."""
    m, d = _ball_on_slab(0.0005, 10.0)
    contacts = MujocoContacts(m, d, manage=["slab"], law="hertz",
                              material={"E": 2e11, "nu": 0.3})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PassThroughWarning)
        for _ in range(20):
            contacts.step()
    assert float(d.qvel[2]) > 0.0 and float(d.qpos[2]) > 0.005 + R - 0.001


# -- meshes users bring ---------------------------------------------------------------------------
LAW = {"name": "hunt_crossley", "cr": 0.5, "k": 1e6}
MU = 0.5
H = 0.05  # the cube's half size (m)


def _cube_vertices(h: float = H, off: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> str:
    return " ".join(f"{s * h + o:.17g}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)
                    for s, o in zip((x, y, z), off, strict=True))


def _tessellated_cube(h: float = H, n: int = 4) -> str:
    """A cube of half size ``h`` as a user's STL has it: every face an n x n grid of quads, two
    outward triangles each (the edge vertices repeated per face)."""
    vert: list[tuple[float, float, float]] = []
    face: list[tuple[int, int, int]] = []
    t = np.linspace(-h, h, n + 1)
    for a in range(3):
        b, c = (a + 1) % 3, (a + 2) % 3
        for s in (-1.0, 1.0):
            base = len(vert)
            for u in t:
                for v in t:
                    p = [0.0, 0.0, 0.0]
                    p[a], p[b], p[c] = s * h, u, v
                    vert.append((p[0], p[1], p[2]))
            for i in range(n):
                for j in range(n):
                    q = [base + i * (n + 1) + j, base + (i + 1) * (n + 1) + j,
                         base + (i + 1) * (n + 1) + j + 1, base + i * (n + 1) + j + 1]
                    tri = [(q[0], q[1], q[2]), (q[0], q[2], q[3])]
                    face.extend(tri if s > 0 else [(x, z, y) for x, y, z in tri])
    return (f'vertex="{" ".join(f"{c:.17g}" for p in vert for c in p)}" '
            f'face="{" ".join(str(i) for f in face for i in f)}"')


def _l_prism() -> str:
    """A non-convex L-shaped prism 10 x 4 x 10 cm (MuJoCo collides its convex hull)."""
    pts = [(0, 0), (0.1, 0), (0.1, 0.03), (0.03, 0.03), (0.03, 0.1), (0, 0.1)]
    return " ".join(f"{x - 0.05:g} {y:g} {z - 0.05:g}" for x, z in pts for y in (-0.02, 0.02))


def _bar() -> str:
    """A long thin bar, 1 m x 2 cm x 2 cm."""
    return " ".join(f"{x:g} {y:g} {z:g}" for x in (-0.5, 0.5) for y in (-0.01, 0.01)
                    for z in (-0.01, 0.01))


#: name: (asset, geom attributes, the body's height above the ground's top (m), mass kg)
MESHES = {
    "cube8": (f'<mesh name="m" vertex="{_cube_vertices()}"/>', "", H, 1.0),
    "tessellated": (f'<mesh name="m" {_tessellated_cube()}/>', "", H, 1.0),
    "far_origin": (f'<mesh name="m" vertex="{_cube_vertices(off=(3.0, -2.0, 1.5))}"/>',
                   "", H, 1.0),
    "scaled": (f'<mesh name="m" vertex="{_cube_vertices(1.0)}" scale="0.08 0.05 0.02"/>',
               "", 0.02, 0.5),
    "non_convex": (f'<mesh name="m" vertex="{_l_prism()}"/>', "", 0.05, 1.0),
    "long_bar": (f'<mesh name="m" vertex="{_bar()}"/>', "", 0.01, 2.0),
}
#: the ground: plane, a fixed box, a fixed mesh slab (its top at z = 0 in each)
GROUNDS = {
    "plane": ("", '<geom name="ground" type="plane" size="5 5 .1"/>'),
    "box": ("", '<geom name="ground" type="box" size="1 1 0.05" pos="0 0 -0.05"/>'),
    "mesh": ('<mesh name="slab" vertex="' + " ".join(
        f"{x:g} {y:g} {z:g}" for x in (-1, 1) for y in (-1, 1) for z in (-0.1, 0.0)) + '"/>',
        '<geom name="ground" type="mesh" mesh="slab"/>'),
}


def _mesh_scene(kind: str, ground: str) -> tuple[mujoco.MjModel, mujoco.MjData, float]:
    asset, attrs, h, mass = MESHES[kind]
    gasset, gxml = GROUNDS[ground]
    xml = (f'<mujoco><option timestep="0.002"/><asset>{asset}{gasset}</asset>'
           f'<default><geom friction="{MU} 0.005 0.0001"/></default><worldbody>{gxml}'
           f'<body name="b" pos="0 0 0"><freejoint/><geom name="mover" type="mesh" mesh="m" '
           f'mass="{mass}" {attrs}/></body></worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    # lift the body so its lowest point (MuJoCo's own geom_aabb in the world) is 0.5 mm up
    gid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "mover")
    lowest = float(d.geom_xpos[gid, 2]) - _half_height(m, d, gid)
    d.qpos[2] += 0.0005 - lowest
    mujoco.mj_forward(m, d)
    assert h > 0
    return m, d, mass


def _half_height(m: mujoco.MjModel, d: mujoco.MjData, gid: int) -> float:
    """The geom's extent below its centre along world z (its mesh's vertices in the world)."""
    mid = m.geom_dataid[gid]
    a, n = m.mesh_vertadr[mid], m.mesh_vertnum[mid]
    v = m.mesh_vert[a:a + n] @ d.geom_xmat[gid].reshape(3, 3).T
    return float(-v[:, 2].min())


def _geom_overlap(m: mujoco.MjModel, d: mujoco.MjData) -> float:
    """MuJoCo's own overlap of the mover and the ground at ``d``'s current ``qpos``
    (``mj_geomDistance`` on a copy with its kinematics, minus)."""
    s = mujoco.MjData(m)
    s.qpos[:] = d.qpos
    mujoco.mj_kinematics(m, s)
    a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "ground")
    b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "mover")
    return -float(mujoco.mj_geomDistance(m, s, a, b, 0.1, None))


@pytest.mark.parametrize(("kind", "ground"), [
    *[(k, "plane") for k in MESHES], ("cube8", "mesh"), ("cube8", "box"),
    ("tessellated", "box"), ("scaled", "mesh")])
def test_user_mesh_rests_at_its_weight_and_slides_at_mu_g(kind, ground):
    """A user's mesh dropped from 0.5 mm onto the managed ground: after 0.6 s the contacts
    carry m g within 0.1 % (the model's mass) and their deepest overlap is MuJoCo's own
    (``mj_geomDistance``) within 2 %; pushed along x at 0.3 m/s (mu = 0.5 on both geoms) its
    speed falls by mu times the normal impulse per kg (g t plus the change of its vertical
    speed) within 1 % over 0.04 s (Coulomb's law, MuJoCo's qvel)."""
    m, d, mass = _mesh_scene(kind, ground)
    c = MujocoContacts(m, d, manage=["ground"], law=LAW)
    for _ in range(300):
        info = c.step()
    assert info.contacts >= 1
    assert float(np.sum(info.normal_force)) == pytest.approx(mass * 9.81, rel=1e-3)
    assert float(np.max(info.delta)) == pytest.approx(_geom_overlap(m, d), rel=0.02)
    v0, n = 0.3, 20
    d.qvel[0] = v0  # (at rest: the centre of mass moves at v0 too)
    vz0 = _com_velocity(m, d)[2]
    for _ in range(n):
        c.step()
    # Coulomb: the friction impulse is mu times the normal impulse, m (g t + the change of
    # the vertical speed) (the friction's moment rocks a cube on its edges: N swings about m g)
    v = _com_velocity(m, d)
    assert v[0] == pytest.approx(v0 - MU * (9.81 * n * 0.002 + v[2] - vz0), rel=1e-2)


def _com_velocity(m: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    """The mover's centre-of-mass velocity (m/s, world) at ``d``'s current state: MuJoCo's
    ``mj_objectVelocity`` on a copy with its kinematics (a free joint's qvel is the body
    origin's, far from the centre of mass of a mesh whose vertices are far from its origin)."""
    s = mujoco.MjData(m)
    s.qpos[:], s.qvel[:] = d.qpos, d.qvel
    mujoco.mj_kinematics(m, s)
    mujoco.mj_comPos(m, s)
    mujoco.mj_comVel(m, s)
    res = np.zeros(6)
    mujoco.mj_objectVelocity(m, s, mujoco.mjtObj.mjOBJ_BODY, 1, res, 0)
    return res[3:]


# -- scene files a user writes ---------------------------------------------------------------
SCENE = '''[scene]
name = "user_{shape}"
duration = 0.3
[world]
gravity = [0.0, 0.0, -9.81]
backend = "mujoco"
[[bodies]]
name = "floor"
shape = "plane"
fixed = true
[[bodies]]
name = "block"
shape = "{shape}"
{size}
mass = 0.2
position = [0.0, 0.0, {z!r}]
{turn}
[contact]
law = "hunt_crossley"
params = {{ k = 1e9, cr = 0.7 }}
'''


@pytest.mark.parametrize(("shape", "size", "turn", "half", "corners"), [
    ("box", "half_extents = [0.03, 0.02, 0.01]", "", 0.01, 4),
    ("capsule", "radius = 0.01\nhalf_length = 0.03",
     "orientation = [0.7071067811865476, 0.7071067811865476, 0.0, 0.0]", 0.01, 2)])
def test_user_scene_file_drops_a_flat_body_as_the_impact_analyser_says(
        tmp_path, capsys, shape, size, turn, half, corners):
    """A scene file written as docs/mujoco.md says (``world.backend = "mujoco"``, no
    ``host_dt``: MuJoCo's 2 ms): a box flat and a capsule lying, dropped 0.2 m. ``mbplugin
    run --json``: exit 0, the summary's backend and host step; every corner's (box: 4, capsule:
    its two ends) bounce at the free-fall time sqrt(2 h / g) and speed sqrt(2 g h), and its c_r
    the exact impact analyser's for the law on the body's mass shared by the corners (a
    symmetric landing: each carries m / n)."""
    import json
    import math

    from mbplugin.cli import main
    from mbplugin.impact import impact
    from mbplugin.laws import make_law

    h, m = 0.2, 0.2
    path = tmp_path / "s.toml"
    path.write_text(SCENE.format(shape=shape, size=size, turn=turn, z=h + half))
    assert main(["run", str(path), "--json", "--out", str(tmp_path / "o")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "mujoco" and out["host_dt"] == 0.002
    assert (tmp_path / "o" / "summary.json").exists()
    b = out["bounces"]
    assert len(b) == corners
    law = make_law("hunt_crossley", k=1e9, cr=0.7)
    for x in b:
        assert (x["body"], x["other"]) == ("block", "floor")
        assert x["t"] == pytest.approx(math.sqrt(2 * h / 9.81), abs=1e-6)
        assert x["v_in"] == pytest.approx(math.sqrt(2 * 9.81 * h), rel=1e-6)
        share = m / corners
        assert x["cr"] == pytest.approx(
            impact(law, share, x["v_in"], press=share * 9.81).cr_out, abs=1e-6)


@pytest.mark.parametrize(("edit", "word"), [
    (('backend = "mujoco"', 'backend = "Mujoco"'), "world.backend"),
    (('shape = "box"', 'shape = "cylinder"'), "bodies[1].shape"),
    (("half_extents", "size"), "'size'"),
    (("fixed = true", "fixed = false"), "bodies[0]"),
    (("mass = 0.2", "mass = 0.0"), "bodies[1].mass"),
    (('backend = "mujoco"', 'backend = "mujoco"\nhost_dt = 0.5'), "world.host_dt"),
    (('backend = "mujoco"', 'backend = "mujoco"\nintegrator = "rk4"'), "'integrator'"),
    (("mass = 0.2", "mass = 0.2\nrpy_deg = [90.0, 0.0, 0.0]"), "bodies[1].rpy_deg"),
])
def test_user_scene_file_mistakes_are_one_line_exit_2(tmp_path, capsys, edit, word):
    """The ways a user gets a MuJoCo scene file wrong: each is one line on stderr naming the
    key, exit 2, no output written."""
    from mbplugin.cli import main

    text = SCENE.format(shape="box", size="half_extents = [0.03, 0.02, 0.01]", turn="", z=0.21)
    assert edit[0] in text
    path = tmp_path / "s.toml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    code = main(["run", str(path), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and word in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("ground", ["plane", "mesh"])
def test_tilted_tessellated_cube_dropped_never_gains_energy(ground):
    """The tessellated cube turned 20 and 10 degrees, dropped from 5 cm onto the managed ground
    (Hunt-Crossley, cr 0.5: every impact dissipates): its kinetic + potential energy (MuJoCo's
    ``mj_energyPos`` / ``mj_energyVel`` at the step's end state) at each step out of contact is
    never above the previous such step's (1e-9 J; across at least one bounce off the ground)."""
    m, d, _ = _mesh_scene("tessellated", ground)
    q = np.zeros(4)
    mujoco.mju_euler2Quat(q, np.radians([20.0, 10.0, 0.0]), "xyz")
    d.qpos[3:7] = q
    d.qpos[2] += 0.1
    mujoco.mj_forward(m, d)
    m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    c = MujocoContacts(m, d, manage=["ground"], law=LAW)
    s = mujoco.MjData(m)
    free, last, touched, bounced = [], None, 0, 0
    for _ in range(400):
        info = c.step()
        s.qpos[:], s.qvel[:] = d.qpos, d.qvel
        mujoco.mj_forward(m, s)
        e = float(s.energy[0] + s.energy[1])
        if info.contacts:
            touched += last is not None and last == 0
        else:
            free.append(e)
            bounced += touched > 0 and bool(last)  # off the ground again after a touch
        last = info.contacts
    assert bounced >= 1
    assert np.all(np.diff(free) <= 1e-9)
