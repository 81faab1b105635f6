"""The Controller protocol: what simulate needs, who has it, and runs through it that match the bare MPC's."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.control import (
    Command,
    ControlCommand,
    Controller,
    CvxpyController,
    SpatialMPCController,
    as_controller,
)
from mpc_tracking.mpc.cvxpy_ref import CvxpyMPC


def _line(length: float = 60.0) -> mt.ReferencePath:
    x = np.linspace(0.0, length, int(length / 0.5) + 1)
    return mt.ReferencePath(x, np.zeros_like(x), closed=False, ds=0.5, width_left=3.0, width_right=3.0, name="line")


class StraightAhead:
    """The smallest controller: wheels straight, a constant speed (the protocol's members, nothing else)."""

    def __init__(self, path: mt.ReferencePath, speed: float = 2.0) -> None:
        self.path, self.vehicle, self.speed = path, mt.VehicleParams(), speed
        self.control_period, self.measures, self.horizon, self.speed_range = 0.1, False, 0, (speed, speed)
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def solve(self, state, t=0.0, measured=None):
        return ControlCommand(v=self.speed, delta=0.0, v_ref=self.speed)

    def reference_input(self, s0):
        return np.array([self.speed, 0.0])

    def describe(self):
        return {"controller": "straight", "mode": "constant"}


def test_every_controller_has_the_protocol():
    path = mt.load_path("oval", ds=1.0)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10))
    for c in (mt.PurePursuit(path), mt.Stanley(path), as_controller(mpc), StraightAhead(path),
              as_controller(CvxpyMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10)))):
        assert isinstance(c, Controller), type(c).__name__
    assert isinstance(as_controller(mpc), SpatialMPCController)
    assert not isinstance(mpc, Controller)  # SpatialMPC names them its own way: the adapter reads them


def test_both_answers_have_the_command_members():
    path = mt.load_path("oval", ds=1.0)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10))
    assert isinstance(mpc.solve((0.0, 0.1, 0.0)), Command)
    assert isinstance(mt.PurePursuit(path).solve((0.0, 0.1, 0.0)), Command)


def test_an_object_without_the_members_is_rejected_by_name():
    path = _line()
    with pytest.raises(mt.InputError, match=r"controller: expected a SpatialMPC or an object with the Controller "
                                            r"protocol's members.*got object without path, vehicle"):
        mt.simulate(path, object(), mt.create_model("kinematic_bicycle"))


def test_a_user_controller_closes_the_loop():
    path = _line()
    ctrl = StraightAhead(path)
    r = mt.simulate(path, ctrl, mt.create_model("kinematic_bicycle"), e_y0=0.5)
    assert ctrl.resets == 1 and r.reason == "end_of_path"
    assert np.allclose(r.e_y, 0.5) and np.allclose(r.series["v_ref"], 2.0)
    assert r.info["controller"] == "straight" and r.info["mode"] == "constant"
    assert r.info["control_period"] == 0.1 and r.horizon_xy.shape == (len(r), 0, 2)


def test_the_adapter_runs_the_mpc_bit_for_bit():
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=15, v_max=8.0)
    plant = mt.create_model("kinematic_bicycle")
    bare = mt.simulate(path, mt.SpatialMPC(path, mt.VehicleParams(), st), plant, t_max=3.0, e_y0=0.3)
    wrapped = mt.simulate(path, SpatialMPCController(mt.SpatialMPC(path, mt.VehicleParams(), st)), plant, t_max=3.0,
                          e_y0=0.3)
    for k in ("x", "y", "delta_cmd", "v_cmd", "v_ref", "lb", "ub", "status"):
        np.testing.assert_array_equal(bare.series[k], wrapped.series[k])
    np.testing.assert_array_equal(bare.horizon_xy, wrapped.horizon_xy)
    assert bare.info["controller"] == "mpc" and bare.info["mode"] == "tracking" and bare.info["horizon"] == 15


def test_the_measures_flag_gives_body_velocities():
    seen: list[dict] = []

    class Measuring(StraightAhead):
        def __init__(self, path):
            super().__init__(path)
            self.measures = True

        def solve(self, state, t=0.0, measured=None):
            seen.append(dict(measured))
            return super().solve(state, t, measured)

    path = _line()
    mt.simulate(path, Measuring(path), mt.create_model("kinematic_bicycle"), t_max=0.5)
    assert set(seen[-1]) == {"v_x", "v_y", "r", "speed"}
    assert seen[-1]["v_x"] == pytest.approx(2.0) and seen[-1]["r"] == pytest.approx(0.0, abs=1e-12)


# measured worst |delta_cvxpy - delta_osqp| over the 12 steps: 2.8e-6 rad (OSQP at eps 1e-7; Clarabel); ~7x
TOL_DELTA = 2e-5
# measured worst |v_cvxpy - v_osqp|: 1.1e-4 m/s (the step where the acceleration row becomes active); ~4x,
# the one-step cross-check's TOL_U (tests/test_cvxpy_crosscheck.py)
TOL_V = 5e-4
# measured worst distance between the predicted horizons: 4.2e-4 m; ~5x
TOL_XY = 2e-3


def test_the_cvxpy_reference_closes_the_loop_like_the_mpc():
    """The cvxpy reference, given its own last solution, commands what SpatialMPC commands, step for step."""
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=10, v_max=8.0, a_y_max=3.0, accel_max=2.0, decel_max=4.0, delta_rate_max=0.5,
                        eps_abs=1e-7, eps_rel=1e-7, max_iter=100000)
    plant = mt.create_model("kinematic_bicycle")
    kw = {"t_max": 0.6, "e_y0": 0.4, "e_psi0": 0.05}
    osqp = mt.simulate(path, mt.SpatialMPC(path, mt.VehicleParams(), st), plant, **kw)
    ref = CvxpyController(CvxpyMPC(path, mt.VehicleParams(), st))
    cv = mt.simulate(path, ref, plant, **kw)
    assert len(cv) == len(osqp) == 12 and cv.info["controller"] == "cvxpy"
    assert cv.series["v"][0] == pytest.approx(osqp.series["v"][0], abs=1e-9)  # the same start speed
    assert np.abs(cv.series["delta_cmd"] - osqp.series["delta_cmd"]).max() < TOL_DELTA
    assert np.abs(cv.series["v_cmd"] - osqp.series["v_cmd"]).max() < TOL_V
    assert np.abs(cv.horizon_xy - osqp.horizon_xy).max() < TOL_XY
    assert np.all(np.abs(cv.series["delta_cmd"]) > 1e-3)  # it steers: a real comparison


def test_the_cvxpy_reference_stops_the_run_when_its_solve_fails(monkeypatch):
    path = mt.load_path("oval", ds=1.0)
    ref = CvxpyMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=5))
    monkeypatch.setattr(ref, "solve", lambda *a, **k: {"status": "infeasible", "u": None, "x": None, "data": {}})
    r = mt.simulate(path, CvxpyController(ref), mt.create_model("kinematic_bicycle"), t_max=1.0, v0=2.0)
    assert r.reason == "error" and "infeasible" in r.message
