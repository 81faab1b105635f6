"""mpc_tracking: path tracking with model predictive control in the spatial (arc-length) domain.

Every public name (``mpc_tracking.__all__``) is available as ``mpc_tracking.<name>``; all but the
exceptions load on first use (PEP 562 module ``__getattr__``), so ``import mpc_tracking`` costs
milliseconds and pulls in neither SciPy, the QP solver, Numba, YAML nor the plotting stack:
``mt.SpatialMPC`` imports the controller (and OSQP) the first time it is touched, ``mt.load_path``
the path readers, and so on. ``from mpc_tracking import *`` and ``dir(mpc_tracking)`` see every name.
"""
from __future__ import annotations

from mpc_tracking._startup import guard_start_up as _guard_start_up

_guard_start_up()  # the mpc-tracking command: Ctrl-C/SIGTERM while importing -> one line, exit 130/143

from typing import TYPE_CHECKING

from mpc_tracking._lazy import attach as _attach
from mpc_tracking._lazy import lazy_names as _lazy_names
from mpc_tracking.errors import (  # standard library only: loaded at once
    ClusterError,
    IdentificationError,
    InputError,
    LogError,
    ModelError,
    MPCTrackingError,
    NonFiniteStateError,
    PathError,
    PathFormatError,
    ScenarioError,
    SettingsError,
    SimulationError,
    SolverError,
    UnknownModelError,
    VehicleFileError,
)

if TYPE_CHECKING:  # what type checkers see; at run time the same names load lazily (``_LAZY``)
    from mpc_tracking.actuation import ACTUATORS, Actuator, make_actuator, register_actuator
    from mpc_tracking.control import (
        ControlCommand,
        Controller,
        PurePursuit,
        PurePursuitParams,
        Stanley,
        StanleyParams,
        TrackingLimits,
    )
    from mpc_tracking.environment import (
        CircleObstacle,
        MovingCircle,
        ObstacleCorridor,
        OccupancyGrid,
        PolygonObstacle,
        TrackCorridor,
        car_bounds,
    )
    from mpc_tracking.identification import IdentificationResult, VehicleFile, identify, load_vehicle_file
    from mpc_tracking.logs import LogIdentification, LogTable, identify_from_log, path_from_log, read_log
    from mpc_tracking.models import (
        Ackermann3D,
        Ackermann3DBatch,
        Ackermann3DParams,
        KinematicBicycle,
        MotionModel,
        SimpleCar,
        Unicycle,
        available_models,
        create_model,
        get_model,
        plugin_errors,
        register_model,
        reload_plugins,
    )
    from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
    from mpc_tracking.mpc.controller import SpatialMPC
    from mpc_tracking.mpc.settings import MPCSettings, MPCSolution, Status
    from mpc_tracking.paths import Projection, ReferencePath, wrap_angle
    from mpc_tracking.paths.bundled import list_bundled
    from mpc_tracking.paths.io import load_path, read_raceline, read_tum, read_waypoints, read_xy, read_yaml, write_path
    from mpc_tracking.paths.speed_profile import speed_profile
    from mpc_tracking.results import Outcome, SimulationResult
    from mpc_tracking.scenario.core import Scenario, default_scenario, load_scenario, run_scenario
    from mpc_tracking.simulation import simulate
    from mpc_tracking.tuning.sweep import SweepResult, sweep

#: public name -> the module it is defined in (imported on first access); kept equal to the
#: ``TYPE_CHECKING`` imports above by ``tests/test_lazy_import.py``
_LAZY = _lazy_names({
    "mpc_tracking.actuation": "ACTUATORS Actuator make_actuator register_actuator",
    "mpc_tracking.control": (
        "ControlCommand Controller PurePursuit PurePursuitParams Stanley StanleyParams "
        "TrackingLimits"
    ),
    "mpc_tracking.environment": (
        "CircleObstacle MovingCircle ObstacleCorridor OccupancyGrid PolygonObstacle TrackCorridor "
        "car_bounds"
    ),
    "mpc_tracking.identification": "IdentificationResult VehicleFile identify load_vehicle_file",
    "mpc_tracking.logs": "LogIdentification LogTable identify_from_log path_from_log read_log",
    "mpc_tracking.models": (
        "Ackermann3D Ackermann3DBatch Ackermann3DParams KinematicBicycle MotionModel SimpleCar "
        "Unicycle available_models create_model get_model plugin_errors register_model "
        "reload_plugins"
    ),
    "mpc_tracking.models.prediction.spatial_bicycle": "VehicleParams",
    "mpc_tracking.mpc.controller": "SpatialMPC",
    "mpc_tracking.mpc.settings": "MPCSettings MPCSolution Status",
    "mpc_tracking.paths": "Projection ReferencePath wrap_angle",
    "mpc_tracking.paths.bundled": "list_bundled",
    "mpc_tracking.paths.io": "load_path read_raceline read_tum read_waypoints read_xy read_yaml write_path",
    "mpc_tracking.paths.speed_profile": "speed_profile",
    "mpc_tracking.results": "Outcome SimulationResult",
    "mpc_tracking.scenario.core": "Scenario default_scenario load_scenario run_scenario",
    "mpc_tracking.simulation": "simulate",
    "mpc_tracking.tuning.sweep": "SweepResult sweep",
})

__version__ = "0.1.0"

__all__ = [
    "InputError", "ModelError", "MPCTrackingError", "PathError", "PathFormatError", "ScenarioError",
    "SettingsError", "SimulationError", "NonFiniteStateError", "SolverError", "UnknownModelError",
    "Projection", "ReferencePath", "wrap_angle",
    "MotionModel", "available_models", "create_model", "get_model", "register_model",
    "Ackermann3D", "Ackermann3DBatch", "Ackermann3DParams", "KinematicBicycle", "SimpleCar", "Unicycle",
    "plugin_errors", "reload_plugins", "ACTUATORS", "Actuator", "make_actuator", "register_actuator",
    "VehicleParams", "SpatialMPC", "MPCSettings", "MPCSolution", "Status", "SimulationResult", "Outcome", "simulate",
    "load_path", "list_bundled",
    "read_tum", "read_raceline", "read_xy", "read_waypoints", "read_yaml", "write_path", "speed_profile",
    "CircleObstacle", "MovingCircle", "PolygonObstacle", "ObstacleCorridor", "OccupancyGrid", "TrackCorridor",
    "car_bounds",
    "Scenario", "default_scenario", "load_scenario", "run_scenario",
    "sweep", "SweepResult", "ClusterError",
    "identify", "IdentificationResult", "VehicleFile", "load_vehicle_file", "IdentificationError", "VehicleFileError",
    "Controller", "ControlCommand", "PurePursuit", "PurePursuitParams", "Stanley", "StanleyParams", "TrackingLimits",
    "read_log", "LogTable", "LogError", "identify_from_log", "LogIdentification", "path_from_log",
]


#: subpackages and modules reachable as attributes (``mt.paths``) without an explicit import
_SUBMODULES = frozenset({
    "actuation", "cli", "control", "environment", "errors", "fileio", "fuzz", "identification", "logs", "models",
    "mpc", "paths", "plausibility", "result_file", "results", "ros", "scenario", "simulation",
    "simulation_checks", "tuning", "viz",
})

if not TYPE_CHECKING:  # type checkers see the imports above (a module __getattr__ would hide typos from them)
    __getattr__, __dir__ = _attach(__name__, globals(), _LAZY, _SUBMODULES)
