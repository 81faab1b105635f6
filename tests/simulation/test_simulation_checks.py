"""simulate() rejects inconsistent or impossible set-ups with a message naming the argument, the value
and what is allowed, instead of running something silently wrong."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import mpc_tracking as mt


def _circle(radius: float = 20.0, width: float = 4.0, name: str = "ring") -> mt.ReferencePath:
    th = np.linspace(0, 2 * np.pi, 120, endpoint=False)
    return mt.ReferencePath(radius * np.cos(th), radius * np.sin(th), closed=True, ds=0.5,
                            width_left=width, width_right=width, name=name)


def _line(length: float = 30.0) -> mt.ReferencePath:
    x = np.linspace(0.0, length, 31)
    return mt.ReferencePath(x, np.zeros_like(x), closed=False, ds=0.5, width_left=3.0, width_right=3.0,
                            name="line")


def _mpc(path, **settings):
    return mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10, v_max=6.0, **settings))


def _run(path, mpc=None, **kw):
    kw.setdefault("t_max", 0.2)
    return mt.simulate(path, mpc or _mpc(path), mt.create_model("kinematic_bicycle"), **kw)


@pytest.fixture(scope="module")
def ring():
    return _circle()


@pytest.fixture(scope="module")
def ring_mpc(ring):
    return _mpc(ring)


def test_controller_built_for_another_path_is_rejected(ring):
    other = _circle(radius=25.0, name="other")
    with pytest.raises(mt.InputError, match=r"controller: built for path 'other'.*simulate got path 'ring'"):
        _run(ring, _mpc(other))


def test_controller_on_an_equal_copy_of_the_path_is_accepted(ring, ring_mpc):
    copy = pickle.loads(pickle.dumps(ring))  # e.g. path and controller sent separately to a worker
    assert copy is not ring
    res = _run(copy, ring_mpc)
    assert len(res) > 0


def test_control_period_different_from_the_controllers_is_rejected(ring, ring_mpc):
    with pytest.raises(mt.SettingsError, match=r"control_period: .*0\.1.*0\.05.*MPCSettings\(control_period=0\.1\)"):
        _run(ring, ring_mpc, control_period=0.1)


def test_control_period_equal_to_the_controllers_is_accepted(ring):
    res = _run(ring, _mpc(ring, control_period=0.1), control_period=0.1)
    assert res.info["control_period"] == 0.1 and len(res) == 2


@pytest.mark.parametrize("bad", [-1.0, -1e-3, float("nan"), "abc"])
def test_negative_corridor_tolerance_is_rejected(ring, ring_mpc, bad):
    with pytest.raises(mt.InputError, match=r"corridor_tolerance: expected a distance >= 0"):
        _run(ring, ring_mpc, corridor_tolerance=bad)


def test_zero_corridor_tolerance_is_accepted(ring, ring_mpc):
    assert len(_run(ring, ring_mpc, corridor_tolerance=0.0)) > 0


@pytest.mark.parametrize("s0", [30.0, 29.9, 100.0, -1.0])
def test_s0_outside_an_open_path_is_rejected(s0):
    path = _line()
    with pytest.raises(mt.InputError, match=rf"s0: {s0!r} m is outside the open path 'line' of length 30\.000 m"):
        _run(path, s0=s0)


def test_s0_inside_an_open_path_and_anywhere_on_a_closed_one_is_accepted(ring, ring_mpc):
    assert len(_run(_line(), s0=10.0)) > 0
    assert len(_run(ring, ring_mpc, s0=3 * ring.length + 1.0)) > 0


@pytest.mark.parametrize("e_y0", [5.0, -4.5])
def test_start_outside_the_corridor_is_rejected(ring, ring_mpc, e_y0):
    with pytest.raises(mt.InputError, match=rf"e_y0: {e_y0!r} m starts outside the corridor at s0 = 0 m, "
                                            r"which allows -4 <= e_y0 <= 4 m.*allow_outside_start=True"):
        _run(ring, ring_mpc, e_y0=e_y0)


def test_start_outside_the_corridor_runs_with_the_flag(ring, ring_mpc):
    res = _run(ring, ring_mpc, e_y0=5.0, allow_outside_start=True)
    assert len(res) > 0 and res.e_y[0] == pytest.approx(5.0, abs=1e-6)


def test_start_on_the_corridor_edge_is_accepted(ring, ring_mpc):
    assert len(_run(ring, ring_mpc, e_y0=4.0)) > 0


def test_start_without_widths_is_unbounded():
    th = np.linspace(0, 2 * np.pi, 120, endpoint=False)
    path = mt.ReferencePath(20 * np.cos(th), 20 * np.sin(th), closed=True, ds=0.5)
    assert len(_run(path, e_y0=5.0, corridor_tolerance=1.0)) > 0


@pytest.mark.parametrize("name, kw", [("e_y0", {"e_y0": float("nan")}), ("e_psi0", {"e_psi0": float("inf")}),
                                      ("v0", {"v0": float("nan")}), ("s0", {"s0": float("nan")})])
def test_non_finite_start_names_the_argument(ring, ring_mpc, name, kw):
    with pytest.raises(mt.InputError, match=rf"{name}: expected a finite number"):
        _run(ring, ring_mpc, **kw)


def test_commands_held_over_several_planned_steps_warn(caplog):
    """At 40 m/s a 50 ms period covers 2 m: with ds = 1 m every command spans two planned inputs."""
    import logging

    path = _circle(radius=200.0, width=6.0)
    plant = mt.create_model("kinematic_bicycle")
    caplog.set_level(logging.WARNING, logger="mpc_tracking.simulation")
    fast = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10, v_max=40.0, ds=1.0, control_period=0.05))
    mt.simulation.check_simulation(path, fast, plant)
    msgs = [r.getMessage() for r in caplog.records if "covers" in r.getMessage()]
    assert len(msgs) == 1 and "covers 2 m = 2.0 MPC steps of ds = 1 m" in msgs[0] and "ds >= v_max" in msgs[0]
    caplog.clear()
    ok = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10, v_max=40.0, ds=2.0, control_period=0.05))
    mt.simulation.check_simulation(path, ok, plant)
    assert not [r for r in caplog.records if "covers" in r.getMessage()]


# ---------------------------------------------------------------------- any controller (issue 19)
def test_a_baseline_built_for_another_path_is_rejected_naming_its_class(ring):
    other = _circle(radius=25.0, name="other")
    with pytest.raises(mt.InputError, match=r"controller: built for path 'other'.*build it with PurePursuit\(path"):
        _run(ring, mt.PurePursuit(other))


def test_a_baseline_with_another_control_period_is_rejected(ring):
    with pytest.raises(mt.SettingsError, match=r"control_period: .*0\.1.*0\.05.*TrackingLimits\(control_period=0\.1\)"):
        _run(ring, mt.Stanley(ring), control_period=0.1)


def test_a_baselines_period_and_speed_range_set_the_run(ring):
    lim = mt.TrackingLimits(control_period=0.1, v_min=1.0, v_max=5.0)
    res = _run(ring, mt.Stanley(ring, limits=lim), t_max=None, laps=1, s0=0.0)
    assert res.info["control_period"] == 0.1
    assert res.reason == "completed"  # t_max default from speed_range: 3 x length / max(v_min, 0.2 v_max) + 10 s


def test_the_checks_live_in_their_own_module(ring, ring_mpc):
    from mpc_tracking import simulation_checks as checks

    ctrl, s0, timing, tol = checks.check_setup(ring, ring_mpc, mt.create_model("kinematic_bicycle"), None, None, 2,
                                               None, ring.length + 1.0, 0.0, 0.0, None, True, None, False)
    assert isinstance(ctrl, mt.Controller) and s0 == pytest.approx(ring.length + 1.0)
    assert (timing.T, timing.dt, timing.n_sub) == (0.05, 0.01, 5)
    assert timing.t_max == pytest.approx(3.0 * 2 * ring.length / max(0.5, 0.2 * 6.0) + 10.0)
    assert tol == mt.VehicleParams().width
