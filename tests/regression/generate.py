"""Stored closed-loop regression: metrics of a few short, fixed runs, with tolerances from measured spread.

Run from the project root::

    python tests/regression/generate.py            # rewrites tests/regression/closed_loop.json

Cases (each a few seconds of simulated time; all on the bundled ``oval``):

* ``kinematic``     kinematic bicycle, tracking, starting 1 m off the line
* ``unicycle``      second-order unicycle with its ``unicycle_pi`` actuator
* ``simple_car``    simple car (saturated wheel angle, adaptive integration)
* ``obstacle``      kinematic bicycle passing a static circle on the centre line
* ``time_optimal``  kinematic bicycle in time-optimal mode

How the tolerances are derived
------------------------------
Every case is run once nominally and then under perturbations that must not matter for a correct
controller: OSQP tolerances ``eps_abs = eps_rel`` of 5e-6 and 2e-5 instead of 1e-5, a cold start
(``warm_start="none"``) instead of OSQP's own warm start, and the path resampled at ``ds = 0.4999``
instead of 0.5 (with the MPC's prediction step kept at 0.5 m): a change at the level of floating-point
and solver noise, which is what differs between machines and library builds. (A real resolution
change, ds = 0.49, moves e.g. the distance driven by 0.1-0.3 m: that is a different problem, not
run-to-run spread, and would make the tolerances too loose to catch anything. BLAS threads do not
matter: OSQP does not use BLAS and numpy's products here are tiny.) The spread of a metric is the largest
difference from the nominal value over these runs; its tolerance is ``5 x spread``, at least
``1e-6 (1 + |value|)`` for continuous metrics (a spread of 0 would otherwise demand bit-identical
floating point across machines). Counts (steps, infeasible steps, corridor-violation steps) get the
spread itself as tolerance (usually 0: exact). The nominal values and tolerances are stored in
``closed_loop.json`` beside this script with the measured spreads, and
``tests/test_regression.py`` re-runs only the nominal runs (a few seconds together).

Regenerate after an intended behaviour change and say in the commit why the numbers moved.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "closed_loop.json"

COUNTS = ("steps", "infeasible_steps", "corridor_violation_steps")
OBSTACLE = ((15.0, -20.0), 1.0)  # centre (x, y) [m] and radius [m] on the oval's bottom straight

CASES: dict[str, dict[str, Any]] = {
    "kinematic": {"plant": ("kinematic_bicycle", {"wheelbase": 2.7}), "actuator": None, "settings": {},
                  "sim": {"e_y0": 0.5, "t_max": 5.0}},
    "unicycle": {"plant": ("unicycle", {}), "actuator": ("unicycle_pi", {"wheelbase": 2.7}), "settings": {},
                 "sim": {"e_y0": 0.5, "t_max": 4.0, "sim_dt": 0.025}},
    "simple_car": {"plant": ("simple_car", {"wheelbase": 2.7}), "actuator": None, "settings": {},
                   "sim": {"e_y0": 0.5, "t_max": 4.0, "sim_dt": 0.025}},
    "obstacle": {"plant": ("kinematic_bicycle", {"wheelbase": 2.7}), "actuator": None,
                 "settings": {"horizon": 40, "corridor_margin": 0.2, "v_max": 10.0}, "obstacle": True,
                 "sim": {"s0": 20.0, "t_max": 5.0}},
    "time_optimal": {"plant": ("kinematic_bicycle", {"wheelbase": 2.7}), "actuator": None,
                     "settings": {"mode": "time_optimal", "Q": (0.05, 1.0, 0.0), "time_weight": 20.0, "v_max": 15.0},
                     "sim": {"s0": 30.0, "t_max": 5.0}},
}

BASE_SETTINGS = {"horizon": 30, "ds": 0.5, "v_max": 12.0, "a_y_max": 4.0, "delta_rate_max": 0.6,
                 "accel_max": 3.0, "decel_max": 5.0, "eps_abs": 1e-5, "eps_rel": 1e-5}

PERTURBATIONS: dict[str, dict[str, Any]] = {
    "eps_5e-6": {"settings": {"eps_abs": 5e-6, "eps_rel": 5e-6}},
    "eps_2e-5": {"settings": {"eps_abs": 2e-5, "eps_rel": 2e-5}},
    "cold_start": {"settings": {"warm_start": "none"}},
    "path_ds_0.4999": {"path_ds": 0.4999},
}


def run_case(name: str, perturbation: dict[str, Any] | None = None) -> dict[str, float]:
    """Run one case (optionally perturbed) and return its metrics."""
    import mpc_tracking as mt
    from mpc_tracking.environment.corridor import CircleObstacle, ObstacleCorridor

    case = CASES[name]
    pert = perturbation or {}
    path = mt.load_path("oval", ds=pert.get("path_ds", 0.5))
    veh = mt.VehicleParams()
    st = mt.MPCSettings(**{**BASE_SETTINGS, **case["settings"], **pert.get("settings", {})})
    corridor = None
    if case.get("obstacle"):
        corridor = ObstacleCorridor(path, [CircleObstacle(*OBSTACLE)])
    mpc = mt.SpatialMPC(path, veh, st, corridor=corridor)
    plant = mt.create_model(*case["plant"])
    act = mt.make_actuator(case["actuator"][0], **case["actuator"][1]) if case["actuator"] else None
    res = mt.simulate(path, mpc, plant, act, **case["sim"])
    s = res.series
    progress = np.unwrap(s["s"] * 2 * np.pi / path.length) * path.length / (2 * np.pi)
    out = {
        "steps": len(res),
        "infeasible_steps": int(np.sum(s["status"] >= 2)),
        "corridor_violation_steps": int(np.sum(np.nan_to_num(s["corridor_violation"]) > 1e-3)),
        "distance": float(progress[-1] - progress[0]),
        "rms_e_y": float(np.sqrt(np.mean(s["e_y"] ** 2))),
        "max_abs_e_y": float(np.max(np.abs(s["e_y"]))),
        "final_e_y": float(s["e_y"][-1]),
        "max_abs_e_psi": float(np.max(np.abs(s["e_psi"]))),
        "mean_v": float(np.mean(s["v"])),
        "final_v": float(s["v"][-1]),
        "max_abs_delta": float(np.max(np.abs(s["delta_cmd"]))),
        "rms_ddelta": float(np.sqrt(np.mean(np.diff(s["delta_cmd"]) ** 2))),
    }
    if case.get("obstacle"):
        (cx, cy), r = OBSTACLE
        out["min_center_distance"] = float(np.min(np.hypot(s["x"] - cx, s["y"] - cy)) - r)
    return out


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def generate() -> dict[str, Any]:
    data: dict[str, Any] = {"_about": {
        "script": "tests/regression/generate.py", "commit": _commit(),
        "perturbations": PERTURBATIONS, "rule": "tol = max(5 x spread, 1e-6 (1 + |value|)); counts: tol = spread",
    }}
    for name in CASES:
        nominal = run_case(name)
        spread = dict.fromkeys(nominal, 0.0)
        for pert in PERTURBATIONS.values():
            other = run_case(name, pert)
            for k in nominal:
                spread[k] = max(spread[k], abs(other[k] - nominal[k]))
        entry = {}
        for k, v in nominal.items():
            tol = spread[k] if k in COUNTS else max(5.0 * spread[k], 1e-6 * (1.0 + abs(v)))
            entry[k] = {"value": v, "tol": tol, "spread": spread[k]}
        data[name] = entry
        print(name, {k: f"{e['value']:.4g} +- {e['tol']:.2g}" for k, e in entry.items()}, file=sys.stderr)
    return data


if __name__ == "__main__":
    OUT.write_text(json.dumps(generate(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
