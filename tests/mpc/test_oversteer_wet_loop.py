"""A rear-driven, oversteering car with its dry vehicle file on a wet road: no power while the tyres are beyond the
friction ellipse (issue 21).

The case of ``benchmarks/bench_grip_change.py --validate --car sedan_rwd_oversteer`` where the acceleration's floor
decided: generated circuit ``gen3_2`` (``benchmarks/circuits.py``, seed 3, ds 1 m), the 3D sedan with its CG 0.5 m
further back and its roll stiffness on the rear axle (it spins at its limit instead of running wide), identified on
a dry road (mu 0.9), driven on a wet one (mu 0.6) from the speed the benchmark starts it at (14.88 m/s, the lower
of the dry and the wet vehicle file's references), default settings. Out of the first corner the plan accelerates
at 4 m/s^2; the rear slides and the estimate reads the slide 0.7 s in.

With a floor under the acceleration's share of the friction ellipse (0.1 of ``accel_max``, and on the first step
``FIRST_STEP_FLOOR``, 0.5, as the braking's) the plan kept driving the sliding rear axle through the slide and the
car spun 4 s into the run (5.5 m past the edge) -- unless the first step's steering keeps the front axle from adding
to the slide's yaw (``spatial_dynamic.countersteer_bounds``, added later: it alone saves the lap too). Without the
floor it completes the lap, 0.6 s faster than the controller identified on the wet road.
"""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.mpc import qp
from tests._shared import generated_circuits
from tests.identification.plants.ackermann3d_variants import OVERSTEER

SEDAN = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)


@pytest.fixture(scope="module")
def circuit():
    return generated_circuits().generate_circuits(3, 3, ds=1.0)[2]


@pytest.fixture(scope="module")
def identified_dry():
    return mt.identify(mt.create_model("ackermann3d", OVERSTEER))


def _run_on_the_wet_road(path, ident, t_max=12.0, **settings):
    from mpc_tracking.scenario.defaults import grip_defaults

    car = mt.create_model("ackermann3d", {**OVERSTEER, "mu": 0.6})
    act = mt.actuation.default_actuator(car)
    st = grip_defaults(mt.MPCSettings(v_max=40.0, grip_mu=0.9), car, act, ident, path.ds, "test")
    assert st.grip_estimation and st.prediction_model == "dynamic" and st.friction_ellipse  # the defaults
    mpc = mt.SpatialMPC(path, SEDAN, st.replace(**settings),
                        prediction=DynamicPrediction(ident.params, speed_lag=act.speed_lag))
    return mt.simulate(path, mpc, car, act, t_max=t_max, v0=14.88)


def test_without_power_in_the_slide_the_car_stays_on_the_wet_road(circuit, identified_dry):
    res = _run_on_the_wet_road(circuit, identified_dry)
    assert res.reason == "time_limit", res.message  # 12 s driven, past the spin
    assert res.metrics["max_body_overshoot"] == 0.0
    assert res.series["mu_est"].min() < 0.7  # the slide was read: the corner tested the controller


def _floor_the_acceleration(monkeypatch):
    """The acceleration's share of the friction ellipse floored at ELLIPSE_FLOOR as the braking's (numpy's QP: the
    compiled one computes the share itself)."""
    share = qp.ellipse_share

    def floored(a_y, a_y_max, floor=0.0):
        return share(a_y, a_y_max, max(floor, qp.ELLIPSE_FLOOR))

    monkeypatch.setattr(qp, "ellipse_share", floored)


def test_with_a_floor_under_the_acceleration_and_no_countersteer_it_spins(circuit, identified_dry, monkeypatch):
    """The acceleration floored, and the first step's steering within the front's peak slip only (no
    ``countersteer_bounds``): the car spins (the library before both remedies)."""
    _floor_the_acceleration(monkeypatch)
    monkeypatch.setattr(qp, "countersteer_bounds", lambda *args: (-np.inf, np.inf))
    res = _run_on_the_wet_road(circuit, identified_dry, compiled="python")
    assert res.reason == "left_corridor" and res.metrics["max_body_overshoot"] > 1.0
    assert np.all(np.isfinite(res.series["e_y"]))


def test_the_countersteer_alone_keeps_it_on_the_road(circuit, identified_dry, monkeypatch):
    """The acceleration floored as before, the countersteer on: the front axle no longer adds to the slide's yaw
    and the car stays on the road -- each of the two remedies alone saves this lap."""
    _floor_the_acceleration(monkeypatch)
    res = _run_on_the_wet_road(circuit, identified_dry, compiled="python")
    assert res.reason == "time_limit", res.message
    assert res.metrics["max_body_overshoot"] == 0.0
