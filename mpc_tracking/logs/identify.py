"""Identification from a recorded drive: what the logged signals excite, with hold-out errors.

:func:`identify_from_log` fits, on the first part of a log (``fit_fraction``, default 70 %):

* the **speed loop** of the vehicle file (:mod:`mpc_tracking.identification.fit`'s model, the same
  ``simulate_speed``): ``v' = clip((v_cmd(t - d_v) - v) / tau, -decel_max, accel_max)`` -- the lag
  ``tau`` and a command delay ``d_v`` (grid over ``d_v``, least squares over ``tau``, then the limits);
  a limit counts as measured only when the fitted loop spends at least ``max(0.5 tau, 0.2 s)`` on it
  (otherwise ``inf``, named "not excited"), as in ``identify``; the acceleration limit may fall with
  speed as a **power limit**: ``v' <= min(accel_max, (P/m) / v)`` (``power_per_mass`` P/m [W/kg]),
  kept only when the loop spends that long on it *and* it lowers the fit's cost by a fifth (a
  constant limit fitted with a spurious power term does not);
* the **steering offset and delay**: the steering the car turned with, from a steering feedback
  signal when the log has one, else from the yaw rate and speed with the kinematic relation
  ``delta = atan(L r / v)`` (``wheelbase`` L needed; samples above ``v_min``), against the commanded
  angle: ``delta(t) = delta_cmd(t - d) + offset``;
* the **steering rate limit** ``steering_rate_max`` (from a steering feedback signal only: the yaw-rate
  angle lags the wheels through the car's own response): where the steering runs behind its delayed
  command by more than :data:`STEER_CATCH_UP` and moves towards it, a servo with a rate limit turns at
  one rate whatever the gap (a plateau of the rates), a lag at a rate proportional to it; a plateau
  holding at least :data:`RATE_PLATEAU` of those samples is the limit (their median rate), otherwise the
  steering is not rate limited up to the fastest rate it showed (``steering_rate_seen``).

and reports the RMS errors of both on the rest of the log (hold-out), beside those of the trivial
predictions (speed = command, steering = command). With a ``base`` vehicle (the geometry: mass,
CG position, ``I_z``) and a lateral velocity in the log it also fits

* the **axle stiffness and the grip peak** (``tyre_B_f``, ``tyre_B_r``, ``mu``;
  :mod:`mpc_tracking.logs.tyres`) where the drive excites them: slip for the stiffness, a tyre
  near its peak force for ``mu``.

What the drive does not excite is named, with why: a constant speed command (no lag), limits
never reached, no steering, no wheelbase, no slip, a peak never approached; what is not fitted is
taken from ``base`` (or assumed and named). A log in which nothing is excited raises
:class:`~mpc_tracking.errors.IdentificationError` saying so.
"""
from __future__ import annotations

import datetime
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from mpc_tracking.errors import IdentificationError, InputError
from mpc_tracking.identification.fit import derivative, simulate_speed
from mpc_tracking.identification.vehicle_file import VehicleFile, plain
from mpc_tracking.logs.table import LogTable

__all__ = ["identify_from_log", "LogIdentification", "SIGNALS", "simulate_speed_power", "V_POWER_FLOOR",
           "STEER_CATCH_UP", "RATE_PLATEAU"]

logger = logging.getLogger(__name__)

#: role -> (message type suffix, field) candidates on bags, then CSV column names
SIGNALS: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "v": ((("Odometry", "vx"), ("TwistStamped", "v")), ("v", "speed", "v_x", "vx", "velocity")),
    "v_cmd": ((("AckermannDriveStamped", "speed"), ("AckermannDrive", "speed"), ("Twist", "v")),
              ("v_cmd", "speed_cmd", "cmd_speed", "command_speed")),
    "delta_cmd": ((("AckermannDriveStamped", "steering_angle"), ("AckermannDrive", "steering_angle")),
                  ("delta_cmd", "steer_cmd", "steering_cmd", "steering_angle_cmd")),
    "yaw_rate": ((("Imu", "yaw_rate"), ("Odometry", "yaw_rate")), ("yaw_rate", "r", "omega_z")),
    "steer": ((("SteeringReport", "steering_tire_angle"),), ("steer", "steering_angle", "delta", "steer_angle")),
    "vy": ((("Odometry", "vy"),), ("vy", "v_y", "lateral_velocity")),
}
_WINDOW = 5.0  # [s] the speed loop is simulated over windows of this length from the measured speed
#: [rad] the steering runs this far behind its (delayed, offset) command: catching up, its rate tells a rate limit
STEER_CATCH_UP = 0.01
#: share of the catching-up samples turning within 10 % of the top rate (95th percentile) that reads as a
#: rate limit; a first-order lag after a step spends ~0.1 tau / (tau ln(gap / STEER_CATCH_UP)), a few %, there
RATE_PLATEAU = 0.4
_RATE_WINDOW = 0.2  # [s] Savitzky-Golay window of the steering rate


@dataclass
class LogIdentification:
    """What :func:`identify_from_log` measured.

    Attributes
    ----------
    speed_lag : float or None
        Speed-loop time constant [s] (None: not excited).
    speed_delay : float or None
        Delay of the speed response to its command [s].
    accel_max, decel_max : float
        Acceleration and braking limits [m/s²]; ``inf`` when the drive never reached one.
    power_per_mass : float or None
        P/m [W/kg]: above ``v = (P/m) / accel_max`` the acceleration is limited to ``(P/m) / v``;
        None when the drive does not show such a limit.
    steering_offset, steering_delay : float or None
        ``delta = delta_cmd(t - delay) + offset`` [rad], [s]; None when not excited.
    steering_rate_max : float or None
        Largest rate the steering turns at [rad/s] (a servo's rate limit); None: not rate limited
        (up to ``steering_rate_seen``) or not excited (named in ``not_excited``).
    steering_rate_seen : float or None
        Fastest steering rate in the log [rad/s] (95th percentile while catching up with the command).
    tyre_B_f, tyre_B_r, mu : float or None
        Pacejka stiffness factors [1/rad] and friction coefficient [-] (None: not excited, or no
        ``base`` geometry); :mod:`mpc_tracking.logs.tyres`.
    cornering_stiffness_f, cornering_stiffness_r : float or None
        Axle cornering stiffness ``B C mu F_z`` at the static load [N/rad].
    not_excited : dict of str -> str
        Parameter -> why the log does not determine it.
    holdout, fitted : dict
        RMS errors on the hold-out part and on the fitted part: ``v`` [m/s] and ``delta`` [rad],
        each beside the trivial prediction (``v_trivial``: speed = command; ``delta_trivial``).
    signals : dict of str -> str
        Role (``v``, ``v_cmd``, ``delta_cmd``, ``yaw_rate``, ``steer``) -> column used.
    source : str
        The log.
    """

    speed_lag: float | None = None
    speed_delay: float | None = None
    accel_max: float = math.inf
    decel_max: float = math.inf
    power_per_mass: float | None = None
    steering_offset: float | None = None
    steering_delay: float | None = None
    steering_rate_max: float | None = None
    steering_rate_seen: float | None = None
    tyre_B_f: float | None = None
    tyre_B_r: float | None = None
    mu: float | None = None
    cornering_stiffness_f: float | None = None
    cornering_stiffness_r: float | None = None
    not_excited: dict[str, str] = field(default_factory=dict)
    holdout: dict[str, float] = field(default_factory=dict)
    fitted: dict[str, float] = field(default_factory=dict)
    signals: dict[str, str] = field(default_factory=dict)
    source: str = ""

    def summary(self) -> str:
        """A table of the identified values, the unexcited ones and the errors."""
        def f(v: float | None, unit: str) -> str:
            return "-" if v is None else ("inf" if math.isinf(v) else f"{v:.4g} {unit}")

        rows = [("speed lag", f(self.speed_lag, "s")), ("speed delay", f(self.speed_delay, "s")),
                ("accel_max", f(self.accel_max, "m/s^2")), ("decel_max", f(self.decel_max, "m/s^2")),
                ("power/mass", f(self.power_per_mass, "W/kg")),
                ("steering offset", f(self.steering_offset, "rad")), ("steering delay", f(self.steering_delay, "s")),
                ("steering rate max", f(self.steering_rate_max, "rad/s") if self.steering_rate_max is not None
                 or self.steering_rate_seen is None else f"not limited up to {self.steering_rate_seen:.3g} rad/s"),
                ("tyre B front", f(self.tyre_B_f, "1/rad")), ("tyre B rear", f(self.tyre_B_r, "1/rad")),
                ("C_alpha front", f(self.cornering_stiffness_f, "N/rad")),
                ("C_alpha rear", f(self.cornering_stiffness_r, "N/rad")), ("mu", f(self.mu, ""))]
        lines = [f"  {k:<16} {v}" for k, v in rows]
        for k, why in self.not_excited.items():
            lines.append(f"  not excited: {k}: {why}")
        for title, errs in (("fitted part", self.fitted), ("hold-out", self.holdout)):
            if errs:
                lines.append(f"  RMS error ({title}): " + ", ".join(f"{k} {v:.3g}" for k, v in errs.items()))
        return "\n".join(lines)

    def vehicle_file(self, base: Any = None, *, wheelbase: float | None = None) -> VehicleFile:
        """A vehicle file: the identified speed loop; everything else from ``base`` (a
        :class:`VehicleFile` or ``DynamicParams``) or, without one, assumed as ``identify`` does for
        unknowns (1 kg, CG mid-wheelbase, ``mu = 1``, ``B = 10``, ``C = 1.3``; listed in the report)."""
        from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

        assumed: list[str] = []
        if isinstance(base, VehicleFile):
            params = base.params
        elif isinstance(base, DynamicParams):
            params = base
        elif base is None:
            if wheelbase is None:
                raise InputError("vehicle_file: give base= (a vehicle file or DynamicParams) or wheelbase=")
            half = 0.5 * float(wheelbase)
            params = DynamicParams(mass=1.0, I_z=half * half, l_f=half, l_r=half, h_cg=0.0, mu=1.0, tyre_B_f=10.0,
                                   tyre_C_f=1.3, tyre_B_r=10.0, tyre_C_r=1.3)
            assumed = ["mass", "I_z", "l_f", "l_r", "h_cg", "mu", "tyre_B_f", "tyre_C_f", "tyre_B_r", "tyre_C_r"]
        else:
            raise InputError(f"base: expected a VehicleFile or DynamicParams, got {type(base).__name__}")
        tyres = {k: getattr(self, k) for k in ("tyre_B_f", "tyre_B_r", "mu") if getattr(self, k) is not None}
        if tyres:
            import dataclasses

            params = dataclasses.replace(params, **tyres)
            assumed = [k for k in assumed if k not in tyres]
        lag = self.speed_lag if self.speed_lag is not None else (base.speed_lag if isinstance(base, VehicleFile)
                                                                 else 0.0)
        report = {"from_log": {"speed_lag": self.speed_lag, "speed_delay": self.speed_delay,
                               "accel_max": self.accel_max, "decel_max": self.decel_max,
                               "power_per_mass": self.power_per_mass, "steering_offset": self.steering_offset,
                               "steering_delay": self.steering_delay,
                               "steering_rate_max": self.steering_rate_max,
                               "steering_rate_seen": self.steering_rate_seen, "tyre_B_f": self.tyre_B_f,
                               "tyre_B_r": self.tyre_B_r, "mu": self.mu,
                               "cornering_stiffness_f": self.cornering_stiffness_f,
                               "cornering_stiffness_r": self.cornering_stiffness_r,
                               "not_excited": self.not_excited, "holdout": self.holdout, "fitted": self.fitted,
                               "signals": self.signals}}
        measured = self.steering_rate_max is not None or self.steering_rate_seen is not None
        rate_max = self.steering_rate_max if measured or not isinstance(base, VehicleFile) else base.steering_rate_max
        prov = {"log": self.source, "base": getattr(base, "source", type(base).__name__ if base else None),
                "assumed": assumed, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds")}
        return VehicleFile(params, float(lag), self.accel_max, self.decel_max, plain(report), plain(prov), "",
                           power_per_mass=self.power_per_mass,
                           steering_rate_max=rate_max,
                           assumptions=tuple(f"{k} not identified from the log: a-priori value" for k in assumed))


def _find(table: LogTable, role: str, given: dict[str, str]) -> str | None:
    if role in given:
        name = given[role]
        table[name]  # raises LogError listing the columns
        return name
    typed, plain_names = SIGNALS[role]
    for suffix, fld in typed:
        for s in table.of_type(suffix):
            if fld in s.fields and not (role == "v_cmd" and suffix == "Twist" and "cmd" not in s.topic):
                from mpc_tracking.logs.table import column_name

                return column_name(s.topic, fld)
    lows = {c.lower(): c for c in table.columns}
    return next((lows[n] for n in plain_names if n in lows), None)


def identify_from_log(log: str | Path | LogTable, *, wheelbase: float | None = None,
                      signals: dict[str, str] | None = None, fit_fraction: float = 0.7, v_min: float = 2.0,
                      max_delay: float = 1.0, rate: float | None = None, base: Any = None) -> LogIdentification:
    """Fit the speed loop, the steering offset/delay and the tyres that a recorded drive excites.

    Parameters
    ----------
    log : path or LogTable
        A drive log (:func:`~mpc_tracking.logs.read_log`) or a table already read.
    wheelbase : float, optional
        L [m]; needed for the steering fit from yaw rate (a log without steering feedback).
        Default with ``base``: its ``l_f + l_r``.
    signals : dict, optional
        Role -> column, overriding the automatic choice (roles in :data:`SIGNALS`: ``v``, ``v_cmd``,
        ``delta_cmd``, ``yaw_rate``, ``steer``).
    fit_fraction : float
        Share of the log (from its start) fitted on; the rest is the hold-out.
    v_min : float
        Slowest speed [m/s] at which the yaw rate gives the steering angle.
    max_delay : float
        Longest delay searched [s].
    rate : float, optional
        Rate [Hz] of the grid the log is aligned on (when ``log`` is a file).
    base : VehicleFile or DynamicParams, optional
        The car's geometry (mass, ``l_f``, ``l_r``, ``h_cg``, ``I_z``, tyre shape factor) for the
        tyre fit; without it the tyres are not fitted (named in ``not_excited``).

    Returns
    -------
    LogIdentification

    Raises
    ------
    IdentificationError
        Nothing was excited (the message lists why for each parameter), or the log is too short.
    """
    from mpc_tracking.logs.reader import read_log

    if not (isinstance(fit_fraction, (int, float)) and 0.2 <= fit_fraction <= 0.95):
        raise InputError(f"fit_fraction: expected a share in [0.2, 0.95], got {fit_fraction!r}")
    if wheelbase is not None and not (isinstance(wheelbase, (int, float)) and wheelbase > 0):
        raise InputError(f"wheelbase: expected a length > 0 m, got {wheelbase!r}")
    params = _base_params(base)
    if wheelbase is None and params is not None:
        wheelbase = params.l_f + params.l_r
    table = log if isinstance(log, LogTable) else read_log(log, rate=rate)
    t = table.t
    if t.size < 20:
        raise IdentificationError(f"{table.source}: {t.size} samples; too short to identify anything")
    dt = float(np.median(np.diff(t)))
    found = {role: _find(table, role, signals or {}) for role in SIGNALS}
    out = LogIdentification(source=table.source, signals={k: v for k, v in found.items() if v})
    split = int(fit_fraction * t.size)
    _speed(table, found, dt, split, out)
    _steering(table, found, dt, split, wheelbase, v_min, max_delay, out)
    _tyres(table, found, dt, split, params, v_min, out)
    if out.speed_lag is None and out.steering_offset is None and out.tyre_B_f is None and out.tyre_B_r is None:
        why = "; ".join(f"{k}: {v}" for k, v in out.not_excited.items())
        raise IdentificationError(f"{table.source}: the drive excites nothing identifiable ({why})")
    for k, why in out.not_excited.items():
        logger.warning("identify_from_log: %s not identified: %s", k, why)
    return out


def _base_params(base: Any) -> Any:
    from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

    if base is None or isinstance(base, DynamicParams):
        return base
    if isinstance(base, VehicleFile):
        return base.params
    raise InputError(f"base: expected a VehicleFile or DynamicParams, got {type(base).__name__}")


# ---------------------------------------------------------------------- tyres
def _tyres(table: LogTable, found: dict[str, str | None], dt: float, split: int, params: Any, v_min: float,
           out: LogIdentification) -> None:
    from mpc_tracking.logs.tyres import fit_tyres

    keys = ("tyre_B_f", "tyre_B_r", "mu")
    missing = [role for role in ("v", "vy", "yaw_rate") if found[role] is None]
    if params is None:
        why = "needs the car's geometry (mass, l_f, l_r, h_cg, I_z): give base= (identify --log --base)"
    elif missing:
        why = f"the log has no {' and no '.join(missing)} signal"
    elif found["steer"] is None and out.steering_delay is None:
        why = "no steering angle: no steering feedback, and the steering command's delay was not identified"
    else:
        why = ""
    if why:
        out.not_excited.update(dict.fromkeys(keys, why))
        return
    if found["steer"] is not None:
        delta = table[found["steer"]]
    else:  # the command as the wheels turned it: delayed and offset as identified
        cmd = table[found["delta_cmd"]]  # type: ignore[index]
        m = round((out.steering_delay or 0.0) / dt)
        delta = (np.concatenate([np.full(m, np.nan), cmd[: cmd.size - m]]) if m else cmd) + (out.steering_offset or 0.0)
    fit = fit_tyres(table.t, table[found["v"]], table[found["vy"]], table[found["yaw_rate"]],  # type: ignore[index]
                    delta, split, params, v_min)
    out.tyre_B_f, out.tyre_B_r, out.mu = fit.B_f, fit.B_r, fit.mu
    out.cornering_stiffness_f, out.cornering_stiffness_r = fit.stiffness_f, fit.stiffness_r
    out.not_excited.update(fit.not_excited)
    out.fitted.update(fit.fitted)
    out.holdout.update(fit.holdout)


# ---------------------------------------------------------------------- speed loop
#: the power limit (P/m) / v is evaluated at no less than this speed [m/s] (it has no bound at standstill)
V_POWER_FLOOR = 0.5
#: a power limit is kept only when it lowers the speed fit's cost to this share of the fit without it
POWER_GAIN = 0.8


def simulate_speed_power(v0: float, v_cmd: np.ndarray, dt: float, tau: float, a_max: float, d_max: float,
                         power_per_mass: float = math.inf) -> np.ndarray:
    """Speed [m/s] of the clipped first-order loop with a power limit, shape of ``v_cmd``.

    ``v' = clip((v_cmd - v) / tau, -d_max, min(a_max, P/m / max(v, V_POWER_FLOOR)))``, RK4 per sample
    with the command held; with ``power_per_mass`` inf it is
    :func:`mpc_tracking.identification.fit.simulate_speed`.

    Examples
    --------
    On the power limit from 10 m/s, ``v v' = P/m``: ``v(t) = sqrt(v0^2 + 2 (P/m) t)``, after 1 s
    ``sqrt(140) = 11.83`` m/s (accel_max = 5 m/s^2 alone would give 15 m/s):

    >>> v = simulate_speed_power(10.0, np.full(51, 30.0), 0.02, 0.1, 5.0, 5.0, power_per_mass=20.0)
    >>> round(float(v[-1]), 2)
    11.83
    """
    if not math.isfinite(power_per_mass):
        return simulate_speed(v0, v_cmd, dt, tau, a_max, d_max)
    out = np.empty_like(v_cmd)
    v = float(v0)
    inv = 1.0 / tau

    def f(v_: float, c: float) -> float:
        top = min(a_max, power_per_mass / max(v_, V_POWER_FLOOR))
        return min(max((c - v_) * inv, -d_max), top)

    for k, c in enumerate(v_cmd):
        out[k] = v
        k1 = f(v, c)
        k2 = f(v + 0.5 * dt * k1, c)
        k3 = f(v + 0.5 * dt * k2, c)
        k4 = f(v + dt * k3, c)
        v += dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return out


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


def _speed(table: LogTable, found: dict[str, str | None], dt: float, split: int, out: LogIdentification) -> None:
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


# ---------------------------------------------------------------------- steering
def _steering(table: LogTable, found: dict[str, str | None], dt: float, split: int, wheelbase: float | None,
              v_min: float, max_delay: float, out: LogIdentification) -> None:
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
        _steering_rate(actual, _shift(cmd, best) + out.steering_offset, dt, fit_ok, out)
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


def _shift(cmd: np.ndarray, m: int) -> np.ndarray:
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
    shifted = _shift(cmd, m)
    sel = mask & np.isfinite(shifted)
    return actual[sel] - shifted[sel]
