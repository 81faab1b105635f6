"""Closed-loop simulation: plant pose -> projection -> MPC -> actuation -> plant.

The loop never dead-reckons the arc length: every control step the plant's true pose is
projected onto the path (with the previous s as hint). A run that fails midway returns what it
logged so far, with the reason in :attr:`SimulationResult.reason`.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from mpc_tracking.actuation import Actuator, default_actuator
from mpc_tracking.errors import InputError, MPCTrackingError, SettingsError
from mpc_tracking.models.base import MotionModel
from mpc_tracking.mpc.controller import SpatialMPC
from mpc_tracking.paths.reference_path import ReferencePath
from mpc_tracking.results import STATUS_CODES, SimulationResult

__all__ = ["simulate", "SimulationResult"]

logger = logging.getLogger(__name__)


def _check_positive(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{name}: expected a positive number of seconds, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise SettingsError(f"{name}: expected a positive number of seconds, got {value!r}")
    return v


def simulate(
    path: ReferencePath,
    controller: SpatialMPC,
    plant: MotionModel,
    actuator: Actuator | None = None,
    *,
    control_period: float | None = None,
    sim_dt: float | None = None,
    laps: int = 1,
    t_max: float | None = None,
    s0: float = 0.0,
    e_y0: float = 0.0,
    e_psi0: float = 0.0,
    v0: float | None = None,
    init_plant: bool = True,
    corridor_tolerance: float | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> SimulationResult:
    """Run the closed loop.

    Parameters
    ----------
    path : ReferencePath
    controller : SpatialMPC
        Built on ``path`` (it is reset before the run).
    plant : MotionModel
        The simulated car. Its pose origin may differ from the controller's reference point
        (rear axle); ``plant.reference_offset`` [m] is the distance from the pose origin back
        to the rear axle (0 when absent).
    actuator : Actuator, optional
        Maps (v, delta) to the plant's inputs; default :func:`~mpc_tracking.actuation.default_actuator`.
    control_period : float, optional
        Time between MPC solves [s]; default ``controller.settings.control_period``.
    sim_dt : float, optional
        Plant step [s], at most the control period (rounded so it divides it); default
        ``min(0.01, control_period)``.
    laps : int
        Laps to drive on a closed path (>= 1); ignored on open paths (run to the end).
    t_max : float, optional
        Time limit [s]; default: 3 x the time of the path at ``v_min`` capped to 4 h... see code.
    s0, e_y0, e_psi0 : float
        Initial arc length [m], lateral offset [m] and heading error [rad] of the reference point.
    v0 : float, optional
        Initial speed [m/s]; default the controller's speed reference at ``s0``.
    init_plant : bool
        Place the plant at the initial pose (False keeps the state it has).
    corridor_tolerance : float, optional
        How far [m] the reference point may be beyond a corridor edge before the run stops
        with ``"left_corridor"``; default the vehicle width.
    on_step : callable, optional
        ``on_step(k, t)`` after each control step (progress bars).

    Returns
    -------
    SimulationResult
    """
    if not isinstance(path, ReferencePath):
        raise InputError(f"path: expected a ReferencePath, got {type(path).__name__}")
    if not isinstance(controller, SpatialMPC):
        raise InputError(f"controller: expected a SpatialMPC, got {type(controller).__name__}")
    if not isinstance(plant, MotionModel):
        raise InputError(f"plant: expected a MotionModel, got {type(plant).__name__}")
    if isinstance(laps, bool) or not isinstance(laps, (int, np.integer)) or laps < 1:
        raise SettingsError(f"laps: expected an integer >= 1, got {laps!r}")
    st = controller.settings
    T = _check_positive(control_period if control_period is not None else st.control_period, "control_period")
    dt = _check_positive(sim_dt if sim_dt is not None else min(0.01, T), "sim_dt")
    if dt > T * (1 + 1e-9):
        raise SettingsError(f"sim_dt = {dt} s must not exceed control_period = {T} s")
    n_sub = max(1, int(round(T / dt)))
    dt = T / n_sub
    goal = laps * path.length if path.closed else path.length - s0
    if t_max is None:
        t_max = 3.0 * goal / max(st.v_min, 0.2 * st.v_max) + 10.0
    t_max = _check_positive(t_max, "t_max")
    vehicle = controller.vehicle
    tol = vehicle.width if corridor_tolerance is None else float(corridor_tolerance)
    offset = float(plant.reference_offset)

    controller.reset()
    act = actuator or default_actuator(plant)
    if init_plant:
        q = path.interpolate(np.array([s0]))
        psi0 = float(q["psi"][0]) + e_psi0
        px = float(q["x"][0]) - e_y0 * np.sin(q["psi"][0]) + offset * np.cos(psi0)
        py = float(q["y"][0]) + e_y0 * np.cos(q["psi"][0]) + offset * np.sin(psi0)
        if v0 is None:
            v0 = float(controller.reference_input(s0)[0])
        plant.init({"x": px, "y": py, "yaw": psi0, "speed": v0})
    act.reset(plant)

    log: dict[str, list] = {k: [] for k in (
        "t", "x", "y", "yaw", "s", "e_y", "e_psi", "v", "v_cmd", "delta_cmd", "v_ref",
        "lb", "ub", "status", "solve_time", "step_time", "iterations", "corridor_violation",
    )}
    horizons: list[np.ndarray] = []
    t = 0.0
    s_hint = float(s0)
    progress = 0.0
    laps_done, lap_times, lap_start = 0, [], 0.0
    reason = "time_limit"
    k = 0
    while True:
        pose = plant.pose
        rx = pose.x - offset * np.cos(pose.yaw)
        ry = pose.y - offset * np.sin(pose.yaw)
        if not np.all(np.isfinite([rx, ry, pose.yaw])):
            reason = "non_finite_state"
            break
        proj = path.project(rx, ry, pose.yaw, s_hint=s_hint)
        ds_prog = proj.s - s_hint
        if path.closed:
            ds_prog = (ds_prog + 0.5 * path.length) % path.length - 0.5 * path.length
        progress += ds_prog
        s_hint = proj.s
        if path.closed:
            while progress >= (laps_done + 1) * path.length:
                laps_done += 1
                # interpolate the crossing time within the last step
                prev_prog = progress - ds_prog
                frac = ((laps_done * path.length) - prev_prog) / ds_prog if ds_prog > 0 else 1.0
                t_cross = t - T + frac * T if k > 0 else t
                lap_times.append(t_cross - lap_start)
                lap_start = t_cross
            if laps_done >= laps:
                reason = "completed"
                break
        elif proj.s >= path.length - 0.5 * path.ds:
            reason = "end_of_path"
            break
        wl = np.interp(proj.s, path.s, path.width_left)
        wr = np.interp(proj.s, path.s, path.width_right)
        if proj.e_y > wl + tol or proj.e_y < -wr - tol:
            reason = "left_corridor"
            break
        if t >= t_max:
            reason = "time_limit"
            break
        try:
            sol = controller.solve(proj, t=t)
        except MPCTrackingError as exc:
            reason = f"error: {exc}"
            logger.warning("run stopped at t = %.2f s: %s", t, exc)
            break
        log["t"].append(t)
        log["x"].append(rx)
        log["y"].append(ry)
        log["yaw"].append(pose.yaw)
        log["s"].append(proj.s)
        log["e_y"].append(proj.e_y)
        log["e_psi"].append(proj.e_psi)
        log["v"].append(plant.speed)
        log["v_cmd"].append(sol.v)
        log["delta_cmd"].append(sol.delta)
        log["v_ref"].append(float(sol.u[0, 0]) if sol.success else np.nan)
        log["lb"].append(float(sol.lb[0]) if sol.lb is not None else -wr)
        log["ub"].append(float(sol.ub[0]) if sol.ub is not None else wl)
        log["status"].append(STATUS_CODES[sol.status])
        log["solve_time"].append(sol.solve_time)
        log["step_time"].append(sol.step_time)
        log["iterations"].append(sol.iterations)
        log["corridor_violation"].append(sol.corridor_violation)
        horizons.append(sol.xy)
        if sol.status == "safe_stop" and abs(plant.speed) < 0.05:
            reason = "safe_stop"
            break
        try:
            for _ in range(n_sub):
                u = act(t, dt, sol.v, sol.delta, plant)
                plant.step(t, dt, u)
                t += dt
        except MPCTrackingError as exc:
            reason = "non_finite_state" if "non-finite" in str(exc) else f"error: {exc}"
            logger.warning("plant stopped at t = %.2f s: %s", t, exc)
            break
        k += 1
        if on_step is not None:
            on_step(k, t)

    series = {name: np.asarray(vals, dtype=float) for name, vals in log.items()}
    horizon_xy = np.asarray(horizons) if horizons else np.zeros((0, controller.N + 1, 2))
    info = {
        "path": path.name,
        "plant": getattr(plant, "name", type(plant).__name__),
        "horizon": controller.N,
        "control_period": T,
        "sim_dt": dt,
        "laps": laps,
        "mode": st.mode,
    }
    return SimulationResult(
        series=series,
        horizon_xy=horizon_xy,
        reason=reason,
        laps_completed=laps_done,
        lap_times=lap_times,
        info=info,
        path=path,
        vehicle=vehicle,
    )
