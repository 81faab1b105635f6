"""
Horizon comparison: accuracy against solve time
===============================================

The quickstart scenario, started on the line and driven faster (``v_max`` 16 m/s, ``a_y_max``
6 m/s²), with prediction horizons N = 5, 10, 20 and 40 steps of 0.5 m. Too short a horizon
cannot see the bends coming; a longer one costs solve time.

Run it yourself with ``python demos/horizon_comparison.py``; for a whole grid of horizons (and
any other setting) on all cores or a Dask cluster see :doc:`/guide/sweeps`.
"""

# %%
# Run the demo
# ------------
from _demo_runner import run_demo

run_demo("horizon_comparison")  # python demos/horizon_comparison.py

# %%
# Source
# ------
# :download:`demos/horizon_comparison.py <../../demos/horizon_comparison.py>` (the script itself; the downloads below
# are this page's wrapper).
#
# .. literalinclude:: ../../demos/horizon_comparison.py
#    :language: python
