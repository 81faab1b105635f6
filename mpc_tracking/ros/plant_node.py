"""Any registered plant as a simulated ROS 2 robot (``mpc-tracking ros-plant SCENARIO``).

The plant (``plant.name`` of the scenario, or ``--plant``: kinematic_bicycle, unicycle,
simple_car, ackermann3d, plugins) starts where the scenario starts the car, takes the command
from ``cmd_vel`` (``geometry_msgs/Twist``: ``linear.x`` = speed) and ``steering_angle``
(``std_msgs/Float64`` [rad]), maps it through the scenario's actuator, integrates with the
scenario's ``sim_dt``, and publishes ``nav_msgs/Odometry`` (pose of the rear axle in ``odom``,
body-frame twist at it, ``child_frame_id`` ``base_link``) and ``rosgraph_msgs/Clock`` on
``/clock``, so nodes with ``use_sim_time`` run on its time.

Two schemes (parameter ``lockstep``):

* lock-step (``ros-sim``): after publishing the odometry of time ``t`` the plant waits for one
  ``cmd_vel`` and one ``steering_angle`` (in either order), then advances one control period,
  publishes ``/clock`` = ``t + T`` and the new odometry. Simulated time runs as fast as the
  controller answers; the run is the in-process loop's, step for step.
* free-running: a wall-clock timer advances one control period every ``T / rate`` seconds with
  the newest command (``rate`` = real-time factor), as a robot would.
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64

from mpc_tracking.errors import MPCTrackingError
from mpc_tracking.ros.common import RELIABLE, own_parameter, scenario_overrides, to_stamp
from mpc_tracking.ros.controller_node import NODE_PARAMETERS
from mpc_tracking.ros.conversions import quaternion_from_euler
from mpc_tracking.ros.record import start_pose

__all__ = ["PlantNode", "PLANT_PARAMETERS"]

#: the node's own parameters and defaults (every other parameter overrides a scenario key)
PLANT_PARAMETERS: dict[str, Any] = {
    "lockstep": True,
    "rate": 1.0,
    "odom_topic": "odom",
    "cmd_topic": "cmd_vel",
    "steering_topic": "steering_angle",
    "odom_frame": "odom",
    "base_frame": "base_link",
}


class PlantNode(Node):
    """A plant of the registry driven over ROS 2.

    Parameters
    ----------
    scenario : Scenario
        Gives the plant, its parameters, actuator, start and timing; ROS parameters named like
        scenario keys (``plant.name``) override it.
    node_name : str
    parameter_overrides : list of rclpy.parameter.Parameter, optional
    """

    def __init__(self, scenario: Any, node_name: str = "mpc_plant", parameter_overrides: list | None = None,
                 **kwargs: Any) -> None:
        super().__init__(node_name, parameter_overrides=parameter_overrides or [],
                         automatically_declare_parameters_from_overrides=True,
                         allow_undeclared_parameters=True, **kwargs)
        self.params = p = {name: own_parameter(self, name, default) for name, default in PLANT_PARAMETERS.items()}
        overrides = scenario_overrides(self, list(PLANT_PARAMETERS), other=list(NODE_PARAMETERS))
        self.scenario = scenario.with_overrides(overrides) if overrides else scenario
        self._build()
        self.t = 0.0
        self.steps = 0
        self._v, self._delta = 0.0, 0.0
        self._got_cmd = self._got_steer = False
        self._started = False
        self._published_at = 0.0
        self.round_trips: list[float] = []
        self.odom_pub = self.create_publisher(Odometry, p["odom_topic"], RELIABLE)
        self.clock_pub = self.create_publisher(Clock, "/clock", RELIABLE)
        self.create_subscription(Twist, p["cmd_topic"], self._on_cmd, RELIABLE)
        self.create_subscription(Float64, p["steering_topic"], self._on_steer, RELIABLE)
        if p["lockstep"]:
            self._start_timer = self.create_timer(0.05, self._try_start)
        else:
            rate = float(p["rate"])
            if not rate > 0:
                raise MPCTrackingError(f"ROS parameter rate: expected a real-time factor > 0, got {rate!r}")
            self._publish()
            self.create_timer(self.T / rate, self._free_step)
        self.get_logger().info(f"plant {self.plant.name!r} ({'lock-step' if p['lockstep'] else 'free-running'}, "
                               f"period {self.T * 1e3:.0f} ms, {self.n_sub} x {self.dt * 1e3:.1f} ms steps)")

    def _build(self) -> None:
        from mpc_tracking.scenario.build import build

        path, mpc, plant, actuator, kw = build(self.scenario)
        self.plant, self.actuator = plant, actuator
        self.T = float(mpc.settings.control_period)
        dt = min(0.01, self.T) if kw.get("sim_dt") is None else float(kw["sim_dt"])
        self.n_sub = max(1, round(self.T / dt))
        self.dt = self.T / self.n_sub
        self.offset = float(plant.reference_offset)
        s0 = float(kw.get("s0") or 0.0)
        x, y, yaw = start_pose(path, s0, float(kw.get("e_y0") or 0.0), float(kw.get("e_psi0") or 0.0))
        v0 = kw.get("v0")
        if v0 is None:
            v0 = float(mpc.reference_input(s0)[0])
        plant.init({"x": x + self.offset * math.cos(yaw), "y": y + self.offset * math.sin(yaw), "yaw": yaw,
                    "speed": float(v0)})
        actuator.reset(plant)

    # ------------------------------------------------------------------ commands
    def _on_cmd(self, msg: Twist) -> None:
        self._v, self._got_cmd = float(msg.linear.x), True
        self._maybe_advance()

    def _on_steer(self, msg: Float64) -> None:
        self._delta, self._got_steer = float(msg.data), True
        self._maybe_advance()

    def _try_start(self) -> None:
        """Lock-step: publish the first odometry once a controller listens and commands."""
        if self._started:
            return
        if (self.odom_pub.get_subscription_count() > 0 and self.count_publishers(self.params["cmd_topic"]) > 0
                and self.count_publishers(self.params["steering_topic"]) > 0):
            self._started = True
            self._start_timer.cancel()
            self._publish()

    def _maybe_advance(self) -> None:
        if not (self.params["lockstep"] and self._started and self._got_cmd and self._got_steer):
            return
        self.round_trips.append(time.perf_counter() - self._published_at)
        self._got_cmd = self._got_steer = False
        self._advance()
        self._publish()

    def _free_step(self) -> None:
        self._advance()
        self._publish()

    # ------------------------------------------------------------------ plant
    def _advance(self) -> None:
        plant, act, dt, t = self.plant, self.actuator, self.dt, self.t
        v, delta = self._v, self._delta
        try:
            for _ in range(self.n_sub):
                plant.step(t, dt, act(t, dt, v, delta, plant))
                t += dt
        except MPCTrackingError as exc:
            self.get_logger().error(f"plant stopped at t = {t:.2f} s: {exc}")
        self.t = t
        self.steps += 1

    def odometry(self) -> Odometry:
        """The plant's state as odometry: the rear axle's pose, the body-frame twist at it."""
        pose, vel = self.plant.pose, self.plant.velocity
        c, s = math.cos(pose.yaw), math.sin(pose.yaw)
        r = float(vel.angular[2])
        msg = Odometry()
        msg.header.stamp = to_stamp(self.t)
        msg.header.frame_id, msg.child_frame_id = self.params["odom_frame"], self.params["base_frame"]
        pp = msg.pose.pose
        pp.position.x, pp.position.y = pose.x - self.offset * c, pose.y - self.offset * s
        pp.position.z = float(pose.z)
        o = pp.orientation
        o.x, o.y, o.z, o.w = quaternion_from_euler(pose.roll, pose.pitch, pose.yaw)
        tw = msg.twist.twist
        lin = np.asarray(vel.linear, dtype=float)
        tw.linear.x = float(lin[0] * c + lin[1] * s)
        tw.linear.y = float(-lin[0] * s + lin[1] * c) - self.offset * r
        tw.linear.z = float(lin[2])
        tw.angular.x, tw.angular.y, tw.angular.z = float(vel.angular[0]), float(vel.angular[1]), r
        return msg

    def _publish(self) -> None:
        self.clock_pub.publish(Clock(clock=to_stamp(self.t)))
        self._published_at = time.perf_counter()
        self.odom_pub.publish(self.odometry())
