"""
Obstacle avoidance: circles on the oval, a slalom course
========================================================

Obstacles narrow the corridor and the MPC plans around them. Part 1: three circles placed on
the oval by the scenario file ``demos/obstacles.yaml``. Part 2: the bundled ``hairpin_slalom``
course, whose path file carries its own cones and a block, so the MPC has to pick a gap and keep
it over the horizon. The car (rectangle about its rear axle) and its safety ellipse are drawn at
the passing instants, the predicted horizon in orange.

Run it yourself with ``python demos/obstacle_avoidance.py``; obstacles, moving obstacles and
occupancy grids from Python are in :doc:`/guide/paths`.
"""

# %%
# Run the demo
# ------------
from _demo_runner import run_demo

run_demo("obstacle_avoidance")  # python demos/obstacle_avoidance.py

# %%
# Source
# ------
# :download:`demos/obstacle_avoidance.py <../../demos/obstacle_avoidance.py>` (the script itself; the downloads below
# are this page's wrapper).
#
# .. literalinclude:: ../../demos/obstacle_avoidance.py
#    :language: python
