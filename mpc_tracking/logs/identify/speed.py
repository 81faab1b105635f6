"""The speed-loop fit of a log: lag, command delay, acceleration, braking and power limits."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from mpc_tracking.identification.fit import derivative, simulate_speed
from mpc_tracking.logs.identify.result import LogIdentification
from mpc_tracking.logs.table import LogTable

__all__ = ["identify_speed", "simulate_speed_power", "V_POWER_FLOOR", "POWER_GAIN"]

_WINDOW = 5.0  # [s] the speed loop is simulated over windows of this length from the measured speed
#: the power limit (P/m) / v is evaluated at no less than this speed [m/s] (it has no bound at standstill)
V_POWER_FLOOR = 0.5
#: a power limit is kept only when it lowers the speed fit's cost to this share of the fit without it
POWER_GAIN = 0.8


def simulate_speed_power(v0: float, v_cmd: np.ndarray, dt: float, tau: float, a_max: float, d_max: float,
                         power_per_mass: float = math.inf) -> np.ndarray:
    """Speed [m/s] of the clipped first-order loop with a power limit, shape of ``v_cmd``.

    ``v' = clip((v_cmd - v) / tau, -d_max, min(a_max, P/m / max(v, V_POWER_FLOOR)))``, RK4 per sample
    with the command held: :func:`mpc_tracking.identification.fit.simulate_speed` with the power limit
    evaluated at no less than :data:`V_POWER_FLOOR`.

    Examples
    --------
    On the power limit from 10 m/s, ``v v' = P/m``: ``v(t) = sqrt(v0^2 + 2 (P/m) t)``, after 1 s
    ``sqrt(140) = 11.83`` m/s (accel_max = 5 m/s^2 alone would give 15 m/s):

    >>> v = simulate_speed_power(10.0, np.full(51, 30.0), 0.02, 0.1, 5.0, 5.0, power_per_mass=20.0)
    >>> round(float(v[-1]), 2)
    11.83
    """
    return simulate_speed(v0, v_cmd, dt, tau, a_max, d_max, power_per_mass, v_floor=V_POWER_FLOOR)


def _windows(n: int, dt: float, lo: int, hi: int) -> list[tuple[int, int]]:
    w = max(int(_WINDOW / dt), 10)
    return [(a, min(a + w, hi)) for a in range(lo, hi - 5, w)]


def _speed_residual(v: np.ndarray, vc: np.ndarray, dt: float, wins: list[tuple[int, int]], tau: float,
                    a: float, d: float, p: float = math.inf) -> np.ndarray:
    parts = []
    for a0, a1 in wins:
        ok = np.isfinite(v[a0:a1]) & np.isfinite(vc[a0:a1])
        if not ok.all():
            continue
        parts.append(simulate_speed_power(v[a0], vc[a0:a1], dt, tau, a, d, p) - v[a0:a1])
    return np.concatenate(parts) if parts else np.zeros(0)


#: bounds of the logarithms of (tau [s], accel_max, decel_max [m/s^2], P/m [W/kg]) in the limit fit
_LOG_BOUNDS = {"a": (math.log(1e-2), math.log(100.0)), "d": (math.log(1e-2), math.log(100.0)),
               "p": (math.log(0.1), math.log(1e4))}


def _limit_fit(v: np.ndarray, vc: np.ndarray, dt: float, wins: list[tuple[int, int]], start: dict[str, float],
               free: tuple[str, ...], lo: float) -> tuple[dict[str, float], float]:
    """Least squares over ``tau`` and the ``free`` limits (``"a"``, ``"d"``, ``"p"``; the others inf);
    returns the values and the cost."""
    names = ("tau", *free)
    x0 = [max(math.log(start["tau"]), lo + 1e-6)]
    lower, upper = [lo], [math.log(30.0)]
    for k in free:
        b = _LOG_BOUNDS[k]
        x0.append(min(max(math.log(start[k]), b[0] + 1e-6), b[1] - 1e-6))
        lower.append(b[0])
        upper.append(b[1])

    def unpack(x: np.ndarray) -> dict[str, float]:
        val = {"a": math.inf, "d": math.inf, "p": math.inf}
        val.update({k: float(math.exp(xi)) for k, xi in zip(names, x, strict=True)})
        return val

    sol = least_squares(lambda x: _speed_residual(v, vc, dt, wins, *(unpack(x)[k] for k in ("tau", "a", "d", "p"))),
                        x0, bounds=(lower, upper))
    return unpack(sol.x), float(sol.cost)


def _time_on_limits(v: np.ndarray, vc: np.ndarray, dt: float, val: dict[str, float]) -> dict[str, float]:
    """Seconds the loop asks for more than each limit while that limit is the one that binds."""
    ok = np.isfinite(v) & np.isfinite(vc)
    v, vc = v[ok], vc[ok]
    want = (vc - v) / val["tau"]
    power = val["p"] / np.maximum(v, V_POWER_FLOOR)
    return {"a": float(np.count_nonzero((want > val["a"]) & (val["a"] <= power)) * dt),
            "p": float(np.count_nonzero((want > power) & (power < val["a"])) * dt),
            "d": float(np.count_nonzero(want < -val["d"]) * dt)}


def _delay_descent(m: int, val: dict[str, float], cost: float, fit: Any, top: int
                   ) -> tuple[int, dict[str, float], float]:
    """From delay ``m`` [samples], step one sample at a time (refitting with ``fit(m, start)``) while the
    cost falls; returns the delay, values and cost at the local minimum (delays in ``[0, top]``)."""
    for step in (-1, 1):
        moved = False
        while 0 <= m + step <= top:
            val_k, cost_k = fit(m + step, val)
            if cost_k >= cost:
                break
            m, val, cost, moved = m + step, val_k, cost_k, True
        if moved:
            break
    return m, val, cost


def identify_speed(table: LogTable, found: dict[str, str | None], dt: float, split: int,
                   out: LogIdentification) -> None:
    """Fit the speed loop: lag ``tau``, command delay, and the acceleration, braking and power limits it reaches.

    A grid over the delay with least squares over ``tau``, then the limits; a limit counts as measured only when
    the fitted loop spends ``max(0.5 tau, 0.2 s)`` on it, a power limit only when it also lowers the cost to
    :data:`POWER_GAIN` of the fit without it.

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
    out : LogIdentification
        Filled in place: the values, or why each is not excited (``out.not_excited``), and the RMS errors
        (``out.fitted``, ``out.holdout``).
    """
    keys = ("speed_lag", "accel_max", "decel_max", "power_per_mass")
    if found["v"] is None or found["v_cmd"] is None:
        missing = [r for r in ("v", "v_cmd") if found[r] is None]
        for k in keys:
            out.not_excited[k] = f"the log has no {' and no '.join(missing)} signal (measured speed, speed command)"
        return
    v, vc0 = table[found["v"]], table[found["v_cmd"]]
    fit_cmd = vc0[:split][np.isfinite(vc0[:split])]
    if fit_cmd.size < 10 or float(np.ptp(fit_cmd)) < 0.2:
        for k in keys:
            out.not_excited[k] = "the speed command hardly changes (< 0.2 m/s) in the fitted part"
        return
    n = v.size
    fit_w, hold_w = _windows(n, dt, 0, split), _windows(n, dt, split, n)
    lo = math.log(0.4 * dt)  # a faster lag is no lag at this sampling (and RK4 would be unstable)
    def shifted(m: int) -> np.ndarray:
        return np.concatenate([np.full(m, vc0[0]), vc0[: n - m]])

    def delay_search(lim: dict[str, float], tau0: float) -> tuple[int, float]:
        """The command delay [samples] and lag [s] that fit best with the limits ``lim`` held."""
        cache: dict[int, tuple[float, float]] = {}

        def lag_fit(m: int) -> tuple[float, float]:
            if m not in cache:
                vcm = shifted(m)
                sol = least_squares(lambda p: _speed_residual(v, vcm, dt, fit_w, math.exp(p[0]), lim["a"], lim["d"],
                                                              lim["p"]),
                                    [max(math.log(tau0), lo + 1e-6)], bounds=([lo], [math.log(30.0)]))
                cache[m] = (float(sol.cost), float(math.exp(sol.x[0])))
            return cache[m]

        top = round(0.5 / dt)  # speed delays up to 0.5 s: every other sample, then the neighbours of the best
        coarse = min(range(0, top + 1, 2), key=lambda m: lag_fit(m)[0])
        best = min((k for k in (coarse - 1, coarse, coarse + 1) if 0 <= k <= top), key=lambda k: lag_fit(k)[0])
        return best, lag_fit(best)[1]

    m, tau = delay_search({"a": math.inf, "d": math.inf, "p": math.inf}, 0.3)
    vc = shifted(m)
    acc = derivative(np.nan_to_num(v), dt, max(5 * dt, 0.2))
    a0, d0 = max(float(np.nanpercentile(acc[:split], 99)), 0.1), max(float(-np.nanpercentile(acc[:split], 1)), 0.1)
    p0 = max(float(np.nanpercentile((acc * np.maximum(np.nan_to_num(v), V_POWER_FLOOR))[:split], 99)), 0.2)
    val, cost = _limit_fit(v, vc, dt, fit_w, {"tau": tau, "a": a0, "d": d0, "p": p0}, ("a", "d", "p"), lo)
    # a limit is measured only where the fitted loop spends time on it (the others are refitted without it)
    need = max(0.5 * val["tau"], 0.2)
    on = _time_on_limits(v[:split], vc[:split], dt, val)
    free = tuple(k for k in ("a", "d", "p") if on[k] >= need)
    if free != ("a", "d", "p"):
        val, cost = _limit_fit(v, vc, dt, fit_w, val | {"a": a0 if math.isinf(val["a"]) else val["a"]}, free, lo)
    if free:  # a saturated loop biases the delay found without limits (a longer lag, a later start): descend in
        m, val, cost = _delay_descent(m, val, cost, lambda k, start: _limit_fit(v, shifted(k), dt, fit_w, start, free,
                                                                                 lo), round(0.5 / dt))
        vc = shifted(m)
    if "p" in free:
        without = tuple(k for k in free if k != "p")
        val_np, cost_np = _limit_fit(v, vc, dt, fit_w, val, without, lo)
        if cost > POWER_GAIN * cost_np:  # the power term explains little: a constant limit it is
            out.not_excited["power_per_mass"] = (f"the acceleration does not fall with speed as (P/m) / v (a power "
                                                 f"limit lowers the fit's cost only from {cost_np:.3g} to "
                                                 f"{cost:.3g})")
            free, val, cost = without, val_np, cost_np
    if "a" not in free:
        out.not_excited["accel_max"] = (f"the drive never asked for more acceleration than the car gave (at most "
                                        f"{a0:.3g} m/s^2 measured)")
    if "d" not in free:
        out.not_excited["decel_max"] = (f"the drive never asked for more braking than the car gave (at most "
                                        f"{d0:.3g} m/s^2 measured)")
    if "p" not in free and "power_per_mass" not in out.not_excited:
        out.not_excited["power_per_mass"] = (f"the acceleration never stayed limited as (P/m) / v for {need:.2g} s "
                                             f"(at most {p0:.3g} W/kg measured)")
    if not free:
        val["tau"] = tau
    out.speed_lag, out.speed_delay = val["tau"], m * dt
    out.accel_max, out.decel_max = val["a"], val["d"]
    out.power_per_mass = val["p"] if math.isfinite(val["p"]) else None

    def rms(r: np.ndarray) -> float:
        return float(np.sqrt(np.mean(r ** 2))) if r.size else math.nan

    for part, wins in (("fitted", fit_w), ("holdout", hold_w)):
        errs = getattr(out, part)
        errs["v"] = rms(_speed_residual(v, vc, dt, wins, val["tau"], val["a"], val["d"], val["p"]))
        sel = np.zeros(v.size, dtype=bool)
        for a0_, a1_ in wins:
            sel[a0_:a1_] = True
        sel &= np.isfinite(v) & np.isfinite(vc0)
        errs["v_trivial"] = rms(vc0[sel] - v[sel])
