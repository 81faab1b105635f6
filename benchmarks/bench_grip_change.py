"""Grip that changes: the 3D sedan on a road whose friction is not the one its vehicle file was identified on.

Two vehicle files come from :func:`mpc_tracking.identify`: the sedan on a dry road (mu 0.9) and on a wet one
(mu 0.6). Each lap is one closed-loop run of the dynamic MPC with **default settings** resolved as a scenario
resolves them (:func:`mpc_tracking.scenario.defaults.grip_defaults`: limits ``grip_fraction`` x the vehicle
file's), on these roads (``plant.params``):

``dry``     mu 0.9 everywhere (the estimator's cost: lap time and limits vs the estimator off);
``wet``     mu 0.6 everywhere;
``wet_fast`` mu 0.6 everywhere, each controller starting at its own speed reference: the dry file at the dry pace,
            the failure of the real tracks (their first fast corner comes at the dry pace, before anything was
            read) on generated circuits;
``rain``    mu 0.9, then 0.6 from t = 30 s (``mu_schedule: [[30, 0.6]]``);
``patch``   mu 0.9 with a wet patch (mu 0.5, radius 30 m) at the end of the hardest braking zone
            (``mu_patches``: the point of the lap where the dry plan brakes hardest, 30 m before the corner).

Each scenario runs with the dry file and with the wet file, with the grip estimation on and off. A lap starts at
the controller's own speed reference, except on the wet road (``wet``): there both files start at the lower of
their two references (a speed the wet car can hold at the start; :func:`start_speed`).
A lap that would be the same run as one before it on the same path (the same file, road, estimation and start speed:
``wet`` and ``wet_fast`` on the shared tracks) is not run again: its row repeats the first one's figures with
``same_run_as`` naming that scenario.
Columns: completed, the largest distance a body corner left the track, RMS e_y, lap time, the estimate's error
over time (median and last, and 2 s after the first cornering after a change), how long after that cornering the
estimate first came within 10 % of the road (0: before it), the reaction time (from a change of the road to the
first step the estimate is lowered), the lowest share of the limits in use.
The figure of the estimate against the truth is saved with ``--save`` (benchmarks/results/grip_change.png;
``--out NAME`` for another stem).

Prints JSON with a ``provenance`` block; ``--save`` writes benchmarks/results/grip_change.json.

    python benchmarks/bench_grip_change.py [--circuits 2] [--seed 0] [--shared Monza] [--scenarios dry,rain]
                                           [--files dry,wet] [--save]

``--oracle`` replaces the estimate by the road under the car: every step the limits are the share the plan
would use on that road known exactly (:meth:`GripEstimator.plan_share
<mpc_tracking.mpc.grip.GripEstimator.plan_share>`), from the moment it changes. For rain it bounds what any
estimate can do: a lap the oracle does not keep on the track (rain starting at the limit mid-corner) fails on
physics, not on the estimate. On a patch it is no bound: the known friction scales the braking limit too, where
the estimator keeps braking at the road's peak after a braking reading (``decel_held``), and the oracle leaves
tracks the estimator completes. Its rows carry ``oracle: true`` and no estimate figures.

``--validate`` runs, per circuit, the seven laps the issue's targets need -- dry (dry file, estimation on and
off), wet (dry file on; the wet-identified controller), wet_fast, rain and patch (dry file on) -- and adds a
``distributions`` block (median and worst over the circuits): completed, body overshoot, lap time vs the
estimation off (dry) and vs the wet-identified controller (wet), the estimate's error 2 s into the first
cornering after the change (rain, patch) and the lowest share of the limits used on the dry road.

    python benchmarks/bench_grip_change.py --validate --circuits 10 --seed 2 --save --out grip_change_validation

``--start straight`` starts each generated lap 5 m into the circuit's longest straight (``circuits.
start_on_longest_straight``), as the real tracks start on their main straight; ``--probe off`` runs without the
brake test (``grip_probe``).
"""
from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json
from _shared import shared_dir
from bench_identify import OVERSTEER

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction

#: the shared tracks ($MPC_TRACKING_SHARED, ../shared or ../../shared: benchmarks/_shared.py)
TRACKS = shared_dir("tracks")
SEDAN_BODY = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)
MU_DRY, MU_WET, MU_PATCH = 0.9, 0.6, 0.5
RAIN_AT = 30.0  # [s]
PATCH_RADIUS = 30.0  # [m]
#: the cars of ``--car`` (``ackermann3d`` parameters; the road's friction is added per lap): the sedan, its
#: front- and all-wheel-drive versions, the rear-drive oversteering sedan of ``bench_identify.py`` (CG 0.5 m
#: further back, the roll stiffness on the rear axle) and a heavy, tall SUV-like front-wheel-drive car (mass and
#: inertias x1.4, CG 0.75 m high, CG forward, a stiffer front anti-roll bar: more understeer and load transfer)
CARS: dict[str, dict[str, Any]] = {
    "sedan": {"preset": "sedan"},
    "sedan_fwd": {"preset": "sedan", "drive": "fwd"},
    "sedan_awd": {"preset": "sedan", "drive": "awd"},
    "sedan_rwd_oversteer": OVERSTEER,
    "suv_fwd": {"preset": "sedan", "drive": "fwd", "mass": 1.4 * 1573.0, "inertia": (770.0, 4060.0, 4022.0),
                "cg_height": 0.75, "cg_to_front": 1.0, "arb_front": 2.0e4},
}
#: the car of every lap (``--car``)
CAR = "sedan"


def car_params(**friction: Any) -> dict[str, Any]:
    """The ``ackermann3d`` parameters of :data:`CAR` on the road ``friction`` (``mu``, ``mu_schedule``, ...)."""
    return {**CARS[CAR], **friction}


def _cache() -> Path:
    """The vehicle files' cache of :data:`CAR` (the sedan's keeps its old name)."""
    return Path("/tmp") / ("mpc_tracking_bench_grip_change_ident" + ("" if CAR == "sedan" else f"_{CAR}") + ".pkl")


def identified(cache: bool) -> dict[str, Any]:
    """The dry and the wet vehicle file of :data:`CAR` (identified once; ``cache``: kept in /tmp between runs)."""
    path = _cache()
    if cache and path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)
    out = {name: mt.identify(mt.create_model("ackermann3d", car_params(mu=mu)))
           for name, mu in (("dry", MU_DRY), ("wet", MU_WET))}
    if cache:
        with path.open("wb") as fh:
            pickle.dump(out, fh)
    return out


#: the road friction each vehicle file was identified on (the estimate's units)
ROAD_OF_FILE: dict[str, float] = {"dry": MU_DRY, "wet": MU_WET}


def ident_name(ident: Any) -> str:
    """"dry" or "wet": which road the vehicle file ``ident`` was identified on (by its friction)."""
    return "dry" if ident.params.mu > 0.5 * (MU_DRY + MU_WET) * 1.1 else "wet"


#: the brake test (``grip_probe``) in every lap (``--probe off``: none)
GRIP_PROBE = True
#: the limits follow the road under the car instead of the estimate (``--oracle``)
ORACLE = False


def follow_the_road(mpc: Any, car: Any) -> None:
    """Replace ``mpc``'s grip estimate by the road under ``car``: every step the limits are the share the plan
    would use on that road known exactly (``--oracle``)."""
    limits = mpc.grip
    share_of = limits.estimator.plan_share

    def step(t: float, measured: Any, delta: Any, a_x_cmd: Any = None) -> Any:
        share = share_of(car.road_friction())
        if share != limits.ratio:
            limits._apply(share)
        return limits.last

    limits.step = step


def settings_for(ident: Any, car: Any, path: mt.ReferencePath, grip: bool) -> mt.MPCSettings:
    """Default settings with the vehicle file (as a scenario resolves them), grip estimation on or off (and the
    brake test as :data:`GRIP_PROBE`)."""
    from mpc_tracking.scenario.defaults import grip_defaults

    act = mt.actuation.default_actuator(car)
    st = mt.MPCSettings(v_max=40.0, grip_estimation=grip, grip_mu=ROAD_OF_FILE[ident_name(ident)],
                        grip_probe=GRIP_PROBE)
    return grip_defaults(st, car, act, ident, path.ds, "bench")


def hardest_braking_point(path: mt.ReferencePath, st: mt.MPCSettings) -> np.ndarray:
    """World point 30 m before the corner at the end of the lap's largest speed drop of the dry plan."""
    from mpc_tracking.mpc.reference import path_speed_ceilings

    v_ref, _ = path_speed_ceilings(path, st)
    v = v_ref if v_ref is not None else np.full(path.n, st.v_max)
    drop = v - np.roll(v, -1)  # deceleration per waypoint (closed loop)
    window = max(int(80.0 / path.ds), 1)
    score = np.convolve(np.concatenate([drop, drop[:window]]), np.ones(window), "valid")[: path.n]
    i_start = int(np.argmax(score))
    i_corner = (i_start + window) % path.n
    i = (i_corner - int(30.0 / path.ds)) % path.n
    return np.array([path.x[i], path.y[i]])


def road(scenario: str, patch_xy: np.ndarray) -> dict[str, Any]:
    """The plant's friction parameters of a scenario."""
    if scenario == "dry":
        return {"mu": MU_DRY}
    if scenario in ("wet", "wet_fast"):
        return {"mu": MU_WET}
    if scenario == "rain":
        return {"mu": MU_DRY, "mu_schedule": [[RAIN_AT, MU_WET]]}
    return {"mu": MU_DRY, "mu_patches": [[float(patch_xy[0]), float(patch_xy[1]), PATCH_RADIUS, MU_PATCH]]}


def _controller(path: mt.ReferencePath, ident: Any, friction: dict[str, Any], grip: bool) -> tuple[Any, ...]:
    """The 3D car (:data:`CAR`) on the road ``friction``, its actuator, the settings and the dynamic MPC with
    ``ident``."""
    car = mt.create_model("ackermann3d", car_params(**friction))
    act = mt.actuation.default_actuator(car)
    st = settings_for(ident, car, path, grip)
    mpc = mt.SpatialMPC(path, SEDAN_BODY, st, prediction=DynamicPrediction(ident.params, speed_lag=act.speed_lag))
    return car, act, st, mpc


def start_speed(path: mt.ReferencePath, idents: dict[str, Any], scenario: str) -> float | None:
    """The speed [m/s] the laps of ``scenario`` start at: on the wet road the lower of the two vehicle files'
    speed references at the start (a speed the wet car can hold there, the same for both files); elsewhere None
    (each controller's own reference: the road is dry at the start).

    Started at the dry file's reference, the wet car can be past saving before the controller has learnt anything:
    on generated circuit gen4_2 (seed 4) the lap began at 36.6 m/s in a 212 m curve (6.3 m/s^2 of the wet car's
    ~5.7) 120 m before a hairpin that a wet car takes at ~11 m/s -- ~100 m of full braking, with the curve's
    grip spent on cornering. That measures the start, not the controller."""
    if scenario != "wet":
        return None
    return min(float(_controller(path, ident, road("wet", np.zeros(2)), True)[3].reference_input(0.0)[0])
               for ident in idents.values())


def same_run_key(path: mt.ReferencePath, ident: Any, friction: dict[str, Any], grip: bool,
                 v0: float | None) -> tuple[Any, ...]:
    """What decides a lap of :func:`run`: the vehicle file, the road, the estimation and the start speed [m/s]
    (``v0``, else the controller's own reference at the start). Two laps with equal keys are the same run: on the
    shared tracks ``wet`` and ``wet_fast`` start on a straight where both files' references are at ``v_max``."""
    if v0 is None:
        v0 = float(_controller(path, ident, friction, grip)[3].reference_input(0.0)[0])
    return (id(ident), repr(sorted(friction.items())), grip, v0)


def run(path: mt.ReferencePath, ident: Any, friction: dict[str, Any], grip: bool,
        v0: float | None = None) -> tuple[dict[str, Any], Any]:
    """One lap (from the speed ``v0`` [m/s], default the controller's reference); the row of figures and the
    result."""
    car, act, st, mpc = _controller(path, ident, friction, grip)
    ratios = [1.0]
    if mpc.grip is not None:  # the shares of the limits the plan used (the lowest is reported)
        apply = mpc.grip._apply

        def recording(ratio: float, *held: Any) -> None:
            ratios.append(ratio)
            apply(ratio, *held)

        mpc.grip._apply = recording  # type: ignore[method-assign]
        if ORACLE:
            follow_the_road(mpc, car)
    t0 = time.perf_counter()
    res = mt.simulate(path, mpc, car, act, v0=v0)
    m = res.metrics
    row: dict[str, Any] = {
        "completed": bool(res.success), "reason": str(res.reason),
        "lap_time_s": round(m["lap_time"], 3) if res.lap_times else None,
        "max_body_overshoot_m": round(m["max_body_overshoot"], 3),
        "rms_e_y_cm": round(100 * m["rms_e_y"], 2), "max_e_y_cm": round(100 * m["max_abs_e_y"], 2),
        "solver_failures": m["infeasible_steps"], "a_y_max": round(st.a_y_max, 3),
        "wall_s": round(time.perf_counter() - t0, 1), "limit_share_min": round(min(ratios), 4),
        "start_speed_mps": round(float(res.series["v"][0]), 2),
    }
    if ORACLE:
        row["oracle"] = True
    else:
        row.update(_estimate_figures(res, path))
    return row, res


#: a corner that asks for at least this share of the road's friction tests the grip (the sedan holds 0.93-0.96
#: of mu 0.6 at its wet limit: below 0.9 of mu its tyres need not pass their peak, and in the linear range of the
#: tyres the force does not depend on mu -- nothing can be read there)
LIMIT_DEMAND = 0.9


def _estimate_figures(res: Any, path: mt.ReferencePath) -> dict[str, Any]:
    """Estimate error over time, after the first cornering following each change, reaction time.

    Two windows of 2 s after the change of the road: from the first *turn* (``|a_y| = v r`` above 30 % of the
    changed road's ``mu g``: ``mu_err_2s_after_cornering_pct``, the figure reported since issue 21 landed) and
    from the first corner that *tests the grip* -- the path asks for at least :data:`LIMIT_DEMAND` of the road's
    friction at the car, ``v^2 |kappa| >= LIMIT_DEMAND mu_true g`` (``mu_err_2s_after_limit_cornering_pct``;
    None when the lap has no such corner after the change: no information). A lap that turns below the new
    road's limit within those 2 s gives no reading (the tyres stay in their linear range, where the force does
    not depend on mu), and the first window then counts the held estimate's whole error (50 % on mu 0.9 -> 0.6).
    """
    s = res.series
    if "mu_est" not in s or not len(res):
        return {}
    t, est, true = s["t"], s["mu_est"], s["mu_true"]
    err = np.abs(est - true) / true
    out: dict[str, Any] = {"mu_err_median_pct": round(100 * float(np.median(err)), 2),
                           "mu_err_last_pct": round(100 * float(err[-1]), 2),
                           "mu_est_min": round(float(np.min(est)), 3)}
    changes = np.flatnonzero(np.abs(np.diff(true)) > 1e-9) + 1
    if changes.size:
        k = int(changes[0])
        # cornering: |a_y| = v r above 30 % of the changed road's mu g (from the logged yaw and speed)
        yaw_rate = np.gradient(np.unwrap(s["yaw"]), t)
        a_y = np.abs(s["v"] * yaw_rate)
        corner = np.flatnonzero((np.arange(len(t)) >= k) & (a_y > 0.3 * 9.81 * true[k]))
        if corner.size:
            c = int(corner[0])
            within = (t >= t[c]) & (t <= t[c] + 2.0)
            out["t_change_s"] = round(float(t[k]), 2)
            out["t_cornering_s"] = round(float(t[c]), 2)
            out["mu_err_2s_after_cornering_pct"] = round(100 * float(err[within][-1]), 2)
            # how long after the first cornering the estimate first came within 10 % of the road (0: before it
            # -- a braking reading on the straight; the window above also counts a road that changed again in it,
            # a patch the car leaves, where the estimate holds until the car shows more grip)
            near = np.flatnonzero((np.arange(len(t)) >= k) & (err <= 0.10))
            out["mu_within_10pct_after_cornering_s"] = (round(max(0.0, float(t[near[0]] - t[c])), 2)
                                                        if near.size else None)
        kappa = np.interp(np.mod(s["s"], path.length), path.s, np.abs(path.kappa))
        demand = s["v"] ** 2 * kappa >= LIMIT_DEMAND * 9.81 * true
        limit = np.flatnonzero((np.arange(len(t)) >= k) & demand)
        out["t_limit_cornering_s"] = round(float(t[limit[0]]), 2) if limit.size else None
        if limit.size:
            within = (t >= t[limit[0]]) & (t <= t[limit[0]] + 2.0)
            out["mu_err_2s_after_limit_cornering_pct"] = round(100 * float(err[within][-1]), 2)
        else:
            out["mu_err_2s_after_limit_cornering_pct"] = None
        lowered = np.flatnonzero((np.arange(len(t)) >= k) & (est < est[k - 1] - 0.02))
        out["reaction_s"] = round(float(t[int(lowered[0])] - t[k]), 2) if lowered.size else None
    return out


#: the laps of ``--validate``: (scenario, vehicle file, estimation on)
VALIDATION_RUNS = (("dry", "dry", True), ("dry", "dry", False), ("wet", "dry", True), ("wet", "wet", True),
                   ("wet_fast", "dry", True), ("rain", "dry", True), ("patch", "dry", True))


def _lap(rows: list[dict[str, Any]], track: str, scenario: str, file: str, grip: bool) -> dict[str, Any] | None:
    for r in rows:
        if (r["track"], r["scenario"], r["vehicle_file"], r["grip_estimation"]) == (track, scenario, file, grip):
            return r
    return None


def _stats(values: list[float], worst: str) -> dict[str, Any]:
    """Median and worst (``worst``: "max" or "min") of ``values``; None entries count as failures."""
    ok = [v for v in values if v is not None]
    if not ok:
        return {"n": len(values), "median": None, "worst": None}
    return {"n": len(values), "missing": len(values) - len(ok), "median": round(float(np.median(ok)), 3),
            "worst": round(float(max(ok) if worst == "max" else min(ok)), 3)}


def distributions(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and worst over the circuits of the figures the issue's targets name (rows of ``--validate``)."""
    tracks = sorted({r["track"] for r in rows})
    out: dict[str, Any] = {"circuits": len(tracks)}
    for scenario, file, grip in VALIDATION_RUNS:
        laps = [_lap(rows, t, scenario, file, grip) for t in tracks]
        laps_ok = [r for r in laps if r is not None]
        key = f"{scenario}_{file}_file_{'on' if grip else 'off'}"
        out[key] = {"completed": f"{sum(r['completed'] for r in laps_ok)}/{len(laps_ok)}",
                    "max_body_overshoot_m": _stats([r["max_body_overshoot_m"] for r in laps_ok], "max")}
    dry_cost, wet_gap, share = [], [], []
    for t in tracks:
        on, off = _lap(rows, t, "dry", "dry", True), _lap(rows, t, "dry", "dry", False)
        if on and off and on["lap_time_s"] and off["lap_time_s"]:
            dry_cost.append(100.0 * (on["lap_time_s"] / off["lap_time_s"] - 1.0))
        if on:
            share.append(on["limit_share_min"])
        dry_wet, wet_wet = _lap(rows, t, "wet", "dry", True), _lap(rows, t, "wet", "wet", True)
        if dry_wet and wet_wet and wet_wet["lap_time_s"]:
            gap = dry_wet["lap_time_s"]
            wet_gap.append(None if gap is None else 100.0 * (gap / wet_wet["lap_time_s"] - 1.0))
    out["dry_lap_time_vs_estimation_off_pct"] = _stats(dry_cost, "max")
    out["dry_lowest_limit_share"] = _stats(share, "min")
    out["wet_dry_file_lap_time_vs_wet_file_pct"] = _stats(wet_gap, "max")
    for scenario in ("rain", "patch"):
        laps = [_lap(rows, t, scenario, "dry", True) for t in tracks]
        out[f"{scenario}_mu_err_2s_after_cornering_pct"] = _stats(
            [r.get("mu_err_2s_after_cornering_pct") for r in laps if r], "max")
        limit = [r for r in laps if r and "mu_err_2s_after_limit_cornering_pct" in r]
        out[f"{scenario}_mu_err_2s_after_limit_cornering_pct"] = {
            **_stats([r["mu_err_2s_after_limit_cornering_pct"] for r in limit
                      if r["mu_err_2s_after_limit_cornering_pct"] is not None], "max"),
            "no_information": sum(r["mu_err_2s_after_limit_cornering_pct"] is None for r in limit)}
        out[f"{scenario}_reaction_s"] = _stats([r.get("reaction_s") for r in laps if r], "max")
        conv = [r.get("mu_within_10pct_after_cornering_s") for r in laps if r and "t_cornering_s" in r]
        out[f"{scenario}_mu_within_10pct_after_cornering_s"] = {
            **_stats(conv, "max"), "within_2s": f"{sum(c is not None and c <= 2.0 for c in conv)}/{len(conv)}"}
    return out


def _paths(args: Any) -> list[mt.ReferencePath]:
    from circuits import generate_circuits

    paths = generate_circuits(args.circuits, args.seed, ds=1.0) if args.circuits else []
    if args.start == "straight":
        from circuits import start_on_longest_straight

        paths = [start_on_longest_straight(p) for p in paths]
    if args.shared and TRACKS.is_dir():
        for name in args.shared.split(","):
            f = TRACKS / f"{name}.csv"
            if f.is_file():
                paths.append(mt.read_tum(f, ds=1.0, smoothing=0.25))
    return paths


def _figure(results: list[tuple[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(8, 2.2 * len(results)), squeeze=False)
    for ax, (label, res) in zip(axes[:, 0], results, strict=True):
        s = res.series
        ax.plot(s["t"], s["mu_true"], "k-", label="road")
        if "mu_est" in s:
            ax.plot(s["t"], s["mu_est"], "C1-", label="estimate")
        ax.set_ylabel("mu")
        ax.set_title(label, fontsize=9)
        ax.legend(loc="lower left", fontsize=8)
    axes[-1, 0].set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--circuits", type=int, default=1, help="generated circuits (benchmarks/circuits.py)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shared", default="", help="comma-separated shared track names (../shared/tracks)")
    ap.add_argument("--scenarios", default="dry,wet,wet_fast,rain,patch")
    ap.add_argument("--files", default="dry,wet", help="vehicle files: dry, wet")
    ap.add_argument("--grip", default="on,off", help="grip estimation on, off or both")
    ap.add_argument("--validate", action="store_true",
                    help="the six laps of the targets per circuit and their distributions (ignores --scenarios, "
                         "--files, --grip)")
    ap.add_argument("--start", choices=("lap", "straight"), default="lap",
                    help="where a generated circuit's lap starts: where it was drawn from (lap) or 5 m into its "
                         "longest straight, as real circuits start on their main straight (straight)")
    ap.add_argument("--probe", choices=("on", "off"), default="on", help="the brake test (grip_probe)")
    ap.add_argument("--oracle", action="store_true",
                    help="the limits follow the road under the car, known exactly (a bound on any estimate)")
    ap.add_argument("--car", choices=tuple(CARS), default="sedan",
                    help="the car (CARS: the sedan, other drives, an oversteering sedan, a heavy tall FWD car)")
    ap.add_argument("--no-cache", action="store_true", help="identify again (default: cached in /tmp)")
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--out", default="grip_change", help="file stem under benchmarks/results/ for --save")
    args = ap.parse_args()
    global GRIP_PROBE, ORACLE, CAR
    GRIP_PROBE = args.probe == "on"
    CAR = args.car
    ORACLE = args.oracle
    prov = provenance()
    idents = identified(not args.no_cache)
    rows: list[dict[str, Any]] = []
    figures: list[tuple[str, Any]] = []
    for path in _paths(args):
        st_dry = settings_for(idents["dry"], mt.create_model("ackermann3d", car_params()), path, False)
        patch_xy = hardest_braking_point(path, st_dry)
        plan = VALIDATION_RUNS if args.validate else [
            (scenario, file, grip == "on") for scenario in args.scenarios.split(",")
            for file in args.files.split(",") for grip in args.grip.split(",")]
        done: dict[tuple[Any, ...], tuple[str, dict[str, Any], Any]] = {}  # the runs of this path, by what they are
        for scenario, file, grip_on in plan:
            friction, v0 = road(scenario, patch_xy), start_speed(path, idents, scenario)
            key = same_run_key(path, idents[file], friction, grip_on, v0)
            if key in done:  # the same run (wet and wet_fast where both files start at the same speed)
                first, row, res = done[key]
                row = {**row, "same_run_as": first}
            else:
                row, res = run(path, idents[file], friction, grip_on, v0)
                done[key] = (scenario, row, res)
            row.update(track=path.name, length_m=round(path.length, 1), scenario=scenario,
                       vehicle_file=file, grip_estimation=grip_on)
            rows.append(row)
            if grip_on and scenario != "dry" and len(figures) < 8:
                figures.append((f"{path.name} {scenario}, {file} file", res))
            print({k: row.get(k) for k in ("track", "scenario", "vehicle_file", "grip_estimation",
                                           "reason", "lap_time_s", "max_body_overshoot_m", "rms_e_y_cm",
                                           "mu_err_median_pct", "mu_err_2s_after_cornering_pct",
                                           "mu_err_2s_after_limit_cornering_pct",
                                           "reaction_s", "mu_est_min", "limit_share_min", "wall_s", "same_run_as")
                   if k in row},
                  flush=True)
    out = {"provenance": finish(prov),
           "plant": f"ackermann3d {CAR} (wheel_torque_pi), dynamic MPC, default settings", "car": CARS[CAR],
           "identified": {k: {"mu": v.params.mu, "a_y_max": v.lateral_limit, "decel_max": v.decel_max}
                          for k, v in idents.items()},
           "rows": rows}
    if args.validate:
        out["distributions"] = distributions(rows)
    print(dumps(out))
    if args.save:
        save_json(RESULTS / f"{args.out}.json", out)
        if figures:
            _figure(figures, RESULTS / f"{args.out}.png")


if __name__ == "__main__":
    main()
