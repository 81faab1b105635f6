"""Fixed-step integrators for plant models.

Every integrator has the signature ``step(f, x, u, dt) -> x_next`` where ``f(x, u) -> dx/dt``.
:func:`integrate` splits a step into equal substeps no longer than ``max_substep``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import InputError

__all__ = ["euler", "rk4", "INTEGRATORS", "get_integrator", "integrate"]

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


def get_integrator(name: str) -> Callable:
    """Look up a fixed-step integrator by name (``"euler"`` or ``"rk4"``)."""
    try:
        return INTEGRATORS[name]
    except KeyError:
        raise InputError(f"integrator: unknown name {name!r}; expected one of {sorted(INTEGRATORS)}") from None


def integrate(f: RHS, x: np.ndarray, u: np.ndarray, dt: float, method: str = "rk4", max_substep: float | None = None) -> np.ndarray:
    """Advance ``x`` by ``dt`` seconds in ``ceil(dt / max_substep)`` equal substeps."""
    step = get_integrator(method)
    n = 1 if not max_substep else max(1, int(np.ceil(dt / max_substep - 1e-12)))
    h = dt / n
    for _ in range(n):
        x = step(f, x, u, h)
    return x
