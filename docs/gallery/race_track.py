"""
Race track: a full-size car at speed
====================================

A full-size car on a race track with its real (varying) widths, a speed profile from the path's
curvature, and an animation whose view follows the car. This page drives the bundled full-size
circuit when the installation has one (``mpc-tracking path list``), else the oval.

A notebook that runs as downloaded; as a script: ``python demos/race_track.py``
(``--track NAME_OR_FILE`` for another track).
"""

# %%
# The scenario
# ------------
# At 40 m/s a 50 ms control period covers 2 m, so the controller plans one input per command
# with ``ds`` = 2 m; horizon 20 x 2 m keeps a 40 m look-ahead.
import os

import mpc_tracking as mt
from mpc_tracking.paths.bundled import list_bundled
from mpc_tracking.viz.plotting import plot_path_view

T_MAX = float(os.environ.get("MPC_TRACKING_DEMO_T_MAX", 0)) or None  # [s]; None: the whole lap

SCENARIOS = {
    "race_track.yaml": {
        "name": "race_track",
        "path": {"source": "oval", "ds": 1.0, "smoothing": 0.1},
        "plant": {"name": "kinematic_bicycle"},
        "controller": {"horizon": 20, "ds": 2.0, "v_max": 40.0, "a_y_max": 7.0, "accel_max": 4.0,
                       "decel_max": 8.0, "delta_rate_max": 0.8, "corridor_margin": 0.3},
        "simulation": {"laps": 1},
    },
}
circuits = [n for n in list_bundled() if any(w in n.lower() for w in ("circuit", "race", "grand_prix", "gp"))]
track = circuits[0] if circuits else "oval"
scenario = mt.load_scenario(SCENARIOS["race_track.yaml"]).with_overrides(
    {"path.source": track, "speed_profile.enabled": True, "simulation.t_max": T_MAX})

# %%
# One lap
# -------
result = mt.run_scenario(scenario)
print(f"{result.path.name}: {result.path.length:.0f} m")
print(result.summary())
track_view = result.plot("track", instants=[])

# %%
timeseries = result.plot("timeseries")

# %%
# The path's curvature, speed profile and widths
path_view = plot_path_view(result.path, v_max=scenario.controller.v_max, a_y_max=scenario.controller.a_y_max)

# %%
# The animation
# -------------
# A view that follows the car, at four times real time; in a notebook it plays inline.
animation = result.animate(fps=15, speed=4.0, dpi=60)
animation  # noqa: B018 (the last expression of a cell is shown)
