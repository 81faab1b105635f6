"""Seeded closed-loop fuzzing: random feasible set-ups, one run each, and what went wrong.

Each case draws a smooth random loop (full-size or RC scale), a corridor (or none: an open
field), a plant among the registered ones, a horizon and a start state, keeping the case
*feasible*: the path's tightest radius is at least twice the car's minimum turning radius, the
speed limit fits the lateral limit, the car starts inside the corridor facing roughly along the
path with its whole body inside (in an open field: anywhere within 15 turning radii, facing
anywhere). :func:`run_case`
runs it and classifies the outcome; a feasible case should never raise, produce NaN, let the
body leave the corridor, or abort.

>>> case = random_case(7)
>>> record = run_case(case)
>>> record["outcome"], record["exception"], record["nan"], record["corridor_exit"], record["aborted"]
('time_limit', None, False, False, False)

``python benchmarks/fuzz_closed_loop.py --runs 1000`` runs the campaign and prints the counts;
``tests/test_reliability.py`` runs a seeded handful with hypothesis.
"""
from __future__ import annotations

import logging
import traceback
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["FuzzCase", "random_case", "run_case", "PLANTS"]

logger = logging.getLogger(__name__)

#: plants the fuzz draws from (all registered built-ins)
PLANTS = ("kinematic_bicycle", "unicycle", "simple_car", "ackermann3d")
_ABORTED = ("error", "safe_stop", "non_finite_state")


@dataclass(frozen=True)
class FuzzCase:
    """One random closed-loop set-up (all lengths in metres, angles in radians)."""

    seed: int
    scale: str  # "full" or "rc"
    plant: str
    horizon: int
    radius: float  # mean radius of the loop
    harmonics: tuple  # (k, amplitude, phase) of the radius' Fourier terms
    half_width: float | None  # None: no corridor (an open field)
    e_y0: float
    e_psi0: float
    v_max: float
    a_y_max: float
    t_max: float


def _vehicle(scale: str):
    from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams

    return VehicleParams.rc_car() if scale == "rc" else VehicleParams()


def random_case(seed: int, *, plants: tuple = PLANTS, t_max: float = 12.0) -> FuzzCase:
    """A feasible random case drawn from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    seed : int
    plants : tuple of str
        Plant names to draw from.
    t_max : float
        Simulated time of the run [s] (a part of a lap; bounded cost).
    """
    rng = np.random.default_rng(seed)
    scale = "rc" if rng.random() < 0.5 else "full"
    vehicle = _vehicle(scale)
    delta_max = 0.5
    r_turn = vehicle.wheelbase / np.tan(delta_max)
    radius = float(rng.uniform(6.0, 14.0) * r_turn)
    n_harm = int(rng.integers(1, 4))
    harmonics = tuple((int(k), float(rng.uniform(0.0, 0.12)), float(rng.uniform(0, 2 * np.pi)))
                      for k in rng.choice([2, 3, 4, 5], size=n_harm, replace=False))
    field = rng.random() < 0.3
    if field:
        half_width = None
        e_y0 = float(rng.uniform(-15.0, 15.0) * r_turn)
        e_y0 = float(np.clip(e_y0, -0.8 * radius, 0.8 * radius))  # stay on this side of the centre
        e_psi0 = float(rng.uniform(-np.pi + 0.05, np.pi - 0.05))
    else:
        half_width = float(rng.uniform(1.5, 3.0) * vehicle.width)
        e_psi0 = float(rng.uniform(-0.3, 0.3))
        # the whole body starts inside: the corners reach 0.5 width cos(e_psi) + the longer
        # overhang sin|e_psi| beyond the reference point, sideways
        reach = 0.5 * vehicle.width * np.cos(e_psi0) + max(vehicle.front_extent, vehicle.rear_overhang) * abs(
            np.sin(e_psi0))
        room = max(half_width - reach - 0.1 * vehicle.width, 0.0)
        e_y0 = float(rng.uniform(-0.7, 0.7) * room)
    a_y_max = 0.5 * 9.81 * 0.9 if scale == "full" else 3.0
    v_top = np.sqrt(a_y_max * 0.5 * radius)
    v_max = float(rng.uniform(0.4, 1.0) * v_top)
    return FuzzCase(seed=seed, scale=scale, plant=str(rng.choice(plants)), horizon=int(rng.choice([10, 20, 30, 50])),
                    radius=radius, harmonics=harmonics, half_width=half_width, e_y0=e_y0, e_psi0=e_psi0,
                    v_max=v_max, a_y_max=a_y_max, t_max=t_max)


def _path(case: FuzzCase):
    from mpc_tracking.paths.reference_path import ReferencePath

    th = np.linspace(0.0, 2 * np.pi, 400, endpoint=False)
    r = case.radius * (1.0 + sum(a * np.cos(k * th + ph) for k, a, ph in case.harmonics))
    ds = 0.05 if case.scale == "rc" else 0.5
    w = case.half_width
    return ReferencePath(r * np.cos(th), r * np.sin(th), closed=True, ds=ds, width_left=w, width_right=w,
                         name=f"fuzz{case.seed}")


def _plant_and_actuator(case: FuzzCase, vehicle: Any):
    from mpc_tracking.actuation import default_actuator, make_actuator
    from mpc_tracking.models import create_model

    if case.plant == "ackermann3d":
        plant = create_model("ackermann3d", {"preset": "rc_car" if case.scale == "rc" else "sedan"})
    elif case.plant in ("kinematic_bicycle", "simple_car"):
        plant = create_model(case.plant, {"wheelbase": vehicle.wheelbase})
    else:
        plant = create_model(case.plant)
    if case.plant == "unicycle":
        return plant, make_actuator("unicycle_pi", wheelbase=vehicle.wheelbase)
    return plant, default_actuator(plant)


def run_case(case: FuzzCase) -> dict[str, Any]:
    """Run one case; never raises.

    Returns
    -------
    dict
        ``case`` (the case as a dict), ``outcome``, ``exception`` (text or None), ``nan`` (a
        logged signal was NaN where it must not be), ``body_overshoot`` [m] (largest distance a
        body corner went past the corridor; 0 without one), ``corridor_exit`` (body overshoot
        > 2 % of the car's width on a case with a corridor), ``aborted`` (the run ended in an
        error, a safe stop or a non-finite state), ``rejoin_steps``, ``steps``.
    """
    from mpc_tracking.mpc.controller import SpatialMPC
    from mpc_tracking.mpc.settings import MPCSettings
    from mpc_tracking.simulation import simulate

    record: dict[str, Any] = {"case": asdict(case), "outcome": None, "exception": None, "nan": False,
                              "body_overshoot": 0.0, "corridor_exit": False, "aborted": False, "rejoin_steps": 0,
                              "steps": 0}
    try:
        vehicle = _vehicle(case.scale)
        path = _path(case)
        plant, actuator = _plant_and_actuator(case, vehicle)
        accel, decel = actuator.accel_limits
        ds = max(path.ds, case.v_max * 0.05)  # one planned step per 50 ms command at top speed
        st = MPCSettings(horizon=case.horizon, ds=ds, v_max=case.v_max, a_y_max=case.a_y_max, delta_max=0.5,
                         accel_max=min(accel, 0.5 * 9.81), decel_max=min(decel, 0.7 * 9.81),
                         v_min=0.1 * case.v_max)
        mpc = SpatialMPC(path, vehicle, st)
        res = simulate(path, mpc, plant, actuator, e_y0=case.e_y0, e_psi0=case.e_psi0, v0=0.5 * case.v_max,
                       t_max=case.t_max, allow_outside_start=case.half_width is None)
    except Exception as exc:  # the point of fuzzing: record any escape, with its traceback
        record["exception"] = f"{type(exc).__name__}: {exc}"
        logger.debug("fuzz case %d raised:\n%s", case.seed, traceback.format_exc())
        return record
    s = res.series
    record["outcome"] = res.reason.value
    record["steps"] = len(res)
    must_be_finite = ("x", "y", "yaw", "s", "e_y", "e_psi", "v", "v_cmd", "delta_cmd")
    record["nan"] = bool(len(res) and not all(np.all(np.isfinite(s[k])) for k in must_be_finite))
    m = res.metrics
    overshoot = float(m["max_body_overshoot"]) if np.isfinite(m["max_body_overshoot"]) else 0.0
    record["body_overshoot"] = overshoot
    record["corridor_exit"] = case.half_width is not None and (
        overshoot > 0.02 * vehicle.width or res.reason.value == "left_corridor")
    record["aborted"] = res.reason.value in _ABORTED
    record["rejoin_steps"] = int(m["rejoin_steps"])
    return record
