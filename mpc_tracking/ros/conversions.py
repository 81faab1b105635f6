"""ROS-free pieces of the nodes: REP-103 conversions, the Twist mapping, odometry checks, statistics.

Conventions (REP-103): SI units, x forward / y left / z up in ``base_link``, angles in radians,
counter-clockwise positive. The pose in an odometry message is that of the controller's reference
point (the rear axle, :attr:`~mpc_tracking.models.base.MotionModel.reference_offset` behind a
plant's own origin), and its twist is expressed in the yaw-rotated body frame at that point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "OdometrySample", "OdometryGate", "quaternion_from_euler", "yaw_from_quaternion", "twist_from_command",
    "steering_from_twist", "latency_stats",
]


def quaternion_from_euler(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """Unit quaternion ``(x, y, z, w)`` of the ZYX (yaw, pitch, roll) rotation [rad].

    Examples
    --------
    >>> [round(c, 6) for c in quaternion_from_euler(0.0, 0.0, math.pi / 2)]
    [0.0, 0.0, 0.707107, 0.707107]
    """
    cr, sr = math.cos(0.5 * roll), math.sin(0.5 * roll)
    cp, sp = math.cos(0.5 * pitch), math.sin(0.5 * pitch)
    cy, sy = math.cos(0.5 * yaw), math.sin(0.5 * yaw)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def yaw_from_quaternion(x: float, y: float, z: float, w: float) -> float:
    """Yaw [rad] in (-pi, pi] of the quaternion ``(x, y, z, w)`` (need not be normalised).

    Examples
    --------
    >>> round(yaw_from_quaternion(*quaternion_from_euler(0.1, -0.2, 2.5)), 12)
    2.5
    """
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def twist_from_command(v: float, delta: float, wheelbase: float) -> tuple[float, float]:
    """The ``geometry_msgs/Twist`` of a bicycle command: ``(linear.x, angular.z) = (v, v tan(delta) / L)``.

    Parameters
    ----------
    v : float
        Speed [m/s] of the rear axle.
    delta : float
        Steering angle [rad].
    wheelbase : float
        L [m].

    Examples
    --------
    >>> v, w = twist_from_command(2.0, math.atan(0.5), 2.7)
    >>> v, round(w, 6), round(2.0 * 0.5 / 2.7, 6)
    (2.0, 0.37037, 0.37037)
    """
    return float(v), float(v) * math.tan(float(delta)) / float(wheelbase)


def steering_from_twist(linear_x: float, angular_z: float, wheelbase: float, fallback: float = 0.0) -> float:
    """The inverse of :func:`twist_from_command`: ``delta = atan(L angular_z / linear_x)`` [rad];
    ``fallback`` when the speed is (nearly) zero, where the Twist does not determine it.

    Examples
    --------
    >>> round(steering_from_twist(*twist_from_command(3.0, 0.2, 2.7), 2.7), 12)
    0.2
    """
    if abs(linear_x) < 1e-6:
        return float(fallback)
    return math.atan(float(wheelbase) * float(angular_z) / float(linear_x))


@dataclass(frozen=True)
class OdometrySample:
    """One odometry message, as the controller uses it.

    Attributes
    ----------
    stamp : float
        Header stamp [s].
    x, y, yaw : float
        Pose of the reference point (rear axle) [m, m, rad] in the odometry's frame.
    v_x, v_y, r : float
        Body-frame velocities of the reference point [m/s] and yaw rate [rad/s].
    frame : str
        The odometry's ``header.frame_id``.
    received : float
        ``time.perf_counter()`` when it arrived [s] (latency).
    """

    stamp: float
    x: float
    y: float
    yaw: float
    v_x: float
    v_y: float
    r: float
    frame: str = "odom"
    received: float = 0.0


class OdometryGate:
    """Rejects odometry the controller must not use: non-finite values, stamps going backwards or
    repeating, and stamps older than ``max_age`` [s] than the newest accepted one.

    Examples
    --------
    >>> gate = OdometryGate()
    >>> gate.check(OdometrySample(1.0, 0, 0, 0, 1, 0, 0)) is None
    True
    >>> gate.check(OdometrySample(0.5, 0, 0, 0, 1, 0, 0))
    'odometry stamp 0.500 s goes backwards (last 1.000 s): ignored'
    >>> gate.check(OdometrySample(2.0, float("nan"), 0, 0, 1, 0, 0))
    'odometry has non-finite x = nan at stamp 2.000 s: ignored'
    """

    def __init__(self) -> None:
        self.last_stamp: float | None = None
        self.rejected = 0

    def check(self, sample: OdometrySample) -> str | None:
        """None when ``sample`` is usable (it becomes the newest), else why it is ignored."""
        for name in ("stamp", "x", "y", "yaw", "v_x", "v_y", "r"):
            value = getattr(sample, name)
            if not math.isfinite(value):
                return self._reject(f"odometry has non-finite {name} = {value} at stamp {sample.stamp:.3f} s: ignored")
        last = self.last_stamp
        if last is not None and sample.stamp < last:
            return self._reject(f"odometry stamp {sample.stamp:.3f} s goes backwards (last {last:.3f} s): ignored")
        if last is not None and sample.stamp == last:
            return self._reject(f"odometry stamp {sample.stamp:.3f} s repeats the last one: ignored")
        self.last_stamp = sample.stamp
        return None

    def _reject(self, why: str) -> str:
        self.rejected += 1
        return why


def latency_stats(latencies_s: list[float] | np.ndarray) -> dict[str, float]:
    """Median, 99th percentile and maximum [ms] of latencies given in seconds (NaN when empty).

    Examples
    --------
    >>> latency_stats([0.001, 0.002, 0.003])["median_ms"]
    2.0
    """
    a = np.asarray(latencies_s, dtype=float)
    if a.size == 0:
        return {"median_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan, "count": 0}
    return {"median_ms": float(np.median(a) * 1e3), "p99_ms": float(np.percentile(a, 99) * 1e3),
            "max_ms": float(a.max() * 1e3), "count": int(a.size)}
