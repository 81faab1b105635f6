"""Bringing the car back to the path when the spatial model cannot describe it.

The spatial model lives in the path's Frenet frame: it needs the car roughly aligned with the
path (``|e_psi| < π/2``; its linearization degrades well before) and on this side of the centre
of curvature (``e_y κ < 1``). A car that starts far off the line heading across it, or that spun,
is outside that domain. Instead of giving up, the controller then drives a geometric approach:
pure pursuit of a point ahead on the path -- the circular arc through the car's pose and that
point, at full lock when the point is behind (a U-turn), i.e. the turn-then-straight shape of a
Dubins approach -- at the speed of the tightest turn, until the car is back in the domain with
a margin (hysteresis) and within a minimum turning radius of the line, where the MPC takes
over.

>>> import mpc_tracking as mt
>>> path = mt.load_path("oval")
>>> # 5 m left of the line, facing back along it: full right lock (a U-turn toward the path), slowly
>>> v, delta = pure_pursuit(path, mt.VehicleParams(), mt.MPCSettings(), s0=0.0, e_y=5.0, e_psi=2.5)
>>> round(delta, 3), 0.5 <= v < 5.0
(-0.5, True)
"""
from __future__ import annotations

import numpy as np

__all__ = ["ENTER_EPSI", "EXIT_EPSI", "ENTER_EY_KAPPA", "EXIT_EY_KAPPA", "outside_domain", "back_in_domain",
           "pure_pursuit", "pursuit_angle"]

#: |e_psi| [rad] from which the car is steered back geometrically (the MPC clamps its operating point here)
ENTER_EPSI = 1.2
#: |e_psi| [rad] below which the MPC takes over again
EXIT_EPSI = 0.6
#: e_y κ from which the car counts as beyond the centre of curvature (the model is singular at 1)
ENTER_EY_KAPPA = 0.9
#: e_y κ below which the MPC takes over again
EXIT_EY_KAPPA = 0.5


def outside_domain(e_y: float, e_psi: float, kappa: float) -> bool:
    """True when the spatial model should not be trusted: ``|e_psi| >= 1.2`` or ``e_y κ >= 0.9``."""
    return abs(e_psi) >= ENTER_EPSI or e_y * kappa >= ENTER_EY_KAPPA


def back_in_domain(e_y: float, e_psi: float, kappa: float, e_y_max: float = float("inf")) -> bool:
    """True when a rejoining car is well inside the domain again: ``|e_psi| < 0.6``, ``e_y κ < 0.5``
    and ``|e_y| < e_y_max`` [m] (the controller passes the minimum turning radius, so that the MPC
    does not take over far off the line only to swing back across it at a steep angle)."""
    return abs(e_psi) < EXIT_EPSI and e_y * kappa < EXIT_EY_KAPPA and abs(e_y) < e_y_max


def pursuit_angle(path, *, s0: float, e_y: float, e_psi: float, look: float) -> tuple[float, float]:
    """Bearing of the pursuit point, seen from the car: the point on the path ``look`` [m] of arc length
    ahead of the car's projection (past an open path's end: on the straight line continuing its last heading,
    so that a car near the end is not turned towards the end point).

    Parameters
    ----------
    path : ReferencePath
    s0, e_y, e_psi : float
        The car's projection: arc length [m], lateral offset [m] (left positive), heading error [rad].
    look : float
        Look-ahead along the path [m].

    Returns
    -------
    (alpha, dist) : tuple of float
        ``alpha`` [rad] in (-π, π], the angle from the car's heading to the point (left positive), and
        ``dist`` [m] > 0 the straight-line distance to it. The arc through the car's pose and the point
        has curvature ``2 sin(alpha) / dist`` [1/m] (pure pursuit).

    Examples
    --------
    On a circle of radius R, on the line and along it, the pursuit arc is the circle itself:

    >>> import mpc_tracking as mt
    >>> path = mt.load_path("oval")
    >>> alpha, dist = pursuit_angle(path, s0=0.0, e_y=0.0, e_psi=0.0, look=5.0)
    >>> abs(alpha) < 0.2, 4.0 < dist <= 5.0
    (True, True)
    """
    s_t = s0 + look
    beyond = 0.0
    if not path.closed and s_t > path.length:  # past an open path's end: straight on along its last heading
        beyond, s_t = s_t - path.length, path.length
    car = path.point_at(np.array([s0]), e_y)[0]
    target = path.point_at(np.array([s_t]))[0]
    if beyond > 0.0:
        psi_end = float(path.interpolate(np.array([s_t]))["psi"][0])
        target = target + beyond * np.array([np.cos(psi_end), np.sin(psi_end)])
    yaw = float(path.interpolate(np.array([s0]))["psi"][0]) + e_psi
    dx, dy = target - car
    dist = max(float(np.hypot(dx, dy)), 1e-9)
    alpha = float(np.angle(np.exp(1j * (np.arctan2(dy, dx) - yaw))))
    return alpha, dist


def pure_pursuit(path, vehicle, settings, *, s0: float, e_y: float, e_psi: float,
                 delta_prev: float | None = None, period: float | None = None) -> tuple[float, float]:
    """Speed [m/s] and steering angle [rad] that steer the car back toward the path.

    Parameters
    ----------
    path : ReferencePath
    vehicle : VehicleParams
        ``wheelbase`` [m] of the bicycle geometry.
    settings : MPCSettings
        ``delta_max``, ``delta_rate_max``, ``a_y_max``, ``v_min``, ``v_max``, ``control_period``.
    s0, e_y, e_psi : float
        The car's projection: arc length [m], lateral offset [m] (left positive), heading error [rad].
    delta_prev : float, optional
        The last steering command [rad]; the new one moves from it by at most
        ``delta_rate_max x period``.
    period : float, optional
        Time until the next command [s] (default ``settings.control_period``).

    Returns
    -------
    (v, delta) : tuple of float
        ``delta`` within ±``delta_max``; ``v`` the speed of a turn at full lock within
        ``a_y_max`` (at least ``v_min``, at most ``v_max``).
    """
    wheelbase = float(vehicle.wheelbase)
    d_max = float(settings.delta_max)
    r_min = wheelbase / np.tan(d_max)
    # a look-ahead point two tight turns ahead, farther when the car is far off
    alpha, dist = pursuit_angle(path, s0=s0, e_y=e_y, e_psi=e_psi, look=max(2.0 * r_min, abs(e_y), 4.0 * path.ds))
    if abs(alpha) >= 0.5 * np.pi:
        delta = float(np.sign(alpha)) * d_max  # the point is behind: turn around at full lock
    else:
        delta = float(np.clip(np.arctan(wheelbase * 2.0 * np.sin(alpha) / dist), -d_max, d_max))
    if delta_prev is not None and np.isfinite(settings.delta_rate_max):
        step = settings.delta_rate_max * (settings.control_period if period is None else period)
        delta = float(np.clip(delta, delta_prev - step, delta_prev + step))
    v_turn = float(np.sqrt(settings.a_y_max * r_min))
    v = float(np.clip(v_turn, settings.v_min, settings.v_max))
    return v, delta
