"""A control period of the 3D car behind its wheel-torque PI in one compiled call
(``WheelTorquePI.held_command_stepper`` -> ``Ackermann3D.held_torque_stepper``): bitwise the numbers of stepping it
one call at a time, with the PI's plan and anti-windup, braking and traction limits, rate-limited steering, road
friction by time and place, and the errors of the Python path."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.actuation import WheelTorquePI
from mpc_tracking.errors import InputError, NonFiniteStateError
from mpc_tracking.models import create_model
from mpc_tracking.models.plants.ackermann3d import held
from mpc_tracking.models.plants.ackermann3d.car import Ackermann3D
from mpc_tracking.scenario.build import build

pytest.importorskip("numba")
_held_kernels = pytest.importorskip("mpc_tracking.models.plants.ackermann3d._held_kernels")

START = {"x": 1.0, "y": -2.0, "yaw": 0.3, "speed": 8.0}
PLANTS = [
    {"preset": "sedan"},
    {"preset": "sedan", "mu_schedule": [[0.3, 0.5], [0.7, 0.9]], "mu_patches": [[12.0, 0.0, 6.0, 0.4]]},
    {"preset": "sedan", "drive": "fwd", "brakes": "driven"},
    {"preset": "rc_car"},
    {"preset": "rc_car_reference"},  # float32 casts, the reference's signed brake torque
    {"preset": "rc_car_reference", "brakes": "all", "drive": "rwd"},  # signed torque braking the undriven wheels
]
ACTUATORS = [
    {},
    {"delta_max": 0.25, "delta_rate_max": 0.5, "tau_max": 300.0, "traction_fraction": 0.5},
    {"feedforward": False, "kp": 8.0, "ki": 4.0, "accel_max": 2.0},
]


def _commands(k: int) -> tuple[float, float]:
    """Speed commands that accelerate hard and brake to a stop, steering past the limits."""
    return max(0.0, 8.0 + 9.0 * np.sin(0.25 * k)), 0.45 * np.sin(0.6 * k)


def _pair(params: dict, act_params: dict) -> tuple:
    one = create_model("ackermann3d", {**params, "backend": "numba"}, info=START)
    held = create_model("ackermann3d", {**params, "backend": "numba"}, info=START)
    return one, held, WheelTorquePI(**act_params), WheelTorquePI(**act_params)


def _same(one: Ackermann3D, held: Ackermann3D, act_one: WheelTorquePI, act_held: WheelTorquePI) -> None:
    np.testing.assert_array_equal(held.state, one.state)  # bitwise
    assert held.t == one.t
    assert act_held.steer.delta == act_one.steer.delta
    assert act_held.pi.integral == act_one.pi.integral and act_held.pi._tau == act_one.pi._tau
    assert held.road_friction() == one.road_friction() and held._mu_now == one._mu_now
    np.testing.assert_array_equal(held._numba[0], one._numba[0])
    assert held.normal_loads() == one.normal_loads()


@pytest.mark.parametrize("act_params", ACTUATORS)
@pytest.mark.parametrize("params", PLANTS)
def test_held_steps_equal_single_steps_bitwise(params, act_params):
    one, held, act_one, act_held = _pair(params, act_params)
    advance = act_held.held_command_stepper(held)
    assert advance is not None
    dt, n, t_one, t_held = 0.01, 5, 0.0, 0.0
    braked = limited = False
    for k in range(40):
        v, delta = _commands(k)
        plan = (one.speed, 3.0 * np.cos(0.4 * k)) if k % 3 else (None,)  # a plan most steps (the dynamic model)
        act_one.set_plan(*plan)
        act_held.set_plan(*plan)
        for _ in range(n):
            u = act_one(t_one, dt, v, delta, one)
            braked |= bool(np.any(u[1:] < 0))
            limited |= bool(np.any(np.abs(u[1:]) == act_one.tau_max))
            one.step(t_one, dt, u)
            t_one += dt
        t_held = advance(t_held, dt, n, v, delta)
        assert t_held == t_one
        _same(one, held, act_one, act_held)
    assert braked
    if act_params.get("tau_max") and params["preset"] == "sedan":
        assert limited


@pytest.mark.parametrize("feedforward", [True, False])
def test_braking_to_a_standstill_fades_the_brakes_as_single_steps_do(feedforward):
    """Below v_stop the PI's braking fades out and its integral is kept >= 0 (stopping without reversing)."""
    one, held, act_one, act_held = _pair({"preset": "sedan"}, {"feedforward": feedforward, "ki": 3.0})
    for car in (one, held):
        state = car.state
        state[12:14] *= 1.5 / 8.0  # 1.5 m/s
        state[18:22] *= 1.5 / 8.0
        car.state = state
    advance = act_held.held_command_stepper(held)
    t = 0.0
    for _period in range(30):
        plan = (one.speed, -2.0) if feedforward else (None,)
        act_one.set_plan(*plan)
        act_held.set_plan(*plan)
        t_held = advance(t, 0.01, 5, 0.0, 0.0)
        for _ in range(5):
            one.step(t, 0.01, act_one(t, 0.01, 0.0, 0.0, one))
            t += 0.01
        assert t_held == t
        _same(one, held, act_one, act_held)
    assert abs(one.speed) < 0.05


def test_python_steps_between_held_calls_and_resets_are_seen():
    one, held, act_one, act_held = _pair(PLANTS[1], ACTUATORS[1])
    advance = act_held.held_command_stepper(held)
    t = 0.0
    for k in range(12):
        v, delta = _commands(k)
        if k == 6:
            act_one.reset(one)
            act_held.reset(held)
        if k % 2:  # the Python path on both
            for _ in range(5):
                held.step(t, 0.01, act_held(t, 0.01, v, delta, held))
                one.step(t, 0.01, act_one(t, 0.01, v, delta, one))
                t += 0.01
        else:
            t_held = advance(t, 0.01, 5, v, delta)
            for _ in range(5):
                one.step(t, 0.01, act_one(t, 0.01, v, delta, one))
                t += 0.01
            assert t_held == t
        _same(one, held, act_one, act_held)
    state = one.state.copy()
    state[12] += 1.0  # a state set from outside is stepped from
    one.state = state
    held.state = state
    advance(t, 0.01, 5, 5.0, 0.1)
    for _ in range(5):
        one.step(t, 0.01, act_one(t, 0.01, 5.0, 0.1, one))
        t += 0.01
    _same(one, held, act_one, act_held)


def _racing_to_overflow(params: dict) -> Ackermann3D:
    """A car whose state sum overflows in its second step of 10 ms (x near the largest float, huge v_x)."""
    car = create_model("ackermann3d", {**params, "backend": "numba"}, info={**START, "yaw": 0.0})
    state = car.state
    state[0], state[12] = 1.2845e308, 5e307
    car.state = state
    return car


def test_a_non_finite_step_raises_as_single_steps_do_with_its_time():
    one, held = _racing_to_overflow({"preset": "sedan"}), _racing_to_overflow({"preset": "sedan"})
    act_one, act_held = WheelTorquePI(), WheelTorquePI()
    t = 0.5
    with pytest.raises(NonFiniteStateError) as single:
        for _ in range(5):
            one.step(t, 0.01, act_one(t, 0.01, 8.0, 0.1, one))
            t += 0.01
    with pytest.raises(NonFiniteStateError) as many:
        act_held.held_command_stepper(held)(0.5, 0.01, 5, 8.0, 0.1)
    assert str(many.value) == str(single.value)
    assert many.value.t == t == 0.51 and single.value.t is None  # the second step's start
    np.testing.assert_array_equal(held.state, one.state)  # the non-finite state, as the Python step leaves it
    assert held.t == one.t == 0.51
    assert act_held.pi.integral == act_one.pi.integral and act_held.steer.delta == act_one.steer.delta
    with pytest.raises(InputError, match="finite"):
        act_held.held_command_stepper(held)(0.5, 0.01, 5, float("nan"), 0.1)


class _OwnActuator(WheelTorquePI):
    """A subclass may change the torques: never fused."""


def test_fused_only_where_every_step_would_be_compiled_anyway():
    car = create_model("ackermann3d", {"preset": "sedan", "backend": "numba"}, info=START)
    assert WheelTorquePI().held_command_stepper(car) is not None
    assert _OwnActuator().held_command_stepper(car) is None
    numpy_car = create_model("ackermann3d", {"preset": "sedan", "backend": "numpy"}, info=START)
    assert WheelTorquePI().held_command_stepper(numpy_car) is None
    replaced = create_model("ackermann3d", {"preset": "sedan", "backend": "numba"}, info=START)
    replaced.step = replaced.step  # type: ignore[method-assign]
    assert WheelTorquePI().held_command_stepper(replaced) is None
    kinematic = create_model("kinematic_bicycle", {}, info=START)
    assert WheelTorquePI().held_command_stepper(kinematic) is None


def _sedan_run(fused: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[mt.SimulationResult, int]:
    """3 s of the sedan with the dynamic model and a rain shower; the number of compiled held-command calls."""
    sc = mt.default_scenario().with_overrides({
        "path.source": "circuit", "controller.horizon": 20, "controller.control_period": 0.05,
        "simulation.t_max": 3.0, "plant.name": "ackermann3d",
        "plant.params": {"preset": "sedan", "backend": "numba", "mu_schedule": [[1.0, 0.6]]},
        "vehicle.wheelbase": 2.68, "vehicle.length": 4.6, "vehicle.width": 1.8, "vehicle.rear_overhang": 0.95})
    path, mpc, plant, actuator, kw = build(sc)
    calls = []
    kernel = _held_kernels.held_torque_steps
    monkeypatch.setattr(held, "_KERNEL", lambda *a: (calls.append(1), kernel(*a))[1])
    if not fused:
        monkeypatch.setattr(Ackermann3D, "held_torque_stepper", lambda self, actuator: None)
    res = mt.simulate(path, mpc, plant, actuator, **kw)
    return res, len(calls)


def test_the_sedan_closed_loop_steps_a_period_in_one_call_with_the_same_numbers(monkeypatch):
    with monkeypatch.context() as m:
        fused, fused_calls = _sedan_run(True, m)
    with monkeypatch.context() as m:
        looped, looped_calls = _sedan_run(False, m)
    assert fused_calls == fused.series["t"].size == 61 and looped_calls == 0, fused_calls
    assert set(fused.series) == set(looped.series)
    for name, values in fused.series.items():
        if name not in ("solve_time", "step_time"):
            np.testing.assert_array_equal(values, looped.series[name], err_msg=name)
    assert np.ptp(fused.series["mu_true"]) > 0  # the rain came
