"""Figures and animations: :mod:`mpc_tracking.viz.plotting` (static) and :mod:`mpc_tracking.viz.animation`.

Nothing is imported here, so that ``import mpc_tracking`` does not pay for matplotlib.
"""
