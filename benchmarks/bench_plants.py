"""Steps per second of each plant (single car) and of the vectorized 3D-car batch.

Prints JSON with a ``provenance`` block (commit, date, machine and load, package versions);
``--save`` also writes benchmarks/results/plants.json. A "step" of the 3D car is one
semi-implicit Euler step of dt = 1 ms (``max_substep = 1e-3``, no automatic shortening); the
other plants step dt = 10 ms. Rates are the best of 7 timed blocks (the least disturbed one on a
shared machine).

Context, not a result: the issue that asked for the batch quoted figures of a JAX implementation
(about 0.02-0.05 M steps/s for a single car driven from Python, 2.4-2.8 M car-steps/s for 1000
vmapped cars). They were not measured here and are not written into the results.

    python benchmarks/bench_plants.py [--seconds 1.0] [--batch 1000] [--save]
"""
from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt


def _rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls of ``fn`` per second: best of 7 timed blocks (the machine is shared; the best block is
    the least disturbed one)."""
    n = 1
    while True:  # calibrate a block to ~seconds / 7
        el = timeit.timeit(fn, number=n)
        if el > 0.02:
            break
        n *= 2
    n = max(1, int(n * seconds / 7 / el))
    return n / min(timeit.repeat(fn, number=n, repeat=7))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement [s]")
    ap.add_argument("--batch", type=int, default=1000, help="cars in the batch")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/plants.json")
    a = ap.parse_args()
    prov = provenance()
    out: dict = {"benchmark": "plants", "seconds_per_measurement": a.seconds}
    single = {}
    for name, params, u in [
        ("kinematic_bicycle", {}, [5.0, 0.1]),
        ("unicycle", {}, [0.1, 0.5]),
        ("simple_car", {}, [5.0, 0.1]),
    ]:
        car = mt.create_model(name, params, info={"speed": 5.0})
        single[name] = _rate(lambda car=car, u=u: car.step(0.0, 0.01, u), a.seconds)
    for preset in ("rc_car", "rc_car_reference", "sedan"):
        car = mt.create_model("ackermann3d", {"preset": preset, "max_substep": 1e-3, "auto_substep": False},
                              info={"speed": 1.0})
        single[f"ackermann3d[{preset}]"] = _rate(lambda car=car: car.step(0.0, 1e-3, [0.1, 0, 0, 0.02, 0.02]),
                                                 a.seconds)
    car = mt.create_model("ackermann3d", info={"speed": 1.0})
    per_ctrl = _rate(lambda: car.step(0.0, 0.05, [0.1, 0, 0, 0.02, 0.02]), a.seconds)
    out["single_car_steps_per_s"] = {k: round(v) for k, v in single.items()}
    out["ackermann3d_rc_car_control_steps_per_s_at_50ms"] = {
        "steps_per_s": round(per_ctrl), "substeps_per_control_step": int(np.ceil(0.05 / car.max_substep - 1e-9)),
        "real_time_factor": round(per_ctrl * 0.05, 1)}
    batch = {}
    for n in sorted({1, 100, a.batch}):
        b = mt.Ackermann3DBatch(mt.Ackermann3DParams.rc_car(max_substep=1e-3, auto_substep=False), n)
        b.reset(speed=np.linspace(0.5, 2.0, n))
        delta = np.linspace(-0.3, 0.3, n)
        tau = np.array([0.0, 0.0, 0.02, 0.02])[:, None]
        batch[n] = _rate(lambda b=b, delta=delta, tau=tau: b.step(1e-3, delta, tau), a.seconds) * n
    out["batch_car_steps_per_s"] = {str(k): round(v) for k, v in batch.items()}
    out[f"ratio_batch{a.batch}_vs_single_scalar"] = round(batch[a.batch] / single["ackermann3d[rc_car]"], 1)
    out = {"provenance": finish(prov), **out}
    print(dumps(out))
    if a.save:
        save_json(RESULTS / "plants.json", out)


if __name__ == "__main__":
    main()
