"""The ROS 2 nodes, run for real (not mocked), each run in a private network namespace with only
loopback (``unshare -n``, ``ip link set lo up``, ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``).

* a lap through ``mpc-tracking ros-sim`` equals the in-process ``run`` of the same scenario;
* the controller node survives a table of bad inputs (no odometry, NaN, stamps going backwards,
  stale odometry, short or foreign-frame paths) and says what it did; the plant node names the
  valid plants for an unknown one;
* without ROS 2 the commands say how to install the extra (exit 2).

They skip (with the reason) only when rclpy is not installed or no network namespace can be made.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mpc_tracking.results import SimulationResult
from mpc_tracking.ros import missing_ros_modules
from mpc_tracking.ros.isolation import isolated_command, isolated_env, isolation_problem

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "demos" / "quickstart.yaml"


def _skip_reason() -> str | None:
    missing = missing_ros_modules()
    if missing:
        return f"ROS 2 not installed (missing {', '.join(missing)}): pip install '.[ros]'"
    return isolation_problem()


needs_ros = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def run_isolated(argv: list[str], timeout: float = 240.0) -> subprocess.CompletedProcess:
    """Run ``argv`` in a private network namespace with only loopback (the way every test here
    starts ROS 2)."""
    env = isolated_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return subprocess.run(isolated_command(argv), env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=str(ROOT))


def test_isolation_has_only_loopback():
    """The namespace the tests use has one interface, loopback, and it is up."""
    if isolation_problem():
        pytest.skip(str(isolation_problem()))
    done = run_isolated(["ip", "-o", "link"])
    links = [line.split(":")[1].strip() for line in done.stdout.splitlines()]
    assert links == ["lo"], done.stdout
    assert "UP" in done.stdout


# ---------------------------------------------------------------------- a lap over ROS 2
@pytest.fixture(scope="module")
def lap_over_ros(tmp_path_factory):
    if _skip_reason():
        pytest.skip(str(_skip_reason()))
    out = tmp_path_factory.mktemp("ros_sim")
    done = run_isolated([sys.executable, "-m", "mpc_tracking", "ros-sim", str(QUICKSTART), "--out", str(out),
                         "--no-plots"])
    assert done.returncode == 0, done.stdout + done.stderr
    return SimulationResult.load(out / "result.npz"), done.stdout


@pytest.fixture(scope="module")
def lap_in_process():
    from mpc_tracking.scenario.core import load_scenario, run_scenario

    return run_scenario(load_scenario(QUICKSTART))


@needs_ros
def test_ros_sim_lap_equals_the_in_process_run(lap_over_ros, lap_in_process):
    """Lock-step makes the ROS loop the in-process loop: the same observations (the odometry carries
    the rear axle's pose and body twist in float64; the yaw's round trip through a quaternion costs
    ~1e-16 rad), hence the same commands. Measured: the same 494 steps, lap time and RMS e_y equal
    to 1e-9; the tolerances (one step, 1 ms lap time, 1 mm) leave room for the solver's
    floating-point noise and nothing else."""
    ros, run = lap_over_ros[0], lap_in_process
    assert ros.reason == run.reason == "completed"
    assert abs(len(ros) - len(run)) <= 1
    assert ros.lap_times[0] == pytest.approx(run.lap_times[0], abs=1e-3)
    assert ros.metrics["rms_e_y"] == pytest.approx(run.metrics["rms_e_y"], abs=1e-3)
    n = min(len(ros), len(run))
    np.testing.assert_allclose(ros.series["e_y"][:n], run.series["e_y"][:n], atol=1e-3)
    np.testing.assert_allclose(ros.series["delta_cmd"][:n], run.series["delta_cmd"][:n], atol=1e-3)


@needs_ros
def test_ros_sim_prints_the_run_summary_and_the_latency(lap_over_ros):
    text = lap_over_ros[1]
    for line in ("outcome", "lap time [s]", "RMS / max |e_y| [m]", "odometry->command latency", "real-time factor",
                 "wrote"):
        assert line in text
    ros = lap_over_ros[0].info["ros"]
    assert ros["latency"]["count"] == len(lap_over_ros[0])
    assert ros["latency"]["median_ms"] > 0


@needs_ros
def test_ros_parameters_override_scenario_keys(tmp_path):
    """``--ros-args -p KEY:=VALUE`` with a scenario key reaches both nodes (as --set would)."""
    done = run_isolated([sys.executable, "-m", "mpc_tracking", "ros-sim", str(QUICKSTART), "--out", str(tmp_path),
                         "--no-plots", "-q", "--ros-args", "-p", "simulation.t_max:=1.5", "-p",
                         "controller.horizon:=12"])
    assert done.returncode == 0, done.stdout + done.stderr
    res = SimulationResult.load(tmp_path / "result.npz")
    assert res.reason == "time_limit" and res.info["horizon"] == 12
    assert res.series["t"][-1] == pytest.approx(1.45)  # the last step before t_max, 50 ms apart
    assert res.horizon_xy.shape[1] == 13


@needs_ros
def test_an_unknown_ros_parameter_is_one_line():
    done = run_isolated([sys.executable, "-m", "mpc_tracking", "ros-sim", str(QUICKSTART), "-q", "--ros-args", "-p",
                         "horizon:=12"], timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    err = [line for line in done.stderr.splitlines() if line.startswith("mpc-tracking")]
    assert len(err) == 1 and "'horizon'" in err[0] and "controller" in err[0], done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------- bad input
DRIVER = textwrap.dedent('''
    import json, math, sys, time
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from geometry_msgs.msg import PoseStamped, Twist
    from nav_msgs.msg import Odometry, Path
    from diagnostic_msgs.msg import DiagnosticArray
    from mpc_tracking.scenario.core import load_scenario
    from mpc_tracking.ros.controller_node import ControllerNode
    from mpc_tracking.ros.common import RELIABLE, to_stamp, from_stamp
    from mpc_tracking.ros.record import start_pose

    rclpy.init()
    node = ControllerNode(load_scenario(sys.argv[1]), parameter_overrides=[
        Parameter("path_topic", value="path"), Parameter("odom_timeout", value=0.3)])
    probe = rclpy.create_node("probe")
    odom_pub = probe.create_publisher(Odometry, "odom", RELIABLE)
    path_pub = probe.create_publisher(Path, "path", 1)
    seen = {"cmd": [], "diag": []}
    probe.create_subscription(Twist, "cmd_vel", lambda m: seen["cmd"].append(m.linear.x), RELIABLE)
    probe.create_subscription(DiagnosticArray, "/diagnostics",
                              lambda m: seen["diag"].extend(s.message for s in m.status), 10)
    ex = SingleThreadedExecutor(); ex.add_node(node); ex.add_node(probe)
    x0, y0, yaw0 = start_pose(node.path, 0.0, 0.0, 0.0)

    def spin(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)

    def now():
        return from_stamp(probe.get_clock().now().to_msg())

    def odom(stamp=None, x=x0, frame="odom"):
        m = Odometry(); m.header.stamp = to_stamp(now() if stamp is None else stamp); m.header.frame_id = frame
        m.pose.pose.position.x, m.pose.pose.position.y = x, y0
        m.pose.pose.orientation.z, m.pose.pose.orientation.w = math.sin(yaw0 / 2), math.cos(yaw0 / 2)
        m.twist.twist.linear.x = 8.0
        odom_pub.publish(m)

    def drive(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            odom(); spin(0.05)

    def path(n, frame="odom"):
        m = Path(); m.header.frame_id = frame
        for i in range(n):
            p = PoseStamped(); p.pose.position.x, p.pose.position.y = x0 + i, y0; m.poses.append(p)
        path_pub.publish(m)

    def case(name, action):
        seen["cmd"].clear(); seen["diag"].clear()
        ticks = node.ticks
        action()
        results[name] = {"cmd": list(seen["cmd"]), "diag": list(seen["diag"]), "ticks": node.ticks - ticks}

    def slow_solver():  # every solve takes 0.4 s = 8 control periods (> max_fallback_steps = 5)
        fast = node.controller.solve
        def slow(*args, **kwargs):
            time.sleep(0.4)
            return fast(*args, **kwargs)
        node.controller.solve = slow
        drive(1.2)
        node.controller.solve = fast
        spin(0.5)

    results = {}
    while odom_pub.get_subscription_count() == 0:
        spin(0.05)
    case("no_odometry", lambda: spin(0.8))
    case("good_odometry", lambda: drive(0.8))
    case("nan_odometry", lambda: (odom(x=float("nan")), spin(0.2), drive(0.4)))
    case("stamp_backwards", lambda: (odom(stamp=now() - 5.0), spin(0.2), drive(0.4)))
    case("stamp_repeats", lambda: (lambda t: (odom(stamp=t), spin(0.05), odom(stamp=t), spin(0.2)))(now()))
    case("odometry_other_frame", lambda: (odom(frame="map"), spin(0.2), drive(0.4)))
    case("stale_odometry", lambda: spin(0.8))
    case("path_one_pose", lambda: (path(1), spin(0.3)))
    case("path_other_frame", lambda: (drive(0.2), path(5, "map"), spin(0.3)))
    case("slow_solve", slow_solver)
    case("alive_after_all", lambda: drive(0.6))
    print("RESULTS " + json.dumps(results))
    node.close(); probe.destroy_node(); rclpy.shutdown()
''')

#: case -> (text one of its diagnostics must contain, what the commands must show)
BAD_INPUT = {
    "no_odometry": ("no odometry on 'odom' since the start", "stop"),
    "good_odometry": (None, "drive"),
    "nan_odometry": ("non-finite x = nan", "drive"),
    "stamp_backwards": ("goes backwards", "drive"),
    "stamp_repeats": ("repeats the last one", None),
    "odometry_other_frame": ("odometry in frame 'map', expected 'odom'", "drive"),
    "stale_odometry": ("no fresh odometry for", "stop"),
    "path_one_pose": ("has 1 pose(s); expected >= 2", None),
    "path_other_frame": ("is in frame 'map' but the odometry is in 'odom'", None),
    "slow_solve": ("the solver has been busy for more than max_fallback_steps ticks", "some stop"),
    "alive_after_all": (None, "drive"),
}


@pytest.fixture(scope="module")
def bad_input_run():
    if _skip_reason():
        pytest.skip(str(_skip_reason()))
    done = run_isolated([sys.executable, "-c", DRIVER, str(QUICKSTART)], timeout=180)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULTS ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULTS "):])


@needs_ros
@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_controller_node_handles_bad_input(bad_input_run, case):
    text, commands = BAD_INPUT[case]
    got = bad_input_run[case]
    if text is not None:
        assert any(text in d for d in got["diag"]), got["diag"]
    if commands == "stop":  # it ends commanding a stop (after odom_timeout with no fresh odometry)
        assert got["cmd"] and got["cmd"][-1] == 0.0 and got["cmd"][-3:] == [0.0] * 3, got["cmd"]
    elif commands == "drive":  # the node still commands the car forward
        assert got["cmd"] and max(got["cmd"]) > 1.0, got["cmd"]
    elif commands == "some stop":  # a slow solve: the timer kept ticking (held commands, then a stop)
        assert 0.0 in got["cmd"] and max(got["cmd"]) > 1.0, got["cmd"]
        # ~34 ticks in the 1.7 s at 20 Hz; an executor blocked by each 0.4 s solve would tick ~4 times
        assert got["ticks"] > 10, got


@needs_ros
def test_plant_node_names_the_valid_plants():
    done = run_isolated([sys.executable, "-m", "mpc_tracking", "ros-plant", str(QUICKSTART), "--plant", "warp_drive"],
                        timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "warp_drive" in done.stderr and "kinematic_bicycle" in done.stderr and "unicycle" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["ros-sim", "ros-node", "ros-plant"])
def test_without_ros_the_commands_say_how_to_install(command, monkeypatch, capsys):
    import mpc_tracking.ros as ros
    from mpc_tracking.cli.main import main

    monkeypatch.setattr(ros, "missing_ros_modules", lambda: ["rclpy"])
    assert main([command, str(QUICKSTART)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install "mpc_tracking[ros]"' in err[0]
