"""Closed-loop simulation: plant pose -> projection -> controller -> actuation -> plant.

The controller is anything with the :class:`~mpc_tracking.control.protocol.Controller` protocol
(the MPC, the pure-pursuit and Stanley baselines); the set-up checks live in
:mod:`mpc_tracking.simulation_checks`.

The loop never dead-reckons the arc length: every control step the plant's true pose is
projected onto the path (with the previous s as hint). A run that fails midway returns what it
logged so far, with the outcome in :attr:`SimulationResult.reason` (an :class:`Outcome`) and
details in :attr:`SimulationResult.message`.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mpc_tracking.actuation import Actuator, default_actuator
from mpc_tracking.control.protocol import Command, Controller, reference_speed
from mpc_tracking.errors import MPCTrackingError, NonFiniteStateError
from mpc_tracking.models.base import MotionModel
from mpc_tracking.mpc.settings import Status
from mpc_tracking.paths.projection import Projection
from mpc_tracking.paths.reference_path import ReferencePath
from mpc_tracking.plausibility import (
    StepWatch,
    check_initial_speed,
    check_step_fits_path,
    check_step_wall_limit,
    nonfinite_outputs,
)
from mpc_tracking.results import SERIES, Outcome, SimulationResult
from mpc_tracking.simulation_checks import Timing, check_setup

__all__ = ["simulate", "check_simulation", "STOPPED_SPEED"]

logger = logging.getLogger(__name__)

#: a safe stop ends the run once the plant is slower than this [m/s]
STOPPED_SPEED = 0.05


def simulate(
    path: ReferencePath,
    controller: Controller | Any,
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
    allow_outside_start: bool = False,
    on_step: Callable[[int, float], None] | None = None,
    step_wall_limit: float | None = None,
) -> SimulationResult:
    """Run the closed loop.

    Parameters
    ----------
    path : ReferencePath
    controller : Controller or SpatialMPC
        Any :class:`~mpc_tracking.control.protocol.Controller` (:class:`~mpc_tracking.control.PurePursuit`,
        :class:`~mpc_tracking.control.Stanley`, ...) or a :class:`~mpc_tracking.mpc.controller.SpatialMPC`
        or cvxpy reference controller (seen through :func:`~mpc_tracking.control.adapters.as_controller`).
        Built on ``path`` (the same object or an equal path, else :class:`~mpc_tracking.errors.InputError`);
        it is reset before the run.
    plant : MotionModel
        The simulated car. Its pose origin may differ from the controller's reference point
        (rear axle) by ``plant.reference_offset`` [m] along the car's axis.
    actuator : Actuator, optional
        Maps (v, delta) to the plant's inputs; default :func:`~mpc_tracking.actuation.default_actuator`.
    control_period : float, optional
        Time between two controller calls [s]; default ``controller.control_period`` (the MPC's
        ``settings.control_period``). The controller plans with its own period (rate limits, the
        first step of the horizon), so a different value is rejected
        (:class:`~mpc_tracking.errors.SettingsError`): set the period when building the controller
        (``MPCSettings(control_period=...)``, ``TrackingLimits(control_period=...)``) instead.
    sim_dt : float, optional
        Plant step [s], at most the control period (rounded so it divides it); default
        ``min(0.01, control_period)``.
    laps : int
        Laps to drive on a closed path (>= 1); ignored on open paths (run to the end).
    t_max : float, optional
        Time limit [s]; default three times the time the goal (laps, or the rest of an open
        path) takes at ``max(v_min, 0.2 v_max)``, plus 10 s. There is no other cap.
    s0, e_y0, e_psi0 : float
        Initial arc length [m], lateral offset [m] and heading error [rad] of the reference point.
        On an open path ``0 <= s0 < length - ds / 2`` (a start at the end would end the run at
        once); on a closed path any ``s0`` (wrapped). ``e_y0`` must lie within the track widths at
        ``s0`` (``-width_right <= e_y0 <= width_left``) unless ``allow_outside_start`` is set.
    v0 : float, optional
        Initial speed [m/s]; default the controller's speed reference at ``s0``.
    init_plant : bool
        Place the plant at the initial pose (False keeps the state it has).
    corridor_tolerance : float, optional
        How far [m] the reference point may be beyond a corridor edge before the run stops
        with ``"left_corridor"`` (>= 0); default the vehicle width.
    allow_outside_start : bool
        Accept a start ``e_y0`` outside the track widths at ``s0`` (e.g. to test how the
        controller rejoins the corridor; the run still stops with ``"left_corridor"`` once the
        reference point is more than ``corridor_tolerance`` beyond an edge). Default False: such a
        start raises :class:`~mpc_tracking.errors.InputError`.
    on_step : callable, optional
        ``on_step(k, t)`` after each control step (progress bars).
    step_wall_limit : float, optional
        Longest wall time [s] one loop step (observe, control, the plant's steps) may take; a
        step over it ends the run with the outcome ``step_wall_limit`` (what was computed is
        kept). Default None: no limit. Either way the logged ``step_time`` is the whole loop
        step, so a slow plant counts in ``realtime_overruns``.

    Returns
    -------
    SimulationResult
    """
    ctrl, s0, timing, tol = check_setup(path, controller, plant, control_period, sim_dt, laps, t_max, s0, e_y0,
                                        e_psi0, v0, init_plant, corridor_tolerance, allow_outside_start)
    watch = StepWatch(_check_plausible(path, ctrl, v0, init_plant, step_wall_limit))
    ctrl.reset()
    act = actuator or default_actuator(plant)
    if init_plant:
        _place_plant(path, ctrl, plant, s0, e_y0, e_psi0, v0)
    act.reset(plant)
    loop = _Loop(path, ctrl, plant, act, timing, tol, laps, s0, watch)
    loop.run(on_step)
    return loop.result()


def check_simulation(path: ReferencePath, controller: Controller | Any, plant: MotionModel, *,
                     control_period: float | None = None, sim_dt: float | None = None, laps: int = 1,
                     t_max: float | None = None, s0: float = 0.0, e_y0: float = 0.0, e_psi0: float = 0.0,
                     v0: float | None = None, init_plant: bool = True, corridor_tolerance: float | None = None,
                     allow_outside_start: bool = False, step_wall_limit: float | None = None) -> None:
    """Every check :func:`simulate` makes of its arguments, without running (``mpc-tracking check``).

    Same arguments as :func:`simulate`; raises what it would raise before its first step (the checks
    live in :mod:`mpc_tracking.simulation_checks`).
    """
    ctrl, *_ = check_setup(path, controller, plant, control_period, sim_dt, laps, t_max, s0, e_y0, e_psi0, v0,
                           init_plant, corridor_tolerance, allow_outside_start)
    _check_plausible(path, ctrl, v0, init_plant, step_wall_limit)


def _check_plausible(path: ReferencePath, controller: Controller, v0: Any, init_plant: bool,
                     step_wall_limit: Any) -> float | None:
    """The range checks of :mod:`mpc_tracking.plausibility`: ``v0`` within the controller's speeds,
    a controller's spatial step ``ds`` (the MPC's) shorter than the path; returns the checked
    ``step_wall_limit`` [s]."""
    if init_plant:
        check_initial_speed(v0, controller.speed_range[1])
    ds = getattr(controller, "ds", None)
    if ds is not None:
        check_step_fits_path(float(ds), int(controller.horizon), float(path.length), bool(path.closed), path.name)
    return check_step_wall_limit(step_wall_limit)


def _place_plant(path: ReferencePath, controller: Controller, plant: MotionModel, s0: float, e_y0: float,
                 e_psi0: float, v0: float | None) -> None:
    """Put the plant's reference point at ``(s0, e_y0)`` with heading error ``e_psi0`` and speed ``v0``."""
    q = path.interpolate(np.array([s0]))
    psi_path = float(q["psi"][0])
    yaw = psi_path + e_psi0
    offset = float(plant.reference_offset)
    x = float(q["x"][0]) - e_y0 * np.sin(psi_path) + offset * np.cos(yaw)
    y = float(q["y"][0]) + e_y0 * np.cos(psi_path) + offset * np.sin(yaw)
    if v0 is None:
        v0 = float(controller.reference_input(s0)[0])
    plant.init({"x": x, "y": y, "yaw": yaw, "speed": v0})


def _all_finite(*values: Any) -> bool:
    """True when the plant outputs are finite numbers (the common case, checked without building a dict;
    anything else goes through :func:`~mpc_tracking.plausibility.nonfinite_outputs`, which names them)."""
    try:
        return all(map(math.isfinite, values))
    except TypeError:
        return False


def _checked_outputs(outputs: dict[str, float], t: float) -> dict[str, float]:
    """``outputs`` when all are finite (:func:`~mpc_tracking.plausibility.nonfinite_outputs`), else
    :class:`NonFiniteStateError` naming them (the run ends with ``non_finite_state``)."""
    bad = nonfinite_outputs(outputs)
    if bad is not None:
        raise NonFiniteStateError(f"plant outputs at t = {t:.2f} s are not finite: {bad}")
    return outputs


class _LapCounter:
    """Progress along the path [m] and lap crossings, the crossing time interpolated within a step."""

    def __init__(self, path: ReferencePath, s0: float) -> None:
        self.path = path
        self.s_prev = float(s0)
        self.progress = 0.0
        self.laps_done = 0
        self.lap_times: list[float] = []
        self._lap_start = 0.0

    def update(self, s: float, t: float, T: float, first: bool) -> None:
        """Advance to the projected arc length ``s`` [m] observed at time ``t`` [s]."""
        L = self.path.length
        ds = s - self.s_prev
        if self.path.closed:
            ds = (ds + 0.5 * L) % L - 0.5 * L
        self.s_prev = s
        self.progress += ds
        if not self.path.closed:
            return
        while self.progress >= (self.laps_done + 1) * L:
            self.laps_done += 1
            before = self.progress - ds  # progress at the previous observation, t - T
            frac = (self.laps_done * L - before) / ds if ds > 0 else 1.0
            t_cross = t if first else t - T + frac * T
            self.lap_times.append(t_cross - self._lap_start)
            self._lap_start = t_cross


#: the order of a log row: the series of :data:`mpc_tracking.results.SERIES`
_ROW = ("t", "x", "y", "yaw", "s", "e_y", "e_psi", "v", "v_cmd", "delta_cmd", "v_ref", "lb", "ub", "status",
        "solve_time", "step_time", "iterations", "corridor_violation")
_I_STEP_TIME = _ROW.index("step_time")


class _Log:
    """The per-control-step series of :data:`mpc_tracking.results.SERIES`, one row (a tuple in the
    order of ``_ROW``) per step; the columns are made once, at the end."""

    def __init__(self) -> None:
        if set(_ROW) != set(SERIES) or len(_ROW) != len(SERIES):  # a programming error, not input
            raise KeyError(f"log row {_ROW} differs from SERIES {tuple(SERIES)}")
        self.rows: list[tuple[float, ...]] = []
        self.horizons: list[np.ndarray] = []

    def append(self, row: tuple[float, ...], horizon_xy: np.ndarray) -> None:
        self.rows.append(row)
        self.horizons.append(horizon_xy)

    def set_step_time(self, seconds: float) -> None:
        """Replace the last row's ``step_time`` with the wall time of the whole loop step [s]."""
        if self.rows:
            row = self.rows[-1]
            i = _I_STEP_TIME
            self.rows[-1] = (*row[:i], max(float(row[i]), seconds), *row[i + 1:])

    def series(self) -> dict[str, np.ndarray]:
        table = np.array(self.rows, dtype=float).reshape(-1, len(_ROW)).T.copy()
        return {name: table[_ROW.index(name)] for name in SERIES}

    def horizon_xy(self, N: int) -> np.ndarray:
        """The logged horizons, shape (K, N+1, 2); (K, 0, 2) for a controller that predicts nothing (N = 0)."""
        points = N + 1 if N > 0 else 0
        if not self.horizons:
            return np.zeros((0, points, 2))
        return np.asarray(self.horizons, dtype=float).reshape(len(self.horizons), -1, 2)


#: steps whose plan the actuator may feed forward (a rejoin or safe stop has no acceleration plan)
_PLAN_STATUSES = (Status.SOLVED, Status.SOLVED_INACCURATE, Status.FALLBACK)


class _Loop:
    """One closed-loop run; :meth:`run` fills the log and sets the outcome, :meth:`result` packs it."""

    def __init__(self, path: ReferencePath, controller: Controller, plant: MotionModel, actuator: Actuator,
                 timing: Timing, tolerance: float, laps: int, s0: float, watch: StepWatch | None = None) -> None:
        self.path, self.controller, self.plant, self.actuator = path, controller, plant, actuator
        self.timing, self.tolerance, self.laps = timing, tolerance, laps
        self.offset = float(plant.reference_offset)
        self.counter = _LapCounter(path, s0)
        self.log = _Log()
        self.t = 0.0
        self.outcome = Outcome.TIME_LIMIT
        self.message = ""
        self._widths = (np.inf, np.inf)  # path widths (left, right) [m] at the last observation
        self._yaw = 0.0  # plant heading [rad] at the last observation
        self._speed = 0.0  # plant speed [m/s] at the last measurement
        self._measures = bool(controller.measures)
        #: the controller's planned (speed, acceleration) for the actuator, when it plans one
        self._feedforward: Callable[[Any], Any] | None = getattr(controller, "plan_feedforward", None)
        self._end = path.length - 0.5 * path.ds  # an open path ends here
        #: the optional series (results.OPTIONAL_SERIES) this run logs: the grip estimate and the share of the limits
        #: in use, the road's friction
        self._grip = getattr(getattr(controller, "mpc", controller), "grip", None)
        self._road = getattr(plant, "road_friction", None)
        grip = self._grip is not None
        self._optional: dict[str, list[float]] = {k: [] for k, on in (("mu_est", grip), ("grip_share", grip),
                                                                      ("mu_true", self._road is not None)) if on}
        self.watch = watch or StepWatch(None)  # wall time of the whole loop step (and its limit)
        #: the plant's steps of one control period in one call, when it has that for this actuator (and no
        #: wall-time limit has to be checked after each plant step)
        held = getattr(actuator, "held_command_stepper", None)
        self._held = held(plant) if held is not None and self.watch.limit is None else None

    def run(self, on_step: Callable[[int, float], None] | None) -> None:
        k = 0
        while True:
            self.watch.start()
            obs = self._observe(first=k == 0)
            if obs is None:
                return
            proj, ref_xy = obs
            sol = self._control(proj)
            if sol is None:
                return
            self._record(proj, ref_xy, sol)
            late = self.watch.over(self.t, "the controller's step")
            if late is not None:
                self.log.set_step_time(self.watch.elapsed())
                logger.warning("run stopped: %s", late)
                self._stop(Outcome.STEP_WALL_LIMIT, late)
                return
            if sol.status == Status.SAFE_STOP and abs(self._speed) < STOPPED_SPEED:
                self._stop(Outcome.SAFE_STOP)
                return
            advanced = self._advance_plant(sol)
            self.log.set_step_time(self.watch.elapsed())  # the whole loop step, the plant's steps included
            if not advanced:
                return
            k += 1
            if on_step is not None:
                on_step(k, self.t)

    def _stop(self, outcome: Outcome, message: str = "") -> None:
        self.outcome, self.message = outcome, message

    def _observe(self, first: bool) -> tuple[Projection, tuple[float, float]] | None:
        """Project the plant's reference point; ``None`` when the run ends here."""
        pose = self.plant.pose
        yaw = pose.yaw
        bad = None if _all_finite(pose.x, pose.y, yaw) else nonfinite_outputs({"x": pose.x, "y": pose.y, "yaw": yaw})
        if bad is not None:  # (checked before any arithmetic on them)
            self._stop(Outcome.NON_FINITE_STATE, f"plant pose ({pose.x}, {pose.y}, {yaw}) at t = {self.t:.2f} s: "
                                                 f"{bad}")
            return None
        self._yaw = yaw
        rx = pose.x - self.offset * math.cos(yaw)
        ry = pose.y - self.offset * math.sin(yaw)
        path, counter = self.path, self.counter
        proj = path.project(rx, ry, yaw, s_hint=counter.s_prev)
        counter.update(proj.s, self.t, self.timing.T, first)
        if path.closed:
            if counter.laps_done >= self.laps:
                self._stop(Outcome.COMPLETED)
                return None
        elif proj.s >= self._end:
            self._stop(Outcome.END_OF_PATH)
            return None
        if self._outside_corridor(proj):
            self._stop(Outcome.LEFT_CORRIDOR, f"e_y = {proj.e_y:.3f} m at s = {proj.s:.1f} m, t = {self.t:.2f} s")
        elif self.t >= self.timing.t_max:
            self._stop(Outcome.TIME_LIMIT)
        else:
            return proj, (rx, ry)
        return None

    def _outside_corridor(self, proj: Projection) -> bool:
        wl, wr = self._widths = self.path.widths_at(proj.s)
        return bool(proj.e_y > wl + self.tolerance or proj.e_y < -wr - self.tolerance)

    def _measure(self) -> dict[str, float]:
        """The car's speed (the safe stop brakes from it) and, when the model needs them, the body-frame
        velocities of the reference point and the yaw rate."""
        speed = self._speed = self.plant.speed
        if not self._measures:
            return {"speed": speed} if _all_finite(speed) else _checked_outputs({"speed": speed}, self.t)
        yaw = self.plant.pose.yaw
        vel = self.plant.velocity
        c, s = np.cos(yaw), np.sin(yaw)
        r = float(vel.angular[2])
        v_x = float(vel.linear[0] * c + vel.linear[1] * s)
        v_y = float(-vel.linear[0] * s + vel.linear[1] * c) - self.offset * r  # at the rear axle
        return _checked_outputs({"v_x": v_x, "v_y": v_y, "r": r, "speed": speed}, self.t)

    def _control(self, proj: Projection) -> Command | None:
        try:
            return self.controller.solve(proj, t=self.t, measured=self._measure())
        except NonFiniteStateError as exc:  # the plant's speed or velocities (_measure)
            logger.warning("run stopped at t = %.2f s: %s", self.t, exc)
            self._stop(Outcome.NON_FINITE_STATE, str(exc))
            return None
        except MPCTrackingError as exc:
            logger.warning("run stopped at t = %.2f s: %s", self.t, exc)
            self._stop(Outcome.ERROR, str(exc))
            return None

    def _record(self, proj: Projection, ref_xy: tuple[float, float], sol: Command) -> None:
        """Log the step (the plant has not moved since :meth:`_observe` and :meth:`_measure`)."""
        self.log.append((
            self.t, ref_xy[0], ref_xy[1], self._yaw, proj.s, proj.e_y, proj.e_psi, self._speed,
            sol.v, sol.delta, reference_speed(sol),
            float(sol.lb[0]) if sol.lb is not None else -self._widths[1],
            float(sol.ub[0]) if sol.ub is not None else self._widths[0],
            sol.status.code, sol.solve_time, sol.step_time, sol.iterations, sol.corridor_violation,
        ), sol.xy)
        if self._optional:
            self._record_optional()

    def _record_optional(self) -> None:
        """Log this step's optional series (:data:`mpc_tracking.results.OPTIONAL_SERIES`)."""
        opt = self._optional
        if self._grip is not None:
            opt["mu_est"].append(float(self._grip.last.mu))
            opt["grip_share"].append(float(self._grip.ratio))
        if self._road is not None:
            opt["mu_true"].append(float(self._road(self.t)))

    def _advance_plant(self, sol: Command) -> bool:
        """Step the plant through one control period; False when the run ends here."""
        dt, act, plant, v, delta = self.timing.dt, self.actuator, self.plant, sol.v, sol.delta
        # the planned acceleration reaches the speed loop as feed-forward (models that plan one)
        set_plan = getattr(act, "set_plan", None)
        if set_plan is not None:
            plan = self._feedforward(sol) if self._feedforward is not None and sol.status in _PLAN_STATUSES else None
            set_plan(*(plan if plan is not None else (None,)))
        step = plant.step
        t = self.t
        watch = self.watch
        limited = watch.limit is not None
        try:
            if self._held is not None:
                t = self.t = self._held(t, dt, self.timing.n_sub, v, delta)
                return True
            for _ in range(self.timing.n_sub):
                step(t, dt, act(t, dt, v, delta, plant))
                t += dt
                late = watch.over(t, "the plant's step") if limited else None
                if late is not None:
                    self.t = t
                    logger.warning("run stopped: %s", late)
                    self._stop(Outcome.STEP_WALL_LIMIT, late)
                    return False
        except NonFiniteStateError as exc:
            self.t = t = exc.t if exc.t is not None else t
            logger.warning("plant stopped at t = %.2f s: %s", t, exc)
            self._stop(Outcome.NON_FINITE_STATE, str(exc))
            return False
        except MPCTrackingError as exc:
            self.t = t
            logger.warning("plant stopped at t = %.2f s: %s", t, exc)
            self._stop(Outcome.ERROR, str(exc))
            return False
        self.t = t
        return True

    def result(self) -> SimulationResult:
        ctrl = self.controller
        described = ctrl.describe()
        info = {
            "path": self.path.name,
            "plant": self.plant.name,
            "horizon": ctrl.horizon,
            "control_period": self.timing.T,
            "sim_dt": self.timing.dt,
            "laps": self.laps,
            "mode": described.get("mode", ""),
            "controller": described.get("controller", type(ctrl).__name__),
        }
        series = self.log.series()
        series.update({k: np.asarray(v, dtype=float) for k, v in self._optional.items()})
        return SimulationResult(
            series=series,
            horizon_xy=self.log.horizon_xy(ctrl.horizon),
            reason=self.outcome,
            message=self.message,
            laps_completed=self.counter.laps_done,
            lap_times=self.counter.lap_times,
            info=info,
            path=self.path,
            vehicle=self.controller.vehicle,
        )
