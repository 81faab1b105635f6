"""What the controller does when the QP cannot be trusted: the rejoin mode, the check of a
"solved" solution against its own constraints, and the fallback to the previous plan then a
safe stop. :class:`Safeguards` is a component of :class:`~mpc_tracking.mpc.controller.SpatialMPC`
(``mpc.safeguards``) that owns this state: the last solved plan, the count of failed steps, the
rejoin flag and the safe stop's speed ramp.

The safe stop brakes at ``brake_decel`` from the moment it starts, whatever the car's lag: it keeps
its own commanded-speed ramp, which starts at the lower of the measured speed and the last command
(never above ``v_max``) and falls by ``brake_decel * control_period`` every step, never rising.
(A command recomputed from the measured speed every step would follow a lagging car down only as
fast as the car's own lag lets it, and could even rise with it.)
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

import numpy as np
from scipy import sparse

from mpc_tracking.models.prediction import PredictionModel
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.mpc import kernels
from mpc_tracking.mpc.layout import QPData
from mpc_tracking.mpc.rejoin import ENTER_EPSI, ENTER_EY_KAPPA, back_in_domain, outside_domain, pure_pursuit
from mpc_tracking.mpc.sampler import PathSample, PathSampler
from mpc_tracking.mpc.settings import MPCSettings, MPCSolution, Status
from mpc_tracking.mpc.step import StepInput
from mpc_tracking.paths.geometry import offset_point
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["Safeguards", "safe_stop_speed"]

logger = logging.getLogger("mpc_tracking.mpc.controller")  # messages read as the controller's

#: the previous plan moved onto a new grid: ``shift(plan, s_grid (N+1,)) -> (x (N+1, nx), u (N, nu))``
ShiftPlan = Callable[[MPCSolution, np.ndarray], tuple[np.ndarray, np.ndarray]]


def safe_stop_speed(ramp: float | None, v_measured: float | None, v_command: float | None, v_max: float,
                    brake_decel: float, period: float) -> float:
    """The safe stop's next speed command [m/s] on its ramp.

    Parameters
    ----------
    ramp : float or None
        The ramp's last command [m/s]; None when the stop starts now.
    v_measured : float or None
        The car's measured speed [m/s] (used only when the stop starts).
    v_command : float or None
        The last command sent to the car [m/s] (used only when the stop starts).
    v_max : float
        Speed limit [m/s]; the ramp never starts above it.
    brake_decel : float
        Deceleration of the ramp [m/s^2].
    period : float
        Control period [s].

    Returns
    -------
    float
        ``max(0, start - brake_decel * period)``, with ``start`` the ramp's last command, or when
        the stop starts the lowest of ``v_measured``, ``v_command`` and ``v_max`` (0 without either).

    Examples
    --------
    A car that lags its command (measured 9 m/s, last command 10 m/s) brakes from 9 m/s:

    >>> round(safe_stop_speed(None, 9.0, 10.0, 12.0, 3.0, 0.05), 6)
    8.85
    >>> round(safe_stop_speed(8.85, 11.0, None, 12.0, 3.0, 0.05), 6)  # then down the ramp, whatever it measures
    8.7
    """
    if ramp is None:
        known = [v for v in (v_measured, v_command) if v is not None]
        ramp = min(min(known), v_max) if known else 0.0
    return max(0.0, float(ramp) - brake_decel * period)


class Safeguards:
    """Rejoin, solution check and fallback of :class:`~mpc_tracking.mpc.controller.SpatialMPC`.

    Parameters
    ----------
    settings : MPCSettings
        ``max_fallback_steps``, ``brake_decel``, ``control_period``, ``v_max``, ``delta_max``,
        ``eps_abs``/``eps_rel`` (the solution check's tolerance) and the rejoin's limits.
    model : PredictionModel
        The controller's prediction model (its indices, commands and stop input).
    path : ReferencePath
    vehicle : VehicleParams
        ``wheelbase`` [m] (the rejoin's turning radius).
    sampler : PathSampler
        Path quantities on the prediction grid (the curvature at the car).
    check_matrix : scipy.sparse.csc_matrix, shape (m, n)
        A constraint matrix of the QP's pattern; its data is overwritten by each check.
    shift_plan : callable
        ``shift_plan(plan, s_grid) -> (x (N+1, nx), u (N, nu))``: the last plan moved onto a new
        prediction grid (the controller's real-time-iteration shift).

    Attributes
    ----------
    last_plan : MPCSolution or None
        The last solved plan (None before the first and after a rejoin).
    fail_count : int
        Consecutive failed steps (0 after a solved one).
    rejoining : bool
        True while the car is steered back to the path geometrically (:mod:`mpc_tracking.mpc.rejoin`).
    stop_speed : float or None
        The safe stop's last speed command [m/s] (its ramp); None when not stopping.
    """

    def __init__(self, settings: MPCSettings, model: PredictionModel, path: ReferencePath, vehicle: VehicleParams,
                 sampler: PathSampler, check_matrix: sparse.csc_matrix, shift_plan: ShiftPlan) -> None:
        self.settings = settings
        self.model = model
        self.path = path
        self.vehicle = vehicle
        self._sampler = sampler
        self._A_check = check_matrix
        # the check in one compiled call (settings.compiled; the matrix's int32 CSC index arrays as they are)
        compiled = kernels.resolve(settings.compiled) == "numba" and check_matrix.indices.dtype == np.int32
        self._kernels = kernels.load() if compiled and check_matrix.indptr.dtype == np.int32 else None
        self._Az = np.empty(check_matrix.shape[0])
        self._shift_plan = shift_plan
        self._kappa_max = float(np.max(np.abs(path.kappa)))
        self._r_min = float(vehicle.wheelbase / np.tan(settings.delta_max))
        self.last_plan: MPCSolution | None = None
        self.fail_count = 0
        self.rejoining = False
        self.stop_speed: float | None = None

    def reset(self) -> None:
        """Forget the last plan, the failures, the rejoin and the safe stop (e.g. before a new run)."""
        self.last_plan = None
        self.fail_count = 0
        self.rejoining = False
        self.stop_speed = None

    def solved(self, plan: MPCSolution) -> None:
        """Record a solved step: its plan is the one to fall back on; failures and a stop end."""
        self.last_plan = plan
        self.fail_count = 0
        self.stop_speed = None

    # ------------------------------------------------------------------ rejoin
    def needs_rejoin(self, s0: float, e_y: float, e_psi: float, step: int) -> bool:
        """Enter/leave the geometric rejoin mode (with hysteresis, see :mod:`mpc_tracking.mpc.rejoin`)
        for the car at arc length ``s0`` [m], lateral error ``e_y`` [m], heading error ``e_psi`` [rad]."""
        if not (math.isfinite(s0) and math.isfinite(e_y) and math.isfinite(e_psi)):
            return False  # the controller's input check reports it
        if not self.rejoining and abs(e_psi) < ENTER_EPSI and abs(e_y) * self._kappa_max < ENTER_EY_KAPPA:
            return False  # the everyday case, without a path lookup
        kappa = float(self._sampler.sample(np.array([float(s0)])).kappa[0])
        if self.rejoining:
            self.rejoining = not back_in_domain(float(e_y), float(e_psi), kappa, e_y_max=self._r_min)
            if not self.rejoining:
                logger.info("MPC step %d: back in the spatial model's domain (e_y = %.2f m, e_psi = %.2f rad); "
                            "the MPC takes over", step, e_y, e_psi)
        elif outside_domain(float(e_y), float(e_psi), kappa):
            self.rejoining = True
            logger.warning("MPC step %d: outside the spatial model's domain (e_y = %.2f m, e_psi = %.2f rad, "
                           "e_y kappa = %.2f); steering back to the path by pure pursuit", step, e_y, e_psi,
                           e_y * kappa)
        return self.rejoining

    def rejoin(self, s0: float, e_y: float, e_psi: float, s_grid: np.ndarray, q: PathSample,
               delta_prev: float | None, t_start: float) -> MPCSolution:
        """One step of the geometric approach on the grid ``s_grid`` (N+1,) [m] with its path sample
        ``q``; the last plan is forgotten (the MPC restarts from the reference)."""
        st, m = self.settings, self.model
        v, delta = pure_pursuit(self.path, self.vehicle, st, s0=float(s0), e_y=float(e_y), e_psi=float(e_psi),
                                delta_prev=delta_prev)
        self.last_plan, self.fail_count, self.stop_speed = None, 0, None
        N = s_grid.size - 1
        u_pred = np.tile(m.stop_input(v, delta, st), (N, 1))
        return MPCSolution(
            v=v, delta=delta, status=Status.REJOIN, solver_status="rejoin (pure pursuit)", success=False,
            iterations=0, solve_time=0.0, step_time=time.perf_counter() - t_start, s=s_grid,
            x=np.full((N + 1, m.nx), np.nan), u=u_pred, xy=np.column_stack([q.x, q.y]),
            corridor_violation=float("nan"), fallback_steps=0,
        )

    # ------------------------------------------------------------------ solution check
    def check_solution(self, d: QPData, z: np.ndarray) -> tuple[int, float] | None:
        """``(row, amount)`` of the worst violated constraint ``l <= A z <= u`` beyond tolerance, else None.

        The rows are the dynamics (equalities), input bounds and rates, corridor rows with their
        slacks. The tolerance is 100x OSQP's own (absolute and relative), so an accurate or
        "inaccurate" solution passes and a corrupted one (garbage or NaN "solved") does not.
        """
        A = self._A_check
        st = self.settings
        if self._kernels is not None:  # the same numbers in one compiled call
            i, e, scale = kernels.constraint_excess(self._kernels, A.indptr, A.indices, d.A_data,
                                                    np.ascontiguousarray(z, dtype=float), d.l, d.u, self._Az)
            return None if e <= 100.0 * (st.eps_abs + st.eps_rel * scale) else (i, e)
        np.copyto(A.data, d.A_data)
        Az = A @ z
        scale = max(float(np.max(np.abs(Az))), float(np.max(np.abs(z))), 1.0)
        tol = 100.0 * (st.eps_abs + st.eps_rel * scale)
        excess = np.maximum(d.l - Az, Az - d.u)
        i = int(np.argmax(excess))
        return None if excess[i] <= tol else (i, float(excess[i]))  # NaN: a violation

    # ------------------------------------------------------------------ fallback
    def fallback(self, step: StepInput, solver_status: str, iters: int, solve_time: float, t_start: float,
                 last_command: np.ndarray | None) -> MPCSolution:
        """Reuse the last plan (shifted onto this step's grid) for at most ``max_fallback_steps``
        steps, then brake to a safe stop on the ramp of :func:`safe_stop_speed`, the wheel held.

        ``last_command`` is the command ``(v [m/s], delta [rad])`` sent at the previous step.
        """
        st, m = self.settings, self.model
        self.fail_count += 1
        prev = self.last_plan
        s_grid, q = step.s_grid, step.q
        if prev is not None and self.fail_count <= st.max_fallback_steps:
            x_pred, u_pred = self._shift_plan(prev, s_grid)
            status = Status.FALLBACK
            v, delta = m.command(x_pred, u_pred)
        else:
            status = Status.SAFE_STOP
            v_cmd, delta = (None, 0.0) if last_command is None else (float(last_command[0]), float(last_command[1]))
            # never more braking than the limits allow (with grip estimation: the estimated grip's)
            v = self.stop_speed = safe_stop_speed(self.stop_speed, step.v_measured, v_cmd, st.v_max,
                                                  min(st.brake_decel, st.decel_max), st.control_period)
            x_pred = np.full((s_grid.size, m.nx), np.nan)
            u_pred = np.tile(m.stop_input(v, delta, st), (s_grid.size - 1, 1))
        e = np.nan_to_num(x_pred[:, m.I_EY])
        xy = offset_point(q.x, q.y, q.psi, e)
        return MPCSolution(
            v=v,
            delta=delta,
            status=status,
            solver_status=str(solver_status),
            success=False,
            iterations=iters,
            solve_time=solve_time,
            step_time=time.perf_counter() - t_start,
            s=s_grid,
            x=x_pred,
            u=u_pred,
            xy=xy,
            corridor_violation=float("nan"),
            fallback_steps=self.fail_count,
        )
