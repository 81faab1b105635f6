"""The plant contract identification reads (MotionModel's declared geometry), the ramp's end
condition on signals with a known answer, and the vehicle file's power limit and assumptions."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

import mpc_tracking as mt
from mpc_tracking.errors import ModelError, VehicleFileError
from mpc_tracking.identification import DynamicBicyclePlant, VehicleFile, load_vehicle_file, plant_geometry
from mpc_tracking.identification.core import driven_axle
from mpc_tracking.identification.manoeuvres import RampMonitor
from mpc_tracking.models import MotionModel, Velocity
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams


class _Declared(MotionModel):
    """A bare planar plant that declares its geometry as class attributes."""

    name = "declared_geometry_test"
    STATE_NAMES = ("x", "y", "psi")
    INPUT_NAMES = ("v", "delta")
    mass, yaw_inertia, l_f, l_r, cg_height, driven_axle = 1200.0, 1900.0, 1.1, 1.5, 0.45, "front"

    def _initial_state(self, info):
        self._z = info["z"]
        return np.array([info["x"], info["y"], info["yaw"]])

    def xdot(self, x, u):
        return np.zeros(3)

    @property
    def pose(self):
        return self._planar_pose()

    @property
    def velocity(self):
        return Velocity(np.zeros(3), np.zeros(3))


def test_motion_model_declares_nothing_by_default():
    plant = mt.create_model("unicycle")
    assert plant.declared_geometry() == {}
    assert (plant.mass, plant.yaw_inertia, plant.l_f, plant.l_r, plant.cg_height, plant.driven_axle) == (None,) * 6


def test_identification_reads_the_declared_geometry():
    plant = _Declared()
    geo, src = plant_geometry(plant)
    assert (geo["mass"], geo["I_z"], geo["l_f"], geo["l_r"], geo["h_cg"]) == (1200.0, 1900.0, 1.1, 1.5, 0.45)
    assert all(src[k] == "plant" for k in ("mass", "I_z", "l_f", "l_r", "h_cg"))
    assert driven_axle(plant) == "front"
    # the argument still wins over the declaration
    geo, src = plant_geometry(plant, {"l_f": 1.2})
    assert geo["l_f"] == 1.2 and src["l_f"] == "argument"


def test_synthetic_plant_and_3d_car_declare_their_axles():
    syn = DynamicBicyclePlant()
    assert syn.declared_geometry()["l_r"] == syn.vehicle_params.l_r
    assert driven_axle(mt.create_model("ackermann3d", {"preset": "sedan", "drive": "fwd"})) == "front"
    assert driven_axle(mt.create_model("ackermann3d", {"preset": "sedan"})) == "rear"


@pytest.mark.parametrize("attr, value, match", [
    ("l_f", -1.0, "declared l_f must be a positive number"),
    ("mass", "heavy", "declared mass"),
    ("cg_height", math.nan, "declared cg_height"),
    ("driven_axle", "both", "driven_axle must be one of"),
])
def test_bad_declarations_are_named(attr, value, match):
    plant = _Declared()
    setattr(plant, attr, value)
    with pytest.raises(ModelError, match=match):
        plant.declared_geometry()


def test_the_new_model_template_shows_the_contract(tmp_path):
    from mpc_tracking.models.scaffold import new_model

    text = next(f for f in new_model("ident_contract_car", tmp_path) if f.name == "model.py").read_text()
    for attr in ("mass = None", "yaw_inertia = None", "l_f = None", "l_r = None", "cg_height = None",
                 "driven_axle = None", "mpc-tracking identify --plant ident_contract_car"):
        assert attr in text, attr


# ---------------------------------------------------------------------- the ramp's end condition
def _feed(mon: RampMonitor, v, r, vy, dt):
    for k in range(len(v)):
        if mon(k * dt, {"v_x": v[k], "v_y": vy[k], "r": r[k], "speed": v[k]}):
            return k
    return None


def test_ramp_ends_on_yaw_divergence_with_the_last_steady_value():
    """A spin-in: on a 40 m circle the speed ramps, then the yaw rate climbs while the rear slides out
    (v_y' = limit - v_x r): v_x r grows past the limit but v_y' + v_x r stays at it. The ramp
    ends on the divergence, its limit is the steady a_y before it, and the circle tightened: oversteer."""
    dt, R = 0.01, 40.0
    t = np.arange(0.0, 30.0, dt)
    v = 5.0 + 0.5 * t
    r = v / R
    vy = np.zeros_like(t)
    k0 = int(20.0 / dt)  # v = 15 m/s, a_y = 5.6 m/s^2: from here the car spins in
    limit = v[k0] ** 2 / R
    r[k0:] = v[k0:] / R * (1.0 + 2.0 * (t[k0:] - t[k0]))
    # the rear slides out: v_y' = limit - v_x r (the lateral acceleration stays at the grip limit)
    vy[k0:] = np.cumsum(limit - v[k0:] * r[k0:]) * dt
    mon = RampMonitor(dt, 0.25, cap=14.7)
    k = _feed(mon, v, r, vy, dt)
    assert k is not None and k > k0 and mon.saturated
    assert mon.reason.startswith("yaw divergence")
    assert mon.peak == pytest.approx(limit, rel=0.03)
    assert mon.balance == "oversteer"
    assert max(v[:k] * r[:k]) > mon.peak * 1.2  # v r alone would have read more grip


def test_ramp_on_a_saturating_understeering_car_ends_where_a_y_stops_growing():
    """Steady state all along: a_y = min(v^2 / R, 6) with the circle widening once saturated."""
    dt = 0.01
    t = np.arange(0.0, 60.0, dt)
    v = 5.0 + 0.3 * t
    a_y = np.minimum(v * v / 40.0, 6.0)
    r = a_y / v
    mon = RampMonitor(dt, 0.25, cap=14.7)
    k = _feed(mon, v, r, np.zeros_like(t), dt)
    assert k is not None and mon.saturated and mon.reason == "a_y stopped growing with speed"
    assert mon.peak == pytest.approx(6.0, rel=0.01)
    assert mon.balance == "understeer"


# ---------------------------------------------------------------------- vehicle file fields
def _file(tmp_path, **kw):
    vf = VehicleFile(DynamicParams.bmw_320i(), 0.3, 4.0, 7.0, a_y_max=8.0, **kw)
    return vf, vf.to_yaml(tmp_path / "car.yaml")


def test_power_limit_and_assumptions_round_trip(tmp_path):
    vf, f = _file(tmp_path, power_per_mass=60.0, assumptions=("mu = 1 given, not measured",))
    data = yaml.safe_load(f.read_text())
    assert data["power_per_mass"] == 60.0 and data["assumptions"] == ["mu = 1 given, not measured"]
    back = load_vehicle_file(f)
    assert back.power_per_mass == 60.0 and back.assumptions == vf.assumptions
    assert back.accel_limit(30.0) == pytest.approx(2.0) and back.accel_limit(5.0) == 4.0


def test_a_file_without_the_new_keys_loads_as_not_limited(tmp_path):
    _, f = _file(tmp_path, power_per_mass=60.0)
    data = yaml.safe_load(f.read_text())
    del data["power_per_mass"], data["assumptions"]
    f.write_text(yaml.safe_dump(data))
    back = load_vehicle_file(f)
    assert back.power_per_mass is None and back.assumptions == ()
    assert back.accel_limit(100.0) == 4.0


@pytest.mark.parametrize("key, value, match", [
    ("power_per_mass", -5.0, r"'power_per_mass' must be a number > 0"),
    ("power_per_mass", "lots", r"'power_per_mass'"),
    ("assumptions", "none", r"'assumptions' must be a list of strings"),
])
def test_bad_new_keys_are_named(tmp_path, key, value, match):
    _, f = _file(tmp_path)
    data = yaml.safe_load(f.read_text())
    data[key] = value
    f.write_text(yaml.safe_dump(data))
    with pytest.raises(VehicleFileError, match=match) as info:
        load_vehicle_file(f)
    assert str(f) in str(info.value)


