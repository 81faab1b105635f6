"""MPC step time vs the bare OSQP floor of the very same QPs.

For each horizon N, a closed loop on the bundled default path times every ``SpatialMPC.solve()``
call (our step; ``loop_step`` is the loop's own ``step_time``, the whole loop step with the plant and
projection); the same deterministic run is repeated recording every step's QP (q, l, u, A data), and
that sequence is replayed on a fresh OSQP solver with identical settings, timing only
``update(q, l, u, Ax)`` + ``solve()`` (the floor). The same loop then runs with
``solver="daqp"`` (the condensed DAQP back end) and with the dynamic prediction model (OSQP, DAQP), each with
its step time and the ratio to the OSQP kinematic step of the same run; ``python`` is the same loop
with ``compiled="python"`` (numpy only, the step before the kernels). ``bare_osqp_native_update_solve``
replays the QPs on OSQP's extension object (no wrapper): the lowest floor. ``step_parts_us`` times
each part of one step alone (N = 10, 30, 50 of ``--horizons``): the profile split (``prepare`` and ``QP numbers``
are the general path's calls; the kinematic model's compiled step runs both as one call, timed as ``prepare + build
in one compiled call``; ``step_parts_us_python``: numpy only;
``step_parts_us_dynamic``: the dynamic model with rk4 and the friction ellipse, as the sedan runs it, and its
ratio to the kinematic step; its own step's parts too: the grip estimate, the three compiled calls of
``fused.build_dynamic`` each alone, the steady-cornering reference and the RK4 linearization inside
``dynamic_op_fill``, the solution). ``--parts-only`` times only these splits (no closed loops).
``--rounds R`` repeats the closed loop and its replay R times per horizon
(``rounds_summary``: medians, the ratio of each round and their median); ``--evict-mb M`` adds a native replay with
M MB streamed between solves (``bare_osqp_native_evicted``): the floor with cold data caches, as the closed loop's
plant and projection leave them. ``--no-variants``, ``--no-parts`` keep a run short.
Prints JSON with a ``provenance`` block; ``--save`` writes benchmarks/results/mpc_step.json (``--out FILE`` elsewhere).

The replay reaches into the controller (``mpc.solver``, ``mpc.P``, ``mpc.layout.A_matrix``): it
measures exactly what the controller hands to OSQP, so it follows the controller's internals.

    python benchmarks/bench_mpc_step.py [--horizons 10 30 50 100 200] [--warm-start solver] [--rounds 1]
        [--evict-mb 0] [--no-variants] [--no-parts | --parts-only] [--save | --out FILE]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import osqp
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking.mpc import kernels


def _stats(a: np.typing.ArrayLike) -> dict:
    """Median, p95 and p99 of times given in seconds, in ms."""
    a = np.asarray(a) * 1e3
    return {"median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95)),
            "p99_ms": float(np.percentile(a, 99))}


def _timed(mpc: mt.SpatialMPC) -> list[float]:
    """Wall times [s] of every ``mpc.solve()`` call from now on (the controller's step: the closed loop's own
    ``step_time`` series is the whole loop step since the step watchdog, plant and projection included)."""
    times: list[float] = []
    solve = mpc.solve

    def timed(*args, **kwargs):
        t = time.perf_counter()
        sol = solve(*args, **kwargs)
        times.append(time.perf_counter() - t)
        return sol

    mpc.solve = timed  # type: ignore[method-assign]
    return times


def run(N: int, warm_start: str = "solver", laps: int = 1, variants: bool = True, evict_mb: float = 0.0) -> dict:
    """Step times of the controller and of the bare OSQP replay for horizon ``N`` (``variants``: also the other
    back end, models and the numpy path)."""
    path = mt.load_path("oval", ds=0.5)
    vehicle = mt.VehicleParams()
    settings = mt.MPCSettings(horizon=N, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0,
                              warm_start=warm_start)
    # 1) timing run: the controller exactly as users run it
    mpc = mt.SpatialMPC(path, vehicle, settings)
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
    own = _timed(mpc)
    t0 = time.perf_counter()
    res = mt.simulate(path, mpc, plant, laps=laps, e_y0=1.0)
    wall = time.perf_counter() - t0
    steps = np.asarray(own)  # SpatialMPC.solve() calls
    loop_steps = np.asarray(res.step_time)  # the whole loop step (observe, control, plant)
    # 2) the same (deterministic) run again, recording every step's QP data
    mpc = mt.SpatialMPC(path, vehicle, settings)
    recorded = []
    orig = mpc.solver.update

    def recording_update(**kw):
        recorded.append({k: np.array(v, copy=True) for k, v in kw.items()})
        return orig(**kw)

    mpc.solver.update = recording_update
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
    mt.simulate(path, mpc, plant, laps=laps, e_y0=1.0)
    # replay on a fresh solver: the floor
    floor = osqp.OSQP()
    lay = mpc.layout
    P_osqp = getattr(mpc.backend, "P", mpc.P)  # the cost matrix OSQP was set up with (scaled variables)
    osqp_settings = mpc.backend.osqp_settings  # the back end's own (equilibration, termination checks, ...)
    floor.setup(P_osqp, recorded[0]["q"], lay.A_matrix(recorded[0]["Ax"]), recorded[0]["l"], recorded[0]["u"],
                **osqp_settings)
    bare = []
    for rec in recorded:
        t = time.perf_counter()
        floor.update(q=rec["q"], l=rec["l"], u=rec["u"], Ax=rec["Ax"])
        floor.solve(raise_error=False)
        bare.append(time.perf_counter() - t)
    # the same replay on OSQP's extension object (what the back end calls): the lowest floor
    native_floor = osqp.OSQP()
    native_floor.setup(P_osqp, recorded[0]["q"], lay.A_matrix(recorded[0]["Ax"]), recorded[0]["l"], recorded[0]["u"],
                       **osqp_settings)
    ext = native_floor._solver
    recs = [{k: np.ascontiguousarray(v, dtype=float) for k, v in rec.items()} for rec in recorded]
    bare_native = []
    for rec in recs:
        t = time.perf_counter()
        ext.update_data_vec(q=rec["q"], l=rec["l"], u=rec["u"])
        ext.update_data_mat(P_x=None, P_i=None, A_x=rec["Ax"], A_i=None)
        ext.solve()
        bare_native.append(time.perf_counter() - t)
    evicted = []
    if evict_mb > 0:  # the native replay again, a buffer streamed between solves as the closed loop's plant does
        native_cold = osqp.OSQP()
        native_cold.setup(P_osqp, recorded[0]["q"], lay.A_matrix(recorded[0]["Ax"]), recorded[0]["l"],
                          recorded[0]["u"], **osqp_settings)
        ext_cold = native_cold._solver
        junk = np.ones(int(evict_mb * 2**20) // 8)
        for rec in recs:
            junk.sum()
            t = time.perf_counter()
            ext_cold.update_data_vec(q=rec["q"], l=rec["l"], u=rec["u"])
            ext_cold.update_data_mat(P_x=None, P_i=None, A_x=rec["Ax"], A_i=None)
            ext_cold.solve()
            evicted.append(time.perf_counter() - t)
    ours = _stats(steps)
    fl = _stats(bare)
    fl_native = _stats(bare_native)
    out = {
        "N": N,
        "steps": int(steps.size),
        "our_step": ours,
        "bare_osqp_update_solve": fl,
        "ratio_median": ours["median_ms"] / fl["median_ms"],
        "bare_osqp_native_update_solve": fl_native,
        "ratio_median_vs_native": ours["median_ms"] / fl_native["median_ms"],
        "compiled": mpc.qp.kernels is not None,
        **({"bare_osqp_native_evicted": _stats(evicted), "evict_mb": evict_mb,
            "ratio_median_vs_native_evicted": ours["median_ms"] / _stats(evicted)["median_ms"]} if evicted else {}),
        # the split of our step: OSQP's own solve (its run time) and everything around it
        "solve_ms_median": 1e3 * float(np.median(res.series["solve_time"])),
        "around_solve_ms_median": 1e3 * float(np.median(steps - np.asarray(res.series["solve_time"]))),
        "iterations_median": float(np.median(res.series["iterations"])),
        "closed_loop_per_step_ms": 1e3 * wall / max(1, steps.size),
        "loop_step": _stats(loop_steps),
        "rms_e_y_m": res.metrics["rms_e_y"],
        "lap_completed": res.success,
        "infeasible_steps": res.metrics["infeasible_steps"],
    }
    if not variants:
        return out
    # 3) the same loop with the other QP solver and with the dynamic prediction model
    cases = {"python": {"compiled": "python"}, "daqp": {"solver": "daqp"},
                "dynamic_model": {"prediction_model": "dynamic"},
                "dynamic_model_python": {"prediction_model": "dynamic", "compiled": "python"},
                "dynamic_model_rk4_ellipse": {"prediction_model": "dynamic", "discretization": "rk4",
                                              "friction_ellipse": True},
                "dynamic_model_daqp": {"prediction_model": "dynamic", "solver": "daqp"}}
    for name, changes in cases.items():
        mpc = mt.SpatialMPC(path, vehicle, settings.replace(**changes))
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
        own = _timed(mpc)
        r = mt.simulate(path, mpc, plant, laps=laps, e_y0=1.0)
        st_ms = _stats(own)
        out[name] = {"step": st_ms, "solve_ms_median": 1e3 * float(np.median(r.series["solve_time"])),
                     "iterations_median": float(np.median(r.series["iterations"])),
                     "step_ratio_vs_osqp_kinematic": st_ms["median_ms"] / ours["median_ms"],
                     "rms_e_y_m": r.metrics["rms_e_y"], "lap_completed": r.success}
    return out


def parts(N: int, repeats: int = 2000, compiled: str = "auto", model: str = "kinematic") -> dict:
    """Median time [us] of each part of one controller step, each called alone on one mid-lap state
    (reaches into the controller's internals, as the replay above does); ``compiled`` as in MPCSettings,
    ``model`` the prediction model (the dynamic one with the sedan scenario's rk4 and friction ellipse)."""
    path = mt.load_path("oval", ds=0.5)
    extra = ({"prediction_model": "dynamic", "discretization": "rk4", "friction_ellipse": True}
             if model == "dynamic" else {})
    settings = mt.MPCSettings(horizon=N, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0,
                              compiled=compiled, **extra)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), settings)
    meas = {"speed": 8.0, "v_x": 8.0, "v_y": 0.05, "r": 0.2}
    mpc.solve((3.0, 0.5, 0.0), measured=meas)
    mpc.solve((3.3, 0.45, 0.0), measured=meas)
    state = (3.6, 0.4, 0.0)
    step = mpc._prepare(state, meas)
    q, s_grid = step.q, step.s_grid
    d, z = mpc.data, np.zeros(mpc.layout.n)
    calls = {
        "solve (whole step)": lambda: mpc.solve(state, measured=meas),
        "prepare": lambda: mpc._prepare(state, meas),
        "  path sample": lambda: mpc._sampler.sample(s_grid),
        "  reference operating point": lambda: mpc._reference_op(q),
        "  shifted operating point": lambda: mpc._shifted_op(mpc.safeguards.last_plan, s_grid),
        "QP numbers (build)": lambda: mpc.qp.build(step.x0, step.x_op, step.u_op, step.u_ref, q, s_grid, 0.0,
                                                   mpc._u_prev, step.x_ref),
        "  linearization": lambda: mpc.qp.linearize(step.x_op, step.u_op, q.kappa, s_grid),
        **({"prepare + build in one compiled call (the step's own path)": lambda: mpc._build_fused(state, meas)}
           if mpc._fused is not None else {}),
        "solution check": lambda: mpc.safeguards.check_solution(d, z),
        "back end solve (update + solve + status)": lambda: mpc.backend.solve(d, *mpc.qp.dynamics[:2]),
        "osqp update (refactorisation)": lambda: mpc.solver.update(q=d.q, l=d.l, u=d.u, Ax=d.A_data),
        "osqp solve (warm, same data)": lambda: mpc.solver.solve(raise_error=False),
    }
    if mpc._fused_dyn is not None:
        calls.update(_fused_dynamic_parts(mpc, state, meas))
    out = {}
    for name, fn in calls.items():
        fn()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        out[name] = round(1e6 * float(np.median(times)), 1)
    # what the controller adds around its back end (Python, kernels, checks): the step's own overhead
    out["outside the back end (whole step - back end solve)"] = round(
        out["solve (whole step)"] - out["back end solve (update + solve + status)"], 1)
    return out


def _fused_dynamic_parts(mpc: mt.SpatialMPC, state: tuple, meas: dict) -> dict:
    """The parts of the dynamic model's own step (:func:`mpc_tracking.mpc.fused.build_dynamic`: three compiled
    calls) for :func:`parts`: the grip estimate (no new sample, as in this benchmark's repeated state; and an update
    with a new sample each call, on a copy of the estimator: what a closed loop pays), the three kernels each called
    alone with the arguments of one step (captured), the two halves of ``dynamic_op_fill`` (the steady-cornering
    reference, the RK4 linearization), and the solution (``_solved``)."""
    import copy

    from mpc_tracking.mpc import _kernels_dynamic as kd
    from mpc_tracking.mpc import fused

    kern = mpc.qp.kernels
    names = ("dynamic_prepare", "dynamic_op_fill", "dynamic_rest")
    captured: dict = {}
    originals = {name: getattr(kern, name) for name in names}
    for name, fn in originals.items():  # one step with the kernels wrapped: their arguments, copied
        def keep(*a, _f=fn, _n=name):
            captured[_n] = [x.copy() if isinstance(x, np.ndarray) else x for x in a]
            return _f(*a)
        setattr(kern, name, keep)
    try:
        mpc.solve(state, measured=meas)
    finally:
        for name, fn in originals.items():
            setattr(kern, name, fn)
    calls: dict = {}
    grip = mpc.grip
    if grip is not None:
        est, clock = copy.deepcopy(grip.estimator), [0.0]

        def grip_update() -> None:
            clock[0] += 0.05
            est.update(clock[0], {"v_x": meas["v_x"], "v_y": meas["v_y"] + 1e-3 * (clock[0] % 1.0), "r": meas["r"]},
                       0.05)

        calls["grip estimate (GripLimits.step, no new sample)"] = lambda: grip.step(0.0, meas, 0.05)
        calls["grip estimate update, a new sample each call (GripEstimator.update)"] = grip_update
    calls["prepare + build in three compiled calls (the step's own path)"] = (
        lambda: fused.build_dynamic(mpc, state, meas))
    for name in names:
        calls[f"  _kernels.{name}" if name != "dynamic_op_fill" else "  _kernels_dynamic.dynamic_op_fill"] = (
            lambda f=originals[name], a=captured[name]: f(*a))
    (r, v, ds, p, slip, rk4, _use_prev, _x0, _v_min, z_op, x_ref, u_ref, scratch, out, _lim, s_grid,
     *_rest) = captured["dynamic_op_fill"]
    A, B, f = captured["dynamic_op_fill"][19:22]
    N = u_ref.shape[0]
    steps = np.maximum(np.diff(s_grid), 0.0)
    calls["    steady-cornering reference (dynamic_reference)"] = (
        lambda: kd.dynamic_reference(r[:, 0], v, ds, p, slip, x_ref, u_ref, scratch, out))
    calls["    linearization (dynamic_linearize)"] = (
        lambda: kd.dynamic_linearize(z_op[:, :6], z_op[:N, 6:], r[:, 0], steps, p, rk4, A, B, f))
    built = fused.build_dynamic(mpc, state, meas)
    res = mpc._backend_solve(mpc.data, None)
    if built is not None and res.z is not None:
        _code, _s0, _x, grid, rows = built
        calls["solution (SpatialMPC._solved)"] = (
            lambda: mpc._solved(res, grid, rows[:, 4], rows[:, 5], rows[:, 6], 0.0))
    return calls


def rounds_summary(rows: list[dict]) -> dict:
    """Per-horizon medians over the rounds of :func:`run` (``--rounds``): our step, the two floors, their ratios
    per round and the median of those ratios (a busy machine moves single runs by tens of percent)."""
    out: dict = {}
    for N in sorted({r["N"] for r in rows}):
        rr = [r for r in rows if r["N"] == N]
        ratios = [r["ratio_median"] for r in rr]
        ratios_native = [r["ratio_median_vs_native"] for r in rr]
        out[str(N)] = {
            "rounds": len(rr),
            "our_step_median_ms": float(np.median([r["our_step"]["median_ms"] for r in rr])),
            "bare_osqp_median_ms": float(np.median([r["bare_osqp_update_solve"]["median_ms"] for r in rr])),
            "bare_native_median_ms": float(np.median([r["bare_osqp_native_update_solve"]["median_ms"] for r in rr])),
            "around_solve_median_ms": float(np.median([r["around_solve_ms_median"] for r in rr])),
            "ratio_per_round": ratios, "ratio_median_of_rounds": float(np.median(ratios)),
            "ratio_vs_native_per_round": ratios_native,
            "ratio_vs_native_median_of_rounds": float(np.median(ratios_native)),
        }
        if "ratio_median_vs_native_evicted" in rr[0]:
            out[str(N)]["ratio_vs_native_evicted_median_of_rounds"] = float(
                np.median([r["ratio_median_vs_native_evicted"] for r in rr]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizons", type=int, nargs="+", default=[10, 30, 50, 100, 200])
    ap.add_argument("--warm-start", default="solver", choices=["solver", "shift", "none"])
    ap.add_argument("--repeats", type=int, default=2000, help="calls per part of step_parts_us")
    ap.add_argument("--rounds", type=int, default=1,
                    help="closed loop + replay per horizon this many times (rounds_summary: medians of the rounds)")
    ap.add_argument("--no-variants", action="store_true",
                    help="only the kinematic OSQP loop and its replay (no DAQP, dynamic model or numpy runs)")
    ap.add_argument("--evict-mb", type=float, default=0.0,
                    help="also replay natively with this many MB streamed between solves (cold caches, as in the loop)")
    ap.add_argument("--no-parts", action="store_true", help="skip step_parts_us")
    ap.add_argument("--parts-only", action="store_true", help="only step_parts_us* (no closed loops or replays)")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/mpc_step.json")
    ap.add_argument("--out", type=Path, help="write the JSON to this file instead")
    args = ap.parse_args()
    prov = provenance()
    if args.rounds < 1:
        ap.error(f"--rounds: expected an int >= 1, got {args.rounds}")
    rows = [] if args.parts_only else [run(N, args.warm_start, variants=not args.no_variants, evict_mb=args.evict_mb)
                                       for _ in range(args.rounds) for N in args.horizons]
    part_horizons = [] if args.no_parts else [N for N in args.horizons if N <= 50] or [10, 30, 50]
    split = {str(N): parts(N, args.repeats) for N in part_horizons}
    split_python = {str(N): parts(N, args.repeats, compiled="python") for N in part_horizons}
    split_dyn = {str(N): parts(N, args.repeats, model="dynamic") for N in part_horizons}
    split_dyn_python = {str(N): parts(N, args.repeats, compiled="python", model="dynamic") for N in part_horizons}
    ratio = {N: split_dyn[N]["solve (whole step)"] / split[N]["solve (whole step)"] for N in split}
    out = {"provenance": finish(prov), "benchmark": "mpc_step", "path": "oval", "warm_start": args.warm_start,
           "results": rows, "rounds_summary": rounds_summary(rows), "step_parts_us": split,
           "step_parts_us_python": split_python, "step_parts_us_dynamic": split_dyn,
           "step_parts_us_dynamic_python": split_dyn_python, "dynamic_vs_kinematic_step_parts_ratio": ratio,
           "kernels_load_s": kernels.compile_seconds()}
    print(dumps(out))
    if args.save or args.out:
        save_json(args.out or RESULTS / "mpc_step.json", out)


if __name__ == "__main__":
    main()
