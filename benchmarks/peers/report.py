"""RESULTS.md and the plots of the peers comparison (from the dictionary run.py builds)."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import math
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import common as cm

PACKAGES = ("mbplugin", "numpy", "scipy", "numba", "mujoco", "drake", "pybullet", "matplotlib")


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        txt = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in txt.splitlines():
            if line.startswith("Model name"):
                cpu = line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    vers = {}
    for p in PACKAGES:
        try:
            vers[p] = md.version(p)
        except md.PackageNotFoundError:
            vers[p] = "not installed"
    try:
        load = os.getloadavg()
    except OSError:
        load = (math.nan,) * 3
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "versions": vers,
            "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "load_start": list(load)}


def _f(x: Any, fmt: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return format(x, fmt)


def _cell_cr(m: dict | None, req: float) -> str:
    if not m:
        return "—"
    if "error" in m:
        return "fails"
    c = m.get("cr1")
    if c is None:
        return "capped before" if "cap" in m.get("note", "") else "no bounce"
    if c > 2:
        return f"unstable ({c:.3g})"
    s = f"{c:.3f}"
    if abs(c - req) <= 1e-3:
        s = f"**{s}**"
    return s


def _wall(m: dict, key: str, est: str) -> str:
    """A measured figure, or '~x' extrapolated from a run capped before the end."""
    if key == "wall" and m.get("complete"):
        return _f(m.get("wall"), ".3g")
    if m.get(key) is not None and key != "wall":
        return _f(m[key], ".2g")
    if m.get(est) is not None:
        return "~" + _f(m[est], ".2g")
    return "—"


def _err(m: dict) -> str:
    return m.get("error", "")


def drop_table(res: dict, engs: list, material: str) -> list[str]:
    d = res["drop"][material]
    rows = d["rows"]
    crs = [c for c in map(str, cm.CR_REQUESTS) if c in rows]
    head = ["engine", "setting"] + [f"c_r {c}" for c in crs] + [
        "worst \\|Δc_r\\|, v_in > 0.15", "duration / Hertz", "peak F / Hertz",
        "E_N / (E_0 c_r^2N)", "rest height (µm)", "wall, 5 s (s)", "wall × ours"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ref = "0.8" if "0.8" in rows else (crs[0] if crs else None)
    notes = []
    for e in engs:
        if "drop" not in e.scenes:
            continue
        if e.available:
            out.append(f"| {e.label} | {e.available} |" + " |" * (len(head) - 2))
            continue
        for tag in ("default", "converged"):
            cells = [rows[c].get(e.key, {}).get(tag) for c in crs]
            if not any(cells):
                continue
            m0 = rows[ref].get(e.key, {}).get(tag) or {}
            lab = m0.get("setting", "")
            conv = rows[ref].get(e.key, {}).get("converged") or {}
            dflt = rows[ref].get(e.key, {}).get("default") or {}
            same = conv.get("setting") == dflt.get("setting")
            if tag == "converged" and same:
                continue  # the default setting is already the converged one
            if tag == "converged":
                lab += " (not converged)" if m0.get("unconverged") else " (converged)"
            elif e.refine is not None:
                lab += (" (default" + (", converged)" if same and not conv.get("unconverged")
                                      else ")"))
            worst = max((x.get("worst_dev", math.nan) for x in cells if x and "error" not in x),
                        default=math.nan)
            if "error" in m0:
                notes.append(f"{e.label}, {lab}: {_err(m0)}")
                tail = ["fails (see notes)", "", "", "", "", "", ""]
            else:
                rest = m0.get("rest_height")
                rest_s = (_f(rest * 1e6, ".3g") if m0.get("at_rest") else "still moving")
                if not m0.get("complete") or "taken as rest" in m0.get("note", ""):
                    rest_s = "—"
                if m0.get("note"):
                    notes.append(f"{e.label}, {lab}: {m0['note']}")
                tail = [_f(worst, ".2g"),
                        _f((m0.get("duration1") or math.nan) / d["hertz_duration"], ".2f"),
                        _f((m0.get("peak1") or math.nan) / d["hertz_peak"], ".2f"),
                        _f(m0.get("energy_ratio"), ".3g"), rest_s,
                        _wall(m0, "wall", "wall_est"), _wall(m0, "ratio", "ratio_est")]
            out.append("| " + " | ".join([e.label, lab] + [_cell_cr(x, float(c)) for x, c in
                                                             zip(cells, crs, strict=True)]
                                         + tail) + " |")
    return out + [""] + [f"- {n}" for n in notes]


def tennis_table(res: dict, engs: list) -> list[str]:
    t = res["tennis"]
    out = ["| engine | setting | tennis-ball launch speed (m/s) | / ideal | wall, 0.5 s (s) | "
           "wall × ours |", "|---|---|---:|---:|---:|---:|"]
    for e in engs:
        if "tennis" not in e.scenes:
            continue
        if e.available:
            out.append(f"| {e.label} | {e.available} | | | | |")
            continue
        for tag in ("default", "converged"):
            m = t["rows"].get(e.key, {}).get(tag)
            if not m or (tag == "converged" and m.get("setting") == t["rows"][e.key].get(
                    "default", {}).get("setting")):
                continue
            lab = m.get("setting", "") + (" (not converged)" if m.get("unconverged") else "")
            if m.get("note", "").startswith("unstable"):
                out.append(f"| {e.label} | {lab} | unstable (state reset) | | | |")
                continue
            if m.get("note"):
                lab += f"; {m['note']}"
            if "error" in m:
                out.append(f"| {e.label} | {lab} | fails: {_err(m)[:80]} | | | |")
                continue
            out.append(f"| {e.label} | {lab} | {_f(m['v_top'])} | {_f(m['ratio'])} | "
                       f"{_f(m['wall'], '.3g')} | {_f(m.get('ratio_wall'), '.2g')} |")
    return out


def stack_table(res: dict, engs: list) -> list[str]:
    s = res["stack"]
    out = ["| engine | setting | top ball vs Hertz statics (µm) | top ball vs rigid (µm) | "
           "drift over the last 1 s (µm) | wall, 5 s (s) | wall × ours |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for e in engs:
        if "stack" not in e.scenes:
            continue
        if e.available:
            out.append(f"| {e.label} | {e.available} | | | | | |")
            continue
        for tag in ("default", "converged"):
            m = s["rows"].get(e.key, {}).get(tag)
            if not m:
                continue
            if "error" in m:
                out.append(f"| {e.label} | {m.get('setting', '')} | {_err(m)[:80]} | | | | |")
                continue
            lab = m["setting"] + (" (not converged)" if m.get("unconverged") else "")
            if m.get("note", "").startswith("unstable"):
                out.append(f"| {e.label} | {lab} | unstable (state reset) | | | | |")
                continue
            if m.get("note"):
                lab += f"; {m['note']}"
            out.append(f"| {e.label} | {lab} | {_f(m['top_err'] * 1e6, '.3g')} | "
                       f"{_f(m['rigid_err'] * 1e6, '.3g')} | {_f(m['drift'] * 1e6, '.3g')} | "
                       f"{_wall(m, 'wall', 'wall_est')} | {_wall(m, 'ratio_wall', 'ratio_est')} |")
    return out


def plots(res: dict, engs: list, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    names = []
    styles = [m + ls for ls in ("-", "--", ":") for m in ("o", "s", "^", "v", "D")]
    style = {e.key: styles[i % len(styles)] for i, e in enumerate(engs)}
    # 1. achieved vs requested c_r (first bounce), steel and soft, converged settings
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
    for ax, mat in zip(axes, ("steel", "soft"), strict=True):
        rows = res["drop"].get(mat, {}).get("rows", {})
        ax.plot([0.25, 1], [0.25, 1], "k:", lw=1, label="requested")
        for e in engs:
            if e.available or "drop" not in e.scenes:
                continue
            xs, ys = [], []
            for c, r in rows.items():
                m = r.get(e.key, {}).get("default")
                if m and m.get("cr1") is not None and "error" not in m:
                    xs.append(float(c))
                    ys.append(min(m["cr1"], 1.15))  # unstable runs drawn at the top edge
            if xs:
                ax.plot(xs, ys, style[e.key], ms=7 if e.key == "ours" else 4,
                        lw=2 if e.key == "ours" else 1, label=e.label[:48])
        ax.set_title(f"{mat} ball: first bounce at default steps")
        ax.set_xlabel("requested c_r")
        ax.set_ylim(0, 1.2)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("achieved c_r")
    axes[1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "peers_cr.png", dpi=72)
    plt.close(fig)
    names.append("peers_cr.png")
    # 2. convergence of the first-bounce c_r with the step
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharey=True)
    for ax, mat in zip(axes, ("steel", "soft"), strict=True):
        probes = res["drop"].get(mat, {}).get("probes", {})
        ax.axhline(0.8, color="k", ls=":", lw=1)
        for e in engs:
            pr = [p for p in probes.get(e.key, []) if p.get("cr1") is not None
                  and "h" in p and e.default.get("h")]
            if pr:
                ax.semilogx([p["h"] for p in pr], [p["cr1"] for p in pr], style[e.key],
                            ms=4, label=e.label[:48])
        ax.set_title(f"{mat}: first-bounce c_r vs fixed step (asked 0.8)")
        ax.set_xlabel("step h (s)")
        ax.set_ylim(0, 1.2)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("achieved c_r")
    axes[1].legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    fig.savefig(out / "peers_steps.png", dpi=72)
    plt.close(fig)
    names.append("peers_steps.png")
    # 3. flight energy over the bounces, steel c_r = 0.8
    fig, ax = plt.subplots(figsize=(6, 4))
    rows = res["drop"].get("steel", {}).get("rows", {}).get("0.8", {})
    n_max = 1
    for e in engs:
        r = rows.get(e.key, {})
        m = r.get("converged") or r.get("default")
        if m and m.get("energies") and m.get("complete"):
            en = [x / m["energies"][0] for x in m["energies"]]
            ax.semilogy(range(len(en)), en, style[e.key], ms=3, label=e.label[:48])
            n_max = max(n_max, len(en))
    k = list(range(min(n_max, 40)))
    ax.semilogy(k, [0.64**i for i in k], "k:", label="0.8^(2N)")
    ax.set_xlim(0, min(n_max, 40))
    ax.set_ylim(1e-6, 2)
    ax.set_xlabel("bounce N")
    ax.set_ylabel("flight energy / initial")
    ax.set_title("steel ball, c_r = 0.8 asked (finest setting run)")
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "peers_energy.png", dpi=72)
    plt.close(fig)
    names.append("peers_energy.png")
    return names


#: the engines' conventions (how a c_r is asked; per-geometry combination rules)
CONVENTIONS = (Path(__file__).parent / "conventions.md").read_text(encoding="utf-8")


def write(res: dict, engs: list, out: Path) -> None:
    meta = res["meta"]
    v = meta["versions"]
    lines = [
        "# mbplugin side by side with MuJoCo, Drake and PyBullet",
        "",
        "Generated by `python benchmarks/peers/run.py"
        + (" --quick" if meta.get("quick") else "") + "` "
        f"({meta['date']}, {meta.get('total_wall', 0):.0f} s in all). Do not edit by hand.",
        "",
        f"Machine: {meta['cpu']}, {meta['cores']} cores, Python {meta['python']}; "
        + ", ".join(f"{k} {v[k]}" for k in PACKAGES) + ". "
        f"Load average at the start: {', '.join(f'{x:.1f}' for x in meta['load_start'])} — "
        "the machine was shared, so absolute wall times are noisy (±30 % or more); the "
        "ratios to mbplugin are measured in the same run and move less.",
        "",
        "Bold: within 1e-3 of the requested c_r. \"default\": the engine's default step "
        "(MuJoCo 2 ms, Drake 1 ms / RK3 accuracy 1e-4, PyBullet 1/240 s, SciPy rtol 1e-3); "
        "\"converged\": the step refined 4x at a time (tolerance 100x) until the first-bounce "
        "c_r moved by < 1e-3, found at c_r = 0.8 and used for all c_r; \"not converged\" when "
        "the time budget ran out first. How the measurements are made: "
        "[common.py](common.py). Wall times include recording the state at every step; "
        "\"~\": extrapolated (wall time per simulated second × 5 s) from a run stopped by "
        "the wall-time cap that keeps the whole comparison under 15 minutes.",
        "",
        "Reading the worst-bounce column: mbplugin's and SciPy's law is calibrated for the "
        "first impact (1.40 m/s) with gravity acting during the contact; on the soft ball the "
        "later, slower bounces last long enough for gravity to take a visible share, so their "
        "c_r falls below the request (0.1 at v_in ~ 0.2 m/s) -- physics of that law, not an "
        "integration error. Drake's Hunt–Crossley d is a constant, so its c_r rises towards 1 "
        "as the impact speed falls: exact at the first bounce, far off later, and the ball "
        "keeps bouncing.",
        "",
    ]
    for mat in ("steel", "soft"):
        d = res["drop"].get(mat)
        if not d:
            continue
        desc = ("steel ball, R = 1 cm, ρ = 7800 kg/m³ (m = 32.7 g), Hertz k = "
                f"{d['k']:.4g} N/m^1.5 (E = 200 GPa, ν = 0.3, steel floor)" if mat == "steel"
                else f"rubber-like ball, same size and mass, k = {d['k']:.3g} N/m^1.5")
        lines += [f"## Drop ball, {mat}", "",
                  f"{desc}; dropped from 10 cm (v_in = 1.40 m/s) onto a fixed plane, 5 s. "
                  f"Hertz (elastic) at the first impact: duration {d['hertz_duration'] * 1e6:.1f} "
                  f"µs, peak force {d['hertz_peak']:.4g} N; static overlap "
                  f"{-d['hertz_rest'] * 1e6:.3g} µm. Duration, peak force, energy, rest "
                  "height, wall time: at c_r = 0.8.", ""]
        lines += drop_table(res, engs, mat)
        lines.append("")
    t = res.get("tennis", {})
    if t:
        lines += ["## Tennis ball on a basketball", "",
                  "`scenes/stacked_balls.toml`: 0.6 kg / 12 cm and 57 g / 3.3 cm, 5 cm apart, "
                  "dropped from 1 m, elastic contacts (Hertz k = 1e9 for mbplugin; linear "
                  "springs with the Hertz duration of the floor impact, no damping, "
                  "restitution 1 elsewhere). Ideal launch speed of the tennis ball for "
                  f"instantaneous elastic contacts in sequence: {t['ideal']:.3f} m/s.", ""]
        lines += [*tennis_table(res, engs), ""]
    s = res.get("stack", {})
    if s:
        lines += ["## Five steel balls stacked at rest", "",
                  "`scenes/stack_n.toml` with n = 5: R = 1 cm steel balls released touching "
                  "on a steel floor, 5 s, c_r = 0.5 contacts (the drop-ball steel settings "
                  "elsewhere). Hertz statics put the top ball "
                  f"{(s['hertz_top'] - 9 * cm.DROP_R) * 1e6:.3g} µm below the rigid stack.", ""]
        lines += [*stack_table(res, engs), ""]
    lines += [CONVENTIONS, ""]
    for p in plots(res, engs, out):
        lines += [f"![{p}]({p})", ""]
    text = "\n".join(lines)
    tmp = out / "RESULTS.md.tmp"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out / "RESULTS.md")


def splice(res: dict, engs: list, keys: set[str], path: Path) -> None:
    """Put this run's rows of the engines ``keys`` into an existing RESULTS.md (``path``) and
    leave every other row as it was generated: in each table the engines' old rows are
    replaced, or new ones inserted before the first native MuJoCo row (else at the table's
    end); their notes follow the table's; a line under the header says which rows were
    regenerated, when, and on what machine (``run.py --splice``). For a machine without every
    peer engine installed, or a change that touches one engine."""
    text = path.read_text(encoding="utf-8").split("\n")
    mine = [e for e in engs if e.key in keys]
    labels = {e.label for e in mine}
    tables: dict[str, list[str]] = {}
    for mat in ("steel", "soft"):
        if res["drop"].get(mat):
            tables[f"## Drop ball, {mat}"] = drop_table(res, mine, mat)
    if res.get("tennis"):
        tables["## Tennis ball on a basketball"] = tennis_table(res, mine)
    if res.get("stack"):
        tables["## Five steel balls stacked at rest"] = stack_table(res, mine)

    def label(line: str) -> str:
        return line.split("|")[1].strip() if line.startswith("| ") else ""

    for head, new in tables.items():
        rows = [x for x in new if label(x) in labels]
        notes = [x for x in new if x.startswith("- ") and any(x[2:].startswith(lb)
                                                              for lb in labels)]
        if head not in text:
            continue
        i = text.index(head)
        start = next(j for j in range(i, len(text)) if text[j].startswith("|"))
        end = next((j for j in range(start, len(text)) if not text[j].startswith("|")),
                   len(text))
        table = [x for x in text[start:end] if label(x) not in labels]
        at = next((j for j, x in enumerate(table) if j > 1 and label(x).startswith("MuJoCo")),
                  len(table))
        table[at:at] = rows
        # the notes under the table (lines "- ..."): the engines' old ones out, the new ones in
        k = end
        while k < len(text) and (text[k] == "" or text[k].startswith("- ")):
            k += 1
        tail = [x for x in text[end:k] if x.startswith("- ")
                and not any(x[2:].startswith(lb) for lb in labels)] + notes
        text[start:k] = table + [""] + tail + ([""] if tail else [])
    meta = res["meta"]
    stamp = (f"Rows {', '.join(sorted(labels))} regenerated by `python benchmarks/peers/run.py "
             f"--splice {','.join(sorted(keys))}` ({meta['date']}, {meta['cpu']}, "
             f"{meta['cores']} cores; load average at the start "
             f"{', '.join(f'{x:.1f}' for x in meta['load_start'])}); their \"wall × ours\" is "
             "against mbplugin standalone measured in that run.")
    old = [j for j, x in enumerate(text) if x.startswith("Rows ") and "--splice" in x]
    for j in reversed(old):
        del text[j:j + 2]
    gen = next(j for j, x in enumerate(text) if x.startswith("Generated by"))
    text[gen + 2:gen + 2] = [stamp, ""]
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(text), encoding="utf-8")
    tmp.replace(path)
