"""``mbplugin run SCENE.toml``: run a scene file, write its results and plots.

Registered in :data:`mbplugin.cli.COMMAND_MODULES`; see ``docs/scenes.md`` for the file format.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

MAX_TABLE_ROWS = 30
#: Progress lines (``--progress``, or stderr not a terminal): every 10 % and at least every
#: LINE_SECONDS of wall time.
LINE_SECONDS = 30.0
#: Up to this many moving bodies get a labelled line each in trajectory.png; more are summarised.
MAX_TRAJECTORIES = 12


def moving_axis(pos: np.ndarray) -> int:
    """The coordinate (0 x, 1 y, 2 z) with the largest range over time among bodies ``pos``
    (records, bodies, 3)."""
    if pos.size == 0:
        return 2
    return int(np.argmax(np.ptp(pos, axis=0).max(axis=0)))


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
    p.add_argument("--quiet", action="store_true", help="no progress indication")
    p.add_argument("--progress", action="store_true",
                   help="progress even when stderr is not a terminal (one line per 10 %%)")
    p.add_argument("--strict", action="store_true",
                   help="exit with code 3 when the run finished with a warning (a step above "
                        "the advisor's recommendation, a diverging energy balance)")
    p.set_defaults(func=_cmd_run)


class _Progress:
    """Progress of the simulated time on stderr: a ``tqdm`` bar on a terminal; with
    ``--progress`` (or stderr redirected to a file) one line per 10 %."""

    def __init__(self, total: float, enabled: bool, force: bool = False) -> None:
        self.total = total
        self.bar: Any = None
        self.enabled = enabled
        tty = sys.stderr.isatty()
        self.lines = enabled and (force or not tty)
        self.next_tenth = 1
        self.t0 = time.perf_counter()
        self.last = self.t0
        if enabled and tty and not force:
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=sys.stderr, leave=True,
                            bar_format="{l_bar}{bar}| {n:.4g}/{total:.4g} s simulated "
                                       "[{elapsed}<{remaining}]")

    def __call__(self, t: float) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            now = time.perf_counter()
            if now - self.last >= 0.1 or t >= self.total:
                self.last = now
                self.bar.update(min(t, self.total) - self.bar.n)
            return
        if self.lines:
            frac = t / self.total
            now = time.perf_counter()
            step = False
            while self.next_tenth <= 10 and frac >= self.next_tenth / 10 - 1e-12:
                sys.stderr.write(f"mbplugin run: {10 * self.next_tenth:3d} %  t = {t:.4g} s, "
                                 f"{now - self.t0:.1f} s wall\n")
                self.next_tenth += 1
                step = True
            if not step and now - self.last >= LINE_SECONDS:
                # a slow run: a line at least every LINE_SECONDS, between the tenths
                sys.stderr.write(f"mbplugin run: {100 * frac:5.1f} %  t = {t:.4g} s, "
                                 f"{now - self.t0:.1f} s wall\n")
                step = True
            if step:
                self.last = now
                sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def _notices() -> Iterator[None]:
    """Print the library's work estimates (``WorkEstimate`` warnings) on stderr at once, one
    line each, while the block runs; other warnings as usual."""
    import warnings

    from mbplugin.dynamics.preflight import WorkEstimate

    with warnings.catch_warnings():
        warnings.simplefilter("always", WorkEstimate)
        shown = warnings.showwarning

        def show(message: Any, category: Any, *rest: Any, **kw: Any) -> None:
            if issubclass(category, WorkEstimate):
                print(f"mbplugin run: {message}", file=sys.stderr, flush=True)
            else:
                shown(message, category, *rest, **kw)

        warnings.showwarning = show
        yield


def _cmd_run(args: argparse.Namespace) -> int:
    import warnings

    from mbplugin.cli.common import print_json
    from mbplugin.dynamics.outputs import prepare_output_dir, staged_dir
    from mbplugin.dynamics.simulation import SimulationResult, SimulationWarning
    from mbplugin.formatting import format_table
    from mbplugin.scene import default_out_dir, load_scene

    with _notices():  # a heavy scene says its estimate before it is built and run
        scene = load_scene(args.scene, args.overrides)
    fmt = args.format or scene.output_format
    out_dir = Path(args.out) if args.out else default_out_dir(scene.name)
    if args.plot:
        from mbplugin.plotting import pyplot

        pyplot()  # matplotlib missing: say so before the run, not after it
    with _notices():
        scene.simulation.preflight()  # initial overlaps, work and memory: before any output
    created = not out_dir.exists()
    prepare_output_dir(out_dir)   # unwritable or foreign --out: before the run, not after
    prog = _Progress(scene.duration, enabled=not args.quiet, force=args.progress)
    try:
        with warnings.catch_warnings():
            # the run's warnings are printed below, once, from the summary
            warnings.simplefilter("ignore", SimulationWarning)
            result = scene.run(prog)
    except BaseException:
        # a failed or interrupted run writes nothing: not even the directory it created
        if created and out_dir.is_dir() and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise
    finally:
        prog.close()
    plots: list[Path] = []
    # every file of the run goes to a temporary sibling of --out that then replaces it as a
    # whole: a Ctrl-C while writing leaves the earlier run's files, never a mix of two runs
    with staged_dir(out_dir) as stage:
        if args.plot:
            try:
                plots = write_plots(result, stage, scene.plots, title=scene.name)
            except Exception as exc:  # a figure must never cost the run's records
                result.warnings.append(f"the plots could not be written: {exc}")
        if isinstance(result, SimulationResult):
            written = result.write(out_dir, fmt, also=plots, into=stage)
        else:
            written = [out_dir / p.name for p in result.write(stage, fmt, also=plots)]
    plots = [out_dir / p.name for p in plots]
    summary = result.summary()
    summary["output"] = [str(p) for p in written + plots]
    code = 3 if (args.strict and summary.get("warnings")) else 0
    if args.json:
        print_json(summary)
        return code
    print(f"{scene.name}: {scene.description}".rstrip(": "))
    print(f"  {summary['steps']} accepted steps ({summary['events']} contact events), "
          f"{summary['sim_time']:.6g} s simulated in {summary['wall_time']:.3g} s wall time")
    drift = summary["energy_drift"]
    if drift is not None and math.isfinite(drift):
        print(f"  energy balance drift {drift:.3g} (relative)")
    advice = summary.get("step_advice") or {}
    if "recommended_dt" in advice and "dt" in advice:
        print(f"  step {advice['dt']:.3g} s; the advisor recommends <= "
              f"{advice['recommended_dt']:.3g} s ({advice.get('limited_by', '')})")
    if summary.get("initial_overlaps"):
        ov = summary["initial_overlaps"]
        stored = (summary.get("energy_initial") or {}).get("stored")  # None: PyBullet
        print(f"  {len(ov)} initial overlaps accepted as a pre-load (deepest "
              f"{max(o['delta'] for o in ov):.3g} m)" + ("" if stored is None else
              f", stored energy {stored:.4g} J counted in the balance"))
    bounces = result.bounces
    if bounces:
        rows = [(i + 1, b["body"], b["other"], b["t"], b["v_in"], b["v_out"], b["cr"])
                for i, b in enumerate(bounces[:MAX_TABLE_ROWS])]
        print()
        print(format_table(("#", "body", "other", "t (s)", "v_in (m/s)", "v_out (m/s)", "c_r"),
                           rows))
        if len(bounces) > MAX_TABLE_ROWS:
            print(f"... {len(bounces) - MAX_TABLE_ROWS} more bounces in "
                  f"{out_dir / 'bounces.csv'}")
    else:
        print("  no completed bounce")
    if result.contacts_at_rest:
        print(f"  {len(result.contacts_at_rest)} contacts started without an approach speed "
              f"(at rest, no c_r): listed in {out_dir / 'bounces.csv'}")
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
    return code


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
        axis = moving_axis(result.pos[:, movable]) if movable else 2
        label = "xyz"[axis]
        if len(movable) <= MAX_TRAJECTORIES:
            for i in movable:
                ax.plot(t, result.pos[:, i, axis], lw=1.0, label=result.body_names[i])
            if movable:
                ax.legend(fontsize=8, ncol=2 if len(movable) > 6 else 1)
        else:
            # a large scene: the spread of the coordinate over the bodies, not a tangle of lines
            c = result.pos[:, movable, axis]
            ax.fill_between(t, c.min(axis=1), c.max(axis=1), alpha=0.25, label="min - max")
            ax.fill_between(t, np.percentile(c, 25, axis=1), np.percentile(c, 75, axis=1),
                            alpha=0.4, label="quartiles")
            ax.plot(t, np.median(c, axis=1), lw=1.2, label="median")
            ax.legend(fontsize=8)
        ax.set_xlabel("t (s)")
        ax.set_ylabel(f"centre of mass {label} (m)")
        what = (f"{len(movable)} moving bodies" if len(movable) > MAX_TRAJECTORIES
                else "trajectories")
        ax.set_title(f"{title}: {what} ({label}, the coordinate that moves most)")
        ax.grid(True, alpha=0.3)
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
