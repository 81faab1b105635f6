"""Replay a log through a controller: what it would have commanded from the logged states.

:func:`replay` feeds the logged pose and speed of every odometry sample to a controller, step by
step (the projection onto the path with the previous arc length as hint, the measurements the
prediction model needs), and sets its commands beside the logged ones. A run made by the same
controller replays to the solver's tolerance; a human drive shows where the controller disagrees.
To reproduce one step's QP, replay up to it (``stop=k + 1``) and read
``controller.step_problem()``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import LogError
from mpc_tracking.logs.table import LogTable, TopicSeries

__all__ = ["replay", "ReplayResult"]


@dataclass
class ReplayResult:
    """Logged and replayed commands, one row per replayed step.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Time [s] of each step.
    v_logged, delta_logged : ndarray, shape (K,)
        The commands in the log [m/s], [rad] (NaN where the log has none).
    v_replayed, delta_replayed : ndarray, shape (K,)
        What the controller commanded from the logged state.
    status : ndarray, shape (K,)
        The controller's status code of each step.
    e_y : ndarray, shape (K,)
        Logged lateral error [m] (from the projection).
    """

    t: np.ndarray
    v_logged: np.ndarray
    delta_logged: np.ndarray
    v_replayed: np.ndarray
    delta_replayed: np.ndarray
    status: np.ndarray
    e_y: np.ndarray

    def agreement(self) -> dict[str, float]:
        """RMS and largest differences replayed - logged: ``v_rms``, ``v_max`` [m/s], ``delta_rms``,
        ``delta_max`` [rad]."""
        out = {}
        for k, a, b in (("v", self.v_replayed, self.v_logged), ("delta", self.delta_replayed, self.delta_logged)):
            d = (a - b)[np.isfinite(a - b)]
            out[f"{k}_rms"] = float(np.sqrt(np.mean(d ** 2))) if d.size else math.nan
            out[f"{k}_max"] = float(np.max(np.abs(d))) if d.size else math.nan
        return out

    def summary(self) -> str:
        """Agreement as a small table."""
        a = self.agreement()
        return (f"  steps replayed   {self.t.size}\n"
                f"  speed command    RMS {a['v_rms']:.4g} m/s, max {a['v_max']:.4g} m/s\n"
                f"  steering         RMS {a['delta_rms']:.4g} rad, max {a['delta_max']:.4g} rad")

    def columns(self) -> dict[str, np.ndarray]:
        """The rows as named columns (for CSV)."""
        return {"t": self.t, "v_logged": self.v_logged, "v_replayed": self.v_replayed,
                "delta_logged": self.delta_logged, "delta_replayed": self.delta_replayed, "e_y": self.e_y,
                "status": self.status}

    def plot(self) -> Any:
        """Figure with the logged and replayed speed and steering commands over time; returns ``(fig, axes)``."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8, 5))
        axes = fig.subplots(2, 1, sharex=True)
        for ax, (logged, replayed, label) in zip(axes, ((self.v_logged, self.v_replayed, "v command [m/s]"),
                                                        (self.delta_logged, self.delta_replayed, "steering [rad]")),
                                                 strict=True):
            ax.plot(self.t, logged, label="logged")
            ax.plot(self.t, replayed, "--", label="replayed")
            ax.set_ylabel(label)
            ax.legend(loc="best")
        axes[-1].set_xlabel("t [s]")
        return fig, axes


def _first(table: LogTable, topic: str | None, kinds: tuple[str, ...], what: str) -> TopicSeries | None:
    if topic is not None:
        return table.topic(topic)
    for kind in kinds:
        found = table.of_type(kind)
        if found:
            return found[0]
    if what == "pose":
        raise LogError(f"{table.source}: no odometry or pose topic to replay; give pose_topic=")
    return None


def replay(log: str | Path | LogTable, path: Any, controller: Any, *, pose_topic: str | None = None,
           cmd_topic: str | None = None, start: int = 0, stop: int | None = None) -> ReplayResult:
    """Feed the logged states to ``controller`` and record what it commands.

    Parameters
    ----------
    log : path or LogTable
    path : ReferencePath
        The path the controller follows.
    controller : SpatialMPC
        Reset before the first step.
    pose_topic, cmd_topic : str, optional
        Odometry (or pose) and command topics; default the first ``Odometry`` (else ``PoseStamped``)
        and the first Ackermann (else Twist) topic.
    start, stop : int
        Samples of the pose topic to replay (``stop`` None: to the end).

    Returns
    -------
    ReplayResult
    """
    from mpc_tracking.logs.reader import read_log

    table = log if isinstance(log, LogTable) else read_log(log)
    pose = _first(table, pose_topic, ("Odometry", "PoseStamped", "PoseWithCovarianceStamped"), "pose")
    if pose is None:
        raise LogError(f"{table.source}: no pose topic (Odometry or PoseStamped) to replay; pass pose_topic=")
    cmd = _first(table, cmd_topic, ("AckermannDriveStamped", "AckermannDrive", "TwistStamped", "Twist"), "cmd")
    n = len(pose)
    idx = range(max(start, 0), n if stop is None else min(stop, n))
    t = pose.t[list(idx)]
    x, y, yaw = (pose[k][list(idx)] for k in ("x", "y", "yaw"))
    v = pose.fields.get("vx", np.full(n, np.nan))[list(idx)]
    if np.all(np.isnan(v)) and len(t) > 1:
        v = np.hypot(np.gradient(x, t), np.gradient(y, t))
    vy = pose.fields.get("vy", np.zeros(n))[list(idx)]
    r = pose.fields.get("yaw_rate", np.zeros(n))[list(idx)]
    if cmd is not None:
        kv, kd = ("speed", "steering_angle") if "speed" in cmd.fields else ("v", "steering_angle")
        v_log = _at(cmd.t, cmd.fields.get(kv), t)
        d_log = _at(cmd.t, cmd.fields.get(kd), t)
    else:
        v_log = d_log = np.full(t.size, np.nan)
    controller.reset()
    measures = bool(getattr(getattr(controller, "model", None), "MEASURES", False))
    out = np.full((t.size, 4), np.nan)
    s_prev = None
    for k in range(t.size):
        if s_prev is None:  # a global search first, then refined from its arc length as the closed loop does
            s_prev = path.project(float(x[k]), float(y[k]), float(yaw[k])).s
        proj = path.project(float(x[k]), float(y[k]), float(yaw[k]), s_hint=s_prev)
        s_prev = proj.s
        measured = {"speed": float(v[k])}
        if measures:  # the dynamic model's states, as the closed loop measures them
            measured.update(v_x=float(v[k]), v_y=float(vy[k]), r=float(r[k]))
        sol = controller.solve(proj, t=float(t[k]), measured=measured)
        out[k] = (sol.v, sol.delta, sol.status.code, float(proj.e_y))
    return ReplayResult(t, v_log, d_log, out[:, 0], out[:, 1], out[:, 2].astype(int), out[:, 3])


def _at(ts: np.ndarray, values: np.ndarray | None, t: np.ndarray) -> np.ndarray:
    """The last logged value at or before each ``t`` (commands hold until the next one)."""
    if values is None or ts.size == 0:
        return np.full(t.size, np.nan)
    k = np.searchsorted(ts, t + 1e-9, side="right") - 1
    return np.where(k >= 0, values[np.clip(k, 0, ts.size - 1)], np.nan)
