"""SimulationResult: the logged time series of a closed-loop run, its metrics, save/load."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.mpc.settings import Status

__all__ = ["SimulationResult", "Outcome", "STATUS_CODES", "SERIES", "OPTIONAL_SERIES", "body_overshoot"]

#: MPC step statuses and their integer codes in the logs (from :class:`~mpc_tracking.mpc.settings.Status`)
STATUS_CODES = {status.value: status.code for status in Status}
#: the per-control-step time series: name -> unit and meaning (the one list; the loop fills exactly these)
SERIES = {
    "t": "s, time",
    "x": "m, controller reference point (rear axle)",
    "y": "m, controller reference point (rear axle)",
    "yaw": "rad, plant heading",
    "s": "m, arc length of the projection (wrapped on loops)",
    "e_y": "m, lateral error (positive left)",
    "e_psi": "rad, heading error",
    "v": "m/s, plant speed",
    "v_cmd": "m/s, commanded speed",
    "delta_cmd": "rad, commanded steering angle",
    "v_ref": "m/s, planned speed of the first step (NaN when not solved)",
    "lb": "m, corridor lower bound on e_y at the car",
    "ub": "m, corridor upper bound on e_y at the car",
    "status": "MPC step status code (STATUS_CODES)",
    "solve_time": "s, QP solve time (the solver's own; with solver=\"daqp\" condensing included)",
    "step_time": "s, whole loop step (observe, controller, plant steps)",
    "iterations": "QP solver iterations (OSQP: ADMM, DAQP: active-set changes)",
    "corridor_violation": "m, largest corridor slack used",
}
#: series a run carries only when the loop has them: the controller's grip estimate (``grip_estimation``)
#: and the road friction under a plant that reports it (``road_friction``, e.g. ackermann3d)
OPTIONAL_SERIES = {
    "mu_est": "-, the controller's friction estimate (weaker axle, mpc.grip)",
    "grip_share": "-, the share of its nominal limits the controller plans with (mpc.grip.ratio; 1: as set)",
    "mu_true": "-, the road's friction under the plant",
}


class Outcome(str, Enum):
    """Why a closed-loop run stopped; compares equal to its string value (``Outcome.COMPLETED == "completed"``)."""

    COMPLETED = "completed"  # the requested laps of a closed path
    END_OF_PATH = "end_of_path"  # the end of an open path
    LEFT_CORRIDOR = "left_corridor"  # the reference point went beyond a corridor edge + tolerance
    SAFE_STOP = "safe_stop"  # the controller's fallback ended in a stop
    NON_FINITE_STATE = "non_finite_state"  # the plant's state became NaN/inf
    TIME_LIMIT = "time_limit"  # t_max reached
    ERROR = "error"  # the controller or the plant raised; the message says what
    STEP_WALL_LIMIT = "step_wall_limit"  # one loop step took longer than simulate(step_wall_limit=) (a stall)

    def __str__(self) -> str:
        return self.value

    @property
    def success(self) -> bool:
        """True for the outcomes that reach the run's goal."""
        return self in (Outcome.COMPLETED, Outcome.END_OF_PATH)


@dataclass(repr=False)
class SimulationResult:
    """Closed-loop run: time series (one sample per control step), outcome and metrics.

    Attributes
    ----------
    series : dict of str -> ndarray, shape (K,)
        ``t`` [s], ``x, y`` [m] (controller reference point), ``yaw`` [rad], ``s`` [m] (wrapped),
        ``e_y`` [m], ``e_psi`` [rad], ``v`` [m/s] (plant speed), ``v_cmd, delta_cmd`` (command),
        ``v_ref`` [m/s], ``lb, ub`` [m] (corridor at the car), ``status`` (see
        :data:`STATUS_CODES`), ``solve_time, step_time`` [s], ``iterations``,
        ``corridor_violation`` [m].
    horizon_xy : ndarray, shape (K, N+1, 2)
        Predicted positions of every step.
    reason : Outcome
        Why the run stopped (compares equal to its string value, e.g. ``"completed"``).
    message : str
        Details of the outcome (the error's text for ``Outcome.ERROR``); empty when none.
    laps_completed : int
    lap_times : list of float
        Duration of each completed lap [s].
    info : dict
        Run description (path name, plant, settings) for the record.

    Notes
    -----
    In a notebook the result shows itself as a one-line ``repr`` (outcome, laps, lap time, RMS/max
    e_y, steps) or, in Jupyter, as a small table of the summary metrics with a plan-view sketch
    (``_repr_html_``); :meth:`to_pandas` gives the time series as a DataFrame and :meth:`plot` the
    figures.
    """

    series: dict[str, np.ndarray]
    horizon_xy: np.ndarray
    reason: Outcome
    laps_completed: int = 0
    lap_times: list[float] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    path: Any = None
    vehicle: Any = None
    message: str = ""

    def __post_init__(self) -> None:
        self.reason = _as_outcome(self.reason, self)

    # ------------------------------------------------------------------ access
    def __getattr__(self, name: str) -> np.ndarray:
        series = self.__dict__.get("series")
        if series is not None and name in series:
            return series[name]
        raise AttributeError(name)

    def __len__(self) -> int:
        return int(self.series["t"].size)

    @property
    def success(self) -> bool:
        """True when the run reached its goal (requested laps or the end of an open path)."""
        return self.reason.success

    # ------------------------------------------------------------------ metrics
    @property
    def metrics(self) -> dict[str, Any]:
        """Summary figures: lap completed, lap time [s], RMS/max ``|e_y|`` [m], max ``|delta|`` [rad],
        infeasible (non-solved) steps, corridor-violation steps, solve-time median/p95/max [s],
        real-time overruns (steps whose controller time exceeded the control period) and the worst
        step time [s]."""
        s = self.series
        n = len(self)
        ey = s["e_y"] if n else np.zeros(1)
        st = s["solve_time"] if n else np.zeros(1)
        step = s["step_time"] if n else np.zeros(1)
        failed = (Status.FALLBACK.code, Status.SAFE_STOP.code)
        bad = int(np.sum(np.isin(s["status"], failed))) if n else 0
        rejoin = int(np.sum(s["status"] == Status.REJOIN.code)) if n else 0
        return {
            "reason": self.reason.value,
            "message": self.message,
            "lap_completed": bool(self.success),
            "laps_completed": int(self.laps_completed),
            "lap_time": float(self.lap_times[0]) if self.lap_times else float("nan"),
            "duration": float(s["t"][-1]) if n else 0.0,
            "steps": n,
            "rms_e_y": float(np.sqrt(np.mean(ey**2))),
            "max_abs_e_y": float(np.max(np.abs(ey))),
            "max_abs_e_psi": float(np.max(np.abs(s["e_psi"]))) if n else 0.0,
            "max_abs_delta": float(np.max(np.abs(s["delta_cmd"]))) if n else 0.0,
            "mean_speed": float(np.mean(s["v"])) if n else 0.0,
            "infeasible_steps": bad,
            "rejoin_steps": rejoin,
            "corridor_violation_steps": int(np.sum(np.nan_to_num(s["corridor_violation"]) > 1e-3)) if n else 0,
            "max_body_overshoot": self._max_body_overshoot(),
            "solve_time_median": float(np.median(st)),
            "solve_time_p95": float(np.percentile(st, 95)),
            "solve_time_max": float(np.max(st)),
            "step_time_median": float(np.median(step)),
            "step_time_p95": float(np.percentile(step, 95)),
            **self._overruns(step if n else np.zeros(0)),
        }

    def _overruns(self, step: np.ndarray) -> dict[str, Any]:
        """Real-time accounting: steps whose controller time exceeded the control period (count, and
        the worst step time [s]; NaN without a known period)."""
        T = (self.info or {}).get("control_period")
        if not T:
            return {"realtime_overruns": 0, "worst_step_time": float(np.max(step)) if step.size else 0.0,
                    "control_period": float("nan")}
        return {"realtime_overruns": int(np.sum(step > T)), "worst_step_time": float(np.max(step)) if step.size
                else 0.0, "control_period": float(T)}

    def _max_body_overshoot(self) -> float:
        """Largest distance [m] a body corner went beyond the track edge (NaN without path/vehicle)."""
        if self.path is None or self.vehicle is None:
            return float("nan")
        if len(self) == 0:
            return 0.0
        s = self.series
        return float(np.max(body_overshoot(self.path, self.vehicle, s["x"], s["y"], s["yaw"], s_hint=s["s"])))

    def summary(self) -> str:
        """A short multi-line text summary of :attr:`metrics`.

        Units are those of the ``mpc-tracking run`` table: lengths in metres, times in seconds,
        solver times in milliseconds.
        """
        m = self.metrics
        # a baseline controller (info["controller"]: pure_pursuit, stanley) has no solver: its time is the command's
        timed = "MPC solve time " if self.info.get("controller", "mpc") in ("mpc", "cvxpy") else "command time   "
        lines = [
            f"outcome            {m['reason']} (laps completed: {m['laps_completed']})"
            + (f": {self.message}" if self.message else ""),
            (f"lap time           {m['lap_time']:.2f} s" if self.lap_times
             else f"duration           {m['duration']:.2f} s"),
            f"lateral error      RMS {m['rms_e_y']:.3f} m, max {m['max_abs_e_y']:.3f} m",
            f"{timed}    median {m['solve_time_median'] * 1e3:.3f} ms, p95 {m['solve_time_p95'] * 1e3:.3f} ms "
            f"(whole step median {m['step_time_median'] * 1e3:.3f} ms)",
            f"infeasible steps   {m['infeasible_steps']} of {m['steps']}",
        ]
        if m["rejoin_steps"]:
            lines.append(f"rejoin steps       {m['rejoin_steps']} (outside the spatial model's domain, steered "
                         "back by pure pursuit)")
        if np.isfinite(m["control_period"]):
            lines.append(f"real time          {m['realtime_overruns']} of {m['steps']} steps over the "
                         f"{m['control_period'] * 1e3:.0f} ms period (worst {m['worst_step_time'] * 1e3:.1f} ms)")
        grip = self._grip_line()
        if grip:
            lines.append(grip)
        if np.isfinite(m["max_body_overshoot"]):
            o = m["max_body_overshoot"]
            past = "body never past it" if o == 0.0 else f"body up to {o:.3f} m past it"
            lines.append(f"track edge         {past}")
        return "\n".join(lines)

    def _grip_line(self) -> str:
        """The summary's grip line: the estimate's range and, with the truth logged, its error ("" without)."""
        mu = self.series.get("mu_est")
        if mu is None or not np.size(mu):
            return ""
        text = f"grip estimate      mu {float(np.min(mu)):.3f} to {float(np.max(mu)):.3f} (last {float(mu[-1]):.3f})"
        true = self.series.get("mu_true")
        if true is not None and np.size(true) == np.size(mu):
            err = np.abs(np.asarray(mu) - np.asarray(true)) / np.asarray(true)
            text += f", error vs the road median {100 * float(np.median(err)):.1f} %, last {100 * float(err[-1]):.1f} %"
        share = self.series.get("grip_share")
        if share is not None and np.size(share):
            low = int(np.argmin(share))
            if share[low] < 1.0:
                t_low = float(self.series["t"][low])
                text += f"; limits down to {100 * float(share[low]):.0f} % of nominal (t = {t_low:.1f} s)"
            else:
                text += "; limits as set throughout"
        return text

    # ------------------------------------------------------------------ notebook
    def _headline(self) -> dict[str, Any]:
        """The few figures of the ``repr`` (cheap: no body projection, unlike :attr:`metrics`)."""
        ey = np.asarray(self.series.get("e_y", np.zeros(0)), dtype=float)
        return {
            "rms": float(np.sqrt(np.mean(ey**2))) if ey.size else float("nan"),
            "max": float(np.max(np.abs(ey))) if ey.size else float("nan"),
            "lap": (f"lap time {self.lap_times[0]:.2f} s" if self.lap_times
                    else f"duration {float(self.series['t'][-1]) if len(self) else 0.0:.2f} s"),
        }

    def __repr__(self) -> str:
        """One line: outcome, laps, lap time (or duration), RMS/max e_y [m], steps; never the arrays."""
        h = self._headline()
        msg = f" ({self.message[:60]}{'...' if len(self.message) > 60 else ''})" if self.message else ""
        return (f"<SimulationResult {self.reason.value}{msg}, laps {self.laps_completed}, {h['lap']}, "
                f"RMS e_y {h['rms']:.3f} m, max {h['max']:.3f} m, {len(self)} steps>")

    def _repr_html_(self) -> str:
        """Jupyter display: a table of the summary metrics (units in their own column) and a small
        plan-view sketch (:func:`mpc_tracking.viz.notebook.result_html`)."""
        from mpc_tracking.viz.notebook import result_html

        return result_html(self)

    def to_pandas(self) -> Any:
        """The time series as a :class:`pandas.DataFrame`, one row per control step, indexed by ``t`` [s].

        One column per one-dimensional series of :attr:`series` (the names and units of
        :data:`SERIES`, in that order; units in ``df.attrs["units"]``, empty for counts and
        codes such as ``status`` and ``iterations``). Multi-dimensional
        data is left out: the predicted horizons :attr:`horizon_xy` (shape (K, N+1, 2)) stay on the
        result. Needs the optional extra: ``pip install mpc_tracking[pandas]``.

        Returns
        -------
        pandas.DataFrame
        """
        import importlib

        try:
            # imported by name: pandas ships no type information (pandas-stubs is not a dependency)
            pd = importlib.import_module("pandas")
        except ImportError:
            raise ImportError(
                "SimulationResult.to_pandas() needs pandas, an optional extra: pip install mpc_tracking[pandas]"
            ) from None
        n = len(self)
        order = [k for k in SERIES if k in self.series] + [k for k in self.series if k not in SERIES]
        columns = {
            k: np.asarray(self.series[k])
            for k in order
            if k != "t" and np.ndim(self.series[k]) == 1 and np.shape(self.series[k])[0] == n
        }
        df = pd.DataFrame(columns, index=pd.Index(np.asarray(self.series["t"], dtype=float), name="t"))
        docs = {**SERIES, **OPTIONAL_SERIES}
        df.attrs["units"] = {k: docs[k].partition(",")[0] if "," in docs[k] else ""
                             for k in ["t", *columns] if k in docs}
        return df

    def to_dataframe(self) -> Any:
        """Alias of :meth:`to_pandas`."""
        return self.to_pandas()

    # ------------------------------------------------------------------ output
    def plot(self, kind: str = "track", **kwargs: Any):
        """Plot with :mod:`mpc_tracking.viz.plotting`.

        Parameters
        ----------
        kind : {"track", "timeseries", "path"}
            ``"track"`` (trajectory, car and safety ellipse, horizon), ``"timeseries"`` (errors,
            speed, steering, solver) or ``"path"`` (the path's curvature, speed and widths).
        **kwargs
            Passed to :func:`~mpc_tracking.viz.plotting.plot_track`,
            :func:`~mpc_tracking.viz.plotting.plot_timeseries` or
            :func:`~mpc_tracking.viz.plotting.plot_path_view`.

        Returns
        -------
        Plot
            The tuple ``(fig, ax)`` (:class:`~mpc_tracking.viz.plotting.Plot`): the
            :class:`matplotlib.figure.Figure` and its axes (``"track"``: one Axes;
            ``"timeseries"``: the array of Axes; ``"path"``: a list, the plan view first). As the
            last expression of a Jupyter cell it shows the figure inline. Unless axes are passed
            in, the figure is not attached to pyplot and ``plt.show()`` is never called: save it
            with ``fig.savefig(...)``.
        """
        from mpc_tracking.viz import plotting

        if kind == "track":
            return plotting.plot_track(self, **kwargs)
        if kind == "timeseries":
            return plotting.plot_timeseries(self, **kwargs)
        if kind == "path":
            if self.path is None:
                raise InputError("plot('path'): this result carries no path")
            return plotting.plot_path_view(self.path, **kwargs)
        raise InputError(f"kind: expected 'track', 'timeseries' or 'path', got {kind!r}")

    def animate(self, out: str | Path | None = None, **kwargs: Any) -> Any:
        """Write an animation (GIF or MP4 by the suffix of ``out``) and return the file, or without
        ``out`` return an :class:`~mpc_tracking.viz.animation.Animation` that plays inline in
        Jupyter and saves with ``.save(file)``; see :func:`mpc_tracking.viz.animation.animate`."""
        from mpc_tracking.viz.animation import animate

        return animate(self, out, **kwargs)

    def save(self, filename: str | Path) -> Path:
        """Write the run to a compressed ``.npz`` (series, horizons, outcome, info as JSON).

        The format is :mod:`mpc_tracking.result_file`'s; :meth:`load` reads it back.
        """
        from mpc_tracking.result_file import write_result

        meta = {
            "reason": self.reason.value,
            "message": self.message,
            "laps_completed": self.laps_completed,
            "lap_times": self.lap_times,
            "info": self.info,
        }
        return write_result(filename, series=self.series, horizon_xy=self.horizon_xy, meta=meta, path=self.path,
                            vehicle=self.vehicle)

    @classmethod
    def load(cls, filename: str | Path) -> SimulationResult:
        """Read a run written by :meth:`save`, checked against what :meth:`save` writes.

        Raises
        ------
        InputError
            One line naming the file and the key: not a result file, a missing array or
            metadata key (every series of :data:`SERIES`), a wrong dtype (text or objects where
            numbers belong), series of different lengths, predicted horizons that do not match
            them, an inconsistent path; also a file beyond the limits of
            :func:`mpc_tracking.fileio.read_npz` (see :func:`mpc_tracking.result_file.read_result`).
        """
        from mpc_tracking.result_file import defect, read_result

        fields = read_result(filename, SERIES)
        try:
            return cls(**fields)
        except InputError as exc:
            raise defect(filename, "meta.reason", exc) from None


def _as_outcome(reason: Any, result: SimulationResult) -> Outcome:
    """``reason`` as an :class:`Outcome`; the old ``"error: text"`` form moves its text to ``message``."""
    if isinstance(reason, Outcome):
        return reason
    text = str(reason)
    if text.startswith("error"):
        result.message = result.message or text.partition(":")[2].strip()
        return Outcome.ERROR
    try:
        return Outcome(text)
    except ValueError:
        raise InputError(f"reason: expected one of {[o.value for o in Outcome]}, got {reason!r}") from None


def body_overshoot(path: Any, vehicle: Any, x: np.ndarray, y: np.ndarray, yaw: np.ndarray,
                   s_hint: np.ndarray | None = None) -> np.ndarray:
    """How far the car's body left the track at each logged pose, from the geometry alone.

    The four corners of the body rectangle (``vehicle.length`` x ``vehicle.width``, the reference
    point ``vehicle.rear_overhang`` ahead of the rear bumper) are projected onto the path; a corner
    beyond the left or right track width counts by its distance past the edge. This is measured,
    not the controller's own slack.

    Parameters
    ----------
    path : ReferencePath
        With track widths (infinite widths give 0).
    vehicle : VehicleParams
    x, y, yaw : ndarray, shape (K,)
        Reference-point position [m] and heading [rad] of each step.
    s_hint : ndarray, shape (K,), optional
        Arc length of each step [m] (keeps the projection on the right branch of the path).

    Returns
    -------
    ndarray, shape (K,)
        Largest distance [m] of any corner beyond its track edge; 0 when all are inside.
    """
    x, y, yaw = (np.asarray(a, dtype=float).reshape(-1) for a in (x, y, yaw))
    front, rear, half = vehicle.front_extent, vehicle.rear_overhang, 0.5 * vehicle.width
    along = np.array([front, front, -rear, -rear])
    across = np.array([half, -half, half, -half])
    c, sn = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    cx = x[:, None] + along * c - across * sn
    cy = y[:, None] + along * sn + across * c
    hint = None if s_hint is None else np.repeat(np.asarray(s_hint, dtype=float).reshape(-1, 1), 4, axis=1).ravel()
    proj = path.project(cx.ravel(), cy.ravel(), s_hint=hint)
    q = path.interpolate(np.asarray(proj.s))
    e_y = np.asarray(proj.e_y)
    with np.errstate(invalid="ignore"):
        beyond = np.maximum(np.maximum(e_y - q["width_left"], -q["width_right"] - e_y), 0.0)
    return np.nan_to_num(beyond, nan=0.0).reshape(-1, 4).max(axis=1)
