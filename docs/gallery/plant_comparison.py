"""
Plant comparison: four simulated cars, one controller
=====================================================

The same scenario (controller, path, start 1 m off the line) driven by the four plants --
kinematic bicycle, unicycle, simple car and the 3D Ackermann car (sedan preset). The MPC never
sees the plant's internals, only the pose projected onto the path. Plants that are not
registered in this installation are skipped with a message.

A notebook that runs as downloaded; as a script: ``python demos/plant_comparison.py``.
"""

# %%
# The scenarios
# -------------
# One per plant (``demos/quickstart.yaml`` and ``demos/plant_*.yaml``): the same path, controller
# and start; the plant and its parameters differ.
import os

import mpc_tracking as mt
from mpc_tracking.viz.plotting import new_figure, plot_path

T_MAX = float(os.environ.get("MPC_TRACKING_DEMO_T_MAX", 0)) or None  # [s]; None: the whole lap

_CONTROLLER = {"horizon": 30, "v_max": 12.0, "a_y_max": 4.0, "accel_max": 3.0, "decel_max": 5.0,
               "delta_rate_max": 0.6}
SCENARIOS = {
    "quickstart.yaml": {
        "name": "quickstart", "path": {"source": "oval", "ds": 0.5}, "vehicle": {"preset": "car"},
        "plant": {"name": "kinematic_bicycle", "params": {}},
        "controller": {**_CONTROLLER, "mode": "tracking"}, "simulation": {"laps": 1, "e_y0": 1.0},
    },
    "plant_unicycle.yaml": {
        "name": "plant_unicycle", "path": {"source": "oval", "ds": 0.5}, "plant": {"name": "unicycle", "params": {}},
        "controller": _CONTROLLER, "simulation": {"laps": 1, "e_y0": 1.0},
    },
    "plant_simple_car.yaml": {
        "name": "plant_simple_car", "path": {"source": "oval", "ds": 0.5},
        "plant": {"name": "simple_car", "params": {}}, "controller": _CONTROLLER,
        "simulation": {"laps": 1, "e_y0": 1.0},
    },
    "plant_ackermann3d.yaml": {
        "name": "plant_ackermann3d", "path": {"source": "oval", "ds": 0.5},
        "vehicle": {"wheelbase": 2.68, "length": 4.6, "width": 1.8, "rear_overhang": 0.95},
        "plant": {"name": "ackermann3d", "params": {"preset": "sedan"}}, "actuation": {"name": None},
        "controller": _CONTROLLER, "simulation": {"laps": 1, "e_y0": 1.0},
    },
}

# %%
# Drive each plant
# ----------------
known = set(mt.available_models())
runs = {}
for data in SCENARIOS.values():
    plant = data["plant"]["name"]
    if plant not in known:
        print(f"skipping {plant}: not registered (available: {', '.join(sorted(known))})")
        continue
    runs[plant] = mt.run_scenario(mt.load_scenario(data).with_overrides({"simulation.t_max": T_MAX}))
for plant, r in runs.items():
    m = r.metrics
    lap = f"{r.lap_times[0]:6.2f} s" if r.lap_times else "     -"
    print(f"{plant:<18} {m['reason']:<10} lap {lap}  RMS e_y {m['rms_e_y'] * 100:5.1f} cm  "
          f"max {m['max_abs_e_y'] * 100:5.1f} cm  median solve {m['solve_time_median'] * 1e3:.2f} ms")

# %%
# Trajectories, lateral error, speed
# ----------------------------------
fig = new_figure(figsize=(13, 8), layout="constrained")
axes = fig.subplot_mosaic([["map", "ey"], ["map", "v"]], width_ratios=(1.2, 1.0))
plot_path(next(iter(runs.values())).path, ax=axes["map"])
for plant, r in runs.items():
    axes["map"].plot(r.x, r.y, lw=1.2, label=plant)
    axes["ey"].plot(r.t, r.e_y, lw=1.0, label=plant)
    axes["v"].plot(r.t, r.v, lw=1.0, label=plant)
axes["map"].legend(loc="upper right", fontsize=8)
axes["ey"].set_ylabel("e_y [m]")
axes["ey"].legend(fontsize=8)
axes["v"].set(xlabel="t [s]", ylabel="v [m/s]")
fig  # noqa: B018 (the last expression of a cell is shown)
