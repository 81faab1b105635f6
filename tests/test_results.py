"""The body-overshoot metric: how far a body corner left the track, from the logged pose alone."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.results import body_overshoot

R = 30.0


@pytest.fixture(scope="module")
def ring():
    th = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    return mt.ReferencePath(R * np.cos(th), R * np.sin(th), closed=True, ds=0.5, width_left=2.0, width_right=2.0)


@pytest.mark.parametrize("e_y", [0.0, 0.5, 1.5, 3.0, -1.5])
def test_corners_of_a_tangent_car_on_a_circle(ring, e_y):
    """Closed form: the car tangent at (R - e_y, 0) heading +y; its corners' radii from the centre."""
    veh = mt.VehicleParams()
    half = 0.5 * veh.width
    corners = [(R - e_y - side * half, along) for side in (1, -1) for along in (veh.front_extent, -veh.rear_overhang)]
    e_corner = [R - np.hypot(cx, cy) for cx, cy in corners]  # e_y of each corner (left = towards the centre)
    expected = max(0.0, *(e - 2.0 for e in e_corner), *(-2.0 - e for e in e_corner))
    got = body_overshoot(ring, veh, [R - e_y], [0.0], [np.pi / 2], s_hint=[0.0])
    assert got.shape == (1,) and got[0] == pytest.approx(expected, abs=1e-6)


def test_no_widths_means_no_overshoot():
    th = np.linspace(0, 2 * np.pi, 100, endpoint=False)
    path = mt.ReferencePath(R * np.cos(th), R * np.sin(th), closed=True, ds=0.5)
    assert body_overshoot(path, mt.VehicleParams(), [R - 10.0], [0.0], [np.pi / 2])[0] == 0.0


def test_metric_of_a_run(ring):
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(ring, veh, mt.MPCSettings(horizon=15, v_max=8.0))
    res = mt.simulate(ring, mpc, mt.create_model("kinematic_bicycle"), e_y0=0.3)
    assert res.metrics["max_body_overshoot"] == 0.0  # a 1.8 m car in a 4 m corridor, tracked to mm
    res = mt.simulate(ring, mpc, mt.create_model("kinematic_bicycle"), e_y0=1.9, t_max=0.2, corridor_tolerance=5.0)
    # starts with its inner corners ~0.9 m past the left edge (minus the circle's sagitta)
    assert 0.6 < res.metrics["max_body_overshoot"] < 1.0
