"""How well the fitted model predicts manoeuvres: one-step and open-loop errors.

The model is what the controller predicts with: the dynamic bicycle
(:func:`~mpc_tracking.models.prediction.spatial_dynamic.temporal_derivatives`, blended to the kinematic
bicycle at low speed) driven by the recorded steering command and, through the fitted first-order
speed loop ``a_x = clip((v_cmd - v_x) / tau, -decel_max, accel_max)``, by the recorded speed command.

* **one-step**: from every measured state, predict ``step`` seconds ahead (a control period) with the
  recorded commands, compare with the measured state there;
* **open-loop**: from the first measured state, predict the whole manoeuvre.

Errors are RMS over the samples of ``v_x``, ``v_y`` (of the CG) [m/s], ``r`` [rad/s] and the lateral
acceleration ``a_y = v_y' + r v_x`` [m/s²] (measured: Savitzky-Golay derivative).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from mpc_tracking.identification.fit import LongitudinalFit, derivative
from mpc_tracking.identification.manoeuvres import Recording
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams, temporal_derivatives

__all__ = ["predict_errors", "ERROR_KEYS"]

#: the quantities whose RMS error is reported
ERROR_KEYS = ("v_x", "v_y", "r", "a_y")


def _rhs(X: np.ndarray, v_cmd: np.ndarray, delta: np.ndarray, p: DynamicParams, lon: LongitudinalFit,
         dt: float) -> np.ndarray:
    """d/dt of ``X = (v_x, v_y, r)`` (..., 3) with the speed loop in front of the model's ``a_x``."""
    tau = max(lon.tau, dt)  # a loop without measurable lag tracks its command within a sample
    ax = np.clip((v_cmd - X[..., 0]) / tau, -lon.decel_max, lon.accel_max)
    x6 = np.zeros((*X.shape[:-1], 6))
    x6[..., 3:] = X
    return temporal_derivatives(x6, np.stack([ax, delta], axis=-1), 0.0, p)[..., 3:]


def substeps(p: DynamicParams, dt: float, v_x: float) -> int:
    """RK4 substeps per sample that keep the stiff lateral/yaw modes stable (``h lambda <= 1.5``) at
    speeds from ``v_x`` [m/s] up (below ``v_blend_low`` the kinematic blend takes over)."""
    cf, cr = p.cornering_stiffness
    v = max(p.v_blend_low, v_x)
    lam = (cf + cr) / (p.mass * v) + (p.l_f**2 * cf + p.l_r**2 * cr) / (p.I_z * v)
    return max(1, math.ceil(dt * lam / 1.5))


def _rk4(X: np.ndarray, v_cmd: np.ndarray, delta: np.ndarray, p: DynamicParams, lon: LongitudinalFit,
         dt: float) -> np.ndarray:
    vmin = float(np.min(X[..., 0])) if np.all(np.isfinite(X[..., 0])) else p.v_blend_low
    n = substeps(p, dt, vmin)
    h = dt / n
    for _ in range(n):
        k1 = _rhs(X, v_cmd, delta, p, lon, dt)
        k2 = _rhs(X + 0.5 * h * k1, v_cmd, delta, p, lon, dt)
        k3 = _rhs(X + 0.5 * h * k2, v_cmd, delta, p, lon, dt)
        k4 = _rhs(X + h * k3, v_cmd, delta, p, lon, dt)
        X = X + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return X


def _lateral_acc(X: np.ndarray, v_cmd: np.ndarray, delta: np.ndarray, p: DynamicParams, lon: LongitudinalFit,
                 dt: float) -> np.ndarray:
    return _rhs(X, v_cmd, delta, p, lon, dt)[..., 1] + X[..., 2] * X[..., 0]


def _rms(e: np.ndarray) -> float:
    return float(np.sqrt(np.mean(e * e))) if e.size and np.all(np.isfinite(e)) else math.inf


def predict_errors(rec: Recording, p: DynamicParams, lon: LongitudinalFit, step: float,
                   window: float) -> dict[str, Any]:
    """One-step (``step`` [s] ahead) and open-loop RMS errors of the model on one recording.

    Returns
    -------
    dict
        ``{"one_step": {key: rms}, "open_loop": {key: rms}, "step": step, "samples": K}`` with the
        keys of :data:`ERROR_KEYS`; an open-loop prediction that diverges has ``inf`` errors.
    """
    dt = rec.dt
    meas = np.stack([rec.v_x, rec.v_y_cg(p.l_r), rec.r], axis=-1)
    a_meas = derivative(meas[:, 1], dt, window) + rec.r * rec.v_x
    K = len(rec)
    n = max(1, round(step / dt))
    out: dict[str, Any] = {"step": n * dt, "samples": K}
    # one-step: every start k at once
    starts = np.arange(0, K - n)
    X = meas[starts].copy()
    with np.errstate(all="ignore"):
        for j in range(n):
            X = _rk4(X, rec.v_cmd[starts + j], rec.delta[starts + j], p, lon, dt)
        end = starts + n
        a_pred = _lateral_acc(X, rec.v_cmd[end], rec.delta[end], p, lon, dt)
    err = X - meas[end]
    out["one_step"] = {k: _rms(e) for k, e in zip(ERROR_KEYS, (*err.T, a_pred - a_meas[end]), strict=True)}
    # open loop: the whole manoeuvre from the first state
    P = np.empty_like(meas)
    x = meas[0].copy()
    with np.errstate(all="ignore"):
        for k in range(K):
            P[k] = x
            if not np.all(np.isfinite(x)) or abs(x[0]) > 1e3:
                P[k:] = np.nan
                break
            x = _rk4(x, rec.v_cmd[k], rec.delta[k], p, lon, dt)
        a_pred = _lateral_acc(P, rec.v_cmd, rec.delta, p, lon, dt)
    err = P - meas
    out["open_loop"] = {k: _rms(e) for k, e in zip(ERROR_KEYS, (*err.T, a_pred - a_meas), strict=True)}
    return out
