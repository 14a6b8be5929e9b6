"""``mbplugin run SCENE.toml``: run a scene file, write its results and plots.

Registered in :data:`mbplugin.cli.COMMAND_MODULES`; see ``docs/scenes.md`` for the file format.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

MAX_TABLE_ROWS = 30


def add_parser(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    p = subparsers.add_parser(
        "run", help="run a scene file (bodies, contact laws, loads) and report its bounces",
        description="Run a TOML scene (docs/scenes.md): writes the records (CSV or NPZ), "
                    "summary.json and optional plots to --out, prints the per-bounce c_r table.",
    )
    p.add_argument("scene", help="scene file (TOML), e.g. scenes/drop_ball.toml")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", dest="overrides",
                   help="override a scene parameter or TOML path, repeatable "
                        "(e.g. --set law=flores --set integrator.rtol=1e-8)")
    p.add_argument("--out", metavar="DIR", help="output directory (default out/<scene name>)")
    p.add_argument("--format", choices=("npz", "csv"), help="record format (default: the scene's)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--plot", action="store_true",
                   help="write trajectory, energy, per-bounce c_r and force-indentation plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_run)


class _Progress:
    """Simulated-time progress bar on stderr (tqdm), redrawn at most ten times per second."""

    def __init__(self, total: float, enabled: bool) -> None:
        from tqdm import tqdm

        self.total = float(total)
        self.done = 0.0
        self.bar = tqdm(total=self.total, disable=not enabled, unit="s sim", leave=False,
                        mininterval=0.1, bar_format="{l_bar}{bar}| t = {n:.4g}/{total:.4g} s "
                        "[{elapsed}]")

    def __call__(self, t: float) -> None:
        t = min(max(float(t), 0.0), self.total)
        if t > self.done:
            self.bar.update(t - self.done)
            self.done = t

    def close(self) -> None:
        self.bar.close()


def _cmd_run(args: argparse.Namespace) -> int:
    from mbplugin.cli.common import print_json
    from mbplugin.formatting import format_table
    from mbplugin.scene import load_scene

    scene = load_scene(args.scene, args.overrides)
    fmt = args.format or scene.output_format
    out_dir = Path(args.out) if args.out else Path("out") / scene.name
    prog = _Progress(scene.duration, enabled=not args.quiet and sys.stderr.isatty())
    try:
        result = scene.run(prog)
    finally:
        prog.close()
    written = result.write(out_dir, fmt)
    plots: list[Path] = []
    if args.plot:
        plots = write_plots(result, out_dir, scene.plots, title=scene.name)
    summary = result.summary()
    summary["output"] = [str(p) for p in written + plots]
    if args.json:
        print_json(summary)
        return 0
    print(f"{scene.name}: {scene.description}".rstrip(": "))
    print(f"  {summary['steps']} accepted steps ({summary['events']} contact events), "
          f"{summary['sim_time']:.6g} s simulated in {summary['wall_time']:.3g} s wall time")
    drift = summary["energy_drift"]
    if drift is not None and math.isfinite(drift):
        print(f"  energy balance drift {drift:.3g} (relative)")
    bounces = summary["bounces"]
    if bounces:
        rows = [(i + 1, b["body"], b["other"], b["t"], b["v_in"], b["v_out"], b["cr"])
                for i, b in enumerate(bounces[:MAX_TABLE_ROWS])]
        print()
        print(format_table(("#", "body", "other", "t (s)", "v_in (m/s)", "v_out (m/s)", "c_r"),
                           rows))
        if len(bounces) > MAX_TABLE_ROWS:
            print(f"... {len(bounces) - MAX_TABLE_ROWS} more bounces in "
                  f"{out_dir / 'summary.json'}")
    else:
        print("  no completed bounce")
    analysis = summary.get("analysis") or {}
    for key in ("height_below_threshold_at", "micro_bounces", "resting_frequency_hz"):
        if key in analysis:
            print(f"  {key.replace('_', ' ')}: {analysis[key]:.6g}")
    if "steps_per_phase" in analysis:
        for ph in analysis["steps_per_phase"]:
            print(f"  steps in ({ph['from']:g}, {ph['to']:g}] s: {ph['steps']}")
    for w in summary.get("warnings", []):
        print(f"  warning: {w}")
    print(f"\nresults written to {out_dir}/ ({', '.join(p.name for p in written + plots)})")
    return 0


# --------------------------------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------------------------------
def write_plots(result: Any, out_dir: Path, which: list[str], title: str = "") -> list[Path]:
    """Write the requested figures (PNG) into ``out_dir``; returns their paths."""
    from mbplugin.plotting import pyplot, save_figure

    plt = pyplot()
    paths: list[Path] = []
    t = result.t
    movable = [i for i, _ in enumerate(result.body_names)
               if len(t) and np.any(result.pos[:, i] != result.pos[0, i])]
    if "trajectory" in which and len(t):
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        for i in movable[:12]:
            ax.plot(t, result.pos[:, i, 2], lw=1.0, label=result.body_names[i])
        ax.set_xlabel("t (s)")
        ax.set_ylabel("height of the centre of mass z (m)")
        ax.set_title(f"{title}: trajectories")
        ax.grid(True, alpha=0.3)
        if movable and len(movable) <= 12:
            ax.legend(fontsize=8)
        paths.append(save_figure(fig, out_dir / "trajectory.png"))
    if "energy" in which and len(t):
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        e = result.energy
        pe_min = e["potential"].min()
        for key in ("kinetic", "potential", "stored", "dissipated", "total"):
            ax.plot(t, e[key] - (pe_min if key in ("potential", "total") else 0.0),
                    lw=1.2 if key == "total" else 1.0, label=key)
        ax.set_xlabel("t (s)")
        ax.set_ylabel("energy (J), potential from its minimum")
        ax.set_title(f"{title}: energy (drift {result.energy_drift:.2g})")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        paths.append(save_figure(fig, out_dir / "energy.png"))
    if "bounces" in which and result.bounces:
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        v = np.array([b["v_in"] for b in result.bounces])
        cr = np.array([b["cr"] for b in result.bounces])
        ax.semilogx(v, cr, "o-", ms=4)
        ax.set_xlabel("impact speed v_in (m/s)")
        ax.set_ylabel("c_r = v_out / v_in")
        ax.set_title(f"{title}: coefficient of restitution per bounce")
        ax.grid(True, which="both", alpha=0.3)
        paths.append(save_figure(fig, out_dir / "bounces.png"))
    c = result.contacts
    if "loops" in which and len(c.get("key", ())):
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        keys, counts = np.unique(c["key"], return_counts=True)
        for key in keys[np.argsort(-counts)][:6]:
            sel = c["key"] == key
            ax.plot(c["delta"][sel] * 1e6, c["force"][sel], ".-", ms=2, lw=0.8,
                    label=f"{result._name(int(c['a'][sel][0]))}-"
                          f"{result._name(int(c['b'][sel][0]))}")
        ax.set_xlabel("indentation delta (um)")
        ax.set_ylabel("normal force F (N)")
        ax.set_title(f"{title}: force-indentation")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        paths.append(save_figure(fig, out_dir / "loops.png"))
    return paths
