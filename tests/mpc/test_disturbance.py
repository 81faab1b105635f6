"""Offset-free tracking (issue 11, part 7): the disturbance estimate and the plant with a side force.

Closed-loop figures measured at the commit that added them (3D sedan, ``lateral_force`` 1500 N =
0.95 m/s^2 = 0.097 g, 12 m/s, mean e_y over the last 3 s of 15 s; ``python -m pytest -q
tests/mpc/test_disturbance.py``):

=================  ===================  =================  ==============
prediction model   path                 without observer   with observer
=================  ===================  =================  ==============
dynamic            straight             6.37 cm            0.22 cm
dynamic            circle R = 50 m      6.67 cm            0.17 cm
kinematic          straight             3.97 cm            0.05 cm
kinematic          circle R = 50 m      7.92 cm            0.11 cm
=================  ===================  =================  ==============
"""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models.plants.ackermann3d import Ackermann3DBatch, Ackermann3DParams
from mpc_tracking.models.prediction import DynamicPrediction, dynamic_params_from_ackermann3d
from mpc_tracking.mpc.disturbance import DisturbanceEstimator

FORCE = 1500.0  # [N] side force on the sedan (a steady crosswind)
SPEED = 12.0  # [m/s]
#: measured steady offsets |e_y| [m] without the observer (see the module doc)
OFFSET_WITHOUT = {("dynamic", "straight"): 0.0637, ("dynamic", "circle"): 0.0667,
                  ("kinematic", "straight"): 0.0397, ("kinematic", "circle"): 0.0792}


def _straight(length: float = 250.0) -> mt.ReferencePath:
    x = np.linspace(0.0, length, int(length / 0.5) + 1)
    return mt.ReferencePath(x, 0.0 * x, closed=False, ds=0.5, width_left=4.0, width_right=4.0)


def _circle(radius: float = 50.0) -> mt.ReferencePath:
    th = np.linspace(0.0, 2.0 * np.pi, 1000, endpoint=False)
    return mt.ReferencePath(radius * np.cos(th), radius * np.sin(th), closed=True, ds=0.5,
                            width_left=4.0, width_right=4.0)


PATHS = {"straight": _straight, "circle": _circle}


def _controller(path: mt.ReferencePath, model: str, observer: bool, plant: mt.MotionModel, act) -> mt.SpatialMPC:
    common = dict(horizon=30, ds=1.0, v_max=SPEED, a_y_max=6.0, decel_max=6.0, accel_max=3.0, delta_rate_max=0.8,
                  disturbance_observer=observer)
    veh = mt.VehicleParams(wheelbase=plant.vehicle.wheelbase)
    if model == "dynamic":
        pred = DynamicPrediction(dynamic_params_from_ackermann3d(plant.vehicle), speed_lag=act.speed_lag)
        st = mt.MPCSettings(prediction_model="dynamic", discretization="rk4", **common)
        return mt.SpatialMPC(path, veh, st, prediction=pred)
    return mt.SpatialMPC(path, veh, mt.MPCSettings(**common))


def _run(model: str, path_name: str, observer: bool, force: float = FORCE):
    """15 s on the path with the side force: (steady mean e_y [m], controller, result)."""
    path = PATHS[path_name]()
    plant = mt.create_model("ackermann3d", {"preset": "sedan", "lateral_force": force})
    act = mt.make_actuator("wheel_torque_pi")
    mpc = _controller(path, model, observer, plant, act)
    res = mt.simulate(path, mpc, plant, act, t_max=15.0, laps=5)
    t, e_y = res.series["t"], res.series["e_y"]
    late = t > t[-1] - 3.0
    assert np.ptp(e_y[late]) < 0.01  # settled
    return float(np.mean(e_y[late])), mpc, res


_CACHE: dict = {}


def _cached(model: str, path_name: str, observer: bool):
    key = (model, path_name, observer)
    if key not in _CACHE:
        _CACHE[key] = _run(model, path_name, observer)
    return _CACHE[key]


# ---------------------------------------------------------------- closed loop: no steady offset
@pytest.mark.parametrize("model", ["dynamic", "kinematic"])
@pytest.mark.parametrize("path_name", ["straight", "circle"])
def test_side_force_leaves_no_steady_offset_with_the_observer(model, path_name):
    off, _, res_off = _cached(model, path_name, False)
    on, _, res_on = _cached(model, path_name, True)
    assert res_off.metrics["infeasible_steps"] == 0 and res_on.metrics["infeasible_steps"] == 0
    # without the observer: the offset measured when this test was written (+-15 %)
    assert abs(off) == pytest.approx(OFFSET_WITHOUT[model, path_name], rel=0.15)
    # with it: < 2 cm (the target); measured 0.05-0.22 cm
    assert abs(on) < 0.02
    assert abs(on) < 0.005
    assert abs(on) < abs(off) / 10.0


def test_estimate_converges_to_the_side_acceleration():
    """The dynamic model's v_y disturbance is the force per mass F/m (measured 0.944 vs 0.954 m/s^2)."""
    _, mpc, _ = _cached("dynamic", "straight", True)
    m = Ackermann3DParams.sedan().mass
    d = mpc.disturbance.d
    names = mpc.model.STATE_NAMES
    assert d[names.index("v_y")] == pytest.approx(FORCE / m, rel=0.03)
    # the rest stays small: the side force is the whole story
    assert abs(d[names.index("r")]) < 0.05 and abs(d[names.index("v_x")]) < 0.05
    assert abs(d[names.index("e_y")]) < 0.02 and d[names.index("t")] == 0.0


def test_estimate_follows_the_sign_of_the_force():
    _, mpc, _ = _run("dynamic", "straight", True, force=-FORCE)
    assert mpc.disturbance.d[mpc.model.STATE_NAMES.index("v_y")] == pytest.approx(-FORCE / 1573.0, rel=0.03)


def test_reset_forgets_the_estimate_and_runs_repeat():
    _, mpc, res = _cached("kinematic", "straight", True)
    assert np.abs(mpc.disturbance.d).max() > 1e-3
    mpc.reset()
    assert np.all(mpc.disturbance.d == 0.0)
    # simulate() resets the controller: a second run on a fresh plant repeats the first (up to
    # OSQP's warm start, which outlives reset(): ~4e-6 m; a kept estimate of F/m would start the
    # run with the plan anticipating the drift, centimetres apart)
    path = _straight()
    plant = mt.create_model("ackermann3d", {"preset": "sedan", "lateral_force": FORCE})
    again = mt.simulate(path, mpc, plant, mt.make_actuator("wheel_torque_pi"), t_max=15.0, laps=5)
    np.testing.assert_allclose(again.series["e_y"], res.series["e_y"], rtol=0, atol=5e-5)


def test_observer_off_by_default_and_zero_estimate_changes_nothing():
    path = mt.load_path("oval", ds=0.5)
    assert mt.MPCSettings().disturbance_observer is False
    assert mt.SpatialMPC(path).disturbance is None
    state = (5.0, 0.3, 0.05)
    base = mt.SpatialMPC(path).prepare_qp(state)
    obs = mt.SpatialMPC(path, settings=mt.MPCSettings(disturbance_observer=True)).prepare_qp(state)
    np.testing.assert_array_equal(base.f, obs.f)
    np.testing.assert_array_equal(base.x0, obs.x0)


def test_estimate_enters_every_prediction_step():
    """A known estimate shifts each step's affine term by (d + A_k d) dt_k / 2, in f and in the QP rows."""
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=20, disturbance_observer=True)
    mpc = mt.SpatialMPC(path, settings=st)
    state = (5.0, 0.2, 0.0)
    f0 = mpc.prepare_qp(state).f
    d = np.array([0.05, 0.01, 0.0])
    mpc.disturbance.d[:] = d
    prob = mpc.prepare_qp(state)
    x_op = mpc._prepare(state).x_op
    dt = np.diff(x_op[:, 2])
    expected = 0.5 * dt[:, None] * (d + prob.A @ d)
    np.testing.assert_allclose(prob.f - f0, expected, rtol=1e-12, atol=1e-15)
    lay = mpc.layout
    np.testing.assert_allclose(mpc.data.l[mpc.nx : lay.nX], -prob.f.reshape(-1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(mpc.data.u[mpc.nx : lay.nX], -prob.f.reshape(-1), rtol=0, atol=1e-15)
    # the plan anticipates a drift to the left (d_e_y > 0): it heads right of the unshifted plan
    sol = mpc.solve(state)
    mpc2 = mt.SpatialMPC(path, settings=st)
    assert sol.delta < mpc2.solve(state).delta


# ---------------------------------------------------------------- the estimator on a linear system
def test_estimator_recovers_a_constant_disturbance_of_a_linear_system_exactly():
    """x' = A_c x + B u + d (discretized exactly) with d unknown to the model: the residual-form
    estimate converges to d geometrically, at the rate exp(-dt / tau)."""
    dt, tau = 0.05, 0.3
    A = np.array([[1.0, dt], [0.0, 0.9]])
    B = np.array([0.5 * dt * dt, dt])
    d_true = np.array([0.02, -0.4])
    est = DisturbanceEstimator(2, [0, 1], time_constant=tau)
    x = np.array([0.1, 0.0])
    errs = []
    for k in range(200):
        u = np.sin(0.1 * k)
        x_pred = A @ x + B * u + est.d * dt
        x = A @ x + B * u + d_true * dt
        est.update(x - x_pred, dt)
        errs.append(np.abs(est.d - d_true).max())
    np.testing.assert_allclose(est.d, d_true, rtol=1e-12, atol=1e-14)
    rate = errs[11] / errs[10]
    assert rate == pytest.approx(np.exp(-dt / tau), rel=1e-9)


def test_estimator_channels_bounds_and_bad_steps():
    est = DisturbanceEstimator(3, [0, 2], time_constant=0.1)
    est.update(np.array([1.0, 1.0, -1.0]), 0.1, bound=np.array([9.0, 9.0, 0.5]))
    assert est.d[1] == 0.0  # not a channel
    assert est.d[0] == pytest.approx((1 - np.exp(-1.0)) / 0.1)
    assert est.d[2] == -0.5  # clipped to its bound
    before = est.d.copy()
    for dt, r in ((0.0, [1, 1, 1]), (-0.1, [1, 1, 1]), (np.nan, [1, 1, 1]), (0.1, [np.nan, 0, 0])):
        est.update(np.array(r, dtype=float), dt)
    np.testing.assert_array_equal(est.d, before)
    est.reset()
    assert np.all(est.d == 0.0) and est.n_updates == 0
    with pytest.raises(InputError, match="time_constant"):
        DisturbanceEstimator(3, [0], time_constant=0.0)
    with pytest.raises(InputError, match="channels"):
        DisturbanceEstimator(3, [3], time_constant=1.0)
    with pytest.raises(InputError, match=r"residual: expected shape \(3,\)"):
        est.update(np.zeros(2), 0.1)


# ---------------------------------------------------------------- settings
@pytest.mark.parametrize("field, value", [
    ("disturbance_time_constant", 0.0), ("disturbance_time_constant", -1.0),
    ("disturbance_time_constant", float("nan")), ("disturbance_time_constant", "fast"),
    ("disturbance_max", 0.0), ("disturbance_max", float("inf")),
    ("disturbance_observer", "yes"), ("disturbance_observer", 1),
])
def test_bad_observer_settings_name_the_field(field, value):
    with pytest.raises(SettingsError, match=f"MPCSettings.{field}"):
        mt.MPCSettings(**{field: value})


def test_scenario_controller_takes_the_observer_keys():
    from mpc_tracking.scenario.schema import ControllerConfig

    cfg = ControllerConfig()
    assert cfg.disturbance_observer is False and cfg.disturbance_time_constant == 0.5


# ---------------------------------------------------------------- the plant's side force
def test_lateral_force_adds_its_acceleration_at_the_cg_only():
    """The external force changes the CG acceleration by R (0, F/m, 0) and no angular acceleration,
    in the single car and the batch."""
    F = 800.0
    cars = [mt.create_model("ackermann3d", {"preset": "sedan", "lateral_force": f}, info={"speed": 10.0, "yaw": 0.7})
            for f in (0.0, F)]
    u = [0.05, 10.0, 10.0, 10.0, 10.0]
    x = cars[0].state
    xd0, xd1 = (c.xdot(x, u) for c in cars)
    R = np.asarray(x[3:12]).reshape(3, 3)
    m = Ackermann3DParams.sedan().mass
    np.testing.assert_allclose(xd1[12:15] - xd0[12:15], R @ np.array([0.0, F / m, 0.0]), atol=1e-12)
    np.testing.assert_array_equal(xd1[15:], xd0[15:])
    batches = [Ackermann3DBatch(Ackermann3DParams.sedan(lateral_force=f), 2) for f in (0.0, F)]
    out = []
    for b in batches:
        b.reset(speed=10.0, yaw=np.array([0.0, 0.7]))
        out.append(b.forces(np.array([0.05, 0.05]), np.full((4, 1), 10.0)))
    for i in range(2):
        Ri = batches[0].R[:, :, i]
        np.testing.assert_allclose(out[1]["dv"][:, i] - out[0]["dv"][:, i], Ri @ np.array([0.0, F / m, 0.0]),
                                   atol=1e-12)
    np.testing.assert_array_equal(out[1]["dw"], out[0]["dw"])
