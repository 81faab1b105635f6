"""The public API: every name in ``mpc_tracking.__all__`` imports and is a public object; none disappears."""
from __future__ import annotations

import importlib
import inspect

import pytest

import mpc_tracking as mt

# the public names as of the subpackage layout (issue 10); new names may be added, none removed
BASELINE = {
    "InputError", "ModelError", "MPCTrackingError", "PathError", "PathFormatError", "ScenarioError",
    "SettingsError", "SimulationError", "SolverError", "UnknownModelError",
    "Projection", "ReferencePath", "wrap_angle",
    "MotionModel", "available_models", "create_model", "get_model", "register_model",
    "Ackermann3D", "Ackermann3DBatch", "Ackermann3DParams", "KinematicBicycle", "SimpleCar", "Unicycle",
    "plugin_errors", "reload_plugins", "ACTUATORS", "Actuator", "make_actuator", "register_actuator",
    "VehicleParams", "SpatialMPC", "MPCSettings", "MPCSolution", "SimulationResult", "simulate",
    "load_path", "list_bundled",
    "read_tum", "read_raceline", "read_xy", "read_waypoints", "read_yaml", "write_path", "speed_profile",
    "CircleObstacle", "MovingCircle", "PolygonObstacle", "ObstacleCorridor", "OccupancyGrid", "TrackCorridor",
    "car_bounds",
    "Scenario", "default_scenario", "load_scenario", "run_scenario",
    "sweep", "SweepResult", "ClusterError",
    "identify", "IdentificationResult", "VehicleFile", "load_vehicle_file", "IdentificationError", "VehicleFileError",
    # any controller in the loop (issue 19)
    "Controller", "ControlCommand", "PurePursuit", "PurePursuitParams", "Stanley", "StanleyParams", "TrackingLimits",
}


def test_no_public_name_disappears():
    assert set(mt.__all__) >= BASELINE, sorted(BASELINE - set(mt.__all__))
    assert len(mt.__all__) == len(set(mt.__all__)), "duplicate names in __all__"


@pytest.mark.parametrize("name", sorted(mt.__all__))
def test_every_name_in_all_is_a_public_object(name):
    mod = importlib.import_module("mpc_tracking")
    obj = getattr(mod, name)  # `from mpc_tracking import name` works
    assert not name.startswith("_")
    assert obj is not None
    if inspect.isclass(obj) or inspect.isfunction(obj):
        # defined in the package, in a public module (no leading underscore on any part of the path)
        assert obj.__module__.split(".")[0] == "mpc_tracking", obj.__module__
        assert not any(part.startswith("_") for part in obj.__module__.split(".")), obj.__module__
        assert not obj.__name__.startswith("_")
        assert inspect.getdoc(obj), f"{name} has no docstring"
    if inspect.isclass(obj) and issubclass(obj, Exception):
        assert issubclass(obj, mt.MPCTrackingError)


def test_star_import_gives_exactly_all():
    ns: dict = {}
    exec("from mpc_tracking import *", ns)
    assert set(ns) - {"__builtins__"} == set(mt.__all__)
