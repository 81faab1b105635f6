"""Speed profile: analytic braking point, constant radius, periodicity, friction ellipse, bad input."""
from __future__ import annotations

import numpy as np
import pytest

from mpc_tracking import ReferencePath, SettingsError
from mpc_tracking.paths.speed_profile import speed_profile

LIM = dict(v_max=20.0, a_y_max=5.0, a_max=2.0, a_brake=4.0)


def test_constant_radius_gives_sqrt_ay_R():
    R = 25.0
    a = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    p = ReferencePath(R * np.cos(a), R * np.sin(a), ds=0.5, closed=True)
    v = speed_profile(p, **LIM)
    assert np.allclose(v, np.sqrt(5.0 * R), rtol=1e-4)


def test_straight_then_circle_braking_point():
    ds, R = 0.5, 20.0
    kappa = np.r_[np.zeros(400), np.full(200, 1 / R)]  # circle starts at s = 200 m
    v = speed_profile(kappa, ds=ds, **LIM)
    s = np.arange(kappa.size) * ds
    vc = np.sqrt(5.0 * R)
    s_brake = 200.0 - (20.0**2 - vc**2) / (2 * 4.0)  # 162.5 m
    expected_before = np.minimum(20.0, np.sqrt(vc**2 + 2 * 4.0 * np.maximum(200.0 - s, 0)))
    assert np.allclose(v[s <= 200.0], expected_before[s <= 200.0], rtol=1e-12)
    assert np.allclose(v[s >= 200.0], vc)
    assert s[np.flatnonzero(v < 20.0 - 1e-9)[0]] == pytest.approx(s_brake, abs=ds)
    # unconstrained start, and a standing start accelerates at a_max
    v0 = speed_profile(kappa, ds=ds, v_start=0.0, **LIM)
    assert np.allclose(v0[:20], np.sqrt(2 * 2.0 * s[:20]))


def test_closed_lap_is_periodic_and_respects_limits():
    p = ReferencePath.from_corners([[0, 0], [100, 0], [100, 40], [0, 40]], closed=True, ds=0.5, radius=10)
    for ellipse in (False, True):
        v = speed_profile(p, friction_ellipse=ellipse, **LIM)
        assert np.all(v**2 * np.abs(p.kappa) <= 5.0 + 1e-9)
        dv2 = np.diff(np.append(v, v[0]) ** 2) / p.ds  # includes the seam
        assert dv2.max() <= 2 * 2.0 + 1e-9 and dv2.min() >= -2 * 4.0 - 1e-9
    assert np.all(speed_profile(p, friction_ellipse=True, **LIM) <= speed_profile(p, **LIM) + 1e-12)
    q = p.with_speed_profile(**LIM)
    assert q.v_ref is not None and p.v_ref is None
    assert np.array_equal(q.v_ref, speed_profile(p, **LIM))
    # the copy's interpolation serves its own profile (not the original's empty one)
    s_mid = 0.5 * (p.s[3] + p.s[4])
    assert q.interpolate([s_mid])["v_ref"][0] == pytest.approx(0.5 * (q.v_ref[3] + q.v_ref[4]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(v_max=0.0), "v_max"),
        (dict(a_y_max=-1.0), "a_y_max"),
        (dict(a_brake=float("nan")), "a_brake"),
        (dict(a_max="x"), "a_max"),
    ],
)
def test_bad_limits(kwargs, match):
    with pytest.raises(SettingsError, match=match):
        speed_profile(np.zeros(10), ds=1.0, **{**LIM, **kwargs})


def test_bad_curvature_and_ds():
    with pytest.raises(SettingsError, match="ds"):
        speed_profile(np.zeros(10), **LIM)
    with pytest.raises(SettingsError, match="finite"):
        speed_profile(np.array([0.0, np.nan]), ds=1.0, **LIM)


def test_constant_power_from_v0_is_the_closed_form():
    """Constant power P/m from v0 on a straight: d(v^3)/ds = 3 P/m, v(s) = (v0^3 + 3 (P/m) s)^(1/3)
    (no acceleration or top-speed limit; the profile's step is exact, not an explicit Euler step)."""
    ds, v0, power = 1.0, 5.0, 80.0
    kappa = np.zeros(1500)
    v = speed_profile(kappa, ds=ds, v_max=1e3, a_y_max=5.0, a_max=np.inf, a_brake=4.0, power_per_mass=power,
                      v_start=v0)
    s = np.arange(kappa.size) * ds
    np.testing.assert_allclose(v, np.cbrt(v0**3 + 3.0 * power * s), rtol=1e-12)


def test_power_and_acceleration_limits_meet_where_p_over_v_equals_a_max():
    """a_max up to v* = (P/m) / a_max, constant power beyond it: v^2 = v0^2 + 2 a s, then
    v^3 = v*^3 + 3 (P/m) (s - s*), with s* = (v*^2 - v0^2) / (2 a_max)."""
    ds, v0, power, a_max = 0.5, 2.0, 60.0, 3.0
    kappa = np.zeros(2000)
    v = speed_profile(kappa, ds=ds, v_max=1e3, a_y_max=5.0, a_max=a_max, a_brake=4.0, power_per_mass=power,
                      v_start=v0)
    s = np.arange(kappa.size) * ds
    v_star = power / a_max
    s_star = (v_star**2 - v0**2) / (2.0 * a_max)
    expected = np.where(s <= s_star, np.sqrt(v0**2 + 2.0 * a_max * s),
                        np.cbrt(v_star**3 + 3.0 * power * np.maximum(s - s_star, 0.0)))
    np.testing.assert_allclose(v, expected, rtol=2e-3)  # one step straddles v* (both bounds hold there)
    assert np.all(v <= expected * (1.0 + 2e-3))
    # without the power limit the same run is the constant-acceleration parabola throughout
    v_free = speed_profile(kappa, ds=ds, v_max=1e3, a_y_max=5.0, a_max=a_max, a_brake=4.0, v_start=v0)
    np.testing.assert_allclose(v_free, np.sqrt(v0**2 + 2.0 * a_max * s), rtol=1e-12)
    assert v[-1] < 0.8 * v_free[-1]


@pytest.mark.parametrize("power", [0.0, -5.0, float("nan"), "fast"])
def test_bad_power_per_mass(power):
    with pytest.raises(SettingsError, match="power_per_mass"):
        speed_profile(np.zeros(10), ds=1.0, power_per_mass=power, **LIM)
