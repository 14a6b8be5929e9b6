"""MuJoCo geoms as contact-layer shapes (against MuJoCo's own collision of the same state) and
the backend's errors at the door (one clear error naming the bad value; the model untouched).
"""

from __future__ import annotations

import subprocess
import sys

import mujoco
import numpy as np
import pytest
from mujoco_world import balls_xml, world

from mbplugin.errors import ParameterError
from mbplugin.mujoco import MujocoContacts, geom

LAW = {"name": "hunt_crossley", "cr": 0.5, "k": 1e5}

# a body whose inertial frame is offset and turned from its body frame, with geoms offset and
# turned in it, placed tilted into the floor: every shape's pose goes through the frames
_POSED = """<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1"/>
<body name="b" pos="0 0 {z}" quat="0.9 0.2 -0.3 0.1"><freejoint/>
<inertial pos="0.01 -0.02 0.005" quat="0.8 0.1 0.5 -0.2" mass="1" diaginertia="0.01 0.02 0.03"/>
{geom}</body></worldbody></mujoco>"""

GEOMS = {
    "sphere": ('<geom name="g" type="sphere" size="0.05" pos="0.02 0.01 -0.03"/>', 0.04),
    "capsule": ('<geom name="g" type="capsule" size="0.03 0.06" pos="0.01 0 -0.02" '
                'euler="20 70 10"/>', 0.07),
    "box": ('<geom name="g" type="box" size="0.05 0.04 0.03" pos="0.01 0.02 0" '
            'euler="10 -20 30"/>', 0.035),
}


@pytest.mark.parametrize("kind", sorted(GEOMS))
def test_shapes_touch_the_floor_where_mujoco_says(kind: str) -> None:
    """Our detection of the geom against the floor gives MuJoCo's own penetration depths
    (``-contact.dist``) and contact count for the same state (MuJoCo's box-plane and
    capsule-plane report one contact per penetrating corner / end, as ours does)."""
    text, z = GEOMS[kind]
    xml = _POSED.format(z=z, geom=text)
    m_nat, d_nat = world(xml)
    mujoco.mj_forward(m_nat, d_nat)
    native = np.sort([-d_nat.contact.dist[i] for i in range(d_nat.ncon)])
    assert len(native) >= 1
    m, d = world(xml)
    contacts = MujocoContacts(m, d, manage=["floor"], law=LAW)
    mujoco.mj_forward(m, d)
    bodies = contacts.loop.body_state(*contacts.host.read_state())
    batch = contacts.contact_model.detect(bodies)
    ours = np.sort(batch.delta[batch.delta > 0])
    assert len(ours) == len(native)
    assert np.allclose(ours, native, atol=1e-12)


def _aabb(shape) -> tuple[np.ndarray, np.ndarray]:
    v = shape.vertices
    return 0.5 * (v.max(axis=0) + v.min(axis=0)), 0.5 * (v.max(axis=0) - v.min(axis=0))


def test_meshes_cylinders_and_ellipsoids_have_mujocos_extents() -> None:
    """The polyhedra standing in for a mesh, a cylinder and an ellipsoid geom span MuJoCo's
    own bounding box of the geom (``geom_aabb``, geom frame): the mesh and the cylinder to
    rounding, the ellipsoid's icosphere within its chordal error (1 %)."""
    cube = " ".join(f"{x} {y} {z}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1))
    xml = f"""<mujoco><asset><mesh name="cube" vertex="{cube}" scale="0.02 0.03 0.04"/>
    </asset><worldbody><geom name="floor" type="plane" size="5 5 .1"/>
    <body pos="0 0 1"><freejoint/><geom name="m" type="mesh" mesh="cube"/></body>
    <body pos="1 0 1"><freejoint/><geom name="c" type="cylinder" size="0.03 0.05"/></body>
    <body pos="2 0 1"><freejoint/><geom name="e" type="ellipsoid" size="0.03 0.04 0.05"/></body>
    </worldbody></mujoco>"""
    m, d = world(xml)
    contacts = MujocoContacts(m, d, manage=["floor"], law=LAW)
    cm = contacts.contact_model
    for name, tol in (("m", 1e-9), ("c", 1e-9), ("e", 0.01)):
        g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)
        shape = cm.shape(int(np.flatnonzero(contacts.geoms == g)[0]))
        centre, half = _aabb(shape)
        assert np.allclose(centre, m.geom_aabb[g][:3], atol=tol * 0.05)
        assert np.allclose(half, m.geom_aabb[g][3:], rtol=tol)


def _bits(m: mujoco.MjModel) -> tuple[np.ndarray, ...]:
    return (m.geom_contype.copy(), m.geom_conaffinity.copy(), m.body_contype.copy(),
            m.body_conaffinity.copy())


def _unchanged(before: tuple[np.ndarray, ...], m: mujoco.MjModel) -> bool:
    return all(np.array_equal(a, b) for a, b in zip(before, _bits(m), strict=True))


BALL = balls_xml([("ball", 0.01, 0.05, (0, 0, 0.1))])


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"manage": ["nothing"]}, "no body or geom named 'nothing'"),
    ({"manage": [7]}, "body id 7 is outside"),
    ({"manage": [geom(9)]}, "geom id 9 is outside"),
    ({"manage": []}, "name at least one"),
    ({"manage": [("ball", 3.5)]}, r"3\.5"),
    ({"manage": ["floor"], "law": {"name": "hunt_crossley", "cr": 0.5}},
     r"no 'k' given and geom 'floor' of body 'world'.* no material"),
    ({"manage": ["floor"], "rtol": 0.5}, "rtol = 0.5 is outside"),
    ({"manage": ["floor"], "solver": "euler"}, "solver = 'euler'"),
    ({"manage": ["floor"], "verify": 9}, "verify = 9 is outside"),
    ({"manage": ["floor"], "friction": 3}, "friction = 3"),
])
def test_bad_input_is_refused_before_the_model_is_touched(kwargs: dict, match: str) -> None:
    m, d = world(BALL)
    before = _bits(m)
    args = {"law": LAW, **kwargs}
    with pytest.raises(ParameterError, match=match):
        MujocoContacts(m, d, **args)
    assert _unchanged(before, m)


def test_mujoco_specific_refusals() -> None:
    m, d = world(BALL)
    with pytest.raises(ParameterError, match="mjINT_EULER"):
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        MujocoContacts(m, d, manage=["floor"], law=LAW)
    m, d = world(BALL)
    with pytest.raises(ParameterError, match=r"mujoco\.MjModel"):
        MujocoContacts(d, d, manage=["floor"], law=LAW)
    other = mujoco.MjData(world(balls_xml([]))[0])
    with pytest.raises(ParameterError, match="not made for this model"):
        MujocoContacts(m, other, manage=["floor"], law=LAW)
    # a visual geom (contype = conaffinity = 0): MuJoCo never collides it, nothing to manage
    m, d = world(balls_xml([], extra='<body name="v" pos="0 0 1"><freejoint/>'
                                     '<geom type="sphere" size="0.1" contype="0" '
                                     'conaffinity="0"/></body>'))
    with pytest.raises(ParameterError, match="names no geom pair MuJoCo collides"):
        MujocoContacts(m, d, manage=[("floor", "v")], law=LAW)
    # an explicit <pair>: MuJoCo collides it whatever the bits
    m, d = world(BALL.replace("</worldbody>", "</worldbody><contact><pair geom1='floor' "
                                                "geom2='ball'/></contact>"))
    before = _bits(m)
    with pytest.raises(ParameterError, match="explicit <contact><pair>"):
        MujocoContacts(m, d, manage=["floor"], law=LAW)
    assert _unchanged(before, m)
    # a height field: a clear error naming the geom
    m, d = world("""<mujoco><asset><hfield name="h" nrow="3" ncol="3" size="1 1 .1 .1"/>
        </asset><worldbody><geom name="terrain" type="hfield" hfield="h"/>
        <body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
        </worldbody></mujoco>""")
    with pytest.raises(ParameterError, match=r"geom 'terrain'.*height field"):
        MujocoContacts(m, d, manage=["terrain"], law=LAW)
    # a name that is a body's and another body's geom's
    m, d = world(balls_xml([("ball", 0.01, 0.05, (0, 0, 0.1))],
                           extra='<body name="floor2" pos="1 0 1"><freejoint/>'
                                 '<geom name="ball2" type="sphere" size="0.1"/></body>'
                                 '<body name="ball2" pos="2 0 1"><freejoint/>'
                                 '<geom type="sphere" size="0.1"/></body>'))
    with pytest.raises(ParameterError, match="names a body and a geom"):
        MujocoContacts(m, d, manage=["ball2"], law=LAW)


def test_step_after_release_is_refused() -> None:
    m, d = world(BALL)
    contacts = MujocoContacts(m, d, manage=["floor"], law=LAW)
    contacts.release()
    with pytest.raises(ParameterError, match="release"):
        contacts.step()


def test_a_second_backend_on_taken_pairs_says_to_release_the_first() -> None:
    """A model managed twice over the same pairs: the second backend finds MuJoCo's response
    to them off and says which call gives them back; after release() it builds."""
    m, d = world(BALL)
    first = MujocoContacts(m, d, manage=["floor"], law=LAW)
    with pytest.raises(ParameterError, match=r"another MujocoContacts.*release\(\) first"):
        MujocoContacts(m, d, manage=["floor"], law=LAW)
    first.release()
    MujocoContacts(m, d, manage=["floor"], law=LAW).release()


def test_mbplugin_imports_without_mujoco_and_names_the_extra() -> None:
    """With ``mujoco`` not importable, ``import mbplugin`` and ``import mbplugin.mujoco`` work
    and the backend raises an ImportError naming the extra."""
    code = ("import sys; sys.modules['mujoco'] = None\n"
            "import mbplugin, mbplugin.mujoco\n"
            "from mbplugin.mujoco import MujocoContacts\n"
            "try:\n"
            "    MujocoContacts(None, None, manage=[0], law='hertz')\n"
            "except ImportError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "mbplugin[mujoco]" in out.stdout
