"""The data of one control step of :class:`~mpc_tracking.mpc.controller.SpatialMPC`, as one object.

:meth:`SpatialMPC._prepare <mpc_tracking.mpc.controller.SpatialMPC>` turns a measurement into a
:class:`StepInput`; the QP is built from it (:meth:`SpatialMPC.build_qp`), the disturbance
observer learns from its measured part (:meth:`ModelDisturbance.observe
<mpc_tracking.mpc.disturbance.ModelDisturbance.observe>`), and when the solve fails the safeguards
plan the fallback from it (:class:`~mpc_tracking.mpc.safeguards.Safeguards`). The result of a step is an
:class:`~mpc_tracking.mpc.settings.MPCSolution`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpc_tracking.mpc.sampler import PathSample

__all__ = ["StepInput"]


@dataclass(eq=False, slots=True)
class StepInput:
    """One step's prediction grid, path sample, operating point and measurement.

    ``N`` is the horizon, ``nx``/``nu`` the prediction model's state/input sizes. The operating
    point ``x_op, u_op`` is replaced by the newest solution between re-linearizations
    (``MPCSettings.iterations`` > 1); everything else is fixed for the step.

    Attributes
    ----------
    x0 : ndarray, shape (nx,)
        The state the plan starts from (after the delay prediction, ``MPCSettings.delay``).
    x_op : ndarray, shape (N+1, nx)
        States of the operating point the model is linearized about; ``x_op[0] = x0``; its time
        column counts seconds from the grid's start.
    u_op : ndarray, shape (N, nu)
        Inputs of the operating point.
    u_ref : ndarray, shape (N, nu)
        Input reference (the speed reference [m/s] and the path's steering angle [rad]).
    x_ref : ndarray, shape (N+1, nx)
        The reference operating point (targets of the states beyond ``e_y, e_psi, t``).
    q : PathSample
        Path quantities on ``s_grid`` (curvature [1/m], widths [m], reference pose, speed ceilings).
    s_grid : ndarray, shape (N+1,)
        Arc lengths of the prediction grid [m], from ``s0`` in steps of ``ds`` (clamped at an
        open path's end).
    e_y_limit : ndarray, shape (N+1,)
        Largest ``|e_y|`` [m] the operating point may have (95 % of the radius of curvature).
    s0 : float
        Arc length [m] the grid starts at (after the delay prediction).
    t : float
        Time of the measurement [s] (moving obstacles are evaluated at ``t`` + predicted time).
    s_measured : float
        Measured arc length [m], before the delay prediction.
    x_measured : ndarray, shape (nx,)
        Measured state, before the delay prediction (the disturbance observer's input; a copy).
    v_measured : float or None
        The car's measured speed [m/s] (``measured["speed"]``), None when the caller did not pass
        it (the safe stop then starts from the last command).
    """

    x0: np.ndarray
    x_op: np.ndarray
    u_op: np.ndarray
    u_ref: np.ndarray
    x_ref: np.ndarray
    q: PathSample
    s_grid: np.ndarray
    e_y_limit: np.ndarray
    s0: float
    t: float
    s_measured: float
    x_measured: np.ndarray
    v_measured: float | None = None
