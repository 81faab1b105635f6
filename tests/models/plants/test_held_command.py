"""A control period's plant steps in one compiled call (``Actuator.held_command_stepper``,
``MotionModel.held_command_stepper``): the kinematic bicycle behind the direct actuator gives bitwise the numbers
of stepping it one call at a time, and the closed loop uses it."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.actuation import DirectActuator
from mpc_tracking.errors import InputError, NonFiniteStateError
from mpc_tracking.models import create_model
from mpc_tracking.models.plants import _kinematic_kernels
from mpc_tracking.models.plants.kinematic_bicycle import KinematicBicycle

START = {"x": 1.0, "y": -2.0, "yaw": 0.3, "speed": 4.0}
PLANTS = [
    {},
    {"speed_time_constant": 0.3, "steering_time_constant": 0.1, "steering_rate_max": 1.0},
    {"steering_rate_max": 0.4, "max_substep": 0.004, "delta_max": 0.3},
]
ACTUATORS = [{}, {"delta_max": 0.25, "delta_rate_max": 0.5}]


def _commands(k: int) -> tuple[float, float]:
    """A command sequence that accelerates, brakes and steers past the limits."""
    return 4.0 + 3.0 * np.sin(0.3 * k), 0.5 * np.sin(0.7 * k)


@pytest.mark.parametrize("act_params", ACTUATORS)
@pytest.mark.parametrize("params", PLANTS)
def test_held_steps_equal_single_steps_bitwise(params, act_params):
    one = create_model("kinematic_bicycle", params, info=START)
    held = create_model("kinematic_bicycle", params, info=START)
    one.compiled = held.compiled = "numba"
    act_one, act_held = DirectActuator(**act_params), DirectActuator(**act_params)
    advance = act_held.held_command_stepper(held)
    assert advance is not None
    dt, n, t_one, t_held = 0.01, 5, 0.0, 0.0
    for k in range(60):
        v, delta = _commands(k)
        for _ in range(n):
            one.step(t_one, dt, act_one(t_one, dt, v, delta, one))
            t_one += dt
        t_held = advance(t_held, dt, n, v, delta)
        assert t_held == t_one and held.t == one.t
        np.testing.assert_array_equal(held.state, one.state)  # bitwise
        assert act_held.steer.delta == act_one.steer.delta


def test_a_state_returned_earlier_is_not_changed():
    car = create_model("kinematic_bicycle", {}, info=START)
    car.compiled = "numba"
    before = car.step(0.0, 0.01, np.array([4.0, 0.1]))
    kept = before.copy()
    DirectActuator().held_command_stepper(car)(0.01, 0.01, 5, 4.0, 0.1)
    np.testing.assert_array_equal(before, kept)
    assert not np.array_equal(car.state, kept)


def test_a_non_finite_step_raises_as_single_steps_do_and_keeps_the_state():
    one = create_model("kinematic_bicycle", {}, info=START)
    held = create_model("kinematic_bicycle", {}, info=START)
    one.compiled = held.compiled = "numba"
    act_one, act_held = DirectActuator(), DirectActuator()
    with pytest.raises(NonFiniteStateError) as single:
        one.step(0.5, 0.01, act_one(0.5, 0.01, 1e308, 0.1, one))
    with pytest.raises(NonFiniteStateError) as many:
        act_held.held_command_stepper(held)(0.5, 0.01, 5, 1e308, 0.1)
    assert str(many.value) == str(single.value)
    assert many.value.t == 0.5 and single.value.t is None
    np.testing.assert_array_equal(held.state, one.state)
    assert held.t == one.t == 0.0
    with pytest.raises(InputError, match="finite"):
        act_held.held_command_stepper(held)(0.5, 0.01, 5, float("nan"), 0.1)


class _OwnActuator(DirectActuator):
    """A subclass may change the command: never fused."""


@pytest.mark.parametrize("make", [
    lambda: (create_model("kinematic_bicycle", {"dead_time": 0.02}), DirectActuator()),
    lambda: (create_model("kinematic_bicycle", {}), _OwnActuator()),
    lambda: (create_model("kinematic_bicycle", {}), mt.actuation.make_actuator("direct", delta_rate_max=1.0)),
    lambda: (create_model("unicycle", {}), DirectActuator()),
])
def test_only_the_exact_pair_is_fused(make):
    plant, act = make()
    expected = type(act) is DirectActuator and isinstance(plant, KinematicBicycle) and plant.params["dead_time"] == 0
    assert (act.held_command_stepper(plant) is not None) == expected


def test_a_step_replaced_on_the_object_is_called():
    plant = create_model("kinematic_bicycle", {})
    plant.step = plant.step  # type: ignore[method-assign]  # (a wrapper that times or stalls it, say)
    assert DirectActuator().held_command_stepper(plant) is None


def test_without_compiled_substeps_nothing_is_fused():
    plant = create_model("kinematic_bicycle", {})
    plant.compiled = "python"
    assert DirectActuator().held_command_stepper(plant) is None


def _lap(fused: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[mt.SimulationResult, int]:
    """One lap; the number of compiled held-command calls it made."""
    path = mt.load_path("oval", ds=0.5)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=12.0, delta_rate_max=0.6))
    plant = create_model("kinematic_bicycle", {"speed_time_constant": 0.2, "steering_rate_max": 1.0})
    calls = []
    kernel = _kinematic_kernels.held_command_steps
    monkeypatch.setattr(_kinematic_kernels, "held_command_steps", lambda *a: (calls.append(1), kernel(*a))[1])
    if not fused:
        monkeypatch.setattr(KinematicBicycle, "held_command_stepper", lambda self, limiter: None)
    res = mt.simulate(path, mpc, plant, DirectActuator(delta_max=0.5, delta_rate_max=0.8), laps=1, e_y0=0.5)
    return res, len(calls)


def test_the_closed_loop_steps_a_period_in_one_call_with_the_same_numbers(monkeypatch):
    with monkeypatch.context() as m:
        fused, fused_calls = _lap(True, m)
    with monkeypatch.context() as m:
        looped, looped_calls = _lap(False, m)
    assert fused.success and fused_calls == fused.series["t"].size and looped_calls == 0
    for name in ("x", "y", "yaw", "v", "e_y", "delta_cmd"):
        np.testing.assert_array_equal(fused.series[name], looped.series[name])
    assert fused.lap_times == looped.lap_times
