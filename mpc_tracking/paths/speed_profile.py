"""Forward-backward speed profile along a path.

The lateral limit ``v <= sqrt(a_y_max / |kappa|)`` (and ``v_max``) is the ceiling; a forward pass
limits acceleration (``v_{i+1}^2 <= v_i^2 + 2 a_max ds``), a backward pass braking
(``v_i^2 <= v_{i+1}^2 + 2 a_brake ds``). With ``friction_ellipse`` the longitudinal limits shrink
with the lateral acceleration in use: ``a_x <= a_x_max sqrt(1 - (v^2 |kappa| / a_y_max)^2)``.
With a power limit ``power_per_mass`` (P/m) the acceleration is at most ``P/m / v`` too: at
constant power ``d(v^3)/ds = 3 P/m``, so a step reaches at most ``(v_i^3 + 3 (P/m) ds)^(1/3)``
(exact, not an explicit Euler step).
Closed paths are periodic: the passes start at the tightest point of the lap (where the speed
equals its lateral limit), so the lap end meets the lap start.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from mpc_tracking.errors import SettingsError

__all__ = ["speed_profile", "lateral_speed_limit", "ellipse_share"]


def ellipse_share(a_y: Any, a_y_max: float, floor: float = 0.0) -> np.ndarray:
    """Share of the longitudinal limits the tyres have left at lateral acceleration ``a_y``.

    The friction ellipse: ``sqrt(1 - (a_y / a_y_max)^2)``, at least ``floor`` (0 at and beyond the
    lateral limit when ``floor`` is 0). The braking budget at ``a_y`` is ``ellipse_share * decel_max``.

    Parameters
    ----------
    a_y : array_like
        Lateral acceleration [m/s^2] (its magnitude counts).
    a_y_max : float
        Lateral limit [m/s^2], > 0.
    floor : float
        Smallest share, in [0, 1].

    >>> ellipse_share([0.0, 6.0, 10.0, 12.0], a_y_max=10.0, floor=0.1).round(3).tolist()
    [1.0, 0.8, 0.1, 0.1]
    """
    use = np.minimum(np.abs(np.asarray(a_y, dtype=float)) / a_y_max, 1.0)
    return np.maximum(np.sqrt(1.0 - use * use), floor)


def _pos(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{name}: expected a positive number, got {value!r}") from None
    if not v > 0:  # also catches nan
        raise SettingsError(f"{name}: expected a positive number, got {value!r}")
    return v


def _pass(v_cap: np.ndarray, k_abs: np.ndarray, ds: np.ndarray, a_x: float, a_y: float, ellipse: bool,
          floor: float = 0.0, power: float = np.inf) -> np.ndarray:
    """One directional pass: ``v[i+1] <= sqrt(v[i]^2 + 2 a ds[i])`` (in place on a copy); with a
    finite ``power`` (P/m [W/kg]) also ``v[i+1] <= (v[i]^3 + 3 P/m ds[i])^(1/3)``."""
    v = v_cap.copy()
    v2 = v * v
    powered = bool(np.isfinite(power))
    for i in range(len(v) - 1):
        a, share = a_x, 1.0
        if ellipse and (np.isfinite(a_x) or powered):  # (an unlimited a_x stays unlimited on the ellipse)
            use = min(1.0, v2[i] * k_abs[i] / a_y)
            share = max(np.sqrt(max(0.0, 1.0 - use * use)), floor)
            a = a_x * share
        nxt = v2[i] + 2.0 * a * ds[i]
        if powered:  # constant power: v^3 grows by 3 P/m ds (the share of the ellipse scales P/m)
            nxt = min(nxt, (v2[i] ** 1.5 + 3.0 * share * power * ds[i]) ** (2.0 / 3.0))
        if nxt < v2[i + 1]:
            v2[i + 1] = nxt
    return np.sqrt(v2)


def lateral_speed_limit(curvature: Any, a_y_max: float, v_max: float, v_min: float = 0.0) -> np.ndarray:
    """The lateral-acceleration speed limit ``sqrt(a_y_max / |kappa|)`` clipped to ``[v_min, v_max]``.

    The one place of this formula (the path's profile, the MPC's ceilings and the plots use it).

    Parameters
    ----------
    curvature : array_like, shape (k,)
        Curvature [1/m] (of the path, or the larger of the path's and the car's own).
    a_y_max, v_max, v_min : float
        Lateral acceleration limit [m/s^2]; speed bounds [m/s].

    Returns
    -------
    ndarray, shape (k,) [m/s]

    >>> lateral_speed_limit([0.0, 0.1, 1.0], a_y_max=4.0, v_max=10.0, v_min=1.0).tolist()
    [10.0, 6.324555320336759, 2.0]
    """
    k = np.maximum(np.abs(np.asarray(curvature, dtype=float)), 1e-12)
    return np.minimum(np.maximum(np.sqrt(a_y_max / k), v_min), v_max)


def speed_profile(
    path: Any,
    *,
    v_max: float,
    a_y_max: float,
    a_max: float,
    a_brake: float,
    friction_ellipse: bool = False,
    v_start: float | None = None,
    v_end: float | None = None,
    ds: float | None = None,
    closed: bool | None = None,
    ellipse_floor: float = 0.0,
    power_per_mass: float = np.inf,
) -> np.ndarray:
    """Fastest speed at every waypoint within the lateral, acceleration and braking limits.

    Parameters
    ----------
    path : ReferencePath or array_like, shape (n,)
        A path (its ``kappa``, ``ds``, ``closed``) or a curvature array [1/m] (then give ``ds``).
    v_max : float
        Top speed [m/s].
    a_y_max : float
        Lateral acceleration limit [m/s^2].
    a_max, a_brake : float
        Acceleration and braking limits [m/s^2], > 0.
    friction_ellipse : bool
        Combine a_x and a_y on an ellipse (less acceleration/braking while cornering).
    v_start, v_end : float, optional
        Speeds at the start and end of an open path [m/s] (default: unconstrained).
    ds : float, optional
        Waypoint spacing [m] for a curvature array.
    closed : bool, optional
        Periodic profile (default: the path's ``closed``, False for arrays).
    ellipse_floor : float
        With ``friction_ellipse``: the smallest share of ``a_max``/``a_brake`` left at the lateral
        limit (:func:`ellipse_share`), in [0, 1]; the MPC's ceilings use its QP's braking budget.
    power_per_mass : float
        Power limit P/m [W/kg]: the acceleration at speed v is at most ``min(a_max, P/m / v)``
        (inf: not limited; it limits the forward pass only, not braking).

    Returns
    -------
    ndarray, shape (n,)
        Speeds [m/s].
    """
    if hasattr(path, "kappa"):
        kappa = np.asarray(path.kappa, dtype=float)
        steps = np.diff(np.append(path.s, path.length)) if path.closed else np.diff(path.s)
        closed = path.closed if closed is None else closed
    else:
        kappa = np.asarray(path, dtype=float).reshape(-1)
        steps = np.full(kappa.size, _pos(ds, "ds"))
        closed = bool(closed)
    if kappa.size < 2 or not np.all(np.isfinite(kappa)):
        raise SettingsError(f"kappa: expected >= 2 finite curvatures, got {kappa.size} values")
    v_max, a_y_max = _pos(v_max, "v_max"), _pos(a_y_max, "a_y_max")
    a_max, a_brake = _pos(a_max, "a_max"), _pos(a_brake, "a_brake")
    try:
        floor = float(ellipse_floor)
    except (TypeError, ValueError):
        floor = float("nan")
    if not 0.0 <= floor <= 1.0:
        raise SettingsError(f"ellipse_floor: expected a share in [0, 1], got {ellipse_floor!r}")
    power = _pos(power_per_mass, "power_per_mass")
    k_abs = np.abs(kappa)
    cap = lateral_speed_limit(k_abs, a_y_max, v_max)
    n = kappa.size
    if closed:
        i0 = int(np.argmin(cap))
        order = np.append(np.arange(i0, i0 + n) % n, i0)  # one lap starting and ending at the tightest point
        c = cap[order]
        kk = k_abs[order]
        st = steps[order[:-1]]
        v = _pass(c, kk, st, a_max, a_y_max, friction_ellipse, floor, power)
        v = _pass(v[::-1], kk[::-1], st[::-1], a_brake, a_y_max, friction_ellipse, floor)[::-1]
        out = np.empty(n)
        out[order[:-1]] = v[:-1]
        return out
    c = cap.copy()
    if v_start is not None:
        c[0] = min(c[0], max(0.0, float(v_start)))
    if v_end is not None:
        c[-1] = min(c[-1], max(0.0, float(v_end)))
    st = steps[: n - 1]
    v = _pass(c, k_abs, st, a_max, a_y_max, friction_ellipse, floor, power)
    return _pass(v[::-1], k_abs[::-1], st[::-1], a_brake, a_y_max, friction_ellipse, floor)[::-1]
