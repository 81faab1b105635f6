"""``mpc-tracking ros-node`` / ``ros-sim`` / ``ros-plant``: the ROS 2 commands (the ``[ros]`` extra).

* ``ros-node SCENARIO``: the controller node alone (for a robot): spins until Ctrl-C or
  ``--duration``, then prints the run's summary and the odometry-to-command latency.
* ``ros-sim SCENARIO``: the controller node here and the plant node in a child process, over ROS 2,
  lock-stepped on the plant's ``/clock``; prints the same summary as ``run`` and writes the same
  files, plus the latency, real-time factor and CPU time of each node. It runs in a private network
  namespace with only loopback unless ``--no-isolate`` is given.
* ``ros-plant SCENARIO``: the plant node alone (a simulated robot for any controller).

ROS parameters (``--ros-args -p controller.horizon:=20``) override scenario keys, as ``--set`` does.
Without ROS 2 installed each command prints how to install the extra (exit code 2).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from mpc_tracking.cli.failures import EXIT_BAD_INPUT, Terminated, error_line

__all__ = ["add_ros_commands"]

#: give up a ros-sim when no control step happened for this long [s] of wall time
STALL_TIMEOUT = 30.0


def _ros_missing() -> int | None:
    from mpc_tracking.ros import INSTALL_HINT, missing_ros_modules

    missing = missing_ros_modules()
    if not missing:
        return None
    print(error_line(f"{INSTALL_HINT} (missing: {', '.join(missing)})"), file=sys.stderr)
    return EXIT_BAD_INPUT


def _passed_options(args: argparse.Namespace) -> list[str]:
    """The scenario options of ``args`` as command-line words (for a child or a re-exec)."""
    out = [args.scenario]
    for item in args.set or []:
        out += ["--set", item]
    if args.plant:
        out += ["--plant", args.plant]
    return out


def _init_rclpy(ros_args: list[str]) -> Any:
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(args=["mpc-tracking", "--ros-args", *ros_args] if ros_args else None,
               signal_handler_options=SignalHandlerOptions.NO)
    return rclpy


def _reexec_isolated(args: argparse.Namespace, words: list[str]) -> int:
    from mpc_tracking.ros.isolation import isolated_command, isolated_env

    try:
        cmd = isolated_command([sys.executable, "-m", "mpc_tracking", *words])
    except OSError as exc:
        hint = " (ros-sim --no-isolate runs it in this network namespace)" if words[0] == "ros-sim" else ""
        print(error_line(f"{exc}{hint}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    return subprocess.call(cmd, env=isolated_env())


# ---------------------------------------------------------------------- ros-sim
def _cmd_ros_sim(args: argparse.Namespace, load: Callable, finish: Callable) -> int:
    code = _ros_missing()
    if code is not None:
        return code
    from mpc_tracking.ros.isolation import in_isolation

    if not args.no_isolate and not in_isolation():
        words = ["ros-sim", *_passed_options(args)]
        words += (["--out", args.out] if args.out else []) + (["--no-plots"] if args.no_plots else [])
        words += (["-q"] if args.quiet else []) + (["--strict"] if args.strict else [])
        words += ["--ros-args", *args.ros_args] if args.ros_args else []
        return _reexec_isolated(args, words)
    from mpc_tracking.cli.outputs import prepare_folder, staged_folder

    sc = load(args)
    out = prepare_folder(args.out or sc.outputs.folder)
    if args.no_plots:
        sc = sc.with_overrides({"outputs.plots": []})
    result, sc = _simulate_over_ros(args, sc)
    ros = result.info["ros"]
    with staged_folder(out, what=f"ros-sim of {args.scenario}") as staging:
        code = finish(args, result, staging, sc)
    lat = ros["latency"]
    if not args.quiet:
        print(f"  ROS 2 odometry->command latency median / p99 [ms]  {lat['median_ms']:.2f} / {lat['p99_ms']:.2f} "
              f"(plant round trip {ros['round_trip']['median_ms']:.2f} / {ros['round_trip']['p99_ms']:.2f})")
        print(f"  real-time factor {ros['real_time_factor']:.1f} ({ros['wall_time']:.1f} s wall); CPU controller "
              f"{ros['cpu_controller']:.1f} s, plant {ros['cpu_plant']:.1f} s")
    return code


def _simulate_over_ros(args: argparse.Namespace, sc: Any) -> tuple[Any, Any]:
    """Run controller (here) and plant (child process) lock-stepped over ROS 2; the result with
    ``info["ros"]``: latency, plant round trip, wall time, real-time factor, CPU per node [s], and
    the scenario as the nodes ran it (with the ROS parameters' overrides)."""
    from mpc_tracking.scenario.core import record_scenario

    rclpy = _init_rclpy(args.ros_args)
    with tempfile.TemporaryDirectory(prefix="mpc-ros-sim-") as tmp:
        stats = os.path.join(tmp, "plant.json")
        child = [sys.executable, "-m", "mpc_tracking", "ros-plant", *_passed_options(args), "--stats", stats,
                 "--ros-args", "--log-level", "warn", *args.ros_args]
        with open(os.path.join(tmp, "plant.log"), "w+", encoding="utf-8") as log:
            plant = subprocess.Popen(child, stdout=log, stderr=subprocess.STDOUT)
            start_cpu = resource.getrusage(resource.RUSAGE_SELF)
            try:
                result, wall = _spin_until_done(sc, plant, log)
            finally:
                rclpy.shutdown()
                _stop_child(plant)
        plant_stats = _read_stats(stats)
    end_cpu = resource.getrusage(resource.RUSAGE_SELF)
    child_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    sc = result.info.pop("scenario_effective")
    record_scenario(result, sc)
    duration = float(result.series["t"][-1]) if len(result) else 0.0
    result.info["ros"].update(
        wall_time=wall, real_time_factor=duration / wall if wall > 0 else float("nan"),
        cpu_controller=(end_cpu.ru_utime + end_cpu.ru_stime) - (start_cpu.ru_utime + start_cpu.ru_stime),
        cpu_plant=child_cpu.ru_utime + child_cpu.ru_stime,
        round_trip=plant_stats.get("round_trip", {"median_ms": float("nan"), "p99_ms": float("nan")}))
    return result, sc


def _spin_until_done(sc: Any, plant: subprocess.Popen, log: Any) -> tuple[Any, float]:
    """Spin the controller node (lock-step on the plant's clock) until the run ends; the result and
    the wall time [s]."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from mpc_tracking.errors import SimulationError
    from mpc_tracking.ros.controller_node import ControllerNode

    wall0 = time.perf_counter()
    node = ControllerNode(sc, parameter_overrides=[Parameter("trigger", value="odometry"),
                                                   Parameter("use_sim_time", value=True)])
    try:
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        steps, last_progress = 0, time.perf_counter()
        while not node.finished:
            executor.spin_once(timeout_sec=0.05)
            if len(node.record.rows) != steps:
                steps, last_progress = len(node.record.rows), time.perf_counter()
            if plant.poll() is not None:
                log.seek(0)
                raise SimulationError(f"the plant node exited with code {plant.returncode}: "
                                      f"{' '.join(log.read().split()[-40:])}")
            if time.perf_counter() - last_progress > STALL_TIMEOUT:
                raise SimulationError(f"no control step for {STALL_TIMEOUT:g} s of wall time over ROS 2 "
                                      f"(after {steps} steps)")
        result = node.result()
        result.info["scenario_effective"] = node.scenario  # with the ROS parameters' overrides
        return result, time.perf_counter() - wall0
    finally:
        node.close()


def _stop_child(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()  # SIGTERM: the plant node shuts down and writes its statistics
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _read_stats(name: str) -> dict[str, Any]:
    try:
        with open(name, encoding="utf-8") as f:
            return dict(json.load(f))
    except (OSError, ValueError):
        return {}


# ---------------------------------------------------------------------- ros-plant
def _cmd_ros_plant(args: argparse.Namespace, load: Callable, finish: Callable) -> int:
    code = _ros_missing()
    if code is not None:
        return code
    if args.isolate and not _in_isolation():
        return _reexec_isolated(args, ["ros-plant", *_passed_options(args), "--ros-args", *args.ros_args])
    sc = load(args)
    rclpy = _init_rclpy(args.ros_args)
    from mpc_tracking.ros.conversions import latency_stats
    from mpc_tracking.ros.plant_node import PlantNode

    node = None
    try:
        node = PlantNode(sc)
        while rclpy.ok():  # short waits, so that SIGINT / SIGTERM are handled at once
            rclpy.spin_once(node, timeout_sec=0.1)
    except (KeyboardInterrupt, Terminated):  # the way to stop it
        pass
    finally:
        if node is not None and args.stats:
            with open(args.stats, "w", encoding="utf-8") as f:
                json.dump({"round_trip": latency_stats(node.round_trips), "steps": node.steps}, f)
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


def _in_isolation() -> bool:
    from mpc_tracking.ros.isolation import in_isolation

    return in_isolation()


# ---------------------------------------------------------------------- ros-node
def _cmd_ros_node(args: argparse.Namespace, load: Callable, finish: Callable) -> int:
    code = _ros_missing()
    if code is not None:
        return code
    if args.isolate and not _in_isolation():
        words = ["ros-node", *_passed_options(args)] + (["--duration", str(args.duration)] if args.duration else [])
        return _reexec_isolated(args, [*words, "--ros-args", *args.ros_args])
    sc = load(args)
    rclpy = _init_rclpy(args.ros_args)
    from mpc_tracking.ros.controller_node import ControllerNode

    node = None
    t_end = time.monotonic() + args.duration if args.duration else float("inf")
    try:
        node = ControllerNode(sc)
        while rclpy.ok() and time.monotonic() < t_end:
            rclpy.spin_once(node, timeout_sec=0.05)
    except (KeyboardInterrupt, Terminated):  # the way to stop it
        pass
    finally:
        if node is not None:
            result = node.result()
            lat = result.info["ros"]["latency"]
            print(f"mpc-tracking ros-node: {len(result)} steps, outcome so far {result.reason}; odometry->command "
                  f"latency median / p99 [ms] {lat['median_ms']:.2f} / {lat['p99_ms']:.2f}; held ticks "
                  f"{node.held_ticks}, stops {node.stops}, odometry rejected {node.gate.rejected}")
            node.close()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


# ---------------------------------------------------------------------- parser
def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", metavar="SCENARIO.yaml", help="scenario file (as for run)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override a scenario value, e.g. --set controller.horizon=50 (repeatable)")
    p.add_argument("--plant", metavar="NAME", help="plant (replaces plant.name, clears plant.params)")
    p.add_argument("--ros-args", nargs=argparse.REMAINDER, default=[], dest="ros_args",
                   help="ROS arguments (last): -p KEY:=VALUE sets node parameters and scenario keys")


def add_ros_commands(sub: Any, load: Callable, finish: Callable) -> None:
    """Register ``ros-node``, ``ros-sim`` and ``ros-plant``; ``load(args)`` gives the scenario with
    the overrides, ``finish(args, result, staging, scenario)`` prints and writes a run as ``run`` does."""
    def bind(cmd: Callable) -> Callable[[argparse.Namespace], int]:
        return lambda a: cmd(a, load, finish)

    n = sub.add_parser("ros-node", help="the controller as a ROS 2 node (odometry in, cmd_vel out)",
                       description="Run the MPC of a scenario as a ROS 2 node until Ctrl-C (docs: ROS 2 page).")
    _common(n)
    n.add_argument("--duration", type=float, default=None, help="stop after this many seconds of wall time")
    n.add_argument("--isolate", action="store_true", help="run in a private network namespace (only loopback)")
    n.set_defaults(func=bind(_cmd_ros_node))
    s = sub.add_parser("ros-sim", help="controller + plant over ROS 2 (lock-step, faster than real time)",
                       description="Run a scenario with the controller and plant as ROS 2 nodes; prints and "
                                   "writes what run does, plus latency, real-time factor and CPU per node.")
    _common(s)
    s.add_argument("--out", metavar="DIR", help="output folder (default: outputs.folder of the scenario)")
    s.add_argument("--no-plots", action="store_true", help="write data files only")
    s.add_argument("-q", "--quiet", action="store_true", help="no summary")
    s.add_argument("--strict", action="store_true", help="as for run")
    s.add_argument("--no-isolate", action="store_true",
                   help="run in this network namespace (default: a private one with only loopback)")
    s.set_defaults(func=bind(_cmd_ros_sim))
    pl = sub.add_parser("ros-plant", help="a plant as a simulated ROS 2 robot (Odometry and /clock out)",
                        description="Run the plant of a scenario as a ROS 2 node until Ctrl-C.")
    _common(pl)
    pl.add_argument("--stats", metavar="FILE.json", help=argparse.SUPPRESS)
    pl.add_argument("--isolate", action="store_true", help="run in a private network namespace (only loopback)")
    pl.set_defaults(func=bind(_cmd_ros_plant))
