"""The signals of a log by role, and :func:`identify_from_log`, which runs the fits on them."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import IdentificationError, InputError
from mpc_tracking.identification.vehicle_file import VehicleFile
from mpc_tracking.logs.identify.result import LogIdentification
from mpc_tracking.logs.identify.speed import identify_speed
from mpc_tracking.logs.identify.steering import identify_steering
from mpc_tracking.logs.identify.tyres import identify_tyres
from mpc_tracking.logs.table import LogTable

__all__ = ["identify_from_log", "SIGNALS"]

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
    identify_speed(table, found, dt, split, out)
    identify_steering(table, found, dt, split, wheelbase, v_min, max_delay, out)
    identify_tyres(table, found, dt, split, params, v_min, out)
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
