"""ROS 2 bags (sqlite3 ``.db3``, MCAP, a rosbag2 folder) and ROS 1 ``.bag`` files through ``rosbags``.

No ROS installation is needed: ``rosbags`` reads the storage and deserializes CDR with the type
definitions stored in the bag (MCAP always has them), falling back to its standard ROS 2 types plus
``ackermann_msgs`` (:func:`mpc_tracking.logs.messages.typestore`).

A file that ``rosbags`` refuses because it is cut short (an MCAP without its summary and footer:
a recorder killed mid-drive, a partial copy) is read record by record with the ``mcap`` package up
to where it breaks; the problem names the byte offset and the last time read. A sqlite3 bag that
``rosbags`` cannot open (a cut or partly overwritten ``.db3``: "database disk image is malformed")
is read with Python's ``sqlite3`` message by message in the order written, skipping the pages that
cannot be read; the problems name the message ids lost and the last time read before each gap.
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
        db = _sqlite_file(path)
        if db is not None and "malformed" in str(exc):
            logger.warning("%s: %s; reading the messages that can be read", path, exc)
            yield from _sqlite_stream(db, topics, problems, store, str(exc))
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


# ---------------------------------------------------------------------- damaged sqlite3 bags
#: messages read per query from a damaged sqlite3 bag
_SQLITE_BATCH = 500


def _sqlite_file(path: Path) -> Path | None:
    """The ``.db3`` file of ``path`` (the file itself, or the only one in a rosbag2 folder), else None."""
    if path.is_file() and path.suffix.lower() == ".db3":
        return path
    if path.is_dir():
        found = sorted(path.glob("*.db3"))
        return found[0] if len(found) == 1 else None
    return None


def _sqlite_stream(db: Path, topics: list[str] | None, problems: list[str], default_store: Any, why: str
                   ) -> Iterator[RawMessage]:
    """Messages of a damaged sqlite3 bag in id (write) order, skipping the rows that cannot be read.

    A batch that fails is retried row by row; a row that fails starts a gap, and the ids after it
    are probed at growing strides (1, 2, 4, ...) until one reads again or the largest id is passed.
    """
    import sqlite3

    typesys = require("rosbags.typesys", "reading a damaged sqlite3 bag")
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        conns = {int(i): (str(n), str(t)) for i, n, t in con.execute("SELECT id, name, type FROM topics")}
    except sqlite3.DatabaseError as exc:
        raise LogError(f"{db}: not a readable bag ({why}; its topics table cannot be read either: {exc})") from None
    store = typesys.get_typestore(typesys.Stores.EMPTY)
    store.register(default_store.fielddefs)
    try:
        for name, enc, text in con.execute("SELECT topic_type, encoding, encoded_message_definition "
                                           "FROM message_definitions"):
            if enc == "ros2msg" and text:
                with _suppress_all():
                    store.register(typesys.get_types_from_msg(text, name))
    except sqlite3.DatabaseError:
        pass  # an older bag without definitions, or a damaged table: the standard types stand
    counts = {name: (kind, 0) for name, kind in conns.values()}
    wanted = set(_Topics(counts).check(topics, str(db)))
    last_id = _max_id(con)
    try:
        yield from _sqlite_rows(con, conns, wanted, store, problems, db, last_id)
    finally:
        con.close()


class _suppress_all:
    """``with _suppress_all():`` ignores any exception (a type definition rosbags cannot parse)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def _max_id(con: Any) -> int | None:
    import sqlite3

    try:
        row = con.execute("SELECT max(id) FROM messages").fetchone()
        return int(row[0]) if row and row[0] is not None else None
    except sqlite3.DatabaseError:
        return None


def _sqlite_rows(con: Any, conns: dict[int, tuple[str, str]], wanted: set[str], store: Any, problems: list[str],
                 db: Path, last_id: int | None) -> Iterator[RawMessage]:
    import sqlite3

    query = "SELECT id, topic_id, timestamp, data FROM messages WHERE id > ? ORDER BY id LIMIT ?"
    after, count, last_ns = 0, 0, None
    bound = last_id if last_id is not None else 1 << 40
    while after < bound:
        try:
            rows = con.execute(query, (after, _SQLITE_BATCH)).fetchall()
        except sqlite3.DatabaseError:
            rows = None
        if rows is None:  # the batch crosses a damaged page: row by row to find it, then past it
            got = _row(con, after + 1)
            if got is not None:
                rows = [got]
            else:
                resume = _probe(con, after + 1, bound)
                stop = f"message id {after + 1}" + (f" to {resume - 1}" if resume else " onwards")
                problems.append(f"{db}: {stop} cannot be read (a damaged page); read {count} messages before it"
                                + (f", last log time {last_ns / 1e9:.3f} s" if last_ns is not None else ""))
                logger.warning(problems[-1])
                if resume is None:
                    return
                after = resume - 1
                continue
        if not rows:
            return
        for mid, tid, ns, data in rows:
            after = int(mid)
            topic, kind = conns.get(int(tid), ("?", "?"))
            if topic not in wanted:
                continue
            try:
                msg = store.deserialize_cdr(bytes(data), kind)
            except Exception as exc:
                problems.append(f"{db}: topic {topic}: message id {mid} at log time {ns / 1e9:.3f} s cannot be "
                                f"decoded as {kind} ({exc}); skipped")
                continue
            count += 1
            last_ns = int(ns)
            yield topic, kind, int(ns), msg


def _row(con: Any, mid: int) -> tuple | None:
    import sqlite3

    try:
        return con.execute("SELECT id, topic_id, timestamp, data FROM messages WHERE id = ?", (mid,)).fetchone()
    except sqlite3.DatabaseError:
        return None


def _probe(con: Any, first_bad: int, bound: int) -> int | None:
    """The first readable id after ``first_bad`` (strides 1, 2, 4, ... then back to the first good one)."""
    stride, hi = 1, None
    while first_bad + stride <= bound:
        if _row(con, first_bad + stride) is not None:
            hi = first_bad + stride
            break
        stride *= 2
    if hi is None:
        return None
    lo = first_bad + stride // 2  # unreadable (or first_bad itself)
    while hi - lo > 1:  # bisect for the first readable id after the gap
        mid = (lo + hi) // 2
        if _row(con, mid) is not None:
            hi = mid
        else:
            lo = mid
    return hi
