"""ContactStore: persistence by key, onset latching, ODE state, separation and the residual latch.

Expected values are closed forms of the laws' equations (not outputs of the code under test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from mbplugin.contact import ContactBatch, ContactStore, PairLaw
from mbplugin.errors import ParameterError
from mbplugin.laws import make_law


def one(delta, ddelta, key=7, law=0, m_eff=1.0, r_eff=0.01, k_hertz=np.nan, a=-1, b=0):
    """A batch of contacts given by their scalars (arrays broadcast)."""
    delta = np.atleast_1d(np.asarray(delta, dtype=float))
    n = len(delta)
    z3 = np.zeros((n, 3))
    nrm = np.tile([0.0, 0.0, 1.0], (n, 1))
    return ContactBatch(
        np.broadcast_to(np.asarray(a, dtype=np.int64), (n,)).copy(),
        np.broadcast_to(np.asarray(b, dtype=np.int64), (n,)).copy(),
        np.broadcast_to(np.asarray(key, dtype=np.int64), (n,)).copy(),
        z3, nrm, delta, np.broadcast_to(np.asarray(ddelta, float), (n,)).copy(), z3.copy(),
        np.broadcast_to(np.asarray(m_eff, float), (n,)).copy(),
        np.broadcast_to(np.asarray(r_eff, float), (n,)).copy(), z3.copy(), z3.copy(),
        np.broadcast_to(np.asarray(law, dtype=np.int64), (n,)).copy(),
        np.broadcast_to(np.asarray(k_hertz, float), (n,)).copy(),
    )


def test_onset_latches_impact_speed_and_keeps_it():
    """Hunt-Crossley: F = k d^n (1 + 3(1 - cr)/2 * dd / v_in) with v_in from the onset step."""
    k, cr = 1e7, 0.8
    store = ContactStore(make_law("hunt_crossley", k=k, cr=cr))
    store.begin(one(1e-6, 2.0), 0.0)
    assert store.v_in[0] == 2.0
    chi = 1.5 * (1 - cr)
    for i, (d, dd) in enumerate([(1e-4, 1.5), (2e-4, 0.5), (1.5e-4, -1.0)]):
        b = one(d, dd)
        f = store.forces(b)
        assert f[0] == pytest.approx(k * d**1.5 * (1 + chi * dd / 2.0), rel=1e-12)
        store.commit(b, 1e-4 * (i + 1))
        assert len(store) == 1 and store.v_in[0] == 2.0
    assert len(store.onsets) == 1 and len(store.separations) == 0


def test_slow_onset_uses_the_laws_speed_floor():
    """Onset while receding: v_in = max(ddelta, 0) is floored by the law's v_min (1e-3 m/s)."""
    k, cr, vmin = 1e6, 0.5, 1e-3
    store = ContactStore(make_law("hunt_crossley", k=k, cr=cr, v_min=vmin))
    b = one(1e-3, 0.0)
    store.begin(b, 0.0)
    lam = k * 1.5 * (1 - cr) / vmin
    b2 = one(1e-3, 1e-4)
    assert store.forces(b2)[0] == pytest.approx(k * 1e-3**1.5 + lam * 1e-3**1.5 * 1e-4)


def bw_hc(**kw):
    base = dict(k=1e8, p=1.5, alpha=0.5, c=0.0, A=1.0, beta=0.0, gamma=0.0, n=1.0)
    base.update(kw)
    return make_law("bouc_wen_hunt_crossley", **base)


def rk4_prescribed(store, delta_of_t, rate_of_t, t0, t1, steps, key=7):
    """Integrate the store's ODE states along a prescribed delta(t), committing every step."""
    h = (t1 - t0) / steps
    t = t0
    for _ in range(steps):
        y = store.ode.copy()

        def f(tt, yy):
            return store.state_rates(one(delta_of_t(tt), rate_of_t(tt), key=key), yy)

        k1 = f(t, y)
        k2 = f(t + h / 2, y + h / 2 * k1)
        k3 = f(t + h / 2, y + h / 2 * k2)
        k4 = f(t + h, y + h * k3)
        t += h
        y_new = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        store.commit(one(delta_of_t(t), rate_of_t(t), key=key), t, y_new)


def test_bouc_wen_state_is_carried_across_many_steps():
    """beta = gamma = 0: zeta' = A ddelta, so zeta = A (delta - delta_onset) exactly."""
    A = 0.7
    store = ContactStore(bw_hc(A=A))
    v = 0.3
    d0 = 1e-5
    store.begin(one(d0, v), 0.0)
    rk4_prescribed(store, lambda t: d0 + v * t, lambda t: v, 0.0, 1e-3, 400)
    assert len(store) == 1
    assert store.ode[0, 0] == pytest.approx(A * v * 1e-3, rel=1e-10)
    # the force uses the carried state: alpha k d^p + (1 - alpha) k zeta^p
    d = d0 + v * 1e-3
    z = A * v * 1e-3
    f = store.forces(one(d, v))[0]
    assert f == pytest.approx(0.5 * 1e8 * (d**1.5 + z**1.5), rel=1e-9)


def test_bouc_wen_saturating_state_matches_closed_form():
    """n = 1, loading: zeta' = ddelta (A - (beta + gamma) zeta) -> A/(b+g) (1 - exp(-(b+g) x))."""
    A, beta, gamma = 1.0, 3000.0, 1000.0
    store = ContactStore(bw_hc(A=A, beta=beta, gamma=gamma))
    v = 1.0
    store.begin(one(1e-9, v), 0.0)
    T = 5e-4
    rk4_prescribed(store, lambda t: 1e-9 + v * t, lambda t: v, 0.0, T, 200)
    s = beta + gamma
    assert store.ode[0, 0] == pytest.approx(A / s * (1 - math.exp(-s * v * T)), rel=1e-8)


def test_bouc_wen_maxwell_invariant_in_a_dynamic_impact():
    """Maxwell law, free body on the contact: m ddelta' = -F and rho' = F/c give
    m ddelta + c rho = m v_in for the whole contact (Milehins & Marghitu 2026, Eq. 46)."""
    m, c, v0 = 0.05, 2000.0, 1.0
    law = make_law("bouc_wen_maxwell", k=1e8, p=1.5, alpha=0.5, c=c, A=1.0, beta=1e3,
                   gamma=0.0, n=1.0)
    store = ContactStore(law)
    d, dd = 0.0, v0
    h = 1e-6
    store.begin(one(1e-12, dd, m_eff=m), 0.0)
    d = 1e-12
    t = 0.0
    checked = 0
    while len(store) and t < 5e-3:
        y = store.ode.copy()

        def rhs(state, yy):
            dl, ddl = state
            b = one(dl, ddl, m_eff=m)
            f = store.forces(b, yy, raw=True)[0]
            return np.array([ddl, -f / m]), store.state_rates(b, yy)

        s0 = np.array([d, dd])
        k1, q1 = rhs(s0, y)
        k2, q2 = rhs(s0 + h / 2 * k1, y + h / 2 * q1)
        k3, q3 = rhs(s0 + h / 2 * k2, y + h / 2 * q2)
        k4, q4 = rhs(s0 + h * k3, y + h * q3)
        s1 = s0 + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        y1 = y + h / 6 * (q1 + 2 * q2 + 2 * q3 + q4)
        d, dd = s1
        t += h
        if len(store) and checked < 10**6:
            rho = y1[0, 0]
            assert m * dd + c * rho == pytest.approx(m * v0, rel=1e-8)
            checked += 1
        store.commit(one(d, dd, m_eff=m), t, y1)
    assert checked > 300
    assert len(store) == 0 and len(store.separations) == 1
    # Maxwell separates with a residual overlap (its dashpot is in series): latched
    assert store.separations["delta"][0] > 0
    assert len(store.latched_keys) == 1


def test_separation_drops_state_and_new_contact_starts_clean():
    """Hertz (clip): contact ends when the raw force <= 0 while receding; a later onset of the
    same key starts from a fresh state (Bouc-Wen zeta = 0)."""
    store = ContactStore(bw_hc(A=1.0))
    store.begin(one(1e-6, 1.0), 0.0)
    store.commit(one(1e-4, 0.5), 1e-4, np.array([[2e-5, 0, 0, 0]]))
    assert store.ode[0, 0] == 2e-5
    # geometric contact lost: the key is absent from the batch
    store.commit(ContactBatch.empty(), 2e-4)
    assert len(store) == 0 and len(store.separations) == 1
    store.commit(one(1e-6, 0.2), 3e-4)
    assert len(store) == 1 and store.ode[0, 0] == 0.0 and store.v_in[0] == 0.2
    assert len(store.onsets) == 2


def test_residual_overlap_latches_until_the_gap_opens():
    """Bouc-Wen ends at F <= 0 while receding with delta > 0 (Eq. 17): the key is latched, gets no
    force and no onset, until delta <= 0 (then a later overlap is a new contact)."""
    store = ContactStore(bw_hc(A=1.0))
    store.begin(one(1e-4, 1.0), 0.0)
    # state zeta strongly negative: F = 0.5k(d^1.5 - |z|^1.5) < 0 while receding -> ends
    store.commit(one(1e-4, -0.5), 1e-5, np.array([[-4e-4, 0, 0, 0]]))
    assert len(store) == 0
    sep = store.last_separations
    assert len(sep) == 1 and sep["delta"][0] == 1e-4 and sep["v"][0] == 0.5
    assert list(store.latched_keys) == [7]
    # still overlapping, receding: no force, no onset
    b = one(5e-5, -0.4)
    assert store.forces(b)[0] == 0.0
    store.commit(b, 2e-5)
    assert len(store) == 0 and len(store.onsets) == 1
    # gap opens: released; touching again later is a new onset
    store.commit(one(-1e-6, -0.4), 3e-5)
    assert len(store.latched_keys) == 0
    store.commit(one(1e-6, 0.3), 4e-5)
    assert len(store) == 1 and len(store.onsets) == 2 and store.ode[0, 0] == 0.0


def test_end_books_what_commit_books_for_an_ending_contact():
    """``ContactStore.end`` (an end located by the driver, e.g. a compiled engine segment) and
    ``commit`` with the same state give the same separation (v_out = -ddelta, delta) and, for
    a residual overlap, the same latch; a later touch is a new onset in both."""
    # Hunt-Crossley, cr 0.2: F = k d^1.5 (1 + 1.2 dd / v_in) <= 0 once dd <= -v_in / 1.2
    law = make_law("hunt_crossley", k=1e9, cr=0.2)
    for d_end in (2e-7, -1e-9):  # residual overlap (latched) / the gap already open
        stores = [ContactStore(law), ContactStore(law)]
        for s in stores:
            s.begin(one(1e-9, 1.0), 0.0)
            s.commit(one(1e-5, 0.2), 1e-5)
        stores[0].commit(one(d_end, -0.9), 2e-5)
        stores[1].end(2e-5, np.array([0]), np.array([d_end]), np.array([-0.9]))
        for s in stores:
            assert len(s) == 0
            sep = s.last_separations
            assert len(sep) == 1 and sep["t"][0] == 2e-5
            assert sep["v"][0] == 0.9 and sep["delta"][0] == d_end
            assert list(s.latched_keys) == ([7] if d_end > 0 else [])
            assert list(s.latched_delta) == ([d_end] if d_end > 0 else [])
            assert len(s.bounces()) == 1 and s.bounces()["cr"][0] == pytest.approx(0.9)
            s.commit(one(-1e-6, -0.5), 3e-5)
            s.commit(one(1e-9, 0.4), 4e-5)
            assert len(s) == 1 and len(s.onsets) == 2


def test_start_books_what_commit_books_for_a_new_contact():
    """``ContactStore.start`` (an onset located by the driver, e.g. a compiled engine segment)
    and ``commit`` with the same state give the same row: Hunt-Crossley's damping
    lam = k chi / v_in latched from the approach speed (chi = 3(1 - c_r)/2, review Eq. 5.12),
    the Hertz k of the batch baked in, the time scale (m/(k v^(n-1)))^(1/(n+1)) and the
    onset event; Goldsmith's memory (d_max, review Eq. 5.7) is updated at the onset in both."""
    k_h, cr, v_in, d0, m = 2.5e9, 0.7, 1.3, 3e-7, 0.04
    hc = PairLaw(make_law("hunt_crossley", k=1.0, cr=cr), hertz_k=True)
    for law in (hc, make_law("goldsmith", k=1e9, n=1.5, cr=0.6)):
        stores = [ContactStore(law), ContactStore(law)]
        for s in stores:
            s.begin(one(-1e-6, 1.0, key=3), 0.0)  # another pair, apart: no row
        b = one(d0, v_in, m_eff=m, k_hertz=k_h)
        stores[0].commit(b, 1e-3)
        stores[1].start(b, 1e-3)
        for s in stores:
            assert len(s) == 1 and list(s.keys) == [7]
            assert s.v_in[0] == v_in and s.m_eff[0] == m and s.t_on[0] == 1e-3
            on = s.last_onsets
            assert len(on) == 1 and on["v"][0] == v_in and on["delta"][0] == d0
            assert len(s.last_separations) == 0
        if law is hc:
            for s in stores:
                assert s.coef[0, 0] == k_h and s.k_on[0] == k_h
                assert s.coef[0, 2] == pytest.approx(k_h * 1.5 * (1 - cr) / v_in, rel=1e-15)
                assert s.t_c[0] == pytest.approx((m / (k_h * v_in**0.5)) ** 0.4, rel=1e-15)
        else:
            for s in stores:
                assert s.mem[0, 0] == d0  # the largest overlap so far
        for name in ("coef", "mem", "ode", "t_c", "k_on", "r_eff"):
            np.testing.assert_array_equal(getattr(stores[0], name), getattr(stores[1], name))


def test_start_rejects_contacts_that_are_not_new():
    """``start`` books new contacts only: active, latched or not overlapping is an error."""
    store = ContactStore(make_law("hunt_crossley", k=1e9, cr=0.2))
    with pytest.raises(ParameterError, match="overlap"):
        store.start(one(-1e-9, 1.0), 0.0)
    store.start(one(1e-9, 1.0), 0.0)
    with pytest.raises(ParameterError, match="already active"):
        store.start(one(2e-9, 1.0), 1e-6)
    store.commit(one(1e-5, 0.2), 1e-5)
    store.commit(one(2e-7, -0.9), 2e-5)  # ends with a residual overlap: latched
    assert list(store.latched_keys) == [7]
    with pytest.raises(ParameterError, match="latched"):
        store.start(one(3e-7, 0.1), 3e-5)


def test_latched_contact_pressed_deeper_than_separation_restarts():
    store = ContactStore(bw_hc())
    store.begin(one(2e-4, 1.0), 0.0)
    store.commit(one(2e-4, -0.1), 1e-5, np.array([[-1e-3, 0, 0, 0]]))
    assert len(store.latched_keys) == 1
    store.commit(one(1.5e-4, 0.1), 2e-5)  # approaching but not deeper: still latched
    assert len(store) == 0
    store.commit(one(2.5e-4, 0.1), 3e-5)  # deeper than 2e-4 while approaching: new onset
    assert len(store) == 1 and len(store.latched_keys) == 0


def test_tension_law_ends_at_zero_indentation():
    """Kelvin-Voigt with tension: F = k d + c dd may pull; the contact ends only at delta <= 0."""
    k, c = 1e5, 50.0
    store = ContactStore(make_law("kelvin_voigt", k=k, c=c, allow_tension="yes"))
    store.begin(one(1e-4, 1.0), 0.0)
    b = one(1e-4, -1.0)  # raw force k d + c dd = 10 - 50 < 0 while receding, delta > 0
    assert store.forces(b)[0] == pytest.approx(k * 1e-4 - c)
    store.commit(b, 1e-5)
    assert len(store) == 1
    store.commit(one(-1e-7, -1.0), 2e-5)
    assert len(store) == 0 and len(store.latched_keys) == 0


def test_clipped_law_ends_with_residual_overlap():
    """The same Kelvin-Voigt without tension ends when k d + c dd <= 0 while receding."""
    k, c = 1e5, 50.0
    store = ContactStore(make_law("kelvin_voigt", k=k, c=c))
    store.begin(one(1e-4, 1.0), 0.0)
    b = one(1e-4, -1.0)
    assert store.forces(b)[0] == 0.0
    store.commit(b, 1e-5)
    assert len(store) == 0 and list(store.latched_keys) == [7]


def test_groups_of_laws_evaluate_with_their_own_coefficients():
    """Three contacts, two laws: Hooke F = k d and Hertz F = k d^1.5, aligned with the batch."""
    store = ContactStore([make_law("hooke", k=100.0), make_law("hertz", k=1e6)])
    b = one([1e-3, 2e-3, 4e-3], 1.0, key=[30, 10, 20], law=[1, 0, 1])
    store.begin(b, 0.0)
    f = store.forces(b)
    assert f == pytest.approx([1e6 * 1e-3**1.5, 100 * 2e-3, 1e6 * 4e-3**1.5])
    assert list(store.keys) == [10, 20, 30]
    al = store.aligned(b)
    assert list(al.rows) == [2, 0, 1] and list(al.law) == [1, 0, 1]


def test_hertz_stiffness_from_batch_when_no_k_given():
    """PairLaw(hertz_k=True): k = k_hertz of the contact at onset."""
    tmpl = PairLaw(make_law("hertz", k=1.0), hertz_k=True)
    store = ContactStore([tmpl])
    kh = 1.5164835e10  # 10 mm steel sphere on steel (Corral et al. 2021 worked example)
    b = one(1e-5, 1.0, k_hertz=kh)
    store.begin(b, 0.0)
    assert store.forces(b)[0] == pytest.approx(kh * 1e-5**1.5)
    with pytest.raises(ParameterError, match="Hertz"):
        ContactStore([tmpl]).begin(one(1e-5, 1.0), 0.0)  # NaN k_hertz
    with pytest.raises(ParameterError, match=r"exponent 1\.5"):
        PairLaw(make_law("hertz", k=1.0, n=1.0), hertz_k=True)


def test_elastic_bounces_give_unit_restitution():
    """A mass on a Hertz contact bounces elastically: energy conservation gives v_out = v_in."""
    m, k, v0 = 0.01, 1e9, 0.5
    store = ContactStore(make_law("hertz", k=k))
    # free flight and contact for one body above a plane, delta = -z
    z, vz = 1e-4, -v0
    h = 1e-7
    t = 0.0
    for _ in range(20000):
        def acc(zz, vv):
            b = one(-zz, -vv, m_eff=m)
            return store.forces(b)[0] / m if -zz > 0 else 0.0

        k1z, k1v = vz, acc(z, vz)
        k2z, k2v = vz + h / 2 * k1v, acc(z + h / 2 * k1z, vz + h / 2 * k1v)
        k3z, k3v = vz + h / 2 * k2v, acc(z + h / 2 * k2z, vz + h / 2 * k2v)
        k4z, k4v = vz + h * k3v, acc(z + h * k3z, vz + h * k3v)
        z += h / 6 * (k1z + 2 * k2z + 2 * k3z + k4z)
        vz += h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        t += h
        store.commit(one(-z, -vz, m_eff=m) if z < 0 else ContactBatch.empty(), t)
        if len(store.separations):
            break
    bo = store.bounces()
    assert len(bo) == 1
    # RK4 at h = 1e-7 s over the ~1470 steps of the contact conserves the energy to ~1e-8
    # (measured c_r error 3e-8); 1e-7 leaves a factor 3 for round-off
    assert bo["cr"][0] == pytest.approx(1.0, abs=1e-7)
    # Hertz contact time 2 (d_max/v0) int_0^1 dx/sqrt(1 - x^(5/2)), d_max = (5 m v0^2/(4k))^(2/5);
    # onset and end are seen at step ends, so within 2 steps
    d_max = (5 * m * v0 * v0 / (4 * k)) ** 0.4
    t_hertz = 2 * d_max / v0 * quad(lambda x: 1 / math.sqrt(1 - x**2.5), 0, 1)[0]
    assert bo["t_out"][0] - bo["t_in"][0] == pytest.approx(t_hertz, abs=2 * h)


def test_bad_batches_are_rejected():
    store = ContactStore(make_law("hooke", k=1.0))
    with pytest.raises(ParameterError, match="duplicate contact key"):
        store.begin(one([1e-3, 1e-3], 1.0, key=[5, 5]), 0.0)
    with pytest.raises(ParameterError, match="law index out of range"):
        store.begin(one(1e-3, 1.0, law=3), 0.0)
    store.begin(one(1e-3, 1.0), 0.0)
    with pytest.raises(ParameterError, match="ode has shape"):
        store.forces(one(1e-3, 1.0), np.zeros((3, 4)))


def test_memory_of_a_plastic_law_is_updated_at_commits():
    """Goldsmith (review Eq. 5.7, delta_p = (1 - cr^2) delta_max): loading F = k d^n, unloading
    F = F_max ((d - d_p)/(d_max - d_p))^n from the remembered maximum; the contact ends at
    d = d_p with a residual overlap, which latches the key."""
    k, n, cr = 1e6, 1.5, 0.6
    store = ContactStore(make_law("goldsmith", k=k, n=n, cr=cr))
    store.begin(one(1e-5, 1.0), 0.0)
    for i, d in enumerate([1e-4, 2e-4, 3e-4]):
        b = one(d, 1.0)
        assert store.forces(b)[0] == pytest.approx(k * d**n)
        store.commit(b, 1e-5 * (i + 1))
    dmax = 3e-4
    dp = (1 - cr**2) * dmax
    fmax = k * dmax**n
    b = one(2.5e-4, -1.0)
    assert store.forces(b)[0] == pytest.approx(fmax * ((2.5e-4 - dp) / (dmax - dp)) ** n)
    store.commit(b, 5e-5)
    assert len(store) == 1
    b = one(0.9 * dp, -1.0)
    assert store.forces(b)[0] == 0.0
    store.commit(b, 6e-5)
    assert len(store) == 0 and list(store.latched_keys) == [7]
    assert store.separations["delta"][0] == pytest.approx(0.9 * dp)


def test_persistence_through_the_detection_layer():
    """A sphere driven into the ground through ContactModel.detect: the key is stable over 300
    steps and the Bouc-Wen state follows zeta = A (delta - delta_onset) (beta = gamma = 0)."""
    from mbplugin.contact import BodyState, ContactModel, Plane, Sphere

    A = 0.8
    model = ContactModel()
    model.add_shape(Plane(), -1)
    model.add_shape(Sphere(0.01), 0)
    model.set_default_law(bw_hc(A=A))
    store = model.make_store()
    v = 0.2
    z0 = 0.01 - 1e-7
    st = BodyState.create([[0, 0, z0]], vel=[[0, 0, -v]], mass=0.01, inertia=[4e-7] * 3)
    store.begin(model.detect(st), 0.0)
    key = int(store.keys[0])
    h = 1e-6
    for step in range(1, 301):
        rates = store.state_rates(model.detect(st))  # zeta' = A ddelta, constant here
        st.pos[0, 2] = z0 - v * h * step
        store.commit(model.detect(st), h * step, store.ode + h * rates)
        assert list(store.keys) == [key]
    assert store.ode[0, 0] == pytest.approx(A * v * 300 * h, rel=1e-9)
    assert len(store.onsets) == 1
    # lift it off: the contact ends and its state is dropped
    st.pos[0, 2] = 0.02
    store.commit(model.detect(st), 1.0)
    assert len(store) == 0 and len(store.separations) == 1 and len(store.latched_keys) == 0


def test_ode_states_as_views_of_a_flat_vector():
    """The law ODE states may be handed over as an (M, ns) view of an integrator's flat vector
    and the rates written into one (``state_rates(..., out=)``): the same forces and rates as
    the padded (M, NODE_MAX) form, whose call keeps working; a width below the laws' state
    count is rejected."""
    from mbplugin.laws.kernels import NODE_MAX

    law = make_law("bouc_wen_maxwell", k=1e7, c=1e2)
    ns = law.n_state
    store = ContactStore(law)
    store.begin(one([1e-4, 2e-4, 3e-4], [0.5, -0.2, 0.1], key=[3, 5, 9]), 0.0)
    m = len(store)
    batch = one([2e-4, 3e-4, 1e-4], [0.4, -0.1, 0.2], key=[3, 5, 9])
    flat = np.array([1e-5, -2e-5, 3e-5, 4e-6, -5e-6, 6e-6])[: m * ns]
    padded = np.zeros((m, NODE_MAX))
    padded[:, :ns] = flat.reshape(m, ns)
    view = flat.reshape(m, ns)
    assert np.shares_memory(view, flat)
    np.testing.assert_array_equal(store.forces(batch, view), store.forces(batch, padded))
    rates = np.full(m * ns, np.nan)
    out = store.state_rates(batch, view, out=rates.reshape(m, ns))
    assert np.shares_memory(out, rates)
    np.testing.assert_array_equal(rates, store.state_rates(batch, padded)[:, :ns].ravel())
    assert np.any(rates != 0.0)
    with pytest.raises(ParameterError, match="ode has shape"):
        store.forces(batch, np.zeros((m, ns - 1)))


@pytest.mark.parametrize("compiled", [False, True])
def test_hunt_crossley_ends_where_its_force_reaches_zero(compiled, monkeypatch):
    """Hunt-Crossley's raw force k d^n (1 + 3(1 - cr)/2 dd / v_in) is zero at the receding
    speed dd* = -2 v_in / (3 (1 - cr)): a contact receding just faster ends there (its
    separation booked at the overlap it had, a residual-overlap latch), one just slower does
    not; the same by the general commit and the compiled end test of a host step's common
    case (``compiled=True``: the batch's keys are the store's rows, or contain them)."""
    from mbplugin.pipeline import store_kernel

    calls = []
    ends_rows = store_kernel.ends_rows
    monkeypatch.setattr(store_kernel, "ends_rows",
                        lambda *a: calls.append(1) or ends_rows(*a))
    k, cr, v_in = 1e7, 0.5, 2.0
    dd_zero = -2.0 * v_in / (3.0 * (1.0 - cr))  # -2.6667 m/s
    keys = np.array([3, 5, 9])
    for extra in (False, True):  # the store's rows alone, or with a contact it does not know
        store = ContactStore(make_law("hunt_crossley", k=k, cr=cr))
        store.begin(one([1e-6, 1e-6, 1e-6], v_in, key=keys), 0.0)
        d = np.array([1e-4, 2e-4, 3e-4])
        dd = np.array([dd_zero * 0.99, dd_zero * 1.01, 0.5])  # inside, beyond, approaching
        b = one(d, dd, key=keys)
        if extra:  # a hovering contact (negative overlap) the store does not know
            b = one(np.append(d, -1e-3), np.append(dd, 0.1), key=np.append(keys, 11))
        store.commit(b, 1e-3, aligned=False, compiled=compiled)
        assert list(store.keys) == [3, 9]
        sep = store.last_separations
        assert list(sep["key"]) == [5] and sep["delta"][0] == 2e-4
        assert sep["v"][0] == pytest.approx(-dd_zero * 1.01, rel=1e-15)
        assert list(store.latched_keys) == [5]  # a residual overlap: latched
        # the remaining rows carry on: the next commit of the same keys ends nothing
        store.commit(one(d[[0, 2]], np.array([-1.0, 0.1]), key=keys[[0, 2]]), 2e-3,
                     aligned=False, compiled=compiled)
        assert list(store.keys) == [3, 9] and len(store.last_separations) == 0
    assert len(calls) == (4 if compiled else 0)  # the compiled test ran at each commit


@pytest.mark.parametrize("method", ["commit_same", "commit_rows"])
def test_commit_same_books_the_given_end_state_without_a_trial_batch(method):
    """``commit_same`` (the implicit step's booking of its end state) and ``commit_rows`` (its
    tests in one compiled call): the end test at the overlaps and rates passed, not the
    batch's own (Hunt-Crossley's zero-force receding speed dd* = -2 v_in / (3 (1 - cr))
    decides, as in the test above); where its case does not hold (other keys, a separated
    latch) it returns False and changes nothing; a law index the store does not have is the
    general commit's error."""
    k, cr, v_in = 1e7, 0.5, 2.0
    dd_zero = -2.0 * v_in / (3.0 * (1.0 - cr))
    keys = np.array([3, 5, 9])
    store = ContactStore(make_law("hunt_crossley", k=k, cr=cr))
    commit = getattr(store, method)
    store.begin(one([1e-6, 1e-6, 1e-6], v_in, key=keys), 0.0)
    b = one([1e-6, 1e-6, 1e-6], 0.0, key=keys)  # the batch's own state: nothing ends there
    assert not commit(one([1e-6, 1e-6], 0.0, key=keys[:2]), b.delta[:2], b.ddelta[:2],
                      1e-3)  # other keys
    assert list(store.keys) == [3, 5, 9] and store._seq == 1
    bad = one([1e-6, 1e-6, 1e-6], 0.0, key=keys)
    bad.law = np.array([0, 1, 0])
    with pytest.raises(ParameterError, match="law index out of range"):
        commit(bad, bad.delta, bad.ddelta, 1e-3)
    # nothing ends at the batch's own state (approaching or at rest): booked, no event
    assert commit(b, b.delta, b.ddelta, 5e-4)
    assert list(store.keys) == [3, 5, 9] and store._seq == 2
    assert len(store.last_separations) == 0 and len(store.last_onsets) == 0
    d = np.array([1e-4, 2e-4, -1e-5])
    dd = np.array([dd_zero * 0.99, dd_zero * 1.01, -0.5])  # inside, beyond, apart (receding)
    assert commit(b, d, dd, 1e-3)
    assert list(store.keys) == [3]
    sep = store.last_separations
    assert list(sep["key"]) == [5, 9] and list(sep["delta"]) == [2e-4, -1e-5]
    assert list(sep["t"]) == [1e-3, 1e-3]
    assert list(store.latched_keys) == [5]  # the residual overlap latched
    # a latch held: the general commit's rules
    assert not commit(one(1e-4, 0.0, key=3), np.array([1e-4]), np.array([0.0]), 2e-3)
    assert list(store.keys) == [3] and list(store.latched_keys) == [5]


def test_commit_rows_with_pairs_apart_is_the_general_commit():
    """``commit_rows`` of a batch holding the store's rows and pairs apart besides them (a
    robot's swing foot within the detection margin): the general commit's outcome (twin
    stores: rows, separations, latches, the rows' last overlaps); a row receding beyond
    Hunt-Crossley's zero-force speed dd* = -2 v_in / (3 (1 - cr)) ends with its overlap
    latched; a pair that now overlaps (an onset) or a row missing is the general commit's."""
    k, cr, v_in = 1e7, 0.5, 2.0
    dd_zero = -2.0 * v_in / (3.0 * (1.0 - cr))
    stores = [ContactStore(make_law("hunt_crossley", k=k, cr=cr)) for _ in range(2)]
    for s in stores:
        s.begin(one([1e-6, 1e-6, 1e-6], v_in, key=[3, 9, 12]), 0.0)
    fast, ref = stores
    # keys 5 and 20 apart (d <= 0), 12 receding past dd*: it ends (overlap latched)
    d = np.array([1e-4, -2e-3, 2e-4, 3e-4, 0.0])
    dd = np.array([0.0, -0.1, dd_zero * 0.99, dd_zero * 1.01, 0.2])
    b = one(d, dd, key=[3, 5, 9, 12, 20])
    assert fast.commit_rows(b, b.delta, b.ddelta, 1e-3)
    ref.commit(b, 1e-3, aligned=False, compiled=True)
    for s in stores:
        assert list(s.keys) == [3, 9] and list(s.latched_keys) == [12]
        assert list(s.last_separations["key"]) == [12]
        assert list(s.last_separations["delta"]) == [3e-4]
        assert len(s.last_onsets) == 0
    assert np.array_equal(fast._delta_last, ref._delta_last)
    assert np.array_equal(fast._ddelta_last, ref._ddelta_last)
    assert fast._seq == ref._seq
    # an onset among the pairs apart, or a row missing: not this case (nothing changed)
    s2 = ContactStore(make_law("hunt_crossley", k=k, cr=cr))
    s2.begin(one([1e-6, 1e-6], v_in, key=[3, 9]), 0.0)
    seq = s2._seq
    from mbplugin.pipeline import store_kernel

    where = np.empty(2, dtype=np.int64)
    on = one([1e-4, 1e-6, 1e-4], 0.0, key=[3, 5, 9])
    assert not store_kernel.superset_rows(s2.keys, on.key, on.law, on.delta, where)
    gone = one([1e-4, -1e-3], 0.0, key=[3, 5])
    assert not store_kernel.superset_rows(s2.keys, gone.key, gone.law, gone.delta, where)
    assert s2._seq == seq and list(s2.keys) == [3, 9]
    assert s2.commit_rows(on, on.delta, on.ddelta, 1e-3) is False  # the general commit books
    assert list(s2.keys) == [3, 9]


def test_start_new_books_given_rows_in_key_order():
    """``start_new`` (a compiled step's onsets, coefficient rows given): the contacts ``idx``
    of a batch become rows in key order with the given onset overlap, rate, coefficients and
    time scale, at ``t``; the onset events carry those values; a non-overlap is an error."""
    store = ContactStore(make_law("hunt_crossley", k=1e9, cr=0.2))
    store.start(one(1e-6, 0.5, key=5), 0.0)
    b = ContactBatch.concatenate([one(-1e-9, 0.1, key=2), one(9.0, 9.0, key=9),
                                  one(-1e-9, 0.1, key=3)])
    d, v = np.array([3e-7, 2e-7]), np.array([0.7, 0.4])
    coef = np.array([[1e9, 1.5, 0.3], [2e9, 1.5, 0.6]])
    store.start_new(b, np.array([1, 2]), d, v, 1e-3, coef, np.array([1e-4, 2e-4]))
    assert list(store.keys) == [3, 5, 9]
    assert list(store.v_in) == [0.4, 0.5, 0.7] and list(store.t_c[[0, 2]]) == [2e-4, 1e-4]
    assert list(store.coef[0, :3]) == [2e9, 1.5, 0.6] and list(store.t_on[[0, 2]]) == [1e-3] * 2
    on = store.last_onsets
    assert list(on["key"]) == [9, 3] and list(on["delta"]) == [3e-7, 2e-7]
    assert list(on["v"]) == [0.7, 0.4] and (on["t"] == 1e-3).all()
    with pytest.raises(ParameterError, match="overlap"):
        store.start_new(b, np.array([0]), np.array([-1e-9]), np.array([0.1]), 2e-3,
                        coef[:1], np.array([1e-4]))
