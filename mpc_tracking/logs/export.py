"""A closed-loop run as MCAP or a ROS 2 bag: open it in Foxglove (or RViz), read it back with ``read_log``.

:func:`write_run` writes a :class:`~mpc_tracking.results.SimulationResult` with ROS 2 standard
message types (schemas embedded; Foxglove shows them natively), frames per REP-105 (``map``, the
car ``base_link``), one message per control step unless noted:

=====================  ==============================================  ==============================================
topic                  type                                            content
=====================  ==============================================  ==============================================
``/tf``                ``tf2_msgs/msg/TFMessage``                      ``map -> base_link`` (controller reference point)
``/odom``              ``nav_msgs/msg/Odometry``                       pose, speed ``v``, lateral velocity, yaw rate
                                                                       (both from the pose's time derivative)
``/pose``              ``geometry_msgs/msg/PoseStamped``               the same pose
``/cmd``               ``ackermann_msgs/msg/AckermannDriveStamped``    ``v_cmd``, ``delta_cmd``
``/path``              ``nav_msgs/msg/Path``                           the reference path (first step only)
``/corridor/left``,    ``nav_msgs/msg/Path``                           the track edges (first step; finite widths only)
``/corridor/right``
``/horizon``           ``nav_msgs/msg/Path``                           the predicted positions of the step
``/footprint``         ``geometry_msgs/msg/PolygonStamped``            the car's body rectangle
``/mpc/status``        ``diagnostic_msgs/msg/DiagnosticArray``         status name, solve time, iterations
``/mpc/e_y``,          ``std_msgs/msg/Float64``                        lateral error [m], solve time [s]
``/mpc/solve_time``
``/gnss/fix``          ``sensor_msgs/msg/NavSatFix``                   with ``origin`` only: simulated fixes
=====================  ==============================================  ==============================================

``odom_sigma`` and ``gnss_sigma`` add Gaussian noise [m] to the logged positions (a synthetic
sensor log for tests and identification; 0 by default: the run as simulated).
"""
from __future__ import annotations

import logging
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.mpc.settings import Status
from mpc_tracking.paths.geo import GeoOrigin, require

__all__ = ["write_run", "STORAGES"]

logger = logging.getLogger(__name__)

#: storage name -> rosbags storage plugin name
STORAGES = {"mcap": "MCAP", "sqlite3": "SQLITE3"}
_STATUS_NAMES = {s.code: s.value for s in Status}
_BAD = {Status.FALLBACK.code, Status.SAFE_STOP.code}


class _Msgs:
    """Builders of the ROS 2 messages from a typestore."""

    def __init__(self, store: Any) -> None:
        self.T = store.types

    def header(self, ns: int, frame: str) -> Any:
        T = self.T
        return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=ns // 1_000_000_000,
                                                                                 nanosec=ns % 1_000_000_000),
                                        frame_id=frame)

    def quat(self, yaw: float) -> Any:
        return self.T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=math.sin(0.5 * yaw), w=math.cos(0.5 * yaw))

    def pose(self, x: float, y: float, yaw: float) -> Any:
        return self.T["geometry_msgs/msg/Pose"](position=self.T["geometry_msgs/msg/Point"](x=x, y=y, z=0.0),
                                                orientation=self.quat(yaw))

    def vec(self, x: float, y: float = 0.0, z: float = 0.0) -> Any:
        return self.T["geometry_msgs/msg/Vector3"](x=x, y=y, z=z)

    def pose_stamped(self, ns: int, x: float, y: float, yaw: float, frame: str = "map") -> Any:
        return self.T["geometry_msgs/msg/PoseStamped"](header=self.header(ns, frame), pose=self.pose(x, y, yaw))

    def path(self, ns: int, xs: np.ndarray, ys: np.ndarray) -> Any:
        yaw = np.arctan2(np.gradient(ys), np.gradient(xs)) if len(xs) > 1 else np.zeros(len(xs))
        poses = [self.pose_stamped(ns, float(a), float(b), float(c)) for a, b, c in zip(xs, ys, yaw, strict=False)]
        return self.T["nav_msgs/msg/Path"](header=self.header(ns, "map"), poses=poses)

    def odometry(self, ns: int, x: float, y: float, yaw: float, v: float, r: float, vy: float = 0.0) -> Any:
        T = self.T
        cov = np.zeros(36)
        return T["nav_msgs/msg/Odometry"](
            header=self.header(ns, "map"), child_frame_id="base_link",
            pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=self.pose(x, y, yaw), covariance=cov),
            twist=T["geometry_msgs/msg/TwistWithCovariance"](
                twist=T["geometry_msgs/msg/Twist"](linear=self.vec(v, vy), angular=self.vec(0.0, 0.0, r)),
                covariance=cov))

    def tf(self, ns: int, x: float, y: float, yaw: float) -> Any:
        T = self.T
        tr = T["geometry_msgs/msg/Transform"](translation=self.vec(x, y), rotation=self.quat(yaw))
        ts = T["geometry_msgs/msg/TransformStamped"](header=self.header(ns, "map"), child_frame_id="base_link",
                                                     transform=tr)
        return T["tf2_msgs/msg/TFMessage"](transforms=[ts])

    def ackermann(self, ns: int, v: float, delta: float) -> Any:
        T = self.T
        d = T["ackermann_msgs/msg/AckermannDrive"](steering_angle=delta, steering_angle_velocity=0.0, speed=v,
                                                   acceleration=0.0, jerk=0.0)
        return T["ackermann_msgs/msg/AckermannDriveStamped"](header=self.header(ns, "base_link"), drive=d)

    def polygon(self, ns: int, xs: np.ndarray, ys: np.ndarray) -> Any:
        T = self.T
        pts = [T["geometry_msgs/msg/Point32"](x=float(a), y=float(b), z=0.0) for a, b in zip(xs, ys, strict=False)]
        return T["geometry_msgs/msg/PolygonStamped"](header=self.header(ns, "map"),
                                                     polygon=T["geometry_msgs/msg/Polygon"](points=pts))

    def status(self, ns: int, code: int, solve: float, iters: float) -> Any:
        T = self.T
        kv = T["diagnostic_msgs/msg/KeyValue"]
        level = 2 if code in _BAD else 0
        st = T["diagnostic_msgs/msg/DiagnosticStatus"](
            level=level, name="mpc", message=_STATUS_NAMES.get(code, str(code)), hardware_id="mpc_tracking",
            values=[kv(key="code", value=str(code)), kv(key="solve_time_s", value=f"{solve:.6g}"),
                    kv(key="iterations", value=f"{iters:g}")])
        return T["diagnostic_msgs/msg/DiagnosticArray"](header=self.header(ns, ""), status=[st])

    def float64(self, v: float) -> Any:
        return self.T["std_msgs/msg/Float64"](data=float(v))

    def navsatfix(self, ns: int, lat: float, lon: float, sigma: float) -> Any:
        T = self.T
        cov = np.zeros(9)
        cov[0] = cov[4] = max(sigma, 1e-3) ** 2
        cov[8] = 4 * cov[0]
        return T["sensor_msgs/msg/NavSatFix"](
            header=self.header(ns, "gnss"), status=T["sensor_msgs/msg/NavSatStatus"](status=0, service=1),
            latitude=lat, longitude=lon, altitude=0.0, position_covariance=cov, position_covariance_type=2)


def _footprint(vehicle: Any, x: float, y: float, yaw: float) -> tuple[np.ndarray, np.ndarray]:
    front = float(getattr(vehicle, "front_extent", 3.6))
    rear = float(getattr(vehicle, "rear_overhang", 0.9))
    half = 0.5 * float(getattr(vehicle, "width", 1.8))
    along = np.array([front, front, -rear, -rear])
    across = np.array([half, -half, -half, half])
    c, s = math.cos(yaw), math.sin(yaw)
    return x + along * c - across * s, y + along * s + across * c


def write_run(result: Any, target: str | Path, *, storage: str = "mcap", origin: Any = None,
              gnss_sigma: float = 0.0, gnss_rate: float = 10.0, odom_sigma: float = 0.0, start: float = 0.0,
              seed: int = 0) -> Path:
    """Write a closed-loop run as an MCAP file or a ROS 2 bag (see the module doc for the topics).

    Parameters
    ----------
    result : SimulationResult
        The run (``series``, ``horizon_xy``, ``path``, ``vehicle``).
    target : path
        ``storage="mcap"``: the ``.mcap`` file to write (a single file, self-contained: schemas
        embedded). ``storage="sqlite3"``: the rosbag2 folder to create (``metadata.yaml`` + ``.db3``).
    storage : {"mcap", "sqlite3"}
    origin : GeoOrigin or (lat, lon), optional
        Place the run's ``map`` frame at this WGS84 origin and log ``/gnss/fix``.
    gnss_sigma, odom_sigma : float
        Standard deviation of Gaussian noise per coordinate [m] on the fixes and on ``/odom`` / ``/pose``.
    gnss_rate : float
        Rate of the fixes [Hz] (the nearest control steps).
    start : float
        Time of the first step [s] (header stamps and log times are ``start + t``).
    seed : int
        Of the noise.

    Returns
    -------
    Path
        ``target``.
    """
    if storage not in STORAGES:
        raise InputError(f"storage: expected one of {sorted(STORAGES)}, got {storage!r}")
    for name, v in (("gnss_sigma", gnss_sigma), ("odom_sigma", odom_sigma), ("start", start)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise InputError(f"{name}: expected a finite number >= 0, got {v!r}")
    if not (isinstance(gnss_rate, (int, float)) and math.isfinite(gnss_rate) and gnss_rate > 0):
        raise InputError(f"gnss_rate: expected a rate > 0 Hz, got {gnss_rate!r}")
    series = getattr(result, "series", None)
    if not isinstance(series, dict) or "t" not in series or len(series["t"]) == 0:
        raise InputError("result: expected a SimulationResult with at least one step")
    rosbag2 = require("rosbags.rosbag2", "writing MCAP files and ROS 2 bags")
    from mpc_tracking.logs.messages import typestore

    store = typestore()
    target = Path(target)
    if target.exists():
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    bagdir = tmp / "bag"
    try:
        plugin = getattr(rosbag2.StoragePlugin, STORAGES[storage])
        with rosbag2.Writer(bagdir, version=8, storage_plugin=plugin) as writer:
            _write_messages(writer, store, result, origin, gnss_sigma, gnss_rate, odom_sigma, start, seed)
        if storage == "mcap":
            os.replace(next(bagdir.glob("*.mcap")), target)
        else:
            os.replace(bagdir, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    logger.info("wrote %s (%s, %d steps)", target, storage, len(series["t"]))
    return target


def _write_messages(writer: Any, store: Any, result: Any, origin: Any, gnss_sigma: float, gnss_rate: float,
                    odom_sigma: float, start: float, seed: int) -> None:
    m = _Msgs(store)
    s = result.series
    t = np.asarray(s["t"], dtype=float)
    x, y, yaw = (np.asarray(s[k], dtype=float) for k in ("x", "y", "yaw"))
    n = t.size
    rng = np.random.default_rng(seed)
    conns: dict[str, Any] = {}

    def put(topic: str, msg: Any, ns: int) -> None:
        if topic not in conns:
            conns[topic] = writer.add_connection(topic, msg.__msgtype__, typestore=store)
        writer.write(conns[topic], ns, store.serialize_cdr(msg, msg.__msgtype__))

    stamps = np.round((start + t) * 1e9).astype(np.int64)
    r = np.gradient(np.unwrap(yaw), t) if n > 1 else np.zeros(n)
    # lateral velocity of the reference point in the body frame (REP-103: child frame base_link, y left)
    vy = -np.sin(yaw) * np.gradient(x, t) + np.cos(yaw) * np.gradient(y, t) if n > 1 else np.zeros(n)
    noisy_x = x + odom_sigma * rng.standard_normal(n) if odom_sigma else x
    noisy_y = y + odom_sigma * rng.standard_normal(n) if odom_sigma else y
    v = np.asarray(s.get("v", np.zeros(n)), dtype=float)
    horizon = np.asarray(getattr(result, "horizon_xy", np.zeros((n, 0, 2))))
    path = getattr(result, "path", None)
    vehicle = getattr(result, "vehicle", None)
    fix_steps = _every(t, gnss_rate)
    if origin is not None and not isinstance(origin, GeoOrigin):
        origin = GeoOrigin(float(origin[0]), float(origin[1]))
    if origin is not None:
        ge = x[fix_steps] + gnss_sigma * rng.standard_normal(fix_steps.size)
        gn = y[fix_steps] + gnss_sigma * rng.standard_normal(fix_steps.size)
        lat, lon = origin.to_geodetic(ge, gn)
        fixes = dict(zip(fix_steps.tolist(), zip(lat.tolist(), lon.tolist(), strict=False), strict=False))
    else:
        fixes = {}
    for k in range(n):
        ns = int(stamps[k])
        if k == 0 and path is not None:
            put("/path", m.path(ns, np.asarray(path.x), np.asarray(path.y)), ns)
            wl, wr = np.asarray(path.width_left), np.asarray(path.width_right)
            if np.all(np.isfinite(wl)) and np.all(np.isfinite(wr)):
                c, sn = np.cos(path.psi), np.sin(path.psi)
                put("/corridor/left", m.path(ns, path.x - sn * wl, path.y + c * wl), ns)
                put("/corridor/right", m.path(ns, path.x + sn * wr, path.y - c * wr), ns)
        xk, yk, pk = float(noisy_x[k]), float(noisy_y[k]), float(yaw[k])
        put("/tf", m.tf(ns, float(x[k]), float(y[k]), pk), ns)
        put("/odom", m.odometry(ns, xk, yk, pk, float(v[k]), float(r[k]), float(vy[k])), ns)
        put("/pose", m.pose_stamped(ns, xk, yk, pk), ns)
        put("/cmd", m.ackermann(ns, float(s["v_cmd"][k]), float(s["delta_cmd"][k])), ns)
        if horizon.ndim == 3 and horizon.shape[1] and np.all(np.isfinite(horizon[k])):
            put("/horizon", m.path(ns, horizon[k, :, 0], horizon[k, :, 1]), ns)
        fx, fy = _footprint(vehicle, float(x[k]), float(y[k]), pk)
        put("/footprint", m.polygon(ns, fx, fy), ns)
        code = int(s["status"][k]) if "status" in s else 0
        solve = float(s["solve_time"][k]) if "solve_time" in s else math.nan
        iters = float(s["iterations"][k]) if "iterations" in s else math.nan
        put("/mpc/status", m.status(ns, code, solve, iters), ns)
        put("/mpc/e_y", m.float64(float(s["e_y"][k]) if "e_y" in s else math.nan), ns)
        put("/mpc/solve_time", m.float64(solve), ns)
        if k in fixes:
            lat_k, lon_k = fixes[k]
            put("/gnss/fix", m.navsatfix(ns, lat_k, lon_k, gnss_sigma), ns)


def _every(t: np.ndarray, rate: float) -> np.ndarray:
    """Indices of the steps nearest to a ``rate`` [Hz] clock over ``t``."""
    if t.size == 0:
        return np.zeros(0, dtype=int)
    ticks = np.arange(t[0], t[-1] + 1e-9, 1.0 / rate)
    idx = np.clip(np.searchsorted(t, ticks), 0, t.size - 1)
    prev = np.clip(idx - 1, 0, t.size - 1)
    idx = np.where(np.abs(t[prev] - ticks) < np.abs(t[idx] - ticks), prev, idx)
    return np.unique(idx)
