"""Identification: excitation manoeuvres on any plant, least-squares fits, the vehicle file.

:func:`identify` runs straight-line acceleration and braking, a constant-steer speed ramp to the
grip limit, step steers and a sine sweep on a plant through its actuator
(:mod:`~mpc_tracking.identification.manoeuvres`), fits the speed lag, the acceleration limits, the
friction coefficient and the axle cornering stiffnesses of the dynamic prediction model
(:mod:`~mpc_tracking.identification.fit`), reports its one-step and open-loop prediction errors on
manoeuvres not used for fitting (:mod:`~mpc_tracking.identification.report`) and writes a vehicle
file a scenario references with ``vehicle.file:`` (:mod:`~mpc_tracking.identification.vehicle_file`).
:class:`~mpc_tracking.identification.synthetic.DynamicBicyclePlant` is a plant whose truth is the
dynamic model itself (the known-answer test).
"""
from __future__ import annotations

from mpc_tracking.identification.core import IdentificationResult, identify, plant_geometry
from mpc_tracking.identification.manoeuvres import Recording
from mpc_tracking.identification.synthetic import DynamicBicyclePlant
from mpc_tracking.identification.vehicle_file import VehicleFile, load_vehicle_file

__all__ = ["identify", "IdentificationResult", "VehicleFile", "load_vehicle_file", "Recording",
           "DynamicBicyclePlant", "plant_geometry"]
