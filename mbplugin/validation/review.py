"""Corral et al. (2021) review: the Hunt-Crossley family's output-vs-input c_r and its claims.

Every law of the form F = K delta^n (1 + chi(c_r) ddelta / v_in) (review Eq. 5.18) is swept over
the input c_r; the output c_r of an isolated impact depends on chi only, so one nondimensional
sweep (m = K = v_in = 1) covers every mass, stiffness and speed. The review's qualitative
statements (its Sects. 5.2-5.4 and 6) become checks with the thresholds stated below.
"""

from __future__ import annotations

import numpy as np

from mbplugin.impact import impact
from mbplugin.laws import HuntCrossleyFamily, Param, law_classes, make_law
from mbplugin.validation.core import Context, case, law_available, missing_reason
from mbplugin.validation.sim import sweep

#: |c_out - c_in| at most this counts as "accurate".
ACCURATE = 0.03
#: |c_out - c_in| above this counts as "inaccurate".
INACCURATE = 0.05
#: Laws the review calls usable over the whole c_r range must stay within this everywhere.
WHOLE_RANGE = 0.05
#: Exact-relation laws reproduce the input to the integrator's accuracy.
EXACT = 1e-6

NEAR_ONE_ONLY = ("hunt_crossley", "lee_wang", "lankarani_nikravesh", "herbert_mcwhannell")
LOW_ONLY = ("gharib_hurmuzlu",)
WHOLE = ("gonthier", "flores", "hu_guo", "safaeifar_farshidianfar", "zhang2020")
EXACT_LAWS = ("zhang_sharf", "khatiwada")
FITTED_EXACT = ("yu",)


def family_names() -> list[str]:
    """Registered laws of the Hunt-Crossley family (built-in and third-party), sorted.

    Only laws that need nothing beyond k, n and cr (the family's common parameters) qualify.
    """
    out = []
    for cls in law_classes():
        if not issubclass(cls, HuntCrossleyFamily):
            continue
        extra = [p.name for p in cls.params if isinstance(p, Param) and p.required
                 and p.default is None and p.name not in ("k", "n", "cr")]
        if not extra:
            out.append(cls.name)
    return out


def family_sweep(ctx: Context, c_in: np.ndarray) -> dict[str, np.ndarray]:
    """Output c_r of every family law at each input c_r (m = K = v0 = 1, n = 1.5)."""
    return {name: sweep(name, {"k": 1.0, "n": 1.5, "cr": c_in})["cr_out"]
            for name in family_names()}


@case("review.cr_curves", "Output vs input c_r of the Hunt-Crossley family and the review's "
      "claims", "review")
def cr_curves(ctx: Context) -> None:
    """The review's accuracy claims, as thresholds on |c_out - c_in|."""
    c_in = np.linspace(0.05, 1.0, ctx.n(96, 20))
    out = family_sweep(ctx, c_in)
    err = {k: v - c_in for k, v in out.items()}
    ctx.note(
        f"Input c_r from 0.05 to 1 ({c_in.size} points), n = 1.5, m = K = v0 = 1 (the output "
        "depends on chi only). Thresholds: a law is *accurate* where |c_out - c_in| <= "
        f"{ACCURATE}, *inaccurate* where it exceeds {INACCURATE}; 'whole range' laws must stay "
        f"within {WHOLE_RANGE} everywhere; exact-relation laws within {EXACT:g} (integrator "
        "accuracy). Registered family laws: " + ", ".join(f"`{n}`" for n in out) + "."
    )
    ctx.fact("family", list(out))
    near1, low = c_in >= 0.95, c_in <= 0.5
    for name in NEAR_ONE_ONLY:
        if name not in err:
            ctx.not_run(f"{name}: accurate only near c_r = 1", missing_reason(name))
            continue
        e = np.abs(err[name])
        ctx.max_check(f"{name}: max |err| for c_in >= 0.95 (accurate near 1)",
                      float(e[near1].max()), ACCURATE, source="review Sects. 5.2-5.3, 6")
        ctx.min_check(f"{name}: min |err| for c_in <= 0.5 (inaccurate away from 1)",
                      float(e[low].min()), INACCURATE, source="review Sects. 5.2-5.3, 6")
    for name in LOW_ONLY:
        if name not in err:
            ctx.not_run(f"{name}: accurate only at low c_r", missing_reason(name))
            continue
        e = np.abs(err[name])
        ctx.max_check(f"{name}: max |err| for c_in <= 0.3 (accurate at low c_r)",
                      float(e[c_in <= 0.3].max()), ACCURATE, source="review Sect. 5.3, 6")
        ctx.min_check(f"{name}: min |err| for c_in >= 0.6 (inaccurate at high c_r)",
                      float(e[c_in >= 0.6].min()), INACCURATE, source="review Sect. 5.3, 6")
    for name in WHOLE:
        if name not in err:
            ctx.not_run(f"{name}: usable over the whole range", missing_reason(name))
            continue
        ctx.max_check(f"{name}: max |err| over 0.05..1 (whole range)",
                      float(np.abs(err[name]).max()), WHOLE_RANGE, source="review Sect. 5.4, 6")
    if all(n in err for n in ("zhiying_qishao", "lee_wang", "lankarani_nikravesh")):
        sel = c_in <= 0.7
        zq = np.abs(err["zhiying_qishao"][sel])
        other = np.minimum(np.abs(err["lee_wang"][sel]), np.abs(err["lankarani_nikravesh"][sel]))
        ctx.bool_check("zhiying_qishao better than Lee-Wang and LN for c_in <= 0.7",
                       bool(np.all(zq < other)), published="smaller error (Alves et al.)",
                       ours=f"max ZQ {zq.max():.3f} vs min(LW, LN) >= {other.min():.3f}",
                       source="review Sect. 5.3")
        ctx.info(f"zhiying_qishao: c_out at c_in = {c_in[0]:g} (review: good at 'low and "
                 "medium c_r')", float(c_in[0]), float(out["zhiying_qishao"][0]),
                 float(err["zhiying_qishao"][0]), source="review Sect. 5.3")
    else:
        ctx.not_run("zhiying_qishao vs Lee-Wang and LN", "a compared law is not registered")
    for name in EXACT_LAWS:
        if not law_available(name):
            ctx.not_run(f"{name}: reproduces the input c_r", missing_reason(name))
            continue
        e = np.abs(err[name]) if name in err else np.abs(
            sweep(name, {"k": 1.0, "n": 1.5, "cr": c_in})["cr_out"] - c_in)
        ctx.max_check(f"{name}: max |err| over 0.05..1 (exact relation)", float(e.max()), EXACT,
                      source="review Sect. 5.2")
    for name in FITTED_EXACT:
        if not law_available(name):
            ctx.not_run(f"{name}: reproduces the input c_r", missing_reason(name))
            continue
        e = np.abs(err[name]) if name in err else np.abs(
            sweep(name, {"k": 1.0, "n": 1.5, "cr": c_in})["cr_out"] - c_in)
        ctx.max_check(f"{name}: max |err| over 0.05..1 (fitted to the exact relation)",
                      float(e.max()), ACCURATE, source="review Sect. 5.2")
    rows = [f"| `{n}` | {np.abs(e).max():.3f} | {c_in[int(np.argmax(np.abs(e)))]:.2f} |"
            for n, e in err.items()]
    ctx.note("Largest |c_out - c_in| of each law over the sweep:\n\n| law | max abs error | at "
             "c_in |\n|---|---|---|\n" + "\n".join(rows))
    if ctx.plots:
        _plot_curves(ctx, c_in, out)


def _plot_curves(ctx: Context, c_in: np.ndarray, out: dict[str, np.ndarray]) -> None:
    from mbplugin.plotting import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    ax.plot([0, 1], [0, 1], "k--", lw=0.8, label="c_out = c_in")
    styles = ["-", "--", "-.", ":"]
    for i, (name, c) in enumerate(out.items()):
        ax.plot(c_in, c, styles[(i // 10) % 4], lw=1.2, label=name)
    ax.set_xlabel("input c_r")
    ax.set_ylabel("output c_r")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6.5, ncol=2)
    ax.set_title("Hunt-Crossley family (review Eq. 5.18): output vs input c_r", fontsize=9)
    ctx.figure("review_cr_out_vs_in.png", fig,
               "Output vs input c_r of every registered Hunt-Crossley-family law "
               "(n = 1.5; independent of mass, stiffness and speed).")


@case("review.loops", "Force-indentation loops of the family at c_r = 0.3, 0.5, 0.9", "review")
def loops(ctx: Context) -> None:
    """Loops, and the review's remark on where the energy goes (Gonthier et al., Sect. 5.2)."""
    ctx.note(
        "The review (on Gonthier et al.) states that at high c_r the loop is nearly symmetric "
        "about the elastic curve, while at low c_r most of the energy is dissipated in "
        "compression. Measured by the share of the total loss spent before maximum compression, "
        "phi = (1/2 - K delta_max^(n+1)/(n+1)) / ((1 - c_out^2)/2) (m = v0 = 1): symmetric means "
        "phi within 0.1 of 1/2 at c_r = 0.9; 'most' means phi > 1/2 at c_r = 0.3."
    )
    names = family_names()
    share: dict[tuple[str, float], float] = {}
    results: dict[float, list] = {}
    for cr in (0.3, 0.5, 0.9):
        results[cr] = []
        for name in names:
            r = impact(make_law(name, k=1.0, n=1.5, cr=cr), 1.0, 1.0, record=ctx.plots)
            results[cr].append(r)
            stored = r.delta_max**2.5 / 2.5
            loss = 0.5 * (1.0 - r.cr_out**2)
            share[(name, cr)] = (0.5 - stored) / loss if loss > 0 else float("nan")
    if "gonthier" in names:
        p9, p3 = share[("gonthier", 0.9)], share[("gonthier", 0.3)]
        ctx.abs_check("gonthier: compression share of the loss at c_r = 0.9 (symmetric loop)",
                      0.5, p9, 0.1, source="review Sect. 5.2")
        ctx.min_check("gonthier: compression share of the loss at c_r = 0.3 (most in "
                      "compression)", p3, 0.5, published=0.5, source="review Sect. 5.2")
    else:
        ctx.not_run("gonthier loop shape", missing_reason("gonthier"))
    rows = [f"| `{n}` | " + " | ".join(f"{share[(n, c)]:.2f}" for c in (0.3, 0.5, 0.9)) + " |"
            for n in names]
    ctx.note("Share of the energy loss spent in compression:\n\n| law | c_r = 0.3 | 0.5 | 0.9 |\n"
             "|---|---|---|---|\n" + "\n".join(rows))
    if ctx.plots:
        from mbplugin.plotting import pyplot

        plt = pyplot()
        fig, axes = plt.subplots(1, 3, figsize=(11.0, 3.8), sharey=True)
        for ax, (cr, rs) in zip(axes, results.items(), strict=True):
            d = np.linspace(0, 1.0, 200)
            for i, r in enumerate(rs):
                s = r.series
                ax.plot(s.delta, s.force, ["-", "--", "-."][(i // 10) % 3], lw=1.0,
                        label=r.law)
            ax.plot(d, d**1.5, "k:", lw=0.8, label="elastic")
            ax.set_title(f"c_r = {cr}", fontsize=9)
            ax.set_xlabel("delta (m = K = v0 = 1)", fontsize=8)
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
        axes[0].set_ylabel("force")
        axes[2].legend(fontsize=6, ncol=1)
        fig.tight_layout()
        ctx.figure("review_loops.png", fig,
                   "Force-indentation loops of the Hunt-Crossley family at input c_r = 0.3, 0.5 "
                   "and 0.9 (nondimensional, n = 1.5).")
