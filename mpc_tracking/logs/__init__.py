"""Drive logs: ROS 2 bags (sqlite3, MCAP), ROS 1 bags and CSV logs in; paths, runs and identification out.

* :func:`read_log` -- a log as one time-aligned :class:`LogTable` (:mod:`~mpc_tracking.logs.reader`,
  message types in :mod:`~mpc_tracking.logs.messages`);
* :func:`path_from_log` -- the driven line of a GNSS or odometry topic as a reference path
  (:mod:`~mpc_tracking.logs.trajectory`);
* :func:`write_run` -- a closed-loop run as MCAP / a ROS 2 bag that Foxglove opens and
  :func:`read_log` reads back (:mod:`~mpc_tracking.logs.export`);
* :func:`identify_from_log` -- speed lag, acceleration limits and steering offset/delay from a
  recorded drive (:mod:`~mpc_tracking.logs.identify`).

The bag formats need the optional packages ``rosbags``, ``mcap`` and ``pyproj``
(``pip install "mpc_tracking[logs]"``); they are imported only when a bag is read or written.
"""
from __future__ import annotations

from mpc_tracking.logs.export import write_run
from mpc_tracking.logs.identify import LogIdentification, identify_from_log
from mpc_tracking.logs.reader import read_log
from mpc_tracking.logs.replay import ReplayResult, replay
from mpc_tracking.logs.table import LogTable, TopicSeries
from mpc_tracking.logs.trajectory import LogPath, path_from_log

__all__ = ["read_log", "LogTable", "TopicSeries", "write_run", "identify_from_log", "LogIdentification",
           "path_from_log", "LogPath", "replay", "ReplayResult"]
