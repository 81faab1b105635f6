"""The closed loop's log is what the loop saw: the plant's pose, its projection, the time, the laps;
and on a circle the kinematic plant settles on the analytic steering angle atan(L / R)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mpc_tracking as mt

RADIUS = 20.0
T = 0.05


def _circle() -> mt.ReferencePath:
    th = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    return mt.ReferencePath(RADIUS * np.cos(th), RADIUS * np.sin(th), closed=True, ds=0.5, width_left=3.0,
                            width_right=3.0)


def _run(plant_name: str, params: dict, veh: mt.VehicleParams, **kw):
    """A closed loop on the circle; returns the result and, per control step, the plant as the next
    step observes it (time, reference point, yaw, speed)."""
    path = _circle()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=20, v_max=8.0, control_period=T))
    plant = mt.create_model(plant_name, params)
    seen = []

    def on_step(k: int, t: float) -> None:
        pose = plant.pose
        b = plant.reference_offset
        seen.append((t, pose.x - b * math.cos(pose.yaw), pose.y - b * math.sin(pose.yaw), pose.yaw, plant.speed))

    res = mt.simulate(path, mpc, plant, on_step=on_step, **kw)
    return path, res, np.array(seen)


@pytest.mark.parametrize("plant_name, params, veh", [
    ("kinematic_bicycle", {}, mt.VehicleParams()),
    ("ackermann3d", {"preset": "sedan"}, mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)),
])
def test_log_rows_are_the_observed_plant_and_its_projection(plant_name, params, veh):
    path, res, seen = _run(plant_name, params, veh, t_max=6.0, e_y0=0.5)
    assert res.reason == "time_limit"
    n = len(res)
    # row k is logged at the start of step k: the plant as on_step saw it after step k - 1; the
    # observation after the last step ends the run (time limit) and is not logged
    assert len(seen) == n
    np.testing.assert_array_equal(res.t[1:], seen[:-1, 0])
    np.testing.assert_array_equal(res.x[1:], seen[:-1, 1])
    np.testing.assert_array_equal(res.y[1:], seen[:-1, 2])
    np.testing.assert_array_equal(res.series["yaw"][1:], seen[:-1, 3])
    np.testing.assert_array_equal(res.v[1:], seen[:-1, 4])
    assert seen[-1, 0] >= 6.0
    # time advances by the control period (in sim_dt substeps: round-off only)
    np.testing.assert_allclose(res.t, T * np.arange(n), rtol=0, atol=1e-9)
    # the logged errors are the projection of the logged pose, with the previous s as the hint (s0 first)
    hint = 0.0
    for k in range(n):
        proj = path.project(float(res.x[k]), float(res.y[k]), float(res.series["yaw"][k]), s_hint=hint)
        assert (res.s[k], res.e_y[k], res.e_psi[k]) == (proj.s, proj.e_y, proj.e_psi)
        hint = proj.s
    # ... which is the global one up to the local-arc model between waypoints
    L = path.length
    proj = path.project(res.x, res.y, res.series["yaw"])
    np.testing.assert_allclose((res.s - proj.s + 0.5 * L) % L - 0.5 * L, 0.0, rtol=0, atol=1e-3)  # s = 0 = L
    np.testing.assert_allclose(res.e_y, proj.e_y, rtol=0, atol=1e-3)
    # the start: the reference point 0.5 m left of the path at s = 0
    assert min(res.s[0], L - res.s[0]) < 1e-9 and res.e_y[0] == pytest.approx(0.5, abs=1e-9)
    # the corridor bounds at the car are the path's widths reduced by the controller (never wider)
    assert np.all(res.series["ub"] <= 3.0 + 1e-12) and np.all(res.series["lb"] >= -3.0 - 1e-12)


def test_kinematic_circle_steady_state_and_lap_time():
    """On a circle the kinematic bicycle's steady steering is atan(L / R); the lap time is the time its
    unwrapped arc length crosses one circumference (interpolated between control steps)."""
    veh = mt.VehicleParams()
    path, res, seen = _run("kinematic_bicycle", {"wheelbase": veh.wheelbase}, veh, laps=1, e_y0=0.0)
    assert res.reason == "completed" and res.laps_completed == 1
    late = res.t > 5.0
    # measured: 1e-5 relative off atan(L / R), |e_y| <= 4.4e-6 m
    np.testing.assert_allclose(res.delta_cmd[late], math.atan(veh.wheelbase / RADIUS), rtol=1e-4)
    assert np.abs(res.e_y[late]).max() < 1e-4
    # lap time: the observation that completes the lap ends the run (and is not logged); the crossing
    # is interpolated linearly in the progress along the path between it and the observation before
    L = path.length
    s_obs = np.append(res.s, path.project(seen[-1, 1], seen[-1, 2], seen[-1, 3]).s)
    t_obs = np.append(res.t, seen[-1, 0])
    steps = (np.diff(s_obs, prepend=0.0) + 0.5 * L) % L - 0.5 * L  # from s0 = 0, wrapped to [-L/2, L/2)
    progress = np.cumsum(steps)
    k = int(np.argmax(progress >= L))
    assert k == len(s_obs) - 1 and progress[k - 1] < L
    frac = (L - progress[k - 1]) / steps[k]
    assert res.lap_times[0] == pytest.approx(t_obs[k - 1] + frac * T, abs=1e-9)
    # and it is the circumference over the (steady) speed: measured 4e-7 relative off
    assert res.lap_times[0] == pytest.approx(L / np.mean(res.v), rel=1e-5)
