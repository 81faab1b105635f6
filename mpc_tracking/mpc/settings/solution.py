"""What one MPC step returns: its :class:`Status` and the :class:`MPCSolution`."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

__all__ = ["Status", "MPCSolution"]


class Status(str, Enum):
    """Outcome of one MPC step; compares equal to its string value (``Status.SOLVED == "solved"``).

    :attr:`code` is the integer stored in logged time series (``SimulationResult.series["status"]``).
    """

    SOLVED = "solved"
    SOLVED_INACCURATE = "solved_inaccurate"
    FALLBACK = "fallback"  # solver failed: the previous plan, shifted, is reused
    SAFE_STOP = "safe_stop"  # fallback exhausted: braking at brake_decel, steering along the path
    REJOIN = "rejoin"  # outside the spatial model's domain: steering back to the path geometrically

    def __str__(self) -> str:
        return self.value

    @property
    def code(self) -> int:
        """Integer code in logs: 0 solved, 1 solved_inaccurate, 2 fallback, 3 safe_stop, 4 rejoin."""
        return _STATUS_ORDER.index(self)

    @property
    def solved(self) -> bool:
        """True when this step's QP was solved (accurately or not)."""
        return self in (Status.SOLVED, Status.SOLVED_INACCURATE)

    @classmethod
    def from_code(cls, code: int) -> Status:
        """The status of a logged integer code."""
        return _STATUS_ORDER[int(code)]


_STATUS_ORDER = tuple(Status)


@dataclass
class MPCSolution:
    """What one MPC step produced.

    Attributes
    ----------
    v, delta : float
        Command to apply: speed [m/s] and steering angle [rad].
    status : Status
        ``"solved"``, ``"solved_inaccurate"``, ``"fallback"`` (previous plan reused after a
        solver failure), ``"safe_stop"`` (fallback exhausted: braking, steering along the path) or
        ``"rejoin"`` (the car was outside the spatial model's domain -- facing away from the path
        or beyond its centre of curvature -- and is steered back by pure pursuit).
    solver_status : str
        OSQP's own status string of this step's (last) solve.
    success : bool
        True when this step's QP was solved.
    iterations : int
        OSQP iterations (summed over re-linearizations).
    solve_time : float
        OSQP's own solve time [s] (summed).
    step_time : float
        Wall time of the whole ``solve()`` call [s].
    s : ndarray, shape (N+1,)
        Arc lengths of the prediction grid [m].
    x : ndarray, shape (N+1, 3)
        Predicted (e_y, e_psi, t).
    u : ndarray, shape (N, 2)
        Predicted (v, delta).
    xy : ndarray, shape (N+1, 2)
        Predicted positions in the world [m].
    corridor_violation : float
        Largest slack used [m] (0 when the footprint stays inside the corridor).
    fallback_steps : int
        Consecutive failed steps so far (0 after a successful solve).
    lb, ub : ndarray, shape (N+1,)
        Corridor bounds on the reference point's e_y used in this step [m].
    """

    v: float
    delta: float
    status: Status
    solver_status: str
    success: bool
    iterations: int
    solve_time: float
    step_time: float
    s: np.ndarray
    x: np.ndarray
    u: np.ndarray
    xy: np.ndarray
    corridor_violation: float = 0.0
    fallback_steps: int = 0
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None

    @property
    def command(self) -> tuple[float, float]:
        """``(v, delta)``."""
        return self.v, self.delta
