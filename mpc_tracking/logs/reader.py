"""``read_log(file, topics=None)``: a recorded drive as one time-aligned table."""
from __future__ import annotations

import csv
import io
import logging
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import LogError
from mpc_tracking.fileio import check_file_size
from mpc_tracking.logs.table import LogTable, TopicSeries, align, column_name

__all__ = ["read_log", "TIME_COLUMNS", "MAX_CSV_LOG_BYTES"]

logger = logging.getLogger(__name__)

#: names of a CSV log's time column (case-insensitive), in order of preference
TIME_COLUMNS = ("t", "time", "t_s", "time_s", "timestamp", "stamp", "%time", "time_ns", "timestamp_ns", "stamp_ns")
#: largest CSV log read [bytes]
MAX_CSV_LOG_BYTES = 1 << 30


def read_log(file: str | Path, topics: list[str] | str | None = None, *, rate: float | None = None,
             origin: Any = None, unordered: str = "error") -> LogTable:
    """Read a recorded drive: a ROS 2 bag (sqlite3 ``.db3``, ``.mcap`` or a rosbag2 folder), a ROS 1
    ``.bag``, or a CSV log with a time column.

    Parameters
    ----------
    file : path
        The log.
    topics : list of str, optional
        Topics to read (bags; default all). An unknown topic raises :class:`~mpc_tracking.errors.LogError`
        listing the available ones with their types and message counts.
    rate : float, optional
        Rate of the aligned grid [Hz] (bags); default the fastest topic's median rate.
    origin : GeoOrigin or (lat, lon), optional
        Origin of the local east-north frame of GNSS fixes (fields ``east``, ``north`` [m]);
        default the first valid fix.
    unordered : {"error", "sort"}
        A topic (or CSV) whose time goes backwards: raise naming the topic and the message (default),
        or sort by time.

    Returns
    -------
    LogTable
        ``t`` [s], ``columns`` on the common grid (``odom.x``, ``odom.vx``, ``gnss/fix.east``, ...),
        ``topics`` as logged, ``problems`` (what could not be read and where).

    Raises
    ------
    LogError
        Unknown topic, time going backwards, a topic whose frame changes, no data, an unreadable file.
    ImportError
        A bag without the optional packages (``pip install "mpc_tracking[logs]"``).

    Notes
    -----
    Message times are the header stamps where the messages have them (not zero), else the
    times they were logged. Fields and units per message type: :mod:`mpc_tracking.logs.messages`.
    A truncated or partly corrupt bag is read up to where it breaks; the table's ``problems``
    say where, and a warning is logged.
    """
    p = Path(file)
    if not p.exists():
        raise LogError(f"{p}: no such log file")
    if unordered not in ("error", "sort"):
        raise LogError(f"unordered: expected 'error' or 'sort', got {unordered!r}")
    if rate is not None and not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise LogError(f"rate: expected a rate > 0 Hz, got {rate!r}")
    if isinstance(topics, str):
        topics = [topics]
    if p.suffix.lower() in (".csv", ".txt", ".tsv"):
        return _read_csv_log(p, unordered, origin)
    if p.is_dir() or p.suffix.lower() in (".mcap", ".db3", ".bag"):
        return _read_bag(p, None if topics is None else list(topics), rate, origin, unordered)
    raise LogError(f"{p}: unknown log format {p.suffix!r}; expected a ROS 2 bag (.mcap, .db3 or a rosbag2 folder), "
                   "a ROS 1 .bag or a CSV log (.csv with a time column)")


def _read_bag(p: Path, topics: list[str] | None, rate: float | None, origin: Any, unordered: str) -> LogTable:
    from mpc_tracking.logs.bag import bag_messages
    from mpc_tracking.logs.messages import extract

    problems: list[str] = []
    stamps: dict[str, list[int]] = defaultdict(list)
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    types: dict[str, str] = {}
    frames: dict[str, tuple[str, str]] = {}
    n = 0
    empty: set[str] = set()  # message types without numeric fields (paths, markers, TF): not decoded again
    for topic, msgtype, logtime, msg in bag_messages(p, topics, problems, empty):
        stamp, frame, child, fields = extract(msg, msgtype)
        if not fields:
            empty.add(msgtype)
            continue
        types.setdefault(topic, msgtype)
        if topic not in frames:
            frames[topic] = (frame, child)
        elif frame and frames[topic][0] and frame != frames[topic][0]:
            raise LogError(f"{p}: topic {topic}: frame_id changes from {frames[topic][0]!r} to {frame!r} at message "
                           f"{len(stamps[topic])} (log time {logtime / 1e9:.3f} s); mixed frames on one topic cannot "
                           "be aligned (read one frame's topic, or split the topic)")
        stamps[topic].append(stamp if stamp is not None else logtime)
        topic_values = values[topic]
        k = len(stamps[topic]) - 1
        for name, v in fields.items():
            col = topic_values[name]
            if len(col) < k:  # a field missing from earlier messages (generic types): pad
                col.extend([math.nan] * (k - len(col)))
            col.append(v)
        n += 1
    if n == 0:
        raise LogError(f"{p}: no messages with numeric fields" + (f" on {topics}" if topics else "")
                       + (f" ({'; '.join(problems)})" if problems else ""))
    t0_ns = min(min(s) for s in stamps.values())
    series: dict[str, TopicSeries] = {}
    for topic, st in stamps.items():
        t = (np.asarray(st, dtype=np.int64) - t0_ns) * 1e-9
        fields_np = {k: _padded(v, len(st)) for k, v in values[topic].items()}
        t, fields_np = _ordered(t, fields_np, unordered, f"{p}: topic {topic}")
        series[topic] = TopicSeries(topic, types[topic], t, fields_np, *frames[topic])
    geo_origin = _add_local_frame(series, origin)
    grid, cols = align(series, rate)
    span = float(grid[-1] - grid[0]) if grid.size else 0.0
    logger.info("%s: %d messages on %d topics, %.2f s", p, n, len(series), span)
    return LogTable(grid, cols, series, str(p), t0_ns * 1e-9, geo_origin, problems)


def _padded(v: list[float], n: int) -> np.ndarray:
    a = np.full(n, np.nan)
    a[:len(v)] = v
    return a


def _ordered(t: np.ndarray, fields: dict[str, np.ndarray], unordered: str, where: str
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    back = np.flatnonzero(np.diff(t) < 0)
    if back.size == 0:
        return t, fields
    k = int(back[0]) + 1
    if unordered == "error":
        raise LogError(f"{where}: time goes backwards at message {k}: {t[k]:.6f} s after {t[k - 1]:.6f} s "
                       f"({back.size} times in all; pass unordered='sort' to sort by time)")
    logger.warning("%s: time goes backwards %d times (first at message %d); sorted by time", where, back.size, k)
    order = np.argsort(t, kind="stable")
    return t[order], {name: v[order] for name, v in fields.items()}


def _add_local_frame(series: dict[str, TopicSeries], origin: Any) -> Any:
    """Add ``east``, ``north`` [m] to every NavSatFix topic (one origin for all); return the origin."""
    fixes = [s for s in series.values() if s.msgtype.endswith("NavSatFix")]
    if not fixes:
        return None
    from mpc_tracking.paths.geo import GeoOrigin

    if origin is None:
        first = fixes[0]
        ok = np.flatnonzero(np.isfinite(first.fields["latitude"]))
        if ok.size == 0:
            return None
        origin = GeoOrigin(float(first.fields["latitude"][ok[0]]), float(first.fields["longitude"][ok[0]]))
    elif not isinstance(origin, GeoOrigin):
        origin = GeoOrigin(float(origin[0]), float(origin[1]))
    for s in fixes:
        lat, lon = s.fields["latitude"], s.fields["longitude"]
        ok = np.isfinite(lat) & np.isfinite(lon)
        east, north = np.full(lat.shape, np.nan), np.full(lat.shape, np.nan)
        if ok.any():
            east[ok], north[ok] = origin.to_local(lat[ok], lon[ok])
        s.fields["east"], s.fields["north"] = east, north
    return origin


# ---------------------------------------------------------------------- CSV logs
def _read_csv_log(p: Path, unordered: str, origin: Any = None) -> LogTable:
    check_file_size(p, MAX_CSV_LOG_BYTES, what="CSV log", error=LogError)
    try:
        text = p.read_text()
    except UnicodeDecodeError:
        raise LogError(f"{p}: not a text file (expected a CSV log with a time column)") from None
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1)
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise LogError(f"{p}: empty (expected a header row naming the columns, one of them time)")
    delim = "\t" if "\t" in lines[0][1] else ";" if ";" in lines[0][1] and "," not in lines[0][1] else ","
    rows = list(csv.reader(io.StringIO("\n".join(ln for _, ln in lines)), delimiter=delim))
    header = [h.strip() for h in rows[0]]
    low = [h.lower() for h in header]
    tcol = next((low.index(n) for n in TIME_COLUMNS if n in low), None)
    if tcol is None:
        raise LogError(f"{p}:{lines[0][0]}: no time column in the header {header}; expected one named "
                       f"{', '.join(TIME_COLUMNS[:6])}")
    raw: dict[str, list[float]] = {h: [] for h in header}
    for (lineno, _), row in zip(lines[1:], rows[1:], strict=False):
        if len(row) != len(header):
            raise LogError(f"{p}:{lineno}: {len(row)} values, the header has {len(header)} columns")
        for h, v in zip(header, row, strict=False):
            try:
                raw[h].append(float(v) if v.strip() else math.nan)
            except ValueError:
                raw[h].append(math.nan)  # text columns (frame names, states) are not numeric series
    numeric = {h: np.asarray(v) for h, v in raw.items() if h != header[tcol] and np.isfinite(v).any()}
    t = np.asarray(raw[header[tcol]])
    if t.size < 1 or not np.all(np.isfinite(t)):
        bad = int(np.flatnonzero(~np.isfinite(t))[0]) if t.size else 0
        raise LogError(f"{p}:{lines[1 + bad][0] if t.size else lines[0][0]}: the time column {header[tcol]!r} needs "
                       "a number on every row")
    scale = 1e-9 if low[tcol].endswith("_ns") or (t.size and np.nanmax(np.abs(t)) > 1e14) else 1.0
    t = t * scale
    back = np.flatnonzero(np.diff(t) < 0)
    if back.size and unordered == "error":
        k = int(back[0]) + 1
        raise LogError(f"{p}:{lines[1 + k][0]}: time goes backwards: {header[tcol]} = {t[k]:.6f} s after "
                       f"{t[k - 1]:.6f} s ({back.size} times in all; pass unordered='sort' to sort by time)")
    t, numeric = _ordered(t, numeric, "sort", str(p)) if back.size else (t, numeric)
    t0 = float(t[0])
    geo_origin = _csv_local_frame(numeric, origin, p)
    series = {"": TopicSeries("", "csv", t - t0, numeric)}
    cols = {column_name("", k): v for k, v in numeric.items()}
    return LogTable(t - t0, cols, series, str(p), t0 * 1.0, geo_origin, [])


def _csv_local_frame(numeric: dict[str, np.ndarray], origin: Any, p: Path) -> Any:
    """Add ``east``, ``north`` [m] to a CSV log with latitude/longitude columns; return the origin."""
    from mpc_tracking.paths.geo import GeoOrigin, geo_columns

    names = list(numeric)
    found = geo_columns(names)
    if found is None or "east" in numeric or "north" in numeric:
        return None
    lat, lon = numeric[names[found[0]]], numeric[names[found[1]]]
    ok = np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90) & (np.abs(lon) <= 180)
    if not ok.any():
        return None
    if origin is None:
        origin = GeoOrigin(float(lat[ok][0]), float(lon[ok][0]))
    elif not isinstance(origin, GeoOrigin):
        origin = GeoOrigin(float(origin[0]), float(origin[1]))
    east, north = np.full(lat.shape, np.nan), np.full(lat.shape, np.nan)
    east[ok], north[ok] = origin.to_local(lat[ok], lon[ok])
    numeric["east"], numeric["north"] = east, north
    logger.info("%s: latitude/longitude converted to east/north [m] about %s", p, origin)
    return origin


