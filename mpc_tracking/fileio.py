"""Low-level file writing shared by the outputs of runs, sweeps and animations.

- :func:`atomic_path` / :func:`atomic_open`: write under a temporary name beside the target and
  rename it over the target when complete, so a crash never leaves a half-written file under
  the final name (the temporary file is removed on failure).
- :func:`named_oserror`: an OSError without a file name (disk full) names the file being written.
- :func:`json_safe`: plain JSON types from numpy scalars/arrays, tuples and non-string keys, with
  a choice of what NaN and infinity become.
- :func:`write_json`: both together.
- :func:`read_yaml` / :func:`load_yaml` / :func:`parse_yaml`: the one bounded YAML reader of the
  package (scenario files, ``--set`` values; path and vehicle files should use it too). Limits:
  file size (:data:`MAX_YAML_BYTES`, 10 MB), nesting depth (:data:`MAX_YAML_DEPTH`) and the nodes
  aliases may add (:data:`MAX_YAML_ALIAS_NODES`: a "billion laughs" alias bomb is refused in
  milliseconds); recursive aliases and duplicate keys are errors; ``1e3`` is a number (YAML 1.2).
  Every error is one line naming the file (and the line where there is one).
- :func:`check_input_file` / :func:`read_input_bytes` / :func:`read_input_text`: the one way the
  package opens an input file (scenario, path, vehicle, result, sweep and image files): only a
  regular file is opened (a named pipe, a device such as ``/dev/zero``, a socket or a folder is
  refused by name, before any read could block), and at most ``max_bytes`` are read.
- :func:`read_npz`: a bounded ``.npz`` reader: file size, member count, each array's dtype and
  shape read from its header before any data (no pickled objects, no "zip bomb").

This module depends only on the standard library, PyYAML, :mod:`mpc_tracking.errors` and (in
:func:`read_npz`) numpy.

Examples
--------
>>> import numpy as np
>>> json_safe({"n": np.int64(3), "x": np.array([0.5, np.nan]), "v_max": float("inf")})
{'n': 3, 'x': [0.5, None], 'v_max': 'inf'}
>>> json_safe([np.float32(1.5), float("-inf")], nonfinite="null")
[1.5, None]
>>> json_safe((1.0, float("nan")), nonfinite="keep")
[1.0, nan]
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from mpc_tracking.errors import InputError

__all__ = [
    "atomic_path", "atomic_open", "json_safe", "write_json", "NONFINITE", "read_yaml", "load_yaml", "parse_yaml",
    "YamlDocument", "MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_ALIAS_NODES", "check_file_size", "read_npz",
    "MAX_NPZ_BYTES", "MAX_NPZ_ARRAY_BYTES", "named_oserror", "check_input_file", "read_input_bytes", "read_input_text",
    "MAX_INPUT_BYTES",
]

#: what :func:`json_safe` does with NaN and +-inf
NONFINITE = ("text", "null", "keep")
Nonfinite = Literal["text", "null", "keep"]


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.stem}.partial{target.suffix}")


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary file name beside ``target``; rename it to ``target`` on success.

    The temporary name is ``.<stem>.partial<suffix>`` in the same folder (same suffix, so writers
    that choose the format by the suffix still work). It is removed when the block raises.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with atomic_path(folder / "a.txt") as tmp:
    ...     _ = tmp.write_text("done")
    >>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
    ('done', ['a.txt'])
    """
    target = Path(target)
    tmp = _temp_name(target)
    try:
        with named_oserror(target):
            yield tmp
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            if tmp.exists():
                tmp.unlink()


@contextlib.contextmanager
def named_oserror(path: str | Path) -> Iterator[None]:
    """Within the block, an :class:`OSError` that names no file (a full disk while writing, an I/O
    error) is raised again naming ``path``, so that the message says which file failed.

    Examples
    --------
    >>> try:
    ...     with named_oserror("out/result.npz"):
    ...         raise OSError(28, "No space left on device")
    ... except OSError as exc:
    ...     print(exc)
    [Errno 28] No space left on device: 'out/result.npz'
    """
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise type(exc)(exc.errno, exc.strerror, str(path)) from exc


@contextlib.contextmanager
def atomic_open(target: str | Path, mode: str = "w", *, encoding: str | None = "utf-8", newline: str | None = None,
                fsync: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``target`` for writing; on success close it and rename it to ``target``.

    Parameters
    ----------
    target : str or Path
    mode : str
        ``"w"`` (text) or ``"wb"`` (binary).
    encoding, newline
        As for :func:`open` (text mode only).
    fsync : bool
        Flush the file to disk before the rename (the file survives a power loss once renamed).
    """
    if mode not in ("w", "wb"):
        raise InputError(f"mode: expected 'w' or 'wb', got {mode!r}")
    with atomic_path(target) as tmp, (
        open(tmp, "w", encoding=encoding, newline=newline) if mode == "w" else open(tmp, "wb")
    ) as fh:
        yield fh
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())


def json_safe(obj: Any, *, nonfinite: Nonfinite = "text") -> Any:
    """``obj`` in plain JSON types: numpy scalars/arrays become Python numbers/lists, tuples
    become lists, dict keys become strings.

    Parameters
    ----------
    obj : any
    nonfinite : {"text", "null", "keep"}
        What NaN and +-inf become: ``"text"`` (default): NaN -> ``None``, +-inf -> ``"inf"`` /
        ``"-inf"`` (scenario files read these back); ``"null"``: both -> ``None`` (standard JSON
        of numeric tables); ``"keep"``: floats unchanged (Python's :mod:`json` writes and reads
        ``NaN`` / ``Infinity``, as in JSON-lines files meant for Python).

    Returns
    -------
    The converted copy (``obj`` is not changed).
    """
    if nonfinite not in NONFINITE:
        raise InputError(f"nonfinite: expected one of {NONFINITE}, got {nonfinite!r}")
    return _convert(obj, nonfinite)


def _convert(obj: Any, nonfinite: str) -> Any:
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # numpy scalar or array
        obj = obj.tolist()
    if isinstance(obj, dict):
        return {str(k): _convert(v, nonfinite) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_convert(v, nonfinite) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj) and nonfinite != "keep":
        if nonfinite == "text" and math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return None
    return obj


def write_json(target: str | Path, data: Any, *, nonfinite: Literal["text", "null"] = "text", indent: int = 2,
               fsync: bool = False) -> Path:
    """Write ``data`` atomically as indented standard JSON (see :func:`json_safe`); returns ``target``."""
    if nonfinite not in ("text", "null"):
        raise InputError(f"nonfinite: expected 'text' or 'null' (standard JSON), got {nonfinite!r}")
    target = Path(target)
    with atomic_open(target, fsync=fsync) as fh:
        fh.write(json.dumps(json_safe(data, nonfinite=nonfinite), indent=indent, allow_nan=False) + "\n")
    return target


# ---------------------------------------------------------------------- opening input files
#: default largest input file [bytes] of :func:`read_input_bytes` (100 MB)
MAX_INPUT_BYTES = 100 * 2**20

_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def _kind(mode: int) -> str | None:
    """What a non-regular file is (``"a named pipe (FIFO)"``), None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def check_input_file(filename: str | Path, *, what: str = "file", error: type[InputError] = InputError,
                     max_bytes: int | None = None) -> int:
    """Check that ``filename`` is a regular file that may be read; its size [bytes].

    ``os.stat`` never blocks, so a named pipe or a device is refused before anything opens it.

    Parameters
    ----------
    filename : str or Path
    what : str
        What the file is, for the messages (``"scenario file"``).
    error : subclass of InputError
        The exception raised.
    max_bytes : int, optional
        Largest size allowed.

    Raises
    ------
    InputError (or ``error``)
        ``"NAME: no such WHAT"``, ``"NAME: not a regular file: a named pipe (FIFO) (expected a WHAT)"``
        (also devices and sockets), ``"NAME: is a folder, not a WHAT"``, ``"NAME: cannot read the WHAT
        (cause)"``, too large.

    Examples
    --------
    >>> try:
    ...     check_input_file("/dev/zero", what="scenario file")
    ... except InputError as exc:
    ...     print(exc)
    /dev/zero: not a regular file: a character device (expected a scenario file)
    """
    p = Path(filename)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise error(f"{p}: no such {what}") from None
    except OSError as exc:
        raise error(f"{p}: cannot read the {what} ({exc.strerror or exc})") from None
    kind = _kind(st.st_mode)
    if kind == "a folder":
        raise error(f"{p}: is a folder, not a {what}")
    if kind is not None:
        raise error(f"{p}: not a regular file: {kind} (expected a {what})")
    if max_bytes is not None and st.st_size > max_bytes:
        raise error(f"{p}: the {what} is {_mb(st.st_size)}, more than the {_mb(max_bytes)} limit")
    return int(st.st_size)


def read_input_bytes(filename: str | Path, *, what: str = "file", error: type[InputError] = InputError,
                     max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular input file, at most ``max_bytes`` (see :func:`check_input_file`).

    The file is opened with ``O_NONBLOCK`` and checked again on the open descriptor, so a file
    swapped for a named pipe between the check and the open cannot block the read either.
    """
    p = Path(filename)
    check_input_file(p, what=what, error=error, max_bytes=max_bytes)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise error(f"{p}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise error(f"{p}: not a regular file: {kind} (expected a {what})")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise error(f"{p}: cannot read the {what} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if total > max_bytes:
        raise error(f"{p}: the {what} is more than the {_mb(max_bytes)} limit")
    return b"".join(chunks)


def read_input_text(filename: str | Path, *, what: str = "file", error: type[InputError] = InputError,
                    max_bytes: int = MAX_INPUT_BYTES, expected: str = "UTF-8 text") -> str:
    """The text of a regular input file (UTF-8, a byte-order mark dropped), at most ``max_bytes``.

    Raises ``error`` ``"NAME: not a text file (expected EXPECTED)"`` for bytes that are not UTF-8
    or contain NUL characters; see :func:`read_input_bytes` for the rest.
    """
    raw = read_input_bytes(filename, what=what, error=error, max_bytes=max_bytes)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{filename}: not a text file (expected {expected})") from None
    if "\x00" in text:
        raise error(f"{filename}: not a text file (it contains NUL bytes; expected {expected})")
    return text


# ---------------------------------------------------------------------- bounded YAML
#: largest YAML file :func:`read_yaml` reads [bytes] (10 MB; scenario, path and vehicle files are kilobytes)
MAX_YAML_BYTES = 10 * 1024 * 1024
#: deepest nesting of mappings and sequences (a scenario needs 5: controller.Q is a matrix)
MAX_YAML_DEPTH = 64
#: most nodes that aliases (``*name``) may add to a document when expanded (a "billion laughs"
#: file adds 10**9 from a few hundred bytes); anchors used to share a section add a few hundred
MAX_YAML_ALIAS_NODES = 100_000

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _LimitError(Exception):
    """A limit of the bounded loader was exceeded (internal; becomes the caller's error class)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


@functools.lru_cache(maxsize=1)
def _bounded_loader() -> type:
    """The loader class; PyYAML is imported here, on the first YAML read, not with the package."""
    import yaml

    class _BoundedLoader(yaml.SafeLoader):
        """SafeLoader that counts the nesting depth while it composes (before Python's recursion limit)."""

        max_depth = MAX_YAML_DEPTH

        def __init__(self, stream: str, max_depth: int) -> None:
            super().__init__(stream)
            self.max_depth = max_depth
            self._depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            try:
                if self._depth > self.max_depth:
                    mark = self.peek_event().start_mark
                    raise _LimitError(f"nested deeper than {self.max_depth} levels", mark.line + 1)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    # YAML 1.2 reads 1e3 and 1.5E-4 as numbers; PyYAML's YAML 1.1 resolver wants a dot and a sign (1.0e+3)
    _BoundedLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"))

    return _BoundedLoader


@dataclass(frozen=True)
class YamlDocument:
    """A YAML document read by :func:`read_yaml` or :func:`parse_yaml`.

    Attributes
    ----------
    data : any
        The plain Python value (dicts, lists, scalars); None for an empty document.
    node : yaml.Node or None
        The composed node tree (line numbers: ``node.start_mark.line`` is 0-based); None when empty.
    source : str
        The file name (or the name given to :func:`parse_yaml`).
    """

    data: Any
    node: Any
    source: str


def _check_nodes(root: Any, max_alias_nodes: int) -> None:
    """Reject recursive aliases, duplicate keys and more than ``max_alias_nodes`` nodes added by aliases.

    Aliases are shared nodes in the composed graph; the expanded size of every node is computed
    once (post-order, no recursion), so an alias bomb is measured, never expanded.
    """
    import yaml

    size: dict[int, int] = {}
    distinct = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            continue
        if key in size:
            continue
        if key in on_path:
            raise _LimitError("an alias refers to a node that contains it (recursive alias)", node.start_mark.line + 1)
        distinct += 1
        on_path.add(key)
        stack.append((node, True))
        if isinstance(node, yaml.MappingNode):
            _check_duplicates(node)
        for child in _children(node):
            if id(child) in on_path:
                raise _LimitError("an alias refers to a node that contains it (recursive alias)",
                                  child.start_mark.line + 1)
            if id(child) not in size:
                stack.append((child, False))
    added = size[id(root)] - distinct
    if added > max_alias_nodes:
        raise _LimitError(f"aliases expand the document by {added:.3g} nodes, more than the {max_alias_nodes} "
                          f"allowed (an alias bomb?)")


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for kv in node.value for n in kv]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_duplicates(node: Any) -> None:
    import yaml

    seen: dict[Any, int] = {}
    for k, _ in node.value:
        if not isinstance(k, yaml.ScalarNode) or k.tag == _MERGE_TAG:
            continue
        line = k.start_mark.line + 1
        if k.value in seen:
            raise _LimitError(f"duplicate key {k.value!r} (first at line {seen[k.value]})", line)
        seen[k.value] = line


def check_file_size(filename: str | Path, max_bytes: int, *, what: str = "file",
                    error: type[InputError] = InputError) -> int:
    """The size of ``filename`` [bytes]; ``error`` naming the file and both sizes when above ``max_bytes``."""
    return check_input_file(filename, what=what, error=error, max_bytes=max_bytes)


def _mb(n: int) -> str:
    return f"{n / 2**20:.3g} MB" if n >= 2**20 else f"{n} bytes"


def parse_yaml(text: str, *, name: str = "<string>", error: type[InputError] = InputError,
               max_depth: int = MAX_YAML_DEPTH, max_alias_nodes: int = MAX_YAML_ALIAS_NODES) -> YamlDocument:
    """Parse one YAML document from ``text`` within the limits of :func:`read_yaml`.

    Raises
    ------
    InputError (or ``error``)
        ``"NAME:LINE: not valid YAML (problem)"``, or a limit exceeded (depth, alias expansion,
        recursive alias, duplicate key), naming ``name`` and the line.
    """
    import yaml

    loader = _bounded_loader()(text, max_depth)
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDocument(None, None, name)
        _check_nodes(node, max_alias_nodes)
        data = loader.construct_document(node)
    except _LimitError as exc:
        where = f"{name}:{exc.line}" if exc.line is not None else name
        raise error(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["?"])[0]
        raise error(f"{where}: not valid YAML ({' '.join(str(problem).split())})") from None
    except RecursionError:  # pragma: no cover - the depth limit comes first
        raise error(f"{name}: nested too deeply") from None
    finally:
        loader.dispose()
    return YamlDocument(data, node, name)


def read_yaml(filename: str | Path, *, error: type[InputError] = InputError, what: str = "YAML file",
              max_bytes: int = MAX_YAML_BYTES, max_depth: int = MAX_YAML_DEPTH,
              max_alias_nodes: int = MAX_YAML_ALIAS_NODES) -> YamlDocument:
    """Read one YAML document from a file, within limits; the package's one YAML reader.

    Parameters
    ----------
    filename : str or Path
    error : subclass of InputError
        The exception raised (``ScenarioError``, ``PathFormatError``, ``VehicleFileError`` ...).
    what : str
        What the file is, for the messages (``"scenario file"``).
    max_bytes : int
        Largest file [bytes] (default :data:`MAX_YAML_BYTES`); checked before reading, and the
        read itself stops there (a FIFO or a growing file cannot exceed it either).
    max_depth : int
        Deepest nesting of mappings and sequences (default :data:`MAX_YAML_DEPTH`).
    max_alias_nodes : int
        Most nodes aliases may add when expanded (default :data:`MAX_YAML_ALIAS_NODES`).

    Returns
    -------
    YamlDocument
        ``data`` (safe types only: no Python objects), the node tree (line numbers) and the source.

    Raises
    ------
    InputError (or ``error``)
        One line naming the file: missing, unreadable, too large, not UTF-8 text, not valid
        YAML (with the line), nested too deeply, an alias bomb or recursive alias, a duplicate key.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "bomb.yaml"
    >>> _ = f.write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\\n" + "".join(
    ...     f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\\n" for i in range(8)))
    >>> try:
    ...     read_yaml(f)
    ... except InputError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    aliases expand the document by 1.23e+09 nodes, more than the 100000 allowed (an alias bomb?)
    """
    p = Path(filename)
    text = read_input_text(p, what=what, error=error, max_bytes=max_bytes, expected="UTF-8 YAML")
    return parse_yaml(text, name=str(p), error=error, max_depth=max_depth, max_alias_nodes=max_alias_nodes)


def load_yaml(filename: str | Path, **kwargs: Any) -> Any:
    """The data of :func:`read_yaml` (same arguments)."""
    return read_yaml(filename, **kwargs).data


# ---------------------------------------------------------------------- bounded .npz
#: largest ``.npz`` file :func:`read_npz` opens [bytes] (1 GB; a one-hour run is tens of MB)
MAX_NPZ_BYTES = 1024**3
#: most bytes all arrays of one ``.npz`` may take once read (4 GB; from their headers, before reading)
MAX_NPZ_ARRAY_BYTES = 4 * 1024**3


def read_npz(filename: str | Path, *, error: type[InputError] = InputError, what: str = "npz file",
             max_bytes: int = MAX_NPZ_BYTES, max_array_bytes: int = MAX_NPZ_ARRAY_BYTES,
             max_members: int = 10_000) -> dict[str, Any]:
    """Every array of a numpy ``.npz`` file, read within limits.

    Each member's header (dtype, shape) is read before its data: object arrays (pickles) are
    refused, and so is a file whose arrays would take more than ``max_array_bytes`` in memory.

    Parameters
    ----------
    filename : str or Path
    error : subclass of InputError
        The exception raised; its message names the file (and the member).
    what : str
        What the file is, for the messages.
    max_bytes, max_array_bytes, max_members : int
        Largest file, largest total of the arrays in memory [bytes], most arrays.

    Returns
    -------
    dict of str -> ndarray
        By member name without ``.npy``.
    """
    import zipfile
    import zlib

    import numpy as np

    p = Path(filename)
    check_input_file(p, what=what, error=error, max_bytes=max_bytes)
    out: dict[str, Any] = {}
    try:
        with zipfile.ZipFile(p) as zf:
            infos = [i for i in zf.infolist() if not i.is_dir()]
            if len(infos) > max_members:
                raise error(f"{p}: {len(infos)} arrays, more than the {max_members} a {what} may hold")
            total = 0
            headers = []
            for info in infos:
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _fortran, dtype = read_header(fh)
                if dtype.hasobject:
                    raise error(f"{p}: array {key!r} holds Python objects (pickles are not read)")
                total += int(np.prod(shape, dtype=float)) * dtype.itemsize
                if total > max_array_bytes:
                    raise error(f"{p}: the arrays would take more than the {_mb(max_array_bytes)} allowed in memory "
                                f"(array {key!r} has shape {tuple(shape)})")
                headers.append(key)
        with np.load(p, allow_pickle=False) as z:
            for key in headers:
                out[key] = z[key]
    except zipfile.BadZipFile as exc:
        raise error(f"{p}: not a {what} (not a zip archive: {exc})") from None
    except (ValueError, OSError, EOFError, KeyError, zipfile.LargeZipFile, zlib.error) as exc:
        if isinstance(exc, InputError):
            raise
        raise error(f"{p}: not a {what} ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    return out
