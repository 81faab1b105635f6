"""The controller over ROS 2 against the in-process loop, and what rate the node keeps.

Everything runs in a private network namespace with only loopback (the script re-executes itself
into one). Prints JSON with provenance; ``--save`` writes benchmarks/results/ros.json.

* ``demos``: each demo scenario through ``mpc-tracking ros-sim`` (controller and plant as two
  processes, lock-stepped on the plant's /clock) and through the in-process ``run``: lap time,
  RMS e_y, real-time factor (simulated / wall time) of both, the odometry-to-command latency
  (median / p99; N = 30 in these scenarios) and the CPU time of each node.
* ``rates``: the controller node on its timer (``trigger = timer``, on the plant's /clock) against a
  free-running plant node at real time, for control periods from 50 ms down: the fraction of ticks that got a
  fresh solve (the others found no newer odometry, or the solver busy: a held command), the held
  ticks, and the latency. The node keeps a rate when it ticks at >= 95 % of it and at most 5 % of
  its ticks find the solver busy.

    python benchmarks/bench_ros.py [--demos quickstart plant_unicycle] [--periods 0.05 0.02 0.01 0.005]
                                   [--seconds 4] [--save]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _provenance import RESULTS, dumps, finish, provenance, save_json

ROOT = Path(__file__).resolve().parents[1]
DEMOS = ROOT / "demos"


def _in_process(scenario: Path) -> dict[str, Any]:
    from mpc_tracking.scenario.core import load_scenario, run_scenario

    sc = load_scenario(scenario)
    t0 = time.perf_counter()
    res = run_scenario(sc)
    wall = time.perf_counter() - t0
    m = res.metrics
    return {"lap_time": m["lap_time"], "rms_e_y": m["rms_e_y"], "steps": m["steps"], "wall_time": wall,
            "real_time_factor": m["duration"] / wall, "reason": m["reason"]}


def _over_ros(scenario: Path) -> dict[str, Any]:
    from mpc_tracking.results import SimulationResult

    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run([sys.executable, "-m", "mpc_tracking", "ros-sim", str(scenario), "--out", out,
                               "--no-plots", "-q"], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return {"error": done.stderr.strip()[-500:]}
        res = SimulationResult.load(Path(out) / "result.npz")
    m, ros = res.metrics, res.info["ros"]
    return {"lap_time": m["lap_time"], "rms_e_y": m["rms_e_y"], "steps": m["steps"], "wall_time": ros["wall_time"],
            "real_time_factor": ros["real_time_factor"], "reason": m["reason"],
            "latency_ms": {k: ros["latency"][k] for k in ("median_ms", "p99_ms", "max_ms")},
            "plant_round_trip_ms": {k: ros["round_trip"].get(k) for k in ("median_ms", "p99_ms")},
            "cpu_s": {"controller": ros["cpu_controller"], "plant": ros["cpu_plant"]}}


def _rate(scenario: Path, period: float, seconds: float) -> dict[str, Any]:
    """The timer-driven node against a free-running plant at real time, for ``seconds`` of wall time."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from mpc_tracking.ros.controller_node import ControllerNode
    from mpc_tracking.scenario.core import load_scenario

    sets = ["--set", f"simulation.control_period={period}", "--set", "simulation.laps=20"]
    plant = subprocess.Popen([sys.executable, "-m", "mpc_tracking", "ros-plant", str(scenario), *sets,
                              "--ros-args", "--log-level", "warn", "-p", "lockstep:=false"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rclpy.init()
    sc = load_scenario(scenario).with_overrides({"simulation.control_period": period, "simulation.laps": 20})
    # the free-running plant's /clock runs at real time; the node's timer follows it (use_sim_time)
    node = ControllerNode(sc, parameter_overrides=[Parameter("use_sim_time", value=True)])
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        while node.latest is None:
            ex.spin_once(timeout_sec=0.05)
        n0, held0, ticks0, cpu0 = len(node.record.rows), node.held_ticks, node.ticks, time.process_time()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            ex.spin_once(timeout_sec=0.01)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        steps, held, ticks = len(node.record.rows) - n0, node.held_ticks - held0, node.ticks - ticks0
        lat = node.latency()
    finally:
        node.close()
        rclpy.shutdown()
        plant.terminate()
        plant.wait(timeout=10)
    return {"period_ms": period * 1e3, "rate_hz": 1.0 / period, "tick_rate_hz": ticks / wall,
            "fresh_solve_fraction": steps / max(ticks, 1),
            "held_ticks": held, "latency_ms": {k: lat[k] for k in ("median_ms", "p99_ms")},
            "controller_cpu_fraction": cpu / wall,
            "kept": bool(ticks >= 0.95 * wall / period and held <= 0.05 * ticks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demos", nargs="*", default=["quickstart", "plant_unicycle", "plant_simple_car"])
    ap.add_argument("--periods", nargs="*", type=float, default=[0.05, 0.02, 0.01, 0.005])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    from mpc_tracking.ros.isolation import in_isolation, isolated_command, isolated_env

    if not in_isolation():  # everything below starts ROS 2: only inside a loopback-only namespace
        env = isolated_env()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        sys.exit(subprocess.call(isolated_command([sys.executable, *sys.argv]), env=env))
    prov = provenance()
    demos = {}
    for name in args.demos:
        scenario = DEMOS / f"{name}.yaml"
        run, ros = _in_process(scenario), _over_ros(scenario)
        demos[name] = {"in_process": run, "ros_sim": ros,
                       "lap_time_diff_s": ros.get("lap_time", float("nan")) - run["lap_time"],
                       "rms_e_y_diff_m": ros.get("rms_e_y", float("nan")) - run["rms_e_y"]}
    rates = [_rate(DEMOS / "quickstart.yaml", T, args.seconds) for T in args.periods]
    kept = [r["rate_hz"] for r in rates if r["kept"]]
    out = {"provenance": finish(prov), "demos": demos, "rates": rates,
           "highest_rate_kept_hz": max(kept) if kept else None}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "ros.json", out)


if __name__ == "__main__":
    main()
