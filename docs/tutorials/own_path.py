"""
.. _tutorial-own-path:

Track your own path
===================

You have the centre line of a track as x/y points -- a CSV file from a GPS logger or a map, or
two NumPy arrays -- and no track widths. This tutorial turns them into a
:class:`~mpc_tracking.paths.ReferencePath`, builds a :class:`~mpc_tracking.mpc.SpatialMPC` for
it, drives a simulated car around it with :func:`~mpc_tracking.simulation.simulate` and looks
at the result. Every step is one or two calls of the public API (``import mpc_tracking as mt``);
the page was produced by running this script.

The file used here, :download:`my_track.csv <../tutorials/my_track.csv>`, is a GPS-like trace
of a 229 m loop: 120 points about 1.9 m apart with 5 cm of noise, one ``x,y`` pair per line (in
metres) under a ``# x,y`` comment. It is in this page's zip download (with the ``.py`` and the
``.ipynb``); the first cell below writes the same file when it is missing, so the script and the
notebook also run on their own.

Put your own file in its place: comma, semicolon or whitespace separated columns ``x, y``,
optionally followed by ``w_right, w_left`` (track widths in metres).
"""

# %%
# The points
# ----------
# Skip this cell when you have your own ``my_track.csv``: it makes the tutorial's file.
from pathlib import Path

import numpy as np

import mpc_tracking as mt
from mpc_tracking.viz.plotting import plot_path_view

if not Path("my_track.csv").exists():
    rng = np.random.default_rng(1)
    t = np.linspace(0, 2 * np.pi, 120, endpoint=False)
    x = 45 * np.cos(t) + 8 * np.cos(2 * t) + rng.normal(0, 0.05, t.size)
    y = 25 * np.sin(t) + 4 * np.sin(2 * t) + rng.normal(0, 0.05, t.size)
    np.savetxt("my_track.csv", np.column_stack([x, y]), delimiter=",", header="x,y", fmt="%.3f")

# %%
# Load the points
# ---------------
# :func:`~mpc_tracking.paths.load_path` reads the table and resamples the centre line every
# ``ds`` metres (here 0.5 m). Whether the points form a loop is decided from the data (the last
# point is back near the first), ``closed=True``/``False`` overrides it.
raw = mt.load_path("my_track.csv", ds=0.5)
print(raw.summary())

# %%
# A 1.6 m minimum radius on a 229 m loop is the noise: the spline goes through every point, so
# 5 cm of scatter every 1.9 m becomes curvature, and a car would be asked to turn tighter than
# it can. ``smoothing`` is the RMS distance [m] the centre line may move from the points; a
# value of about twice the noise irons it out. The summary
# (:meth:`~mpc_tracking.paths.ReferencePath.summary`; ``describe()`` gives the numbers as a
# dictionary) and ``fit_deviation`` tell how much the shape changed.
path = mt.load_path("my_track.csv", ds=0.5, smoothing=0.1)
print(path.summary())
print(f"largest distance from the input points: {path.fit_deviation:.2f} m")

# %%
# The path's curvature and the speed the controller will aim for (``v_max`` 12 m/s, at most
# 4 m/s² of lateral acceleration, so ``v <= sqrt(4 / |kappa|)`` in the bends); without widths
# the corridor is unbounded (:func:`~mpc_tracking.viz.plotting.plot_path_view`).
fig, axes = plot_path_view(path, v_max=12.0, a_y_max=4.0)

# %%
# The controller
# --------------
# :class:`~mpc_tracking.models.prediction.spatial_bicycle.VehicleParams` is the car as the controller sees
# it (wheelbase 2.7 m, a 4.5 m x 1.8 m body by default);
# :class:`~mpc_tracking.mpc.MPCSettings` holds the horizon (30 steps of ``ds``), the limits
# and the weights, and is checked when it is built. The
# :class:`~mpc_tracking.mpc.SpatialMPC` sets up its quadratic program once, for this path.
vehicle = mt.VehicleParams()
settings = mt.MPCSettings(horizon=30, v_max=12.0, a_y_max=4.0, accel_max=3.0, decel_max=5.0)
mpc = mt.SpatialMPC(path, vehicle, settings)

# %%
# Simulate one lap
# ----------------
# The plant is the simulated car; here a kinematic bicycle with the same wheelbase
# (:doc:`/guide/plants` lists the others). The car starts 0.5 m left of the line.
plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
result = mt.simulate(path, mpc, plant, laps=1, e_y0=0.5)
print(result.summary())

# %%
# :meth:`~mpc_tracking.results.SimulationResult.plot` draws the run: ``"track"`` is the plan
# view (trajectory coloured by speed, the car and its predicted horizon at a few instants),
# ``"timeseries"`` the errors, speed, steering and solver over time. Each returns
# ``(fig, ax)``; save a figure with ``fig.savefig("track.png")``.
fig, ax = result.plot("track")

# %%
fig, axes = result.plot("timeseries")

# %%
# ``result.animate()`` is the lap as an animation: in a notebook it plays inline (an HTML5
# video, or a JavaScript player without ffmpeg); ``animation.save("my_lap.gif")`` writes a file.
animation = result.animate(speed=3.0, dpi=60)
animation  # noqa: B018 (the last expression of a cell is shown)

# %%
# The numbers behind the summary are in ``result.metrics``, the logged signals in
# ``result.t``, ``result.e_y``, ``result.v``, ... (one sample per control step) or, with pandas
# installed, ``result.to_pandas()`` (see :doc:`/guide/notebooks`).
m = result.metrics
print(f"lap {result.lap_times[0]:.2f} s, RMS e_y {m['rms_e_y'] * 100:.1f} cm, "
      f"mean speed {m['mean_speed']:.1f} m/s, {len(result)} control steps")

# %%
# From arrays, with track widths
# ------------------------------
# The same from NumPy arrays: :class:`~mpc_tracking.paths.ReferencePath` takes the points
# directly. Here an open path -- a straight, an S-bend and a straight -- that the car drives
# to its end. Giving ``width_left`` and ``width_right`` (metres from the centre line, a number
# or one value per point) adds a corridor: the controller keeps the whole body of the car
# inside it (a soft constraint), and the summary reports how far the body ever went past the
# track edge.
s = np.linspace(0.0, 120.0, 241)
x = s
y = 3.0 * np.tanh((s - 40.0) / 8.0) - 3.0 * np.tanh((s - 80.0) / 8.0)
lane = mt.ReferencePath(x, y, ds=0.5, width_left=2.5, width_right=2.5, name="s_bend")
print(lane)

mpc = mt.SpatialMPC(lane, vehicle, mt.MPCSettings(horizon=30, v_max=12.0, a_y_max=4.0))
plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
result = mt.simulate(lane, mpc, plant, e_y0=1.0)
print(result.summary())
fig, ax = result.plot("track")

# %%
# Next steps
# ----------
# * The same run as a file: a scenario with ``path: {source: my_track.csv, ds: 0.5,
#   smoothing: 0.1}`` (:doc:`/guide/scenarios`), then ``mpc-tracking run my_scenario.yaml``.
# * Corner points instead of a dense line, speed profiles, obstacles and occupancy grids:
#   :doc:`/guide/paths`.
# * Faster or slipping cars, the time-optimal mode and the dynamic prediction model:
#   :doc:`/guide/controller` and :doc:`/guide/plants`.
