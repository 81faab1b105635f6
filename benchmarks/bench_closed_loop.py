"""Closed-loop cost per control step on the bundled full-size circuit: the MPC solve and everything around it.

The default scenario (``mt.default_scenario()``) on the bundled ``circuit`` with horizon N = 30 and a
50 ms control period, once with the kinematic bicycle plant and once with the 3D ``ackermann3d`` car
(``sedan`` preset, its ``wheel_torque_pi`` actuator, ``backend='auto'``: numba when installed). Per
plant: one short warm-up run (imports, the compiled kernels' cache), then ``--repeats`` timed runs of
``--t-max`` simulated seconds each. Per control step it reports

* ``total``: wall time per step, the mean (run wall time / steps) and the median of the per-step
  times (``on_step`` timestamps);
* ``mpc``: the controller's ``SpatialMPC.solve()`` call, timed around it (the logged
  ``result.step_time`` is the whole loop step, plant included), median and mean;
* ``outside``: total - mpc (mean, and the median of the per-step differences);
* ``real_time_factor``: control period / wall time per step (mean, and from the median).

Repeated runs give the median of each figure over the runs (the machine is shared). A separate,
instrumented run splits the time outside the MPC (wall - the ``solve()`` calls): the plant steps
(``plant.step``, all substeps), the actuator calls, the projection of the pose onto the path
(``path.project``), the logging of a row (the loop's ``_record``) and the rest (loop bookkeeping:
lap counter, corridor check, speed measurement, the wrappers' own cost, under a microsecond per call).
When the actuator offers the plant's compiled held-command steps (``Actuator.held_command_stepper``: the
kinematic bicycle behind the direct actuator, the 3D car behind ``wheel_torque_pi`` on the numba backend), the
split times that one call per control period (``plant_and_actuator_held``) instead of the plant and the
actuator apart; otherwise the wrappers step the plant one call at a time.
``--cprofile N`` also prints the N functions with the largest own time outside ``solve()``
(cProfile, a third run; its overhead inflates small functions).

Prints JSON with a ``provenance`` block; ``--save`` writes benchmarks/results/closed_loop.json.

    python benchmarks/bench_closed_loop.py [--plants kinematic sedan] [--t-max 120] [--repeats 3]
                                           [--cprofile 25] [--save]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import logging
import pstats
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking import simulation
from mpc_tracking.actuation import Actuator
from mpc_tracking.scenario.build import build

TRACK = "circuit"
HORIZON = 30
CONTROL_PERIOD = 0.05
#: scenario overrides per plant (the sedan's body as demos/plant_ackermann3d.yaml gives it)
PLANTS: dict[str, dict[str, Any]] = {
    "kinematic": {"plant.name": "kinematic_bicycle"},
    "sedan": {"plant.name": "ackermann3d", "plant.params": {"preset": "sedan"}, "vehicle.wheelbase": 2.68,
              "vehicle.length": 4.6, "vehicle.width": 1.8, "vehicle.rear_overhang": 0.95},
}


def scenario(plant: str, t_max: float) -> Any:
    """The default scenario on the full-size circuit, N = 30, 50 ms, with ``plant``, for ``t_max`` seconds."""
    return mt.default_scenario().with_overrides({
        "path.source": TRACK, "controller.horizon": HORIZON, "controller.control_period": CONTROL_PERIOD,
        "simulation.t_max": t_max, **PLANTS[plant]})


def timed_run(sc: Any) -> dict[str, Any]:
    """One closed loop, timed per control step with ``on_step`` timestamps."""
    path, mpc, plant, actuator, kw = build(sc)
    stamps: list[float] = []
    solve_times: list[float] = []
    clock = time.perf_counter
    solve = mpc.solve

    def timed_solve(*args: Any, **kwargs: Any) -> Any:
        t = clock()
        try:
            return solve(*args, **kwargs)
        finally:
            solve_times.append(clock() - t)

    mpc.solve = timed_solve
    t0 = clock()
    res = mt.simulate(path, mpc, plant, actuator, on_step=lambda k, t: stamps.append(clock()), **kw)
    wall = clock() - t0
    steps = len(stamps)
    per_step = np.diff(np.concatenate([[t0], stamps]))
    mpc_t = np.asarray(solve_times[:steps], dtype=float)
    period = res.info["control_period"]
    mean_total = wall / steps
    return {
        "outcome": str(res.reason), "steps": steps, "simulated_s": round(steps * period, 3), "wall_s": wall,
        "total_ms": {"mean": 1e3 * mean_total, "median": 1e3 * float(np.median(per_step))},
        "mpc_ms": {"mean": 1e3 * float(mpc_t.mean()), "median": 1e3 * float(np.median(mpc_t))},
        "outside_ms": {"mean": 1e3 * (mean_total - float(mpc_t.mean())),
                       "median": 1e3 * float(np.median(per_step - mpc_t))},
        "real_time_factor": {"mean": period / mean_total, "median": period / float(np.median(per_step))},
    }


def _median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over runs of every timing figure (counts from the first run)."""
    out = {k: runs[0][k] for k in ("outcome", "steps", "simulated_s")}
    out["wall_s"] = float(np.median([r["wall_s"] for r in runs]))
    for key in ("total_ms", "mpc_ms", "outside_ms", "real_time_factor"):
        out[key] = {stat: round(float(np.median([r[key][stat] for r in runs])), 4) for stat in ("mean", "median")}
    return out


class _Clock:
    """Accumulated wall time [s] and calls per part of the loop."""

    def __init__(self) -> None:
        self.time: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, fn: Callable[..., Any], part: str) -> Callable[..., Any]:
        self.time.setdefault(part, 0.0)
        self.calls.setdefault(part, 0)
        clock, times, calls = time.perf_counter, self.time, self.calls

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                times[part] += clock() - t
                calls[part] += 1
        return timed


class _TimedActuator(Actuator):
    """Times every call of the wrapped actuator (the loop calls actuators, so wrap the object)."""

    def __init__(self, inner: Actuator, clock: _Clock) -> None:
        self.inner = inner
        self.name = inner.name
        self._call = clock.wrap(inner.__call__, "actuator")

    @property
    def speed_lag(self) -> float:
        return self.inner.speed_lag

    @property
    def accel_limits(self) -> tuple[float, float]:
        return self.inner.accel_limits

    def reset(self, plant: Any) -> None:
        self.inner.reset(plant)

    def __call__(self, t: float, dt: float, v_cmd: float, delta_cmd: float, plant: Any) -> np.ndarray:
        return self._call(t, dt, v_cmd, delta_cmd, plant)


def split_run(sc: Any) -> dict[str, Any]:
    """Time per control step [us] of each part outside the MPC, from one instrumented run."""
    path, mpc, plant, actuator, kw = build(sc)
    clock = _Clock()
    mpc.solve = clock.wrap(mpc.solve, "mpc_solve")
    held = actuator.held_command_stepper(plant)
    if held is not None:  # a control period's plant steps in one call: time that call (wrapping step would end it)
        actuator.held_command_stepper = lambda plant: clock.wrap(held, "plant_and_actuator_held")  # type: ignore
    else:
        plant.step = clock.wrap(plant.step, "plant")
        actuator = _TimedActuator(actuator, clock)
    path.project = clock.wrap(path.project, "projection")
    record = simulation._Loop._record
    simulation._Loop._record = clock.wrap(record, "logging")  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        res = mt.simulate(path, mpc, plant, actuator, **kw)
        wall = time.perf_counter() - t0
    finally:
        simulation._Loop._record = record  # type: ignore[method-assign]
    steps = len(res.series["t"])
    mpc_call = clock.time["mpc_solve"]
    parts = {k: v for k, v in clock.time.items() if k != "mpc_solve"}
    outside = wall - mpc_call
    us = {k: round(1e6 * v / steps, 2) for k, v in parts.items()}
    us["rest"] = round(1e6 * (outside - sum(parts.values())) / steps, 2)
    return {"steps": steps, "mpc_solve_us_per_step": round(1e6 * mpc_call / steps, 2),
            "outside_us_per_step": round(1e6 * outside / steps, 2),
            "outside_share": round(outside / wall, 4), "split_us_per_step": us,
            "calls_per_step": {k: round(v / steps, 2) for k, v in clock.calls.items()}}


def cprofile_run(sc: Any, top: int) -> str:
    """The ``top`` functions by own time in a profiled run, without those under ``SpatialMPC.solve``."""
    path, mpc, plant, actuator, kw = build(sc)
    prof = cProfile.Profile()
    solve = mpc.solve

    def unprofiled_solve(*args: Any, **kwargs: Any) -> Any:
        prof.disable()
        try:
            return solve(*args, **kwargs)
        finally:
            prof.enable()
    mpc.solve = unprofiled_solve
    prof.enable()
    mt.simulate(path, mpc, plant, actuator, **kw)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plants", nargs="+", choices=sorted(PLANTS), default=list(PLANTS))
    ap.add_argument("--t-max", type=float, default=120.0, help="simulated seconds per timed run")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per plant (medians are reported)")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N",
                    help="also print the N functions with the largest own time outside the MPC solve")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/closed_loop.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    rows = []
    profiles = {}
    for name in args.plants:
        timed_run(scenario(name, 2.0))  # warm-up: imports, compiled kernels
        sc = scenario(name, args.t_max)
        runs = [timed_run(sc) for _ in range(args.repeats)]
        rows.append({"plant": name, **_median_of(runs), "split_outside_mpc": split_run(sc),
                     "runs": [{k: r[k] for k in ("wall_s", "total_ms", "mpc_ms", "outside_ms")} for r in runs]})
        if args.cprofile:
            profiles[name] = cprofile_run(sc, args.cprofile)
    report = {"benchmark": "closed_loop", "track": TRACK, "horizon": HORIZON, "control_period_s": CONTROL_PERIOD,
              "t_max_s": args.t_max, "repeats": args.repeats, "plants": {k: PLANTS[k] for k in args.plants},
              "rows": rows, "provenance": finish(prov)}
    print(dumps(report))
    for name, text in profiles.items():
        print(f"\n--- cProfile outside SpatialMPC.solve, {name} ---\n{text}")
    if args.save:
        save_json(RESULTS / "closed_loop.json", report)


if __name__ == "__main__":
    main()
