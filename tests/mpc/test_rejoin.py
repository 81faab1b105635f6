"""A controller that rejoins instead of aborting, and defensive solving (fault injection).

- Outside the spatial model's domain (facing away from the path, or beyond its centre of
  curvature) the car is steered back by pure pursuit and the MPC takes over again.
- A "solved" status with garbage values, or an exception inside the solver, becomes the
  fallback path; the safe stop brakes at ``brake_decel`` from the measured speed from the
  very first step on, on its own ramp, whatever the plant's lag, and steers along the path within
  the grip the braking leaves.

Tests that take the ``backend`` fixture run on every registered QP back end; the ones in the
"OSQP only" section reach into the OSQP object (its statuses, Ctrl-C handling, time limit).
"""
from __future__ import annotations

import logging
import signal
from types import SimpleNamespace

import numpy as np
import osqp
import pytest

import mpc_tracking as mt
from mpc_tracking.mpc.backends import FaultInjection
from mpc_tracking.mpc.rejoin import back_in_domain, outside_domain, pure_pursuit
from mpc_tracking.mpc.safeguards import STOP_LATERAL_SHARE, safe_stop_speed, stop_accelerations, stop_steering


def _oval(widths: bool = True):
    path = mt.load_path("oval", ds=0.5)
    if widths:
        return path
    # the same centre line in an open field: room for a full-size car's U-turn (radius 4.9 m)
    return mt.ReferencePath.from_waypoints(path.s, path.x, path.y, path.psi, path.kappa, closed=True,
                                           length=path.length, name="oval, no widths")


def _run(path, settings=None, **kw):
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), settings or mt.MPCSettings(horizon=20, v_max=10.0))
    return mpc, mt.simulate(path, mpc, mt.create_model("kinematic_bicycle"), **kw)


# ------------------------------------------------------------------ rejoin
@pytest.mark.parametrize("e_y0, e_psi0", [(2.0, 2.6), (-3.0, -2.0), (0.0, np.pi - 0.1), (3.0, -1.45)])
def test_a_car_facing_away_is_brought_back_and_completes_the_lap(e_y0, e_psi0, backend):
    path = _oval(widths=False)
    mpc, res = _run(path, mt.MPCSettings(horizon=20, v_max=10.0, solver=backend), e_y0=e_y0, e_psi0=e_psi0,
                    t_max=60.0)
    m = res.metrics
    assert m["reason"] == "completed", res.summary()
    assert m["rejoin_steps"] > 0 and m["infeasible_steps"] == 0
    codes = res.series["status"]
    first_mpc = int(np.argmax(codes == mt.Status.SOLVED.code))
    assert np.all(codes[:first_mpc] == mt.Status.REJOIN.code)  # rejoin first, then the MPC ...
    assert np.all(codes[first_mpc:] != mt.Status.REJOIN.code)  # ... for good
    assert abs(res.e_psi[first_mpc]) < 0.6  # the hand-over happens well inside the domain
    assert np.sqrt(np.mean(res.e_y[first_mpc + 100:] ** 2)) < 0.05  # and the MPC tracks afterwards


def test_without_rejoin_the_same_start_aborts():
    path = _oval()
    _mpc, res = _run(path, mt.MPCSettings(horizon=20, v_max=10.0, rejoin=False), e_y0=2.0, e_psi0=2.6)
    assert res.reason == "error" and "faces away" in res.message


def test_far_offset_rc_car_heading_toward_the_line_rejoins():
    """The fuzz case: an RC car 10 turning radii off an unbounded line, heading across it."""
    x = np.linspace(0.0, 60.0, 121)
    path = mt.ReferencePath(x, np.zeros_like(x), ds=0.05, name="line")  # no widths: unbounded corridor
    vehicle = mt.VehicleParams.rc_car()
    st = mt.MPCSettings(horizon=30, v_max=2.0, delta_max=0.4, a_y_max=3.0)
    r_min = vehicle.wheelbase / np.tan(st.delta_max)
    mpc = mt.SpatialMPC(path, vehicle, st)
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
    res = mt.simulate(path, mpc, plant, e_y0=10 * r_min, e_psi0=-1.5)
    assert res.reason == "end_of_path", res.summary()
    assert res.metrics["rejoin_steps"] > 0 and abs(res.e_y[-1]) < 0.02


def test_domain_hysteresis_and_pure_pursuit_geometry():
    assert outside_domain(0.0, 1.25, 0.0) and not outside_domain(0.0, 1.1, 0.0)
    assert outside_domain(9.5, 0.0, 0.1) and not outside_domain(-9.5, 0.0, 0.1)  # outside of the bend is fine
    assert not back_in_domain(0.0, 0.8, 0.0) and back_in_domain(0.0, 0.5, 0.0)
    assert not back_in_domain(12.0, 0.1, 0.0, e_y_max=10.0) and back_in_domain(8.0, 0.1, 0.0, e_y_max=10.0)
    path, vehicle, st = _oval(), mt.VehicleParams(), mt.MPCSettings()
    # on the line and aligned: the look-ahead point is straight ahead -> no steering
    v, d = pure_pursuit(path, vehicle, st, s0=5.0, e_y=0.0, e_psi=0.0)
    assert abs(d) < 1e-4 and v == pytest.approx(np.sqrt(st.a_y_max * vehicle.wheelbase / np.tan(st.delta_max)))
    # left of the line facing along it: steer right (toward it); the rate limit holds it near the last command
    _, d = pure_pursuit(path, vehicle, st, s0=5.0, e_y=3.0, e_psi=0.0)
    assert -st.delta_max <= d < 0
    st2 = mt.MPCSettings(delta_rate_max=0.4, control_period=0.05)
    _, d = pure_pursuit(path, vehicle, st2, s0=5.0, e_y=3.0, e_psi=0.0, delta_prev=0.1)
    assert d == pytest.approx(0.1 - 0.02)


# ------------------------------------------------------------------ safe stop (every back end)
def _stop_run(plant, backend, fail_from=60, brake_decel=3.0, v_max=12.0):
    """A closed loop whose every solve fails from call ``fail_from`` on (no fallback steps): the stop."""
    path = _oval()
    st = mt.MPCSettings(horizon=20, v_max=v_max, max_fallback_steps=0, brake_decel=brake_decel, solver=backend)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    mpc.backend = FaultInjection(mpc.backend, fail=lambda k: k >= fail_from)
    res = mt.simulate(path, mpc, plant, t_max=fail_from * st.control_period + 30.0)
    i0 = int(np.argmax(res.series["status"] == mt.Status.SAFE_STOP.code))
    assert i0 == fail_from and np.all(res.series["status"][i0:] == mt.Status.SAFE_STOP.code)
    return res, i0, st


@pytest.mark.parametrize("plant_name, params", [
    ("kinematic_bicycle", {"speed_time_constant": 1.0}),  # a speed that lags its command by 1 s
    ("ackermann3d", {"preset": "sedan"}),  # the 3D car: drive-train lag and tyres
])
def test_the_safe_stop_brakes_at_brake_decel_whatever_the_plant_lag(plant_name, params, backend):
    """The command ramps down at brake_decel from the first safe-stop step on, never rising, never
    above v_max, and the lagging car's deceleration builds up to brake_decel. (A command recomputed
    from the measured speed, v_measured - brake_decel dt, followed the lagging car: it braked at
    brake_decel dt / tau = 0.15 m/s^2 on the bicycle and 0.8 m/s^2 on the 3D car, and could rise.)"""
    res, i0, st = _stop_run(mt.create_model(plant_name, params), backend)
    cmd, v, t = res.v_cmd[i0:], res.v[i0:], res.t[i0:]
    step = st.brake_decel * st.control_period
    assert cmd[0] <= min(v[0], res.v_cmd[i0 - 1], st.v_max) - step + 1e-9  # from below the car and the command
    assert np.all(np.diff(cmd) <= 1e-12)  # monotone non-increasing
    moving = cmd[1:] > 0
    np.testing.assert_allclose(np.diff(cmd)[moving], -step, rtol=1e-9)  # exactly brake_decel while it ramps
    # the car's deceleration over the last 0.5 s of the ramp: the lag has built up to brake_decel
    ramp_end = t[1:][moving][-1]
    late = (t >= ramp_end - 0.5) & (t <= ramp_end)
    realized = -np.polyfit(t[late], v[late], 1)[0]
    assert realized == pytest.approx(st.brake_decel, rel=0.1), realized
    assert res.reason == "safe_stop", res.summary()


def test_safe_stop_ramp_starts_below_the_car_and_the_command_and_never_rises():
    dec, dt = 3.0, 0.05
    assert safe_stop_speed(None, 9.0, 10.0, 12.0, dec, dt) == pytest.approx(9.0 - 0.15)  # the car is slower
    assert safe_stop_speed(None, 12.3, 11.0, 12.0, dec, dt) == pytest.approx(11.0 - 0.15)  # the command is lower
    assert safe_stop_speed(None, 13.0, None, 12.0, dec, dt) == pytest.approx(12.0 - 0.15)  # never above v_max
    assert safe_stop_speed(None, None, None, 12.0, dec, dt) == 0.0
    assert safe_stop_speed(5.0, 11.0, 11.0, 12.0, dec, dt) == pytest.approx(4.85)  # on the ramp: measurements unused
    assert safe_stop_speed(0.1, 3.0, 3.0, 12.0, dec, dt) == 0.0


def test_safe_stop_on_the_first_step_brakes_from_the_measured_speed(backend):
    path = _oval()
    st = mt.MPCSettings(horizon=20, v_max=10.0, max_fallback_steps=0, brake_decel=3.0, solver=backend)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    mpc.backend = FaultInjection(mpc.backend, fail=lambda k: True)
    res = mt.simulate(path, mpc, mt.create_model("kinematic_bicycle"), v0=8.0, t_max=10.0)
    assert res.series["status"][0] == mt.Status.SAFE_STOP.code
    assert res.v_cmd[0] == pytest.approx(8.0 - 3.0 * 0.05)  # not 0 at once
    stop_time = res.t[-1] - res.t[0]
    assert stop_time == pytest.approx(8.0 / 3.0, abs=0.2)  # braked at brake_decel to a stop
    assert res.reason == "safe_stop"


def _circle(R=20.0):
    th = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    return mt.ReferencePath(R * np.cos(th), R * np.sin(th), closed=True, ds=0.5, width_left=3.0, width_right=3.0)


@pytest.mark.parametrize("speed", [3.0, 8.0, 15.0])
def test_the_stop_steering_follows_a_circle_with_its_own_curvature(speed):
    """On a circle, on the line and along it, the pursuit arc is the circle: delta = atan(L / R) at any
    look-ahead (the path's chords: to 1e-4) while the grip allows it."""
    R, L = 20.0, 2.7
    d = stop_steering(_circle(R), L, mt.MPCSettings(), s0=3.0, e_y=0.0, e_psi=0.0, speed=speed, lateral=100.0,
                      delta_prev=None)
    assert d == pytest.approx(np.arctan(L / R), rel=1e-4)


def test_the_stop_steering_asks_no_more_than_the_lateral_grip_left():
    """At 15 m/s on a 20 m circle (11.25 m/s^2 needed) with 4 m/s^2 left: the curvature 4 / 15^2 exactly."""
    d = stop_steering(_circle(20.0), 2.7, mt.MPCSettings(), s0=3.0, e_y=0.0, e_psi=0.0, speed=15.0, lateral=4.0,
                      delta_prev=None)
    assert d == pytest.approx(np.arctan(2.7 * 4.0 / 15.0**2), rel=1e-12)
    # and a lagging car is capped at its own speed, not the ramp's (the controller passes the larger)
    slow = stop_steering(_circle(20.0), 2.7, mt.MPCSettings(), s0=3.0, e_y=0.0, e_psi=0.0, speed=12.0, lateral=4.0,
                         delta_prev=None)
    assert slow == pytest.approx(np.arctan(2.7 * 4.0 / 12.0**2), rel=1e-12)


def test_the_stop_steering_turns_towards_the_line_within_the_steering_limits():
    x = np.linspace(0.0, 100.0, 201)
    path = mt.ReferencePath(x, 0.0 * x, ds=0.5, width_left=3.0, width_right=3.0)  # a straight
    st = mt.MPCSettings()
    kw = {"s0": 10.0, "e_psi": 0.0, "speed": 6.0, "lateral": 4.0, "delta_prev": None}
    left = stop_steering(path, 2.7, st, e_y=1.0, **kw)
    right = stop_steering(path, 2.7, st, e_y=-1.0, **kw)
    assert left < 0.0 < right and left == pytest.approx(-right, abs=1e-12)
    # a point behind the car: full lock towards it (the curvature cap of a standing car does not bind)
    kw.update(speed=0.0, e_psi=np.pi - 0.3)
    assert stop_steering(path, 2.7, st, e_y=0.0, **kw) == pytest.approx(-st.delta_max)
    rate = mt.MPCSettings(delta_rate_max=0.4, control_period=0.05)
    kw.update(speed=6.0, e_psi=0.0)
    assert stop_steering(path, 2.7, rate, e_y=1.0, **{**kw, "delta_prev": 0.2}) == pytest.approx(0.2 - 0.02)


def test_the_stop_steering_near_an_open_path_end_aims_past_it():
    """At the end of an open straight, 0.3 m off it: a gentle turn towards the line continued, not full lock
    towards the end point (the look-ahead point clamped at the end was beside the car)."""
    x = np.linspace(0.0, 50.0, 101)
    path = mt.ReferencePath(x, 0.0 * x, ds=0.5)
    st = mt.MPCSettings()
    for s0 in (path.length - 0.2, path.length):
        d = stop_steering(path, 2.7, st, s0=s0, e_y=0.3, e_psi=0.0, speed=3.0, lateral=4.0, delta_prev=None)
        assert -0.1 < d < 0.0, (s0, d)


def test_the_stop_brakes_and_steers_within_the_friction_ellipse():
    assert stop_accelerations(mt.MPCSettings(brake_decel=3.0, a_y_max=5.0)) == (3.0, 5.0)  # no ellipse: each alone
    assert stop_accelerations(mt.MPCSettings(brake_decel=3.0, a_y_max=5.0, decel_max=2.0)) == (2.0, 5.0)
    st = mt.MPCSettings(brake_decel=3.0, a_y_max=6.0, decel_max=5.0, friction_ellipse=True)
    brake, lateral = stop_accelerations(st)
    assert brake == 3.0 and (brake / 5.0) ** 2 + (lateral / 6.0) ** 2 == pytest.approx(1.0)
    # braking asked at the whole braking limit: lowered so that the steering keeps its share
    st = mt.MPCSettings(brake_decel=8.0, a_y_max=6.0, decel_max=5.0, friction_ellipse=True)
    brake, lateral = stop_accelerations(st)
    assert lateral == pytest.approx(STOP_LATERAL_SHARE * 6.0)
    assert (brake / 5.0) ** 2 + (lateral / 6.0) ** 2 == pytest.approx(1.0)


@pytest.mark.parametrize("plant_name, params, e_y_max", [
    ("kinematic_bicycle", {}, 1.0),
    ("ackermann3d", {"preset": "sedan"}, 3.5),  # 12 m/s into the 20 m corner: 4 m/s^2 lets it run wide
])
def test_a_safe_stop_at_a_corner_entry_follows_the_corner(plant_name, params, e_y_max):
    """Every solve fails from the step before the oval's first corner on: the stop steers round it and
    stops on the track. (Holding the wheel where the failure found it, the car went straight on: off the
    corridor at 5.7 m on both plants.)"""
    path = _oval()
    st = mt.MPCSettings(horizon=20, v_max=12.0, max_fallback_steps=0, brake_decel=3.0)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    mpc.backend = FaultInjection(mpc.backend, fail=lambda k: k >= 100)
    res = mt.simulate(path, mpc, mt.create_model(plant_name, params), t_max=100 * st.control_period + 30.0)
    i0 = int(np.argmax(res.series["status"] == mt.Status.SAFE_STOP.code))
    assert i0 == 100 and res.reason == "safe_stop", res.summary()
    kappa = path.interpolate(np.asarray(res.s[i0:]))["kappa"]
    assert np.any(np.abs(kappa) > 0.04)  # the stop was in the corner
    assert np.abs(res.e_y[i0:]).max() < e_y_max
    assert np.abs(res.delta_cmd[i0:]).max() > 0.05  # it steered


# ------------------------------------------------------------------ defensive solving (OSQP only)
# These reach into the OSQP object (mpc.solver is osqp.OSQP): its statuses, exceptions, Ctrl-C
# handling and time limit. The DAQP counterparts are in tests/test_condensed.py.
def _fake_result(x, status=osqp.SolverStatus.OSQP_SOLVED):
    info = SimpleNamespace(status_val=status, status="solved", iter=25, run_time=1e-4)
    return SimpleNamespace(x=x, info=info)


def test_garbage_solved_solution_is_not_applied():
    path = _oval()
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=10.0))
    state = (5.0, 0.2, 0.0)
    good = mpc.solve(state)
    assert good.status == mt.Status.SOLVED
    n = mpc.layout.n
    mpc.solver.solve = lambda raise_error=False: _fake_result(np.full(n, 1e6))
    bad = mpc.solve(state)
    assert bad.status == mt.Status.FALLBACK and "violates" in bad.solver_status
    assert abs(bad.v) <= 10.0 and abs(bad.delta) <= 0.5  # the previous plan, not 1e6


def test_solver_exception_becomes_the_fallback_and_then_a_safe_stop():
    path = _oval()
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=10.0, max_fallback_steps=3))
    plant = mt.create_model("kinematic_bicycle")
    calls = {"n": 0}
    real = mpc.solver.solve

    def flaky(raise_error=False):
        calls["n"] += 1
        if calls["n"] > 20:
            raise RuntimeError("injected solver fault")
        return real(raise_error=raise_error)

    mpc.solver.solve = flaky
    mpc.reset()
    res = mt.simulate(path, mpc, plant, t_max=20.0, e_y0=0.0)
    codes = res.series["status"]
    assert np.all(codes[:20] == 0)
    assert np.all(codes[20:23] == mt.Status.FALLBACK.code)
    assert np.all(codes[23:] == mt.Status.SAFE_STOP.code)
    assert res.reason == "safe_stop"  # the run ended cleanly, the exception did not escape


def test_max_solve_time_hit_takes_the_fallback_path():
    path = _oval()
    st = mt.MPCSettings(horizon=50, v_max=10.0, max_solve_time=1e-7)  # far below any real solve
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    assert mpc.solver.settings.time_limit == pytest.approx(1e-7)
    sol = mpc.solve((5.0, 0.5, 0.0))
    assert sol.status == mt.Status.SAFE_STOP and "time limit" in sol.solver_status.lower()
    relaxed = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=50, v_max=10.0, max_solve_time=1.0))
    assert relaxed.solve((5.0, 0.5, 0.0)).status == mt.Status.SOLVED
    with pytest.raises(mt.SettingsError, match="max_solve_time"):
        mt.MPCSettings(max_solve_time=0.0)


def test_ctrl_c_caught_inside_osqp_reaches_the_caller():
    """OSQP handles SIGINT during a solve and returns status 'interrupted': the controller raises
    KeyboardInterrupt again (a flaky CI run took it for a failed solve and finished 50 laps)."""
    path = _oval()
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=10.0))
    mpc.solver.solve = lambda raise_error=False: _fake_result(None, osqp.SolverStatus.OSQP_SIGINT)
    with pytest.raises(KeyboardInterrupt):
        mpc.solve((5.0, 0.2, 0.0))


def test_ignored_ctrl_c_caught_inside_osqp_solves_again(monkeypatch, caplog):
    """A sweep worker ignores Ctrl-C, yet OSQP stops a solve on the group's Ctrl-C meant for the parent
    (a CI run logged 'OSQP status interrupted' from a worker): the controller solves again, quietly."""
    path = _oval()
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=10.0))
    real_solve = mpc.solver.solve
    calls = []

    def interrupted_once(raise_error=False):
        calls.append(1)
        return _fake_result(None, osqp.SolverStatus.OSQP_SIGINT) if len(calls) == 1 else real_solve(raise_error)

    mpc.solver.solve = interrupted_once
    monkeypatch.setattr(signal, "getsignal", lambda sig: signal.SIG_IGN)
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        sol = mpc.solve((5.0, 0.2, 0.0))
    assert len(calls) == 2 and sol.status == mt.Status.SOLVED
    assert not caplog.records
    # a Ctrl-C that keeps coming is still not taken for a solution: the fallback path takes over
    mpc.solver.solve = lambda raise_error=False: _fake_result(None, osqp.SolverStatus.OSQP_SIGINT)
    assert mpc.solve((5.0, 0.2, 0.0)).status != mt.Status.SOLVED
