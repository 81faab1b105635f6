"""Closed-loop simulation: plant pose -> projection -> MPC -> actuation -> plant.

The loop never dead-reckons the arc length: every control step the plant's true pose is
projected onto the path (with the previous s as hint). A run that fails midway returns what it
logged so far, with the outcome in :attr:`SimulationResult.reason` (an :class:`Outcome`) and
details in :attr:`SimulationResult.message`.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc_tracking.actuation import Actuator, default_actuator
from mpc_tracking.errors import InputError, MPCTrackingError, NonFiniteStateError, SettingsError
from mpc_tracking.models.base import MotionModel
from mpc_tracking.mpc.controller import SpatialMPC
from mpc_tracking.mpc.settings import MPCSolution, Status
from mpc_tracking.paths.projection import Projection
from mpc_tracking.paths.reference_path import ReferencePath
from mpc_tracking.results import SERIES, Outcome, SimulationResult

__all__ = ["simulate", "check_simulation", "STOPPED_SPEED"]

logger = logging.getLogger(__name__)

#: a safe stop ends the run once the plant is slower than this [m/s]
STOPPED_SPEED = 0.05


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
    allow_outside_start: bool = False,
    on_step: Callable[[int, float], None] | None = None,
) -> SimulationResult:
    """Run the closed loop.

    Parameters
    ----------
    path : ReferencePath
    controller : SpatialMPC
        Built on ``path`` (the same object or an equal path, else :class:`~mpc_tracking.errors.InputError`);
        it is reset before the run.
    plant : MotionModel
        The simulated car. Its pose origin may differ from the controller's reference point
        (rear axle) by ``plant.reference_offset`` [m] along the car's axis.
    actuator : Actuator, optional
        Maps (v, delta) to the plant's inputs; default :func:`~mpc_tracking.actuation.default_actuator`.
    control_period : float, optional
        Time between MPC solves [s]; default ``controller.settings.control_period``. The controller
        plans with its own period (rate limits, the first step of the horizon), so a different
        value is rejected (:class:`~mpc_tracking.errors.SettingsError`): set the period with
        ``MPCSettings(control_period=...)`` when building the controller instead.
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

    Returns
    -------
    SimulationResult
    """
    s0, timing, tol = _check_setup(path, controller, plant, control_period, sim_dt, laps, t_max, s0, e_y0, e_psi0,
                                   v0, init_plant, corridor_tolerance, allow_outside_start)
    controller.reset()
    act = actuator or default_actuator(plant)
    if init_plant:
        _place_plant(path, controller, plant, s0, e_y0, e_psi0, v0)
    act.reset(plant)
    loop = _Loop(path, controller, plant, act, timing, tol, laps, s0)
    loop.run(on_step)
    return loop.result()


def check_simulation(path: ReferencePath, controller: SpatialMPC, plant: MotionModel, *,
                     control_period: float | None = None, sim_dt: float | None = None, laps: int = 1,
                     t_max: float | None = None, s0: float = 0.0, e_y0: float = 0.0, e_psi0: float = 0.0,
                     v0: float | None = None, init_plant: bool = True, corridor_tolerance: float | None = None,
                     allow_outside_start: bool = False) -> None:
    """Every check :func:`simulate` makes of its arguments, without running (``mpc-tracking check``).

    Same arguments as :func:`simulate`; raises what it would raise before its first step.
    """
    _check_setup(path, controller, plant, control_period, sim_dt, laps, t_max, s0, e_y0, e_psi0, v0, init_plant,
                 corridor_tolerance, allow_outside_start)


def _check_setup(path: Any, controller: Any, plant: Any, control_period: Any, sim_dt: Any, laps: Any, t_max: Any,
                 s0: Any, e_y0: Any, e_psi0: Any, v0: Any, init_plant: bool, corridor_tolerance: Any,
                 allow_outside_start: bool) -> tuple[float, _Timing, float]:
    _check_objects(path, controller, plant, laps)
    _check_same_path(path, controller)
    _check_control_period(control_period, controller)
    s0 = _check_s0(path, s0)
    if init_plant:
        _check_start(path, s0, e_y0, e_psi0, v0, allow_outside_start)
    timing = _Timing.from_arguments(controller, path, control_period, sim_dt, t_max, laps, s0)
    _warn_held_steps(controller, timing.T)
    return s0, timing, _tolerance(corridor_tolerance, controller)


def _warn_held_steps(controller: SpatialMPC, period: float) -> None:
    """Warn when, at ``v_max``, one control period covers more than 1.5 spatial steps.

    The MPC plans one input per step ``ds`` but the car holds each command for ``v T`` metres;
    when that spans several steps the plan's quick corrections are applied for too long, and a
    light steering weight turns this into a small limit cycle (±0.1° of heading at 2 Hz on a
    full-size circuit at 40 m/s with ds = 1 m, T = 50 ms). ``ds >= v_max T`` removes it.
    """
    st, ds = controller.settings, controller.ds
    covered = st.v_max * period
    if covered > 1.5 * ds:
        logger.warning("at v_max = %.3g m/s one control period (%.3g s) covers %.3g m = %.1f MPC steps of ds = %.3g m, "
                       "but the MPC plans a new input every step: the held commands can make the steering ring; "
                       "choose ds >= v_max x control_period = %.3g m (with horizon x ds the same look-ahead) or a "
                       "shorter control period", st.v_max, period, covered, covered / ds, ds, covered)


def _check_objects(path: Any, controller: Any, plant: Any, laps: Any) -> None:
    if not isinstance(path, ReferencePath):
        raise InputError(f"path: expected a ReferencePath, got {type(path).__name__}")
    if not isinstance(controller, SpatialMPC):
        raise InputError(f"controller: expected a SpatialMPC, got {type(controller).__name__}")
    if not isinstance(plant, MotionModel):
        raise InputError(f"plant: expected a MotionModel, got {type(plant).__name__}")
    if isinstance(laps, bool) or not isinstance(laps, (int, np.integer)) or laps < 1:
        raise SettingsError(f"laps: expected an integer >= 1, got {laps!r}")


def _same_path(a: ReferencePath, b: ReferencePath) -> bool:
    """True when two paths have the same geometry, widths and speed profile (e.g. a copy or a pickle)."""
    if a.closed != b.closed or not np.isclose(a.length, b.length, rtol=1e-9, atol=1e-12):
        return False
    for name in ("s", "x", "y", "psi", "kappa", "width_left", "width_right", "v_ref"):
        u, v = getattr(a, name, None), getattr(b, name, None)
        if u is None or v is None:
            if u is not v:
                return False
            continue
        u, v = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
        if u.shape != v.shape or not np.allclose(u, v, rtol=1e-9, atol=1e-12, equal_nan=True):
            return False
    return True


def _check_same_path(path: ReferencePath, controller: SpatialMPC) -> None:
    own = controller.path
    if own is path or _same_path(own, path):
        return
    raise InputError(f"controller: built for path {own.name!r} ({'closed' if own.closed else 'open'}, "
                     f"{own.length:.2f} m), but simulate got path {path.name!r} "
                     f"({'closed' if path.closed else 'open'}, {path.length:.2f} m); expected the path the "
                     "controller was built on: build it with SpatialMPC(path, ...) on this path")


def _check_control_period(control_period: Any, controller: SpatialMPC) -> None:
    if control_period is None:
        return
    T = _positive_seconds(control_period, "control_period")
    own = float(controller.settings.control_period)
    if not np.isclose(T, own, rtol=1e-9, atol=0.0):
        raise SettingsError(f"control_period: simulate got {control_period!r} s but the controller plans with "
                            f"MPCSettings.control_period = {own:g} s; expected the same period (or leave it "
                            f"unset): build the controller with MPCSettings(control_period={T:g})")


def _finite(value: Any, name: str, unit: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected a finite number [{unit}], got {value!r}") from None
    if not np.isfinite(v):
        raise InputError(f"{name}: expected a finite number [{unit}], got {value!r}")
    return v


def _check_s0(path: ReferencePath, s0: Any) -> float:
    s = _finite(s0, "s0", "m")
    if path.closed:
        return s
    end = path.length - 0.5 * path.ds
    if not 0.0 <= s < end:
        raise InputError(f"s0: {s0!r} m is outside the open path {path.name!r} of length {path.length:.3f} m; "
                         f"expected 0 <= s0 < {end:.3f} m (a start at the end would end the run at once)")
    return s


def _check_start(path: ReferencePath, s0: float, e_y0: Any, e_psi0: Any, v0: Any, allow_outside: bool) -> None:
    e_y = _finite(e_y0, "e_y0", "m")
    _finite(e_psi0, "e_psi0", "rad")
    if v0 is not None:
        _finite(v0, "v0", "m/s")
    if allow_outside:
        return
    q = path.interpolate(np.array([s0]))
    wl, wr = float(q["width_left"][0]), float(q["width_right"][0])
    if not -wr <= e_y <= wl:
        raise InputError(f"e_y0: {e_y0!r} m starts outside the corridor at s0 = {s0:g} m, which allows "
                         f"{-wr:g} <= e_y0 <= {wl:g} m (width_right {wr:g} m, width_left {wl:g} m); start "
                         "inside it, or pass allow_outside_start=True to start outside on purpose")


def _tolerance(corridor_tolerance: Any, controller: SpatialMPC) -> float:
    if corridor_tolerance is None:
        return float(controller.vehicle.width)
    try:
        tol = float(corridor_tolerance)
    except (TypeError, ValueError):
        tol = float("nan")
    if np.isnan(tol) or tol < 0:
        raise InputError(f"corridor_tolerance: expected a distance >= 0 [m] (or None for the vehicle width), "
                         f"got {corridor_tolerance!r}")
    return tol


def _positive_seconds(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{name}: expected a positive number of seconds, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise SettingsError(f"{name}: expected a positive number of seconds, got {value!r}")
    return v


@dataclass(frozen=True)
class _Timing:
    """Control period ``T`` [s], plant step ``dt = T / n_sub`` [s] and time limit ``t_max`` [s]."""

    T: float
    dt: float
    n_sub: int
    t_max: float

    @classmethod
    def from_arguments(cls, controller: SpatialMPC, path: ReferencePath, control_period: float | None,
                       sim_dt: float | None, t_max: float | None, laps: int, s0: float) -> _Timing:
        st = controller.settings
        T = _positive_seconds(st.control_period if control_period is None else control_period, "control_period")
        dt = _positive_seconds(min(0.01, T) if sim_dt is None else sim_dt, "sim_dt")
        if dt > T * (1 + 1e-9):
            raise SettingsError(f"sim_dt = {dt} s must not exceed control_period = {T} s")
        n_sub = max(1, round(T / dt))
        if t_max is None:
            goal = laps * path.length if path.closed else path.length - s0
            t_max = 3.0 * goal / max(st.v_min, 0.2 * st.v_max) + 10.0
        return cls(T, T / n_sub, n_sub, _positive_seconds(t_max, "t_max"))


def _place_plant(path: ReferencePath, controller: SpatialMPC, plant: MotionModel, s0: float, e_y0: float,
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

    def series(self) -> dict[str, np.ndarray]:
        table = np.array(self.rows, dtype=float).reshape(-1, len(_ROW)).T.copy()
        return {name: table[_ROW.index(name)] for name in SERIES}

    def horizon_xy(self, N: int) -> np.ndarray:
        return np.asarray(self.horizons) if self.horizons else np.zeros((0, N + 1, 2))


#: steps whose plan the actuator may feed forward (a rejoin or safe stop has no acceleration plan)
_PLAN_STATUSES = (Status.SOLVED, Status.SOLVED_INACCURATE, Status.FALLBACK)


class _Loop:
    """One closed-loop run; :meth:`run` fills the log and sets the outcome, :meth:`result` packs it."""

    def __init__(self, path: ReferencePath, controller: SpatialMPC, plant: MotionModel, actuator: Actuator,
                 timing: _Timing, tolerance: float, laps: int, s0: float) -> None:
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
        self._measures = bool(controller.model.MEASURES)
        self._end = path.length - 0.5 * path.ds  # an open path ends here

    def run(self, on_step: Callable[[int, float], None] | None) -> None:
        k = 0
        while True:
            obs = self._observe(first=k == 0)
            if obs is None:
                return
            proj, ref_xy = obs
            sol = self._control(proj)
            if sol is None:
                return
            self._record(proj, ref_xy, sol)
            if sol.status == Status.SAFE_STOP and abs(self._speed) < STOPPED_SPEED:
                self._stop(Outcome.SAFE_STOP)
                return
            if not self._advance_plant(sol):
                return
            k += 1
            if on_step is not None:
                on_step(k, self.t)

    def _stop(self, outcome: Outcome, message: str = "") -> None:
        self.outcome, self.message = outcome, message

    def _observe(self, first: bool) -> tuple[Projection, tuple[float, float]] | None:
        """Project the plant's reference point; ``None`` when the run ends here."""
        pose = self.plant.pose
        yaw = self._yaw = pose.yaw
        rx = pose.x - self.offset * math.cos(yaw)
        ry = pose.y - self.offset * math.sin(yaw)
        if not (math.isfinite(rx) and math.isfinite(ry) and math.isfinite(yaw)):
            self._stop(Outcome.NON_FINITE_STATE, f"plant pose ({rx}, {ry}, {yaw}) at t = {self.t:.2f} s")
            return None
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
            return {"speed": speed}
        yaw = self.plant.pose.yaw
        vel = self.plant.velocity
        c, s = np.cos(yaw), np.sin(yaw)
        r = float(vel.angular[2])
        v_x = float(vel.linear[0] * c + vel.linear[1] * s)
        v_y = float(-vel.linear[0] * s + vel.linear[1] * c) - self.offset * r  # at the rear axle
        return {"v_x": v_x, "v_y": v_y, "r": r, "speed": speed}

    def _control(self, proj: Projection) -> MPCSolution | None:
        try:
            return self.controller.solve(proj, t=self.t, measured=self._measure())
        except MPCTrackingError as exc:
            logger.warning("run stopped at t = %.2f s: %s", self.t, exc)
            self._stop(Outcome.ERROR, str(exc))
            return None

    def _record(self, proj: Projection, ref_xy: tuple[float, float], sol: MPCSolution) -> None:
        """Log the step (the plant has not moved since :meth:`_observe` and :meth:`_measure`)."""
        ok = sol.success
        self.log.append((
            self.t, ref_xy[0], ref_xy[1], self._yaw, proj.s, proj.e_y, proj.e_psi, self._speed,
            sol.v, sol.delta, float(sol.u[0, 0]) if ok else np.nan,
            float(sol.lb[0]) if sol.lb is not None else -self._widths[1],
            float(sol.ub[0]) if sol.ub is not None else self._widths[0],
            sol.status.code, sol.solve_time, sol.step_time, sol.iterations, sol.corridor_violation,
        ), sol.xy)

    def _advance_plant(self, sol: MPCSolution) -> bool:
        """Step the plant through one control period; False when the run ends here."""
        dt, act, plant, v, delta = self.timing.dt, self.actuator, self.plant, sol.v, sol.delta
        # the planned acceleration reaches the speed loop as feed-forward (models that plan one)
        set_plan = getattr(act, "set_plan", None)
        if set_plan is not None:
            plan = self.controller.model.feedforward(sol.x, sol.u) if sol.status in _PLAN_STATUSES else None
            set_plan(*(plan if plan is not None else (None,)))
        step = plant.step
        t = self.t
        try:
            for _ in range(self.timing.n_sub):
                step(t, dt, act(t, dt, v, delta, plant))
                t += dt
        except NonFiniteStateError as exc:
            self.t = t
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
        st = self.controller.settings
        info = {
            "path": self.path.name,
            "plant": self.plant.name,
            "horizon": self.controller.N,
            "control_period": self.timing.T,
            "sim_dt": self.timing.dt,
            "laps": self.laps,
            "mode": st.mode,
        }
        return SimulationResult(
            series=self.log.series(),
            horizon_xy=self.log.horizon_xy(self.controller.N),
            reason=self.outcome,
            message=self.message,
            laps_completed=self.counter.laps_done,
            lap_times=self.counter.lap_times,
            info=info,
            path=self.path,
            vehicle=self.controller.vehicle,
        )
