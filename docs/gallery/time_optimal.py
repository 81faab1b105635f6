"""
Time-optimal mode against tracking
==================================

The same car on the same track twice (``demos/time_optimal.yaml``): once following the centre
line and the speed reference (``mode: tracking``), once minimising the predicted time
(``mode: time_optimal``), where the MPC trades lateral position for speed inside the corridor
and cuts the corners.

Run it yourself with ``python demos/time_optimal.py``; from the command line
``mpc-tracking run demos/time_optimal.yaml`` (see :doc:`/guide/controller`).
"""

# %%
# Run the demo
# ------------
from _demo_runner import run_demo

run_demo("time_optimal")  # python demos/time_optimal.py

# %%
# Source
# ------
# :download:`demos/time_optimal.py <../../demos/time_optimal.py>` (the script itself; the downloads below
# are this page's wrapper).
#
# .. literalinclude:: ../../demos/time_optimal.py
#    :language: python
