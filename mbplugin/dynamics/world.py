"""The world: bodies, gravity, external loads and contacts, and its equations of motion.

Newton-Euler equations of every movable body (SI units; Goldstein, Classical Mechanics, Sect. 5.5
for Euler's equations)::

    m dv/dt          = F_contact + F_load + s m g
    I dw/dt          = tau_body - w x (I w)            (body frame; tau_body = R^T tau_world)
    dx/dt = v,       dq/dt = 1/2 q (x) (0, w)

with ``s`` the body's gravity scale. The contacts (when a contact model is attached, see
:mod:`mbplugin.dynamics.contacts`) add their forces and torques and the laws' ODE states.

Three work integrals ride along with the state so that energy can be accounted for exactly:

``w_normal``    work done by the bodies on the normal contact forces, int sum F_n ddelta dt (J)
``w_friction``  energy dissipated by friction, int sum -F_t . v_t dt (J, >= 0)
``w_ext``       work of the external loads (gravity excluded: it has a potential), J

so that ``kinetic + potential + w_normal + w_friction - w_ext`` is constant along exact
solutions (the energy balance the summary's ``energy_drift`` measures).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.dynamics import _kernels as _k
from mbplugin.dynamics.bodies import Bodies
from mbplugin.dynamics.loads import Loads
from mbplugin.errors import ParameterError

N_WORK = 3  #: work integrals carried in the state (w_normal, w_friction, w_ext)


class World:
    """Rigid bodies, gravity, loads and (optionally) a contact model.

    ``contacts`` is an object with ``n_ode`` (number of law ODE values it integrates) and
    ``evaluate(t, pos, quat, R, vel, omega_world, ode)`` returning
    ``(force (n,3), torque (n,3) world, ode_rate (n_ode,), p_normal, p_friction)``; see
    :class:`mbplugin.dynamics.contacts.EngineContacts`.
    """

    def __init__(
        self,
        bodies: Bodies,
        gravity: Any = (0.0, 0.0, -9.81),
        loads: Loads | None = None,
        contacts: Any = None,
    ) -> None:
        g = np.asarray(gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ParameterError(f"gravity must be 3 finite numbers (m/s^2), got {gravity!r}")
        self.bodies = bodies
        self.gravity = g
        self.loads = loads if loads is not None else Loads(len(bodies))
        if self.loads.n != len(bodies):
            raise ParameterError("loads were built for a different number of bodies")
        self.contacts = contacts
        #: let the adaptive integrator run small scenes through the compiled end-to-end path
        #: (:mod:`mbplugin.dynamics.compiled`) where it applies; False forces SciPy's solvers
        self.compiled_path = True
        self.movable = ~bodies.fixed
        self._gacc = bodies.gravity_scale[:, None] * g[None, :] * self.movable[:, None]

    # -- sizes ------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.bodies)

    @property
    def n_ode(self) -> int:
        return 0 if self.contacts is None else int(self.contacts.n_ode)

    # -- equations of motion ----------------------------------------------------------------------
    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """dy/dt of the flat state ``y`` = [pos, quat, vel, omega, law ODE states, work]."""
        n = self.n
        b = self.bodies
        n_ode = self.n_ode
        pos, quat, vel, omega, R, omega_w = _k.unpack_state(y, n)
        force, torque = self.loads.evaluate(t)
        p_ext = 0.0 if self.loads.empty else _k.power(force, torque, vel, omega_w)
        out = np.empty_like(y)
        if self.contacts is not None:
            fc, tc, ode_rate, p_n, p_f = self.contacts.evaluate(
                t, pos, quat, R, vel, omega_w, y[13 * n : 13 * n + n_ode]
            )
            force = force + fc
            torque = torque + tc
            out[13 * n : 13 * n + n_ode] = ode_rate
        else:
            p_n = p_f = 0.0
        _k.dynamics(quat, vel, omega, R, force, torque, b.inv_mass, b.inertia, b.inv_inertia,
                    self._gacc, b.fixed, out)
        out[13 * n + n_ode] = p_n
        out[13 * n + n_ode + 1] = p_f
        out[13 * n + n_ode + 2] = p_ext
        return out

    # -- flat state ----------------------------------------------------------------------------
    def pack(self, ode: np.ndarray | None = None, work: np.ndarray | None = None) -> np.ndarray:
        """Flat state from the bodies' arrays, the law ODE states and the work integrals."""
        ode = np.zeros(self.n_ode) if ode is None else np.asarray(ode, dtype=float).ravel()
        work = np.zeros(N_WORK) if work is None else np.asarray(work, dtype=float)
        return np.concatenate([self.bodies.state_vector(), ode, work])

    def split(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(law ODE states, work integrals) of a flat state."""
        n13 = 13 * self.n
        return y[n13 : n13 + self.n_ode], y[n13 + self.n_ode : n13 + self.n_ode + N_WORK]

    # -- energy ----------------------------------------------------------------------------------
    def mechanical_energy(self, pos: np.ndarray, vel: np.ndarray, omega: np.ndarray) -> tuple[
        float, float
    ]:
        """(kinetic, gravitational potential) energy in J."""
        return self.bodies.kinetic_energy(vel, omega), self.bodies.potential_energy(
            pos, self.gravity
        )

    def mechanical_energy_records(self, pos: np.ndarray, vel: np.ndarray,
                                  omega: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(kinetic, gravitational potential) energy (J) of K states: pos, vel, omega
        (K, n, 3) -> two (K,) arrays."""
        return (self.bodies.kinetic_energy_records(vel, omega),
                self.bodies.potential_energy_records(pos, self.gravity))

    def jac_sparsity(self) -> Any:
        """Sparsity pattern (scipy.sparse, n_y x n_y) of d rhs / d y for the implicit solvers.

        Each body's block depends on itself; the velocity and angular velocity of the two bodies
        of an active contact depend on each other's whole state and on the contact's law states,
        which depend on both bodies. The work integrals' rows are left out: they feed back into
        nothing (an approximate Jacobian only slows Newton's iteration, never the accuracy);
        every column a row truly depends on is declared, since SciPy groups the columns it
        differences together by this pattern.
        """
        from scipy.sparse import coo_matrix

        n = self.n
        n_y = 13 * n + self.n_ode + N_WORK
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []

        def body_idx(i: np.ndarray) -> np.ndarray:
            """(K, 13) state indices of bodies i."""
            i = i[:, None]
            return np.concatenate([3 * i + np.arange(3), 3 * n + 4 * i + np.arange(4),
                                   7 * n + 3 * i + np.arange(3), 10 * n + 3 * i + np.arange(3)],
                                  axis=1)

        def dyn_idx(i: np.ndarray) -> np.ndarray:
            """(K, 6) velocity and angular-velocity indices of bodies i."""
            i = i[:, None]
            return np.concatenate([7 * n + 3 * i + np.arange(3), 10 * n + 3 * i + np.arange(3)],
                                  axis=1)

        def block(r: np.ndarray, c: np.ndarray) -> None:
            """All (row, col) of r (K, p) x c (K, q), contact by contact."""
            rows.append(np.broadcast_to(r[:, :, None], (*r.shape, c.shape[1])).ravel())
            cols.append(np.broadcast_to(c[:, None, :], (r.shape[0], r.shape[1], c.shape[1]))
                        .ravel())

        all_b = np.arange(n)
        block(body_idx(all_b), body_idx(all_b))
        c = self.contacts
        if c is not None and c.n_active:
            a = np.asarray(c.store.a, dtype=np.int64)
            b = np.asarray(c.store.b, dtype=np.int64)
            ns = c.ns
            ode = 13 * n + np.arange(len(a))[:, None] * ns + np.arange(ns)
            fixed = np.concatenate([self.bodies.fixed, [True]])  # index -1: the world
            # every body of a contact, fixed ones included: their state enters the geometry,
            # and an undeclared dependency would corrupt the grouped differences
            for i_arr in (a, b):
                moving = (i_arr >= 0) & ~fixed[i_arr]
                for j_arr in (a, b):
                    sel = moving & (j_arr >= 0)
                    if sel.any():
                        block(dyn_idx(i_arr[sel]), body_idx(j_arr[sel]))
                if ns and moving.any():
                    block(dyn_idx(i_arr[moving]), ode[moving])
                present = i_arr >= 0
                if ns and present.any():
                    block(ode[present], body_idx(i_arr[present]))
            if ns:
                block(ode, ode)
        r_all = np.concatenate(rows)
        c_all = np.concatenate(cols)
        data = np.ones(len(r_all), dtype=bool)
        return coo_matrix((data, (r_all, c_all)), shape=(n_y, n_y)).tocsc()

    def jacobian_function(self) -> Any:
        """A finite-difference Jacobian ``jac(t, y)`` (sparse) for the implicit solvers.

        Columns that share no row of :meth:`jac_sparsity` are differenced together (Curtis,
        Powell & Reid 1974), with forward steps h_j = sqrt(eps) max(|y_j|, s_j) on fixed scales
        s_j (1e-3 for the bodies' states, 1e-6 m for the laws' states). SciPy's adaptive
        differencing (``num_jac``) can inflate its steps past the width of a regularised
        friction law (v_eps) and then never converge Newton's iteration again.
        """
        from scipy.optimize._numdiff import group_columns
        from scipy.sparse import csc_matrix

        pattern = self.jac_sparsity()
        groups = group_columns(pattern)
        n13 = 13 * self.n
        n_y = pattern.shape[0]
        scale = np.full(n_y, 1e-3)
        scale[n13 : n13 + self.n_ode] = 1e-6
        scale[n13 + self.n_ode :] = 1.0
        rows, cols = pattern.nonzero()
        n_groups = int(groups.max()) + 1 if len(groups) else 0
        sqrt_eps = np.sqrt(np.finfo(float).eps)

        def jac(t: float, y: np.ndarray) -> Any:
            f0 = self.rhs(t, y)
            h = sqrt_eps * np.maximum(np.abs(y), scale)
            h = (y + h) - y  # representable steps
            data = np.empty(len(rows))
            for g in range(n_groups):  # once per group of columns, not per body or contact
                cols_g = groups == g
                yp = y.copy()
                yp[cols_g] += h[cols_g]
                df = self.rhs(t, yp) - f0
                sel = cols_g[cols]
                data[sel] = df[rows[sel]] / h[cols[sel]]
            return csc_matrix((data, (rows, cols)), shape=(n_y, n_y))

        return jac

