"""The observer group: the disturbance observer (offset-free tracking)."""
from __future__ import annotations

from dataclasses import dataclass

from mpc_tracking.mpc.settings.fields import documented, setting
from mpc_tracking.mpc.settings.group import SettingsGroup

__all__ = ["ObserverSettings"]

@documented
@dataclass(frozen=True)
class ObserverSettings(SettingsGroup):
    """The disturbance observer (offset-free tracking)."""

    disturbance_observer: bool = setting(
        False, "Estimate a constant disturbance on the prediction model and add it to every step", "-",
        notes="The estimate comes from the one-step prediction residuals (see :mod:`mpc_tracking.mpc.disturbance`); "
              "reset by :meth:`SpatialMPC.reset`.")
    disturbance_time_constant: float = setting(0.5, "Low-pass time constant of the disturbance estimate", "s", gt=0)
    disturbance_max: float = setting(3.0, "Bound on the disturbance estimate, as an acceleration (converted per "
                                          "state, see mpc_tracking.mpc.disturbance)", "m/s^2", gt=0)
