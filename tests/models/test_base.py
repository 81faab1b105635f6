"""The MotionModel plugin contract: declared attributes, radians, methods usable in any order."""
from __future__ import annotations

import numpy as np
import pytest

from mpc_tracking.errors import ModelError
from mpc_tracking.models import MotionModel, Pose, Velocity, available_models, create_model


@pytest.mark.parametrize("name", ["kinematic_bicycle", "unicycle", "simple_car", "ackermann3d"])
def test_builtin_plants_declare_the_contract(name):
    car = create_model(name)
    assert isinstance(car.reference_offset, float)
    assert car.default_actuator in {"direct", "unicycle_pi", "wheel_torque_pi"}
    assert len(car.STATE_UNITS) == len(car.STATE_NAMES) > 0
    assert len(car.INPUT_UNITS) == len(car.INPUT_NAMES) > 0


@pytest.mark.parametrize("name", ["kinematic_bicycle", "unicycle", "simple_car"])
def test_xdot_and_pose_usable_right_after_construction(name):
    car = create_model(name, info={"x": 1.0, "y": 2.0, "yaw": 0.3, "speed": 2.0})
    dx = car.xdot(car.state, np.zeros(len(car.INPUT_NAMES)))
    assert dx.shape == car.state.shape and np.all(np.isfinite(dx))
    assert car.pose.yaw == pytest.approx(0.3)
    assert car.speed == pytest.approx(2.0)


def test_kinematic_bicycle_with_steering_dynamics_xdot_before_step():
    car = create_model("kinematic_bicycle", {"steering_time_constant": 0.1}, info={"speed": 2.0})
    dx = car.xdot(car.state, np.array([2.0, 0.2]))
    assert dx[4] == pytest.approx(0.2 / 0.1)  # steering lag (delta_cmd - delta) / tau


def test_initial_yaw_is_radians_and_heading_degrees_is_deprecated():
    car = create_model("unicycle", info={"yaw": np.pi / 2})
    assert car.pose.yaw == pytest.approx(np.pi / 2)
    with pytest.warns(DeprecationWarning, match="yaw"):
        old = create_model("unicycle", info={"heading": 90.0})
    assert old.pose.yaw == pytest.approx(np.pi / 2)
    with pytest.raises(ModelError, match="not both"):
        create_model("unicycle", info={"heading": 90.0, "yaw": 1.0})


def test_a_plugin_reading_the_old_heading_in_degrees_still_starts_right():
    from mpc_tracking.models.plants.unicycle import Unicycle

    class OldPlugin(Unicycle):
        name = "old_plugin"

        def _initial_state(self, info):
            self._z, self._omega = info["z"], 0.0
            return np.array([info["x"], info["y"], np.deg2rad(info["heading"]), info["speed"]])

    assert OldPlugin(info={"yaw": 0.5}).pose.yaw == pytest.approx(0.5)


def test_units_must_match_names_when_a_plugin_is_defined():
    with pytest.raises(ModelError, match="STATE_UNITS has 1 entries, STATE_NAMES has 2"):
        class Bad(MotionModel):
            STATE_NAMES = ("x", "y")
            STATE_UNITS = ("m",)

            def xdot(self, x, u):
                return x

            def _initial_state(self, info):
                return np.zeros(2)

            @property
            def pose(self) -> Pose:
                return Pose(0.0, 0.0)

            @property
            def velocity(self) -> Velocity:
                return Velocity(np.zeros(3), np.zeros(3))


def test_every_registered_model_is_a_motion_model():
    for name in available_models():
        assert isinstance(create_model(name), MotionModel)


def test_simple_car_integration_method_is_checked():
    import mpc_tracking as mt

    with pytest.raises(mt.ModelError, match=r"parameter method: unknown solve_ivp method 'FOO' \(one of .*RK45"):
        mt.create_model("simple_car", {"method": "FOO"})
    assert mt.create_model("simple_car", {"method": "DOP853"}).params["method"] == "DOP853"


@pytest.mark.parametrize("params, match", [({"speed_time_constant": "abc"}, "parameter speed_time_constant: expected a number"),
                                           ({"delta_max": float("nan")}, "parameter delta_max: expected a number .*got NaN"),
                                           ({"wheelbase": True}, "parameter wheelbase: expected a number")])
def test_parameter_types_are_checked_by_the_model_itself(params, match):
    """The model's own schema (MotionModel.param_problem): an API user gets the same message as a scenario file."""
    import mpc_tracking as mt

    with pytest.raises(mt.ModelError, match=match):
        mt.create_model("kinematic_bicycle", params)
