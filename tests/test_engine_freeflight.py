"""Free flight: the integrators against closed-form rigid-body motion (no contacts)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbplugin.dynamics.bodies import box_inertia, make_bodies, sphere_inertia
from mbplugin.dynamics.integrators import IntegratorSettings, integrate
from mbplugin.dynamics.loads import Load, Loads, TimeFunction
from mbplugin.dynamics.rotation import quat_from_rotvec, quat_multiply, quat_to_matrix
from mbplugin.dynamics.world import World
from mbplugin.errors import ParameterError

G = np.array([0.0, 0.0, -9.81])


def _projectile_world() -> World:
    b = make_bodies(["p"], [2.0], [sphere_inertia(2.0, 0.1)], pos=np.array([[0.0, 0.0, 1.0]]),
                    vel=np.array([[3.0, -1.0, 4.0]]))
    return World(b, gravity=G)


@pytest.mark.parametrize(
    "settings",
    [IntegratorSettings("rk4", dt=1e-2), IntegratorSettings(), IntegratorSettings(solver="DOP853")],
)
def test_projectile_exact(settings: IntegratorSettings) -> None:
    """x(t) = x0 + v0 t + g t^2/2: RK4 and the adaptive methods are exact for a parabola."""
    w = _projectile_world()
    t = 0.8
    y, _ = integrate(w, w.pack(), 0.0, t, settings)
    pos, _, vel, _ = w.bodies.layout.split(y)
    x0, v0 = np.array([0.0, 0.0, 1.0]), np.array([3.0, -1.0, 4.0])
    np.testing.assert_allclose(pos[0], x0 + v0 * t + 0.5 * G * t * t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(vel[0], v0 + G * t, rtol=0, atol=1e-12)


def test_symplectic_euler_projectile_error_is_g_h_t_over_2() -> None:
    """Semi-implicit Euler under constant g: x_n = x0 + v0 t + g t^2/2 + g h t/2 exactly."""
    w = _projectile_world()
    h, t = 1e-3, 0.8
    y, st = integrate(w, w.pack(), 0.0, t, IntegratorSettings("symplectic_euler", dt=h))
    assert st.steps == 800
    pos = w.bodies.layout.split(y)[0][0]
    exact = 1.0 + 4.0 * t + 0.5 * G[2] * t * t
    assert pos[2] - exact == pytest.approx(G[2] * h * t / 2.0, rel=1e-9)


def _symmetric_top() -> tuple[World, float, float, float, float]:
    I1, I3 = 0.3, 0.5
    w0, w3 = 0.7, 4.0
    b = make_bodies(["top"], [1.0], [np.diag([I1, I1, I3])], omega=np.array([[w0, 0.0, w3]]))
    return World(b, gravity=(0.0, 0.0, 0.0)), I1, I3, w0, w3


@pytest.mark.parametrize(
    "settings",
    [IntegratorSettings("rk4", dt=1e-3), IntegratorSettings(rtol=1e-11),
     IntegratorSettings(solver="DOP853", rtol=1e-11)],
)
def test_symmetric_top_body_rates(settings: IntegratorSettings) -> None:
    """Torque-free axisymmetric body: body rates precess at Omega = (I3 - I1)/I1 w3
    (Goldstein, Classical Mechanics, Sect. 5.6): wx = w0 cos(Omega t), wy = w0 sin(Omega t)."""
    w, I1, I3, w0, w3 = _symmetric_top()
    t = 3.0
    y, _ = integrate(w, w.pack(), 0.0, t, settings)
    om = w.bodies.layout.split(y)[3][0]
    big_omega = (I3 - I1) / I1 * w3
    np.testing.assert_allclose(
        om, [w0 * math.cos(big_omega * t), w0 * math.sin(big_omega * t), w3], atol=1e-8
    )


@pytest.mark.parametrize("solver", ["Radau", "DOP853"])
def test_tumbling_box_conserves_energy_and_angular_momentum(solver: str) -> None:
    """Spin near the intermediate axis (the Dzhanibekov flip): kinetic energy and the world
    angular momentum vector are invariants of the torque-free motion (Euler 1765)."""
    inertia = box_inertia(1.0, [0.5, 0.2, 0.1])
    b = make_bodies(["box"], [1.0], [inertia], omega=np.array([[0.05, 3.0, 0.05]]))
    w = World(b, gravity=(0.0, 0.0, 0.0))
    samples = []
    _y, _ = integrate(w, w.pack(), 0.0, 12.0, IntegratorSettings(solver=solver, rtol=1e-11),
                     callback=lambda t, yy, ev: samples.append(yy.copy()))
    bb = w.bodies
    e0 = bb.kinetic_energy(bb.vel, bb.omega)
    L0 = bb.angular_momentum(bb.pos, bb.quat, bb.vel, bb.omega)
    flips = 0
    last = None
    for yy in samples:
        pos, q, v, om = bb.layout.split(yy)
        assert abs(bb.kinetic_energy(v, om) - e0) < 1e-9 * e0
        np.testing.assert_allclose(bb.angular_momentum(pos, q, v, om), L0, atol=1e-9)
        sign = np.sign(om[0, 1])
        if last is not None and sign != last:
            flips += 1
        last = sign
    assert flips >= 2  # the body does flip over: the test is not a trivial steady spin


def test_orientation_of_steady_spin_is_exact_rotation() -> None:
    """A sphere spinning at constant w about a fixed axis has turned by w t about it."""
    axis = np.array([1.0, 2.0, -2.0]) / 3.0
    w_mag = 5.0
    q0 = quat_from_rotvec(np.array([[0.3, -0.2, 0.1]]))
    R0 = quat_to_matrix(q0)[0]
    # a body-frame rate whose world direction is `axis`
    b = make_bodies(["s"], [1.0], [sphere_inertia(1.0, 0.1)], quat=q0,
                    omega=(R0.T @ axis * w_mag)[None, :])
    w = World(b, gravity=(0.0, 0.0, 0.0))
    t = 2.0
    for settings in (IntegratorSettings("symplectic_euler", dt=1e-3), IntegratorSettings(
            rtol=1e-11)):
        y, _ = integrate(w, w.pack(), 0.0, t, settings)
        q = w.bodies.layout.split(y)[1]
        expected = quat_multiply(quat_from_rotvec(axis[None, :] * w_mag * t), q0)
        np.testing.assert_allclose(quat_to_matrix(q)[0], quat_to_matrix(expected)[0], atol=1e-8)


def test_time_dependent_arctan_load() -> None:
    """F(t) = F0 (2/pi) atan(r t): v(t) = F0/m (2/pi) (t atan(r t) - ln(1 + r^2 t^2)/(2 r))."""
    m, F0, r = 0.5, 3.0, 40.0
    b = make_bodies(["b"], [m], [sphere_inertia(m, 0.05)])
    loads = Loads(1, [Load(0, force=np.array([0.0, F0, 0.0]), profile=TimeFunction("arctan",
                                                                                   rate=r))])
    w = World(b, gravity=(0.0, 0.0, 0.0), loads=loads)
    t = 0.7
    y, _ = integrate(w, w.pack(), 0.0, t, IntegratorSettings(rtol=1e-11))
    vel = w.bodies.layout.split(y)[2][0]
    exact = F0 / m * 2.0 / math.pi * (t * math.atan(r * t) - math.log1p((r * t) ** 2) / (2 * r))
    assert vel[1] == pytest.approx(exact, rel=1e-8)
    # the work integral equals the kinetic energy gained
    work = w.split(y)[1]
    assert work[2] == pytest.approx(0.5 * m * exact**2, rel=1e-7)


def test_table_torque_load_spins_sphere() -> None:
    """A torque ramp tau(t) = c t from a table: w(t) = c t^2 / (2 I) about that axis."""
    m, radius, c = 1.0, 0.1, 0.02
    inertia = 0.4 * m * radius**2
    tt = np.array([0.0, 10.0])
    tq = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 10.0 * c]])
    b = make_bodies(["b"], [m], [sphere_inertia(m, radius)])
    loads = Loads(1, [Load(0, table_t=tt, table_torque=tq)])
    w = World(b, gravity=(0.0, 0.0, 0.0), loads=loads)
    y, _ = integrate(w, w.pack(), 0.0, 1.5, IntegratorSettings("rk4", dt=1e-3))
    om = w.bodies.layout.split(y)[3][0]
    assert om[2] == pytest.approx(c * 1.5**2 / (2 * inertia), rel=1e-9)


def test_fixed_body_does_not_move_and_bad_mass_is_rejected() -> None:
    b = make_bodies(["wall", "ball"], [1.0, 1.0], [np.eye(3), np.eye(3)], fixed=[True, False],
                    vel=np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    w = World(b, gravity=G)
    y, _ = integrate(w, w.pack(), 0.0, 0.1, IntegratorSettings("rk4", dt=1e-2))
    pos, _, vel, _ = w.bodies.layout.split(y)
    assert np.all(pos[0] == 0.0) and np.all(vel[0] == 0.0)
    assert vel[1, 2] == pytest.approx(-0.981)
    with pytest.raises(ParameterError, match="mass"):
        make_bodies(["x"], [-1.0], [np.eye(3)])
    with pytest.raises(ParameterError, match="inertia"):
        make_bodies(["x"], [1.0], [np.diag([1.0, -1.0, 1.0])])
    with pytest.raises(ParameterError, match="dt"):
        IntegratorSettings("rk4")
