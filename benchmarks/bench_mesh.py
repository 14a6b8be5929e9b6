"""Benchmark: triangle meshes on a plane in the standalone engine, against the primitives.

Scenes (plastic, E = 2 GPa, nu 0.3, rho 1200 kg/m^3; Hunt-Crossley k = 1e7 N/m^1.5, c_r 0.3;
rtol 1e-9, max_step 0.01 s; 1.2 s: bounces, then rest):

* **cube**: a 5 cm cube dropped 2 cm, flat (``--rpy 0,0,0``) or landing on an edge
  (``30,0,0``), as a 12-triangle mesh (OBJ written by trimesh) and as the primitive ``Box``;
* **10k box**: the same cube subdivided to 12288 triangles (its hull corners are still the 8);
* **spheres**: icospheres of 1280 / 5120 / 20480 / 81920 triangles (R = 2 cm, dropped 1 cm at
  a generic orientation) against the primitive ``Sphere``.

Each scene is built and run once to warm up (numba's cache loaded), then the scenes are run
interleaved ``--repeat`` times in one process; the table gives the median wall time of
``Scene.run()`` (scene building, i.e. reading the file and the mesh's features, is reported
separately), the accepted steps and the ratio to the primitive. Run from the repository root::

    python benchmarks/bench_mesh.py [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import trimesh

E, NU, RHO, H, R = 2e9, 0.3, 1200.0, 0.05, 0.02
LAW = {"law": "hunt_crossley", "params": {"k": 1e7, "cr": 0.3}}


def scene_doc(shape: dict, position: list[float], rpy: list[float], duration: float) -> dict:
    return {
        "scene": {"name": "bench_mesh", "duration": duration},
        "materials": {"m": {"E": E, "nu": NU, "density": RHO}},
        "integrator": {"method": "adaptive", "rtol": 1e-9, "max_step": 0.01},
        "output": {"record_every": 1000000},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True, "material": "m"},
            {"name": "b", "material": "m", "position": position, "rpy_deg": rpy, **shape},
        ],
        "contact": LAW,
    }


def cases(tmp: Path, rpy_cube: list[float]) -> dict[str, tuple[dict, list[float], list[float]]]:
    """name -> (shape table, position, rpy)."""
    cube = trimesh.creation.box(extents=(H, H, H))
    cube.export(tmp / "cube.obj")
    fine = cube
    while len(fine.faces) < 10000:
        fine = fine.subdivide()
    fine.export(tmp / "cube10k.obj")
    for lvl in (3, 4, 5, 6):
        trimesh.creation.icosphere(lvl, radius=R).export(tmp / f"ico{lvl}.obj")
    zc = H / 2 + 0.02 if not any(rpy_cube) else 0.5 * H * 1.37 + 0.02
    out = {
        "box (primitive)": ({"shape": "box", "half_extents": [H / 2] * 3}, [0, 0, zc],
                            rpy_cube),
        "cube mesh, 12 triangles": ({"shape": "mesh", "file": "cube.obj"}, [0, 0, zc],
                                    rpy_cube),
        f"cube mesh, {len(fine.faces)} triangles": ({"shape": "mesh", "file": "cube10k.obj"},
                                                   [0, 0, zc], rpy_cube),
        "sphere (primitive)": ({"shape": "sphere", "radius": R}, [0, 0, R + 0.01], [10, 20, 30]),
    }
    for lvl in (3, 4, 5, 6):
        out[f"icosphere, {20 * 4**lvl} triangles"] = (
            {"shape": "mesh", "file": f"ico{lvl}.obj", "radius": R}, [0, 0, R + 0.01],
            [10, 20, 30])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", type=float, default=1.2)
    ap.add_argument("--rpy", default="0,0,0", help="the cube's orientation (deg), e.g. 30,0,0")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from mbplugin.scene import build_scene

    rpy = [float(x) for x in args.rpy.split(",")]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        table = cases(tmp, rpy)
        build: dict[str, float] = {}
        walls: dict[str, list[float]] = {k: [] for k in table}
        steps: dict[str, int] = {}
        scenes = {}
        for name, (shape, pos, r) in table.items():
            t0 = time.perf_counter()
            scenes[name] = lambda s=shape, p=pos, r=r: build_scene(
                scene_doc(s, p, r, args.duration), base_dir=tmp)
            scenes[name]().run()  # warm-up
            build[name] = time.perf_counter() - t0
        for _ in range(args.repeat):
            for name in table:
                sc = scenes[name]()
                t0 = time.perf_counter()
                res = sc.run()
                walls[name].append(time.perf_counter() - t0)
                steps[name] = int(res.summary()["steps"])
    med = {k: statistics.median(v) for k, v in walls.items()}
    rows = []
    for name in table:
        ref = "sphere (primitive)" if "sphere" in name else "box (primitive)"
        rows.append({"scene": name, "run_s": med[name], "steps": steps[name],
                     "ratio": med[name] / med[ref],
                     "ratio_to_box": med[name] / med["box (primitive)"],
                     "first_build_and_run_s": build[name]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'scene':32s} {'run (ms)':>9s} {'steps':>6s} {'/ primitive':>12s} {'/ box':>7s}")
    for r in rows:
        print(f"{r['scene']:32s} {1e3 * r['run_s']:9.1f} {r['steps']:6d} {r['ratio']:12.2f} "
              f"{r['ratio_to_box']:7.2f}")


if __name__ == "__main__":
    main()
