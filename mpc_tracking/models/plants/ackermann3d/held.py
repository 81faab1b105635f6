"""A control period of the 3D car behind its wheel-torque PI in one compiled call (numba backend).

:func:`torque_pi_stepper` returns ``advance(t, dt, n, v_cmd, delta_cmd) -> t_end`` for
:meth:`WheelTorquePI.held_command_stepper <mpc_tracking.actuation.WheelTorquePI.held_command_stepper>`: ``n`` calls
of ``plant.step(t, dt, actuator(t, dt, v_cmd, delta_cmd, plant))`` in :func:`._held_kernels.held_torque_steps`,
the same floating-point operations (bitwise equal, ``tests/models/plants/test_held_torque.py``). The PI's and the
limiter's state are read from their objects at every call (a ``reset`` or ``set_plan`` made in Python is seen) and
written back after it. A step whose input or state turns non-finite is repeated by the Python path, so the error
(and the state it leaves) are those of ``plant.step``; :class:`~mpc_tracking.errors.NonFiniteStateError` carries
the time that step started at.
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mpc_tracking._optional import numba_available
from mpc_tracking.errors import NonFiniteStateError

__all__ = ["load_kernel", "torque_pi_stepper", "compile_seconds"]

logger = logging.getLogger(__name__)

_KERNEL: Any = None
_SECONDS: float | None = None


def load_kernel() -> Callable[..., int] | None:
    """:func:`._held_kernels.held_torque_steps`, compiled or loaded from numba's on-disk cache on the first call;
    None when numba is not installed."""
    global _KERNEL, _SECONDS
    if _KERNEL is None:
        if not numba_available():
            return None
        t0 = time.perf_counter()
        from mpc_tracking.models.plants.ackermann3d import _held_kernels

        _SECONDS = time.perf_counter() - t0
        _KERNEL = _held_kernels.held_torque_steps
        logger.info("ackermann3d: held-command kernel ready in %.2f s (compile or load from the cache)", _SECONDS)
    return _KERNEL


def compile_seconds() -> float | None:
    """Wall time [s] the first :func:`load_kernel` took (compile or cache load); None before."""
    return _SECONDS


def _table(rows: tuple, width: int) -> np.ndarray:
    """The friction table ``rows`` as a C-contiguous (m, width) float array (m may be 0)."""
    return np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, width))


def torque_pi_stepper(plant: Any, actuator: Any) -> Callable[[float, float, int, float, float], float] | None:
    """``advance(t, dt, n, v_cmd, delta_cmd) -> t_end`` [s] of ``plant`` (an
    :class:`~mpc_tracking.models.plants.ackermann3d.car.Ackermann3D` on the numba backend) behind ``actuator`` (a
    :class:`~mpc_tracking.actuation.WheelTorquePI`: its ``pi``, ``steer``, ``tau_max``, ``traction_fraction`` and
    ``_constants``), or None when numba is not installed.

    A step the kernel stopped at (non-finite input or state) is repeated one call at a time,
    ``plant.step(t, dt, actuator(t, dt, v_cmd, delta_cmd, plant))``, for its error. The commands are checked by the
    caller; the constants are read at every call.
    """
    kernel = load_kernel()
    if kernel is None or plant._numba is None:
        return None
    P = plant.vehicle
    K = plant._K
    sched, patches = _table(P.mu_schedule, 2), _table(P.mu_patches, 4)
    cst = np.empty(27)
    io = np.empty(9)
    loads = np.empty(4)

    def advance(t: float, dt: float, n_steps: int, v_cmd: float, delta_cmd: float) -> float:
        plant._check_dt(dt)
        pi, steer = actuator.pi, actuator.steer  # (the objects the actuator has now)
        mass, b_w, radius, mask, n_driven, brake_all, _ = actuator._constants(P)
        kn = K.P
        cst[:] = (pi.kp, pi.ki, pi.a_max, pi.d_max, pi.v_stop, steer.delta_max, steer.rate_max, mass, b_w, radius,
                  *mask, n_driven, 1.0 if brake_all else 0.0, actuator.traction_fraction, actuator.tau_max,
                  kn.wheelbase, 0.5 * kn.track, 1.0 if K.f32 else 0.0, 1.0 if K.friction_brakes else 0.0,
                  1.0 if K.brake_all else 0.0, P.mu, kn.mu_load, kn.nominal_load,
                  1.0 if P.varying_friction else 0.0)
        integral, plan, tau = pi.integral, pi._plan, pi._tau
        io[:] = (steer.delta, integral, 0.0 if plan is None else 1.0, *(plan if plan is not None else (0.0, 0.0)),
                 tau, plant._mu_now, plant._delta, 0.0 if plant._cs is None else 1.0)
        buf = plant._buf
        st, cached = plant._st, plant._st_array
        if cached is None or cached[0] is not st:  # the state was set since the last step
            buf[:22] = st
        max_sub = plant.max_substep
        k = math.ceil(dt / max_sub - 1e-9) if dt > max_sub else 1
        done = kernel(buf, plant._numba[0], plant._numba[1], loads, cst, io, sched, patches, int(n_steps), float(t),
                      float(dt), k, dt / k, float(v_cmd), float(delta_cmd))
        steer.delta = float(io[0])
        pi.integral = float(io[1])
        if plan is not None:
            pi._tau = float(io[5])
        if done:
            plant._st = st = buf[:22].tolist()
            plant._st_array = (st, buf[:22])
            plant._delta = float(io[7])
            plant._cs = None  # the wheel directions are recomputed from _delta by the next Python step
            mu_now = float(io[6])
            if mu_now != plant._mu_now:
                plant._use_friction(mu_now)  # the scalar constants follow (the kernel's prm already holds mu)
        for _ in range(done):  # the times as n calls of step() add them
            plant.t = t + dt
            t += dt
        for _ in range(n_steps - done):  # (for the error the Python path raises)
            try:
                plant.step(t, dt, actuator(t, dt, v_cmd, delta_cmd, plant))
            except NonFiniteStateError as exc:
                raise NonFiniteStateError(str(exc), exc.t if exc.t is not None else t) from None
            t += dt
        return t

    return advance
