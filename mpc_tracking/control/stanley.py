"""Stanley: steer the front wheels along the path and onto it (Hoffmann et al. 2007).

The law, with the front axle's cross-track error ``e_f`` [m] (left positive) and heading error
``psi_e = yaw - psi_path(s_f)`` [rad] at the front axle's projection ``s_f``, and the front axle's
speed ``v_f`` [m/s]::

    delta = -psi_e - atan(k e_f / (v_f + v_soft)) + k_yaw (r_path - r)

The first term turns the wheels parallel to the path, the second steers them onto it; with the wheels
turned that way ``e_f' = -v_f sin(atan(k e_f / (v_f + v_soft)))``, so a small error decays as
``exp(-k t v_f / (v_f + v_soft))``: at rate ``k`` once ``v_f >> v_soft``. The optional yaw damping
(``k_yaw`` > 0; needs the measured yaw rate ``r``, compared with the path's ``r_path = v kappa(s_f)``)
damps the yaw mode of a car with tyres at speed.

On a circle of radius ``R`` the front axle runs on the circle, so the steady steering is
``asin(L / R)`` (not ``atan(L / R)``: the rear axle runs ``R - sqrt(R^2 - L^2) ~ L^2 / 2R`` inside).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from mpc_tracking.control.geometric import GeometricController, TrackingLimits, check_gain, params_or_default
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.paths.projection import wrap_angle
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["Stanley", "StanleyParams"]


@dataclass(frozen=True)
class StanleyParams:
    """Gains of :class:`Stanley`.

    The defaults are the Stanley paper's cross-track gain and softening (k = 2.5 1/s, 1 m/s) without
    yaw damping: for the kinematic plant the law is exact and needs none.

    Attributes
    ----------
    gain : float
        ``k`` [1/s], > 0: the rate at which the front axle's cross-track error decays.
    softening : float
        ``v_soft`` [m/s], >= 0: keeps the cross-track term finite at low speed.
    yaw_damping : float
        ``k_yaw`` [s], >= 0: yaw-rate damping (0: off; > 0 needs the measured yaw rate).
    """

    gain: float = field(default=2.5, metadata={"doc": "cross-track gain k [1/s]", "gt": 0.0})
    softening: float = field(default=1.0, metadata={"doc": "softening speed v_soft [m/s]", "ge": 0.0})
    yaw_damping: float = field(default=0.0, metadata={
        "doc": "yaw-rate damping k_yaw [s] (0: off; > 0 measures the yaw rate)", "ge": 0.0})

    def __post_init__(self) -> None:
        check_gain(self.gain, "StanleyParams.gain")
        check_gain(self.softening, "StanleyParams.softening", allow_zero=True)
        check_gain(self.yaw_damping, "StanleyParams.yaw_damping", allow_zero=True)


class Stanley(GeometricController):
    """Stanley path tracker (a baseline for the MPC; the Controller protocol).

    Parameters
    ----------
    path : ReferencePath
    vehicle : VehicleParams, optional
        Its wheelbase places the front axle; default :class:`VehicleParams`.
    params : StanleyParams, optional
        Gains; default :class:`StanleyParams`.
    limits : TrackingLimits, optional
        Speed profile and command limits (``TrackingLimits.from_settings(mpc_settings)`` for the MPC's).

    Examples
    --------
    >>> import numpy as np
    >>> import mpc_tracking as mt
    >>> line = mt.ReferencePath(np.linspace(0, 50, 101), np.zeros(101), closed=False, ds=0.5)
    >>> st = mt.Stanley(line)
    >>> cmd = st.solve(line.project(10.0, 0.5, 0.0), measured={"speed": 5.0})   # 0.5 m left of the line
    >>> bool(np.isclose(cmd.delta, -np.arctan(2.5 * 0.5 / (5.0 + 1.0))))      # steers right
    True
    """

    name = "stanley"

    def __init__(self, path: ReferencePath, vehicle: VehicleParams | None = None,
                 params: StanleyParams | None = None, limits: TrackingLimits | None = None) -> None:
        self.params = params_or_default(params, StanleyParams)
        super().__init__(path, vehicle, limits)

    @property
    def measures(self) -> bool:
        """True with yaw damping (it needs the measured yaw rate ``r``)."""
        return self.params.yaw_damping > 0

    def reset(self) -> None:
        """Forget the last command and the front axle's arc length."""
        super().reset()
        self._s_front: float | None = None

    def _steer(self, s: float, e_y: float, e_psi: float, speed: float,
               measured: Mapping[str, float]) -> tuple[float, np.ndarray]:
        p, L = self.params, self.vehicle.wheelbase
        x, y, yaw = self._pose(s, e_y, e_psi)
        fx, fy = x + L * math.cos(yaw), y + L * math.sin(yaw)
        hint = s + L if self._s_front is None else self._s_front
        front = self.path.project(fx, fy, yaw, s_hint=hint)
        self._s_front = float(front.s)
        d_prev = 0.0 if self._cmd_prev is None else self._cmd_prev[1]
        v_f = speed / max(math.cos(d_prev), 0.1)
        delta = -float(front.e_psi) - math.atan(p.gain * float(front.e_y) / (v_f + p.softening))
        if p.yaw_damping > 0 and "r" in measured:
            kappa = float(self.path.interpolate(np.array([front.s]))["kappa"][0])
            delta += p.yaw_damping * (speed * kappa - float(measured["r"]))
        target = self.path.point_at(np.array([front.s]))[0]
        return float(wrap_angle(delta)), target
