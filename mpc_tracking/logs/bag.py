"""ROS 2 bags (sqlite3 ``.db3``, MCAP, a rosbag2 folder) and ROS 1 ``.bag`` files through ``rosbags``.

No ROS installation is needed: ``rosbags`` reads the storage and deserializes CDR with the type
definitions stored in the bag (MCAP always has them), falling back to its standard ROS 2 types plus
``ackermann_msgs`` (:func:`mpc_tracking.logs.messages.typestore`).

A file that ``rosbags`` refuses because it is cut short (an MCAP without its summary and footer:
a recorder killed mid-drive, a partial copy) is read record by record with the ``mcap`` package up
to where it breaks; the problem names the byte offset and the last time read.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mpc_tracking.errors import LogError
from mpc_tracking.paths.geo import require

__all__ = ["RawMessage", "bag_messages", "BAG_SUFFIXES"]

logger = logging.getLogger(__name__)

#: file suffixes read as bags (a folder with ``metadata.yaml`` is a rosbag2 bag too)
BAG_SUFFIXES = (".mcap", ".db3", ".bag")

#: (topic, msgtype, log time [ns], message object)
RawMessage = tuple[str, str, int, Any]


class _Topics:
    """Topic name -> (msgtype, count) from a reader, for listings."""

    def __init__(self, items: dict[str, tuple[str, int]]) -> None:
        self.items = items

    def check(self, wanted: list[str] | None, source: str) -> list[str]:
        from mpc_tracking.logs.table import describe_topics

        listing = {k: _Info(*v) for k, v in self.items.items()}
        if wanted is None:
            return sorted(self.items)
        out = []
        for w in wanted:
            name = w if w in self.items else "/" + w.lstrip("/")
            if name not in self.items:
                raise LogError(f"{source}: no topic {w!r}; the topics are {describe_topics(listing)}")
            out.append(name)
        return out


class _Info:
    def __init__(self, msgtype: str, count: int) -> None:
        self.msgtype, self.count = msgtype, count


def bag_messages(path: Path, topics: list[str] | None, problems: list[str],
                 skip: set[str] | None = None) -> Iterator[RawMessage]:
    """Deserialized messages of ``topics`` (all when None) in log-time order.

    Messages of a type in ``skip`` (which the caller may fill while iterating: types without
    numeric fields) are not decoded.

    Problems that do not stop the reading (an undecodable message, a truncated file) are appended
    to ``problems``; an unknown topic raises :class:`LogError` listing the available ones.
    """
    highlevel = require("rosbags.highlevel", "reading ROS 2 bags and MCAP files")
    from mpc_tracking.logs.messages import typestore

    store = typestore()
    try:
        reader = highlevel.AnyReader([path], default_typestore=store)
        reader.open()
    except highlevel.AnyReaderError as exc:
        if path.suffix.lower() == ".mcap":
            logger.warning("%s: %s; reading the records up to where the file breaks", path, exc)
            yield from _mcap_stream(path, topics, problems, store)
            return
        raise LogError(f"{path}: not a readable bag ({exc})") from None
    try:
        info: dict[str, tuple[str, int]] = {}
        for c in reader.connections:
            old = info.get(c.topic, (c.msgtype, 0))
            info[c.topic] = (c.msgtype, old[1] + c.msgcount)
        names = _Topics(info).check(topics, str(path))
        conns = [c for c in reader.connections if c.topic in set(names)]
        count = 0
        last = None
        it = reader.messages(connections=conns)
        while True:
            try:
                conn, stamp, raw = next(it)
            except StopIteration:
                break
            except Exception as exc:  # the storage broke mid-file (sqlite "malformed", a bad chunk)
                problems.append(f"{path}: reading stopped after {count} messages"
                                f"{f' (log time {last / 1e9:.3f} s)' if last else ''}: {type(exc).__name__}: {exc}")
                logger.warning(problems[-1])
                break
            if skip and conn.msgtype in skip:
                continue
            try:
                msg = reader.deserialize(raw, conn.msgtype)
            except Exception as exc:
                problems.append(f"{path}: topic {conn.topic}: message at log time {stamp / 1e9:.3f} s cannot be "
                                f"decoded as {conn.msgtype} ({exc}); skipped")
                continue
            count += 1
            last = stamp
            yield conn.topic, conn.msgtype, stamp, msg
    finally:
        reader.close()


def _mcap_stream(path: Path, topics: list[str] | None, problems: list[str], default_store: Any
                 ) -> Iterator[RawMessage]:
    """Records of a truncated MCAP read in file order until the first broken one."""
    stream_reader = require("mcap.stream_reader", "reading a truncated MCAP file")
    records = require("mcap.records", "reading a truncated MCAP file")
    typesys = require("rosbags.typesys", "reading a truncated MCAP file")
    size = path.stat().st_size
    schemas: dict[int, Any] = {}
    channels: dict[int, Any] = {}
    store = typesys.get_typestore(typesys.Stores.EMPTY)
    store.register(default_store.fielddefs)
    buffered: list[tuple[Any, Any]] = []
    count = 0
    last_ns = None
    with path.open("rb") as fh:
        reader = stream_reader.StreamReader(fh)
        try:
            for rec in reader.records:
                if isinstance(rec, records.Schema):
                    schemas[rec.id] = rec
                    if rec.encoding == "ros2msg" and rec.data:
                        try:
                            store.register(typesys.get_types_from_msg(rec.data.decode(), rec.name))
                        except Exception as exc:  # a schema rosbags cannot parse: its messages are skipped
                            problems.append(f"{path}: schema {rec.name!r} cannot be parsed ({exc})")
                elif isinstance(rec, records.Channel):
                    channels[rec.id] = rec
                elif isinstance(rec, records.Message):
                    buffered.append((rec, channels.get(rec.channel_id)))
                if len(buffered) > 10000:
                    yield from _decode(buffered, schemas, store, topics, problems, path)
                    count += len(buffered)
                    last_ns = buffered[-1][0].log_time
                    buffered.clear()
        except Exception as exc:
            at = fh.tell()
            count += len(buffered)
            last_ns = buffered[-1][0].log_time if buffered else last_ns
            when = f", last log time {last_ns / 1e9:.3f} s" if last_ns is not None else ""
            problems.append(f"{path}: the MCAP file breaks near byte {at} of {size} ({type(exc).__name__}"
                            f"{': ' + str(exc) if str(exc) else ''}); read {count} messages before it{when}")
            logger.warning(problems[-1])
    if topics is not None:
        known = {c.topic: schemas[c.schema_id].name if c.schema_id in schemas else "?" for c in channels.values()}
        counts = {k: (v, sum(1 for m, c in buffered if c is not None and c.topic == k)) for k, v in known.items()}
        _Topics(counts).check(topics, str(path))
    yield from _decode(buffered, schemas, store, topics, problems, path)


def _decode(buffered: list[tuple[Any, Any]], schemas: dict[int, Any], store: Any, topics: list[str] | None,
            problems: list[str], path: Path) -> Iterator[RawMessage]:
    wanted = None if topics is None else {"/" + t.lstrip("/") for t in topics} | set(topics)
    for rec, chan in sorted(buffered, key=lambda rc: rc[0].log_time):
        if chan is None or (wanted is not None and chan.topic not in wanted):
            continue
        schema = schemas.get(chan.schema_id)
        if schema is None:
            continue
        try:
            msg = store.deserialize_cdr(rec.data, schema.name)
        except Exception as exc:
            problems.append(f"{path}: topic {chan.topic}: message at log time {rec.log_time / 1e9:.3f} s cannot be "
                            f"decoded as {schema.name} ({exc}); skipped")
            continue
        yield chan.topic, schema.name, int(rec.log_time), msg
