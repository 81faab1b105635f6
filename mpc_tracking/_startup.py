"""Ctrl-C and SIGTERM while the ``mpc-tracking`` command starts: one line and exit 130 / 143.

Importing the package (numpy, scipy, the solvers) takes most of a second before the command's
own code runs. :func:`guard_start_up` is the first statement of ``mpc_tracking/__init__.py``: when
this process is the command (the ``mpc-tracking`` console script or ``python -m mpc_tracking``),
it installs handlers that print one line and end the process at once -- nothing has been
written yet -- instead of a ``KeyboardInterrupt`` traceback or a silent death by SIGTERM.
:func:`raise_from_now_on` (the first statement of :func:`mpc_tracking.cli.main.main`) hands
Ctrl-C back to Python's ``KeyboardInterrupt`` once the command can report it itself (exit
codes, partial files). In a library import, a worker process of a sweep, or a thread other
than the main one, nothing is changed.

Standard library only: this module runs before anything heavy is imported.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

__all__ = ["guard_start_up", "raise_from_now_on", "is_command_process", "START_UP_LINES"]

#: the line printed for each signal while the command starts, and its exit code (128 + signal)
START_UP_LINES = {
    signal.SIGINT: ("mpc-tracking: interrupted (Ctrl-C) while starting; nothing was written", 130),
    signal.SIGTERM: ("mpc-tracking: terminated (SIGTERM) while starting; nothing was written", 143),
}

_COMMAND_NAMES = ("mpc-tracking", "mpc-tracking.exe", "mpc-tracking-script.py")
_MODULES = ("mpc_tracking", "mpc_tracking.__main__", "mpc_tracking.cli", "mpc_tracking.cli.main")


def is_command_process() -> bool:
    """True when this process runs the ``mpc-tracking`` command (not a library user, not a worker)."""
    argv = list(getattr(sys, "orig_argv", None) or [])
    if "--multiprocessing-fork" in argv:  # a spawned or forkserver worker of a sweep
        return False
    mp = sys.modules.get("multiprocessing")
    if mp is not None and getattr(mp.current_process(), "_inheriting", False):
        return False
    if sys.argv and os.path.basename(sys.argv[0]) in _COMMAND_NAMES:
        return True
    return any((a == "-m" and i + 1 < len(argv) and argv[i + 1] in _MODULES)
               or (a.startswith("-m") and a[2:] in _MODULES) for i, a in enumerate(argv))


def _exit_at_once(signum: int, frame: FrameType | None) -> None:
    line, code = START_UP_LINES.get(signal.Signals(signum), ("mpc-tracking: stopped while starting", 1))
    try:
        os.write(2, (line + "\n").encode())
    finally:
        os._exit(code)


def guard_start_up() -> bool:
    """In the command's process, make Ctrl-C / SIGTERM end the start-up with one line; True if installed.

    A signal already ignored (``SIG_IGN``, a background job) stays ignored.
    """
    if threading.current_thread() is not threading.main_thread() or not is_command_process():
        return False
    installed = False
    for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(sig) is default:
            signal.signal(sig, _exit_at_once)
            installed = True
    return installed


def raise_from_now_on() -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` again (the command reports it); SIGTERM keeps ending at
    once until :func:`mpc_tracking.cli.failures.sigterm_as_exception` takes it over."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is _exit_at_once:
        signal.signal(signal.SIGINT, signal.default_int_handler)
