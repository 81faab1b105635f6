"""What the closed loop needs from a controller: the :class:`Controller` protocol and its :class:`Command`.

:func:`~mpc_tracking.simulation.simulate` drives any object with the members of :class:`Controller`
(structural typing: no base class to inherit). Every control step it projects the plant's pose onto
the path, calls :meth:`Controller.solve` with that projection and the measurements, logs the
returned :class:`Command` and applies its ``(v, delta)`` for one control period.

Two kinds of answer satisfy :class:`Command`: the MPC's :class:`~mpc_tracking.mpc.settings.MPCSolution`
(with its predicted horizon) and :class:`ControlCommand`, the small answer of a controller that
predicts nothing (the geometric baselines): an empty horizon ``xy`` of shape (0, 2) and its
reference speed in :attr:`ControlCommand.v_ref`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from mpc_tracking.mpc.settings import MPCSolution, Status

if TYPE_CHECKING:
    from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
    from mpc_tracking.paths.projection import Projection
    from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["Command", "ControlCommand", "Controller", "reference_speed"]


@runtime_checkable
class Command(Protocol):
    """What :func:`~mpc_tracking.simulation.simulate` reads from one answer of :meth:`Controller.solve`.

    Attributes
    ----------
    v, delta : float
        The command to apply for one control period: speed [m/s] and steering angle [rad].
    status : Status
        The step's outcome; :attr:`Status.code` is logged, and ``Status.SAFE_STOP`` ends the run
        once the car stands still.
    success : bool
        True when the step computed a fresh command (an MPC: its QP was solved).
    iterations : int
        Solver iterations of the step (0 for a controller without a solver).
    solve_time, step_time : float
        Time in the solver and wall time of the whole ``solve()`` call [s].
    corridor_violation : float
        Largest planned corridor violation [m] (0 when the controller plans none).
    xy : ndarray, shape (N+1, 2) or (0, 2)
        Predicted positions in the world [m]; empty when the controller predicts nothing.
    lb, ub : ndarray, shape (N+1,), or None
        Corridor bounds on e_y used in the step [m]; None: the path's widths are logged.
    """

    v: float
    delta: float
    status: Status
    success: bool
    iterations: int
    solve_time: float
    step_time: float
    corridor_violation: float
    xy: np.ndarray
    lb: np.ndarray | None
    ub: np.ndarray | None


def _no_horizon() -> np.ndarray:
    return np.zeros((0, 2))


@dataclass
class ControlCommand:
    """One step's answer of a controller without a prediction (satisfies :class:`Command`).

    Attributes
    ----------
    v, delta : float
        Command: speed [m/s] and steering angle [rad].
    status : Status
        ``Status.SOLVED`` unless the controller says otherwise.
    success : bool
        True: a fresh command.
    v_ref : float
        The speed reference at the car [m/s] (logged as ``v_ref``); NaN when there is none.
    iterations : int
        Always 0 here (no solver).
    solve_time, step_time : float
        Time spent computing the command [s] (both the same: there is no solver apart from it).
    corridor_violation : float
        0 (nothing is planned).
    xy : ndarray, shape (0, 2)
        The (empty) predicted horizon [m].
    lb, ub : None
        No corridor bounds of its own: the path's widths are logged.
    target : ndarray, shape (2,), or None
        The point the geometric law steered towards [m] (pure pursuit: the look-ahead point;
        Stanley: the path point nearest the front axle); for plots and tests, not logged.
    """

    v: float
    delta: float
    status: Status = Status.SOLVED
    success: bool = True
    v_ref: float = float("nan")
    iterations: int = 0
    solve_time: float = 0.0
    step_time: float = 0.0
    corridor_violation: float = 0.0
    xy: np.ndarray = field(default_factory=_no_horizon)
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None
    target: np.ndarray | None = None

    @property
    def command(self) -> tuple[float, float]:
        """``(v, delta)``."""
        return self.v, self.delta


def reference_speed(command: Command) -> float:
    """The speed reference [m/s] an answer carries (logged as ``v_ref``), NaN when it has none.

    :class:`ControlCommand` holds it in ``v_ref``; a solved :class:`~mpc_tracking.mpc.settings.MPCSolution`
    in its first planned input ``u[0, 0]``.
    """
    if isinstance(command, MPCSolution):
        return float(command.u[0, 0]) if command.success else float("nan")
    return float(getattr(command, "v_ref", float("nan")))


@runtime_checkable
class Controller(Protocol):
    """What :func:`~mpc_tracking.simulation.simulate` needs from a controller.

    :class:`~mpc_tracking.control.PurePursuit`, :class:`~mpc_tracking.control.Stanley` and the
    adapters :class:`~mpc_tracking.control.adapters.SpatialMPCController` and
    :class:`~mpc_tracking.control.adapters.CvxpyController` implement it;
    :func:`~mpc_tracking.control.adapters.as_controller` turns a :class:`~mpc_tracking.mpc.controller.SpatialMPC`
    or a cvxpy reference controller into one.

    Attributes
    ----------
    path : ReferencePath
        The path the controller was built on; simulate rejects another path (an equal copy is fine).
    vehicle : VehicleParams
        The geometry the controller steers (wheelbase; the footprint shown in plots; the default
        corridor tolerance is its width [m]).
    control_period : float
        Time between two calls of :meth:`solve` [s] that the controller plans with (rate limits);
        simulate runs at this period and rejects another.
    measures : bool
        True when :meth:`solve` needs the body-frame velocities of the reference point in
        ``measured`` (``v_x``, ``v_y`` [m/s] at the rear axle, yaw rate ``r`` [rad/s]); the speed
        ``speed`` [m/s] is always measured.
    horizon : int
        Number N of predicted steps in :attr:`Command.xy` (N+1 points); 0: the controller
        predicts nothing and ``xy`` is empty (the run's ``horizon_xy`` has shape (K, 0, 2)).
    speed_range : tuple of float
        ``(v_min, v_max)`` [m/s] the controller commands; the default time limit of a run is
        computed from it.
    """

    path: ReferencePath
    vehicle: VehicleParams

    @property
    def control_period(self) -> float: ...

    @property
    def measures(self) -> bool: ...

    @property
    def horizon(self) -> int: ...

    @property
    def speed_range(self) -> tuple[float, float]: ...

    def reset(self) -> None:
        """Forget every state of the last run (previous command, plan, filters)."""

    def solve(self, state: Projection, t: float = 0.0, measured: Mapping[str, float] | None = None) -> Command:
        """The command for the car's projection onto the path.

        Parameters
        ----------
        state : Projection
            Arc length ``s`` [m], lateral error ``e_y`` [m] (left positive) and heading error
            ``e_psi`` [rad] of the reference point (rear axle).
        t : float
            Time [s] (moving obstacles).
        measured : mapping, optional
            ``speed`` [m/s], and with :attr:`measures` the body-frame velocities.
        """

    def reference_input(self, s0: float) -> np.ndarray:
        """Reference ``(v [m/s], delta [rad])`` at arc length ``s0`` [m]; simulate starts the car at this speed."""

    def describe(self) -> dict[str, Any]:
        """What a run records about the controller in ``SimulationResult.info``: at least
        ``"controller"`` (its type name) and ``"mode"``."""
