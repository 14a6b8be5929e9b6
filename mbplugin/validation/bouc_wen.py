"""Milehins & Marghitu (2026): the Bouc-Wen collision laws (BWSHCCM and BWMCM).

Source: Milehins & Marghitu, "Incremental collision laws based on the Bouc-Wen model: improved
collision models and further results" (arXiv:2507.07953), Sects. 3-7 and Tables 1-5, with the
equation corrections of ``spec/bouc-wen-collision-laws.md`` section 0. The paper gives its
results as figures only, so the checks are its closed-form limits and invariants (spec section
9), the agreement of its dimensional and nondimensional routes (Table 1, Eqs. 40-42, 49-52), the
consistency its published fit errors imply, and the qualitative facts it states.

Sign conventions. The paper writes x = -delta (negative in compression), v = -ddelta and the
effective external force u < 0 pressing the bodies together; mbplugin's impact analyser takes
the pressing force ``press = -u``. The laws' states are zeta = -z and rho = -r.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mbplugin.impact import impact
from mbplugin.laws import make_law
from mbplugin.validation.core import Context, case
from mbplugin.validation.formulas import hc_exact_cr, power_elastic_duration_factor
from mbplugin.validation.sim import sweep

SHCCM = "bouc_wen_hunt_crossley"
MCM = "bouc_wen_maxwell"
LAW = {"shccm": SHCCM, "mcm": MCM}


# --------------------------------------------------------------------------------------------------
# the base-parameter map (Sect. 4 and Eqs. 51-52) and Table 1's scales
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BaseParams:
    """Base parameters P* = (B_b, Gamma_b, kappa, sigma_b, n, p, U_b, T_b) of one model.

    ``model`` is ``'shccm'`` or ``'mcm'``. ``U_b`` and ``T_b`` are only needed with an external
    force or to return dimensional durations.
    """

    model: str
    Bb: float
    Gb: float
    kappa: float
    sigma_b: float
    n: float
    p: float
    Ub: float = math.nan
    Tb: float = math.nan

    def nd(self, v0: Any) -> dict[str, Any]:
        """ND parameters at approach speed ``v0`` (m/s): B, Gamma, kappa, sigma, n, p."""
        v = np.asarray(v0, dtype=float)
        s = v ** (2.0 * self.n / (self.p + 1.0))
        if self.model == "shccm":
            sigma = self.sigma_b * v
        else:
            sigma = self.sigma_b * v ** ((self.p - 1.0) / (self.p + 1.0))
        return {"B": self.Bb * s, "G": self.Gb * s, "kappa": self.kappa, "sigma": sigma,
                "n": self.n, "p": self.p}

    def nd_law_params(self, v0: Any) -> dict[str, Any]:
        """Law parameters that simulate the ND model with m = k = v0 = 1 and A = 1."""
        return nd_law_params(self.model, **self.nd(v0))

    def pressing(self, u: float, v0: Any) -> Any:
        """ND pressing force -U for a constant effective external force u (N), Eq. 42."""
        return -self.Ub * np.asarray(v0, dtype=float) ** (-2.0 * self.p / (self.p + 1.0)) * u

    def time_scale(self, v0: Any) -> Any:
        """T_c = T_b v0^(-(p-1)/(p+1)) (s): the dimensional duration is T_s T_c (Eq. 62)."""
        return self.Tb * np.asarray(v0, dtype=float) ** (-(self.p - 1.0) / (self.p + 1.0))


def nd_law_params(model: str, B: Any, G: Any, kappa: Any, sigma: Any, n: Any, p: Any
                  ) -> dict[str, Any]:
    """ND parameters -> law parameters with m = k = v0 = 1, A = 1 (then S = 1, T_c = X_c = 1).

    SHCCM: c = sigma; MCM: c = 1/sigma (sigma = m/(c T_c), Table 1).
    """
    c = sigma if model == "shccm" else 1.0 / np.asarray(sigma, dtype=float)
    return {"k": 1.0, "p": p, "alpha": kappa, "c": c, "A": 1.0, "beta": B, "gamma": G, "n": n}


def base_from_dimensional(model: str, m: float, k: float, c: float, n: float, p: float,
                          alpha: float, beta: float, gamma: float, A: float) -> BaseParams:
    """Table 1 and the base map, solved for P*: S = alpha + (1-alpha) A^p, T_b = (m/(kS))^(1/(p+1)),
    U_b = T_b/m, B_b = beta A^(n-1) T_b^n, kappa = alpha/S, sigma_b = c/(kS) (SHCCM) or
    m/(c T_b) (MCM)."""
    S = alpha + (1.0 - alpha) * A**p
    Tb = (m / (k * S)) ** (1.0 / (p + 1.0))
    sb = c / (k * S) if model == "shccm" else m / (c * Tb)
    return BaseParams(model, beta * A ** (n - 1.0) * Tb**n, gamma * A ** (n - 1.0) * Tb**n,
                      alpha / S, sb, n, p, Tb / m, Tb)


def dimensional_from_base(base: BaseParams, m: float, k: float) -> dict[str, float]:
    """Inverse of the base map when m and k are known (spec 2.7): S = (m/k)/T_b^(p+1),
    alpha = kappa S, A = ((S - alpha)/(1 - alpha))^(1/p), beta = B_b/(A^(n-1) T_b^n), gamma
    likewise, c = sigma_b k S (SHCCM) or m/(sigma_b T_b) (MCM)."""
    S = (m / k) / base.Tb ** (base.p + 1.0)
    alpha = base.kappa * S
    A = ((S - alpha) / (1.0 - alpha)) ** (1.0 / base.p)
    scale = A ** (base.n - 1.0) * base.Tb**base.n
    c = base.sigma_b * k * S if base.model == "shccm" else m / (base.sigma_b * base.Tb)
    return {"S": S, "alpha": alpha, "A": A, "beta": base.Bb / scale, "gamma": base.Gb / scale,
            "c": c}


# --------------------------------------------------------------------------------------------------
# Sect. 6: two balls in a pipe
# --------------------------------------------------------------------------------------------------
PIPE = {"g": 9.81, "omega": 1e3, "D": 250.0, "a": 0.05, "rho1": 3e3, "rho2": 1e3, "k": 1e6,
        "c": 1e3, "n": 1.5, "p": 1.5, "alpha": 0.5, "beta": 1e4, "gamma": -5e3, "A": 1.0,
        "v1": -0.5, "v2": 1.5}


#: Table 2 in ND form: Table 1 and Eq. 40 evaluated independently (spec 4.3).
PIPE_ND = {
    model: {"T_c": 2.38461e-3, "B": 3.293608, "Gamma": -1.646804, "U(0)": -0.0116965,
            "U(inf)": -0.309773, "sigma": sigma}
    for model, sigma in (("shccm", 0.002), ("mcm", 0.164680))
}


def _pipe_setup() -> dict[str, float]:
    P = PIPE
    m1 = 4.0 / 3.0 * math.pi * P["rho1"] * P["a"] ** 3
    m2 = 4.0 / 3.0 * math.pi * P["rho2"] * P["a"] ** 3
    return {"m1": m1, "m2": m2, "m": m1 * m2 / (m1 + m2), "v0": -(P["v1"] - P["v2"]),
            "eta": m1 / (m1 + m2), "eta_c": m2 / (m1 + m2)}


def _pipe_u(t: Any, s: dict[str, float]) -> tuple[Any, Any]:
    """(u1, u2) of Eqs. 56-57 (N)."""
    P = PIPE
    t = np.asarray(t, dtype=float)
    u1 = -s["m1"] * P["g"] * np.ones_like(t)
    u2 = 2.0 / math.pi * s["m2"] * P["D"] * np.arctan(P["omega"] * t)
    return u1, u2


def _int_atan(t: Any, w: float) -> tuple[Any, Any]:
    """int_0^t atan(w s) ds and int_0^t int_0^s atan(w r) dr ds (closed forms)."""
    t = np.asarray(t, dtype=float)
    at = np.arctan(w * t)
    lg = np.log1p((w * t) ** 2)
    i1 = t * at - lg / (2.0 * w)
    i2 = 0.5 * t * t * at - t / (2.0 * w) + at / (2.0 * w * w) - (t * lg - 2.0 * t
                                                                 + 2.0 * at / w) / (2.0 * w)
    return i1, i2


@case("bouc_wen.pipe", "Sect. 6: two balls in a pipe under gravity and an arctan ramp force "
      "(Table 2, Figs. 3-5)", "bouc_wen")
def pipe(ctx: Context) -> None:
    """Both models with Table 2's parameters; bodies reconstructed by the CoM bookkeeping."""
    P, s = PIPE, _pipe_setup()
    m, v0 = s["m"], s["v0"]
    g_eff = P["g"]  # u = (m2 u1 - m1 u2)/(m1 + m2) = -m (g + (2D/pi) atan(w t))
    press0 = m * g_eff

    def fext(t: float) -> float:
        return m * 2.0 / math.pi * P["D"] * math.atan(P["omega"] * t)

    ctx.note(
        f"m1 = {s['m1']:.6f} kg, m2 = {s['m2']:.6f} kg, m = {m:.6f} kg, v0 = {v0} m/s; effective "
        "external force u = (m2 u1 - m1 u2)/(m1 + m2) = -m (g + (2D/pi) atan(omega t)) (Eqs. 15, "
        "56, 57), passed to the analyser as a pressing force -u. Body positions from the "
        "relative motion by the centre-of-mass bookkeeping (Eqs. 21-29) with l1 = l2 = a."
    )
    runs: dict[str, Any] = {}
    for model, law_name in LAW.items():
        law = make_law(law_name, k=P["k"], p=P["p"], alpha=P["alpha"], c=P["c"], A=P["A"],
                       beta=P["beta"], gamma=P["gamma"], n=P["n"])
        r = impact(law, s["m1"], v0, mass2=s["m2"], press=press0, force_ext=fext, record=True)
        runs[model] = r
        ctx.bool_check(f"{model}: the collision ends (Eq. 17) with a residual overlap",
                       (not r.captured) and r.delta_residual > 0,
                       published="separation with x(t_s) != 0 (Sect. 3)",
                       ours=f"t_s = {r.duration * 1e3:.3f} ms, c_r = {r.cr_out:.4f}, residual "
                            f"{r.delta_residual * 1e3:.3f} mm", source="Sect. 3, 6")
        # the nondimensional route (Table 1, Eq. 40), as the paper simulated it
        base = base_from_dimensional(model, m, P["k"], P["c"], P["n"], P["p"], P["alpha"],
                                     P["beta"], P["gamma"], P["A"])
        tc = float(base.time_scale(v0))
        nd = make_law(law_name, **base.nd_law_params(v0))
        ndp = base.nd(v0)
        u0 = -tc / (m * v0) * press0
        u_inf = -tc / (m * v0) * (press0 + m * P["D"])
        for name, ours in (("T_c", tc), ("B", ndp["B"]), ("Gamma", ndp["G"]),
                           ("sigma", ndp["sigma"]), ("U(0)", u0), ("U(inf)", u_inf)):
            ctx.rel_check(f"{model}: ND parameter {name} from Table 2 (Table 1, Eq. 40)",
                          PIPE_ND[model][name], float(ours), 1e-5,
                          source="Table 1 closed forms (values: spec 4.3)")

        def fext_nd(T: float, tc: float = tc) -> float:
            return tc / (m * v0) * fext(tc * T)

        r_nd = impact(nd, 1.0, 1.0, press=tc / (m * v0) * press0, force_ext=fext_nd)
        ctx.abs_check(f"{model}: c_r, dimensional vs ND route (Table 1 scaling)", r_nd.cr_out,
                      r.cr_out, 1e-6, source="Table 1, Eq. 40")
        ctx.rel_check(f"{model}: t_s, dimensional vs ND route T_s T_c", r_nd.duration * tc,
                      r.duration, 1e-6, source="Table 1, Eq. 40", unit="s")
        ser = r.series
        assert ser is not None
        t, d, dd, F = ser.t, ser.delta, ser.ddelta, ser.force
        i1, _ = _int_atan(t, P["omega"])
        impulse = press0 * t + m * 2.0 / math.pi * P["D"] * i1  # int (press + fext) dt
        if model == "mcm":
            rho = ser.state[:, 0]
            res = m * dd + P["c"] * rho - m * v0 - impulse
            ctx.max_check("mcm: invariant m v + c r = -m v0 + int u dt, max residual / (m v0)",
                          float(np.max(np.abs(res))) / (m * v0), 1e-6, source="spec 9 (App. C)")
        # bodies: x = -delta, v = -ddelta, Eqs. 21-29
        x, v = -d, -dd
        u1, u2 = _pipe_u(t, s)
        M = s["m1"] + s["m2"]
        xm0 = s["eta"] * P["a"] - s["eta_c"] * P["a"]
        vm0 = s["eta"] * P["v1"] + s["eta_c"] * P["v2"]
        j1, j2 = _int_atan(t, P["omega"])
        a_const = -s["m1"] * P["g"] / M
        a_ramp = 2.0 / math.pi * s["m2"] * P["D"] / M
        xm = xm0 + vm0 * t + 0.5 * a_const * t * t + a_ramp * j2
        vm = vm0 + a_const * t + a_ramp * j1
        x1 = xm + s["eta_c"] * x + s["eta_c"] * 2 * P["a"]
        x2 = xm - s["eta"] * x - s["eta"] * 2 * P["a"]
        v1 = vm + s["eta_c"] * v
        v2 = vm - s["eta"] * v
        ctx.max_check(f"{model}: body initial conditions recovered (Table 2), max error",
                      float(max(abs(x1[0] - P["a"]), abs(x2[0] + P["a"]), abs(v1[0] - P["v1"]),
                                abs(v2[0] - P["v2"]))), 1e-12, source="Eqs. 26-29")
        # each body's own equation of motion (Eq. 9) from the reconstructed velocities
        keep = np.concatenate(([True], np.diff(t) > 0))  # drop repeated restart samples
        tk = t[keep]
        a1 = np.gradient(v1[keep], tk)
        a2 = np.gradient(v2[keep], tk)
        Fk, u1k, u2k = F[keep], u1[keep], u2[keep]
        scale = float(np.max(np.abs(F))) / s["m2"]
        inner = slice(2, -2)
        res1 = np.max(np.abs(a1 - (Fk + u1k) / s["m1"])[inner]) / scale
        res2 = np.max(np.abs(a2 - (-Fk + u2k) / s["m2"])[inner]) / scale
        ctx.max_check(f"{model}: reconstructed bodies obey m_i a_i = +-F + u_i (Eq. 9), "
                      "max residual / (F_max/m2)", float(max(res1, res2)), 2e-3,
                      source="Eq. 9")
        runs[model + "_bodies"] = (t, x1, x2, v1, v2, F, u1, u2)
    ctx.fact("pipe", {k: (runs[k].cr_out, runs[k].duration, runs[k].delta_residual)
                      for k in LAW})
    if ctx.plots:
        _plot_pipe(ctx, runs)


def _plot_pipe(ctx: Context, runs: dict[str, Any]) -> None:
    from mbplugin.plotting import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(3, 2, figsize=(9.0, 7.0), sharex="col")
    for j, model in enumerate(LAW):
        t, x1, x2, v1, v2, F, u1, u2 = runs[model + "_bodies"]
        tm = t * 1e3
        axes[0, j].plot(tm, (x1 - x1[0]) * 1e3, label="x_m,1 - l1 (ball 1)")
        axes[0, j].plot(tm, (x2 - x2[0]) * 1e3, label="x_m,2 + l2 (ball 2)")
        axes[1, j].plot(tm, v1, label="v_m,1")
        axes[1, j].plot(tm, v2, label="v_m,2")
        axes[2, j].plot(tm, F, label="contact force F")
        axes[2, j].plot(tm, u1, "--", label="u1 (gravity)")
        axes[2, j].plot(tm, u2, "-.", label="u2 (ramp)")
        axes[0, j].set_title(f"BW{model.upper()}: c_r = {runs[model].cr_out:.3f}, "
                             f"t_s = {runs[model].duration * 1e3:.2f} ms", fontsize=9)
        axes[2, j].set_xlabel("t (ms)")
        for ax in axes[:, j]:
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=6)
    axes[0, 0].set_ylabel("CoM displacement (mm)")
    axes[1, 0].set_ylabel("velocity (m/s)")
    axes[2, 0].set_ylabel("force (N)")
    fig.tight_layout()
    ctx.figure("bouc_wen_pipe.png", fig,
               "Sect. 6, two balls in a pipe (Table 2): positions, velocities and forces during "
               "the collision (cf. the paper's Figs. 3-5); left BWSHCCM, right BWMCM.")


# --------------------------------------------------------------------------------------------------
# Table 3: Kharaz & Gorham data sets
# --------------------------------------------------------------------------------------------------
TABLE3: dict[str, tuple[BaseParams, float]] = {
    "SHCCM DSS(0)": (BaseParams("shccm", 1.43, -1.42, 0.632, 0.00715, 1.31, 1.27), 5.81e-5),
    "SHCCM DSS(1)": (BaseParams("shccm", 2.38, -2.38, 0.677, 0.0348, 2.93, 2.62), 3.51e-5),
    "SHCCM DSA(0)": (BaseParams("shccm", 0.63, -0.611, 0.188, 0.00594, 1.0, 2.02), 7.62e-6),
    "SHCCM DSA(1)": (BaseParams("shccm", 1.04, -1.02, 0.362, 0.017, 1.01, 1.67), 7.23e-6),
    "MCM DSS(0)": (BaseParams("mcm", 0.655, -0.64, 0.519, 0.0118, 1.94, 2.28), 7.49e-5),
    "MCM DSS(1)": (BaseParams("mcm", 0.966, -0.966, 0.531, 2.22e-16, 1.57, 1.75), 6.05e-5),
    "MCM DSA(0)": (BaseParams("mcm", 0.44, -0.418, 0.113, 0.00785, 1.27, 3.14), 8.07e-6),
    "MCM DSA(1)": (BaseParams("mcm", 0.521, -0.521, 0.168, 0.0144, 1.0, 2.04), 8.02e-6),
}
#: Assumed speed range of the Kharaz & Gorham data (not stated in the paper), m/s.
KG_RANGE = (0.5, 5.0)


def _base_sweep(base: BaseParams, v: np.ndarray, press: Any = 0.0) -> dict[str, np.ndarray]:
    """ND impacts of one base-parameter set at the dimensional speeds ``v`` (m/s)."""
    return sweep(LAW[base.model], base.nd_law_params(v), mass=1.0, v0=1.0, press=press)


@case("bouc_wen.table3", "Table 3: c_r vs speed of the Kharaz-Gorham parameter sets (base map)",
      "bouc_wen")
def table3(ctx: Context) -> None:
    """The eight identified sets: monotone c_r(v), and agreement implied by their fit errors."""
    v = np.logspace(-1, 1, ctx.n(61, 21))
    ctx.note(
        "Each base-parameter set is mapped to ND parameters at every speed (B, Gamma ~ "
        "v0^(2n/(p+1)); sigma ~ v0 for SHCCM, v0^((p-1)/(p+1)) for MCM; spec 2.7, 3.7) and "
        "simulated in ND form (m = k = v0 = 1, A = 1). Four sets were fitted to the same data "
        "(DSS: Al2O3 on steel; DSA: on aluminium alloy) with the published mean squared errors "
        "J1, so at the data speeds the RMS difference of two sets' curves cannot exceed "
        "sqrt(J1_a) + sqrt(J1_b) (triangle inequality). The data speeds are not stated in the "
        f"paper; we assume {KG_RANGE[0]}-{KG_RANGE[1]} m/s (typical drop tests) and report how "
        "wide a range keeps the bound."
    )
    curves = {key: _base_sweep(base, v)["cr_out"] for key, (base, _) in TABLE3.items()}
    for key, e in curves.items():
        ctx.bool_check(f"{key}: c_r decreases with impact speed (0.1-10 m/s)",
                       bool(np.all(np.diff(e) < 0) and e[0] < 1 and e[-1] > 0),
                       published="decreasing (elastic-plastic data)",
                       ours=f"{e[0]:.3f} -> {e[-1]:.3f}", source="Sect. 7.2, Fig. 6")
    sel = (v >= KG_RANGE[0] * (1 - 1e-9)) & (v <= KG_RANGE[1] * (1 + 1e-9))
    worst_any = {}
    for ds in ("DSS", "DSA"):
        keys = [k for k in TABLE3 if ds in k]
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                rms = float(np.sqrt(np.mean((curves[a][sel] - curves[b][sel]) ** 2)))
                bound = math.sqrt(TABLE3[a][1]) + math.sqrt(TABLE3[b][1])
                ctx.max_check(f"{a} vs {b}: RMS difference of c_r on {KG_RANGE[0]}-"
                              f"{KG_RANGE[1]} m/s", rms, bound,
                              published="<= sqrt(J1_a) + sqrt(J1_b)", source="Table 3 J1")
                worst_any[(a, b)] = rms / bound
    for lo, hi in ((0.2, 6.0), (0.1, 10.0)):
        sel2 = (v >= lo * (1 - 1e-9)) & (v <= hi * (1 + 1e-9))
        ratio = max(
            float(np.sqrt(np.mean((curves[a][sel2] - curves[b][sel2]) ** 2)))
            / (math.sqrt(TABLE3[a][1]) + math.sqrt(TABLE3[b][1]))
            for ds in ("DSS", "DSA") for a in TABLE3 for b in TABLE3
            if ds in a and ds in b and a < b
        )
        ctx.info(f"sensitivity: largest RMS difference / bound over {lo}-{hi} m/s", 1.0, ratio,
                 note="pass would need <= 1 (range assumption)", source="Table 3 J1")
    # cross-route: dimensional parameters with m = k = 1 and T_b = 1 give the same c_r
    vv = np.array([0.3, 1.0, 3.0])
    for key, (base, _) in TABLE3.items():
        dim = nd_law_params(base.model, base.Bb, base.Gb, base.kappa, base.sigma_b, base.n,
                            base.p)  # with T_b = 1, m = k = 1 the dimensional values equal P*
        e_dim = sweep(LAW[base.model], dim, mass=1.0, v0=vv)["cr_out"]
        e_nd = _base_sweep(base, vv)["cr_out"]
        ctx.max_check(f"{key}: c_r dimensional (m = k = T_b = 1) vs ND map, max diff",
                      float(np.max(np.abs(e_dim - e_nd))), 1e-6, source="Sect. 4 map")
    ctx.fact("table3_rms_over_bound", max(worst_any.values()) if worst_any else math.nan)
    if ctx.plots:
        from mbplugin.plotting import pyplot

        plt = pyplot()
        fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8), sharey=True)
        for ax, ds in zip(axes, ("DSS", "DSA"), strict=True):
            for key, e in curves.items():
                if ds in key:
                    ax.plot(v, e, "-" if "SHCCM" in key else "--", label=key)
            ax.axvspan(*KG_RANGE, color="0.9", zorder=0)
            ax.set_xscale("log")
            ax.set_xlabel("approach speed v0 (m/s)")
            ax.set_title(f"{ds} ({'steel' if ds == 'DSS' else 'Al alloy'} plate)", fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        axes[0].set_ylabel("c_r")
        fig.tight_layout()
        ctx.figure("bouc_wen_table3_cr.png", fig,
                   "Table 3 parameter sets: c_r against approach speed through the base-parameter "
                   "map (shaded: assumed data range).")


# --------------------------------------------------------------------------------------------------
# Table 4: baseball loops
# --------------------------------------------------------------------------------------------------
TABLE4 = {
    "shccm": {"k": 117080063.0, "c": 5854003.0, "n": 1.1, "p": 1.7, "alpha": 0.1,
              "beta": 981.05, "gamma": -961.4, "A": 0.925},
    "mcm": {"k": 253000000.0, "c": 2811.0, "n": 1.2, "p": 1.8, "alpha": 0.15, "beta": 1200.0,
            "gamma": -1200.0, "A": 1.01},
}
#: Table 4 in base parameters: Table 1's closed forms evaluated independently (spec 5.3).
TABLE4_BASE = {
    "shccm": {"kappa": 0.11258, "T_b": 5.24956e-4, "U_b": 3.62039e-3, "B_b": 0.240127,
              "Gamma_b": -0.235317, "sigma_b": 0.0562882},
    "mcm": {"kappa": 0.14773, "T_b": 4.97748e-4, "U_b": 3.43275e-3, "B_b": 0.130755,
            "Gamma_b": -0.130755, "sigma_b": 0.103633},
}
BALL_MASS = 0.145  # kg (Cross 2011)
BALL_SPEEDS = (1.0, 2.0, 3.0, 4.0, 5.0)  # m/s (the paper does not give the loop speeds)


def _w_shccm(delta: Any, zeta: Any, ddelta: Any, m: float, prm: dict[str, float]) -> Any:
    """Dimensional energy of the SHCCM: m v^2/2 + alpha k |x|^(p+1)/(p+1) + (1-alpha) k
    |z|^(p+1)/(A (p+1)) (J); non-increasing when u = 0 (spec 2.8)."""
    k, p, a, A = prm["k"], prm["p"], prm["alpha"], prm["A"]
    return (0.5 * m * np.asarray(ddelta) ** 2 + a * k * np.abs(delta) ** (p + 1) / (p + 1)
            + (1 - a) * k * np.abs(zeta) ** (p + 1) / (A * (p + 1)))


@case("bouc_wen.table4", "Table 4: baseball loops (Cross 2011), both models", "bouc_wen")
def table4(ctx: Context) -> None:
    """Dimensional runs, their ND twins through the base map, energy and invariant checks."""
    ctx.note(
        f"m = {BALL_MASS} kg, u = 0, Table 4 parameters; the loop speeds are not given in the "
        f"paper, we use {', '.join(f'{v:g}' for v in BALL_SPEEDS)} m/s. Each dimensional run is "
        "repeated in ND form through the derived base parameters (spec 5.3); the SHCCM energy "
        "m v^2/2 + alpha k |x|^(p+1)/(p+1) + (1-alpha) k |z|^(p+1)/(A(p+1)) must never increase "
        "and the MCM must satisfy m v + c r = -m v0 at separation."
    )
    speeds = np.array(BALL_SPEEDS)
    loops: dict[str, list[Any]] = {}
    for model, prm in TABLE4.items():
        law_name = LAW[model]
        base = base_from_dimensional(model, BALL_MASS, **prm)
        for name, ours in (("kappa", base.kappa), ("T_b", base.Tb), ("U_b", base.Ub),
                           ("B_b", base.Bb), ("Gamma_b", base.Gb), ("sigma_b", base.sigma_b)):
            ctx.rel_check(f"{model}: base parameter {name} from Table 4 (Table 1 formulas)",
                          TABLE4_BASE[model][name], ours, 1e-4,
                          source="Table 1 closed forms (values: spec 5.3)")
        dim = sweep(law_name, prm, mass=BALL_MASS, v0=speeds)
        nd = _base_sweep(base, speeds)
        ctx.max_check(f"{model}: c_r dimensional vs ND (base map), max diff",
                      float(np.max(np.abs(dim["cr_out"] - nd["cr_out"]))), 1e-6,
                      source="Table 1, Eqs. 40, 49")
        ctx.max_check(f"{model}: t_d dimensional vs T_s T_c (base map), max rel diff",
                      float(np.max(np.abs(nd["duration"] * base.time_scale(speeds)
                                          / dim["duration"] - 1))), 1e-6,
                      source="Table 1, Eq. 62")
        loops[model] = []
        worst_w, worst_inv = 0.0, 0.0
        for v0 in speeds:
            r = impact(make_law(law_name, **prm), BALL_MASS, float(v0), record=True)
            loops[model].append(r)
            s = r.series
            assert s is not None
            if model == "shccm":
                w = _w_shccm(s.delta, s.state[:, 0], s.ddelta, BALL_MASS, prm)
                worst_w = max(worst_w, float(np.max(np.diff(w))) / (0.5 * BALL_MASS * v0**2))
            else:
                rho_end = float(r.state_end[0])
                expect = BALL_MASS * v0 * (1 + r.cr_out) / prm["c"]
                worst_inv = max(worst_inv, abs(rho_end / expect - 1))
            ctx.info(f"{model}, v0 = {v0:g} m/s: c_r and duration", "-",
                     f"c_r {r.cr_out:.4f}, t_d {r.duration * 1e3:.3f} ms, residual "
                     f"{r.delta_residual * 1e3:.2f} mm", source="Table 4")
        if model == "shccm":
            ctx.max_check("shccm: largest energy increase between samples / (m v0^2/2)",
                          worst_w, 1e-8, source="spec 2.8 (App. B)")
        else:
            ctx.max_check("mcm: rho(t_s) vs m v0 (1 + e)/c, max rel diff", worst_inv, 1e-7,
                          source="spec 3.8 invariant")
    if ctx.plots:
        from mbplugin.plotting import pyplot

        plt = pyplot()
        fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8), sharey=True)
        for ax, (model, rs) in zip(axes, loops.items(), strict=True):
            for r, v0 in zip(rs, speeds, strict=True):
                ax.plot(r.series.delta * 1e3, r.series.force, label=f"v0 = {v0:g} m/s")
            ax.set_title(f"BW{model.upper()} (Table 4)", fontsize=9)
            ax.set_xlabel("compression -x = delta (mm)")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        axes[0].set_ylabel("contact force (N)")
        fig.tight_layout()
        ctx.figure("bouc_wen_table4_loops.png", fig,
                   "Table 4: force-compression loops of a 0.145 kg baseball on a rigid surface "
                   "(cf. the paper's Fig. 7).")


# --------------------------------------------------------------------------------------------------
# Table 5: the cart of Villegas et al. (2021)
# --------------------------------------------------------------------------------------------------
CART_M = 0.506  # kg
CART_K = 255.0  # N/m
CART_G = 9.78  # m/s^2
CART_THETA = math.pi / 36.0
CART_U = -CART_M * CART_G * math.sin(CART_THETA)  # N, pressing the cart onto the stop
#: Table 5's implied physical parameters, Table 1 inverted independently (spec 5.4).
TABLE5_PHYSICAL = {
    "shccm": {"alpha": 0.98872, "S": 3.0516, "A": 182.94, "c": 61.786, "beta": 682.35,
              "gamma": 513.73},
    "mcm": {"alpha": 0.99434, "S": 2.1902, "A": 211.13},
}
TABLE5: dict[str, tuple[BaseParams, float]] = {
    "shccm": (BaseParams("shccm", 17.4, 13.1, 0.324, 0.0794, 1.0, 1.0, 0.0503, 0.0255), 1.02e-4),
    "mcm": (BaseParams("mcm", 14.9, 14.7, 0.454, 0.099, 1.09, 1.0, 0.0595, 0.0301), 1.31e-4),
}


@case("bouc_wen.table5", "Table 5: spring-loaded cart under gravity (Villegas et al. 2021), "
      "c_r and t_d vs speed, low-speed capture", "bouc_wen")
def table5(ctx: Context) -> None:
    """The cart: constraints (63)-(64), capture at low speed, t_d ~ pi sqrt(m/k), creep."""
    v = np.logspace(-2.5, 0.0, ctx.n(61, 21))
    t_lin = math.pi * math.sqrt(CART_M / CART_K)
    ctx.note(
        f"u = -m g sin(theta) = {CART_U:.6f} N (m = {CART_M} kg, g = {CART_G}, theta = pi/36), "
        f"ND pressing force -U = -U_b v0^(-2p/(p+1)) u (Eq. 42), ND runs cut off at T = 400 "
        f"(e = 0 when the bodies have not separated). Speeds {v[0]:.4f}-{v[-1]:.1f} m/s. The "
        f"cart's spring (k = {CART_K} N/m, linear per Villegas et al.) gives the reference "
        f"duration pi sqrt(m/k) = {t_lin:.4f} s; the fitted models must stay within the "
        "published RMS duration error sqrt(J2) of it away from the capture threshold."
    )
    out: dict[str, dict[str, np.ndarray]] = {}
    for model, (base, j2) in TABLE5.items():
        # the paper's constraints (63) T_b = m U_b and (64) alpha <= 1
        tol63 = 0.5e-4 / base.Ub + 0.5e-4 / base.Tb  # rounding of the printed 3 digits
        ctx.rel_check(f"{model}: constraint (63) T_b = m U_b", base.Tb, CART_M * base.Ub,
                      tol63, source="Eq. 63", unit="s")
        alpha = CART_M / CART_K * base.kappa / base.Tb ** (base.p + 1.0)
        phys = dimensional_from_base(base, CART_M, CART_K)
        for name, val in TABLE5_PHYSICAL[model].items():
            ctx.rel_check(f"{model}: implied physical {name} (m, k known; inverse base map)",
                          val, phys[name], 2e-4, source="Table 1 closed forms (values: spec 5.4)")
        ctx.max_check(f"{model}: constraint (64) alpha = (m/k) kappa / T_b^(p+1) <= 1", alpha,
                      1.0, source="Eq. 64")
        press = base.pressing(CART_U, v)
        r = sweep(LAW[model], base.nd_law_params(v), mass=1.0, v0=1.0, press=press, t_max=400.0)
        td = r["duration"] * base.time_scale(v)
        out[model] = {"e": r["cr_out"], "td": td, "captured": r["captured"]}
        cap = r["captured"]
        n_cap = int(cap.sum())
        single = n_cap > 0 and bool(np.all(cap[:n_cap])) and not bool(np.any(cap[n_cap:]))
        v_star = float(v[n_cap]) if 0 < n_cap < v.size else math.nan
        ctx.bool_check(f"{model}: captured (e = 0) below a threshold speed, separating above",
                       single and n_cap < v.size,
                       published="low-speed capture under sustained load",
                       ours=f"captured for v0 < {v_star:.4f} m/s ({n_cap} of {v.size})",
                       source="Sect. 7.4, spec 9")
        ok = v >= 2.0 * v_star if math.isfinite(v_star) else ~cap
        dev = float(np.max(np.abs(td[ok] - t_lin))) if np.any(ok) else math.nan
        ctx.max_check(f"{model}: max |t_d - pi sqrt(m/k)| (= {t_lin:.4f} s) for v0 >= 2 "
                      "v_capture, vs sqrt(J2)", dev, math.sqrt(j2),
                      source="Table 5 J2, Villegas spring", unit="s")
        ctx.fact(f"v_capture_{model}", v_star)
        # behaviour after capture (closed forms): SHCCM at rest with F = -U; MCM creeps, V = sigma U
        i = 0
        rr = impact(make_law(LAW[model], **base.nd_law_params(v[i])), 1.0, 1.0,
                    press=float(press[i]), t_max=4000.0, record=True)
        s = rr.series
        assert s is not None
        if model == "shccm":
            ctx.rel_check(f"shccm, v0 = {v[i]:.4f}: captured, force at T = 4000 -> -U (static "
                          "equilibrium)", float(press[i]), float(s.force[-1]), 1e-3,
                          source="spec 3.8")
            ctx.max_check(f"shccm, v0 = {v[i]:.4f}: captured, |ddelta| at T = 4000",
                          float(abs(s.ddelta[-1])), 1e-3, source="spec 3.8")
        else:
            sigma = float(base.nd(v[i])["sigma"])
            ctx.rel_check(f"mcm, v0 = {v[i]:.4f}: creep speed at T = 4000 -> sigma U (never "
                          "separates)", sigma * float(press[i]), float(s.ddelta[-1]), 1e-3,
                          source="spec 3.8")
    if ctx.plots:
        from mbplugin.plotting import pyplot

        plt = pyplot()
        fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.6))
        for model, o in out.items():
            axes[0].plot(v, o["e"], label=f"BW{model.upper()}")
            td = np.where(o["captured"], np.nan, o["td"])
            axes[1].plot(v, td, label=f"BW{model.upper()}")
        axes[1].axhline(t_lin, color="k", ls=":", lw=1, label="pi sqrt(m/k)")
        for ax, lab in zip(axes, ("c_r", "t_d (s)"), strict=True):
            ax.set_xscale("log")
            ax.set_xlabel("approach speed v0 (m/s)")
            ax.set_ylabel(lab)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        ctx.figure("bouc_wen_table5_cart.png", fig,
                   "Table 5, cart under gravity: c_r and duration against approach speed "
                   "(c_r = 0: captured); cf. the paper's Figs. 8-9.")


# --------------------------------------------------------------------------------------------------
# closed-form limits (spec section 9)
# --------------------------------------------------------------------------------------------------
@case("bouc_wen.limits", "Closed-form limits: elastic, Hunt-Crossley, linear Maxwell, invariants, "
      "Bouc-Wen branch", "bouc_wen")
def limits(ctx: Context) -> None:
    """The limits of spec section 9, simulated in ND form (m = k = v0 = 1, A = 1)."""
    tol = 1e-6
    # elastic limit
    for p in (1.0, 1.5, 2.5):
        xmax = ((p + 1) / 2) ** (1 / (p + 1))
        Ts = xmax * power_elastic_duration_factor(p)  # = 2 xmax B(1/(p+1), 1/2)/(p+1)
        for model in LAW:
            c = 0.0 if model == "shccm" else 1e12
            r = sweep(LAW[model], {"k": 1.0, "p": p, "alpha": np.array([0.3, 0.7]), "c": c,
                                   "A": 1.0, "beta": 0.0, "gamma": 0.0, "n": 1.0})
            ctx.max_check(f"elastic limit {model}, p = {p:g}: max |e - 1|",
                          float(np.max(np.abs(r["cr_out"] - 1))), tol, source="spec 9")
            ctx.rel_check(f"elastic limit {model}, p = {p:g}: T_s = 2((p+1)/2)^(1/(p+1)) "
                          "B(1/(p+1),1/2)/(p+1)", Ts, float(r["duration"][0]), tol,
                          source="spec 9")
            ctx.rel_check(f"elastic limit {model}, p = {p:g}: X_max = ((p+1)/2)^(1/(p+1))",
                          xmax, float(r["delta_max"][1]), tol, source="spec 9")
    # Hunt-Crossley limit of the SHCCM
    sig = np.array([0.1, 0.5, 1.0, 2.0])
    for p in (1.0, 1.5, 2.5):
        r = sweep(SHCCM, {"k": 1.0, "p": p, "alpha": 0.4, "c": sig, "A": 1.0, "beta": 0.0,
                          "gamma": 0.0, "n": 1.0})
        expect = np.array([hc_exact_cr(s) for s in sig])
        ctx.max_check(f"Hunt-Crossley limit shccm, p = {p:g}: max |e - root of sigma - "
                      "ln(1+sigma) = -e sigma - ln(1 - e sigma)|",
                      float(np.max(np.abs(r["cr_out"] - expect))), tol, source="spec 9")
    # linear Maxwell limit of the MCM
    sig = np.array([0.2, 0.5, 1.0, 1.5, 1.9])
    r = sweep(MCM, {"k": 1.0, "p": 1.0, "alpha": 0.5, "c": 1.0 / sig, "A": 1.0, "beta": 0.0,
                    "gamma": 0.0, "n": 1.0})
    wd = np.sqrt(1 - sig**2 / 4)
    ctx.max_check("linear Maxwell limit: max |e - exp(-sigma pi/(2 w_d))|, sigma 0.2..1.9",
                  float(np.max(np.abs(r["cr_out"] - np.exp(-sig * np.pi / (2 * wd))))), tol,
                  source="spec 9")
    ctx.max_check("linear Maxwell limit: max rel |T_s - pi/w_d|",
                  float(np.max(np.abs(r["duration"] * wd / np.pi - 1))), tol, source="spec 9")
    r = sweep(MCM, {"k": 1.0, "p": 1.0, "alpha": 0.5, "c": 1.0 / np.array([2.5, 4.0]), "A": 1.0,
                    "beta": 0.0, "gamma": 0.0, "n": 1.0}, t_max=400.0)
    # F and ddelta both decay to zero: round-off may end the contact with e ~ 1e-18 instead
    ctx.max_check("linear Maxwell limit: no rebound for sigma = 2.5, 4 (max e; captured: e = 0)",
                  float(np.max(r["cr_out"])), 1e-9, source="spec 9")
    # MCM invariant and SHCCM energy with an identified set (Table 3)
    for key in ("MCM DSS(0)", "MCM DSA(1)"):
        base = TABLE3[key][0]
        for v0 in (0.5, 3.0):
            rr = impact(make_law(MCM, **base.nd_law_params(v0)), 1.0, 1.0, record=True)
            sigma = float(base.nd(v0)["sigma"])
            ctx.rel_check(f"{key}, v0 = {v0:g}: R(T_s) = -sigma (1 + e)", sigma * (1 + rr.cr_out),
                          float(rr.state_end[0]), 1e-7, source="spec 9")
            s = rr.series
            assert s is not None
            res = np.max(np.abs(s.ddelta + s.state[:, 0] / sigma - 1.0))
            ctx.max_check(f"{key}, v0 = {v0:g}: R + sigma V = -sigma along the run, max residual",
                          float(res), 1e-7, source="spec 9")
    for key in ("SHCCM DSS(0)", "SHCCM DSA(0)"):
        base = TABLE3[key][0]
        for v0 in (0.5, 3.0):
            nd = base.nd(v0)
            rr = impact(make_law(SHCCM, **base.nd_law_params(v0)), 1.0, 1.0, record=True)
            s = rr.series
            assert s is not None
            kap, p = nd["kappa"], nd["p"]
            W = (kap * np.abs(s.delta) ** (p + 1) / (p + 1)
                 + (1 - kap) * np.abs(s.state[:, 0]) ** (p + 1) / (p + 1) + 0.5 * s.ddelta**2)
            ctx.max_check(f"{key}, v0 = {v0:g}: energy W never increases (largest step up)",
                          float(max(np.max(np.diff(W)), 0.0)), 1e-9, source="spec 2.8, 9")
    # Bouc-Wen branch: Gamma = -B gives Z = X on first loading; n = 1, B + Gamma > 0: exponential
    rr = impact(make_law(SHCCM, k=1.0, p=1.5, alpha=0.5, c=0.01, A=1.0, beta=2.0, gamma=-2.0,
                         n=1.5), 1.0, 1.0, record=True)
    s = rr.series
    load = s.t <= rr.t_max_compression
    ctx.max_check("Gamma = -B: max |Z - X| on first loading",
                  float(np.max(np.abs(s.state[load, 0] - s.delta[load]))), 1e-8, source="spec 9")
    bg = 1.5
    rr = impact(make_law(SHCCM, k=1.0, p=1.5, alpha=0.5, c=0.01, A=1.0, beta=1.0, gamma=0.5,
                         n=1.0), 1.0, 1.0, record=True)
    s = rr.series
    load = s.t <= rr.t_max_compression
    expect = (1 - np.exp(-bg * s.delta[load])) / bg
    ctx.max_check("n = 1, B + Gamma = 1.5: max |Z - (1 - exp(-(B+G)|X|))/(B+G)| on loading",
                  float(np.max(np.abs(s.state[load, 0] - expect))), 1e-8, source="spec 9")
    ctx.max_check("n = 1, B + Gamma = 1.5: max |Z| (bound 1/(B+G))",
                  float(np.max(np.abs(s.state[:, 0]))), 1.0 / bg, source="spec 9")
