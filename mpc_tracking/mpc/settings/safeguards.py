"""The safeguards group: fallback, safe stop, rejoin."""
from __future__ import annotations

from dataclasses import dataclass

from mpc_tracking.mpc.settings.fields import documented, setting
from mpc_tracking.mpc.settings.group import SettingsGroup

__all__ = ["SafeguardSettings"]

@documented
@dataclass(frozen=True)
class SafeguardSettings(SettingsGroup):
    """What happens when the solver fails or the car leaves the spatial model's domain."""

    max_fallback_steps: int = setting(5, "Steps the previous plan may be used after a solver failure before a "
                                         "safe stop", "steps", ge=0)
    brake_decel: float = setting(
        3.0, "Deceleration of the safe stop", "m/s^2", gt=0,
        notes="It brakes from the measured speed (when the caller passes ``measured={'speed': ...}``, as "
              ":func:`~mpc_tracking.simulate` does), else from the last command.")
    rejoin: bool = setting(
        True, "Steer back to the path geometrically when outside the model's domain (false: an error)", "-",
        notes="Outside the spatial model's domain (|e_psi| >= 1.2 rad, or e_y beyond 90 % of the radius of "
              "curvature) steer back to the path by pure pursuit of a point ahead on it (full lock when the point "
              "is behind), at the speed of the tightest turn, until |e_psi| < 0.6 rad, e_y kappa < 0.5 and |e_y| "
              "is within one minimum turning radius; then the MPC takes over (:mod:`mpc_tracking.mpc.rejoin`). "
              "False: such a state is an :class:`~mpc_tracking.errors.InputError`.")
