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

The safe stop steers along the path while it brakes (:func:`stop_steering`): pure pursuit of the
point one second of travel ahead on the line, its curvature capped so that the lateral
acceleration ``v^2 kappa`` stays within what the limits leave beside the braking
(:func:`stop_accelerations`; with grip estimation these are the estimated grip's). A stop that
held the wheel where the failure found it went straight on where the path turned, or kept a
corner's lock onto the next straight.
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
from mpc_tracking.mpc.rejoin import (
    ENTER_EPSI,
    ENTER_EY_KAPPA,
    back_in_domain,
    outside_domain,
    pure_pursuit,
    pursuit_angle,
)
from mpc_tracking.mpc.sampler import PathSample, PathSampler
from mpc_tracking.mpc.settings import MPCSettings, MPCSolution, Status
from mpc_tracking.mpc.step import StepInput
from mpc_tracking.paths.geometry import offset_point
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["STOP_LATERAL_SHARE", "STOP_LOOKAHEAD_TIME", "Safeguards", "safe_stop_speed", "stop_accelerations",
           "stop_steering"]

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


#: look-ahead of the safe stop's steering [s of travel at the car's speed]
STOP_LOOKAHEAD_TIME = 1.0
#: share of ``a_y_max`` the safe stop keeps for steering when the limits are a friction ellipse (its braking is
#: lowered to ``sqrt(1 - share^2) decel_max`` at most, so that the two together stay on the ellipse)
STOP_LATERAL_SHARE = 0.6


def stop_accelerations(settings: MPCSettings) -> tuple[float, float]:
    """The safe stop's braking and the lateral acceleration left for its steering [m/s^2].

    Parameters
    ----------
    settings : MPCSettings
        ``brake_decel``, ``decel_max``, ``a_y_max`` and ``friction_ellipse`` (with grip estimation: the
        limits scaled to the estimated grip).

    Returns
    -------
    (brake, lateral) : tuple of float
        ``brake = min(brake_decel, decel_max)`` and ``lateral = a_y_max``; with ``friction_ellipse`` and a
        finite ``decel_max`` the pair lies on the ellipse with semi-axes ``(decel_max, a_y_max)``, the braking
        at most ``sqrt(1 - STOP_LATERAL_SHARE^2) decel_max`` so that at least ``STOP_LATERAL_SHARE a_y_max``
        is left for the steering.

    Examples
    --------
    >>> import mpc_tracking as mt
    >>> stop_accelerations(mt.MPCSettings(brake_decel=3.0, a_y_max=6.0))
    (3.0, 6.0)
    >>> b, lat = stop_accelerations(mt.MPCSettings(brake_decel=3.0, a_y_max=6.0, decel_max=5.0,
    ...                                            friction_ellipse=True))
    >>> b, round(lat, 6)  # (3/5)^2 + (4.8/6)^2 = 1
    (3.0, 4.8)
    """
    brake = min(settings.brake_decel, settings.decel_max)
    lateral = settings.a_y_max
    if settings.friction_ellipse and math.isfinite(settings.decel_max):
        brake = min(brake, math.sqrt(1.0 - STOP_LATERAL_SHARE**2) * settings.decel_max)
        lateral *= math.sqrt(max(0.0, 1.0 - (brake / settings.decel_max) ** 2))
    return brake, lateral


def stop_steering(path: ReferencePath, wheelbase: float, settings: MPCSettings, *, s0: float, e_y: float,
                  e_psi: float, speed: float, lateral: float, delta_prev: float | None) -> float:
    """The safe stop's steering angle [rad]: pure pursuit of the path within the lateral grip left.

    Parameters
    ----------
    path : ReferencePath
    wheelbase : float
        Of the bicycle geometry [m] (``delta = atan(wheelbase kappa)``).
    settings : MPCSettings
        ``delta_max``, ``delta_rate_max`` and ``control_period``.
    s0, e_y, e_psi : float
        The car's projection: arc length [m], lateral offset [m] (left positive), heading error [rad].
    speed : float
        The car's speed [m/s] (the look-ahead and the curvature cap).
    lateral : float
        Lateral acceleration the steering may ask for [m/s^2] (:func:`stop_accelerations`).
    delta_prev : float or None
        The last steering command [rad]; the new one moves from it by at most ``delta_rate_max`` times
        the control period.

    Returns
    -------
    float
        The curvature ``2 sin(alpha) / d`` of the arc through the car's pose and the path's point
        ``max(STOP_LOOKAHEAD_TIME speed, 2 wheelbase, 4 ds)`` [m] ahead (full turn towards it when it is
        behind), capped to ``lateral / speed^2``, as a steering angle within ``delta_max`` and the rate limit.

    Examples
    --------
    On the oval's straight, 1 m left of the line and parallel to it, at 10 m/s: right, towards the line,
    gently (a 10 m look-ahead):

    >>> import mpc_tracking as mt
    >>> path = mt.load_path("oval")
    >>> d = stop_steering(path, 2.7, mt.MPCSettings(), s0=0.0, e_y=1.0, e_psi=0.0, speed=10.0, lateral=4.0,
    ...                   delta_prev=None)
    >>> -0.1 < d < 0.0
    True
    """
    v = max(float(speed), 0.0)
    look = max(STOP_LOOKAHEAD_TIME * v, 2.0 * wheelbase, 4.0 * path.ds)
    alpha, dist = pursuit_angle(path, s0=s0, e_y=e_y, e_psi=e_psi, look=look)
    kappa = math.copysign(math.inf, alpha) if abs(alpha) >= 0.5 * math.pi else 2.0 * math.sin(alpha) / dist
    if v > 0.0:
        cap = max(float(lateral), 0.0) / (v * v)
        kappa = min(max(kappa, -cap), cap)
    delta = math.atan(wheelbase * kappa) if math.isfinite(kappa) else math.copysign(0.5 * math.pi, kappa)
    delta = min(max(delta, -settings.delta_max), settings.delta_max)
    if delta_prev is not None and math.isfinite(settings.delta_rate_max):
        step = settings.delta_rate_max * settings.control_period
        delta = min(max(delta, delta_prev - step), delta_prev + step)
    return delta


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
        steps, then brake to a safe stop on the ramp of :func:`safe_stop_speed`, steering along the path
        (:func:`stop_steering`) within the grip the braking leaves (:func:`stop_accelerations`).

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
            v_cmd, d_cmd = (None, None) if last_command is None else (float(last_command[0]), float(last_command[1]))
            # never more braking and turning than the limits allow (with grip estimation: the estimated grip's)
            brake, lateral = stop_accelerations(st)
            v = self.stop_speed = safe_stop_speed(self.stop_speed, step.v_measured, v_cmd, st.v_max, brake,
                                                  st.control_period)
            speed = max(v, step.v_measured) if step.v_measured is not None else v  # a lagging car is faster
            delta = stop_steering(self.path, float(self.vehicle.wheelbase), st, s0=float(step.s0),
                                  e_y=float(step.x0[m.I_EY]), e_psi=float(step.x0[m.I_EPSI]), speed=speed,
                                  lateral=lateral, delta_prev=d_cmd)
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
