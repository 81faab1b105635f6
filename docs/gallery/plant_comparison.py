"""
Plant comparison: the same controller on four plants
====================================================

The quickstart scenario (same path, controller and start) driven by each built-in plant: the
kinematic bicycle, the second-order unicycle (through its ``unicycle_pi`` actuator), the simple
car and the 3D rigid-body Ackermann car (``sedan`` preset, slipping tyres, wheel-torque speed
control). The controller only sees the pose projected onto the path, so the differences are
what the kinematic prediction model does not know about each plant.

Run it yourself with ``python demos/plant_comparison.py``; one plant from the command line:
``mpc-tracking run demos/plant_ackermann3d.yaml`` (see :doc:`/guide/plants`).
"""

# %%
# Run the demo
# ------------
# One row per plant (outcome, lap time, RMS and max lateral error in cm, mean speed, median and
# 95th-percentile solve time in ms), then the driven lines, lateral errors and speeds.
from _demo_runner import run_demo

run_demo("plant_comparison")  # python demos/plant_comparison.py

# %%
# Source
# ------
# :download:`demos/plant_comparison.py <../../demos/plant_comparison.py>` (the script itself; the downloads below
# are this page's wrapper).
#
# .. literalinclude:: ../../demos/plant_comparison.py
#    :language: python
