"""The table a drive log is read into: per-topic series and one time-aligned view of all of them."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc_tracking.errors import LogError
from mpc_tracking.logs.messages import ANGLE_FIELDS, HOLD_FIELDS

__all__ = ["TopicSeries", "LogTable", "align", "column_name", "GAP_FACTOR"]

#: a gap between two samples longer than this many median periods (and 0.2 s) is left NaN, not bridged
GAP_FACTOR = 5.0
#: the aligned grid is at most this fast [Hz]
MAX_RATE = 1000.0


def column_name(topic: str, name: str) -> str:
    """Column of field ``name`` of ``topic`` in the aligned table: ``"odom.x"`` for ``/odom``, ``x`` for a CSV log."""
    key = topic.strip("/")
    return f"{key}.{name}" if key else name


@dataclass
class TopicSeries:
    """One topic's samples as logged (not resampled).

    Attributes
    ----------
    topic : str
        Topic name (``""`` for the rows of a CSV log).
    msgtype : str
        Message type (``nav_msgs/msg/Odometry``; ``"csv"``).
    t : ndarray, shape (M,)
        Sample times [s] from the log's start (:attr:`LogTable.t0`), non-decreasing.
    fields : dict of str -> ndarray, shape (M,)
        Values in SI units (see :mod:`mpc_tracking.logs.messages`).
    frame_id, child_frame_id : str
        Frames of the messages (REP-105: ``map``, ``odom``, ``base_link``), empty when none.
    """

    topic: str
    msgtype: str
    t: np.ndarray
    fields: dict[str, np.ndarray]
    frame_id: str = ""
    child_frame_id: str = ""

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def rate(self) -> float:
        """Median sample rate [Hz] (NaN with fewer than 2 samples)."""
        d = np.diff(self.t)
        d = d[d > 0]
        return float(1.0 / np.median(d)) if d.size else float("nan")

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.fields:
            raise LogError(f"topic {self.topic or '(csv)'!r} ({self.msgtype}): no field {name!r}; it has "
                           f"{sorted(self.fields)}")
        return self.fields[name]


@dataclass
class LogTable:
    """A drive log read by :func:`mpc_tracking.read_log`.

    Attributes
    ----------
    t : ndarray, shape (K,)
        The aligned time grid [s] from :attr:`t0` (uniform at the fastest topic's rate for bags;
        the rows of a CSV log).
    columns : dict of str -> ndarray, shape (K,)
        Every field of every topic on the grid, named ``topic.field`` (``odom.x``,
        ``gnss/fix.east``; :func:`column_name`); linear interpolation (angles unwrapped, status
        codes held), NaN outside a topic's own time span and in its gaps.
    topics : dict of str -> TopicSeries
        The samples as logged.
    source : str
        The file read.
    t0 : float
        Absolute time of ``t = 0`` [s] (Unix time for bags; the CSV's own time origin).
    geo_origin : GeoOrigin or None
        Origin of the local east-north frame of the GNSS fields ``east``, ``north`` [m].
    problems : list of str
        What could not be read (a truncated file, undecodable messages), each naming where.
    """

    t: np.ndarray
    columns: dict[str, np.ndarray]
    topics: dict[str, TopicSeries]
    source: str = ""
    t0: float = 0.0
    geo_origin: Any = None
    problems: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.t.size)

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def __getitem__(self, name: str) -> np.ndarray:
        if name == "t":
            return self.t
        if name not in self.columns:
            raise LogError(f"{self.source}: no column {name!r}; the columns are {sorted(self.columns)}")
        return self.columns[name]

    def __repr__(self) -> str:
        span = float(self.t[-1] - self.t[0]) if len(self) else 0.0
        return (f"<LogTable {self.source!r}: {len(self.topics)} topics, {len(self.columns)} columns, {len(self)} rows "
                f"over {span:.2f} s{', ' + str(len(self.problems)) + ' problems' if self.problems else ''}>")

    def topic(self, name: str) -> TopicSeries:
        """The samples of topic ``name`` as logged (``LogError`` listing the topics when unknown)."""
        if name in self.topics:
            return self.topics[name]
        alt = "/" + name.lstrip("/")
        if alt in self.topics:
            return self.topics[alt]
        raise LogError(f"{self.source}: no topic {name!r}; it has {describe_topics(self.topics)}")

    def of_type(self, *msgtypes: str) -> list[TopicSeries]:
        """The topics whose message type ends with one of ``msgtypes`` (``"Odometry"``, ``"sensor_msgs/msg/Imu"``)."""
        return [s for s in self.topics.values() if any(s.msgtype.endswith(m) for m in msgtypes)]

    def to_pandas(self) -> Any:
        """The aligned columns as a :class:`pandas.DataFrame` indexed by ``t`` [s] (needs pandas)."""
        try:
            pd = importlib.import_module("pandas")
        except ImportError:
            raise ImportError("LogTable.to_pandas() needs pandas: pip install \"mpc_tracking[logs]\"") from None
        return pd.DataFrame(self.columns, index=pd.Index(self.t, name="t"))


def describe_topics(topics: dict[str, Any]) -> str:
    """``/odom (nav_msgs/msg/Odometry, 500 messages), ...`` for error messages."""
    parts = []
    for name, info in sorted(topics.items()):
        kind = getattr(info, "msgtype", None) or "?"
        n = info.count if hasattr(info, "count") else len(info)
        parts.append(f"{name} ({kind}, {n} messages)")
    return ", ".join(parts) if parts else "no topics"


def align(series: dict[str, TopicSeries], rate: float | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The common grid [s] and every field on it (see :attr:`LogTable.columns`).

    ``rate`` [Hz] default: the fastest topic's median rate (at most 1 kHz).
    """
    nonempty = [s for s in series.values() if len(s)]
    if not nonempty:
        return np.zeros(0), {}
    if rate is None:
        rates = [s.rate for s in nonempty if np.isfinite(s.rate)]
        rate = min(max(rates), MAX_RATE) if rates else 1.0
    t_lo = min(float(s.t[0]) for s in nonempty)
    t_hi = max(float(s.t[-1]) for s in nonempty)
    n = int(np.floor((t_hi - t_lo) * rate + 1e-9)) + 1
    grid = t_lo + np.arange(n) / rate
    cols: dict[str, np.ndarray] = {}
    for s in series.values():
        for name, values in s.fields.items():
            cols[column_name(s.topic, name)] = resample(s.t, values, grid, kind=_kind(name))
    return grid, cols


def _kind(name: str) -> str:
    if name in ANGLE_FIELDS:
        return "angle"
    if name in HOLD_FIELDS:
        return "hold"
    return "linear"


def resample(t: np.ndarray, v: np.ndarray, grid: np.ndarray, kind: str = "linear") -> np.ndarray:
    """``v(t)`` at ``grid``: linear (``"angle"``: unwrapped first, ``"hold"``: previous sample), NaN
    outside ``[t[0], t[-1]]`` and inside gaps longer than :data:`GAP_FACTOR` median periods."""
    out = np.full(grid.shape, np.nan)
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if t.size == 0:
        return out
    if t.size == 1:
        out[np.isclose(grid, t[0])] = v[0]
        return out
    inside = (grid >= t[0]) & (grid <= t[-1])
    g = grid[inside]
    if kind == "hold":
        idx = np.clip(np.searchsorted(t, g, side="right") - 1, 0, t.size - 1)
        vals = v[idx]
    elif kind == "angle":
        vals = np.interp(g, t, np.unwrap(v))
        vals = (vals + np.pi) % (2.0 * np.pi) - np.pi
    else:
        vals = np.interp(g, t, v)
    dt = np.diff(t)
    pos = dt[dt > 0]
    if pos.size:
        limit = max(GAP_FACTOR * float(np.median(pos)), 0.2)
        k = np.clip(np.searchsorted(t, g, side="right") - 1, 0, t.size - 2)
        vals = np.where(dt[k] > limit, np.nan, vals)
    out[inside] = vals
    return out
