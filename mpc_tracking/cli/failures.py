"""How the ``mpc-tracking`` command ends when something goes wrong: exit codes, one line, a log file.

The exit-code policy (also in ``mpc-tracking --help``):

====  ==========================================================================================
code  meaning
====  ==========================================================================================
0     success (``run``/``demo`` without ``--strict``: also a run whose body left the corridor or
      that overran the control period; the summary says so)
1     the run failed: it did not reach its goal (files are still written), a solver, simulation
      or identification error, a disk error while writing (names the path), out of memory,
      ``--strict`` and the body left the corridor or the controller overran its period, or an
      internal error (a bug: one line, the traceback goes to a log file)
2     bad input: a usage error, a bad flag value, a scenario/path/result/grid file that is
      missing, unreadable, too large or invalid (one line naming the file, key and value), a
      Dask scheduler address that cannot be reached
130   interrupted by Ctrl-C (SIGINT); 143 for SIGTERM. What was already written is kept.
====  ==========================================================================================

Every failure prints exactly one line on stderr, starting with ``mpc-tracking: ``; library
warnings go through :mod:`logging` (``WARNING name: ...`` lines). ``--debug`` prints the traceback
of any error as well. An internal error (any exception that is not one of the package's own, an
:class:`OSError` or a :class:`MemoryError`) writes its traceback to ``mpc-tracking-error.log`` in
the command's output folder when it has one that exists, else in the system's temporary folder
(:func:`tempfile.gettempdir`), and names that file in its one line.
"""
from __future__ import annotations

import datetime
import errno
import os
import platform
import signal
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mpc_tracking.errors import ClusterError, InputError, MPCTrackingError

__all__ = [
    "EXIT_OK", "EXIT_FAILED", "EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "ERROR_LOG_NAME",
    "Terminated", "classify", "error_line", "write_error_log", "log_folder", "sigterm_as_exception",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM
#: file name of the traceback of an internal error
ERROR_LOG_NAME = "mpc-tracking-error.log"
PREFIX = "mpc-tracking"

#: errno values of an OSError that mean "the path given is wrong" (bad input) rather than "the disk failed"
_INPUT_ERRNOS = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS,
                 errno.ENAMETOOLONG, errno.ELOOP, errno.EEXIST}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by :func:`sigterm_as_exception` (handled like Ctrl-C)."""


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _oserror_text(exc: OSError) -> str:
    what = exc.strerror or _one_line(exc) or type(exc).__name__
    names = [str(f) for f in (exc.filename, getattr(exc, "filename2", None)) if f is not None]
    return f"{' -> '.join(names)}: {what}" if names else what


def classify(exc: BaseException) -> tuple[int, str]:
    """The exit code and the text (without the ``mpc-tracking: `` prefix) for an exception.

    Returns ``(code, text)``; ``code`` is -1 for an internal error (the caller writes the
    traceback to a log file, completes the text and exits with :data:`EXIT_FAILED`).
    """
    if isinstance(exc, Terminated):
        return EXIT_TERMINATED, "terminated (SIGTERM); files already written are kept"
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted (Ctrl-C); files already written are kept"
    if isinstance(exc, (InputError, ClusterError)):  # ClusterError: the --dask address given cannot be reached
        return EXIT_BAD_INPUT, f"error: {_one_line(exc)}"
    if isinstance(exc, MPCTrackingError):  # solver, simulation, identification
        return EXIT_FAILED, f"error: {_one_line(exc)}"
    if isinstance(exc, OSError):
        if exc.errno in _INPUT_ERRNOS:
            return EXIT_BAD_INPUT, f"error: {_oserror_text(exc)}"
        return EXIT_FAILED, f"error: {_oserror_text(exc)}"
    if isinstance(exc, MemoryError):
        detail = _one_line(exc)
        return EXIT_FAILED, ("error: out of memory" + (f" ({detail})" if detail else "")
                             + "; the input asks for more than this machine has (a huge path or a tiny ds, "
                               "a long horizon, a large image?)")
    return -1, f"internal error: {type(exc).__name__}: {_one_line(exc)}"


def error_line(text: str) -> str:
    """``text`` as the one stderr line of the command."""
    return f"{PREFIX}: {text}"


def log_folder(args: Any) -> Path | None:
    """The output folder of the command in ``args`` when it has one that exists (for the error log)."""
    out = getattr(args, "out", None)
    if not out or not isinstance(out, (str, os.PathLike)):
        return None
    p = Path(out)
    if getattr(args, "command", None) in ("animate", "path") or p.suffix:
        p = p.parent
    return p if p.is_dir() else None


def write_error_log(exc: BaseException, argv: Sequence[str] | None, folder: Path | None = None) -> Path | None:
    """Write the traceback of ``exc`` (with the command line and versions) to :data:`ERROR_LOG_NAME`.

    In ``folder`` when given and writable, else in the temporary folder (a unique name there when
    the fixed one is taken by another user). Returns the file, or None when nothing could be written.
    """
    try:
        from importlib.metadata import version

        release = version("mpc_tracking")
    except Exception:  # the log must be written whatever is broken
        release = "unknown"
    text = "".join([
        f"{datetime.datetime.now().isoformat(timespec='seconds')} mpc-tracking {release}, Python "
        f"{platform.python_version()} on {platform.platform()}\n",
        f"command: mpc-tracking {' '.join(argv if argv is not None else sys.argv[1:])}\n\n",
        *traceback.format_exception(type(exc), exc, exc.__traceback__),
    ])
    candidates = [folder / ERROR_LOG_NAME] if folder is not None else []
    candidates.append(Path(tempfile.gettempdir()) / ERROR_LOG_NAME)
    for target in candidates:
        try:
            target.write_text(text, encoding="utf-8")
            return target
        except OSError:
            continue
    try:
        fd, name = tempfile.mkstemp(prefix="mpc-tracking-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return Path(name)
    except OSError:
        return None


#: a SIGTERM that arrives inside a finalizer is delivered again after this long [s] (see :func:`_raise_terminated`)
REDELIVER_SECONDS = 0.05


def _in_finalizer(frame: Any) -> bool:
    """True when ``frame`` or a frame that called it is an object's ``__del__`` (a finalizer)."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _raise_terminated(signum: int, frame: Any) -> None:
    """Raise :class:`Terminated` -- unless the signal interrupted a finalizer (``__del__``; numba's compiler frees
    its LLVM objects in them): Python prints an exception raised there as "Exception ignored" and goes on, so the
    signal would be lost. Then it is sent again :data:`REDELIVER_SECONDS` later, once the finalizer has returned."""
    if _in_finalizer(frame):
        import threading

        timer = threading.Timer(REDELIVER_SECONDS, os.kill, (os.getpid(), signum))
        timer.daemon = True
        timer.start()
        return
    raise Terminated()


class sigterm_as_exception:  # a context manager, named like one
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (like Ctrl-C's
    KeyboardInterrupt), so ``finally`` blocks run: sweeps stop their workers and write their
    summary, runs mark their folder incomplete. Outside the main thread this does nothing."""

    def __enter__(self) -> sigterm_as_exception:
        self._old: Any = None
        try:
            self._old = signal.signal(signal.SIGTERM, _raise_terminated)
            self._set = True
        except (ValueError, OSError, AttributeError):  # not the main thread / no SIGTERM here
            self._set = False
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._set:
            signal.signal(signal.SIGTERM, self._old if self._old is not None else signal.SIG_DFL)
