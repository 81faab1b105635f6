"""The MPC as a ROS 2 node (``mpc-tracking ros-node SCENARIO``).

Topics (names are parameters; REP-103 units and axes, REP-105 frames):

* in ``odom`` (``nav_msgs/Odometry``): pose of the **rear axle** (the controller's reference point)
  in ``odom_frame`` (``odom``; ``map`` for a localised robot), twist in ``base_link`` (yaw-rotated
  body frame at that point);
* in ``path_topic`` (``nav_msgs/Path``, only when the parameter is set): a new reference path in
  the odometry's frame, with widths ``path_width_left`` / ``path_width_right`` [m];
* out ``cmd_vel`` (``geometry_msgs/Twist``): ``linear.x = v``, ``angular.z = v tan(delta) / L``;
  ``steering_angle`` (``std_msgs/Float64``): ``delta`` [rad]; ``ackermann_cmd``
  (``ackermann_msgs/AckermannDriveStamped``) when that package is importable;
* out ``~/markers`` (``visualization_msgs/MarkerArray``): predicted horizon, corridor edges along
  it, the body footprint and its safety ellipse;
* out ``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``): each step's status, solver status,
  solve time, fallback steps, rejoin, latency, rejected odometry, the last problem.

Timing: ``trigger = "timer"`` (default) solves on a timer at the control period with the newest
odometry; ``trigger = "odometry"`` solves once per odometry message (``ros-sim``'s lock-step).
The solve runs on a worker thread, so the executor never blocks: a tick that finds the previous
solve still running re-publishes the last command (counted as ``held_ticks``), and after
``max_fallback_steps`` such ticks in a row it commands a stop. With ``trigger = "timer"`` and no
``controller.max_solve_time`` in the scenario, the solver's time limit is set to 80 % of the
control period, so a slow QP takes the controller's own fallback (previous plan, then safe stop).

Bad input never stops the node: non-finite odometry, stamps going backwards or repeating are
ignored (logged, counted); no odometry for ``odom_timeout`` [s] commands a stop and says so; a
path with fewer than 2 poses, in another frame than the odometry, or one the controller cannot use
is rejected with the reason (the previous path stays).
"""
from __future__ import annotations

import importlib
import logging
import math
import threading
import time
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, Twist
from nav_msgs.msg import Odometry
from nav_msgs.msg import Path as PathMsg
from rclpy.node import Node
from std_msgs.msg import Float64
from visualization_msgs.msg import Marker, MarkerArray

from mpc_tracking.errors import InputError, MPCTrackingError
from mpc_tracking.mpc.controller import SpatialMPC
from mpc_tracking.mpc.settings import MPCSolution, Status
from mpc_tracking.paths.reference_path import ReferencePath
from mpc_tracking.results import Outcome, SimulationResult
from mpc_tracking.ros.common import RELIABLE, from_stamp, own_parameter, scenario_overrides, to_stamp
from mpc_tracking.ros.conversions import (
    OdometryGate,
    OdometrySample,
    latency_stats,
    quaternion_from_euler,
    twist_from_command,
    yaw_from_quaternion,
)
from mpc_tracking.ros.record import RunRecord

__all__ = ["ControllerNode", "NODE_PARAMETERS"]

logger = logging.getLogger(__name__)

#: the node's own parameters and defaults (every other parameter overrides a scenario key)
NODE_PARAMETERS: dict[str, Any] = {
    "trigger": "timer",
    "odom_topic": "odom",
    "cmd_topic": "cmd_vel",
    "steering_topic": "steering_angle",
    "ackermann_topic": "ackermann_cmd",
    "path_topic": "",
    "path_width_left": 2.0,
    "path_width_right": 2.0,
    "path_closed": False,
    "odom_timeout": 0.5,
    "odom_frame": "odom",
    "base_frame": "base_link",
    "markers": True,
}


#: the plant node's own parameters (ignored here: one parameter file may serve both nodes)
_PLANT_PARAMETER_NAMES = ("lockstep", "rate")


def _ackermann_type() -> Any:
    try:
        return importlib.import_module("ackermann_msgs.msg").AckermannDriveStamped
    except ImportError:
        return None


class ControllerNode(Node):
    """The spatial MPC fed by odometry over ROS 2.

    Parameters
    ----------
    scenario : Scenario
        As for ``mpc-tracking run``; ROS parameters named like scenario keys
        (``controller.horizon``) override it.
    node_name : str
    parameter_overrides : list of rclpy.parameter.Parameter, optional
        Parameters set in code (the command line's ``--ros-args -p`` works too).
    """

    def __init__(self, scenario: Any, node_name: str = "mpc_controller", parameter_overrides: list | None = None,
                 **kwargs: Any) -> None:
        super().__init__(node_name, parameter_overrides=parameter_overrides or [],
                         automatically_declare_parameters_from_overrides=True,
                         allow_undeclared_parameters=True, **kwargs)
        p = {name: own_parameter(self, name, default) for name, default in NODE_PARAMETERS.items()}
        if p["trigger"] not in ("timer", "odometry"):
            raise InputError(f"ROS parameter trigger: expected 'timer' or 'odometry', got {p['trigger']!r}")
        self.params = p
        overrides = scenario_overrides(self, list(NODE_PARAMETERS), other=_PLANT_PARAMETER_NAMES)
        self.scenario = scenario.with_overrides(overrides) if overrides else scenario
        self._build()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._job: OdometrySample | None = None
        self._busy = False
        self._running = True
        self.gate = OdometryGate()
        self.latest: OdometrySample | None = None
        self.t0: float | None = None
        self.latencies: list[float] = []
        self.ticks = 0
        self._used_stamp: float | None = None
        self.held_ticks = 0
        self._held_in_row = 0
        self.stops = 0
        self.problem = ""
        self._last_cmd = (0.0, 0.0)
        self._last_sol: MPCSolution | None = None
        self._start_wall = time.monotonic()
        self._make_interfaces()
        self._worker = threading.Thread(target=self._work, name=f"{node_name}-solver", daemon=True)
        self._worker.start()
        self.get_logger().info(
            f"MPC on path {self.path.name!r} (N = {self.controller.N}, period {self.period * 1e3:.0f} ms, "
            f"trigger {p['trigger']}); odometry on {p['odom_topic']!r}, commands on {p['cmd_topic']!r} + "
            f"{p['steering_topic']!r}")

    # ------------------------------------------------------------------ set-up
    def _build(self) -> None:
        from mpc_tracking.scenario.build import build

        path, mpc, _plant, _actuator, kw = build(self.scenario)
        st = mpc.settings
        if self.params["trigger"] == "timer" and math.isinf(st.max_solve_time):
            mpc = SpatialMPC(path, mpc.vehicle, st.replace(max_solve_time=0.8 * st.control_period),
                             corridor=mpc.corridor, prediction=mpc.model)
        self.path, self.controller, self.sim_kwargs = path, mpc, kw
        self.period = float(mpc.settings.control_period)
        self.plant_name = self.scenario.plant.name
        self._new_record()

    def _new_record(self) -> None:
        kw, mpc = self.sim_kwargs, self.controller
        t_max = kw.get("t_max")
        if t_max is None:
            st = mpc.settings
            goal = kw["laps"] * self.path.length if self.path.closed else self.path.length - kw["s0"]
            t_max = 3.0 * goal / max(st.v_min, 0.2 * st.v_max) + 10.0
        tol = kw.get("corridor_tolerance")
        self.record = RunRecord(self.path, kw["laps"], t_max, mpc.vehicle.width if tol is None else tol,
                                kw["s0"] if self.path.closed else 0.0)
        mpc.reset()

    def _make_interfaces(self) -> None:
        p = self.params
        self.cmd_pub = self.create_publisher(Twist, p["cmd_topic"], RELIABLE)
        self.steer_pub = self.create_publisher(Float64, p["steering_topic"], RELIABLE)
        ack = _ackermann_type()
        self.ack_pub = self.create_publisher(ack, p["ackermann_topic"], RELIABLE) if ack is not None else None
        self._ack_type = ack
        self.marker_pub = self.create_publisher(MarkerArray, "~/markers", 1)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Odometry, p["odom_topic"], self._on_odometry, RELIABLE)
        if p["path_topic"]:
            self.create_subscription(PathMsg, p["path_topic"], self._on_path, 1)
        self.timer = self.create_timer(self.period, self._on_tick)

    # ------------------------------------------------------------------ inputs
    def _on_odometry(self, msg: Odometry) -> None:
        pose, tw = msg.pose.pose, msg.twist.twist
        q = pose.orientation
        sample = OdometrySample(
            stamp=from_stamp(msg.header.stamp), x=float(pose.position.x), y=float(pose.position.y),
            yaw=yaw_from_quaternion(q.x, q.y, q.z, q.w), v_x=float(tw.linear.x), v_y=float(tw.linear.y),
            r=float(tw.angular.z), frame=msg.header.frame_id, received=time.perf_counter())
        why = self.gate.check(sample)
        if why is None and sample.frame and sample.frame != self.params["odom_frame"]:
            why = (f"odometry in frame {sample.frame!r}, expected {self.params['odom_frame']!r} "
                   "(parameter odom_frame, the path's frame): ignored")
            self.gate.rejected += 1
        if why is not None:
            self._problem(why)
            return
        with self._lock:
            self.latest = sample
            if self.t0 is None:
                self.t0 = sample.stamp
        if self.params["trigger"] == "odometry":
            self._submit(sample)

    def _on_path(self, msg: PathMsg) -> None:
        try:
            path = self._path_from_message(msg)
            ctrl = SpatialMPC(path, self.controller.vehicle, self.controller.settings, prediction=self.controller.model)
        except MPCTrackingError as exc:
            self._problem(f"path rejected: {exc}")
            return
        with self._lock:
            self.path, self.controller = path, ctrl
            self.sim_kwargs = {**self.sim_kwargs, "s0": 0.0}
            self._new_record()
        self.get_logger().info(f"new path from {self.params['path_topic']!r}: {len(msg.poses)} poses, "
                               f"{path.length:.1f} m")

    def _path_from_message(self, msg: PathMsg) -> ReferencePath:
        n, frame = len(msg.poses), msg.header.frame_id or self.params["odom_frame"]
        if n < 2:
            raise InputError(f"nav_msgs/Path on {self.params['path_topic']!r} has {n} pose(s); expected >= 2")
        odom_frame = self.latest.frame if self.latest is not None and self.latest.frame else self.params["odom_frame"]
        if frame != odom_frame:
            raise InputError(f"nav_msgs/Path is in frame {frame!r} but the odometry is in {odom_frame!r}; "
                             "expected the same frame (this node does not look up transforms)")
        xy = np.array([[p.pose.position.x, p.pose.position.y] for p in msg.poses], dtype=float)
        if not np.all(np.isfinite(xy)):
            raise InputError("nav_msgs/Path has non-finite positions")
        n = len(xy)
        return ReferencePath(xy[:, 0], xy[:, 1], width_left=np.full(n, float(self.params["path_width_left"])),
                             width_right=np.full(n, float(self.params["path_width_right"])),
                             ds=self.path.ds, closed=bool(self.params["path_closed"]), name="ros_path")

    def _problem(self, text: str) -> None:
        self.problem = text
        self.get_logger().warning(text, throttle_duration_sec=1.0)
        self._diagnose(None, DiagnosticStatus.WARN, text)

    # ------------------------------------------------------------------ timing
    def _on_tick(self) -> None:
        self.ticks += 1
        now = from_stamp(self.get_clock().now().to_msg())
        with self._lock:
            latest, busy = self.latest, self._busy
        timeout = float(self.params["odom_timeout"])
        if latest is None:
            if time.monotonic() - self._start_wall > timeout and self.params["trigger"] == "timer":
                self._stop(f"no odometry on {self.params['odom_topic']!r} since the start: commanding a stop")
            return
        age = now - latest.stamp
        if now > 0 and age > timeout:
            self._stop(f"no fresh odometry for {age:.2f} s (odom_timeout {timeout:g} s): commanding a stop")
            return
        if self.params["trigger"] != "timer":
            return
        if busy:
            self.held_ticks += 1
            self._held_in_row += 1
            if self._held_in_row > self.controller.settings.max_fallback_steps:
                self._stop("the solver has been busy for more than max_fallback_steps ticks: commanding a stop")
            else:
                self._publish_command(*self._last_cmd)
            return
        if latest.stamp == self._used_stamp:  # no new odometry since the last solve: hold its command
            self._publish_command(*self._last_cmd)
            return
        self._used_stamp = latest.stamp
        self._submit(latest)

    def _stop(self, why: str) -> None:
        self.stops += 1
        self.problem = why
        self.get_logger().warning(why, throttle_duration_sec=1.0)
        self._publish_command(0.0, self._last_cmd[1])
        self._diagnose(None, DiagnosticStatus.ERROR, why)

    def _submit(self, sample: OdometrySample) -> None:
        """Hand ``sample`` to the solver thread (a sample still waiting there is replaced by it)."""
        with self._wake:
            self._job, self._busy = sample, True
            self._wake.notify()

    def _work(self) -> None:
        while True:
            with self._wake:
                while self._job is None and self._running:
                    self._busy = False
                    self._wake.wait()
                if not self._running:
                    return
                sample, self._job = self._job, None
            try:
                self._step(sample)
            except Exception as exc:  # the node must not die: report and command a stop
                logger.exception("controller step failed")
                self._stop(f"controller step failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ one step
    def _step(self, sample: OdometrySample | None) -> None:
        if sample is None:
            return
        self._held_in_row = 0
        rec, ctrl = self.record, self.controller
        t = sample.stamp - (self.t0 or 0.0)
        if rec.finished:
            self._publish_command(0.0, self._last_cmd[1])
            return
        proj = self.path.project(sample.x, sample.y, sample.yaw, s_hint=rec.s_prev)
        if not rec.observe(proj, t):
            self.get_logger().info(f"run finished: {rec.outcome} {rec.message}".rstrip())
            self._publish_command(0.0, self._last_cmd[1])
            return
        measured = {"speed": sample.v_x}
        if ctrl.model.MEASURES:
            measured.update(v_x=sample.v_x, v_y=sample.v_y, r=sample.r)
        try:
            sol = ctrl.solve(proj, t=t, measured=measured)
        except MPCTrackingError as exc:
            rec.finish(Outcome.ERROR, str(exc))
            self._stop(f"controller error: {exc}")
            return
        self._publish_command(sol.v, sol.delta)
        self.latencies.append(time.perf_counter() - sample.received)
        rec.record(t, (sample.x, sample.y), sample.yaw, sample.v_x, proj, sol)
        self._last_sol = sol
        level = DiagnosticStatus.OK if sol.status.solved else DiagnosticStatus.WARN
        self._diagnose(sol, level, str(sol.status))
        if self.params["markers"]:
            self._publish_markers(sol, sample)

    def _publish_command(self, v: float, delta: float) -> None:
        self._last_cmd = (float(v), float(delta))
        lin, ang = twist_from_command(v, delta, self.controller.vehicle.wheelbase)
        tw = Twist()
        tw.linear.x, tw.angular.z = lin, ang
        self.steer_pub.publish(Float64(data=float(delta)))
        self.cmd_pub.publish(tw)
        if self.ack_pub is not None:
            msg = self._ack_type()
            msg.header.stamp = self.get_clock().now().to_msg()
            msg.header.frame_id = self.params["base_frame"]
            msg.drive.speed, msg.drive.steering_angle = float(v), float(delta)
            self.ack_pub.publish(msg)

    # ------------------------------------------------------------------ outputs
    def _diagnose(self, sol: MPCSolution | None, level: Any, message: str) -> None:
        values = {"odometry_rejected": self.gate.rejected, "held_ticks": self.held_ticks, "stops": self.stops,
                  "problem": self.problem, "steps": len(self.record.rows)}
        if sol is not None:
            values.update(status=str(sol.status), solver_status=sol.solver_status,
                          solve_time_ms=round(sol.solve_time * 1e3, 3), step_time_ms=round(sol.step_time * 1e3, 3),
                          fallback=sol.status in (Status.FALLBACK, Status.SAFE_STOP),
                          fallback_steps=sol.fallback_steps, rejoin=sol.status == Status.REJOIN,
                          latency_ms=round(self.latencies[-1] * 1e3, 3) if self.latencies else "")
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [DiagnosticStatus(level=level, name=f"{self.get_name()}: mpc step", message=message,
                                       hardware_id="mpc_tracking",
                                       values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])]
        self.diag_pub.publish(arr)

    def _publish_markers(self, sol: MPCSolution, sample: OdometrySample) -> None:
        frame, stamp = self.params["odom_frame"], to_stamp(max(sample.stamp, 0.0))
        veh = self.controller.vehicle

        def marker(mid: int, ns: str, kind: int, rgb: tuple[float, float, float]) -> Marker:
            m = Marker(id=mid, ns=ns, type=kind, action=Marker.ADD)
            m.header.frame_id, m.header.stamp = frame, stamp
            m.color.r, m.color.g, m.color.b, m.color.a = (*rgb, 0.9)
            m.pose.orientation.w = 1.0
            return m

        out = []
        horizon = marker(0, "horizon", Marker.LINE_STRIP, (0.1, 0.4, 1.0))
        horizon.scale.x = 0.1
        horizon.points = [Point(x=float(x), y=float(y)) for x, y in sol.xy]
        out.append(horizon)
        if sol.lb is not None and sol.ub is not None:
            for mid, bound in ((1, sol.ub), (2, sol.lb)):
                edge = marker(mid, "corridor", Marker.LINE_STRIP, (1.0, 0.5, 0.0))
                edge.scale.x = 0.05
                edge.points = [Point(x=float(x), y=float(y)) for x, y in self.path.point_at(sol.s, bound)]
                out.append(edge)
        c, s = math.cos(sample.yaw), math.sin(sample.yaw)
        off = veh.center_offset
        qx, qy, qz, qw = quaternion_from_euler(0.0, 0.0, sample.yaw)
        a, b = veh.safety_ellipse
        for mid, ns, kind, size in ((3, "footprint", Marker.CUBE, (veh.length, veh.width, 0.5)),
                                    (4, "safety_ellipse", Marker.CYLINDER, (2 * a, 2 * b, 0.05))):
            m = marker(mid, ns, kind, (0.2, 0.8, 0.2) if mid == 3 else (0.8, 0.2, 0.2))
            m.pose.position.x, m.pose.position.y = sample.x + off * c, sample.y + off * s
            m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = qx, qy, qz, qw
            m.scale.x, m.scale.y, m.scale.z = size
            m.color.a = 0.4
            out.append(m)
        self.marker_pub.publish(MarkerArray(markers=out))

    # ------------------------------------------------------------------ results
    @property
    def finished(self) -> bool:
        """True once the run has an outcome (laps done, end of path, left the corridor, ...)."""
        return self.record.finished

    def latency(self) -> dict[str, float]:
        """Odometry-arrival-to-command latency: median, p99, max [ms] and the number of steps."""
        return latency_stats(self.latencies)

    def result(self) -> SimulationResult:
        """The run so far as a :class:`~mpc_tracking.SimulationResult` (``info["ros"]`` holds the
        latency figures, held ticks, stops and rejected odometry)."""
        with self._lock:
            info = {"path": self.path.name, "plant": self.plant_name, "horizon": self.controller.N,
                    "control_period": self.period, "sim_dt": self.sim_kwargs.get("sim_dt"),
                    "laps": self.sim_kwargs.get("laps"), "mode": self.controller.settings.mode,
                    "ros": {"latency": self.latency(), "held_ticks": self.held_ticks, "stops": self.stops,
                            "odometry_rejected": self.gate.rejected, "trigger": self.params["trigger"]}}
            return self.record.result(self.controller.N, info, self.controller.vehicle)

    def close(self) -> None:
        """Stop the solver thread and destroy the node."""
        with self._wake:
            self._running = False
            self._wake.notify()
        self._worker.join(timeout=5.0)
        self.destroy_node()
