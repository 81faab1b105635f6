"""Friction that varies over time and place on the 3D car (issue 21, item 1): ``mu_schedule``, ``mu_patches``.

A scheduled or patch friction must give the plant exactly what a constant ``mu`` of that value gives (numpy:
bit for bit; numba: the kernels take the current mu from their constants), the closed loop logs it as
``mu_true``, and bad tables are errors naming the entry.
"""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking import ModelError
from mpc_tracking.models import Ackermann3DBatch, Ackermann3DParams, create_model
from mpc_tracking.models.plants.ackermann3d import batch_numba

BACKENDS = ["numpy"] + (["numba"] if batch_numba.numba_available() else [])


def _drive(params: dict, backend: str, seconds: float = 2.0, delta: float = 0.05) -> np.ndarray:
    """States (K, 22) of the sedan coasting at 20 m/s on a constant steer, 10 ms steps."""
    car = create_model("ackermann3d", {"preset": "sedan", "backend": backend, **params})
    car.init({"x": 0.0, "y": 0.0, "yaw": 0.0, "speed": 20.0})
    out, t = [], 0.0
    for _ in range(round(seconds / 0.01)):
        out.append(car.step(t, 0.01, [delta, 0.0, 0.0, 0.0, 0.0]))
        t += 0.01
    return np.array(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_schedule_equals_a_constant_friction(backend):
    """A schedule of mu 0.3 from t = 0 drives as mu = 0.3 (numpy bit for bit); its own mu changes nothing."""
    const = _drive({"mu": 0.3}, backend)
    scheduled = _drive({"mu_schedule": [[0.0, 0.3]]}, backend)
    if backend == "numpy":
        np.testing.assert_array_equal(scheduled, const)
    else:
        np.testing.assert_allclose(scheduled, const, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(_drive({"mu_schedule": [[0.5, 0.9]]}, backend), _drive({}, backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_rain_changes_the_car_at_its_time(backend):
    """Until t = 1 s the car drives as on the dry road, after it differently (it slides: mu 0.3 < 0.44 g)."""
    dry = _drive({}, backend)
    rain = _drive({"mu_schedule": [[1.0, 0.3]]}, backend)
    np.testing.assert_array_equal(rain[:100], dry[:100])  # steps starting before t = 1 s
    assert np.max(np.abs(rain[-1] - dry[-1])) > 0.1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_patch_covering_the_drive_is_its_friction(backend):
    big = _drive({"mu_patches": [[0.0, 0.0, 500.0, 0.3]]}, backend)
    np.testing.assert_allclose(big, _drive({"mu": 0.3}, backend), rtol=1e-12, atol=1e-12)
    far = _drive({"mu_patches": [[1000.0, 0.0, 10.0, 0.3]]}, backend)
    np.testing.assert_array_equal(far, _drive({}, backend))


def test_road_friction_at_time_and_place():
    P = Ackermann3DParams.sedan(mu_schedule=[[10.0, 0.6], [20.0, 0.4], [20.0, 0.5]],
                                mu_patches=[[0.0, 0.0, 5.0, 0.3], [3.0, 0.0, 5.0, 1.1]])
    assert P.road_friction(0.0, 100.0, 0.0) == 0.9
    assert P.road_friction(10.0, 100.0, 0.0) == 0.6  # from its time on
    assert P.road_friction(25.0, 100.0, 0.0) == 0.5  # the later of two entries at one time
    assert P.road_friction(0.0, -4.0, 0.0) == 0.3 and P.road_friction(0.0, 7.9, 0.0) == 1.1
    assert P.road_friction(0.0, 2.0, 0.0) == 1.1  # in both: the last listed patch wins
    assert P.road_friction(0.0, 5.0 + 3.0, 0.0) == 1.1 and P.road_friction(0.0, 8.01, 0.0) == 0.9
    car = create_model("ackermann3d", {"preset": "sedan", "mu_schedule": [[1.0, 0.5]]})
    car.init({"x": 0.0, "y": 0.0, "yaw": 0.0, "speed": 0.0})
    assert car.road_friction(0.5) == 0.9 and car.road_friction(2.0) == 0.5


@pytest.mark.parametrize("params, message", [
    ({"mu_schedule": [[1.0, 0.5], [0.5, 0.6]]}, r"mu_schedule\[1\]: time 0.5 s goes backwards"),
    ({"mu_schedule": [[1.0, 0.0]]}, r"mu_schedule\[0\]: mu must lie in \(0, 2\]"),
    ({"mu_schedule": [[1.0, -0.2]]}, r"mu_schedule\[0\]: mu must lie in"),
    ({"mu_schedule": [[0.0, 0.9], [1.0, 2.5]]}, r"mu_schedule\[1\]: mu must lie in"),
    ({"mu_schedule": [[1.0]]}, r"mu_schedule\[0\] must be 2 finite numbers"),
    ({"mu_schedule": [[1.0, float("nan")]]}, r"mu_schedule\[0\] must be 2 finite numbers"),
    ({"mu_schedule": "rain"}, r"mu_schedule must be a list"),
    ({"mu_patches": [[0.0, 0.0, -1.0, 0.5]]}, r"mu_patches\[0\]: radius must be >= 0"),
    ({"mu_patches": [[0.0, 0.0, 1.0, 0.5], [0.0, 0.0, 1.0, 3.0]]}, r"mu_patches\[1\]: mu must lie in"),
    ({"mu_patches": [[0.0, 0.0, 1.0]]}, r"mu_patches\[0\] must be 4 finite numbers"),
])
def test_bad_friction_tables(params, message):
    with pytest.raises(ModelError, match=message):
        create_model("ackermann3d", {"preset": "sedan", **params})


def test_the_batch_refuses_varying_friction():
    with pytest.raises(ModelError, match="not supported by the batch"):
        Ackermann3DBatch(Ackermann3DParams.sedan(mu_schedule=[[1.0, 0.5]]), 2)


def test_closed_loop_logs_mu_true():
    """simulate() logs the road's friction under the plant as mu_true (the kinematic model: no estimate)."""
    th = np.linspace(0.0, 2.0 * np.pi, 600, endpoint=False)
    path = mt.ReferencePath(60.0 * np.cos(th), 60.0 * np.sin(th), closed=True, ds=1.0, width_left=4.0,
                            width_right=4.0)
    car = create_model("ackermann3d", {"preset": "sedan", "mu_schedule": [[1.0, 0.6]]})
    mpc = mt.SpatialMPC(path, mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95),
                        mt.MPCSettings(horizon=15, v_max=8.0, a_y_max=3.0))
    res = mt.simulate(path, mpc, car, t_max=2.0)
    mu, t = res.series["mu_true"], res.series["t"]
    assert mu.shape == t.shape and t[-1] > 1.5
    np.testing.assert_array_equal(mu, np.where(t >= 1.0 - 1e-9, 0.6, 0.9))
    assert "mu_est" not in res.series
