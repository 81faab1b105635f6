"""The vehicle file: identified parameters a scenario can reference (``vehicle.file:``).

A YAML mapping::

    format: mpc_tracking-vehicle-1
    dynamic:            # DynamicParams fields (mass, I_z, l_f, l_r, h_cg, mu, tyre_B_f, tyre_C_f, ...)
    speed_lag: 0.34     # time constant of the speed loop [s]
    accel_max: 3.9      # largest acceleration [m/s^2] (.inf: not limited)
    decel_max: 7.8      # largest braking deceleration [m/s^2]
    power_per_mass: 85  # P/m [W/kg]: accel limit min(accel_max, P/m / v); null (or absent): not limited
    steering_rate_max: 0.4  # largest steering rate the wheels follow [rad/s]; null (or absent): not limited
    drive: rwd          # which axles drive the car: rwd, fwd, awd; null (or absent): not known
    a_y_max: 7.9        # largest steady lateral acceleration measured (speed ramp) [m/s^2]; null: not reached
    mu_g: 8.7           # mu g [m/s^2] of the fitted tyres (derived, for reading)
    assumptions: [...]  # what was assumed, not measured (an assumed mu, a null a_y_max, ...); [] = nothing
    report: {...}       # the fit and its prediction errors on hold-out manoeuvres
    provenance: {...}   # plant name and parameters, actuator, options, date

:func:`load_vehicle_file` validates it: a missing or out-of-range parameter raises
:class:`~mpc_tracking.errors.VehicleFileError` naming the file and the key.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from mpc_tracking.errors import MPCTrackingError, VehicleFileError
from mpc_tracking.fileio import read_yaml
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
from mpc_tracking.mpc.settings.grip import DRIVES as GRIP_DRIVES

__all__ = ["VehicleFile", "load_vehicle_file", "FORMAT", "REQUIRED_DYNAMIC", "DRIVES"]

FORMAT = "mpc_tracking-vehicle-1"
#: the drive layouts a vehicle file names (:attr:`VehicleFile.drive`): the grip settings' known ones
DRIVES = GRIP_DRIVES[1:]
#: DynamicParams fields a vehicle file must give (the others have defaults)
REQUIRED_DYNAMIC = ("mass", "I_z", "l_f", "l_r", "h_cg", "mu", "tyre_B_f", "tyre_C_f", "tyre_B_r", "tyre_C_r")
_LIMITS = {"speed_lag": (True, "s"), "accel_max": (False, "m/s^2"), "decel_max": (False, "m/s^2")}


def plain(value: Any) -> Any:
    """``value`` with numpy scalars/arrays and tuples turned into plain Python (for YAML)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


@dataclass(frozen=True)
class VehicleFile:
    """What a vehicle file holds (see the module doc).

    Attributes
    ----------
    params : DynamicParams
        Parameters of the dynamic prediction model.
    speed_lag : float
        Time constant of the plant's speed loop [s] (``DynamicPrediction(params, speed_lag)``).
    accel_max, decel_max : float
        Largest acceleration and braking deceleration the plant delivered [m/s²] (``inf``: not limited).
    report : dict
        Fit summary and prediction errors.
    provenance : dict
        Where the numbers come from.
    source : str
        The file read (empty for a result not yet written).
    a_y_max : float or None
        Largest steady lateral acceleration the plant held on the speed ramp [m/s²]; None when the
        ramp did not reach the limit (then :attr:`assumptions` says so).
    power_per_mass : float or None
        Power limit P/m [W/kg]: the acceleration limit at speed v is ``min(accel_max, power_per_mass / v)``
        (:meth:`accel_limit`); None: not limited.
    steering_rate_max : float or None
        Largest steering rate the car's wheels follow [rad/s] (measured by steering steps,
        :mod:`~mpc_tracking.identification.steering`); None: not rate limited. The controller's
        defaults plan within it (``delta_rate_max``, :func:`mpc_tracking.scenario.defaults.grip_defaults`).
    drive : {"rwd", "fwd", "awd"} or None
        Which axles drive the car, as the identified plant declared it (its ``driven_axle``, or a 3D car's
        ``drive``); None: not known. The grip estimate's traction reading needs it (``grip_drive``, filled from
        here by :func:`mpc_tracking.scenario.defaults.grip_defaults` when no plant says it).
    assumptions : tuple of str
        Everything the numbers rest on that was not measured (an assumed mu, a geometry value
        not declared by the plant, a limit not reached, a manoeuvre speed lowered); empty when
        nothing was assumed. Written as the list ``assumptions:``.
    """

    params: DynamicParams
    speed_lag: float
    accel_max: float
    decel_max: float
    report: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    source: str = ""
    a_y_max: float | None = None
    power_per_mass: float | None = None   # P/m [W/kg]: accel limit min(accel_max, power_per_mass / v); None = not limited
    assumptions: tuple[str, ...] = ()
    steering_rate_max: float | None = None  # [rad/s]; None = the wheels follow the command at once
    drive: str | None = None  # rwd, fwd, awd; None = not known

    @property
    def mu_g(self) -> float:
        """``mu g`` [m/s²] of the fitted tyres."""
        return self.params.mu * self.params.g

    def accel_limit(self, v: Any) -> Any:
        """Acceleration limit [m/s²] at speed ``v`` [m/s]: ``min(accel_max, power_per_mass / v)``.

        >>> vf = VehicleFile(DynamicParams.bmw_320i(), 0.3, 4.0, 7.0, power_per_mass=60.0)
        >>> vf.accel_limit(np.array([10.0, 20.0, 30.0])).tolist()
        [4.0, 3.0, 2.0]
        """
        v = np.asarray(v, dtype=float)
        if self.power_per_mass is None:
            return np.full_like(v, self.accel_max) if v.ndim else float(self.accel_max)
        out = np.minimum(self.accel_max, self.power_per_mass / np.maximum(v, 1e-3))
        return out if v.ndim else float(out)

    @property
    def lateral_limit(self) -> float:
        """The lateral acceleration the plant can hold [m/s²]: :attr:`a_y_max` when measured, else ``mu g``."""
        return self.a_y_max if self.a_y_max is not None else self.mu_g

    def as_dict(self) -> dict[str, Any]:
        """The file's mapping."""
        return plain({
            "format": FORMAT,
            "dynamic": {f.name: getattr(self.params, f.name) for f in fields(DynamicParams)},
            "speed_lag": self.speed_lag, "accel_max": self.accel_max, "decel_max": self.decel_max,
            "power_per_mass": self.power_per_mass, "steering_rate_max": self.steering_rate_max,
            "drive": self.drive, "a_y_max": self.a_y_max, "mu_g": self.mu_g,
            "assumptions": list(self.assumptions), "report": self.report, "provenance": self.provenance,
        })

    def to_yaml(self, path: str | Path) -> Path:
        """Write the vehicle file; returns its path."""
        p = Path(path)
        if p.parent != Path(""):
            p.parent.mkdir(parents=True, exist_ok=True)
        text = "# vehicle file written by mpc_tracking.identify (mpc-tracking identify)\n"
        text += yaml.safe_dump(self.as_dict(), sort_keys=False, default_flow_style=False, width=110)
        p.write_text(text, encoding="utf-8")
        return p

    def prediction(self) -> Any:
        """The controller's model: ``DynamicPrediction(params, speed_lag)``."""
        from mpc_tracking.models.prediction import DynamicPrediction

        return DynamicPrediction(self.params, speed_lag=self.speed_lag)


def _number(where: str, key: str, value: Any, *, allow_zero: bool, allow_inf: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    ok = ok and (allow_inf or math.isfinite(value)) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        expect = ">= 0" if allow_zero else "> 0"
        raise VehicleFileError(f"{where}: key {key!r} must be a number {expect}, got {value!r}")
    return float(value)


def load_vehicle_file(path: str | Path) -> VehicleFile:
    """Read and validate a vehicle file.

    Raises
    ------
    VehicleFileError
        The file is missing or not YAML, or a parameter is missing, not a number, negative or
        otherwise out of range; the message names the file and the key.
    """
    p = Path(path)
    where = str(p)
    if not p.exists():  # pipes and devices: refused by fileio.read_yaml
        raise VehicleFileError(f"{where}: no such vehicle file")
    data = read_yaml(p, error=VehicleFileError, what="vehicle file").data
    if not isinstance(data, dict):
        raise VehicleFileError(f"{where}: expected a mapping with 'dynamic', 'speed_lag', 'accel_max', 'decel_max'")
    dyn = data.get("dynamic")
    if not isinstance(dyn, dict):
        raise VehicleFileError(f"{where}: missing key 'dynamic' (the dynamic model's parameters)")
    known = {f.name for f in fields(DynamicParams)}
    unknown = sorted(set(dyn) - known)
    if unknown:
        raise VehicleFileError(f"{where}: unknown key 'dynamic.{unknown[0]}'; expected some of {sorted(known)}")
    for k in REQUIRED_DYNAMIC:
        if k not in dyn:
            raise VehicleFileError(f"{where}: missing key 'dynamic.{k}'")
        _number(where, f"dynamic.{k}", dyn[k], allow_zero=(k == "h_cg"))
    try:
        params = DynamicParams(**{k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                                  for k, v in dyn.items()})
    except MPCTrackingError as exc:
        key = str(exc).split(":")[0].replace("DynamicParams.", "dynamic.")
        raise VehicleFileError(f"{where}: key {key!r}: {exc}") from None
    vals = {}
    for k, (zero, _unit) in _LIMITS.items():
        if k not in data:
            raise VehicleFileError(f"{where}: missing key {k!r}")
        vals[k] = _number(where, k, data[k], allow_zero=zero, allow_inf=(k != "speed_lag"))
    a_y = data.get("a_y_max")
    a_y_max = None if a_y is None else _number(where, "a_y_max", a_y, allow_zero=False)
    pm = data.get("power_per_mass")  # files older than the power limit have no key: not limited
    power = None if pm is None else _number(where, "power_per_mass", pm, allow_zero=False)
    sr = data.get("steering_rate_max")  # files older than the steering steps have no key: not limited
    steer_rate = None if sr is None else _number(where, "steering_rate_max", sr, allow_zero=False)
    drive = data.get("drive")  # files older than the drive layout have no key: not known
    if drive is not None and drive not in DRIVES:
        raise VehicleFileError(f"{where}: key 'drive' must be one of {list(DRIVES)} or null, got {drive!r}")
    notes = data.get("assumptions", [])
    if notes is None:
        notes = []
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise VehicleFileError(f"{where}: key 'assumptions' must be a list of strings, got {notes!r}")
    report = data.get("report") or {}
    prov = data.get("provenance") or {}
    return VehicleFile(params, vals["speed_lag"], vals["accel_max"], vals["decel_max"],
                       report if isinstance(report, dict) else {}, prov if isinstance(prov, dict) else {}, where,
                       a_y_max, power, tuple(notes), steer_rate, drive)
