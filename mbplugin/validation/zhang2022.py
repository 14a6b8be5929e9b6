"""Zhang et al. (2022): Tables 1-3 and the trends and loops of Fig. 7.

Source: Zhang, Liang, Zhang, Feng, Zhao, Zhao, He, "A continuous contact force model for impact
analysis", Mech. Syst. Signal Process. 168 (2022) 108739. Table values as transcribed in
``spec/zhang2022-arbitrary-exponents.md`` section 5; the model errors of the sliotar study in its
section 6.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mbplugin.impact import impact
from mbplugin.laws import get_law_class, make_law
from mbplugin.validation.core import Context, case
from mbplugin.validation.formulas import hc_chi_for_cr, hc_exact_cr, spread
from mbplugin.validation.sim import sweep

M0 = 0.54  # kg, steel ball of Zhang & Sharf (2009)
K = 2.4144e10  # N/m^1.5
N = 1.5

#: (v0 m/s, input c_r, rows: key, law, extra params, printed c_r, duration 1e-4 s, F_max N)
TABLES: dict[int, tuple[float, float, list[tuple[str, str, dict[str, float], float, float,
                                                  float]]]] = {
    1: (0.15, 0.8892, [
        ("new (1.5, 1.0)", "zhang2022", {"m": 1.5, "q": 1.0}, 0.8891, 2.620, 1089.8),
        ("new (1.2, 0.9)", "zhang2022", {"m": 1.2, "q": 0.9}, 0.8886, 2.618, 1088.9),
        ("new (1.2, 1.1)", "zhang2022", {"m": 1.2, "q": 1.1}, 0.8880, 2.618, 1080.6),
        ("new (1.8, 0.9)", "zhang2022", {"m": 1.8, "q": 0.9}, 0.8945, 2.618, 1100.9),
        ("new (1.8, 1.1)", "zhang2022", {"m": 1.8, "q": 1.1}, 0.8950, 2.616, 1090.6),
        ("Hunt-Crossley", "hunt_crossley", {}, 0.9002, 2.614, 1095.0),
        ("Lankarani-Nikravesh", "lankarani_nikravesh", {}, 0.9052, 2.612, 1097.4),
        ("Zhang 2020", "zhang2020", {}, 0.8892, 2.618, 1089.9),
    ]),
    2: (0.5, 0.7568, [
        ("new (1.5, 1.0)", "zhang2022", {"m": 1.5, "q": 1.0}, 0.7553, 2.106, 4447.0),
        ("new (1.2, 0.9)", "zhang2022", {"m": 1.2, "q": 0.9}, 0.7548, 2.104, 4419.2),
        ("new (1.2, 1.1)", "zhang2022", {"m": 1.2, "q": 1.1}, 0.7540, 2.102, 4322.2),
        ("new (1.8, 0.9)", "zhang2022", {"m": 1.8, "q": 0.9}, 0.7665, 2.102, 4581.7),
        ("new (1.8, 1.1)", "zhang2022", {"m": 1.8, "q": 1.1}, 0.7673, 2.098, 4474.2),
        ("Hunt-Crossley", "hunt_crossley", {}, 0.8036, 2.085, 4491.3),
        ("Lankarani-Nikravesh", "lankarani_nikravesh", {}, 0.8234, 2.078, 4515.5),
        ("Zhang 2020", "zhang2020", {}, 0.7564, 2.103, 4447.7),
    ]),
}

#: Tolerances of Tables 1-2 (printed resolution: 1e-4 in c_r, 0.1 N, 0.001e-4 s).
TOL_CR = 1.5e-4  # half a print unit of rounding plus one unit for the paper's RK4 at 1e-8 s
TOL_F = 0.1  # N: half a print unit of rounding plus the peak sampling of a fixed 1e-8 s step
TOL_DUR = 3e-3  # relative; see the note in the report (their contact end is not specified)
#: A convention the printed c_r rules out must miss it by ten print units.
DISCRIMINATE_CR = 1e-3


def _exit_cr(result: Any, v0: float, complex_power: bool) -> float:
    """The paper's c_r: |ddelta|/v0 at separation (imaginary part included in complex mode)."""
    if complex_power:
        try:
            from mbplugin.laws.zhang2022 import complex_exit_cr
        except ImportError:  # older law module: real-part mode only
            return float(result.cr_out)
        return float(complex_exit_cr(result, v0))
    return float(result.cr_out)


def _table(ctx: Context, table: int) -> None:
    v0, cr_in, rows = TABLES[table]
    src = f"Table {table}"
    ctx.note(
        f"Steel ball of Zhang & Sharf (2009): m0 = {M0} kg, k = {K:g} N/m^1.5, n = {N}, "
        f"v0 = {v0} m/s, input c_r = {cr_in}. The duration compared is the time until the "
        "overlap delta returns to 0 (`ImpactResult.duration_overlap`), the convention that "
        "reproduces the printed column; the force-based end of contact (Milehins & Marghitu "
        "2026, Eq. 17; `duration`) is shorter for m < n because the force vanishes before delta "
        "does, and is listed for those rows as information. For q != 1 the printed c_r is "
        "compared with both conventions for ddelta^q in restitution: `power='complex'` "
        "(principal complex power, |ddelta| at separation) and `power='signed'` "
        "(sign(ddelta)|ddelta|^q)."
    )
    for key, name, extra, cr_pub, dur_pub, f_pub in rows:
        params = {"k": K, "n": N, "cr": cr_in, **extra}
        q = extra.get("q", 1.0)
        if name == "zhang2022" and q != 1.0:
            r_c = impact(make_law(name, **params, power="complex"), M0, v0)
            r_s = impact(make_law(name, **params, power="signed"), M0, v0)
            cr_c = _exit_cr(r_c, v0, True)
            cr_s = r_s.cr_out
            ctx.abs_check(f"{key}: c_r, complex power", cr_pub, cr_c, TOL_CR, source=src)
            ctx.info(f"{key}: c_r, signed power", cr_pub, cr_s, cr_s - cr_pub, source=src)
            ctx.min_check(f"{key}: |c_r(signed) - printed| (printed values rule it out)",
                          abs(cr_s - cr_pub), DISCRIMINATE_CR, published=cr_pub, source=src)
            ctx.fact(f"cr_complex:{key}", cr_c)
            ctx.fact(f"cr_signed:{key}", cr_s)
            ctx.fact(f"cr_pub:{key}", cr_pub)
            for label, r in (("complex", r_c), ("signed", r_s)):
                ctx.abs_check(f"{key}: F_max, {label} power", f_pub, r.f_max, TOL_F,
                              source=src, unit="N")
                ctx.rel_check(f"{key}: duration (overlap), {label} power", dur_pub,
                              r.duration_overlap * 1e4, TOL_DUR, source=src, unit="x 1e-4 s")
            if extra["m"] < N:
                ctx.info(f"{key}: duration (force end, Eq. 17), signed", dur_pub,
                         r_s.duration * 1e4, r_s.duration * 1e4 / dur_pub - 1.0, source=src,
                         unit="x 1e-4 s")
            continue
        r = impact(make_law(name, **params), M0, v0)
        if name == "zhang2020":
            # the review's printed factor: an open question, reported, not judged
            ctx.info(f"{key} (review's printed chi): c_r", cr_pub, r.cr_out, r.cr_out - cr_pub,
                     source=src, note="open question (see README)")
            ctx.info(f"{key} (review's printed chi): F_max", f_pub, r.f_max, r.f_max - f_pub,
                     source=src, unit="N", note="open question (see README)")
            ctx.info(f"{key} (review's printed chi): duration", dur_pub,
                     r.duration_overlap * 1e4, r.duration_overlap * 1e4 / dur_pub - 1.0,
                     source=src, unit="x 1e-4 s", note="open question (see README)")
            chi_print = float(get_law_class(name).chi(cr_in))
            ctx.abs_check(f"{key}: simulated c_r = exact relation at the printed chi",
                          hc_exact_cr(chi_print), r.cr_out, 1e-6, source="closed form")
            ctx.fact("z2020_cr", r.cr_out)
            ctx.fact("z2020_cr_pub", cr_pub)
            ctx.fact("z2020_f", r.f_max)
            ctx.fact("z2020_f_pub", f_pub)
            ctx.fact("z2020_chi_print", chi_print)
            ctx.fact("z2020_chi_needed", hc_chi_for_cr(cr_pub))
            ctx.fact("cr_in", cr_in)
            continue
        ctx.abs_check(f"{key}: c_r", cr_pub, r.cr_out, TOL_CR, source=src)
        ctx.abs_check(f"{key}: F_max", f_pub, r.f_max, TOL_F, source=src, unit="N")
        ctx.rel_check(f"{key}: duration (overlap)", dur_pub, r.duration_overlap * 1e4, TOL_DUR,
                      source=src, unit="x 1e-4 s")


@case("zhang2022.table1", "Table 1: steel ball at 0.15 m/s, all rows and columns", "zhang2022")
def table1(ctx: Context) -> None:
    """Zhang et al. (2022) Table 1."""
    _table(ctx, 1)


@case("zhang2022.table2", "Table 2: steel ball at 0.5 m/s, all rows and columns", "zhang2022")
def table2(ctx: Context) -> None:
    """Zhang et al. (2022) Table 2."""
    _table(ctx, 2)


# --------------------------------------------------------------------------------------------------
# Table 3: sliotar cores
# --------------------------------------------------------------------------------------------------
#: core: (m0 kg, k N/m^1.5, c_r) from Table 3; v0 = 15 m/s, n = 1.5.
SLIOTAR = {
    "A": (89.6e-3, 3.50e6, 0.527),
    "B": (89.9e-3, 2.85e6, 0.535),
    "C": (89.1e-3, 5.65e6, 0.533),
    "D": (83.1e-3, 3.70e6, 0.546),
}
#: Relative errors (%) to the experiment stated in the paper's Sect. 6 (cores A-D).
SLIOTAR_F_ERR = {
    "HC&LN": (15.5, 10.5, 10.3, 7.8),
    "new(1.5,1.0)": (17.9, 12.5, 12.3, 9.5),
    "new(1.1,1.25)": (6.3, 1.6, 1.4, -0.9),
}
SLIOTAR_D_ERR = {
    "HC&LN": (17.5, 13.3, 14.0, 11.4),
    "new(1.5,1.0)": (5.7, 2.4, 2.9, 0.7),
    "new(1.1,1.25)": (3.4, 0.2, 0.7, -1.9),
}
TOL_RATIO_F = 0.01
TOL_RATIO_D = 0.015


@case("zhang2022.table3", "Table 3: sliotar cores A-D, peak force and indentation ratios",
      "zhang2022")
def table3(ctx: Context) -> None:
    """Sliotar cores: model-to-model ratios implied by the paper's stated errors."""
    ctx.note(
        "The experimental peak force and indentation of the sliotar cores (Hanley et al. 2012) "
        "appear only in the paper's Fig. 6, but Sect. 6 states each model's relative error to "
        "them. Dividing two models' (1 + error) cancels the experiment: e.g. "
        "(1 + e_new)/(1 + e_HC) must equal our F_max(new)/F_max(HC). The paper gives one set "
        "of 'about' values for Hunt-Crossley and Lankarani-Nikravesh together (and one for the "
        "new model at (1.5, 1.0) and Zhang 2020); we compare that entry with the geometric mean "
        "of our HC and LN results, and check the lumped pairs for consistency. Tolerances: "
        f"{TOL_RATIO_F:.0%} on force ratios and {TOL_RATIO_D:.1%} on indentation ratios "
        "(the errors are printed to 0.1 %, the experimental curves were read from a figure, "
        "and the indentation at peak force is less sharply defined than the force). v0 = 15 m/s, "
        "n = 1.5; peak force and indentation are set in compression, where both ddelta^q "
        "conventions coincide (signed power used)."
    )
    models = {
        "HC": ("hunt_crossley", {}),
        "LN": ("lankarani_nikravesh", {}),
        "new(1.5,1.0)": ("zhang2022", {"m": 1.5, "q": 1.0}),
        "new(1.1,1.25)": ("zhang2022", {"m": 1.1, "q": 1.25}),
        "Z2020": ("zhang2020", {}),
    }
    cores = list(SLIOTAR)
    m0 = np.array([SLIOTAR[c][0] for c in cores])
    k = np.array([SLIOTAR[c][1] for c in cores])
    cr = np.array([SLIOTAR[c][2] for c in cores])
    res = {key: sweep(name, {"k": k, "n": N, "cr": cr, **extra}, mass=m0, v0=15.0)
           for key, (name, extra) in models.items()}
    f = {key: r["f_max"] for key, r in res.items()}
    d = {key: r["delta_max"] for key, r in res.items()}
    f["HC&LN"] = np.sqrt(f["HC"] * f["LN"])
    d["HC&LN"] = np.sqrt(d["HC"] * d["LN"])
    pairs = [("new(1.5,1.0)", "HC&LN"), ("new(1.1,1.25)", "HC&LN"),
             ("new(1.1,1.25)", "new(1.5,1.0)")]
    for i, core in enumerate(cores):
        for a, b in pairs:
            pf = (1 + SLIOTAR_F_ERR[a][i] / 100) / (1 + SLIOTAR_F_ERR[b][i] / 100)
            pd = (1 + SLIOTAR_D_ERR[a][i] / 100) / (1 + SLIOTAR_D_ERR[b][i] / 100)
            ctx.rel_check(f"core {core}: F_max {a} / {b}", pf, f[a][i] / f[b][i], TOL_RATIO_F,
                          source="Sect. 6 errors")
            ctx.rel_check(f"core {core}: delta_max {a} / {b}", pd, d[a][i] / d[b][i],
                          TOL_RATIO_D, source="Sect. 6 errors")
        ctx.rel_check(f"core {core}: F_max Zhang2020 / new(1.5,1.0) (one error set)", 1.0,
                      f["Z2020"][i] / f["new(1.5,1.0)"][i], TOL_RATIO_F, source="Sect. 6")
        ctx.rel_check(f"core {core}: delta_max Zhang2020 / new(1.5,1.0) (one error set)", 1.0,
                      d["Z2020"][i] / d["new(1.5,1.0)"][i], TOL_RATIO_D, source="Sect. 6")
        ctx.info(f"core {core}: F_max LN / HC (lumped by the paper)", 1.0,
                 f["LN"][i] / f["HC"][i], f["LN"][i] / f["HC"][i] - 1.0, source="Sect. 6")
        ctx.info(f"core {core}: delta_max LN / HC (lumped by the paper)", 1.0,
                 d["LN"][i] / d["HC"][i], d["LN"][i] / d["HC"][i] - 1.0, source="Sect. 6")
    # the optimal pair lowers the peak force by ~10 % against (1.5, 1.0) in every core
    ctx.bool_check(
        "new(1.1,1.25) has the lowest F_max of the models in every core",
        bool(np.all(f["new(1.1,1.25)"] < np.minimum.reduce([f["HC"], f["LN"],
                                                            f["new(1.5,1.0)"]]))),
        published="lowest (errors 6.3/1.6/1.4/-0.9 % vs >= 7.8 %)",
        ours=", ".join(f"{core}: {f['new(1.1,1.25)'][i]:.0f} N" for i, core in enumerate(cores)),
        source="Sect. 6",
    )
    if ctx.plots:
        _plot_sliotar(ctx, cores, f, d)


def _plot_sliotar(ctx: Context, cores: list[str], f: dict[str, np.ndarray],
                  d: dict[str, np.ndarray]) -> None:
    from mbplugin.plotting import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2))
    keys = ["new(1.5,1.0)", "new(1.1,1.25)"]
    x = np.arange(len(cores))
    for ax, ours, errs, label in ((axes[0], f, SLIOTAR_F_ERR, "F_max"),
                                  (axes[1], d, SLIOTAR_D_ERR, "delta_max")):
        for j, key in enumerate(keys):
            pub = [(1 + errs[key][i] / 100) / (1 + errs["HC&LN"][i] / 100)
                   for i in range(len(cores))]
            sim = ours[key] / ours["HC&LN"]
            ax.plot(x + 0.1 * j, pub, "o", mfc="none", color=f"C{j}", label=f"{key} paper")
            ax.plot(x + 0.1 * j, sim, "x", color=f"C{j}", label=f"{key} ours")
        ax.set_xticks(x + 0.05, cores)
        ax.set_ylabel(f"{label} / {label}(HC&LN)")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Zhang et al. 2022, sliotar cores: ratios to HC&LN", fontsize=9)
    ctx.figure("zhang2022_table3_ratios.png", fig,
               "Sliotar cores A-D: model-to-model ratios implied by the paper's stated errors "
               "(circles) and ours (crosses).")


# --------------------------------------------------------------------------------------------------
# Fig. 7: nondimensional loops and trends
# --------------------------------------------------------------------------------------------------
PAIRS_15 = [(1.2, 0.9), (1.2, 1.1), (1.5, 1.0), (1.8, 0.9), (1.8, 1.1)]
FIG7 = {
    "a": (1.5, 0.6, [(1.5, q) for q in (0.6, 0.9, 1.0, 1.1, 1.5)]),
    "b": (1.5, 0.6, [(m, 1.0) for m in (0.8, 1.2, 1.5, 1.8, 2.2)]),
    "c": (1.5, 0.6, PAIRS_15),
    "d": (1.0, 0.6, [(0.8, 0.9), (0.8, 1.1), (1.0, 1.0), (1.5, 0.9), (1.5, 1.1)]),
    "e": (2.0, 0.6, [(1.5, 0.9), (1.5, 1.1), (2.0, 1.0), (2.5, 0.9), (2.5, 1.1)]),
    "f": (1.5, 0.9, PAIRS_15),
    "g": (1.5, 0.3, PAIRS_15),
}
#: "Nearly unchanged" peak indentation: spread across a panel's five laws at most this ...
DMAX_SPREAD = 0.03
#: ... and at most this fraction of the peak-force spread of the same panel.
DMAX_VS_F = 0.25


def k_non(n: float, q: float, cr: float) -> float:
    """Dimensionless stiffness of Zhang et al. (2022), Eq. 43: (n+1)(c^2 + c^q)/(2(1 + c^q))."""
    cq = cr**q
    return (n + 1.0) * (cr * cr + cq) / (2.0 * (1.0 + cq))


@case("zhang2022.fig7", "Fig. 7: nondimensional loops and the trends of m, q, n and c_r",
      "zhang2022")
def fig7(ctx: Context) -> None:
    """Nondimensional system equation (Eq. 40) for the seven panels of Fig. 7."""
    ctx.note(
        "Nondimensional form (Eqs. 40-46): m0 = v0 = 1 and k = k_non of Eq. 43, which makes the "
        "energy-balance peak indentation of Eq. 31 equal to 1, so x = delta is the paper's "
        "delta/delta_max and the force is the paper's dimensionless force. The restitution "
        "branch uses the signed power (the trends concern compression quantities, which do not "
        "depend on the convention). 'Nearly unchanged' peak indentation is taken to mean a "
        f"spread (max - min)/mean across a panel's five laws of at most {DMAX_SPREAD:.0%} and at "
        f"most {DMAX_VS_F:.0%} of the peak-force spread. The sentence on panel (b) ('a smaller "
        "m gives a larger maximum force') contradicts the paper's own conclusion and Tables "
        "1-2; we check the conclusion (larger m, larger force)."
    )
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for panel, (n, cr, pairs) in FIG7.items():
        m = np.array([p[0] for p in pairs])
        q = np.array([p[1] for p in pairs])
        kn = np.array([k_non(n, qq, cr) for qq in q])
        r = sweep("zhang2022", {"k": kn, "n": n, "m": m, "q": q, "cr": cr}, mass=1.0, v0=1.0)
        out[panel] = (r["f_max"], r["delta_max"])
    fa, _ = out["a"]
    ctx.bool_check("(a) smaller q -> larger F_max (q = 0.6..1.5, m = n = 1.5)",
                   bool(np.all(np.diff(fa) < 0)), published="decreasing in q",
                   ours=" > ".join(f"{v:.3f}" for v in fa), source="Sect. 3.4, Fig. 7(a)")
    fb, _ = out["b"]
    ctx.bool_check("(b) larger m -> larger F_max (m = 0.8..2.2, q = 1)",
                   bool(np.all(np.diff(fb) > 0)), published="increasing in m (conclusions)",
                   ours=" < ".join(f"{v:.3f}" for v in fb), source="Sect. 5, Fig. 7(b)")
    for panel in ("c", "d", "e", "f", "g"):
        fp, _ = out[panel]
        n, cr, pairs = FIG7[panel]
        hi, lo = pairs[int(np.argmax(fp))], pairs[int(np.argmin(fp))]
        ok = hi == pairs[3] and lo == pairs[1]  # (largest m, smallest q) and the opposite
        ctx.bool_check(
            f"({panel}) n = {n}, c_r = {cr}: largest F_max at (large m, small q), smallest at "
            "(small m, large q)", ok,
            published=f"max at {pairs[3]}, min at {pairs[1]}",
            ours=f"max at {hi}, min at {lo}", source="Sect. 5",
        )
    for panel, (fp, dp) in out.items():
        sd, sf = spread(dp), spread(fp)
        ok = sd <= DMAX_SPREAD and sd <= DMAX_VS_F * sf
        ctx.bool_check(f"({panel}) peak indentation nearly unchanged by m, q", ok,
                       published=f"spread <= {DMAX_SPREAD:.0%} and <= {DMAX_VS_F:.0%} of F spread",
                       ours=f"delta spread {sd:.2%}, F spread {sf:.2%}", source="Sect. 5")
    fd, fc, fe = out["d"][0], out["c"][0], out["e"][0]
    ctx.bool_check("larger n -> larger F_max (panels d, c, e: n = 1, 1.5, 2; pair by pair)",
                   bool(np.all(fd < fc) and np.all(fc < fe)), published="increasing in n",
                   ours="n=1: " + "/".join(f"{v:.2f}" for v in fd) + "; n=1.5: "
                   + "/".join(f"{v:.2f}" for v in fc) + "; n=2: "
                   + "/".join(f"{v:.2f}" for v in fe), source="Sect. 3.4")
    s9, s6, s3 = (spread(out[p][0]) for p in ("f", "c", "g"))
    ctx.bool_check("effect of (m, q) on F_max grows as c_r falls (panels f, c, g)",
                   s9 < s6 < s3, published="spread(0.9) < spread(0.6) < spread(0.3)",
                   ours=f"{s9:.3f} < {s6:.3f} < {s3:.3f}", source="Sect. 5")
    _scale_invariance(ctx)
    if ctx.plots:
        _plot_fig7(ctx)


def delta_max_eq31(m0: float, k: float, n: float, q: float, cr: float, v0: float) -> float:
    """Peak indentation of Zhang et al. (2022) Eq. 31 (m)."""
    cq = cr**q
    return (m0 * (n + 1) * v0**2 / (2 * k) * (cr * cr + cq) / (1 + cq)) ** (1 / (n + 1))


def _scale_invariance(ctx: Context) -> None:
    """Sect. 3.1: the nondimensional system depends on n, m, q and c_r only.

    The steel-ball impacts of Tables 1-2, scaled by delta_max of Eq. 31 and v0, must give the
    nondimensional peak force, peak indentation and c_r of the m0 = v0 = 1, k = k_non run.
    """
    worst = {"F": 0.0, "delta": 0.0, "cr": 0.0}
    for v0, cr in ((0.15, 0.8892), (0.5, 0.7568)):
        for m, q in PAIRS_15:
            dim = impact(make_law("zhang2022", k=K, n=N, m=m, q=q, cr=cr), M0, v0)
            nd = impact(make_law("zhang2022", k=k_non(N, q, cr), n=N, m=m, q=q, cr=cr), 1.0, 1.0)
            dm = delta_max_eq31(M0, K, N, q, cr, v0)
            worst["F"] = max(worst["F"], abs(dim.f_max * dm / (M0 * v0**2) / nd.f_max - 1))
            worst["delta"] = max(worst["delta"], abs(dim.delta_max / dm / nd.delta_max - 1))
            worst["cr"] = max(worst["cr"], abs(dim.cr_out - nd.cr_out))
    ctx.max_check("scale invariance (Sect. 3.1): steel-ball runs of Tables 1-2 vs Eq. 40, max "
                  "rel. diff of F_max delta_max/(m0 v0^2)", worst["F"], 1e-6, source="Eqs. 37-46")
    ctx.max_check("scale invariance: max rel. diff of delta_max / delta_max(Eq. 31)",
                  worst["delta"], 1e-6, source="Eqs. 37-46")
    ctx.max_check("scale invariance: max diff of c_r", worst["cr"], 1e-7, source="Eqs. 37-46")


def _plot_fig7(ctx: Context) -> None:
    from mbplugin.plotting import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(2, 4, figsize=(11.0, 5.2))
    for ax, (panel, (n, cr, pairs)) in zip(axes.flat, FIG7.items(), strict=False):
        for m, q in pairs:
            law = make_law("zhang2022", k=k_non(n, q, cr), n=n, m=m, q=q, cr=cr)
            r = impact(law, 1.0, 1.0, record=True)
            s = r.series
            assert s is not None
            ax.plot(s.delta, s.force, lw=1.0, label=f"m={m:g}, q={q:g}")
        ax.set_title(f"({panel}) n={n:g}, c_r={cr:g}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    axes.flat[-1].axis("off")
    for ax in axes[1]:
        ax.set_xlabel("x = delta/delta_max", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("dimensionless force", fontsize=8)
    fig.tight_layout()
    ctx.figure("zhang2022_fig7_loops.png", fig,
               "Zhang et al. 2022, Fig. 7(a)-(g) reproduced: nondimensional force-indentation "
               "loops (Eq. 40; signed power in restitution).")
