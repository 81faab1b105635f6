"""Run outcomes are an enum with a message, decided by exception type (never by searching text)."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.models.plants.kinematic_bicycle import KinematicBicycle
from mpc_tracking.results import SERIES


def _circle(radius: float = 20.0) -> mt.ReferencePath:
    th = np.linspace(0, 2 * np.pi, 120, endpoint=False)
    return mt.ReferencePath(radius * np.cos(th), radius * np.sin(th), closed=True, ds=0.5,
                            width_left=3.0, width_right=3.0)


class _Exploding(KinematicBicycle):
    """A kinematic bicycle whose dynamics become NaN after 1 s (a diverging plant)."""

    name = "exploding"

    def xdot(self, x, u):
        out = super().xdot(x, u)
        return out * np.nan if self.t > 1.0 else out


def _mpc(path):
    return mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=15, v_max=8.0))


def test_non_finite_plant_state_is_its_own_outcome_with_partial_log():
    path = _circle()
    res = mt.simulate(path, _mpc(path), _Exploding())
    assert res.reason is mt.Outcome.NON_FINITE_STATE and not res.success
    assert "non-finite" in res.message
    assert 1.0 <= res.t[-1] <= 1.1 and set(res.series) == set(SERIES)
    assert res.metrics["reason"] == "non_finite_state"


def test_completed_outcome_compares_as_string_and_survives_save_load(tmp_path):
    path = _circle()
    res = mt.simulate(path, _mpc(path), mt.create_model("kinematic_bicycle"))
    assert res.reason == "completed" and res.reason is mt.Outcome.COMPLETED and res.message == ""
    assert f"{res.reason}" == "completed"
    back = mt.SimulationResult.load(res.save(tmp_path / "r.npz"))
    assert back.reason is mt.Outcome.COMPLETED
    assert set(back.series) == set(SERIES)


def test_old_error_reason_text_becomes_outcome_and_message():
    res = mt.SimulationResult(series={k: np.zeros(0) for k in SERIES}, horizon_xy=np.zeros((0, 2, 2)),
                              reason="error: solver exploded")
    assert res.reason is mt.Outcome.ERROR and res.message == "solver exploded"
    with pytest.raises(mt.InputError, match="reason: expected one of"):
        mt.SimulationResult(series={}, horizon_xy=np.zeros((0, 2, 2)), reason="finished-ish")


def test_left_corridor_message_names_where():
    path = _circle()
    res = mt.simulate(path, _mpc(path), mt.create_model("kinematic_bicycle"), e_y0=2.9, corridor_tolerance=0.0,
                      e_psi0=0.6)
    assert res.reason is mt.Outcome.LEFT_CORRIDOR
    assert "e_y = " in res.message and "s = " in res.message


def test_corridor_tolerance_lets_a_car_rejoin_from_just_outside():
    path = _circle()  # widths 3 m; the car starts 0.5 m beyond the left edge
    res = mt.simulate(path, _mpc(path), mt.create_model("kinematic_bicycle"), e_y0=3.5, t_max=3.0,
                      allow_outside_start=True)
    assert res.reason is mt.Outcome.TIME_LIMIT and abs(res.e_y[-1]) < 3.0
    res = mt.simulate(path, _mpc(path), mt.create_model("kinematic_bicycle"), e_y0=3.5, corridor_tolerance=0.2,
                      allow_outside_start=True)
    assert res.reason is mt.Outcome.LEFT_CORRIDOR and len(res) == 0


def test_status_codes_are_the_status_enum():
    assert [mt.Status.from_code(c) for c in range(5)] == list(mt.Status)
    assert mt.results.STATUS_CODES == {"solved": 0, "solved_inaccurate": 1, "fallback": 2, "safe_stop": 3,
                                       "rejoin": 4}
