"""
Race track: a full-size circuit with its real widths
====================================================

A full-size car on the bundled full-size circuit (``demos/race_track.yaml`` with the circuit
swapped in, the oval when the installation has none), with the path's forward-backward speed
profile, the track and time-series figures, the path overview (curvature, speed limit, widths)
and an animation whose view follows the car.

Run it yourself with ``python demos/race_track.py`` (``--track NAME_OR_FILE`` for another
track; ``mpc-tracking path list`` lists the bundled ones).
"""

# %%
# Run the demo
# ------------
from _demo_runner import run_demo

run_demo("race_track")  # python demos/race_track.py

# %%
# Source
# ------
# :download:`demos/race_track.py <../../demos/race_track.py>` (the script itself; the downloads below
# are this page's wrapper).
#
# .. literalinclude:: ../../demos/race_track.py
#    :language: python
