"""Spatial bicycle model: analytic Jacobians vs finite differences, discretizations, conversions."""
from __future__ import annotations

import numpy as np
import pytest

from mpc_tracking.errors import InputError, ModelError
from mpc_tracking.models.prediction import spatial_bicycle as sb
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams

P = VehicleParams()
RNG = np.random.default_rng(7)


def _random_points(n=50):
    x = np.column_stack([RNG.uniform(-1, 1, n), RNG.uniform(-0.6, 0.6, n), RNG.uniform(0, 10, n)])
    u = np.column_stack([RNG.uniform(1, 20, n), RNG.uniform(-0.5, 0.5, n)])
    k = RNG.uniform(-0.2, 0.2, n)
    return x, u, k


def _fd_jac(fun, z, eps=1e-6):
    z = np.asarray(z, float)
    cols = []
    for i in range(z.size):
        dz = np.zeros_like(z)
        dz[i] = eps
        cols.append((fun(z + dz) - fun(z - dz)) / (2 * eps))
    return np.stack(cols, axis=-1)


def test_derivatives_match_formulas():
    x = np.array([0.3, 0.1, 0.0])
    u = np.array([5.0, 0.05])
    k = 0.05
    g = 1 - 0.3 * 0.05
    expect = [g * np.tan(0.1), g * np.tan(0.05) / (P.wheelbase * np.cos(0.1)) - k, g / (5.0 * np.cos(0.1))]
    np.testing.assert_allclose(sb.derivatives(x, u, k, P), expect, rtol=1e-14)


def test_jacobians_match_finite_differences():
    xs, us, ks = _random_points()
    Jx, Ju = sb.jacobians(xs, us, ks, P)
    for i in range(len(ks)):
        fx = _fd_jac(lambda z, i=i: sb.derivatives(z, us[i], ks[i], P), xs[i])
        fu = _fd_jac(lambda z, i=i: sb.derivatives(xs[i], z, ks[i], P), us[i])
        np.testing.assert_allclose(Jx[i], fx, atol=1e-6, rtol=1e-6)
        np.testing.assert_allclose(Ju[i], fu, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_linearize_matches_finite_differences_of_discrete_map(method):
    xs, us, ks = _random_points(20)
    ds = 0.5
    A, B, f = sb.linearize(xs, us, ks, ds, P, method)
    for i in range(len(ks)):
        def step_x(z, i=i):
            return sb.discrete_step(z, us[i], ks[i], ds, P, method)

        def step_u(z, i=i):
            return sb.discrete_step(xs[i], z, ks[i], ds, P, method)

        np.testing.assert_allclose(A[i], _fd_jac(step_x, xs[i]), atol=1e-6, rtol=1e-6)
        np.testing.assert_allclose(B[i], _fd_jac(step_u, us[i]), atol=1e-6, rtol=1e-6)
        # exact at the operating point
        np.testing.assert_allclose(A[i] @ xs[i] + B[i] @ us[i] + f[i], step_x(xs[i]), atol=1e-12)


def test_rk4_is_more_accurate_than_euler_on_a_circle():
    # constant steering on a circle of radius R = L / tan(delta): e_psi stays 0, e_y stays 0
    R = 20.0
    delta = np.arctan(P.wheelbase / R)
    x = np.array([0.2, 0.05, 0.0])
    u = np.array([10.0, delta])
    fine = x.copy()
    for _ in range(1000):
        fine = sb.discrete_step(fine, u, 1 / R, 0.005, P, "rk4")
    e_euler = np.abs(sb.discrete_step(x, u, 1 / R, 5.0, P, "euler") - fine).max()
    e_rk4 = np.abs(sb.discrete_step(x, u, 1 / R, 5.0, P, "rk4") - fine).max()
    assert e_rk4 < 1e-2 * e_euler


def test_temporal_spatial_round_trip():
    xr, yr, pr = 3.0, -2.0, 0.7
    x, y, psi = sb.spatial_to_temporal(0.4, -0.1, xr, yr, pr)
    e_y, e_psi = sb.temporal_to_spatial(x, y, psi, xr, yr, pr)
    assert e_y == pytest.approx(0.4, abs=1e-12)
    assert e_psi == pytest.approx(-0.1, abs=1e-12)
    # left of a path heading +y is -x
    assert sb.temporal_to_spatial(-1.0, 0.0, np.pi / 2, 0.0, 0.0, np.pi / 2)[0] == pytest.approx(1.0)


def test_safety_ellipse_contains_the_body_corners():
    a, b = P.safety_ellipse
    assert a == pytest.approx(P.length / np.sqrt(2))
    assert b == pytest.approx(P.width / np.sqrt(2))
    corners = np.array([[sx * P.length / 2, sy * P.width / 2] for sx in (-1, 1) for sy in (-1, 1)])
    np.testing.assert_allclose((corners[:, 0] / a) ** 2 + (corners[:, 1] / b) ** 2, 1.0)
    assert P.center_offset == pytest.approx(P.length / 2 - P.rear_overhang)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"wheelbase": 0.0}, "wheelbase"),
        ({"width": -1.0}, "width"),
        ({"length": float("nan")}, "length"),
        ({"rear_overhang": 10.0}, "rear_overhang"),
    ],
)
def test_vehicle_params_errors(kwargs, match):
    with pytest.raises(ModelError, match=match):
        VehicleParams(**kwargs)


def test_domain_check_names_the_index():
    x = np.array([[0.0, 0, 0], [0.0, 0, 0], [12.0, 0, 0]])
    u = np.tile([5.0, 0.0], (3, 1))
    with pytest.raises(InputError, match="horizon index 2"):
        sb.check_domain(x, u, np.array([0.1, 0.1, 0.1]))
    with pytest.raises(InputError, match="discretization"):
        sb.linearize(x[0], u[0], 0.0, 0.1, P, "trapezoid")
