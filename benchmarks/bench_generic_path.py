"""Benchmark: the engine's general (SciPy) contact path - a mesh ball and the reference path.

Two scenes that do not take the compiled end-to-end path:

* **mesh ball**: a steel icosphere (trimesh, subdivision 3, 642 vertices, R = 1 cm, rho = 7800
  kg/m^3) dropped from 10 cm onto a fixed steel plane, the exact-c_r law of Zhang & Sharf
  (2004) at c_r = 0.5 with Hertz's stiffness (mesh ``radius`` = R), rtol 1e-8, 0.5 s (three
  bounces, then micro-bounces). With ``contacts.fast = False`` (mesh-plane pairs have a compiled
  kernel since issue 19; ``benchmarks/bench_mesh.py`` measures that path): every right-hand side
  goes through :meth:`ContactModel.detect` (before) or the known-pair narrow phase (after).
* **reference path**: the same drop with a primitive sphere and the Bouc-Wen-Maxwell law (one
  ODE state per contact), with ``world.compiled_path = False`` and ``contacts.fast = False`` (the
  SciPy solvers with the general detection and the store's law evaluation), 0.5 s.

Reported per scene: wall time, accepted steps, right-hand-side evaluations, wall time per
right-hand side, and how often the full detection (broad phase included) ran
(``ContactModel.detect`` calls, counted by wrapping it). Then, in one process, the cost of
handing the law ODE states of M contacts to the store and back per right-hand side: the former
padded round trip against views of the integrator's vector (:func:`ode_round_trip`). Run from
the repository root (the scenes also on a copy of an older commit, with ``PYTHONPATH`` pointing
at it, to compare)::

    python benchmarks/bench_generic_path.py [--repeat 3] [--duration 0.5] [--subdivisions 3]
        [--json] [--profile]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

R, RHO, E, NU, H, G = 0.01, 7800.0, 210e9, 0.3, 0.1, 9.81


def scene_doc(shape: dict, law: dict, duration: float) -> dict:
    return {
        "scene": {"name": "generic_path", "duration": duration},
        "world": {"gravity": [0.0, 0.0, -G]},
        "materials": {"steel": {"E": E, "nu": NU, "density": RHO}},
        "integrator": {"method": "adaptive", "rtol": 1e-8},
        "output": {"contacts": False, "record_every": 1000000},
        "bodies": [
            {"name": "floor", "shape": "plane", "fixed": True, "material": "steel"},
            {"name": "ball", "material": "steel", "position": [0.0, 0.0, R + H], **shape},
        ],
        "contact": law,
    }


def _count_detect() -> list[int]:
    from mbplugin.contact.model import ContactModel

    calls = [0]
    orig = ContactModel.detect

    def counted(self, *a, **k):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return orig(self, *a, **k)

    ContactModel.detect = counted  # type: ignore[method-assign]
    return calls


def run(scene, calls: list[int]) -> dict:
    c0 = calls[0]
    t0 = time.perf_counter()
    res = scene.run()
    wall = time.perf_counter() - t0
    s = res.summary()
    return {"wall_s": wall, "steps": s["steps"], "nfev": s["rhs_evaluations"],
            "us_per_rhs": 1e6 * wall / max(s["rhs_evaluations"], 1),
            "detect_calls": calls[0] - c0,
            "first_cr": s["bounces"][0]["cr"] if s["bounces"] else None}


def ode_round_trip(m: int, repeat: int = 2000) -> dict:
    """Per-right-hand-side cost of the law-state hand-over for M contacts of the
    Bouc-Wen-Maxwell law (2 ODE states): the former padded round trip (flat -> (M, NODE_MAX)
    copy -> store -> (M, NODE_MAX) rates -> slice -> flat copy) against views of the flat
    vector (the store reads (M, 2) and writes the rates into the output's slice), in one
    process on the same batch."""
    import numpy as np

    from mbplugin.contact import ContactModel, Plane, Sphere
    from mbplugin.dynamics.bodies import make_bodies
    from mbplugin.laws.kernels import NODE_MAX

    model = ContactModel()
    model.add_shape(Plane(), body=m)
    for i in range(m):
        model.add_shape(Sphere(0.01), body=i)
    model.set_default_law({"name": "bouc_wen_maxwell", "k": 1e9, "c": 1e3})
    pos = np.zeros((m + 1, 3))
    pos[:m, 0] = 0.05 * np.arange(m)
    pos[:m, 2] = 0.0099
    vel = np.zeros((m + 1, 3))
    vel[:m, 2] = -0.5
    b = make_bodies([f"b{i}" for i in range(m + 1)], [0.03] * (m + 1),
                    [np.eye(3) * 1e-6] * (m + 1), fixed=[False] * m + [True], pos=pos, vel=vel)
    from mbplugin.dynamics.contacts import EngineContacts

    ec = EngineContacts(model, b)
    y = ec.begin(0.0, b.state_vector())
    st = ec.store
    kb = model.detect_pairs(ec.state_from_y(y), st.keys, ec.margin)
    ns = ec.ns
    flat = y[13 * (m + 1) : 13 * (m + 1) + m * ns].copy()

    def padded() -> np.ndarray:
        ode = np.zeros((m, NODE_MAX))
        ode[:, :ns] = flat.reshape(m, ns)
        st.forces(kb, ode)
        return st.state_rates(kb, ode)[:, :ns].ravel()

    def views() -> np.ndarray:
        ode = flat.reshape(m, ns)
        st.forces(kb, ode)
        rates = np.zeros(m * ns)
        st.state_rates(kb, ode, out=rates.reshape(m, ns))
        return rates

    assert np.array_equal(padded(), views())
    out = {}
    for name, fn in (("padded", padded), ("views", views)):
        best = np.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn()
            best = min(best, (time.perf_counter() - t0) / repeat)
        out[name + "_us"] = 1e6 * best
    out["ratio"] = out["padded_us"] / out["views_us"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--duration", type=float, default=0.5)
    ap.add_argument("--subdivisions", type=int, default=3,
                    help="icosphere subdivisions of the mesh ball (3: 642 vertices, 5: 10242)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="run the mesh ball once under cProfile and print the top functions")
    args = ap.parse_args()
    import trimesh

    from mbplugin.scene import build_scene

    calls = _count_detect()
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trimesh.creation.icosphere(subdivisions=args.subdivisions, radius=R).export(
            Path(tmp) / "ball.stl")
        exact = {"law": "zhang_sharf", "params": {"cr": 0.5}}
        mesh = scene_doc({"shape": "mesh", "file": "ball.stl", "radius": R}, exact,
                         args.duration)
        ref = scene_doc({"shape": "sphere", "radius": R},
                        {"law": "bouc_wen_maxwell", "params": {"k": 1e9, "c": 1e3}},
                        args.duration)
        if args.profile:
            import cProfile
            import pstats

            scene = build_scene(mesh, base_dir=tmp)
            prof = cProfile.Profile()
            prof.enable()
            scene.run()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(12)
            return
        for name, doc in (("mesh_ball", mesh), ("reference_path", ref)):
            best = None
            for _ in range(args.repeat):
                scene = build_scene(doc, base_dir=tmp)
                # mesh-plane has a compiled path too (issue 19): off, to measure the general one
                scene.world.contacts.fast = False
                if name == "reference_path":
                    scene.world.compiled_path = False
                r = run(scene, calls)
                if best is None or r["wall_s"] < best["wall_s"]:
                    best = r
            out[name] = best  # type: ignore[assignment]
    trip = {str(m): ode_round_trip(m) for m in (1, 100, 1000)}
    if args.json:
        print(json.dumps({**out, "ode_round_trip": trip}, indent=1))
        return
    for name, r in out.items():
        print(f"{name:15s} wall {r['wall_s']:.3f} s  steps {r['steps']}  rhs {r['nfev']}  "
              f"{r['us_per_rhs']:.0f} us/rhs  detect calls {r['detect_calls']}  "
              f"first c_r {r['first_cr']}")
    for m, r in trip.items():
        print(f"law states, M = {m:>4s}: padded round trip {r['padded_us']:.1f} us, views "
              f"{r['views_us']:.1f} us per right-hand side ({r['ratio']:.2f}x)")


if __name__ == "__main__":
    main()
