"""The grip estimate on a dry lap at the limit (issue 21: it never lowers a limit by more than 5 % without cause).

The 3D sedan, identified first, on a generated circuit (``benchmarks/circuits.py``) at 0.95 of its identified
limits with default settings otherwise (as a scenario resolves them): the estimate may keep its confidence
margin (``grip_margin * grip_sigma_max`` of the limits until confirmed) but must not read a slide. Before the
brake-balance rule (a slide must show whatever the split of ``m a_x`` between the axles), trail braking read
the front axle short of its curve and the estimate lowered the limits below 0.9 of the settings'.
"""
from __future__ import annotations

import pytest

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction
from tests._shared import generated_circuits

SEDAN = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)


@pytest.mark.parametrize("seed, index", [(11, 2)])
def test_a_dry_lap_at_095_reads_no_slide(seed, index, identified_sedan):
    from mpc_tracking.scenario.defaults import grip_defaults

    path = generated_circuits().generate_circuits(index + 1, seed, ds=1.0)[index]
    ident = identified_sedan
    car = mt.create_model("ackermann3d", {"preset": "sedan"})
    act = mt.actuation.default_actuator(car)
    st = grip_defaults(mt.MPCSettings(v_max=40.0, grip_fraction=0.95), car, act, ident, path.ds, "test")
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=DynamicPrediction(ident.params, speed_lag=act.speed_lag))
    assert mpc.grip is not None  # on by default with the dynamic model
    ratios, slides = [1.0], []
    apply, step = mpc.grip._apply, mpc.grip.step

    def recording_apply(ratio: float, *held) -> None:
        ratios.append(ratio)
        apply(ratio, *held)

    def recording_step(t, measured, delta, a_x_cmd=None):
        est = step(t, measured, delta, a_x_cmd)
        if est.sliding:
            slides.append(t)
        return est

    mpc.grip._apply = recording_apply  # type: ignore[method-assign]
    mpc.grip.step = recording_step  # type: ignore[method-assign]
    res = mt.simulate(path, mpc, car, act)
    assert res.reason == "completed" and res.metrics["max_body_overshoot"] == 0.0
    assert slides == []
    margin = st.grip_margin * st.grip_sigma_max  # the plan's confidence margin until grip is confirmed
    assert min(ratios) >= 1.0 - margin - 1e-9 > 0.95
