"""The steering fit of a log: offset, delay and rate limit of the steering against its command."""
from __future__ import annotations

import math

import numpy as np

from mpc_tracking.identification.fit import derivative
from mpc_tracking.logs.identify.result import LogIdentification
from mpc_tracking.logs.table import LogTable

__all__ = ["identify_steering", "shift", "STEER_CATCH_UP", "RATE_PLATEAU"]

#: [rad] the steering runs this far behind its (delayed, offset) command: catching up, its rate tells a rate limit
STEER_CATCH_UP = 0.01
#: share of the catching-up samples turning within 10 % of the top rate (95th percentile) that reads as a
#: rate limit; a first-order lag after a step spends ~0.1 tau / (tau ln(gap / STEER_CATCH_UP)), a few %, there
RATE_PLATEAU = 0.4
_RATE_WINDOW = 0.2  # [s] Savitzky-Golay window of the steering rate


def identify_steering(table: LogTable, found: dict[str, str | None], dt: float, split: int, wheelbase: float | None,
                      v_min: float, max_delay: float, out: LogIdentification) -> None:
    """Fit ``delta(t) = delta_cmd(t - delay) + offset`` and, from steering feedback, the steering's rate limit.

    Without feedback the steering angle is ``atan(L r / v)`` above ``v_min``; with a rate limit found, the delay
    and offset are fitted again through the rate-limited command.

    Parameters
    ----------
    table : LogTable
        The log, on one time grid.
    found : dict of str -> str or None
        Role (:data:`~mpc_tracking.logs.identify.SIGNALS`) -> column of ``table``, None when the log has none.
    dt : float
        Sample period of ``table`` [s].
    split : int
        Samples ``[0, split)`` are fitted on, the rest is the hold-out.
    wheelbase : float or None
        L [m], for the angle from the yaw rate.
    v_min : float
        Slowest speed [m/s] at which the yaw rate gives the steering angle.
    max_delay : float
        Longest delay searched [s].
    out : LogIdentification
        Filled in place: the values, or why each is not excited (``out.not_excited``), and the RMS errors
        (``out.fitted``, ``out.holdout``).
    """
    keys = ("steering_offset", "steering_delay")
    if found["delta_cmd"] is None:
        for k in keys:
            out.not_excited[k] = "the log has no steering command"
        return
    cmd = table[found["delta_cmd"]]
    if found["steer"] is not None:
        actual = table[found["steer"]]
        ok = np.isfinite(actual)
    elif found["yaw_rate"] is not None and found["v"] is not None and wheelbase is not None:
        v, r = table[found["v"]], table[found["yaw_rate"]]
        ok = np.isfinite(v) & np.isfinite(r) & (v > v_min)
        with np.errstate(invalid="ignore", divide="ignore"):
            actual = np.arctan(wheelbase * r / v)
        out.signals["steer"] = f"atan(L {found['yaw_rate']} / {found['v']})"
    else:
        why = ("no steering feedback and no wheelbase= to infer the angle from the yaw rate" if wheelbase is None
               else "no steering feedback, yaw rate or speed signal")
        for k in keys:
            out.not_excited[k] = why
        return
    fit_ok = ok.copy()
    fit_ok[split:] = False
    if np.count_nonzero(fit_ok) < 20 or float(np.nanstd(cmd[fit_ok])) < 0.005:
        for k in keys:
            out.not_excited[k] = (f"the steering command hardly moves (std < 0.005 rad) above {v_min:g} m/s in the "
                                  "fitted part")
        return
    best, frac = _delay_fit(actual, cmd, dt, max_delay, fit_ok)
    out.steering_delay = (best + frac) * dt
    out.steering_offset = float(np.mean(_steer_err(actual, cmd, best, fit_ok)))
    rate = None
    if found["steer"] is None:
        out.not_excited["steering_rate_max"] = ("needs a steering feedback signal (the yaw-rate angle lags the "
                                                "wheels through the car's own response)")
    else:
        _steering_rate(actual, shift(cmd, best) + out.steering_offset, dt, fit_ok, out)
        rate = out.steering_rate_max
    model = cmd
    if rate is not None:  # a rate limit read as delay: the delay and offset again, with the limit in the model
        model = _rate_limited(cmd, dt, rate)  # time-invariant: limiting, then delaying = delaying, then limiting
        best, frac = _delay_fit(actual, model, dt, max_delay, fit_ok)
        out.steering_delay = (best + frac) * dt
        out.steering_offset = float(np.mean(_steer_err(actual, model, best, fit_ok)))
    hold_ok = ok.copy()
    hold_ok[:split] = False
    for part, mask in (("fitted", fit_ok), ("holdout", hold_ok)):
        err = _steer_err(actual, model, best, mask) - out.steering_offset
        triv = _steer_err(actual, cmd, 0, mask)
        getattr(out, part)["delta"] = float(np.sqrt(np.mean(err ** 2))) if err.size else math.nan
        getattr(out, part)["delta_trivial"] = float(np.sqrt(np.mean(triv ** 2))) if triv.size else math.nan


def _delay_fit(actual: np.ndarray, cmd: np.ndarray, dt: float, max_delay: float,
               mask: np.ndarray) -> tuple[int, float]:
    """The delay [samples] of the (modelled) command ``cmd`` minimizing the variance of ``actual - cmd shifted``,
    and its sub-sample part (a parabola through the three costs around the minimum)."""
    costs = []
    for m in range(round(max_delay / dt) + 1):
        e = _steer_err(actual, cmd, m, mask)
        costs.append(float(np.var(e)) if e.size > 10 else math.inf)
    best = int(np.argmin(costs))
    frac = 0.0
    if 0 < best < len(costs) - 1:
        c0, c1, c2 = costs[best - 1], costs[best], costs[best + 1]
        den = c0 - 2 * c1 + c2
        frac = 0.5 * (c0 - c2) / den if den > 0 else 0.0
    return best, frac


def shift(cmd: np.ndarray, m: int) -> np.ndarray:
    """``cmd`` delayed by ``m`` samples (NaN before the first)."""
    return np.concatenate([np.full(m, np.nan), cmd[: cmd.size - m]]) if m else cmd


def _rate_limited(u: np.ndarray, dt: float, rate: float) -> np.ndarray:
    """A servo following ``u`` [rad] at most ``rate`` [rad/s], from the first finite sample; shape of ``u``."""
    out = np.full_like(u, np.nan)
    step = rate * dt
    d = math.nan
    for k, c in enumerate(u.tolist()):
        if c != c:  # NaN: the delayed command has not started
            continue
        d = c if d != d else d + min(max(c - d, -step), step)
        out[k] = d
    return out


def _steering_rate(actual: np.ndarray, target: np.ndarray, dt: float, mask: np.ndarray,
                   out: LogIdentification) -> None:
    """``steering_rate_max`` (a plateau of the catching-up rates) or ``steering_rate_seen`` (no plateau).

    ``actual``, ``target``: the steering and its delayed, offset command [rad], shape (K,); ``mask``: the
    samples fitted on."""
    fin = np.isfinite(actual)
    filled = actual.copy()
    idx = np.arange(actual.size)
    filled[~fin] = np.interp(idx[~fin], idx[fin], actual[fin])
    rate = derivative(filled, dt, _RATE_WINDOW)
    gap = target - actual
    with np.errstate(invalid="ignore"):
        catching = mask & fin & np.isfinite(gap) & (np.abs(gap) > STEER_CATCH_UP) & (rate * gap > 0)
    if np.count_nonzero(catching) < max(5, round(_RATE_WINDOW / dt)):
        out.not_excited["steering_rate_max"] = (
            f"the steering never ran {STEER_CATCH_UP:g} rad behind its command for {_RATE_WINDOW:g} s in the "
            "fitted part (steering steps too small, or a servo faster than the log's sampling)")
        return
    r = np.abs(rate[catching])
    top = float(np.percentile(r, 95))
    near_top = r >= 0.9 * top
    if np.mean(near_top) >= RATE_PLATEAU:
        out.steering_rate_max = float(np.median(r[near_top]))
    else:
        out.steering_rate_seen = top


def _steer_err(actual: np.ndarray, cmd: np.ndarray, m: int, mask: np.ndarray) -> np.ndarray:
    """``actual - cmd`` on ``mask``, the command delayed ``m`` samples."""
    shifted = shift(cmd, m)
    sel = mask & np.isfinite(shifted)
    return actual[sel] - shifted[sel]

