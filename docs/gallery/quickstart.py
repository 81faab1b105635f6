"""
Quickstart: one lap of the oval
===============================

The scenario of ``demos/quickstart.yaml``: the bundled ``oval``, a kinematic bicycle, tracking
mode, horizon 30, starting 1 m left of the centre line. Run it, print the summary, draw the
track and the time series, save the run and animate it at twice real time.

This page is a notebook: download it (below) and run it wherever mpc_tracking is installed --
it needs no file of this repository. The same as a script is ``python demos/quickstart.py``, and
from the command line ``mpc-tracking run demos/quickstart.yaml``.
"""

# %%
# The scenario
# ------------
# The sections and keys of the scenario file, as a dictionary
# (:func:`~mpc_tracking.scenario.load_scenario` takes either; :doc:`/guide/scenarios`).
# ``T_MAX`` cuts the simulated time short when the environment sets ``MPC_TRACKING_DEMO_T_MAX``
# (the demos' ``--t-max``); unset, the car drives the whole lap.
import os

import mpc_tracking as mt

T_MAX = float(os.environ.get("MPC_TRACKING_DEMO_T_MAX", 0)) or None  # [s]; None: the whole lap

SCENARIOS = {
    "quickstart.yaml": {
        "name": "quickstart",
        "path": {"source": "oval", "ds": 0.5},
        "vehicle": {"preset": "car"},
        "plant": {"name": "kinematic_bicycle", "params": {}},
        "controller": {"horizon": 30, "mode": "tracking", "v_max": 12.0, "a_y_max": 4.0, "accel_max": 3.0,
                       "decel_max": 5.0, "delta_rate_max": 0.6},
        "simulation": {"laps": 1, "e_y0": 1.0},
    },
}
scenario = mt.load_scenario(SCENARIOS["quickstart.yaml"]).with_overrides({"simulation.t_max": T_MAX})

# %%
# Run it
# ------
# :func:`~mpc_tracking.scenario.run_scenario` builds the path, the controller and the plant and
# drives the closed loop; :meth:`~mpc_tracking.results.SimulationResult.summary` tells how it went.
result = mt.run_scenario(scenario)
print(result.summary())

# %%
# The figures
# -----------
# :meth:`~mpc_tracking.results.SimulationResult.plot` returns ``(fig, ax)``; as the last line of a
# notebook cell it shows the figure, ``fig.savefig("track.png")`` writes it.
track = result.plot("track")

# %%
timeseries = result.plot("timeseries")

# %%
# Animate it
# ----------
# ``result.animate()`` without a file name is an animation that plays in the notebook;
# ``animation.save("quickstart.gif")`` (or ``.mp4``) writes it as a file. ``result.save("run.npz")``
# keeps the run itself: ``SimulationResult.load`` and ``mpc-tracking animate`` read it back.
animation = result.animate(speed=2.0, dpi=60)
animation  # noqa: B018 (the last expression of a cell is shown)
