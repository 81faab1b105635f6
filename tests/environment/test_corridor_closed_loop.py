"""Closed-loop obstacle avoidance: the MPC with an environment corridor keeps the car's body clear."""
from __future__ import annotations

import numpy as np

import mpc_tracking as mt
from mpc_tracking.environment import CircleObstacle, MovingCircle, ObstacleCorridor


def _rect_circle_distance(x, y, yaw, veh, cx, cy):
    """Distance from a circle centre to the car's rectangle (0 inside), per sample."""
    c, s = np.cos(yaw), np.sin(yaw)
    dx, dy = cx - x, cy - y
    lon = c * dx + s * dy  # body frame, origin at the rear axle
    lat = -s * dx + c * dy
    ox = np.maximum(0.0, np.maximum(-veh.rear_overhang - lon, lon - veh.front_extent))
    oy = np.maximum(0.0, np.abs(lat) - veh.width / 2)
    return np.hypot(ox, oy)


def _run(obstacles, **mpc_kw):
    path = mt.load_path("oval", ds=0.5)
    veh = mt.VehicleParams()
    st = mt.MPCSettings(horizon=40, v_max=10.0, accel_max=3.0, decel_max=5.0, delta_rate_max=0.8,
                        corridor_margin=0.2, **mpc_kw)
    mpc = mt.SpatialMPC(path, veh, st, corridor=ObstacleCorridor(path, obstacles))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    return path, veh, mt.simulate(path, mpc, plant, laps=1, t_max=12.0)


def test_static_obstacle_on_the_centre_line_is_passed_with_the_body_clear(backend):
    obstacle = CircleObstacle((15.0, -20.0), 1.0)  # on the bottom straight, on the centre line
    path, veh, res = _run([obstacle], solver=backend)
    assert res.reason in ("completed", "time_limit")
    assert res.s.max() > 60.0  # drove past it
    d = _rect_circle_distance(res.x, res.y, res.yaw, veh, 15.0, -20.0)
    assert d.min() > 1.0  # radius: the body never touches the obstacle
    near = np.abs(res.x - 15.0) < 1.0
    assert np.abs(res.e_y[near]).min() > 1.0 + veh.width / 2 - 0.1  # it swerved, it did not brake behind it
    assert res.metrics["infeasible_steps"] == 0


def test_moving_obstacle_is_evaluated_at_the_predicted_time(backend):
    # crosses the straight ahead of the car from the right to the left edge
    mover = MovingCircle((25.0, -24.0), 0.8, velocity=(0.0, 1.0), t0=0.0)
    path, veh, res = _run([mover], solver=backend)
    cx = 25.0 + 0.0 * res.t
    cy = -24.0 + 1.0 * res.t
    d = _rect_circle_distance(res.x, res.y, res.yaw, veh, cx, cy)
    assert d.min() > 0.8
