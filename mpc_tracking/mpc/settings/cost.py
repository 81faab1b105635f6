"""The cost group: weights and mode."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from mpc_tracking.mpc.settings.checks import weight_matrix
from mpc_tracking.mpc.settings.fields import documented, setting
from mpc_tracking.mpc.settings.group import SettingsGroup

__all__ = ["CostSettings", "MODES"]

MODES = ("tracking", "time_optimal")


@documented
@dataclass(frozen=True)
class CostSettings(SettingsGroup):
    """Weights of the cost and the mode.

    The cost, summed over the horizon (k = 1..N for states, 0..N-1 for inputs)::

        1/2 (x_k - x_ref)^T Q (x_k - x_ref)   (Q_N = terminal_weight * Q at k = N)
        + 1/2 (u_k - u_ref)^T R (u_k - u_ref) + 1/2 (u_k - u_{k-1})^T R_rate (u_k - u_{k-1})
        + slack_weight * (corridor violation [m]) + time_weight * t_N   (time-optimal mode)
    """

    Q: Any = setting(
        (1.0, 2.0, 0.0), "State weights: 3 numbers or a 3x3 PSD matrix on (e_y, e_psi, t)", "1/unit^2",
        notes="For a prediction model with more states, its own number of weights, or 3 (the others then get "
              "the model's defaults).")
    R: Any = setting((0.2, 2.0), "Input weights: 2 numbers or a 2x2 PSD matrix on the inputs minus their reference",
                     "1/unit^2", notes="Inputs (v [m/s], delta [rad]) for the kinematic model, (a_x [m/s^2], "
                                       "delta [rad]) for the dynamic one.")
    R_rate: Any = setting((0.5, 20.0), "Input-change weights: 2 numbers or a 2x2 PSD matrix", "1/unit^2")
    terminal_weight: float = setting(5.0, "Factor on Q at the last prediction step", "-", ge=0)
    slack_weight: float = setting(1.0e3, "Exact-penalty weight per metre of corridor violation", "1/m", gt=0)
    mode: str = setting(
        "tracking", "What the cost asks for: follow the reference, or minimise the time", "-", choices=MODES,
        notes="'tracking' follows the centre line (or the corridor's lateral reference) and the speed "
              "reference; 'time_optimal' minimises the predicted time to the horizon's end inside the "
              "corridor (``time_weight``).")
    time_weight: float = setting(10.0, "Weight on the predicted time t_N in time-optimal mode", "1/s", ge=0)

    def _check_together(self) -> None:  # the matrices are made once, here (checked on the way)
        self.__dict__["R_matrix"] = weight_matrix(self.R, 2, f"{type(self).__name__}.R")
        self.__dict__["R_rate_matrix"] = weight_matrix(self.R_rate, 2, f"{type(self).__name__}.R_rate")

    @cached_property
    def R_matrix(self) -> np.ndarray:
        """``R`` as a 2x2 matrix, shape (2, 2)."""
        return weight_matrix(self.R, 2, f"{type(self).__name__}.R")

    @cached_property
    def R_rate_matrix(self) -> np.ndarray:
        """``R_rate`` as a 2x2 matrix, shape (2, 2)."""
        return weight_matrix(self.R_rate, 2, f"{type(self).__name__}.R_rate")
