"""Identification on plants that differ from the sedan: identified vs true, hold-out errors, success.

Plants (all from the command's defaults, nothing tuned per plant):

* ``sedan_dry`` / ``sedan_wet``: the 3D sedan at mu 0.9 / 0.6 (truth: the plant's mu; the a-priori
  model :func:`~mpc_tracking.models.prediction.dynamic_params_from_ackermann3d` for the tyres);
* ``sedan_rwd_oversteer``: the sedan with the CG moved back (a = 1.6 m) and the roll stiffness on the rear
  axle, rear drive: oversteers at the limit;
* ``rc_car``: the 1:10 RC car (its bearing drag holds it at 1.8 m/s, a third of the manoeuvre speed);
* ``synthetic``: the dynamic bicycle itself (every parameter known);
* ``synthetic_power_topspeed``: the same with P/m = 40 W/kg and a 15 m/s governor;
* ``commonroad_std``: CommonRoad's single-track drift model (steering-rate + acceleration inputs, Magic
  Formula tyres with peak p_dy1 = 1.0489, rear drive), the test plugin ``tests/identification/plants``.

Prints JSON with provenance; ``--save`` writes benchmarks/results/identify.json.
Run: ``nice python benchmarks/bench_identify.py [--only NAME ...] [--save]`` (about 5 minutes on one core).
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from typing import Any

from _provenance import REPO, RESULTS, dumps, finish, provenance, save_json

sys.path.insert(0, str(REPO))

import mpc_tracking as mt
from mpc_tracking.identification import DynamicBicyclePlant
from mpc_tracking.models.prediction import dynamic_params_from_ackermann3d

OVERSTEER = {"preset": "sedan", "cg_to_front": 1.6, "arb_front": 0.0, "arb_rear": 3.0e4}


def _plants() -> dict[str, tuple[Any, dict[str, Any], dict[str, float]]]:
    """name -> (plant, identify() options, truth)."""
    out: dict[str, tuple[Any, dict[str, Any], dict[str, float]]] = {}
    for name, params, mu in (("sedan_dry", {"preset": "sedan"}, 0.9),
                             ("sedan_wet", {"preset": "sedan", "mu": 0.6}, 0.6),
                             ("sedan_rwd_oversteer", OVERSTEER, 0.9), ("rc_car", {"preset": "rc_car"}, 0.9)):
        plant = mt.create_model("ackermann3d", params)
        prior = dynamic_params_from_ackermann3d(plant.vehicle)
        out[name] = (plant, {}, {"mu": mu, "C_alpha_f": prior.cornering_stiffness[0],
                                 "C_alpha_r": prior.cornering_stiffness[1]})
    for name, params in (("synthetic", {}), ("synthetic_power_topspeed", {"power_per_mass": 40.0, "speed_max": 15.0})):
        plant = DynamicBicyclePlant(params)
        vp = plant.vehicle_params
        truth = {"mu": vp.mu, "C_alpha_f": vp.cornering_stiffness[0], "C_alpha_r": vp.cornering_stiffness[1],
                 "speed_lag": plant.params["tau"], "accel_max": plant.params["accel_max"],
                 "decel_max": plant.params["decel_max"]}
        if params.get("power_per_mass"):
            truth["power_per_mass"] = params["power_per_mass"]
        out[name] = (plant, {"dt": 0.02}, truth)
    from tests.identification.plants import commonroad_std

    if commonroad_std.available():
        commonroad_std.register()
        from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

        bmw = DynamicParams.bmw_320i()  # CommonRoad's vehicle 2 with its tyre file (the a-priori model)
        out["commonroad_std"] = (mt.create_model("commonroad_std"), {},
                                 {"mu": bmw.mu, "C_alpha_f": bmw.cornering_stiffness[0],
                                  "C_alpha_r": bmw.cornering_stiffness[1]})
    return out


def _rel(a: float | None, b: float) -> float | None:
    return None if a is None or not math.isfinite(a) else a / b - 1.0


def measure(name: str, plant: Any, options: dict[str, Any], truth: dict[str, float]) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        res = mt.identify(plant, **options)
    except mt.MPCTrackingError as exc:
        return {"plant": name, "success": False, "error": str(exc), "seconds": time.perf_counter() - t0}
    p = res.params
    got = {"mu": p.mu, "C_alpha_f": p.cornering_stiffness[0], "C_alpha_r": p.cornering_stiffness[1],
           "speed_lag": res.speed_lag, "accel_max": res.accel_max, "decel_max": res.decel_max,
           "power_per_mass": res.power_per_mass}
    return {
        "plant": name, "success": True, "seconds": time.perf_counter() - t0,
        "identified": {**got, "D_f": p.tyre_D_f, "D_r": p.tyre_D_r, "a_y_max": res.a_y_max},
        "truth": truth, "relative_error": {k: _rel(got[k], v) for k, v in truth.items()},
        "mu_source": res.report["lateral"]["mu_source"], "ramp": res.report["ramp"],
        "axle_peaks": res.report["axle_peaks"], "assumptions": list(res.assumptions),
        "retried": {n: m["note"] for n, m in res.provenance["manoeuvres"].items() if "half amplitude" in m["note"]},
        "speed": res.provenance["options"]["speed"],
        "holdout_open_loop": {n: e["open_loop"] for n, e in res.report["holdout"].items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="plant names to run (default all)")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/identify.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    rows = [measure(n, *spec) for n, spec in _plants().items() if not args.only or n in args.only]
    out = {"provenance": finish(prov), "plants": rows,
           "summary": {r["plant"]: {"success": r["success"],
                                    "mu_error": (r.get("relative_error") or {}).get("mu")} for r in rows}}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "identify.json", out)


if __name__ == "__main__":
    main()
