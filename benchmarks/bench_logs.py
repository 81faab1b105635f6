"""Reading speed of ``read_log`` on a large generated ROS 2 bag (MCAP and sqlite3).

Writes a bag of an 8-minute drive: ``/odom`` (nav_msgs/Odometry) at 100 Hz, ``/imu`` (sensor_msgs/Imu) at
100 Hz, ``/cmd`` (AckermannDriveStamped) at 50 Hz, ``/gnss/fix`` (NavSatFix) at 10 Hz -- about 55 MB as
MCAP -- and reads it three ways in the same run: rosbags' bare storage iteration (no decoding), rosbags
with CDR decoding of every message, and ``read_log`` (decode + extract + align). Prints JSON with
provenance and messages/s; ``--save`` writes benchmarks/results/logs_read.json.

``--minutes 15`` gives the 100 MB MCAP bag of issue 25 (saved as ``logs_read_100mb.json`` with
``--save --name logs_read_100mb``).

Run: ``nice python benchmarks/bench_logs.py [--minutes 8] [--save] [--name logs_read]``.
"""
from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json


def write_bag(target: Path, minutes: float, storage: str) -> tuple[Path, int]:
    from rosbags.rosbag2 import StoragePlugin, Writer

    from mpc_tracking.logs.export import _Msgs
    from mpc_tracking.logs.messages import typestore

    store = typestore()
    m = _Msgs(store)
    T = store.types
    n = int(minutes * 60 * 100)
    t = np.arange(n) / 100.0
    x, y = 200 * np.cos(t / 60.0), 120 * np.sin(t / 60.0)
    yaw = np.arctan2(np.gradient(y), np.gradient(x))
    count = 0
    with Writer(target, version=8, storage_plugin=getattr(StoragePlugin, storage.upper())) as w:
        conns = {k: w.add_connection(k, typ, typestore=store) for k, typ in (
            ("/odom", "nav_msgs/msg/Odometry"), ("/imu", "sensor_msgs/msg/Imu"),
            ("/cmd", "ackermann_msgs/msg/AckermannDriveStamped"), ("/gnss/fix", "sensor_msgs/msg/NavSatFix"))}
        zeros9 = np.zeros(9)
        for k in range(n):
            ns = int(1_700_000_000e9) + k * 10_000_000
            msgs = [("/odom", m.odometry(ns, float(x[k]), float(y[k]), float(yaw[k]), 3.5, 1 / 60.0)),
                    ("/imu", T["sensor_msgs/msg/Imu"](
                        header=m.header(ns, "base_link"), orientation=m.quat(float(yaw[k])),
                        orientation_covariance=zeros9,
                        angular_velocity=m.vec(0.0, 0.0, 1 / 60.0), angular_velocity_covariance=zeros9,
                        linear_acceleration=m.vec(0.0, 0.2, 9.81), linear_acceleration_covariance=zeros9))]
            if k % 2 == 0:
                msgs.append(("/cmd", m.ackermann(ns, 3.5, 0.05)))
            if k % 10 == 0:
                msgs.append(("/gnss/fix", m.navsatfix(ns, 48.137 + y[k] / 111e3, 11.575 + x[k] / 74e3, 0.5)))
            for topic, msg in msgs:
                w.write(conns[topic], ns, store.serialize_cdr(msg, msg.__msgtype__))
                count += 1
    path = next(target.glob("*.mcap")) if storage == "mcap" else target
    return path, count


def bag_bytes(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=8.0)
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--name", default="logs_read", help="results file name (without .json)")
    args = ap.parse_args()
    from rosbags.highlevel import AnyReader

    from mpc_tracking.logs import read_log
    from mpc_tracking.logs.messages import typestore

    prov = provenance()
    out: dict = {"minutes": args.minutes, "storages": {}}
    tmp = Path(tempfile.mkdtemp())
    try:
        for storage in ("mcap", "sqlite3"):
            t0 = time.perf_counter()
            path, count = write_bag(tmp / storage, args.minutes, storage)
            t_write = time.perf_counter() - t0
            t0 = time.perf_counter()
            with AnyReader([path], default_typestore=typestore()) as r:
                bare = sum(1 for _ in r.messages())
            t_bare = time.perf_counter() - t0
            t0 = time.perf_counter()
            with AnyReader([path], default_typestore=typestore()) as r:
                for c, _, raw in r.messages():
                    r.deserialize(raw, c.msgtype)
            t_decode = time.perf_counter() - t0
            t0 = time.perf_counter()
            tab = read_log(path)
            t_read = time.perf_counter() - t0
            assert bare == count and sum(len(s) for s in tab.topics.values()) == count
            mb = bag_bytes(path) / 2**20
            out["storages"][storage] = {
                "messages": count, "megabytes": round(mb, 1), "write_s": round(t_write, 2),
                "rosbags_iterate_msgs_per_s": round(count / t_bare),
                "rosbags_decode_msgs_per_s": round(count / t_decode),
                "read_log_msgs_per_s": round(count / t_read), "read_log_mb_per_s": round(mb / t_read, 1),
                "read_log_vs_decode": round(t_read / t_decode, 2), "aligned_rows": len(tab),
                "columns": len(tab.columns)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    data = {"benchmark": "logs_read", **out, "provenance": finish(prov)}
    print(dumps(data))
    if args.save:
        save_json(RESULTS / f"{args.name}.json", data)
    assert math.isfinite(out["storages"]["mcap"]["read_log_msgs_per_s"])


if __name__ == "__main__":
    main()
