"""An ordinary MuJoCo script switched to mbplugin's contact laws by three added lines.

Three steel balls (R = 12.7 mm) are dropped on a floor in an MJCF model stepped by
``mujoco.mj_step`` at MuJoCo's default 2 ms, once with MuJoCo's native soft contact (its
``solref`` asks for a damping ratio) and once with the lines marked ``# mbplugin`` added: a
Hunt-Crossley law (c_r = 0.8) with Hertz's stiffness of steel manages every pair involving the
floor. The script prints the bounce apexes of both runs and checks that, with the law, every
bounce's coefficient of restitution is the one the exact impact analyser gives for that law
and impact speed (within 1e-3), independent of MuJoCo's step.

    python examples/mujoco_plug_into_existing_scene.py [--short] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import mujoco
import numpy as np

R, MASS = 0.0127, 0.066
LAW = {"name": "hunt_crossley", "cr": 0.8}
STEEL = {"E": 2e11, "nu": 0.3}
SCENE = f"""<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <geom name="floor" type="plane" size="2 2 .1" solref="0.02 0.1"/>
    {"".join(f'''<body name="ball{i}" pos="{0.2 * i} 0 {0.1 + 0.05 * i}"><freejoint/>
      <geom type="sphere" size="{R}" mass="{MASS}" solref="0.02 0.1"/></body>'''
             for i in range(3))}
  </worldbody>
</mujoco>"""


def simulate(use_mbplugin: bool, duration: float) -> tuple[list[np.ndarray], object]:
    """The user's script; ``use_mbplugin`` adds the three marked lines."""
    model = mujoco.MjModel.from_xml_string(SCENE)
    data = mujoco.MjData(model)
    contacts = None
    if use_mbplugin:
        from mbplugin.mujoco import MujocoContacts  # mbplugin (1)

        contacts = MujocoContacts(model, data, manage=["floor"], law=LAW,
                                  material=STEEL)  # mbplugin (2)
    heights: list[list[float]] = [[] for _ in range(3)]
    for _ in range(round(duration / model.opt.timestep)):
        if contacts is not None:
            contacts.step()  # mbplugin (3): instead of mujoco.mj_step(model, data)
        else:
            mujoco.mj_step(model, data)
        for i, h in enumerate(heights):
            h.append(float(data.qpos[7 * i + 2]))
    return [np.array(h) for h in heights], contacts


def apexes(z: np.ndarray) -> np.ndarray:
    """Heights (m) of the local maxima of a trajectory."""
    i = np.flatnonzero((z[1:-1] > z[:-2]) & (z[1:-1] >= z[2:])) + 1
    return z[i]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/mujoco_plug_into_existing_scene",
                    help="output folder")
    args = ap.parse_args(argv)
    duration = 0.8 if args.short else 3.0
    from mbplugin.contact import hertz_stiffness
    from mbplugin.impact import impact
    from mbplugin.laws import make_law

    native, _ = simulate(False, duration)
    ours, contacts = simulate(True, duration)
    print("bounce apex heights of the first ball (m):")
    print("  native MuJoCo (solref 0.02 0.1):  ", np.round(apexes(native[0])[:5], 4))
    print("  mbplugin hunt_crossley cr = 0.8: ", np.round(apexes(ours[0])[:5], 4))
    k = float(hertz_stiffness(STEEL["E"], STEEL["nu"], STEEL["E"], STEEL["nu"], R))
    law = make_law(LAW["name"], k=k, cr=LAW["cr"])
    worst = 0.0
    rows = contacts.bounces()
    for row in rows[rows["v_in"] > 0.15]:
        ref = impact(law, MASS, float(row["v_in"]), press=MASS * 9.81)
        worst = max(worst, abs(float(row["cr"]) - ref.cr_out))
    print(f"{len(rows)} bounces with the law; largest |c_r - impact analyser| = {worst:.2e}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.savetxt(out / "heights.csv", np.column_stack([native[0], ours[0]]), delimiter=",",
               header="native_z,mbplugin_z", comments="")
    if worst > 1e-3 or not len(rows):
        print("FAILED: c_r differs from the impact analyser", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
