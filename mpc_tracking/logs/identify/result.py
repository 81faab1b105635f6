"""What :func:`~mpc_tracking.logs.identify_from_log` measured, and the vehicle file made from it."""
from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field
from typing import Any

from mpc_tracking.errors import InputError
from mpc_tracking.identification.vehicle_file import VehicleFile, plain

__all__ = ["LogIdentification"]


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
                           drive=base.drive if isinstance(base, VehicleFile) else None,  # a log does not show it
                           assumptions=tuple(f"{k} not identified from the log: a-priori value" for k in assumed))
