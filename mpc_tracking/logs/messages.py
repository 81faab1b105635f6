"""What a drive log's messages mean: one extractor per common ROS 2 message type, a generic one for the rest.

Each extractor turns a deserialized message into ``(stamp, frame_id, child_frame_id, fields)``
with ``fields`` a flat mapping of floats in SI units (REP-103: metres, radians, m/s, rad/s):

=================================================  =================================================
type                                               fields
=================================================  =================================================
``nav_msgs/msg/Odometry``                          ``x, y, z, yaw`` (pose), ``vx, vy, yaw_rate`` (twist, child frame)
``geometry_msgs/msg/PoseStamped``,                 ``x, y, z, yaw``
``geometry_msgs/msg/PoseWithCovarianceStamped``
``sensor_msgs/msg/NavSatFix``                      ``latitude, longitude, altitude`` [deg, deg, m],
                                                   ``status`` (-1: no fix; such fixes are NaN)
``sensor_msgs/msg/Imu``                            ``ax, ay, az, roll_rate, pitch_rate, yaw_rate``; ``yaw``
                                                   when the orientation is given
``geometry_msgs/msg/Twist`` (``TwistStamped``)     ``v`` (linear.x), ``vy``, ``yaw_rate`` (angular.z)
``ackermann_msgs/msg/AckermannDrive(Stamped)``     ``speed, steering_angle, steering_angle_velocity,
                                                   acceleration, jerk``
``std_msgs/msg/Float32``, ``Float64``              ``value``
anything else (e.g. a ``SteeringReport``)          every numeric scalar field, by its dotted name
                                                   (``steering_tire_angle``)
=================================================  =================================================

``stamp`` is the header stamp [ns] where the message has one and it is not zero, else None (the
reader then uses the time the message was logged).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["extract", "EXTRA_TYPES", "ANGLE_FIELDS", "HOLD_FIELDS", "yaw_of", "typestore"]

#: fields interpolated as angles (unwrapped, then wrapped to (-pi, pi])
ANGLE_FIELDS = frozenset({"yaw"})
#: fields held (previous value) instead of interpolated
HOLD_FIELDS = frozenset({"status"})

#: message definitions not in rosbags' standard ROS 2 typestore (ackermann_msgs)
EXTRA_TYPES = {
    "ackermann_msgs/msg/AckermannDrive": (
        "float32 steering_angle\nfloat32 steering_angle_velocity\nfloat32 speed\nfloat32 acceleration\n"
        "float32 jerk\n"),
    "ackermann_msgs/msg/AckermannDriveStamped": "std_msgs/Header header\nackermann_msgs/AckermannDrive drive\n",
}

Extracted = tuple[int | None, str, str, dict[str, float]]


def typestore() -> Any:
    """rosbags' ROS 2 (Humble) typestore with :data:`EXTRA_TYPES` registered."""
    from mpc_tracking.paths.geo import require

    typesys = require("rosbags.typesys", "reading and writing ROS 2 bags")
    store = typesys.get_typestore(typesys.Stores.ROS2_HUMBLE)
    types: dict = {}
    for name, text in EXTRA_TYPES.items():
        types.update(typesys.get_types_from_msg(text, name))
    store.register(types)
    return store


def yaw_of(q: Any) -> float:
    """Heading [rad] (rotation about z) of a quaternion with fields ``x, y, z, w``."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def _header(msg: Any) -> tuple[int | None, str]:
    h = getattr(msg, "header", None)
    if h is None:
        return None, ""
    ns = int(h.stamp.sec) * 1_000_000_000 + int(h.stamp.nanosec)
    return (ns or None), str(getattr(h, "frame_id", ""))


def _pose(p: Any) -> dict[str, float]:
    return {"x": float(p.position.x), "y": float(p.position.y), "z": float(p.position.z), "yaw": yaw_of(p.orientation)}


def _odometry(m: Any) -> Extracted:
    stamp, frame = _header(m)
    tw = m.twist.twist
    f = _pose(m.pose.pose)
    f.update(vx=float(tw.linear.x), vy=float(tw.linear.y), yaw_rate=float(tw.angular.z))
    return stamp, frame, str(m.child_frame_id), f


def _pose_stamped(m: Any) -> Extracted:
    stamp, frame = _header(m)
    p = m.pose.pose if hasattr(m.pose, "pose") else m.pose
    return stamp, frame, "", _pose(p)


def _navsatfix(m: Any) -> Extracted:
    stamp, frame = _header(m)
    status = int(m.status.status)
    nan = status < 0 or not (math.isfinite(m.latitude) and math.isfinite(m.longitude))
    f = {"latitude": math.nan if nan else float(m.latitude), "longitude": math.nan if nan else float(m.longitude),
         "altitude": float(m.altitude), "status": float(status)}
    return stamp, frame, "", f


def _imu(m: Any) -> Extracted:
    stamp, frame = _header(m)
    a, w = m.linear_acceleration, m.angular_velocity
    f = {"ax": float(a.x), "ay": float(a.y), "az": float(a.z), "roll_rate": float(w.x), "pitch_rate": float(w.y),
         "yaw_rate": float(w.z)}
    if float(m.orientation_covariance[0]) != -1.0:
        f["yaw"] = yaw_of(m.orientation)
    return stamp, frame, "", f


def _twist(m: Any) -> Extracted:
    stamp, frame = _header(m)
    t = m.twist if hasattr(m, "twist") else m
    return stamp, frame, "", {"v": float(t.linear.x), "vy": float(t.linear.y), "yaw_rate": float(t.angular.z)}


def _ackermann(m: Any) -> Extracted:
    stamp, frame = _header(m)
    d = m.drive if hasattr(m, "drive") else m
    return stamp, frame, "", {k: float(getattr(d, k)) for k in
                              ("speed", "steering_angle", "steering_angle_velocity", "acceleration", "jerk")}


def _scalar(m: Any) -> Extracted:
    return None, "", "", {"value": float(m.data)}


def _generic(m: Any) -> Extracted:
    stamp, frame = _header(m)
    out: dict[str, float] = {}
    _flatten(m, "", out, 0)
    return stamp, frame, str(getattr(m, "child_frame_id", "")), out


def _flatten(obj: Any, prefix: str, out: dict[str, float], depth: int) -> None:
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields is None or depth > 4:
        return
    for name in fields:
        if name == "header" or name.startswith("_"):
            continue
        v = getattr(obj, name)
        key = f"{prefix}{name}"
        if isinstance(v, (bool, int, float)):
            out[key] = float(v)
        elif hasattr(v, "__dataclass_fields__"):
            _flatten(v, key + ".", out, depth + 1)


EXTRACTORS: dict[str, Callable[[Any], Extracted]] = {
    "nav_msgs/msg/Odometry": _odometry,
    "geometry_msgs/msg/PoseStamped": _pose_stamped,
    "geometry_msgs/msg/PoseWithCovarianceStamped": _pose_stamped,
    "sensor_msgs/msg/NavSatFix": _navsatfix,
    "sensor_msgs/msg/Imu": _imu,
    "geometry_msgs/msg/Twist": _twist,
    "geometry_msgs/msg/TwistStamped": _twist,
    "ackermann_msgs/msg/AckermannDrive": _ackermann,
    "ackermann_msgs/msg/AckermannDriveStamped": _ackermann,
    "std_msgs/msg/Float32": _scalar,
    "std_msgs/msg/Float64": _scalar,
}


def extract(msg: Any, msgtype: str) -> Extracted:
    """``(stamp [ns] or None, frame_id, child_frame_id, fields)`` of one message (see the module doc)."""
    return EXTRACTORS.get(_normal(msgtype), _generic)(msg)


def _normal(msgtype: str) -> str:
    """``pkg/Type`` (ROS 1 style) -> ``pkg/msg/Type``."""
    parts = msgtype.split("/")
    return f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else msgtype
