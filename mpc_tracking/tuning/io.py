"""Streaming output of a parameter sweep: CSV + JSON lines as runs finish, a JSON array at the end.

Files in the output folder:

- ``sweep.csv``   one row per run, written and flushed as each run finishes (completion order);
  rewritten sorted by run index when the sweep ends.
- ``sweep.jsonl`` the same rows as JSON lines (exact types, NaN kept as ``NaN``); the source
  :func:`read_rows` uses for ``resume``.
- ``sweep.json``  a JSON array of all rows sorted by index (standard JSON: NaN -> null),
  replaced atomically (temp file + rename) when the sweep ends or is interrupted.
- ``sweep_meta.json`` the scenario and parameter names of the sweep, so that a resume against a
  different scenario is refused.

An interrupted sweep keeps every row that was flushed; a torn last line (process killed while
writing) is skipped on reading and the files are rewritten cleanly before new rows are appended.
"""
from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mpc_tracking.fileio import atomic_open, json_safe, named_oserror, read_input_text, write_json

__all__ = ["SweepWriter", "read_rows", "write_json_atomic", "CSV_NAME", "JSONL_NAME", "JSON_NAME", "META_NAME"]

logger = logging.getLogger(__name__)

CSV_NAME = "sweep.csv"
JSONL_NAME = "sweep.jsonl"
JSON_NAME = "sweep.json"
META_NAME = "sweep_meta.json"
#: largest sweep rows file read back (resume) [bytes]
MAX_ROWS_BYTES = 1024**3


def _csv_cell(value: Any) -> Any:
    value = json_safe(value, nonfinite="null")
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def write_json_atomic(filename: str | Path, data: Any) -> Path:
    """Write ``data`` as standard JSON (NaN/inf -> null) to ``filename`` through a temporary file,
    flushed to disk, and an atomic rename (see :func:`mpc_tracking.fileio.write_json`)."""
    return write_json(filename, data, nonfinite="null", indent=1, fsync=True)


def _parse_cell(text: str) -> Any:
    if text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_rows(folder: str | Path) -> list[dict[str, Any]]:
    """Rows already written to ``folder`` (from ``sweep.jsonl``, else ``sweep.csv``); [] when none.

    Lines that cannot be parsed (a torn last line) are skipped with a warning. Rows without a
    ``key`` are ignored. The files are read through :func:`mpc_tracking.fileio.read_input_text`
    (regular files only, at most :data:`MAX_ROWS_BYTES`).
    """
    folder = Path(folder)
    jl, cf = folder / JSONL_NAME, folder / CSV_NAME
    if jl.exists():
        return _jsonl_rows(jl, read_input_text(jl, what="sweep rows file", max_bytes=MAX_ROWS_BYTES))
    if cf.exists():
        text = read_input_text(cf, what="sweep rows file", max_bytes=MAX_ROWS_BYTES)
        return [{k: _parse_cell(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(text, newline=""))
                if row.get("key") and None not in row]  # None key = more cells than the header
    return []


def _jsonl_rows(jl: Path, text: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            logger.warning("%s:%d: skipping an unreadable row (torn write?)", jl, lineno)
            continue
        if isinstance(row, dict) and row.get("key"):
            rows.append(row)
    return rows


class SweepWriter:
    """Appends rows to ``sweep.csv`` and ``sweep.jsonl`` in ``folder``, flushing after each row.

    Parameters
    ----------
    folder : path
        Output folder (created).
    columns : list of str
        CSV columns; keys of a row outside them go to the JSON files only.
    existing : iterable of dict
        Rows to keep (``resume``): both files are first rewritten with exactly these rows.
    """

    def __init__(self, folder: str | Path, columns: list[str], existing: Iterable[dict[str, Any]] = ()):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.columns = list(columns)
        self.rows: list[dict[str, Any]] = list(existing)
        self._rewrite(self.rows)
        # the streams stay open for the writer's lifetime (one flushed row per finished run); close() closes them
        self._csv_fh = open(self.csv_path, "a", newline="", encoding="utf-8")  # noqa: SIM115
        self._csv = csv.DictWriter(self._csv_fh, fieldnames=self.columns, extrasaction="ignore")
        self._jsonl_fh = open(self.jsonl_path, "a", encoding="utf-8")  # noqa: SIM115

    @property
    def csv_path(self) -> Path:
        return self.folder / CSV_NAME

    @property
    def jsonl_path(self) -> Path:
        return self.folder / JSONL_NAME

    @property
    def json_path(self) -> Path:
        return self.folder / JSON_NAME

    def _rewrite(self, rows: list[dict[str, Any]]) -> None:
        for name, write in ((CSV_NAME, self._write_csv), (JSONL_NAME, self._write_jsonl)):
            with atomic_open(self.folder / name, newline="") as fh:
                write(fh, rows)

    def _write_csv(self, fh, rows: list[dict[str, Any]]) -> None:
        w = csv.DictWriter(fh, fieldnames=self.columns, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: _csv_cell(v) for k, v in row.items()})

    @staticmethod
    def _write_jsonl(fh, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            fh.write(json.dumps(json_safe(row, nonfinite="keep")) + "\n")

    def append(self, row: dict[str, Any]) -> None:
        """Write one finished run to both files and flush them."""
        self.rows.append(row)
        with named_oserror(self.csv_path):  # a full disk names the file (the OSError does not)
            self._csv.writerow({k: _csv_cell(v) for k, v in row.items()})
            self._csv_fh.flush()
        with named_oserror(self.jsonl_path):
            self._jsonl_fh.write(json.dumps(json_safe(row, nonfinite="keep")) + "\n")
            self._jsonl_fh.flush()

    def close(self, sort_key: str = "index") -> None:
        """Close the streams; rewrite CSV/JSONL sorted by ``sort_key`` and write the JSON array."""
        for fh, name in ((self._csv_fh, self.csv_path), (self._jsonl_fh, self.jsonl_path)):
            if not fh.closed:
                with named_oserror(name):
                    fh.close()
        rows = sorted(self.rows, key=lambda r: r.get(sort_key, 0))
        self._rewrite(rows)
        write_json_atomic(self.json_path, rows)

    def __enter__(self) -> SweepWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
