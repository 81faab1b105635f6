"""Pure pursuit: steer the rear axle on the circle through a look-ahead point on the path.

The textbook law (Coulter 1992): with the look-ahead point at distance ``d`` from the rear axle and at
angle ``alpha`` to the car's axis, the circle through both has curvature ``2 sin(alpha) / d``, and the
kinematic bicycle drives it with::

    delta = atan(2 L sin(alpha) / d)

The look-ahead distance grows with the speed, ``L_d = clip(k v + L_0, L_min, L_max)``; the point is the
first one on the path ahead of the car at distance ``L_d`` from the rear axle (so ``d = L_d`` once the
car is within ``L_d`` of the path). On a circle of radius ``R`` the law gives ``atan(L / R)`` exactly, for
any ``L_d``. About a straight line it is a second-order system in arc length with natural "wavelength"
``L_d / sqrt(2)`` and damping ratio ``1/sqrt(2)`` whatever the gains (linearized:
``e'' + (2 / L_d) e' + (2 / L_d^2) e = 0``): an offset decays within about ``2 L_d`` of travel and
overshoots once by ``exp(-pi) = 4.3 %``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from mpc_tracking.control.geometric import GeometricController, TrackingLimits, check_gain, params_or_default
from mpc_tracking.errors import SettingsError
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["PurePursuit", "PurePursuitParams"]


@dataclass(frozen=True)
class PurePursuitParams:
    """Gains of :class:`PurePursuit`: the look-ahead ``L_d = clip(gain v + offset, minimum, maximum)``.

    The defaults (0.4 s, one wheelbase plus 1 m, 2 m .. 30 m) give a full-size car 3.7 m of look-ahead at
    rest and 7.7 m at 10 m/s: the offset decays within about 15 m at 10 m/s; a longer look-ahead is
    smoother and cuts corners where the curvature changes more.

    Attributes
    ----------
    lookahead_gain : float
        ``k`` [s], >= 0: look-ahead per unit speed.
    lookahead_offset : float or None
        ``L_0`` [m], >= 0; None: the vehicle's wheelbase + 1 m.
    lookahead_min : float or None
        ``L_min`` [m], > 0; None: the vehicle's wheelbase.
    lookahead_max : float
        ``L_max`` [m], >= ``L_min``.
    """

    lookahead_gain: float = field(default=0.4, metadata={"doc": "look-ahead per unit speed k [s]", "ge": 0.0})
    lookahead_offset: float | None = field(default=None, metadata={
        "doc": "look-ahead at rest L_0 [m] (default: wheelbase + 1 m)", "ge": 0.0})
    lookahead_min: float | None = field(default=None, metadata={
        "doc": "shortest look-ahead [m] (default: the wheelbase)", "gt": 0.0})
    lookahead_max: float = field(default=30.0, metadata={"doc": "longest look-ahead [m]", "gt": 0.0})

    def __post_init__(self) -> None:
        check_gain(self.lookahead_gain, "PurePursuitParams.lookahead_gain", allow_zero=True)
        if self.lookahead_offset is not None:
            check_gain(self.lookahead_offset, "PurePursuitParams.lookahead_offset", allow_zero=True)
        if self.lookahead_min is not None:
            check_gain(self.lookahead_min, "PurePursuitParams.lookahead_min")
        check_gain(self.lookahead_max, "PurePursuitParams.lookahead_max")
        if self.lookahead_min is not None and self.lookahead_min > self.lookahead_max:
            raise SettingsError(f"PurePursuitParams: expected lookahead_min <= lookahead_max, got "
                                f"{self.lookahead_min} > {self.lookahead_max} m")


class PurePursuit(GeometricController):
    """Pure-pursuit path tracker (a baseline for the MPC; the Controller protocol).

    Parameters
    ----------
    path : ReferencePath
    vehicle : VehicleParams, optional
        Its wheelbase ``L`` [m] is the law's; default :class:`VehicleParams`.
    params : PurePursuitParams, optional
        Look-ahead gains; default :class:`PurePursuitParams`.
    limits : TrackingLimits, optional
        Speed profile and command limits (``TrackingLimits.from_settings(mpc_settings)`` for the MPC's).

    Examples
    --------
    >>> import numpy as np
    >>> import mpc_tracking as mt
    >>> th = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    >>> ring = mt.ReferencePath(20 * np.cos(th), 20 * np.sin(th), closed=True, ds=0.5)
    >>> pp = mt.PurePursuit(ring)
    >>> cmd = pp.solve(ring.project(20.0, 0.0, np.pi / 2))      # on the line, along it
    >>> bool(abs(cmd.delta - np.arctan(2.7 / 20.0)) < 1e-3)    # steady steering atan(L / R)
    True
    """

    name = "pure_pursuit"

    def __init__(self, path: ReferencePath, vehicle: VehicleParams | None = None,
                 params: PurePursuitParams | None = None, limits: TrackingLimits | None = None) -> None:
        self.params = params = params_or_default(params, PurePursuitParams)
        super().__init__(path, vehicle, limits)
        L = self.vehicle.wheelbase
        self._offset = L + 1.0 if params.lookahead_offset is None else params.lookahead_offset
        self._l_min = L if params.lookahead_min is None else params.lookahead_min
        self._l_max = max(params.lookahead_max, self._l_min)

    def lookahead(self, speed: float) -> float:
        """``L_d = clip(k v + L_0, L_min, L_max)`` [m] at speed ``speed`` [m/s]."""
        return min(max(self.params.lookahead_gain * abs(speed) + self._offset, self._l_min), self._l_max)

    def _target(self, s: float, rear: np.ndarray, l_d: float) -> np.ndarray:
        """The first path point ahead of ``s`` at distance ``l_d`` from ``rear`` (linear between samples);
        the point ``l_d`` ahead along the path when the whole stretch is farther (the car is far off)."""
        path = self.path
        step = 0.25 * min(path.ds, l_d)
        # an arc of length l_d has a shorter chord: search up to twice as far (a path that turns back
        # within 2 l_d has no point at l_d beyond its turn, and the end of the search is aimed at)
        span = 2.0 * (l_d + float(np.hypot(*(path.point_at(np.array([s]))[0] - rear))))
        n = math.ceil(span / step) + 1
        s_grid = s + step * np.arange(n)
        if not path.closed:
            s_grid = np.minimum(s_grid, path.length)
        pts = path.point_at(s_grid)
        dist = np.hypot(pts[:, 0] - rear[0], pts[:, 1] - rear[1])
        beyond = np.nonzero(dist >= l_d)[0]
        if beyond.size == 0:  # the path ends (or turns back) within l_d: aim at the last point searched
            return pts[-1]
        i = int(beyond[0])
        if i == 0:
            return path.point_at(np.array([s + l_d]))[0] if path.closed or s + l_d <= path.length else pts[-1]
        w = (l_d - dist[i - 1]) / max(dist[i] - dist[i - 1], 1e-12)
        return pts[i - 1] + w * (pts[i] - pts[i - 1])

    def _steer(self, s: float, e_y: float, e_psi: float, speed: float,
               measured: Mapping[str, float]) -> tuple[float, np.ndarray]:
        x, y, yaw = self._pose(s, e_y, e_psi)
        rear = np.array([x, y])
        target = self._target(s, rear, self.lookahead(speed))
        dx, dy = target[0] - x, target[1] - y
        d = math.hypot(dx, dy)
        if d < 1e-9:
            return 0.0, target
        alpha = math.atan2(dy, dx) - yaw
        return math.atan(2.0 * self.vehicle.wheelbase * math.sin(alpha) / d), target
