"""Steps per second of each plant (single car) and of the vectorized 3D-car batch.

Prints JSON; ``--save`` also writes benchmarks/results/plants.json. A "step" of the 3D car is one
semi-implicit Euler step of dt = 1 ms (``max_substep = 1e-3``, no automatic shortening), the unit
the issue's JAX figures (0.02-0.05 M steps/s single car from Python, 2.4-2.8 M car-steps/s for
1000 vmapped cars) refer to. The other plants step dt = 10 ms.

    python benchmarks/bench_plants.py [--seconds 1.0] [--save]
"""
from __future__ import annotations

import argparse
import json
import platform
import timeit
from pathlib import Path

import numpy as np

from mpc_tracking.models import Ackermann3DBatch, Ackermann3DParams, create_model


def _rate(fn, seconds: float) -> float:
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
    out: dict = {"machine": platform.processor() or platform.machine(), "python": platform.python_version()}
    single = {}
    for name, params, u in [
        ("kinematic_bicycle", {}, [5.0, 0.1]),
        ("unicycle", {}, [0.1, 0.5]),
        ("simple_car", {}, [5.0, 0.1]),
    ]:
        car = create_model(name, params, info={"speed": 5.0})
        single[name] = _rate(lambda: car.step(0.0, 0.01, u), a.seconds)
    for preset in ("rc_car", "rc_car_reference", "sedan"):
        car = create_model("ackermann3d", {"preset": preset, "max_substep": 1e-3, "auto_substep": False},
                           info={"speed": 1.0})
        single[f"ackermann3d[{preset}]"] = _rate(lambda: car.step(0.0, 1e-3, [0.1, 0, 0, 0.02, 0.02]), a.seconds)
    car = create_model("ackermann3d", info={"speed": 1.0})
    per_ctrl = _rate(lambda: car.step(0.0, 0.05, [0.1, 0, 0, 0.02, 0.02]), a.seconds)
    out["single_car_steps_per_s"] = {k: round(v) for k, v in single.items()}
    out["ackermann3d_rc_car_control_steps_per_s_at_50ms"] = {
        "steps_per_s": round(per_ctrl), "substeps_per_control_step": int(np.ceil(0.05 / car.max_substep - 1e-9)),
        "real_time_factor": round(per_ctrl * 0.05, 1)}
    batch = {}
    for n in (1, 100, a.batch):
        b = Ackermann3DBatch(Ackermann3DParams.rc_car(max_substep=1e-3, auto_substep=False), n)
        b.reset(speed=np.linspace(0.5, 2.0, n))
        delta = np.linspace(-0.3, 0.3, n)
        tau = np.array([0.0, 0.0, 0.02, 0.02])[:, None]
        batch[n] = _rate(lambda: b.step(1e-3, delta, tau), a.seconds) * n
    out["batch_car_steps_per_s"] = {str(k): round(v) for k, v in batch.items()}
    out["targets_jax"] = {"single_car_steps_per_s": [20000, 50000], "batch_1000_car_steps_per_s": [2.4e6, 2.8e6]}
    out["ratio_batch1000_vs_single_scalar"] = round(batch[a.batch] / single["ackermann3d[rc_car]"], 1)
    print(json.dumps(out, indent=1))
    if a.save:
        path = Path(__file__).resolve().parent / "results" / "plants.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
