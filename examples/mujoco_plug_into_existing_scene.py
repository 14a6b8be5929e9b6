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

import mbplugin

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="quick mode (CI)")
    ap.add_argument("--out", default="out/mujoco_plug_into_existing_scene",
                    help="output folder")
    args = ap.parse_args(argv)
    duration = 0.8 if args.short else 3.0
    from mbplugin.contact import hertz_stiffness
    from mbplugin.laws import make_law

    # the PyBullet twin's report (examples/plug_into_existing_scene.py): apexes, c_r check
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from plug_into_existing_scene import report

    native, _ = simulate(False, duration)
    ours, contacts = simulate(True, duration)
    k = float(hertz_stiffness(STEEL["E"], STEEL["nu"], STEEL["E"], STEEL["nu"], R))
    law = make_law(LAW["name"], k=k, cr=LAW["cr"])
    return report(native[0], ours[0], contacts.bounces(), law, MASS,
                  "native MuJoCo (solref 0.02 0.1)", Path(args.out))

if __name__ == "__main__":
    with mbplugin.compile_notice(100):  # a first run compiles (~100 s on 2 cores)
        sys.exit(main())
