"""Round trip of a simulated drive through a ROS 2 bag: path from the log vs the truth, identification vs the plant.

Two plants on the bundled oval (control and odometry at 50 Hz, GNSS 0.5 m per coordinate at 10 Hz, MCAP):
the kinematic bicycle with a 0.4 s speed lag, 0.1 s dead time and a 0.01 rad steering offset in the logged
command (known answers), and the 3D car (``ackermann3d`` sedan, ``wheel_torque_pi``: a PI speed loop and
tyres, so the first-order lag and the kinematic steering relation are effective values, not exact ones).
Prints JSON with provenance; ``--save`` writes benchmarks/results/logs_roundtrip.json.

Run: ``nice python benchmarks/bench_logs_roundtrip.py [--save] [--no-3d]`` (the 3D lap takes about a minute).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking.logs import path_from_log, write_run

ORIGIN = (48.137, 11.575)


def _truth(path, res) -> dict:
    e = np.asarray(path.project(res.series["x"], res.series["y"]).e_y)
    return {"rms_m": round(float(np.sqrt(np.mean(e ** 2))), 4), "max_m": round(float(np.max(np.abs(e))), 4)}


def case(name: str, plant, act, wheelbase: float, truth: dict, offset: float, folder: Path) -> dict:
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=20, v_max=10.0, control_period=0.02)
    t0 = time.perf_counter()
    res = mt.simulate(path, mt.SpatialMPC(path, mt.VehicleParams(), st), plant, act, laps=1)
    sim_s = time.perf_counter() - t0
    res.series["delta_cmd"] = res.series["delta_cmd"] - offset
    bag = write_run(res, folder / f"{name}.mcap", origin=ORIGIN, gnss_sigma=0.5, gnss_rate=10.0, seed=1)
    gnss = path_from_log(bag, "/gnss/fix", origin=ORIGIN)
    odom = path_from_log(bag, "/odom")
    ident = mt.identify_from_log(bag, wheelbase=wheelbase)
    found = {"speed_lag": ident.speed_lag, "speed_delay": ident.speed_delay, "accel_max": ident.accel_max,
             "decel_max": ident.decel_max, "steering_offset": ident.steering_offset,
             "steering_delay": ident.steering_delay}
    return {"outcome": str(res.reason), "sim_s": round(sim_s, 1), "steps": len(res),
            "gnss_path_vs_truth": _truth(gnss.path, res), "odom_path_vs_truth": _truth(odom.path, res),
            "gnss_fit_rms_m": round(gnss.rms_deviation, 3), "identified": found, "truth": truth,
            "not_excited": ident.not_excited, "holdout": ident.holdout}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--no-3d", action="store_true")
    args = ap.parse_args()
    prov = provenance()
    out = {}
    with tempfile.TemporaryDirectory() as d:
        kin = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7, "speed_time_constant": 0.4, "dead_time": 0.1})
        out["kinematic_bicycle"] = case("kinematic", kin, None, 2.7, {"speed_lag": 0.4, "speed_delay": 0.1,
                                        "steering_offset": 0.01, "steering_delay": 0.1}, 0.01, Path(d))
        if not args.no_3d:
            car = mt.create_model("ackermann3d", {"preset": "sedan"})
            act = mt.make_actuator("wheel_torque_pi")
            L = car.vehicle.cg_to_front + car.vehicle.cg_to_rear
            out["ackermann3d_sedan"] = case("car3d", car, act, L, {
                "speed_lag_nominal": act.speed_lag, "accel_limits_of_the_pi": list(act.accel_limits),
                "steering_offset": 0.01}, 0.01, Path(d))
    data = {"benchmark": "logs_roundtrip", "cases": out, "provenance": finish(prov)}
    print(dumps(data))
    if args.save:
        save_json(RESULTS / "logs_roundtrip.json", data)


if __name__ == "__main__":
    main()
