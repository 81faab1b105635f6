"""A reference path from a driven trajectory: the GNSS fixes or odometry poses of a log.

:func:`path_from_log` takes the positions of one topic (``NavSatFix``: local east/north about the
log's GNSS origin; ``Odometry``/``PoseStamped``: x/y in their frame), drops invalid fixes, GNSS
jumps and outliers (a point further than ``max(6 sigma, 2 m)`` from the median of its 5 neighbours,
sigma the robust spread of those distances) and standstill clusters (points closer than half the
waypoint spacing to the previous kept one), keeps the first lap of a trace that goes round more
than once, and fits the path as an x/y table is fitted (:func:`mpc_tracking.paths.io.path_from_points`:
a loop when the end is back near the start, smoothing by the measured noise). The result says how
far the path strays from the points it was fitted to.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.ndimage import median_filter

from mpc_tracking.errors import LogError
from mpc_tracking.logs.table import LogTable, TopicSeries, describe_topics

__all__ = ["LogPath", "path_from_log", "POSITION_TYPES"]

logger = logging.getLogger(__name__)

#: message types with positions, in order of preference when no topic is named
POSITION_TYPES = ("NavSatFix", "Odometry", "PoseStamped", "PoseWithCovarianceStamped")


@dataclass
class LogPath:
    """A path fitted to a logged trajectory.

    Attributes
    ----------
    path : ReferencePath
        The fitted path (``path.geo_origin`` set for GNSS).
    topic : str
        The topic the positions came from.
    x, y : ndarray, shape (M,)
        The points fitted [m] (after dropping outliers, standstill and extra laps).
    dropped_outliers : int
        Points dropped as jumps/outliers.
    rms_deviation, max_deviation : float
        RMS and largest distance [m] of the fitted points from the path.
    """

    path: Any
    topic: str
    x: np.ndarray
    y: np.ndarray
    dropped_outliers: int
    rms_deviation: float
    max_deviation: float

    def summary(self) -> str:
        """A few lines for the command line."""
        p = self.path
        return (f"  topic            {self.topic}\n  points fitted    {self.x.size} ({self.dropped_outliers} outliers "
                f"dropped)\n  path             {'closed loop' if p.closed else 'open'}, {p.length:.2f} m, ds "
                f"{p.ds:.3g} m\n  deviation        RMS {self.rms_deviation:.3f} m, max {self.max_deviation:.3f} m "
                "(fitted points to the path)")


def _positions(s: TopicSeries) -> tuple[np.ndarray, np.ndarray]:
    if s.msgtype.endswith("NavSatFix") or (s.msgtype == "csv" and "east" in s.fields):
        return s["east"], s["north"]
    return s["x"], s["y"]


def pick_topic(table: LogTable, topic: str | None) -> TopicSeries:
    """The named topic, else the first one with positions (GNSS before odometry before poses)."""
    if topic is None and "" in table.topics and table.topics[""].msgtype == "csv":
        csv_log = table.topics[""]
        if "east" in csv_log.fields or ("x" in csv_log.fields and "y" in csv_log.fields):
            return csv_log
    if topic is not None:
        s = table.topic(topic)
        if not any(s.msgtype.endswith(m) for m in POSITION_TYPES):
            raise LogError(f"{table.source}: topic {s.topic} ({s.msgtype}) has no positions; expected one of "
                           f"{', '.join(POSITION_TYPES)}")
        return s
    for kind in POSITION_TYPES:
        found = table.of_type(kind)
        if found:
            if len(found) > 1:
                logger.info("%s: %d %s topics; using %s", table.source, len(found), kind, found[0].topic)
            return found[0]
    raise LogError(f"{table.source}: no topic with positions ({', '.join(POSITION_TYPES)}); it has "
                   f"{describe_topics(table.topics)}")


def path_from_log(log: str | Path | LogTable, topic: str | None = None, *, ds: float = 1.0,
                  smoothing: float | None = None, closed: bool | None = None, origin: Any = None,
                  name: str | None = None) -> LogPath:
    """Fit a reference path to the trajectory driven in a log.

    Parameters
    ----------
    log : path or LogTable
        A log file (:func:`~mpc_tracking.logs.read_log`) or a table already read.
    topic : str, optional
        GNSS (``NavSatFix``) or odometry/pose topic; default the first GNSS, else odometry, else pose topic.
    ds : float
        Waypoint spacing [m].
    smoothing : float, optional
        RMS distance [m] the line may move; default from the measured noise.
    closed : bool, optional
        Default: a loop when the (first-lap) end is back near the start.
    origin : GeoOrigin or (lat, lon), optional
        Origin of the local frame of GNSS fixes (when ``log`` is a file); default the first fix.
    name : str, optional
        Default: the log's stem.

    Returns
    -------
    LogPath
    """
    from mpc_tracking.logs.reader import read_log

    table = log if isinstance(log, LogTable) else read_log(log, None if topic is None else [topic], origin=origin)
    series = pick_topic(table, topic)
    x, y = (np.asarray(a, dtype=float) for a in _positions(series))
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 4:
        raise LogError(f"{table.source}: topic {series.topic}: {x.size} valid positions; a path needs at least 4")
    x, y, dropped = _drop_outliers(x, y)
    x, y = _drop_standstill(x, y, 0.5 * ds)
    x, y = _first_lap(x, y)
    if x.size < 4:
        raise LogError(f"{table.source}: topic {series.topic}: the car hardly moved ({x.size} distinct positions "
                       f"at least {0.5 * ds:g} m apart)")
    from mpc_tracking.paths.io import path_from_points

    label = name or Path(table.source).stem or "log"
    path = path_from_points(x, y, ds=ds, smoothing=smoothing, closed=closed, name=label,
                            source=f"{table.source} {series.topic}")
    if "east" in series.fields and table.geo_origin is not None:
        path.geo_origin = table.geo_origin  # type: ignore[attr-defined]
    proj = path.project(x, y)
    dev = np.abs(np.asarray(proj.e_y))
    return LogPath(path, series.topic, x, y, dropped, float(np.sqrt(np.mean(dev ** 2))), float(np.max(dev)))


def _drop_outliers(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Drop points far from the median of their neighbours (GNSS jumps, multipath outliers)."""
    if x.size < 7:
        return x, y, 0
    mx, my = median_filter(x, size=5, mode="nearest"), median_filter(y, size=5, mode="nearest")
    r = np.hypot(x - mx, y - my)
    sigma = 1.4826 * float(np.median(r))
    bad = r > max(6.0 * sigma, 2.0)
    n = int(np.count_nonzero(bad))
    if n:
        logger.warning("dropped %d of %d positions as jumps/outliers (more than %.3g m from their neighbours' median)",
                       n, x.size, max(6.0 * sigma, 2.0))
    return x[~bad], y[~bad], n


def _drop_standstill(x: np.ndarray, y: np.ndarray, min_step: float) -> tuple[np.ndarray, np.ndarray]:
    keep = [0]
    lx, ly = x[0], y[0]
    for i in range(1, x.size):
        if (x[i] - lx) ** 2 + (y[i] - ly) ** 2 >= min_step * min_step:
            keep.append(i)
            lx, ly = x[i], y[i]
    return x[keep], y[keep]


#: a pass near the start counts as a return (a new lap) only when it heads within this angle of the start [rad]
_SAME_HEADING = math.radians(60.0)


def _directions(x: np.ndarray, y: np.ndarray, span: int = 3) -> np.ndarray:
    """Unit directions of travel, shape (K, 2), from the points ``span`` before and after each one."""
    n = x.size
    lo, hi = np.clip(np.arange(n) - span, 0, n - 1), np.clip(np.arange(n) + span, 0, n - 1)
    d = np.column_stack([x[hi] - x[lo], y[hi] - y[lo]])
    norm = np.hypot(d[:, 0], d[:, 1])
    return d / np.where(norm > 0, norm, 1.0)[:, None]


def _first_lap(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cut a trace that passes its start again (more than one lap) at its first return.

    A return is a pass within 3 median spacings of the start heading the way the trace started
    (within 60 degrees): the crossing of a figure eight is not one.
    """
    step = float(np.median(np.hypot(np.diff(x), np.diff(y))))
    d = np.hypot(x - x[0], y - y[0])
    away = np.flatnonzero(d > 10.0 * step)
    if away.size == 0:
        return x, y
    u = _directions(x, y)
    aligned = u @ u[0] > math.cos(_SAME_HEADING)
    back = away[0] + np.flatnonzero((d[away[0]:] < 3.0 * step) & aligned[away[0]:])
    if back.size == 0:
        return x, y
    run_end = back[0]
    while run_end + 1 < d.size and d[run_end + 1] < 3.0 * step:
        run_end += 1
    cut = back[0] + int(np.argmin(d[back[0]:run_end + 1]))
    if cut >= d.size - 1:
        return x, y
    logger.info("the trace passes its start again at point %d of %d: keeping the first lap", cut, d.size)
    return x[:cut], y[:cut]
