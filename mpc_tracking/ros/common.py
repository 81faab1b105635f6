"""What both nodes share: time stamps, scenario overrides from ROS parameters, QoS, frames.

Imports ``rclpy`` (the ``[ros]`` extra).
"""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from builtin_interfaces.msg import Time
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from mpc_tracking.errors import InputError

__all__ = ["RELIABLE", "SCENARIO_SECTIONS", "to_stamp", "from_stamp", "scenario_overrides", "own_parameter"]

logger = logging.getLogger(__name__)

#: QoS of commands and odometry: reliable, the last 10 (lock-step simulation loses nothing)
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)

#: first parts of ROS parameter names that override scenario keys (``-p controller.horizon:=20``)
SCENARIO_SECTIONS = ("name", "description", "path", "speed_profile", "environment", "vehicle", "plant", "actuation",
                     "controller", "simulation", "outputs")


def to_stamp(t: float) -> Time:
    """``builtin_interfaces/Time`` of ``t`` seconds (>= 0)."""
    sec = math.floor(t)
    nanosec = round((t - sec) * 1e9)
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return Time(sec=int(sec), nanosec=nanosec)


def from_stamp(stamp: Any) -> float:
    """Seconds of a ``builtin_interfaces/Time``."""
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


def scenario_overrides(node: Node, own: Sequence[str], other: Sequence[str] = ()) -> dict[str, Any]:
    """The node's ROS parameters that name scenario keys (``controller.horizon``, ``plant.name``),
    as dotted overrides; parameters in ``own`` (the node's own), ``other`` (the other node's, so
    one parameter file serves both) and ``use_sim_time`` are skipped.

    Raises
    ------
    InputError
        A parameter that is neither the node's own nor under a scenario section (the valid ones listed).
    """
    out: dict[str, Any] = {}
    for name, param in node.get_parameters_by_prefix("").items():
        if name in own or name in other or name in ("use_sim_time", "start_type_description_service"):
            continue
        section = name.split(".")[0]
        if section not in SCENARIO_SECTIONS:
            raise InputError(f"ROS parameter {name!r}: not a parameter of node {node.get_name()!r} "
                             f"({', '.join(own)}) nor a scenario key under {', '.join(SCENARIO_SECTIONS)}")
        out[name] = param.value
    return out


def own_parameter(node: Node, name: str, default: Any) -> Any:
    """Declare ``name`` (unless a command-line override declared it) and return its value."""
    if not node.has_parameter(name):
        node.declare_parameter(name, default)
    value = node.get_parameter(name).value
    return default if value is None else value
