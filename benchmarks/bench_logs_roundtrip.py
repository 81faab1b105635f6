"""Round trip of a simulated drive through a ROS 2 bag: path from the log vs the truth, identification vs the plant.

Two plants on the bundled oval (control and odometry at 50 Hz, GNSS 0.5 m per coordinate at 10 Hz, MCAP):
the kinematic bicycle with a 0.4 s speed lag, 0.1 s dead time and a 0.01 rad steering offset in the logged
command (known answers), and the 3D car (``ackermann3d`` sedan, ``wheel_torque_pi``: a PI speed loop and
tyres, so the first-order lag and the kinematic steering relation are effective values, not exact ones).
A third case is the dynamic bicycle with Pacejka tyres on the figure eight (up to 12 m/s), identified with a
base whose tyres are wrong (B 8, mu 0.9): the axle stiffness against the truth. The 3D car's tyres are
compared with the a-priori values read off the plant (``dynamic_params_from_ackermann3d``).
Prints JSON with provenance; ``--save`` writes benchmarks/results/logs_roundtrip.json.

Run: ``nice python benchmarks/bench_logs_roundtrip.py [--save] [--no-3d]`` (the 3D lap takes about a minute).
"""
from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking.identification.synthetic import DynamicBicyclePlant
from mpc_tracking.logs import path_from_log, write_run
from mpc_tracking.models.prediction.apriori import dynamic_params_from_ackermann3d

ORIGIN = (48.137, 11.575)


def _truth(path, res) -> dict:
    e = np.asarray(path.project(res.series["x"], res.series["y"]).e_y)
    return {"rms_m": round(float(np.sqrt(np.mean(e ** 2))), 4), "max_m": round(float(np.max(np.abs(e))), 4)}


def case(name: str, plant, act, wheelbase: float, truth: dict, offset: float, folder: Path, base=None,
         track: str = "oval", v_max: float = 10.0) -> dict:
    path = mt.load_path(track, ds=0.5)
    st = mt.MPCSettings(horizon=20, v_max=v_max, control_period=0.02)
    t0 = time.perf_counter()
    res = mt.simulate(path, mt.SpatialMPC(path, mt.VehicleParams(), st), plant, act, laps=1)
    sim_s = time.perf_counter() - t0
    res.series["delta_cmd"] = res.series["delta_cmd"] - offset
    bag = write_run(res, folder / f"{name}.mcap", origin=ORIGIN, gnss_sigma=0.5, gnss_rate=10.0, seed=1)
    gnss = path_from_log(bag, "/gnss/fix", origin=ORIGIN)
    odom = path_from_log(bag, "/odom")
    ident = mt.identify_from_log(bag, wheelbase=wheelbase, base=base)
    found = {k: getattr(ident, k) for k in (
        "speed_lag", "speed_delay", "accel_max", "decel_max", "power_per_mass", "steering_offset", "steering_delay",
        "tyre_B_f", "tyre_B_r", "mu", "cornering_stiffness_f", "cornering_stiffness_r")}
    if base is not None:
        L = base.l_f + base.l_r
        truth = {**truth, "base_cornering_stiffness_f": base.tyre_B_f * base.tyre_C_f * base.mu * base.mass * base.g
                 * base.l_r / L, "base_cornering_stiffness_r": base.tyre_B_r * base.tyre_C_r * base.mu * base.mass
                 * base.g * base.l_f / L}
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
        dyn = DynamicBicyclePlant({"tau": 0.3})
        vp = dyn.vehicle_params
        L = vp.l_f + vp.l_r
        true_c = {"cornering_stiffness_f": vp.tyre_B_f * vp.tyre_C_f * vp.mu * vp.mass * vp.g * vp.l_r / L,
                  "cornering_stiffness_r": vp.tyre_B_r * vp.tyre_C_r * vp.mu * vp.mass * vp.g * vp.l_f / L}
        out["dynamic_bicycle_figure_eight"] = case(
            "dynamic", dyn, mt.make_actuator("direct"), L, {"speed_lag": 0.3, "accel_max": 4.0, "decel_max": 7.0,
                                                            "tyre_B_f": vp.tyre_B_f, "tyre_B_r": vp.tyre_B_r,
                                                            "mu": vp.mu, "steering_offset": 0.01, **true_c},
            0.01, Path(d), base=dataclasses.replace(vp, tyre_B_f=8.0, tyre_B_r=8.0, mu=0.9), track="figure_eight",
            v_max=12.0)
        if not args.no_3d:
            car = mt.create_model("ackermann3d", {"preset": "sedan"})
            act = mt.make_actuator("wheel_torque_pi")
            L = car.vehicle.cg_to_front + car.vehicle.cg_to_rear
            out["ackermann3d_sedan"] = case("car3d", car, act, L, {
                "speed_lag_nominal": act.speed_lag, "accel_limits_of_the_pi": list(act.accel_limits),
                "steering_offset": 0.01}, 0.01, Path(d), base=dynamic_params_from_ackermann3d(car.vehicle))
    data = {"benchmark": "logs_roundtrip", "cases": out, "provenance": finish(prov)}
    print(dumps(data))
    if args.save:
        save_json(RESULTS / "logs_roundtrip.json", data)


if __name__ == "__main__":
    main()
