"""References along the MPC horizon: speed limits, a feasible speed profile, delay prediction.

Pure functions (vectorized over the horizon) used by :class:`~mpc_tracking.mpc.controller.SpatialMPC`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from mpc_tracking.models.prediction import spatial_bicycle as sb
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.mpc.sampler import PathSampler, window_reduce
from mpc_tracking.paths.speed_profile import ellipse_share, lateral_speed_limit, speed_profile

__all__ = ["speed_limit", "feasible_speed_profile", "lateral_reference", "predict_over_delay",
           "path_speed_ceilings", "braking_budget", "BRAKE_FLOOR"]

#: share of the braking (and acceleration) limit the friction ellipse always leaves at the lateral
#: limit: the QP's bounds and the whole-path ceilings both use :func:`braking_budget` with it (it
#: replaces a fixed 0.3 in the QP that the ceilings did not know: the car entered corners after fast
#: kinks above the ceiling)
BRAKE_FLOOR = 0.1


def braking_budget(a_y: np.ndarray, a_y_max: float, decel_max: float, floor: float = BRAKE_FLOOR) -> np.ndarray:
    """Braking the tyres have left at lateral acceleration ``a_y`` [m/s^2]:
    ``sqrt(1 - (a_y / a_y_max)^2) decel_max``, at least ``floor decel_max``.

    >>> braking_budget(np.array([0.0, 8.0]), a_y_max=8.0, decel_max=6.0).tolist()
    [6.0, 0.6000000000000001]
    """
    return ellipse_share(a_y, a_y_max, floor) * decel_max


def speed_limit(
    kappa: np.ndarray, delta_op: np.ndarray | None, inv_wheelbase: float, a_y_max: float, v_min: float, v_max: float
) -> np.ndarray:
    """Lateral-acceleration speed limit ``sqrt(a_y_max / |kappa|)`` clipped to [v_min, v_max].

    Parameters
    ----------
    kappa : ndarray, shape (K,)
        Path curvature [1/m].
    delta_op : ndarray, shape (K,), optional
        Planned steering [rad]; the car's own curvature ``tan(delta) / L`` counts when larger.
    inv_wheelbase : float
        1 / L [1/m].
    """
    k = np.abs(kappa)
    if delta_op is not None:
        k = np.maximum(k, np.abs(np.tan(delta_op)) * inv_wheelbase)
    return lateral_speed_limit(k, a_y_max, v_max, v_min)


def feasible_speed_profile(
    v_limit: np.ndarray, s: np.ndarray, decel: float, accel: float, v_start: float | None, v_min: float
) -> np.ndarray:
    """Highest speeds below ``v_limit`` reachable with the given braking and acceleration.

    Backward pass (brake into the limits ahead) and forward pass (accelerate out of every dip,
    starting from ``v_start``), both as cumulative minima in v^2 (``v_k^2 <= v_j^2 + 2 a |s_k - s_j|``):
    no Python loop.

    Parameters
    ----------
    v_limit : ndarray, shape (K,)
        Speed limit at each grid point [m/s].
    s : ndarray, shape (K,)
        Arc length of the grid points, increasing [m].
    decel, accel : float
        Braking and acceleration [m/s^2] (inf: no limit).
    v_start : float, optional
        Speed at ``s[0]`` the forward pass starts from (None: no forward pass).
    v_min : float
        Lower clip [m/s].

    Returns
    -------
    ndarray, shape (K,) [m/s]
    """
    v2 = v_limit * v_limit
    if np.isfinite(decel):  # v_k^2 <= min_{j >= k} (v_j^2 + 2 b (s_j - s_k))
        b2 = 2.0 * decel
        v2 = np.minimum.accumulate((v2 + b2 * s)[::-1])[::-1] - b2 * s
    if np.isfinite(accel):  # v_k^2 <= min_{j <= k} (v_j^2 + 2 a (s_k - s_j)), from v_start at s_0
        a2 = 2.0 * accel
        if v_start is not None:
            v2[0] = min(v2[0], v_start * v_start)
        v2 = np.minimum.accumulate(v2 - a2 * s) + a2 * s
    return np.maximum(np.sqrt(np.maximum(v2, 0.0)), v_min)


def lateral_reference(lo: np.ndarray, hi: np.ndarray, s: np.ndarray, slope: float) -> np.ndarray:
    """Lateral reference closest to the centre line that stays in [lo, hi] with a bounded slope.

    Where an obstacle closes part of the corridor the reference moves aside early, with
    ``|de_y/ds| <= slope``, instead of jumping at the obstacle: the envelopes
    ``L_k = max_j (lo_j - slope |s_k - s_j|)`` and ``U_k = min_j (hi_j + slope |s_k - s_j|)`` are
    computed with cumulative maxima/minima in both directions (no Python loop), and the reference
    is 0 clipped into [L, U] (the midpoint where the envelopes cross).

    Parameters
    ----------
    lo, hi : ndarray, shape (K,)
        Bounds on e_y [m] at the grid points.
    s : ndarray, shape (K,)
        Increasing arc lengths of the grid points [m].
    slope : float
        Largest lateral slope [-].
    """
    if lo.max() <= 0.0 <= hi.min():
        # 0 is inside every bound: the envelopes hold it too (L_k <= max lo <= 0 <= min hi <= U_k)
        return np.zeros_like(lo)
    a = slope * s
    lo_f = np.maximum.accumulate(lo + a) - a  # from points behind
    lo_b = np.maximum.accumulate((lo - a)[::-1])[::-1] + a  # from points ahead
    hi_f = np.minimum.accumulate(hi - a) + a
    hi_b = np.minimum.accumulate((hi + a)[::-1])[::-1] - a
    low = np.maximum(lo_f, lo_b)
    high = np.minimum(hi_f, hi_b)
    ref = np.minimum(np.maximum(0.0, low), high)
    crossed = low > high
    if crossed.any():
        ref = np.where(crossed, 0.5 * (low + high), ref)
    return ref


def predict_over_delay(
    sampler: PathSampler, vehicle: VehicleParams, s0: float, x0: np.ndarray, u: np.ndarray, delay: float, ds: float
) -> tuple[float, np.ndarray]:
    """Integrate the nonlinear spatial model over ``delay`` seconds with input ``u`` held.

    Returns the predicted arc length [m] (wrapped) and state (e_y, e_psi, t).
    """
    v = float(u[0])
    dist = v * delay
    n = max(1, int(np.ceil(dist / max(ds, 1e-6))))
    h = dist / n
    x = np.array(x0, dtype=float)
    s = float(s0)
    for _ in range(n):
        kap = sampler.sample(np.array([s + 0.5 * h])).kappa[0]
        x = sb.discrete_step(x, u, kap, h, vehicle, "rk4")
        s += h
    return float(sampler.wrap(np.array(s))), x


def path_speed_ceilings(path: Any, st: Any, speed_lag: float = 0.0) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Speed ceilings along the whole path from a forward-backward pass with the MPC's limits.

    With ``friction_ellipse`` the passes brake and accelerate within the same budget as the QP's
    bounds (:func:`braking_budget`, floor :data:`BRAKE_FLOOR`), so the plan can reach every ceiling.

    The horizon sees only N ds metres ahead; without these the plan can meet a curve it can no
    longer brake for (a degenerate QP). With a speed lag ``speed_lag`` [s] every ceiling holds
    (lag + control period) x v metres earlier, ``v`` the hard ceiling there, so a late speed
    response still meets it: the lead is the distance the car covers in that time at the speed it
    has there (it was (lag + T) x v_max: 15 m before a 10 m/s hairpin, braking 1.5 s per lap early).

    Parameters
    ----------
    path : ReferencePath
    st : MPCSettings
    speed_lag : float
        Time constant of the plant's speed loop [s] (0: none).

    Returns
    -------
    v_ref, v_box : ndarray, shape (n,), or None
        Speed reference (90 % of the acceleration, power and braking limits, at most the path's own
        profile) and hard ceiling of the speed bound (full braking) [m/s]; (None, None) without
        acceleration/braking limits.
    """
    if not (np.isfinite(st.decel_max) or np.isfinite(st.accel_max) or np.isfinite(st.power_per_mass)):
        return None, None
    ellipse = st.friction_ellipse
    v_ref = speed_profile(path, v_max=st.v_max, a_y_max=st.a_y_max, a_max=0.9 * st.accel_max,
                          a_brake=0.9 * st.decel_max, friction_ellipse=ellipse, ellipse_floor=BRAKE_FLOOR,
                          power_per_mass=0.9 * st.power_per_mass)
    if path.v_ref is not None:
        v_ref = np.minimum(v_ref, path.v_ref)
    v_box = speed_profile(path, v_max=st.v_max, a_y_max=st.a_y_max, a_max=np.inf, a_brake=0.95 * st.decel_max,
                          friction_ellipse=ellipse, ellipse_floor=BRAKE_FLOOR)
    lead = speed_lag + st.control_period
    if speed_lag > 0:
        # every ceiling holds ``lead`` seconds earlier, at the speed the car has there
        windows = np.ceil(lead * v_box / path.ds).astype(int) + 1
        v_ref, v_box = (_min_ahead(v, windows, path.closed) for v in (v_ref, v_box))
    return v_ref, v_box


def _min_ahead(values: np.ndarray, windows: np.ndarray, closed: bool) -> np.ndarray:
    """Minimum of ``values[i]`` over the point and the ``windows[i] - 1`` points after it (wrapping on loops).

    >>> _min_ahead(np.array([5.0, 4.0, 3.0, 9.0, 1.0]), np.array([1, 2, 2, 1, 1]), False).tolist()
    [5.0, 3.0, 3.0, 9.0, 1.0]
    """
    windows = np.asarray(windows, dtype=int)
    top = int(windows.max())
    ext = np.concatenate([values, values[: top - 1] if closed else np.full(top - 1, values[-1])])
    ext = np.ascontiguousarray(ext)
    out = np.empty_like(values)
    n = values.size
    for w in np.unique(windows):  # a handful of distinct window lengths
        sel = windows == w
        out[sel] = window_reduce(ext[: n + w - 1], int(w), False)[sel]
    return out
