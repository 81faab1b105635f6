"""Plant comparison: the same scenario (controller, path, start) driven by the four plants --
kinematic bicycle, unicycle, simple car and the 3D Ackermann car (sedan preset). Plants that are
not registered in this installation are skipped with a message.

    python demos/plant_comparison.py [--t-max S]
"""
from _common import HEADER, parse_args, row, save, scenario

from mpc_tracking.models import available_models
from mpc_tracking.scenario.core import run_scenario
from mpc_tracking.viz.plotting import new_figure, plot_path

args = parse_args("plant_comparison", __doc__.splitlines()[0])
PLANTS = {  # plant -> its scenario file (same path, controller and start; plant parameters differ)
    "kinematic_bicycle": "quickstart.yaml",
    "unicycle": "plant_unicycle.yaml",
    "simple_car": "plant_simple_car.yaml",
    "ackermann3d": "plant_ackermann3d.yaml",
}
known = set(available_models())
runs = {}
for plant, file in PLANTS.items():
    if plant not in known:
        print(f"skipping {plant}: not registered (available: {', '.join(sorted(known))})")
        continue
    runs[plant] = run_scenario(scenario(file, args))
print(HEADER)
for plant, r in runs.items():
    print(row(plant, r))

fig = new_figure(figsize=(13, 8), layout="constrained")
axes = fig.subplot_mosaic([["map", "ey"], ["map", "v"]], width_ratios=(1.2, 1.0))
plot_path(next(iter(runs.values())).path, ax=axes["map"])
for plant, r in runs.items():
    axes["map"].plot(r.x, r.y, lw=1.2, label=plant)
    axes["ey"].plot(r.t, r.e_y, lw=1.0, label=plant)
    axes["v"].plot(r.t, r.v, lw=1.0, label=plant)
axes["map"].legend(loc="upper right", fontsize=8)
axes["ey"].set_ylabel("e_y [m]")
axes["v"].set_ylabel("v [m/s]")
axes["v"].set_xlabel("t [s]")
axes["ey"].legend(fontsize=8)
save(fig, args, "plant_comparison.png")
