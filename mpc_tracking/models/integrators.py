"""Integrators for plant models: fixed-step (Euler, RK4), semi-implicit Euler on SO(3), adaptive (scipy).

Every integrator has the signature ``step(f, x, u, dt) -> x_next`` where ``f(x, u) -> dx/dt``.
:func:`integrate` splits a step into equal substeps no longer than ``max_substep``.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mpc_tracking.errors import InputError

__all__ = [
    "euler", "rk4", "INTEGRATORS", "get_integrator", "integrate", "substeps", "affine_step",
    "so3_exp", "orthonormalize", "semi_implicit_euler_so3", "solve_ivp_step",
]

RHS = Callable[[np.ndarray, np.ndarray], np.ndarray]


def euler(f: RHS, x: np.ndarray, u: np.ndarray, dt: float) -> np.ndarray:
    """Explicit Euler step."""
    return x + dt * f(x, u)


def rk4(f: RHS, x: np.ndarray, u: np.ndarray, dt: float) -> np.ndarray:
    """Classic fourth-order Runge-Kutta step (input held constant over the step)."""
    k1 = f(x, u)
    k2 = f(x + 0.5 * dt * k1, u)
    k3 = f(x + 0.5 * dt * k2, u)
    k4 = f(x + dt * k3, u)
    return x + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


INTEGRATORS: dict[str, Callable] = {"euler": euler, "rk4": rk4}

#: ``fj(x) -> (f, Jx, Ju)``: a model's derivative and its Jacobians at states ``x`` (input held)
RHSJac = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def affine_step(fj: RHSJac, x_op: np.ndarray, u_op: np.ndarray, h: np.ndarray | float,
                method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One explicit step (Euler or RK4) of ``dx = f(x, u)`` and its exact sensitivities.

    Used by the prediction models, whose independent variable is the arc length.

    Parameters
    ----------
    fj : callable
        ``fj(x) -> (f (..., n), Jx (..., n, n), Ju (..., n, m))`` with the input ``u_op`` held.
    x_op : ndarray, shape (..., n)
    u_op : ndarray, shape (..., m)
    h : float or ndarray, shape (...)
        Step length.
    method : {"euler", "rk4"}

    Returns
    -------
    A : ndarray, shape (..., n, n)
    B : ndarray, shape (..., n, m)
    f : ndarray, shape (..., n)
        So that the step is exact at the operating point: ``x_next = A x_op + B u_op + f``.
    """
    hv = np.asarray(h, dtype=float)[..., None]
    H = hv[..., None]
    eye = np.eye(x_op.shape[-1])
    if method == "euler":
        k1, J1x, J1u = fj(x_op)
        A = eye + H * J1x
        B = H * J1u
        x_next = x_op + hv * k1
    elif method == "rk4":
        k1, J1x, J1u = fj(x_op)
        k2, J2x, J2u = fj(x_op + 0.5 * hv * k1)
        K2x = J2x @ (eye + 0.5 * H * J1x)
        K2u = J2x @ (0.5 * H * J1u) + J2u
        k3, J3x, J3u = fj(x_op + 0.5 * hv * k2)
        K3x = J3x @ (eye + 0.5 * H * K2x)
        K3u = J3x @ (0.5 * H * K2u) + J3u
        k4, J4x, J4u = fj(x_op + hv * k3)
        K4x = J4x @ (eye + H * K3x)
        K4u = J4x @ (H * K3u) + J4u
        A = eye + H / 6.0 * (J1x + 2 * K2x + 2 * K3x + K4x)
        B = H / 6.0 * (J1u + 2 * K2u + 2 * K3u + K4u)
        x_next = x_op + hv / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    else:
        raise InputError(f"discretization: expected one of ('euler', 'rk4'), got {method!r}")
    f = x_next - np.einsum("...ij,...j->...i", A, x_op) - np.einsum("...ij,...j->...i", B, u_op)
    return A, B, f


def get_integrator(name: str) -> Callable:
    """Look up a fixed-step integrator by name (``"euler"`` or ``"rk4"``)."""
    try:
        return INTEGRATORS[name]
    except KeyError:
        raise InputError(f"integrator: unknown name {name!r}; expected one of {sorted(INTEGRATORS)}") from None


def substeps(dt: float, max_substep: float) -> int:
    """Number of equal substeps no longer than ``max_substep`` in a step of ``dt`` seconds (at least 1)."""
    return max(1, math.ceil(dt / max_substep - 1e-12))


def integrate(f: RHS, x: np.ndarray, u: np.ndarray, dt: float, method: str = "rk4",
              max_substep: float | None = None) -> np.ndarray:
    """Advance ``x`` by ``dt`` seconds in ``ceil(dt / max_substep)`` equal substeps."""
    step = get_integrator(method)
    n = 1 if not max_substep else substeps(dt, max_substep)
    h = dt / n
    for _ in range(n):
        x = step(f, x, u, h)
    return x


# ---------------------------------------------------------------------------- SO(3) + adaptive ODE
def so3_exp(phi: np.ndarray) -> np.ndarray:
    """Rotation matrix ``exp([phi]x)`` (Rodrigues) for a rotation vector ``phi``.

    Parameters
    ----------
    phi : ndarray, shape (3,) or (3, n)
        Rotation vector(s) [rad]; a (3, n) array gives (3, 3, n) matrices (one per column).

    Returns
    -------
    ndarray, shape (3, 3) or (3, 3, n)
    """
    phi = np.asarray(phi, dtype=float)
    x, y, z = phi[0], phi[1], phi[2]
    th2 = x * x + y * y + z * z
    th = np.sqrt(th2)
    small = th2 < 1e-12
    th_safe = np.where(small, 1.0, th)
    a = np.where(small, 1.0 - th2 / 6.0, np.sin(th_safe) / th_safe)
    b = np.where(small, 0.5 - th2 / 24.0, (1.0 - np.cos(th_safe)) / (th_safe * th_safe))
    return np.array(
        [
            [1.0 - b * (y * y + z * z), -a * z + b * x * y, a * y + b * x * z],
            [a * z + b * x * y, 1.0 - b * (x * x + z * z), -a * x + b * y * z],
            [-a * y + b * x * z, a * x + b * y * z, 1.0 - b * (x * x + y * y)],
        ]
    )


def orthonormalize(R: np.ndarray) -> np.ndarray:
    """Nearest-to-rows Gram-Schmidt re-orthonormalization of a rotation matrix (3, 3) or (3, 3, n)."""
    R = np.array(R, dtype=float)
    r0 = R[0] / np.sqrt(np.sum(R[0] * R[0], axis=0))
    r1 = R[1] - np.sum(r0 * R[1], axis=0) * r0
    r1 = r1 / np.sqrt(np.sum(r1 * r1, axis=0))
    r2 = np.array([r0[1] * r1[2] - r0[2] * r1[1], r0[2] * r1[0] - r0[0] * r1[2], r0[0] * r1[1] - r0[1] * r1[0]])
    return np.array([r0, r1, r2])


def semi_implicit_euler_so3(
    p: np.ndarray, R: np.ndarray, v: np.ndarray, w: np.ndarray, dv: np.ndarray, dw: np.ndarray, dt: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One semi-implicit (symplectic) Euler step of a rigid body on SO(3).

    ``v += dt dv; w += dt dw; p += dt v_new; R <- R exp([w_new dt]x)``.

    Parameters
    ----------
    p, v : ndarray (3,)
        World position [m] and velocity [m/s].
    R : ndarray (3, 3)
        Body -> world rotation.
    w : ndarray (3,)
        Body-frame angular velocity [rad/s].
    dv, dw : ndarray (3,)
        Accelerations (world linear [m/s^2], body angular [rad/s^2]) evaluated at the old state.
    dt : float
        Step [s].

    Returns
    -------
    (p, R, v, w) after the step.
    """
    v_new = v + dt * dv
    w_new = w + dt * dw
    return p + dt * v_new, R @ so3_exp(w_new * dt), v_new, w_new


def solve_ivp_step(
    f: RHS, x: np.ndarray, u: np.ndarray, dt: float, method: str = "RK45", rtol: float = 1e-8, atol: float = 1e-10
) -> np.ndarray:
    """Advance ``x`` by ``dt`` with :func:`scipy.integrate.solve_ivp` (adaptive step), input held constant.

    Raises
    ------
    SimulationError
        When the solver reports failure.
    """
    from scipy.integrate import solve_ivp

    from mpc_tracking.errors import SimulationError

    sol = solve_ivp(lambda _t, y: f(y, u), (0.0, dt), np.asarray(x, dtype=float), method=method, rtol=rtol, atol=atol)
    if not sol.success:
        raise SimulationError(f"solve_ivp ({method}) failed over dt = {dt} s: {sol.message}")
    return sol.y[:, -1]


INTEGRATORS["solve_ivp"] = solve_ivp_step
