"""Fault injection: every QP solve fails from step k on, on each plant; how the safe stop brakes.

For each plant (the kinematic bicycle without and with a lagging speed, the unicycle, the simple
car, the 3D Ackermann car with its sedan preset) a closed loop on the bundled oval runs with a
:class:`~mpc_tracking.mpc.backends.FaultInjection` back end that fails every solve from call ``k``
on: ``max_fallback_steps`` steps reuse the last plan, then the safe stop brakes to a standstill.
Reported per plant, from the first safe-stop step to the end: the speed at the start [m/s], the
commanded speed's largest rise between two steps (0: monotone non-increasing), its deceleration,
the car's realized deceleration (mean over the stop: start speed / stop time; a line fit over its
second half; its peak step to step, and how long it takes to reach 90 % of ``brake_decel``: a
plant that lags its command needs about its time constant), the stopping distance [m] against ``v^2 / (2
brake_decel)`` and the largest lateral error during the stop. Prints JSON with provenance;
``--save`` writes benchmarks/results/safe_stop.json.

    python benchmarks/bench_safe_stop.py [--fail-from 100] [--brake-decel 3.0] [--save]
"""
from __future__ import annotations

import argparse

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking.mpc.backends import FaultInjection

PLANTS = {
    "kinematic_bicycle": ("kinematic_bicycle", {}),
    "kinematic_bicycle_lag_1s": ("kinematic_bicycle", {"speed_time_constant": 1.0}),
    "unicycle": ("unicycle", {}),
    "simple_car": ("simple_car", {}),
    "ackermann3d_sedan": ("ackermann3d", {"preset": "sedan"}),
}


def run(plant_name: str, fail_from: int, brake_decel: float, v_max: float = 12.0) -> dict:
    """One closed loop whose solves all fail from call ``fail_from`` on; the stop's figures."""
    model, params = PLANTS[plant_name]
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=30, v_max=v_max, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0,
                        brake_decel=brake_decel)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    mpc.backend = FaultInjection(mpc.backend, fail=lambda k: k >= fail_from)
    res = mt.simulate(path, mpc, mt.create_model(model, params), t_max=fail_from * st.control_period + 60.0)
    codes = np.asarray(res.series["status"])
    stop = np.flatnonzero(codes == mt.Status.SAFE_STOP.code)
    if stop.size == 0:
        return {"plant": plant_name, "reason": res.reason, "safe_stop_steps": 0}
    i0 = int(stop[0])
    t, v, v_cmd, s = (np.asarray(a)[i0:] for a in (res.t, res.v, res.v_cmd, res.s))
    dt_stop = float(t[-1] - t[0])
    half = t >= t[0] + 0.5 * dt_stop
    v_start = float(v[0])
    decel = -np.diff(v) / np.diff(t)  # the car's deceleration step by step [m/s^2]
    reach = decel >= 0.9 * brake_decel
    distance = float(s[-1] - s[0])
    return {
        "plant": plant_name,
        "reason": res.reason,
        "safe_stop_steps": int(stop.size),
        "speed_at_stop_start_mps": v_start,
        "command_at_stop_start_mps": float(v_cmd[0]),
        "command_largest_rise_mps": float(max(0.0, np.diff(v_cmd).max(initial=0.0))),
        "command_above_v_max": bool(v_cmd.max() > v_max + 1e-9),
        "command_decel_mps2": float((v_cmd[0] - v_cmd[-1]) / max(t[-1] - t[0], 1e-9)) if v_cmd[-1] > 0
        else float(np.median(-np.diff(v_cmd[v_cmd > 0]) / np.diff(t[v_cmd > 0]))) if (v_cmd > 0).sum() > 1
        else None,
        "realized_decel_mean_mps2": v_start / dt_stop if dt_stop > 0 else None,
        "realized_decel_second_half_mps2": float(-np.polyfit(t[half], v[half], 1)[0]) if half.sum() > 2 else None,
        "realized_decel_peak_mps2": float(decel.max(initial=0.0)),
        "time_to_90pct_brake_decel_s": float(t[1:][reach][0] - t[0]) if reach.any() else None,
        "stop_time_s": dt_stop,
        "stopping_distance_m": distance,
        "ideal_stopping_distance_m": v_start**2 / (2.0 * brake_decel),
        "distance_ratio": distance / (v_start**2 / (2.0 * brake_decel)) if v_start > 0 else None,
        "max_abs_e_y_during_stop_m": float(np.abs(np.asarray(res.e_y)[i0:]).max()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fail-from", type=int, default=100, help="first failing solve call (0.05 s each)")
    ap.add_argument("--brake-decel", type=float, default=3.0, help="MPCSettings.brake_decel [m/s^2]")
    ap.add_argument("--plants", nargs="+", default=list(PLANTS), choices=list(PLANTS))
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/safe_stop.json")
    args = ap.parse_args()
    prov = provenance()
    rows = [run(p, args.fail_from, args.brake_decel) for p in args.plants]
    out = {"provenance": finish(prov), "benchmark": "safe_stop", "path": "oval", "fail_from_call": args.fail_from,
           "brake_decel_mps2": args.brake_decel, "max_fallback_steps": mt.MPCSettings().max_fallback_steps,
           "results": rows}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "safe_stop.json", out)


if __name__ == "__main__":
    main()
