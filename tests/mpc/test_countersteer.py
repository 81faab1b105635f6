"""The first step's steering in an oversteer slide (``spatial_dynamic.countersteer_bounds``, part of
``steer_within_peak_slip``): while the rear axle slides past its peak slip outward of the turn, the front slip angle
may not add to the yaw. The numpy path, the compiled step and the cvxpy reference hold the same bound."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction import spatial_dynamic as sd
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
from mpc_tracking.mpc import kernels

PARAMS = DynamicParams.bmw_320i()
STATE = (3.0, 0.0, 0.0)  # s, e_y, e_psi on the oval's curve
#: a car yawing left at 0.6 rad/s whose rear axle moves right at 2.2 m/s (v_y at the rear axle, as measured): the
#: rear slip angle 0.27 rad, past the tyres' peak slip (0.149 rad)
SLIDE = {"speed": 8.0, "v_x": 8.0, "v_y": -2.2, "r": 0.6}
#: the same yaw rate with the rear within its peak slip
GRIP = {"speed": 8.0, "v_x": 8.0, "v_y": -0.5, "r": 0.6}
I_DELTA = 1


def _mpc(**changes: Any) -> mt.SpatialMPC:
    st = mt.MPCSettings(horizon=20, v_max=10.0, delta_rate_max=math.inf, accel_max=3.0, decel_max=5.0,
                        prediction_model="dynamic", grip_estimation=False, **changes)
    return mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), st,
                         prediction=DynamicPrediction(PARAMS))


def _first_box(mpc: mt.SpatialMPC, measured: dict[str, float]) -> tuple[float, float, np.ndarray, float]:
    """The first step's steering bounds, the model's x0 and the applied steering of one step."""
    sol = mpc.solve(STATE, measured=measured)
    prob = mpc.step_problem()
    return float(prob.u_lo[0, I_DELTA]), float(prob.u_hi[0, I_DELTA]), np.asarray(prob.x0), float(sol.delta)


def test_the_rear_past_its_peak_bounds_the_first_steering_at_the_front_slip_direction():
    """In the slide the first step's upper bound is the front axle's slip direction (no front slip adding to the
    left yaw; before: that direction plus the peak slip, where the plan held the front at its peak); the applied
    steering respects it. With the rear within its peak slip, or the option off, the box is as before."""
    lo, hi, x0, delta = _first_box(_mpc(), SLIDE)
    alpha_r = -math.atan((x0[sd.IDX_VY] - PARAMS.l_r * x0[sd.IDX_R]) / x0[sd.IDX_VX])
    assert alpha_r > PARAMS.peak_slip_angles[1] and x0[sd.IDX_R] > 0.0
    beta = float(sd.front_slip_direction(x0, PARAMS))
    peak = PARAMS.peak_slip_angles[0]
    assert hi == pytest.approx(beta, abs=1e-12) and lo == pytest.approx(beta - peak, abs=1e-12)
    assert delta <= beta + 1e-6
    lo_g, hi_g, x0_g, _ = _first_box(_mpc(), GRIP)
    beta_g = float(sd.front_slip_direction(x0_g, PARAMS))
    assert hi_g == pytest.approx(beta_g + peak, abs=1e-12)  # the rear holds: the peak-slip box only
    lo_off, hi_off, _, _ = _first_box(_mpc(steer_within_peak_slip=False), SLIDE)
    assert hi_off > beta + peak  # the option off: the plain box


def test_a_car_yawing_right_is_bounded_from_below():
    """The mirror image: yawing right with the rear sliding left, the lower bound is the front slip direction."""
    mirror = {"speed": 8.0, "v_x": 8.0, "v_y": 2.2, "r": -0.6}
    lo, hi, x0, _ = _first_box(_mpc(), mirror)
    beta = float(sd.front_slip_direction(x0, PARAMS))
    assert lo == pytest.approx(beta, abs=1e-12) and hi == pytest.approx(beta + PARAMS.peak_slip_angles[0], abs=1e-12)


@pytest.mark.skipif(not kernels.numba_available(), reason="numba is not installed (extra 'fast')")
def test_the_compiled_step_holds_the_same_bound():
    """The fused compiled step (``_kernels.dynamic_rest``) against the general numpy path, bit for bit, in the
    slide."""
    a, b = _mpc(), _mpc()
    assert a._fused_dyn is not None
    b._fused_dyn = None
    pa, pb = _first_box(a, SLIDE), _first_box(b, SLIDE)
    assert pa[:2] == pb[:2] and pa[3] == pb[3]
    np.testing.assert_array_equal(a.data.l, b.data.l)
    np.testing.assert_array_equal(a.data.u, b.data.u)


def test_the_cvxpy_reference_holds_the_same_bound():
    """The readable cvxpy reference (written from the formulas, not from the QP code) builds the same first-step
    steering box in the slide, to 1e-12, and the same box as before with the rear within its peak slip."""
    pytest.importorskip("cvxpy")
    from mpc_tracking.mpc.cvxpy_dynamic import CvxpyDynamicMPC

    for measured, countersteer in ((SLIDE, True), (GRIP, False)):
        mpc = _mpc()
        ref = CvxpyDynamicMPC(mpc.path, mpc.vehicle, mpc.settings, mpc.model)
        lo, hi, x0, _ = _first_box(mpc, measured)
        d = ref.step_data(STATE, 0.0, None, {k: measured[k] for k in ("v_x", "v_y", "r")})
        assert (d["delta_lo"][0], d["delta_hi"][0]) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
        beta = float(sd.front_slip_direction(x0, PARAMS))
        assert (hi == pytest.approx(beta, abs=1e-12)) is countersteer
