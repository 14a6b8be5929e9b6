"""Closed-form impacts: Hertz, the linear oscillator (free and clipped: Goyal's factor), Thornton's
c_r(v/V_y), and the exact c_r relation of the Hunt-Crossley family.

Every expected value here is a formula (see :mod:`mbplugin.validation.formulas`), evaluated
independently of the law implementations.
"""

from __future__ import annotations

import math

import numpy as np

from mbplugin.laws import get_law_class
from mbplugin.laws.power import hertz_k
from mbplugin.validation.core import Context, case, law_available, missing_reason
from mbplugin.validation.formulas import (
    goyal_cr,
    goyal_duration,
    hc_exact_cr,
    linear_cr_tension,
    linear_duration_tension,
    power_elastic_delta_max,
    power_elastic_duration_factor,
    thornton_cr,
)
from mbplugin.validation.review import family_names
from mbplugin.validation.sim import accepted_params, sweep


def tension_option() -> str:
    """Name of ``kelvin_voigt``'s yes/no option that lets the force pull."""
    names = {o.name for o in get_law_class("kelvin_voigt").params}
    return "allow_tension" if "allow_tension" in names else "tension"


#: Relative tolerance of the integrated closed forms (the integrator runs at rtol 1e-10).
TOL = 1e-6


@case("closed.hertz", "Hertz impact: delta_max, duration 2.94328 delta_max/v0, F_max, c_r = 1",
      "closed")
def hertz(ctx: Context) -> None:
    """Elastic impacts of spheres: Hertz (1881) with the classical energy integral."""
    # (m1 kg, m2 kg, k N/m^1.5, v0 m/s): steel-ball of Zhang et al. 2022, two equal steel spheres
    # (review worked example), a soft ball, a fast impact
    cases = [(0.54, math.inf, 2.4144e10, 0.15), (3.26726e-2, 3.26726e-2, 1.07232e10, 1.0),
             (0.1, math.inf, 1e6, 3.0), (1.0, 2.0, 5e9, 20.0)]
    m1, m2, k, v0 = (np.array(c, dtype=float) for c in zip(*cases, strict=True))
    r = sweep("hertz", {"k": k, "n": 1.5}, mass=m1, mass2=m2, v0=v0)
    with np.errstate(invalid="ignore"):
        meff = np.where(np.isinf(m2), m1, m1 * m2 / (m1 + m2))
    dmax = power_elastic_delta_max(meff, k, v0, 1.5)
    factor = power_elastic_duration_factor(1.5)
    ctx.abs_check("duration factor 2 B(2/5, 1/2) / (5/2)", 2.94328, factor, 5e-6,
                  source="closed form")
    for i, (a, b, kk, v) in enumerate(cases):
        tag = f"m1={a:g}, m2={b:g}, k={kk:g}, v0={v:g}"
        ctx.rel_check(f"{tag}: delta_max = (5 m v0^2/(4k))^(2/5)", dmax[i],
                      r["delta_max"][i], TOL, source="Hertz", unit="m")
        ctx.rel_check(f"{tag}: duration = 2.94328 delta_max/v0", factor * dmax[i] / v,
                      r["duration"][i], TOL, source="Hertz", unit="s")
        ctx.rel_check(f"{tag}: F_max = k delta_max^1.5", kk * dmax[i] ** 1.5, r["f_max"][i], TOL,
                      source="Hertz", unit="N")
        ctx.abs_check(f"{tag}: c_r = 1", 1.0, r["cr_out"][i], TOL, source="Hertz")


@case("closed.linear", "Linear oscillator: c_r = exp(-zeta pi/sqrt(1-zeta^2)), half-period "
      "duration", "closed")
def linear(ctx: Context) -> None:
    """Kelvin-Voigt with tension (contact until delta returns to 0): the damped half period."""
    m, k = 2.0, 1e6
    zeta = np.array([0.01, 0.1, 0.3, 0.6, 0.9])
    c = 2.0 * zeta * math.sqrt(k * m)
    r = sweep("kelvin_voigt", {"k": k, "c": c, tension_option(): "yes"}, mass=m, v0=1.5)
    expect_cr = linear_cr_tension(zeta)
    expect_t = linear_duration_tension(zeta, math.sqrt(k / m))
    for i, z in enumerate(zeta):
        ctx.abs_check(f"kelvin_voigt with tension, zeta={z:g}: c_r", float(expect_cr[i]),
                      r["cr_out"][i], TOL, source="closed form")
        ctx.rel_check(f"kelvin_voigt with tension, zeta={z:g}: duration pi/omega_d",
                      float(expect_t[i]), r["duration"][i], TOL, source="closed form", unit="s")
    # the c_r input of Anagnostopoulos' ratio (review Eqs. 5.39-5.40) is then reproduced exactly
    cr = np.array([0.1, 0.5, 0.9])
    r2 = sweep("kelvin_voigt", {"k": k, "cr": cr, tension_option(): "yes"}, mass=m, v0=1.5)
    for i, c_in in enumerate(cr):
        ctx.abs_check(f"kelvin_voigt cr={c_in:g} (Anagnostopoulos xi), with tension: c_r",
                      float(c_in), r2["cr_out"][i], TOL, source="review Eqs. 5.39-5.40")


@case("closed.goyal", "Goyal's factor: clipped linear spring-dashpot, factor 2 vs 4", "closed")
def goyal(ctx: Context) -> None:
    """Open question: the review prints Goyal's relation with a factor 4; the clipped linear
    spring-dashpot (Goyal et al. 1994's contact rule) gives factor 2."""
    m, k = 1.0, 1e6
    zeta = np.array([0.02, 0.1, 0.2, 0.4, 0.6, 0.8, 0.95])
    c = 2.0 * zeta * math.sqrt(k * m)
    r = sweep("kelvin_voigt", {"k": k, "c": c, tension_option(): "no"}, mass=m, v0=1.0)
    c2, c4 = goyal_cr(zeta, 2.0), goyal_cr(zeta, 4.0)
    t2 = goyal_duration(zeta, math.sqrt(k / m))
    ctx.note(
        "The clipped Kelvin-Voigt law (force max(k delta + c ddelta, 0), contact ends when it "
        "vanishes) is exactly the linear spring-dashpot Goyal et al. analysed. For each damping "
        "ratio zeta we compare its simulated c_r with the review's Eq. 5.22 read with factor 2 "
        "and with the printed factor 4."
    )
    for i, z in enumerate(zeta):
        ctx.abs_check(f"kelvin_voigt clipped, zeta={z:g}: c_r vs factor-2 form", float(c2[i]),
                      r["cr_out"][i], TOL, source="closed form (factor 2)")
        ctx.abs_check(f"kelvin_voigt clipped, zeta={z:g}: duration 2 atan(sqrt(1-z^2)/z)/w_d",
                      float(t2[i]), r["duration"][i], TOL * float(t2[i]) * 10,
                      source="closed form", unit="s")
        ctx.info(f"kelvin_voigt clipped, zeta={z:g}: c_r vs printed factor-4 form",
                 float(c4[i]), r["cr_out"][i], float(r["cr_out"][i] - c4[i]),
                 source="review Eq. 5.22 as printed")
    ctx.abs_check("factor-4 form = (factor-2 form)^2 (an energy ratio), max deviation",
                  0.0, float(np.max(np.abs(c4 - c2**2))), 1e-12, source="closed form")
    ctx.fact("goyal_zeta", zeta.tolist())
    ctx.fact("goyal_sim", r["cr_out"].tolist())
    ctx.fact("goyal_f2", c2.tolist())
    ctx.fact("goyal_f4", c4.tolist())
    if not law_available("goyal"):
        ctx.not_run("goyal law: output c_r equals its target", missing_reason("goyal"))
        return
    targets = np.array([0.2, 0.5, 0.8, 0.95])
    names = {p.name for p in get_law_class("goyal").params}
    r_g = sweep("goyal", accepted_params("goyal", {"k": k, "cr": targets}), mass=m, v0=1.0)
    for i, t in enumerate(targets):
        ctx.abs_check(f"goyal (default factor), cr={t:g}: output c_r", float(t),
                      r_g["cr_out"][i], TOL, source="closed form (factor 2)")
    ctx.fact("goyal_law_default", r_g["cr_out"].tolist())
    if "factor" in names:
        r_4 = sweep("goyal", {"k": k, "cr": targets, "factor": "4"}, mass=m, v0=1.0)
        for i, t in enumerate(targets):
            # zeta from the factor-4 relation: the clipped contact then returns sqrt(target)
            ctx.abs_check(f"goyal factor=4, cr={t:g}: output c_r = sqrt(target)",
                          math.sqrt(t), r_4["cr_out"][i], TOL, source="closed form")
        ctx.fact("goyal_law_f4", r_4["cr_out"].tolist())
        ctx.fact("goyal_targets", targets.tolist())


@case("closed.thornton", "Thornton (1997): closed-form c_r(v0/V_y) of elastic-perfectly plastic "
      "spheres", "closed")
def thornton(ctx: Context) -> None:
    """Simulated c_r of the ``thornton`` law against Thornton's closed form."""
    if not law_available("thornton"):
        ctx.not_run("thornton: c_r(v0/V_y) against the closed form", missing_reason("thornton"))
        return
    # steel sphere R = 10 mm on a steel plane: E* = 115 GPa, m = 32.7 g, delta_y = 1 um
    e_star, radius, mass, d_y = 1.15e11, 0.01, 3.26726e-2, 1e-6
    k = hertz_k(e_star, radius)
    v_y = math.sqrt(4.0 * k * d_y**2.5 / (5.0 * mass))
    ratio = np.logspace(-0.3, 2.0, ctx.n(24, 8))
    r = sweep("thornton", {"k": k, "E": e_star, "delta_y": d_y}, mass=mass, v0=ratio * v_y)
    expect = thornton_cr(ratio * v_y, v_y)
    ctx.note(f"k_L = {k:.4g} N/m^1.5 (R = 10 mm, E* = 115 GPa), m = {mass} kg, delta_y = 1 um: "
             f"V_y = sqrt(4 k_L delta_y^(5/2)/(5 m)) = {v_y:.4g} m/s; v0/V_y from 0.5 to 100.")
    err = r["cr_out"] - expect
    worst = int(np.argmax(np.abs(err)))
    ctx.max_check(f"max |c_r - closed form| over v0/V_y = 0.5..100 (worst at "
                  f"{ratio[worst]:.3g})", float(np.abs(err).max()), 1e-4,
                  source="Thornton 1997 (spec: review section 3.6)")
    for x in (0.5, 2.0, 10.0, 100.0):
        j = int(np.argmin(np.abs(ratio - x)))
        ctx.abs_check(f"c_r at v0/V_y = {ratio[j]:.3g}", float(expect[j]), r["cr_out"][j], 1e-4,
                      source="Thornton 1997")
    if ctx.plots:
        from mbplugin.plotting import pyplot

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.6, 3.6))
        fine = np.logspace(-0.3, 2.0, 200)
        ax.plot(fine, thornton_cr(fine * v_y, v_y), "k-", lw=1.0, label="closed form")
        ax.plot(ratio, r["cr_out"], "o", mfc="none", label="thornton law, simulated")
        ax.set_xscale("log")
        ax.set_xlabel("v0 / V_y")
        ax.set_ylabel("c_r")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ctx.figure("closed_thornton.png", fig, "Thornton (1997): simulated c_r of the `thornton` "
                   "law against the closed form.")


@case("closed.hc_exact", "Hunt-Crossley family: simulated c_r = root of the exact relation",
      "closed")
def hc_exact(ctx: Context) -> None:
    """For every family law, c_out(c_in) equals the exact-relation root at chi(c_in)."""
    c_in = np.linspace(0.05, 1.0, ctx.n(40, 10))
    ctx.note("chi - ln(1 + chi) = -chi c - ln(1 - chi c) (Gonthier et al. 2004; Zhang & Sharf "
             "2004; review Eq. 5.23) solved independently of the law code, at the factor chi(c_in)"
             " of each law; n = 1.5 and n = 1.0 (the output must not depend on n).")
    for name in family_names():
        cls = get_law_class(name)
        chi = np.asarray(cls.chi(c_in), dtype=float)
        expect = np.array([hc_exact_cr(x) for x in chi])
        worst = 0.0
        for n in (1.5, 1.0):
            r = sweep(name, {"k": 1.0, "n": n, "cr": c_in})["cr_out"]
            worst = max(worst, float(np.max(np.abs(r - expect))))
        ctx.max_check(f"{name}: max |c_out - exact root| (n = 1.5 and 1.0)", worst, TOL,
                      source="closed form")
