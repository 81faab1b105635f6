"""Closed laps at the grip limit: the 3D sedan, identified first, at 0.85 of its identified limits.

The setting of ``benchmarks/bench_grip_limit.py`` (which has the six shared tracks at 0.7, 0.85 and
0.95): a_y_max and decel_max are 0.85 of what the identified sedan held (7.88 m/s² lateral on the
speed ramp, 7.49 m/s² braking), the dynamic prediction model with the identified parameters and the
actuator's speed lead, friction ellipse on, horizon 30, ds 1 m, v_max 40 m/s.
"""
from __future__ import annotations

import pytest

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction

SEDAN = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)


@pytest.fixture(scope="module")
def sedan(identified_sedan):
    return identified_sedan


def _lap(path, ident, model="dynamic"):
    st = mt.MPCSettings(horizon=30, ds=1.0, v_max=40.0, a_y_max=0.85 * ident.lateral_limit,
                        decel_max=0.85 * ident.decel_max, accel_max=min(3.0, ident.accel_max), delta_max=0.6,
                        delta_rate_max=0.8, prediction_model=model,
                        discretization="rk4" if model == "dynamic" else "euler", friction_ellipse=True)
    if model == "kinematic":
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": SEDAN.wheelbase})
        act = mt.actuation.default_actuator(plant)
        return mt.simulate(path, mt.SpatialMPC(path, SEDAN, st), plant, act)
    plant = mt.create_model("ackermann3d", {"preset": "sedan"})
    act = mt.actuation.default_actuator(plant)
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=DynamicPrediction(ident.params, speed_lag=act.speed_lag))
    return mt.simulate(path, mpc, plant, act)


def test_identified_limits_of_the_sedan(sedan):
    """What the laps are scaled by (measured: 7.88 m/s^2 lateral, 7.49 braking, 3.77 acceleration)."""
    assert sedan.lateral_limit == pytest.approx(7.88, rel=0.03)
    assert sedan.decel_max == pytest.approx(7.49, rel=0.03) and sedan.accel_max == pytest.approx(3.77, rel=0.05)


def test_bundled_circuit_lap_at_085(sedan):
    """The bundled 4.9 km circuit. Measured: completed in 246.1 s (the kinematic plant under the
    kinematic MPC at the same limits: 234.9 s, +4.8 %), RMS e_y 4.1 cm, max 20.5 cm, no body
    overshoot, no solver failure."""
    path = mt.load_path("circuit", ds=1.0)
    res = _lap(path, sedan)
    m = res.metrics
    assert res.reason == "completed" and m["infeasible_steps"] == 0
    assert m["max_body_overshoot"] == 0.0
    assert m["rms_e_y"] < 0.12 and m["max_abs_e_y"] < 0.6
    assert 234.9 < m["lap_time"] < 234.9 * 1.08


def test_shared_track_lap_at_085(sedan, shared_dir):
    """BrandsHatch from ../shared/tracks (skips without it). Measured: completed in 146.8 s, RMS
    e_y 9.3 cm, max 55 cm, no body overshoot (ideal lap of the kinematic plant: 143.2 s)."""
    path = mt.read_tum(shared_dir / "tracks" / "BrandsHatch.csv", ds=1.0, smoothing=0.25)
    res = _lap(path, sedan)
    m = res.metrics
    assert res.reason == "completed" and m["infeasible_steps"] == 0
    assert m["max_body_overshoot"] == 0.0
    assert m["rms_e_y"] < 0.25 and m["max_abs_e_y"] < 1.5
