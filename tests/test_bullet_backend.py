"""The PyBullet backend against references from outside the backend.

* c_r of every bounce: the exact impact analyser ``impact(law, m, v_in, press=m g)`` (the papers'
  binary collinear impact, an independent integrator) for Hunt-Crossley and exact-COR laws;
* a resting ball: the static Hertz overlap (m g / k)^(2/3);
* a stack: the static contact forces (N - i) m g;
* unmanaged pairs: PyBullet's own native trajectory, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pybullet_data
import pytest

from mbplugin.bullet import BulletContacts
from mbplugin.contact import effective_modulus
from mbplugin.errors import ParameterError
from mbplugin.impact import impact
from mbplugin.laws import make_law

G = 9.81
R = 0.01
STEEL = {"E": 2e11, "nu": 0.3}


@pytest.fixture
def client():
    cid = p.connect(p.DIRECT)
    p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    yield cid
    if p.isConnected(physicsClientId=cid):
        p.disconnect(physicsClientId=cid)


def ball(cid: int, z: float, mass: float, x: float = 0.0, radius: float = R) -> int:
    s = p.createCollisionShape(p.GEOM_SPHERE, radius=radius, physicsClientId=cid)
    b = p.createMultiBody(mass, s, basePosition=[x, 0, z], physicsClientId=cid)
    p.changeDynamics(b, -1, linearDamping=0, angularDamping=0, physicsClientId=cid)
    return b


def z_of(cid: int, b: int) -> float:
    return p.getBasePositionAndOrientation(b, physicsClientId=cid)[0][2]


STEEL_MASS = 7800 * 4 / 3 * math.pi * R**3
K_STEEL = 4 / 3 * float(effective_modulus(2e11, 0.3)) * math.sqrt(R)  # Hertz, rigid plane


@pytest.mark.parametrize(
    ("dt", "stiff", "law"),
    [(1 / 240, "steel", "hunt_crossley"), (1 / 1000, "steel", "khatiwada"),
     (1 / 240, "soft", "khatiwada"), (1 / 1000, "soft", "hunt_crossley")],
)
def test_drop_ball_cr_and_bounce_times(client, dt, stiff, law) -> None:
    """Every bounce (v_in > 0.15 m/s): c_r of the exact impact analyser within 1e-3, onset time
    within one host step of the standalone engine's (exact free flight, event-located onsets;
    PyBullet's own semi-implicit flight would land ~1 host step early per bounce)."""
    from mbplugin.scene import load_scene

    p.setTimeStep(dt, physicsClientId=client)
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    if stiff == "steel":
        m, k, spec = STEEL_MASS, K_STEEL, {"name": law, "cr": 0.7}
        kw = {"material": STEEL}
    else:
        m, k = 0.05, 1e5
        spec = {"name": law, "cr": 0.7, "k": k}
        kw = {}
    b = ball(client, 0.1 + R, m)
    bk = BulletContacts(client, manage=[plane], law=spec, **kw)
    for _ in range(int(0.75 / dt)):
        bk.step()
    bounces = bk.bounces()
    fast = bounces[bounces["v_in"] > 0.15]
    assert len(fast) >= 3
    ref_law = make_law(law, k=k, cr=0.7)
    for row in fast:
        ref = impact(ref_law, m, float(row["v_in"]), press=m * G)
        assert abs(row["cr"] - ref.cr_out) < 1e-3, (row, ref.cr_out)
    assert z_of(client, b) > R - 1e-3  # never fell through
    sets = [f"law={law}", f"k={k}", f"radius={R}", f"mass={m}", "height=0.1", "duration=0.75",
            "cr=0.7"]
    engine = [e for e in load_scene("scenes/drop_ball.toml", sets).run().bounces
              if e["v_in"] > 0.15]
    assert len(engine) == len(fast)
    for row, ref in zip(fast, engine, strict=True):
        assert abs(row["t_in"] - ref["t"]) < dt, (row["t_in"], ref["t"])


def test_ball_at_rest_static_overlap_and_no_drift(client) -> None:
    p.setTimeStep(1 / 60, physicsClientId=client)
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    m, k = 0.05, 1e5
    b = ball(client, R, m)  # touching, at rest
    bk = BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.3, "k": k})
    for _ in range(180):  # 3 s: settles
        bk.step()
    d_static = (m * G / k) ** (2 / 3)
    z0 = z_of(client, b)
    assert abs((R - z0) - d_static) < 0.01 * d_static
    for _ in range(600):  # 10 s more
        bk.step()
    assert abs(z_of(client, b) - z0) < 1e-6


def test_stack_of_five_holds_with_static_forces(client) -> None:
    """10 s at 1/240 s (2400 host steps, ~5 s with the compiled sub-stepper): no ball moves by
    1 um at any step and every contact carries the weight above it within 1 %."""
    p.setTimeStep(1 / 240, physicsClientId=client)
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    m, k, n = 0.05, 1e5, 5
    # static overlaps of the Hertz law: contact i below ball i carries (n - i) m g
    d = [((n - i) * m * G / k) ** (2 / 3) for i in range(n)]
    z, balls = R - d[0], []
    for i in range(n):
        balls.append(ball(client, z, m))
        if i + 1 < n:
            z += 2 * R - d[i + 1]
    pairs = [(balls[i], balls[i + 1]) for i in range(n - 1)]
    bk = BulletContacts(client, manage=[plane, *pairs],
                        law={"name": "hunt_crossley", "cr": 0.5, "k": k})
    weight = np.array([(n - i) * m * G for i in range(n)])
    z0 = np.array([z_of(client, b) for b in balls])
    moved, force_err = 0.0, 0.0
    for _ in range(2400):  # 10 s
        info = bk.step()
        moved = max(moved, float(np.max(np.abs([z_of(client, b) for b in balls] - z0))))
        # normal force of each contact vs the weight above it (side b: the upper body)
        below = {int(a[1][0]): f for a, f in zip(info.links, info.normal_force, strict=True)}
        force_err = max(force_err, float(np.max(np.abs(
            np.array([below[b] for b in balls]) / weight - 1))))
    assert moved < 1e-6
    assert force_err < 0.01


def test_unmanaged_pairs_are_native(client) -> None:
    """Ball 1 is managed, ball 2 is not: ball 2 follows PyBullet's native trajectory exactly
    (compared with a second client running the same scene without the backend)."""
    other = p.connect(p.DIRECT)
    try:
        traj = []
        for cid, manage in ((client, True), (other, False)):
            p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
            p.setGravity(0, 0, -G, physicsClientId=cid)
            plane = p.loadURDF("plane.urdf", physicsClientId=cid)
            b1 = ball(cid, 0.1, 0.05, x=0.0)
            b2 = ball(cid, 0.1, 0.05, x=1.0)
            bk = (BulletContacts(cid, manage=[(plane, b1)],
                                 law={"name": "hunt_crossley", "cr": 0.8, "k": 1e5})
                  if manage else None)
            zs = []
            for _ in range(240):
                if bk is None:
                    p.stepSimulation(physicsClientId=cid)
                else:
                    bk.step()
                zs.append(p.getBasePositionAndOrientation(b2, physicsClientId=cid)[0])
            traj.append(np.array(zs))
        assert np.array_equal(traj[0], traj[1])
        assert traj[0][-1][2] > 0.0  # rests on the plane (native contact)
    finally:
        p.disconnect(physicsClientId=other)


def test_several_clients_and_bullet_client_object() -> None:
    from pybullet_utils import bullet_client

    crs = []
    for _ in range(2):
        bc = bullet_client.BulletClient(connection_mode=p.DIRECT)
        bc.setAdditionalSearchPath(pybullet_data.getDataPath())
        bc.setGravity(0, 0, -G)
        plane = bc.loadURDF("plane.urdf")
        s = bc.createCollisionShape(p.GEOM_SPHERE, radius=R)
        b = bc.createMultiBody(0.05, s, basePosition=[0, 0, 0.05])
        bc.changeDynamics(b, -1, linearDamping=0)
        crs.append((bc, BulletContacts(bc, manage=[plane],
                                       law={"name": "khatiwada", "cr": 0.6, "k": 1e5})))
    for _ in range(60):
        for _, bk in crs:
            bk.step()
    first = [bk.bounces()[0]["cr"] for _, bk in crs]
    assert first[0] == first[1]
    assert abs(first[0] - 0.6) < 0.05


def test_bad_input_errors_and_nothing_applied(client, tmp_path) -> None:
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    b = ball(client, 0.05, 0.05)
    law = {"name": "hunt_crossley", "cr": 0.8, "k": 1e5}
    with pytest.raises(ParameterError, match="body id 99"):
        BulletContacts(client, manage=[99], law=law)
    with pytest.raises(ParameterError, match="link 3"):
        BulletContacts(client, manage=[((b, 3), plane)], law=law)
    with pytest.raises(ParameterError, match="cr"):
        BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "k": 1e5})
    with pytest.raises(ParameterError, match="material"):
        BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.8})
    # a static open mesh (PyBullet collides with its triangles; the contact layer needs a
    # closed surface): refused, the advice names what exists (leave the pair to PyBullet)
    urdf = tmp_path / "fin.urdf"
    urdf.write_text(
        '<?xml version="1.0"?><robot name="fin"><link name="base"><inertial><mass value="0"/>'
        '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial><collision>'
        f'<geometry><mesh filename="{pybullet_data.getDataPath()}/l_finger.stl"/></geometry>'
        '</collision></link></robot>')
    c = p.loadURDF(str(urdf), basePosition=[5, 0, 0], physicsClientId=client)
    with pytest.raises(ParameterError, match="leave this pair to PyBullet") as err:
        BulletContacts(client, manage=[(b, c)], law=law)
    assert "repair" not in str(err.value)
    # nothing was applied: the ball still rests on the plane with PyBullet's native contact
    for _ in range(240):
        p.stepSimulation(physicsClientId=client)
    assert z_of(client, b) > R - 1e-3
    other = p.connect(p.DIRECT)
    p.disconnect(physicsClientId=other)
    with pytest.raises(ParameterError, match="not connected"):
        BulletContacts(other, manage=[0], law=law)


def test_bouc_wen_maxwell_drop_matches_standalone_engine(client) -> None:
    """The law's state (rho, zeta) lives across host steps: a 10 ms contact spans 2-3 PyBullet
    steps, and every bounce's c_r matches the standalone engine's (exact free flight, adaptive
    integration with events) within 1 % and the impact analyser's within 1e-3."""
    from mbplugin.scene import load_scene

    prm = {"k": 1e5, "c": 300.0, "alpha": 0.5, "beta": 300.0, "gamma": 100.0}
    m = 0.05
    sets = ["law=bouc_wen_maxwell", "k=1e5", f"radius={R}", f"mass={m}", "height=0.1",
            "duration=0.7", "contact.params.n=1.0",  # the scene offers n = 1.5 (Hertz's n)
            ] + [f"contact.params.{k}={v}" for k, v in prm.items() if k != "k"]
    engine = load_scene("scenes/drop_ball.toml", sets).run().bounces
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    ball(client, 0.1 + R, m)
    law = make_law("bouc_wen_maxwell", **prm)
    bk = BulletContacts(client, manage=[plane], law=law)
    for _ in range(int(0.7 * 240)):
        bk.step()
    ours = bk.bounces()
    assert len(ours) >= 2 and len(engine) >= 2
    for row, ref in zip(ours, engine, strict=False):
        assert abs(row["t_in"] - ref["t"]) < 1 / 240  # exact free flight between contacts
        assert row["cr"] == pytest.approx(ref["cr"], rel=0.01)
        exact = impact(law, m, float(row["v_in"]), press=m * G)
        assert abs(row["cr"] - exact.cr_out) < 1e-3


def test_mesh_ball_bounces_like_the_sphere(client, tmp_path) -> None:
    """An icosphere (trimesh) loaded through a URDF/OBJ bounces like the sphere of its radius
    grown by PyBullet's 1 mm collision margin (PyBullet collides the hull so grown): apex
    heights agree within the mesh's chordal error (sagitta of its longest edge)."""
    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions=3, radius=R)
    mesh.export(tmp_path / "ball.obj")
    m = 0.05
    inertia = 0.4 * m * R * R
    (tmp_path / "ball.urdf").write_text(f"""<robot name="ball"><link name="base">
  <inertial><mass value="{m}"/><inertia ixx="{inertia}" iyy="{inertia}" izz="{inertia}"
   ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><mesh filename="ball.obj" scale="1 1 1"/></geometry></collision>
</link></robot>""")
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    sph = ball(client, 0.05 + R, m, x=0.0, radius=R + 1e-3)  # PyBullet's margin: 1 mm
    msh = p.loadURDF(str(tmp_path / "ball.urdf"), [0.5, 0, 0.05 + R], physicsClientId=client)
    p.changeDynamics(msh, -1, linearDamping=0, angularDamping=0, physicsClientId=client)
    bk = BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.8},
                        material=STEEL)
    zs, zm = [], []
    for _ in range(100):
        bk.step()
        zs.append(z_of(client, sph))
        zm.append(z_of(client, msh))
    zs, zm = np.array(zs), np.array(zm)
    edge = float(mesh.edges_unique_length.max())
    sagitta = R - math.sqrt(R * R - edge * edge / 4)
    after = slice(40, None)  # after the first bounce (t = 0.1 s at 1/240 s)
    assert zs[after].max() > 0.02  # it did bounce
    assert abs(zs[after].max() - zm[after].max()) < sagitta


@pytest.mark.parametrize("mode", ["regularised", "stick"])
def test_friction_creep_and_stick_on_a_slope(client, mode) -> None:
    """A non-rotating ball on a slope (gravity tilted by atan 0.3, mu = 0.6). Regularised
    Coulomb friction creeps at the closed-form v_eps atanh(tan(theta) / mu) (the engine's
    friction model, Andersson et al. 2007); the tangential spring (Dahl) holds: its drift is
    below 1 % of that creep."""
    tan, mu, v_eps = 0.3, 0.6, 1e-3
    th = math.atan(tan)
    p.setGravity(-G * math.sin(th), 0, -G * math.cos(th), physicsClientId=client)
    p.setTimeStep(1 / 60, physicsClientId=client)
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    m, k, r = 1.0, 1e7, 0.02
    d = (m * G * math.cos(th) / k) ** (2 / 3)
    b = ball(client, r - d, m, radius=r)
    p.changeDynamics(b, -1, localInertiaDiagonal=[1e3] * 3, physicsClientId=client)
    kw = ({"friction": {"mu": mu, "v_eps": v_eps}} if mode == "regularised"
          else {"stick": {"k_t": 1e4, "mu": mu, "c_t": 200.0}})
    bk = BulletContacts(client, manage=[plane], law={"name": "hunt_crossley", "cr": 0.3, "k": k},
                        **kw)
    xs = []
    for _ in range(120):
        bk.step()
        xs.append(p.getBasePositionAndOrientation(b, physicsClientId=client)[0][0])
    speed = abs(xs[-1] - xs[60])  # over the last second
    creep = v_eps * math.atanh(tan / mu)
    if mode == "regularised":
        assert speed == pytest.approx(creep, rel=0.05)
    else:
        assert speed < 0.01 * creep


def test_body_added_later_is_managed(client) -> None:
    """A ball created after the backend, registered with add_body, bounces with the law
    (c_r of the exact analyser) instead of PyBullet's contact."""
    plane = p.loadURDF("plane.urdf", physicsClientId=client)
    k, m = 1e5, 0.05
    bk = BulletContacts(client, manage=[plane], law={"name": "khatiwada", "cr": 0.6, "k": k})
    bk.step()
    b = ball(client, 0.05 + R, m)
    bk.add_body(b)
    for _ in range(60):
        bk.step()
    rows = bk.bounces()
    assert len(rows) >= 1
    ref = impact(make_law("khatiwada", k=k, cr=0.6), m, float(rows[0]["v_in"]), press=m * G)
    assert abs(rows[0]["cr"] - ref.cr_out) < 1e-3
