"""
Quickstart: one lap of the oval
===============================

Loads the scenario file ``demos/quickstart.yaml`` (the bundled ``oval``, a kinematic bicycle,
tracking mode, horizon 30, start 1 m left of the centre line), runs it, prints the summary,
writes the track and time-series figures, saves the run as ``result.npz`` and renders an
animation at twice real time.

Run it yourself with ``python demos/quickstart.py`` (``--t-max 5`` for a 5 s smoke run); the
same scenario from the command line is ``mpc-tracking run demos/quickstart.yaml``.
"""

# %%
# Run the demo
# ------------
# The summary (outcome, lap time, lateral error, solve times, real-time overruns, track edge)
# is :meth:`~mpc_tracking.results.SimulationResult.summary`; the figures are
# :func:`~mpc_tracking.viz.plotting.plot_track`, :func:`~mpc_tracking.viz.plotting.plot_timeseries`
# and :func:`~mpc_tracking.viz.animation.animate`.
from _demo_runner import run_demo

run_demo("quickstart")  # python demos/quickstart.py

# %%
# Source
# ------
# :download:`demos/quickstart.py <../../demos/quickstart.py>` (the script itself; the downloads below
# are this page's wrapper); ``demos/_common.py`` holds the options ``--t-max`` and ``--out`` shared
# by all demos.
#
# .. literalinclude:: ../../demos/quickstart.py
#    :language: python
