"""A triangle mesh in a scene file, standalone and in PyBullet: the Stanford bunny and three balls
dropped into a box (``scenes/mesh_box.toml``).

The same file runs on both backends (``world.backend`` set from here). Checked at the end of
each run: nothing left the box (the walls are half-spaces at +-15 cm: every centre inside) or
went through the floor (a ball's centre at least its radius minus 1 mm up, the bunny's above
the floor and within its size of it). The full mode runs 3 s and also checks rest: the balls
on the floor (they may roll on: the contact law has no rolling resistance), the bunny's speed
below 1 mm/s at the end, and (standalone) the floor carrying the weight of all four bodies
within 1 %.

    python examples/mesh_scene.py [--short] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import mbplugin
from mbplugin.scene import load_scene

SCENE = Path(__file__).resolve().parent.parent / "scenes" / "mesh_box.toml"
R_BALL, HALF_BOX, G = 0.015, 0.15, 9.81


def check(name: str, pos: dict[str, np.ndarray], speed: dict[str, float] | None,
          rest: bool) -> bool:
    ok = True
    for body, x in pos.items():
        inside = bool(np.all(np.abs(x[:2]) < HALF_BOX))
        line = f"  {body:7s} at ({x[0]:+.4f}, {x[1]:+.4f}, {x[2]:.5f}) m"
        if speed is not None:
            line += f", speed {1e3 * speed[body]:.3f} mm/s"
        print(line)
        ok &= inside
        if body.startswith("ball"):  # not through the floor; at rest, on it
            ok &= R_BALL - 1e-3 <= x[2] and (not rest or x[2] <= R_BALL + 1e-6)
        else:
            ok &= 0.0 < x[2] < 0.1
        if rest and speed is not None and not body.startswith("ball"):
            ok &= speed[body] < 1e-3  # (a ball may roll on: no rolling resistance)
    print(f"{name}: {'ok' if ok else 'FAILED'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI): 0.25 s, no rest check")
    ap.add_argument("--out", default="out/mesh_scene", help="where the records go")
    args = ap.parse_args(argv)
    duration = 0.25 if args.short else 3.0
    ok = True

    # standalone engine
    scene = load_scene(SCENE, {"duration": duration})
    result = scene.run()
    result.write(Path(args.out) / "standalone", "csv")
    names = result.body_names
    n = len(names)
    y = result.final_state
    pos = {b: y[3 * i : 3 * i + 3] for i, b in enumerate(names) if b.startswith(("ball", "bun"))}
    speed = {b: float(np.linalg.norm(y[7 * n + 3 * i : 7 * n + 3 * i + 3]))
             for i, b in enumerate(names) if b in pos}
    s = result.summary()
    print(f"standalone: {s['steps']} steps in {s['wall_time']:.1f} s, "
          f"{s['bounces_total']} bounces, {s['final_contacts_total']} contacts at the end")
    ok &= check("standalone", pos, speed, rest=not args.short)
    if not args.short:
        weight = float(np.sum(scene.world.bodies.mass[np.isfinite(scene.world.bodies.mass)])) * G
        floor = sum(c["force"] for c in result.final_contacts if c["a"] == "floor")
        print(f"  floor carries {floor:.4f} N, weight {weight:.4f} N")
        ok &= abs(floor / weight - 1.0) < 0.01

    # the same file in PyBullet
    bscene = load_scene(SCENE, {"duration": duration, "world.backend": "pybullet"})
    bres = bscene.run()
    bres.write(Path(args.out) / "pybullet", "csv")
    bpos = {b: bres.pos[-1, i] for i, b in enumerate(bres.body_names)
            if b.startswith(("ball", "bun"))}
    bspeed = ({b: float(np.linalg.norm(bres.vel[-1, i])) for i, b in enumerate(bres.body_names)
               if b in bpos} if bres.vel is not None else None)
    print(f"pybullet: {bres.steps} host steps in {bres.wall_time:.1f} s")
    ok &= check("pybullet", bpos, bspeed, rest=not args.short)
    return 0 if ok else 1


if __name__ == "__main__":
    with mbplugin.compile_notice(80):  # a first run compiles (~80 s on 2 cores)
        sys.exit(main())
