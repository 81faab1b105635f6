"""Integrators used by the plants: SO(3) exponential, orthonormalization, semi-implicit Euler, solve_ivp."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from mpc_tracking import InputError
from mpc_tracking.models.integrators import (
    get_integrator,
    integrate,
    orthonormalize,
    semi_implicit_euler_so3,
    so3_exp,
    solve_ivp_step,
)


@pytest.mark.parametrize("phi", [[0.3, -0.2, 0.5], [1e-9, 0.0, -2e-9], [0.0, 0.0, 3.0], [2.0, 1.0, -1.0]])
def test_so3_exp_matches_rotvec(phi):
    phi = np.array(phi)
    np.testing.assert_allclose(so3_exp(phi), Rotation.from_rotvec(phi).as_matrix(), atol=1e-15)
    batch = so3_exp(np.tile(phi[:, None], (1, 3)))
    assert batch.shape == (3, 3, 3)
    np.testing.assert_allclose(batch[:, :, 1], so3_exp(phi), atol=0)


def test_orthonormalize():
    R = Rotation.from_rotvec([0.4, 0.1, -0.3]).as_matrix() + 1e-6 * np.arange(9).reshape(3, 3)
    Q = orthonormalize(R)
    np.testing.assert_allclose(Q @ Q.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(Q) == pytest.approx(1.0) and np.max(np.abs(Q - R)) < 5e-5


def test_semi_implicit_euler_so3_torque_free_spin():
    # constant angular velocity, no acceleration: exact rotation about the spin axis, stays in SO(3)
    p, R, v, w = np.zeros(3), np.eye(3), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.5])
    for _ in range(1000):
        p, R, v, w = semi_implicit_euler_so3(p, R, v, w, np.zeros(3), np.zeros(3), 0.01)
    np.testing.assert_allclose(R, Rotation.from_rotvec([0, 0, 5.0]).as_matrix(), atol=1e-12)
    np.testing.assert_allclose(p, [10.0, 0.0, 0.0])
    assert np.max(np.abs(R.T @ R - np.eye(3))) < 1e-13


def test_solve_ivp_step_and_registry():
    f = lambda x, u: -u[0] * x  # noqa: E731
    x = solve_ivp_step(f, np.array([1.0, 2.0]), np.array([0.5]), 2.0)
    np.testing.assert_allclose(x, np.exp(-1.0) * np.array([1.0, 2.0]), rtol=1e-7)
    np.testing.assert_allclose(integrate(f, np.array([1.0]), np.array([0.5]), 2.0, "rk4", 0.01), [np.exp(-1.0)], rtol=1e-9)
    assert get_integrator("solve_ivp") is solve_ivp_step
    with pytest.raises(InputError, match="unknown name 'rk5'"):
        get_integrator("rk5")
