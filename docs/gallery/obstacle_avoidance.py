"""
Obstacle avoidance: planning around cones and a parked car
==========================================================

Obstacles narrow the corridor and the MPC plans around them. First three circles placed on the
oval by the scenario (``demos/obstacles.yaml``); then the bundled ``hairpin_slalom`` course,
whose path file carries its own cones and a block, so the MPC has to pick a gap and keep it over
the horizon. The car (a rectangle about its rear axle) and its safety ellipse are drawn at the
passing instants; the predicted horizon in orange.

Your own obstacle source: any object with ``bounds(s, t=None, e_y0=None) -> (lb, ub)`` (free
space in e_y along the path) can be given to ``SpatialMPC(path, vehicle, settings, corridor=...)``;
see :mod:`mpc_tracking.environment`.

A notebook that runs as downloaded; as a script: ``python demos/obstacle_avoidance.py``.
"""

# %%
# The scenario
# ------------
import os

import numpy as np

import mpc_tracking as mt
from mpc_tracking.viz.plotting import scenario_obstacles

T_MAX = float(os.environ.get("MPC_TRACKING_DEMO_T_MAX", 0)) or None  # [s]; None: the whole lap

SCENARIOS = {
    "obstacles.yaml": {
        "name": "obstacles",
        "path": {"source": "oval", "ds": 0.5},
        "plant": {"name": "kinematic_bicycle"},
        "environment": {"obstacles": [
            {"type": "circle", "center": [0.0, -19.5], "radius": 1.5, "name": "cone group 1"},
            {"type": "circle", "center": [50.0, 2.0], "radius": 1.2, "name": "parked car"},
            {"type": "circle", "center": [-10.0, 21.0], "radius": 1.5, "name": "cone group 2"},
        ]},
        "controller": {"solver": "daqp", "horizon": 40, "v_max": 10.0, "a_y_max": 4.0, "accel_max": 3.0,
                       "decel_max": 5.0, "delta_rate_max": 0.8, "corridor_margin": 0.3},
        "simulation": {"laps": 1},
    },
}
obstacles = mt.load_scenario(SCENARIOS["obstacles.yaml"]).with_overrides({"simulation.t_max": T_MAX})


def passing_instants(result) -> list[int]:
    """Control steps where the car is closest to each obstacle (circles: centre; polygons: mean vertex)."""
    xy = np.column_stack([result.x, result.y])
    out = set()
    for ob in scenario_obstacles(result):
        c = np.asarray(ob["center"] if ob.get("center") is not None else np.mean(ob["points"], axis=0))
        out.add(int(np.argmin(np.hypot(*(xy - c).T))))
    return sorted(out)


# %%
# Three circles on the oval
# -------------------------
result = mt.run_scenario(obstacles)
print(result.summary())
circles = result.plot("track", instants=passing_instants(result))

# %%
circles_timeseries = result.plot("timeseries")

# %%
# The slalom course
# -----------------
# The same controller on ``hairpin_slalom``, whose path file brings its own obstacles.
slalom = obstacles.with_overrides({"path.source": "hairpin_slalom", "environment.obstacles": [],
                                   "controller.v_max": 8.0})
result = mt.run_scenario(slalom)
print(f"{result.path.name}: {len(scenario_obstacles(result))} obstacles")
print(result.summary())
slalom_track = result.plot("track", instants=passing_instants(result))
