"""Bad input to the contact layer fails at the door with a ParameterError naming the culprit."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from mbplugin.contact import (
    BodyState,
    Box,
    Capsule,
    ContactModel,
    CylindricalHole,
    Material,
    Mesh,
    Plane,
    Sphere,
    SphericalHole,
)
from mbplugin.errors import ParameterError, UnknownLawError


@pytest.mark.parametrize("bad", [0.0, -0.01, float("nan"), float("inf")])
@pytest.mark.parametrize("make", [Sphere, SphericalHole, CylindricalHole,
                                  lambda r: Capsule(r, 0.1), lambda r: Capsule(0.1, r),
                                  lambda r: Box((0.1, r, 0.1))])
def test_non_positive_sizes(make, bad):
    with pytest.raises(ParameterError, match=r"allowed range \(0, inf\)"):
        make(bad)


def test_other_shape_parameters():
    with pytest.raises(ParameterError, match="'normal'"):
        Plane(normal=(0, 0, 0))
    with pytest.raises(ParameterError, match="half_extents"):
        Box((0.1, 0.1))
    with pytest.raises(ParameterError, match="must be a number"):
        Sphere("big")


def test_materials():
    with pytest.raises(ParameterError, match=r"'nu' = 0.6 is outside its allowed range \(-1, 0.5"):
        Material("x", E=1e9, nu=0.6)
    with pytest.raises(ParameterError, match="'E' = -1"):
        Material("x", E=-1.0, nu=0.3)
    with pytest.raises(ParameterError, match="'rho' = 0"):
        Material("x", E=1e9, nu=0.3, rho=0.0)


def test_degenerate_mesh():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
    flat = trimesh.Trimesh(pts, [[0, 1, 2], [1, 3, 2], [0, 2, 1], [1, 2, 3]], process=False)
    with pytest.raises(ParameterError, match="Mesh"):
        Mesh(flat)
    with pytest.raises(ParameterError, match="at least 4"):
        Mesh(trimesh.Trimesh(pts[:3], [[0, 1, 2]], process=False))


def test_nan_pose_and_bad_bodies():
    with pytest.raises(ParameterError, match=r"body 1: 'pos' is not finite"):
        BodyState.create([[0, 0, 0], [np.nan, 0, 0]], mass=1.0)
    with pytest.raises(ParameterError, match="quaternion has zero norm"):
        BodyState.create([[0, 0, 0]], quat=[[0, 0, 0, 0]], mass=1.0)
    with pytest.raises(ParameterError, match=r"mass = -1 kg, allowed range \(0, inf\)"):
        BodyState.create([[0, 0, 0]], mass=-1.0)
    with pytest.raises(ParameterError, match="positive definite"):
        BodyState.create([[0, 0, 0]], mass=1.0, inertia=[1.0, -1.0, 1.0])
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(Sphere(0.1), 0)
    m.set_default_law({"name": "hooke", "k": 1.0})
    st = BodyState.create([[0, 0, 0.05]], mass=1.0)
    assert len(m.detect(st)) == 1
    st.omega[0, 2] = np.inf  # a state corrupted after creation is caught by detect
    with pytest.raises(ParameterError, match="'omega' is not finite"):
        m.detect(st)
    with pytest.raises(ParameterError, match="margin"):
        m.detect(BodyState.create([[0, 0, 0.05]], mass=1.0), margin=-1.0)
    m.add_shape(Sphere(0.1), 3)
    with pytest.raises(ParameterError, match="attached to body 3 but the state has 1 bodies"):
        m.detect(BodyState.create([[0, 0, 0.05]], mass=1.0))


def test_unknown_material_or_law_in_the_pair_table():
    m = ContactModel()
    m.add_material("steel", E=2e11, nu=0.3)
    with pytest.raises(ParameterError, match="unknown material 'rubber'; defined: steel"):
        m.set_pair_law({"name": "hertz", "k": 1.0}, materials=("steel", "rubber"))
    with pytest.raises(ParameterError, match="unknown material 'wood'"):
        m.add_shape(Sphere(0.1), 0, material="wood")
    with pytest.raises(UnknownLawError, match="unknown law 'hunt_crosley'; did you mean"):
        m.set_pair_law({"name": "hunt_crosley", "cr": 0.5}, materials=("steel", "steel"))
    with pytest.raises(UnknownLawError):
        m.set_default_law("no_such_law")
    with pytest.raises(ParameterError, match="exactly one of"):
        m.set_pair_law("hertz")
    with pytest.raises(ParameterError, match="'name' entry"):
        m.set_default_law({"k": 1.0})
    with pytest.raises(ParameterError, match=r"parameter 'cr' = 1.5 is outside"):
        m.set_default_law({"name": "hunt_crossley", "k": 1e9, "cr": 1.5})


def test_missing_default_law_and_missing_materials_for_hertz_k():
    m = ContactModel()
    m.add_shape(Plane(), -1)
    m.add_shape(Sphere(0.1), 0)
    with pytest.raises(ParameterError, match="no default law"):
        m.detect(BodyState.create([[0, 0, 0.05]], mass=1.0))
    m.set_default_law("hertz")  # no k: Hertz k needs materials
    with pytest.raises(ParameterError, match="has no material"):
        m.make_store()


def test_bad_shape_and_body_arguments():
    m = ContactModel()
    with pytest.raises(ParameterError, match="unknown shape"):
        m.add_shape("sphere", 0)
    with pytest.raises(ParameterError, match="integer >= -1"):
        m.add_shape(Sphere(0.1), -2)
    with pytest.raises(ParameterError, match="finite 3-vector"):
        m.add_shape(Sphere(0.1), 0, pos=(0, np.nan, 0))
