"""Spatial dynamic bicycle: Jacobians vs finite differences, discretizations, analytic truths,
the kinematic limit, CommonRoad's single-track model, parameter validation."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import root

from mpc_tracking.errors import InputError, ModelError
from mpc_tracking.models.prediction import spatial_bicycle as sb
from mpc_tracking.models.prediction import spatial_dynamic as sd
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

P = DynamicParams.bmw_320i()
L = P.wheelbase

# ---------------------------------------------------------------------------------------------
# helpers


def _points(rng, n, vx_range, slip=1.0):
    """Random states/inputs; ``slip`` scales v_y, r and delta (1: slip angles up to ~0.6 rad)."""
    vx = rng.uniform(*vx_range, n)
    x = np.column_stack([
        rng.uniform(-1.0, 1.0, n),  # e_y
        rng.uniform(-0.6, 0.6, n),  # e_psi
        rng.uniform(0.0, 10.0, n),  # t
        vx,
        slip * rng.uniform(-0.3, 0.3, n) * np.maximum(np.abs(vx), 1.0),  # v_y
        slip * rng.uniform(-0.3, 0.3, n) * np.maximum(np.abs(vx), 1.0) / L,  # r
    ])
    u = np.column_stack([rng.uniform(-5.0, 5.0, n), slip * rng.uniform(-0.5, 0.5, n)])
    k = rng.uniform(-0.1, 0.1, n)
    return x, u, k


def _fd_jac(fun, z, rel=1e-6):
    """Central differences with relative steps."""
    z = np.asarray(z, float)
    cols = []
    for i in range(z.size):
        h = rel * max(1.0, abs(z[i]))
        dz = np.zeros_like(z)
        dz[i] = h
        cols.append((fun(z + dz) - fun(z - dz)) / (2 * h))
    return np.stack(cols, axis=-1)


def _assert_jac_close(J, J_fd, rtol, out=None):
    """Entry-wise, relative to the entry or (for near-zero entries) to the largest entry of its row.

    ``out``: the differenced function's value; its rounding error over the FD step (2.2e-16 |out| / 1e-6,
    allowed 5x) is added: it matters for the discrete maps, whose rows carry the state itself (v_x ~ 40
    next to B entries ~ 1e-3).
    """
    row_scale = np.maximum(np.abs(J_fd).max(axis=-1, keepdims=True), 1e-300)
    floor = 0.0 if out is None else 1e-9 * np.abs(out)[:, None]
    np.testing.assert_array_less(np.abs(J - J_fd), rtol * (np.abs(J_fd) + row_scale) + floor + 1e-300)


def _slip_angles(x, u, p=P):
    vx, vy, r, d = x[..., 3], x[..., 4], x[..., 5], u[..., 1]
    return d - np.arctan((vy + p.l_f * r) / vx), -np.arctan((vy - p.l_r * r) / vx)


# ---------------------------------------------------------------------------------------------
# names, a hand-computed point


def test_names_and_indices():
    assert sd.STATE_NAMES[sd.IDX_EY] == "e_y"
    assert sd.STATE_NAMES[sd.IDX_EPSI] == "e_psi"
    assert sd.STATE_NAMES[sd.IDX_T] == "t"
    assert sd.STATE_NAMES[sd.IDX_VX] == "v_x"
    assert sd.STATE_NAMES[sd.IDX_VY] == "v_y"
    assert sd.STATE_NAMES[sd.IDX_R] == "r"
    assert sd.INPUT_NAMES[sd.IDX_AX] == "a_x"
    assert sd.INPUT_NAMES[sd.IDX_DELTA] == "delta"
    # the reference-point states come first, in the kinematic model's order
    assert sd.STATE_NAMES[:3] == sb.STATE_NAMES
    assert sd.INPUT_NAMES[sb.IDX_DELTA] == "delta"


def test_derivatives_match_the_written_equations():
    # dynamic region (w = 1): one point evaluated term by term, independently of the vectorized code
    ey, ep, vx, vy, r, ax, d, k = 0.3, 0.1, 14.0, 0.4, 0.2, 1.5, 0.05, 0.02
    m, lf, lr, h, mu = P.mass, P.l_f, P.l_r, P.h_cg, P.mu
    B, C, E = P.tyre_B_f, P.tyre_C_f, P.tyre_E_f

    def mf(a):
        return np.sin(C * np.arctan(B * a - E * (B * a - np.arctan(B * a))))

    fzf, fzr = m * (P.g * lr - ax * h) / L, m * (P.g * lf + ax * h) / L
    fyf = mu * fzf * mf(d - np.arctan((vy + lf * r) / vx))
    fyr = mu * fzr * mf(-np.arctan((vy - lr * r) / vx))
    sdot = (vx * np.cos(ep) - (vy - lr * r) * np.sin(ep)) / (1 - ey * k)
    xdot = np.array([
        vx * np.sin(ep) + (vy - lr * r) * np.cos(ep),
        r - k * sdot,
        1.0,
        ax - fyf * np.sin(d) / m + r * vy,
        (fyf * np.cos(d) + fyr) / m - r * vx,
        (lf * fyf * np.cos(d) - lr * fyr) / P.I_z,
    ])
    x, u = np.array([ey, ep, 3.0, vx, vy, r]), np.array([ax, d])
    np.testing.assert_allclose(sd.temporal_derivatives(x, u, k, P), xdot, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(sd.derivatives(x, u, k, P), xdot / sdot, rtol=1e-13, atol=1e-13)


def test_vectorized_over_a_horizon_equals_pointwise():
    x, u, k = _points(np.random.default_rng(0), 12, (0.0, 25.0))
    f = sd.derivatives(x, u, k, P)
    Jx, Ju = sd.jacobians(x, u, k, P)
    A, B, c = sd.linearize(x, u, k, np.linspace(0.1, 0.3, 12), P, "rk4")
    assert f.shape == (12, 6) and Jx.shape == (12, 6, 6) and Ju.shape == (12, 6, 2)
    assert A.shape == (12, 6, 6) and B.shape == (12, 6, 2) and c.shape == (12, 6)
    for i in (0, 5, 11):
        np.testing.assert_array_equal(sd.derivatives(x[i], u[i], k[i], P), f[i])
        np.testing.assert_allclose(sd.jacobians(x[i], u[i], k[i], P)[0], Jx[i], rtol=1e-14, atol=1e-14)
        Ai, Bi, ci = sd.linearize(x[i], u[i], k[i], np.linspace(0.1, 0.3, 12)[i], P, "rk4")
        np.testing.assert_allclose(Ai, A[i], rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(ci, c[i], rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------------------------------
# analytic Jacobians and discretizations vs finite differences

#: (name, v_x range [m/s], slip scale): the regimes the Jacobians must hold in
REGIMES = [
    ("dynamic", (5.0, 40.0), 0.2, 1),
    ("high_slip", (5.0, 40.0), 1.0, 2),
    ("blend", (P.v_blend_low, P.v_blend_high), 0.5, 3),
    ("low_speed", (-0.5, P.v_blend_low), 0.5, 4),  # through the C1 floor of v_x and standstill
]


@pytest.mark.parametrize("name, vx_range, slip, seed", REGIMES)
def test_jacobians_match_central_differences(name, vx_range, slip, seed):
    x, u, k = _points(np.random.default_rng(seed), 60, vx_range, slip)
    if name == "high_slip":
        af, ar = _slip_angles(x, u)
        assert np.abs(af).max() > 0.3 and np.abs(ar).max() > 0.3  # beyond the tyre's peak (~0.1 rad)
    Jx, Ju = sd.jacobians(x, u, k, P)
    for i in range(len(k)):
        def fx(z, i=i):
            return sd.derivatives(z, u[i], k[i], P)

        def fu(z, i=i):
            return sd.derivatives(x[i], z, k[i], P)

        # measured worst case over these regimes: 3.1e-9 (relative to |entry| + the row's largest entry)
        _assert_jac_close(Jx[i], _fd_jac(fx, x[i]), 1e-6)
        _assert_jac_close(Ju[i], _fd_jac(fu, u[i]), 1e-6)


def test_jacobians_across_the_blend_edges():
    # on both sides of v_blend_low / v_blend_high and the floor's 2 v_floor knot
    edges = [P.v_blend_low, P.v_blend_high, 2 * P.v_floor]
    vx = np.concatenate([[e - 1e-3, e + 1e-3] for e in edges])
    n = len(vx)
    x = np.column_stack([np.full(n, 0.2), np.full(n, 0.1), np.zeros(n), vx, 0.1 * vx, 0.05 * vx])
    u = np.tile([1.0, 0.1], (n, 1))
    Jx, _ = sd.jacobians(x, u, 0.05, P)
    for i in range(n):
        _assert_jac_close(Jx[i], _fd_jac(lambda z: sd.derivatives(z, u[0], 0.05, P), x[i], rel=1e-8), 1e-5)
    # and the Jacobian is continuous across each edge (C1 blend and floor)
    for j in range(len(edges)):
        np.testing.assert_allclose(Jx[2 * j], Jx[2 * j + 1], atol=1e-2 * np.abs(Jx[2 * j]).max())


@pytest.mark.parametrize("method", ["euler", "rk4"])
@pytest.mark.parametrize("name, vx_range, slip, seed", REGIMES[:3])
def test_linearize_matches_finite_differences_of_discrete_map(method, name, vx_range, slip, seed):
    x, u, k = _points(np.random.default_rng(10 + seed), 15, vx_range, slip)
    x[:, sd.IDX_T] = 0.0  # t does not feed back; a large t would only add rounding to its tiny row of B
    ds = 0.1
    A, B, f = sd.linearize(x, u, k, ds, P, method)
    for i in range(len(k)):
        def step_x(z, i=i):
            return sd.discrete_step(z, u[i], k[i], ds, P, method)

        def step_u(z, i=i):
            return sd.discrete_step(x[i], z, k[i], ds, P, method)

        # measured worst case beyond the rounding allowance: 5e-11
        x_next = step_x(x[i])
        _assert_jac_close(A[i], _fd_jac(step_x, x[i]), 1e-6, x_next)
        _assert_jac_close(B[i], _fd_jac(step_u, u[i]), 1e-6, x_next)
        # exact at the operating point
        np.testing.assert_allclose(A[i] @ x[i] + B[i] @ u[i] + f[i], step_x(x[i]), rtol=1e-12, atol=1e-10)


def test_euler_linearization_is_identity_plus_ds_jacobian():
    x, u, k = _points(np.random.default_rng(2), 5, (5.0, 20.0), 0.2)
    A, B, _ = sd.linearize(x, u, k, 0.3, P, "euler")
    Jx, Ju = sd.jacobians(x, u, k, P)
    np.testing.assert_allclose(A, np.eye(6) + 0.3 * Jx, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(B, 0.3 * Ju, rtol=1e-14, atol=1e-14)


def test_rk4_is_more_accurate_than_euler():
    x = np.array([0.3, 0.05, 0.0, 15.0, 0.2, 0.1])
    u = np.array([0.5, 0.04])
    fine = x.copy()
    for _ in range(400):
        fine = sd.discrete_step(fine, u, 0.01, 0.5 / 400, P, "rk4")
    # ds = 0.5 m resolves the lateral mode (eigenvalue ~ -1 /m at 15 m/s); measured ratio 6.5e-3
    e_euler = np.abs(sd.discrete_step(x, u, 0.01, 0.5, P, "euler") - fine).max()
    e_rk4 = np.abs(sd.discrete_step(x, u, 0.01, 0.5, P, "rk4") - fine).max()
    assert e_rk4 < 2e-2 * e_euler


# ---------------------------------------------------------------------------------------------
# analytic truths


@pytest.mark.parametrize("vx", [0.7, 3.0, 15.0])
def test_straight_path_no_steering_no_acceleration(vx):
    x = np.array([0.4, 0.0, 0.0, vx, 0.0, 0.0])
    u = np.array([0.0, 0.0])
    f = sd.derivatives(x, u, 0.0, P)
    assert f[sd.IDX_VX] == 0.0 and f[sd.IDX_EY] == 0.0 and f[sd.IDX_EPSI] == 0.0
    assert f[sd.IDX_VY] == 0.0 and f[sd.IDX_R] == 0.0
    # 100 m later: same e_y and speed, t = 100 / v_x
    for _ in range(100):
        x = sd.discrete_step(x, u, 0.0, 1.0, P, "rk4")
    # below 2 v_floor the spatial model advances at the floored speed v_floor + v_x²/(4 v_floor)
    v_bar = vx if vx >= 2 * P.v_floor else P.v_floor + vx**2 / (4 * P.v_floor)
    np.testing.assert_allclose(x, [0.4, 0.0, 100.0 / v_bar, vx, 0, 0], rtol=1e-12, atol=1e-12)


def test_straight_path_acceleration_gives_v_dv_ds_equal_a():
    x = np.array([0.0, 0.0, 0.0, 12.0, 0.0, 0.0])
    f = sd.derivatives(x, [2.0, 0.0], 0.0, P)
    assert f[sd.IDX_VX] == pytest.approx(2.0 / 12.0, rel=1e-14)


def _steady_state(p, vx, delta):
    """(v_y, r, a_x) with v_x, v_y, r constant in time at steering delta."""
    def res(z):
        return sd.temporal_derivatives([0, 0, 0, vx, z[0], z[1]], [z[2], delta], 0.0, p)[3:]

    sol = root(res, [0.0, vx * delta / p.wheelbase, 0.0], tol=1e-13)
    assert np.abs(res(sol.x)).max() < 1e-12
    return sol.x


def _textbook_K_us(p):
    """Understeer gradient K_us = m/L (l_r/C_f - l_f/C_r) [rad/(m/s²)], C = B C mu F_z (static)."""
    m, lf, lr, g = p.mass, p.l_f, p.l_r, p.g
    c_f = p.tyre_B_f * p.tyre_C_f * p.mu * m * g * lr / (lf + lr)
    c_r = p.tyre_B_r * p.tyre_C_r * p.mu * m * g * lf / (lf + lr)
    return m / (lf + lr) * (lr / c_f - lf / c_r)


@pytest.mark.parametrize(
    "params",
    [P, dataclasses.replace(P, tyre_B_f=0.7 * P.tyre_B_f), dataclasses.replace(P, tyre_B_r=0.7 * P.tyre_B_r)],
    ids=["bmw_neutral", "understeer", "oversteer"],
)
@pytest.mark.parametrize("vx", [10.0, 20.0])
def test_steady_state_circle_matches_the_single_track_formula(params, vx):
    K = _textbook_K_us(params)
    Lw = params.wheelbase
    a_y_target = 0.5  # m/s², linear tyre range (slip angles < 0.005 rad)
    delta = (Lw / (vx**2 / a_y_target) + K * a_y_target)
    vy, r, ax = _steady_state(params, vx, delta)
    V = np.hypot(vx, vy)
    R, a_y = V / r, V * r
    # yaw rate gain r/delta = (V/L) / (1 + K V²/L); measured rel. error <= 2.9e-4
    assert r == pytest.approx(V * delta / (Lw + K * V**2), rel=5e-4)
    # delta = L/R + K a_y; measured |error| <= 1.3e-6 rad (K a_y = ±1e-3 rad here: K within 0.13 %)
    assert delta - Lw / R == pytest.approx(K * a_y, abs=2e-6)
    assert abs(K) < 1e-9 if params is P else abs(K) > 1e-3  # the BMW preset is neutral (C ∝ F_z)
    # the same state is an equilibrium of the spatial model on a circle through the rear axle
    vyr = vy - params.l_r * r
    e_psi = -np.arctan2(vyr, vx)
    kappa = r / np.hypot(vx, vyr)
    x = np.array([0.0, e_psi, 0.0, vx, vy, r])
    f = sd.derivatives(x, [ax, delta], kappa, params)
    np.testing.assert_allclose(np.delete(f, sd.IDX_T), 0.0, atol=1e-12)
    assert f[sd.IDX_T] == pytest.approx(1.0 / np.hypot(vx, vyr), rel=1e-12)


@pytest.mark.parametrize("vx", [1.0, 1.5, 1.99])
def test_kinematic_limit_matches_the_kinematic_spatial_bicycle(vx):
    rng = np.random.default_rng(5)
    n = 30
    delta = rng.uniform(-0.5, 0.5, n)
    x3 = np.column_stack([rng.uniform(-1, 1, n), rng.uniform(-0.6, 0.6, n), rng.uniform(0, 5, n)])
    k = rng.uniform(-0.2, 0.2, n)
    ax = rng.uniform(-2, 2, n)
    rho = np.tan(delta) / L
    # on the kinematic manifold: rear axle slides neither way, yaw rate v_x tan(delta) / L
    x = np.column_stack([x3, np.full(n, vx), P.l_r * rho * vx, rho * vx])
    u = np.column_stack([ax, delta])
    assert np.all(sd.blend_weight(x[:, 3], P) == 0.0)
    f = sd.derivatives(x, u, k, P)
    fk = sb.derivatives(x3, np.column_stack([np.full(n, vx), delta]), k, sb.VehicleParams(wheelbase=L))
    np.testing.assert_allclose(f[:, :3], fk, rtol=1e-12, atol=1e-12)
    # and it stays on the manifold while v_x changes with a_x
    np.testing.assert_allclose(f[:, 4], P.l_r * rho * f[:, 3], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f[:, 5], rho * f[:, 3], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f[:, 3], ax * fk[:, 2], rtol=1e-12)  # dv/ds = a dt/ds


def test_kinematic_part_pulls_lateral_velocity_and_yaw_rate_onto_the_manifold():
    x = np.array([0.0, 0.0, 0.0, 1.5, 0.3, -0.2])
    u = np.array([0.0, 0.2])
    for _ in range(400):
        x = sd.discrete_step(x, u, 0.0, 0.01, P, "rk4")
    rho = np.tan(0.2) / L
    assert x[4] == pytest.approx(P.l_r * rho * 1.5, abs=1e-6)
    assert x[5] == pytest.approx(rho * 1.5, abs=1e-6)


def test_blend_weight_and_standstill():
    v = np.array([-1.0, 0.0, P.v_blend_low, 0.5 * (P.v_blend_low + P.v_blend_high), P.v_blend_high, 30.0])
    np.testing.assert_allclose(sd.blend_weight(v, P), [0, 0, 0, 0.5, 1, 1], atol=1e-15)
    assert np.all(np.diff(sd.blend_weight(np.linspace(0, 10, 200), P)) >= 0)
    # at and below standstill the spatial model is finite: the car "rolls" at the floor speed
    for vx in (0.0, -0.3):
        x = np.array([0.1, 0.2, 0.0, vx, 0.0, 0.0])
        f = sd.derivatives(x, [1.0, 0.3], 0.05, P)
        Jx, Ju = sd.jacobians(x, [1.0, 0.3], 0.05, P)
        assert np.all(np.isfinite(f)) and np.all(np.isfinite(Jx)) and np.all(np.isfinite(Ju))
        assert f[sd.IDX_T] == pytest.approx((1 - 0.1 * 0.05) / (P.v_floor * np.cos(0.2)), rel=1e-14)


def test_tyre_force_saturates_at_mu_fz():
    # pure steering from straight running at 20 m/s: r_dot = l_f F_yf cos(delta) / I_z
    fzf = P.static_loads[0]
    deltas = np.linspace(0.0, 0.5, 51)
    x = np.tile([0, 0, 0, 20.0, 0, 0], (51, 1))
    u = np.column_stack([np.zeros(51), deltas])
    fyf = sd.temporal_derivatives(x, u, 0.0, P)[:, 5] * P.I_z / (P.l_f * np.cos(deltas))
    assert fyf.max() <= P.mu * fzf * (1 + 1e-12)
    assert fyf.max() >= 0.99 * P.mu * fzf
    c_f, _ = P.cornering_stiffness
    d = 1e-3  # linear for small slip: the slope falls off as (B alpha)² ~ 2e-4 here
    fy_small = sd.temporal_derivatives([0, 0, 0, 20.0, 0, 0], [0.0, d], 0.0, P)[5] * P.I_z / (P.l_f * np.cos(d))
    assert fy_small == pytest.approx(c_f * d, rel=1e-3)


# ---------------------------------------------------------------------------------------------
# CommonRoad's single-track model (vehiclemodels), the reference the numbers come from


def _vehiclemodels():
    try:
        from vehiclemodels.parameters_vehicle2 import parameters_vehicle2
        from vehiclemodels.vehicle_dynamics_st import vehicle_dynamics_st
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        pytest.skip(f"commonroad-vehicle-models (vehiclemodels) not importable: {exc}")
    return parameters_vehicle2(), vehicle_dynamics_st


def test_bmw_320i_numbers_are_commonroads():
    p, _ = _vehiclemodels()
    t = p.tire
    assert (P.mass, P.I_z, P.l_f, P.l_r, P.h_cg) == (p.m, p.I_z, p.a, p.b, p.h_cg)
    assert P.mu == t.p_dy1
    for axle in "fr":
        assert getattr(P, f"tyre_C_{axle}") == t.p_cy1
        assert getattr(P, f"tyre_E_{axle}") == t.p_ey1
        assert getattr(P, f"tyre_B_{axle}") == pytest.approx(abs(t.p_ky1) / (t.p_cy1 * t.p_dy1), rel=1e-15)
    # cornering stiffness per axle = CommonRoad ST's mu C_S F_z, C_S = -p_ky1 / p_dy1
    c_s = -t.p_ky1 / t.p_dy1
    fzf, fzr = P.static_loads
    np.testing.assert_allclose(P.cornering_stiffness, [t.p_dy1 * c_s * fzf, t.p_dy1 * c_s * fzr], rtol=1e-14)


def _commonroad_pair():
    """Our params mapped from CommonRoad's vehicle 2 exactly as its vehicle_dynamics_st uses them, and f_st."""
    p, f_st = _vehiclemodels()
    t = p.tire
    b = -t.p_ky1 / (t.p_cy1 * t.p_dy1)
    # ST uses the sprung-mass CG height h_s for the load transfer and g = 9.81
    ours = DynamicParams(mass=p.m, I_z=p.I_z, l_f=p.a, l_r=p.b, h_cg=p.h_s, mu=t.p_dy1, tyre_B_f=b,
                         tyre_C_f=t.p_cy1, tyre_E_f=t.p_ey1, tyre_B_r=b, tyre_C_r=t.p_cy1, tyre_E_r=t.p_ey1,
                         g=9.81)

    def cr_body_rates(vx, vy, r, a, delta):
        """CommonRoad ST (state: x, y, delta, v, psi, r, beta) -> (v_x_dot, v_y_dot, r_dot) in the body frame."""
        v, beta = np.hypot(vx, vy), np.arctan2(vy, vx)
        f = f_st([0.0, 0.0, delta, v, 0.0, r, beta], [0.0, a], p)
        v_dot, r_dot, beta_dot = f[3], f[5], f[6]
        return np.array([v_dot * np.cos(beta) - v * np.sin(beta) * beta_dot,
                         v_dot * np.sin(beta) + v * np.cos(beta) * beta_dot, r_dot])

    return ours, cr_body_rates


def _linear_range_samples(p, alpha_max, n, seed):
    """(v_x, v_y, r, delta) at 8..30 m/s with both slip angles within alpha_max."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        vx = rng.uniform(8.0, 30.0)
        vy, r, delta = rng.uniform(-1, 1, 3) * alpha_max * np.array([vx, vx / 3, 1.0])
        af, ar = _slip_angles(np.array([0, 0, 0, vx, vy, r]), np.array([0.0, delta]), p)
        if max(abs(af), abs(ar)) <= alpha_max:
            out.append((vx, vy, r, delta))
    return out


@pytest.mark.parametrize("a", [0.0, -3.0, 2.0])
def test_matches_commonroad_single_track_in_the_linear_tyre_range(a):
    """Straight path (kappa = 0), time domain: d/dt (v_x, v_y, r) vs CommonRoad's vehicle_dynamics_st.

    The models share m, I_z, l_f, l_r, h, mu and the cornering stiffness; they differ in (1) the tyre:
    CommonRoad's ST is linear in slip (F_y = mu C_S F_z alpha, no saturation), ours is the magic
    formula, whose slope falls off as (B alpha)²; (2) small-angle terms (ST: alpha_f = delta - beta
    - l_f r / v, no cos(delta)); (3) where the acceleration acts: ST's ``a`` is along the velocity
    vector, our ``a_x`` along the body x axis, so ST has an extra ``a sin(beta)`` in v_y_dot and
    ``a (cos(beta) - 1)`` in v_x_dot, added to ours below. All remaining differences are second order
    in the slip angles: they shrink 4x each time the slip bound halves.
    """
    ours, cr = _commonroad_pair()
    errs = []
    for alpha_max in (0.01, 0.005, 0.0025):
        zs = _linear_range_samples(ours, alpha_max, 100, seed=3)
        c = np.array([cr(vx, vy, r, a, d) for vx, vy, r, d in zs])
        o = np.array([sd.temporal_derivatives([0, 0, 0, vx, vy, r], [a, d], 0.0, ours)[3:] for vx, vy, r, d in zs])
        beta = np.array([np.arctan2(vy, vx) for vx, vy, _, _ in zs])
        o[:, 0] += a * (np.cos(beta) - 1.0)
        o[:, 1] += a * np.sin(beta)
        scale = np.abs(c).max(axis=0)
        scale[0] = max(scale[0], 1.0)  # v_x_dot is itself second order when a = 0
        errs.append((np.abs(o - c) / scale).max(axis=0))
    errs = np.array(errs)
    # measured at |alpha| <= 0.0025 rad: <= 6.6e-4 of the largest v_y_dot / r_dot, <= 1.2e-3 m/s² in v_x_dot
    assert np.all(errs[-1] < [3e-3, 3e-3, 3e-3]), errs
    # second order: halving the slip bound divides the difference by ~4 (measured 3.95 .. 4.0)
    assert np.all(errs[:-1] / errs[1:] > 3.5), errs


def test_commonroad_single_track_does_not_saturate():
    """Beyond the linear range the models part: ST's lateral force keeps growing with slip, ours stops at mu F_z."""
    ours, cr = _commonroad_pair()
    vx, delta = 20.0, 0.2  # front slip angle 0.2 rad, straight running
    r_dot_cr = cr(vx, 0.0, 0.0, 0.0, delta)[2]
    r_dot = sd.temporal_derivatives([0, 0, 0, vx, 0.0, 0.0], [0.0, delta], 0.0, ours)[5]
    peak = ours.l_f * ours.mu * ours.static_loads[0] / ours.I_z
    assert r_dot <= peak
    assert r_dot_cr > 3.5 * peak  # 21.92 F_z * 0.2 rad vs 1.05 F_z


# ---------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "field, value",
    [
        ("mass", 0.0), ("mass", -1.0), ("mass", float("nan")), ("I_z", 0.0), ("I_z", float("inf")),
        ("l_f", 0.0), ("l_r", -0.5), ("h_cg", -0.1), ("mu", 0.0), ("tyre_B_f", 0.0), ("tyre_B_r", -3.0),
        ("tyre_C_f", 2.0), ("tyre_C_r", 0.0), ("tyre_E_f", 1.5), ("tyre_E_r", float("nan")),
        ("v_floor", 0.0), ("v_blend_low", 0.5), ("v_blend_high", 2.0), ("tau_kin", 0.0), ("g", 0.0),
        ("mass", True), ("mass", "1000"),
    ],
)
def test_bad_parameters_name_the_field(field, value):
    with pytest.raises(ModelError, match=rf"DynamicParams\.{field}: expected"):
        dataclasses.replace(P, **{field: value})


def test_params_are_frozen_and_bounds_are_inclusive_where_documented():
    with pytest.raises(dataclasses.FrozenInstanceError):
        P.mass = 1.0  # type: ignore[misc]
    dataclasses.replace(P, h_cg=0.0, tyre_E_f=1.0, v_blend_low=2 * P.v_floor)  # all allowed


def test_domain_check_names_the_index():
    x = np.tile([0.0, 0.0, 0.0, 10.0, 0.0, 0.0], (4, 1))
    u = np.tile([0.0, 0.0], (4, 1))
    k = np.full(4, 0.1)
    sd.check_domain(x, u, k, P)
    bad = x.copy()
    bad[2, 0] = 12.0
    with pytest.raises(InputError, match=r"horizon index 2.*centre of curvature"):
        sd.check_domain(bad, u, k, P)
    bad = x.copy()
    bad[1, 1] = 1.6
    with pytest.raises(InputError, match=r"horizon index 1.*e_psi"):
        sd.check_domain(bad, u, k, P)
    bad = x.copy()
    bad[3, 1], bad[3, 4] = 0.5, 30.0  # sliding sideways faster than it drives along the path
    with pytest.raises(InputError, match=r"horizon index 3.*s_dot"):
        sd.check_domain(bad, u, k, P)
    ub = u.copy()
    ub[0, 0] = 30.0
    with pytest.raises(InputError, match=r"horizon index 0.*front axle"):
        sd.check_domain(x, ub, k, P)
    ub[0, 0] = -30.0
    with pytest.raises(InputError, match=r"^plan: .*rear axle"):
        sd.check_domain(x, ub, k, P, where="plan")


def test_unknown_discretization():
    x, u = np.array([0.0, 0, 0, 10, 0, 0]), np.array([0.0, 0.0])
    with pytest.raises(InputError, match="discretization"):
        sd.linearize(x, u, 0.0, 0.1, P, "trapezoid")
    with pytest.raises(InputError, match="method"):
        sd.discrete_step(x, u, 0.0, 0.1, P, "trapezoid")


def test_axle_peak_factors():
    """D_f = D_r = d is the same model as mu d; unequal D per axle scales each axle's force alone,
    and the analytic Jacobians hold with them (central differences)."""
    x, u, k = _points(np.random.default_rng(11), 40, (5.0, 40.0), 0.6)
    same = dataclasses.replace(P, tyre_D_f=0.9, tyre_D_r=0.9)
    np.testing.assert_allclose(sd.derivatives(x, u, k, same),
                               sd.derivatives(x, u, k, dataclasses.replace(P, mu=0.9 * P.mu)), rtol=1e-13, atol=1e-13)
    PD = dataclasses.replace(P, tyre_D_f=0.93, tyre_D_r=1.06)
    assert PD.cornering_stiffness[0] == pytest.approx(0.93 * P.cornering_stiffness[0], rel=1e-14)
    # only the rear axle changes: the yaw/lateral accelerations differ by the rear force alone
    rear = dataclasses.replace(P, tyre_D_r=1.06)
    d0 = sd.temporal_derivatives(x, u, k, P)
    d1 = sd.temporal_derivatives(x, u, k, rear)
    w = sd.blend_weight(x[:, 3], P)
    dfyr = (d1[:, 4] - d0[:, 4]) * P.mass  # = 0.06 F_yr (weighted by the blend)
    np.testing.assert_allclose(d1[:, 5] - d0[:, 5], -P.l_r * dfyr / P.I_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(d1[:, 3], d0[:, 3])  # the rear force has no v_x component
    assert np.all(np.abs(dfyr) <= 0.06 * P.mu * P.static_loads[1] * 1.5 * w + 1e-9)
    Jx, Ju = sd.jacobians(x, u, k, PD)
    for i in range(len(k)):
        _assert_jac_close(Jx[i], _fd_jac(lambda z, i=i: sd.derivatives(z, u[i], k[i], PD), x[i]), 1e-6)
        _assert_jac_close(Ju[i], _fd_jac(lambda z, i=i: sd.derivatives(x[i], z, k[i], PD), u[i]), 1e-6)


# ------------------------------------------------ slip-consistent reference (issue 20, item 5)
_STEADY_ROWS = [0, 1, 3, 4, 5]  # e_y, e_psi, v_x, v_y, r (time advances)


@pytest.mark.parametrize("radius,speed", [(50.0, 15.0), (250.0, 38.0), (30.0, 5.0), (120.0, 26.0)])
def test_reference_is_a_steady_state_on_a_circle(radius, speed):
    """On a circle at constant speed the reference (e_psi, v_y, r) and inputs (a_x, delta) of the
    dynamic prediction model are a steady state of the model: every derivative but time is ~0."""
    from mpc_tracking.models.prediction import DynamicPrediction

    N = 10
    model = DynamicPrediction(P)
    x, u = model.reference_op(np.full(N + 1, 1.0 / radius), np.full(N, speed), 1.0)
    f = sd.temporal_derivatives(x[:N], u, np.full(N, 1.0 / radius), P)
    a_y = speed**2 / radius
    assert np.max(np.abs(f[:, _STEADY_ROWS])) < 1e-3 * max(a_y, 1.0)
    assert np.all(np.abs(x[:, 1]) > 0) or radius < 40  # the rear axle slips: a heading error
    # the zero-slip reference of before is not a steady state at the limit's side (the plan traded
    # lateral position for it)
    old = DynamicPrediction(P, slip_reference=False)
    xo, uo = old.reference_op(np.full(N + 1, 1.0 / radius), np.full(N, speed), 1.0)
    fo = sd.temporal_derivatives(xo[:N], uo, np.full(N, 1.0 / radius), P)
    if a_y > 3.0:
        assert np.max(np.abs(fo[:, [1, 4]])) > 20 * np.max(np.abs(f[:, [1, 4]]))


def test_steady_cornering_straight_and_beyond_grip():
    e_psi, v_y, r, a_x, delta = sd.steady_cornering([0.0, 0.0], [20.0, 20.0], P, a_ref=[0.0, 1.5])
    np.testing.assert_allclose(np.concatenate([e_psi, v_y, r, delta]), 0.0, atol=1e-9)
    np.testing.assert_allclose(a_x, [0.0, 1.5], atol=1e-9)
    # beyond the tyres' grip (2 g): the linear single track's values, finite
    out = sd.steady_cornering([1 / 20.0], [20.0], P)
    assert all(np.all(np.isfinite(o)) for o in out)
    assert out[2][0] == pytest.approx(20.0 / 20.0)


def test_steady_cornering_agrees_with_a_root_finder():
    kappa, v = 1.0 / 80.0, 22.0

    def rows(z):
        v_y, delta, a_x, e_psi, r = z
        x = np.array([0.0, e_psi, 0.0, v, v_y, r])
        return sd.temporal_derivatives(x, [a_x, delta], kappa, P)[_STEADY_ROWS]

    e_psi, v_y, r, a_x, delta = sd.steady_cornering([kappa], [v], P)
    sol = root(rows, [0.0, 0.03, 0.0, 0.0, v * kappa], tol=1e-12)
    assert sol.success
    np.testing.assert_allclose([v_y[0], delta[0], a_x[0], e_psi[0], r[0]], sol.x, rtol=1e-4, atol=1e-6)


# --- the tyres' peak slip (the plan's steering bound, MPCSettings.steer_within_peak_slip) ---------------------------

@pytest.mark.parametrize("B, C, E", [(10.0, 1.3, 0.0), (8.0, 1.5, 0.6), (12.0, 1.9, 0.97), (14.0, 1.2, -1.5)])
def test_peak_slip_is_where_the_force_peaks(B, C, E):
    """The force's slope is zero at the peak slip, the force there is the peak (D mu F_z), and it is lower on
    either side."""
    a = sd.peak_slip(B, C, E)
    f, slope = sd._pacejka(np.array([a - 1e-3, a, a + 1e-3]), B, C, E)
    assert f[1] == pytest.approx(1.0, abs=1e-12)
    assert abs(slope[1]) < 1e-7 * B
    assert f[0] < f[1] and f[2] < f[1]


def test_peak_slip_without_curvature_is_closed_form():
    assert sd.peak_slip(10.0, 1.3) == pytest.approx(np.tan(np.pi / 2.6) / 10.0, rel=1e-15)


@pytest.mark.parametrize("B, C, E", [(10.0, 1.0, 0.0), (10.0, 0.8, 0.0), (10.0, 1.3, 1.0)])
def test_a_force_without_a_peak_has_none(B, C, E):
    """C <= 1: the force rises towards its peak without reaching it; E = 1 with tan(pi / 2C) beyond pi / 2: psi
    never gets there."""
    assert sd.peak_slip(B, C, E) == np.inf


def test_peak_slip_angles_scale_with_the_grip_estimates_similarity():
    """The grip estimate scales B by 1/ratio and D by ratio (the stiffness held): the peak slip scales by ratio."""
    p = DynamicParams.bmw_320i()
    q = dataclasses.replace(p, tyre_B_f=p.tyre_B_f / 0.7, tyre_B_r=p.tyre_B_r / 0.7, tyre_D_f=0.7, tyre_D_r=0.7)
    np.testing.assert_allclose(q.peak_slip_angles, 0.7 * np.asarray(p.peak_slip_angles), rtol=1e-12)


def test_front_slip_direction_is_steering_minus_the_models_front_slip():
    """atan((v_y + l_f r) / v_x), the direction the model's front slip angle is measured from (alpha_f = delta
    minus it); below twice v_floor with the model's floored speed."""
    p = DynamicParams.bmw_320i()
    rng = np.random.default_rng(5)
    x = np.column_stack([np.zeros((50, 3)), rng.uniform(6.0, 30.0, 50), rng.uniform(-1.0, 1.0, 50),
                         rng.uniform(-0.4, 0.4, 50)])
    beta = sd.front_slip_direction(x, p)
    np.testing.assert_allclose(beta, np.arctan((x[:, 4] + p.l_f * x[:, 5]) / x[:, 3]), rtol=1e-15)
    # below twice v_floor the model divides by the floored speed
    slow = np.array([[0.0, 0.0, 0.0, 0.2, 0.1, 0.0]])
    assert sd.front_slip_direction(slow, p)[0] == pytest.approx(np.arctan(0.1 / (0.5 + 0.04 / 2.0)))
