"""3D Ackermann car, numpy against numba: single-car steps/s, 1000-car batch car-steps/s, compile time.

Prints JSON with a ``provenance`` block; ``--save`` also writes benchmarks/results/ackermann3d_batch.json.
A step is dt = 1 ms in one substep (``max_substep = 1e-3``, ``auto_substep = False``, as in bench_plants.py),
presets ``rc_car`` and ``sedan``. The two backends are timed in alternating blocks (``--repeats`` of each, the
order swapped every repeat), so both see the same load on a shared machine; rates are medians over the blocks,
with their spread, and each ratio is numba / numpy from the same run: of the medians, and the median of the
per-repeat (paired) ratios.

The compile time is measured in fresh interpreters with an empty ``NUMBA_CACHE_DIR`` (cold: import numba and
compile) and then again with that cache filled (warm: import numba and load the cache); ``in_process_first_use_s``
is what the first use took in this process (normally a cache load).

    python benchmarks/bench_ackermann3d_batch.py [--seconds 1.0] [--repeats 15] [--batch 1000] [--save]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking.models.plants.ackermann3d import batch_numba

PRESETS = {  # preset: (single-car input, start speed [m/s], batch torque per wheel [N m])
    "rc_car": ([0.1, 0.0, 0.0, 0.02, 0.02], 1.0, 0.02),
    "sedan": ([0.05, 0.0, 0.0, 200.0, 200.0], 10.0, 200.0),
}
TARGETS = {"batch_rc_car_numba_car_steps_per_s": 3e6, "single_car_numba_steps_per_s": 1e5}

_COMPILE_SNIPPET = (
    "import json, numpy as np\n"
    "from mpc_tracking.models.plants.ackermann3d import batch_numba as bn\n"
    "bn.load_kernels()\n"
    "print(json.dumps(bn.compile_seconds()))\n"
)


def _calls_per_block(fn: Callable[[], object], seconds: float) -> int:
    """Number of calls of ``fn`` that take about ``seconds``."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        el = time.perf_counter() - t0
        if el > 0.02:
            return max(1, int(n * seconds / el))
        n *= 2


def _paired(fns: dict[str, Callable[[], object]], per_call: int, seconds: float, repeats: int) -> dict:
    """Rates (``per_call`` units per call) of each function, timed in alternating blocks.

    Returns
    -------
    dict
        Per backend ``median``, ``min``, ``max`` [units/s]; ``ratio_numba_over_numpy`` (of the medians) and
        ``ratio_paired_median`` (median over repeats of the ratio within a repeat).
    """
    block = seconds / (repeats * len(fns))
    calls = {k: _calls_per_block(f, block) for k, f in fns.items()}
    rates: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for rep in range(repeats):
        for k in names if rep % 2 == 0 else names[::-1]:
            f, n = fns[k], calls[k]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            rates[k].append(n * per_call / (time.perf_counter() - t0))
    out: dict = {k: {"median": round(float(np.median(v))), "min": round(min(v)), "max": round(max(v))}
                 for k, v in rates.items()}
    out["ratio_numba_over_numpy"] = round(out["numba"]["median"] / out["numpy"]["median"], 2)
    out["ratio_paired_median"] = round(float(np.median(np.array(rates["numba"]) / np.array(rates["numpy"]))), 2)
    return out


def _compile_times() -> dict:
    """Cold compile and warm cache load [s], each in a fresh interpreter with its own empty cache directory."""
    out: dict = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for key in ("cold_compile_s", "warm_cache_load_s"):
            done = subprocess.run([sys.executable, "-c", _COMPILE_SNIPPET], env=env, capture_output=True, text=True,
                                  timeout=600)
            out[key] = round(json.loads(done.stdout), 2) if done.returncode == 0 else f"failed: {done.stderr[-300:]}"
    out["note"] = "fresh interpreter each; includes import numba (~0.3 s); NUMBA_CACHE_DIR = an empty temporary dir"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="time per backend and measurement [s]")
    ap.add_argument("--repeats", type=int, default=15, help="timed blocks per backend and measurement")
    ap.add_argument("--batch", type=int, default=1000, help="cars in the batch")
    ap.add_argument("--no-compile", action="store_true", help="skip the cold/warm compile measurement")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/ackermann3d_batch.json")
    a = ap.parse_args()
    if not batch_numba.numba_available():
        sys.exit('numba is not installed: pip install "mpc_tracking[fast]"')
    prov = provenance()
    out: dict = {"benchmark": "ackermann3d_batch", "dt_s": 1e-3, "seconds_per_backend": a.seconds,
                 "repeats": a.repeats, "batch_cars": a.batch}
    t0 = time.perf_counter()
    batch_numba.load_kernels()
    out["compile"] = {"in_process_first_use_s": round(time.perf_counter() - t0, 2)}
    if not a.no_compile:
        out["compile"].update(_compile_times())

    single = {}
    for preset, (u, speed, _) in PRESETS.items():
        cars = {be: mt.create_model("ackermann3d", {"preset": preset, "backend": be, "max_substep": 1e-3,
                                                    "auto_substep": False}, info={"speed": speed})
                for be in ("numpy", "numba")}
        fns = {be: (lambda c=c, u=u: c.step(0.0, 1e-3, u)) for be, c in cars.items()}
        single[preset] = _paired(fns, 1, a.seconds * 2, a.repeats)
    out["single_car_steps_per_s"] = single

    batch = {}
    n = a.batch
    for preset, (_, speed, torque) in PRESETS.items():
        P = getattr(mt.Ackermann3DParams, preset)(max_substep=1e-3, auto_substep=False)
        delta = np.linspace(-0.3, 0.3, n)
        tau = np.array([0.0, 0.0, torque, torque])[:, None]
        fns = {}
        for be in ("numpy", "numba"):
            b = mt.Ackermann3DBatch(P, n, backend=be)
            b.reset(speed=np.linspace(0.5, 2.0, n) * speed)
            fns[be] = lambda b=b, delta=delta, tau=tau: b.step(1e-3, delta, tau)
        batch[preset] = _paired(fns, n, a.seconds * 2, a.repeats)
    out[f"batch{n}_car_steps_per_s"] = batch

    got = {"batch_rc_car_numba_car_steps_per_s": batch["rc_car"]["numba"]["median"],
           "single_car_numba_steps_per_s": single["rc_car"]["numba"]["median"]}
    out["targets"] = {k: {"target": v, "median": got[k], "met": got[k] >= v} for k, v in TARGETS.items()}
    out = {"provenance": finish(prov), **out}
    print(dumps(out))
    if a.save:
        save_json(RESULTS / "ackermann3d_batch.json", out)


if __name__ == "__main__":
    main()
