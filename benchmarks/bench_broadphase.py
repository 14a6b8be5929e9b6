"""Broad-phase (and full detection) cost per step vs the number of spheres.

N spheres of radius 5 mm at a fixed packing density (about 1.5 neighbours each, as in a loose
granular bed) in a cubic box whose side grows as N^(1/3), resting on a ground plane. For each N
the script times, per step (best of several repetitions after one warm-up):

* ``broad``  :func:`mbplugin.contact.broad.sphere_pairs` on the bounding spheres,
* ``detect`` :meth:`mbplugin.contact.ContactModel.detect` (broad + narrow phase + kinematics,
  effective masses, keys, law indices: the whole ContactBatch),
* ``store``  :meth:`mbplugin.contact.ContactStore.commit` on that batch (matching by key).

Linear cost shows as a constant time per sphere.

    python benchmarks/bench_broadphase.py            # N = 1e3, 1e4, 1e5
    python benchmarks/bench_broadphase.py --quick    # N = 1e3, 1e4, fewer repetitions
    python benchmarks/bench_broadphase.py --json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from mbplugin.contact import BodyState, ContactModel, Plane, Sphere
from mbplugin.contact.broad import sphere_pairs

RADIUS = 0.005
VOLUME_FRACTION = 0.3


def scene(n: int, seed: int = 0) -> tuple[ContactModel, BodyState]:
    rng = np.random.default_rng(seed)
    side = (n * 4.0 / 3.0 * np.pi * RADIUS**3 / VOLUME_FRACTION) ** (1.0 / 3.0)
    pos = rng.uniform(0.0, side, size=(n, 3))
    pos[:, 2] += RADIUS * 0.9  # some spheres touch the ground
    model = ContactModel()
    model.add_shape(Plane(), -1)
    for i in range(n):
        model.add_shape(Sphere(RADIUS), i)
    model.set_default_law({"name": "hertz", "k": 1e8})
    m = 1e-3
    bodies = BodyState.create(pos, vel=rng.normal(0.0, 0.1, (n, 3)), mass=m,
                              inertia=[0.4 * m * RADIUS**2] * 3)
    return model, bodies


def timed(fn, reps: int) -> float:
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return float(np.min(out))  # best of reps: the least disturbed by other load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1e3, 1e4 and fewer repetitions")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args()
    sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
    reps = 3 if args.quick else 7
    rows = []
    for n in sizes:
        model, bodies = scene(n)
        centers, radii = bodies.pos, np.full(n, RADIUS)
        t_broad = timed(lambda c=centers, r=radii: sphere_pairs(c, r), reps)
        batch = model.detect(bodies)
        t_detect = timed(lambda m=model, b=bodies: m.detect(b), reps)
        store = model.make_store()
        store.begin(batch, 0.0)
        t_store = timed(lambda s=store, b=batch: s.commit(b, 0.0), reps)
        rows.append({"n": n, "contacts": len(batch), "broad_s": t_broad, "detect_s": t_detect,
                     "store_s": t_store})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'N':>8} {'contacts':>9} {'broad ms':>9} {'us/sphere':>10} {'detect ms':>10} "
          f"{'us/sphere':>10} {'commit ms':>10}")
    for r in rows:
        n = r["n"]
        print(f"{n:>8} {r['contacts']:>9} {1e3 * r['broad_s']:>9.2f} "
              f"{1e6 * r['broad_s'] / n:>10.2f} "
              f"{1e3 * r['detect_s']:>10.2f} {1e6 * r['detect_s'] / n:>10.2f} "
              f"{1e3 * r['store_s']:>10.2f}")


if __name__ == "__main__":
    main()
